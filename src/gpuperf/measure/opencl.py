"""Running kernels on an OpenCL device through PyOpenCL and loopy's executor.

The program is generated and built once per kernel (:meth:`OpenCLDevice.compile`); each launch then
costs one call of loopy's generated host code (tens of microseconds) and is timed by the device's
profiling events. A program that loopy splits into several device kernels is timed from a marker
enqueued before it to the end of its last kernel, with the queue held until everything is enqueued
so that host delays between the enqueues do not count; its global temporaries come from one pool per
binding, so the launches of a batch reuse one buffer rather than each allocating its own.
"""

from __future__ import annotations

import contextlib
import sys
import time
import warnings
from collections.abc import Mapping

import loopy as lp
import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pyopencl.tools as clt

from gpuperf.errors import GpuperfError
from gpuperf.kernels.kernel import Kernel
from gpuperf.measure.devices import (
    RunFailed, build_probe, cannot_build_reason, captured_stderr, compile_failure, describe_exception,
    strided_host_array,
)


def cannot_build_message(device: OpenCLDevice, exc: BaseException) -> str:
    """One line for a device whose compiler fails on the simplest program, naming the compiler's error."""
    return (f"device '{device.name}' ({device.device.name.strip()}, {' '.join(device.platform.version.split())}) "
            f"cannot build OpenCL programs: {cannot_build_reason(exc)}")


class OpenCLDevice:
    """One OpenCL device with a context and an in-order queue with profiling enabled."""

    def __init__(self, platform_index: int, device_index: int) -> None:
        self.name = f"opencl:{platform_index}:{device_index}"
        try:
            platform = cl.get_platforms()[platform_index]
            self.device = platform.get_devices()[device_index]
            self.platform = platform
            self.memory_bytes = int(self.device.global_mem_size)
            self.context = cl.Context([self.device])
            self.queue = cl.CommandQueue(self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        except Exception as exc:  # noqa: BLE001 - a driver that lists the device but will not open it
            raise GpuperfError(f"device '{self.name}' cannot be opened: {describe_exception(exc, 200)}") from None
        self._check_it_builds()

    def _check_it_builds(self) -> None:
        """Build a one-line program, so that a compiler that can build nothing for this device (pocl's
        LLVM on a CPU newer than it knows) is one error here rather than every kernel failing to compile."""
        try:
            build_probe(self.context)
        except Exception as exc:  # noqa: BLE001 - whatever the driver raises, the device is unusable
            raise GpuperfError(cannot_build_message(self, exc)) from None

    def provenance(self) -> dict[str, str]:
        return {
            "device_name": self.device.name.strip(),
            "device_version": self.device.version.strip(),
            "driver_version": self.device.driver_version.strip(),
            "platform_name": self.platform.name.strip(),
            "platform_version": self.platform.version.strip(),
        }

    def compile(self, kernel: Kernel) -> OpenCLCompiled:
        return OpenCLCompiled(self, kernel)


class OpenCLCompiled:
    """A kernel's program generated and built for one OpenCL device."""

    def __init__(self, device: OpenCLDevice, kernel: Kernel) -> None:
        self.device = device
        self.kernel = kernel
        start = time.perf_counter()
        try:
            # Code generation and the OpenCL build happen here, once; later calls reuse them.
            # (loopy prints a program that fails its checks on stdout: send that to stderr.)
            # Sizes are always passed explicitly, so loopy's notes that it cannot infer them are noise.
            with captured_stderr() as captured, contextlib.redirect_stdout(sys.stderr), warnings.catch_warnings():
                warnings.simplefilter("ignore", lp.diagnostic.ParameterFinderWarning)
                program = kernel.for_target(lp.PyOpenCLTarget())
                # Events are waited for here, not tracked on the arrays (that waits inside enqueues).
                program = lp.set_options(program, cl_exec_manage_array_events=False)
                self.executor = program.executor(device.context)
                info = self.executor.translation_unit_info(self.executor.arg_to_dtype({}))
        except Exception as exc:  # noqa: BLE001 - any failure to generate or build is a compile failure
            failure = compile_failure(kernel, exc)
            if "".join(captured).strip():
                failure.detail = f"{failure.detail}\n{''.join(captured)}"
            raise failure from exc
        sys.stderr.write("".join(captured))  # what the driver said of a build that succeeded (warnings)
        self.compile_s = time.perf_counter() - start
        self.device_kernel_count = len(vars(info.cl_kernels))
        self.local_mem_bytes = max((int(k.get_work_group_info(cl.kernel_work_group_info.LOCAL_MEM_SIZE, device.device))
                                    for k in vars(info.cl_kernels).values()), default=0)
        self.timer = "kernel_event" if self.device_kernel_count == 1 else "gated_marker_span"
        self.value_args = {a.name for a in kernel.entry.args if isinstance(a, lp.ValueArg)}

    def bind(self, sizes: Mapping[str, int], inputs: Mapping[str, np.ndarray]) -> OpenCLLaunch:
        return OpenCLLaunch(self, sizes, inputs)


def _device_array(queue: cl.CommandQueue, host: np.ndarray) -> cla.Array:
    """``host`` on the device with its strides (the ones the kernel's code indexes with)."""
    if host.flags.c_contiguous:
        return cla.to_device(queue, host)
    buffer = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host.base)
    return cla.Array(queue, host.shape, host.dtype, strides=host.strides, data=buffer)


