"""Progress bars: drawn on a terminal's stderr only, so a log file holds messages and nothing else."""

from __future__ import annotations

import pytest

from gpuperf.features.table import feature_table
from gpuperf.measure.campaign import _progress_bar as campaign_bar
from gpuperf.progress import progress_bar


def test_bars_leave_nothing_on_a_stderr_that_is_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    feature_table(["vector_copy"], [{"n": 4096}], progress=True)
    for bar in (progress_bar(), campaign_bar(True)):  # the campaign's bar is kept when finished on a terminal
        with bar:
            task = bar.add_task("work", total=2)
            bar.advance(task, 2)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


def test_bars_are_drawn_on_a_terminal(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich takes this for a terminal
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    assert not progress_bar().disable
    assert progress_bar(hidden=True).disable
    with progress_bar() as bar:
        task = bar.add_task("halfway there", total=2)
        bar.advance(task, 1)
        bar.refresh()
    captured = capsys.readouterr()
    assert "halfway there" in captured.err and captured.out == ""  # stdout holds only what a command prints
