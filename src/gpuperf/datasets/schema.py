"""The one dataset shape every source lands in: a long pandas table, one row per measured point.

Columns:
- keys: ``kernel`` (name), ``variant`` (``a=1,b=2`` label, empty for the base kernel), ``gpu``
  (canonical descriptor name where known, else the device name as given), ``device`` (the device
  string as recorded), ``source`` (where the row came from);
- the size parameters and tunable parameters, one column each, named as the kernel names them;
- feature columns (static features, profiler counters), named as documented;
- target: ``time_s`` (seconds; NaN where the point failed), with ``status`` (``ok`` or the failure
  kind) and, where known, ``time_s_min``, ``time_s_iqr``, ``repeats``.
"""

from __future__ import annotations

import ast
import math
import re
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd

from gpuperf.errors import GpuperfError, GpuperfNote
from gpuperf.features.table import FEATURE_COUNTS
from gpuperf.files import with_whole_numbers
from gpuperf.hardware.specs import canonical_gpu_name

KEY_COLUMNS = ("kernel", "variant", "gpu", "device", "source")
TARGET = "time_s"
STATUS = "status"
OK = "ok"
# What gpuperf's campaign export records about how each measurement went, not about the kernel or
# its configuration: never a feature, never a parameter.
MEASUREMENT_OUTCOMES = ("repeats", "retries", "stable", "verified", "max_rel_error", "compile_s", "error",
                        "measured_at", "campaign", "kernel_key", "kernel_spec", "geometry",
                        # a campaign export's provenance: how the point was taken, not what the kernel is
                        "timer", "device_name", "driver_version", "host", "gpuperf_version", "input_seed",
                        # an nvprof summary's launches of the kernel that its times average
                        "calls")

# What counts something, written as whole numbers (16, not 16.0; an empty cell where one is missing)
# wherever every value is one (see with_whole_counts): a launch's geometry and resources as nvprof,
# Nsight Compute (raw page, and its details page's Launch Statistics and Occupancy names) and
# gpuperf's features give them, a profile's ids, launches and repeats. A measured quantity (a time, a
# rate, a profiler metric's sum or average) is none of them: it is written as it was read.
LAUNCH_STATISTICS = ("Block Size", "Grid Size", "Threads", "Registers Per Thread", "Static Shared Memory Per Block",
                     "Dynamic Shared Memory Per Block", "Driver Shared Memory Per Block",
                     "Shared Memory Configuration Size", "# SMs", "Cluster Size")
OCCUPANCY_LIMITS = ("Block Limit SM", "Block Limit Registers", "Block Limit Shared Mem", "Block Limit Warps")
COUNT_COLUMNS = frozenset({
    *(f"{kind}.{axis}" for kind in ("grid", "block") for axis in "xyz"),
    "registers.per.thread", "static.smem", "dynamic.smem", "correlation_id", "calls", "invocations",
    "ID", "Process ID", "repeats", "retries", "input_seed",
    "launch__block_size", "launch__grid_size", "launch__thread_count", "launch__registers_per_thread",
    "launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic",
    "launch__shared_mem_per_block_driver", "launch__shared_mem_config_size", "launch__sm_count",
    "launch__occupancy_limit_blocks", "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    *LAUNCH_STATISTICS, *(f"Launch Statistics: {name}" for name in LAUNCH_STATISTICS),
    *OCCUPANCY_LIMITS, *(f"Occupancy: {name}" for name in OCCUPANCY_LIMITS),
    *FEATURE_COUNTS,
})


ROW_NUMBERING = "row_numbering"  # frame.attrs key: how error messages number the rows of the file read


def require_frame(value: object, where: str, what: str = "table") -> None:
    """An error where ``value``, given to a library function as a ``what``, is not a pandas DataFrame
    (a list of rows, a dict of columns, a path), which would fail deep inside with an AttributeError."""
    if isinstance(value, pd.DataFrame):
        return
    from pathlib import Path

    hint = ("; read the file first (pandas.read_csv, or gpuperf.datasets.load_dataset for a bundled table)"
            if isinstance(value, (str, Path)) else "; pandas.DataFrame(...) makes one")
    raise GpuperfError(f"{where}: the {what} must be a pandas DataFrame (got {type(value).__name__}){hint}")


