"""Decision reports: tables, curves and strip charts written to a folder, and the commands that write them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuperf.cli import main
from gpuperf.decisions.exploration import ExploreResult
from gpuperf.decisions.reports import (
    advisor_report,
    exploration_curves,
    exploration_report,
    geometry_report,
    time_unit,
)
from gpuperf.errors import GpuperfError

from test_decisions_cli import write_space


def test_exploration_curves_follow_the_orders():
    performance = np.array([0.2, 0.5, 1.0, 0.95, 0.1])
    result = ExploreResult([1, 3], performance, "search", transfer_order=[0, 4, 1, 2])
    curves = exploration_curves(result)
    assert list(curves) == ["search", "plain transfer", "random (expected best found)"]
    np.testing.assert_allclose(curves["search"], [0.5, 0.95])  # ends where the search stopped
    np.testing.assert_allclose(curves["plain transfer"], [0.2, 0.2, 0.5, 1.0])
    random = curves["random (expected best found)"]
    assert len(random) == 4 and np.all(np.diff(random) >= 0) and random[0] == pytest.approx(performance.mean())
    # The span covers the budget and random order's 90th percentile, never more than the space.
    wide = ExploreResult([1, 3], performance, "search", budget=3, baselines={"random_evals_to_90_p90": 4.2})
    assert len(exploration_curves(wide)["random (expected best found)"]) == 5
    assert len(exploration_curves(wide, 2)["search"]) == 2


def test_exploration_report_counts_evaluations(tmp_path):
    performance = np.array([0.2, 0.5, 1.0, 0.95, 0.1])
    cases = {"a": ExploreResult([1, 3, 2], performance, "search", transfer_order=[0, 4, 1, 2], budget=3,
                                baselines={"random_evals_to_90": 2.4, "random_evals_to_90_p10": 1.0,
                                           "random_evals_to_90_p90": 4.0}),
             "b": ExploreResult([2], performance, "search", budget=3)}
    paths = exploration_report(tmp_path, cases)
    assert paths["exploration_curves"].stat().st_size > 1000
    tables = json.loads(paths["json"].read_text())["tables"]["Evaluations to reach a fraction of the best"]
    first, second = tables
    assert (first["evals_to_90"], first["evals_to_99"], first["transfer_evals_to_90"]) == (2, 3, 4)
    assert second["evals_to_90"] == 1 and second["transfer_evals_to_90"] is None
    assert (first["random_evals_to_90"], first["random_evals_to_90_p90"]) == (2.4, 4.0)
    assert "Method: search, at most 3 evaluations." in paths["markdown"].read_text()
    assert "![exploration_curves](exploration_curves.png)" in paths["markdown"].read_text()
    assert "\"best time / best found so far\" is the best time divided by" in paths["markdown"].read_text()
    with pytest.raises(GpuperfError):
        exploration_report(tmp_path, {})


def test_exploration_report_sets_random_order_within_the_budget_beside_its_uncapped_expectation(tmp_path):
    performance = np.array([0.2, 0.5, 1.0, 0.95, 0.1])
    baselines = {"random_expected_evals_to_90": 3.0, "random_expected_evals_to_90_within_budget": 2.6}
    paths = exploration_report(tmp_path, {"a": ExploreResult([1, 3, 2], performance, "search", budget=3,
                                                             baselines=baselines)})
    row, = json.loads(paths["json"].read_text())["tables"]["Evaluations to reach a fraction of the best"]
    assert (row["random_expected_evals_to_90"], row["random_expected_evals_to_90_within_budget"]) == (3.0, 2.6)


def test_advisor_report_sign_accuracy(tmp_path):
    results = pd.DataFrame({
        "optimization": ["tiling"] * 4, "target": ["gpu"] * 4, "split": ["inputs"] * 4, "fold": [0, 0, 1, 1],
        "family": ["f"] * 4, "measured": [2.0, 0.5, 1.5, 0.8], "predicted": [1.8, 0.6, 0.9, 0.7],
        "knn": [1.8, 0.6, 0.9, 0.7], "m5p": [1.8, 0.6, 0.9, 0.7], "p_faster": [0.9, 0.1, 0.4, 0.2],
        "confidence": [0.9, 0.9, 0.2, 0.8], "constant": [1.0] * 4,
    })
    paths = advisor_report(tmp_path, results)
    assert {"measured_speedups", "speedup_ratios"} <= set(paths)
    overall = json.loads(paths["json"].read_text())["tables"]["Overall"][0]
    assert overall["pairs"] == 4 and overall["sign_accuracy"] == pytest.approx(0.75)
    assert overall["sign_accuracy_confident"] == pytest.approx(1.0)
    assert overall["clear_share"] == pytest.approx(1.0) and overall["log2_mae_constant"] > overall["log2_mae"]
    assert "Speedup = time before / time after the optimization" in paths["markdown"].read_text()


def test_geometry_report_speedups(tmp_path):
    picks = pd.DataFrame({"group": [0, 1], "llvm": [2.0, 1.0], "llvm_threads": [128, 128],
                          "heuristic": [1.0, 1.0], "heuristic_threads": [256, 128],
                          "best": [1.0, 0.5], "best_threads": [256, 64]})
    paths = geometry_report(tmp_path, {"toy on GPU": picks}, ("llvm", "heuristic", "best", "model"))
    overall = {row["policy"]: row for row in json.loads(paths["json"].read_text())["tables"]["Over all choices"]}
    assert set(overall) == {"llvm", "heuristic", "best"}
    assert overall["heuristic"]["speedup_vs_llvm"] == pytest.approx(np.sqrt(2.0))
    assert overall["heuristic"]["within_10pct"] == pytest.approx(0.5)
    assert paths["speedup_vs_llvm"].exists()


def test_explore_command_writes_a_report(tmp_path, capsys):
    space = write_space(tmp_path / "target.csv", (7, 4))
    other = write_space(tmp_path / "other.csv", (6, 4), 2.0)
    argv = ["explore", space, "--params", "bx,tile", "--train", other, "--model", "knn", "--budget", "20",
            "--report", str(tmp_path / "report"), "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["report"] == str(tmp_path / "report" / "report.md")
    assert (tmp_path / "report" / "exploration_curves.png").exists()
    document = json.loads((tmp_path / "report" / "metrics.json").read_text())
    row = document["tables"]["Evaluations to reach a fraction of the best"][0]
    assert row["evals_to_90"] == result["evals_to_90"] and row["transfer_evals_to_90"] == result["transfer_evals_to_90"]
    # the report's random baseline is the one the command's verdict and --json give, the exact expectation
    assert row["random_expected_evals_to_90"] == pytest.approx(result["random_expected_evals_to_90"])
    assert document["metrics"]["exploration"] == {key: result[key] for key in
                                                  ("best_time", "best_found_time", "evaluated", "time_column")}
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "# Exploring target.csv" in markdown and f"Trained on: {other} (1 space(s) measured elsewhere)." in markdown
    assert f"best {result['best_time']:.4g}, best found {result['best_found_time']:.4g} in {result['evaluated']} evaluations" in markdown


def test_reproduce_unknown_study_is_one_line(capsys):
    assert main(["reproduce", "explorations"]) == 2
    assert "exploration" in capsys.readouterr().err


def test_reproduce_rodinia_refuses_an_unknown_scenario_before_running(capsys):
    assert main(["reproduce", "rodinia", "--scenarios", "bsp,transfer_nearest"]) == 2
    assert "transfer_near" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["geometry", "--split", "inputs"], "--split goes with reproduce advisor, not geometry"),
    (["rodinia", "--family", "hub/gemm"], "--family goes with reproduce exploration, not rodinia"),
    (["exploration", "--full"], "--full goes with reproduce rodinia, not exploration"),
    (["advisor", "--split", "bogus"], "unknown advisor split 'bogus'"),
    (["advisor", "--inner-aggregate", "median"], "--inner-aggregate goes with reproduce rodinia, not advisor"),
    (["rodinia", "--inner-aggregate", "max"], "unknown inner aggregate 'max'"),
    # an option of another study is refused at its default value too: it was ignored without a word
    (["rodinia", "--family", "schoonhoven/pnpoly"], "--family goes with reproduce exploration, not rodinia"),
    (["geometry", "--inner-aggregate", "mean"], "--inner-aggregate goes with reproduce rodinia, not geometry"),
])
def test_reproduce_refuses_options_of_other_studies_before_running(studies, capsys, argv, message):
    assert main(["reproduce", *argv]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""
    assert studies == []


def test_reproduce_rodinia_hands_the_inner_aggregate_to_the_study(studies, tmp_path, capsys):
    assert main(["reproduce", "rodinia", "--scenarios", "bottleneck", "--inner-aggregate", "median"]) == 0
    assert studies[0]["inner_aggregate"] == "median" and studies[0]["scenarios"] == ("bottleneck",)
    assert (tmp_path / "gpuperf-reproduce" / "rodinia" / "report.md").is_file()  # not in the checkout


def test_reproduce_rodinia_takes_opt_in_scenarios():
    from gpuperf.cli.reproduce_cli import _known_scenarios

    assert _known_scenarios("bsp, transfer_near_bsp,scaling") == ["bsp", "transfer_near_bsp", "scaling"]


def test_times_are_drawn_in_the_unit_that_reads_as_a_number_of_at_least_one():
    assert time_unit(2.5) == ("s", 1.0) and time_unit(0.0025) == ("ms", 1e3) and time_unit(2.5e-4) == ("us", 1e6)
    assert time_unit(1e-3) == ("ms", 1e3)


def _drawn_figure(monkeypatch):
    """The figures the report's plots save, kept in a list as they are saved."""
    from matplotlib.figure import Figure

    figures = []
    original = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **kw: (figures.append(self), original(self, *a, **kw)))
    return figures


