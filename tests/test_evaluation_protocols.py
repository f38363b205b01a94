"""Protocols fit on the training rows only and report per-group and overall metrics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import LinearRegression

from gpuperf.errors import GpuperfError, GpuperfNote
from gpuperf.models.learned import make_model
from gpuperf.evaluation.protocols import (
    balanced_subsample,
    fit_on_kernels,
    leave_one_gpu_out,
    leave_one_kernel_out,
    leave_one_size_out,
)

SEEN: list[set] = []


class RecordingRegressor(RegressorMixin, BaseEstimator):
    """Predicts the mean training time and records which (gpu, kernel, n) rows it was fitted on."""

    def fit(self, X, y):
        SEEN.append(set(map(tuple, X[["gpu_id", "kernel_id", "n"]].to_numpy().tolist())))
        self.mean_ = float(np.mean(y))
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)


def _frame():
    rows = []
    for g, gpu in enumerate(["A", "B", "C"]):
        for k, kernel in enumerate(["copy", "add"]):
            for n in (1, 2, 4):
                rows.append(dict(gpu=gpu, kernel=kernel, n=n, gpu_id=g, kernel_id=k,
                                 time_s=(g + 1) * (k + 1) * n * 1e-3, status="ok"))
    rows.append(dict(gpu="C", kernel="add", n=8, gpu_id=2, kernel_id=1, time_s=np.nan, status="failed"))
    return pd.DataFrame(rows)


FEATURES = ["gpu_id", "kernel_id", "n"]


def test_leave_one_gpu_out_never_trains_on_the_held_out_gpu():
    SEEN.clear()
    evaluation = leave_one_gpu_out(RecordingRegressor(), _frame(), FEATURES)
    assert len(SEEN) == 3
    for held_out, trained in zip(["A", "B", "C"], SEEN):
        assert {"A": 0, "B": 1, "C": 2}[held_out] not in {row[0] for row in trained}
    predictions = evaluation.predictions
    assert len(predictions) == 18  # the failed row is neither trained on nor tested
    assert set(predictions["fold"]) == {"A", "B", "C"}
    assert (predictions["gpu"] == predictions["fold"]).all()
    assert list(evaluation.per_group.index) == ["A", "B", "C"]
    assert evaluation.overall["n"] == 18


def test_fit_by_kernel_trains_one_model_per_kernel_on_other_gpus():
    SEEN.clear()
    evaluation = leave_one_gpu_out(RecordingRegressor(), _frame(), FEATURES, fit_by="kernel")
    assert len(SEEN) == 6
    assert all(len({row[1] for row in trained}) == 1 for trained in SEEN)
    a_copy = evaluation.predictions.query("gpu == 'A' and kernel == 'copy'")["predicted"]
    expected = np.mean([(g + 1) * n * 1e-3 for g in (1, 2) for n in (1, 2, 4)])
    assert np.allclose(a_copy, expected)


def test_fit_by_works_on_a_frame_with_repeated_index_labels():
    frame = _frame()
    doubled = pd.concat([frame, frame.assign(gpu_id=frame["gpu_id"] + 3, gpu=frame["gpu"] + "2")])
    assert not doubled.index.is_unique
    evaluation = leave_one_gpu_out(RecordingRegressor(), doubled, FEATURES, fit_by="kernel")
    assert len(evaluation.predictions) == 36 and evaluation.predictions["predicted"].notna().all()


@pytest.mark.parametrize("bad", [0.0, -1e-3, np.nan])
def test_a_measured_row_without_a_positive_time_is_an_error_naming_it(bad):
    frame = _frame()
    frame.loc[4, "time_s"] = bad
    with pytest.raises(GpuperfError, match=f"leave-one-gpu-out: row 5: time_s={bad!r} is not a positive number"):
        leave_one_gpu_out(RecordingRegressor(), frame, FEATURES)


def test_leave_one_kernel_out_and_size_out_hold_out_their_group():
    SEEN.clear()
    leave_one_kernel_out(RecordingRegressor(), _frame(), FEATURES)
    assert [{row[1] for row in trained} for trained in SEEN] == [{0}, {1}]  # "add" is held out first
    SEEN.clear()
    evaluation = leave_one_size_out(RecordingRegressor(), _frame(), FEATURES, sizes="n")
    assert [{row[2] for row in trained} for trained in SEEN] == [{2, 4}, {1, 4}, {1, 2}]
    assert list(evaluation.per_group.index) == ["1", "2", "4"]


def test_each_held_out_groups_training_mask_is_made_as_its_fold_runs(monkeypatch):
    """A mask of every row per held-out group, all made before the first fit, held groups x rows booleans (about 2 GB
    for 10,000 sizes of 200,000 rows): one is made per fold as it runs, the folds and results unchanged."""
    folds = ["1", "2", "4", "8", "16", "32"]
    masks, masks_at_fit = [], []
    series_ne = pd.Series.ne
    monkeypatch.setattr(pd.Series, "ne", lambda self, other, *args, **kw: (
        masks.append(other) if isinstance(other, str) and other in folds else None) or
        series_ne(self, other, *args, **kw))
    fit = RecordingRegressor.fit
    monkeypatch.setattr(RecordingRegressor, "fit",
                        lambda self, X, y: masks_at_fit.append(len(masks)) or fit(self, X, y))
    SEEN.clear()
    frame = pd.concat([_frame().assign(n=n) for n in (1, 2, 4, 8, 16, 32)], ignore_index=True)
    evaluation = leave_one_size_out(RecordingRegressor(), frame, FEATURES, sizes="n")
    assert masks_at_fit == [1, 2, 3, 4, 5, 6] and masks == folds
    assert list(evaluation.per_group.index) == folds and [{row[2] for row in trained} for trained in SEEN] == [
        {2, 4, 8, 16, 32}, {1, 4, 8, 16, 32}, {1, 2, 8, 16, 32}, {1, 2, 4, 16, 32}, {1, 2, 4, 8, 32},
        {1, 2, 4, 8, 16}]


def test_held_out_sizes_come_in_numeric_order_one_size_column_or_two():
    frame = pd.concat([_frame().assign(n=n) for n in (2000, 10000, 300)], ignore_index=True)
    frame["m"] = frame["n"] // 100
    assert list(leave_one_size_out(RecordingRegressor(), frame, FEATURES, sizes="n").per_group.index) == [
        "300", "2000", "10000"]  # as numbers, not as text ("10000" < "2000")
    two = leave_one_size_out(RecordingRegressor(), frame, FEATURES, sizes=["n", "m"])
    assert list(two.per_group.index) == ["300/3", "2000/20", "10000/100"]
    assert list(two.metrics_by(["kernel", "fold"]).index.get_level_values("fold")) == ["300/3", "2000/20", "10000/100"] * 2
    assert list(two.macro_mape().index) == ["300/3", "2000/20", "10000/100"]
    from gpuperf.evaluation.protocols import natural_key

    assert sorted(["nan", "10", "b", "-5", "2"], key=natural_key) == ["-5", "2", "10", "b", "nan"]  # nan as text
    labels = ["4096x4096", "512x512", "grid_16", "grid_2", "1024x512", "small"]  # before: as text
    assert sorted(labels, key=natural_key) == ["512x512", "1024x512", "4096x4096", "grid_2", "grid_16", "small"]


def test_fit_on_kernels_trains_on_the_named_kernels_only():
    SEEN.clear()
    evaluation = fit_on_kernels(RecordingRegressor(), _frame(), FEATURES, ["copy"])
    assert SEEN == [{row for row in SEEN[0] if row[1] == 0}] and len(SEEN[0]) == 9
    assert set(evaluation.predictions["kernel"]) == {"add"}
    with pytest.raises(GpuperfError, match="no rows for kernel"):
        fit_on_kernels(RecordingRegressor(), _frame(), FEATURES, ["scan"])


def test_metrics_tables_and_macro_mape():
    evaluation = leave_one_gpu_out(RecordingRegressor(), _frame(), FEATURES)
    cells = evaluation.metrics_by(["fold", "kernel"])
    assert cells.shape[0] == 6
    macro = evaluation.macro_mape()
    assert np.allclose(macro, cells["mape"].groupby(level="fold").mean())


def test_errors_name_the_missing_column_and_unknown_group():
    with pytest.raises(GpuperfError, match="missing column.*flops"):
        leave_one_gpu_out(RecordingRegressor(), _frame(), [*FEATURES, "flops"])
    with pytest.raises(GpuperfError, match="held-out group.*Z"):
        leave_one_gpu_out(RecordingRegressor(), _frame(), FEATURES, groups=["Z"])
    with pytest.raises(GpuperfError, match=r"leave-one-gpu-out: features lists column names, e.g. \['n'\], not the "
                                           r"string 'n'"):
        leave_one_gpu_out(RecordingRegressor(), _frame(), "n")
    for cap in (0, -1, 2.5, True):
        with pytest.raises(GpuperfError, match=r"max_train_rows .* must be a whole number, at least 1 \(or None\)"):
            leave_one_gpu_out(RecordingRegressor(), _frame(), FEATURES, max_train_rows=cap)
    with pytest.raises(GpuperfError, match="fit-on-kernels: max_train_rows 0"):
        fit_on_kernels(RecordingRegressor(), _frame(), FEATURES, ["copy"], max_train_rows=0)


def test_balanced_subsample_caps_rows_per_cell():
    frame = _frame()
    small = balanced_subsample(frame, ["gpu"], max_rows=2)
    assert small.groupby("gpu").size().max() == 2
    SEEN.clear()
    leave_one_gpu_out(RecordingRegressor(), frame, FEATURES, max_train_rows=1, balance_by=("gpu", "kernel"))
    assert all(len(trained) == 4 for trained in SEEN)


def test_predictions_clipped_to_the_log_target_bounds_are_counted_per_held_out_group():
    """GPU C's feature lies far beyond the others': its log-linear extrapolation (2^40 s) is
    clipped to the largest training time times 8, and counted; GPUs A and B stay in range."""
    from gpuperf.models import LogTarget

    rows = [dict(gpu=gpu, kernel="k", x=x, time_s=2.0**x, status="ok")
            for gpu, xs in (("A", (1, 2, 3)), ("B", (2, 3, 4)), ("C", (40,))) for x in xs]
    evaluation = leave_one_gpu_out(LogTarget(LinearRegression()), pd.DataFrame(rows), ["x"])
    assert evaluation.bounded == {"C": 1}
    clipped = evaluation.predictions.set_index("fold").loc["C"]
    assert bool(clipped["bounded"]) and clipped["predicted"] == pytest.approx(2.0**4 * 8)
    assert not leave_one_gpu_out(LinearRegression(), pd.DataFrame(rows), ["x"]).bounded  # no bounds


def test_macro_mape_weighs_each_kernel_equally():
    """k1 is off by 1.0, k2 (two rows) exact: macro 0.5, pooled 1/3."""
    from gpuperf.evaluation.protocols import Evaluation
    preds = pd.DataFrame({"fold": ["A"] * 3, "kernel": ["k1", "k2", "k2"],
                          "measured": [1.0, 1.0, 1.0], "predicted": [2.0, 1.0, 1.0]})
    ev = Evaluation("x", ("fold",), preds)
    assert ev.macro_mape().loc["A"] == pytest.approx(0.5)
    assert ev.overall["mape"] == pytest.approx(1 / 3)


def test_fit_by_kernel_skips_and_counts_rows_whose_kernel_has_no_training_rows():
    """Only GPU A ran scan: holding A out leaves scan's row without a model."""
    from gpuperf.evaluation.protocols import leave_one_gpu_out
    rows = [dict(gpu=g, kernel=k, n=n, time_s=n * (i + 1) * 1e-3)
            for i, g in enumerate("AB") for k in ("copy", "scan") for n in (1, 2, 4) if k == "copy" or (g, n) == ("A", 1)]
    ev = leave_one_gpu_out(LinearRegression(), pd.DataFrame(rows), ["n"], fit_by="kernel")
    assert ev.skipped == {"A": 1}
    assert len(ev.predictions) == 6 and set(ev.predictions["kernel"]) == {"copy"}


