"""What the optimization changes as features, model choice by inner CV, calibrated confidence, abstention."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from gpuperf.decisions import advise_eval
from gpuperf.decisions.advice_features import (
    ADVICE_FEATURES, CHANGE_FEATURES, MODEL_FEATURES, kernel_change_features,
)
from gpuperf.decisions.speedup_models import FEATURE_SETS, SpeedupModel, inner_cv, pair_groups
from gpuperf.errors import GpuperfError

STENCIL = "stencil2d[local_x=16,local_y=4,outputs_y=1,prefetch={prefetch},unroll=1]"


def synthetic_pairs(rows: int = 160, seed: int = 0, noisy_share: float = 0.0) -> pd.DataFrame:
    """Pairs whose speedup is set by what the optimization changes (two kinds of change, 2x apart in
    work-group size), not by the before kernel: kind 1 speeds up 1.6x, kind 2 slows down to 0.6x.
    Before features are random. With ``noisy_share``, that share of pairs (threads > 1e6) has a random
    speedup around 1 instead."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.uniform(1, 100, size=(rows, len(ADVICE_FEATURES))), columns=list(ADVICE_FEATURES))
    frame[list(CHANGE_FEATURES)] = 0.0
    kind = rng.integers(1, 3, size=rows)
    frame["change_work_group_size"] = kind.astype(float)
    speedup = np.where(kind == 1, 1.6, 0.6) * np.exp2(rng.normal(0, 0.05, rows))
    noisy = rng.random(rows) < noisy_share
    frame.loc[noisy, "threads"] = rng.uniform(2e6, 4e6, noisy.sum())
    frame.loc[~noisy, "threads"] = rng.uniform(1e3, 1e4, (~noisy).sum())
    speedup[noisy] = np.exp2(rng.normal(0, 0.3, noisy.sum()))
    for name in set(MODEL_FEATURES) - set(frame):
        frame[name] = math.nan
    frame["speedup"] = speedup
    frame["family"] = np.where(np.arange(rows) % 2 == 0, "f1", "f2")
    frame["input"] = "n=" + (np.arange(rows) % 8).astype(str)
    frame["configuration"] = ""
    frame["noisy"] = noisy
    return frame


def test_change_features_of_a_variant_match_its_training_pairs():
    from gpuperf.decisions.optimizations import load_optimizations
    from gpuperf.decisions.pairs import spec_pairs
    from gpuperf.kernels import get_kernel

    spec = [s for s in load_optimizations()["local_memory_prefetch"].pairs if s.dataset.endswith(".csv.gz")][0]
    pairs = spec_pairs(spec, "local_memory_prefetch")
    row = pairs[(pairs["kernel"] == "stencil2d") & (pairs["input"] == "n=512,m=512")
                & pairs["configuration"].str.contains("local_x=16,local_y=4,outputs_y=1,unroll=1")].iloc[0]
    before, after = (get_kernel(STENCIL.format(prefetch=p)) for p in (0, 1))
    change = kernel_change_features(before, after, {"n": 512, "m": 512})
    assert change["change_local_loads_per_thread"] > 0 and change["change_global_loads_per_thread"] < 0
    for name in CHANGE_FEATURES:
        assert change[name] == pytest.approx(row[name], abs=1e-9, nan_ok=True), name


def test_larger_work_group_pairs_tell_the_two_changes_apart():
    from gpuperf.decisions.optimizations import load_optimizations
    from gpuperf.decisions.pairs import spec_pairs

    entry = load_optimizations()["larger_work_groups"]
    pairs = pd.concat([spec_pairs(s, entry.name) for s in entry.pairs if s.dataset.endswith(".csv.gz")])
    by_change = pairs.groupby("change")["change_work_group_size"].agg(["min", "max"])
    # 16 -> 32 work-items per row roughly doubles the group, 4 -> 16 rows quadruples it
    assert by_change.loc["local_x: 16 -> 32", "max"] < by_change.loc["local_y: 4 -> 16", "min"]
    assert (by_change["min"] > 0).all()
    assert (pairs["change_flops_per_thread"] == 0).all()


def test_inner_cv_chooses_features_that_carry_the_change():
    pairs = synthetic_pairs()
    scores, evidence = inner_cv(pairs)
    best_per_set = scores.groupby("feature_set")["sign_accuracy"].max()
    assert best_per_set["change"] == pytest.approx(1.0)
    assert best_per_set["before"] < 0.75  # the before kernel alone cannot tell the two changes apart
    model = SpeedupModel().fit(pairs)
    assert "change_work_group_size" in FEATURE_SETS[model.choice[0]]
    test = synthetic_pairs(seed=1)
    predicted = model.predict(test)
    assert ((predicted.speedup > 1) == (test["speedup"] > 1)).mean() == 1.0
    assert set(evidence) == {(s, r) for s, r in zip(scores["feature_set"], scores["regression"])}


def test_confidence_is_calibrated_lower_where_pairs_are_noise():
    pairs = synthetic_pairs(rows=240, noisy_share=0.5)
    model = SpeedupModel().fit(pairs)
    assert model.calibrator is not None
    test = synthetic_pairs(rows=240, seed=2, noisy_share=0.5)
    predicted = model.predict(test)
    noisy = test["noisy"].to_numpy()
    assert predicted.confidence[~noisy].mean() > predicted.confidence[noisy].mean() + 0.2
    confident = predicted.confidence >= 0.9
    right = (predicted.speedup > 1) == (test["speedup"].to_numpy() > 1)
    assert confident.any() and right[confident].mean() >= 0.9
    assert right.mean() < 0.9  # the all-pairs figure stays lower: abstaining is what lifts it


