"""Report, Rodinia-table, cross-GPU and protocol behaviour that mutation testing showed untested: how
report cells print at their boundaries (1e4, 1e15, None and <NA>, a ``|`` in a cell), JSON of
infinities and numpy booleans, named integer indexes, the metric glossary only beside evaluations,
the pooled count and the in-sample note of an evaluation section, which plots a report may remove,
the dendrogram's cut, the scatter's twelve panels, the heat map's orientation, the ranking plot's
order, the first bad row named, the linear report's worst kernel, target and order, GPUs at the edge
of the training range, cross-GPU references (distances, failed times, the training mask, neighbours
that lack a launch, skipped counts), counted clocks and f64 peaks, profiler names with spaces, the
published per-kernel MAPE and kernel mapping, and the one-launch table's blanks. Small hand-made
tables, every expected value worked out by hand."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from gpuperf.evaluation.protocols import Evaluation
from gpuperf.evaluation.report import frame_records, markdown_table, write_report


def _evaluation(in_sample=()):
    """Two folds of two kernels: A (k1 off by 10 %, k2 exact), B (k1 exact, k2 off by 50 %)."""
    predictions = pd.DataFrame({"kernel": ["k1", "k2", "k1", "k2"], "gpu": "g", "fold": ["A", "A", "B", "B"],
                                "measured": [1.0, 2.0, 1.0, 2.0], "predicted": [1.1, 2.0, 1.0, 3.0]})
    return Evaluation("e", ("fold",), predictions, in_sample=in_sample)


# -- cells -----------------------------------------------------------------------------------------


def test_ten_thousand_prints_with_three_significant_digits_like_anything_larger():
    """1e4 is the first value fixed decimals would print with five digits before the point."""
    frame = pd.DataFrame({"mape": [10000.0, 0.5]})
    assert markdown_table(frame).splitlines()[2:] == ["| 1.00e+04 |", "| 0.500 |"]


def test_whole_numbers_from_1e15_on_print_with_an_exponent_not_as_integers():
    """Below 1e15 a whole-number column prints as integers; 1e15 itself takes the exponent form."""
    frame = pd.DataFrame({"rows": [1e15, 2.0], "size": [999999999999999.0, 2.0]})
    assert markdown_table(frame).splitlines()[2:] == ["| 1.00e+15 | 999999999999999 |", "| 2 | 2 |"]


def test_missing_cells_of_object_and_nullable_columns_are_blank_and_a_bar_does_not_split_the_row():
    """None in an object column and <NA> in a nullable integer column print as nothing, not None or <NA>."""
    frame = pd.DataFrame({"kernel": pd.Series(["a|b", None], dtype=object), "n": pd.array([3, None], dtype="Int64"),
                          "mape": [0.25, 0.5]})
    assert markdown_table(frame).splitlines()[2:] == ["| a\\|b | 3 | 0.250 |", "|  |  | 0.500 |"]


def test_markdown_marks_in_a_kernel_name_are_escaped_so_the_page_shows_the_name_as_the_html_does():
    """A C++ signature's <float> is no HTML tag, saxpy*fast* no emphasis, mat|mul<T> keeps its bar (not /);
    an underscore inside a word marks nothing and stays as it is."""
    frame = pd.DataFrame({"kernel": ["void gemm<float>(float*, int*)", "saxpy*fast*", "mat|mul<T>", "_k_ [x] `c` ~d",
                                     "loop_polynomial", "a\\b"]})
    assert markdown_table(frame).splitlines()[2:] == [
        "| void gemm\\<float\\>(float\\*, int\\*) |", "| saxpy\\*fast\\* |", "| mat\\|mul\\<T\\> |",
        "| \\_k\\_ \\[x\\] \\`c\\` \\~d |", "| loop_polynomial |", "| a\\\\b |"]
    assert markdown_table(pd.DataFrame({"a*b": [1]})).splitlines()[0] == "| a\\*b |"


def test_a_named_integer_index_is_a_column_of_its_own():
    """Sizes 4096 and 8192 as an index named size are labels, not row numbers."""
    frame = pd.DataFrame({"mape": [0.1, 0.2]}, index=pd.Index([4096, 8192], name="size"))
    assert markdown_table(frame).splitlines() == ["| size | mape |", "|---|---|", "| 4096 | 0.100 |",
                                                  "| 8192 | 0.200 |"]
    assert frame_records(frame) == [{"size": 4096, "mape": 0.1}, {"size": 8192, "mape": 0.2}]


def test_json_records_write_infinities_as_null():
    frame = pd.DataFrame({"ratio": [np.inf, -np.inf, 2.0]})
    assert frame_records(frame) == [{"ratio": None}, {"ratio": None}, {"ratio": 2.0}]


def test_report_metrics_take_numpy_booleans_as_json_booleans(tmp_path):
    paths = write_report(tmp_path / "out", "T", tables={"t": pd.DataFrame({"x": [1.5]})},
                         metrics={"meets": np.bool_(True), "worst": np.float64(np.inf)})
    assert json.loads(paths["json"].read_text())["metrics"] == {"meets": True, "worst": None}


# -- report pages ----------------------------------------------------------------------------------


def test_the_metric_glossary_comes_with_evaluations_only(tmp_path):
    paths = write_report(tmp_path / "out", "T", tables={"t": pd.DataFrame({"x": [1.5]})})
    assert "Metrics: mape" not in paths["markdown"].read_text()


def test_an_evaluation_section_pools_only_its_held_out_rows_and_names_the_in_sample_fold(tmp_path):
    """Fold A is in-sample: 2 of the 4 rows are held out (fold B: MAPE (0 + 0.5) / 2 = 0.25)."""
    paths = write_report(tmp_path / "out", "T", {"e": _evaluation(in_sample=("A",))}, plot_evaluations=[])
    markdown = paths["markdown"].read_text()
    assert "Overall (error metrics pooled over 2 held-out rows, rank metrics the mean over held-out groups): n 2, mape 0.250," in markdown
    assert "Not pooled: A, whose rows the model was fitted on." in markdown


def test_a_report_removes_only_plots_an_earlier_gpuperf_report_linked(tmp_path):
    from gpuperf.evaluation.report import linked_plots

    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "report.md").write_text("![a](a.png)\n![b](sub/b.png)\n")
    (folder / "metrics.json").write_text(json.dumps({"title": "my own"}))  # not written by gpuperf
    assert linked_plots(folder / "report.md") == set()
    (folder / "metrics.json").write_text(json.dumps({"written_by": {"gpuperf": "1"}}))
    assert linked_plots(folder / "report.md") == {folder / "a.png"}  # a plot in another folder: never


def test_a_dendrogram_cut_into_as_many_clusters_as_leaves_draws_no_cut(tmp_path, monkeypatch):
    """3 leaves and 2 merges: k = 3 clusters is every leaf alone; only 1 < k <= 2 has a cut."""
    from matplotlib.figure import Figure

    from gpuperf.evaluation.report import plot_dendrogram

    figures = []
    original = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **kw: (figures.append(self), original(self, *a, **kw)))
    linkage = np.array([[0.0, 1.0, 0.2, 2.0], [2.0, 3.0, 0.5, 3.0]])
    plot_dendrogram(linkage, ["a", "b", "c"], tmp_path / "d.png", 3)
    assert not [line for line in figures[0].axes[0].get_lines() if "cut" in str(line.get_label())]
    assert "cut into" not in figures[0].axes[0].get_title()


def test_twelve_held_out_groups_get_a_panel_each():
    from gpuperf.evaluation.report import MAX_PANELS, scatter_panels

    folds = [f"g{i:02d}" for i in range(MAX_PANELS) for _ in range(i + 1)]
    panels = scatter_panels(pd.DataFrame({"fold": folds, "measured": 1.0, "predicted": 1.0}))
    assert [name for name, _ in panels] == [f"g{i:02d}" for i in range(12)]


def test_a_heat_map_with_as_many_kernels_as_its_many_groups_keeps_the_kernels_as_rows(tmp_path, monkeypatch):
    """25 held-out groups (more than 24), kernel k<i> held out in group f<i> only: 25 kernels too, so
    turning the map would make it no narrower; the groups stay the columns."""
    from matplotlib.axes import Axes

    from gpuperf.evaluation.report import plot_error_heatmap

    predictions = pd.DataFrame({"kernel": [f"k{i:02d}" for i in range(25)], "fold": [f"f{i:02d}" for i in range(25)],
                                "measured": 1.0, "predicted": 1.5})
    ticks = {}
    monkeypatch.setattr(Axes, "set_xticks", lambda self, t, labels=None, **kw: ticks.__setitem__("x", list(labels)))
    monkeypatch.setattr(Axes, "set_yticks", lambda self, t, labels=None, **kw: ticks.__setitem__("y", list(labels)))
    plot_error_heatmap(Evaluation("e", ("fold",), predictions), tmp_path / "h.png")
    assert ticks["x"] == [f"f{i:02d}" for i in range(25)] and ticks["y"] == [f"k{i:02d}" for i in range(25)]


def test_a_feature_ranking_plot_shows_the_highest_scores(tmp_path, monkeypatch):
    """6 features scored 0..5 in a shuffled order, the top 3 asked for: f3, f4, f5, the lowest at the bottom."""
    from matplotlib.axes import Axes

    from gpuperf.evaluation.report import plot_feature_ranking

    scores = pd.Series({f"f{i}": float(i) for i in (4, 0, 5, 2, 1, 3)}, name="nmi")
    bars = []
    original = Axes.barh
    monkeypatch.setattr(Axes, "barh", lambda self, y, width, **kw: (bars.append(list(y)), original(self, y, width, **kw))[1])
    plot_feature_ranking(scores, tmp_path / "f.png", top=3)
    assert bars == [["f3", "f4", "f5"]]


def test_a_command_run_from_another_packages_main_is_named_as_it_ran(monkeypatch):
    from gpuperf.evaluation.report import written_by

    monkeypatch.setattr("sys.argv", ["/x/tool/__main__.py", "run"])
    assert written_by()["command"] == "__main__.py run"


# -- protocols -------------------------------------------------------------------------------------


def test_a_table_with_two_bad_times_is_refused_naming_the_first():
    """Rows 2 and 4 (counted from 1) have no positive time: the error names row 2."""
    from sklearn.linear_model import LinearRegression

    from gpuperf.errors import GpuperfError
    from gpuperf.evaluation.protocols import leave_one_gpu_out

    frame = pd.DataFrame({"kernel": "k", "gpu": ["A", "A", "B", "B"], "n": [1.0, 2.0, 3.0, 4.0],
                          "time_s": [1.0, 0.0, 3.0, -1.0]})
    with pytest.raises(GpuperfError, match=r"row 2: time_s=0\.0 is not a positive number"):
        leave_one_gpu_out(LinearRegression(), frame, ["n"])


# -- the linear report ------------------------------------------------------------------------------


def _linear(in_sample: dict, held_out: dict):
    """A stand-in for a LinearEvaluation: per-kernel errors, points (time 1 s, predicted 1 + error) and weights."""
    from types import SimpleNamespace

    def points(errors):
        return pd.DataFrame({"kernel": list(errors), "time_s": 1.0, "predicted_s": [1.0 + e for e in errors.values()]})

    inside, outside = pd.Series(in_sample, dtype=float), pd.Series(held_out, dtype=float)
    return SimpleNamespace(
        calibration=SimpleNamespace(data=points(in_sample), model=SimpleNamespace(weights_={"flops": 1e-9})),
        held_out=points(held_out), in_sample=lambda: inside, held_out_error=lambda: outside,
        summary=lambda: {"held_out_mean_gmre": float(outside.mean()), "held_out_worst_gmre": float(outside.max())})


def test_the_linear_summary_names_the_worst_held_out_kernel_and_meets_a_target_it_equals():
    """Held-out errors 0.1, 0.4 and 0.25: mean 0.25, exactly the target (met); worst b."""
    from gpuperf.evaluation.linear_report import summary_table

    row = summary_table({"H": _linear({"c": 0.01}, {"a": 0.1, "b": 0.4, "d": 0.25})}).loc["H"]
    assert row["worst_held_out_kernel"] == "b" and bool(row["meets_target"])
    assert (row["calibration_points"], row["held_out_points"]) == (1, 3)


def test_the_linear_per_kernel_table_lists_held_out_kernels_first_worst_first():
    """Held out a (0.1) and b (0.4), calibration c (0.5) and d (0.01): b, a, then c, d."""
    from gpuperf.evaluation.linear_report import per_kernel_table

    table = per_kernel_table({"H": _linear({"c": 0.5, "d": 0.01}, {"a": 0.1, "b": 0.4})})
    assert table.index.tolist() == ["b", "a", "c", "d"]
    assert table["held_out"].tolist() == [True, True, False, False]


def test_the_linear_reports_calibration_points_are_in_sample_and_never_pooled():
    from gpuperf.evaluation.linear_report import CALIBRATION, HELD_OUT, as_evaluation

    evaluation = as_evaluation("H", _linear({"c": 0.5}, {"a": 0.1, "b": 0.3}))
    assert evaluation.in_sample == (CALIBRATION,)
    assert evaluation.held_out["fold"].tolist() == [HELD_OUT, HELD_OUT]
    assert evaluation.overall["mape"] == pytest.approx(0.2)  # (0.1 + 0.3) / 2, the calibration's 0.5 left out


# -- GPUs priced beyond the training range -------------------------------------------------------------


def test_a_gpu_at_the_edge_of_the_training_range_lies_within_it():
    """Trained on the GTX 970 (13 SMs) and the Tesla K40 (15): the Tesla K20's 13 SMs is the range's
    low end, within it, as is the GTX Titan's 14."""
    from gpuperf.evaluation.gpu_range import unlike_training_gpus

    assert unlike_training_gpus(["GTX 970", "Tesla K40"], ["gpu_sms"], ["Tesla K20", "GTX Titan"]) == []


