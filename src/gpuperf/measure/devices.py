"""Device names (``opencl:0``, ``opencl:<platform>:<device>``, ``cuda:<index>``) and the device interface.

A :class:`Device` compiles a :class:`~gpuperf.kernels.kernel.Kernel` once into a :class:`Compiled`
program; binding that to one set of inputs gives a :class:`Launch` whose ``run()`` enqueues the
kernel once and returns the device-side time in seconds. Inputs stay on the device across runs.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

import numpy as np

from gpuperf.errors import GpuperfError
from gpuperf.kernels.kernel import Kernel

DEVICE_FORMS = "opencl:0, opencl:<platform>:<device>, cuda:<index>"


def strided_host_array(shape: tuple[int, ...], dtype: np.dtype, strides: tuple[int, ...],
                       values: np.ndarray | None = None) -> np.ndarray:
    """A host array of ``shape`` laid out with byte ``strides`` over a zeroed buffer spanning them
    (padding included, in ``.base``), holding ``values`` where given: the layout a kernel's code expects."""
    itemsize = np.dtype(dtype).itemsize
    span = sum((n - 1) * stride for n, stride in zip(shape, strides)) + itemsize if all(shape) else 0
    raw = np.zeros(span, np.uint8)
    host = np.ndarray(shape, dtype, raw, 0, strides)
    if values is not None:
        host[...] = values
    return host


# -- failures a measured point can end in ------------------------------------------------------
class MeasureFailure(GpuperfError):
    """A point that could not be measured; ``status`` names the stage that failed."""

    status = "run_failed"

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail or message


class CompileFailed(MeasureFailure):
    """The kernel's code did not compile for the device."""

    status = "compile_failed"


# pocl's LLVM names a CPU newer than itself 'generic', which its compiler then refuses (pocl issue 1049); the
# hint, as gpuperf devices shows it, and where to find another device, which a measuring command adds to it
UNKNOWN_HOST_CPU = ("the OpenCL driver's compiler does not know this machine's CPU, so no kernel compiles on this "
                    "device, whatever its code: a pocl built with a newer LLVM, another device, or another CPU OpenCL "
                    "runtime such as Intel's (docs/measuring.md in gpuperf's source repository says how) measures here")
OTHER_DEVICES = "; gpuperf devices lists the others"


def compile_failure(kernel: Kernel, exc: BaseException, backend: str = "") -> CompileFailed:
    """One clear error for a kernel that did not build: the exception's first line and the
    compiler's first error from the build log. Its ``detail``, which a campaign's store and a tuning
    run's trials keep, opens with that line, so their first line names the compiler's error too."""
    message = f"kernel '{kernel.key}' failed to compile{backend}: {describe_exception(exc)}"
    first_error = compiler_first_error(exc)
    if first_error:
        message += "; " + first_error
    return CompileFailed(message, detail=f"{message}\n{type(exc).__name__}: {exc}")


def compiler_first_error(exc: BaseException, see_also: str = OTHER_DEVICES) -> str | None:
    """The compiler's first error in a build failure's log (after its first line), or None: a temporary
    file's name is dropped for its line number, and a CPU the compiler does not know gets a word on it
    (:data:`UNKNOWN_HOST_CPU`, then ``see_also``)."""
    first_error = next((line.strip() for line in str(exc).splitlines()[1:] if "error" in line.lower()), None)
    if first_error is None:
        return None
    # "error: /tmp/.../tempfile.cl:4:65: what" -> "error: line 4:65: what" (the temporary file is gone)
    first_error = re.sub(r"\S+\.(?:cl|cu|cpp|c):(\d+)", r"line \1", first_error)
    if "unknown target CPU" in first_error:
        first_error += f" ({UNKNOWN_HOST_CPU}{see_also})"
    return first_error


class RunFailed(MeasureFailure):
    """A launch failed (bad geometry, out of resources, a device error)."""

    status = "run_failed"


class VerifyFailed(MeasureFailure):
    """The kernel's outputs differ from its NumPy reference beyond its tolerance."""

    status = "verify_failed"

    def __init__(self, message: str, max_rel_error: float | None = None) -> None:
        super().__init__(message)
        self.max_rel_error = max_rel_error


class DeviceLost(RunFailed):
    """A launch failed with an error that leaves the device unusable in this process (CUDA's
    sticky errors: an illegal address, a launch failure, ...): every later call fails the same
    way, so a campaign or tuning run stores this point as failed and stops."""


# CUDA errors after which the context is unusable until the process ends (CUDA runtime API
# documentation, cudaError: "the process must be terminated and relaunched").
STICKY_CUDA_ERRORS = {
    700: "illegal address", 702: "launch timeout", 714: "hardware stack error", 715: "illegal instruction",
    716: "misaligned address", 717: "invalid address space", 718: "invalid program counter",
    719: "launch failure",
}


