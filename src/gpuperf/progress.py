"""Progress bars on stderr (stdout holds only what a command prints), drawn only on a terminal: a log
file or a pipe gets no bar, and no empty line or final bar before the messages that follow."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def progress_bar(hidden: bool = False, *columns: Any, transient: bool = True) -> Any:
    """A rich ``Progress`` on stderr with ``columns`` (rich's default ones when none), disabled when
    ``hidden`` or when stderr is not a terminal."""
    from rich.console import Console
    from rich.progress import Progress

    errors = Console(stderr=True)
    return Progress(*columns, console=errors, disable=hidden or not errors.is_terminal, transient=transient)


@contextmanager
def progress_task(description: str, hidden: bool = False, total: int | None = None) -> Iterator[Callable[[int, int], None]]:
    """A :func:`progress_bar` of one task, ``description``, and the ``progress(done, total)`` callback
    that moves it, as gpuperf's long computations (explore, rank, a sweep, an export) take one."""
    with progress_bar(hidden) as bar:
        task = bar.add_task(description, total=total)
        yield lambda done, total: bar.update(task, completed=done, total=total)