def test_balanced_subsample_caps_a_cell_one_row_above_the_cap():
    from gpuperf.evaluation.protocols import balanced_subsample
    frame = pd.DataFrame({"kernel": ["k"] * 3, "gpu": ["A"] * 3, "x": [1, 2, 3]})
    assert len(balanced_subsample(frame, ["kernel", "gpu"], 2)) == 2


def test_balanced_subsample_keeps_a_group_of_exactly_max_rows_whole_and_in_order():
    frame = pd.DataFrame({"kernel": ["a"] * 5 + ["b"] * 3, "x": range(8)})
    assert balanced_subsample(frame, ["kernel"], 5)["x"].tolist() == list(range(8))


def test_fitted_clone_reuses_a_model_only_for_the_same_values_and_once():
    """The model fitted on X and y is handed out again for the same X and y, then dropped; the same X
    with other y is a fit of its own (slope -1, not the first fit's 1)."""
    from gpuperf.evaluation.protocols import fitted_clone

    X, fitted = pd.DataFrame({"a": [1.0, 2.0, 3.0]}), {}
    rising = fitted_clone(LinearRegression(), X, np.array([1.0, 2.0, 3.0]), fitted)
    falling = fitted_clone(LinearRegression(), X, np.array([3.0, 2.0, 1.0]), fitted)
    assert rising.coef_ == pytest.approx([1.0]) and falling.coef_ == pytest.approx([-1.0])
    assert fitted_clone(LinearRegression(), X, np.array([1.0, 2.0, 3.0]), fitted) is rising
    assert fitted_clone(LinearRegression(), X, np.array([3.0, 2.0, 1.0]), fitted) is falling
    assert fitted == {}  # each handed out twice, then dropped


