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
from gpuperf.decisions.pair_transfer import PairTransfer
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


def test_summary_ratio_figures_and_logistic_sign_at_one_half():
    """measured / predicted ratios 1.25, 0.5, 4.0: median 1.25 (mean 1.92); within [0.8, 1.25]: only
    1.25, its closed upper end (1/3). p_faster exactly 0.5 is not a "faster" vote: the 2.0 pair (faster)
    is wrong, the two slower pairs right: 2/3."""
    results = pd.DataFrame({"measured": [1.25, 0.5, 0.8], "predicted": [1.0, 1.0, 0.2],
                            "confidence": [0.5, 0.5, 0.5], "p_faster": [0.5, 0.5, 0.5]})
    for name in ("knn", "m5p", "constant"):
        results[name] = results["predicted"]
    row = advise_eval.summarise(results).iloc[0]
    assert row["median_ratio"] == pytest.approx(1.25)
    assert row["ratio_within_0.8_1.25"] == pytest.approx(1 / 3)
    assert row["sign_accuracy_logistic"] == pytest.approx(2 / 3)


def test_targets_other_than_gpus_are_one_device_class():
    classes = advise_eval.target_class(pd.Series(["gpu", "pocl", "opencl:0:0", "gpu"]))
    assert list(classes) == ["gpu", "device", "device", "gpu"]


def _fold_pairs() -> pd.DataFrame:
    """Family f: three inputs (n=1..3, one pair each) and two tuning configurations without input
    (c1, c2); the n=1 pair was also measured at configuration c1."""
    return pd.DataFrame({"family": ["f"] * 5, "input": ["n=1", "n=2", "n=3", "", ""],
                         "configuration": ["c1", "", "", "c1", "c2"]})


def test_input_folds_hold_out_each_input_once():
    """Three distinct inputs: three folds (at most FOLDS = 4), each testing one input pair."""
    folds = list(advise_eval._folds(_fold_pairs(), "inputs"))
    assert sorted(int(test[0]) for _, test in folds) == [0, 1, 2]
    assert all(len(test) == 1 and test[0] not in train for train, test in folds)


def test_configuration_folds_test_only_pairs_without_an_input():
    """Held-out configuration c1 also matches the n=1 pair's configuration: that pair leaves training
    but is not a test pair (it belongs to the input split)."""
    folds = list(advise_eval._folds(_fold_pairs(), "configurations"))
    tests = sorted(sorted(int(i) for i in test) for _, test in folds)
    assert tests == [[3], [4]]
    held_c1 = next(train for train, test in folds if list(test) == [3])
    assert 0 not in held_c1


class _Ones:
    """A model that predicts a speedup of 1 for every pair (to test what the evaluation adds around it)."""

    choice = ("all", "mean")

    def fit(self, pairs):
        return self

    def predict(self, pairs):
        from types import SimpleNamespace

        ones = np.ones(len(pairs))
        return SimpleNamespace(speedup=ones, knn=ones, m5p=ones, p_faster=ones / 2, confidence=ones,
                               model_speedup=None, measured_on=[()] * len(pairs))


def test_the_constant_predictor_is_the_geometric_mean_of_the_training_speedups():
    """Training speedups 2 and 0.5 (log2 1 and -1): constant exp2(0) = 1, not their mean 1.25."""
    pairs = pd.DataFrame({"optimization": "o", "target": "gpu", "family": ["a", "a", "b"],
                          "input": "", "configuration": "", "speedup": [2.0, 0.5, 3.0]})
    results = advise_eval.evaluate(pairs, "programs", _Ones)
    assert list(results["family"]) == ["a", "a", "b"]  # folds in order of the families
    assert results.loc[results["family"] == "b", "constant"].iloc[0] == pytest.approx(1.0)
    assert results.loc[results["family"] == "a", "constant"].iloc[0] == pytest.approx(3.0)