# -- cross-GPU references ---------------------------------------------------------------------------


def _two_gpus(clocks=(1.0, 4.0)):
    from gpuperf.evaluation.transfer import NEIGHBOUR_DESCRIPTORS

    frame = pd.DataFrame({"kernel": "a", "gpu": ["x", "y"], "time_s": [1.0, 2.0]})
    for column in NEIGHBOUR_DESCRIPTORS:
        frame[column] = 1.0
    frame["gpu_clock_mhz"] = list(clocks)
    return frame


def test_gpu_distances_standardise_log2_descriptors_by_their_population_spread():
    """log2 clocks 0 and 2: mean 1, spread (ddof 0) 1, standardised -1 and +1: distance 2. The other
    descriptors are alike on both GPUs (spread 0, counted as 1): they add nothing."""
    from gpuperf.evaluation.transfer import gpu_distances

    distances = gpu_distances(_two_gpus())
    assert distances.loc["x", "y"] == pytest.approx(2.0) and distances.loc["y", "x"] == pytest.approx(2.0)


def test_gpu_distances_refuse_a_descriptor_of_zero():
    from gpuperf.errors import GpuperfError
    from gpuperf.evaluation.transfer import gpu_distances

    with pytest.raises(GpuperfError, match="descriptors must be positive"):
        gpu_distances(_two_gpus(clocks=(0.0, 4.0)))


