"""The CUDA launch gate (``gpuperf.measure.cuda``), run against a fake of the parts of CuPy it uses.

No GPU is needed: the fake records, in order, every gate launch, event record, kernel launch and
synchronize, each with the gate's flag as it was at that moment, and plays the gate kernel's part
(it holds the stream until flag[0] is set, and sets flag[1] when the host took too long). The CUDA
code is loopy's real code for catalog kernels; only CuPy is faked. That ``GATE_SOURCE`` compiles
is checked with NVRTC, which works without a GPU.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest

import gpuperf.measure.cuda as cuda
from gpuperf.features import resources as res
from gpuperf.features.resources import compile_source_resources
from gpuperf.kernels.catalog import get_kernel
from gpuperf.measure.cuda import GATE_SOURCE, GATE_TIMEOUT_CYCLES, CudaDevice
from gpuperf.measure.devices import RunFailed
from gpuperf.measure.timing import TimingSettings, measure_compiled

# What the fake's events say a launch took, in milliseconds (as cupy.cuda.get_elapsed_time returns):
GATED_MS = 0.004  # behind a gate the host opened in time
TIMED_OUT_MS = 0.050  # behind a gate that opened by its timeout (the host's delays counted)
UNGATED_MS = 0.009  # without a gate (the host's launch delay counted)

N = 1024  # vector_copy at n = 1024: 4 blocks of 256 threads
COPY_LAUNCH = ("vector_copy", (4, 1, 1), (256, 1, 1))


class _Batch:
    """The launches one gate kernel holds; ``timed_out`` is settled when the stream is synchronized."""

    def __init__(self, flag: np.ndarray) -> None:
        self.flag = flag
        self.launches = 0
        self.timed_out: bool | None = None


class FakeCupy:
    """The parts of CuPy that ``gpuperf.measure.cuda`` uses, keeping an ordered ``log``.

    ``patience``: how many timed launches the host can enqueue behind a gate before the gate's
    timeout passes (a batch longer than that opens by the timeout, as does one whose flag[0] is
    still 0 when the stream is synchronized). ``gate_error``: raised when the gate is built
    (compiled, or its pinned memory allocated). ``fail_launch``: the kernel launch (counting from 1)
    that raises.
    """

    __version__ = "0.0-fake"

    def __init__(self, patience: float = float("inf"), gate_error: tuple[str, Exception] | None = None,
                 fail_launch: int | None = None) -> None:
        self.patience = patience
        self.gate_error = gate_error
        self.fail_launch = fail_launch
        self.log: list[tuple] = []
        self.gate_builds = 0
        self.launches = 0
        self.pinned: dict[int, _PinnedMemory] = {}
        self.flag: np.ndarray | None = None  # the gate's flags, as the gate kernel sees them
        self.held: _Batch | None = None
        self.batches: list[_Batch] = []
        self.device_depth = 0
        self.synced_upto = -1
        self._ptrs = itertools.count(0x7000_0000, 0x1000)
        self._events = itertools.count()
        self.cuda = SimpleNamespace(
            Event=lambda: _FakeEvent(self),
            get_elapsed_time=self._elapsed_ms,
            alloc_pinned_memory=self._alloc_pinned,
            Device=lambda index: _FakeDevice(self, index),
            runtime=SimpleNamespace(
                getDeviceProperties=lambda index: {"name": b"Fake GPU 80GB"},
                driverGetVersion=lambda: 13000,
                runtimeGetVersion=lambda: 13020,
                getDeviceCount=lambda: 1,
            ),
        )

    # -- the log -------------------------------------------------------------------------------
    def note(self, op: str, detail: object = None) -> None:
        """Log ``op`` with flag[0] as it is now (None before the gate exists)."""
        self.log.append((op, detail, None if self.flag is None else int(self.flag[0])))

    def ops(self) -> list[tuple[str, int | None]]:
        return [(op, flag0) for op, _, flag0 in self.log]

    # -- modules and kernels -------------------------------------------------------------------
    def RawModule(self, code: str) -> _FakeModule:  # noqa: N802 - CuPy's name
        if "gpuperf_gate" in code:
            self.gate_builds += 1
            if self.gate_error and self.gate_error[0] == "compile":
                raise self.gate_error[1]
        return _FakeModule(self, code)

    def _alloc_pinned(self, nbytes: int) -> SimpleNamespace:
        if self.gate_error and self.gate_error[0] == "pinned":
            raise self.gate_error[1]
        memory = _PinnedMemory(nbytes)
        memory.ptr = next(self._ptrs)
        self.pinned[memory.ptr] = memory
        return memory

    def launch_gate(self, grid: tuple, block: tuple, args: tuple) -> None:
        assert self.device_depth > 0, "the gate was launched outside the device's context"
        assert (grid, block) == ((1,), (1,))
        ptr, timeout = args
        assert isinstance(ptr, np.uint64) and isinstance(timeout, np.int64)
        assert int(timeout) == GATE_TIMEOUT_CYCLES
        assert self.held is None, "a gate was closed while the last one still held the stream"
        self.flag = np.ndarray((2,), np.int32, buffer=self.pinned[int(ptr)])  # KeyError: not the pinned memory
        self.note("gate", (int(self.flag[0]), int(self.flag[1])))
        self.held = _Batch(self.flag)
        self.batches.append(self.held)

    def launch(self, name: str, grid: tuple, block: tuple, args: tuple) -> None:
        assert self.device_depth > 0, "a kernel was launched outside the device's context"
        self.launches += 1
        if self.launches == self.fail_launch:
            raise RuntimeError("cudaErrorLaunchOutOfResources: too many resources requested for launch")
        if self.held is not None:
            self.held.launches += 1
        self.note("launch", (name, grid, block))

    def synchronize(self, event: _FakeEvent) -> None:
        """The stream runs up to ``event``: a held gate opens, by the host's flag or by its timeout."""
        self.note("synchronize", event.seq)
        if self.held is not None:
            batch, self.held = self.held, None
            batch.timed_out = bool(batch.flag[0] == 0 or batch.launches > self.patience)
            if batch.timed_out:
                batch.flag[1] = 1
        self.synced_upto = max(self.synced_upto, event.seq)

    def _elapsed_ms(self, start: _FakeEvent, end: _FakeEvent) -> float:
        if end.seq > self.synced_upto:
            raise RuntimeError("cudaErrorNotReady: the end event has not completed")
        assert start.batch is end.batch and start.seq < end.seq
        if start.batch is None:
            return UNGATED_MS
        return TIMED_OUT_MS if start.batch.timed_out else GATED_MS

    # -- arrays ----------------------------------------------------------------------------------
    def asarray(self, array: np.ndarray) -> np.ndarray:
        return np.array(array)

    def empty(self, shape: tuple, dtype: np.dtype) -> np.ndarray:
        return np.full(shape, 7, dtype)  # whatever memory held: no reader may count on it

    def zeros(self, shape: tuple, dtype: np.dtype) -> np.ndarray:
        return np.zeros(shape, dtype)

    def asnumpy(self, array: np.ndarray) -> np.ndarray:
        return np.array(array)

    def get_default_memory_pool(self) -> SimpleNamespace:
        return SimpleNamespace(free_all_blocks=lambda: self.note("free pool", self.device_depth > 0))


