"""nvprof CSV (``nvprof --csv``) to the dataset shape.

nvprof files come in five layouts, told apart by their header row:
- ``--print-gpu-trace``: one row per kernel launch or memory copy, ``Duration`` with its unit in
  the units row below the header; memory copies and sets are left out (they are no kernels);
- the default summary: one row per kernel, ``Avg``/``Min``/``Max`` times and ``Calls`` (as
  ``calls``: the kernel's launches, of any geometry, that the times are over; GPU activities only:
  API calls, in a ``Type`` column or, before CUDA 9, in a section of their own, are left out); it
  does not name the device;
- ``--metrics ...`` and ``--events ...``: one row per kernel and metric or event (``Min``, ``Max``,
  ``Avg``; a file may hold a metric section and an event section); alone it has no times (rows get
  status ``untimed``), given with a trace or summary its averages join that profile's kernels;
- ``--print-gpu-trace`` with ``--metrics``/``--events``: one row per launch, ``Device``, ``Kernel``
  (``Context``, ``Stream``, ``Correlation_ID`` where the version writes them) and a column per
  metric or event (one headed by a description, as older versions head metrics, spelt as the
  Rodinia table spells it), each value with its unit or a units row below the header; no times
  (rows get status ``untimed``); given with a GPU trace its launches join that trace's by
  ``Correlation_ID``;
- a table like the bundled Rodinia one: ``kernel``, ``gpu``, one time column (``time_s``,
  ``time_ms``, ``duration_us``, ...; two are refused) and metric columns (dots for brackets).
Launch geometry lands in ``grid.x``, ``block.x``, ``registers.per.thread``, ``static.smem`` (bytes;
nvprof's KB are 1024 bytes), as in the Rodinia table; throughputs in GB/s, efficiencies in %,
utilisation levels as 0-10.
"""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from gpuperf.datasets.profiler_csv import (
    check_unique_header,
    checked_row,
    contradicts,
    csv_rows,
    device_gpu,
    find_header,
    finish,
    full_kernel_name,
    is_activity,
    is_message,
    is_ncu_csv,
    kernel_short_name,
    line_cells,
    note_profiler_messages,
    number,
    parse_number,
    signature_variants,
    positive_time,
    read_lines,
    refuse_empty_gpu,
    refuse_oversized_block,
    refuse_repeated_header,
    whole_count,
    without_device_index,
)
from gpuperf.datasets.schema import OK, STATUS, TARGET, canonical_gpu, seconds_exponent, shift_decimal, text_cells
from gpuperf.datasets.tables import TableFormat, read_csv, require_columns
from gpuperf.errors import GpuperfError, GpuperfNote

UNTIMED = "untimed"
MEMORY_BYTES = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}  # nvprof's memory sizes are binary
GB_S_EXPONENT = {"B/s": -9, "KB/s": -6, "MB/s": -3, "GB/s": 0, "TB/s": 3}
TRACE_NUMBERS = {
    "Grid X": "grid.x", "Grid Y": "grid.y", "Grid Z": "grid.z",
    "Block X": "block.x", "Block Y": "block.y", "Block Z": "block.z",
    "Registers Per Thread": "registers.per.thread",
    "Static SMem": "static.smem", "Dynamic SMem": "dynamic.smem", "Correlation_ID": "correlation_id",
}
TRACE_TEXTS = {"Context": "context", "Stream": "stream"}
BYTE_COLUMNS = ("Static SMem", "Dynamic SMem")
TABLE_SIZES = ("input.size.1", "input.size.2")  # the size parameters of a Rodinia-style table
VALUE_NAMES = ("Metric Name", "Event Name")
OVERFLOW = "<OVERFLOW>"  # nvprof's mark of a saturated counter
MESSAGE = re.compile(r"==(?:\d+|=+)== (Warning|Error): (.*)")  # nvprof's own; ======== when read back with nvprof -i
LAYOUTS_READ = ("gpuperf reads a GPU trace (--print-gpu-trace: Duration, Name), a summary (Avg, Calls, Name), "
                "--metrics or --events averages (Device, Kernel, Metric Name or Event Name, Avg), per-launch "
                "metrics or events (--print-gpu-trace --metrics: Device, Kernel, a column per metric) and a table "
                "(kernel, gpu, time_s)")
