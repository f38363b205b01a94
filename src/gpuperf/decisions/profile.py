"""A profiled kernel launch as advice features: nvprof (or Nsight Compute) counters per thread.

A profile row needs the launch geometry (``grid.x``, ``block.x``, ... as gpuperf's profiler
importers and the bundled Rodinia table name them) and whichever counters it has; each advice
feature is taken from the first of its counters present (``COUNTERS``), per-warp counts turned
into per-thread ones. Features with no counter stay unknown (NaN) and the models impute them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from gpuperf.datasets.profiler_csv import MAX_BLOCK_THREADS
from gpuperf.decisions.advice_features import STATIC_FEATURES, add_derived
from gpuperf.errors import GpuperfError, missing_file

WARP = 32
# feature: [(counters, scale)] with scale "thread" (a count over all threads), "warp" (a count of
# warp-level instructions) or "value" (taken as it is); the first alternative with a counter present is
# used, summing those of its counters the row has (loads of every width, single and double precision).
WIDTHS = (8, 16, 32, 64, 128)
COUNTERS: dict[str, list[tuple[tuple[str, ...], str]]] = {
    "global_loads_per_thread": [(tuple(f"gld_inst_{bits}bit" for bits in WIDTHS), "thread"), (("gld_request",), "warp"),
                                (("smsp__sass_inst_executed_op_global_ld.sum",), "warp")],
    "global_stores_per_thread": [(tuple(f"gst_inst_{bits}bit" for bits in WIDTHS), "thread"), (("gst_request",), "warp"),
                                 (("smsp__sass_inst_executed_op_global_st.sum",), "warp")],
    "local_loads_per_thread": [(("shared_load",), "warp"), (("smsp__sass_inst_executed_op_shared_ld.sum",), "warp")],
    "local_stores_per_thread": [(("shared_store",), "warp"), (("smsp__sass_inst_executed_op_shared_st.sum",), "warp")],
    "flops_per_thread": [(("floating_point_operations.single_precision.", "floating_point_operations.double_precision."),
                          "thread"), (("flop_count_sp", "flop_count_dp"), "thread")],
    "sectors_per_warp_access": [(("global_load_transactions_per_request",), "value"),
                                (("gld_transactions_per_request",), "value")],
    "local_memory_bytes": [(("static.smem",), "value"), (("launch__shared_mem_per_block_static",), "value")],
}
# Nsight Compute has no sectors-per-request counter: global L1TEX sectors over requests, loads and
# stores together as gpuperf's static sectors_per_warp_access averages them (on an H200 the two agree
# within 10 % for 44 of the 45 catalog kernels with global accesses:
# data/sector_profile_h200.csv.gz).
NCU_SECTORS = (("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
               ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"))
GEOMETRY = {"grid": ("grid.x", "grid.y", "grid.z"), "block": ("block.x", "block.y", "block.z")}
# Nsight Compute pages without (x, y, z) sizes count them whole: the raw page's launch__grid_size and
# launch__block_size, an older details page's Grid Size and Block Size (Launch Statistics)
TOTALS = {"grid": ("launch__grid_size", "Grid Size"), "block": ("launch__block_size", "Block Size")}


def has_geometry(table: pd.DataFrame) -> bool:
    """Whether a table's columns give each launch's blocks and threads per block (a count, not the
    text '(x, y, z)' an Nsight Compute page read as a plain table holds)."""
    return all(GEOMETRY[kind][0] in table.columns or any(
        total in table.columns and pd.api.types.is_numeric_dtype(table[total]) for total in TOTALS[kind])
        for kind in GEOMETRY)


def _number(row: Mapping[str, Any], column: str, where: str) -> float | None:
    """A counter or size of the row (None where absent or empty); a count is a finite number, not
    negative."""
    if column not in row or row[column] is None or (isinstance(row[column], float) and math.isnan(row[column])):
        return None
    try:
        value = float(row[column])
    except (TypeError, ValueError):
        raise GpuperfError(f"{where}: column {column}: {row[column]!r} is not a number") from None
    if not 0 <= value < math.inf:
        raise GpuperfError(f"{where}: column {column}: {row[column]!r} is not a count (a finite number, 0 or more)")
    return value


def _extent(row: Mapping[str, Any], names: tuple[str, ...], where: str) -> float:
    first = _number(row, names[0], where)
    if first is None:
        raise GpuperfError(f"{where}: missing or empty column {names[0]} (the launch geometry is needed)")
    value = first
    for name in names[1:]:  # y and z: an empty cell or a missing column is 1, as profilers leave them
        extent = _number(row, name, where)
        if extent is not None and not extent > 0:
            raise GpuperfError(f"{where}: {name}={extent:g}: grid and block sizes must be positive")
        value *= 1.0 if extent is None else extent
    return value


def _size(row: Mapping[str, Any], kind: str, where: str) -> float:
    """A launch's blocks (``grid``) or threads per block (``block``): the product of its x, y and z, or
    Nsight Compute's whole count where the row has no x."""
    if _number(row, GEOMETRY[kind][0], where) is None:
        total = next((value for value in (_number(row, name, where) for name in TOTALS[kind]) if value is not None), None)
        if total is not None:
            return total
    return _extent(row, GEOMETRY[kind], where)