def test_a_reference_leaves_out_training_times_that_are_no_positive_time():
    """Launch a: x timed 0 s (failed), y 8 s, z (held out) 32 s: z's reference is y's log2 8 = 3 alone."""
    from gpuperf.evaluation.transfer import cross_gpu_reference

    frame = pd.DataFrame({"kernel": "a", "gpu": ["x", "y", "z"], "time_s": [0.0, 8.0, 32.0]})
    reference = cross_gpu_reference(frame, frame["gpu"].ne("z"), key=["kernel"])
    assert reference.iloc[2] == 3.0 and reference.iloc[0] == 3.0 and np.isnan(reference.iloc[1])


def test_a_row_the_training_mask_does_not_name_is_no_training_row():
    """The mask names row 0 (x, 2 s) alone: y's 8 s is not training, so z's reference is log2 2 = 1."""
    from gpuperf.evaluation.transfer import cross_gpu_reference

    frame = pd.DataFrame({"kernel": "a", "gpu": ["x", "y", "z"], "time_s": [2.0, 8.0, 32.0]})
    reference = cross_gpu_reference(frame, pd.Series([True], index=[0]), key=["kernel"])
    assert reference.tolist()[1:] == [1.0, 1.0]


# -- the Rodinia reproduction's tables ------------------------------------------------------------------


