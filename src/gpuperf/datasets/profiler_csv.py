"""Pieces shared by the nvprof and Nsight Compute readers: kernel and device names, lines, numbers."""

from __future__ import annotations

import bz2
import csv
import functools
import gzip
import io
import lzma
import math
import re
import warnings
import zipfile
import zlib
from pathlib import Path
from typing import IO

import pandas as pd

from gpuperf.datasets.schema import canonical_gpu, check_dataset, order_columns, shift_decimal
from gpuperf.datasets.tables import OPENERS, refuse_compressed_under_plain_name, wide_encoding
from gpuperf.errors import GpuperfError, GpuperfNote, missing_file, too_large

MAX_BLOCK_THREADS = 1024  # threads per block: every NVIDIA GPU since Fermi, and AMD's


def kernel_short_name(name: str) -> str:
    """``void foo<32>(float*, int) [116]`` -> ``foo<32>``: what a kernel is called in the dataset.

    Only the trailing parameter list goes (matched from the right), so
    ``void (anonymous namespace)::foo(int)`` keeps its namespace. Template arguments are spelled as
    :func:`parameter_signature` spells types, whichever profiler wrote them: nvprof's ``foo<int=32,
    float const>`` and Nsight's ``foo<(int)32, const float>`` are both ``foo<32, const float>``. A
    mangled name is read :func:`demangled`: ``_Z3fooILi32EEvPfi`` is ``foo<32>`` too.
    """
    return _short_name(demangled(re.sub(r"\s*\[\d+\]$", "", str(name).strip())))


# An Itanium C++ ABI symbol, as ncu --print-kernel-base mangled and nvprof --demangling off name kernels
MANGLED_NAME = re.compile(r"_Z[0-9A-Z][A-Za-z0-9_]*")  # _Z10gemm_tiledILi32EEvPfi


def demangled(name: str) -> str:
    """A kernel's name as a profiler writes it demangled: a mangled C++ symbol
    (``_Z12matmul_tiledILi16EEvPKfS1_Pfi``) as the C++ runtime's demangler spells it (``void
    matmul_tiled<16>(float const*, float const*, float*, int)``); any other name (``extern "C"``,
    OpenCL), or a symbol that does not demangle, as it is."""
    symbol = str(name).strip()
    if not MANGLED_NAME.fullmatch(symbol):
        return name
    return _demangling(symbol)[0] or name


@functools.lru_cache(maxsize=4096)  # each distinct symbol demangled once, however many launches it names
def _demangling(symbol: str) -> tuple[str | None, str]:
    """(``symbol`` demangled by cxxfilt, the C++ runtime's ``__cxa_demangle``, '') or (None, why it is not)."""
    import cxxfilt  # loads the C++ runtime: only where a profile names a kernel by its symbol

    try:
        return cxxfilt.demangle(symbol), ""
    except cxxfilt.InvalidName:
        return None, "not a valid C++ symbol"
    except cxxfilt.Error as error:  # no C++ runtime found (cxxfilt.LibraryNotFound), or one that failed
        return None, f"no C++ demangler on this machine ({error})"


@functools.lru_cache(maxsize=4096)  # a trace names few kernels in many rows
def _short_name(text: str) -> str:
    text = text[:len(text) - len(_parameter_list(text))].strip()
    return _template_arguments(re.sub(r"^((void|__global__)\s+)+", "", text))


def _template_arguments(name: str) -> str:
    """``name`` with the contents of each outermost ``<...>`` spelled as types (a name without one,
    or whose brackets do not pair, as it is)."""
    if "<" not in name:
        return name
    parts, depth, start = [], 0, 0
    for position, character in enumerate(name):
        if character == "<":
            if depth == 0:
                parts.append(name[start:position + 1])
                start = position + 1
            depth += 1
        elif character == ">" and depth > 0:
            depth -= 1
            if depth == 0:
                parts.append(", ".join(_types(TYPE_TOKEN.findall(name[start:position]))))
                start = position
    if depth != 0:
        return name
    return "".join(parts) + name[start:]


def full_kernel_name(name: str) -> str:
    """``void foo(float*, int) [116]`` -> ``void foo(float*, int)``: the launch id goes, spaces are evened."""
    return re.sub(r"\s+", " ", re.sub(r"\s*\[\d+\]$", "", str(name).strip()))


