"""The advisor's plain transfer: a pair measured on other GPUs predicts the same pair on a new one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpuperf.decisions.gpu_similarity import prior_weights
from gpuperf.decisions.pair_transfer import PairTransfer, pair_keys

CONFIG = "n=4096,m=4096,local_y=2"


def _pairs(rows: list[tuple[str, str, float]], change: str = "local_x: 16 -> 32") -> pd.DataFrame:
    """Pairs of kernel k, one per (configuration, GPU, speedup)."""
    return pd.DataFrame({"kernel": "k", "change": change, "configuration": [r[0] for r in rows], "input": "",
                         "gpu": [r[1] for r in rows], "speedup": [r[2] for r in rows]})


def test_the_same_pair_is_predicted_from_its_speedups_weighted_by_gpu_likeness():
    transfer = PairTransfer().fit(_pairs([(CONFIG, "H100 SXM", 2.0), (CONFIG, "RTX 3090", 0.5)]))
    assert transfer.calibrator is not None  # each GPU's measurement held out against the other's
    queries = _pairs([(CONFIG, "H200", np.nan), (CONFIG, None, np.nan)])
    result = transfer.predict(queries)
    weights = prior_weights("H200", ["H100 SXM", "RTX 3090"])
    assert weights[0] > weights[1]  # the H100 is the likelier GPU
    np.testing.assert_allclose(result.log2_speedup, [weights @ [1.0, -1.0], 0.0])  # no GPU: equal weights
    assert result.gpus == [("H100 SXM", "RTX 3090")] * 2


def test_a_pair_matches_whatever_order_and_column_name_its_settings():
    """The same settings written in another order, and with the sizes as the input, are the same pair;
    another change, another kernel or another setting is not."""
    transfer = PairTransfer().fit(_pairs([(CONFIG, "H100 SXM", 2.0), ("c=1", "H100 SXM", 2.0), ("c=1", "H200", 1.5)]))
    queries = pd.DataFrame({
        "kernel": ["k", "k", "k", "other", "k"],
        "change": ["local_x: 16 -> 32", "local_x: 16 -> 32", "local_x: 8 -> 32", "local_x: 16 -> 32",
                   "local_x: 16 -> 32"],
        "configuration": ["local_y=2,m=4096,n=4096", "local_y=2", CONFIG, CONFIG, "n=4096,m=4096,local_y=4"],
        "input": ["", "n=4096,m=4096", "", "", ""], "gpu": "H200"})
    found = ~np.isnan(transfer.predict(queries).log2_speedup)
    assert list(found) == [True, True, False, False, False]


def test_queries_without_the_pair_identity_are_left_to_the_models():
    transfer = PairTransfer().fit(_pairs([(CONFIG, "H100 SXM", 2.0), (CONFIG, "H200", 1.5)]))
    assert pair_keys(pd.DataFrame({"kernel": ["k"]})) is None
    result = transfer.predict(pd.DataFrame({"threads": [1.0]}))
    assert np.isnan(result.log2_speedup).all() and result.gpus == [()]


def test_confidence_is_calibrated_on_pairs_measured_on_several_gpus_each_left_out():
    """Ten configurations, each measured on three GPUs that agree on its sign: every held-out GPU's
    transfer was right, so a transferred sign gets confidence 1 (the base rate of the held-out rows)."""
    rows = [(f"c={c}", gpu, 1.5 if c % 2 else 0.7) for c in range(10)
            for gpu in ("H100 SXM", "A100 PCIe 40GB", "RTX 3090")]
    transfer = PairTransfer().fit(_pairs(rows))
    assert transfer._held_out_evidence().shape == (30, 4)
    result = transfer.predict(_pairs([("c=3", "H200", np.nan), ("c=4", "H200", np.nan)]))
    np.testing.assert_allclose(result.confidence, [1.0, 1.0])
    np.testing.assert_allclose(result.log2_speedup, np.log2([1.5, 0.7]))


def test_nothing_is_transferred_without_pairs_measured_on_several_gpus_to_check_it():
    """Every pair measured on one GPU only: no held-out check of transfer, so the models predict."""
    transfer = PairTransfer().fit(_pairs([(CONFIG, "H100 SXM", 2.0), ("c=1", "RTX 3090", 0.5)]))
    assert transfer.calibrator is None
    result = transfer.predict(_pairs([(CONFIG, "H200", np.nan)]))
    assert np.isnan(result.log2_speedup).all() and result.gpus == [()]


def test_the_speedup_model_predicts_a_pair_measured_elsewhere_from_that_measurement():
    """A speedup model on synthetic pairs measured on the H100, pair 0 also on the RTX 3090 (a check of
    transfer): a query that is pair 5, asked for the H200, gets the H100's measured speedup and keeps
    the models' own in ``model_speedup``; a query without identity gets the models' prediction."""
    from gpuperf.decisions.advice_features import MODEL_FEATURES
    from gpuperf.decisions.speedup_models import SpeedupModel

    rng = np.random.default_rng(0)
    pairs = pd.DataFrame(rng.uniform(1, 100, size=(60, len(MODEL_FEATURES))), columns=list(MODEL_FEATURES))
    pairs = pairs.assign(kernel="k", change="c", input="", gpu="H100 SXM", family="f",
                         configuration=[f"i={i}" for i in range(60)], speedup=np.exp2(rng.normal(0, 0.5, 60)))
    pairs = pd.concat([pairs, pairs.iloc[[0]].assign(gpu="RTX 3090")], ignore_index=True)
    model = SpeedupModel(select=False).fit(pairs)
    query = pairs.iloc[[5]].assign(gpu="H200")
    prediction = model.predict(query)
    assert prediction.speedup[0] == pytest.approx(pairs["speedup"].iloc[5])
    assert prediction.measured_on == [("H100 SXM",)]
    anonymous = model.predict(query.drop(columns=["kernel", "change", "configuration", "input"]))
    assert anonymous.measured_on == [()] and anonymous.speedup[0] == pytest.approx(prediction.model_speedup[0])


@pytest.mark.filterwarnings("error")
def test_pair_keys_of_a_table_whose_change_column_is_all_empty_are_text_without_a_warning():
    """A CSV column of empty cells is float NaN: filling it with "" warned Pandas4Warning (an error in pandas 4)."""
    frame = pd.DataFrame({"kernel": ["k", "k"], "change": [np.nan, np.nan], "configuration": ["b=1", "b=2"],
                          "input": [np.nan, "n=4"]})
    assert list(pair_keys(frame)) == ["k||b=1", "k||b=2,n=4"]


def test_a_pair_the_query_gpu_measured_itself_is_its_own_measurement_not_a_mix_with_other_gpus():
    """The H200 measured the pair at 0.5x and the H100 at 8x: asked for the H200 (by any of its names), the
    answer is the H200's own 0.5x, marked as measured here, confidence the share of its own on that side;
    asked for another GPU, the two are still mixed by likeness. Without a calibration (one pair on two GPUs
    would give one; here each pair on one GPU) the own measurement still wins; another GPU gets nothing."""
    transfer = PairTransfer().fit(_pairs([(CONFIG, "H100 SXM", 8.0), (CONFIG, "H200", 0.5)]))
    own = transfer.predict(_pairs([(CONFIG, "H200", np.nan), (CONFIG, "NVIDIA H200", np.nan),
                                   (CONFIG, "A100 PCIe 40GB", np.nan)]))
    np.testing.assert_allclose(own.log2_speedup[:2], [-1.0, -1.0])
    np.testing.assert_allclose(own.confidence[:2], [1.0, 1.0])
    assert list(own.here) == [True, True, False] and own.gpus[:2] == [("H200",), ("H200",)]
    weights = prior_weights("A100 PCIe 40GB", ["H100 SXM", "H200"])
    assert own.log2_speedup[2] == pytest.approx(weights @ [3.0, -1.0]) and own.gpus[2] == ("H100 SXM", "H200")

    lone = PairTransfer().fit(_pairs([(CONFIG, "H200", 0.5), ("c=1", "H100 SXM", 2.0)]))
    assert lone.calibrator is None
    result = lone.predict(_pairs([(CONFIG, "H200", np.nan), ("c=1", "H200", np.nan)]))
    np.testing.assert_allclose(result.log2_speedup, [-1.0, np.nan])
    assert list(result.here) == [True, False] and result.gpus == [("H200",), ()]


def test_advise_says_a_suggestion_was_measured_on_this_gpu():
    """The explanation of an own measurement says so, in its summary, meanings and ``measured_on_this_gpu``."""
    from dataclasses import replace

    from gpuperf.decisions.advisor import meanings
    from gpuperf.decisions.speedup_models import Prediction

    one = np.array([0.5])
    prediction = Prediction(speedup=one, knn=one, m5p=one, p_faster=np.array([0.3]), confidence=np.array([1.0]),
                            familiarity=np.array([1.0]), neighbours=[np.array([0])], model_speedup=np.array([1.9]),
                            measured_on=[("H200",)], measured_here=np.array([True]))
    assert meanings(prediction, 0, True)["confidence"] == (
        "not a prediction: the share of this GPU's own measurements of this very pair on the measured side "
        "(0.50x: not faster)")
    elsewhere = replace(prediction, measured_here=np.array([False]))
    assert meanings(elsewhere, 0, True)["confidence"].startswith("how often predictions like this one")