def profile_features(row: Mapping[str, Any], where: str = "profile row") -> dict[str, float]:
    """The advice features of one profiled launch."""
    groups, group_size = _size(row, "grid", where), _size(row, "block", where)
    if groups <= 0 or group_size <= 0:
        raise GpuperfError(f"{where}: grid and block sizes must be positive")
    if group_size > MAX_BLOCK_THREADS:
        raise GpuperfError(f"{where}: a block of {group_size:g} threads; no GPU runs blocks of more than "
                           f"{MAX_BLOCK_THREADS}")
    threads = groups * group_size
    values: dict[str, float] = dict.fromkeys(STATIC_FEATURES, math.nan)
    values.update(threads=threads, work_groups=groups, work_group_size=group_size)
    for feature, sources in COUNTERS.items():
        for counters, scale in sources:
            present = [value for value in (_number(row, counter, where) for counter in counters) if value is not None]
            if not present:
                continue
            value = sum(present)
            values[feature] = {"thread": value / threads, "warp": value * WARP / threads, "value": value}[scale]
            break
    if math.isnan(values["sectors_per_warp_access"]):
        values["sectors_per_warp_access"] = _ncu_sectors_per_request(row, where)
    lane = _load_lane_bytes(row, where)
    if lane is not None and not math.isnan(values["sectors_per_warp_access"]):
        # the fewest sectors 32 lanes of this width fit in: a coalesced request of doubles takes 8, not 4
        values["max_sectors_over_fewest"] = values["sectors_per_warp_access"] / lane
    derived = add_derived(pd.DataFrame([values]))
    return {k: float(v) for k, v in derived.iloc[0].items()}


def _load_lane_bytes(row: Mapping[str, Any], where: str) -> float | None:
    """The bytes a global load instruction reads per thread, averaged over the widths nvprof counts
    (``gld_inst_8bit`` ... ``gld_inst_128bit``); None where the row counts none."""
    counts = {bits: _number(row, f"gld_inst_{bits}bit", where) for bits in WIDTHS}
    known = {bits: count for bits, count in counts.items() if count}
    if not known:
        return None
    return sum(bits / 8 * count for bits, count in known.items()) / sum(known.values())


def _ncu_sectors_per_request(row: Mapping[str, Any], where: str) -> float:
    """Global sectors per request from Nsight Compute's L1TEX counters: NaN where the row has none, 0
    for a launch with no global access (as the static feature has it)."""
    pairs = [(_number(row, sectors, where), _number(row, requests, where)) for sectors, requests in NCU_SECTORS]
    counted = [(sectors, requests) for sectors, requests in pairs if sectors is not None and requests is not None]
    if not counted:
        return math.nan
    requests = sum(r for _, r in counted)
    return sum(s for s, _ in counted) / requests if requests else 0.0


def profile_gpu(row: Mapping[str, Any], where: str = "profile row") -> str | None:
    """The canonical GPU the row names in ``gpu`` or ``device`` (None where it names none); a row
    naming only GPUs gpuperf does not describe is an error naming ``where``, the column and the name."""
    from gpuperf.hardware.specs import canonical_gpu_name, gpu_suggestion

    named = [(column, row[column].strip()) for column in ("gpu", "device")
             if column in row and isinstance(row[column], str) and row[column].strip()]
    known = [canonical_gpu_name(name) for _, name in named]
    found = next((name for name in known if name), None)
    if found or not named:
        return found
    column, name = named[0]
    raise GpuperfError(f"{where}: {column} '{name}' is not a GPU gpuperf describes ({gpu_suggestion(name)}); "
                       "name one with --gpu")


