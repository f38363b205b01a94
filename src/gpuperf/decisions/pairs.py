"""Training pairs: measured before/after points of one optimization, with the before kernel's features.

A pair is two measurements on the same GPU (or device) at the same sizes whose configurations
differ only by the optimization: another kernel of the same table (``MMGU -> MMGC``) or one
parameter changed (``SA: 0 -> 1``). ``speedup = time_before / time_after`` (above 1: the
optimization helps); when both points were timed interleaved (a ``cycle_times_s`` column, see
gpuperf.measure.interleave) in the same cycles it is the median of their per-cycle ratios instead, which
the machine's drift between rounds does not move. Two points share cycles when their ``cycle_group``s are
equal; in tables without one (exported before it was recorded), when their cycle lists have one length.
Repeated measurements of one point are first reduced to their median.
Besides the before kernel's features, a pair carries what the optimization changes in them
(``change_*``: the after kernel's features, from the same source, against the before kernel's).

Pairs of each ``[[pairs]]`` table are cached under ``$GPUPERF_CACHE_DIR/advise`` (default
``$XDG_CACHE_HOME/gpuperf/advise`` or ``~/.cache/gpuperf/advise``), keyed by the table, the dataset
file's contents (not its path, so every checkout of gpuperf shares the cache), the feature names and
``PAIRS_FORMAT``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from gpuperf.decisions.advice_features import (
    GPU_FEATURES, MODEL_FEATURES, STATIC_FEATURES, add_derived, change_features, with_gpu_features,
)
from gpuperf.decisions.optimizations import Optimization, PairSpec
from gpuperf.decisions.program_features import FEATURE_SOURCES
from gpuperf.datasets.schema import canonical_gpus, is_ok, texts_by_value
from gpuperf.errors import GpuperfError, counted
from gpuperf.files import cache_root, write_cache_file
from gpuperf.measure.export import CYCLE_TIMES
from gpuperf.measure.interleave import paired_ratio
from gpuperf.measure.store import CYCLE_GROUP

PAIRS_FORMAT = 8  # bump when the pair table's columns or rules change
GPU_TARGET = "gpu"  # pairs measured on a GPU gpuperf has a descriptor for
DEVICE_TARGET = "device:"  # + the device's name: pairs measured on another device (e.g. a CPU via pocl)
CYCLES = CYCLE_TIMES  # per-cycle round medians of an interleaved measurement, ';'-separated
PAIR_COLUMNS = (
    "optimization", "family", "dataset", "change", "kernel", "after_kernel", "configuration", "input", "gpu", "device",
    "target", "time_before_s", "time_after_s", "speedup",
)


def dataset_path(name: str) -> Path | None:
    """The file behind a dataset name: a bundled table's file, a file in the data folder, or a path."""
    from gpuperf.datasets.bundled import BUNDLED, data_dir

    if name in BUNDLED:
        return data_dir() / BUNDLED[name].file
    for candidate in (data_dir() / name, Path(name)):
        if candidate.is_file():
            return candidate
    return None


def load_pair_dataset(name: str, where: str) -> pd.DataFrame:
    """A dataset by bundled name, by file name in gpuperf's data folder, or by path; a user's kernel
    named like another of a campaign export is a kernel of its own (``name (file.py:function)``:
    :func:`~gpuperf.datasets.tables.kernels_told_apart`), its points never another's repeats; a GPU spelt two
    ways (``Tesla K40``, ``NVIDIA Tesla K40c``) is one, named as the descriptors name it."""
    from gpuperf.datasets import load_dataset
    from gpuperf.datasets.bundled import BUNDLED
    from gpuperf.datasets.tables import kernels_told_apart

    if name in BUNDLED:
        try:
            return load_dataset(name)
        except GpuperfError as error:
            raise GpuperfError(f"{where}.dataset: {error}") from None
    path = dataset_path(name)
    if path is None:
        raise GpuperfError(f"{where}.dataset: '{name}' is neither a bundled dataset nor a file in the data folder, "
                           "beside the entry or from the working folder")
    try:
        frame = load_dataset(str(path))
    except GpuperfError as error:
        frame = _timed_in_other_units(path)
        if frame is None:
            raise GpuperfError(f"{where}.dataset: {error}") from None
    if "gpu" in frame.columns:  # one GPU spelt two ways is one GPU: its pairs neither transfer to it nor cap apart
        frame = frame.assign(gpu=canonical_gpus(frame["gpu"]))
    return kernels_told_apart(frame).copy() if "kernel_spec" in frame.columns else frame