class _PinnedMemory(bytearray):
    """Pinned host memory: bytes numpy can wrap (as it wraps CuPy's PinnedMemoryPointer) and a ``.ptr``."""

    ptr: int


class _FakeModule:
    def __init__(self, cupy: FakeCupy, code: str) -> None:
        self.cupy = cupy
        self.code = code

    def get_function(self, name: str):
        assert f"void {name}(" in self.code or f") {name}(" in self.code, f"no kernel {name} in the module"
        if name == "gpuperf_gate":
            return self.cupy.launch_gate
        return lambda grid, block, args: self.cupy.launch(name, grid, block, args)


class _FakeEvent:
    def __init__(self, cupy: FakeCupy) -> None:
        self.cupy = cupy
        self.seq = -1
        self.batch: _Batch | None = None

    def record(self) -> None:
        assert self.cupy.device_depth > 0, "an event was recorded outside the device's context"
        self.seq = next(self.cupy._events)
        self.batch = self.cupy.held
        self.cupy.note("record", self.seq)

    def synchronize(self) -> None:
        self.cupy.synchronize(self)


class _FakeDevice:
    def __init__(self, cupy: FakeCupy, index: int) -> None:
        self.cupy = cupy
        self.index = index
        self.mem_info = (70 * 2**30, 80 * 2**30)

    def __enter__(self) -> _FakeDevice:
        self.cupy.device_depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self.cupy.device_depth -= 1

    def synchronize(self) -> None:
        pass


@pytest.fixture
def fake_cupy(monkeypatch):
    """``make(**options)``: a FakeCupy that ``gpuperf.measure.cuda`` imports as CuPy."""

    def make(**options) -> FakeCupy:
        fake = FakeCupy(**options)
        monkeypatch.setattr(cuda, "_cupy", lambda: fake)
        return fake

    cuda._cupy_version.cache_clear()
    yield make
    cuda._cupy_version.cache_clear()


def copy_launch(fake: FakeCupy) -> cuda.CudaLaunch:
    """vector_copy at n = N on the fake's device 0, bound to its inputs; the log starts empty."""
    compiled = CudaDevice(0).compile(get_kernel("vector_copy"))
    launch = compiled.bind({"n": N}, {"a": np.ones(N, np.float32)})
    fake.log.clear()
    return launch


