"""The next configuration to measure, from a table of a space measured so far.

For kernels measured by any harness (a script, a batch job, a colleague): the table lists every
configuration of the space, one row each, with the times measured so far and an empty time where
a configuration has not run yet (a failure is a failure name in the time column, or a status other
than ok). :func:`next_configuration` replays the measured rows into a
:class:`~gpuperf.decisions.tune.GuidedSearch` in the table's order and asks it for the next one, so
measuring what it names, writing the time into the table and asking again is the guided search
run by hand, one measurement at a time (or a batch at a time, ``count``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from gpuperf.datasets.schema import require_frame, row_location
from gpuperf.decisions.exploration import default_model
from gpuperf.decisions.space import (
    TIME_COLUMNS, Space, empty_cells, held_times_hint, refuse_empty_time_column, space_from_frame, unmeasured_rows,
    unnamed_time_column, unnamed_times_error, without_unparameterised_rows,
)
from gpuperf.decisions.tune import GuidedSearch, TrainingData, batch_count
from gpuperf.errors import GpuperfError

STATUS = "status"


@dataclass
class NextConfiguration:
    """What :func:`next_configuration` found: the row to measure next (None once every
    configuration is measured), and where the search stands."""

    index: Any  # the row's label in the table (what frame.loc takes: its position for a default index)
    row: str | None  # where that row is in the file ("line 17")
    config: dict[str, Any] | None
    batch: list[dict[str, Any]]  # every configuration to measure now (index, row, config); the first is the next
    measured: int
    failed: int
    remaining: int
    best_row: str | None
    best_config: dict[str, Any] | None
    best_time: float | None
    time_column: str
    method: str

    def summary(self) -> dict[str, Any]:
        """The JSON ``gpuperf ask`` prints."""
        return {"next": self.config, "next_row": self.row, "index": self.index, "batch": self.batch,
                "measured": self.measured, "failed": self.failed, "remaining": self.remaining,
                "best": self.best_config, "best_row": self.best_row, "best_time": self.best_time,
                "time_column": self.time_column, "method": self.method}


@dataclass
class PartlyMeasured:
    """A space's table as measured so far: ``space`` (checked as explore checks a space; times NaN
    where a configuration failed or has not run), which rows have not run, and the table read."""

    space: Space
    pending: np.ndarray
    frame: pd.DataFrame

    def label(self, index: int | None) -> Any:
        """The frame's label of the row at position ``index`` (what frame.loc takes)."""
        if index is None:
            return None
        label = self.frame.index[index]
        return int(label) if isinstance(label, (int, np.integer)) else label

    def location(self, index: int | None) -> str | None:
        return None if index is None else row_location(self.frame, index)

    def config(self, index: int | None) -> dict[str, Any] | None:
        return None if index is None else self.space.config(index)


def partly_measured(frame: pd.DataFrame, params: Sequence[str], target: str | None = None,
                    where: str = "table") -> PartlyMeasured:
    """``frame`` read as a space measured so far. ``target``: the time column (default: the first
    of time_ms, time_s, time the table has, an error where it is empty and another holds times; a
    table with none has nothing measured yet)."""
    require_frame(frame, where)
    if target is None:
        target = next((name for name in TIME_COLUMNS if name in frame.columns), None)
        if target is None:
            _refuse_unnamed_times(frame, params, where)
            target = TIME_COLUMNS[0]
        else:
            # empty beside another time column that holds times: asking would name one measured already
            refuse_empty_time_column(frame, target, where, "the times measured so far")
    else:
        _require_named_target(frame, target, params, where)
    frame = without_unparameterised_rows(frame, params, where)
    pending = unmeasured_rows(frame, target)
    # The rows not measured yet get a stand-in time, so that the measured ones are checked (and
    # named in errors) as explore checks a space's rows; an empty status is none.
    times = frame[target].astype(object) if target in frame.columns else pd.Series(np.nan, frame.index, dtype=object)
    stand_in = frame.assign(**{target: times.where(~pending, 1.0)})
    if STATUS in frame.columns:
        stand_in[STATUS] = frame[STATUS].astype(object).where(~empty_cells(frame[STATUS]), "ok")
    space = space_from_frame(stand_in, params, target, where, all_failed=True)  # every one ran: next is none
    space.times[pending] = np.nan
    return PartlyMeasured(space, pending, frame)


def _refuse_unnamed_times(frame: pd.DataFrame, params: Sequence[str], where: str) -> None:
    """An error when a table with none of ``TIME_COLUMNS`` holds values in a column named as a time
    (``time_us``, ``runtime``): asking would ignore them and send the times to a new column."""
    column = unnamed_time_column(frame, params)
    if column is not None:
        raise unnamed_times_error(where, column, "the times measured so far")


def _require_named_target(frame: pd.DataFrame, target: str, params: Sequence[str], where: str) -> None:
    """An error when ``target`` is not a column but the table holds its times under another name
    (time_ms, time_s, time, or a near spelling): asking would ignore every time measured so far."""
    if target in frame.columns:
        return
    hint = held_times_hint(frame, target, params, "the times measured so far")
    if hint:
        raise GpuperfError(f"{where}: missing time column '{target}'{hint}")


def next_configuration(table: PartlyMeasured, train: TrainingData | Sequence[TrainingData] = (), model: str | None = None,
                       seed: int = 0, count: int = 1) -> NextConfiguration:
    """The configuration of ``table`` to measure next (see the module docstring), or with ``count``
    the ``count`` to measure at once (:meth:`GuidedSearch.ask_batch`); ``train``: the same
    parameters measured on other GPUs (spaces, or tables, files, caches or bundled names, one or a
    list, as :class:`GuidedSearch` takes them), taken whole."""
    if not isinstance(table, PartlyMeasured):
        raise GpuperfError(f"next_configuration takes a table read by partly_measured(frame, params), not a "
                           f"{type(table).__name__}")
    count = batch_count(count)
    space, pending = table.space, table.pending
    search = GuidedSearch(space.configs, space.params, train, model, seed, gpu=space.gpu)
    for index in np.flatnonzero(~pending):
        time = space.times[index]
        search.tell(int(index), None if np.isnan(time) else float(time))
    best = search.best()
    picks = search.ask_batch(count) if pending.any() else []
    chosen = picks[0] if picks else None
    return NextConfiguration(
        index=table.label(chosen), row=table.location(chosen), config=table.config(chosen),
        batch=[{"index": table.label(i), "row": table.location(i), "config": table.config(i)} for i in picks],
        measured=int((~pending).sum()),
        failed=int(np.isnan(space.times[~pending]).sum()), remaining=int(pending.sum()),
        best_row=table.location(best), best_config=table.config(best),
        best_time=None if best is None else float(space.times[best]), time_column=space.time_column,
        method=("transfer-guided" if search.train else "online") + f" ({model or default_model(bool(search.train), True)})",
    )