def is_activity(name: str) -> bool:
    """Whether a trace or summary row names something other than a kernel: ``[CUDA memcpy HtoD]``,
    ``[CUDA memset]``, ``[Unified Memory Memcpy HtoD]``, ``[Unified Memory GPU page faults]``, ...
    (a kernel's name never starts with a bracket)."""
    return str(name).lstrip().startswith("[")


def signature_variants(frame: pd.DataFrame) -> pd.DataFrame:
    """Each C++ kernel's ``variant``: its parameter list as :func:`parameter_signature` spells it,
    ``(float*, const float*, int)``, whatever else the file holds, so that one launch profiled by
    nvprof and by Nsight Compute, its name demangled or not, has one name; a kernel without a
    parameter list (``extern "C"``, OpenCL) keeps its ``variant``."""
    full_names = frame["kernel_full_name"].astype(str)
    signatures = full_names.map({full: parameter_signature(_parameter_list(demangled(full)))
                                 for full in full_names.unique()})
    named = (signatures != "").to_numpy()
    if not named.any():
        return frame
    frame = frame.copy()
    frame.loc[named, "variant"] = signatures[named].to_numpy()
    return frame


def respelled_profiled_names(frame: pd.DataFrame) -> pd.DataFrame:
    """An imported profile's ``kernel`` and ``variant`` as today's importers spell them, from its
    ``kernel_full_name`` (an import by an earlier version: ``matmul_tiled<int=16>`` and an empty or
    raw variant are ``matmul_tiled<16>`` and its signature); a table without both columns as it is."""
    if "kernel_full_name" not in frame.columns or "kernel" not in frame.columns:
        return frame
    full = frame["kernel_full_name"]
    named = full.map(lambda value: isinstance(value, str) and bool(value.strip())).to_numpy(dtype=bool)
    if not named.any():
        return frame
    names = full[named]
    frame = frame.assign(variant=frame["variant"].astype(object) if "variant" in frame.columns else None)
    frame.loc[named, "kernel"] = names.map({name: kernel_short_name(name) for name in names.unique()}).to_numpy()
    frame.loc[named, "variant"] = signature_variants(frame.loc[named])["variant"].to_numpy()
    return frame


# A name (``unsigned``, ``std::size_t``, ``32``) or one punctuation character of a C++ type.
TYPE_TOKEN = re.compile(r"[\w:.$]+|\S")
QUALIFIERS = ("const", "volatile")
CLOSING = {"<": ">", "(": ")", "[": "]"}


def parameter_signature(parameters: str) -> str:
    """A demangled parameter list as one spelling, whichever profiler wrote it: ``(float*, float
    const *, int)`` (nvprof) and ``(float *, const float *, int)`` (ncu) are both ``(float*, const
    float*, int)``: spaces evened, a qualifier of the pointed-to type put first (``T const*`` ->
    ``const T*``), template arguments alike (nvprof's value arguments ``int=128`` and Nsight's
    ``(int)128`` as ``128``); '' for ''."""
    if not parameters:
        return ""
    tokens = TYPE_TOKEN.findall(parameters)
    return "(" + ", ".join(_types(tokens[1:-1])) + ")"


def _types(tokens: list[str]) -> list[str]:
    """Each comma-separated type of a token list (commas inside brackets kept) in one spelling."""
    parts, depth, start = [], 0, 0
    for index, token in enumerate(tokens):
        depth += (token in CLOSING) - (token in CLOSING.values())
        if token == "," and depth == 0:
            parts.append(tokens[start:index])
            start = index + 1
    parts.append(tokens[start:])
    return [_type(part) for part in parts if part]


