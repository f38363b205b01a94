"""A measured variant space: one kernel on one GPU, its tunable parameters and measured times.

Configurations are matched across spaces (the same kernel measured on other GPUs) by their
parameter values, with ``16`` and ``16.0`` counted as one value. Failed configurations stay in
the space (a search pays for trying them) with a NaN time. A space may name its GPU (a ``gpu``
column of one value): exploration then weighs other GPUs' data by how alike the GPUs are.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from gpuperf.datasets.schema import (
    ROW_NUMBERING, canonical_gpu, key_text, lookup_gpu, require_frame, row_location, text_cells, texts_by_value,
    variant_parameters,
)
from gpuperf.datasets.schema import as_sequence as _sequence
from gpuperf.decisions.search_metrics import normalised_performance
from gpuperf.errors import GpuperfError, GpuperfNote, counted, did_you_mean, listed, refuse_one_string, unknown_name_error

FAILED_STATUSES_OK = {"ok", "OK", "Ok"}
# Kernel Tuner's names for a configuration that failed, accepted in a time column.
FAILURE_NAMES = ("ErrorConfig", "InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig")
TIME_COLUMNS = ("time_ms", "time_s", "time")
GPU_COLUMN = "gpu"
GPU_LABEL = "gpu_label"  # a campaign's own name for its GPU, where two campaigns ran on one GPU model


@dataclass
class Space:
    """Configurations (one row each) with their measured times (NaN: failed)."""

    params: list[str]
    configs: pd.DataFrame
    times: np.ndarray
    where: str = ""
    extra: pd.DataFrame = field(default_factory=pd.DataFrame)  # other per-row columns (compile time, ...)
    gpu: str | None = None  # the GPU it was measured on, where known
    time_column: str | None = None  # the table column the times came from (their unit: time_ms, time_s, ...)
    float_params: frozenset[str] = frozenset()  # whose whole floats stay floats: a cache's floats (1.0 is no 1)

    def __post_init__(self) -> None:
        self.times = np.array(self.times, dtype=float)

    def __len__(self) -> int:
        return len(self.times)

    def __repr__(self) -> str:
        failed = int(np.isnan(self.times).sum())
        on = f" on {self.gpu}" if self.gpu else ""
        return (f"Space({self.where!r}{on}: {len(self)} configurations of {', '.join(self.params)}, "
                f"{failed} failed)")

    @property
    def performance(self) -> np.ndarray:
        return normalised_performance(self.times)

    @property
    def best_time(self) -> float:
        return float(np.nanmin(self.times))

    def keys(self) -> pd.Series:
        """One text key per configuration (parameter values as written, ``,``-joined)."""
        return configuration_keys(self.configs, self.params)

    def tuning_cost(self) -> np.ndarray | None:
        """Compile + benchmark seconds per configuration, where the data records them (else None)."""
        if not {"compile_time_s", "benchmark_time_s"} <= set(self.extra.columns):
            return None
        return (self.extra["compile_time_s"] + self.extra["benchmark_time_s"]).to_numpy(dtype=float)

    def without_failures(self) -> "Space":
        """The configurations that ran (as Kernel Tuner's simulation mode searches a cache)."""
        keep = np.flatnonzero(np.isfinite(self.times))
        extra = self.extra.iloc[keep].reset_index(drop=True) if len(self.extra.columns) else self.extra
        configs = self.configs.iloc[keep].reset_index(drop=True)
        return Space(self.params, configs, self.times[keep], self.where, extra, self.gpu, self.time_column,
                     self.float_params)

    def config(self, index: int) -> dict[str, object]:
        """Configuration ``index`` as ``{param: value}`` in plain Python values, as the table gave them: a
        parameter holding a fraction keeps its floats (0.5, 1.0, 2.0), and so does a Kernel Tuner cache's
        (``float_params``: JSON spells 2.0 as a float, and Kernel Tuner keys it so), another's whole floats
        are ints (a table's integer column made float by other rows' gaps); the setting None (a cache's
        null, read as the text "None") is None."""
        fractional = self._fractional_params()
        return {p: _setting(self.configs[p].iloc[index], p in fractional) for p in self.params}

    def _fractional_params(self) -> set[str]:
        """The parameters with a float value that is not whole (worked out once per configs table)."""
        if getattr(self, "_fractional", (None,))[0] is not self.configs:
            self._fractional = (self.configs, {p for p in self.params
                                               if p in self.float_params or _holds_fraction(self.configs[p])})
        return self._fractional[1]


def _holds_fraction(values: pd.Series) -> bool:
    """Whether ``values`` hold a finite float that is not whole."""
    numbers = [v for v in values.unique() if isinstance(v, (float, np.floating)) and np.isfinite(v)]
    return any(not float(v).is_integer() for v in numbers)


def shown_configuration(configs: pd.DataFrame, params: Sequence[str], row: int) -> str:
    """Configuration ``row`` (a position) of ``configs`` as a message names it: its values joined by
    commas as the table or cache spells them (``256,0.5,True,"a"``, as a Kernel Tuner cache key),
    not in the matching text of :func:`key_text`."""
    values = [_setting(configs[p].iloc[row], _holds_fraction(configs[p])) for p in params]
    return ",".join("None" if value is None else str(value) for value in values)


def _setting(value: object, fractional: bool) -> object:
    """A parameter's value as :meth:`Space.config` gives it (``fractional``: its floats stay floats)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, str) and value == "None":
        return None
    return value if fractional and isinstance(value, float) else plain_value(value)


def plain_value(value: object) -> object:
    """A NumPy scalar as a plain Python value; whole floats as ints."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def size_text(value: object) -> str:
    """A problem size as :func:`key_text` spells it, one of one dimension (``[100000]``, ``(100000,)``)
    as its number: Kernel Tuner takes a size ``n`` for ``(n,)``."""
    if isinstance(value, np.generic):
        value = value.item()
    value = _sequence(value)
    return key_text(value[0] if isinstance(value, tuple) and len(value) == 1 else value)


def configuration_keys(configs: pd.DataFrame, params: Sequence[str]) -> pd.Series:
    """Per configuration, its parameter values joined by commas (see :func:`key_text`; a value holding
    a comma or a quote is quoted, so no two configurations share a key)."""
    texts = [texts_by_value(configs[p], key_text) for p in params]
    if not texts:
        return pd.Series("", index=configs.index)
    key = texts[0]
    for text in texts[1:]:
        key = key + "," + text
    return key


def space_from_frame(
    frame: pd.DataFrame,
    params: Sequence[str],
    target: str,
    where: str,
    status_column: str | None = "status",
    all_failed: bool = False,
) -> Space:
    """A space from a table: ``params`` columns and a ``target`` time column (any unit); one whose
    every configuration failed is :class:`AllFailed` unless ``all_failed`` takes it (ask's: all ran).

    A row is a failed configuration when its ``status`` (if the table has one) is not ``ok``
    or its time is one of Kernel Tuner's failure names; every other time must be a positive
    number. A ``gpu`` column, if any, must hold one GPU name. Errors name ``where`` and the row
    (:func:`~gpuperf.datasets.schema.row_location`) or column at fault.
    """
    refuse_one_string(params, "params", where)
    params = list(params)
    require_frame(frame, where)
    if frame.empty:
        raise GpuperfError(f"{where}: the table has no rows")
    if not params:
        raise GpuperfError(f"{where}: no parameters given (--params P1,P2,...)")
    repeated = sorted({p for p in params if params.count(p) > 1})
    if repeated:
        raise GpuperfError(f"{where}: parameter {repeated[0]} is named twice in --params")
    if target in params:
        raise GpuperfError(f"{where}: {target} is both the time explored and a parameter; --params names what "
                           "was tuned, --target the time")
    timed = [p for p in params if p in TIME_COLUMNS]
    if timed:
        raise GpuperfError(f"{where}: {timed[0]} is a measured time, not a parameter (--params names what was tuned)")
    if status_column in params:  # a space is not split by kernel, GPU or size, but its status says what failed
        refuse_key_parameters([status_column], where, status_column)
    require_parameter_columns(frame.columns, params, where)
    if target not in frame.columns:
        seconds = "time_s" if target == "time" else f"{target}_s"  # a cache's ms fields are read as seconds
        read_as = (f" (a Kernel Tuner cache's {target}, in ms, is read as {seconds}, in seconds: --target {seconds})"
                   if seconds in frame.columns else held_times_hint(frame, target, params))
        raise GpuperfError(f"{where}: missing time column '{target}'{read_as}")
    if looks_like_rate(target):
        raise GpuperfError(f"{where}: --target {target} looks like a rate (higher is better), but gpuperf's "
                           "searches minimise a time; name a time column")
    frame = without_unparameterised_rows(frame, params, where)
    gpu = _gpu_name(frame, where)
    for p in params:
        empty = frame[p].isna().to_numpy()
        if empty.any():
            raise GpuperfError(f"{where}: {row_location(frame, int(np.flatnonzero(empty)[0]))}: parameter {p} has no "
                               f"value{_several_kernels(frame)}")
    failed = np.zeros(len(frame), dtype=bool)
    if status_column and status_column in frame.columns:
        statuses = frame[status_column].astype(object).fillna("ok")  # an empty column: float NaN
        failed |= ~statuses.astype(str).str.strip().isin(FAILED_STATUSES_OK).to_numpy()
    raw = frame[target]
    failed |= raw.astype(str).str.strip().isin(FAILURE_NAMES).to_numpy()
    times = np.array(pd.to_numeric(raw, errors="coerce"), dtype=float)
    bad = ~failed & ~(np.isfinite(times) & (times > 0))
    if bad.any():
        raise _bad_time_error(frame, target, int(np.flatnonzero(bad)[0]), where, status_column)
    times[failed] = np.nan
    if np.all(failed) and not all_failed:
        raise AllFailed(f"{where}: every configuration failed; no time to explore or learn from")
    configs = frame[params].reset_index(drop=True)
    keys = configuration_keys(configs, params)
    duplicated = keys.duplicated().to_numpy()
    if duplicated.any():
        row = int(np.flatnonzero(duplicated)[0])
        raise GpuperfError(
            f"{where}: {row_location(frame, row)}: configuration {shown_configuration(configs, params, row)} appears "
            "twice" + _spelt_otherwise(frame, configs, params, keys, row)
            + _why_twice(frame.reset_index(drop=True), keys, row, [*params, target]))
    extra = frame.drop(columns=[c for c in (*params, target) if c in frame.columns]).reset_index(drop=True)
    return Space(params, configs, times, where, extra, gpu, target, _cache_floats(frame, params))


def _cache_floats(frame: pd.DataFrame, params: Sequence[str]) -> frozenset[str]:
    """The parameters of a Kernel Tuner cache's rows (numbered by entry) that hold floats: JSON keeps
    2.0 apart from 2, as Kernel Tuner's keys do (``32,2.0``), so a whole float there is a float."""
    if frame.attrs.get(ROW_NUMBERING) != "entry":
        return frozenset()
    return frozenset(p for p in params if pd.api.types.is_float_dtype(frame[p]))


def differing_columns(frame: pd.DataFrame, keys: pd.Series, row: int, used: Sequence[str],
                      outcomes: Sequence[str] = ("variant",)) -> list[str]:
    """The columns other than ``used`` in which the rows with ``row``'s configuration key differ,
    leaving out what was measured (times, rates, a status, ``outcomes``) rather than how they differ."""
    from gpuperf.datasets.schema import MEASUREMENT_OUTCOMES, STATUS

    same = frame[keys == keys.iloc[row]].drop(columns=[c for c in used if c in frame.columns])
    measured = {*outcomes, STATUS, *MEASUREMENT_OUTCOMES}
    return [str(c) for c in same.columns
            if same[c].astype(str).nunique() > 1 and str(c) not in measured
            and not str(c).startswith("time") and not str(c).endswith("_s") and not looks_like_rate(c)]


def _bad_time_error(frame: pd.DataFrame, target: str, row: int, where: str,
                    status_column: str | None = "status") -> GpuperfError:
    """The error for row ``row``'s time: empty (a configuration not measured yet) or not a positive number."""
    value = frame[target].iloc[row]
    at = f"{where}: {row_location(frame, row)}"
    status = frame[status_column].iloc[row] if status_column in frame.columns else None
    empty = pd.isna(value) or not str(value).strip()
    if empty and not pd.isna(status) and str(status).strip():
        return GpuperfError(f"{at}: {target} is empty though its status is {str(status).strip()!r} (a configuration "
                            "that ran needs its time; one that failed, a status other than ok)")
    if empty:
        return GpuperfError(f"{at}: {target} is empty (a configuration not measured yet: every one needs its time "
                            "or a failure here; gpuperf ask names what to measure next in a space measured so far)")
    return GpuperfError(f"{at}: {target}={plain_value(value)!r} is not a positive number "
                        f"(nor a failure: a status other than ok, or {', '.join(FAILURE_NAMES)})")


# A unit of work or data, then a second, as a column name spells a rate without "/": GB_s, GBps,
# items_s, Mpixels_sec (a bare "b" needs its prefix: kb, MB, GiB; a time such as time_s names no unit).
_RATE_SPELLING = re.compile(r"(?:^|[^a-z])(?:[kmgtpe]i?b|(?:[kmgtpe]i?)?(?:bytes?|ops?|items?|pts?|pixels?|elements?))"
                            r"(?:[_ ](?:s|sec)|ps)$")
# A rate per a shorter time unit: items/ms, GB_per_ms, elements per us (ms_per_iter, a time, is none).
_PER_SHORT_TIME = re.compile(r"(?:/|(?:^|[_\W])per[_\W]*)(?:ms|msec|us|usec|µs|ns|nsec|millisecond|microsecond"
                             r"|nanosecond)s?$")
# A time in a unit as a quantity over its unit spells it (time/ms, t/us, duration/s, median/ms, wall/us): no rate.
_TIME_OVER_UNIT = re.compile(r"(?:^|[_\W])(?:t|time|times|duration|elapsed|runtime|latency|wall|walltime"
                             r"|mean|median|med|avg|average|min|max|best)\s*/\s*"
                             r"(?:s|sec|secs|seconds|ms|msec|us|usec|µs|ns|nsec)$")


def looks_like_rate(column: str) -> bool:
    """A column whose name says higher is better (``GFLOP/s``, ``GFLOP_s``, ``gflops``, ``GB_s``,
    ``GBps``, ``bytes_per_second``, ``items_per_s``, ``items/ms``, ``GB_per_ms``, ``GFLOPS/W`` (Kernel
    Tuner's energy metric), ``TOPS``, ``MIPS``, ``MLUPS``, ``GUPS``, ``FPS``, ``throughput``, ``bandwidth``,
    ``speedup``, ``efficiency``); a time (``time_s``, ``duration_us``, ``ms_per_iter``, ``time/ms``) is none."""
    from gpuperf.evaluation.feature_columns import THROUGHPUT_ABBREVIATION

    name = str(column).lower().strip()
    if _TIME_OVER_UNIT.search(name):
        return False
    return (name.endswith(("/s", "/sec", "per_second", "per_sec", "_per_s", "/w", "per_watt", "per_joule", "/j"))
            or _RATE_SPELLING.search(name) is not None or _PER_SHORT_TIME.search(name) is not None
            or THROUGHPUT_ABBREVIATION.search(name) is not None
            or any(word in name for word in ("flop", "throughput", "bandwidth", "speedup", "efficiency")))


def without_unparameterised_rows(frame: pd.DataFrame, params: Sequence[str], where: str) -> pd.DataFrame:
    """``frame`` without the rows that have none of ``params`` (a kernel measured as itself beside
    its variant space, as a campaign does), with a note; a row with only some is kept (an error)."""
    none = unparameterised_rows(frame, params)
    if none.any():
        _note_unparameterised(frame, none, where)
    return frame[~none]


def unparameterised_rows(frame: pd.DataFrame, params: Sequence[str]) -> np.ndarray:
    """Which rows have none of ``params`` (none where a column is missing or every row lacks them all)."""
    if any(p not in frame.columns for p in params):
        return np.zeros(len(frame), dtype=bool)
    none = frame[list(params)].isna().all(axis=1).to_numpy()
    return none if not none.all() else np.zeros(len(frame), dtype=bool)


def empty_cells(values: pd.Series) -> np.ndarray:
    """Which cells hold nothing: missing, or only spaces."""
    return (values.isna() | values.astype(str).str.strip().eq("")).to_numpy()


def unmeasured_rows(frame: pd.DataFrame, target: str | None, status_column: str = "status") -> np.ndarray:
    """Rows not measured yet: no time in ``target`` (an empty cell, or no such column) and no status."""
    pending = empty_cells(frame[target]) if target in frame.columns else np.ones(len(frame), dtype=bool)
    if status_column in frame.columns:
        pending = pending & empty_cells(frame[status_column])
    return pending


def _note_unparameterised(frame: pd.DataFrame, none: np.ndarray, where: str) -> None:
    warnings.warn(f"{where}: left out {counted(int(none.sum()), 'row')} with none of the parameters (first: "
                  f"{row_location(frame, int(np.flatnonzero(none)[0]))}; {_what_unparameterised(frame, none)})",
                  GpuperfNote, stacklevel=4)


def _what_unparameterised(frame: pd.DataFrame, none: np.ndarray) -> str:
    """What rows without the parameters are: the kernel measured as itself, or other kernels' rows."""
    if "kernel" not in frame.columns:
        return "the kernel measured as itself, not as a variant"
    kernels = frame["kernel"].to_numpy(dtype=object)
    others = sorted({str(k) for k in kernels[none] if not pd.isna(k)} - {str(k) for k in kernels[~none]})
    if not others:
        return "the kernel measured as itself, not as a variant"
    return f"other kernels' rows ({_first_names(others)}); --kernel picks one"


def _first_names(names: Sequence[str], shown: int = 4) -> str:
    return ", ".join(names[:shown]) + (", ..." if len(names) > shown else "")


def _several_kernels(frame: pd.DataFrame) -> str:
    """A hint where the table holds several kernels (each with its own parameters), else ""."""
    if "kernel" not in frame.columns:
        return ""
    kernels = sorted(frame["kernel"].dropna().astype(str).unique())
    if len(kernels) < 2:
        return ""
    return f" (the table holds {len(kernels)} kernels, {_first_names(kernels)}: pick one with --kernel)"


def _spelt_otherwise(frame: pd.DataFrame, configs: pd.DataFrame, params: Sequence[str], keys: pd.Series,
                     row: int) -> str:
    """Where repeated configuration ``row`` is spelt otherwise at its first row (``32,01`` and ``32,1``), that
    row: configurations match by value, so the two are one; else ""."""
    first = int(np.flatnonzero((keys == keys.iloc[row]).to_numpy())[0])
    shown = shown_configuration(configs, params, first)
    if shown == shown_configuration(configs, params, row):
        return ""
    return (f" (as {row_location(frame, first)}'s {shown}: configurations match by value, so 1, 01 and 1.0 are one "
            "setting)")


def _why_twice(frame: pd.DataFrame, keys: pd.Series, row: int, used: list[str]) -> str:
    """The columns in which the rows of a repeated configuration differ: a parameter left out of
    --params, or a second kernel or problem size in one table."""
    differing = differing_columns(frame, keys, row, used)
    if not differing:
        return ""
    return (f" (its rows differ in {', '.join(differing[:3])}: a parameter not among those searched (named by "
            "--params, a cache's tune_params_keys or a table's variant labels), or one table holding several: explore "
            f"and ask pick one with --kernel, --gpu and a size with -p, e.g. {_size_example(frame, row, differing)})")


NOT_SIZES = ("kernel", GPU_COLUMN, GPU_LABEL, "device", "source", "kernel_spec", "kernel_full_name")


def _size_example(frame: pd.DataFrame, row: int, differing: Sequence[str]) -> str:
    """``-p NAME=VALUE`` picking ``row``'s value of the first ``differing`` column that may be a size (no
    kernel, GPU or file name), quoted where it holds a space (``-p "problem_size=[2048, 2048]"``); else
    ``-p n=1024``."""
    sizes = [column for column in differing if column not in NOT_SIZES]
    if not sizes:
        return "-p n=1024"
    text = f"{sizes[0]}={frame[sizes[0]].iloc[row]}"
    return f'-p "{text}"' if " " in text else f"-p {text}"


def _gpu_name(frame: pd.DataFrame, where: str) -> str | None:
    """The one value of the table's ``gpu`` column (None without one)."""
    if GPU_COLUMN not in frame.columns:
        return None
    names = frame[GPU_COLUMN].dropna().astype(str).str.strip()
    names = names[names != ""].unique()  # Kernel Tuner 1.5 writes an empty device name
    if len({canonical_gpu(name) for name in names}) > 1:
        raise GpuperfError(f"{where}: column {GPU_COLUMN} names {len(names)} GPUs ({listed(list(names), 3)}); one table "
                           "per GPU (explore and ask pick one with --gpu)")
    return names[0] if len(names) else None


def read_table(path: str | Path) -> pd.DataFrame:
    """A CSV (plain or gzip) or Parquet table, or a bundled dataset by name (in the dataset shape:
    ``time_s``), its GPUs by their canonical names; missing or unreadable files are one clear error."""
    from gpuperf.datasets import BUNDLED, load_dataset
    from gpuperf.datasets.bundled import bundled_dataset_at, data_table
    from gpuperf.datasets.schema import canonical_gpus
    from gpuperf.datasets.tables import read_table_file

    if not Path(path).exists() and str(path) in BUNDLED:
        frame = load_dataset(str(path))
    else:
        path = data_table(path)  # data/NAME.csv.gz outside a checkout: the bundled data's file of that name
        bundled = bundled_dataset_at(path)
        frame = load_dataset(bundled) if bundled else read_table_file(path)  # a bundled file by path: as by name
    if "gpu" in frame.columns:
        frame = frame.assign(gpu=canonical_gpus(frame["gpu"]))  # one GPU spelt two ways is one GPU
    return frame


def default_target(frame: pd.DataFrame, where: str, params: Sequence[str] = ()) -> str:
    """The first of ``time_ms``, ``time_s``, ``time`` the table has (else an error naming a column that
    holds values under a time's name, :func:`unnamed_time_column`; an error where it is empty and another
    holds times, :func:`refuse_empty_time_column`)."""
    for name in TIME_COLUMNS:
        if name in frame.columns:
            refuse_empty_time_column(frame, name, where)
            return name
    column = unnamed_time_column(frame, params)
    if column is not None:
        raise unnamed_times_error(where, column)
    raise GpuperfError(f"{where}: no time column ({', '.join(TIME_COLUMNS)}); name it with --target")


def refuse_empty_time_column(frame: pd.DataFrame, target: str, where: str, times: str = "the times",
                             remedy: str | None = None) -> None:
    """An error when the time column ``target`` is empty while another of ``TIME_COLUMNS`` holds times (a
    ``time_ms`` column left empty beside the ``time_s`` filled in): every row would read as not measured yet.
    ``remedy`` says what to do (default: name the other column with ``--target``)."""
    if target not in frame.columns or not empty_cells(frame[target]).all():
        return
    held = next((c for c in TIME_COLUMNS if c != target and c in frame.columns and not empty_cells(frame[c]).all()),
                None)
    if held is not None:
        raise GpuperfError(f"{where}: time column {target} is empty but {held} holds values; "
                           + (remedy or f"--target {held} names it if it holds {times}"))


def unnamed_time_column(frame: pd.DataFrame, params: Sequence[str]) -> str | None:
    """The first column of ``frame``, no parameter, that holds values under a time's name (``runtime_ms``,
    ``time_us``, ``duration``) or a near spelling of one of ``TIME_COLUMNS``: a table's times under
    another name."""
    from gpuperf.evaluation.feature_columns import TIME_NAMED

    for column in (str(c) for c in frame.columns if c not in params):
        named = TIME_NAMED.search(column) or difflib.get_close_matches(column, TIME_COLUMNS, n=1, cutoff=0.8)
        if named and not empty_cells(frame[column]).all():
            return column
    return None


def unnamed_times_error(where: str, column: str, times: str = "the times") -> GpuperfError:
    """The error for a table with none of ``TIME_COLUMNS`` whose ``column`` looks like ``times``."""
    return GpuperfError(f"{where}: no time column ({', '.join(TIME_COLUMNS)}), but column {column} holds values; "
                        f"--target {column} names it if it holds {times}")


def held_times_hint(frame: pd.DataFrame, target: str, params: Sequence[str], times: str = "the times") -> str:
    """For a ``--target`` that is no column: the table's columns that may hold ``times`` instead (one of
    ``TIME_COLUMNS``, or a near spelling of ``target``) as a hint, or "" where it has none."""
    names = [str(c) for c in frame.columns if c not in params]
    held = [c for c in names if c in TIME_COLUMNS] + difflib.get_close_matches(target, names, n=2, cutoff=0.8)
    if not held:
        return ""
    return f" (the table has {', '.join(dict.fromkeys(held))}); --target names the column {times} are in"


def require_parameter_columns(columns: Sequence[object], params: Sequence[str], where: str) -> None:
    """One error naming every parameter of ``params`` that is none of ``columns`` (with the nearest
    column names for the first)."""
    missing = [p for p in params if p not in columns]
    if missing:
        hint = did_you_mean(missing[0], [c for c in columns if c not in params])
        raise GpuperfError(f"{where}: missing parameter column(s) {', '.join(missing)}{hint}")


def with_literal_texts(frame: pd.DataFrame, path: str | Path, columns: Sequence[str],
                       times: Sequence[str] = ()) -> pd.DataFrame:
    """``frame``, read from the CSV file ``path`` (its index labels: row positions in the file), with
    the words pandas reads as missing (``None``, ``NA``, ``null``, ``N/A``, ...) back as text in
    ``columns``: a tuning parameter may take the value None, as Kernel Tuner writes it. An empty
    cell, or ``nan``, stays missing. In the time columns ``times`` only an empty cell is missing (no
    time yet): ``nan`` or ``NA`` there is text, which no time check takes for a time."""
    from gpuperf.datasets.kernel_tuner import CACHE_SUFFIXES
    from gpuperf.datasets.tables import PARQUET_SUFFIXES

    from gpuperf.datasets.bundled import bundled_dataset_at, data_table

    path = data_table(path)  # the file read_table read
    name = path.name.lower()
    if not path.is_file() or name.endswith((*PARQUET_SUFFIXES, *CACHE_SUFFIXES)) or bundled_dataset_at(path):
        return frame  # a bundled table's file was read as the dataset, not as its rows
    wanted = [c for c in dict.fromkeys([*columns, *times]) if c in frame.columns and frame[c].isna().any()]
    if not wanted or not frame.index.is_unique or not pd.api.types.is_integer_dtype(frame.index):
        return frame
    from gpuperf.datasets.tables import read_csv

    raw = read_csv(path, dtype=str, keep_default_na=False)  # as the table was read (UTF-16 too), all text
    raw.columns = [str(c).strip() for c in raw.columns]
    if len(frame) and (frame.index.min() < 0 or frame.index.max() >= len(raw)):
        return frame
    frame = frame.copy()
    for column in (c for c in wanted if c in raw.columns):
        texts = raw[column].iloc[frame.index.to_numpy()].str.strip()
        literal = frame[column].isna().to_numpy() & texts.ne("").to_numpy()
        if column not in times:
            literal &= texts.str.lower().ne("nan").to_numpy()
        if literal.any():
            values = frame[column].astype(object).to_numpy(copy=True)
            values[literal] = texts.to_numpy()[literal]
            frame[column] = values
    return frame


def _training_target(frame: pd.DataFrame, target: str | None, where: str) -> str:
    """A training table's time column where it lacks ``target`` (the space's): the first of
    ``TIME_COLUMNS`` it has, else an error saying what to rename (``--target`` names the space's)."""
    for name in TIME_COLUMNS:
        if name in frame.columns:
            return name
    named = f"{target} or one of " if target else ""
    raise GpuperfError(f"{where}: no time column ({named}{', '.join(TIME_COLUMNS)}) in this training table; --target "
                       "names the space's time column, so rename this table's to one of these")


def is_kernel_tuner_cache(path: str | Path) -> bool:
    """A Kernel Tuner cache file: ``.json``, or compressed ``.json.gz``, ``.json.bz2``, ``.json.xz``."""
    from gpuperf.datasets.kernel_tuner import CACHE_SUFFIXES

    return Path(path).name.lower().endswith(CACHE_SUFFIXES)


def read_space(path: str | Path, params: Sequence[str] | None = None, target: str | None = None,
               kernel: str | None = None, gpu: str | None = None, sizes: Mapping[str, object] | None = None) -> Space:
    """A space from a CSV or Parquet file, a bundled dataset or a Kernel Tuner cache (``.json``,
    compressed ``.json.gz``, ``.json.bz2``, ``.json.xz``; see :func:`space_from_frame`).

    ``kernel`` and ``gpu`` pick one kernel's rows on one GPU out of a table of several (see
    :func:`select_rows`); on a table without a ``gpu`` column, ``gpu`` names its GPU (:func:`gpu_named`). A cache names its own parameters (``tune_params_keys``, used when
    ``params`` is None), its times become ``time_s`` and its device names the space's GPU; a
    table without ``params`` takes the names in its ``variant`` labels (``a=1,b=2``).
    """
    where = str(path)
    refuse_one_string(params, "params", where)
    if is_kernel_tuner_cache(path):
        from gpuperf.datasets.kernel_tuner import read_kernel_tuner_cache

        frame = read_kernel_tuner_cache(path)
        objective = frame.attrs.get("objective")
        if target is None and objective not in (None, "time"):
            warnings.warn(GpuperfNote(f"{where}: tuned for objective {objective!r}; searched by time (time_s), as "
                                      "--target names no other column"), stacklevel=2)
        params, target = params or frame.attrs["parameters"], target or "time_s"
    else:
        frame = read_table(path)
    frame, gpu = gpu_named(frame, gpu)
    frame, where = select_rows(frame, where, kernel, gpu, sizes)
    params = list(params or variant_parameters(frame))
    if not params:
        raise GpuperfError(f"{where}: say which columns are the parameters (--params P1,P2,...)")
    target = target or default_target(frame, where, params)
    frame = with_literal_texts(frame, path, params, times=[target])
    return space_from_frame(frame, params, target, where)


def gpu_named(frame: pd.DataFrame, gpu: str | None) -> tuple[pd.DataFrame, str | None]:
    """``--gpu`` on a table that names no GPU (no ``gpu`` column, or an empty one, as Kernel Tuner 1.5
    writes) names the table's GPU (its descriptor then weighs other GPUs' data): the table with that
    column, and no GPU left to pick rows by."""
    unnamed = GPU_COLUMN not in frame.columns or text_cells(frame[GPU_COLUMN]).str.strip().eq("").all()
    if gpu is not None and unnamed:
        return frame.assign(**{GPU_COLUMN: gpu}), None
    return frame, gpu


def select_rows(frame: pd.DataFrame, where: str, kernel: str | None = None,
                gpu: str | None = None, sizes: Mapping[str, object] | None = None) -> tuple[pd.DataFrame, str]:
    """The rows of ``kernel`` (its name, any case), ``gpu`` (a name the GPU descriptors know
    for it, or words its recorded name holds, such as ``V100``) and ``sizes`` (``{"n": 1024}``:
    the rows whose column n holds 1024, in any type), and ``where`` naming them. A user's kernel
    named like another of a campaign export is picked by its own name, ``name (file.py:function)``
    (:func:`~gpuperf.datasets.tables.kernels_told_apart`)."""
    from gpuperf.datasets.tables import kernels_told_apart, one_spelling_per_name

    frame = kernels_told_apart(frame)
    chosen = []
    for column, name in (("kernel", kernel), (GPU_COLUMN, gpu)):
        if name is None:
            continue
        if column not in frame.columns:
            raise GpuperfError(f"{where}: no {column} column to pick --{column} {name} by")
        values = text_cells(frame[column]).str.strip()
        if column == "kernel":  # 'é' typed as one character in some rows, as 'e' and an accent in others: one kernel
            values = one_spelling_per_name(values)
        held = [value for value in values.unique() if value]  # an empty cell names nothing to pick
        names = matching_names(held, name, canonical=column == GPU_COLUMN)
        if (not names and column == GPU_COLUMN and lookup_gpu(name) is not None
                and all(lookup_gpu(value) is not None for value in held)):  # a GPU gpuperf knows, none here
            raise GpuperfError(f"{where}: no rows of the {lookup_gpu(name)} (--gpu {name}); its GPUs: "
                               f"{listed(sorted(held), 8)}")
        if not names:
            raise unknown_name_error(f"{column} in {where}", name, held)
        if len(names) > 1:
            raise GpuperfError(f"{where}: --{column} {name} names {len(names)} of its {column}s "
                               f"({', '.join(sorted(names)[:4])}); name one")
        frame = frame[(values == names[0]).to_numpy()]
        chosen.append(names[0])
        if column == GPU_COLUMN:
            frame, label = _one_campaign(frame, name, where)
            chosen += [label] if label else []
    for name, value in (sizes or {}).items():
        if name not in frame.columns:
            raise GpuperfError(f"{where}: no column {name} to pick -p {name}={value} by")
        held = texts_by_value(frame[name], key_text)
        wanted = _spaceless(key_text(value))  # [1024,1024] picks the cells [1024, 1024]
        if not held.map(_spaceless).eq(wanted).any():
            cells = frame[name].dropna().astype(str).str.strip().unique()  # as the table spells them
            shown = ", ".join(sorted(cells, key=lambda t: (len(t), t))[:8])
            raise GpuperfError(f"{where}: no row has {name}={value} (it holds {shown})")
        frame = frame[held.map(_spaceless).eq(wanted).to_numpy()]
        chosen.append(f"{name}={value}")
    return frame, f"{where} ({', '.join(chosen)})" if chosen else where


def _spaceless(text: str) -> str:
    return "".join(text.split())


def _one_campaign(frame: pd.DataFrame, gpu: str, where: str) -> tuple[pd.DataFrame, str | None]:
    """The rows of the one campaign ``gpu`` names where the picked GPU's rows hold several (a
    ``gpu_label`` column with several labels, as two campaigns on one GPU model measured with
    different parameters): the label equal to ``gpu`` (exactly, else ignoring case). ``(frame,
    None)`` where there is one campaign; an error listing the labels where ``gpu`` names none."""
    if GPU_LABEL not in frame.columns:
        return frame, None
    labels = text_cells(frame[GPU_LABEL]).str.strip()
    if labels.nunique() < 2:
        return frame, None
    named = [label for label in labels.unique() if label == gpu.strip()] or \
            [label for label in labels.unique() if label.lower() == gpu.strip().lower()]
    if len(named) != 1:
        ordered = sorted(labels.unique(), key=lambda label: (label.lower(), label))
        raise GpuperfError(f"{where}: --gpu {gpu} picks {len(ordered)} campaigns on {frame[GPU_COLUMN].iloc[0]} "
                           f"(gpu_label {', '.join(label or '(none)' for label in ordered)}), each its own space; name "
                           f"one by its label, e.g. --gpu {ordered[-1]}")
    return frame[(labels == named[0]).to_numpy()], named[0]


def matching_names(names: Sequence[str], query: str, canonical: bool = False) -> list[str]:
    """The ``names`` that ``query`` names: equal ignoring case and Unicode normal form (or, with ``canonical``, the same GPU
    descriptor), else those holding every word of it."""
    wanted = _folded(query.strip())
    same = [n for n in names if _folded(n) == wanted or (canonical and lookup_gpu(n) is not None
                                                         and lookup_gpu(n) == lookup_gpu(query))]
    if same:
        return same
    words = wanted.split()
    return [n for n in names if words and all(w in _folded(n).split() for w in words)]


def _folded(name: str) -> str:
    """``name`` in lower case and one Unicode normal form (NFC): 'é' typed as one character or as 'e'
    and an accent is one letter."""
    return unicodedata.normalize("NFC", name).lower()


def with_recorded_gpu(space: Space, others: Sequence[Space], word: str | None) -> Space:
    """``space`` naming the GPU that ``others`` (the --train spaces) record for ``word``, where
    ``--gpu word`` named a table that names no GPU: ``--gpu 2070`` is their RTX 2070 Super, as
    explore's --gpu picks a table's rows by words of its recorded names, so its rows are left out of
    --train. Unchanged where ``word`` is a GPU gpuperf knows (compared alike however spelt) or none
    of theirs; an error where it names several."""
    if word is None or space.gpu != word.strip() or lookup_gpu(word) is not None:
        return space
    recorded = sorted({other.gpu for other in others if other.gpu})
    names = matching_names(recorded, word, canonical=True)
    gpus = sorted({canonical_gpu(name) for name in names})
    if len(gpus) > 1:
        raise GpuperfError(f"--gpu {word} names {len(gpus)} GPUs of the --train tables ({listed(gpus, 4)}); name one")
    return replace(space, gpu=names[0]) if names else space


GROUP_COLUMNS = ("kernel", GPU_COLUMN, "problem_size")


def refuse_key_parameters(params: Sequence[str], where: str, status_column: str | None = "status") -> None:
    """Refuse a parameter named like a column a table is split by (kernel, GPU, problem size) or
    its run status: its values would be taken for those, not for settings."""
    keys = (*GROUP_COLUMNS, GPU_LABEL, *([status_column] if status_column else []))
    clash = [p for p in params if p in keys]
    if clash:
        raise GpuperfError(f"{where}: parameter '{clash[0]}' has the name of a column gpuperf reads as a table's "
                           f"{'run status' if clash[0] == status_column else 'grouping'} ({', '.join(keys)}); "
                           "rename the column")


def read_training_spaces(path: str | Path, params: Sequence[str], target: str | None = None,
                         size_columns: Sequence[str] = ()) -> list[Space]:
    """The spaces in a training table: one per (kernel, GPU, problem size) where the table holds
    several (such as a bundled table of many kernels or GPUs), else the table itself; a Kernel
    Tuner cache is one space. ``target`` is the time column where the table has it (else the
    table's own, as for the space). ``size_columns`` (such as n and m of a campaign at several
    sizes) split the groups further. Groups without the parameters, or whose configurations repeat
    on them (tuned over more parameters: another kernel's rows), are left out; a table with no
    group left is an error."""
    if is_kernel_tuner_cache(path):
        return _unless_all_failed(lambda: _cache_space(path, params, target))
    frame = read_table(path)
    times = [target] if target in frame.columns else [c for c in TIME_COLUMNS if c in frame.columns]
    frame = with_literal_texts(frame, path, params, times=times)  # a time of nan or NA is no pending row
    return training_spaces_from_frame(frame, params, target, str(path), size_columns)


def check_size_columns(size_columns: Sequence[str]) -> None:
    """An error for ``size_columns`` given as one string: "size" would read as the columns s, i, z and e,
    which no table has, so spaces at different sizes would silently count as one."""
    refuse_one_string(size_columns, "size_columns")


def training_spaces_from_frame(frame: pd.DataFrame, params: Sequence[str], target: str | None = None,
                               where: str = "table", size_columns: Sequence[str] = ()) -> list[Space]:
    """:func:`read_training_spaces` for a table already read (``where`` names it in errors)."""
    from gpuperf.datasets.tables import kernels_told_apart, names_alike

    check_size_columns(size_columns)
    refuse_key_parameters(params, where)
    frame = kernels_told_apart(frame)  # a user's kernel named like another is a space of its own
    if "kernel" in frame.columns:  # "saxpy " and "saxpy" (or 'é' typed two ways) are one kernel's space
        frame = frame.assign(kernel=names_alike(frame["kernel"]))
    column = target if target in frame.columns else _training_target(frame, target, where)
    refuse_empty_time_column(frame, column, where, remedy="leave the empty column out of this training table (its "
                             f"times are read from the first of {', '.join(TIME_COLUMNS)} it has)")
    pending = unmeasured_rows(frame, column)
    if pending.any():  # a partly measured table (ask's, on another GPU): its measured rows train
        warnings.warn(f"{where}: left out {counted(int(pending.sum()), 'row')} not measured yet (no {column}, no status; "
                      f"first: {row_location(frame, int(np.flatnonzero(pending)[0]))})", GpuperfNote, stacklevel=3)
        frame = frame[~pending]
        if frame.empty:
            raise GpuperfError(f"{where}: no row is measured yet; nothing to train on")
    by = [c for c in (*GROUP_COLUMNS, *size_columns) if c in frame.columns and frame[c].nunique() > 1]
    by += [GPU_LABEL] if _campaigns_share_a_gpu(frame) else []
    if not by:
        return _unless_all_failed(lambda: space_from_frame(frame, params, column, where))
    spaces, left_out, repeated = [], np.zeros(len(frame), dtype=bool), None
    without, other_spaces = [], []  # the groups left out: without the parameters, tuned over more of them
    groups = frame.groupby(by, sort=True, dropna=False)  # a row without a label or size is a group of its own too
    numbers = groups.ngroup().to_numpy()
    for number, (key, part) in enumerate(groups):
        positions = np.flatnonzero(numbers == number)
        names = [f"{c}={plain_value(v)}" if c in size_columns else str(v)
                 for c, v in zip(by, key if isinstance(key, tuple) else (key,)) if not pd.isna(v)]
        group = ", ".join(names)
        if not all(p in part.columns and part[p].notna().any() for p in params):
            without.append(group)
            continue
        none = unparameterised_rows(part, params)  # noted once for the whole table, below
        if _repeats_configurations(part[~none], params, column, f"{where} ({group})"):  # another kernel's space
            repeated = repeated or (part[~none], f"{where} ({group})")
            other_spaces.append(group)
            continue
        left_out[positions[none]] = True
        spaces += _unless_all_failed(lambda: space_from_frame(part[~none], params, column, f"{where} ({group})"))
    if left_out.any():
        _note_unparameterised(frame, left_out, where)
    if not spaces:
        raise _no_training_space(where, params, column, repeated)
    _note_left_out_groups(where, without, f"without the parameters {', '.join(params)}")
    _note_left_out_groups(where, other_spaces, "whose configurations repeat, differing in other columns (tuned "
                          "over more parameters than --params names: another kernel's space)")
    return spaces


def _repeats_configurations(part: pd.DataFrame, params: Sequence[str], column: str, group: str) -> bool:
    """Whether a training group repeats a configuration in rows that differ in another column (a
    parameter not in ``params``: another kernel's space); one repeated exactly, differing in nothing
    but what was measured, is an error, as in a space."""
    keys = configuration_keys(part.reset_index(drop=True), params)
    repeats = keys.duplicated().to_numpy()
    if not repeats.any():
        return False
    row = int(np.flatnonzero(repeats)[0])
    if differing_columns(part.reset_index(drop=True), keys, row, [*params, column], outcomes=()):
        return True
    shown = shown_configuration(part.reset_index(drop=True), params, row)
    raise GpuperfError(f"{group}: {row_location(part, row)}: configuration {shown} appears twice (the same "
                       "configuration measured twice; keep one row of it)")


def _note_left_out_groups(where: str, groups: Sequence[str], why: str) -> None:
    """One note naming the groups of a training table left out of the training, and why."""
    if groups:
        shown = "; ".join(groups[:4]) + (f"; and {len(groups) - 4} more" if len(groups) > 4 else "")
        warnings.warn(GpuperfNote(f"{where}: left out {len(groups)} group(s) {why}: {shown}"), stacklevel=4)


class AllFailed(GpuperfError):
    """A space every configuration of which failed: no time to explore or learn from."""


def _unless_all_failed(make: Callable[[], Space]) -> list[Space]:
    """``[make()]``, the training space; none where its every configuration failed, with a note (it is
    left out of the training, as a group without the parameters is)."""
    try:
        return [make()]
    except AllFailed as error:
        warnings.warn(GpuperfNote(f"{error}: left out of the training"), stacklevel=3)
        return []


def _campaigns_share_a_gpu(frame: pd.DataFrame) -> bool:
    """Whether one GPU's rows of one kernel hold several ``gpu_label`` values (two campaigns on one
    GPU model, each its own space; a row without a label counts as one more)."""
    if GPU_LABEL not in frame.columns or GPU_COLUMN not in frame.columns:
        return False
    keys = [c for c in ("kernel", GPU_COLUMN) if c in frame.columns]
    labels = text_cells(frame[GPU_LABEL]).str.strip()
    return bool((labels.groupby([frame[k].astype(object).fillna("") for k in keys]).nunique() > 1).any())


def _no_training_space(where: str, params: Sequence[str], column: str,
                       repeated: tuple[pd.DataFrame, str] | None) -> GpuperfError:
    """The error for a training table with no space in it: where a group with the parameters repeats
    a configuration (rows at several sizes, or a parameter missing from them), that row and why."""
    if repeated is None:
        return GpuperfError(f"{where}: no kernel in it has the parameters {', '.join(params)} (and no others that "
                            "its configurations vary in)")
    part, group = repeated
    rows = part.reset_index(drop=True)
    keys = configuration_keys(rows, params)
    row = int(np.flatnonzero(keys.duplicated().to_numpy())[0])
    return GpuperfError(f"{group}: {row_location(part, row)}: configuration {shown_configuration(rows, params, row)} "
                        f"appears twice{_why_twice(rows, keys, row, [*params, column])}")


def _cache_space(path: str | Path, params: Sequence[str], target: str | None) -> Space:
    """A Kernel Tuner cache as a training space: ``target`` where the cache has it, else its ``time_s``."""
    from gpuperf.datasets.kernel_tuner import read_kernel_tuner_cache

    frame = read_kernel_tuner_cache(path)
    return space_from_frame(frame, list(params), target if target in frame.columns else "time_s", str(path))


def same_kernel_and_gpu(a: Space, b: Space, size_columns: Sequence[str] = ()) -> bool:
    """Whether two spaces name the same GPU (by any spelling: ``K20``, ``Tesla K20``) and (where
    both name them) the same kernel and problem size (also in ``size_columns``; a size of one
    dimension, ``[100000]``, is the number ``100000``, as Kernel Tuner takes it)."""
    if a.gpu is None or b.gpu is None or canonical_gpu(a.gpu) != canonical_gpu(b.gpu):
        return False
    return _same_kernel_and_size(a, b, size_columns)


def kernel_text(name: object) -> str:
    """A kernel name as spaces are matched on: as written, without the spaces around it, in one Unicode normal
    form (NFC), so 'é' typed as one character or as 'e' and an accent is one kernel, as ``--kernel`` picks it;
    a name is no number, so '01' and '1' are two kernels (:func:`key_text` reads them as one value)."""
    return unicodedata.normalize("NFC", str(name).strip())


def _same_kernel_and_size(a: Space, b: Space, size_columns: Sequence[str] = ()) -> bool:
    """Whether two spaces name (where both name them) the same kernel and problem size."""
    for column in ("kernel", "problem_size", *size_columns):
        text = kernel_text if column == "kernel" else size_text
        values = [set(texts_by_value(s.extra[column].dropna(), text)) if column in s.extra.columns else None
                  for s in (a, b)]
        if values[0] and values[1] and values[0] != values[1]:
            return False
    return True


def same_space_copy(a: Space, b: Space, size_columns: Sequence[str] = ()) -> bool:
    """Whether ``b`` is a copy of the training space ``a``: the same GPU (or neither naming one), kernel
    and size, and the same configurations with the same normalised performance (their times, in any
    unit), so that learning from both would count one GPU's measurements twice."""
    if (a.gpu is None) != (b.gpu is None) or (a.gpu is not None and canonical_gpu(a.gpu) != canonical_gpu(b.gpu)):
        return False
    if len(a) != len(b) or not set(a.params) <= set(b.configs.columns) or not _same_kernel_and_size(a, b, size_columns):
        return False
    lookup = pd.Series(b.performance, index=configuration_keys(b.configs, a.params).to_numpy())
    if lookup.index.duplicated().any() or set(lookup.index) != set(a.keys()):
        return False
    return bool(np.allclose(a.performance, a.keys().map(lookup).to_numpy(dtype=float), rtol=1e-9, atol=0))


def same_measurements(space: Space, other: Space, least: int = 3) -> bool:
    """Whether ``other`` is ``space``'s own measurements under other names (a Kernel Tuner cache
    naming the kernel by its function, a table made from the cache): measured on the same GPU
    (where both name one), it times at least ``least`` of the configurations, with at least ``least``
    different times among them (equal times on a flat or coarsely timed space are a coincidence, not
    a copy), and every one both have, exactly as ``space`` does in some time unit (a factor 1000**k)."""
    if space.gpu is not None and other.gpu is not None and canonical_gpu(space.gpu) != canonical_gpu(other.gpu):
        return False
    lookup = pd.Series(other.times, index=configuration_keys(other.configs, space.params).to_numpy())
    theirs = space.keys().map(lookup[~lookup.index.duplicated()]).to_numpy(dtype=float)
    shared = np.isfinite(space.times) & np.isfinite(theirs) & (space.times > 0) & (theirs > 0)
    if shared.sum() < least or np.unique(space.times[shared]).size < least:
        return False
    thousands = np.log10(space.times[shared] / theirs[shared]) / 3  # whole numbers: a unit apart
    return bool(np.abs(thousands - np.round(thousands[0])).max() < 1e-9)


def transfer_matrix(space: Space, others: Sequence[Space]) -> np.ndarray:
    """Per configuration of ``space`` (rows), its normalised performance in each other space
    (columns); NaN where the other space lacks the configuration, 0 where it failed there."""
    keys = space.keys()
    columns = []
    for other in others:
        require_parameter_columns(other.params, space.params, other.where)
        lookup = pd.Series(other.performance, index=configuration_keys(other.configs, space.params).to_numpy())
        lookup = lookup[~lookup.index.duplicated()]
        columns.append(keys.map(lookup).to_numpy(dtype=float))
    if not columns:
        return np.empty((len(space), 0))
    return np.column_stack(columns)


def require_shared_configurations(space: Space, others: Sequence[Space], transfer: np.ndarray) -> None:
    """An error naming the first other space that has none of ``space``'s configurations
    (``transfer`` from :func:`transfer_matrix`): its data could not guide a search of ``space``."""
    for other, column in zip(others, transfer.T):
        if np.isnan(column).all():
            there, here = (shown_configuration(s.configs, space.params, 0) for s in (other, space))
            raise GpuperfError(
                f"{other.where}: none of its {len(other)} configurations is one of {space.where}'s "
                f"(e.g. {', '.join(space.params)} = {there} there, {here} here)"
            )


def parameter_features(configs: pd.DataFrame, params: Sequence[str]) -> np.ndarray:
    """Numbers a model can split on: log2 of positive numeric parameters, the values of other
    numeric ones, and the sorted-value code of non-numeric ones; one column per parameter in
    the order of their names, so that a search never depends on the order --params lists them."""
    columns = []
    for p in sorted(params):
        values = pd.to_numeric(configs[p], errors="coerce")
        if values.notna().all():
            numbers = values.to_numpy(dtype=float)
            columns.append(np.log2(numbers) if (numbers > 0).all() else numbers)
        else:  # a setting None (missing in a column of text) is a value of its own
            text = configs[p].map(lambda v: "None" if v is None or v is pd.NA or v != v else str(v))
            codes = {v: i for i, v in enumerate(sorted(text.unique()))}
            columns.append(text.map(codes).to_numpy(dtype=float))
    return np.column_stack(columns) if columns else np.empty((len(configs), 0))