def test_one_launch_table_meets_half_the_paper_at_exactly_half_and_leaves_blank_what_the_paper_lacks(monkeypatch):
    """g1: k1 0.02 (the paper's kernel, its best 0.04) and k2 0.10: macro 0.06, on shared 0.02 = 0.04 / 2,
    met. g2: kernels 0.04 and 0.08 (macro 0.06), none published: on shared blank, meets_half blank."""
    from gpuperf.evaluation import rodinia_report

    cells = pd.DataFrame({"gpu": ["g1", "g1", "g2", "g2"], "kernel": ["k1", "k2", "k1", "k2"],
                          "mape": [0.02, 0.10, 0.04, 0.08], "launches": 3, "sources": 1})
    paper = pd.DataFrame({"gpu": ["g1"], "kernel": ["k1"], "model": "linear", "mape": [0.04]})
    monkeypatch.setattr(rodinia_report, "load_dataset", lambda name: None)
    monkeypatch.setattr(rodinia_report, "one_launch_calibration", lambda raw, key: cells)
    monkeypatch.setattr(rodinia_report, "published_per_kernel", lambda published: paper)
    targets = pd.DataFrame({"ours": [0.3, 0.2], "paper_best": [0.04, np.nan]}, index=["g1", "g2"])
    table = rodinia_report.one_launch_table(targets, pd.DataFrame())
    assert table["one_launch"].tolist() == pytest.approx([0.06, 0.06])
    assert table.loc["g1", "one_launch_on_shared"] == pytest.approx(0.02)
    assert np.isnan(table.loc["g2", "one_launch_on_shared"])
    assert table.loc["g1", "meets_half"] == True  # noqa: E712 (a numpy or Python True)
    assert pd.isna(table.loc["g2", "meets_half"])


# -- model-ready tables and the published predictions ---------------------------------------------------


def test_counted_clocks_keep_a_launch_of_exactly_the_minimum_time():
    """700,000 elapsed SM cycles in 1e-4 s on 10 SMs: 7e5 / (1e-4 x 10) / 1e6 = 700 MHz; the launch
    lasts min_time_s exactly, so it counts."""
    from gpuperf.evaluation.tables import counted_clocks

    frame = pd.DataFrame({"gpu": ["G"], "kernel": ["k"], "time_s": [1e-4], "elapsed_cycles_sm": [700_000.0],
                          "gpu_sms": [10], "gpu_clock_mhz": [700.0], "gpu_base_clock_mhz": [700.0],
                          "gpu_boost_clock_mhz": [800.0]})
    row = counted_clocks(frame, min_time_s=1e-4).loc["G"]
    assert row["counted_mhz"] == pytest.approx(700.0) and row["kernels"] == 1
    assert row["counted_over_clock"] == pytest.approx(1.0)