def test_a_measured_row_without_a_group_or_with_a_bad_feature_is_named():
    frame = _frame()
    frame.loc[4, "gpu"] = None
    with pytest.raises(GpuperfError, match=r"row 5: gpu has no value: its group is unknown"):
        leave_one_gpu_out(LinearRegression(), frame, FEATURES)
    frame = _frame().astype({"n": object})
    frame.loc[2, "n"] = "abc"
    with pytest.raises(GpuperfError, match=r"row 3: n='abc' is not a number"):
        leave_one_kernel_out(LinearRegression(), frame, FEATURES)
    frame = _frame().astype({"n": float})
    frame.loc[1, "n"] = np.inf
    with pytest.raises(GpuperfError, match=r"row 2: n=inf is not a finite number"):
        leave_one_gpu_out(LinearRegression(), frame, FEATURES)


def test_a_missing_feature_is_refused_only_where_the_model_cannot_take_it():
    frame = _frame().astype({"n": float})
    frame.loc[3, "n"] = np.nan
    with pytest.raises(GpuperfError, match=r"row 4: n has no value, and this model takes no missing features"):
        leave_one_gpu_out(LinearRegression(), frame, FEATURES)
    for trees in (make_model("gbt", log_target=True), make_model("random_forest", log_inputs=True)):
        evaluation = leave_one_gpu_out(trees, frame, FEATURES)  # trees take NaN, through the log scale too
        assert evaluation.overall["n"] == 18
    with pytest.raises(GpuperfError, match=r"row 4: n has no value"):
        leave_one_gpu_out(make_model("svr_rbf", log_inputs=True), frame, FEATURES)
    failed = _frame().astype({"n": float})
    failed.loc[18, "n"] = np.nan  # the failed row is never used: its features may be missing
    assert leave_one_gpu_out(LinearRegression(), failed, FEATURES).overall["n"] == 18