def _host_array(queue: cl.CommandQueue, array: cla.Array) -> np.ndarray:
    """``array``'s values, copied whole from the device also where its strides are not C order."""
    if array.flags.c_contiguous:
        return array.get(queue)
    raw = np.empty(array.base_data.size, np.uint8)
    cl.enqueue_copy(queue, raw, array.base_data)
    return np.ndarray(array.shape, array.dtype, raw, array.offset, array.strides).copy()


def _check_local_memory(compiled: OpenCLCompiled) -> None:
    """RunFailed where a device kernel needs more local memory than the device has (a launch of it
    may crash the process rather than fail)."""
    limit = int(compiled.device.device.local_mem_size)
    if compiled.local_mem_bytes > limit:
        raise RunFailed(f"kernel '{compiled.kernel.key}' needs {compiled.local_mem_bytes:,} bytes of local memory, "
                        f"more than the {limit:,} of {compiled.device.name}")


class OpenCLLaunch:
    """Device buffers for one set of sizes; ``run_many(count)`` launches and times the kernel."""

    def __init__(self, compiled: OpenCLCompiled, sizes: Mapping[str, int], inputs: Mapping[str, np.ndarray]) -> None:
        self.compiled = compiled
        kernel = compiled.kernel
        queue = compiled.device.queue
        _check_local_memory(compiled)
        self.queue = queue
        try:
            # outputs start as zeros: elements a kernel never writes (a padded border) compare with a reference's
            self.arrays: dict[str, cla.Array] = {
                arg.name: _device_array(queue, strided_host_array(
                    kernel.array_shape(arg, sizes), np.dtype(arg.dtype.numpy_dtype), kernel.array_strides(arg, sizes),
                    inputs.get(arg.name)))
                for arg in kernel.array_args
            }
        except Exception as exc:  # noqa: BLE001
            raise RunFailed(f"kernel '{kernel.key}': allocating device buffers failed: {describe_exception(exc)}",
                            detail=f"{type(exc).__name__}: {exc}") from exc
        given = {**sizes, **{arg.name: inputs[arg.name] for arg in kernel.scalar_args}}
        self.values = {name: value for name, value in given.items() if name in compiled.value_args}
        # A program's global temporaries (a pass's result another device kernel reads) are taken from
        # this pool: the launches of a batch reuse one buffer in turn (the queue is in order), as a CUDA
        # launch allocates them once, rather than each allocating and first touching its own, a cost
        # that grew the batched launches' times several-fold on pocl.
        self.allocator = clt.MemoryPool(clt.ImmediateAllocator(queue))

    def run(self) -> float:
        return self.run_many(1)[0]

    def run_many(self, count: int) -> list[float]:
        try:
            if self.compiled.device_kernel_count == 1:
                events = [self._enqueue() for _ in range(count)]
                events[-1].wait()
                return [(e.profile.end - e.profile.start) * 1e-9 for e in events]
            return self._run_gated(count)
        except Exception as exc:  # noqa: BLE001
            raise RunFailed(f"kernel '{self.compiled.kernel.key}' failed to run: {describe_exception(exc)}",
                            detail=f"{type(exc).__name__}: {exc}") from exc

    def _enqueue(self, wait_for: list[cl.Event] | None = None) -> cl.Event:
        event, _ = self.compiled.executor(self.queue, wait_for=wait_for, allocator=self.allocator,
                                          **self.arrays, **self.values)
        return event

    def _run_gated(self, count: int) -> list[float]:
        """Several device kernels per launch: hold the queue until all launches are enqueued; each
        launch's time runs from the end of a marker enqueued before it to the end of its last kernel."""
        gate = cl.UserEvent(self.compiled.device.context)
        spans = []
        try:
            for index in range(count):
                marker = cl.enqueue_marker(self.queue, wait_for=[gate] if index == 0 else None)
                spans.append((marker, self._enqueue(wait_for=[marker])))
        finally:
            gate.set_status(cl.command_execution_status.COMPLETE)
        spans[-1][1].wait()
        return [(last.profile.end - marker.profile.end) * 1e-9 for marker, last in spans]

    def outputs(self) -> dict[str, np.ndarray]:
        return {name: _host_array(self.queue, self.arrays[name]) for name in self.compiled.kernel.outputs}

    def close(self) -> None:
        """Release the buffers. Never raises: after a failed launch the queue may repeat its error
        here, and the failure already raised must be the one reported."""
        try:
            self.queue.finish()
        except Exception:  # noqa: BLE001, S110 - see the docstring
            pass
        self.arrays.clear()
        with contextlib.suppress(Exception):
            self.allocator.free_held()