def _type(tokens: list[str]) -> str:
    """One type: qualifiers before its first ``*``, ``&`` or bracket (one opening it, as
    ``(anonymous namespace)::`` does, aside) go first, brackets' contents are spelled as types,
    and a space only parts two names (or follows a ``*`` or ``&`` before a name)."""
    depths = _depths(tokens)
    given = next((i for i, t in enumerate(tokens) if depths[i] == 0 and t == "="), None)
    if given is not None:  # nvprof's template value argument: int=128 is ncu's 128
        tokens, depths = tokens[given + 1:], depths[given + 1:]
    cast = _closing(tokens, 0) + 1 if tokens[:1] == ["("] else 0
    if cast and _is_literal(tokens[cast:]):  # Nsight's (int)128
        tokens = tokens[cast:]
        depths = _depths(tokens)
    if _is_literal(tokens):  # a demangled 256u or 4ul: the value alone, as nvprof's unsigned int=256 gives it
        return re.sub(r"(?<=\d)[uUlL]+$", "", "".join(tokens))
    end = next((i for i, t in enumerate(tokens) if depths[i] == 0 and t in ("*", "&", "(", "[") and i), len(tokens))
    own = [i for i in range(end) if depths[i] == 0 and tokens[i] in QUALIFIERS]
    qualifiers = [q for q in QUALIFIERS if any(tokens[i] == q for i in own)]
    tokens = [*qualifiers, *(t for i, t in enumerate(tokens) if i not in own)]
    words: list[str] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token in CLOSING:
            close = _closing(tokens, index)
            inner = tokens[index + 1:close]
            text = ", ".join(_types(inner)) if token != "[" else _type(inner)
            words.append(token + text + CLOSING[token])
            index = close + 1
            continue
        words.append(token)
        index += 1
    text = ""
    for word in words:
        spaced = text and (_is_name(word) and (_is_name(text[-1]) or text[-1] in "*&"))
        text += (" " if spaced else "") + word
    return text


def _depths(tokens: list[str]) -> list[int]:
    """Each token's bracket depth (a bracket itself at its outer depth)."""
    depths, depth = [], 0
    for token in tokens:
        depth -= token in CLOSING.values()
        depths.append(depth)
        depth += token in CLOSING
    return depths


def _closing(tokens: list[str], start: int) -> int:
    """The index of the bracket closing ``tokens[start]`` (one past the last token if it is never
    closed, so that what follows an unclosed bracket is kept as its contents)."""
    depth = 0
    for index in range(start, len(tokens)):
        depth += (tokens[index] in CLOSING) - (tokens[index] in CLOSING.values())
        if depth == 0:
            return index
    return len(tokens)


def _is_literal(tokens: list[str]) -> bool:
    """Whether tokens are one number (``128``, ``-1``, ``4u``)."""
    return bool(re.fullmatch(r"-?\d[\w.]*", "".join(tokens)))


def _is_name(text: str) -> bool:
    return bool(re.match(r"[\w:.$]", text))


def _parameter_list(name: str) -> str:
    """The trailing ``(...)`` of a kernel's full name, matched from the right ('' without one)."""
    if not name.endswith(")"):
        return ""
    depth = 0
    for position in range(len(name) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[position], 0)
        if depth == 0:
            return name[position:]
    return ""


def device_gpu(device: str) -> str:
    """``Tesla K40c (0)`` -> the canonical GPU name (the device index is dropped)."""
    return canonical_gpu(without_device_index(device))


def without_device_index(device: str) -> str:
    """``Tesla K40c (0)`` -> ``Tesla K40c``."""
    return re.sub(r"\s*\(\d+\)$", "", str(device).strip())


# Name parts that tell boards of one GPU apart (form factor, memory), not another GPU.
BOARD_TOKEN = re.compile(r"sxm\d*|pcie|nvl|hbm\d*e?|\d+gb?")


def refuse_empty_gpu(gpu: str | None, where: str) -> None:
    """An error for a ``--gpu`` that is empty or blank (``--gpu "$GPU"``, the variable unset): rows naming
    no GPU, or a GPU said to contradict the file's own, would follow."""
    if gpu is not None and not str(gpu).strip():
        raise GpuperfError(f"{where}: --gpu is empty; name the GPU the times were taken on, or leave --gpu out")


def contradicts(named: str, gpu: str) -> bool:
    """Whether ``--gpu`` names another GPU than the device a profile names: a different descriptor,
    unless the given name's words are the device's own model words, followed at most by board words
    (``A100`` for ``NVIDIA A100-SXM4-80GB``; not ``GTX 1080`` for ``GeForce GTX 1080 Ti``)."""
    if canonical_gpu(gpu) == device_gpu(named):
        return False
    device = _words(without_device_index(named))
    given = _words(gpu)
    for start in range(len(device) - len(given) + 1):
        rest = device[start + len(given):]
        if given and device[start:start + len(given)] == given and all(BOARD_TOKEN.fullmatch(w) for w in rest):
            return False
    return True


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", str(text).lower())