def test_a_strip_marks_the_geometric_mean_where_the_tables_give_it(tmp_path, monkeypatch):
    """The sweep and geometry reports' strips marked the median (2.18 for the model) beside tables of
    geometric means (1.797): speedups 1 and 4 have median 2.5 and geometric mean 2."""
    from gpuperf.decisions.reports import plot_strips

    figures = _drawn_figure(monkeypatch)
    for geometric_mean in (False, True):
        plot_strips({"model": np.array([1.0, 4.0])}, tmp_path / "s.png", "speedup", "t", geometric_mean=geometric_mean)
    bars = [[line.get_xdata()[0] for line in figure.axes[0].get_lines() if len(line.get_xdata()) == 2
             and line.get_color() == "black"] for figure in figures]
    assert bars == [[2.5], [pytest.approx(2.0)]]


def test_a_strip_of_a_handful_of_points_draws_them_large_and_solid_but_thousands_small(tmp_path, monkeypatch):
    from gpuperf.decisions.reports import plot_strips

    figures = _drawn_figure(monkeypatch)
    few, many = np.linspace(0.5, 4.0, 6), np.linspace(0.5, 4.0, 5000)
    plot_strips({"few": few, "many": many}, tmp_path / "s.png", "speedup", "t")
    drawn = figures[0].axes[0].collections
    assert drawn[0].get_sizes()[0] >= 12 and drawn[0].get_alpha() >= 0.7  # six points stay visible
    assert drawn[1].get_sizes()[0] <= 5 and drawn[1].get_alpha() <= 0.4  # thousands do not merge into a bar