def device_lost(exc: BaseException) -> bool:
    """Whether ``exc``, or an exception it was raised from, left the device unusable."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, DeviceLost) or _sticky_cuda_status(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def _sticky_cuda_status(exc: BaseException) -> bool:
    """A CuPy CUDA runtime or driver error (``.status``) that CUDA makes sticky."""
    return type(exc).__module__.startswith("cupy") and getattr(exc, "status", None) in STICKY_CUDA_ERRORS


def describe_exception(exc: BaseException, limit: int = 300) -> str:
    """``Type: first line of the message`` cut to ``limit`` characters (for one-line errors); a part
    the line repeats (PyOpenCL's ``A - A - A``) is kept once."""
    text = str(exc).strip().splitlines()
    first = " - ".join(dict.fromkeys(text[0].split(" - "))) if text else ""
    line = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


# -- the interface every device implements -----------------------------------------------------
class Launch(Protocol):
    """A compiled kernel bound to one set of device-resident inputs and outputs."""

    def run(self) -> float:
        """Enqueue the kernel once, wait, and return its device-side time in seconds."""

    def run_many(self, count: int) -> list[float]:
        """Enqueue ``count`` launches back to back, wait for the last, return each one's device time."""

    def outputs(self) -> dict[str, np.ndarray]:
        """Copy the output arrays back to the host."""

    def close(self) -> None:
        """Release the device buffers."""


class Compiled(Protocol):
    kernel: Kernel
    compile_s: float
    timer: str

    def bind(self, sizes: Mapping[str, int], inputs: Mapping[str, np.ndarray]) -> Launch:
        """Upload ``inputs``, allocate outputs and return a launch for these sizes."""


class Device(Protocol):
    name: str
    memory_bytes: int  # global memory

    def provenance(self) -> dict[str, str]:
        """Device name, platform and driver versions."""

    def compile(self, kernel: Kernel) -> Compiled:
        """Generate and build the kernel's device code (raises :class:`CompileFailed`)."""


# -- names --------------------------------------------------------------------------------------
_OPENCL = re.compile(r"opencl(?::(\d+))?(?::(\d+))?")
_CUDA = re.compile(r"cuda(?::(\d+))?")


def opencl_devices() -> list[tuple[str, str]]:
    """``(canonical name, description)`` of every OpenCL device, platform by platform."""
    return _opencl_scan()[0]


def opencl_missing_reason() -> str | None:
    """Why no OpenCL device was found (pyopencl does not import, no platform, a platform without
    devices); None where one was."""
    found, problems = _opencl_scan()
    return None if found else "; ".join(problems) or "no OpenCL device was found"


def _opencl_scan() -> tuple[list[tuple[str, str]], list[str]]:
    """The OpenCL devices (as :func:`opencl_devices`) and what kept others from being listed."""
    try:
        import pyopencl as cl
    except Exception as exc:  # noqa: BLE001 - not installed, or no ICD loader library
        return [], [f"pyopencl does not import ({describe_exception(exc, 160)})"]
    try:
        platforms = cl.get_platforms()
    except Exception as exc:  # noqa: BLE001 - no platform registered with the ICD loader
        return [], [f"no OpenCL platform ({describe_exception(exc, 160)})"]
    found: list[tuple[str, str]] = []
    problems = [] if platforms else ["no OpenCL platform is installed"]
    for p_index, platform in enumerate(platforms):
        try:
            devices = platform.get_devices()
        except Exception as exc:  # noqa: BLE001 - a platform without devices raises
            problems.append(f"platform '{platform.name.strip()}' lists no device ({describe_exception(exc, 160)})")
            continue
        if not devices:
            problems.append(f"platform '{platform.name.strip()}' has no devices")
        for d_index, device in enumerate(devices):
            found.append((f"opencl:{p_index}:{d_index}", f"{device.name.strip()} ({platform.name.strip()})"))
    return found, problems


# The one-line program an OpenCL device's compiler is checked with, when the device is opened or listed
PROBE_SOURCE = "__kernel void gpuperf_probe(__global int *out) { out[0] = 1; }"


def build_probe(context: Any) -> None:
    """Build :data:`PROBE_SOURCE` in a pyopencl ``context``, what its compiler writes on stderr kept off
    the terminal; raises what the build raises (a compiler that can build nothing for the device)."""
    import pyopencl as cl

    with captured_stderr():
        cl.Program(context, PROBE_SOURCE).build()


def cannot_build_reason(exc: BaseException, see_also: str = OTHER_DEVICES) -> str:
    """Why the probe did not build: the compiler's first error (with the word on a CPU it does not
    know, then ``see_also``), else the exception's first line."""
    return compiler_first_error(exc, see_also) or describe_exception(exc, 200)


def opencl_build_problem(canonical: str) -> str | None:
    """Why the OpenCL device ``canonical`` (``opencl:P:D``) cannot build kernels, or None where it
    builds :data:`PROBE_SOURCE` (one tiny build, with pyopencl alone: no loopy)."""
    import pyopencl as cl

    platform, _, device = canonical.removeprefix("opencl:").partition(":")
    try:
        build_probe(cl.Context([cl.get_platforms()[int(platform)].get_devices()[int(device)]]))
    except Exception as exc:  # noqa: BLE001 - whatever the driver raises, the device builds nothing
        return cannot_build_reason(exc, see_also="")  # said by gpuperf devices, which lists the others itself
    return None


def build_problems(names: list[str]) -> dict[str, str | None]:
    """Why each device of ``names`` cannot build kernels, None where it can: each OpenCL device builds
    :data:`PROBE_SOURCE` once, its alias ``opencl:N`` taking its answer. A CUDA device is not checked (None)."""
    problems: dict[str, str | None] = {}
    for name in names:
        if not name.startswith("opencl"):
            problems[name] = None
            continue
        canonical = canonical_device_name(name)
        if canonical not in problems:
            problems[canonical] = opencl_build_problem(canonical)
        problems[name] = problems[canonical]
    return problems


@contextlib.contextmanager
def captured_stderr() -> Iterator[list[str]]:
    """File descriptor 2 sent to a temporary file (the OpenCL driver's compiler writes there, as pocl's
    "2 errors generated."); yields a list that holds what was written once the block ends."""
    captured: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield captured
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
                sink.seek(0)
                captured.append(sink.read().decode(errors="replace"))
    finally:
        os.close(saved)


def no_device_reason() -> str:
    """Why this machine has no device to measure on: OpenCL's reason and CUDA's."""
    from gpuperf.measure.cuda import cupy_missing_reason

    cuda = cupy_missing_reason() or "has no device"
    return f"OpenCL: {opencl_missing_reason() or 'no device'}; CUDA {cuda}"


def cuda_devices() -> list[tuple[str, str]]:
    """``(name, description)`` of every CUDA device CuPy can see (none without CuPy)."""
    from gpuperf.measure.cuda import cuda_device_list

    return cuda_device_list()


def available_devices() -> list[tuple[str, str]]:
    """Every device this machine can measure on, with the short alias ``opencl:0`` first."""
    opencl = opencl_devices()
    alias = [("opencl:0", f"same as {opencl[0][0]}")] if opencl else []
    return alias + opencl + cuda_devices()


def _unknown_device(name: str, reason: str) -> GpuperfError:
    listed = "; ".join(f"{n} ({d})" for n, d in available_devices()) or f"none ({no_device_reason()})"
    return GpuperfError(f"device '{name}' {reason}; available devices: {listed}")


def canonical_device_name(name: str) -> str:
    """``opencl:N`` -> ``opencl:P:D`` (the N-th device over all platforms); check the name exists."""
    text = name.strip().lower()
    opencl = _OPENCL.fullmatch(text)
    if opencl:
        listed = [n for n, _ in opencl_devices()]
        if opencl.group(2) is None:
            index = int(opencl.group(1) or 0)  # opencl:N is the N-th device over all platforms
            if index >= len(listed):
                raise _unknown_device(name, "does not exist")
            return listed[index]
        canonical = f"opencl:{int(opencl.group(1))}:{int(opencl.group(2))}"
        if canonical not in listed:
            raise _unknown_device(name, "does not exist")
        return canonical
    cuda = _CUDA.fullmatch(text)
    if cuda:
        canonical = f"cuda:{int(cuda.group(1) or 0)}"
        if canonical not in [n for n, _ in cuda_devices()]:
            from gpuperf.measure.cuda import cupy_missing_reason

            raise _unknown_device(name, cupy_missing_reason() or "does not exist")
        return canonical
    raise _unknown_device(name, f"is not a device name (use {DEVICE_FORMS})")


@functools.lru_cache(maxsize=None)
def _open(canonical: str) -> Device:
    kind, _, rest = canonical.partition(":")
    if kind == "opencl":
        from gpuperf.measure.opencl import OpenCLDevice

        platform, _, device = rest.partition(":")
        return OpenCLDevice(int(platform), int(device))
    from gpuperf.measure.cuda import CudaDevice

    return CudaDevice(int(rest))


def open_device(name: str) -> Device:
    """The device ``name`` points at (opened once per process); unknown names list the available ones."""
    return _open(canonical_device_name(name))
