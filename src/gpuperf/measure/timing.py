"""Timing methodology: warm-up, repeats until enough samples and time, robust statistics, re-measure.

One round runs the kernel until it has both ``min_repeats`` samples and ``min_time_s`` of summed
device time (bounded by ``max_repeats`` and ``max_round_s`` of wall time). Launches are enqueued in
batches, back to back on the in-order queue, each timed by its own device events, so the host's
wait for completion does not sit between repeats. When the round's interquartile range exceeds
``iqr_limit`` times its median the round is taken again, at most ``max_retries`` times; the
steadiest round is kept and the number of retries recorded (``stable`` says whether it met the limit).
"""

from __future__ import annotations

import functools
import math
import numbers
import platform
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np

from gpuperf.errors import GpuperfError
from gpuperf.kernels.kernel import Kernel, KernelLike
from gpuperf.measure.devices import Compiled, Device, Launch, RunFailed, VerifyFailed, describe_exception, open_device


@dataclass(frozen=True)
class TimingSettings:
    """How a point is timed (a campaign file's ``[timing]`` table sets any of these)."""

    warmup: int = 2
    min_repeats: int = 5
    min_time_s: float = 0.1
    max_repeats: int = 1000
    max_round_s: float = 5.0
    iqr_limit: float = 0.1
    max_retries: int = 2
    # Above 1: each point is timed in this many rounds, interleaved with the campaign's other variants
    # of the same kernel at the same sizes (or, with the campaign's interleave = "campaign", all its
    # points; measure/interleave.py), so their ratios share the machine's state.
    cycles: int = 1

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem:
            raise GpuperfError(f"TimingSettings{problem}")
        for item in fields(self):  # a whole 2.0 or a NumPy number as the plain int or float it stands for
            kind = int if item.type == "int" else float
            object.__setattr__(self, item.name, kind(getattr(self, item.name)))

    def problem(self) -> str | None:
        """What makes these settings unusable, as ``.key: why`` or ``: why``; None when they can be used."""
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or not 0 <= value < math.inf:
                return f".{item.name}: must be a finite, non-negative number, not {value!r}"
            if item.type == "int" and value != int(value):
                return f".{item.name}: must be a whole number, not {value!r}"
        if self.min_repeats < 1 or self.max_repeats < self.min_repeats:
            return (f": need 1 <= min_repeats <= max_repeats (min_repeats {self.min_repeats}, "
                    f"max_repeats {self.max_repeats})")
        if self.cycles < 1:
            return f".cycles: must be at least 1, not {self.cycles}"
        return None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], where: str) -> TimingSettings:
        """Settings from a ``[timing]`` table; errors name ``where`` and the key."""
        known = {f.name: f.type for f in fields(cls)}
        for key in data:
            if key not in known:
                raise GpuperfError(f"{where}.{key}: unknown timing setting; known: {', '.join(known)}")
        try:
            return cls(**data)
        except GpuperfError as exc:  # the same problem, named by where the settings came from
            raise GpuperfError(str(exc).replace("TimingSettings", where, 1)) from None


@dataclass(frozen=True)
class Timing:
    """Statistics of the kept round, plus what the whole timing cost."""

    samples: tuple[float, ...]
    median: float
    minimum: float
    iqr: float
    retries: int
    stable: bool
    round_wall_s: float
    kernel_total_s: float
    launches: int = 0  # launches timed in all rounds, when more than the samples (interleaved cycles)


def summarize(samples: list[float]) -> tuple[float, float, float]:
    """(median, min, interquartile range) of device times."""
    q1, median, q3 = np.percentile(samples, [25, 50, 75])
    return float(median), float(np.min(samples)), float(q3 - q1)


RunMany = Callable[[int], list[float]]
MAX_BATCH = 256


