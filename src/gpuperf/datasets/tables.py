"""Landing a published measurement table in the dataset shape: a column map per table format."""

from __future__ import annotations

import bz2
import codecs
import csv
import gzip
import itertools
import lzma
import re
import tarfile
import unicodedata
import warnings
import zipfile
import zlib
from collections import Counter
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from gpuperf.datasets.schema import (
    OK,
    ROW_NUMBERING,
    STATUS,
    TARGET,
    check_dataset,
    lookup_gpu,
    order_columns,
    row_location,
    text_cells,
    to_seconds,
    variant_labels,
)
from gpuperf.errors import GpuperfError, missing_file, too_large

OK_SPELLINGS = {"ok", "Ok", "OK"}


CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zip", ".csv.zst")  # names read as CSV tables
PARQUET_SUFFIXES = (".parquet", ".pq")


def _refuse_profiler_output(path: Path) -> None:
    """An error where an unreadable table is a profiler's own CSV (nvprof's ``==PID==`` or Nsight
    Compute's ``==PROF==`` log lines): gpuperf's importers make it a table."""
    from gpuperf.datasets.profiler_csv import is_ncu_csv, read_lines

    try:
        lines = read_lines(path)[:50]
    except GpuperfError:
        return
    if any(re.match(r"==(\d+|PROF)==", line) for line in lines):
        raise _profiler_output(path, "ncu" if is_ncu_csv(lines) else "nvprof", "its '==' log lines")


# Header columns that only a profiler's own CSV has (Nsight Compute's; an nvprof GPU trace's, its metrics' or events').
PROFILER_HEADERS = (("ncu", {"Process ID", "Kernel Name"}), ("nvprof", {"Duration", "Name", "Device", "Grid X"}),
                    ("nvprof", {"Device", "Kernel", "Invocations"}))


def refuse_profiler_table(frame: pd.DataFrame, path: str | Path) -> None:
    """An error where a table read whole is a profiler's own CSV without its log lines (``ncu
    --import REPORT --csv``, ``nvprof --log-file``): gpuperf's importers make it a table."""
    for profiler, header in PROFILER_HEADERS:
        if header <= set(map(str, frame.columns)):
            raise _profiler_output(path, profiler, f"its {', '.join(sorted(header))} columns")


def _profiler_output(path: str | Path, profiler: str, evidence: str) -> GpuperfError:
    return GpuperfError(f"{path}: a profiler's own CSV ({evidence}), not a table: gpuperf import {profiler} {path} "
                        "--out TABLE.csv makes it one")


def read_csv(path: str | Path, **options) -> pd.DataFrame:
    """A CSV (plain or gzip) as read by pandas; a missing, empty or unparsable file is one clear
    error, and so (read with no options) is a header naming a column twice, a file separated by
    semicolons or tabs, or a spreadsheet's ``sep=`` line above the header. Read with no options,
    spaces around a header's names are no part of them, rows at the end with no value at all (a
    spreadsheet's empty rows) are no rows, and the rows are numbered by file line in error messages
    (:func:`row_location`). One too large for memory (a decompression bomb) is an error naming it."""
    try:
        return _read_csv(Path(path), **options)
    except MemoryError:
        raise too_large(path) from None


def repeated_names(names: list[str]) -> list[str]:
    """The names ``names`` holds more than once, sorted; in time linear in their number (a header of
    a million columns is checked in a second, not in hours)."""
    return sorted(name for name, count in Counter(names).items() if count > 1)


# A compressed file's first bytes, and the suffix under which pandas reads it so; bzip2's: "BZh", the block size 1-9,
# then a block's or the stream end's magic (a header "BZh1,..." is text); zip's: a file's local header (or an empty
# archive's end record).
COMPRESSION_MAGIC = ((re.compile(rb"\x1f\x8b"), "gzip", ".gz"),
                     (re.compile(rb"BZh[1-9](1AY&SY|\x17rE8P\x90)"), "bzip2", ".bz2"),
                     (re.compile(rb"\xfd7zXZ\x00"), "xz", ".xz"),
                     (re.compile(rb"PK(\x03\x04|\x05\x06)"), "zip", ".zip"),
                     (re.compile(rb"\x28\xb5\x2f\xfd"), "zstd", ".zst"))
COMPRESSED_SUFFIXES = {".gz", ".bz2", ".xz", ".zip", ".zst", ".tar", ".tgz", ".tbz", ".tbz2", ".txz"}