def test_split_evaluation_takes_a_mask_of_one_flag_per_row():
    from gpuperf.evaluation.protocols import split_evaluation

    frame = _frame()
    on_a = (frame["gpu"] == "A").to_numpy()
    from_array = split_evaluation(LinearRegression(), frame, FEATURES, on_a)
    from_series = split_evaluation(LinearRegression(), frame, FEATURES, pd.Series(on_a, index=frame.index))
    assert from_array.overall == from_series.overall and from_array.overall["n"] == 12


def test_a_mask_series_in_another_row_order_flags_the_rows_by_label():
    """A Series mask is matched to the frame by its index, not applied by position."""
    from gpuperf.evaluation.protocols import split_evaluation

    frame = _frame()
    on_a = frame["gpu"].eq("A")
    shuffled = on_a.sample(frac=1.0, random_state=0)
    assert not shuffled.index.equals(frame.index)
    in_order = split_evaluation(LinearRegression(), frame, FEATURES, on_a)
    reordered = split_evaluation(LinearRegression(), frame, FEATURES, shuffled)
    pd.testing.assert_frame_equal(reordered.predictions, in_order.predictions)
    assert set(reordered.predictions["gpu"]) == {"B", "C"}


def test_fit_on_kernels_names_a_training_set_that_leaves_nothing_to_test():
    """Training on every kernel raised scikit-learn's 'Found array with 0 sample(s)'."""
    with pytest.raises(GpuperfError, match="the training kernels are every kernel of the table; none is left"):
        fit_on_kernels(RecordingRegressor(), _frame(), FEATURES, ["copy", "add"])


def test_a_missing_time_of_a_nullable_column_is_named_as_a_plain_nan_is():
    """pd.NA in a Float64 time passed the row checks and surfaced as scikit-learn's 'Input y contains
    NaN', naming no row."""
    frame = _frame().convert_dtypes()
    frame.loc[4, "time_s"] = pd.NA
    with pytest.raises(GpuperfError, match=r"leave-one-gpu-out: row 5: time_s=<NA> is not a positive number"):
        leave_one_gpu_out(RecordingRegressor(), frame, FEATURES)
    frame = _frame().convert_dtypes()
    frame.loc[2, "n"] = pd.NA
    with pytest.raises(GpuperfError, match=r"row 3: n has no value"):
        leave_one_gpu_out(RecordingRegressor(), frame, FEATURES)


def test_the_row_cap_keeps_rows_whose_group_value_is_empty():
    """balanced_subsample grouped with pandas' default dropna: every row without a gpu was dropped,
    so a cap far above the table's size changed the figures."""
    frame = _frame()
    frame.loc[frame.index[::2], "gpu"] = np.nan
    assert len(balanced_subsample(frame, ["kernel", "gpu"], max_rows=1000)) == len(frame)
    capped = balanced_subsample(frame, ["kernel", "gpu"], max_rows=1)
    assert len(capped) == 8 and capped["gpu"].isna().sum() == 2  # one row per (kernel, gpu or none)


def test_a_split_that_leaves_nothing_to_test_or_a_mask_of_another_length_is_one_error():
    """Both gave raw library errors: scikit-learn's 'Found array with 0 sample(s)', pandas' 'Length of
    values (10) does not match length of index (19)'."""
    from gpuperf.evaluation.protocols import split_evaluation

    frame = _frame()
    with pytest.raises(GpuperfError, match=r"split: no measured rows left to test in test: every one is a training"):
        split_evaluation(LinearRegression(), frame, FEATURES, np.ones(len(frame), bool))
    with pytest.raises(GpuperfError, match=rf"split: train_mask holds 10 flags for {len(frame)} rows"):
        split_evaluation(LinearRegression(), frame, FEATURES, np.ones(10, bool))


def test_default_features_keep_column_labels_that_are_not_strings():
    """A frame made from an array has integer labels: default_features returned '0', '1', which the
    protocols then reported as missing columns."""
    from gpuperf.evaluation.feature_columns import default_features

    frame = _frame().rename(columns={"gpu_id": 0, "kernel_id": 1, "n": 2})
    chosen = default_features(frame)
    assert sorted(chosen) == [0, 1, 2]
    assert leave_one_gpu_out(LinearRegression(), frame, chosen).overall["n"] == 18
    mixed = frame.rename(columns={2: "n"})  # scikit-learn refuses names of two kinds: one error says so
    with pytest.raises(GpuperfError, match=r"leave-one-gpu-out: features mix column names and other labels \(0, 1\)"):
        leave_one_gpu_out(LinearRegression(), mixed, default_features(mixed))


def test_default_features_name_a_column_of_numbers_held_as_categories():
    """A category column of block sizes (64, 128, 256) was left out of the default features without a word,
    where a column of numbers held as text is named in a note."""
    from gpuperf.evaluation.feature_columns import default_features

    frame = _frame().assign(block=lambda f: pd.Categorical(np.resize([64, 128, 256], len(f))))
    with pytest.warns(GpuperfNote, match=r"t.csv: left out of the default features, numbers held as categories "
                                         r"\(a pandas category column\): block; convert them to numbers"):
        chosen = default_features(frame, "t.csv")
    assert "block" not in chosen and "n" in chosen


