"""Accuracy metrics on hand-computed examples."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from gpuperf.errors import GpuperfError
from gpuperf.evaluation.metrics import (
    all_metrics,
    geometric_mean_relative_error,
    kendall,
    mape,
    median_ape,
    spearman,
    top_k_overlap,
    within,
)

MEASURED = [1.0, 2.0, 4.0, 10.0]
PREDICTED = [1.5, 2.0, 2.0, 12.0]  # errors 0.5, 0, 0.5, 0.2; ratios 1.5, 1, 0.5, 1.2


def test_mape_divides_by_the_measurement():
    assert mape(MEASURED, PREDICTED) == pytest.approx((0.5 + 0 + 0.5 + 0.2) / 4)
    assert mape([2.0], [1.0]) == pytest.approx(0.5)  # dividing by the prediction would give 1.0


def test_median_ape():
    assert median_ape(MEASURED, PREDICTED) == pytest.approx((0.2 + 0.5) / 2)


def test_geometric_mean_relative_error_is_symmetric_in_factors():
    expected = math.exp((math.log(1.5) + 0 + math.log(2) + math.log(1.2)) / 4) - 1
    assert geometric_mean_relative_error(MEASURED, PREDICTED) == pytest.approx(expected)
    assert geometric_mean_relative_error([1.0], [2.0]) == pytest.approx(geometric_mean_relative_error([2.0], [1.0]))


def test_within_counts_ratios_in_the_band_inclusive():
    assert within(MEASURED, PREDICTED) == pytest.approx(2 / 4)  # 1.0 and 1.2
    assert within(MEASURED, PREDICTED, 0.5, 1.5) == 1.0


def test_rank_correlations():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert kendall([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2, 3], [5, 5, 5]) != spearman([1, 2, 3], [5, 5, 5])  # NaN for a constant side


def test_top_k_overlap_compares_the_fastest_rows():
    measured = [1.0, 2.0, 3.0, 4.0, 5.0]
    predicted = [1.0, 5.0, 2.0, 4.0, 3.0]  # predicted top 2: rows 0, 2; measured top 2: rows 0, 1
    assert top_k_overlap(measured, predicted, k=2) == 0.5
    assert np.isnan(top_k_overlap(measured, predicted, k=5))  # every row is among the 5 fastest: undefined
    assert np.isnan(top_k_overlap(measured, predicted, k=10))
    with pytest.raises(GpuperfError):
        top_k_overlap(measured, predicted, k=0)
    assert top_k_overlap(measured, predicted, k=2.0) == 0.5
    with pytest.raises(GpuperfError, match="k must be a whole number, not 2.5"):
        top_k_overlap(measured, predicted, k=2.5)


def test_all_metrics_and_input_checks():
    result = all_metrics(MEASURED, PREDICTED, k=2)
    assert result["n"] == 4 and result["mape"] == pytest.approx(0.3) and "top2_overlap" in result
    assert math.isnan(all_metrics([1.0, 2.0], [-1.0, 2.0])["gmre"])
    with pytest.raises(GpuperfError, match="2 measured but 3 predicted"):
        mape([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(GpuperfError, match="positive"):
        mape([0.0], [1.0])
    with pytest.raises(GpuperfError, match="NaN"):
        mape([1.0], [np.nan])


def test_within_20pct_band_is_0_8_to_1_2_inclusive():
    """Only 0.8 and 1.2 of the four ratios lie in the closed band."""
    from gpuperf.evaluation.metrics import within
    assert within([1.0] * 4, [0.79, 0.8, 1.2, 1.21]) == 0.5


def test_all_metrics_within_keeps_the_float32_bounds():
    """float32 times 1.2 x apart are within for within() and for all_metrics alike."""
    from gpuperf.evaluation.metrics import all_metrics, within
    measured = np.float32([0.1] * 3)
    predicted = np.float32(np.float32(1.2) * measured)
    assert within(measured, predicted) == 1.0
    assert all_metrics(measured, predicted)["within_20pct"] == 1.0


def test_spearman_is_a_rank_correlation():
    """The same order: 1, whatever the outlier (Pearson gives about 0.8)."""
    from gpuperf.evaluation.metrics import spearman
    assert spearman([1, 2, 3, 4], [1, 2, 3, 100]) == pytest.approx(1.0)


def test_kendall_counts_concordant_pairs():
    """One swapped pair of six: (5 - 1) / 6 for Kendall, 1 - 6 * 2 / (4 * 15) for Spearman."""
    from gpuperf.evaluation.metrics import kendall, spearman
    assert kendall([1, 2, 3, 4], [2, 1, 3, 4]) == pytest.approx(2 / 3)
    assert spearman([1, 2, 3, 4], [2, 1, 3, 4]) == pytest.approx(0.8)


def test_all_metrics_median_ape_is_the_median():
    """Errors 0.5, 0, 0.5, 0.2: median 0.35, mean 0.3."""
    from gpuperf.evaluation.metrics import all_metrics
    assert all_metrics([1.0, 2.0, 4.0, 10.0], [1.5, 2.0, 2.0, 12.0])["median_ape"] == pytest.approx(0.35)


def test_within_refuses_a_band_whose_low_end_is_above_its_high_end():
    """within(low=1.5, high=0.5) returned 0.0, a share no prediction could beat."""
    assert within(MEASURED, MEASURED, low=0.5, high=1.5) == 1.0
    with pytest.raises(GpuperfError, match=r"within: low \(1.5\) must be at most high \(0.5\)"):
        within(MEASURED, MEASURED, low=1.5, high=0.5)


def test_within_counts_a_prediction_of_exactly_the_bound_inside_despite_rounding():
    # 0.08 / 0.1 is 0.7999999999999999 in floating point
    assert within([0.1], [0.08]) == 1.0
    assert within([0.05, 0.07, 0.1, 0.3], [0.04, 0.056, 0.08, 0.24]) == 1.0
    measured = np.arange(1, 200) / 100
    assert within(measured, 0.8 * measured) == 1.0
    assert within(measured, 1.2 * measured) == 1.0
    assert within(measured, 0.7999 * measured) == 0.0
    assert within(measured, 1.2001 * measured) == 0.0


def test_within_counts_float32_predictions_at_the_bound_inside():
    """float32 times 1.2x apart counted outside: the 1e-12 tolerance is below float32's rounding."""
    measured = np.array([0.1, 0.3, 0.7], np.float32)
    assert within(measured, (measured * np.float32(1.2)).astype(np.float32)) == 1.0
    assert within(pd.Series(measured, dtype="Float32"), pd.Series(measured * np.float32(0.8), dtype="Float32")) == 1.0
    assert within(measured, (measured * np.float32(1.201)).astype(np.float32)) == 0.0
    for dtype in ("category", "string", "object"):  # converted as before, not refused for their type
        assert within(pd.Series(["1.0", "2.0"] if dtype == "string" else [1.0, 2.0], dtype=dtype), [1.0, 2.0]) == 1.0