def refuse_compressed_under_plain_name(path: Path, readable: Collection[str] = COMPRESSED_SUFFIXES) -> None:
    """An error where a file named as plain text (``.csv``, ``.json``) holds gzip, bzip2, xz, zip or zstd data,
    which gpuperf reads by its name's suffix only: the name to give it instead, where its reader takes that
    suffix (``readable``), else to decompress it."""
    if path.suffix.lower() in COMPRESSED_SUFFIXES:
        return
    try:
        with path.open("rb") as handle:
            start = handle.read(10)
    except OSError:  # unreadable: said as pandas fails to read it
        return
    for magic, kind, suffix in COMPRESSION_MAGIC:
        if magic.match(start):
            fix = f"name it {path.name}{suffix} (read compressed), or decompress it" if suffix in readable else \
                "decompress it"
            raise GpuperfError(f"{path}: {kind}-compressed data under a name without {suffix}: {fix}")


# A compressed tar archive's short suffix, which pandas does not infer (read as text, it is garbled), and its long one
SHORT_TAR_SUFFIXES = {".tgz": ".tar.gz", ".tbz": ".tar.bz2", ".tbz2": ".tar.bz2", ".txz": ".tar.xz"}


def refuse_short_tar_name(path: Path) -> None:
    """An error for a table named as a compressed tar archive by a short suffix (``t.tgz``): the name under
    which a tar archive of one table is read (``t.tar.gz``), else to extract it."""
    long_suffix = SHORT_TAR_SUFFIXES.get(path.suffix.lower())
    if long_suffix:
        raise GpuperfError(f"{path}: a tar archive named {path.suffix}, not read as one: name it "
                           f"{path.stem}{long_suffix} if it holds one table and nothing else, or extract it "
                           f"(tar -xf {path.name})")


def _read_csv(path: Path, **options) -> pd.DataFrame:
    if not path.is_file():
        raise missing_file(path, f"{path}: no such file")
    refuse_short_tar_name(path)
    if options.get("compression", "infer") == "infer":
        refuse_compressed_under_plain_name(path)
    utf16 = None if "encoding" in options else _utf16(path)
    if utf16:  # Windows PowerShell's > writes UTF-16, and .NET's Encoding.Unicode without a mark; UTF-32 too
        options = {**options, "encoding": utf16}
    if not options.keys() - {"encoding"}:
        _refuse_separator_line(path, options.get("encoding", "utf-8"))
    try:
        frame = pd.read_csv(path, low_memory=False, **options)
        header = None if options.keys() - {"encoding"} else pd.read_csv(
            path, nrows=1, header=None, dtype=str, **options)
    except pd.errors.EmptyDataError:
        raise GpuperfError(f"{path}: empty file") from None
    except (lzma.LZMAError, zipfile.BadZipFile, tarfile.ReadError) as exc:  # named .xz, .zip, .tar but not one
        reason = str(exc).splitlines()[0].rstrip(":")
        raise GpuperfError(f"{path}: cannot be read as a {''.join(path.suffixes[-1:])} file ({reason})") from None
    except ImportError as exc:  # a compression (.zst) whose package is not installed
        raise GpuperfError(f"{path}: reading a {''.join(path.suffixes[-1:])} file needs a package gpuperf does not "
                           f"install ({exc}); decompress it first") from None
    except UnicodeDecodeError as exc:
        line = _undecodable_line(path, options.get("encoding", "utf-8"))
        at = f"line {line}: " if line else ""
        raise GpuperfError(f"{path}: {at}bytes that are not {exc.encoding.upper()} text; save the table as "
                           "UTF-8") from None
    except (pd.errors.ParserError, EOFError, OSError, zlib.error) as exc:
        if "out of memory" in str(exc):  # pandas' C parser ran out: reading it again to diagnose would too
            raise too_large(path) from None
        if not options.keys() - {"encoding"}:
            _refuse_other_separators(path, options.get("encoding", "utf-8"))  # a cell holding a comma
        _refuse_profiler_output(path)
        if "Expected" not in str(exc):  # pandas' "Expected 3 fields in line 5, saw 4": a row longer than the rest
            raise GpuperfError(f"{path}: not a readable CSV table ({str(exc).splitlines()[0]})") from None
        longer = _first_longer_row(path, options.get("encoding", "utf-8"))
        if longer:
            line, saw, expected = longer
            raise GpuperfError(f"{path}: line {line}: {saw} fields, where the rows before it have {expected} (a "
                               "value holding a comma without quotes?)") from None
        frame = _without_empty_extra_fields(path, options)  # only empty fields past the header's: a comma at an end
        header = None if options.keys() - {"encoding"} else pd.read_csv(
            path, nrows=1, header=None, dtype=str, **options)
    except ValueError as exc:  # (after its subclasses above) an archive holding no file, or several
        if "files found in" not in str(exc):
            raise
        found = str(exc).split(" found")[0].split()[0].lower()  # "Zero" or "Multiple"
        raise GpuperfError(f"{path}: {found} entries in the archive (a folder counts as one); an archive must hold "
                           "one table and nothing else") from None
    if "index_col" not in options and not frame.index.equals(pd.RangeIndex(len(frame))):
        if header is not None:
            _refuse_other_separators(path, options.get("encoding", "utf-8"))
        frame = _without_trailing_field(path, options)
    if header is not None:
        # A header typed with spaces after its commas ("n, m, time_s") names n, m and time_s.
        frame.columns = [name.strip() if isinstance(name, str) else name for name in frame.columns]
        names = [str(name).strip() for name in header.iloc[0] if pd.notna(name) and str(name).strip()]
        repeated = repeated_names(names)
        if repeated:
            raise GpuperfError(f"{path}: the header names column {repeated[0]} more than once")
        for separator, shown in ((";", "';'"), ("\t", "tabs")):
            if len(names) == 1 and separator in names[0]:
                raise GpuperfError(f"{path}: one column named '{names[0][:40]}...': the file is separated by "
                                   f"{shown}; gpuperf reads comma-separated CSV")
        # Row i is line i + 2 unless the file holds lines that are no row (blank lines, a quoted
        # value over several lines); then rows are counted as rows.
        lines = _lines(path, options.get("encoding", "utf-8"))
        frame.attrs[ROW_NUMBERING] = "line" if lines is not None and lines[0] == len(frame) + 1 else "row"
        if frame.attrs[ROW_NUMBERING] == "line":
            _refuse_short_last_row(path, frame, *lines)
        frame = _without_trailing_empty_rows(frame, path, options)
        frame = _exact_large_integers(frame, path, options)
        frame = _names_as_written(frame, path, options)
    return frame


