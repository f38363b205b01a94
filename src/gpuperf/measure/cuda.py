"""Running kernels on an NVIDIA GPU through CuPy, timed with CUDA events.

The kernel is retargeted to ``lp.CudaTarget()``; loopy generates one ``extern "C" __global__`` function
per device kernel. Their argument lists are read from loopy's code AST and each one's grid and block
from the linearized program, so this module needs no GPU to plan a launch; CuPy is imported only when
a CUDA device is opened.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gpuperf._lazy import LazyModule
from gpuperf.errors import GpuperfError
from gpuperf.kernels.kernel import Kernel
from gpuperf.measure.devices import (
    DeviceLost,
    RunFailed,
    compile_failure,
    describe_exception,
    device_lost,
    strided_host_array,
)

if TYPE_CHECKING:
    import cgen
    import loopy as lp
else:  # imported when a kernel is compiled: listing the devices does not need loopy
    cgen, lp = LazyModule("cgen"), LazyModule("loopy")

Dim3 = tuple[int, int, int]


# -- what can be worked out without a GPU -----------------------------------------------------------
@dataclass(frozen=True)
class DeviceArg:
    name: str
    dtype: np.dtype
    is_pointer: bool


@dataclass(frozen=True)
class DeviceFunction:
    """One generated ``__global__`` function and its parameters in declaration order."""

    name: str
    args: tuple[DeviceArg, ...]


@dataclass(frozen=True)
class LaunchStep:
    function: str
    grid: Dim3
    block: Dim3


def _declared_arg(declaration: Any) -> DeviceArg:
    is_pointer = False
    while hasattr(declaration, "subdecl"):
        is_pointer = is_pointer or isinstance(declaration, cgen.Pointer)
        declaration = declaration.subdecl
    return DeviceArg(declaration.name, np.dtype(declaration.dtype), is_pointer)


def _function_declaration(ast: Any) -> cgen.FunctionDeclaration:
    parts = ast.contents if isinstance(ast, cgen.Collection) else [ast]
    body = next(p for p in parts if isinstance(p, cgen.FunctionBody))
    declaration = body.fdecl
    while not isinstance(declaration, cgen.FunctionDeclaration):
        declaration = declaration.subdecl
    return declaration


def cuda_code(kernel: Kernel) -> tuple[str, tuple[DeviceFunction, ...]]:
    """CUDA source for ``kernel`` and the signature of every device function in it."""
    codegen = lp.generate_code_v2(kernel.for_target(lp.CudaTarget()))
    functions = []
    for program in codegen.device_programs:
        declaration = _function_declaration(program.ast)
        args = tuple(_declared_arg(d) for d in declaration.arg_decls)
        functions.append(DeviceFunction(program.name, args))
    return codegen.device_code(), tuple(functions)


def launch_exprs(kernel: Kernel) -> dict[str, tuple[tuple[Any, ...], tuple[Any, ...]]]:
    """Per device function: (blocks per grid dimension, threads per block dimension) as expressions."""
    from loopy.kernel.tools import get_subkernel_start_indices
    from loopy.schedule import get_insn_ids_for_block_at

    program = lp.linearize(lp.preprocess_kernel(kernel.for_target(lp.CudaTarget())))
    entry = program.default_entrypoint
    exprs = {}
    for name, start in get_subkernel_start_indices(entry).items():
        insn_ids = get_insn_ids_for_block_at(entry.linearization, start)
        groups, local = entry.get_grid_sizes_for_insn_ids_as_exprs(insn_ids, program.callables_table)
        exprs[name] = (tuple(groups), tuple(local))
    return exprs


def check_supported(functions: Sequence[DeviceFunction], exprs: Mapping[str, Any]) -> None:
    """Refuse programs loopy's CUDA target cannot emit whole (it drops every device kernel but the first)."""
    missing = [name for name in exprs if name not in {f.name for f in functions}]
    if missing:
        raise GpuperfError(
            f"the program needs {len(exprs)} device kernels but loopy's CUDA target generates only "
            f"{len(functions)} (missing {', '.join(missing)}); measure it on an OpenCL device"
        )


def _dim3(exprs: Sequence[Any], sizes: Mapping[str, int]) -> Dim3:
    from pymbolic import evaluate

    values = [int(evaluate(e, dict(sizes))) for e in exprs] + [1, 1, 1]
    return values[0], values[1], values[2]


def launch_plan(kernel: Kernel, sizes: Mapping[str, Any],
                exprs: Mapping[str, tuple[tuple[Any, ...], tuple[Any, ...]]] | None = None) -> list[LaunchStep]:
    """The launches, in order, with grid (in blocks) and block (in threads) for these sizes."""
    resolved = kernel.resolve_sizes(sizes)
    exprs = exprs if exprs is not None else launch_exprs(kernel)
    steps = [LaunchStep(name, _dim3(groups, resolved), _dim3(local, resolved)) for name, (groups, local) in exprs.items()]
    for step in steps:
        _check_launchable(kernel, resolved, step)
    return steps