def test_exploration_curves_draw_the_search_over_the_baselines_and_name_the_90_percent_line(tmp_path, monkeypatch):
    from gpuperf.decisions.reports import plot_curves

    performance = np.array([0.2, 0.5, 1.0, 0.95, 0.1])
    figures = _drawn_figure(monkeypatch)
    plot_curves({"a": ExploreResult([2, 1], performance, "search", transfer_order=[2, 0])}, tmp_path / "c.png")
    lines = {line.get_label(): line for line in figures[0].axes[0].get_lines()}
    assert lines["search"].get_zorder() > max(lines[n].get_zorder() for n in ("plain transfer", "random (expected best found)"))
    assert list(lines["90 % of the best"].get_ydata()) == [0.9, 0.9]
    legend = [text.get_text() for text in figures[0].axes[0].get_legend().get_texts()]
    assert "90 % of the best" in legend


def test_tuning_report_names_the_device_and_gives_times_in_a_unit_with_three_digits(tmp_path, monkeypatch):
    from gpuperf.decisions.reports import tuning_report
    from gpuperf.decisions.tune import Trial, TuneResult

    result = TuneResult("jacobi2d_5pt", {"n": 512}, "opencl:0", "online (gp)",
                        [Trial({"unroll": 1}, 9.28e-4, "ok"), Trial({"unroll": 4}, 4.997e-5, "ok")], gpu="pthread-CPU")
    figures = _drawn_figure(monkeypatch)
    paths = tuning_report(tmp_path, result, 9.09e-5)
    assert "opencl:0 (pthread-CPU)" in figures[0].axes[0].get_title()
    assert "(50.0 us against 90.9 us)" in paths["markdown"].read_text()
    from gpuperf.decisions.reports import three_digits

    assert (three_digits(222.4), three_digits(50.0), three_digits(0.1234)) == ("222", "50.0", "0.123")