# Columns holding names (kernels, GPUs, variant labels): text as written, never a number or a missing value.
NAME_COLUMNS = ("kernel", "variant", "gpu", "device", "source", "kernel_spec", "kernel_full_name", "gpu_label")
# Of those, the columns whose names are never a missing-value word (a variant label is param=value, a kernel_spec a
# kernel's spec, a gpu a GPU's name): there a cell pandas reads as missing (R's NA, NULL, N/A) stays missing, no
# variant, spec or GPU.
OPTIONAL_NAME_COLUMNS = ("variant", "kernel_spec", "gpu")


def _names_as_written(frame: pd.DataFrame, path: Path, options: dict) -> pd.DataFrame:
    """``frame`` with its name columns (:data:`NAME_COLUMNS`) read again as the text the file holds, only an
    empty cell being missing: a kernel named ``007``, ``1e3`` or ``nan`` keeps its name, and ``01`` and ``1``
    stay two kernels, where pandas would read 7.0, 1000.0, a missing value, and 1 twice. In
    :data:`OPTIONAL_NAME_COLUMNS` a missing value as pandas reads it (``NA``) stays missing."""
    positions = [position for position, name in enumerate(frame.columns) if name in NAME_COLUMNS
                 and not _all_text(frame.iloc[:, position])]
    text = _columns_as_text(frame, path, options, positions, keep_default_na=False) if positions else None
    if text is None:
        return frame
    frame = frame.copy()
    for position, (_, cells) in zip(positions, text.items()):
        written = cells.replace("", np.nan)
        if frame.columns[position] in OPTIONAL_NAME_COLUMNS:
            written = written.where(frame.iloc[:, position].notna())
        frame.isetitem(position, written)
    return frame


def _columns_as_text(frame: pd.DataFrame, path: Path, options: dict, positions: list[int],
                     keep_default_na: bool = True) -> pd.DataFrame | None:
    """The columns at ``positions`` of the CSV ``path`` (which ``frame`` was read from with ``options``) read
    again as text, their rows those of ``frame``; None where they cannot be read back alike."""
    try:
        text = pd.read_csv(path, low_memory=False, dtype=str, keep_default_na=keep_default_na, usecols=positions,
                           **options)
    except (pd.errors.ParserError, ValueError):
        return None
    if len(text.columns) != len(positions) or not frame.index.isin(text.index).all():
        return None
    return text.loc[frame.index]


def _all_text(values: pd.Series) -> bool:
    """Whether every cell of ``values`` is a string, none of them missing: pandas read nothing there as a
    number, a truth value or a missing value (``nan``, ``NA``, ``None``). A column of pandas' string type
    holds strings only, so it is checked without a Python call per cell (a million rows: seconds)."""
    if isinstance(values.dtype, pd.StringDtype):
        return bool(values.notna().all())
    return values.map(lambda value: isinstance(value, str)).all()


INTEGER_TEXT = re.compile(r"\s*[+-]?\d+\s*")


