"""(threads, blocks) sweeps: parallel loops measured at many launch geometries, and the
launch-geometry policies judged on them (Lloyd et al.'s evaluation).

A sweep measures each parallel loop (:mod:`gpuperf.kernels.parallel_loops`, grid-stride, so any
geometry runs the whole loop) at each trip count over a grid of geometries: threads per block in
powers of two from 32 to the device's limit (at most 1024), blocks in powers of ``blocks_step``
from 1 to one iteration per thread, plus exactly what every policy picks (as ``geometry`` prints it,
capped at the largest grid). Each policy's pick is
therefore measured as it is, blocks included (the heuristic's capped long loops too), not snapped
to a neighbour. The geometries of one loop at one trip count are timed interleaved (15 cycles of
short rounds by default), so their ratios share the machine's state. The model policy is a random
forest over (threads, blocks, trip), trained on the other loops' sweeps (leave one kernel out),
picking the measured geometry it predicts fastest.

The policies see each loop's registers per thread: on an NVIDIA GPU what NVRTC compiles its CUDA
code to for that GPU (:func:`loop_registers`), elsewhere 32.

Sweep tables have one row per measured point: ``kernel``, ``trip``, ``threads``, ``blocks``,
``time_s``, ``status`` (``ok`` or why the point failed), ``registers``, ``gpu`` (the device
measured) and the descriptor the policies used (``device_`` + :class:`DeviceDescriptor` field), so
that a sweep file is judged later, or elsewhere, with the limits it was taken under.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestRegressor

from gpuperf.datasets.schema import is_ok, row_location
from gpuperf.decisions.geometry import (
    DEFAULT_REGISTERS,
    DeviceDescriptor,
    KernelDescriptor,
    grid_capped,
    rules_for,
)
from gpuperf.decisions.space import plain_value
from gpuperf.errors import GpuperfError, GpuperfNote

if TYPE_CHECKING:
    from gpuperf.measure.timing import TimingSettings

SWEEP_COLUMNS = ("kernel", "trip", "threads", "blocks", "time_s", "status", "registers", "gpu")
DESCRIPTOR_PREFIX = "device_"
SWEEP_POLICIES = ("llvm", "libomptarget", "heuristic", "occupancy", "model", "best")
MIN_THREADS = 32
MAX_SWEEP_THREADS = 1024
# A CPU OpenCL device runs one work-group per compute unit at a time: its descriptor's "SM" limits.
CPU_REGISTERS_PER_UNIT = 1 << 30


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _powers(low: int, high: int, step: int) -> list[int]:
    values, value = [], low
    while value <= high:
        values.append(value)
        value *= step
    return values


def loop_registers(body: str, device: DeviceDescriptor) -> int:
    """Registers per thread of the ``body`` loop: NVRTC's count for an NVIDIA GPU's architecture
    (the geometry only changes constants in the code), else ``DEFAULT_REGISTERS``."""
    if device.spec is None or device.spec.vendor != "NVIDIA":
        return DEFAULT_REGISTERS
    from gpuperf.features.resources import arch_for_gpu, compile_resources
    from gpuperf.kernels.parallel_loops import grid_stride_loop

    return compile_resources(grid_stride_loop(body, 128, 1), arch_for_gpu(device.spec)).registers


def _past_int64(values: pd.Series) -> pd.Series:
    """Where ``values`` pass what a 64-bit integer holds: integers compared exactly (2**63 - 1 is no float's
    2**63), floats from 2.0**63 up."""
    if pd.api.types.is_integer_dtype(values):
        return values > 2**63 - 1
    return values >= 2.0**63


def policy_picks(device: DeviceDescriptor, trip: int, registers: int = DEFAULT_REGISTERS) -> dict[str, tuple[int, int]]:
    """(threads, blocks) of every rule-based policy for a loop of ``trip`` iterations, the blocks capped at
    the largest grid as ``geometry`` caps them (:func:`~gpuperf.decisions.geometry.grid_capped`)."""
    kernel = KernelDescriptor(int(trip), int(registers))
    picks = {}
    for name, rule in rules_for(device).items():
        chosen = grid_capped(device, rule(device, kernel))
        picks[name] = (chosen.threads, chosen.blocks)
    return picks


def sweep_geometries(device: DeviceDescriptor, trip: int, blocks_step: int = 2,
                     registers: int = DEFAULT_REGISTERS) -> list[tuple[int, int]]:
    """The (threads, blocks) pairs a sweep measures for ``trip`` (see the module docstring)."""
    if trip < 1:
        raise GpuperfError(f"trip count {trip} must be at least 1")
    if blocks_step < 2:
        raise GpuperfError(f"blocks step {blocks_step} must be at least 2")
    top = min(device.max_threads_per_block, MAX_SWEEP_THREADS)
    pairs = set()
    for threads in _powers(min(MIN_THREADS, top), top, 2):
        enough = _ceil_div(trip, threads)
        pairs.update((threads, blocks) for blocks in _powers(1, enough, blocks_step))
        pairs.add((threads, enough))
    pairs.update(p for p in policy_picks(device, trip, registers).values() if p[0] <= device.max_threads_per_block)
    return sorted(pairs)


def cpu_descriptor(name: str, compute_units: int, max_work_group_size: int, local_memory_bytes: int) -> DeviceDescriptor:
    """A CPU OpenCL device as a launch-geometry device: each compute unit an "SM" that runs one
    work-group at a time, of up to ``max_work_group_size`` work-items; registers never limit."""
    return DeviceDescriptor(
        name=name, sms=compute_units, max_threads_per_sm=max_work_group_size, max_blocks_per_sm=1,
        registers_per_sm=CPU_REGISTERS_PER_UNIT, shared_memory_per_sm_bytes=local_memory_bytes,
        max_threads_per_block=max_work_group_size, warp_size=1, preferred_threads_per_block=max_work_group_size,
    )


# Each (loop, trip) group's geometries timed in this many interleaved cycles of short rounds, so
# that their ratios share the machine's state (gpuperf.measure.interleave).
SWEEP_TIMING = dict(cycles=15, min_time_s=0.01, min_repeats=3)


def sweep_settings(cycles: int = SWEEP_TIMING["cycles"]) -> "TimingSettings":
    """The sweep's timing: ``cycles`` interleaved cycles of short rounds."""
    from gpuperf.measure.timing import TimingSettings

    return TimingSettings(**{**SWEEP_TIMING, "cycles": cycles})