def test_without_selection_the_defaults_are_used():
    model = SpeedupModel(select=False).fit(synthetic_pairs())
    assert model.choice == ("all", "mean") and model.calibrator is None and model.scores.empty


def test_pair_groups_are_program_and_input():
    pairs = pd.DataFrame({"family": ["a", "a", "b"], "input": ["n=1", "", None], "configuration": ["x", "y", "z"]})
    assert list(pair_groups(pairs)) == ["a|n=1", "a|y", "b|z"]


def test_summary_reports_all_pairs_noise_band_and_confident_figures():
    results = pd.DataFrame({
        "measured": [2.0, 0.5, 1.05, 0.97, 1.5],
        "predicted": [1.5, 0.8, 0.9, 0.95, 0.7],
        "confidence": [0.95, 0.92, 0.8, 0.5, 0.6],
    })
    for name in ("knn", "m5p", "constant"):
        results[name] = results["predicted"]
    results["p_faster"] = 0.5
    row = advise_eval.summarise(results).iloc[0]
    assert row["sign_accuracy"] == pytest.approx(3 / 5)  # 1.05 vs 0.9 and 1.5 vs 0.7 wrong
    assert row["clear_share"] == pytest.approx(3 / 5)  # 1.05 and 0.97 lie within the +-10 % band
    assert row["sign_accuracy_clear"] == pytest.approx(2 / 3)
    assert row["confident_share"] == pytest.approx(2 / 5) and row["sign_accuracy_confident"] == 1.0
    assert row["confident_share_0.75"] == pytest.approx(3 / 5)
    assert row["sign_accuracy_confident_0.75"] == pytest.approx(2 / 3)


def test_repeatability_counts_sign_agreement():
    keys = {"optimization": "o", "target": "t", "family": "f", "change": "c", "configuration": ""}
    first = pd.DataFrame([{**keys, "input": i, "speedup": s} for i, s in zip("abc", (1.2, 0.8, 2.0))])
    second = pd.DataFrame([{**keys, "input": i, "speedup": s} for i, s in zip("abd", (1.1, 1.6, 2.0))])
    row = advise_eval.repeatability(first, second).iloc[0]
    assert row["pairs"] == 2 and row["sign_agreement"] == pytest.approx(0.5)
    assert row["median_factor"] == pytest.approx(np.median([1.2 / 1.1, 2.0]))
    with pytest.raises(GpuperfError, match="no pair in common"):
        advise_eval.repeatability(first, second.assign(family="g"))


def test_advisor_abstains_below_min_confidence():
    from dataclasses import replace

    from gpuperf.datasets.bundled import data_dir
    from gpuperf.decisions.advice_features import kernel_features
    from gpuperf.decisions.advisor import advise
    from gpuperf.decisions.optimizations import load_optimizations
    from gpuperf.decisions.pairs import DEVICE_TARGET
    from gpuperf.kernels import get_kernel

    entry = load_optimizations()["unrolling"]
    entry = replace(entry, pairs=tuple(s for s in entry.pairs if s.dataset.endswith(".csv.gz")))
    kernel = get_kernel("stencil2d[local_x=16,local_y=4,outputs_y=2,prefetch=0,unroll=1]")
    sizes = {"n": 512, "m": 512}
    target = DEVICE_TARGET + pd.read_csv(data_dir() / "advise_pairs_pocl.csv.gz")["gpu"][0]
    features = kernel_features(kernel, sizes)

    def ask(**options):
        return advise(features, target, kernel=kernel, sizes=sizes, entries=[entry], **options)

    everything = ask(threshold=1e-9, min_confidence=0.0)
    (assessed,) = everything.assessed
    assert everything.suggestions == [assessed]
    assert assessed.explanation["chosen_model"]["feature_set"] in FEATURE_SETS
    above = min(1.0, assessed.confidence + 1e-6)
    abstained = ask(threshold=1e-9, min_confidence=above)
    assert abstained.suggestions == [] and abstained.assessed[0].confidence == pytest.approx(assessed.confidence)
    assert "abstained: predicted" in dict(abstained.skipped)["unrolling"]
    with pytest.raises(GpuperfError, match="describe no kernel the models know"):
        advise({"bogus": 1.0}, target, entries=[entry])
    with pytest.raises(GpuperfError, match="min-confidence"):
        ask(min_confidence=1.5)


def test_saved_model_keeps_choice_and_calibration():
    from gpuperf.decisions.advisor import fitted_model

    pairs = synthetic_pairs(rows=120, noisy_share=0.3)
    fresh = fitted_model(pairs)
    loaded = fitted_model(pairs)  # from the cache written by the first call
    assert loaded.choice == fresh.choice and loaded.calibrator is not None
    test = synthetic_pairs(rows=40, seed=3, noisy_share=0.3)
    a, b = fresh.predict(test), loaded.predict(test)
    assert np.allclose(a.speedup, b.speedup) and np.allclose(a.confidence, b.confidence)