def test_a_held_out_size_given_as_a_float_is_the_group_of_that_size():
    """groups=[4.0] was refused ('no rows for held-out group(s) 4.0') on a size column read as floats,
    whose groups are labelled 4."""
    frame = _frame().assign(n=lambda f: f["n"].astype(float))
    evaluation = leave_one_size_out(LinearRegression(), frame, FEATURES, sizes="n", groups=[4.0, np.float64(2)])
    assert sorted(evaluation.predictions["fold"].unique()) == ["2", "4"]
    fractions = _frame().assign(n=lambda f: f["n"].map({1: 0.5, 2: 2.0, 4: 4.0}))  # labels 0.5, 2.0, 4.0
    evaluation = leave_one_size_out(LinearRegression(), fractions, FEATURES, sizes="n", groups=[2.0, 0.5])
    assert sorted(evaluation.predictions["fold"].unique()) == ["0.5", "2.0"]


@pytest.mark.parametrize(("spellings", "held"), [
    (("Tesla K40", "NVIDIA Tesla K40c"), "Tesla K40"),  # a GPU gpuperf describes: its own name
    (("RTX 4070", "NVIDIA GeForce rtx 4070"), "NVIDIA GeForce rtx 4070"),  # one it does not: the first spelling
])
def test_a_gpu_spelt_two_ways_is_held_out_whole(spellings, held):
    """Two spellings of one GPU were two folds, each trained on the other's rows."""
    frame = _frame()
    frame["gpu"] = frame["gpu"].map({"A": spellings[0], "B": spellings[1], "C": "GTX 680"})
    SEEN.clear()
    evaluation = leave_one_gpu_out(RecordingRegressor(), frame, FEATURES)
    assert list(evaluation.per_group.index) == ["GTX 680", held] and len(SEEN) == 2
    assert {row[0] for row in SEEN[1]} == {2}  # holding it out trains on the GTX 680 alone
    assert len(evaluation.predictions.query(f"fold == '{held}'")) == 12


def test_a_gpu_named_by_its_model_name_selects_its_fold():
    frame = _frame()
    frame["gpu"] = frame["gpu"].map({"A": "Tesla K40", "B": "NVIDIA Tesla K40c", "C": "GTX 680"})
    named = leave_one_gpu_out(RecordingRegressor(), frame, FEATURES, groups=["K40"])
    assert list(named.per_group.index) == ["Tesla K40"]


def test_a_size_group_given_as_a_float_finds_an_integer_column():
    """groups=[4.0] on an integer n column found no rows for group 4.0."""
    frame = _frame()
    assert frame["n"].dtype.kind == "i"
    evaluation = leave_one_size_out(RecordingRegressor(), frame, FEATURES, "n", groups=[4.0])
    assert list(evaluation.per_group.index) == ["4"] and evaluation.overall["n"] == 6


def test_a_traces_run_and_occurrence_are_not_default_features():
    """k40c_traces holds 10 runs of each launch: which run, and which launch of its kernel, say nothing of it."""
    from gpuperf.datasets import load_dataset
    from gpuperf.evaluation.feature_columns import default_features

    traces = load_dataset("k40c_traces")
    assert {"run", "occurrence"} <= set(traces.columns)
    chosen = default_features(traces)
    assert "run" not in chosen and "occurrence" not in chosen and "regs" in chosen


def test_macro_mape_is_the_mean_over_kernels_of_their_mape():
    from gpuperf.evaluation.protocols import Evaluation

    predictions = pd.DataFrame({"fold": ["A"] * 3, "kernel": ["k1", "k2", "k3"], "measured": [1.0] * 3,
                                "predicted": [1.1, 1.2, 2.0]})
    assert Evaluation("x", ("fold",), predictions).macro_mape().to_dict() == pytest.approx({"A": (0.1 + 0.2 + 1.0) / 3})


def test_fit_by_several_columns_fits_each_group_on_rows_matching_all_of_them():
    """Variant b is 10x variant a on every GPU: fitted per (kernel, variant), each left-out GPU's line is
    the same shape as the others', so the only error is the GPUs' scale (1x, 2x, 3x)."""
    rows = [dict(gpu=g, kernel="k", variant=v, x=x, time_s=(10 if v == "b" else 1) * (i + 1) * x)
            for i, g in enumerate("ABC") for v in ("a", "b") for x in (1.0, 2.0, 3.0)]
    evaluation = leave_one_gpu_out(LinearRegression(), pd.DataFrame(rows), ["x"], fit_by=["kernel", "variant"])
    # Left out A (1x): trained on B, C (2x, 3x) -> 2.5x: error 1.5; B: (1+3)/2 = 2 vs 2: 0; C: 1.5 vs 3: 0.5.
    assert evaluation.overall["mape"] == pytest.approx((1.5 + 0.0 + 0.5) / 3)


class BackwardsWithinSize(RegressorMixin, BaseEstimator):
    """Times grow with n squared but fall with k: every size's kernels ranked exactly backwards."""

    def fit(self, X, y):
        return self

    def predict(self, X):
        return 1e-9 * X["n"].to_numpy() ** 2 / X["k"].to_numpy()