def test_all_metrics_names_its_top_k_key_by_the_whole_number():
    assert "top2_overlap" in all_metrics([1, 2, 3], [1, 2, 3], k=2.0)


def test_metrics_refuse_text_times_naming_the_side():
    with pytest.raises(GpuperfError, match="metrics: measured times must be numbers"):
        mape(["a", "2"], [1, 2])
    with pytest.raises(GpuperfError, match="metrics: predicted times must be numbers"):
        mape([1, 2], [1, "x"])


def test_top_k_overlap_does_not_depend_on_the_rows_order_where_predictions_tie():
    """Constant predictions scored 0.0, 0.6 or 1.0 by the order of the file's rows."""
    rng = np.random.default_rng(0)
    measured = rng.uniform(1.0, 2.0, 12)
    constant = np.full(12, 3.0)
    for order in (np.argsort(measured), np.argsort(-measured), rng.permutation(12)):
        assert top_k_overlap(measured[order], constant) == pytest.approx(5 / 12)  # as a random order
    # the 5th and 6th predicted tie (one of them measured among the 5 fastest): half a row each way
    measured = np.arange(1.0, 9.0)
    predicted = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 9.0, 5.0, 8.0])  # rows 4 and 6 tie for the 5th place
    assert top_k_overlap(measured, predicted) == pytest.approx((4 + 0.5) / 5)
    assert top_k_overlap(measured[::-1], predicted[::-1]) == pytest.approx((4 + 0.5) / 5)


def test_kendall_is_tau_b_with_ties():
    """tau-b = (concordant - discordant) / sqrt((n0 - n1)(n0 - n2)): 15 pairs, the predicted side ties 4
    of them; 11 concordant, 0 discordant: 11 / sqrt(15 * 11) = 0.8563 (tau-c would give 0.9167)."""
    assert kendall([1, 2, 3, 4, 5, 6], [1, 1, 1, 2, 2, 3]) == pytest.approx(11 / np.sqrt(15 * 11))


def test_a_prediction_of_zero_leaves_gmre_undefined_and_the_rest_defined():
    metrics = all_metrics([1.0, 2.0], [0.0, 2.0])
    assert math.isnan(metrics["gmre"]) and metrics["mape"] == pytest.approx(0.5)


def test_infinite_times_and_negative_bounds_are_refused():
    with pytest.raises(GpuperfError):
        mape([float("inf"), 2.0], [1.0, 2.0])
    with pytest.raises(GpuperfError):
        geometric_mean_relative_error([1.0, 2.0], [float("inf"), 2.0])
    with pytest.raises(GpuperfError):
        within([1.0, 2.0], [1.0, 2.0], low=-1.0, high=1.2)


def test_gmre_is_the_stricter_reading_of_a_geometric_mean_relative_error_as_the_docs_say():
    """exp(mean |ln(p / m)|) - 1 is never below the geometric mean of |p - m| / m (the docs compare it with
    the Loopy paper's 0.06-0.42 on that ground); a prediction 2x too fast is off by 1.0, not 0.5."""
    from gpuperf.cli.models_cli import METRICS_CAPTION
    from gpuperf.evaluation.report import METRIC_GLOSSARY

    assert geometric_mean_relative_error([2.0], [1.0]) == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    measured = rng.uniform(1, 2, 200)
    predicted = measured * np.exp(rng.normal(0, 0.4, 200))
    ape = np.abs(predicted - measured) / measured
    assert geometric_mean_relative_error(measured, predicted) > np.exp(np.mean(np.log(ape)))
    for text in (METRICS_CAPTION, METRIC_GLOSSARY):
        assert "exp(mean |ln(predicted / measured)|) - 1" in text and "kendall (tau-b)" in text


def test_kendall_is_tau_b_with_ties_as_documented():
    from scipy.stats import kendalltau

    measured, predicted = [1, 2, 2, 3, 4, 4], [1, 1, 2, 3, 3, 5]
    assert kendall(measured, predicted) == pytest.approx(kendalltau(measured, predicted, variant="b").statistic)
    assert kendall(measured, predicted) != pytest.approx(kendalltau(measured, predicted, variant="c").statistic)