def _next_batch(samples: list[float], total: float, settings: TimingSettings, elapsed: float = 0.0) -> int:
    """Launches to enqueue next: ``min_repeats`` first, then about what ``min_time_s`` still needs, no
    more than fit in what is left of ``max_round_s`` after ``elapsed`` seconds of the round's wall time
    (at least one: a round with time left goes on)."""
    room = settings.max_repeats - len(samples)
    if len(samples) < settings.min_repeats:
        return min(settings.min_repeats - len(samples), room)
    typical = max(float(np.median(samples)), 1e-9)
    wanted = math.ceil((settings.min_time_s - total) / typical)
    in_time = math.ceil((settings.max_round_s - elapsed) / typical)
    return max(1, min(wanted, in_time, room, MAX_BATCH))


def one_round(run_many: RunMany, settings: TimingSettings) -> tuple[list[float], float]:
    """One round's device times (see the module docstring) and its wall time."""
    samples: list[float] = []
    total = 0.0
    start = time.perf_counter()
    while len(samples) < settings.max_repeats:
        batch = run_many(_next_batch(samples, total, settings, time.perf_counter() - start))
        samples.extend(batch)
        total += sum(batch)
        enough = len(samples) >= settings.min_repeats
        if enough and (total >= settings.min_time_s or time.perf_counter() - start >= settings.max_round_s):
            break
    return samples, time.perf_counter() - start


def time_kernel(run_many: RunMany, settings: TimingSettings) -> Timing:
    """Warm up, then time rounds of launches until one is steady or retries run out.

    ``run_many(count)`` enqueues ``count`` launches back to back and returns each one's device time.
    """
    kernel_total = sum(run_many(settings.warmup)) if settings.warmup else 0.0
    best: tuple[float, list[float], float] | None = None
    retries = 0
    for attempt in range(settings.max_retries + 1):
        retries = attempt
        samples, wall = one_round(run_many, settings)
        kernel_total += sum(samples)
        median, _, iqr = summarize(samples)
        spread = iqr / median if median > 0 else 0.0
        if best is None or spread < best[0]:
            best = (spread, samples, wall)
        if spread <= settings.iqr_limit:
            break
    assert best is not None
    spread, samples, wall = best
    median, minimum, iqr = summarize(samples)
    return Timing(tuple(samples), median, minimum, iqr, retries, spread <= settings.iqr_limit, wall, kernel_total)


# -- verification -----------------------------------------------------------------------------------
# An element may differ from the reference by rtol of its own value plus this share of rtol times the
# output's largest value: rounding in a float32 sum or stencil stays well inside, while an output that is
# off by a small amount everywhere (an exclusive prefix sum against an inclusive one) fails where its
# elements are small, although its normwise error is below rtol.
ELEMENT_ATOL_SHARE = 0.1


def max_relative_error(actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray]) -> tuple[float, str]:
    """Largest normwise relative error max|got - want| / max|want| over the outputs, and its output.
    Every output the kernel writes must have the reference's value, of the same shape; an integer
    output must equal it exactly (an error names its first differing element)."""
    worst, worst_name = 0.0, ""
    for name, got, want in _compared(actual, expected):
        diff = float(np.max(np.abs(got - want)))
        scale = float(np.max(np.abs(want)))
        error = diff / scale if scale > 0 else (0.0 if diff == 0 else float("inf"))
        if not np.isfinite(error):
            error = float("inf")
        if error > worst or not worst_name:
            worst, worst_name = error, name
    return worst, worst_name


def elementwise_misses(actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray],
                       rtol: float) -> tuple[str, int, int] | None:
    """The first output with elements outside |got - want| <= rtol * |want| + atol (atol:
    ``ELEMENT_ATOL_SHARE * rtol`` times the output's largest value), as (name, failing elements,
    elements); None when every element is within."""
    for name, got, want in _compared(actual, expected):
        magnitude = np.abs(want)
        atol = ELEMENT_ATOL_SHARE * rtol * float(np.max(magnitude))
        within = np.abs(got - want) <= rtol * magnitude + atol
        misses = int(want.size - np.count_nonzero(within))
        if misses:
            return name, misses, int(want.size)
    return None