def test_a_tuning_report_whose_default_beats_every_trial_says_keep_the_default(tmp_path, monkeypatch):
    """'Best {...}: 0.12x as fast as the default variant' led with the best trial where the default,
    timed apart, was 8x faster than it."""
    from gpuperf.decisions.reports import tuning_report
    from gpuperf.decisions.tune import Trial, TuneResult

    result = TuneResult("jacobi2d_5pt", {"n": 512}, "opencl:0", "online (gp)",
                        [Trial({"unroll": 1}, 16.7e-6, "ok"), Trial({"unroll": 4}, 20.0e-6, "ok")])
    _drawn_figure(monkeypatch)
    text = tuning_report(tmp_path, result, 2.07e-6)["markdown"].read_text()
    assert ("The default variant (2.07 us, not among the trials) is faster than every trial: the best, unroll=1, "
            "takes 8.07x its time (16.7 us); keep the default.") in text
    assert "as fast as the default" not in text


def test_an_online_exploration_report_describes_no_plain_transfer(tmp_path, capsys):
    """The notes described plain transfer's baseline for an online search, which runs none."""
    space = write_space(tmp_path / "target.csv", (7, 4))
    assert main(["explore", space, "--params", "bx,tile", "--budget", "10", "--report", str(tmp_path / "r")]) == 0
    text = (tmp_path / "r" / "report.md").read_text()
    assert "Plain transfer" not in text and "random_expected_evals_to_90: random order's exact expectation" in text