METRIC_UNITS = ("%", *GB_S_EXPONENT)  # the units a metric trace's units row may give
LAUNCH_KEYS = ("Device", "Context", "Stream", "Kernel", "Correlation_ID")  # a metric trace's columns that are no metric
LAUNCH_COLUMNS = ("kernel", "variant", "gpu", "device", "source", TARGET, STATUS, "kernel_full_name", "context", "stream",
                  "correlation_id")  # a metric trace's dataset columns that are no metric


def import_nvprof(path: str | Path, metrics: str | Path | None = None, gpu: str | None = None) -> pd.DataFrame:
    """An nvprof CSV (trace, summary, metrics/events, per-launch metrics or Rodinia-style table) in the
    dataset shape.

    With ``metrics`` (an nvprof ``--metrics``/``--events`` CSV of the same program), each kernel's
    averages are added to its rows, or, from a per-launch one, each launch's own values (by
    Correlation_ID). ``gpu`` names the GPU where the file does not (a summary).
    """
    path = Path(path)
    where = str(path)
    refuse_empty_gpu(gpu, where)
    lines = read_lines(path)
    if is_ncu_csv(lines):
        raise GpuperfError(f"{where}: an Nsight Compute (ncu --csv) file, not nvprof's: gpuperf import ncu reads it")
    note_profiler_messages(lines, where, MESSAGE, "nvprof")  # e.g. records lost to a full buffer: the profile may be short
    kind = nvprof_kind(lines)
    if kind == "trace":
        frame = _nvprof_trace(lines, where)
    elif kind == "summary":
        frame = _nvprof_summary(lines, where)
    elif kind == "metrics":
        frame = _nvprof_metrics_alone(path, lines)
    elif kind == "metric_trace":
        frame = _nvprof_metric_trace(lines, where)
    elif any(re.match(r"==(?:\d+|=+)==", line) for line in lines):  # nvprof's own output, in a layout not read here
        raise GpuperfError(f"{where}: an nvprof CSV in a layout gpuperf does not read (header: {_first_header(lines)}); "
                           f"{LAYOUTS_READ}")
    else:
        frame = _nvprof_table(path, where)
    if metrics is not None:
        frame = _joined(frame, Path(metrics), where)
    unnamed = text_cells(frame["device"]).str.strip() == ""
    if gpu is not None:
        named = frame.loc[~unnamed, "device"].astype(str)
        other = named[named.map(lambda device: contradicts(device, gpu))]
        if not other.empty:
            raise GpuperfError(f"{where}: the profile names its GPU, {other.iloc[0]}; --gpu {gpu} contradicts it "
                               "(--gpu is for a profile that names none)")
        frame.loc[unnamed, "gpu"], frame.loc[unnamed, "device"] = canonical_gpu(gpu), gpu
    elif unnamed.any():
        raise GpuperfError(f"{where}: the profile names no GPU (an nvprof summary has no Device column); "
                           "say which GPU it ran on (--gpu)")
    return frame


def nvprof_kind(lines: list[str]) -> str:
    """Which nvprof layout: the first header-like line decides (profiler messages skipped, and the
    application's own output before nvprof's, unless the first line is a table's header)."""
    for index, cells in enumerate(csv_rows(lines, 0)):
        if is_message(cells):
            continue
        cells = set(cells)
        if cells & set(VALUE_NAMES):
            return "metrics"
        if cells & {"Name", "Duration", "Avg"}:  # a trace or summary header, even one lacking Name
            return "summary" if "Avg" in cells else "trace"
        if {"Device", "Kernel"} <= cells:  # per-launch metrics or events: no times, no Name
            return "metric_trace"
        if index == 0 or {"kernel", "gpu"} <= cells:
            return "table"
    return "table"


def _units_row(rows: list[list[str]], header: list[str]) -> dict[str, str] | None:
    """nvprof's units row (``ms,us,,,...``) right below the header, or None when there is none."""
    if len(rows) < 2 or len(rows[1]) != len(header):
        return None
    cells = rows[1]
    looks_like_units = all(c == "" or re.fullmatch(r"[%a-zA-Z/\u00b5\u03bc]+", c) for c in cells)
    return dict(zip(header, cells)) if looks_like_units and any(cells) else None