def gated_batch(count: int) -> list[tuple[str, int]]:
    """The log of one batch behind a gate, each step with flag[0] as it was then: the gate first, shut;
    every launch between its start and end events, the gate still shut; opened before the wait."""
    return [("gate", 0)] + [("record", 0), ("launch", 0), ("record", 0)] * count + [("synchronize", 1)]


def seconds(ms: float, count: int) -> list[float]:
    return [pytest.approx(ms * 1e-3)] * count


def test_a_gated_batch_is_held_until_its_last_launch_is_enqueued(fake_cupy) -> None:
    fake = fake_cupy()
    launch = copy_launch(fake)
    assert launch.compiled.timer == "cuda_event_gated"

    assert launch.run_many(3) == seconds(GATED_MS, 3)
    assert fake.ops() == gated_batch(3)
    gate_flags = [detail for op, detail, _ in fake.log if op == "gate"]
    assert gate_flags == [(0, 0)]  # both flags cleared before the gate kernel was launched
    assert {detail for op, detail, _ in fake.log if op == "launch"} == {COPY_LAUNCH}
    assert [b.launches for b in fake.batches] == [3] and fake.batches[0].timed_out is False

    # the next batch closes the gate again (flag[0] back to 0 before the gate kernel); the gate is built once
    fake.log.clear()
    assert launch.run() == pytest.approx(GATED_MS * 1e-3)
    assert fake.ops() == gated_batch(1)
    assert fake.gate_builds == 1


def test_the_gate_opens_even_when_a_launch_fails(fake_cupy) -> None:
    fake = fake_cupy(fail_launch=2)
    launch = copy_launch(fake)
    with pytest.raises(RunFailed, match="failed to run: RuntimeError: cudaErrorLaunchOutOfResources"):
        launch.run_many(3)
    assert fake.ops() == [("gate", 0), ("record", 0), ("launch", 0), ("record", 0), ("record", 0)]
    assert launch.compiled.device.gate.flag[0] == 1  # the stream is not left held behind the gate


def test_a_gate_that_timed_out_is_timed_again_as_two_halves(fake_cupy) -> None:
    """The host enqueues at most 2 launches before the gate's timeout: a batch of 5 is timed again as
    2 + 3, and the 3 as 1 + 2; only the batches whose gate the host opened are returned."""
    fake = fake_cupy(patience=2)
    launch = copy_launch(fake)
    assert launch.run_many(5) == seconds(GATED_MS, 5)
    assert [b.launches for b in fake.batches] == [5, 2, 3, 1, 2]
    assert [b.timed_out for b in fake.batches] == [True, False, True, False, False]
    # every retry starts from a closed gate whose timeout flag was cleared
    assert [detail for op, detail, _ in fake.log if op == "gate"] == [(0, 0)] * 5
    assert fake.ops() == gated_batch(5) + gated_batch(2) + gated_batch(3) + gated_batch(1) + gated_batch(2)


def test_one_launch_behind_a_timed_out_gate_is_returned_not_split(fake_cupy) -> None:
    fake = fake_cupy(patience=0)  # every gate opens by its timeout
    launch = copy_launch(fake)
    assert launch.run_many(1) == seconds(TIMED_OUT_MS, 1)
    assert [b.launches for b in fake.batches] == [1]

    fake.batches.clear()
    assert launch.run_many(3) == seconds(TIMED_OUT_MS, 3)
    assert [b.launches for b in fake.batches] == [3, 1, 2, 1, 1]


@pytest.mark.parametrize("where, error", [
    ("compile", RuntimeError("nvrtc: error: invalid value for --gpu-architecture (-arch)")),
    ("pinned", MemoryError("cudaErrorMemoryAllocation: out of memory")),
])
def test_a_device_whose_gate_cannot_be_built_times_launches_ungated(fake_cupy, where, error) -> None:
    fake = fake_cupy(gate_error=(where, error))
    device = CudaDevice(0)
    assert device.gate is None
    assert device.gate_failure == f"{type(error).__name__}: {error}"
    compiled = device.compile(get_kernel("vector_copy"))
    assert compiled.timer == "cuda_event_span"
    launch = compiled.bind({"n": N}, {"a": np.ones(N, np.float32)})
    fake.log.clear()

    assert launch.run_many(3) == seconds(UNGATED_MS, 3)
    assert fake.ops() == [("record", None), ("launch", None), ("record", None)] * 3 + [("synchronize", None)]
    assert fake.batches == []
    assert device.gate is None and fake.gate_builds == 1  # the failure is kept, not retried at every use