def test_the_exploration_study_sets_the_searches_against_kernel_tuners_strategies(tmp_path):
    """Each left-out GPU's guided, plain-transfer, online and Kernel Tuner (random_sample, 1 seed) searches
    on one family: evaluations to 90 % capped at budget + 1, a geometric-mean row, and where the hub
    data records compile and benchmark times, the seconds to 90 %."""
    from gpuperf.decisions.reports import exploration_study

    frame, paths = exploration_study(tmp_path, "hub/pnpoly", budget=20, strategies=("random_sample",), kt_seeds=1)
    report = paths["markdown"].read_text()
    assert "| gpu | guided | plain_transfer | online | kt_random_sample | random | random_uncapped |" in report
    assert "## Compile + benchmark seconds to 90 %" in report
    assert "Online (no prior data) needs fewer evaluations than the best Kernel Tuner strategy on" in report
    rows = json.loads(paths["json"].read_text())["tables"]["Evaluations to 90 % against the alternatives"]
    per_gpu = {row["gpu"]: row for row in rows}
    assert set(per_gpu) == {"RTX 3060 Laptop", "RTX 3090", "geometric mean"}
    for method in ("guided", "online", "kt_random_sample", "random"):  # random order scored as the searches are
        values = [per_gpu[gpu][method] for gpu in ("RTX 3060 Laptop", "RTX 3090")]
        assert all(1 <= v <= 21 for v in values)  # budget 20: not reached counts as 21
        assert per_gpu["geometric mean"][method] == pytest.approx(np.sqrt(values[0] * values[1]))
    assert list(frame["evals_to_90"].fillna(21)) == [per_gpu[g]["guided"] for g in frame["gpu"]]
    assert list(frame["random_expected_evals_to_90"]) == [per_gpu[g]["random_uncapped"] for g in frame["gpu"]]
    assert list(frame["random_expected_evals_to_90_within_budget"]) == [per_gpu[g]["random"] for g in frame["gpu"]]
    from gpuperf.decisions.bundled_spaces import leave_one_gpu_out, tuning_families
    from gpuperf.decisions.search_metrics import (random_cost_to, random_expected_cost_within,
                                                  random_expected_evals_within)
    seconds = {row["gpu"]: row for row in json.loads(paths["json"].read_text())["tables"][
        "Compile + benchmark seconds to 90 %"]}
    family = next(f for f in tuning_families() if f.name == "hub/pnpoly")
    for gpu, space, _ in leave_one_gpu_out(family):  # random order's seconds stop at the budget, as a search's do
        space = space.without_failures()  # as Kernel Tuner's simulation: every column on the configurations that ran
        performance, cost = space.performance, space.tuning_cost()
        assert per_gpu[gpu]["random"] == pytest.approx(random_expected_evals_within(performance, 0.9, 20))
        assert frame.set_index("gpu").loc[gpu, "configurations"] == len(space) < 4092
        assert seconds[gpu]["random"] == pytest.approx(random_expected_cost_within(performance, cost, 0.9, 20))
        assert seconds[gpu]["random_uncapped"] == pytest.approx(random_cost_to(performance, cost, 0.9))
    assert "random is random order's exact expected cost of its first min(T, budget) evaluations" in report


