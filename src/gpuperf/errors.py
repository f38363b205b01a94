"""The one error type gpuperf raises for bad user input, and checks that raise it."""

from __future__ import annotations

import difflib
import math
import numbers
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any


class GpuperfError(ValueError):
    """Bad user input: the message names the file, row, key or field at fault, in one line."""


class GpuperfNote(UserWarning):
    """Something a user should know that does not stop the work; the command line prints it as a note."""


def clipped(text: str, at_most: int = 60) -> str:
    """``text`` cut to ``at_most`` characters (ending in ...): a huge cell quoted in a message in part."""
    return text if len(text) <= at_most else f"{text[:at_most - 3]}..."


def named_values(values: Mapping[str, Any]) -> str:
    """``{"n": 4096, "m": 64}`` as ``n=4096, m=64`` (``none`` when empty): a mapping in human-readable output."""
    return ", ".join(f"{name}={value}" for name, value in values.items()) or "none"


def counted(count: int, noun: str) -> str:
    """``1 row``, ``2 rows``, ``1,500 rows``: a count with its noun in agreement."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def unknown_name_error(kind: str, name: object, known: Iterable[str]) -> GpuperfError:
    """An error for an unknown name (any value, compared as written: a number, or None, which gets no
    suggestion) that suggests the nearest known names."""
    known = sorted({str(k) for k in known if str(k).strip()})  # an empty name is no suggestion
    if name is None:
        return GpuperfError(f"unknown {kind} 'None'; known: {listed(known, 12)}")
    name = str(name)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.4)
    if not close:
        lowered = name.lower()
        close = [k for k in known if lowered in k.lower() or k.lower() in lowered][:3]
    hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {listed(known, 12)}"
    if close and len(known) <= 12 and set(close) != set(known):  # a short list whole: the nearest spelling may mislead
        hint += f" (known: {', '.join(known)})"
    return GpuperfError(f"unknown {kind} '{clipped(name)}'{hint}")


def refuse_one_string(value: object, what: str, where: str | None = None, names: str = "column names") -> None:
    """An error for ``value`` given as one string where a list of names is wanted: ``"bx"`` would read as one
    name per character, b and x. ``what`` names the argument, ``where`` (if any) the caller or file."""
    if isinstance(value, str):
        raise GpuperfError(f"{where + ': ' if where else ''}{what} lists {names}, e.g. ['{value}'], not the string "
                           f"'{value}'")


def name_list(values: Sequence, what: str, where: str) -> list:
    """``values`` (the groups, kernels or models a caller names) as a list; one string is an error
    (:func:`refuse_one_string`), as it would read as one name per character (``"H100"`` as H, 1, 0, 0)."""
    refuse_one_string(values, what, where, names="names")
    return list(values)


def close_names(name: str, names: Iterable[str], cutoff: float = 0.6) -> list[str]:
    """The columns of ``names`` a missing ``name`` may mean: those spelling it in another case (``N`` for
    ``n``, which difflib rates 0), else up to three near spellings."""
    names = [str(other) for other in names]
    cased = [other for other in names if other.lower() == name.lower()]
    return cased or difflib.get_close_matches(name, names, n=3, cutoff=cutoff)


def did_you_mean(name: str, names: Iterable[str]) -> str:
    """`` (did you mean n?)`` for a missing column ``name`` (:func:`close_names`), or "" where none is near."""
    close = close_names(name, names)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def listed(names: Sequence[str], at_most: int) -> str:
    """The first ``at_most`` of ``names``, comma-separated, and how many more there are."""
    shown = ", ".join(names[:at_most])
    return shown + (f", ... ({len(names) - at_most} more)" if len(names) > at_most else "")


def first_names(names: Sequence[str], at_most: int) -> str:
    """The first ``at_most`` of ``names``, comma-separated, with ``, ...`` where there are more."""
    return ", ".join(names[:at_most]) + (", ..." if len(names) > at_most else "")


def whole_number(value: object, name: str) -> int:
    """``value`` as an int when it is a whole number (16, 16.0, numpy's 16); else an error naming ``name``."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
        if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
            return int(value)
    raise GpuperfError(f"{name} must be a whole number, not {value!r}")


STANDARD_INPUT = "-"  # the name by which other tools read standard input


def missing_file(path: object, message: str) -> GpuperfError:
    """The error for a file that is not there: ``message``, or that ``path`` is a folder or no regular file,
    or is ``-`` (standard input, which gpuperf does not read)."""
    from pathlib import Path

    if Path(str(path)).is_dir():
        return GpuperfError(f"{path}: a folder, not a file")
    if Path(str(path)).exists():  # a pipe (<(command)), /dev/null, a socket: read more than once here
        return GpuperfError(f"{path}: not a regular file (a pipe or a device?); save it to a file first")
    if str(path) == STANDARD_INPUT:
        return standard_input_refused()
    return GpuperfError(message)


def standard_input_refused() -> GpuperfError:
    """The error for ``-`` given as an input file: gpuperf reads its inputs from files, never from stdin."""
    return GpuperfError(f"{STANDARD_INPUT}: gpuperf reads its inputs from files, not from standard input; save the "
                        "data to a file and give the file's name")


@contextmanager
def parser_limits(where: object) -> Iterator[None]:
    """Turn the JSON and TOML readers' own limits into one error naming ``where``: nesting deeper than
    Python's recursion allows (RecursionError) and integers of more than 4300 digits (ValueError)."""
    try:
        yield
    except RecursionError:
        raise GpuperfError(f"{where}: nested too deeply to read (arrays or tables inside one another)") from None
    except ValueError as error:
        if isinstance(error, GpuperfError) or "integer string conversion" not in str(error):
            raise
        raise GpuperfError(f"{where}: holds a number of more than 4300 digits, which cannot be read") from None


COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zip", ".zst", ".tar")


def too_large(path: object) -> GpuperfError:
    """The error for a file whose contents do not fit in memory; a compressed one (a small file that
    decompresses to gigabytes, say) is said to be too large once decompressed."""
    compressed = str(path).lower().endswith(COMPRESSED_SUFFIXES)
    return GpuperfError(f"{path}: too large {'once decompressed ' if compressed else ''}to read into this "
                        "machine's memory")