def _nvprof_trace(lines: list[str], where: str) -> pd.DataFrame:
    start = find_header(lines, ("Duration", "Name"), where)
    rows = csv_rows(lines, start)
    header = rows[0]
    if "Correlation_ID" in header and "Device" not in header:
        raise GpuperfError(f"{where}: line {start + 1}: nvprof's API trace (--print-api-trace: host calls, no kernel "
                           "launches on a device); profile with --print-gpu-trace")
    require_columns(pd.DataFrame(columns=header), ["Duration", "Name", "Device"], where)
    units = _units_row(rows, header)
    if units is None:
        raise GpuperfError(f"{where}: line {start + 2}: no units row below the header (nvprof --csv writes one)")
    duration_exponent = seconds_exponent(units["Duration"] or "s", f"{where}: line {start + 2}: Duration unit")
    byte_scale = {}
    for name in BYTE_COLUMNS:
        unit = units.get(name) or "B"
        if name in units and unit not in MEMORY_BYTES:
            raise GpuperfError(f"{where}: line {start + 2}: {name} unit {unit!r} is not one of {', '.join(MEMORY_BYTES)}")
        byte_scale[name] = MEMORY_BYTES[unit]
    start_exponent = seconds_exponent(units.get("Start") or "s", f"{where}: line {start + 2}: Start unit") if "Start" in header else 0
    records = []
    for offset, cells in enumerate(rows[2:]):
        line = start + 3 + offset
        if is_message(cells):
            continue
        refuse_repeated_header(cells, header, where, line, "trace's header")  # another process (--profile-child-processes)
        row = checked_row(cells, header, where, line)
        if is_activity(row["Name"]):
            continue  # memory copies and sets, unified memory transfers and page faults
        for column in ("Name", "Device"):
            if not row[column].strip():
                raise GpuperfError(f"{where}: line {line}: no {column} (an empty cell)")
        record = {
            "kernel": kernel_short_name(row["Name"]),
            "gpu": device_gpu(row["Device"]),
            "device": row["Device"],
            TARGET: positive_time(row["Duration"], duration_exponent, where, line, "Duration"),
            STATUS: OK,
            "kernel_full_name": full_kernel_name(row["Name"]),
        }
        if "Start" in row:
            record["start_s"] = shift_decimal(number(row["Start"], where, line, "Start"), start_exponent)
        for name, column in TRACE_NUMBERS.items():
            if name in row and name in BYTE_COLUMNS:
                record[column] = number(row[name], where, line, name) * byte_scale[name]
                if not 0 <= record[column] < math.inf:
                    raise GpuperfError(f"{where}: line {line}: {name}={row[name]!r} is not a size in bytes")
            elif name in row:
                least = 1 if column.startswith(("grid.", "block.")) else 0
                record[column] = whole_count(row[name], where, line, name, least)
        block = [name for name in ("Block X", "Block Y", "Block Z") if name in row]
        if block:
            refuse_oversized_block(math.prod(record[TRACE_NUMBERS[name]] for name in block), where, line,
                                   " x ".join(f"{name} {row[name].strip()}" for name in block))
        record.update({column: row[name] for name, column in TRACE_TEXTS.items() if name in row})
        records.append(record)
    if not records:
        raise GpuperfError(f"{where}: no kernel launches in the trace")
    frame = pd.DataFrame.from_records(records)
    frame.insert(1, "variant", "")
    frame.insert(4, "source", where)
    return finish(signature_variants(frame), where)