LOOP_ARRAY_BYTES = 8  # per iteration: a loop's x and y, float32 each


def measure_sweep(
    device,
    bodies: Sequence[str],
    trips: Sequence[int],
    descriptor: DeviceDescriptor,
    settings=None,
    blocks_step: int = 2,
    record: Callable[[list[dict]], None] = lambda rows: None,
    progress: Callable[[int, int], None] = lambda done, total: None,
    earlier: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Measure every loop in ``bodies`` at every trip count over its sweep on an opened ``device``.

    The geometries of one loop at one trip count are built, then timed together in
    ``settings.cycles`` interleaved cycles (default :func:`sweep_settings`). A point that fails to
    build, run or verify is recorded with its reason and the sweep goes on; ``record`` gets the
    rows so far each time a group is timed; ``progress(done, total)`` counts builds and timed rounds.
    ``earlier`` (the rows an interrupted sweep of the same device recorded) resumes it: its (loop,
    trip count) groups are kept as they are and not measured again (with a note for a group holding other
    geometries than this sweep plans: a file cut short, or another ``blocks_step``).
    """
    from gpuperf.kernels.parallel_loops import grid_stride_loop
    from gpuperf.measure.devices import MeasureFailure
    from gpuperf.measure.interleave import Variant, measure_interleaved

    settings = settings or sweep_settings()
    memory = getattr(device, "memory_bytes", None)
    largest = max(trips, default=0)
    if memory and LOOP_ARRAY_BYTES * largest > memory:  # refused before hundreds of builds fail one by one
        raise GpuperfError(f"trip {largest:,}: a loop's two float arrays take {LOOP_ARRAY_BYTES * largest:,} bytes, more "
                           f"than the {memory:,} bytes of {getattr(device, 'name', 'the device')}'s global memory")
    registers = {body: loop_registers(body, descriptor) for body in bodies}
    planned = {(f"loop_{body}", trip): (body, sweep_geometries(descriptor, trip, blocks_step, registers[body]))
               for body in bodies for trip in trips}
    rows = [] if earlier is None else earlier.to_dict(orient="records")
    held: dict[tuple[str, int], set[tuple[int, int]]] = {}
    for row in rows:
        held.setdefault((row["kernel"], int(row["trip"])), set()).add((int(row["threads"]), int(row["blocks"])))
    partial = sorted(key for key, points in held.items() if key in planned and points != set(planned[key][1]))
    if partial:  # a file cut short, or a sweep of another --blocks-step: its measurements are kept as they are
        kernel, trip = partial[0]
        warnings.warn(GpuperfNote(f"{len(partial)} (loop, trip count) group(s) of the sweep to resume hold other "
                                  f"geometries than this sweep plans (first: {kernel} at trip {trip}: "
                                  f"{len(held[partial[0]])} of {len(planned[partial[0]][1])}; a file cut short, or "
                                  "another --blocks-step); kept as they are, not measured again"), stacklevel=2)
    groups = [(body, trip, geometries) for (_, trip), (body, geometries) in planned.items() if (f"loop_{body}", trip)
              not in held]
    # progress: one step per build and one per timed round of each point
    total, finished = sum(len(g) for *_, g in groups) * (1 + settings.cycles), 0
    gpu = device.provenance().get("device_name", device.name)
    limits = {DESCRIPTOR_PREFIX + key: value for key, value in descriptor.as_dict().items()}
    for body, trip, geometries in groups:
        group_rows, variants, built = [], [], []
        for threads, blocks in geometries:
            row = {"kernel": f"loop_{body}", "trip": trip, "threads": threads, "blocks": blocks,
                   "time_s": np.nan, "status": "ok", "registers": registers[body], "gpu": gpu, **limits}
            try:
                variants.append(Variant(device.compile(grid_stride_loop(body, threads, blocks)), {"n": trip}))
                built.append(row)
            except MeasureFailure as exc:
                row["status"] = f"{type(exc).__name__}: {exc}"
            group_rows.append(row)
            progress(finished + len(group_rows), total)
        steps = itertools.count(finished + len(geometries) + 1)
        timed = measure_interleaved(variants, device, settings, on_round=lambda: progress(next(steps), total))
        for row, result in zip(built, timed):
            if isinstance(result, Exception):
                row["status"] = f"{type(result).__name__}: {result}"
            else:
                row["time_s"] = result.time_s
        finished += len(geometries) * (1 + settings.cycles)
        progress(finished, total)
        rows.extend(group_rows)
        record(rows)
    return pd.DataFrame(rows, columns=[*SWEEP_COLUMNS, *limits])


def earlier_sweep(table: pd.DataFrame, where: str, descriptor: DeviceDescriptor,
                  measured_on: str | None = None) -> pd.DataFrame:
    """The rows of an interrupted sweep's ``--out`` table, to resume it with: a sweep's table, taken
    on the device ``measured_on`` names (its rows' ``gpu``; ``--gpu`` changes the descriptor only) and
    judged with the descriptor ``descriptor`` (the one the sweep recorded)."""
    check_sweep(table, where)
    if measured_on is not None and "gpu" in table.columns:
        named = sorted({str(name) for name in table["gpu"].dropna() if str(name).strip()})
        if named and named != [measured_on]:
            raise GpuperfError(f"{where}: the sweep to resume was measured on {', '.join(named)}, this one on "
                               f"{measured_on}; resume it on that device, or give another --out")
    recorded = table_descriptor(table, where)
    if recorded.as_dict() != descriptor.as_dict():
        raise GpuperfError(f"{where}: the sweep to resume is judged with the {recorded.name}'s descriptor, this one "
                           f"with the {descriptor.name}'s; resume it with the same --gpu (or none, as it was), or give "
                           "another --out")
    return table


def check_sweep(table: pd.DataFrame, where: str) -> pd.DataFrame:
    """The sweep's usable rows (status ok, or no status column); errors name ``where`` and the column or line."""
    missing = [c for c in ("kernel", "trip", "threads", "blocks", "time_s") if c not in table.columns]
    if missing:
        raise GpuperfError(f"{where}: missing column(s) {', '.join(missing)} (a sweep needs kernel, trip, threads, "
                           "blocks, time_s)")
    usable = table if "status" not in table.columns else table[is_ok(table["status"])]
    blank = _blank(usable["kernel"])
    if blank.any():
        raise GpuperfError(f"{where}: {row_location(usable, int(np.flatnonzero(blank.to_numpy())[0]))}: "
                           "kernel is empty (each point names its loop)")
    empty_registers = None
    if "registers" in usable.columns:  # per thread; an empty cell: the policies' default
        empty_registers = _blank(usable["registers"])
        usable = usable.assign(registers=usable["registers"].where(~empty_registers, DEFAULT_REGISTERS))
    for column in ("trip", "threads", "blocks", "time_s", *(["registers"] if "registers" in usable.columns else [])):
        values = pd.to_numeric(usable[column], errors="coerce")
        bad = ~(values > 0) | ~np.isfinite(values)
        if column != "time_s":
            bad |= values != values.round()
        if bad.any():
            position = int(np.flatnonzero(bad.to_numpy())[0])
            kind = "a positive number" if column == "time_s" else "a positive whole number"
            given = usable[column].iloc[position]
            shown = "a missing value (an empty cell or nan)" if _blank(usable[column]).iloc[position] \
                else repr(plain_value(given))
            raise GpuperfError(f"{where}: {row_location(usable, position)}: {column} must be {kind}, not {shown}")
        large = _past_int64(values).to_numpy() if column != "time_s" else np.zeros(len(values), dtype=bool)
        if large.any():  # past what a 64-bit integer holds
            position = int(np.flatnonzero(large)[0])
            raise GpuperfError(f"{where}: {row_location(usable, position)}: {column} "
                               f"{plain_value(usable[column].iloc[position])!r} is too large (at most 2**63 - 1)")
    whole = {"trip": int, "threads": int, "blocks": int, "time_s": float}
    usable = usable.astype({**whole, **({"registers": int} if "registers" in usable.columns else {})})
    if usable.empty:
        raise GpuperfError(f"{where}: no measured point (every row failed)")
    point = ["kernel", "trip", "threads", "blocks"]
    twice = usable.duplicated(point)
    if twice.any():
        position = int(np.flatnonzero(twice.to_numpy())[0])
        row = usable.iloc[position]
        raise GpuperfError(f"{where}: {row_location(usable, position)}: {row['kernel']} at trip {row['trip']}, "
                           f"{row['threads']} threads x {row['blocks']} blocks is measured twice")
    if "registers" in usable.columns:  # one loop at one trip count is one compiled kernel
        group = usable.groupby(["kernel", "trip"], sort=False)
        varies = usable["registers"].ne(group["registers"].transform("first"))
        if varies.any():
            position = int(np.flatnonzero(varies.to_numpy())[0])
            row = usable.iloc[position]
            first = int(np.flatnonzero(group.ngroup().eq(group.ngroup().iloc[position]).to_numpy())[0])

            def said(at: int) -> str:
                value = usable["registers"].iloc[at]
                return f"empty (the default {value})" if empty_registers.iloc[at] else str(value)

            raise GpuperfError(f"{where}: {row_location(usable, position)}: registers {said(position)}, but "
                               f"{row_location(usable, first)} says {said(first)} for {row['kernel']} at trip "
                               f"{row['trip']} (one kernel, one register count)")
    if "gpu" in usable.columns and usable["gpu"].dropna().astype(str).nunique() > 1:
        names = ", ".join(usable["gpu"].dropna().astype(str).unique()[:3])
        raise GpuperfError(f"{where}: column gpu names several GPUs ({names}); one sweep per GPU")
    return usable


def _blank(values: pd.Series) -> pd.Series:
    """Cells that are missing or hold only spaces."""
    return values.isna() | values.astype(str).str.strip().eq("")


def _model_features(frame: pd.DataFrame) -> np.ndarray:
    threads, blocks, trip = (np.log2(frame[c].to_numpy(dtype=float)) for c in ("threads", "blocks", "trip"))
    return np.column_stack([threads, blocks, trip, threads + blocks - trip])


def _relative_log_time(frame: pd.DataFrame) -> np.ndarray:
    group_best = frame.groupby(["kernel", "trip"])["time_s"].transform("min")
    return np.log2(frame["time_s"] / group_best).to_numpy()


def model_picks(table: pd.DataFrame, seed: int = 0) -> pd.Series | None:
    """Per row, the time a leave-one-kernel-out random forest predicts relative to its group's
    best (log2); None when the sweep holds a single kernel (nothing to train on)."""
    kernels = table["kernel"].unique()
    if len(kernels) < 2:
        return None
    predicted = pd.Series(np.nan, index=table.index)
    for kernel in kernels:
        train, test = table[table["kernel"] != kernel], table[table["kernel"] == kernel]
        forest = RandomForestRegressor(n_estimators=100, min_samples_leaf=2, random_state=seed, n_jobs=1)
        forest.fit(_model_features(train), _relative_log_time(train))
        predicted[test.index] = forest.predict(_model_features(test))
    return predicted


def launchable_points(table: pd.DataFrame, descriptor: DeviceDescriptor, where: str, note: bool = True) -> pd.DataFrame:
    """``table`` without the points no launch on ``descriptor``'s GPU could make (a block larger than it
    allows, a grid beyond its largest: a CPU's sweep judged with a GPU's descriptor, or a slip), noted
    (unless ``note`` is False) with the first one's row: such a point cannot be a policy's pick, nor the best."""
    from gpuperf.decisions.geometry import max_grid_blocks

    too_wide = table["threads"] > descriptor.max_threads_per_block
    too_many = np.array([blocks > max_grid_blocks(descriptor, int(threads))
                         for threads, blocks in table[["threads", "blocks"]].itertuples(index=False)], dtype=bool)
    out = (too_wide.to_numpy() | too_many) if len(table) else np.zeros(0, dtype=bool)
    if out.any() and note:
        first = int(np.flatnonzero(out)[0])
        threads, blocks = table["threads"].iloc[first], table["blocks"].iloc[first]
        limit = (f"at most {descriptor.max_threads_per_block} threads a block" if too_wide.iloc[first]
                 else f"at most {max_grid_blocks(descriptor, int(threads))} blocks of {threads} threads")
        warnings.warn(GpuperfNote(f"{where}: {int(out.sum())} point(s) no launch on {descriptor.name} makes are left "
                                  f"out (first: {row_location(table, first)}, {threads} threads x {blocks} blocks; "
                                  f"{limit})"), stacklevel=3)
    return table[~out]


def sweep_choices(table: pd.DataFrame, descriptor: DeviceDescriptor, where: str = "sweep") -> pd.DataFrame:
    """Per (kernel, trip): each policy's pick's measured time, threads and blocks, and the best
    (the policies given the table's ``registers`` per thread where it has them, else 32), and
    ``points``, how many geometries the group measured.

    The frame :func:`gpuperf.decisions.geometry_eval.summarise` and the geometry report take. A
    policy whose pick failed (its point's status not ok) gets NaN and ``POLICY_failed`` True; one
    whose pick the sweep did not measure (a sweep taken with another descriptor) NaN alone.
    """
    usable = check_sweep(table, where)
    failures = failed_points(table)
    checked = launchable_points(usable, descriptor, where)
    if len(usable) and not len(checked):
        raise GpuperfError(f"{where}: none of its {len(usable)} point(s) can be launched on {descriptor.name} (a block "
                           "or a grid too large for it): nothing to judge; name the GPU it was measured on (--gpu)")
    table = checked.reset_index(drop=True)  # rows looked up by label: one label each (position in checked)
    predicted = model_picks(table)
    if predicted is None and len(table):
        warnings.warn(GpuperfNote(f"{where}: one loop ({table['kernel'].iloc[0]}), so no model policy: its random "
                                  "forest learns from the other loops' sweeps; sweep two or more loops to judge it"),
                      stacklevel=2)
    rows = []
    for (kernel, trip), group in table.groupby(["kernel", "trip"], sort=True):
        times = {(t, b): s for t, b, s in group[["threads", "blocks", "time_s"]].itertuples(index=False)}
        row: dict[str, object] = {"group": f"{kernel} trip={trip}", "kernel": kernel, "trip": int(trip)}
        registers = int(group["registers"].iloc[0]) if "registers" in group.columns else DEFAULT_REGISTERS
        try:
            picks = policy_picks(descriptor, int(trip), registers)
        except GpuperfError as error:  # e.g. more registers than the GPU allows
            raise GpuperfError(f"{where}: {row_location(checked, int(group.index[0]))}: {error}") from None
        if predicted is not None:
            fastest = group.loc[predicted[group.index].idxmin()]
            picks["model"] = (int(fastest["threads"]), int(fastest["blocks"]))
        best = group.loc[group["time_s"].idxmin()]
        picks["best"] = (int(best["threads"]), int(best["blocks"]))
        for policy, (threads, blocks) in picks.items():
            row[policy] = times.get((threads, blocks), np.nan)
            row[f"{policy}_threads"], row[f"{policy}_blocks"] = threads, blocks
            row[f"{policy}_failed"] = (threads, blocks) not in times and (kernel, int(trip), threads, blocks) in failures
        row["points"] = len(group)  # the geometries measured: the best and the model pick among these
        rows.append(row)
    return pd.DataFrame(rows)


def failed_points(table: pd.DataFrame) -> set[tuple[str, int, int, int]]:
    """(kernel, trip, threads, blocks) of the points whose status is not ok (none without a status column)."""
    if "status" not in table.columns:
        return set()
    failed = table[~is_ok(table["status"])]
    numbers = failed[["trip", "threads", "blocks"]].apply(pd.to_numeric, errors="coerce")
    whole = numbers.notna().all(axis=1) & (numbers == numbers.round()).all(axis=1)
    return {(str(kernel), int(trip), int(threads), int(blocks)) for kernel, (trip, threads, blocks)
            in zip(failed["kernel"][whole], numbers[whole].itertuples(index=False))}


def unjudged_notes(choices: pd.DataFrame, where: str) -> list[str]:
    """What the figures of :func:`sweep_choices`' ``choices`` leave out or count as missed: groups whose
    LLVM pick failed or was not measured (the baseline of every speedup), and per policy its failed
    picks (not within 10 %) and its picks the sweep did not measure (left out); an error when no
    group has LLVM's pick."""
    llvm_failed = choices["llvm_failed"].astype(bool) if "llvm_failed" in choices.columns \
        else pd.Series(False, index=choices.index)
    without = choices[choices["llvm"].isna()]
    if len(without) == len(choices):
        first = choices.iloc[0]
        how = "had LLVM's default pick succeed" if llvm_failed.all() else "measured LLVM's default pick"
        raise GpuperfError(f"{where}: no (loop, trip count) group {how} ({first['group']}: {first['llvm_threads']} x "
                           f"{first['llvm_blocks']}), the baseline of every speedup; nothing to judge")
    notes = []
    for reason, lacking in (("failed", without[llvm_failed[without.index]]),
                            ("was not measured", without[~llvm_failed[without.index]])):
        if len(lacking):
            notes.append(f"{where}: LLVM's default pick {reason} in {len(lacking)} group(s), which are left out of "
                         f"the figures (it is the baseline of every speedup: {', '.join(lacking['group'].head(3))}"
                         f"{', ...' if len(lacking) > 3 else ''})")
    judged = choices[choices["llvm"].notna()]
    for policy in (p for p in SWEEP_POLICIES if p in judged.columns and p != "llvm"):
        failed = judged[judged[f"{policy}_failed"].astype(bool)] if f"{policy}_failed" in judged.columns \
            else judged.iloc[:0]
        unmeasured = judged[judged[policy].isna() & ~judged.index.isin(failed.index)]
        for lacking, what in ((failed, "failed"), (unmeasured, "was not measured")):
            if not len(lacking):
                continue
            first = lacking.iloc[0]
            counted = ("counted as not within 10 % of the best" if lacking is failed else "which its figures leave "
                       "out (a sweep taken with another descriptor)")
            notes.append(f"{where}: {policy}'s pick {what} in {len(lacking)} of {len(judged)} group(s), {counted} "
                         f"(first: {first['group']}, {int(first[f'{policy}_threads'])} x "
                         f"{int(first[f'{policy}_blocks'])})"
                         + ("; none is judged" if lacking is unmeasured and len(lacking) == len(judged) else ""))
    return notes


def sweep_summary(choices: pd.DataFrame) -> pd.DataFrame:
    """Per policy over the choices with LLVM's pick measured where its own pick was measured or failed:
    geometric-mean speedup over LLVM's default (of the measured picks), the share within 10 % of the
    best (a failed pick is not), how many choices count and how many of its picks failed
    (:func:`gpuperf.decisions.geometry_eval.summarise`)."""
    from gpuperf.decisions.geometry_eval import summarise

    out = {}
    for policy, figures in summarise(choices, [p for p in SWEEP_POLICIES if p in choices.columns]).items():
        out[policy] = {key: figures[key] for key in ("speedup_vs_llvm", "within_10pct", "choices", "failed_picks")}
    summary = pd.DataFrame(out).T.rename_axis("policy")
    return summary.astype({"choices": int, "failed_picks": int}) if not summary.empty else summary


def sweep_figures(choices: pd.DataFrame) -> pd.DataFrame:
    """Each policy's :func:`sweep_summary` figures per (loop, trip count), per trip count over the
    loops, and over every choice: one row per (scope, policy), ``scope`` being the choice's group
    ("loop_saxpy trip=1000"), "trip=1000" or "all"; ``trip`` is None for "all"."""
    scopes = [(row["group"], row["trip"], choices.loc[[index]]) for index, row in choices.iterrows()]
    scopes += [(f"trip={trip}", int(trip), part) for trip, part in choices.groupby("trip", sort=True)]
    scopes.append(("all", None, choices))
    rows = []
    for scope, trip, part in scopes:
        for policy, figures in sweep_summary(part).iterrows():
            rows.append({"scope": scope, "trip": None if trip is None else int(trip), "policy": policy,
                         "speedup_vs_llvm": float(figures["speedup_vs_llvm"]),
                         "within_10pct": float(figures["within_10pct"]), "choices": int(figures["choices"]),
                         "failed_picks": int(figures["failed_picks"])})
    frame = pd.DataFrame(rows, columns=["scope", "trip", "policy", "speedup_vs_llvm", "within_10pct", "choices",
                                        "failed_picks"])
    frame["trip"] = pd.Series([row["trip"] for row in rows], index=frame.index, dtype=object)  # whole, or None
    return frame


def figure_labels(figures: pd.DataFrame) -> pd.DataFrame:
    """:func:`sweep_figures` as one row per scope, each policy's cell "SPEEDUPx WITHIN/CHOICES":
    its geometric-mean speedup over LLVM's default, then how many of its choices are within 10 %
    of the best, of how many, and "(N failed)" for its failed picks ("failed" for the speedup when
    every pick failed)."""
    cells = figures.assign(cell=[
        (f"{row.speedup_vs_llvm:.2f}x" if np.isfinite(row.speedup_vs_llvm) else "failed")
        + f" {round(row.within_10pct * row.choices)}/{row.choices}"
        + (f" ({row.failed_picks} failed)" if getattr(row, "failed_picks", 0) else "")
        for row in figures.itertuples()])
    policies = list(dict.fromkeys(figures["policy"]))
    wide = cells.pivot(index="scope", columns="policy", values="cell")
    scopes = list(dict.fromkeys(figures["scope"]))
    return wide.reindex(index=scopes, columns=policies).rename_axis(columns=None).reset_index()


def pick_labels(choices: pd.DataFrame, policies: Sequence[str]) -> pd.DataFrame:
    """One row per (loop, trip count), each policy's pick as "THREADSxBLOCKS" (and the geometries
    measured, where ``choices`` counts them)."""
    return pd.DataFrame([
        {"loop, trip": row["group"], **{p: f"{row[p + '_threads']}x{row[p + '_blocks']}" for p in policies},
         **({"points": int(row["points"])} if "points" in choices.columns else {})}
        for _, row in choices.iterrows()
    ])


def measured_device_descriptor(device, gpu: str | None = None) -> DeviceDescriptor:
    """The descriptor the policies use for an opened ``device``: ``gpu``'s when given, else the
    device's own where gpuperf knows its name, else (a CPU OpenCL device) :func:`cpu_descriptor`."""
    import pyopencl as cl

    from gpuperf.decisions.geometry import device_descriptor
    from gpuperf.hardware.specs import canonical_gpu_name
    from gpuperf.measure.opencl import OpenCLDevice

    if gpu is not None:
        return device_descriptor(gpu)
    name = device.provenance().get("device_name", device.name)
    if canonical_gpu_name(name) is not None:
        return device_descriptor(name)
    if isinstance(device, OpenCLDevice) and device.device.type & cl.device_type.CPU:
        info = device.device
        return cpu_descriptor(name, info.max_compute_units, info.max_work_group_size, info.local_mem_size)
    raise GpuperfError(f"gpuperf does not know the device '{name}': name its GPU with --gpu (see gpuperf gpus)")


def _note_recorded_otherwise(described: DeviceDescriptor, recorded: pd.Series, where: str) -> None:
    """A note where the limits a sweep recorded differ from its GPU's descriptor now (a ``GPUPERF_GPUS``
    entry replacing it): the policies are judged with the descriptor, not with what the sweep ran under."""
    differ = []
    for field, now in described.as_dict().items():
        column = DESCRIPTOR_PREFIX + field
        if field == "name" or column not in recorded.index or (field == "unit" and pd.isna(recorded[column])):
            continue
        if field == "unit":  # what the limits are per: an SM, a CU, a WGP of two CUs
            same = str(recorded[column]).strip() == now
        else:
            same = pd.to_numeric(pd.Series([recorded[column]]), errors="coerce").iloc[0] == now
        if not same:
            differ.append(f"{column}={plain_value(recorded[column])!r} (the descriptor's {now})")
    if differ:
        warnings.warn(GpuperfNote(f"{where}: the sweep recorded {', '.join(differ)} for the {described.name}: its "
                                  "policies are judged with gpuperf's descriptor of that GPU as it is now (a "
                                  "GPUPERF_GPUS entry may have replaced it), not with the limits it ran under"),
                      stacklevel=3)


def table_descriptor(table: pd.DataFrame, where: str, gpu: str | None = None) -> DeviceDescriptor:
    """The descriptor to judge a sweep table with: ``gpu``'s when given, else the one the table
    recorded (``device_*`` columns), else that of the GPU its ``gpu`` column names."""
    from gpuperf.decisions.geometry import device_descriptor
    from gpuperf.hardware.specs import canonical_gpu_name

    if gpu is not None:
        return device_descriptor(gpu)
    fields = [f for f in DeviceDescriptor.__dataclass_fields__ if f not in ("spec", "unit")]
    recorded = [DESCRIPTOR_PREFIX + f for f in fields]
    if set(recorded) <= set(table.columns):
        distinct = table[recorded].drop_duplicates()
        if len(distinct) > 1:
            as_text = table[recorded].astype(str)  # two empty cells read alike
            other = int(np.flatnonzero(as_text.ne(as_text.iloc[0]).any(axis=1).to_numpy())[0])
            column = next(c for c in recorded if as_text[c].iloc[other] != as_text[c].iloc[0])
            raise GpuperfError(f"{where}: rows record different device descriptors ({row_location(table, other)}: "
                               f"{column}={plain_value(table[column].iloc[other])!r}, the first row's "
                               f"{plain_value(table[column].iloc[0])!r}); judge one device's sweep at a time")
        values = distinct.iloc[0]
        if canonical_gpu_name(values[DESCRIPTOR_PREFIX + "name"]) is not None:
            described = device_descriptor(values[DESCRIPTOR_PREFIX + "name"])  # with its occupancy calculator
            _note_recorded_otherwise(described, table.iloc[0], where)  # its device_unit too
            return described
        limits = {}
        for field in (f for f in fields if f != "name"):
            number = pd.to_numeric(pd.Series([values[DESCRIPTOR_PREFIX + field]]), errors="coerce").iloc[0]
            if not (number > 0 and float(number).is_integer()):
                raise GpuperfError(f"{where}: column {DESCRIPTOR_PREFIX + field} must be a positive whole number, "
                                   f"not {plain_value(values[DESCRIPTOR_PREFIX + field])!r}")
            limits[field] = int(number)
        unit = str(table[DESCRIPTOR_PREFIX + "unit"].iloc[0]) if DESCRIPTOR_PREFIX + "unit" in table.columns else "SM"
        return DeviceDescriptor(name=str(values[DESCRIPTOR_PREFIX + "name"]), unit=unit, **limits)
    names = table["gpu"].dropna().unique() if "gpu" in table.columns else []
    if len(names) != 1:
        raise GpuperfError(f"{where}: name the GPU the sweep was measured on with --gpu (the table has "
                           f"{'no gpu column' if 'gpu' not in table.columns else f'{len(names)} gpu values'})")
    try:
        return device_descriptor(str(names[0]))
    except GpuperfError:
        absent = [column for column in recorded if column not in table.columns]
        raise GpuperfError(f"{where}: no device descriptor: gpuperf does not describe the GPU '{names[0]}' and the "
                           f"table lacks {', '.join(absent[:3])}{', ...' if len(absent) > 3 else ''} (as a sweep "
                           "measured by gpuperf records them); name the GPU to judge it for with --gpu") from None