def _exact_large_integers(frame: pd.DataFrame, path: Path, options: dict) -> pd.DataFrame:
    """``frame`` with each column pandas read as float64 only for an empty cell, whose whole numbers pass
    2**53, read again from its text as Python ints (empty cells NaN): 9007199254740993 stays itself, not
    9007199254740992, so sizes and parameters past 2**53 keep apart as they do in a column with no empty cell."""
    candidates = [position for position, (_, values) in enumerate(frame.items())
                  if values.dtype == np.float64 and values.isna().any() and values.notna().any()
                  and np.isfinite(values.dropna()).all() and (values.dropna() % 1 == 0).all()
                  and (values.dropna().abs() >= 2.0**53).any()]
    text = _columns_as_text(frame, path, options, candidates) if candidates else None
    if text is None:
        return frame
    frame = frame.copy()
    for position, (_, cells) in zip(candidates, text.items()):
        if not cells.dropna().map(lambda cell: bool(INTEGER_TEXT.fullmatch(cell))).all():
            continue  # 1e20 or 5.0: a float as written
        exact = pd.Series([int(cell) if isinstance(cell, str) else np.nan for cell in cells], index=cells.index,
                          dtype=object)
        frame.isetitem(position, exact)
    return frame


def _without_trailing_empty_rows(frame: pd.DataFrame, path: Path, options: dict) -> pd.DataFrame:
    """``frame`` without the rows at its end that hold no value at all (a spreadsheet saves its empty
    rows as lines of commas), read again without them so that a column of whole numbers stays one;
    the rows before keep their labels, so their line numbers stay true."""
    filled = np.flatnonzero(frame.notna().any(axis=1).to_numpy())
    end = int(filled[-1]) + 1 if len(filled) else 0
    if end == len(frame):
        return frame
    kept = frame.iloc[:end]
    if end:
        try:
            again = pd.read_csv(path, low_memory=False, nrows=end, **options)
        except (pd.errors.ParserError, ValueError):  # read only by a fallback above: its columns as they were
            again = None
        if again is not None and again.shape == kept.shape and again.index.equals(kept.index):  # not shifted
            again.columns = kept.columns
            kept = again
    kept.attrs = dict(frame.attrs)
    return kept


def _refuse_short_last_row(path: Path, frame: pd.DataFrame, count: int, last: str) -> None:
    """An error naming the last line (line ``count``, text ``last``) when it has fewer fields than the
    header and no line end: a file cut while it was written, whose last row pandas would fill with
    empty cells (it passed for a failed run). A short row that ends its line is a row written so (an
    ``ask`` table's unmeasured time)."""
    if frame.empty or last.endswith("\n") or not pd.isna(frame.iloc[-1, -1]):
        return
    try:
        fields = next(csv.reader([last]), [])
    except csv.Error:  # a field past the csv module's limit: pandas read it, so it is whole
        return
    if len(fields) < len(frame.columns):
        raise GpuperfError(f"{path}: line {count}: {len(fields)} fields, the header has {len(frame.columns)}, and no "
                           "line end (a file cut short while written?)")


def _records(path: Path, encoding: str) -> Iterator[tuple[int, list[str]]]:
    """Each CSV record of a plain or compressed file with the line it starts on (a blank line: no fields)."""
    with OPENERS.get(path.suffix.lower(), open)(path, "rt", encoding=encoding, errors="replace", newline="") as handle:
        reader = csv.reader(handle)
        line = 1
        for fields in reader:
            yield line, fields
            line = reader.line_num + 1


UNREADABLE = (OSError, EOFError, csv.Error, zlib.error, lzma.LZMAError)  # what reading records may raise


def _first_longer_row(path: Path, encoding: str) -> tuple[int, int, int] | None:
    """The first row with more fields than the rows before it, empty fields at its end not counted
    (pandas' "Expected 3 fields in line 5" counts rows, not lines, past a quoted value spanning lines):
    its first line, its fields and theirs."""
    widest = 0
    try:
        for line, fields in _records(path, encoding):
            while fields and not fields[-1].strip():  # a comma at a line's end adds no value
                fields.pop()
            if fields and widest and len(fields) > widest:
                return line, len(fields), widest
            widest = max(widest, len(fields))
    except UNREADABLE:
        return None
    return None


def _without_empty_extra_fields(path: Path, options: dict) -> pd.DataFrame:
    """A CSV whose rows after the first have empty fields past the header's (a comma at a line's end,
    which pandas' fast reader refuses) read as the header says."""
    width = len(pd.read_csv(path, nrows=0, **options).columns)
    return pd.read_csv(path, engine="python", index_col=False, on_bad_lines=lambda fields: fields[:width], **options)


def _record_line(path: Path, encoding: str, record: int) -> int | None:
    """The file line on which data row ``record`` (0-based, blank lines skipped as pandas does) starts."""
    try:
        starts = (line for line, fields in _records(path, encoding) if fields)
        return next(itertools.islice(starts, record + 1, None), None)  # the header's is the first
    except UNREADABLE:
        return None


def _first_line(path: Path, encoding: str) -> str | None:
    """The first line of a plain or compressed text file (None when it cannot be read)."""
    try:
        with OPENERS.get(path.suffix.lower(), open)(path, "rt", encoding=encoding, errors="replace") as handle:
            return handle.readline()
    except (OSError, EOFError, zlib.error, lzma.LZMAError):
        return None