def _nvprof_summary(lines: list[str], where: str) -> pd.DataFrame:
    start = find_header(lines, ("Avg", "Calls", "Name"), where)
    rows = csv_rows(lines, start)
    header = rows[0]
    units = _units_row(rows, header)
    if units is None:
        raise GpuperfError(f"{where}: line {start + 2}: no units row below the header (nvprof --csv writes one)")
    records = []
    seen: dict[str, int] = {}  # kernel name -> its line
    for offset, cells in enumerate(rows[2:]):
        line = start + 3 + offset
        if cells and "API calls" in cells[0] and cells[0].startswith("=="):
            break  # before CUDA 9, the API calls follow in a section of their own
        if is_message(cells):
            continue
        refuse_repeated_header(cells, header, where, line, "summary's header")
        row = checked_row(cells, header, where, line)
        if is_activity(row["Name"]) or row.get("Type", "GPU activities") != "GPU activities":
            continue
        if row["Name"] in seen:
            raise GpuperfError(f"{where}: line {line}: kernel {row['Name']!r} again (first on line {seen[row['Name']]}); "
                               "a summary lists each kernel once: one profile per file")
        seen[row["Name"]] = line
        record = {"kernel": kernel_short_name(row["Name"]), "variant": "", "gpu": "", "device": "", "source": where}
        for column, name in (("Avg", TARGET), ("Min", "time_s_min"), ("Max", "time_s_max")):
            if column not in row:
                continue  # only Avg is needed
            exponent = seconds_exponent(units.get(column) or "s", f"{where}: line {start + 2}: {column} unit")
            record[name] = (positive_time(row[column], exponent, where, line, column) if name == TARGET
                            else shift_decimal(number(row[column], where, line, column), exponent))
        record[STATUS] = OK
        calls = number(row["Calls"], where, line, "Calls")
        if not (math.isfinite(calls) and calls >= 1 and calls.is_integer()):
            raise GpuperfError(f"{where}: line {line}: Calls={row['Calls']!r} is not a count of launches")
        record["calls"] = int(calls)  # the launches its Avg, Min and Max are over, not repetitions of one
        record["kernel_full_name"] = full_kernel_name(row["Name"])
        records.append(record)
    if not records:
        raise GpuperfError(f"{where}: no GPU kernels in the summary")
    return finish(signature_variants(pd.DataFrame.from_records(records)), where)


def _metric_value(text: str, where: str, line: int, metric: str) -> float:
    """``100.00%`` -> 100, ``149.2GB/s`` -> 149.2 (GB/s), ``Mid (5)`` -> 5, ``1,024`` -> 1024."""
    text = text.strip()
    if text == OVERFLOW:
        warnings.warn(GpuperfNote(f"{where}: line {line}: {metric} overflowed ({OVERFLOW}): left missing"),
                      stacklevel=2)
        return math.nan
    level = re.fullmatch(r"[A-Za-z ]+\((\d+)\)", text)
    if level:
        return float(level.group(1))
    rate = re.fullmatch(r"([-+0-9.,eE]+)\s*([KMGT]?B/s)", text)
    if rate:
        return shift_decimal(number(rate.group(1), where, line, metric), GB_S_EXPONENT[rate.group(2)])
    return number(text.rstrip("%"), where, line, metric)


def _checked_average(value: float, row: dict[str, str], where: str, line: int, metric: str) -> float:
    """A metric's average, or NaN with a note naming the line where it lies outside its own Min..Max
    (nvprof prints such averages for some throughputs: dram_read_throughput Avg 2.86MB/s beside Min
    3.03MB/s); an error where it is infinite."""
    if math.isinf(value):
        raise GpuperfError(f"{where}: line {line}: {metric}: Avg={row['Avg']!r} is not a finite value")
    bounds = [row.get(c, "").strip() for c in ("Min", "Max")]
    if math.isnan(value) or any(not text or text == OVERFLOW for text in bounds):
        return value
    try:
        low, high = (_metric_value(text, where, line, metric) for text in bounds)
    except GpuperfError:  # a bound that is no number: nothing to check against
        return value
    if math.isnan(low) or math.isnan(high):  # n/a
        return value
    slack = 1e-5 * max(abs(low), abs(high)) + 1e-12  # the printed digits' rounding
    if low - slack <= value <= high + slack:
        return value
    warnings.warn(GpuperfNote(f"{where}: line {line}: {metric}: Avg={row['Avg'].strip()} lies outside its Min "
                              f"{row['Min'].strip()} and Max {row['Max'].strip()}: left missing"), stacklevel=2)
    return math.nan


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _is_metrics_header(cells: list[str]) -> bool:
    """Whether a row is the header of an nvprof metric or event section."""
    return {"Device", "Kernel", "Avg"} <= set(cells) and bool(set(cells) & set(VALUE_NAMES))