GRID_LIMITS = (2**31 - 1, 65535, 65535)  # blocks along x, y, z: CUDA's limits on every GPU since Kepler
BLOCK_LIMITS = (1024, 1024, 64)  # threads along x, y, z, and 1024 in all


def _check_launchable(kernel: Kernel, sizes: Mapping[str, int], step: LaunchStep) -> None:
    """RunFailed naming the dimension of ``step``'s grid or block past CUDA's limits (the driver's own
    error, CUDA_ERROR_INVALID_VALUE, names none)."""
    problem = launch_limits_problem(kernel, sizes, step.grid, step.block)
    if problem:
        raise RunFailed(problem)


def launch_limits_problem(kernel: Kernel, sizes: Mapping[str, int], grid: Sequence[int],
                          block: Sequence[int]) -> str | None:
    """The dimension of a ``grid`` (blocks) or ``block`` (threads) past CUDA's limits, named (None when none)."""
    shown = ", ".join(f"{k}={v}" for k, v in sizes.items())
    for what, dims, limits in (("grid", grid, GRID_LIMITS), ("block", block, BLOCK_LIMITS)):
        for axis, size, limit in zip("xyz", dims, limits):
            if size > limit:
                return (f"kernel '{kernel.key}' at {shown}: its {what} has {size:,} along {axis}, past CUDA's "
                        f"limit of {limit:,}; choose sizes or a variant within it (OpenCL takes such a launch)")
    threads = block[0] * block[1] * block[2]
    if threads > 1024:
        return f"kernel '{kernel.key}' at {shown}: its blocks hold {threads:,} threads, past CUDA's 1,024"
    return None


def marshal_args(function: DeviceFunction, buffers: Mapping[str, Any], values: Mapping[str, Any]) -> tuple[Any, ...]:
    """Arguments in declaration order: device buffers as given, scalars (sizes and data scalars) as
    NumPy values of the C type."""
    marshalled: list[Any] = []
    for arg in function.args:
        if arg.is_pointer:
            if arg.name not in buffers:
                raise GpuperfError(f"device function '{function.name}' needs array '{arg.name}', which was not given")
            marshalled.append(buffers[arg.name])
        elif arg.name in values:
            marshalled.append(arg.dtype.type(values[arg.name]))
        else:
            raise GpuperfError(
                f"device function '{function.name}' needs scalar '{arg.name}', which was not given"
            )
    return tuple(marshalled)