def test_profiled_f64_peaks_leave_out_launches_rated_at_zero_efficiency():
    """1e9 f64 flops in 1 ms at 50 % of the peak: 1e12 / 0.5 = 2000 GFLOP/s; a launch rated 0 % (its
    implied peak infinite) is not one of the launches."""
    from gpuperf.evaluation.tables import DP_EFFICIENCY, DP_FLOPS, profiled_f64_peaks

    frame = pd.DataFrame({"gpu": "G", "time_s": [1e-3, 1e-3], DP_FLOPS: [1e9, 1e9], DP_EFFICIENCY: [50.0, 0.0],
                          "gpu_peak_f64_gflops": 1000.0})
    row = profiled_f64_peaks(frame).loc["G"]
    assert row["profiled_gflops"] == pytest.approx(2000.0) and row["launches"] == 1
    assert row["profiled_over_listed"] == pytest.approx(2.0)


def test_counter_columns_start_at_the_first_column_named():
    from gpuperf.evaluation.tables import counter_columns

    frame = pd.DataFrame({"kernel": ["k"], "inst_executed": [10.0], "gld_request": [4.0]})
    assert counter_columns(frame, first="inst_executed") == ["inst_executed", "gld_request"]


def test_profiler_names_with_spaces_are_timing_derived_as_their_underscored_forms():
    """ncu's details page: "Elapsed Cycles" is elapsed_cycles, "Max Bandwidth" max_bandwidth, "Mem Busy" busy."""
    from gpuperf.evaluation.tables import is_timing_derived

    assert is_timing_derived("Elapsed Cycles") and is_timing_derived("Max Bandwidth") and is_timing_derived("Mem Busy")
    assert not is_timing_derived("Registers Per Thread")


def test_published_per_kernel_mape_is_the_mean_of_the_samples():
    """Three samples of HOT on the K40 off by 0, 0 and 30 %: MAPE 0.1 (the median would be 0)."""
    from gpuperf.evaluation.published import published_per_kernel, published_predictions

    published = published_predictions(pd.DataFrame({"kernel": "HOT", "gpu": "Tesla K40", "model": "RF",
                                                    "time_s": 1.0, "predictions": [1.0, 1.0, 1.3]}))
    [row] = published_per_kernel(published).to_dict("records")
    assert row["mape"] == pytest.approx(0.1) and row["n"] == 3 and row["kernel"] == "calculate_temp"


def test_kernel_mapping_check_lists_only_kernels_in_both_tables():
    """Fan1 (GAU-K1) was published but is not in the bundled table: no row for it."""
    from gpuperf.evaluation.published import check_kernel_mapping, published_predictions

    published = published_predictions(pd.DataFrame({"kernel": ["HOT", "GAU-K1"], "gpu": "Tesla K40", "model": "RF",
                                                    "time_s": 1e-4, "predictions": 1e-4}))
    table = pd.DataFrame({"gpu": ["Tesla K40"], "kernel": ["calculate_temp"], "time_s": [1e-4]})
    assert check_kernel_mapping(table, published)["kernel_code"].tolist() == ["HOT"]


def test_a_neighbour_reference_passes_over_a_nearer_gpu_that_lacks_the_launch():
    """Clocks 1, 2 and 8 MHz (log2 0, 1, 3): y's nearest other GPU is x (distance 2 in log2 units
    before scaling), then w. Launch b ran on w (4 s) and y only: y's one-neighbour reference of b is
    w's log2 4 = 2, x having no time of it."""
    from gpuperf.evaluation.transfer import NEIGHBOUR_DESCRIPTORS, cross_gpu_reference

    frame = pd.DataFrame({"kernel": ["a", "a", "a", "b", "b"], "gpu": ["w", "x", "y", "w", "y"],
                          "time_s": [1.0, 2.0, 8.0, 4.0, 16.0]})
    for column in NEIGHBOUR_DESCRIPTORS:
        frame[column] = 1.0
    frame["gpu_clock_mhz"] = frame["gpu"].map({"w": 1.0, "x": 2.0, "y": 8.0})
    reference = cross_gpu_reference(frame, pd.Series(True, index=frame.index), key=["kernel"], neighbours=1)
    assert reference.iloc[4] == 2.0 and reference.iloc[2] == 1.0  # a on y: x's log2 2


