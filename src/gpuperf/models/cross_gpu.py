"""A GPU's times from other GPUs' times of the same launches, scaled by a few launches timed on it.

A scheduler pricing a job on GPU B often has the job's launches timed on other GPUs, and can time
one launch of each kernel on B. Each other GPU's time of a launch, times that GPU's ratio to B on
the launches both timed (a geometric mean), predicts B's time; the prediction is the geometric mean
over the other GPUs. No counters and no fitted model: on the bundled Rodinia table, one launch per
kernel gives a per-kernel MAPE of 0.04-0.09 per GPU (``gpuperf reproduce rodinia``), where models
fitted on the other GPUs' profiles give 0.09-0.30.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from gpuperf.datasets.schema import (
    TARGET, TIME_IN_UNITS, canonical_gpus, is_ok, measured_rows, require_frame, row_location,
)
from gpuperf.errors import GpuperfError, close_names, counted, refuse_one_string, unknown_name_error
from gpuperf.hardware.specs import canonical_gpu_name, spelling_key

TIME_STATISTICS = ("min", "max", "std", "iqr", "median", "mean")  # columns of a target's repeats, as time_ms_min
PREDICTED = "predicted_time_s"  # the predicted column for the default target, time_s
# Per predicted launch: its rows on the other GPU that timed it most (a job launching it 100 times: 100).
LAUNCHES = "launches"
CALLS = "calls"  # a row's launches, where a profiler's summary row stands for many (nvprof's Calls)
SPREAD = "spread"  # per predicted launch: the slowest over the fastest of the GPUs' scaled times
SOURCE = "source"  # per priced launch: measured (timed on the GPU: its median) or predicted
DISAGREEING = 2.0  # a launch timed twice on one GPU, the slower time over this many times the faster


def scaled_times(others: np.ndarray, own: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per launch (row): the geometric mean over the other GPUs (columns of ``others``; NaN where a
    GPU did not time the launch) of their time times their geometric-mean ratio to ``own`` over the
    launches both timed (``own``: NaN where not timed); and how many GPUs each prediction averages
    (0 gives NaN). A GPU that timed none of ``own``'s launches is not used."""
    scaled = scaled_logs(others, own)
    used = np.sum(~np.isnan(scaled), axis=1)
    mean = np.full(len(scaled), np.nan)
    np.divide(np.nansum(scaled, axis=1), used, out=mean, where=used > 0)
    return np.exp(mean), used


def scaled_logs(others: np.ndarray, own: np.ndarray) -> np.ndarray:
    """Per launch and other GPU, the log of its time scaled by its ratio to ``own`` (:func:`scaled_times`)."""
    logs = np.log(np.asarray(others, dtype=float))
    difference = np.log(np.asarray(own, dtype=float))[:, None] - logs
    shared = np.sum(~np.isnan(difference), axis=0)
    shift = np.full(logs.shape[1], np.nan)
    np.divide(np.nansum(difference, axis=0), shared, out=shift, where=shared > 0)
    return logs + shift


def scaled_spreads(others: np.ndarray, own: np.ndarray) -> np.ndarray:
    """Per launch, the slowest over the fastest of the other GPUs' scaled times (1 from one GPU, NaN from
    none): how far the GPUs' predictions that :func:`scaled_times` averages disagree."""
    scaled = scaled_logs(others, own)
    spread = np.full(len(scaled), np.nan)
    some = ~np.isnan(scaled).all(axis=1)
    with np.errstate(over="ignore"):  # GPUs apart by more than float64 holds: inf
        spread[some] = np.exp(np.nanmax(scaled[some], axis=1) - np.nanmin(scaled[some], axis=1))
    return spread