def test_held_out_inputs_are_compared_with_the_same_program_and_the_same_pair_at_other_sizes():
    """Family a's variant x speeds up 4x at n=2 and slows 2x at n=1; family b slows everything 4x;
    family c has one size only, so its pairs fall back to the constant."""
    rows = [("a", "n=1", "n=1,v=x", 0.5), ("a", "n=1", "n=1,v=y", 2.0), ("a", "n=2", "n=2,v=x", 4.0),
            ("a", "n=2", "n=2,v=z", 0.125), ("b", "n=1", "n=1,v=x", 0.25), ("b", "n=2", "n=2,v=x", 0.25),
            ("c", "n=1", "n=1,v=x", 2.0)]
    pairs = pd.DataFrame(rows, columns=["family", "input", "configuration", "speedup"]).assign(
        optimization="o", target="gpu", kernel="k", change="v: 0 -> 1", gpu="G")
    results = advise_eval.evaluate(pairs, "inputs", _Ones)
    assert len(results) == len(pairs)

    def pair(family: str, measured: float) -> pd.Series:  # (unique in this table where read below)
        return results[results["family"].eq(family) & results["measured"].eq(measured)].squeeze()

    x = pair("a", 0.5)
    assert x["same_pair"] == pytest.approx(4.0)  # the same variant at n=2
    assert x["same_program"] == pytest.approx(2 ** -0.5)  # family a's pairs at n=2: log2 2 and -3
    y = pair("a", 2.0)  # no y at another size: the same program's mean
    assert y["same_pair"] == y["same_program"] == pytest.approx(2 ** -0.5)
    c = pair("c", 2.0)  # no other pair of family c: the constant
    assert c["same_program"] == c["same_pair"] == pytest.approx(c["constant"])
    row = advise_eval.summarise(results).iloc[0]
    assert row["sign_accuracy_same_pair"] == pytest.approx(advise_eval._sign_accuracy(
        results["measured"], results["same_pair"]))


def test_summary_counts_exact_ties_and_gives_the_sign_accuracy_without_them():
    """A pair measured at exactly 1 counts as "not faster"; the summary also gives the accuracy without it."""
    results = pd.DataFrame({"measured": [1.0, 1.0, 1.2, 0.8], "predicted": [1.01, 0.99, 1.1, 1.1],
                            "confidence": 0.5, "p_faster": 0.5})
    for name in ("knn", "m5p", "constant"):
        results[name] = results["predicted"]
    row = advise_eval.summarise(results).iloc[0]
    assert row["sign_accuracy"] == pytest.approx(2 / 4)  # the tie predicted 1.01 and 0.8 predicted 1.1 wrong
    assert row["ties"] == 2
    assert row["sign_accuracy_no_ties"] == pytest.approx(1 / 2)


def test_the_repeat_agreement_compares_every_pair_of_both_runs_not_a_capped_sample(monkeypatch):
    """The repeat's 5 pairs of a spec capped at 2 pairs per GPU: all 5 are matched with the first run's."""
    import importlib.util
    from dataclasses import replace
    from pathlib import Path

    from gpuperf.decisions import optimizations, pairs

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_advise.py"
    module = importlib.util.spec_from_file_location("bench_advise_script", path)
    bench = importlib.util.module_from_spec(module)
    module.loader.exec_module(bench)
    entry = optimizations.load_optimizations()["unrolling"]
    spec = replace(next(s for s in entry.pairs if s.dataset == "advise_pairs_h200.csv.gz"), max_pairs_per_gpu=2)
    monkeypatch.setattr(optimizations, "load_optimizations", lambda: {entry.name: replace(entry, pairs=(spec,))})

    def capped_pairs(spec, optimization):  # every dataset: the same 5 pairs, one GPU, capped as the builder caps
        return pd.DataFrame({"optimization": optimization, "target": "gpu", "family": "f", "change": "c",
                             "configuration": [f"x={i}" for i in range(5)], "input": "n=1",
                             "speedup": 1.5}).head(spec.max_pairs_per_gpu)

    monkeypatch.setattr(pairs, "spec_pairs", capped_pairs)
    agreement = bench.repeat_agreement(None)
    assert agreement["pairs"].tolist() == [5]


def _regressed():
    """Two queries: the first predicted faster (log2 1), the second slower (log2 -1)."""
    return {"faster_share": np.array([0.8, 0.8]), "familiarity": np.array([1.0, 0.5]),
            "knn": np.array([1.0, -1.0]), "m5p": np.array([1.0, 1.0]), "p_faster": np.array([0.9, 0.9])}


def test_evidence_counts_neighbours_on_the_predicted_side():
    """80 % of the neighbours measured a speedup: consistent with "faster" (0.8), not with "slower"
    (0.2). Margin |log2 predicted|, then familiarity."""
    from gpuperf.decisions.speedup_models import _evidence

    np.testing.assert_allclose(_evidence(_regressed(), np.array([1.0, -1.0])), [[1, 0.8, 1.0], [1, 0.2, 0.5]])


def test_uncalibrated_confidence_is_agreement_and_consistency_times_familiarity():
    """Row 1: k-NN, M5P and the logistic vote all say faster (agreement 1), consistency 0.8,
    familiarity 1: (1 + 0.8) / 2 = 0.9. Row 2 predicted slower: only k-NN agrees (1/3), consistency
    0.2, familiarity 0.5: (1/3 + 0.2) / 2 * 0.5 = 2/15."""
    from gpuperf.decisions.speedup_models import _raw_confidence

    np.testing.assert_allclose(_raw_confidence(_regressed(), np.array([1.0, -1.0])), [0.9, 2 / 15])