def _reference_evaluation(runs):
    """Leave one GPU out with references: (kernel, GPU, seconds per unit of size) runs at sizes 1..8."""
    from gpuperf.evaluation.transfer import REFERENCE_KEY, leave_one_group_out_with_reference
    from gpuperf.models.learned import make_model
    from gpuperf.models.reference import REFERENCE_COLUMN, ReferenceResidual

    rows = [{"kernel": kernel, "gpu": gpu, "time_s": seconds * size, "flops": float(size),
             **dict.fromkeys(REFERENCE_KEY[1:], 1), "input.size.1": size}
            for size in range(1, 9) for kernel, gpu, seconds in runs]
    estimator = ReferenceResidual(make_model("linear", log_target=False, log_inputs=True))
    return leave_one_group_out_with_reference(estimator, pd.DataFrame(rows), ["flops", REFERENCE_COLUMN], "gpu")


def test_a_held_out_gpu_none_of_whose_launches_ran_elsewhere_is_skipped_whole():
    """L ran on A, B and C, K on D only. Holding out D, none of its 8 rows has a reference: the fold
    is skipped (8 rows), not an error; A, B and C are predicted."""
    evaluation = _reference_evaluation([("L", "A", 1e-3), ("L", "B", 2e-3), ("L", "C", 4e-3), ("K", "D", 3e-3)])
    assert evaluation.skipped == {"D": 8}
    assert evaluation.predictions.groupby("fold").size().to_dict() == {"A": 8, "B": 8, "C": 8}


def test_a_folds_skipped_rows_add_those_without_a_reference_to_those_without_training_rows():
    """L ran on A, B, C and H; K on B and H; M on H only. Holding out H: M's 8 rows have no reference,
    and K's 8 have one (B's) but no training row of K has one (H, the only other GPU with K, is held
    out), so no K model: 16 skipped. Holding out B likewise leaves K without training rows: 8."""
    evaluation = _reference_evaluation([("L", "A", 1e-3), ("L", "B", 2e-3), ("L", "C", 4e-3), ("L", "H", 5e-3),
                                        ("K", "B", 3e-3), ("K", "H", 6e-3), ("M", "H", 7e-3)])
    assert evaluation.skipped == {"B": 8, "H": 16}
    assert evaluation.predictions.groupby("fold").size().to_dict() == {"A": 8, "B": 8, "C": 8, "H": 8}


def test_a_scatter_panels_mape_leaves_out_predictions_that_are_no_finite_time(tmp_path, monkeypatch):
    """Fold A: predicted 1.5, inf and 1.0 for 1 s each: MAPE over the finite two, (0.5 + 0) / 2 = 0.25."""
    from matplotlib.figure import Figure

    from gpuperf.evaluation.report import plot_predicted_vs_measured

    figures = []
    original = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **kw: (figures.append(self), original(self, *a, **kw)))
    predictions = pd.DataFrame({"kernel": "k", "fold": "A", "measured": 1.0, "predicted": [1.5, np.inf, 1.0]})
    plot_predicted_vs_measured(Evaluation("e", ("fold",), predictions), tmp_path / "p.png")
    assert figures[0].axes[0].get_title() == "held out: A\nMAPE 0.250, 3 rows"


def test_the_linear_report_names_its_bundled_tables(tmp_path):
    from gpuperf.evaluation.linear_report import linear_report

    paths = linear_report(tmp_path / "out", {"H": _linear({"c": 0.5}, {"a": 0.1, "b": 0.3})}, tables={"H": "h.csv.gz"})
    assert "Bundled tables: H: data/h.csv.gz (measured by gpuperf" in paths["markdown"].read_text()


def test_one_launch_table_averages_a_gpus_kernels_not_their_median(monkeypatch):
    """g1's kernels at 0, 0.1 and 0.5: macro 0.2 (the median would be 0.1)."""
    from gpuperf.evaluation import rodinia_report

    cells = pd.DataFrame({"gpu": "g1", "kernel": ["k1", "k2", "k3"], "mape": [0.0, 0.1, 0.5], "launches": 3,
                          "sources": 1})
    monkeypatch.setattr(rodinia_report, "load_dataset", lambda name: None)
    monkeypatch.setattr(rodinia_report, "one_launch_calibration", lambda raw, key: cells)
    monkeypatch.setattr(rodinia_report, "published_per_kernel",
                        lambda published: pd.DataFrame(columns=["gpu", "kernel", "model", "mape"]))
    table = rodinia_report.one_launch_table(pd.DataFrame({"ours": [0.3]}, index=["g1"]), pd.DataFrame())
    assert table.loc["g1", "one_launch"] == pytest.approx(0.2) and table.loc["g1", "kernels"] == 3