@dataclass
class CrossGpuPrediction:
    """What :func:`times_on_gpu` found: ``predicted`` (per launch not timed on ``gpu``: the key
    columns, ``predicted_<target>`` (``predicted_time_s``), ``gpus_used``, ``spread``
    (:func:`scaled_spreads`), ``launches``), ``kernels`` (per kernel:
    ``calibration_launches`` timed on ``gpu``, ``gpus`` that timed some of them, ``predicted``
    launches), ``not_calibrated`` (kernels timed elsewhere with no launch on ``gpu``: not predicted)
    and ``not_predicted`` (launches of the other kernels timed only on GPUs that timed none of the
    kernel's launches ``gpu`` timed: the key columns, ``timed_on``, those GPUs, and, where the table has
    variants, ``calibrated_variant``: the variant of a launch ``gpu`` timed that is the same launch
    but for its variant, ``""`` for one with no variant, or None). A variant with launches of its own timed on ``gpu`` is scaled by its
    own ratios (:func:`variant_ratios`), another by the kernel's. ``disagreeing``:
    the launches timed more than once on one GPU whose slowest time is over :data:`DISAGREEING`
    times its fastest (``gpu``, the key columns, ``times``, ``fastest_<target>``,
    ``slowest_<target>``); each counts by its median all the same. ``priced``: the job's every launch
    with a time on ``gpu``, in launch order: ``predicted``'s rows and the launches ``gpu`` timed (their
    median as ``predicted_<target>``, ``gpus_used`` 0), ``source`` saying which (``measured`` or
    ``predicted``); a job's time on ``gpu`` is the sum of its time x ``launches`` (per kernel in
    ``kernels``' ``predicted_total_s``, for target ``time_s``). ``uncovered``: per other GPU, its time
    (median x rows) of the launches not priced (``not_calibrated`` kernels' and ``not_predicted``)."""

    gpu: str
    predicted: pd.DataFrame
    kernels: pd.DataFrame
    not_calibrated: list[str]
    disagreeing: pd.DataFrame = field(default_factory=pd.DataFrame)
    not_predicted: pd.DataFrame = field(default_factory=pd.DataFrame)
    priced: pd.DataFrame = field(default_factory=pd.DataFrame)
    uncovered: dict[str, float] = field(default_factory=dict)