def decoded(data: bytes, where: str = "file") -> str:
    """A file's text: UTF-16 or UTF-32 where it starts with a byte-order mark (Windows PowerShell's
    ``>``) or its first bytes are such text without one (:func:`~gpuperf.datasets.tables.wide_encoding`),
    else UTF-8 without its byte-order mark (Excel's "CSV UTF-8"); undecodable bytes (an
    application's own output may hold any) are replaced, with a note naming the first one's line."""
    encoding = wide_encoding(data[:512]) or "utf-8-sig"
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1 if not encoding.startswith(("utf-16", "utf-32")) else None
        at = f"line {line}: " if line else ""
        warnings.warn(GpuperfNote(f"{where}: {at}bytes that are not {encoding.removesuffix('-sig').upper()} text, read as "
                                  "\ufffd; re-export the profile as UTF-8 if a name holds them"), stacklevel=2)
        return data.decode(encoding, errors="replace")


def note_profiler_messages(lines: list[str], where: str, said: re.Pattern[str], profiler: str) -> None:
    """A note for each warning or error the profiler wrote into its CSV (a profile it may have left short):
    ``said`` matches such a line, its first group the kind (``Error``/``ERROR`` or a warning), its second the text."""
    for line_number, line in enumerate(lines, start=1):
        found = said.match(line)
        if found:
            what = "reported an error" if found[1].lower() == "error" else "warned"
            warnings.warn(GpuperfNote(f"{where}: line {line_number}: {profiler} {what}: {found[2].strip()}"),
                          stacklevel=3)


# Header columns of every Nsight Compute page (raw, details, --print-summary), of no nvprof layout
NCU_HEADER = {"Process ID", "Kernel Name"}


def is_ncu_csv(lines: list[str]) -> bool:
    """Whether a profiler's CSV is Nsight Compute's: its ``==PROF==`` log lines or, exported from a
    report (``ncu --import``) without them, its header (quoted or, saved by a spreadsheet, not; a
    ``--print-summary`` table's too, which has no ``ID``)."""
    head = lines[:50]
    return any(line.startswith("==PROF==") for line in head) or any(
        NCU_HEADER <= set(line_cells(line)) for line in head if "Kernel Name" in line)


def line_cells(line: str) -> list[str]:
    """One line's CSV cells ([] where it is no CSV row)."""
    try:
        return next(csv.reader([line]), [])
    except csv.Error:
        return []


def read_lines(path: Path) -> list[str]:
    """The lines of a profiler's CSV output, plain or compressed (``.gz``, ``.bz2``, ``.xz``, a ``.zip`` of one
    file)."""
    if not path.is_file():
        raise missing_file(path, f"{path}: no such file")
    opener = OPENERS.get(path.suffix.lower()) or ARCHIVE_OPENERS.get(path.suffix.lower())
    if opener is None:
        refuse_compressed_under_plain_name(path, readable=tuple(OPENERS) + (".zip",))  # gzip data in profile.csv
        data = path.read_bytes()
    else:
        try:
            with opener(path, "rb") as handle:
                data = handle.read()
        except (OSError, EOFError, zlib.error, lzma.LZMAError, zipfile.BadZipFile) as error:
            raise GpuperfError(f"{path}: cannot be read as a {path.suffix} file ({error})") from None
        except MemoryError:  # a small .gz can hold gigabytes
            raise too_large(path) from None
    refuse_tar_archive(data, path)
    text = decoded(data, str(path))
    if not text.strip():
        raise GpuperfError(f"{path}: empty file")
    lines = [_unquoted_message(line) for line in text.splitlines()]
    messages = [line for line in lines if line.startswith("==")]
    first = next((number for number, line in enumerate(lines, start=1) if line.strip() and not line.startswith("==")), None)
    if messages and first is None:
        said = next((m for m in messages if "no kernels" in m.lower() or "warning" in m.lower()), messages[-1])
        raise GpuperfError(f"{path}: only the profiler's messages, no table: nothing was profiled? (the profiler "
                           f"said: {said.strip()!r})")
    if messages and "," not in lines[first - 1]:  # a CSV header has commas; the text output's is spaced
        if any(line.startswith('"') and '","' in line for line in lines[first:]):  # a quoted CSV header below
            warnings.warn(GpuperfNote(f"{path}: line {first}: {lines[first - 1].strip()[:60]!r} is no CSV row (the "
                                      "application's own output?): lines above the table's header are skipped"),
                          stacklevel=2)
            return lines
        raise GpuperfError(f"{path}: line {first}: {lines[first - 1].strip()[:60]!r} is no CSV row: the profiler's text "
                           "output, or the application's own output in the capture? Profile again with --csv "
                           "(nvprof --csv, ncu --csv), the profiler's output in a file of its own (--log-file)")
    return lines


