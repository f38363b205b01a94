"""Profiler outputs to the dataset shape: nvprof CSV (``--csv``) and Nsight Compute CSV (``ncu --csv --page raw``).

nvprof files come in four layouts, told apart by their header row:
- ``--print-gpu-trace``: one row per kernel launch or memory copy, ``Duration`` with its unit in
  the units row below the header; memory copies and sets are left out (they are no kernels);
- the default summary: one row per kernel, ``Avg``/``Min``/``Max`` times and ``Calls``;
- ``--metrics ...``: one row per kernel and metric (``Min``, ``Max``, ``Avg``); alone it has no
  times (rows get status ``untimed``), given with a trace its averages join the trace's launches;
- a table like the bundled Rodinia one: ``kernel``, ``gpu``, a time column (``time_s``,
  ``time_ms``, ``duration_us``, ...) and metric columns (dots for brackets).
Launch geometry lands in ``grid.x``, ``block.x``, ``registers.per.thread``, ``static.smem`` (bytes),
as in the Rodinia table; throughputs in GB/s, efficiencies in %, utilisation levels as 0-10.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd

from gpuperf.datasets.schema import (
    OK,
    STATUS,
    TARGET,
    canonical_gpu,
    check_dataset,
    order_columns,
    seconds_exponent,
    shift_decimal,
)
from gpuperf.datasets.tables import TableFormat, read_csv, require_columns
from gpuperf.errors import GpuperfError

UNTIMED = "untimed"
BYTES_PER_UNIT = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
                  "byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12,
                  "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}
GB_S_EXPONENT = {"B/s": -9, "KB/s": -6, "MB/s": -3, "GB/s": 0, "TB/s": 3}


# -- shared pieces ------------------------------------------------------------------------------


def kernel_short_name(name: str) -> str:
    """``void foo<32>(float*, int) [116]`` -> ``foo<32>``: what a kernel is called in the dataset."""
    text = re.sub(r"\s*\[\d+\]$", "", str(name).strip())
    text = text.split("(", 1)[0].strip()
    return re.sub(r"^(void|__global__)\s+", "", text)


def device_gpu(device: str) -> str:
    """``Tesla K40c (0)`` -> the canonical GPU name (the device index is dropped)."""
    return canonical_gpu(re.sub(r"\s*\(\d+\)$", "", str(device).strip()))


def _lines(path: Path) -> list[str]:
    if not path.is_file():
        raise GpuperfError(f"{path}: no such file")
    text = path.read_text(errors="replace")
    if not text.strip():
        raise GpuperfError(f"{path}: empty file")
    return text.splitlines()


def _csv_rows(lines: list[str], start: int) -> list[list[str]]:
    return list(csv.reader(io.StringIO("\n".join(lines[start:]))))


def _skipped(cells: list[str]) -> bool:
    """Blank rows and profiler messages (``==PID== ...``, ``==PROF== ...``) between the data rows."""
    return not cells or not any(c.strip() for c in cells) or cells[0].startswith("==")


def _find_header(lines: list[str], wanted: tuple[str, ...], where: str) -> int:
    """Index of the first line (not a ``==`` profiler message) whose cells include all of ``wanted``."""
    for index, line in enumerate(lines):
        if line.startswith("==") or not line.strip():
            continue
        cells = next(csv.reader([line]))
        if all(w in cells for w in wanted):
            return index
    raise GpuperfError(f"{where}: no header row with column(s) {', '.join(wanted)}")


def _number(text: str, where: str, line: int, column: str) -> float:
    """A profiler's number: thousands separators allowed, empty or n/a is NaN, anything else an error."""
    cleaned = text.strip().replace(",", "")
    if cleaned in ("", "n/a", "N/A", "-"):
        return float("nan")
    try:
        return float(cleaned)
    except ValueError:
        raise GpuperfError(f"{where}: line {line}: {column}={text!r} is not a number") from None


def _time(text: str, exponent: int, where: str, line: int, column: str) -> float:
    """A measured time in seconds; empty, zero or negative is an error naming the line."""
    seconds = shift_decimal(_number(text, where, line, column), exponent)
    if not seconds > 0:
        raise GpuperfError(f"{where}: line {line}: {column} gives no time ({text!r})")
    return seconds


def _finish(frame: pd.DataFrame, parameters: list[str], where: str) -> pd.DataFrame:
    frame = order_columns(frame.reset_index(drop=True), parameters)
    frame.attrs["parameters"] = parameters
    return check_dataset(frame, where)


# -- nvprof ---------------------------------------------------------------------------------------