def _refuse_separator_line(path: Path, encoding: str) -> None:
    """An error when the first line is a spreadsheet's separator hint (``sep=,``), not a header."""
    first = (_first_line(path, encoding) or "").lstrip("\ufeff").strip()
    hint = re.fullmatch(r'"?sep=(.?)"?,*', first, re.IGNORECASE)
    if hint and hint[1] not in ("", ","):
        raise GpuperfError(f"{path}: line 1: '{first}': the file is separated by '{hint[1]}'; gpuperf reads "
                           "comma-separated CSV")
    if hint:
        raise GpuperfError(f"{path}: line 1: '{first}' is a spreadsheet's separator hint, not a header; delete that "
                           "line")


def _refuse_other_separators(path: Path, encoding: str) -> None:
    """An error when the header line holds no comma but semicolons or tabs: a table of another separator,
    whose cells may still hold commas (1,5 or a variant label) that pandas split on."""
    first = _first_line(path, encoding) or ""
    for separator, shown in ((";", "';'"), ("\t", "tabs")):
        if "," not in first and separator in first:
            raise GpuperfError(f"{path}: the header is separated by {shown}; gpuperf reads comma-separated CSV")


def _undecodable_line(path: Path, encoding: str) -> int | None:
    """The line of a plain or compressed text file holding its first byte ``encoding`` cannot decode."""
    try:
        with OPENERS.get(path.suffix.lower(), open)(path, "rb") as handle:
            data = handle.read()
        data.decode(encoding)
    except UnicodeDecodeError as error:
        return data.count(b"\n", 0, error.start) + 1
    except (OSError, EOFError, LookupError, zlib.error, lzma.LZMAError):
        return None
    return None


def _without_trailing_field(path: Path, options: dict) -> pd.DataFrame:
    """A CSV whose every row has more fields than its header (pandas would take the first column
    for an index and shift every name by one): read as the header says where the extra fields are
    empty (a comma at each line's end), else an error naming the first line with a value there."""
    with warnings.catch_warnings():  # pandas warns that the rows are longer than the header: said below
        warnings.simplefilter("ignore", pd.errors.ParserWarning)
        frame = pd.read_csv(path, low_memory=False, index_col=False, **options)
    cells = pd.read_csv(path, header=None, skiprows=1, dtype=str, keep_default_na=False, **options)
    cells = cells.fillna("").apply(lambda column: column.str.strip())  # a row shorter than the longest: padded
    extra = cells.iloc[:, len(frame.columns):].ne("").any(axis=1)
    encoding = options.get("encoding", "utf-8")
    if extra.all():
        line = _record_line(path, encoding, 0) or 2
        raise GpuperfError(f"{path}: line {line}: {cells.shape[1]} fields, the header names {len(frame.columns)}; "
                           "every row has more fields than the header (a column without a name?)")
    if extra.any():
        record = int(extra.to_numpy().nonzero()[0][0])
        line = _record_line(path, encoding, record) or record + 2
        fields = int(cells.iloc[record].ne("").to_numpy().nonzero()[0][-1]) + 1
        raise GpuperfError(f"{path}: line {line}: {fields} fields, the header names {len(frame.columns)} (a value "
                           "holding a comma without quotes?)")
    return frame


OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}  # compressed text by suffix


UTF16_MARKS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)  # how Windows PowerShell's > starts a file
UTF32_MARKS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)  # UTF-32-LE's mark starts with UTF-16-LE's


def _utf16(path: Path) -> str | None:
    """The UTF-16 or UTF-32 encoding of a plain (uncompressed) file, None for another (:func:`wide_encoding`)."""
    if path.suffix.lower() in OPENERS or path.suffix.lower() in (".zip", ".zst"):
        return None
    with open(path, "rb") as handle:
        return wide_encoding(handle.read(512))


def wide_encoding(start: bytes) -> str | None:
    """``utf-32`` or ``utf-16`` where a file's first bytes are its byte-order mark (UTF-32's first, as
    UTF-32-LE's begins with UTF-16-LE's), else that of :func:`utf32_without_mark` or
    :func:`utf16_without_mark`; None for text of one byte a character (UTF-8, Latin-1)."""
    if start[:4] in UTF32_MARKS:
        return "utf-32"
    if start[:2] in UTF16_MARKS:
        return "utf-16"
    return utf32_without_mark(start) or utf16_without_mark(start)


def utf32_without_mark(start: bytes) -> str | None:
    """``utf-32-le`` or ``utf-32-be`` where a file's first bytes are UTF-32 text without a byte-order
    mark, as the NUL bytes of its mostly-ASCII characters tell: the three high bytes of each
    four NUL in most, the two highest in all, the low one never."""
    quads = len(start) // 4
    if quads < 2:
        return None
    lanes = [start[lane:4 * quads:4] for lane in range(4)]
    for low, middle, high, encoding in ((0, 1, (2, 3), "utf-32-le"), (3, 2, (1, 0), "utf-32-be")):
        if (not lanes[low].count(0) and lanes[middle].count(0) >= 0.75 * quads
                and all(lanes[lane].count(0) == quads for lane in high)):
            return encoding
    return None