def times_on_gpu(table: pd.DataFrame, gpu: str, key: Sequence[str], where: str = "table",
                 target: str = TARGET) -> CrossGpuPrediction:
    """``gpu``'s time of every launch (``kernel``, ``variant`` where the table has one, a kernel of one
    distinct variant matching its rows without one: :func:`sole_variants_filled`, and ``key``)
    timed on other GPUs but not on it, from those GPUs' times scaled by their ratio to it on the
    launches of the same kernel it timed (:func:`scaled_times`). ``table``: measured rows only (a
    ``gpu`` column, positive times in ``target``; :func:`~gpuperf.datasets.schema.measured_rows`
    keeps them, naming an ok row without a positive time; a table without ``time_s`` may give it as
    ``time_ms``, ``time_us`` or ``time_ns``, taken in seconds with a note); repeated launches count by their median,
    and ``launches`` says how many rows (their ``calls`` summed, where the table has that column: an
    nvprof summary row's call count) the launch has on the other GPU that timed it most (a job's
    time on ``gpu`` is the sum of time x ``launches`` over ``priced``, which adds the launches ``gpu``
    timed at their median: a job's launch is no cheaper for having been timed).
    Rows of one GPU under two spellings (``NVIDIA A100-PCIE-40GB``, ``A100 PCIe 40GB``) count as one GPU,
    named as gpuperf's descriptors name it; a kernel, variant or key value is read without its surrounding spaces, and a
    kernel or variant spelt in two Unicode normal forms as its first spelling.
    A user's kernel named like another of a campaign export is a kernel of its own (:func:`~gpuperf.datasets.tables.kernels_told_apart`)."""
    from gpuperf.datasets.tables import kernels_told_apart, one_spelling_per_name

    require_frame(table, where)
    table = kernels_told_apart(table)  # two kernels of one name, from different sources, are scaled apart
    columns = launch_columns(table, key, where, target)
    failed = table.loc[~is_ok(table["status"]), "gpu"] if "status" in table.columns else table["gpu"].iloc[:0]
    table = measured_rows(table, where, target, other_units=True)  # time_ms, time_us or time_ns: as time_s, a note
    table = table.assign(**{column: stripped(table[column]) for column in columns})
    table = table.assign(**{column: one_spelling_per_name(table[column])  # 'é' typed two ways: one kernel
                            for column in ("kernel", "variant") if column in columns})
    if "variant" in columns:  # a kernel of one signature matches whether a row names it or not
        table = table.assign(variant=sole_variants_filled(table))
    check_launches_named(table, key, where)
    table = table.assign(gpu=gpu_names(table["gpu"]))
    name = matching_gpu(table, gpu, where, failed.dropna().astype(str))
    table = table.assign(**{CALLS: launch_calls(table, where)})
    grouped = table.groupby(["gpu", *columns], sort=True, dropna=False)[target]
    times = grouped.median().unstack("gpu")
    # launches per launch and GPU: its rows, or their calls (a profiler's summary row, one per kernel)
    counts = table.groupby(["gpu", *columns], sort=True, dropna=False)[CALLS].sum().unstack("gpu")
    if name not in times.columns:
        raise GpuperfError(f"{where}: no measured rows for GPU {name}")
    others = [g for g in times.columns if g != name]
    if not others:
        raise GpuperfError(f"{where}: every row is from {name}; predicting it needs other GPUs' times of the same launches")
    elsewhere = times[others].notna().any(axis=1).to_numpy()
    if not (elsewhere & times[name].isna().to_numpy()).any():
        raise GpuperfError(f"{where}: nothing to predict for {name}: it timed every launch the other GPUs timed")
    predicted_column = f"predicted_{target}"
    priced, kernels, missing, unpredicted, unpriced = [], [], [], [], []
    for kernel, part in times.groupby(level="kernel", sort=True):
        own = part[name].to_numpy(dtype=float)
        if np.isnan(own).all():
            missing.append(str(kernel))
            unpriced.append(part.index)
            continue
        source_times = part[others].to_numpy(dtype=float)
        (values, used), spread = scaled_times(source_times, own), scaled_spreads(source_times, own)
        if "variant" in columns:
            values, used, spread = variant_ratios(source_times, own, part.index, values, used, spread)
        wanted = np.isnan(own) & (used > 0)
        timed_here = ~np.isnan(own)
        rows = wanted | timed_here
        launches = job_launches(counts.loc[part.index], name, others)[rows]
        priced.append(part.index[rows].to_frame(index=False).assign(**{
            predicted_column: np.where(timed_here, own, values)[rows],
            "gpus_used": np.where(timed_here, 0, used)[rows], SPREAD: np.where(timed_here, np.nan, spread)[rows],
            LAUNCHES: launches,
            SOURCE: np.where(timed_here, "measured", "predicted")[rows]}))
        left = np.isnan(own) & (used == 0)  # timed only on GPUs sharing no launch of the kernel with it
        if left.any():
            timed_on = part.loc[left, others].notna().apply(lambda row: ", ".join(row.index[row]), axis=1)
            named = part.index[left].to_frame(index=False).assign(timed_on=timed_on.to_numpy())
            if "variant" in columns:  # the same launch but for its variant, timed on the GPU
                named["calibrated_variant"] = calibrated_variants(part.index, own, left)
            unpredicted.append(named)
            unpriced.append(part.index[left])
        timed = part.loc[~np.isnan(own), others].notna().any()
        kernels.append({"kernel": str(kernel), "calibration_launches": int((~np.isnan(own)).sum()),
                        "gpus": int(timed.sum()), "predicted": int(wanted.sum()), "not_predicted": int(left.sum()),
                        total_name(target): float(np.sum(priced[-1][predicted_column] * launches))})
    every = pd.concat(priced, ignore_index=True) if priced else pd.DataFrame(columns=[SOURCE])
    frame = every[every[SOURCE] == "predicted"].drop(columns=SOURCE).reset_index(drop=True)
    if frame.empty:
        raise nothing_to_predict(where, name, kernels, missing)
    return CrossGpuPrediction(name, frame, pd.DataFrame(kernels), missing, disagreeing_launches(grouped, target),
                              pd.concat(unpredicted, ignore_index=True) if unpredicted else pd.DataFrame(), every,
                              uncovered_times(times[others], counts[others], unpriced))


def nothing_to_predict(where: str, name: str, kernels: list[dict], missing: list[str]) -> GpuperfError:
    """The error where no launch is left to predict on GPU ``name``: the rule, then which kernels it timed
    every launch of itself that other GPUs timed too (``kernels``' records, none predicted or left) and which
    none of (``missing``)."""
    complete = [k["kernel"] for k in kernels if k["gpus"] and k["predicted"] == 0 and k["not_predicted"] == 0]
    reasons = ([f"it timed every launch of kernel(s) {', '.join(complete)} the other GPUs timed"] if complete else [])
    reasons += [f"no launch on {name} of kernel(s) {', '.join(missing)}"] if missing else []
    return GpuperfError(f"{where}: nothing to predict for {name}: a launch is predicted where another GPU timed it "
                        f"and also timed a launch of the same kernel that {name} timed"
                        + (f" ({'; '.join(reasons)})" if reasons else ""))


def total_name(target: str) -> str:
    """The name of a job's total on the GPU: ``predicted_total_s`` for ``time_s``."""
    return f"predicted_total_{target.removeprefix('time_')}" if target.startswith("time_") else f"predicted_total_{target}"


