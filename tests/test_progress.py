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


def test_ask_shows_what_it_is_doing_on_a_terminal_while_its_surrogate_fits(monkeypatch, capsys, tmp_path) -> None:
    """ask over thousands of measured points fitted for a minute with nothing on the screen."""
    from gpuperf.cli import main

    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    table = tmp_path / "space.csv"
    table.write_text("x,time_ms\n1,3\n2,2\n3,\n4,\n")
    assert main(["ask", str(table), "--params", "x"]) == 0
    assert "choosing 1 of 2 configurations to measure next" in capsys.readouterr().err


def test_import_and_predict_table_show_their_long_steps_on_a_terminal(monkeypatch, capsys, tmp_path) -> None:
    from pathlib import Path

    from gpuperf.cli import main

    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    cache = Path(__file__).parent / "data" / "kernel_tuner_vector_add.json"
    assert main(["import", "kernel-tuner", str(cache), "--out", str(tmp_path / "t.csv")]) == 0
    err = capsys.readouterr().err
    assert f"importing {cache}" in err and "writing" in err


def test_ask_draws_no_bar_with_no_progress_as_explore_and_tune_take_it(monkeypatch, capsys, tmp_path) -> None:
    """ask drew its bar on a terminal and refused --no-progress ("No such option"), which explore, tune
    and rank take."""
    from gpuperf.cli import main

    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    table = tmp_path / "space.csv"
    table.write_text("x,time_ms\n1,3\n2,2\n3,\n4,\n")
    assert main(["ask", str(table), "--params", "x", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "choosing" not in captured.err and "x" in captured.out
