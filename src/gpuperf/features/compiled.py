"""The global loads and stores a kernel's machine code makes, from its SASS.

The counts in ``gpuperf.features.counts`` follow the source: a value read four times is four loads.
The compiler loads it once, and where it unrolls a loop over a thread's outputs it loads a row the
outputs share once too (an NVIDIA H200's counters: ``div_2d`` makes a quarter of the source's load
requests, a 9-point stencil with four outputs per thread two thirds). This module compiles the
kernel's CUDA code with NVRTC to a cubin, disassembles it with ``nvdisasm`` and counts the global
load (``LDG``) and store (``STG``) instructions of the entry function, and those inside a loop (a
backward branch). Where no load or store sits in a loop (``straight_line``), each thread executes
each instruction at most once, so the instruction counts are the loads and stores per thread when
every guard passes. Results are cached like ``gpuperf.features.resources``'.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuperf.errors import GpuperfError
from gpuperf.features.resources import DEFAULT_ARCH, compile_program, disk_cached, normalize_arch, nvrtc_version

if TYPE_CHECKING:
    from gpuperf.features.counts import Evaluated
    from gpuperf.kernels.kernel import Kernel

_memory_cache: dict[str, CompiledMemory] = {}
COUNTING_VERSION = 2  # part of the cache key: raise it when the counting rules change (2: atomics)

_INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")
_LABEL = re.compile(r"^\s*\.(L_x_\d+):")
_BRANCH_TARGET = re.compile(r"\bBRA\b.*`\(\.(L_x_\d+)\)")
# A global atomic that returns the old value (ATOMG; ATOM on a generic address) both loads and stores; a
# reduction that returns none (REDG; RED before sm_90) stores: each a read-modify-write of global memory.
_LOAD = re.compile(r"^(?:@!?U?P\w+\s+)?(?:LDG|ATOMG|ATOM)(?:\.|\s|$)")
_STORE = re.compile(r"^(?:@!?U?P\w+\s+)?(?:STG|REDG|RED|ATOMG|ATOM)(?:\.|\s|$)")


@dataclass(frozen=True)
class CompiledMemory:
    """Global memory instructions of one entry function's machine code."""

    load_instructions: int
    store_instructions: int
    loads_in_loops: int
    stores_in_loops: int
    loops: int  # backward branches
    arch: str
    function: str

    @property
    def straight_line(self) -> bool:
        """No global load or store inside a loop: each runs at most once per thread."""
        return self.loads_in_loops == 0 and self.stores_in_loops == 0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "straight_line": self.straight_line}


def nvdisasm_path() -> str:
    """The ``nvdisasm`` of the pinned ``nvidia-cuda-nvdisasm`` package, else one on the PATH."""
    try:
        import nvidia
    except ImportError:
        roots: list[str] = []
    else:
        roots = list(nvidia.__path__)
    for root in roots:  # the newest CUDA major version's, where several are installed
        for found in sorted(Path(root).glob("cu*/bin/nvdisasm*"), key=lambda p: _major(p.parts[-3]), reverse=True):
            return str(found)
    found_on_path = shutil.which("nvdisasm")
    if found_on_path is None:
        raise GpuperfError("nvdisasm is unavailable; install nvidia-cuda-nvdisasm (gpuperf's constraints pin it)")
    return found_on_path


def _major(folder: str) -> int:
    digits = folder.removeprefix("cu")
    return int(digits) if digits.isdigit() else -1


@cache
def nvdisasm_version() -> str:
    """The last line of ``nvdisasm --version`` (its release and build)."""
    done = _run_nvdisasm(["--version"], "nvdisasm")
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    return lines[-1] if lines else "unknown"


def compiled_memory(kernel: Kernel, arch: str = DEFAULT_ARCH) -> CompiledMemory:
    """Global memory instructions of a loopy kernel's CUDA code compiled for ``arch``."""
    return _compiled(kernel.device_code("cuda"), kernel.entry.name, arch, label=f"kernel '{kernel.key}'")


def compiled_source_memory(source: str, name: str, arch: str = DEFAULT_ARCH) -> CompiledMemory:
    """Global memory instructions of the ``__global__`` function ``name`` in CUDA ``source`` (its name
    as written: a C++ kernel's mangled name is looked up)."""
    return _compiled(source, name, arch, label=f"kernel '{name}'")