def _compared(actual: Mapping[str, np.ndarray],
              expected: Mapping[str, np.ndarray]) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """(name, kernel's values, reference's values) of each non-empty output, in a common dtype, over
    the elements where the reference is finite; errors for a missing output, another shape, an
    integer or non-finite element that differs."""
    unchecked = [name for name in actual if name not in expected]
    if unchecked:
        raise GpuperfError(f"the reference returns no value for {', '.join(unchecked)}, which the kernel writes: "
                           "return every output from it (or measure without verifying)")
    for name, want in expected.items():
        if name not in actual:
            raise GpuperfError(f"the reference returns '{name}', which the kernel does not write "
                               f"(outputs: {', '.join(actual) or 'none'})")
        got, want = np.asarray(actual[name]), np.asarray(want)
        if got.dtype.kind in "iub" and got.shape == want.shape:
            _check_exact(name, got, want)
        if got.dtype.kind == want.dtype.kind == "f":
            dtype = np.result_type(got.dtype, want.dtype)
        else:  # complex compared as complex (a cast to float would drop the imaginary parts), others as float64
            dtype = np.complex128 if "c" in (got.dtype.kind, want.dtype.kind) else np.float64
        got, want = got.astype(dtype, copy=False), want.astype(dtype, copy=False)
        if got.shape != want.shape:
            raise GpuperfError(f"output '{name}' has shape {got.shape}, the reference's {want.shape}")
        got, want = _finite_part(name, got, want)
        if want.size:
            yield name, got, want


def _check_exact(name: str, got: np.ndarray, want: np.ndarray) -> None:
    """An error naming the first element where an integer output differs from the reference at all (a
    relative tolerance would pass an index or a count that is off by one)."""
    differing = np.flatnonzero((got != want).ravel())
    if differing.size:
        index = tuple(int(i) for i in np.unravel_index(differing[0], want.shape))
        raise GpuperfError(f"output '{name}' holds integers, which must equal the reference's exactly: the kernel "
                           f"gives {got[index]} at {index}, the reference {want[index]} ({differing.size} such elements)")