def scratch_shapes(kernel: Kernel, functions: Sequence[DeviceFunction],
                   sizes: Mapping[str, int]) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Global temporaries the device functions take as arguments: name -> (shape, dtype)."""
    from pymbolic import evaluate

    arg_names = {a.name for a in kernel.entry.args}
    temporaries = kernel.entry.temporary_variables
    shapes = {}
    for function in functions:
        for arg in function.args:
            if arg.is_pointer and arg.name not in arg_names and arg.name in temporaries:
                shape = tuple(int(evaluate(s, dict(sizes))) for s in temporaries[arg.name].shape)
                shapes[arg.name] = (shape, arg.dtype)
    return shapes


# -- CuPy ---------------------------------------------------------------------------------------
def _device_array(cupy: Any, host: np.ndarray) -> Any:
    """``host`` on the GPU with its strides (the ones the kernel's code indexes with)."""
    if host.flags.c_contiguous:
        return cupy.asarray(host)
    raw = cupy.asarray(host.base)
    return cupy.ndarray(host.shape, host.dtype, memptr=raw.data, strides=host.strides)


def _cupy() -> Any:
    import cupy

    return cupy


def cupy_missing_reason() -> str | None:
    """Why CUDA devices cannot be used here (None when CuPy imports and the driver counts its GPUs)."""
    try:
        cupy = _cupy()
    except Exception as exc:  # noqa: BLE001 - ImportError or a broken CUDA install
        return f"is not available (CuPy does not import: {describe_exception(exc, 120)}; install gpuperf[cuda])"
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - no driver, or one too old for CuPy's CUDA
        return f"is not available (the CUDA driver says: {describe_exception(exc, 160)})"
    return None


def cuda_device_list() -> list[tuple[str, str]]:
    """``(cuda:<index>, GPU name)`` for each GPU CuPy sees; empty without CuPy or a driver."""
    try:
        cupy = _cupy()
        count = cupy.cuda.runtime.getDeviceCount()
        return [(f"cuda:{i}", _device_name(cupy, i)) for i in range(count)]
    except Exception:  # noqa: BLE001
        return []


def _device_name(cupy: Any, index: int) -> str:
    name = cupy.cuda.runtime.getDeviceProperties(index)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


@functools.lru_cache(maxsize=1)
def _cupy_version() -> str:
    return str(_cupy().__version__)


# A one-thread kernel that holds the stream until the host has enqueued a whole batch of timed
# launches (it polls flag[0] in pinned host memory), so no launch waits for the host between its
# start and end events. If the host has not opened the gate within the timeout (SM clock cycles,
# about a second at 2 GHz), the kernel goes on by itself and sets flag[1], and the batch is timed
# again in smaller batches. The host writes only flag[0] and the kernel only flag[1], so neither
# overwrites what the other said.
GATE_SOURCE = r"""
extern "C" __global__ void gpuperf_gate(volatile int *flag, long long timeout_cycles)
{
    long long start = clock64();
    while (flag[0] == 0) {
        if (clock64() - start > timeout_cycles) {
            flag[1] = 1;
            return;
        }
    }
}
"""
GATE_TIMEOUT_CYCLES = 2**31
# At most this many events and launches wait behind one gate: the driver's queue of pending work is
# finite (about a thousand launches), and a host blocked on a full queue cannot open the gate.
GATED_QUEUE_ENTRIES = 512


class LaunchGate:
    """The gate kernel and its two flags on one device (see ``GATE_SOURCE``)."""

    def __init__(self, cupy: Any) -> None:
        self.kernel = cupy.RawModule(code=GATE_SOURCE).get_function("gpuperf_gate")
        self.memory = cupy.cuda.alloc_pinned_memory(2 * np.dtype(np.int32).itemsize)
        self.flag = np.ndarray((2,), np.int32, buffer=self.memory)

    def close(self) -> None:
        """Hold the stream: launches enqueued from now on wait until ``open``."""
        self.flag[:] = 0
        self.kernel((1,), (1,), (np.uint64(self.memory.ptr), np.int64(GATE_TIMEOUT_CYCLES)))

    def open(self) -> None:
        self.flag[0] = 1

    def timed_out(self) -> bool:
        """Whether the last gate opened by its timeout (read after the stream has finished)."""
        return bool(self.flag[1])


class CudaDevice:
    """One CUDA GPU, used through CuPy."""

    def __init__(self, index: int) -> None:
        self.cupy = _cupy()
        self.index = index
        self.name = f"cuda:{index}"
        try:
            self.gpu = self.cupy.cuda.Device(index)
            self.memory_bytes = int(self.gpu.mem_info[1])  # (free, total)
        except Exception as exc:  # noqa: BLE001 - a busy GPU in exclusive mode, a driver error
            raise GpuperfError(f"device '{self.name}' cannot be opened: {describe_exception(exc, 200)}") from None
        self._gate: LaunchGate | None = None
        self.gate_failure: str | None = None

    @property
    def gate(self) -> LaunchGate | None:
        """The device's launch gate, built on first use; None where it cannot be built (the reason is
        kept in ``gate_failure`` and launches are then timed ungated)."""
        if self._gate is None and self.gate_failure is None:
            try:
                with self.gpu:
                    self._gate = LaunchGate(self.cupy)
            except Exception as exc:  # noqa: BLE001 - timing still works without the gate
                self.gate_failure = describe_exception(exc, 200)
        return self._gate

    def provenance(self) -> dict[str, str]:
        runtime = self.cupy.cuda.runtime
        return {
            "device_name": _device_name(self.cupy, self.index),
            "driver_version": str(runtime.driverGetVersion()),
            "runtime_version": str(runtime.runtimeGetVersion()),
            "cupy": _cupy_version(),
        }

    def compile(self, kernel: Kernel) -> CudaCompiled:
        return CudaCompiled(self, kernel)


class CudaCompiled:
    """A kernel's CUDA source built with NVRTC (through ``cupy.RawModule``).

    ``timer`` names how its launches are timed: ``cuda_event_gated`` (start and end events around each
    launch, the whole batch enqueued behind the device's launch gate, so the host's launch delay is
    not counted) or, where the gate cannot be built, ``cuda_event_span`` (the same events without the
    gate: a launch shorter than the host's launch delay is timed as that delay)."""

    def __init__(self, device: CudaDevice, kernel: Kernel) -> None:
        self.device = device
        self.kernel = kernel
        self.timer = "cuda_event_gated" if device.gate is not None else "cuda_event_span"
        start = time.perf_counter()
        try:
            code, self.functions = cuda_code(kernel)
            self.exprs = launch_exprs(kernel)
            check_supported(self.functions, self.exprs)
            with device.gpu:
                module = device.cupy.RawModule(code=code)
                self.handles = {f.name: module.get_function(f.name) for f in self.functions}
        except Exception as exc:  # noqa: BLE001
            raise compile_failure(kernel, exc, " for CUDA") from exc
        self.compile_s = time.perf_counter() - start

    def bind(self, sizes: Mapping[str, int], inputs: Mapping[str, np.ndarray]) -> CudaLaunch:
        return CudaLaunch(self, sizes, inputs)


class CudaLaunch:
    """Device arrays for one set of sizes; ``run()`` launches every device function once."""

    def __init__(self, compiled: CudaCompiled, sizes: Mapping[str, int], inputs: Mapping[str, np.ndarray]) -> None:
        self.compiled = compiled
        cupy = compiled.device.cupy
        kernel = compiled.kernel
        plan = {p.function: p for p in launch_plan(kernel, sizes, compiled.exprs)}  # within CUDA's limits
        try:
            with compiled.device.gpu:
                self.arrays = {  # outputs start as zeros, as on OpenCL
                    arg.name: _device_array(cupy, strided_host_array(
                        kernel.array_shape(arg, sizes), np.dtype(arg.dtype.numpy_dtype),
                        kernel.array_strides(arg, sizes), inputs.get(arg.name)))
                    for arg in kernel.array_args
                }
                shapes = scratch_shapes(kernel, compiled.functions, sizes)
                scratch = {name: cupy.empty(shape, dtype=dtype) for name, (shape, dtype) in shapes.items()}
                buffers = {**self.arrays, **scratch}
                values = {**sizes, **{arg.name: inputs[arg.name] for arg in kernel.scalar_args}}
                self.calls = [
                    (compiled.handles[f.name], plan[f.name].grid, plan[f.name].block, marshal_args(f, buffers, values))
                    for f in compiled.functions
                ]
                self.scratch = scratch
        except Exception as exc:  # noqa: BLE001
            failure = DeviceLost if device_lost(exc) else RunFailed
            raise failure(f"kernel '{kernel.key}': preparing the CUDA launch failed: {describe_exception(exc)}",
                          detail=f"{type(exc).__name__}: {exc}") from exc

    def run(self) -> float:
        return self.run_many(1)[0]

    def run_many(self, count: int) -> list[float]:
        try:
            return self.timed_batch(count, gated=self.compiled.timer == "cuda_event_gated")
        except Exception as exc:  # noqa: BLE001
            failure = DeviceLost if device_lost(exc) else RunFailed
            raise failure(f"kernel '{self.compiled.kernel.key}' failed to run: {describe_exception(exc)}",
                          detail=f"{type(exc).__name__}: {exc}") from exc

    def timed_batch(self, count: int, gated: bool = True) -> list[float]:
        """Device times of ``count`` launches, each between its own start and end events; with ``gated``
        (and a gate on the device) the batch is enqueued behind the launch gate."""
        device = self.compiled.device
        gate = device.gate if gated else None
        # at most GATED_QUEUE_ENTRIES events and launches behind one gate; ungated, one batch
        chunk = max(1, GATED_QUEUE_ENTRIES // (2 + len(self.calls))) if gate is not None else count
        times: list[float] = []
        with device.gpu:
            while len(times) < count:
                times += self._timed_batch(min(count - len(times), chunk), gate)
        return times

    def _timed_batch(self, count: int, gate: LaunchGate | None) -> list[float]:
        """``count`` launches, each between its own start and end events; behind ``gate`` when given.
        A gate that opened by its timeout (the host was slower than it, or the driver's queue filled
        and blocked the host) leaves the batch's first launches timed with host delays in them, so the
        batch is timed again as two halves."""
        cupy = self.compiled.device.cupy
        pairs = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(count)]
        if gate is not None:
            gate.close()
        try:
            for start, end in pairs:
                start.record()
                for handle, grid, block, args in self.calls:
                    handle(grid, block, args)
                end.record()
        finally:
            if gate is not None:
                gate.open()
        pairs[-1][1].synchronize()
        if gate is not None and gate.timed_out() and count > 1:
            half = count // 2
            return self._timed_batch(half, gate) + self._timed_batch(count - half, gate)
        return [cupy.cuda.get_elapsed_time(start, end) * 1e-3 for start, end in pairs]

    def outputs(self) -> dict[str, np.ndarray]:
        cupy = self.compiled.device.cupy
        return {name: cupy.asnumpy(self.arrays[name]) for name in self.compiled.kernel.outputs}

    def close(self) -> None:
        """Release the buffers and return them to the driver. Never raises: after a failed launch the
        device repeats its error here, and the failure already raised must be the one reported."""
        cupy = self.compiled.device.cupy
        try:
            cupy.cuda.Device(self.compiled.device.index).synchronize()
        except Exception:  # noqa: BLE001, S110 - see the docstring
            pass
        self.calls, self.arrays, self.scratch = [], {}, {}
        try:
            with self.compiled.device.gpu:  # CuPy frees the pool of the current device only
                cupy.get_default_memory_pool().free_all_blocks()
        except Exception:  # noqa: BLE001, S110 - see the docstring
            pass