def test_overall_rank_metrics_are_the_mean_over_held_out_groups_not_pooled_over_rows():
    """Pooled over rows, larger sizes taking longer gave this backwards model Spearman 0.82."""
    frame = pd.DataFrame([dict(kernel=f"k{k}", gpu="A", n=n, k=k, time_s=1e-9 * n * n * k)
                          for n in (256, 512, 1024, 2048) for k in range(1, 8)])
    evaluation = leave_one_size_out(BackwardsWithinSize(), frame, ["n", "k"], sizes="n")
    overall = evaluation.overall
    assert (evaluation.per_group["spearman"] == -1).all()
    assert overall["spearman"] == pytest.approx(-1) and overall["kendall"] == pytest.approx(-1)
    assert overall["top5_overlap"] == pytest.approx(evaluation.per_group["top5_overlap"].mean())
    assert overall["top5_overlap"] < 1
    assert overall["n"] == 28 and overall["mape"] == pytest.approx(evaluation.per_group["mape"].mean())


def test_overall_rank_metrics_skip_groups_where_they_are_undefined():
    """Groups of 4 rows have no top-5 overlap: the overall one is undefined too, not pooled."""
    frame = pd.DataFrame([dict(kernel=f"k{k}", gpu="A", n=n, k=k, time_s=1e-9 * n * n * k)
                          for n in (256, 512) for k in range(1, 5)])
    overall = leave_one_size_out(BackwardsWithinSize(), frame, ["n", "k"], sizes="n").overall
    assert np.isnan(overall["top5_overlap"]) and overall["spearman"] == pytest.approx(-1)


def _spelt_frame(column: str, spellings: list[str]) -> pd.DataFrame:
    return pd.DataFrame([{"gpu": "A", "kernel": "copy", "gpu_id": 0, "kernel_id": 0, "n": i,
                          "time_s": (i + 1) * 1e-3, column: spelling}
                         for i, spelling in enumerate(spellings)])


@pytest.mark.parametrize("protocol, column, options", [
    (leave_one_size_out, "shape", {"sizes": "shape"}),
    (leave_one_kernel_out, "kernel", {}),
])
def test_group_labels_differing_by_spaces_around_them_are_one_held_out_group(protocol, column, options):
    """"1024x1024 " beside "1024x1024" was a group of its own, so the held-out size leaked into training."""
    SEEN.clear()
    frame = _spelt_frame(column, ["1024x1024", "1024x1024 ", " 2048x2048", "2048x2048", "4096x4096"])
    evaluation = protocol(RecordingRegressor(), frame, FEATURES, **options)
    assert list(evaluation.per_group.index) == ["1024x1024", "2048x2048", "4096x4096"]
    assert [sorted(n for _, _, n in trained) for trained in SEEN] == [[2, 3, 4], [0, 1, 4], [0, 1, 2, 3]]
    held_out = protocol(RecordingRegressor(), frame, FEATURES, groups=[" 2048x2048 "], **options)
    assert list(held_out.per_group.index) == ["2048x2048"] and held_out.overall["n"] == 2


def test_group_labels_differing_only_in_letter_case_stay_apart_with_a_note_naming_both():
    frame = _spelt_frame("kernel", ["saxpy", "SAXPY", "copy", "copy"])
    with pytest.warns(GpuperfNote, match="differ only in letter case.*: SAXPY and saxpy$"):
        evaluation = leave_one_kernel_out(RecordingRegressor(), frame, FEATURES)
    assert list(evaluation.per_group.index) == ["SAXPY", "copy", "saxpy"]


def test_overall_rank_metrics_are_the_mean_over_the_groups_where_they_are_defined():
    """A 4-row group has no top-5 overlap: the overall one is the 6-row group's, not NaN."""
    frame = pd.DataFrame([dict(kernel=f"k{k}", gpu="A", n=n, k=k, time_s=1e-9 * n * n * k)
                          for n, kinds in ((256, 6), (512, 4)) for k in range(1, kinds + 1)])
    evaluation = leave_one_size_out(BackwardsWithinSize(), frame, ["n", "k"], sizes="n")
    assert np.isnan(evaluation.per_group.loc["512", "top5_overlap"])
    assert evaluation.overall["top5_overlap"] == pytest.approx(evaluation.per_group.loc["256", "top5_overlap"])
    assert evaluation.overall["top5_overlap"] == pytest.approx(0.8)


@pytest.mark.parametrize(("protocol", "groups"), [
    (leave_one_gpu_out, ["K40", "Tesla K40"]),  # two spellings of one GPU
    (leave_one_kernel_out, ["copy", "copy "]),  # one kernel, once with a space after it
])
def test_a_group_named_twice_is_held_out_once(protocol, groups):
    """Each held-out row was predicted (and scored) once per naming of its group."""
    frame = _frame().assign(gpu=lambda f: f["gpu"].map({"A": "Tesla K40", "B": "GTX 680", "C": "GTX 970"}))
    evaluation = protocol(RecordingRegressor(), frame, FEATURES, groups=groups)
    assert evaluation.per_group["n"].tolist() == [6 if protocol is leave_one_gpu_out else 9]
    assert evaluation.predictions["row"].is_unique


def test_a_split_of_a_frame_with_repeated_index_labels_and_a_failed_row_keeps_each_rows_flag():
    """Dropping the failed row reindexed the mask on repeated labels: pandas' 'cannot reindex on an axis
    with duplicate labels'."""
    from gpuperf.evaluation.protocols import split_evaluation

    frame = _frame()  # its last row failed
    doubled = pd.concat([frame.iloc[:-1], frame.assign(gpu_id=frame["gpu_id"] + 3, gpu=frame["gpu"] + "2")])
    assert not doubled.index.is_unique
    evaluation = fit_on_kernels(LinearRegression(), doubled, FEATURES, ["copy"])
    assert evaluation.overall["n"] == 18 and set(evaluation.predictions["kernel"]) == {"add"}
    on_a = doubled["gpu"].eq("A")
    for mask in (on_a, on_a.to_numpy()):
        assert split_evaluation(LinearRegression(), doubled, FEATURES, mask).overall["n"] == 30