def refuse_tar_archive(data: bytes, path: Path) -> None:
    """An error where a profile's bytes (decompressed) are a tar archive (POSIX ``ustar`` magic at byte 257),
    such as a folder of ncu CSVs packed as ``.tar.gz`` or ``.tgz``, which would read as one garbled table."""
    if data[257:262] == b"ustar":
        raise archive_of_files(path, "a tar", f"tar -xf {path.name}")


def archive_of_files(path: Path, kind: str, extract: str) -> GpuperfError:
    """The error for an archive of several files given where one profiler CSV is read."""
    return GpuperfError(f"{path}: {kind} archive of files, not one profiler CSV; extract it ({extract}) and import "
                        "its CSV files together (gpuperf import FORMAT A.csv B.csv ... --out T.csv)")


def open_zipped_profile(path: Path, mode: str = "rb") -> IO[bytes]:
    """The one file a ``.zip`` profile holds (as pandas reads a zipped table), opened as bytes; a zip of several
    files is an error saying to extract it, and an empty one reads as an empty file."""
    with zipfile.ZipFile(path) as archive:
        members = [member for member in archive.infolist() if not member.is_dir()]
        if len(members) > 1:
            raise archive_of_files(path, "a zip", f"unzip {path.name}")
        return io.BytesIO(archive.read(members[0]) if members else b"")


ARCHIVE_OPENERS = {".tgz": gzip.open, ".tbz": bz2.open, ".tbz2": bz2.open, ".txz": lzma.open,
                   ".zip": open_zipped_profile}  # a profile's openers by suffix, beside the tables' OPENERS


def _unquoted_message(line: str) -> str:
    """A profiler message as a spreadsheet saves it, quoted as one cell (``"==PROF== Profiling ""k""..."``),
    as the profiler wrote it; any other line as it is."""
    if not line.startswith('"=='):
        return line
    try:
        cells = next(csv.reader([line]), [])
    except csv.Error:
        return line
    return cells[0] if cells and not any(c.strip() for c in cells[1:]) else line


def csv_rows(lines: list[str], start: int) -> list[list[str]]:
    return list(csv.reader(io.StringIO("\n".join(lines[start:]))))


def is_message(cells: list[str]) -> bool:
    """Blank rows and profiler messages (``==PID== ...``, ``==PROF== ...``) between the data rows."""
    return not cells or not any(c.strip() for c in cells) or cells[0].startswith("==")


def find_header(lines: list[str], wanted: tuple[str, ...], where: str) -> int:
    """Index of the first line (not a ``==`` profiler message) whose cells include all of ``wanted``.
    Without one, the error names the line holding most of them and what it lacks."""
    nearest, nearest_count = None, 0
    for index, line in enumerate(lines):
        if line.startswith("==") or not line.strip():
            continue
        cells = next(csv.reader([line]))
        count = sum(w in cells for w in wanted)
        if count == len(wanted):
            check_unique_header(cells, where, index + 1)
            return index
        if count > nearest_count:
            nearest, nearest_count = index, count
    if nearest is not None:
        cells = next(csv.reader([lines[nearest]]))
        lacking = ", ".join(w for w in wanted if w not in cells)
        raise GpuperfError(f"{where}: line {nearest + 1}: the header lacks column(s) {lacking}")
    raise GpuperfError(f"{where}: no header row with column(s) {', '.join(wanted)}")


def check_unique_header(cells: list[str], where: str, line: int) -> None:
    """A header naming a column twice is an error: a row's cells would go to the wrong column."""
    seen: set[str] = set()
    for name in cells:
        if name.strip() and name in seen:
            raise GpuperfError(f"{where}: line {line}: the header names column {name!r} more than once")
        seen.add(name)