def test_calibrated_confidence_is_scaled_down_only_below_the_familiarity_floor():
    """Calibrated P(right) = 0.75 (3 of 4 evidence rows right, base rate). Floor 0.5: a query of
    familiarity 0.9 keeps 0.75 (0.9 / 0.5 capped at 1); one of familiarity 0.25 gets 0.75 x 0.5."""
    from types import SimpleNamespace

    from sklearn.dummy import DummyClassifier

    def predict(X):
        return {"knn": np.array([1.0, 1.0]), "m5p": np.array([1.0, 1.0]), "mean": np.array([1.0, 1.0]),
                "p_faster": np.array([0.9, 0.9]), "familiarity": np.array([0.9, 0.25]),
                "near": np.array([[0], [0]]), "faster_share": np.array([1.0, 1.0])}

    model = SpeedupModel()
    model.choice, model.familiarity_floor = ("all", "knn"), 0.5
    model.regressions = SimpleNamespace(predict=predict)
    model.transfer = PairTransfer().fit(pd.DataFrame({"speedup": []}))  # no pair measured elsewhere
    model.calibrator = DummyClassifier(strategy="prior").fit(np.zeros((4, 3)), [True, True, True, False])
    queries = pd.DataFrame(0.0, index=range(2), columns=list(FEATURE_SETS["all"]))
    np.testing.assert_allclose(model.predict(queries).confidence, [0.75, 0.375])


def test_inner_cv_ties_go_to_the_lower_log2_error_and_the_floor_is_the_5th_percentile(monkeypatch):
    """Scores tie on sign accuracy 0.8: ("change", "m5p") has the lower log2 error (0.3 < 0.5) and
    is chosen. Its held-out familiarities 0.5 and 1.0: 5th percentile 0.5 + 0.05 x 0.5 = 0.525."""
    from gpuperf.decisions import speedup_models

    scores = pd.DataFrame({"feature_set": ["all", "change", "before"], "regression": ["knn", "m5p", "mean"],
                           "sign_accuracy": [0.8, 0.8, 0.7], "log2_mae": [0.5, 0.3, 0.1]})
    rows = np.array([[1.0, 1.0, 1.0, 1.0], [0.5, 0.5, 0.5, 0.0]])
    evidence = {(f, r): rows for f, r in zip(scores["feature_set"], scores["regression"])}
    monkeypatch.setattr(speedup_models, "inner_cv", lambda *args, **kwargs: (scores, evidence))
    monkeypatch.setattr(speedup_models, "family_evidence", lambda *args, **kwargs: np.zeros((0, 4)))
    model = SpeedupModel().fit(synthetic_pairs(40))
    assert model.choice == ("change", "m5p")
    assert model.familiarity_floor == pytest.approx(0.525)


def test_typical_distance_is_the_90th_percentile_of_nearest_neighbour_distances():
    """One feature at log1p positions 0, 1, ..., 8 and 19 (x = e^p - 1), one neighbour: nearest
    distances 1 (nine times) and 11; the 90th percentile (numpy's linear rule, position 8.1 of 9) is
    1 + 0.1 x 10 = 2, in standardised units: 2 / std(p) with var(p) = 565/10 - 5.5^2 = 26.25."""
    from gpuperf.decisions.speedup_models import _Regressions

    positions = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 19], dtype=float)
    X = np.expm1(positions)[:, None]
    y = np.where(np.arange(10) % 2 == 0, 1.0, -1.0)
    fitted = _Regressions.fit(X, y, neighbours=1, weights="distance")
    assert fitted.typical_distance == pytest.approx(2 / np.sqrt(26.25))


def test_m5p_prediction_is_kept_within_2x_below_the_nearest_pairs():
    """The two nearest training pairs of the query measured log2 speedups 2 and 2.5: M5P may go at
    most one log2 unit below the lower (1), however low its tree predicts (-5 here, a stub)."""
    from types import SimpleNamespace

    from gpuperf.decisions.speedup_models import _Regressions

    X = np.array([[1.0], [2.0], [50.0], [60.0]])
    y = np.array([2.0, 2.5, -3.0, 3.0])
    fitted = _Regressions.fit(X, y, neighbours=2, weights="distance")
    fitted.m5p = SimpleNamespace(predict=lambda Z: np.full(len(Z), -5.0))
    regressed = fitted.predict(np.array([[1.5]]))
    assert set(y[regressed["near"][0]]) == {2.0, 2.5}
    assert regressed["m5p"][0] == pytest.approx(1.0)