def utf16_without_mark(start: bytes) -> str | None:
    """``utf-16-le`` or ``utf-16-be`` where a file's first bytes are UTF-16 text without a byte-order
    mark (``Encoding.Unicode`` in .NET, Python's ``utf-16-le``), as the NUL bytes of its mostly-ASCII
    characters tell: at most every odd byte (little-endian) or every even one (big-endian), the other
    half holding none. UTF-8 and Latin-1 text holds no NUL byte."""
    pairs = len(start) // 2
    if pairs < 2:
        return None
    even, odd = start[0:2 * pairs:2], start[1:2 * pairs:2]
    for zeros, others, encoding in ((odd, even, "utf-16-le"), (even, odd, "utf-16-be")):
        if zeros.count(0) >= 0.75 * pairs and not others.count(0):
            return encoding
    return None


def _lines(path: Path, encoding: str) -> tuple[int, str] | None:
    """How many lines a plain or gzip/bz2/xz-compressed text file holds, and its last line with its
    line end if it has one (None for other compressions)."""
    suffix = path.suffix.lower()
    if suffix in (".zip", ".zst", ".tar"):
        return None
    count, last = 0, ""
    with OPENERS.get(suffix, open)(path, "rt", encoding=encoding, errors="replace") as handle:
        for last in handle:
            count += 1
    return count, last


def read_table_file(path: str | Path) -> pd.DataFrame:
    """A Parquet (``.parquet``, ``.pq``) or CSV table (any other name, compressed as pandas infers
    from the suffix: ``.gz``, ``.xz``, ...) with at least one row, not a profiler's own CSV, whose
    columns spell gpuperf's own (``kernel``, ``gpu``, ``time_s``, ``status``) in lower case."""
    path = Path(path)
    name = path.name.lower()
    if path.exists() and not path.is_file():  # a folder, or a pipe no one may be writing to: never opened
        raise missing_file(path, f"{path}: no such file")
    if name.endswith((".json", ".json.gz", ".json.bz2", ".json.xz")):
        raise GpuperfError(f"{path}: a JSON file, not a table; a Kernel Tuner cache becomes one with "
                           "gpuperf import kernel-tuner")
    if name.endswith(PARQUET_SUFFIXES):
        if not path.is_file():
            raise missing_file(path, f"{path}: no such file")
        try:
            frame = pd.read_parquet(path)
        except (OSError, ValueError) as error:
            raise GpuperfError(f"{path}: not a readable Parquet table ({str(error).splitlines()[0]})") from None
        # pandas stores a frame's index in the file: rows are its rows in order (row N is the
        # N-th, as errors count), and a named index (set_index("kernel")) is a column again.
        named = any(name is not None for name in frame.index.names)
        frame = frame.reset_index(drop=not named)
        frame.attrs[ROW_NUMBERING] = "row"  # not whatever numbering the frame written to it had
    else:
        if _starts_like_json(path):
            raise GpuperfError(f"{path}: JSON text, not a CSV table; a Kernel Tuner cache becomes a table with "
                               "gpuperf import kernel-tuner")
        frame = read_csv(path)
    if frame.empty:
        raise GpuperfError(f"{path}: the table has no rows")
    refuse_profiler_table(frame, path)  # before the case check: its Kernel column is no misspelt kernel
    _refuse_other_cases(frame, path)
    return frame


def whole_number_columns(frame: pd.DataFrame, path: str | Path) -> list[str]:
    """The columns of ``frame``, read from the table file ``path``, written there as whole numbers that
    pandas holds as floats only because some cells are empty (``4`` would be written back as ``4.0``)."""
    path = Path(path)
    gapped = [str(c) for c in frame.columns
              if frame[c].dtype.kind == "f" and frame[c].isna().any() and frame[c].notna().any()]
    gapped = [c for c in gapped if (frame[c].dropna() % 1 == 0).all()]
    if not gapped or not path.is_file():
        return []
    if path.name.lower().endswith(PARQUET_SUFFIXES):
        import pyarrow.parquet as pq

        schema = pq.read_schema(path)
        return [c for c in gapped if c in schema.names and pa_integer(schema.field(c).type)]
    header = [str(name).strip() for name in read_csv(path, nrows=0).columns]
    repeated = set(repeated_names(header))  # in linear time: a header may hold 200,000 columns
    at = {name: index for index, name in enumerate(header) if name not in repeated}
    written = read_csv(path, dtype=str, usecols=[at[c] for c in gapped if c in at], keep_default_na=False)
    written.columns = [header[index] for index in sorted(at[c] for c in gapped if c in at)]
    return [c for c in gapped if c in written.columns
            and written[c][written[c].str.strip() != ""].map(lambda text: bool(INTEGER_TEXT.fullmatch(text))).all()]