TRACE_NUMBERS = {
    "Grid X": "grid.x", "Grid Y": "grid.y", "Grid Z": "grid.z",
    "Block X": "block.x", "Block Y": "block.y", "Block Z": "block.z",
    "Registers Per Thread": "registers.per.thread",
    "Static SMem": "static.smem", "Dynamic SMem": "dynamic.smem", "Correlation_ID": "correlation_id",
}
TRACE_TEXTS = {"Context": "context", "Stream": "stream"}
BYTE_COLUMNS = ("Static SMem", "Dynamic SMem")
TABLE_SIZES = ("input.size.1", "input.size.2")  # the size parameters of a Rodinia-style table


def import_nvprof(path: str | Path, metrics: str | Path | None = None) -> pd.DataFrame:
    """An nvprof CSV (trace, summary, metrics or Rodinia-style table) in the dataset shape.

    With ``metrics`` (an nvprof ``--metrics`` CSV of the same program), each kernel's metric
    averages are added to its rows.
    """
    path = Path(path)
    where = str(path)
    lines = _lines(path)
    kind = _nvprof_kind(lines)
    if kind == "trace":
        frame = _nvprof_trace(lines, where)
    elif kind == "summary":
        frame = _nvprof_summary(lines, where)
    elif kind == "metrics":
        frame = _nvprof_metrics_alone(path)
    else:
        frame = _nvprof_table(path, where)
    if metrics is not None:
        frame = _join_metrics(frame, Path(metrics))
    return frame


def _nvprof_kind(lines: list[str]) -> str:
    """Which nvprof layout: the first header-like line decides (profiler messages skipped)."""
    for line in lines:
        if line.startswith("==") or not line.strip():
            continue
        cells = set(next(csv.reader([line])))
        if "Metric Name" in cells:
            return "metrics"
        if "Name" in cells:
            return "summary" if {"Avg", "Calls"} <= cells else "trace"
        return "table"
    return "table"


def _units_row(rows: list[list[str]], header: list[str]) -> dict[str, str] | None:
    """nvprof's units row (``ms,us,,,...``) right below the header, or None when there is none."""
    if len(rows) < 2 or len(rows[1]) != len(header):
        return None
    cells = rows[1]
    looks_like_units = all(c == "" or re.fullmatch(r"[%a-zA-Z/\u00b5]+", c) for c in cells)
    return dict(zip(header, cells)) if looks_like_units and any(cells) else None


def _nvprof_trace(lines: list[str], where: str) -> pd.DataFrame:
    start = _find_header(lines, ("Name",), where)
    rows = _csv_rows(lines, start)
    header = rows[0]
    require_columns(pd.DataFrame(columns=header), ["Duration", "Name", "Device"], where)
    units = _units_row(rows, header)
    if units is None:
        raise GpuperfError(f"{where}: line {start + 2}: no units row below the header (nvprof --csv writes one)")
    duration_exponent = seconds_exponent(units["Duration"] or "s", f"{where}: line {start + 2}: Duration unit")
    records = []
    for offset, cells in enumerate(rows[2:]):
        line = start + 3 + offset
        if _skipped(cells):
            continue
        if len(cells) != len(header):
            raise GpuperfError(f"{where}: line {line}: {len(cells)} cells, the header has {len(header)}")
        row = dict(zip(header, cells))
        if row["Name"].startswith("[CUDA "):
            continue  # memory copies and sets
        record = {
            "kernel": kernel_short_name(row["Name"]),
            "gpu": device_gpu(row["Device"]),
            "device": row["Device"],
            TARGET: _time(row["Duration"], duration_exponent, where, line, "Duration"),
            STATUS: OK,
            "kernel_full_name": re.sub(r"\s*\[\d+\]$", "", row["Name"]),
        }
        if "Start" in row:
            start_exponent = seconds_exponent(units.get("Start") or "s", f"{where}: Start unit")
            record["start_s"] = shift_decimal(_number(row["Start"], where, line, "Start"), start_exponent)
        for name, column in TRACE_NUMBERS.items():
            if name in row:
                scale = BYTES_PER_UNIT.get(units.get(name) or "B", 1) if name in BYTE_COLUMNS else 1
                record[column] = _number(row[name], where, line, name) * scale
        record.update({column: row[name] for name, column in TRACE_TEXTS.items() if name in row})
        records.append(record)
    if not records:
        raise GpuperfError(f"{where}: no kernel launches in the trace")
    frame = pd.DataFrame.from_records(records)
    frame.insert(1, "variant", "")
    frame.insert(4, "source", where)
    return _finish(frame, [], where)