def _metrics_start(lines: list[str], where: str) -> int:
    """Index of the first metric or event header; the application's own output above it (lines not
    of its width) is skipped, a row of its width (a metric row above its header) is an error."""
    cells = [line_cells(line) if not line.startswith("==") else [] for line in lines]
    start = next((index for index, row in enumerate(cells) if _is_metrics_header(row)), None)
    stray = next((index for index, row in enumerate(cells[:start]) if len(row) > 1 and not is_message(row)
                  and (start is None or len(row) == len(cells[start]))), None)
    wanted = "no header row with Device, Kernel, Metric Name (or Event Name), Avg"
    if stray is not None:
        raise GpuperfError(f"{where}: line {stray + 1}: {wanted} above")
    if start is None:
        raise GpuperfError(f"{where}: {wanted}")
    return start


def _metrics_table(path: Path, lines: list[str] | None = None) -> pd.DataFrame:
    """An nvprof ``--metrics``/``--events`` CSV (its ``lines`` where read already) as one row per
    (device, kernel) with each average."""
    where = str(path)
    lines = read_lines(path) if lines is None else lines
    start = _metrics_start(lines, where)
    header: list[str] | None = None
    values: dict[tuple[str, str], dict[str, float]] = {}
    varying: dict[tuple[str, str], str] = {}  # (device, kernel) -> a metric its invocations disagree on
    for line, cells in enumerate(csv_rows(lines, start), start=start + 1):
        if is_message(cells):
            continue
        if _is_metrics_header(cells):
            check_unique_header(cells, where, line)
            header = cells  # a metric or an event section begins
            name_column = next(n for n in VALUE_NAMES if n in cells)
            continue
        assert header is not None  # the rows begin with one
        row = checked_row(cells, header, where, line)
        key = (row["Device"], full_kernel_name(row["Kernel"]))
        entry = values.setdefault(key, {"invocations": number(row.get("Invocations", ""), where, line, "Invocations")})
        value = _checked_average(_metric_value(row["Avg"], where, line, row[name_column]), row, where, line,
                                 row[name_column])
        if row[name_column] in entry and not _same(entry[row[name_column]], value):
            raise GpuperfError(f"{where}: line {line}: {row[name_column]} of {row['Kernel']} on {row['Device']} "
                               f"again, now {row['Avg']} (above: {entry[row[name_column]]:g}); one profile per file")
        entry[row[name_column]] = value
        if "Min" in row and "Max" in row and row["Min"].strip() != row["Max"].strip():  # a file without both says nothing
            varying.setdefault(key, f"{row[name_column]} from {row['Min'].strip()} to {row['Max'].strip()}")
    if not values:
        raise GpuperfError(f"{where}: no metric or event rows")
    table = pd.DataFrame([{"device": d, "kernel": kernel_short_name(k), "kernel_full_name": k, **v}
                          for (d, k), v in values.items()])
    table.attrs["varying"] = {(d, kernel_short_name(k), k): said for (d, k), said in varying.items()}
    return table


def _nvprof_metrics_alone(path: Path, lines: list[str]) -> pd.DataFrame:
    where = str(path)
    table = _metrics_table(path, lines)
    table["variant"] = ""
    table["gpu"] = table["device"].map(device_gpu)
    table["source"] = where
    table[TARGET] = np.nan
    table[STATUS] = UNTIMED
    return finish(signature_variants(table), where)


def _join_metrics(frame: pd.DataFrame, metrics: Path) -> pd.DataFrame:
    """The metric averages joined on device and kernel (:func:`_join_keys`); a summary (no device) joins on the
    kernel and takes the device from the metrics."""
    table = _metrics_table(metrics)
    varying = table.attrs["varying"]
    clash = [c for c in table.columns if c in frame.columns and c not in ("device", "kernel", "kernel_full_name")]
    if clash:
        raise GpuperfError(f"{metrics}: metric(s) {', '.join(clash)} are already columns of the profile")
    if (frame["device"] == "").all():
        devices = table["device"].unique()
        if len(devices) > 1:
            raise GpuperfError(f"{metrics}: metrics from {len(devices)} devices, and the summary it joins names none")
        frame = frame.assign(device=devices[0], gpu=device_gpu(devices[0]))
    table = signature_variants(table.assign(variant=""))
    keys = _join_keys(frame, table, metrics)
    unknown = _keys_of(table, keys) - _keys_of(frame, keys)
    if unknown:
        device, name = sorted(unknown)[0]
        raise GpuperfError(f"{metrics}: kernel '{name}' on '{device}' is not in the profile it joins")
    _note_averaged_launches(frame, table, varying, keys, metrics)
    table = table.drop(columns=[c for c in ("kernel", "variant", "kernel_full_name") if c not in keys])
    joined = frame.merge(table, on=keys, how="left", validate="many_to_one")
    joined.attrs = frame.attrs
    return joined