def pa_integer(kind: object) -> bool:
    """Whether a pyarrow type is an integer type."""
    import pyarrow.types

    return bool(pyarrow.types.is_integer(kind))


CASED_COLUMNS = ("kernel", "gpu", TARGET, STATUS)  # read by their names: Status or Time_s would go unread


def _refuse_other_cases(frame: pd.DataFrame, path: Path) -> None:
    """An error naming a column that is one of gpuperf's own (``status``, ``time_s``, ...) spelt in
    another case, where the table lacks that name: read as another column, a ``Status`` of failed runs
    would let them pass for measured."""
    names = [str(column) for column in frame.columns]
    for name in CASED_COLUMNS:
        other = next((n for n in names if n.lower() == name and n != name), None)
        if other is not None and name not in names:
            raise GpuperfError(f"{path}: column '{other}' is gpuperf's '{name}' in another case; rename it {name}")


def _starts_like_json(path: Path) -> bool:
    """Whether a file named as a CSV table begins (after blanks) with ``{`` or ``[``, as JSON does
    and no CSV header does."""
    opener = OPENERS.get(path.suffix.lower(), open)
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
            start = handle.read(4096).lstrip()
    except (OSError, EOFError, lzma.LZMAError, zlib.error):
        return False  # the CSV reader names what is wrong with it
    return start[:1] in ("{", "[")


def require_columns(frame: pd.DataFrame, columns: list[str], where: str) -> None:
    """One error naming every required column that is absent."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise GpuperfError(f"{where}: missing column(s) {', '.join(repr(c) for c in missing)}")


def numeric_column(frame: pd.DataFrame, column: str, where: str) -> pd.Series:
    """``frame[column]`` as floats; a non-empty value that is no number is an error naming its row."""
    values = frame[column]
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        return values.astype(float)
    numbers = pd.to_numeric(values, errors="coerce")
    bad = numbers.isna() & values.notna() & values.astype(str).str.strip().ne("")
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise GpuperfError(
            f"{where}: {row_location(frame, row)}: {column}={values.iloc[row]!r} is not a number"
        )
    return numbers.astype(float)


def gpu_names(labels: pd.Series, devices: pd.Series) -> pd.Series:
    """Canonical GPU per row: each label resolves once, through its devices' names, then itself.

    A label no descriptor knows keeps its name as given, so new GPUs need no code change. Rows
    without a label share nothing: each resolves through its own device's name.
    """
    pairs = pd.DataFrame({"label": text_cells(labels),
                          "device": text_cells(devices)})
    unlabelled = pairs["label"].str.strip().eq("")
    names = pairs["label"].copy()  # a row with neither label nor device keeps its (blank) label
    for label, group in pairs[~unlabelled].groupby("label", sort=False):
        names[group.index] = _known_name([d for d in group["device"].unique() if d] + [label]) or label
    for device, group in pairs[unlabelled & pairs["device"].ne("")].groupby("device", sort=False):
        names[group.index] = _known_name([device]) or device
    return names


def _known_name(candidates: list[str]) -> str | None:
    """gpuperf's name for the first candidate a descriptor knows, if any."""
    return next((g for g in map(lookup_gpu, candidates) if g is not None), None)