def test_gpu_folds_hold_out_each_gpu_once_and_skip_device_pairs():
    """Three GPUs: three folds, each testing one GPU's pairs and training on the others'; pairs of a
    measured device (one device: nothing to hold it out against) get no fold."""
    pairs = pd.DataFrame({"gpu": ["A100", "V100", "A100", "K20"], "target": "gpu", "family": "f",
                          "input": "", "configuration": ["c1", "c1", "c2", "c1"]})
    folds = list(advise_eval._folds(pairs, "gpus"))
    assert [sorted(test.tolist()) for _, test in folds] == [[0, 2], [1], [3]]
    assert all(set(train) == set(range(4)) - set(test) for train, test in folds)
    assert list(advise_eval._folds(pairs.assign(target="device:pocl"), "gpus")) == []


def test_summary_sign_accuracies_read_each_models_own_column_and_log2_errors_average():
    results = pd.DataFrame({
        "measured": [2.0, 0.5, 1.0, 0.8], "predicted": [1.5, 0.8, 1.2, 1.25],
        "knn": [1.5] * 4, "m5p": [0.5] * 4, "constant": [1.1, 1.1, 1.1, 4.0],
        "model_speedup": [0.5, 2.0, 2.0, 2.0], "measured_elsewhere": [True, False, False, False],
        "confidence": [0.9] * 4, "p_faster": [0.6] * 4,
    })
    row = advise_eval.summarise(results).iloc[0]
    # Faster (> 1, a speedup of exactly 1 is not): measured T F F F; predicted T F T T; k-NN all T;
    # M5P all F; the models' own speedups F T T T.
    assert (row["sign_accuracy"], row["sign_accuracy_knn"], row["sign_accuracy_m5p"]) == (0.5, 0.25, 0.75)
    assert row["sign_accuracy_models"] == 0.0 and row["elsewhere_share"] == 0.25
    ratios = np.array([2 / 1.5, 0.5 / 0.8, 1 / 1.2, 0.8 / 1.25])
    assert row["log2_mae"] == pytest.approx(np.mean(np.abs(np.log2(ratios))))  # 0.5
    assert row["log2_mae_constant"] == pytest.approx(np.mean(np.abs(np.log2([2 / 1.1, 0.5 / 1.1, 1 / 1.1, 0.8 / 4]))))


def test_without_selection_the_speedup_is_the_geometric_mean_of_knn_and_m5p():
    from gpuperf.decisions.advice_features import MODEL_FEATURES
    from gpuperf.decisions.speedup_models import SpeedupModel

    rng = np.random.default_rng(0)
    pairs = pd.DataFrame(rng.uniform(1, 100, size=(40, len(MODEL_FEATURES))), columns=list(MODEL_FEATURES))
    pairs["speedup"] = np.exp2(rng.normal(0, 1, 40))
    pairs["family"], pairs["input"], pairs["configuration"] = "f", "n=1", ""
    queries = pd.DataFrame(rng.uniform(1, 100, size=(5, len(MODEL_FEATURES))), columns=list(MODEL_FEATURES))
    predicted = SpeedupModel(select=False).fit(pairs).predict(queries)
    assert not np.allclose(predicted.knn, predicted.m5p)
    np.testing.assert_allclose(predicted.speedup, np.sqrt(predicted.knn * predicted.m5p), rtol=1e-12)


@pytest.mark.filterwarnings("error")
def test_a_pair_table_whose_input_column_is_all_empty_is_read_as_text_without_a_warning():
    """A CSV column of empty cells is float NaN: filling it with "" warned Pandas4Warning (an error in pandas 4)."""
    import io

    pairs = pd.read_csv(io.StringIO("family,kernel,change,gpu,input,configuration,target\n"
                                    "f1,k,c,A,,b=1,gpu\nf2,k,c,A,,b=2,gpu\nf1,k,c,A,,b=2,gpu\n"))
    assert pairs["input"].dtype == float
    folds = [(list(train), list(test)) for train, test in advise_eval._folds(pairs, "configurations")]
    assert folds == [([0, 2], [1]), ([0, 1], [2]), ([1, 2], [0])]
    assert list(advise_eval.variant_keys(pairs)) == ["f1|k|c|A|b=1", "f2|k|c|A|b=2", "f1|k|c|A|b=2"]
    assert list(pair_groups(pairs)) == ["f1|b=1", "f2|b=2", "f1|b=2"]
