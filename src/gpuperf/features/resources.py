"""Registers, shared memory and spills per thread, from compiling the kernel's CUDA code with NVRTC.

NVRTC (cuda-python's ``cuda.bindings.nvrtc``) compiles to a cubin for one architecture with
``-Xptxas=-v``; ptxas then writes, for each entry function, "N bytes stack frame, N bytes spill
stores, N bytes spill loads" and "Used N registers, ..., N bytes smem" into the program log.
Results are cached in memory and on disk under ``$GPUPERF_CACHE_DIR/resources`` (default
``$XDG_CACHE_HOME/gpuperf`` or ``~/.cache/gpuperf``), keyed by a hash of the source, function name,
architecture and NVRTC version.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
from dataclasses import asdict, dataclass, fields
from functools import cache
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from gpuperf.errors import GpuperfError
from gpuperf.files import cache_root, write_cache_file
from gpuperf.hardware.specs import GpuSpec

if TYPE_CHECKING:
    from gpuperf.kernels.kernel import Kernel

MIN_ARCH = 75
DEFAULT_ARCH = "sm_90"

_memory_cache: dict[str, Resources] = {}
Cached = TypeVar("Cached")


@dataclass(frozen=True)
class Resources:
    """What one thread (registers, spills) and one block (static shared memory) of a kernel use."""

    registers: int
    shared_memory_bytes: int
    spill_bytes: int  # spill stores + spill loads, bytes per thread
    arch: str
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    stack_frame_bytes: int = 0
    function: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _nvrtc() -> Any:
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:  # pragma: no cover - cuda-python is a dependency
        raise GpuperfError(f"NVRTC is unavailable ({exc}); install cuda-python and nvidia-cuda-nvrtc") from None
    return nvrtc


def _check(result: Any, what: str) -> None:
    nvrtc = _nvrtc()
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, message = nvrtc.nvrtcGetErrorString(result)
        raise GpuperfError(f"NVRTC {what} failed: {message.decode()}")


@cache
def nvrtc_version() -> str:
    """NVRTC's version, ``major.minor``."""
    result, major, minor = _nvrtc().nvrtcVersion()
    _check(result, "nvrtcVersion")
    return f"{major}.{minor}"


@cache
def supported_archs() -> tuple[str, ...]:
    """Architectures NVRTC compiles for, from sm_75 on (``sm_75``, ``sm_80``, ...)."""
    result, archs = _nvrtc().nvrtcGetSupportedArchs()
    _check(result, "nvrtcGetSupportedArchs")
    return tuple(f"sm_{arch}" for arch in archs if arch >= MIN_ARCH)


def normalize_arch(arch: str) -> str:
    """``sm_90``, ``90`` or ``9.0`` -> ``sm_90``, checked against what NVRTC supports."""
    text = str(arch).strip().lower()
    match = re.fullmatch(r"(?:sm_?)?(\d+)(?:\.(\d))?", text)
    name = None
    if match:
        name = f"sm_{match[1]}{match[2]}" if match[2] is not None else f"sm_{match[1]}"
    if name not in supported_archs():
        raise GpuperfError(
            f"architecture '{arch}' is not one NVRTC {nvrtc_version()} compiles for; "
            f"use one of {', '.join(supported_archs())}"
        )
    return name


def arch_for_gpu(gpu: GpuSpec) -> str:
    """The ``sm_XX`` architecture of an NVIDIA GPU (error if NVRTC cannot compile for it)."""
    cc = gpu.cc_version
    if gpu.vendor != "NVIDIA" or cc is None:
        raise GpuperfError(f"GPU '{gpu.name}' is {gpu.vendor}; NVRTC compiles for NVIDIA GPUs only")
    name = f"sm_{cc[0]}{cc[1]}"
    if name not in supported_archs():
        raise GpuperfError(
            f"GPU '{gpu.name}' is {name}, which NVRTC {nvrtc_version()} does not compile for "
            f"(it covers {supported_archs()[0]} to {supported_archs()[-1]}); its registers cannot be counted here"
        )
    return name


def device_kernel_count(kernel: Kernel) -> int:
    """How many device kernels ``kernel``'s program is (a global barrier splits it into several); 1 where
    loopy cannot linearize it (its code generation then names the error)."""
    import loopy as lp
    from loopy.kernel.tools import get_subkernel_start_indices

    try:
        with contextlib.redirect_stdout(io.StringIO()):  # loopy prints a program that fails its checks
            linearized = lp.linearize(lp.preprocess_kernel(kernel.for_target(lp.CudaTarget())))
    except Exception:  # noqa: BLE001 - generating its code fails the same way, with the error named there
        return 1
    return len(get_subkernel_start_indices(linearized.default_entrypoint))