def machine_per_source(kernel: Kernel, evaluated: Evaluated, arch: str = DEFAULT_ARCH) -> tuple[float, float] | None:
    """Global (loads, stores) of the machine code per access of the source's, at ``evaluated``'s sizes
    (``symbolic_counts(kernel).values(sizes)``): the instructions over loopy's count per work-item with
    every guard passing, as the instructions count; 1.0 for a direction with no access. None where a
    load or store sits in a loop of the machine code (its trip count is not read)."""
    machine = compiled_memory(kernel, arch)
    if not machine.straight_line:
        return None
    named = evaluated.named()
    loads, stores = named["global_loads"] / evaluated.threads, named["global_stores"] / evaluated.threads
    return (machine.load_instructions / loads if loads else 1.0,
            machine.store_instructions / stores if stores else 1.0)


def _compiled(source: str, name: str, arch: str, label: str) -> CompiledMemory:
    arch = normalize_arch(arch)
    key = hashlib.sha256(json.dumps(
        ["sass", COUNTING_VERSION, source, name, arch, nvrtc_version(), nvdisasm_version()]).encode()).hexdigest()
    if key in _memory_cache:
        return _memory_cache[key]
    found = disk_cached("compiled", key, CompiledMemory,
                        lambda: count_instructions(*disassemble(source, name, arch, label), arch, label))
    _memory_cache[key] = found
    return found


def disassemble(source: str, name: str, arch: str, label: str) -> tuple[str, str]:
    """SASS of CUDA ``source`` compiled with NVRTC for ``arch`` (code sections only), and the name
    its function ``name`` has there (mangled for a C++ kernel)."""
    program = compile_program(source, name, arch, label)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "kernel.cubin"
        path.write_bytes(program.cubin)
        done = _run_nvdisasm(["-c", str(path)], label)
    if done.returncode != 0:
        raise GpuperfError(f"{label}: nvdisasm failed: {done.stderr.strip() or done.returncode}")
    return done.stdout, program.lowered or name


def _run_nvdisasm(arguments: list[str], label: str) -> subprocess.CompletedProcess:
    """nvdisasm run with ``arguments``; one that cannot be started (missing, not executable) is an error
    naming it, which leaves the machine code unknown and the registers standing."""
    path = nvdisasm_path()
    try:
        return subprocess.run([path, *arguments], capture_output=True, text=True)
    except OSError as exc:
        raise GpuperfError(f"{label}: nvdisasm ({path}) cannot be run: {exc.strerror or exc}") from None


def _sections(sass: str) -> dict[str, list[str]]:
    """Lines of each ``.text.FUNCTION`` section."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in sass.splitlines():
        header = re.match(r"\s*\.section\s+\.text\.([^,\s]+)", line)
        if header:
            current = sections.setdefault(header[1], [])
        elif current is not None:
            current.append(line)
    return sections


def count_instructions(sass: str, name: str, arch: str, label: str = "kernel") -> CompiledMemory:
    """Count the entry function ``name``'s global loads and stores, and those inside a loop."""
    sections = _sections(sass)
    if name not in sections:
        raise GpuperfError(f"{label}: the machine code has no function '{name}' (it has: {', '.join(sections) or 'none'})")
    labels: dict[str, int] = {}
    instructions: list[str] = []
    for line in sections[name]:
        found_label = _LABEL.match(line)
        if found_label:
            labels[found_label[1]] = len(instructions)
            continue
        found = _INSTRUCTION.search(line)
        if found:
            instructions.append(found[1])
    loops = []
    for index, instruction in enumerate(instructions):
        target = _BRANCH_TARGET.search(instruction)
        if target and labels.get(target[1], index + 1) < index:  # a branch to itself is the trap after EXIT
            loops.append((labels[target[1]], index))
    loads = [i for i, text in enumerate(instructions) if _LOAD.match(text)]
    stores = [i for i, text in enumerate(instructions) if _STORE.match(text)]

    def in_loops(indices: list[int]) -> int:
        return sum(1 for i in indices if any(start <= i <= end for start, end in loops))

    return CompiledMemory(load_instructions=len(loads), store_instructions=len(stores),
                          loads_in_loops=in_loops(loads), stores_in_loops=in_loops(stores),
                          loops=len(loops), arch=arch, function=name)
