"""The one error type gpuperf raises for bad user input."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class GpuperfError(ValueError):
    """Bad user input: the message names the file, row, key or field at fault, in one line."""


def unknown_name_error(kind: str, name: str, known: Iterable[str]) -> GpuperfError:
    """An error for an unknown name that suggests the nearest known names."""
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.4)
    if not close:
        lowered = name.lower()
        close = [k for k in known if lowered in k.lower() or k.lower() in lowered][:3]
    hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(known[:12])}"
    return GpuperfError(f"unknown {kind} '{name}'{hint}")