def whole_program_error(kernel: Kernel, count: int) -> GpuperfError:
    """Why NVRTC's registers cannot describe a program of ``count`` device kernels."""
    return GpuperfError(f"kernel '{kernel.key}' is {count} device kernels (a global barrier splits it), and loopy's "
                        "CUDA code holds only the first: its registers would describe that one alone")


class Uncompiled(GpuperfError):
    """A valid kernel whose CUDA code names a data type loopy's CUDA target has no name for (complex,
    half) or that NVRTC does not compile (a vector type's arithmetic): its resources are unknown."""


def compile_resources(kernel: Kernel, arch: str = DEFAULT_ARCH) -> Resources:
    """Resources of a loopy kernel's CUDA code compiled for ``arch``; :class:`Uncompiled` where the
    CUDA code cannot name its data types or does not compile (a program loopy makes no code for at all
    is an error of its own)."""
    _nvrtc()  # NVRTC missing is its own error
    try:
        source = kernel.device_code("cuda")
    except GpuperfError as error:
        if "unable to map dtype" not in str(error):  # loopy's words for a type its CUDA target cannot name
            raise
        raise Uncompiled(str(error)) from None
    try:
        return _resources(source, kernel.entry.name, arch, label=f"kernel '{kernel.key}'")
    except GpuperfError as error:
        raise Uncompiled(str(error)) from None


def compile_source_resources(source: str, name: str | None = None, arch: str = DEFAULT_ARCH) -> Resources:
    """Resources of the ``__global__`` function ``name`` in raw CUDA ``source``
    (``name`` may be left out when the source has one kernel)."""
    return _resources(source, name, arch, label=f"kernel '{name or '(unnamed)'}'")


def _resources(source: str, name: str | None, arch: str, label: str) -> Resources:
    arch = normalize_arch(arch)
    key = hashlib.sha256(json.dumps([source, name, arch, nvrtc_version()]).encode()).hexdigest()
    if key in _memory_cache:
        return _memory_cache[key]
    resources = disk_cached("resources", key, Resources,
                            lambda: _parse_log(_compile(source, name, arch, label), name, arch, label))
    _memory_cache[key] = resources
    return resources


def _typed_as_declared(value: Any) -> bool:
    """Whether every field of the dataclass ``value`` holds a value of its declared type (int, float,
    str or bool; an int where a float is declared)."""
    plain = {"int": int, "float": (int, float), "str": str, "bool": bool}
    for item in fields(value):
        declared = plain.get(str(item.type).replace(" | None", ""))
        held = getattr(value, item.name)
        if declared is None or (held is None and "None" in str(item.type)):
            continue
        if not isinstance(held, declared) or (isinstance(held, bool) and declared is not bool):
            return False
    return True


def disk_cached(folder: str, key: str, kind: Callable[..., Cached], compute: Callable[[], Cached]) -> Cached:
    """The dataclass ``kind`` stored as ``key`` under the cache's ``folder``, else ``compute()``'s,
    stored there (a file that cannot be read back is computed again)."""
    path = cache_root() / folder / f"{key}.json"
    try:
        cached = kind(**json.loads(path.read_text(encoding="utf-8")))
        if _typed_as_declared(cached):  # "20" for 20 registers: a foreign or edited file, computed again
            return cached
    except (OSError, ValueError, TypeError):
        pass
    value = compute()
    write_cache_file(path, lambda temporary: temporary.write_text(json.dumps(asdict(value)), encoding="utf-8"))
    return value


@dataclass(frozen=True)
class Program:
    """What NVRTC made of a CUDA source: its log, the entry function's lowered (mangled) name, the cubin."""

    log: str
    lowered: str | None
    cubin: bytes


# The last programs compiled, so that a kernel's resources and its machine code take one compile.
_PROGRAMS_KEPT = 16
_programs: dict[tuple[str, str | None, str], Program] = {}


def compile_program(source: str, name: str | None, arch: str, label: str) -> Program:
    """Compile CUDA ``source`` for ``arch`` (ptxas reports each function's resources in the log); a
    compile error is one GpuperfError quoting the compiler's first error line. The last few programs
    are kept in memory."""
    key = (source, name, arch)
    if key not in _programs:
        if len(_programs) >= _PROGRAMS_KEPT:
            del _programs[next(iter(_programs))]
        _programs[key] = _compile_program(source, name, arch, label)
    return _programs[key]