def uncovered_times(times: pd.DataFrame, counts: pd.DataFrame, unpriced: list[pd.Index]) -> dict[str, float]:
    """Per GPU that timed some of the ``unpriced`` launches (rows of ``times``, medians, and ``counts``,
    rows per GPU): their median x rows summed, the job's time there that no prediction covers."""
    if not unpriced:
        return {}
    index = unpriced[0].append(unpriced[1:]) if len(unpriced) > 1 else unpriced[0]
    spent = (times.loc[index] * counts.loc[index]).sum(axis=0, min_count=1).dropna()
    return {str(gpu): float(value) for gpu, value in spent.items()}


def variant_ratios(others: np.ndarray, own: np.ndarray, launches: pd.MultiIndex, values: np.ndarray,
                   used: np.ndarray, spread: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``values``, ``used`` and ``spread`` (:func:`scaled_times`, :func:`scaled_spreads` over a kernel's
    ``launches``) with the launches of
    each variant (an overload) that has launches of its own timed on the GPU scaled by its own ratios
    instead, where they scale it (an empty variant is a variant of its own)."""
    values, used, spread = values.copy(), used.copy(), spread.copy()
    level = launches.get_level_values("variant")  # float64 where no launch has a variant
    variants = np.where(level.isna(), "\0", level.astype(str))
    for label in np.unique(variants):
        rows = np.flatnonzero(variants == label)
        if np.isnan(own[rows]).all():
            continue
        own_values, own_used = scaled_times(others[rows], own[rows])
        better = own_used > 0
        values[rows[better]], used[rows[better]] = own_values[better], own_used[better]
        spread[rows[better]] = scaled_spreads(others[rows], own[rows])[better]
    return values, used, spread


def calibrated_variants(launches: pd.MultiIndex, own: np.ndarray, rows: np.ndarray) -> list:
    """Per launch in ``rows`` (a mask over a kernel's ``launches``): the variant of a launch timed on the
    GPU (``own`` not NaN) that is the same launch but for its variant (``""`` for one with no variant), or None."""
    variants = launches.get_level_values("variant")
    rest = launches.droplevel("variant") if launches.nlevels > 1 else launches
    timed = ~np.isnan(own)
    first: dict = {}
    for launch, variant in zip(rest[timed], variants[timed]):
        first.setdefault(launch, "" if pd.isna(variant) else variant)
    return [first.get(launch) for launch in rest[rows]]


def sole_variants_filled(table: pd.DataFrame) -> pd.Series:
    """``table``'s variants with each kernel of at most one distinct variant (one C++ signature, named
    on some rows only: an import by today's importers beside a table without them) given it on every
    row; a kernel of two or more (overloads) keeps its variants, an empty one a variant of its own."""
    named = table["variant"].notna()
    distinct = table.loc[named].groupby("kernel")["variant"].agg(lambda v: v.astype(str).unique().tolist())
    sole = {kernel: values[0] for kernel, values in distinct.items() if len(values) == 1}
    filled = table["kernel"].map(sole)
    return table["variant"].where(named | filled.isna(), filled)


def job_launches(counts: pd.DataFrame, gpu: str, others: Sequence[str]) -> np.ndarray:
    """Per launch (row of ``counts``, rows per GPU): its rows on the other GPU that timed it most, or
    on ``gpu`` where no other GPU timed it (the job's launches; ``gpu``'s own are its calibration)."""
    elsewhere = counts[list(others)].max(axis=1)
    return elsewhere.fillna(counts[gpu]).fillna(0).to_numpy().astype(int)


def stripped(values: pd.Series) -> pd.Series:
    """``values`` with the text ones' surrounding spaces removed (``"saxpy "`` is ``saxpy``), an empty one None."""
    if pd.api.types.is_numeric_dtype(values.dtype):
        return values
    return values.map(lambda value: (value.strip() or None) if isinstance(value, str) else value)


def launch_calls(table: pd.DataFrame, where: str) -> np.ndarray:
    """Per row, the launches it stands for: its ``calls`` (an nvprof summary row's call count) where
    the table has the column and the row a value, else 1; an error names a row whose calls is no count."""
    if CALLS not in table.columns:
        return np.ones(len(table))
    calls = pd.to_numeric(table[CALLS], errors="coerce").to_numpy(dtype=float)
    given = table[CALLS].notna().to_numpy()
    bad = given & ~(np.isfinite(calls) & (calls >= 1) & (np.mod(calls, 1) == 0))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        value = table[CALLS].iloc[first]
        value = value.item() if isinstance(value, np.generic) else value
        raise GpuperfError(f"{where}: {row_location(table, first)}: {CALLS}={value!r} is not a count of launches")
    return np.where(given, calls, 1.0)


def gpu_names(gpus: pd.Series) -> pd.Series:
    """Each row's GPU as gpuperf's descriptors name it; one they do not describe by the first of its
    spellings in the table (sorted), spellings matched as descriptors' are (case, spaces, '-', '_'
    and the brand words a driver puts first: ``NVIDIA H100 NVL`` is ``H100 NVL``)."""
    return canonical_gpus(gpus.astype(str))


def disagreeing_launches(grouped, target: str = TARGET) -> pd.DataFrame:
    """The launches (groups of one GPU's rows) timed more than once whose times differ over
    :data:`DISAGREEING` times: two runs of one launch that far apart are rarely the same launch."""
    fastest, slowest = f"fastest_{target}", f"slowest_{target}"
    spread = grouped.agg(**{"times": "count", fastest: "min", slowest: "max"})
    wide = (spread["times"] > 1) & (spread[slowest] > DISAGREEING * spread[fastest])
    return spread[wide].reset_index()


def launch_columns(table: pd.DataFrame, key: Sequence[str], where: str, target: str = TARGET) -> list[str]:
    """The columns naming a launch: ``kernel``, ``variant`` where the table has it, then ``key``."""
    refuse_one_string(key, "key", where)
    columns = ["kernel", *(["variant"] if "variant" in table.columns else []), *key]
    columns = list(dict.fromkeys(columns))
    missing = [c for c in ["gpu", *columns] if c not in table.columns]
    if missing:
        close = close_names(missing[0], table.columns)  # n for N
        raise GpuperfError(f"{where}: missing column(s) {', '.join(missing)} (a launch is named by kernel and --key"
                           + (f"; did you mean {', '.join(close)}?)" if close else ")"))
    if "gpu" in key:
        raise GpuperfError(f"{where}: --key names the launch, not the GPU it ran on; leave gpu out of it")
    if "kernel" in key or "variant" in key:
        raise GpuperfError(f"{where}: --key names what tells one kernel's launches apart (sizes, grid, block); "
                           "kernel and variant are in the key already")
    timed = [c for c in key if c in (TARGET, target, *TIME_IN_UNITS) or c.startswith(f"{TARGET}_")
             or any(c == f"{target}_{statistic}" for statistic in TIME_STATISTICS)]
    if timed:
        raise GpuperfError(f"{where}: --key names the launch, not what was measured of it; leave {timed[0]} out of it")
    return columns


def check_launches_named(table: pd.DataFrame, key: Sequence[str], where: str) -> None:
    """An error naming the first row (of those measured) without a GPU, kernel or key value."""
    for column in ["gpu", "kernel", *key]:  # a launch without a key value would pass for a launch of its own
        empty = table[column].isna().to_numpy()
        if empty.any():
            raise GpuperfError(f"{where}: {row_location(table, int(np.flatnonzero(empty)[0]))}: {column} is empty")


def matching_gpu(table: pd.DataFrame, gpu: str, where: str, failed: pd.Series | None = None) -> str:
    """The table's name for ``gpu`` (exactly, or by gpuperf's descriptor names and aliases); the error
    for a GPU with none counts its rows among ``failed`` (the GPUs of the rows left out for their status)."""
    names = sorted(table["gpu"].dropna().astype(str).unique())
    if gpu in names:
        return gpu
    wanted = canonical_gpu_name(gpu)
    for name in names:
        if same_gpu(name, gpu, wanted):
            return name
    rows = failed.value_counts() if failed is not None else pd.Series(dtype=int)
    skipped = sum(int(count) for name, count in rows.items() if same_gpu(str(name), gpu, wanted))
    if wanted is not None or skipped:  # a GPU gpuperf knows (or one whose rows all failed), with no launch timed here
        raise GpuperfError(f"{where}: no launch was timed on the {wanted or gpu} (the table's GPUs: {', '.join(names)})"
                           + (f"; its {counted(skipped, 'row')} {'is' if skipped == 1 else 'are'} left out for their status (not ok)" if skipped else "")
                           + "; each kernel needs one launch timed on the GPU to predict")
    raise unknown_name_error(f"GPU in {where}", gpu, names)


def same_gpu(name: str, gpu: str, wanted: str | None) -> bool:
    """Whether the table's ``name`` is ``gpu`` (``wanted``: its descriptor name, None for one gpuperf does not describe)."""
    if name == gpu:
        return True
    if wanted is not None:
        return canonical_gpu_name(name) == wanted
    return canonical_gpu_name(name) is None and spelling_key(name) == spelling_key(gpu)
