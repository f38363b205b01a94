"""Progress bars on stderr (stdout holds only what a command prints), drawn only on a terminal: a log
file or a pipe gets no bar, and no empty line or final bar before the messages that follow."""

from __future__ import annotations

from typing import Any


def progress_bar(hidden: bool = False, *columns: Any, transient: bool = True) -> Any:
    """A rich ``Progress`` on stderr with ``columns`` (rich's default ones when none), disabled when
    ``hidden`` or when stderr is not a terminal."""
    from rich.console import Console
    from rich.progress import Progress

    errors = Console(stderr=True)
    return Progress(*columns, console=errors, disable=hidden or not errors.is_terminal, transient=transient)