def _compile_program(source: str, name: str | None, arch: str, label: str) -> Program:
    nvrtc = _nvrtc()
    result, program = nvrtc.nvrtcCreateProgram(source.encode(), b"kernel.cu", 0, [], [])
    _check(result, "nvrtcCreateProgram")
    mangled = bool(name) and name.startswith("_Z")  # a lowered name, as ptxas lists the kernels: no expression
    try:
        if name and not mangled:
            _check(nvrtc.nvrtcAddNameExpression(program, name.encode())[0], "nvrtcAddNameExpression")
        options = [f"--gpu-architecture={arch}".encode(), b"-Xptxas=-v"]
        (result,) = nvrtc.nvrtcCompileProgram(program, len(options), options)
        log = _program_log(nvrtc, program)
        if result == nvrtc.nvrtcResult.NVRTC_ERROR_COMPILATION:
            if name and "__nv_name_map" in log and "overloaded function" in log:
                raise GpuperfError(f"{label}: several kernels of the CUDA source are named '{name}' (overloads); name "
                                   f"one by its signature, as (void(*)(float*, float, int)){name}, or by its mangled "
                                   "name")
            if name and "__nv_name_map" in log:
                raise GpuperfError(f"{label}: the CUDA source has no kernel named '{name}'")
            raise GpuperfError(f"{label} does not compile for {arch}: {_first_error(log)}")
        _check(result, "nvrtcCompileProgram")
        lowered = name if mangled else None
        if name and not mangled:
            result, lowered_bytes = nvrtc.nvrtcGetLoweredName(program, name.encode())
            _check(result, "nvrtcGetLoweredName")
            lowered = lowered_bytes.decode()
        result, size = nvrtc.nvrtcGetCUBINSize(program)
        _check(result, "nvrtcGetCUBINSize")
        cubin = b" " * size
        _check(nvrtc.nvrtcGetCUBIN(program, cubin)[0], "nvrtcGetCUBIN")
        return Program(log, lowered, cubin)
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def _compile(source: str, name: str | None, arch: str, label: str) -> tuple[str, str | None]:
    """Compile; return the ptxas log and the entry function's lowered (mangled) name."""
    program = compile_program(source, name, arch, label)
    return program.log, program.lowered


def _program_log(nvrtc: Any, program: Any) -> str:
    result, size = nvrtc.nvrtcGetProgramLogSize(program)
    _check(result, "nvrtcGetProgramLogSize")
    buffer = b" " * size
    _check(nvrtc.nvrtcGetProgramLog(program, buffer)[0], "nvrtcGetProgramLog")
    return buffer.rstrip(b"\0 \n").decode(errors="replace")


def _first_error(log: str) -> str:
    """The compiler log's first error line (NVRTC ends its log with a NUL, which is no text)."""
    lines = [line.strip() for line in log.replace("\0", "").splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or ["(no compiler output)"])[0]


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")


def _parse_log(compiled: tuple[str, str | None], name: str | None, arch: str, label: str) -> Resources:
    log, lowered = compiled
    chunks = dict(_entry_chunks(log))
    if lowered is None:
        if len(chunks) != 1:
            found = ", ".join(chunks) or "none"
            raise GpuperfError(f"{label}: name the kernel, by its name or its mangled name; the source's kernels: "
                               f"{found}")
        lowered = next(iter(chunks))
    chunk = chunks.get(lowered)
    if chunk is None and name == lowered:  # a mangled name no kernel has
        raise GpuperfError(f"{label}: the CUDA source has no kernel named '{name}'; its kernels: "
                           f"{', '.join(chunks) or 'none'}")
    if chunk is None:
        raise GpuperfError(f"{label}: ptxas reported no resource usage for '{lowered}' ({arch})")
    used = re.search(r"Used (\d+) registers([^\n]*)", chunk)
    if used is None:
        raise GpuperfError(f"{label}: ptxas reported no register count for '{lowered}' ({arch})")
    smem = re.search(r"(\d+) bytes smem", used[2])
    frame = re.search(
        rf"Function properties for {re.escape(lowered)}\s*\n[^\n]*?(\d+) bytes stack frame, "
        r"(\d+) bytes spill stores, (\d+) bytes spill loads",
        chunk,
    )
    stack, stores, loads = (int(v) for v in frame.groups()) if frame else (0, 0, 0)
    return Resources(
        registers=int(used[1]),
        shared_memory_bytes=int(smem[1]) if smem else 0,
        spill_bytes=stores + loads,
        arch=arch,
        spill_store_bytes=stores,
        spill_load_bytes=loads,
        stack_frame_bytes=stack,
        function=lowered,
    )


def _entry_chunks(log: str) -> list[tuple[str, str]]:
    """(entry function, the log from its "Compiling entry function" line to the next one)."""
    matches = list(_ENTRY.finditer(log))
    ends = [m.start() for m in matches[1:]] + [len(log)]
    return [(m[1], log[m.start() : end]) for m, end in zip(matches, ends)]