def test_an_ungated_batch_never_touches_the_gate(fake_cupy) -> None:
    fake = fake_cupy()
    launch = copy_launch(fake)
    gate = launch.compiled.device.gate
    gate.flag[:] = (7, 7)

    assert launch.timed_batch(3, gated=False) == seconds(UNGATED_MS, 3)
    assert fake.ops() == [("record", None), ("launch", None), ("record", None)] * 3 + [("synchronize", None)]
    assert list(gate.flag) == [7, 7] and fake.batches == []


@pytest.mark.parametrize("gate_error, timer, ms", [
    (None, "cuda_event_gated", GATED_MS),
    (("compile", RuntimeError("nvrtc: error")), "cuda_event_span", UNGATED_MS),
])
def test_a_measurement_names_the_timer_that_timed_it(fake_cupy, gate_error, timer, ms) -> None:
    fake = fake_cupy(gate_error=gate_error)
    device = CudaDevice(0)
    compiled = device.compile(get_kernel("vector_copy"))
    settings = TimingSettings(warmup=1, min_repeats=5, min_time_s=0.0)
    record = measure_compiled(compiled, device, {"n": N}, verify=False, settings=settings)
    assert record.time_s == pytest.approx(ms * 1e-3) and record.repeats == 5
    assert record.provenance["timer"] == timer
    named = ("device", "device_name", "driver_version", "runtime_version", "cupy")
    assert {k: record.provenance[k] for k in named} == {
        "device": "cuda:0", "device_name": "Fake GPU 80GB", "driver_version": "13000", "runtime_version": "13020",
        "cupy": "0.0-fake",
    }
    assert device.memory_bytes == 80 * 2**30
    assert fake.device_depth == 0


@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
def test_the_gate_kernel_compiles_with_nvrtc(arch, tmp_path, monkeypatch) -> None:
    pytest.importorskip("cuda.bindings.nvrtc")
    monkeypatch.setenv("GPUPERF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(res, "_memory_cache", {})
    used = compile_source_resources(GATE_SOURCE, "gpuperf_gate", arch)
    assert (used.function, used.arch) == ("gpuperf_gate", arch)
    assert used.registers >= 1
    assert (used.shared_memory_bytes, used.spill_bytes, used.stack_frame_bytes) == (0, 0, 0)


def test_a_batch_longer_than_the_queue_allows_is_timed_behind_several_gates(fake_cupy) -> None:
    fake = fake_cupy()
    launch = copy_launch(fake)
    per_gate = cuda.GATED_QUEUE_ENTRIES // 3  # a start event, one launch and an end event each
    assert launch.run_many(2 * per_gate + 5) == seconds(GATED_MS, 2 * per_gate + 5)
    assert [b.launches for b in fake.batches] == [per_gate, per_gate, 5]
    assert fake.ops() == gated_batch(per_gate) * 2 + gated_batch(5)


def test_output_buffers_start_as_zeros_on_cuda_as_on_opencl(fake_cupy) -> None:
    """An output a kernel writes only in part (a padded border) compares with its reference's zeros."""
    launch = copy_launch(fake_cupy())
    assert launch.arrays["b"].shape == (N,) and not launch.arrays["b"].any()


def test_a_device_that_will_not_open_and_a_driver_that_counts_no_gpu_are_named(fake_cupy, monkeypatch):
    """A busy GPU in exclusive mode raised a traceback from mem_info; a driver too old for CuPy's CUDA read as
    'device cuda:0 does not exist'."""
    from gpuperf.errors import GpuperfError
    from gpuperf.measure.devices import canonical_device_name

    fake = fake_cupy()

    class Busy(_FakeDevice):
        @property
        def mem_info(self):
            raise RuntimeError("cudaErrorDevicesUnavailable: CUDA-capable device(s) is/are busy or unavailable")

        @mem_info.setter
        def mem_info(self, value):
            pass

    fake.cuda.Device = lambda index: Busy(fake, index)
    with pytest.raises(GpuperfError, match=r"device 'cuda:0' cannot be opened: RuntimeError: cudaErrorDevicesUnavailable"):
        CudaDevice(0)

    def no_driver():
        raise RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version")

    fake.cuda.runtime.getDeviceCount = no_driver
    with pytest.raises(GpuperfError, match=r"device 'cuda:0' is not available \(the CUDA driver says: RuntimeError: "
                                           r"cudaErrorInsufficientDriver"):
        canonical_device_name("cuda:0")


def test_closing_a_launch_frees_its_own_devices_memory_pool(fake_cupy):
    """close() freed the current device's pool (CuPy's default pool is per current device), not the launch's."""
    fake = fake_cupy()
    launch = copy_launch(fake)
    launch.close()
    assert [detail for op, detail, _ in fake.log if op == "free pool"] == [True]