def read_profile(path: str | Path, row: int = 1, gpu: str | None = None) -> dict[str, Any]:
    """Row ``row`` (from 1) of a profile: a table in gpuperf's dataset shape (CSV or Parquet, as
    ``gpuperf import`` writes it, or a bundled one by its name, ``rodinia_nvprof``), or an nvprof GPU trace or Nsight
    Compute CSV as the profiler wrote it (``gpu`` names its GPU where the profile does not)."""
    from gpuperf.datasets import BUNDLED, load_dataset
    from gpuperf.datasets.bundled import data_table
    from gpuperf.datasets.profiler_csv import refuse_empty_gpu
    from gpuperf.datasets.tables import PARQUET_SUFFIXES, read_csv, read_table_file

    refuse_empty_gpu(gpu, str(path))  # --gpu "$GPU", the variable unset: said as import says it
    path = Path(path) if str(path) in BUNDLED else data_table(path)  # data/NAME.csv.gz: the bundled data's file
    if not path.exists() and str(path) in BUNDLED:
        table = load_dataset(str(path))
        if not has_geometry(table):
            raise GpuperfError(f"{path}: no launch geometry (grid.x, block.x) in this bundled table")
    elif not path.is_file():
        raise missing_file(path, f"--profile: file '{path}' does not exist")
    elif path.name.lower().endswith(PARQUET_SUFFIXES):  # a table, never a profiler's own output
        table = read_table_file(path)
        if not has_geometry(table):
            raise GpuperfError(f"{path}: no launch geometry (grid.x, block.x) in this table; import an nvprof "
                               "GPU trace (--print-gpu-trace) or an Nsight Compute page: a summary has none")
    else:
        try:
            table = read_csv(path)
        except GpuperfError:  # no plain table: a profiler's own CSV (nvprof's "==" lines), which the importers read
            table = None
        if table is not None and not has_geometry(table) and {"kernel", "time_s"} <= set(table.columns):
            raise GpuperfError(f"{path}: no launch geometry (grid.x, block.x) in this table; import an nvprof "
                               "GPU trace (--print-gpu-trace) or an Nsight Compute page: a summary has none")
    if table is None or not has_geometry(table):
        table = _imported(path, gpu)
    if not 1 <= row <= len(table):
        raise GpuperfError(f"{path}: row {row} does not exist (the table has {len(table)} rows, counted from 1)")
    return table.iloc[row - 1].to_dict()


def _import(importer, path: Path, gpu: str | None) -> pd.DataFrame:  # noqa: ANN001 - an importer function
    """The profile as ``importer`` reads it; ``gpu`` only where the profile names none: it names the
    advised row's GPU, and other rows of a profile may name theirs."""
    try:
        return importer(path)
    except GpuperfError:
        if gpu is None:
            raise
        return importer(path, gpu=gpu)


def _imported(path: Path, gpu: str | None = None) -> pd.DataFrame:
    """A profiler's own CSV imported; failing, the error of the importer for the profiler that wrote
    it (Nsight Compute's by its log lines or header, else nvprof's). An nvprof summary, metrics CSV or
    per-launch metrics CSV has no launch geometry, whichever GPU it names."""
    from gpuperf.datasets import import_ncu, import_nvprof
    from gpuperf.datasets.nvprof import nvprof_kind
    from gpuperf.datasets.profiler_csv import is_ncu_csv, read_lines

    lines = read_lines(path)
    ncu = is_ncu_csv(lines)
    no_geometry = (f"{path}: no launch geometry (grid.x, block.x) in this profile; an nvprof summary or metrics "
                   "CSV has none: profile with --print-gpu-trace, or with Nsight Compute")
    if ncu:
        no_geometry = (f"{path}: no launch geometry in this profile (Grid Size and Block Size, or launch__grid_size "
                       "and launch__block_size): profile with Nsight Compute's LaunchStats section")
    kind = None if ncu else nvprof_kind(lines)
    if kind in ("summary", "metrics"):
        raise GpuperfError(no_geometry)
    if kind == "metric_trace":  # --print-gpu-trace with --metrics: launches, but their geometry is the trace's
        raise GpuperfError(f"{path}: no launch geometry (grid.x, block.x) in nvprof's per-launch metrics; import them "
                           f"beside a GPU trace of the same program (gpuperf import nvprof TRACE.csv --metrics {path} "
                           "--out LAUNCHES.csv) and advise on that table")
    errors = {}
    importers = [("nvprof", import_nvprof), ("ncu", import_ncu)]
    for name, importer in reversed(importers) if ncu else importers:  # the profiler that wrote it first
        try:
            table = _import(importer, path, gpu)
        except GpuperfError as exc:
            errors[name] = str(exc)
            continue
        if has_geometry(table):
            return table
        errors[name] = no_geometry
    raise GpuperfError(errors["ncu" if ncu else "nvprof"])