def row_location(frame: pd.DataFrame, position: int) -> str:
    """Where row ``position`` of ``frame`` is in the file it was read from: ``line N`` of a CSV
    (the header is line 1, as an editor or spreadsheet counts), ``entry N`` of a Kernel Tuner cache,
    else ``row N`` (1-based). A table keeps its rows' 0-based index labels through filtering and
    splitting, so the label counts where the labels are unique integers, else the position."""
    label = frame.index[position]
    number = int(label) if frame.index.is_unique and isinstance(label, (int, np.integer)) else position
    word = frame.attrs.get(ROW_NUMBERING, "row")
    return f"line {number + 2}" if word == "line" else f"{word} {number + 1}"


def is_ok(status: pd.Series) -> pd.Series:
    """Whether each row's status is ok, in any case and spacing (an empty status is not)."""
    return status.notna() & status.astype(str).str.strip().str.lower().eq(OK)


# The measured time in another unit, which measured_rows(other_units=True) takes for time_s.
TIME_IN_UNITS = {"time_ms": "ms", "time_us": "us", "time_ns": "ns"}


def time_column(frame: pd.DataFrame, where: str) -> str:
    """The column holding the measured time: ``time_s``, else the one of ``time_ms``, ``time_us``,
    ``time_ns`` the table has (``time_s`` where it has none); several of them are an error."""
    if TARGET in frame.columns:
        return TARGET
    found = [column for column in TIME_IN_UNITS if column in frame.columns]
    if len(found) > 1:
        raise GpuperfError(f"{where}: no time_s, and {len(found)} time columns ({', '.join(found)}): which one is the "
                           "measured time is ambiguous; keep one, or give the time in seconds as time_s")
    return found[0] if found else TARGET


def measured_rows(frame: pd.DataFrame, where: str, target: str = TARGET, other_units: bool = False) -> pd.DataFrame:
    """The rows with status ok (any case; all rows if there is no status), each with a positive,
    finite time in ``target`` (as floats); errors name ``where`` and the row at fault.
    ``other_units``: a table without ``time_s`` may hold the time in ``time_ms``, ``time_us`` or
    ``time_ns`` (:func:`time_column`), converted to seconds in ``time_s`` with a
    :class:`~gpuperf.errors.GpuperfNote` naming the column (the table read is not changed)."""
    source = time_column(frame, where) if other_units and target == TARGET else target
    if source != target:
        kept = measured_rows(frame, where, source)
        kept[target] = to_seconds(kept[source], TIME_IN_UNITS[source], where)
        warnings.warn(GpuperfNote(f"{where}: the measured time is {source}, taken as time_s in seconds "
                                  f"({TIME_IN_UNITS[source]} converted)"), stacklevel=2)
        return kept
    if target not in frame.columns:
        other = next((str(c) for c in frame.columns if str(c).lower() in ("time_ms", "time_us", "time_ns", "time",
                                                                          "runtime")), None)
        hint = f"; the table has {other}: give the time in seconds as {TARGET}" if other and target == TARGET else ""
        raise GpuperfError(f"{where}: missing column {target} (the measured time"
                           + (" in seconds)" if target == TARGET else ")") + hint)
    kept = frame[is_ok(frame[STATUS])] if STATUS in frame.columns else frame
    if kept.empty:
        raise GpuperfError(f"{where}: no rows with status ok")
    times = pd.to_numeric(kept[target], errors="coerce").to_numpy(dtype=float)
    bad = ~(np.isfinite(times) & (times > 0))
    if bad.any():
        position = int(bad.nonzero()[0][0])
        value = kept[target].iloc[position]
        value = value.item() if isinstance(value, np.generic) else value
        if pd.isna(value):
            raise GpuperfError(f"{where}: {row_location(kept, position)}: {target} has no value (empty or NaN) in a row whose status is ok")
        comma = isinstance(value, str) and re.fullmatch(r"\s*\d+,\d+\s*", value) is not None
        raise GpuperfError(f"{where}: {row_location(kept, position)}: {target}={value!r} is not a positive number"
                           + ("; a decimal comma? save the number with a decimal point" if comma else ""))
    kept = kept.copy()
    kept[target] = times
    return kept


def check_dataset(frame: pd.DataFrame, where: str, require_time: bool = True) -> pd.DataFrame:
    """Validate a dataset table; errors name ``where`` (a file) and the row or column at fault.

    With ``require_time`` every row whose status is ok must have a positive, finite ``time_s``.
    """
    require_frame(frame, where)
    missing = [c for c in ("kernel", TARGET) if c not in frame.columns]
    if missing:
        raise GpuperfError(f"{where}: missing column(s) {', '.join(missing)}")
    if require_time:
        ok = is_ok(frame[STATUS]) if STATUS in frame.columns else pd.Series(True, index=frame.index)
        times = pd.to_numeric(frame[TARGET], errors="coerce")
        bad = ok & ~((times > 0) & np.isfinite(times))
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            value = frame[TARGET].iloc[row]
            value = value.item() if isinstance(value, np.generic) else value
            raise GpuperfError(f"{where}: {row_location(frame, row)}: time_s={value!r} is not a positive number")
    return frame