def test_fit_on_kernels_takes_a_kernel_name_with_spaces_around_it_as_that_kernel():
    """"copy " was a kernel apart, predicted as unseen, and one named "copy " only was not found."""
    frame = _frame()
    frame.loc[frame["gpu"].eq("B") & frame["kernel"].eq("copy"), "kernel"] = "copy "
    evaluation = fit_on_kernels(LinearRegression(), frame, FEATURES, [" copy"])
    assert set(evaluation.predictions["kernel"]) == {"add"} and evaluation.overall["n"] == 9


def test_a_gpu_gpuperf_does_not_describe_is_found_under_another_spelling_of_its_name():
    """groups=["mystery gpu"] found no rows of the table's "Mystery GPU" (or "mystery gpu", merged into it)."""
    frame = _frame().assign(gpu=lambda f: f["gpu"].map({"A": "Mystery GPU", "B": "mystery gpu", "C": "GTX 680"}))
    evaluation = leave_one_gpu_out(RecordingRegressor(), frame, FEATURES, groups=["MYSTERY-GPU"])
    assert list(evaluation.per_group.index) == ["Mystery GPU"] and evaluation.overall["n"] == 12


def _per_group_samples(frame: pd.DataFrame, by: list[str], max_rows: int, seed: int) -> pd.DataFrame:
    """balanced_subsample as it was: DataFrame.sample on each group's frame, the groups concatenated."""
    parts = [part.sample(n=max_rows, random_state=seed) if len(part) > max_rows else part
             for _, part in frame.groupby(by, sort=False, dropna=False)]
    return pd.concat(parts)


def test_balanced_subsample_draws_the_rows_pandas_sample_draws_per_group():
    """The subsample is drawn from group positions instead of a frame per group (seconds saved per
    nested run on the Rodinia table): the same rows in the same order, so every figure stays."""
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"kernel": rng.choice(["k1", "k2", "k3"], 400), "gpu": rng.choice(["A", "B", None], 400),
                          "x": rng.random(400), "n": rng.integers(0, 9, 400)},
                         index=rng.integers(0, 50, 400))  # repeated, unsorted labels
    for by, max_rows, seed in ((["kernel", "gpu"], 7, 0), (["gpu"], 40, 3), (["kernel"], 500, 0)):
        pd.testing.assert_frame_equal(balanced_subsample(frame, by, max_rows, seed),
                                      _per_group_samples(frame, by, max_rows, seed))
    assert balanced_subsample(frame.iloc[:0], ["gpu"], 2).empty


def test_name_list_is_the_public_check_the_protocols_and_the_rodinia_runs_share():
    """The groups, kernels, models a caller names: a sequence as a list, one string one error naming it."""
    import ast
    import inspect

    from gpuperf.errors import name_list
    from gpuperf.evaluation import protocols, reproduce, rodinia_report

    assert name_list(("K20", "K40"), "groups", "here") == ["K20", "K40"]
    with pytest.raises(GpuperfError, match=r"^here: models lists names, e.g. \['gbt'\], not the string 'gbt'$"):
        name_list("gbt", "models", "here")
    for module in (protocols, reproduce, rodinia_report):
        imported = [alias.name for node in ast.walk(ast.parse(inspect.getsource(module)))
                    if isinstance(node, ast.ImportFrom) for alias in node.names]
        assert "name_list" in imported and not [name for name in imported if name.startswith("_")], module