def _timed_in_other_units(path: Path) -> pd.DataFrame | None:
    """A table of kernels timed in ``time_ms``, ``time_us`` or ``time_ns`` rather than ``time_s``, in the dataset
    shape with the time in seconds (a note names the column, as other commands give it); None for other tables."""
    from gpuperf.datasets.schema import TARGET, check_dataset, measured_rows, time_column
    from gpuperf.datasets.tables import read_table_file

    try:
        table = read_table_file(path)
        if "kernel" not in table.columns or time_column(table, str(path)) == TARGET:
            return None
        return check_dataset(measured_rows(table, str(path), other_units=True), str(path))
    except GpuperfError:  # no table, or a faulty one: the dataset shape's own error says more
        return None


def _config_columns(frame: pd.DataFrame, spec: PairSpec) -> list[str]:
    """The configuration columns of ``spec``'s dataset that hold values; a column the entry names
    (``configuration``, ``inputs``) or a pair needs (``gpu``, ``device``) that it lacks, or a measured row
    naming no gpu, is an error."""
    for column in ("gpu", "device"):
        if column not in frame.columns:
            raise GpuperfError(f"{spec.where}.dataset: {spec.dataset} has no column '{column}' (a pair is two "
                               "variants timed on one GPU and device)")
    unnamed = int((frame["gpu"].isna() | frame["gpu"].astype(str).str.strip().eq("")).sum())  # a blank cell too
    if unnamed:  # (such rows paired, then went unsaid at the sample of each GPU's pairs)
        raise GpuperfError(f"{spec.where}.dataset: {spec.dataset}: {counted(unnamed, 'measured row')} of its kernels "
                           f"name{'s' * (unnamed == 1)} no gpu (a pair is two variants timed on one GPU); fill the gpu "
                           "column in")
    columns = list(spec.configuration or frame.attrs.get("parameters", []))
    for field_name, named in (("configuration", columns), ("inputs", list(spec.inputs or ()))):
        missing = [c for c in named if c not in frame.columns]
        if missing:
            raise GpuperfError(f"{spec.where}.{field_name}: the dataset has no column '{missing[0]}'")
    outside = [c for c in spec.inputs or () if c not in columns]
    if outside:  # the points at each input would be taken as repeats of one point, and paired across inputs
        raise GpuperfError(f"{spec.where}.inputs: '{outside[0]}' is an input but not a configuration column "
                           f"({', '.join(columns) or 'none'}), so points at different {outside[0]} would be one "
                           "point's repeats; add it to configuration")
    return [c for c in columns if frame[c].notna().any()]