# -- helpers shared by the bundled tables and the importers ------------------------------------

# Each time unit as the power of ten that takes it to seconds.
SECONDS_EXPONENT = {
    "s": 0, "sec": 0, "second": 0, "seconds": 0,
    "ms": -3, "msec": -3, "msecond": -3,
    "us": -6, "usec": -6, "usecond": -6, "\u00b5s": -6, "\u03bcs": -6,
    "ns": -9, "nsec": -9, "nsecond": -9,
}


def seconds_exponent(unit: str, where: str) -> int:
    """The power of ten taking ``unit`` to seconds (``ms`` -> -3); unknown units are an error."""
    try:
        return SECONDS_EXPONENT[unit.strip()]
    except KeyError:
        known = ", ".join(sorted(SECONDS_EXPONENT))
        raise GpuperfError(f"{where}: unknown time unit {unit!r} (known: {known})") from None


def shift_decimal(value: float, exponent: int) -> float:
    """``value * 10**exponent`` as the float nearest to the shifted decimal (``3.87533`` ms -> ``0.00387533`` s).

    Moving the decimal point in the text, rather than multiplying floats, keeps a converted time
    exactly the published number in its new unit.
    """
    value = float(value)
    if exponent == 0 or not math.isfinite(value):
        return value
    mantissa, _, own = repr(value).partition("e")
    return float(f"{mantissa}e{int(own) + exponent}" if own else f"{mantissa}e{exponent}")


def to_seconds(values: pd.Series, unit: str, where: str) -> pd.Series:
    """Numeric ``values`` in ``unit`` as seconds (see ``shift_decimal``)."""
    exponent = seconds_exponent(unit, where)
    if exponent == 0:
        return values.astype(float)
    shifted = [shift_decimal(v, exponent) for v in values.astype(float).tolist()]
    return pd.Series(shifted, index=values.index, dtype=float)


def format_value(value: object) -> str:
    """A parameter value as text: integral floats without ``.0`` (``16.0`` -> ``16``)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def key_text(value: object) -> str:
    """A parameter value as the text configurations are matched on, the same whatever type a table
    gave it: 16, 16.0, np.int64(16) and "16.0" are "16"; True and "true" are "1"; a tuple (a Kernel
    Tuner cache's list [1, 1], its key's "(1, 1)", the text "[1, 1]" a CSV holds) is '"(1, 1)"'."""
    if isinstance(value, np.generic):
        value = value.item()
    value = as_sequence(value)
    if isinstance(value, tuple):
        inner = ", ".join(key_text(item) for item in value) + ("," if len(value) == 1 else "")
        return f'"({inner})"'  # quoted as a cell holding commas is
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in ("true", "false"):
            return "1" if text.lower() == "true" else "0"
        try:
            number = float(text)
        except ValueError:  # quoted as a CSV cell where the join could blur it: "16,16",x is not 16,"16,x"
            return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"') else text
        value = number if np.isfinite(number) else text
    if isinstance(value, bool):
        return str(int(value))
    return format_value(value)


def text_cells(column: pd.Series) -> pd.Series:
    """``column``'s cells as text, an empty cell as "" (a column read from a CSV with every cell empty is
    float NaN, which takes no text fill: hence object first)."""
    return column.astype(object).fillna("").astype(str)


def as_sequence(value: object) -> object:
    """A list, or a text spelling a tuple or list of literals (``"(1, 1)"``, ``"[1, 1]"``), as a tuple;
    anything else as it is."""
    text = value.strip() if isinstance(value, str) else ""
    if text[:1] in ("(", "[") and text[-1:] in (")", "]"):
        try:
            parsed = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
        value = parsed if isinstance(parsed, (tuple, list)) else value
    return tuple(value) if isinstance(value, list) else value


def texts_by_value(column: pd.Series, to_text: Callable[[object], str]) -> pd.Series:
    """``to_text`` of each value of ``column``, worked out once per distinct value of a typed column
    (value by value in an object column, whose equal values, such as True and 1, may differ in text)."""
    if column.dtype == object:
        return column.map(to_text).astype(str)
    codes, uniques = pd.factorize(column)  # missing values get code -1
    texts = np.array([to_text(value) for value in uniques] + [""], dtype=object)[codes]
    missing = np.flatnonzero(codes < 0)
    texts[missing] = [to_text(value) for value in column.iloc[missing]]
    return pd.Series(texts, index=column.index, dtype=object).astype(str)


def variant_parameters(frame: pd.DataFrame) -> list[str]:
    """The parameter names in the table's ``variant`` labels (``a=1,b=2``), none without them."""
    if "variant" not in frame.columns:
        return []
    labels = frame["variant"].dropna().astype(str).unique()
    return sorted({name for label in labels for name in re.findall(r"(?:^|,)([^=,]+)=", label)})