def _join_keys(frame: pd.DataFrame, table: pd.DataFrame, metrics: Path) -> list[str]:
    """The columns metrics join a profile on, besides the device: the kernel's full name (so C++ overloads keep
    their own metrics) where the profile has every full name the metrics name; else its short name and
    ``variant`` (its signature in one spelling, however each file writes the name: spaced otherwise, or a
    mangled symbol) where the profile has every pair; else its short name where no two signatures share one."""
    for keys in (["device", "kernel_full_name"], ["device", "kernel", "variant"]):
        if set(keys) <= set(frame.columns) and _keys_of(table, keys) <= _keys_of(frame, keys):
            return keys
    signatures = table.groupby(["device", "kernel"])["kernel_full_name"].unique()
    overloaded = signatures[signatures.map(len) > 1]
    if not overloaded.empty:
        (device, name), names = overloaded.index[0], overloaded.iloc[0]
        raise GpuperfError(f"{metrics}: kernels {' and '.join(sorted(names))} on '{device}' share the name "
                           f"'{name}', and the profile it joins lacks their full names to tell them apart")
    return ["device", "kernel"]


def _keys_of(frame: pd.DataFrame, keys: list[str]) -> set[tuple]:
    """The distinct values of ``keys`` in ``frame``'s rows."""
    return set(frame[keys].itertuples(index=False, name=None))


GEOMETRY = ("grid.x", "grid.y", "grid.z", "block.x", "block.y", "block.z")


def _note_averaged_launches(frame: pd.DataFrame, table: pd.DataFrame, varying: dict, keys: list[str],
                            metrics: Path) -> None:
    """A note for each kernel whose launches differ in geometry while its metrics vary across its
    invocations: every launch gets the average, right for none of them (a per-thread count taken
    from it, as advise --profile does, is off by as much as the launches differ)."""
    geometry = [c for c in GEOMETRY if c in frame.columns]
    if not geometry:
        return
    for (device, short, full), said in varying.items():
        key = table.loc[(table["device"] == device) & (table["kernel_full_name"] == full), keys].iloc[0]
        rows = frame[(frame[keys] == key).all(axis=1)]
        shapes = len(rows[geometry].drop_duplicates())
        if shapes > 1:
            warnings.warn(GpuperfNote(
                f"{metrics}: {short} ran {len(rows)} launches of {shapes} geometries while its metrics vary ({said}): "
                "each launch gets the metrics' average over all, right for none of them; profile one geometry "
                "at a time for per-launch counts"), stacklevel=3)


def _metric_column(name: str) -> str:
    """A metric trace's column as the dataset names it: a metric or event name (``achieved_occupancy``)
    as written; a description, as older nvprof heads its metrics, spelt as the bundled Rodinia table
    spells it: lower case, spaces as ``_``, other signs as ``.`` (``Floating Point Operations(Single
    Precision)`` -> ``floating_point_operations.single_precision.``)."""
    name = name.strip()
    if re.fullmatch(r"[A-Za-z0-9_.]+", name):
        return name
    return re.sub(r"[^a-z0-9_]", ".", name.lower().replace(" ", "_"))


def _metric_columns(header: list[str], where: str, line: int) -> dict[str, str]:
    """Each metric or event column of a metric trace's header: {as written: as the dataset names it};
    two that the dataset would name alike are an error."""
    check_unique_header(header, where, line)
    columns: dict[str, str] = {}
    for name in header:
        if name in LAUNCH_KEYS:
            continue
        column = _metric_column(name)
        same = next((other for other, named in columns.items() if named == column), None)
        if same is not None:
            raise GpuperfError(f"{where}: line {line}: columns {same!r} and {name!r} would both be {column!r}")
        columns[name] = column
    if not columns:
        raise GpuperfError(f"{where}: line {line}: no metric or event columns beside {', '.join(header)}")
    return columns