def refuse_repeated_header(cells: list[str], header: list[str], where: str, line: int, what: str = "header") -> None:
    """An error where a row is the header again: a second profile appended to the file."""
    if [cell.strip() for cell in cells] == [cell.strip() for cell in header]:
        raise GpuperfError(f"{where}: line {line}: the {what} again, a second profile appended; one profile per file")


def checked_row(cells: list[str], header: list[str], where: str, line: int) -> dict[str, str]:
    """A data row as {column: cell}; a row whose cell count differs from the header's is an error."""
    if len(cells) != len(header):
        raise GpuperfError(f"{where}: line {line}: {len(cells)} cells, the header has {len(header)}")
    return dict(zip(header, cells))


# A number with thousands separators: 1,351.27 or -12,345 (not 62,27, 0,125 or 2,04,8).
THOUSANDS = re.compile(r"[-+]?[1-9]\d{0,2}(,\d{3})+(\.\d*)?([eE][-+]?\d+)?")  # 0,125: a decimal comma


def parse_number(text: str) -> float | None:
    """A profiler's number (thousands separators allowed; empty or n/a is NaN), None if not a number."""
    cleaned = text.strip()
    if cleaned in ("", "n/a", "N/A", "-"):
        return float("nan")
    if "," in cleaned:  # only whole groups of three digits: 62,27 (a decimal comma) is no number here
        if not THOUSANDS.fullmatch(cleaned):
            return None
        cleaned = cleaned.replace(",", "")
    try:
        return float(cleaned)
    except ValueError:
        return None


def number(text: str, where: str, line: int, column: str) -> float:
    """:func:`parse_number`, anything else an error naming the line and column."""
    value = parse_number(text)
    if value is None:
        raise GpuperfError(f"{where}: line {line}: {column}={text!r} is not a number")
    return value


def whole_count(text: str, where: str, line: int, column: str, least: int = 0) -> float:
    """A count (a launch's grid or block size, registers): a whole number of at least ``least``,
    anything else an error naming the line and column."""
    value = number(text, where, line, column)
    if not (math.isfinite(value) and value == int(value) and value >= least):
        raise GpuperfError(f"{where}: line {line}: {column}={text!r} is not a whole number of at least {least}")
    return value + 0.0  # -0 as 0


def refuse_oversized_block(threads: float, where: str, line: int, said: str) -> None:
    """An error naming the line where a launch's block has more threads than any GPU runs (``said``:
    how the file gives the block, e.g. ``Block X 4096 x Block Y 16 x Block Z 1``)."""
    if threads > MAX_BLOCK_THREADS:
        raise GpuperfError(f"{where}: line {line}: a block of {threads:g} threads ({said}); no GPU runs blocks of "
                           f"more than {MAX_BLOCK_THREADS}")


def positive_time(text: str, exponent: int, where: str, line: int, column: str) -> float:
    """A measured time in seconds; empty, zero, negative or infinite is an error naming the line."""
    seconds = shift_decimal(number(text, where, line, column), exponent)
    if not 0 < seconds < math.inf:
        raise GpuperfError(f"{where}: line {line}: {column} gives no time ({text!r})")
    return seconds


def note_mangled_names(frame: pd.DataFrame, where: str) -> None:
    """A note where kernels are named by mangled symbols that do not demangle (:func:`demangled`): kept as
    written, such a name matches no demangled one of the same kernel."""
    names = pd.Series(frame["kernel_full_name"].astype(str).str.strip().unique())
    kept = names[names.map(lambda name: MANGLED_NAME.fullmatch(name) is not None and demangled(name) == name)]
    if kept.empty:
        return
    first = kept.iloc[0]
    warnings.warn(GpuperfNote(
        f"{where}: {len(kept)} kernel(s) named by mangled C++ symbols that do not demangle (first: {first}: "
        f"{_demangling(first)[1]}), kept as written: they match no demangled name of the same kernel (another "
        "profile's, a table's); profile with demangled names (ncu --print-kernel-base demangled, nvprof's default) "
        "to have each one's parameter list as its variant"),
        stacklevel=3)


def finish(frame: pd.DataFrame, where: str) -> pd.DataFrame:
    note_mangled_names(frame, where)
    frame = order_columns(frame.reset_index(drop=True), [])
    frame.attrs["parameters"] = []
    return check_dataset(frame, where)