def variant_labels(frame: pd.DataFrame, params: list[str]) -> pd.Series:
    """Per row, the ``a=1,b=2`` label of its non-missing ``params`` (sorted by name, as kernels do)."""
    names = sorted(params)
    if not names or frame.empty:
        return pd.Series("", index=frame.index, dtype=object)
    codes = frame.groupby(names, dropna=False, sort=False).ngroup().to_numpy()
    _, first = np.unique(codes, return_index=True)
    unique_rows = frame[names].iloc[first]
    texts = []
    for name in names:
        column = unique_rows[name]
        text = {v: f"{name}={format_value(v)}" for v in column.dropna().unique()}
        texts.append(column.map(text).astype(object).where(column.notna(), None).tolist())
    labels = [",".join(filter(None, parts)) for parts in zip(*texts)]
    return pd.Series(np.asarray(labels, dtype=object)[codes], index=frame.index, dtype=object)


def _name_text(name: object) -> str:
    return "" if name is None or (isinstance(name, float) and name != name) else str(name).strip()


def lookup_gpu(name: object) -> str | None:
    """The GPU descriptor file's canonical name for ``name``, or None when it names no known GPU."""
    text = _name_text(name)
    return canonical_gpu_name(text) if text else None


def canonical_gpu(name: object) -> str:
    """The canonical GPU name for ``name``; an unknown GPU keeps its name as given."""
    return lookup_gpu(name) or _name_text(name)


def canonical_gpus(names: pd.Series) -> pd.Series:
    """Each GPU name canonical (one GPU spelt two ways, ``Tesla V100`` and ``V100``, is one); a GPU
    the descriptors do not describe takes the first of its spellings in the table (sorted), spellings
    matched as descriptors' are (case, spaces, '-', '_' and the brand words a driver puts first:
    ``NVIDIA GeForce RTX 4070`` is ``RTX 4070``); a missing one stays missing."""
    from gpuperf.hardware.specs import spelling_key

    texts = {name: _name_text(name) for name in names.dropna().unique()}  # each name once, not each row
    first: dict[str, str] = {}
    for text in sorted(set(texts.values())):
        if text and lookup_gpu(text) is None:
            first.setdefault(spelling_key(text), text)
    canonical = {name: (lookup_gpu(text) or first[spelling_key(text)]) if text else text for name, text in texts.items()}
    return names.map(canonical).where(names.notna(), names)


def order_columns(frame: pd.DataFrame, params: list[str]) -> pd.DataFrame:
    """Keys first, then the parameters, the target and status, then everything else."""
    first = [c for c in (*KEY_COLUMNS, *params, TARGET, STATUS) if c in frame.columns]
    return frame[first + [c for c in frame.columns if c not in first]]


def count_columns(frame: pd.DataFrame) -> list[str]:
    """The columns of ``frame`` that gpuperf writes as whole numbers where every value is one: those
    that count something (:data:`COUNT_COLUMNS`), and its parameters (``frame.attrs["parameters"]``,
    the names in its ``variant`` labels) that empty cells made floats. A parameter given as floats
    with none missing (a Kernel Tuner cache's ``1.0, 2.0``, which its keys spell so) is left as given."""
    parameters = {*frame.attrs.get("parameters", []), *variant_parameters(frame)}
    counts = []
    for column in frame.columns:
        values = frame[column]
        if not isinstance(values, pd.Series):  # a name two columns share: left as they are
            continue
        if column in parameters:
            if values.isna().any():
                counts.append(column)
        elif column in COUNT_COLUMNS:
            counts.append(column)
    return counts


def with_whole_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as gpuperf writes it: each of its :func:`count_columns` whose values are all whole
    numbers as integers (in a copy where any is; measured quantities as they are)."""
    return with_whole_numbers(frame, count_columns(frame))