def _metric_units(rows: list[list[str]], columns: dict[str, str], where: str, line: int) -> dict[str, str] | None:
    """A metric trace's units row ({column: unit}), or None where it has none; a metric's unit that is
    neither % nor a throughput is an error naming it."""
    units = _units_row(rows, rows[0])
    for name, unit in (units or {}).items():
        if name in columns and unit and unit not in METRIC_UNITS:
            raise GpuperfError(f"{where}: line {line}: {name}: unit {unit!r} is not one of {', '.join(METRIC_UNITS)}")
    return units


def _with_unit(text: str, unit: str) -> str:
    """A metric trace's cell with its column's unit where the cell is a number without one."""
    value = parse_number(text)
    return f"{text.strip()}{unit}" if unit and value is not None and not math.isnan(value) else text


def _launch_metrics(row: dict[str, str], columns: dict[str, str], units: dict[str, str], where: str,
                    line: int) -> dict:
    """One row of a metric trace as a dataset record: the launch, its metrics scaled as the metric
    averages are (GB/s, %, utilisation levels), no time."""
    for column in ("Device", "Kernel"):
        if not row[column].strip():
            raise GpuperfError(f"{where}: line {line}: no {column} (an empty cell)")
    record = {"kernel": kernel_short_name(row["Kernel"]), "variant": "", "gpu": device_gpu(row["Device"]),
              "device": row["Device"], "source": where, TARGET: np.nan, STATUS: UNTIMED,
              "kernel_full_name": full_kernel_name(row["Kernel"])}
    record.update({column: row[name] for name, column in TRACE_TEXTS.items() if name in row})
    if "Correlation_ID" in row:
        record["correlation_id"] = whole_count(row["Correlation_ID"], where, line, "Correlation_ID")
    for name, column in columns.items():
        record[column] = _metric_value(_with_unit(row[name], units.get(name, "")), where, line, name)
    return record


def _nvprof_metric_trace(lines: list[str], where: str) -> pd.DataFrame:
    """nvprof's ``--print-gpu-trace --metrics/--events`` CSV: a row per launch, status ``untimed``."""
    start = find_header(lines, ("Device", "Kernel"), where)
    rows = csv_rows(lines, start)
    header = rows[0]
    columns = _metric_columns(header, where, start + 1)
    units = _metric_units(rows, columns, where, start + 2)
    records = []
    for index in range(2 if units is not None else 1, len(rows)):
        line, cells = start + 1 + index, rows[index]
        if is_message(cells):
            continue
        refuse_repeated_header(cells, header, where, line, "metric trace's header")
        row = checked_row(cells, header, where, line)
        if not is_activity(row["Kernel"]):
            records.append(_launch_metrics(row, columns, units or {}, where, line))
    if not records:
        raise GpuperfError(f"{where}: no kernel launches in the metric trace")
    return finish(signature_variants(pd.DataFrame.from_records(records)), where)


def _joined(frame: pd.DataFrame, metrics: Path, where: str) -> pd.DataFrame:
    """The profile with the metrics of ``metrics``: a metric trace's per launch, else the averages."""
    lines = read_lines(metrics)
    if is_ncu_csv(lines) or nvprof_kind(lines) != "metric_trace":
        return _join_metrics(frame, metrics)
    header = line_cells(lines[find_header(lines, ("Device", "Kernel"), str(metrics))])
    lacking = [name for name, has in ((where, "correlation_id" in frame), (str(metrics), "Correlation_ID" in header))
               if not has]
    if lacking:  # before reading its rows: no notes on a file refused
        raise GpuperfError(f"{metrics}: per-launch metrics join a GPU trace launch by launch, by Correlation_ID, and "
                           f"{' and '.join(lacking)} {'have' if len(lacking) > 1 else 'has'} no Correlation_ID column; "
                           f"import the metrics alone (gpuperf import nvprof {metrics})")
    return _join_metric_trace(frame, _nvprof_metric_trace(lines, str(metrics)), where, metrics)