def test_column_arguments_take_one_string_as_one_column_and_name_lists_refuse_it_as_the_readme_says():
    """group, fit_by, balance_by and metrics_by group rows by columns, as pandas' groupby: "gpu" is the column
    gpu there, while a list of names (features, groups) refuses one string; the README says which is which."""
    from pathlib import Path

    from gpuperf.evaluation.protocols import leave_one_group_out

    def run(**columns):
        return leave_one_group_out(LinearRegression(), _frame(), ["n"], max_train_rows=2, **columns).predictions

    as_string = run(group="gpu", fit_by="kernel", balance_by="kernel")
    pd.testing.assert_frame_equal(as_string, run(group=["gpu"], fit_by=["kernel"], balance_by=["kernel"]))
    evaluation = leave_one_gpu_out(RecordingRegressor(), _frame(), FEATURES)
    pd.testing.assert_frame_equal(evaluation.metrics_by("kernel"), evaluation.metrics_by(["kernel"]))
    with pytest.raises(GpuperfError, match=r"features lists column names, e.g. \['n'\], not the string 'n'"):
        leave_one_gpu_out(LinearRegression(), _frame(), "n")
    readme = " ".join((Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8").split())
    assert ("An argument that groups rows by columns (`group`, `fit_by` and `balance_by` of the "
            "`gpuperf.evaluation.protocols` functions, `Evaluation.metrics_by`) takes one column as a string") in readme
    assert "One that lists names (`features`, `groups`, `params`, `models`, `feature_names`) refuses one string" in readme


def test_held_out_groups_or_training_kernels_given_as_one_string_are_refused():
    # "AB" would read as the GPUs A and B, "12" as the sizes 1 and 2: a silent run of other groups
    with pytest.raises(GpuperfError, match=r"leave-one-gpu-out: groups lists names, e.g. \['AB'\], not the string"):
        leave_one_gpu_out(RecordingRegressor(), _frame(), FEATURES, groups="AB")
    with pytest.raises(GpuperfError, match=r"leave-one-size-out: groups lists names, e.g. \['12'\], not the string"):
        leave_one_size_out(RecordingRegressor(), _frame(), FEATURES, "n", groups="12")
    with pytest.raises(GpuperfError, match=r"leave-one-kernel-out: groups lists names, e.g. \['add'\]"):
        leave_one_kernel_out(RecordingRegressor(), _frame(), FEATURES, groups="add")
    with pytest.raises(GpuperfError, match=r"fit-on-kernels: train_kernels lists names, e.g. \['copy'\], not the "
                                           r"string 'copy'"):
        fit_on_kernels(RecordingRegressor(), _frame(), FEATURES, "copy")
    assert set(leave_one_gpu_out(RecordingRegressor(), _frame(), FEATURES, groups=("A", "B")).predictions["fold"]) \
        == {"A", "B"}


def test_a_table_that_is_not_a_dataframe_is_an_error_naming_the_call():
    from pathlib import Path

    from gpuperf.evaluation import default_features, split_evaluation

    rows = _frame().to_dict("records")
    for call, where in ((lambda t: leave_one_gpu_out(RecordingRegressor(), t, FEATURES), "leave-one-gpu-out"),
                        (lambda t: leave_one_kernel_out(RecordingRegressor(), t, FEATURES), "leave-one-kernel-out"),
                        (lambda t: fit_on_kernels(RecordingRegressor(), t, FEATURES, ["copy"]), "fit-on-kernels"),
                        (lambda t: split_evaluation(RecordingRegressor(), t, FEATURES, [True] * 19), "split"),
                        (default_features, "default_features")):
        with pytest.raises(GpuperfError, match=rf"^{where}: the table must be a pandas DataFrame \(got list\)"):
            call(rows)
    with pytest.raises(GpuperfError, match=r"\(got PosixPath\); read the file first \(pandas.read_csv"):
        leave_one_gpu_out(RecordingRegressor(), Path("table.csv"), FEATURES)
    with pytest.raises(GpuperfError, match="fit-on-kernels: missing column.*kernel"):
        fit_on_kernels(RecordingRegressor(), _frame().drop(columns="kernel"), FEATURES, ["copy"])


def test_metrics_by_a_column_the_predictions_lack_names_the_ones_they_have():
    evaluation = leave_one_gpu_out(RecordingRegressor(), _frame(), FEATURES)
    with pytest.raises(GpuperfError, match=r"leave-one-gpu-out: no column\(s\) size in the predictions; metrics_by "
                                           r"takes kernel, gpu, fold, measured"):
        evaluation.metrics_by(["kernel", "size"])
    assert list(evaluation.metrics_by("kernel").index) == ["add", "copy"]


def test_max_train_rows_on_a_table_without_the_balance_columns_caps_it_as_one_cell():
    """No kernel or gpu column: the training rows are capped as one cell, not pandas' "No group keys
    passed!"; balance_by may name one column as a string, not read as its characters."""
    from gpuperf.evaluation.protocols import split_evaluation

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"n": np.repeat([1, 2, 3, 4], 10), "x": rng.random(40) + 1, "time_s": rng.random(40) + 1})
    fitted_rows = []

    class Counting(LinearRegression):
        def fit(self, X, y):
            fitted_rows.append(len(X))
            return super().fit(X, y)

    split_evaluation(Counting(), frame, ["x"], frame["n"] < 4, max_train_rows=5)
    leave_one_size_out(Counting(), frame, ["x"], "n", max_train_rows=7)
    assert fitted_rows == [5] + [7] * 4
    fitted_rows.clear()
    frame["gpu"] = np.tile(["V100", "K20"], 20)
    split_evaluation(Counting(), frame, ["x"], frame["n"] < 4, max_train_rows=5, balance_by="gpu")
    assert fitted_rows == [10]  # 5 per GPU, "gpu" read as one column, not g, p and u


def test_each_fold_takes_only_the_columns_fitting_and_scoring_read(monkeypatch):
    """A wide table's other columns (Rodinia's 122, text among them) are not copied with each fold's
    training, test and subsampled rows; the predictions are those of the table without them."""
    import gpuperf.evaluation.protocols as protocols

    taken = []
    fit_predict = protocols._fit_predict
    monkeypatch.setattr(protocols, "_fit_predict", lambda estimator, train, test, *args: (
        taken.append(set(train.columns) | set(test.columns)) or fit_predict(estimator, train, test, *args)))
    frame = _frame()
    wide = frame.assign(notes=frame["kernel"] + " run", unused=1.0)
    options = dict(fit_by="kernel", max_train_rows=2)
    evaluation = leave_one_gpu_out(RecordingRegressor(), wide, FEATURES, **options)
    assert len(taken) == 3 and all(not {"notes", "unused", "status"} & columns for columns in taken)
    pd.testing.assert_frame_equal(evaluation.predictions,
                                  leave_one_gpu_out(RecordingRegressor(), frame, FEATURES, **options).predictions)
