"""Printing results: JSON for programs, rich tables for people."""

from __future__ import annotations

import datetime
import json
import math
import os
import re
import sys
import tempfile
import textwrap
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from gpuperf.errors import counted, named_values  # noqa: F401 - the CLI modules take them from here
from gpuperf.files import REPORT_LOCK  # FOLDER/.gpuperf-report.lock, held while a report is written there

if TYPE_CHECKING:
    import typer

console = Console(width=80 if os.environ.get("COLUMNS", "").strip() == "0" else None)  # COLUMNS=0: no width given
WIDEST_TABLE = 250  # characters: a table's natural width up to this is kept whole, whatever the terminal's width


def _numpy_types(name: str) -> tuple[type, ...]:
    """NumPy's scalar type ``name`` (``generic``, ``floating``) where NumPy is loaded, else none: a NumPy
    value exists only once NumPy is imported, and a command that prints none (``--help``) need not import it."""
    numpy = sys.modules.get("numpy")
    return (getattr(numpy, name),) if numpy is not None else ()


def _plain(value: Any) -> Any:
    """``value`` as JSON holds it: NumPy scalars as Python's, NaN and infinities as None, dates and
    times (a TOML entry's) as ISO text, a file name's bytes as the text they spell (:func:`_own_text`)."""
    if isinstance(value, _numpy_types("generic")):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (datetime.date, datetime.time)):  # a datetime is a date
        return value.isoformat()
    if isinstance(value, str):
        return _own_text(value)
    if isinstance(value, Mapping):
        return {_own_text(str(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


FILE_NAME_BYTES = re.compile("[\udc80-\udcff]")  # a file name's bytes, as surrogateescape reads them


def _own_text(text: str) -> str:
    """``text`` with a file name's bytes (read under a locale other than UTF-8) as the characters their
    UTF-8 spells, so JSON names the file as under a UTF-8 locale; bytes that spell none are left as they are."""
    if not FILE_NAME_BYTES.search(text):
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8")
    except UnicodeError:
        return text


def whole_counts(features: Mapping[str, Any]) -> dict[str, Any]:
    """``features`` with the whole counts among them (work-items, groups, registers, blocks, bytes: the
    columns tables are written with as whole numbers, ``COUNT_COLUMNS``) as integers."""
    from gpuperf.datasets.schema import COUNT_COLUMNS  # pandas: not for the commands that print no counts

    def whole(name: str, value: Any) -> Any:
        if name in COUNT_COLUMNS and isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    return {name: whole(name, value) for name, value in features.items()}


LINE_KEEPS = "\t\n"  # a note or an error printed whole keeps its line breaks
# C0 and C1 controls, and Unicode's bidirectional embeddings, overrides and isolates (U+202A-U+202E,
# U+2066-U+2069): a right-to-left override in a name would show the rest of its line reversed.
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def visible(text: str, keep: str = "\t") -> str:
    """``text`` with its control characters but those in ``keep`` written as escapes (``\\x1b``,
    ``\\u202e``): an escape sequence in a kernel's or GPU's name cannot move the cursor or recolour the
    terminal, nor a bidirectional override reverse the figures printed after it."""
    return CONTROL_CHARACTERS.sub(lambda m: m[0] if m[0] in keep else _escaped(m[0]), text)


def as_printed(text: str) -> str:
    """``text`` as stdout writes it: where stdout escapes what its encoding cannot show (``café`` under an ASCII
    locale, see :func:`gpuperf.cli._escape_what_the_terminal_cannot_show`), with those escapes (``caf\\xe9``),
    so that a table measures its cells as printed."""
    from gpuperf.cli import ESCAPED

    encoding = getattr(sys.stdout, "encoding", None)
    if getattr(sys.stdout, "errors", None) != ESCAPED or not encoding:
        return text
    return text.encode(encoding, ESCAPED).decode(encoding, "surrogateescape")


def _shown(text: str) -> str:
    """``text`` as a table prints it: control characters escaped (:func:`visible`), then as stdout writes it."""
    return as_printed(visible(text))


def _escaped(character: str) -> str:
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def print_json(data: Any) -> None:
    """JSON on stdout (NaN and infinities become null)."""
    print(json.dumps(_plain(data), indent=2))


def print_table(rows: Sequence[Mapping[str, Any]], title: str | None = None, columns: Sequence[str] | None = None,
                prose: Sequence[str] = ()) -> None:
    """A rich table of dict rows. Wider than the terminal, its ``prose`` columns (descriptions, reasons)
    wrap at word boundaries in what the other columns, kept whole, leave of the terminal's width; printed
    to a file or a pipe, each row stays one line, for grep."""
    columns = list(columns or (rows[0].keys() if rows else []))
    shown_title = None if title is None else _shown(title)
    table = Table(title=None if shown_title is None else escape(shown_title),  # a variant's [a=1] is text, not markup
                  min_width=_title_width(shown_title) if columns else None)  # rich prints no title without columns
    for column in columns:
        table.add_column(_shown(str(column)), overflow="fold")  # wrap a long value; never cut it short
    in_full = {column: _whole_numbers_only([row.get(column) for row in rows]) for column in columns}
    cells = [[_format(row.get(c), in_full[c]) for c in columns] for row in rows]
    for row_cells in cells:
        table.add_row(*row_cells)
    # Narrower than its natural width, rich folds cells mid-number (-0.100 over 5) or drops whole columns:
    # print it at its natural width (up to WIDEST_TABLE) and let a narrow terminal wrap the lines instead,
    # but for its prose columns, which wrap at word boundaries within the terminal's width.
    natural = min(table.__rich_measure__(console, console.options.update_width(WIDEST_TABLE)).maximum, WIDEST_TABLE)
    width = console.width
    console.width = max(width, natural if natural <= width else _with_prose_wrapped(table, cells, prose, natural))
    try:
        if shown_title and columns and _widest_word(shown_title) > console.width:
            table.title = None  # rich would fold that word mid-word at the table's edge
            _print_title(shown_title)
        console.print(table)
    finally:
        console.width = width


def _widest_word(text: str) -> int:
    return max((cell_len(word) for word in text.split()), default=0)


def _print_title(title: str) -> None:
    """``title`` as a table's, centred in the console's width and wrapped between words, a word wider than
    the console (a long path) whole on its own line: the terminal wraps it at its edge, and it copies whole."""
    for line in title.splitlines():
        for part in textwrap.wrap(line, console.width, break_long_words=False, break_on_hyphens=False) or [""]:
            console.print(part, style="table.title", justify="center", no_wrap=True, overflow="ignore", crop=False,
                          markup=False, highlight=False)


def _with_prose_wrapped(table: Table, cells: Sequence[Sequence[str]], prose: Sequence[str], natural: int) -> int:
    """The width to print ``table`` (``natural`` wide, wider than the terminal) at: on a terminal, where it
    has ``prose`` columns, the terminal's, or what the table needs with them at their longest word, with the
    prose columns set to share what the others leave, in proportion to their natural widths; else ``natural``."""
    wrapped = [index for index, column in enumerate(table.columns) if column.header in prose]
    if not wrapped or not console.is_terminal:
        return natural
    options = console.options.update_width(WIDEST_TABLE)
    spare = 0
    for index in wrapped:
        texts = [str(table.columns[index].header), *(row[index] for row in cells)]
        measured = [Measurement.get(console, options, text) for text in texts]
        widest, longest_word = max(m.maximum for m in measured), max(m.minimum for m in measured)
        spare += widest - longest_word
        table.columns[index].ratio = widest
        table.columns[index].width = longest_word  # with a ratio, rich takes it as the least width
    table.expand = True
    return max(console.width, natural - spare)


def _title_width(title: str | None) -> int | None:
    """How wide a table must be to hold ``title`` on one line, up to the terminal's width: rich lays a
    title out in its table's width, folding a word (a file's path) wider than the table mid-word."""
    if not title:
        return None
    return min(max(cell_len(line) for line in title.splitlines()), console.width)


def _whole_numbers_only(values: Sequence[Any]) -> bool:
    """Whether every float among ``values`` is a whole number below 10**15 (a column of counts), NaN aside."""
    floats = (float, *_numpy_types("floating"))
    return all(math.isnan(v) or (float(v).is_integer() and abs(v) < 1e15) for v in values if isinstance(v, floats))


def _format(value: Any, whole_in_full: bool = True) -> str:
    """A table cell: floats to 4 significant digits, but a whole number (a count) in full below 10**15
    where ``whole_in_full`` (a column of whole numbers: in a column of fractions, a MAPE that happens to be
    whole is written as its neighbours are), an undefined number (NaN) a dash, None empty, a mapping as
    ``n=4096, m=64``."""
    if isinstance(value, Mapping):
        return escape(_shown(named_values(value)))
    floats = (float, *_numpy_types("floating"))
    if isinstance(value, floats) and math.isnan(value):
        return "-"
    if whole_in_full and isinstance(value, floats) and float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, floats):
        return f"{value:.4g}"
    return "" if value is None else escape(_shown(str(value)))


def at_least(option: str, value: int | None, least: int) -> None:
    """An error naming ``option`` where its ``value`` (None: not given) is below ``least``."""
    from gpuperf.errors import GpuperfError

    if value is not None and value < least:
        raise GpuperfError(f"{option} {value}: must be at least {least}")


def known_choice(option: str, kind: str, value: str | None, known: Sequence[str]) -> None:
    """An error naming ``option`` where its ``value`` (None: not given) is none of ``known``, with the nearest
    known names (``--policy: unknown launch-geometry policy 'heurstic'; did you mean heuristic?``)."""
    from gpuperf.errors import GpuperfError, unknown_name_error

    if value is not None and value not in known:
        raise GpuperfError(f"{option}: {unknown_name_error(kind, value, known)}")


def not_blank(option: str, value: str | None, names: str, required: bool = False) -> None:
    """An error where ``option`` is given but blank (``--target "$COL"``, the variable unset): ``names``
    says what it should name; left out, the command picks its default (none where ``required``)."""
    from gpuperf.errors import GpuperfError

    if value is not None and not value.strip():
        default = "" if required else f", or leave {option} out for the default"
        raise GpuperfError(f"{option} is empty; name {names}{default}")


def described_gpu(gpu: str | None, required: bool = False) -> None:
    """An error naming ``--gpu`` where it is given and names no GPU gpuperf describes: empty (:func:`not_blank`)
    or unknown (with the nearest names, as :func:`gpuperf.hardware.get_gpu` says them)."""
    from gpuperf.errors import GpuperfError
    from gpuperf.hardware.specs import canonical_gpu_name, get_gpu

    not_blank("--gpu", gpu, "a GPU (see gpuperf gpus)", required)
    if gpu is not None and canonical_gpu_name(gpu) is None:
        try:
            get_gpu(gpu)
        except GpuperfError as error:
            raise GpuperfError(f"--gpu: {error}") from None


def checked_seed(seed: int) -> int:
    """``--seed`` as given; a negative one (NumPy's generators take none) is an error."""
    from gpuperf.errors import GpuperfError

    if seed < 0:
        raise GpuperfError(f"--seed {seed}: must not be negative")
    return seed


def refuse_model_name(model: Path, command: str, wants: str) -> None:
    """An error where ``--model`` names no file but a model kind or a search's surrogate (``rf``, ``et``):
    ``command`` takes a saved model file (``wants``), while fit, evaluate, explore, ask and tune take such
    names under the same option."""
    name = str(model)
    if Path(name).exists():  # the command's own reader judges a file; the names below load scikit-learn
        return
    from gpuperf.decisions.surrogates import SURROGATES
    from gpuperf.errors import GpuperfError
    from gpuperf.models.registry import MODEL_CHOICES

    takers = ([f"gpuperf fit --model {name} --out MODEL.json fits one and saves it"] if name in MODEL_CHOICES else []) \
        + (["explore, ask and tune take it as their search's surrogate"] if name in SURROGATES else [])
    if takers:
        raise GpuperfError(f"--model {name}: {command} takes a model file ({wants}), and no file is named {name}; "
                           f"{name} names a model, not a file: {'; '.join(takers)}")


def refuse_surrogate_file(model: str | None, command: str, instead: str) -> None:
    """An error where ``--model`` names a model file (``calibrate``'s or ``fit``'s) rather than a surrogate:
    ``command`` fits its surrogate as it searches; ``instead`` says what takes the file."""
    from gpuperf.errors import GpuperfError

    from gpuperf.decisions.surrogates import SURROGATES

    if model is not None and model not in SURROGATES and (model.lower().endswith((".json", ".skops"))
                                                          or Path(model).is_file()):
        raise GpuperfError(f"--model {model}: {command} takes a surrogate it fits as it searches "
                           f"({', '.join(SURROGATES)}), not a saved model file; {instead}")
    known_choice("--model", "model", model, SURROGATES)


def kernel_sizes(kernel: Any, pairs: Sequence[str] | None) -> dict[str, int]:
    """The sizes ``-p`` gives ``kernel`` (a gpuperf Kernel), checked, its defaults filling the
    gaps; a note on stderr names the sizes taken from the defaults."""
    from gpuperf.errors import GpuperfError
    from gpuperf.kernels.kernel import SizesViolateAssumptions

    given = parse_params(pairs)
    try:
        sizes = kernel.resolve_sizes(given)
    except SizesViolateAssumptions as error:  # a size the user never typed is the kernel's default: say so
        defaulted = [f"{name}={value}" for name, value in kernel.default_sizes.items()
                     if name not in given and name in kernel.params]
        if not defaulted:
            raise
        raise GpuperfError(f"{error} ({', '.join(defaulted)}: the kernel's default, as no -p gave it)") from None
    _note_defaults(kernel.key, given, sizes)
    return sizes


def space_sizes(space: Any, given: dict[str, int]) -> dict[str, int]:
    """The sizes a variant space's kernels run at (``VariantSpace.resolve_sizes``), with the same note
    as :func:`kernel_sizes`; ``given`` alone where the space's default variant is invalid."""
    from gpuperf.kernels.space import InvalidVariant

    try:
        sizes = space.resolve_sizes(given)
    except InvalidVariant:  # the command names what is wrong with the space
        return dict(given)
    _note_defaults(space.name, given, sizes)
    return sizes


def _note_defaults(name: str, given: dict[str, int], sizes: dict[str, int]) -> None:
    defaulted = [f"{size}={value}" for size, value in sizes.items() if size not in given]
    if defaulted:
        print(f"note: {name}: sizes not given take its defaults: {', '.join(defaulted)}", file=sys.stderr)


@overload
def parse_params(pairs: Sequence[str] | None, text: Literal[False] = False) -> dict[str, int]: ...


@overload
def parse_params(pairs: Sequence[str] | None, text: Literal[True]) -> dict[str, int | str]: ...


def parse_params(pairs: Sequence[str] | None, text: bool = False) -> dict[str, int] | dict[str, int | str]:
    """``["n=4096", "m=64"]`` -> ``{"n": 4096, "m": 64}`` (one clear error for a malformed pair);
    with ``text``, a value that is no number is kept as text (a table's size picked by its cells, such
    as a Kernel Tuner cache's ``problem_size=[1024, 1024]``)."""
    from gpuperf.errors import GpuperfError, clipped

    result: dict[str, int | str] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            raise GpuperfError(f"parameter '{pair}' must look like name=value")
        try:
            number = float(value)
        except ValueError:
            if text and value.strip() and name not in result and not _one_per_size(pair):  # not n=1,m=2
                result[name] = value.strip()
                continue
            if name in result:
                raise GpuperfError(f"parameter '{name}' is given twice") from None
            raise GpuperfError(f"parameter '{pair}': value '{value}' is not a number{_one_per_size(pair)}") from None
        if not number.is_integer():
            raise GpuperfError(f"parameter '{pair}': value '{value}' is not a whole number")
        try:  # digits stay exact past 2**53, where a float would round them
            whole = int(value)
        except ValueError:
            whole = int(number)  # 4096.0 and 4.096e3 as 4096
        if abs(whole) >= 2**63:
            raise GpuperfError(f"parameter '{clipped(pair)}': value '{clipped(value)}' is out of range "
                               "(-(2**63 - 1) to 2**63 - 1)")
        if name in result:
            raise GpuperfError(f"parameter '{name}' is given twice")
        result[name] = whole
    return result


def comma_separated(text: str | None) -> list[str]:
    """The names a comma-separated option value gives (``"a, b,,c"`` -> ``["a", "b", "c"]``), each stripped,
    empty ones dropped; none for an option not given (None)."""
    return [name.strip() for name in (text or "").split(",") if name.strip()]


def _one_per_size(pair: str) -> str:
    """For ``n=1024,m=1024`` (several sizes in one -p): a hint to give each its own, or ""."""
    if pair.count("=") < 2:
        return ""
    pieces = [piece for piece in re.split(r"[,;\s]+", pair) if piece]
    if all(re.fullmatch(r"[^=]+=[^=]+", piece) for piece in pieces):
        return f"; give one -p per size: {' '.join(f'-p {piece}' for piece in pieces)}"
    return "; give one -p per size: -p NAME=VALUE -p NAME=VALUE"


# -- where commands write ------------------------------------------------------------------------
def _file_in_a_folder(out: str | Path, option: str) -> Path:
    """``out`` as a path that names a file in an existing folder gpuperf may write in (else one error
    naming ``option``)."""
    from gpuperf.errors import GpuperfError

    path = Path(out)
    if path.is_dir():
        raise GpuperfError(f"{option} {path}: a folder; name a file")
    if not path.parent.exists():
        raise GpuperfError(f"{option} {path}: folder {path.parent} does not exist")
    _writable_folder(path.parent, option, path)
    return path


def store_file(store: str | Path, option: str = "--store") -> Path:
    """A measurement store a command measures into: an existing store, or a new one in an existing folder
    (a mistyped folder is refused, as an ``--out``'s is, not made)."""
    return _file_in_a_folder(store, option)


def _writable_folder(folder: Path, option: str, path: Path) -> None:
    """The nearest existing folder on the way to ``folder`` must be a folder gpuperf may write in."""
    from gpuperf.errors import GpuperfError

    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise GpuperfError(f"{option} {path}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise GpuperfError(f"{option} {path}: no permission to write in {existing}")
    try:  # permissions may allow what the file system refuses (/proc, /sys, a read-only mount)
        os.rmdir(tempfile.mkdtemp(prefix=".gpuperf-probe-", dir=existing))
    except OSError as error:
        raise GpuperfError(f"{option} {path}: nothing can be created in {existing} ({error.strerror})") from None


def csv_output_name(out: str | Path, option: str = "--out") -> None:
    """An error where a table written as CSV would get a name that promises another format (a
    ``.parquet`` holding CSV text, which no reader, ``--resume`` included, could read back)."""
    from gpuperf.errors import GpuperfError

    if not Path(out).name.lower().endswith((".csv", ".csv.gz")):
        raise GpuperfError(f"{option} {out}: the table is written as CSV; name it .csv or .csv.gz")


def new_output_file(out: str | Path, option: str = "--out", resumable: bool = False) -> Path:
    """A file a command writes a table to: new, in an existing folder. gpuperf never overwrites a
    file (a measurement, a profile, the store a table is exported from). ``resumable``: the command
    claims its file and takes ``--resume`` (call it holding the file's lock, so a live run is named
    as such first)."""
    from gpuperf.errors import GpuperfError

    path = _file_in_a_folder(out, option)
    if path.exists():
        empty = resumable and is_empty_claim(path)
        why = " (it is empty: a run killed before its first result left it claimed; remove it, or --resume)" if empty \
            else ""
        resume = "; or --resume to go on with the run it holds" if resumable and not empty else ""
        raise GpuperfError(f"{option} {path}: the file exists{why}; gpuperf does not overwrite files (choose another "
                           f"{option} or move it away{resume})")
    return path


def is_empty_claim(out: str | Path | None) -> bool:
    """Whether ``out`` is an empty file: a run's claim (:func:`claimed_output`) that was killed before its
    first result, which a resumed run takes as holding nothing yet."""
    return out is not None and Path(out).is_file() and Path(out).stat().st_size == 0


def nothing_to_resume(out: str | Path) -> bool:
    """Whether ``--resume`` finds no ``out`` at all (a run stopped before its first result removes its
    claim), so the run starts anew, with a note naming the file (a mistyped path shows there)."""
    import warnings

    from gpuperf.errors import GpuperfNote

    if Path(out).exists():
        return False
    warnings.warn(GpuperfNote(f"--resume: {out} does not exist yet (a run stopped before its first result "
                              "leaves none): starting a new run"), stacklevel=2)
    return True


@contextmanager
def claimed_output(out: str | Path | None, option: str = "--out") -> Iterator[None]:
    """A new output file a long run writes as it goes, claimed for the run: created empty when the
    block begins (a second run given the same path is refused, not left to write over the first's
    measurements) and removed again if the block ends with nothing written to it. None claims nothing."""
    from gpuperf.errors import GpuperfError

    if out is None:
        yield
        return
    path = Path(out)
    try:
        path.open("x").close()
    except FileExistsError:
        raise GpuperfError(f"{option} {path}: the file exists (another run writing it?); gpuperf does not overwrite "
                           f"files (choose another {option} or move it away)") from None
    try:
        yield
    finally:
        if path.is_file() and path.stat().st_size == 0:
            path.unlink()


@contextmanager
def output_lock(out: str | Path | None, option: str = "--out") -> Iterator[None]:
    """One run at a time writing ``out`` (a run that measures as it goes, resumed or not): the lock
    ``OUT.lock`` beside it is held for the block (and removed after); a second run finding it held is
    refused, naming the holder. None locks nothing."""
    from gpuperf.errors import GpuperfError
    from gpuperf.files import Held, Unlockable, run_lock

    if out is None:
        yield
        return
    _file_in_a_folder(out, option)  # a missing folder is named as such, not as a lock that cannot be made
    try:
        with run_lock(out, remove=True):
            yield
    except Held as held:
        raise GpuperfError(f"{option} {out}: another run (process {held.holder}) is writing it; wait for it to end, "
                           f"or give this run another {option}") from None
    except Unlockable as failed:
        raise GpuperfError(f"{option} {out}: cannot create its run lock {failed.lock} ({failed.reason})") from None


def model_output_file(out: str | Path, option: str = "--out", calibration: bool = False) -> Path:
    """A model file a command writes: new, or a gpuperf model file of the same kind being refitted
    (a linear count model ``calibrate`` wrote when ``calibration``, else a model ``fit`` wrote); any
    other existing file is refused."""
    from gpuperf.errors import GpuperfError
    from gpuperf.models.linear_calibration import MODEL_KIND
    from gpuperf.models.persistence import model_info

    path = _file_in_a_folder(out, option)
    if path.exists():
        try:
            info = model_info(path)
        except GpuperfError:
            raise GpuperfError(f"{option} {path}: the file exists and is not a gpuperf model; gpuperf overwrites "
                               "only a model file it wrote") from None
        calibrated = (info.get("metadata") or {}).get("kind") == MODEL_KIND
        if calibrated != calibration:
            held = "a linear count model gpuperf calibrate wrote" if calibrated else "a model gpuperf fit wrote"
            raise GpuperfError(f"{option} {path}: holds {held}, which this command would replace with another kind "
                               f"of model; choose another {option} or move it away")
    return path


def report_folder(out: str | Path, option: str = "--report", within: Sequence[str] = ()) -> Path:
    """A folder a report goes to, checked before any work: not a file (an existing report folder is
    written again, unless it holds a tuning report, whose trials may be their only record). ``within``:
    the folders inside it where the command writes reports of their own (``reproduce geometry``'s sweeps),
    checked alike. An empty name (``--report "$DIR"``, the variable unset) is an error, not the current folder."""
    from gpuperf.errors import GpuperfError

    if not str(out).strip():
        raise GpuperfError(f"{option} is empty; name the folder the report goes to")
    path = Path(out)
    for folder in (path, *(path / name for name in within)):
        _report_folder_checked(folder, option)
    _hold_for_the_command(path, option)
    return path


def _report_folder_checked(path: Path, option: str) -> None:
    """An error where ``path`` is a file, holds a tuning report or cannot be created or written."""
    from gpuperf.errors import GpuperfError

    if path.exists() and not path.is_dir():
        raise GpuperfError(f"{option} {path}: a file, not a folder")
    if _holds_tuning_report(path):
        raise GpuperfError(f"{option} {path}: holds a tuning report (gpuperf tune), whose trials may be their only "
                           "record; name another folder")
    _writable_folder(path, option, path)


@contextmanager
def shown_if_unreported(show: Callable[[], None], what: str) -> Iterator[None]:
    """The block writing a report: where it fails, ``show`` prints the results first (the report may have
    been their only record: a tuning run's trials without --out) and the error says they are above."""
    from gpuperf.errors import GpuperfError

    try:
        yield
    except GpuperfError as error:
        show()
        raise GpuperfError(f"{error}; the {what} are printed above") from None


@dataclass
class _Held:
    """The run locks one command holds until it ends, and the folders they are on."""

    stack: ExitStack = field(default_factory=ExitStack)
    folders: set[Path] = field(default_factory=set)


_THREAD = threading.local()  # each thread's command holds its own locks: one ending releases none of another's


def _held() -> _Held:
    if getattr(_THREAD, "held", None) is None:
        _THREAD.held = _Held()
    return _THREAD.held


@contextmanager
def command_locks() -> Iterator[None]:
    """The block of one command: the locks it took on its report folders are released when it ends
    (a command's alone: another thread's, running beside it, keep theirs)."""
    outer = getattr(_THREAD, "held", None)
    _THREAD.held = held = _Held()
    try:
        yield
    finally:
        _THREAD.held = outer
        held.stack.close()


def _hold_for_the_command(folder: Path, option: str) -> None:
    """One run at a time writing a report folder (a lock inside it, held until the command ends): a
    second run naming it is refused at its start, not left to replace the first's report. A folder
    made for the lock is removed again if the command ends leaving it empty."""
    from gpuperf.errors import GpuperfError
    from gpuperf.files import Held, Unlockable, real_path, run_lock

    held = _held()
    resolved = real_path(folder)
    if resolved in held.folders:
        return
    made = not resolved.exists()
    resolved.mkdir(parents=True, exist_ok=True)
    if made:
        held.stack.callback(_remove_if_empty, resolved)  # runs after the lock below is released
    try:
        held.stack.enter_context(run_lock(resolved / REPORT_LOCK, remove=True))
    except Held as other:
        raise GpuperfError(f"{option} {folder}: another run (process {other.holder}) is writing a report there; wait "
                           f"for it to end, or name another folder") from None
    except Unlockable as failed:
        raise GpuperfError(f"{option} {folder}: cannot create its run lock {failed.lock} ({failed.reason})") from None
    held.folders.add(resolved)


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:  # something was written there: kept
        pass


def _holds_tuning_report(folder: Path) -> bool:
    try:
        document = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # not a metrics.json gpuperf wrote
        return False
    return isinstance(document, dict) and isinstance(document.get("metrics"), dict) and "tuning" in document["metrics"]


def caught_warnings(call: Callable[[], Any]) -> tuple[Any, list[warnings.WarningMessage]]:
    """``call()``'s value and the warnings it raised, with every gpuperf note among them (even one raised
    from the same line before)."""
    from gpuperf.errors import GpuperfNote

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", GpuperfNote)
        value = call()
    return value, caught


def boards_note(gpu: str) -> str | None:
    """Prints on stderr the note that the model name ``gpu`` is taken as one board of several gpuperf
    describes (``H100``: the H100 SXM, not the H100 PCIe), and returns it without ``note: `` for a
    command's ``--json`` notes; None where ``gpu`` names one board."""
    from gpuperf.hardware.specs import other_boards_note

    note = other_boards_note(gpu)
    if note is None:
        return None
    print(note, file=sys.stderr)
    return note.removeprefix("note: ")


def with_notes(call: Callable[[], Any]) -> tuple[Any, list[str]]:
    """``call()``'s value and the gpuperf notes it raised, each also printed on stderr (``note: ...``),
    for a command's ``--json`` to carry; other warnings are shown as Python shows them.
    Use it for one call whose notes print once it returns, after its progress bar; :func:`notes_kept` prints
    them as raised, ``model_tables.noted`` leaves the printing to the command."""
    from gpuperf.errors import GpuperfNote

    value, caught = caught_warnings(call)
    notes = []
    for warning in caught:
        if issubclass(warning.category, GpuperfNote):
            notes.append(str(warning.message))
            print(f"note: {visible(str(warning.message), keep=LINE_KEEPS)}", file=sys.stderr)
        else:
            warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)
    return value, notes


class KeptNotes(list):
    """The notes a command printed on stderr, each without ``note: ``, for its ``--json``'s ``notes``."""

    def add(self, note: str | None) -> None:
        """Prints ``note`` (``note: ...``) on stderr and keeps it; None is no note."""
        if note:
            print(note, file=sys.stderr)
            self.append(note.removeprefix("note: "))


@contextmanager
def notes_kept() -> Iterator[KeptNotes]:
    """Within it every gpuperf note raised is printed on stderr when raised, as always, and also kept in
    the list it yields, with the notes the command adds itself (:meth:`KeptNotes.add`), in order.
    Use it for a block whose notes print as they come and mix with the command's own; :func:`with_notes` holds
    them until its one call returns."""
    from gpuperf.errors import GpuperfNote

    kept = KeptNotes()
    with warnings.catch_warnings():
        show = warnings.showwarning

        def shown_and_kept(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
            if issubclass(category, GpuperfNote):
                kept.append(str(message))
            show(message, category, filename, lineno, file, line)

        warnings.simplefilter("always", GpuperfNote)
        warnings.showwarning = shown_and_kept
        yield kept


def given_on_command_line(ctx: typer.Context, name: str) -> bool:
    """Whether the option of parameter ``name`` was given, at its default value too (``--svr-kernel rbf``), not
    left to its default: an option given to a command it does not apply to is refused, whatever its value."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name != "DEFAULT"
