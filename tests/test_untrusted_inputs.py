"""Inputs gpuperf did not write (a table, a model, a name from someone else): a bounded cost, one clear
error, and no code run that the docs do not say runs."""

from __future__ import annotations

import time

import pytest

from gpuperf.datasets.tables import read_csv, repeated_names
from gpuperf.errors import GpuperfError


def test_a_wide_headers_repeated_columns_are_found_in_linear_time(tmp_path):
    """A CSV header of 200,000 columns (a 3 MB file) is checked for repeated names in well under a second:
    counting each name over the whole header took hours."""
    names = [f"c{i}" for i in range(200_000)] + ["c7", "c3", "c7"]
    start = time.perf_counter()
    assert repeated_names(names) == ["c3", "c7"]
    assert time.perf_counter() - start < 5.0
    table = tmp_path / "twice.csv"
    table.write_text("kernel,x,time_s,x\nk,1,0.5,2\n")
    with pytest.raises(GpuperfError, match="the header names column x more than once"):
        read_csv(table)


def test_names_with_dollar_signs_are_drawn_as_they_are_not_as_mathtext(tmp_path):
    """A kernel or GPU named $\\bar$ (read from a table) in a title, legend or tick label is plain text: as
    mathtext it failed the whole report with matplotlib's traceback. A log axis keeps its 10^-3 labels."""
    from gpuperf.evaluation.figures import Figure
    from gpuperf.evaluation.report import save_figure

    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot(1, 1, 1)
    ax.plot([1e-3, 1e-2], [1e-3, 1e-2], label=r"kernel $\foo$")
    ax.set_xscale("log")
    ax.set_yticks([1e-3, 1e-2], [r"$\bar$", "a$b$c"])
    ax.set_title(r"held out: $\bar$")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, tmp_path / "plot.png", dpi=50, bbox_inches="tight")
    assert (tmp_path / "plot.png").stat().st_size > 0
    assert not ax.title.get_parse_math() and not ax.get_yticklabels()[0].get_parse_math()
    assert any(label.get_parse_math() and "mathdefault" in label.get_text() for label in ax.get_xticklabels())


@pytest.mark.parametrize("cell, reason", [("(256, 256)", r"holds '\(256, 256\)', not JSON"),
                                          ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
                                          ("1" * 5000, "more than 4300 digits")])
def test_a_tables_problem_size_that_is_not_json_is_an_error_naming_the_column(tmp_path, cell, reason):
    """write_kernel_tuner_cache reads the frame's problem_size cell as JSON: other text (a tuple's, a nesting
    past Python's recursion, a 5000-digit number) is one gpuperf error naming the column, not JSON's own."""
    import pandas as pd

    from gpuperf.datasets import write_kernel_tuner_cache

    frame = pd.DataFrame({"kernel": ["k", "k"], "gpu": ["A100", "A100"], "device": ["A100", "A100"], "bx": [1, 2],
                          "time_s": [1e-3, 2e-3], "status": ["ok", "ok"], "problem_size": [cell, cell]})
    frame.attrs["parameters"] = ["bx"]
    with pytest.raises(GpuperfError, match=f"the problem_size column.*{reason}"):
        write_kernel_tuner_cache(frame, tmp_path / "cache.json")
    assert not (tmp_path / "cache.json").exists()


def test_predict_tables_whole_number_check_reads_a_wide_header_in_linear_time(tmp_path):
    """predict-table's check of which gapped columns a CSV wrote as whole numbers counted each header name
    over the whole header: 30,000 columns took 10 to 20 seconds, 200,000 a quarter of an hour."""
    import pandas as pd

    from gpuperf.datasets.tables import whole_number_columns

    names = [f"c{i}" for i in range(30_000)]
    table = tmp_path / "wide.csv"
    table.write_text(",".join([*names, "blocks"]) + "\n" + ",".join(["1"] * len(names) + ["4"]) + "\n"
                     + ",".join(["1"] * len(names) + [""]) + "\n")
    start = time.perf_counter()
    assert whole_number_columns(pd.DataFrame({"blocks": [4.0, None]}), table) == ["blocks"]
    assert time.perf_counter() - start < 8.0