def _join_metric_trace(frame: pd.DataFrame, launches: pd.DataFrame, where: str, metrics: Path) -> pd.DataFrame:
    """Each launch's own metrics, joined by Correlation_ID. A launch of the metrics the profile lacks,
    or one the two name as different kernels or devices, is an error (runs that launched differently);
    a launch of the profile without metrics keeps empty metric columns, with a note (nvprof
    --kernels profiles some kernels only)."""
    _refuse_unjoinable(frame, launches, where, metrics)
    ids = frame["correlation_id"]
    unknown = launches[~launches["correlation_id"].isin(ids)]
    if not unknown.empty:
        first = unknown.iloc[0]
        raise GpuperfError(f"{metrics}: launch {first['correlation_id']:g} ({first['kernel']} on '{first['device']}') "
                           f"is not in {where}, the profile it joins ({len(unknown)} of its {len(launches)} launches are "
                           "not): profile the times and the metrics of one program with one input")
    _refuse_other_launches(frame, launches, where, metrics)
    bare = frame[~ids.isin(launches["correlation_id"])]
    if not bare.empty:
        warnings.warn(GpuperfNote(f"{metrics}: no metrics for {len(bare)} of the {len(frame)} launches of {where} "
                                  f"(first: launch {bare['correlation_id'].iloc[0]:g}, {bare['kernel'].iloc[0]}): "
                                  "their metric columns are left empty"), stacklevel=4)
    columns = [c for c in launches.columns if c not in LAUNCH_COLUMNS]
    joined = frame.merge(launches[["correlation_id", *columns]], on="correlation_id", how="left", validate="one_to_one")
    joined.attrs = frame.attrs
    return joined


def _refuse_unjoinable(frame: pd.DataFrame, launches: pd.DataFrame, where: str, metrics: Path) -> None:
    """An error where either file gives one Correlation_ID to two launches, or a metric is already a
    column of the profile."""
    for name, table in ((where, frame), (str(metrics), launches)):
        repeated = table["correlation_id"][table["correlation_id"].duplicated()]
        if not repeated.empty:
            raise GpuperfError(f"{name}: Correlation_ID {repeated.iloc[0]:g} on two launches; one profile per file")
    clash = [c for c in launches.columns if c in frame.columns and c not in LAUNCH_COLUMNS]
    if clash:
        raise GpuperfError(f"{metrics}: metric(s) {', '.join(clash)} are already columns of the profile")


def _refuse_other_launches(frame: pd.DataFrame, launches: pd.DataFrame, where: str, metrics: Path) -> None:
    """An error where one Correlation_ID is another kernel or device in the metrics than in the profile; a
    kernel is compared by ``kernel`` and ``variant``, so a name one file writes mangled matches its demangled form."""
    same = ["device", "kernel", "variant"]
    keys = ["correlation_id", "kernel_full_name", *same]
    pairs = frame[keys].merge(launches[keys], on="correlation_id", suffixes=("", "_metrics"))
    other = pairs[np.logical_or.reduce([pairs[key] != pairs[f"{key}_metrics"] for key in same])]
    if not other.empty:
        first = other.iloc[0]
        raise GpuperfError(f"{metrics}: launch {first['correlation_id']:g} is {first['kernel_full_name_metrics']} on "
                           f"'{first['device_metrics']}', but {first['kernel_full_name']} on '{first['device']}' in "
                           f"{where}: the two runs launched differently")


def _first_header(lines: list[str]) -> str:
    """The first row that is not a profiler message, as its cells joined by commas."""
    return next((",".join(cells) for cells in csv_rows(lines, 0) if not is_message(cells)), "none")


def _nvprof_table(path: Path, where: str) -> pd.DataFrame:
    """A table like the bundled Rodinia one (any time column named time_<unit> or duration_<unit>)."""
    raw = read_csv(path)
    time_columns = [c for c in raw.columns if re.fullmatch(r"(time|duration)_(s|ms|us|ns)", str(c))]
    if "kernel" not in raw.columns or "gpu" not in raw.columns or not time_columns:
        raise GpuperfError(f"{where}: not an nvprof CSV: {LAYOUTS_READ}")
    if len(time_columns) > 1:
        raise GpuperfError(f"{where}: {len(time_columns)} time columns ({', '.join(time_columns)}); "
                           "keep the one that is the kernel's time (rename the others)")
    raw["gpu"] = raw["gpu"].map(lambda gpu: gpu if pd.isna(gpu) else without_device_index(gpu))
    column = time_columns[0]
    table_format = TableFormat(
        kernel="kernel", time=column, time_unit=column.rsplit("_", 1)[1], gpu="gpu",
        parameters=TABLE_SIZES,
    )
    return table_format.shape(raw, where, where)
