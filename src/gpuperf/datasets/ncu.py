"""Nsight Compute CSV to the dataset shape, one row per profiled launch.

Two layouts: ``ncu --csv --page raw`` (a header of metric names, a units row below it, a row per
launch) and ``ncu --csv`` (the details page: a row per launch and metric, with ``Section Name``,
``Metric Name``, ``Metric Unit`` and ``Metric Value``; units may differ from row to row). The time
is ``gpu__time_duration.sum`` (or the details page's ``Duration``, or else the ``.avg``, ``.max`` or
``.min`` of ``gpu__time_duration``). Values are scaled to base units
(seconds, bytes, per second; SI prefixes as ncu writes them: a Kbyte is 1000 bytes) and the units
land in ``frame.attrs["units"]``; a value with no unit that is not a number stays text.
``Block Size``/``Grid Size`` tuples become ``block.x``... ``grid.z``. ncu's ``Device`` column is a
device index: the GPU comes from ``device__attribute_display_name`` or from the ``gpu`` argument.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pandas as pd

from gpuperf.datasets.profiler_csv import (
    checked_row,
    contradicts,
    csv_rows,
    device_gpu,
    find_header,
    finish,
    is_message,
    kernel_short_name,
    note_profiler_messages,
    number,
    signature_variants,
    parse_number,
    positive_time,
    read_lines,
    refuse_empty_gpu,
    refuse_oversized_block,
    refuse_repeated_header,
)
from gpuperf.datasets.schema import OK, SECONDS_EXPONENT, STATUS, TARGET, canonical_gpu, shift_decimal
from gpuperf.errors import GpuperfError

TIME = "gpu__time_duration.sum"
DETAILS_TIME = "Duration"  # the details page's name for it (GPU Speed Of Light section)
# what else a profile may call the time, in order of preference: a launch's average, largest and smallest
# duration over its replay passes are its time as the sum is (a single instance)
TIME_NAMES = (TIME, DETAILS_TIME, "gpu__time_duration.avg", "gpu__time_duration.max", "gpu__time_duration.min")
DEVICE_NAMES = ("device__attribute_display_name", "Device Name")
LAUNCH_COLUMNS = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
                  "Block Size", "Grid Size", "Device", "CC")
TEXT_COLUMNS = {"Process Name", "Host Name", "Kernel Name", "Context", "Stream", "CC", "Block Size",
                "Grid Size", "Device", *DEVICE_NAMES}
LONG_COLUMNS = ("Metric Name", "Metric Unit", "Metric Value")
SIZE_METRICS = ("Block Size", "Grid Size")  # launch columns '(x, y, z)', or Launch Statistics counts
PREFIXES = {"": 0, "K": 3, "M": 6, "G": 9, "T": 12, "P": 15}
# ncu's own messages: a kernel it failed to profile (after which it profiles no more), a replay's caveat
MESSAGE = re.compile(r"==(ERROR|WARNING)== (.*)")
COUNTED = "byte|cycle|inst|sector|request|warp|thread|block|transaction|instruction|wavefront"


@cache  # one parse per unit, not per cell
def scale(unit: str) -> tuple[int, str]:
    """(power of ten, base unit) taking a value in ``unit`` to base units.

    ``usecond`` / ``us`` -> (-6, second); ``Kbyte`` -> (3, byte); ``Tbyte/s`` -> (12, byte/second);
    ``Kbyte/block`` -> (3, byte/block); ``cycle/usecond`` -> (6, cycle/second); ``Ghz`` -> (9,
    cycle/second); anything else
    (``%``, ``register/thread``) is kept as it is.
    """
    top, slash, bottom = unit.strip().partition("/")
    exponent, base = 0, top
    frequency = re.fullmatch(r"([KMGTP]?)hz", top, flags=re.IGNORECASE)
    if frequency and not slash:  # hz, Khz, Mhz, Ghz: what ncu writes for clock rates, as cycle/second
        return PREFIXES[frequency.group(1).upper()], "cycle/second"
    if top in SECONDS_EXPONENT:
        exponent, base = SECONDS_EXPONENT[top], "second"
    else:
        counted = re.fullmatch(rf"([KMGTP]?)({COUNTED})s?", top)
        if counted:
            exponent, base = PREFIXES[counted.group(1)], counted.group(2)
    if not slash:
        return exponent, base
    if bottom in SECONDS_EXPONENT:
        return exponent - SECONDS_EXPONENT[bottom], f"{base}/second"
    return exponent, f"{base}/{bottom}"


def import_ncu(path: str | Path, gpu: str | None = None) -> pd.DataFrame:
    """An Nsight Compute CSV (raw page or details page) in the dataset shape; see the module docstring."""
    path = Path(path)
    where = str(path)
    refuse_empty_gpu(gpu, where)
    lines = read_lines(path)
    if not any(line.startswith("==PROF==") or "Kernel Name" in line for line in lines) and any(
            re.match(r"==(?:\d+|=+)== (Profiling result|Metric result|Event result|NVPROF)", line) for line in lines[:50]):
        raise GpuperfError(f"{where}: an nvprof file, not Nsight Compute's: gpuperf import nvprof reads it")
    note_profiler_messages(lines, where, MESSAGE, "Nsight Compute")  # the table may end at a failed launch
    start = find_header(lines, ("Kernel Name",), where)
    rows = csv_rows(lines, start)
    if {"Metric Name", "Average"} <= set(rows[0]):
        raise GpuperfError(f"{where}: line {start + 1}: an ncu --print-summary table (a kernel's metrics "
                           "averaged over its launches); gpuperf reads one row per launch: export with "
                           "ncu --csv --page raw (or --page details)")
    if all(c in rows[0] for c in LONG_COLUMNS):
        launches = _details_launches(rows, start, where)
    else:
        launches = _raw_launches(rows, start, where)
    records = [_record(launch, gpu, where) for launch in launches]
    if not records:
        raise GpuperfError(f"{where}: no profiled kernels below the header")
    units = _base_units(launches, where)
    frame = finish(signature_variants(pd.DataFrame.from_records(records)), where)
    frame.attrs["units"] = {c: base for c, base in units.items() if base and c in frame.columns}
    return frame


def _base_units(launches: list[Launch], where: str) -> dict[str, str]:
    """Each metric's base unit (:func:`scale`); a metric whose unit changes to another base (a
    ``Gbyte/second`` then a ``%``) is an error naming both units as the file writes them and their lines."""
    units: dict[str, str] = {}
    first: dict[str, tuple[str, int]] = {}  # each metric's unit as written, and its line
    for launch in launches:
        for column, unit in launch.units.items():
            base = scale(unit)[1]
            first.setdefault(column, (unit, launch.unit_line(column)))
            if units.setdefault(column, base) != base:
                written, line = first[column]
                raise GpuperfError(f"{where}: line {launch.unit_line(column)}: {column} in {unit!r}, above (line "
                                   f"{line}) in {written!r}")
    return units


@dataclass
class Launch:
    """One profiled launch: its first line, each metric's text and unit, and the lines they are on
    (where those differ from ``line``: the raw page's units row, the details page's metric rows)."""

    line: int
    values: dict[str, str]
    units: dict[str, str]
    value_lines: dict[str, int] = field(default_factory=dict)
    units_line: int | None = None
    sections: dict[str, str] = field(default_factory=dict)  # the details page's section of each metric
    time_name: str = TIME  # what the file calls the time: the details page's Duration, or the raw metric

    def value_line(self, column: str) -> int:
        return self.value_lines.get(column, self.line)

    def unit_line(self, column: str) -> int:
        return self.units_line if self.units_line is not None else self.value_line(column)


def _raw_launches(rows: list[list[str]], start: int, where: str) -> list[Launch]:
    header = rows[0]
    if not any(name in header for name in TIME_NAMES):
        raise GpuperfError(f"{where}: missing column(s) '{TIME}' (or {', '.join(TIME_NAMES[2:])})")
    units_row = rows[1] if len(rows) > 1 else []
    if len(units_row) != len(header) or ("ID" in header and units_row[header.index("ID")].strip()):
        raise GpuperfError(f"{where}: line {start + 2}: no units row below the header (ncu --csv --page raw writes one)")
    units = {c: u for c, u in zip(header, units_row) if c not in TEXT_COLUMNS}
    launches = []
    for offset, cells in enumerate(rows[2:]):
        line = start + 3 + offset
        if not is_message(cells):
            refuse_repeated_header(cells, header, where, line)
            launches.append(_timed(Launch(line, checked_row(cells, header, where, line), dict(units),
                                          units_line=start + 2), where))
    return launches


def _timed(launch: Launch, where: str) -> Launch:
    """The launch with its time under :data:`TIME`, taken from the first of :data:`TIME_NAMES` it has."""
    name = next((name for name in TIME_NAMES if name in launch.values), None)
    if name is None:
        raise GpuperfError(f"{where}: line {launch.line}: launch {launch.values.get('ID', '?')} has no metric "
                           f"{' or '.join(repr(n) for n in TIME_NAMES)}")
    if name != TIME:
        launch.values[TIME], launch.units[TIME] = launch.values.pop(name), launch.units.pop(name, "")
        launch.value_lines[TIME] = launch.value_lines.pop(name, launch.line)
        launch.time_name = name
    return launch



def _details_launches(rows: list[list[str]], start: int, where: str) -> list[Launch]:
    """The details page's rows gathered per launch (``ID``); a metric named twice in one launch
    with another value or unit is named ``Section: Metric``. A metric repeated so in its own
    section, and an ``ID`` reused by another process, kernel, grid or block (two profiles pasted into
    one file), are errors."""
    header = rows[0]
    by_id: dict[str, Launch] = {}
    for offset, cells in enumerate(rows[1:]):
        line = start + 2 + offset
        if is_message(cells):
            continue
        refuse_repeated_header(cells, header, where, line)
        row = checked_row(cells, header, where, line)
        if not row["Metric Name"].strip():
            continue  # a rule's finding (Rule Name, Rule Description, Estimated Speedup), not a metric
        launch_id = row.get("ID", str(offset))
        if launch_id not in by_id:
            by_id[launch_id] = Launch(line, {c: row[c] for c in LAUNCH_COLUMNS if c in row}, {})
        launch = by_id[launch_id]
        _same_launch(launch, row, where, line)
        name, section = row["Metric Name"], row.get("Section Name", "")
        if _differs(launch, name, row) and launch.sections.get(name) != section:
            name = f"{section}: {name}"
        if _differs(launch, name, row):
            now, before = (f"{value} {unit}".strip() for value, unit in (
                (row["Metric Value"], row["Metric Unit"]), (launch.values[name], launch.units.get(name, ""))))
            raise GpuperfError(f"{where}: line {line}: launch {launch_id} has {section}: {row['Metric Name']} again, "
                               f"now {now} (line {launch.value_line(name)}: {before})")
        launch.values[name], launch.units[name], launch.value_lines[name] = row["Metric Value"], row["Metric Unit"], line
        launch.sections[name] = section
    return [_timed(launch, where) for launch in by_id.values()]


def _differs(launch: Launch, name: str, row: dict[str, str]) -> bool:
    """Whether the launch already has metric ``name`` with another value or unit than ``row``'s (ncu
    names Memory Throughput in % in one section and in byte/second in another: both 0 on an idle launch)."""
    return name in launch.values and (launch.values[name], launch.units.get(name, "")) != (row["Metric Value"],
                                                                                         row["Metric Unit"])


def _same_launch(launch: Launch, row: dict[str, str], where: str, line: int) -> None:
    """A details row of a launch ID already seen belongs to that launch: another process, kernel, grid
    or block under the same ID (two profiles pasted into one file) is an error."""
    for column in ("Process ID", "Kernel Name", "Block Size", "Grid Size", "Device"):
        if column in row and row[column] != launch.values.get(column, row[column]):
            raise GpuperfError(f"{where}: line {line}: launch ID {row['ID']} again with {column} {row[column]!r} "
                               f"(line {launch.line}: {launch.values[column]!r}); one profile per file")


def _record(launch: Launch, gpu: str | None, where: str) -> dict:
    values, units, line = launch.values, launch.units, launch.line
    time_exponent, time_base = scale(units.get(TIME, ""))
    if time_base != "second":
        raise GpuperfError(f"{where}: line {launch.unit_line(TIME)}: {launch.time_name} has unit {units.get(TIME, '')!r}, "
                           "not a time unit")
    device = _device(values, gpu, where, line)
    record = {
        "kernel": kernel_short_name(values["Kernel Name"]),
        "variant": "",
        "gpu": canonical_gpu(gpu) if device == gpu else device_gpu(device),  # the file's own name first
        "device": device,
        "source": where,
        TARGET: positive_time(values[TIME], time_exponent, where, launch.value_line(TIME), launch.time_name),
        STATUS: OK,
        "kernel_full_name": values["Kernel Name"],
    }
    dims = {name: values[name] for name in ("Grid Size", "Block Size") if name in values and "(" in values[name]}
    for name, text in dims.items():
        record.update(_dims(text, "grid" if name == "Grid Size" else "block", where, line))
    for column, text in values.items():
        if (column in TEXT_COLUMNS and column not in SIZE_METRICS) or column in dims or column in (TIME, "Kernel Name"):
            continue  # an older details page has no launch columns: its Block Size and Grid Size are counts
        unit = units.get(column, "")
        value = parse_number(text)
        if value is None and not unit:
            record[column] = text  # a text attribute (a cache configuration, a mode)
        else:
            record[column] = shift_decimal(number(text, where, launch.value_line(column), column), scale(unit)[0])
    for column in ("Context", "Stream", "CC", "Process Name"):
        if column in values:
            record[column] = values[column]
    _refuse_contradicting_totals(record, launch, dims, where)
    _refuse_oversized_block(record, launch, dims, where)
    return record


def _refuse_contradicting_totals(record: dict, launch: Launch, dims: dict[str, str], where: str) -> None:
    """An error naming the line where a launch's whole count (``launch__grid_size``, the details page's
    ``Launch Statistics: Grid Size``) is not the product of its ``(x, y, z)`` size."""
    for name, kind in (("Grid Size", "grid"), ("Block Size", "block")):
        if name not in dims:
            continue
        product = record[f"{kind}.x"] * record[f"{kind}.y"] * record[f"{kind}.z"]
        for column in (f"launch__{kind}_size", f"Launch Statistics: {name}"):
            total = record.get(column)
            if isinstance(total, float) and total == total and total != product:
                unit = launch.units.get(column, "").strip()  # a units row's Kthread scales 256 to 256,000
                said = f"{launch.values[column].strip()} {unit} (line {launch.unit_line(column)}'s unit)" if unit \
                    else launch.values[column].strip()
                raise GpuperfError(f"{where}: line {launch.value_line(column)}: {column} "
                                   f"{said} contradicts {name} {dims[name]} "
                                   f"({product:g} {'blocks' if kind == 'grid' else 'threads'}); one of them is damaged")


def _refuse_oversized_block(record: dict, launch: Launch, dims: dict[str, str], where: str) -> None:
    """An error naming the line of a block (its (x, y, z) size, or a count of its threads) no GPU runs."""
    if "Block Size" in dims:
        refuse_oversized_block(record["block.x"] * record["block.y"] * record["block.z"], where, launch.line,
                               f"Block Size {dims['Block Size']}")
    for column in ("launch__block_size", "Block Size", "Launch Statistics: Block Size"):
        if column not in dims and isinstance(record.get(column), float):
            refuse_oversized_block(record[column], where, launch.value_line(column),
                                   f"{column} {launch.values[column].strip()}")


def _device(values: dict[str, str], gpu: str | None, where: str, line: int) -> str:
    named = next((values[c] for c in DEVICE_NAMES if values.get(c, "").strip()), None)
    if named is not None:
        if gpu is not None and contradicts(named, gpu):
            raise GpuperfError(f"{where}: line {line}: the profile names its GPU, {named}; --gpu {gpu} contradicts it "
                               "(--gpu is for a profile that names none)")
        return named
    if gpu is not None:
        return gpu
    index = values.get("Device", "")
    raise GpuperfError(
        f"{where}: line {line}: the profile names no GPU (Device is the index {index!r}); "
        f"collect device__attribute_display_name or say which GPU it ran on (--gpu)"
    )


def _dims(text: str, prefix: str, where: str, line: int) -> dict[str, float]:
    numbers = [n.replace(",", "") for n in re.split(r",\s+", text.strip().strip("()"))]
    if len(numbers) != 3 or not all(n.isdigit() for n in numbers):
        raise GpuperfError(f"{where}: line {line}: {prefix} size {text!r} is not '(x, y, z)'")
    return {f"{prefix}.{axis}": float(n) for axis, n in zip("xyz", numbers)}