@dataclass(frozen=True)
class TableFormat:
    """How one published table's columns land in the dataset shape.

    ``converted`` maps a published column to (dataset name, its time unit): values are scaled to
    seconds. ``parameters`` None means every column not named elsewhere (nor in ``features``) is
    a parameter, so a table with a new kernel family and new parameters loads unchanged.
    ``tuning`` tables label each row's variant with its parameters.
    """

    kernel: str
    time: str | None
    time_unit: str = "s"
    gpu: str | None = None
    device: str | None = None
    status: str | None = None
    renamed: Mapping[str, str] = field(default_factory=dict)
    converted: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    parameters: tuple[str, ...] | None = None
    features: tuple[str, ...] = ()
    tuning: bool = False

    def signature(self) -> list[str]:
        """Published columns a table of this format must have."""
        named = [self.kernel, self.time, self.gpu, self.device, self.status]
        return [c for c in named if c] + list(self.renamed) + list(self.converted)

    def shape(self, raw: pd.DataFrame, where: str, source: str) -> pd.DataFrame:
        """``raw`` (as published) in the dataset shape; errors name ``where`` and the line."""
        require_columns(raw, [c for c in (self.kernel, self.time, self.gpu or self.device) if c], where)
        consumed = {c for c in (self.kernel, self.time, self.gpu, self.device, self.status) if c}
        consumed |= set(self.renamed) | set(self.converted)
        parameters = self._parameters(raw, consumed)
        out = pd.DataFrame(index=raw.index)
        out.attrs[ROW_NUMBERING] = raw.attrs.get(ROW_NUMBERING, "row")
        out["kernel"] = raw[self.kernel].astype(str)
        out["variant"] = variant_labels(raw, parameters) if self.tuning else ""
        labels = raw[self.gpu] if self.gpu else raw[self.device]
        recorded = raw[self.device] if self.device else pd.Series("", index=raw.index)
        out["gpu"] = gpu_names(labels, recorded)
        out["device"] = text_cells(recorded if self.device else labels)
        out["source"] = source
        if self.gpu and self.device:
            out["gpu_label"] = raw[self.gpu].astype(str)
        for name in parameters:
            out[name] = raw[name]
        if self.time:
            out[TARGET] = to_seconds(numeric_column(raw, self.time, where), self.time_unit, where)
        out[STATUS] = self._status(raw)
        if self.time:
            _check_times(out, self.time, where)
            check_dataset(out, where)
        for published, (name, unit) in self.converted.items():
            out[name] = to_seconds(numeric_column(raw, published, where), unit, where)
        for published, name in self.renamed.items():
            out[name] = raw[published]
        for name in [c for c in raw.columns if c not in consumed and c not in parameters]:
            out[name] = raw[name]
        out = order_columns(out.reset_index(drop=True), parameters)
        out.attrs["parameters"] = parameters
        return out

    def _parameters(self, raw: pd.DataFrame, consumed: set[str]) -> list[str]:
        if self.parameters is not None:
            return [p for p in self.parameters if p in raw.columns]
        return [c for c in raw.columns if c not in consumed and c not in self.features]

    def _status(self, raw: pd.DataFrame) -> pd.Series:
        if self.status:
            given = raw[self.status].map(lambda s: s if pd.isna(s) else str(s).strip())
            return given.where(~given.isin(OK_SPELLINGS), OK)  # an empty status is not ok, as in is_ok
        return pd.Series(OK, index=raw.index, dtype=object)


def _check_times(frame: pd.DataFrame, published: str, where: str) -> None:
    """Every ok row needs a positive, finite time; the error names the file's row and the published column."""
    bad = frame[STATUS].eq(OK) & ~((frame[TARGET] > 0) & np.isfinite(frame[TARGET]))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        value = frame[TARGET].iloc[row]
        shown = "empty" if pd.isna(value) else f"{float(value)!r} s"
        raise GpuperfError(f"{where}: {row_location(frame, row)}: {published} gives time {shown}, not a positive time")


def names_user_file(spec: object) -> bool:
    """Whether a kernel spec (a campaign export's ``kernel_spec``, say) names a user's ``file.py``, not a
    catalog kernel or variant."""
    return isinstance(spec, str) and ".py:" in spec


def one_spelling_per_name(values: pd.Series) -> pd.Series:
    """``values`` with a name spelt in two Unicode normal forms ('é' as one character, or as 'e' and an
    accent) written as the spelling that comes first: one kernel, however its accents were typed."""
    first: dict[str, str] = {}
    respelt = {}
    for value in values.dropna().unique():  # in the order the rows give them
        if isinstance(value, str):
            spelling = first.setdefault(unicodedata.normalize("NFC", value), value)
            if spelling != value:
                respelt[value] = spelling
    return values.map(lambda value: respelt.get(value, value)) if respelt else values


def names_alike(values: pd.Series) -> pd.Series:
    """``values`` (names: kernels, variants) without the spaces around them and each in one spelling
    (:func:`one_spelling_per_name`): ``"saxpy "`` is ``saxpy``, as ``--kernel saxpy`` picks it."""
    return one_spelling_per_name(values.map(lambda value: value.strip() if isinstance(value, str) else value))


def kernels_told_apart(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with each user's kernel that shares its ``kernel`` name with a kernel from another
    source (two users' ``loopy_kernel``, or a user's file named like a catalog kernel, as a campaign
    export's ``kernel_spec`` gives them) named ``name (file.py:function)``, so that it is a kernel of
    its own; a catalog kernel, and every table without ``kernel_spec``, keeps its name."""
    if "kernel" not in frame.columns or "kernel_spec" not in frame.columns:
        return frame

    def source(spec: object) -> str | None:
        if not isinstance(spec, str):
            return None
        head, py, function = spec.strip().rpartition(".py:")
        return head + py + function.split("[", 1)[0].strip()

    sources = frame["kernel_spec"].map(source)
    names = frame["kernel"].astype(str).str.strip()
    shared = sources.groupby(names).transform(lambda part: part.dropna().nunique() > 1).astype(bool)
    users = shared & sources.map(names_user_file).astype(bool)
    if not users.any():
        return frame
    renamed = frame["kernel"].astype(object).copy()
    renamed[users] = names[users] + " (" + sources[users].astype(str) + ")"
    return frame.assign(kernel=renamed)