def _median_points(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per point: the median time of repeated measurements, other columns from the first."""
    grouped = frame.groupby(keys, sort=False, dropna=False)
    first = grouped.first().reset_index()
    first["time_s"] = grouped["time_s"].median().to_numpy()
    if CYCLES in first.columns:  # a repeated point's cycles pair with nothing
        first.loc[grouped.size().to_numpy() > 1, CYCLES] = np.nan
    return first


def _cycle_times(text: object, where: str) -> np.ndarray | None:
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        times = np.array([float(t) for t in text.split(";")])
    except ValueError:
        times = np.array([np.nan])
    if not (np.isfinite(times) & (times > 0)).all():  # a ratio of cycles would be infinite, NaN or negative
        raise GpuperfError(f"{where}: {CYCLES}: expected ';'-separated positive times in seconds, not {text[:40]!r}")
    return times


def _group_ids(groups: pd.Series | None, count: int) -> list[str | None]:
    """Each row's cycle group identifier, None where it has none (or no ``groups`` are given)."""
    if groups is None:
        return [None] * count
    return [None if pd.isna(g) or not str(g).strip() else str(g).strip() for g in groups]


def paired_speedups(before: pd.Series, after: pd.Series, fallback: pd.Series, where: str = "pairs",
                    before_groups: pd.Series | None = None, after_groups: pd.Series | None = None) -> pd.Series:
    """Median per-cycle ratio before/after where both have cycle times of one length taken in the same
    cycles, else ``fallback``. Rows timed in the same cycles have equal group identifiers (``*_groups``);
    two rows without one pair as they did before identifiers were recorded, a row with one and a row
    without never (they were stored by different runs). A malformed cycle list is an error naming
    ``where`` (the dataset)."""
    values = fallback.to_numpy(dtype=float).copy()
    pairs = zip(before, after, _group_ids(before_groups, len(values)), _group_ids(after_groups, len(values)))
    for row, (first, second, first_group, second_group) in enumerate(pairs):
        a, b = _cycle_times(first, where), _cycle_times(second, where)
        if a is not None and b is not None and a.size == b.size and first_group == second_group:
            values[row] = paired_ratio(a, b)
    return pd.Series(values, index=fallback.index)


def _label(frame: pd.DataFrame, columns: list[str]) -> pd.Series:
    if not columns:
        return pd.Series("", index=frame.index)
    parts = [columns[0] + "=" + texts_by_value(frame[columns[0]], number_text)]
    for column in columns[1:]:
        parts.append("," + column + "=" + texts_by_value(frame[column], number_text))
    return pd.concat(parts, axis=1).sum(axis=1)


def number_text(value: object) -> str:
    """A setting's value as the pair tables write it (whole floats as integers)."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _check_values(rows: pd.DataFrame, spec: PairSpec) -> None:
    """An error naming ``before`` or ``after`` where a value it lists is measured for none of the table's
    kernels (a typo, ``40`` for ``4``): that value's pairs would be missing, unsaid."""
    measured = set(pd.to_numeric(rows[spec.parameter], errors="coerce").dropna())
    for field_name in ("before", "after"):
        absent = [v for v in getattr(spec, field_name) if v not in measured]
        if absent:
            shown = ", ".join(number_text(v) for v in sorted(measured)) or "none"
            raise GpuperfError(f"{spec.where}.{field_name}: {spec.parameter} = {number_text(absent[0])} is measured "
                               f"for none of its kernels in {spec.dataset} (measured: {shown})")


def _statuses(rows: pd.DataFrame) -> str:
    """How many ``rows`` there are and their statuses, as a failed table's error gives them."""
    if "status" not in rows.columns:
        return counted(len(rows), "row")
    named = sorted({str(status).strip() or "empty" for status in rows["status"].fillna("")})
    return f"{counted(len(rows), 'row')}, status {', '.join(named)}"


def _matched(frame: pd.DataFrame, spec: PairSpec) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Before rows joined to their after rows, and the after rows themselves (one per joined row).

    The joined frame has the before row's columns, ``time_after_s`` and ``after_kernel``."""
    kernels = [*spec.kernels, *([spec.after_kernel] if spec.after_kernel else [])]
    ok = is_ok(frame["status"]) if "status" in frame.columns else True
    ours = frame["kernel"].isin(kernels)
    rows = frame[ok & ours & (pd.to_numeric(frame["time_s"], errors="coerce") > 0)]
    if rows.empty:
        raise GpuperfError(f"{spec.where}.dataset: {spec.dataset} holds no measurement of {', '.join(kernels)} "
                           f"with status ok and a positive time_s ({_statuses(frame[ours])})")
    config = _config_columns(rows, spec)
    if spec.after_kernel is None and spec.parameter not in config:
        raise GpuperfError(f"{spec.where}.parameter: the dataset has no values of '{spec.parameter}' for these kernels")
    if spec.after_kernel is None:
        _check_values(rows, spec)
        if not pd.api.types.is_numeric_dtype(rows[spec.parameter]):  # text ("auto") beside numbers: the numbers
            rows = rows.assign(**{spec.parameter: pd.to_numeric(rows[spec.parameter], errors="coerce")})
    keys = ["kernel", "gpu", "device", *config]
    rows = _median_points(rows, keys)
    rows["after_row"] = np.arange(len(rows))
    if spec.after_kernel:
        before = rows[rows["kernel"].isin(spec.kernels)].drop(columns="after_row")
        after = rows.loc[rows["kernel"].eq(spec.after_kernel), ["gpu", "device", *config, "time_s", "after_row"]]
        joined = before.merge(after.rename(columns={"time_s": "time_after_s"}), on=["gpu", "device", *config])
        if joined.empty:
            return joined, rows
        joined["after_kernel"] = spec.after_kernel
        joined["configuration"] = _label(joined, config)
        joined["input"] = _label(joined, list(config if spec.inputs is None else spec.inputs))
        return joined, rows
    param = spec.parameter
    rest = [c for c in keys if c != param]
    before = rows[rows[param].isin(spec.before)].drop(columns="after_row")
    after_values = rows[param].isin(spec.after) if spec.after else rows[param].notna()
    after = rows.loc[after_values, [*rest, param, "time_s", "after_row"]]
    after = after.rename(columns={param: "after_value", "time_s": "time_after_s"})
    joined = before.merge(after, on=rest)
    if spec.factor:
        joined = joined[np.isclose(joined["after_value"], joined[param] * spec.factor)]
    changed = joined["after_value"] > joined[param] if spec.increasing else joined["after_value"] != joined[param]
    joined = joined[changed]
    if joined.empty:
        return joined, rows
    joined["after_kernel"] = joined["kernel"]
    joined["configuration"] = _label(joined, [c for c in config if c != param])
    joined["input"] = _label(joined, list(spec.inputs or ()))
    before, after = texts_by_value(joined[param], number_text), texts_by_value(joined["after_value"], number_text)
    joined["change"] = param + ": " + before + " -> " + after
    return joined, rows


def build_spec_pairs(spec: PairSpec, optimization: str) -> pd.DataFrame:
    """The pairs one ``[[pairs]]`` table describes, with the before kernel's model features."""
    frame = load_pair_dataset(spec.dataset, spec.where)
    known = set(frame["kernel"].unique())
    named = [("kernel", k) for k in spec.kernels] + ([("after_kernel", spec.after_kernel)] if spec.after_kernel else [])
    missing = [(field, k) for field, k in named if k not in known]
    if missing:
        from gpuperf.errors import unknown_name_error

        field, kernel = missing[0]
        raise GpuperfError(f"{spec.where}.{field}: {unknown_name_error('kernel', kernel, known)}")
    joined, rows = _matched(frame, spec)
    if joined.empty:
        raise GpuperfError(f"{spec.where}: no measured before/after pair in {spec.dataset} matches it "
                           "(check its kernels, parameter, before, after and factor)")
    shuffled = joined.sample(frac=1.0, random_state=0)
    joined = shuffled.groupby("gpu", sort=False).head(spec.max_pairs_per_gpu).sort_index().reset_index(drop=True)
    features = _source_features(spec, joined)
    after_features = _source_features(spec, rows.iloc[joined["after_row"].to_numpy()].reset_index(drop=True))
    features = pd.concat([features, change_features(features, after_features)], axis=1)
    out = pd.DataFrame({
        "optimization": optimization, "family": spec.family or joined["kernel"].astype(str), "dataset": spec.dataset,
        "change": joined["change"] if "change" in joined else spec.change,
        "kernel": joined["kernel"].astype(str), "after_kernel": joined["after_kernel"].astype(str),
        "configuration": joined["configuration"], "input": joined["input"],
        "gpu": joined["gpu"].astype(str), "device": joined["device"].astype(str),
        "time_before_s": joined["time_s"].astype(float), "time_after_s": joined["time_after_s"].astype(float),
    })
    out["speedup"] = out["time_before_s"] / out["time_after_s"]
    if CYCLES in joined.columns:
        out["speedup"] = _cycle_speedups(joined, rows, out["speedup"], f"{spec.where} ({spec.dataset})")
    out = pd.concat([out, features.reset_index(drop=True)], axis=1)
    out = with_gpu_features(out)
    out.insert(PAIR_COLUMNS.index("target"), "target", np.where(
        out[list(GPU_FEATURES)].notna().any(axis=1), GPU_TARGET, DEVICE_TARGET + out["gpu"]))
    return out[[*PAIR_COLUMNS, *MODEL_FEATURES]]


def _source_features(spec: PairSpec, rows: pd.DataFrame) -> pd.DataFrame:
    """The advice features of ``rows`` from ``spec``'s feature source; its error names the entry's field."""
    try:
        return add_derived(FEATURE_SOURCES[spec.features](rows))
    except GpuperfError as error:
        raise GpuperfError(f"{spec.where}.features: {spec.dataset}: {error}") from None


def _cycle_speedups(joined: pd.DataFrame, rows: pd.DataFrame, fallback: pd.Series, where: str) -> pd.Series:
    """``paired_speedups`` of the joined before rows and their after rows, by cycle group where recorded."""
    after = rows.iloc[joined["after_row"].to_numpy()].reset_index(drop=True)
    before = joined.reset_index(drop=True)
    groups = (before[CYCLE_GROUP], after[CYCLE_GROUP]) if CYCLE_GROUP in joined.columns else (None, None)
    return paired_speedups(before[CYCLES], after[CYCLES], fallback, where, *groups)


def cache_dir() -> Path:
    """Where the advisor keeps its pairs and fitted models."""
    return cache_root() / "advise"


@lru_cache(maxsize=64)
def _file_digest(path: Path, size: int, mtime_ns: int) -> str:
    """SHA-256 of a file's bytes; size and modification time are part of the key so an edit is seen."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _cache_key(spec: PairSpec, optimization: str) -> str:
    import gpuperf
    from gpuperf.hardware.specs import gpus

    described = {k: v for k, v in asdict(spec).items() if k != "where"}
    path = dataset_path(spec.dataset)
    if path is not None and not path.is_file():  # a bundled table absent from the data folder
        from gpuperf.datasets.bundled import missing_bundled_message

        raise GpuperfError(f"{spec.where}.dataset: {missing_bundled_message(spec.dataset, path)}")
    stat = path.stat() if path is not None else None
    token = json.dumps({
        "spec": described, "optimization": optimization, "format": PAIRS_FORMAT, "version": gpuperf.__version__,
        "features": MODEL_FEATURES,
        "file": _file_digest(path.resolve(), stat.st_size, stat.st_mtime_ns) if stat else None,
        "gpus": [gpu.as_dict() for gpu in gpus()],  # pairs carry descriptors: GPUPERF_GPUS may replace one
    }, sort_keys=True, default=str)
    return hashlib.sha256(token.encode()).hexdigest()[:24]


def spec_pairs(spec: PairSpec, optimization: str, use_cache: bool = True) -> pd.DataFrame:
    """``build_spec_pairs`` through the on-disk cache."""
    if not use_cache:
        return build_spec_pairs(spec, optimization)
    path = cache_dir() / f"{_cache_key(spec, optimization)}.parquet"
    if path.is_file():
        try:
            cached = pd.read_parquet(path)
        except (OSError, ValueError):
            cached = None  # a damaged cache file is rebuilt
        if cached is not None and list(cached.columns) == [*PAIR_COLUMNS, *MODEL_FEATURES]:
            return cached  # (a file of other columns, such as an empty table copied there, is rebuilt too)
    pairs = build_spec_pairs(spec, optimization)
    write_cache_file(path, lambda temporary: pairs.to_parquet(temporary, index=False))
    return pairs


def unvalued_features_note(spec: PairSpec, pairs: pd.DataFrame) -> str:
    """For a ``features = "columns"`` table, which static features its pairs hold no value of (a column
    missing or named otherwise, ``flops`` for ``flops_per_thread``): the models take them as unknown."""
    if pairs.empty or not set(STATIC_FEATURES) <= set(pairs.columns) or spec.features != "columns":
        return ""  # (a table of no feature columns: none built)
    missing = [name for name in STATIC_FEATURES if pairs[name].isna().all()]
    if not missing:
        return ""
    return (f"{spec.where}.features: {spec.dataset} holds no value of {', '.join(missing)} for its pairs (a column "
            "missing or named otherwise?); the models take them as unknown")


def training_pairs(optimizations: Iterable[Optimization], use_cache: bool = True) -> pd.DataFrame:
    """Every pair of every entry, one row each (see ``PAIR_COLUMNS`` and ``MODEL_FEATURES``)."""
    parts = [spec_pairs(spec, entry.name, use_cache) for entry in optimizations for spec in entry.pairs]
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=[*PAIR_COLUMNS, *MODEL_FEATURES])
    return pd.concat(parts, ignore_index=True)
