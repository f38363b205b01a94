"""Feature selection: Spearman + clustering (Amaris et al.) and normalised mutual information."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import make_pipeline

from gpuperf.errors import GpuperfError
from gpuperf.models.selection import (
    SpearmanClusterSelector,
    mutual_information_ranking,
    normalised_mutual_information,
    spearman_matrix,
    spearman_scores,
)


def _table(n=400, seed=0):
    rng = np.random.default_rng(seed)
    signal = rng.uniform(1, 100, n)
    other = rng.uniform(1, 100, n)
    X = pd.DataFrame(
        {
            "loads": signal,
            "loads_copy": 3 * signal,  # perfectly correlated with loads
            "stores": other,
            "noise": rng.normal(size=n),
        }
    )
    y = signal * other
    return X, y


def test_selector_keeps_one_of_two_perfectly_correlated_features_and_drops_noise():
    X, y = _table()
    selector = SpearmanClusterSelector(k=2, threshold=0.3).fit(X, y)
    kept = list(selector.get_feature_names_out())
    assert len(kept) == 2
    assert ("loads" in kept) != ("loads_copy" in kept)
    assert "stores" in kept and "noise" not in kept


def test_selector_keeps_highest_variance_member_of_each_cluster():
    rng = np.random.default_rng(1)
    base = rng.uniform(1, 10, 300)
    X = np.column_stack([base, base**3])  # same ranks; log-normalised variance larger for base**3
    selector = SpearmanClusterSelector(k=1, threshold=0.0).fit(X, base)
    assert list(selector.selected_) == [1]


def test_selector_threshold_keeps_everything_when_fewer_than_k_pass():
    X, y = _table()
    selector = SpearmanClusterSelector(k=10, threshold=0.3).fit(X, y)
    assert set(selector.get_feature_names_out()) == {"loads", "loads_copy", "stores"}
    assert selector.transform(X).shape == (len(X), 3)


def test_selector_records_linkage_and_works_in_a_pipeline():
    X, y = _table()
    selector = SpearmanClusterSelector(k=2, threshold=0.0).fit(X, y)
    assert selector.linkage_.shape == (len(selector.candidates_) - 1, 4)
    pipeline = make_pipeline(clone(selector), LinearRegression()).fit(X, y)
    assert pipeline.predict(X).shape == (len(X),)


def test_selector_rejects_k_below_one():
    X, y = _table()
    with pytest.raises(GpuperfError, match="k must be a whole number of at least 1"):
        SpearmanClusterSelector(k=0).fit(X, y)


def test_spearman_scores_are_absolute_and_zero_for_constants():
    x = np.arange(10.0)
    scores = spearman_scores(np.column_stack([x, -x, np.ones(10)]), x)
    assert np.allclose(scores, [1.0, 1.0, 0.0])


def test_normalised_mutual_information_bounds():
    rng = np.random.default_rng(2)
    x = rng.uniform(size=2000)
    assert normalised_mutual_information(x, x, bins=8) == pytest.approx(0.5)
    assert normalised_mutual_information(x, rng.uniform(size=2000), bins=8) < 0.02
    assert normalised_mutual_information(np.ones(50), x[:50]) == 0.0


def test_mutual_information_ranking_orders_features():
    X, y = _table()
    ranking = mutual_information_ranking(X, y, bins=10)
    assert list(ranking.index[:2]) in (["loads", "loads_copy"], ["loads_copy", "loads"])
    assert ranking.index[-1] == "noise"
    with pytest.raises(GpuperfError, match="rows"):
        mutual_information_ranking(X, y[:10])


def test_spearman_matrix_of_a_single_row_is_the_identity():
    assert np.array_equal(spearman_matrix(np.random.default_rng(0).random((1, 4))), np.eye(4))
    SpearmanClusterSelector(k=2, threshold=0.0).fit(np.random.default_rng(1).random((1, 10)), np.array([1.0]))


def test_spearman_threshold_is_inclusive():
    """x and -x both have |r| = 1 exactly."""
    from gpuperf.models.selection import SpearmanClusterSelector
    x = np.arange(10.0)
    sel = SpearmanClusterSelector(k=5, threshold=1.0).fit(np.column_stack([x, -x, np.ones(10)]), x)
    assert list(sel.selected_) == [0, 1]


def test_selection_keeps_the_best_feature_when_none_passes_the_threshold():
    from gpuperf.models.selection import SpearmanClusterSelector
    x = np.arange(10.0)
    sel = SpearmanClusterSelector(k=1, threshold=1.01).fit(np.column_stack([x % 2, x]), x)
    assert list(sel.selected_) == [1]


def test_cluster_representative_is_chosen_by_variance_on_a_scale_free_footing():
    """A large offset gives column 0 the larger raw variance; relative to its maximum it barely varies."""
    from gpuperf.models.selection import SpearmanClusterSelector
    base = np.random.default_rng(1).uniform(1, 10, 300)
    sel = SpearmanClusterSelector(k=1, threshold=0.0).fit(np.column_stack([1e6 + 10 * base, base]), base)
    assert list(sel.selected_) == [1]


def test_normalised_mutual_information_of_identical_partitions_is_one_half():
    """Two quantile bins of x split it as y does: I = H(X) = H(Y) = ln 2, so R = 1/2."""
    from gpuperf.models.selection import normalised_mutual_information
    assert normalised_mutual_information([0.0, 1.0, 2.0, 3.0], [0.0, 0.0, 1.0, 1.0], bins=2) == pytest.approx(0.5)


def test_log_max_normalisation_is_log1p_over_the_column_maximum():
    """log1p(0) = 0 and log1p(e - 1) = 1: the column [0, e - 1] normalises to [0, 1]; a column
    [e^2 - 1, e - 1] to [2, 1] / 2 = [1, 0.5]; an all-zero column stays 0."""
    from gpuperf.models.selection import log_max_normalised

    X = np.array([[0.0, np.e**2 - 1, 0.0], [np.e - 1, -(np.e - 1), 0.0]])
    np.testing.assert_allclose(log_max_normalised(X), [[0.0, 1.0, 0.0], [1.0, 0.5, 0.0]], atol=1e-12)


def test_mutual_information_refuses_missing_values_and_bad_arguments_by_name():
    """One NaN in a perfectly informative column made np.quantile's bin edges NaN and ranked it
    last, silently; now an error names the column. Mismatched lengths, a bin count below 2 and a
    target given as a one-column table are handled too."""
    rng = np.random.default_rng(0)
    a = rng.uniform(1, 100, 500)
    X = pd.DataFrame({"a": a, "noise": rng.normal(size=500)})
    y = a * 1e-6
    assert list(mutual_information_ranking(X, y).index) == ["a", "noise"]
    assert mutual_information_ranking(X, pd.DataFrame({"t": y})).equals(mutual_information_ranking(X, y))
    X.loc[3, "a"] = np.nan  # the fourth row, counted from 1 as every error counts rows
    with pytest.raises(GpuperfError, match=r"column a: 1 of 500 values are missing or infinite \(the first at row 4\)"):
        mutual_information_ranking(X, y)
    nullable = X.convert_dtypes()  # <NA>, not NaN: the same error, not 'values must be numbers'
    with pytest.raises(GpuperfError, match=r"column a: 1 of 500 values are missing or infinite \(the first at row 4\)"):
        mutual_information_ranking(nullable, y)
    with pytest.raises(GpuperfError, match=r"spearman_scores: column a: 1 of 500 values are missing or infinite "
                                           r"\(the first at row 4\)"):
        spearman_scores(nullable, y)
    with pytest.raises(GpuperfError, match="3 values in x but 2 in y"):
        normalised_mutual_information([1, 2, 3], [1, 2])
    for bins in (0, 1, 2.5, True):
        with pytest.raises(GpuperfError, match="bins must be a whole number of at least 2"):
            normalised_mutual_information(a, y, bins=bins)
    with pytest.raises(GpuperfError, match="k must be a whole number of at least 1, got 2.5"):
        SpearmanClusterSelector(k=2.5).fit(np.c_[a, a], y)


def test_selector_refuses_a_threshold_or_linkage_method_it_cannot_use_by_name():
    X, y = _table()
    with pytest.raises(GpuperfError, match="threshold must be a number of at least 0"):
        SpearmanClusterSelector(threshold="x").fit(X, y)
    with pytest.raises(GpuperfError, match="threshold must be a number of at least 0"):
        SpearmanClusterSelector(threshold=-0.5).fit(X, y)
    with pytest.raises(GpuperfError, match="method must be one of .* got 'bogus'"):
        SpearmanClusterSelector(k=1, threshold=0, method="bogus").fit(X, y)


def test_spearman_scores_refuse_a_missing_value_naming_its_column_and_row():
    X, y = _table()
    X.loc[3, "stores"] = np.nan
    with pytest.raises(GpuperfError, match="column stores: 1 of 400 values are missing .* row 4"):
        spearman_scores(X, y)
    with pytest.raises(GpuperfError, match="column 2: 1 of 400"):
        spearman_scores(X.to_numpy(), y)
    with pytest.raises(GpuperfError, match="y: 1 of 400 values are missing"):
        spearman_scores(X.fillna(0), np.r_[np.nan, y[1:]])
    with pytest.raises(GpuperfError, match="400 rows in X but 10 in y"):
        spearman_scores(X.fillna(0), y[:10])


def test_mutual_information_refuses_text_and_empty_values_by_name():
    X, y = _table()
    with pytest.raises(GpuperfError, match="column s: values must be numbers"):
        mutual_information_ranking(X.assign(s="q"), y)
    with pytest.raises(GpuperfError, match="x: no values"):
        normalised_mutual_information([], [])


def test_a_column_mostly_at_its_minimum_is_not_binned_as_a_constant():
    """95 zeros and 5 ones scored 0 against itself (its mirror image 1/2): the zeros shared a bin with the ones."""
    x = np.r_[np.zeros(95), np.ones(5)]
    assert normalised_mutual_information(x, x) == pytest.approx(0.5)
    assert normalised_mutual_information(1 - x, 1 - x) == pytest.approx(0.5)
    times = np.r_[np.full(95, 1e-3), np.full(5, 1.0)]
    assert normalised_mutual_information(x, times) == pytest.approx(0.5)
    assert normalised_mutual_information(np.full(100, 3.0), times) == 0.0  # a constant column still tells nothing


def test_a_constant_candidate_stands_alone_in_the_clustering():
    """A constant column made scipy's spearmanr return one NaN for the whole matrix: an IndexError, or a
    linkage over 2 items for 3 candidates."""
    X = np.column_stack([np.arange(20.0), np.ones(20), np.arange(20.0) ** 2])
    assert np.array_equal(spearman_matrix(X), [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 1.0]])
    selector = SpearmanClusterSelector(k=3, threshold=0).fit(X, np.arange(20.0))
    assert selector.linkage_.shape == (2, 4)
    assert SpearmanClusterSelector(k=1, threshold=0).fit(X, np.arange(20.0)).selected_.size == 1


def test_mutual_information_ranks_highest_first_whatever_the_column_order():
    rng = np.random.default_rng(0)
    x = rng.uniform(1, 100, 400)
    ranking = mutual_information_ranking(pd.DataFrame({"noise": rng.normal(size=400), "signal": x}), x)
    assert list(ranking.index) == ["signal", "noise"]
    assert ranking.is_monotonic_decreasing


def test_anti_correlated_features_cluster_together_on_absolute_spearman():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(1, 10, 300), rng.uniform(1, 10, 300)
    X = np.column_stack([a, 11 - a, a * 1.001 + 0.5 * b])
    selector = SpearmanClusterSelector(k=2, threshold=0.5).fit(X, a)
    assert selector.clusters_[0] == selector.clusters_[1] != selector.clusters_[2]


def test_the_default_spearman_threshold_is_0_75():
    rng = np.random.default_rng(0)
    a, noise = rng.uniform(1, 10, 500), rng.uniform(1, 10, 500)
    X = np.column_stack([a, a + 0.9 * noise])
    scores = spearman_scores(X, a)
    assert 0.7 < scores[1] < 0.75
    assert SpearmanClusterSelector(k=5).fit(X, a).selected_.tolist() == [0]