def _nvprof_summary(lines: list[str], where: str) -> pd.DataFrame:
    start = _find_header(lines, ("Avg", "Calls", "Name"), where)
    rows = _csv_rows(lines, start)
    header = rows[0]
    units = _units_row(rows, header)
    if units is None:
        raise GpuperfError(f"{where}: line {start + 2}: no units row below the header (nvprof --csv writes one)")
    records = []
    for offset, cells in enumerate(rows[2:]):
        line = start + 3 + offset
        if _skipped(cells):
            continue
        row = dict(zip(header, cells))
        if row["Name"].startswith("[CUDA ") or row.get("Type", "GPU activities") != "GPU activities":
            continue
        record = {"kernel": kernel_short_name(row["Name"]), "variant": "", "gpu": "", "device": "", "source": where}
        for column, name in (("Avg", TARGET), ("Min", "time_s_min"), ("Max", "time_s_max")):
            exponent = seconds_exponent(units.get(column) or "s", f"{where}: {column} unit")
            record[name] = shift_decimal(_number(row[column], where, line, column), exponent)
        record[STATUS] = OK
        record["repeats"] = int(_number(row["Calls"], where, line, "Calls"))
        record["kernel_full_name"] = row["Name"]
        records.append(record)
    if not records:
        raise GpuperfError(f"{where}: no GPU kernels in the summary")
    return _finish(pd.DataFrame.from_records(records), [], where)


def _metric_value(text: str, where: str, line: int, metric: str) -> float:
    """``100.00%`` -> 100, ``149.2GB/s`` -> 149.2 (GB/s), ``Mid (5)`` -> 5, ``1,024`` -> 1024."""
    text = text.strip()
    level = re.fullmatch(r"[A-Za-z ]+\((\d+)\)", text)
    if level:
        return float(level.group(1))
    rate = re.fullmatch(r"([-+0-9.,eE]+)\s*([KMGT]?B/s)", text)
    if rate:
        return shift_decimal(_number(rate.group(1), where, line, metric), GB_S_EXPONENT[rate.group(2)])
    return _number(text.rstrip("%"), where, line, metric)


def _metrics_table(path: Path) -> pd.DataFrame:
    """An nvprof ``--metrics`` CSV as one row per (device, kernel) with each metric's average."""
    where = str(path)
    lines = _lines(path)
    start = _find_header(lines, ("Device", "Kernel", "Metric Name", "Avg"), where)
    rows = _csv_rows(lines, start)
    header = rows[0]
    values: dict[tuple[str, str], dict[str, float]] = {}
    for offset, cells in enumerate(rows[1:]):
        line = start + 2 + offset
        if _skipped(cells):
            continue
        if len(cells) != len(header):
            raise GpuperfError(f"{where}: line {line}: {len(cells)} cells, the header has {len(header)}")
        row = dict(zip(header, cells))
        key = (row["Device"], kernel_short_name(row["Kernel"]))
        entry = values.setdefault(key, {"invocations": _number(row.get("Invocations", ""), where, line, "Invocations")})
        entry[row["Metric Name"]] = _metric_value(row["Avg"], where, line, row["Metric Name"])
    if not values:
        raise GpuperfError(f"{where}: no metric rows")
    return pd.DataFrame([{"device": d, "kernel": k, **v} for (d, k), v in values.items()])


def _nvprof_metrics_alone(path: Path) -> pd.DataFrame:
    where = str(path)
    table = _metrics_table(path)
    table["variant"] = ""
    table["gpu"] = table["device"].map(device_gpu)
    table["source"] = where
    table[TARGET] = np.nan
    table[STATUS] = UNTIMED
    return _finish(table, [], where)


def _join_metrics(frame: pd.DataFrame, metrics: Path) -> pd.DataFrame:
    table = _metrics_table(metrics)
    clash = [c for c in table.columns if c in frame.columns and c not in ("device", "kernel")]
    if clash:
        raise GpuperfError(f"{metrics}: metric(s) {', '.join(clash)} are already columns of the profile")
    unknown = set(zip(table["device"], table["kernel"])) - set(zip(frame["device"], frame["kernel"]))
    if unknown:
        device, kernel = sorted(unknown)[0]
        raise GpuperfError(f"{metrics}: kernel '{kernel}' on '{device}' is not in the profile it joins")
    joined = frame.merge(table, on=["device", "kernel"], how="left", validate="many_to_one")
    joined.attrs = frame.attrs
    return joined


def _nvprof_table(path: Path, where: str) -> pd.DataFrame:
    """A table like the bundled Rodinia one (any time column named time_<unit> or duration_<unit>)."""
    raw = read_csv(path)
    time_columns = [c for c in raw.columns if re.fullmatch(r"(time|duration)_(s|ms|us|ns)", str(c))]
    if "kernel" not in raw.columns or "gpu" not in raw.columns or not time_columns:
        raise GpuperfError(
            f"{where}: not an nvprof CSV: no trace (Duration, Name), summary (Avg, Calls, Name), "
            f"metrics (Device, Kernel, Metric Name, Avg) or table (kernel, gpu, time_s) header"
        )
    column = time_columns[0]
    table_format = TableFormat(
        kernel="kernel", time=column, time_unit=column.rsplit("_", 1)[1], gpu="gpu",
        parameters=TABLE_SIZES,
    )
    return table_format.shape(raw, where, where)