def test_a_short_log_range_is_labelled_between_the_1_2_5_ticks():
    """Speedups from 0.75 to 1.6: 1, 2 and 5 alone would label only the 1."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from gpuperf.decisions.reports import plain_log_ticks

    def labels(values, between=True):
        fig = Figure()
        ax = fig.add_subplot()
        ax.scatter(values, np.arange(len(values)))
        ax.set_xscale("log")
        plain_log_ticks(ax, between=between)
        FigureCanvasAgg(fig).draw()
        low, high = ax.get_xlim()
        return [tick for tick, label in zip(ax.get_xticks(), ax.get_xticklabels()) if low <= tick <= high]

    assert labels([0.75, 1.0, 1.6]) == pytest.approx([0.8, 1.0, 1.25, 1.5])
    assert labels([0.75, 1.0, 1.6], between=False) == pytest.approx([1.0])
    assert labels([0.01, 100.0])[:3] == pytest.approx([0.01, 0.02, 0.05])  # a long range keeps 1, 2, 5


def test_the_explore_report_names_the_kernel_and_gpu_picked_from_a_table_of_several(tmp_path, capsys):
    """From a table of several kernels and GPUs the report said only the table's name (the JSON
    said which kernel and GPU), and 'Trained on' did not say the space's own GPU was left out."""
    frames = []
    for gpu, optimum, scale in (("V100", (7, 4), 1.0), ("K20", (6, 4), 2.0), ("P100", (7, 2), 1.5)):
        frame = pd.read_csv(write_space(tmp_path / f"{gpu}.csv", optimum, scale))
        frames.append(frame.assign(kernel="pnpoly", gpu=gpu))
    table = tmp_path / "spaces.csv"
    pd.concat(frames).to_csv(table, index=False)
    argv = ["explore", str(table), "--params", "bx,tile", "--kernel", "pnpoly", "--gpu", "V100", "--train",
            str(table), "--model", "knn", "--budget", "20", "--report", str(tmp_path / "report"), "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "# Exploring spaces.csv (pnpoly, Tesla V100" in markdown and "Space " + result["space"] in markdown
    assert f"Trained on: {table} (2 space(s) measured elsewhere)." in markdown


def test_a_curves_last_level_is_drawn_one_step_on():
    """A search reaching the best at its last evaluation showed that level only as a vertical line on
    the plot's right edge."""
    from gpuperf.decisions.reports import step_points

    x, y = step_points(np.array([0.5, 0.5, 0.8, 1.0]))
    assert list(x) == [1, 2, 3, 4, 5] and list(y) == [0.5, 0.5, 0.8, 1.0, 1.0]
    assert len(step_points(np.array([]))[0]) == 0


def test_the_cost_table_prints_each_column_in_one_notation(tmp_path):
    """docs/models.md: us_per_call is a time column (2.124 above 1.09e+04 was mixed), and the shares of a kernel's
    time span decades (8.80e-05 above 0.019 was mixed): each prints in exponent form throughout."""
    from gpuperf.decisions.geometry_cost import cost_table

    picks = pd.DataFrame({"group": [0], "llvm": [2.0], "llvm_threads": [128], "heuristic": [1.0],
                          "heuristic_threads": [256], "best": [1.0], "best_threads": [256]})
    costs = cost_table({"llvm": 2.124, "heuristic": 460.922, "model": 1.09e4}, np.array([1e-3, 2e-3, 5e-3]))
    page = geometry_report(tmp_path, {"toy on GPU": picks}, ("llvm", "heuristic"), costs=costs)["markdown"].read_text()
    rows = page.split("## Cost of one decision")[1].strip().splitlines()[2:5]
    assert rows == ["| llvm | 2.12e+00 | 1.06e-03 | 2.12e-03 |", "| heuristic | 4.61e+02 | 2.30e-01 | 4.61e-01 |",
                    "| model | 1.09e+04 | 5.45e+00 | 1.09e+01 |"]


def test_the_advisor_study_says_when_the_database_is_not_gpuperfs_own(tmp_path, monkeypatch):
    """reproduce advisor evaluated the entries of GPUPERF_OPTIMIZATIONS, and its report gave only the command,
    which without those folders evaluates another database."""
    from gpuperf.decisions.optimizations import ENV_VAR, builtin_folder
    from gpuperf.decisions.reports import advisor_study

    folder = tmp_path / "entries"
    folder.mkdir()
    for path in builtin_folder().glob("*.toml"):
        (folder / path.name).write_text(f'name = "{path.stem}"\nremove = true\n')
    source = (builtin_folder() / "unrolling.toml").read_text()
    entry = source[:source.index("# The same before/after")].replace('name = "unrolling"', 'name = "t_unroll"')
    (folder / "t_unroll.toml").write_text(entry.replace('"stencil2d", "jacobi2d_9pt", "hotspot2d", "gradient"',
                                                        '"stencil2d"') + "max_pairs_per_gpu = 12\n")
    monkeypatch.setenv(ENV_VAR, str(folder))
    _, paths = advisor_study(tmp_path / "report")
    text = paths["markdown"].read_text()
    entry_file = folder / "t_unroll.toml"
    assert f"not gpuperf's own: {ENV_VAR}={folder} (entries from those folders: t_unroll ({entry_file}); " \
           "built-in entries removed: coalescing, larger_work_groups" in text


def test_reproduce_advisor_evaluates_an_optimizations_folder_and_only_the_entries_named(tmp_path):
    """gpuperf advise takes --optimizations and --only; the advisor's evaluation took neither, so a user's own
    entries, or a subset, could not be evaluated as advised."""
    from gpuperf.decisions.optimizations import builtin_folder
    from gpuperf.decisions.reports import advisor_study

    folder = tmp_path / "entries"
    folder.mkdir()
    source = (builtin_folder() / "unrolling.toml").read_text()
    entry = source[:source.index("# The same before/after")].replace('name = "unrolling"', 'name = "t_unroll"')
    (folder / "t_unroll.toml").write_text(entry.replace('"stencil2d", "jacobi2d_9pt", "hotspot2d", "gradient"',
                                                        '"stencil2d"') + "max_pairs_per_gpu = 12\n")
    results, paths = advisor_study(tmp_path / "report", extra=[folder], only=["t_unroll"])
    assert set(results["optimization"]) == {"t_unroll"}
    text = paths["markdown"].read_text()
    assert f"not gpuperf's own: --optimizations {folder} (entries from those folders: t_unroll " in text
    assert "Only the optimizations --only names were evaluated: t_unroll." in text
    with pytest.raises(GpuperfError, match="unknown optimization 'nope'"):
        advisor_study(tmp_path / "other", only=["nope"])


def test_reproduce_advisor_passes_optimizations_and_only_as_advise_takes_them(studies, tmp_path, capsys):
    assert main(["reproduce", "advisor", "--out", str(tmp_path), "--optimizations", str(tmp_path),
                 "--only", "unrolling,tiling", "--only", "coalescing"]) == 0
    assert studies[0]["extra"] == (str(tmp_path),) and studies[0]["only"] == ("unrolling,tiling", "coalescing")
    assert main(["reproduce", "geometry", "--only", "unrolling"]) == 2
    assert "--only goes with reproduce advisor, not geometry" in capsys.readouterr().err


def test_gpuperfs_own_database_needs_no_note():
    from gpuperf.decisions.optimizations import load_optimizations
    from gpuperf.decisions.reports import user_database_note

    assert user_database_note(load_optimizations()) == ""


def _one_stencil_unroll_entry(folder: Path) -> None:
    """t_unroll: the pocl unrolling pairs of stencil2d alone (one program family, one device, three inputs)."""
    from gpuperf.decisions.optimizations import builtin_folder

    folder.mkdir()
    source = (builtin_folder() / "unrolling.toml").read_text()
    entry = source[:source.index("# The same before/after")].replace('name = "unrolling"', 'name = "t_unroll"')
    (folder / "t_unroll.toml").write_text(entry.replace('"stencil2d", "jacobi2d_9pt", "hotspot2d", "gradient"',
                                                        '"stencil2d"') + "max_pairs_per_gpu = 12\n")


def test_a_split_that_holds_nothing_out_beside_one_that_does_is_noted_not_a_traceback(tmp_path):
    """--split inputs --split programs on one program family: the programs split's empty table, concatenated with
    the inputs split's, made its numbers text, and the report stopped with a TypeError traceback."""
    from gpuperf.decisions.reports import advisor_study

    _one_stencil_unroll_entry(tmp_path / "entries")
    results, paths = advisor_study(tmp_path / "report", ("inputs", "programs"), extra=[tmp_path / "entries"],
                                   only=["t_unroll"])
    assert set(results["split"]) == {"inputs"} and results["measured"].dtype == float
    assert ("Trained but not evaluated by the programs split (their pairs have no held-out group of that kind: e.g. "
            "one input per program, one program family, or for gpus, pairs of one device): t_unroll (device)."
            in paths["markdown"].read_text())
    with pytest.raises(GpuperfError, match=r"needs at least one evaluated pair, and none was\. Trained but not "
                                           r"evaluated by the programs split .*: t_unroll \(device\)\. Trained but "
                                           r"not evaluated by the gpus split"):
        advisor_study(tmp_path / "other", ("programs", "gpus"), extra=[tmp_path / "entries"], only=["t_unroll"])
