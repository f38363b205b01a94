"""Kernel Tuner cache files (``.json``) to and from the dataset shape.

A cache holds ``device_name``, ``kernel_name``, ``problem_size``, ``tune_params_keys``,
``tune_params``, ``objective`` and ``cache``: ``{"v1,v2,...": {param: value, ..., "time": ms or an
error name, "times": [ms, ...], "compile_time": ms, ...}}``. A failed configuration carries its error
name in ``__error__`` (Kernel Tuner 1.x, no ``time``), in ``time`` (earlier versions) or, before 0.4,
a ``time`` of 1e20 or more. While a tuning run is in progress
Kernel Tuner leaves the file open (no closing brackets, maybe a trailing comma) and appends one
entry per line; such a file reads like a closed one. Times are milliseconds in the file and
seconds in the dataset.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import math
import re
import warnings
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpuperf.datasets.profiler_csv import contradicts, refuse_empty_gpu
from gpuperf.datasets.schema import (
    KEY_COLUMNS,
    OK,
    ROW_NUMBERING,
    STATUS,
    TARGET,
    canonical_gpu,
    check_dataset,
    format_value,
    key_text,
    order_columns,
    shift_decimal,
    variant_labels,
)
from gpuperf.datasets.tables import refuse_compressed_under_plain_name, wide_encoding
from gpuperf.errors import GpuperfError, GpuperfNote, clipped, missing_file, parser_limits, refuse_one_string, too_large
from gpuperf.files import refuse_existing, written_whole

ERROR_NAMES = ("ErrorConfig", "InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig")
# Kernel Tuner before 0.4 stored a failed configuration as this time (or above, up to float max).
FAILED_TIME = 1e20
HEADER_KEYS = ("device_name", "kernel_name", "tune_params_keys", "cache")
# Kernel Tuner's own timing fields (milliseconds) and their dataset columns (seconds).
MS_FIELDS = {
    "compile_time": "compile_time_s",
    "verification_time": "verification_time_s",
    "benchmark_time": "benchmark_time_s",
    "strategy_time": "strategy_time_s",
    "framework_time": "framework_time_s",
}
TIMES = "times_s"
# Columns the dataset derives or keys on: never written back as extra cache fields.
DERIVED = {"time_s_min", "time_s_iqr", "repeats", "problem_size", "gpu_label"}


CACHE_SUFFIXES = (".json", ".json.gz", ".json.bz2", ".json.xz")  # a cache, plain or compressed


def read_kernel_tuner_cache(path: str | Path, gpu: str | None = None) -> pd.DataFrame:
    """A Kernel Tuner cache file (closed, or left open by a running tuner) in the dataset shape.

    Failed configurations are kept: ``time_s`` NaN, ``status`` the error name. Per-repeat times
    are kept in ``times_s`` (a tuple of seconds) with ``time_s_min``, ``time_s_iqr`` and ``repeats``.
    ``gpu`` names the GPU of a cache whose ``device_name`` is empty (Kernel Tuner's C backend
    writes none; the ``gpu`` column is then empty); a cache that names its device keeps that name, and a
    ``gpu`` naming another GPU is refused.
    """
    path = Path(path)
    where = str(path)
    refuse_empty_gpu(gpu, where)
    try:
        data = _parse(path)
    except MemoryError:  # a small .json.gz can hold gigabytes
        raise too_large(path) from None
    missing = [k for k in HEADER_KEYS if k not in data]
    if missing:
        raise GpuperfError(f"{where}: missing key(s) {', '.join(missing)} of a Kernel Tuner cache{_output_file_hint(data)}")
    keys = data["tune_params_keys"]
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise GpuperfError(f"{where}: tune_params_keys must be a list of parameter names")
    if not keys:
        raise GpuperfError(f"{where}: tune_params_keys is empty: the cache names no tunable parameter")
    _check_parameter_names(keys, where)
    if not isinstance(data["cache"], dict):
        raise GpuperfError(f"{where}: 'cache' must be an object of configurations")
    _check_objective(data, where)
    records = [_record(key, entry, keys, where) for key, entry in data["cache"].items()]
    _refuse_repeated_configurations(list(data["cache"]), records, keys, where)
    zero = [key for key, record in zip(data["cache"], records) if record[STATUS] is ZERO_TIME]
    kept = [i for i, record in enumerate(records) if record[STATUS] is not ZERO_TIME]  # the entries' positions
    records = [records[i] for i in kept]
    _note_zero_times(zero, where)
    skipped = set(zero)
    _note_unread_fields({k: e for k, e in data["cache"].items() if k not in skipped}, where)
    # labelled by position in the file, so an error names its entry past the ones left out
    frame = pd.DataFrame.from_records(records, index=kept, columns=_columns(records, keys))
    if not isinstance(data["kernel_name"], str) or not data["kernel_name"].strip():
        raise GpuperfError(f"{where}: kernel_name is {data['kernel_name']!r}, not a kernel's name")
    device_name = "" if data["device_name"] is None else data["device_name"]  # null: no name, as ""
    if not isinstance(device_name, str):
        raise GpuperfError(f"{where}: device_name is {device_name!r}, not a device's name")
    if gpu is not None:
        if device_name.strip() and contradicts(device_name, gpu):
            raise GpuperfError(f"{where}: the cache names its device ({device_name}); the GPU given ({gpu}) "
                               "contradicts it (a GPU given is for a cache that names none)")
        device_name = device_name if device_name.strip() else gpu
    frame.insert(0, "kernel", data["kernel_name"])
    frame.insert(1, "variant", variant_labels(frame, keys) if len(frame) else pd.Series(dtype=object))
    frame.insert(2, "gpu", canonical_gpu(device_name))
    frame.insert(3, "device", device_name)
    frame.insert(4, "source", where)
    if "problem_size" in data:
        frame["problem_size"] = json.dumps(data["problem_size"])
    if "repeats" in frame.columns:  # a count, empty for a failed configuration (not a float for the NaN)
        frame["repeats"] = frame["repeats"].astype("Int64")
    frame = order_columns(frame, keys)
    frame.attrs["parameters"] = list(keys)
    frame.attrs["objective"] = objective_named(data.get("objective"))
    frame.attrs[ROW_NUMBERING] = "entry"
    if isinstance(data.get("tune_params"), dict):
        frame.attrs["tune_params"] = data["tune_params"]
    return check_dataset(frame, where)


# The columns a cache's rows hold beside its parameters.
WRITTEN_COLUMNS = ("kernel", "variant", "gpu", "device", "source", TARGET, STATUS, TIMES, *sorted(DERIVED),
                   *MS_FIELDS.values())


def _check_parameter_names(keys: list[str], where: str) -> None:
    """Refuse a tunable parameter named like a column gpuperf writes beside the parameters: one of
    the two would be lost (or a row's value written over)."""
    clash = [k for k in keys if k in WRITTEN_COLUMNS]
    if clash:
        raise GpuperfError(f"{where}: tunable parameter '{clash[0]}' has the name of a column gpuperf writes beside "
                           f"the parameters ({', '.join(WRITTEN_COLUMNS)}), so one of the two would be lost; rename "
                           "it in tune_params_keys and in the entries")


def _parse(path: Path) -> dict:
    """The cache's JSON (gzip-, bzip2- or xz-compressed when the name ends in .gz, .bz2 or .xz),
    closing it first when a running tuner left it open."""
    if not path.is_file():
        raise missing_file(path, f"{path}: no such file")
    decompress = {".gz": gzip.decompress, ".bz2": bz2.decompress, ".xz": lzma.decompress}.get(path.suffix.lower())
    if decompress is None:  # gzip data named cache.json: the name that reads it, not 'not UTF-8 JSON text'
        refuse_compressed_under_plain_name(path, readable=(".gz", ".bz2", ".xz"))
    try:
        raw = path.read_bytes() if decompress is None else decompress(path.read_bytes())
        # A byte-order mark, as Windows editors write, is no part of it; PowerShell's > writes UTF-16, .NET's
        # Encoding.Unicode UTF-16 without a mark (told by the NUL bytes of its ASCII characters); UTF-32 alike.
        encoding = wide_encoding(raw[:512]) or "utf-8-sig"
        text = raw.decode(encoding).strip()
    except (OSError, EOFError, UnicodeDecodeError, zlib.error, lzma.LZMAError) as exc:
        raise GpuperfError(f"{path}: not a Kernel Tuner cache (not UTF-8 JSON text: {exc})") from None
    if not text:
        raise GpuperfError(f"{path}: empty file")
    if text[0] not in "{[":
        raise GpuperfError(f"{path}: not a Kernel Tuner cache (not JSON: it starts with {text[:20]!r})")
    def once_each(pairs: list[tuple[str, Any]]) -> dict:
        """A JSON object whose keys are given once (json keeps the last of a repeated key silently)."""
        found: dict = {}
        for key, value in pairs:
            if key in found and json.dumps(found[key], sort_keys=True) != json.dumps(value, sort_keys=True):
                shown = (f" (time {found[key]['time']!r}, then {value['time']!r})"
                         if isinstance(value, dict) and isinstance(found[key], dict)
                         and "time" in value and "time" in found[key] else "")
                raise GpuperfError(f"{path}: '{key}' is given twice with different values{shown}; which one "
                                   "to keep is not said, so the cache is not read")
            found[key] = value
        return found

    with parser_limits(path):
        try:
            data = json.loads(text, object_pairs_hook=once_each)
        except json.JSONDecodeError:
            # Kernel Tuner's own repair of an open cache: drop a trailing comma, add the closing brackets.
            repaired = (text[:-1] if text.endswith(",") else text) + "}\n}"
            try:
                data = json.loads(repaired, object_pairs_hook=once_each)
            except json.JSONDecodeError as exc:
                position = min(exc.pos, len(text))
                line = text.count("\n", 0, position) + 1
                column = position - (text.rfind("\n", 0, position) + 1) + 1
                where_in_file = "the end of the file, " if position == len(text) else ""
                raise GpuperfError(
                    f"{path}: truncated or malformed Kernel Tuner cache at {where_in_file}line {line}, "
                    f"column {column} ({exc.msg}); a cache cut inside an entry cannot be read"
                ) from None
    if not isinstance(data, dict):
        raise GpuperfError(f"{path}: not a Kernel Tuner cache (top level is not a JSON object)")
    return data


def objective_named(objective: Any) -> Any:
    """A cache's ``objective`` as one name where it names one: Kernel Tuner 1.x writes a list
    (``["time"]``), earlier versions the name itself; several objectives stay a list."""
    return objective[0] if isinstance(objective, list) and len(objective) == 1 else objective


def _output_file_hint(data: dict) -> str:
    """A hint where ``data`` is Kernel Tuner's output file (``store_output_file``'s T4 results, a
    ``results`` list and no cache's keys), else ""."""
    if "results" not in data or "cache" in data:
        return ""
    return (" (this is Kernel Tuner's output file, store_output_file's results, which names neither the kernel nor "
            "the device; gpuperf reads the cache file, the one tune_kernel's cache= option writes)")


def _check_objective(data: dict, where: str) -> None:
    """A cache tuned for another objective than time may record no time: say so, once."""
    objective = objective_named(data.get("objective"))
    entries = [entry for entry in data["cache"].values() if isinstance(entry, dict)]
    if objective not in (None, "time") and entries and not any("time" in e or "__error__" in e for e in entries):
        raise GpuperfError(f"{where}: the cache was tuned for objective {objective!r} and records no time; "
                           "gpuperf reads the time of each configuration")


def _interquartile_range(values: list[float]) -> float:
    """q3 - q1 exactly as ``np.percentile``'s linear method gives them, without its cost per call
    (a cache of 200,000 entries spent most of its reading there)."""
    ordered = sorted(values)

    def quantile(q: float) -> float:
        position = q * (len(ordered) - 1)
        low = math.floor(position)
        a, b, t = ordered[low], ordered[min(low + 1, len(ordered) - 1)], position - low
        return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t  # numpy's _lerp

    return quantile(0.75) - quantile(0.25)


def _record(key: str, entry: Any, keys: list[str], where: str) -> dict:
    """One cache entry as a dataset row; errors name the file and the entry's key."""
    if not isinstance(entry, dict):
        raise GpuperfError(f"{where}: cache entry '{key}' is not an object")
    absent = [k for k in keys if k not in entry]
    if absent:
        raise GpuperfError(f"{where}: cache entry '{key}' lacks parameter(s) {', '.join(absent)}")
    expected = ",".join(str(entry[k]) for k in keys)
    if expected != key and not _spelled_by(key, [entry[k] for k in keys]):
        raise GpuperfError(f"{where}: cache entry '{key}' holds the parameters of '{expected}'")
    # A parameter whose value is None (JSON null) is the setting "None", as the cache's own key spells it;
    # one stored as a list is the tuple Kernel Tuner tuned.
    row: dict[str, Any] = {k: "None" if entry[k] is None else _as_tuple(entry[k]) for k in keys}
    time = entry.get("time")
    errors = [v for v in entry.values() if isinstance(v, str) and v in ERROR_NAMES]
    if errors:
        row[TARGET], row[STATUS] = math.nan, errors[0]
    elif "__error__" in entry:
        error = entry["__error__"]
        if not isinstance(error, str) or not error.strip():
            raise GpuperfError(f"{where}: cache entry '{key}': __error__ is {json.dumps(error)}, not the name of an "
                               f"error (Kernel Tuner's are {', '.join(ERROR_NAMES)})")
        row[TARGET], row[STATUS] = math.nan, error
    elif _is_number(time) and time >= FAILED_TIME:
        row[TARGET], row[STATUS] = math.nan, "ErrorConfig"
    elif "time" not in entry:
        raise GpuperfError(f"{where}: cache entry '{key}' has neither 'time' nor '__error__'")
    elif _is_number(time) and time == 0:  # below the timer's resolution: no measurement, left out
        row[TARGET], row[STATUS] = math.nan, ZERO_TIME
    elif isinstance(time, (int, float)) and not isinstance(time, bool) and math.isfinite(time) and time > 0:
        row[TARGET], row[STATUS] = shift_decimal(time, -3), OK
    else:
        raise GpuperfError(
            f"{where}: cache entry '{key}': time={time!r} is neither a positive number of ms "
            f"nor a Kernel Tuner error ({', '.join(ERROR_NAMES)})"
        )
    times = entry.get("times")
    if isinstance(times, list) and times and _unread_times(entry) is None:
        seconds = [shift_decimal(t, -3) for t in times]
        row[TIMES] = tuple(seconds)
        row["time_s_min"] = min(seconds)
        row["time_s_iqr"] = _interquartile_range(seconds)
        row["repeats"] = len(seconds)
    for name, value in entry.items():
        if name in keys or name in ("time", "times", "__error__"):  # the error is the row's status
            continue
        if name in MS_FIELDS and _is_number(value):
            row[MS_FIELDS[name]] = shift_decimal(value, -3)
        elif name not in row:
            row[name] = tuple(value) if isinstance(value, list) else value
    return row


# The status of an entry timed 0 ms (a kernel faster than the timer's resolution): no measurement, left out.
ZERO_TIME: Any = object()


def _note_zero_times(keys: list[str], where: str) -> None:
    """A note naming the entries timed 0 ms, left out of the table (how many, and the first)."""
    if keys:
        counted = "1 entry gives" if len(keys) == 1 else f"{len(keys)} entries give"
        warnings.warn(GpuperfNote(f"{where}: {counted} a time of 0 ms, no measured time (the first: '{keys[0]}'); "
                                  f"{'it is' if len(keys) == 1 else 'they are'} left out"), stacklevel=3)


def _refuse_repeated_configurations(cache_keys: list[str], records: list[dict], keys: list[str], where: str) -> None:
    """Refuse two entries of one configuration, keyed by two spellings of equal values (``32,1`` and
    ``32.0,1``): configurations match by value (:func:`~gpuperf.datasets.schema.key_text`), as explore's do."""
    seen: dict[tuple[str, ...], int] = {}
    for position, record in enumerate(records):
        first = seen.setdefault(tuple(key_text(record[k]) for k in keys), position)
        if first != position:
            raise GpuperfError(f"{where}: entry {position + 1}: configuration {cache_keys[position]} appears twice (as "
                               f"entry {first + 1}'s {cache_keys[first]}: configurations match by value, so 1, 01 and "
                               "1.0 are one setting)")


def _as_tuple(value: Any) -> Any:
    """A list (JSON's spelling of a tuple) as a tuple, nested ones too; anything else unchanged."""
    return tuple(_as_tuple(v) for v in value) if isinstance(value, list) else value


def _key_spellings(value: Any) -> set[str]:
    """How Kernel Tuner may have spelled a stored parameter value in an entry's key: ``str()`` of the
    value it tuned, which JSON gives back as a list for a tuple and as a float64 for a float32."""
    spellings = {str(value), str(_as_tuple(value))}
    if isinstance(value, float) and math.isfinite(value) and float(np.float32(value)) == value:
        spellings.add(str(np.float32(value)))
    return spellings


def _spelled_by(key: str, values: list[Any]) -> bool:
    """Whether ``key`` joins, with commas, one spelling of each value in turn."""
    if not values:
        return key == ""
    for spelling in _key_spellings(values[0]):
        if len(values) == 1 and key == spelling:
            return True
        if key.startswith(spelling + ",") and _spelled_by(key[len(spelling) + 1:], values[1:]):
            return True
    return False


# Why an entry's ``times`` go unread, as its note says it.
UNREAD_TIMES = {
    "no numbers": "times as no numbers",
    "not positive": "times that are not all positive, finite ms",
    "above time": "times whose fastest is slower than the time they give",
}


def _unread_times(entry: dict) -> str | None:
    """Why ``entry``'s ``times`` are left unread (a key of :data:`UNREAD_TIMES`): no list of numbers, a
    repeat that is no positive, finite time, or a fastest repeat slower than the entry's ``time`` (their
    mean, as Kernel Tuner writes it, beyond rounding); None where they are read or absent."""
    if "times" not in entry:
        return None
    times = entry["times"]
    if not (isinstance(times, list) and all(_is_number(t) for t in times)):
        return "no numbers"
    if not all(math.isfinite(t) and t > 0 for t in times):
        return "not positive"
    time = entry.get("time")
    if times and _is_number(time) and math.isfinite(time) and time < FAILED_TIME and min(times) > time * (1 + 1e-9):
        return "above time"
    return None


def _note_unread_fields(cache: dict, where: str) -> None:
    """A note for the fields left unread: ``times`` that is not a list of numbers, that holds a repeat
    that is no positive, finite time or whose fastest repeat is slower than the entry's time, and a
    millisecond field (``compile_time``, ...) that is not a number (a note per field and reason,
    naming how many entries and the first)."""
    unread: dict[tuple[str, str], list[str]] = {}
    for key, entry in cache.items():
        why = _unread_times(entry)
        if why is not None:
            unread.setdefault(("times", why), []).append(key)
        for name, value in entry.items():
            if name in MS_FIELDS and not _is_number(value):
                unread.setdefault((name, ""), []).append(key)
    for (name, why), keys in unread.items():
        column = "times_s" if name == "times" else MS_FIELDS[name]
        counted = "1 entry gives" if len(keys) == 1 else f"{len(keys)} entries give"
        given = UNREAD_TIMES[why] if name == "times" else f"{name} as no number"
        shown = f"{cache[keys[0]][name]!r}" + (f", time {cache[keys[0]]['time']!r}" if why == "above time" else "")
        warnings.warn(GpuperfNote(f"{where}: {counted} {given} (the first: '{keys[0]}': {shown}); {column} is left "
                                  "empty there"), stacklevel=3)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _columns(records: list[dict], keys: list[str]) -> list[str]:
    columns = list(keys) + [TARGET, STATUS]
    for record in records:
        columns += [c for c in record if c not in columns]
    return columns


# -- writing ----------------------------------------------------------------------------------


def write_kernel_tuner_cache(
    frame: pd.DataFrame,
    path: str | Path,
    kernel_name: str | None = None,
    device_name: str | None = None,
    tune_params_keys: Sequence[str] | None = None,
    problem_size: Any = None,
    tune_params: Mapping[str, Sequence[Any]] | None = None,
    objective: str = "time",
    replace: bool = False,
) -> Path:
    """Write measurements of one kernel on one device as a closed Kernel Tuner cache (an existing
    file at ``path`` is an error unless ``replace``).

    ``time_s`` becomes ``time`` in ms (a cache read and written back keeps times of up to 15 significant
    digits exactly; longer ones within a float step or two, see ``_ms``); failed rows keep their status as Kernel Tuner's error name
    (other failure kinds become ``CompilationFailedConfig``, ``InvalidConfig`` or
    ``RuntimeFailedConfig``). Defaults come from the frame: its single kernel and device (its ``gpu`` where
    the device names no GPU and that does), its
    parameters (``frame.attrs["parameters"]``), its ``problem_size`` column, and the values each
    parameter takes. Kernel Tuner's simulation mode needs every configuration of the searched
    space in the cache. The file is written whole or not at all.
    """
    path = Path(path)
    where = f"writing {path}"
    refuse_existing(path, "cache", replace)
    check_dataset(frame, where)
    refuse_one_string(tune_params_keys, "tune_params_keys", where, names="parameter names")  # "bx": b and x
    keys = list(tune_params_keys or frame.attrs.get("parameters") or [])
    if not keys:
        raise GpuperfError(f"{where}: say which columns are the tunable parameters (tune_params_keys)")
    absent = [k for k in keys if k not in frame.columns]
    if absent:
        raise GpuperfError(f"{where}: the measurements have no column(s) {', '.join(absent)}")
    kernel_name = kernel_name or _single(frame, "kernel", where)
    device_name = device_name or _device_name(frame, where)
    if problem_size is None:
        problem_size = _problem_size(_single(frame, "problem_size", where), where)
    values = _parameter_values(frame, keys, tune_params or frame.attrs.get("tune_params"), where)
    cache: dict[str, dict] = {}
    extras = [c for c in frame.columns if c not in {*KEY_COLUMNS, *keys, TARGET, STATUS, TIMES, *DERIVED}]
    for position, row in enumerate(frame.to_dict("records")):
        params = {k: values[k][_lookup(row[k])] for k in keys}
        key = ",".join(str(v) for v in params.values())
        if key in cache:
            raise GpuperfError(f"{where}: row {position + 1} of the table written: configuration '{key}' appears twice")
        cache[key] = params | _entry(row, extras)
    header = {
        "device_name": device_name,
        "kernel_name": kernel_name,
        "problem_size": problem_size,
        "tune_params_keys": keys,
        "tune_params": {k: list(values[k].values()) for k in keys},
        "objective": objective,
    }
    # Laid out as Kernel Tuner writes it: an indented header, then one entry per line.
    entries = ",\n".join(f"{json.dumps(k)}: {json.dumps(v, default=_plain)}" for k, v in cache.items())
    text = json.dumps(header, indent="", default=_plain)[:-2] + ',\n"cache": {\n' + entries + "}\n}"
    _write_whole(path, text)
    return path


def _device_name(frame: pd.DataFrame, where: str) -> str:
    """The device's name: the ``device`` column, or ``gpu`` where ``device`` holds gpuperf's device
    spec (``opencl:0``, ``cuda:0``: a table ``gpuperf tune`` wrote) or names no GPU while ``gpu`` names
    one gpuperf describes (the host, ``x86_64``, as the bundled pnpoly spaces record it), so that the
    cache read back names its GPU."""
    from gpuperf.hardware.specs import canonical_gpu_name

    device = _single(frame, "device", where)
    if "gpu" not in frame.columns:
        return device
    if re.fullmatch(r"(opencl|cuda)(:\d+){0,2}", device.strip().lower()):
        return _single(frame, "gpu", where)
    if canonical_gpu_name(device) is None:
        gpus = frame["gpu"].dropna().unique()
        if len(gpus) == 1 and canonical_gpu_name(gpus[0]) is not None:
            return str(gpus[0])
    return device


def _single(frame: pd.DataFrame, column: str, where: str) -> str:
    option = column if column != "device" else "device_name"
    if column not in frame.columns:
        raise GpuperfError(f"{where}: the measurements have no '{column}' column; pass {option}")
    found = frame[column].dropna().unique()
    if len(found) != 1:
        raise GpuperfError(
            f"{where}: the measurements hold {len(found)} values of '{column}'; "
            f"pass {option} or select one"
        )
    return str(found[0])


def _problem_size(text: str, where: str) -> Any:
    """The frame's ``problem_size`` cell as the JSON a cache read holds there (``[1024, 1024]``); any other
    text is an error naming the column, not JSON's own."""
    try:
        with parser_limits(f"{where}: the problem_size column"):
            return json.loads(text)
    except json.JSONDecodeError as error:
        raise GpuperfError(f"{where}: the problem_size column holds {clipped(repr(text))}, not JSON such as "
                           f"[1024, 1024] ({error.msg}); pass problem_size") from None


def _lookup(value: Any) -> Any:
    """A hashable lookup key under which 16, 16.0 and np.int64(16) are one value."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None:  # Kernel Tuner's None, as the reader spells it (the cache key's text)
        return "None"
    if isinstance(value, (list, tuple)):  # a tuple value, as JSON lists it in tune_params
        return tuple(_lookup(item) for item in value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _parameter_values(
    frame: pd.DataFrame, keys: list[str], tune_params: Mapping[str, Sequence[Any]] | None, where: str
) -> dict[str, dict[Any, Any]]:
    """Per parameter, lookup key -> the value as Kernel Tuner will see it (its type decides the key text)."""
    values: dict[str, dict[Any, Any]] = {}
    for k in keys:
        column = frame[k]
        if column.isna().any():
            row = int(np.flatnonzero(column.isna().to_numpy())[0])
            raise GpuperfError(f"{where}: row {row + 1} of the table written: parameter {k} has no value")
        if tune_params is not None and k in tune_params:
            known = {_lookup(v): _as_tuple(v) for v in tune_params[k]}  # JSON lists a tuple
        else:  # a column with a fraction held floats (0.5, 1.0: Kernel Tuner's key says 1.0); else ints
            fractions = any(isinstance(_natural(v), float) for v in column.unique())
            known = {_lookup(v): _as_written(v, fractions) for v in sorted(column.unique(), key=_order)}
            if not fractions and pd.api.types.is_float_dtype(column):
                shown = ", ".join(format_value(v) for v in list(known.values())[:3])
                warnings.warn(GpuperfNote(
                    f"{where}: parameter {k} holds whole numbers as floats, written as whole numbers ({shown}); "
                    "where Kernel Tuner's tune_params held floats (its cache keys read 1.0), pass tune_params"),
                    stacklevel=3)
        missing = [v for v in column.unique() if _lookup(v) not in known]
        if missing:
            raise GpuperfError(f"{where}: parameter {k} takes {format_value(missing[0])}, not in tune_params")
        values[k] = known
    return values


def _as_written(value: Any, fractions: bool) -> Any:
    """A parameter value as Kernel Tuner would hold it: the setting "None" as None, a number of a
    column with fractions as a float."""
    value = _natural(value)
    if value == "None":
        return None
    return float(value) if fractions and _is_number(value) else value


def _natural(value: Any) -> Any:
    """Plain Python value; floats that are whole numbers become ints (pandas stores 16 as 16.0)."""
    value = value.item() if isinstance(value, np.generic) else value
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _order(value: Any) -> tuple:
    return (0, value, "") if _is_number(_natural(value)) else (1, 0, str(value))


def _listed(value: Any) -> list | None:
    """A list cell as a list: a tuple or list, a NumPy array (Parquet's), or the JSON text
    :func:`~gpuperf.datasets.importers.write_dataset_csv` writes for one; None for any other value."""
    if isinstance(value, (tuple, list, np.ndarray)):
        return [v.item() if isinstance(v, np.generic) else v for v in value]
    if isinstance(value, str) and value.startswith("["):
        try:
            parsed = json.loads(value)
        except ValueError:
            return None
        return parsed if isinstance(parsed, list) else None
    return None


def _entry(row: dict, extras: list[str]) -> dict:
    status = row.get(STATUS, OK)
    entry: dict[str, Any] = {}
    if isinstance(status, str) and status.strip().lower() == OK:  # any case and spacing, as check_dataset took it
        entry["time"] = _ms(row[TARGET])
        times = _listed(row.get(TIMES))
        if times:
            entry["times"] = [_ms(t) for t in times]
    else:
        entry["time"] = _error_name(str(status))
    inverse = {v: k for k, v in MS_FIELDS.items()}
    for column in extras:
        value = row[column]
        listed = _listed(value)
        if listed is None and pd.isna(value):
            continue
        if column in inverse:
            entry[inverse[column]] = _ms(value)
        else:
            entry[column] = value if listed is None else listed
    return entry


def _ms(seconds: float) -> float:
    """Seconds as ms, the decimal point moved. ms -> s -> ms gives back a time written with up to 15 significant
    digits exactly; one of 16 or 17 (Kernel Tuner 1.5 writes 17) may come back a float step or two off, a
    relative 2.3e-16 at most (6.4033122062683105 -> 6.40331220626831): the seconds hold the shortest decimal of
    the nearest float, not the ms as written."""
    return shift_decimal(seconds, 3)


def _error_name(status: str) -> str:
    if status in ERROR_NAMES:
        return status
    lowered = status.lower()
    if "compil" in lowered:
        return "CompilationFailedConfig"
    if "invalid" in lowered:
        return "InvalidConfig"
    return "RuntimeFailedConfig"


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"cannot write {type(value).__name__} to a Kernel Tuner cache")


def _write_whole(path: Path, text: str) -> None:
    """Write to a temporary file beside ``path`` and rename it: never a half-written cache."""
    if path.is_dir():
        raise GpuperfError(f"{path}: is a folder; give a file name for the cache")
    path.parent.mkdir(parents=True, exist_ok=True)
    with written_whole(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