# -- Nsight Compute -------------------------------------------------------------------------------

NCU_TIME = "gpu__time_duration.sum"
NCU_DEVICE_COLUMNS = ("Device Name", "device__attribute_display_name", "Device")
NCU_TEXT_COLUMNS = {"Process Name", "Host Name", "Kernel Name", "Context", "Stream", "CC",
                    "Block Size", "Grid Size", *NCU_DEVICE_COLUMNS}


TIME_WORDS = ("nsecond", "usecond", "msecond", "second")


def _ncu_scale(unit: str) -> tuple[float, int, str]:
    """(factor, power of ten, base unit) taking a value to base units: seconds, bytes, per second."""
    top, _, bottom = unit.partition("/")
    factor, exponent, base = 1.0, 0, top
    if top in BYTES_PER_UNIT:
        factor, base = BYTES_PER_UNIT[top], "byte"
    elif top in TIME_WORDS:
        exponent, base = seconds_exponent(top, unit), "second"
    if bottom in TIME_WORDS:
        return factor, exponent - seconds_exponent(bottom, unit), f"{base}/second"
    return (factor, exponent, base) if not bottom else (1.0, 0, unit)


def import_ncu(path: str | Path) -> pd.DataFrame:
    """An Nsight Compute raw-page CSV in the dataset shape, one row per profiled launch.

    Needs ``gpu__time_duration.sum``; metric values are scaled to base units (seconds, bytes,
    bytes/second; the units land in ``frame.attrs["units"]``). ``Block Size``/``Grid Size``
    tuples become ``block.x``... ``grid.z``.
    """
    path = Path(path)
    where = str(path)
    lines = _lines(path)
    start = _find_header(lines, ("Kernel Name",), where)
    rows = _csv_rows(lines, start)
    header = rows[0]
    require_columns(pd.DataFrame(columns=header), ["Kernel Name", NCU_TIME], where)
    device_column = next((c for c in NCU_DEVICE_COLUMNS if c in header), None)
    if device_column is None:
        raise GpuperfError(f"{where}: missing column 'Device Name' (or device__attribute_display_name)")
    units_row = rows[1] if len(rows) > 1 else []
    if len(units_row) != len(header) or ("ID" in header and units_row[header.index("ID")].strip()):
        raise GpuperfError(f"{where}: line {start + 2}: no units row below the header (ncu --csv --page raw writes one)")
    units = dict(zip(header, units_row))
    scales = {c: _ncu_scale(units.get(c, "")) for c in header if c not in NCU_TEXT_COLUMNS}
    if scales[NCU_TIME][2] != "second":
        raise GpuperfError(f"{where}: line {start + 2}: {NCU_TIME} has unit {units[NCU_TIME]!r}, not a time unit")
    records = []
    for offset, cells in enumerate(rows[2:]):
        line = start + 3 + offset
        if _skipped(cells):
            continue
        if len(cells) != len(header):
            raise GpuperfError(f"{where}: line {line}: {len(cells)} cells, the header has {len(header)}")
        row = dict(zip(header, cells))
        device = row[device_column]
        record = {
            "kernel": kernel_short_name(row["Kernel Name"]),
            "variant": "",
            "gpu": device_gpu(device),
            "device": device,
            "source": where,
            TARGET: _time(row[NCU_TIME], scales[NCU_TIME][1], where, line, NCU_TIME),
            STATUS: OK,
            "kernel_full_name": row["Kernel Name"],
        }
        for name in ("Grid Size", "Block Size"):
            if name in row:
                record.update(_dims(row[name], "grid" if name == "Grid Size" else "block", where, line))
        for column, (factor, exponent, _) in scales.items():
            if column != NCU_TIME:
                record[column] = shift_decimal(_number(row[column], where, line, column) * factor, exponent)
        for column in ("Context", "Stream", "CC", "Process Name"):
            if column in row:
                record[column] = row[column]
        records.append(record)
    if not records:
        raise GpuperfError(f"{where}: no profiled kernels below the header and units rows")
    frame = _finish(pd.DataFrame.from_records(records), [], where)
    frame.attrs["units"] = {c: base for c, (_, _, base) in scales.items() if base and c != NCU_TIME}
    return frame


def _dims(text: str, prefix: str, where: str, line: int) -> dict[str, float]:
    numbers = [n.replace(",", "") for n in re.split(r",\s+", text.strip().strip("()"))]
    if len(numbers) != 3 or not all(n.isdigit() for n in numbers):
        raise GpuperfError(f"{where}: line {line}: {prefix} size {text!r} is not '(x, y, z)'")
    return {f"{prefix}.{axis}": float(n) for axis, n in zip("xyz", numbers)}