def _finite_part(name: str, got: np.ndarray, want: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The elements where the reference is a finite number (flattened); elsewhere the kernel must
    give the very same NaN or infinity, else an error names the first element that differs (a
    normwise error over NaN says nothing)."""
    odd = ~np.isfinite(want)
    if not odd.any():
        return got, want
    same = (np.isnan(want) & np.isnan(got)) | (want == got)
    differing = np.flatnonzero((odd & ~same).ravel())
    if differing.size:
        index = tuple(int(i) for i in np.unravel_index(differing[0], want.shape))
        raise GpuperfError(f"output '{name}': the reference holds {want[index]} at {index}, the kernel "
                           f"{got[index]} ({differing.size} such elements); a reference gives the value each "
                           "element must have")
    return got[~odd], want[~odd]


# -- provenance -------------------------------------------------------------------------------------
def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


@functools.lru_cache(maxsize=1)
def software_versions() -> dict[str, str]:
    import gpuperf

    return {
        "gpuperf": gpuperf.__version__,  # "+source": run from a source tree, not installed
        "pyopencl": _version("pyopencl"),
        "loopy": _version("loopy"),
        "numpy": _version("numpy"),
        "python": platform.python_version(),
    }


def provenance(device: Device, timer: str, settings: TimingSettings) -> dict[str, Any]:
    """Where and with what a measurement was taken."""
    return {
        "device": device.name,
        **device.provenance(),
        **software_versions(),
        "host": socket.gethostname(),
        "timestamp": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "timer": timer,
        "timing": asdict(settings),
    }


# -- a measurement ------------------------------------------------------------------------------------
@dataclass
class Measurement:
    """One timed point (:func:`measure`): ``time_s`` the median of the device-timed ``samples``
    (seconds), ``time_s_min`` and ``time_s_iqr`` their minimum and interquartile range, ``repeats``
    the launches timed; ``stable`` whether that range came within the timing's ``iqr_limit`` of the
    median (``retries``: rounds taken again to get there); ``verified`` whether the outputs matched the NumPy
    reference (``max_rel_error``); the launch's ``global_size`` and ``local_size``; ``provenance``:
    device, driver, library versions, host and time."""

    kernel: str
    sizes: dict[str, int]
    device: str
    time_s: float
    time_s_min: float
    time_s_iqr: float
    repeats: int
    retries: int
    stable: bool
    verified: bool
    max_rel_error: float | None
    compile_s: float
    first_launch_s: float  # host time of the first launch beyond its kernel time (driver JIT)
    kernel_total_s: float
    round_wall_s: float
    global_size: tuple[int, int, int]
    local_size: tuple[int, int, int]
    samples: tuple[float, ...] = field(repr=False)
    provenance: dict[str, Any] = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Prepared:
    """A kernel bound to its inputs at resolved sizes, run once and verified: ready to be timed."""

    launch: Launch
    sizes: dict[str, int]
    global_size: tuple[int, int, int]
    local_size: tuple[int, int, int]
    first_s: float  # device time of the first launch
    first_launch_s: float  # host time of the first launch beyond its kernel time (driver JIT)
    verified: bool
    max_rel_error: float | None


class SharedInputs:
    """Seeded inputs and reference outputs reused by every kernel that computes the same function on
    the same arguments, as the variants of one space do (a tuning run builds many): keyed by the
    kernel's reference, its arguments' names, shapes and types, the sizes and the seed, the last
    ``keep`` kept. The arrays are read-only, so nothing can change them for the next kernel; the
    reference runs once, on a writable copy. Building them once saves what a large size costs in
    random numbers and in NumPy."""

    def __init__(self, keep: int = 1) -> None:
        self.keep = keep
        self._entries: dict[tuple, dict[str, Any]] = {}

    def _entry(self, kernel: Kernel, sizes: dict[str, int], seed: int) -> dict[str, Any] | None:
        if kernel.reference is None:
            return None
        arrays = tuple((arg.name, str(np.dtype(arg.dtype.numpy_dtype)), tuple(kernel.array_shape(arg, sizes)))
                       for arg in kernel.array_args)
        scalars = tuple((arg.name, str(np.dtype(arg.dtype.numpy_dtype))) for arg in kernel.scalar_args)
        key = (kernel.reference, arrays, scalars, tuple(kernel.input_range), tuple(kernel.integer_range),
               tuple(sorted(sizes.items())), seed)
        if key not in self._entries:
            while len(self._entries) >= self.keep:
                self._entries.pop(next(iter(self._entries)))
            self._entries[key] = {"inputs": _read_only(kernel.make_inputs(sizes, seed))}
        return self._entries[key]

    def inputs(self, kernel: Kernel, sizes: dict[str, int], seed: int) -> dict[str, Any]:
        entry = self._entry(kernel, sizes, seed)
        return kernel.make_inputs(sizes, seed) if entry is None else entry["inputs"]

    def expected(self, kernel: Kernel, sizes: dict[str, int], seed: int) -> dict[str, Any]:
        """The reference's outputs for the inputs :meth:`inputs` gives (the kernel has a reference),
        computed once."""
        entry = self._entry(kernel, sizes, seed)
        if "expected" not in entry:  # on a writable copy: a reference may work in its inputs
            copies = {name: np.array(value) if isinstance(value, np.ndarray) else value
                      for name, value in entry["inputs"].items()}
            entry["expected"] = _read_only(kernel.expected_outputs(copies, sizes))
        return entry["expected"]


def _read_only(arrays: Mapping[str, Any]) -> dict[str, Any]:
    for value in arrays.values():
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
    return dict(arrays)


def prepare(compiled: Compiled, sizes: Mapping[str, Any], verify: bool = True, seed: int = 0,
            shared: SharedInputs | None = None) -> Prepared:
    """Bind ``compiled`` at ``sizes`` to seeded inputs, run it once and verify its outputs.

    ``verified`` is True only when the outputs were compared with the kernel's reference and matched;
    a kernel without a reference is timed unverified. ``shared`` reuses the inputs and reference
    outputs of an earlier kernel computing the same function. Raises RunFailed or VerifyFailed (the
    launch is closed then).
    """
    kernel = compiled.kernel
    resolved = kernel.resolve_sizes(sizes)  # also refuses sizes the kernel's assumptions exclude
    global_size, local_size = kernel.launch(resolved)
    _check_index_reach(kernel, resolved, global_size)
    inputs = kernel.make_inputs(resolved, seed) if shared is None else shared.inputs(kernel, resolved, seed)
    launch = compiled.bind(resolved, inputs)
    try:
        start = time.perf_counter()
        first = launch.run()  # some drivers (pocl) finish compiling here, at the first launch
        first_launch_s = max(time.perf_counter() - start - first, 0.0)
        verified, error = False, None
        if verify and kernel.reference is not None:
            error = _check(kernel, resolved, inputs, launch.outputs(),
                           None if shared is None else lambda: shared.expected(kernel, resolved, seed))
            verified = True
    except BaseException:
        launch.close()
        raise
    return Prepared(launch, resolved, global_size, local_size, first, first_launch_s, verified, error)


def _check_index_reach(kernel: Kernel, sizes: dict[str, int], global_size: tuple[int, ...]) -> None:
    """RunFailed where the generated code's index type cannot reach every element or work-item
    (:func:`index_reach_problem`)."""
    problem = index_reach_problem(kernel, sizes, global_size)
    if problem:
        raise RunFailed(problem)


def index_reach_problem(kernel: Kernel, sizes: Mapping[str, int], global_size: tuple[int, ...]) -> str | None:
    """Why the generated code's index type cannot reach every element or work-item (None when it can):
    loopy computes indices in ``index_dtype`` (int32 unless the program says otherwise), which wraps around
    past 2**31 - 1 (an out-of-bounds access on a GPU, a wrong result at best)."""
    reach = int(np.iinfo(np.dtype(kernel.entry.index_dtype.numpy_dtype)).max)
    counts = {f"array '{arg.name}'": int(np.prod(kernel.array_shape(arg, sizes), dtype=object))
              for arg in kernel.array_args}
    counts |= {f"axis {axis} of the launch": int(size) for axis, size in enumerate(global_size)}
    beyond = [(what, count) for what, count in counts.items() if count - 1 > reach]
    if not beyond:
        return None
    what, count = beyond[0]
    shown = ", ".join(f"{k}={v}" for k, v in sizes.items())
    return (f"{kernel.key} at {shown}: {what} holds {count:,} elements, more than the kernel's "
            f"{kernel.entry.index_dtype.numpy_dtype} indices reach ({reach:,}); make the program with "
            "index_dtype=np.int64 (lp.make_kernel) to run it at these sizes")


def generated_launch_problem(kernel: Kernel, sizes: Mapping[str, Any], cuda: bool = False) -> str | None:
    """Why gpuperf would not run ``kernel`` at ``sizes`` as generated (None when it would): its int32
    indices wrap (:func:`index_reach_problem`), or, with ``cuda``, its grid or blocks pass CUDA's limits
    (:func:`~gpuperf.measure.cuda.launch_limits_problem`). What measure refuses, for a model's price."""
    from gpuperf.measure.cuda import launch_limits_problem

    resolved = kernel.resolve_sizes(sizes)
    global_size, local_size = kernel.launch(resolved)
    problem = index_reach_problem(kernel, resolved, global_size)
    if problem is None and cuda:
        grid = tuple(-(-g // max(l_, 1)) for g, l_ in zip(global_size, local_size))
        problem = launch_limits_problem(kernel, resolved, grid, local_size)
    return problem


def measurement(compiled: Compiled, device: Device, prepared: Prepared, timing: Timing,
                settings: TimingSettings) -> Measurement:
    """The record of ``prepared`` timed as ``timing``."""
    return Measurement(
        kernel=compiled.kernel.key, sizes=prepared.sizes, device=device.name,
        time_s=timing.median, time_s_min=timing.minimum, time_s_iqr=timing.iqr,
        repeats=timing.launches or len(timing.samples), retries=timing.retries, stable=timing.stable,
        verified=prepared.verified, max_rel_error=prepared.max_rel_error, compile_s=compiled.compile_s,
        first_launch_s=prepared.first_launch_s, kernel_total_s=prepared.first_s + timing.kernel_total_s,
        round_wall_s=timing.round_wall_s, global_size=prepared.global_size, local_size=prepared.local_size,
        samples=timing.samples, provenance=provenance(device, compiled.timer, settings),
    )


def measure_compiled(compiled: Compiled, device: Device, sizes: Mapping[str, Any], verify: bool = True,
                     settings: TimingSettings | None = None, seed: int = 0,
                     shared: SharedInputs | None = None) -> Measurement:
    """Measure an already built kernel at ``sizes``: verify the first run, then time.

    ``verified`` is True only when the outputs were compared with the kernel's reference and matched;
    a kernel without a reference is timed unverified. Raises RunFailed or VerifyFailed.
    """
    settings = settings or TimingSettings()
    prepared = prepare(compiled, sizes, verify, seed, shared)
    try:
        timing = time_kernel(prepared.launch.run_many, settings)
    finally:
        prepared.launch.close()
    return measurement(compiled, device, prepared, timing, settings)


def _check(kernel: Kernel, sizes: dict[str, int], inputs: dict[str, np.ndarray],
           outputs: dict[str, np.ndarray], expected_outputs: Callable[[], dict[str, np.ndarray]] | None = None) -> float:
    label = f"{kernel.key} at {','.join(f'{k}={v}' for k, v in sizes.items())}"
    try:
        expected = expected_outputs() if expected_outputs else kernel.expected_outputs(inputs, sizes)
    except Exception as exc:  # noqa: BLE001 - a broken reference cannot verify the point
        raise VerifyFailed(f"{label}: the reference failed: {describe_exception(exc)}") from exc
    try:
        error, name = max_relative_error(outputs, expected)
        misses = elementwise_misses(outputs, expected, kernel.rtol) if error <= kernel.rtol else None
    except GpuperfError as exc:  # an output left unchecked, or of another shape
        raise VerifyFailed(f"{label}: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - values that cannot be compared cannot verify the point
        raise VerifyFailed(f"{label}: the outputs cannot be compared with the reference's: "
                           f"{describe_exception(exc)}") from exc
    if not error <= kernel.rtol:
        raise VerifyFailed(f"{label}: output '{name}' differs from the reference: max relative error "
                           f"{error:.3g} > rtol {kernel.rtol:g}", max_rel_error=error)
    if misses:
        name, count, size = misses
        raise VerifyFailed(f"{label}: output '{name}' differs from the reference element-wise: {count:,} of {size:,} "
                           f"elements ({count / size:.1%}) are off by more than rtol {kernel.rtol:g} of their value "
                           f"plus {ELEMENT_ATOL_SHARE * kernel.rtol:g} of the output's largest (max relative error "
                           f"{error:.3g})", max_rel_error=error)
    return error


def measure(kernel: KernelLike, sizes: Mapping[str, Any] | None = None, device: str = "opencl:0",
            verify: bool = True, settings: TimingSettings | None = None, seed: int = 0,
            shared: SharedInputs | None = None) -> Measurement:
    """Build ``kernel`` (a Kernel, a loopy TranslationUnit or a catalog/variant/file spec) on ``device`` and
    measure it at ``sizes`` (``shared``: inputs and reference outputs kept from an earlier kernel of the same
    function)."""
    from gpuperf.kernels.catalog import as_kernel

    kernel = as_kernel(kernel, "measure")
    resolved = kernel.resolve_sizes(sizes)
    opened = open_device(device)
    compiled = opened.compile(kernel)
    try:
        return measure_compiled(compiled, opened, resolved, verify, settings, seed, shared)
    except MemoryError:
        shown = ", ".join(f"{k}={v}" for k, v in resolved.items())
        raise GpuperfError(f"{kernel.key} at {shown}: its arrays do not fit in this machine's memory") from None