def test_the_elsewhere_baselines_score_the_profiling_gpus_time_and_its_peak_scaled_time(monkeypatch):
    """Pair tables per scored column: model 0.1, the profiling GPU's time 0.2, peak-scaled 0.3."""
    from gpuperf.evaluation import rodinia_report

    def by_pair(pairs, column="predicted"):
        value = {"predicted": 0.1, "source_time_s": 0.2, "peak_scaled": 0.3}[column]
        return pd.DataFrame([[np.nan, value], [value, np.nan]], index=["g1", "g2"], columns=["g1", "g2"])

    monkeypatch.setattr(rodinia_report, "load_dataset", lambda name: None)
    monkeypatch.setattr(rodinia_report, "scenario", lambda name, table: type("S", (), {"features": []})())
    monkeypatch.setattr(rodinia_report, "build_model", lambda model, chosen: None)
    one_kernel = pd.DataFrame({"target_gpu": ["g1", "g2"], "source_gpu": ["g2", "g1"], "kernel": "k"})
    monkeypatch.setattr(rodinia_report, "profiled_elsewhere", lambda *args, **kwargs: one_kernel)
    monkeypatch.setattr(rodinia_report, "macro_mape_by_pair", by_pair)
    monkeypatch.setattr(rodinia_report, "hindsight_scaled_mape", lambda pairs: by_pair(pairs))
    summary = rodinia_report.elsewhere_tables(pd.DataFrame(), None)[
        "Profiled on another GPU: mean over profiling GPUs, against baselines"]
    assert summary["profiling GPU's time"].tolist() == pytest.approx([0.2, 0.2])
    assert summary["profiling GPU's time x peak FP32 ratio"].tolist() == pytest.approx([0.3, 0.3])


def test_one_launch_calibration_counts_a_gpu_that_ran_some_of_a_kernels_launches_as_a_source():
    """Kernel a: A and B ran launches n=1 and 2, C only n=1: A's a has two sources, B and C (C's own
    single launch leaves nothing to score besides its calibration launch: no row for C)."""
    from gpuperf.evaluation.elsewhere import one_launch_calibration

    rows = [("A", 1), ("A", 2), ("B", 1), ("B", 2), ("C", 1)]
    frame = pd.DataFrame({"kernel": "a", "gpu": [g for g, _ in rows], "n": [n for _, n in rows],
                          "time_s": [float(n) for _, n in rows]})
    result = one_launch_calibration(frame, ["kernel", "n"], draws=2).set_index("gpu")
    assert result.loc["A", "sources"] == 2 and result.loc["B", "sources"] == 2 and "C" not in result.index


def test_evaluation_plot_names_drop_leading_and_trailing_punctuation():
    from gpuperf.evaluation.report import _distinct_slugs

    assert _distinct_slugs(["(rf/gpu)", "RF gpu"]) == {"(rf/gpu)": "rf_gpu", "RF gpu": "rf_gpu_2"}


def test_metrics_json_lists_a_feature_ranking_highest_first_whatever_order_it_came_in(tmp_path):
    ranking = pd.Series({"a": 0.1, "b": 0.3, "c": 0.2}, name="nmi")
    paths = write_report(tmp_path / "out", "T", feature_ranking=ranking)
    assert list(json.loads(paths["json"].read_text())["feature_ranking"]["features"]) == ["b", "c", "a"]


def test_the_heat_maps_caption_promises_its_numbers_only_where_its_cells_carry_them(tmp_path, monkeypatch):
    """Beyond MAX_ANNOTATED_CELLS the cells carry colour only: the caption says so, and where the figures are."""
    from gpuperf.evaluation import report

    def drawn(evaluation, path, context=""):
        path.write_bytes(b"")
        return path

    monkeypatch.setattr(report, "plot_predicted_vs_measured", drawn)
    monkeypatch.setattr(report, "plot_error_heatmap", drawn)
    kernels, folds = [f"k{i:02d}" for i in range(25)], [f"f{i:02d}" for i in range(30)]  # 750 cells
    many = pd.DataFrame({"kernel": np.repeat(kernels, 30), "fold": np.tile(folds, 25), "measured": 1.0,
                         "predicted": 1.5})
    few = many[many["fold"] < "f02"]  # 50 cells
    pages = {name: write_report(tmp_path / name, "t", {"e": Evaluation("e", ("fold",), frame)})["markdown"].read_text()
             for name, frame in (("many", many), ("few", few))}
    assert "the numbers are not" not in pages["many"]
    assert "with more than 600 cells, none carries its number (the table above gives each held-out group's MAPE" \
        in pages["many"]
    assert "the colour is capped at 1, the numbers are not" in pages["few"]


def test_an_in_sample_panel_is_named_as_such_in_the_captions_and_titles_and_a_long_legend_runs_in_columns(
        tmp_path, monkeypatch):
    """reproduce linear: the calibration kernels' panel is in-sample, which the captions and the heat map's title
    say; the scatter's title names the model once; 46 kernels' legend is no taller than the panels."""
    from matplotlib.figure import Figure

    from gpuperf.evaluation.report import _plot_title

    figures = []
    original = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **kw: (figures.append(self), original(self, *a, **kw)))
    kernels = [f"kernel_{i:02d}" for i in range(46)]
    predictions = pd.DataFrame({"kernel": kernels, "fold": ["fitted (in-sample)"] * 30 + ["held"] * 16,
                                "measured": 1.0, "predicted": 1.1})
    evaluation = Evaluation("linear count model on X", ("fold",), predictions, in_sample=["fitted (in-sample)"])
    page = write_report(tmp_path, "Linear count model (S & K)", {"e": evaluation})["markdown"].read_text()
    assert "Predicted against measured time of the held-out rows and, in-sample, the rows the model was fitted " \
           "on (fitted (in-sample))" in page
    assert "MAPE (a fraction) per kernel and held-out group, and in-sample fitted (in-sample) (" in page
    scatter, heatmap = figures
    assert scatter._suptitle.get_text().startswith(
        "predicted vs measured: Linear count model (S & K) on X, one panel per held-out group; in-sample, the rows "
        "the model was fitted on: fitted (in-sample)\n")
    assert "group (held out, or in-sample: fitted (in-sample)) (columns)" in heatmap.axes[0].get_title()
    scatter.canvas.draw()
    assert scatter.legends[0].get_window_extent().height <= scatter.bbox.height
    assert _plot_title("lr on small", "lr on small, leave one GPU out") == "lr on small, leave one GPU out"
    assert _plot_title("Rodinia", "rf") == "Rodinia, rf"


def test_a_report_removes_the_staging_folders_killed_runs_left(tmp_path):
    """A run killed while writing a report (SIGKILL, the OOM killer) left a hidden .report-* folder of
    plots in the report folder, kept by every later run."""
    import os
    import time

    from gpuperf.cli.output import command_locks, report_folder

    folder = tmp_path / "rep"
    folder.mkdir()
    old, fresh = folder / ".report-old12345", folder / ".report-new12345"
    for left in (old, fresh):
        left.mkdir()
        (left / ".plot.png.x1.tmp").write_bytes(b"partial")
    two_hours_ago = time.time() - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))
    write_report(folder, "T", tables={"t": pd.DataFrame({"x": [1.5]})})  # the Python API: the hour-old one
    assert not old.exists() and fresh.exists()
    with command_locks():  # the command line holds the folder's lock: every one left is a dead run's
        report_folder(folder)
        write_report(folder, "T", tables={"t": pd.DataFrame({"x": [1.5]})})
    assert not fresh.exists() and (folder / "report.md").is_file()


def test_a_report_leaves_the_users_folders_named_like_staging(tmp_path):
    """Every .report-* folder was removed: a user's .report-drafts/notes.md was lost by a report run."""
    from gpuperf.cli.output import command_locks, report_folder

    folder = tmp_path / "rep"
    folder.mkdir()
    drafts, lookalike, dead = folder / ".report-drafts", folder / ".report-abcd1234", folder / ".report-dead1234"
    for kept in (drafts, lookalike, dead):
        kept.mkdir()
    (drafts / "notes.md").write_text("my notes")
    (lookalike / "notes.txt").write_text("mine too")  # named like ours, but holds a file no report writes
    (dead / "report.md").write_text("half")
    with command_locks():
        report_folder(folder)
        write_report(folder, "T", tables={"t": pd.DataFrame({"x": [1.5]})})
    assert (drafts / "notes.md").read_text() == "my notes"
    assert (lookalike / "notes.txt").read_text() == "mine too"
    assert not dead.exists()


def test_a_plot_a_full_disk_refuses_is_named_as_the_reports_file(tmp_path, monkeypatch):
    """The error named the hidden staging file (.report-xxxx/pred_vs_measured_e.png), gone by the time
    it was read, and said that file "is left as it was"."""
    import errno
    import re

    from matplotlib.figure import Figure

    from gpuperf.errors import GpuperfError

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", full)
    folder = tmp_path / "rep"
    expected = f"{folder / 'pred_vs_measured_e.png'}: cannot be written (No space left on device); the report is " \
               "left as it was"
    with pytest.raises(GpuperfError, match=f"^{re.escape(expected)}$"):
        write_report(folder, "T", {"e": _evaluation()})
    assert not list(folder.iterdir())


def test_write_report_takes_one_note_as_one_line_and_refuses_evaluations_or_tables_not_named(tmp_path):
    from gpuperf.errors import GpuperfError
    from gpuperf.evaluation.report import write_report

    paths = write_report(tmp_path / "one", "T", notes="the runs of 2026-12-01")
    lines = paths["markdown"].read_text().splitlines()
    assert "the runs of 2026-12-01  " in lines and "t  " not in lines  # not one character a line
    with pytest.raises(GpuperfError, match=r"write_report: evaluations maps a name to each Evaluation, e.g. "
                                           r"\{'leave-one-gpu-out': evaluation\}, not a list"):
        write_report(tmp_path / "two", "T", [object()])
    with pytest.raises(GpuperfError, match=r"write_report: tables\['t'\] is a list, not a DataFrame"):
        write_report(tmp_path / "three", "T", tables={"t": [1, 2]})
    assert not (tmp_path / "two").exists() and not (tmp_path / "three").exists()
