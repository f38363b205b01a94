"""Hand-worked values that pin the decisions code where mutation testing found it unchecked."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from gpuperf.decisions.cross_kernel import leave_one_kernel_out
from gpuperf.decisions.program_features import FEATURE_SOURCES


# -- cross-kernel exploration ----------------------------------------------------------------------
def test_parameter_matched_order_is_judged_at_90_percent_of_the_best():
    # Kernel a ranks p=1 first (its best); kernel b's p=1 runs at 1/1.08 = 0.926 of b's best (p=2):
    # past 90 % at the first evaluation, short of 95 %.
    table = pd.DataFrame({"kernel": list("aaabbb"), "p": [1, 2, 3] * 2, "f": [1.0, 2.0, 3.0] * 2,
                          "time_s": [1.0, 2.0, 4.0, 1.08, 1.0, 2.0]})
    result = leave_one_kernel_out(table, features=("f",), parameters=("p",)).set_index("kernel")
    assert result.loc["b", "parameters_evals_to_90"] == 1
    assert result.loc["a", "parameters_evals_to_90"] == 2  # b ranks p=2 first: a's 0.5, then p=1
    assert result.loc["b", "random_evals_to_90"] == pytest.approx(4 / 3)  # (3 + 1) / (2 good + 1)
    assert result.loc["b", "top_predicted_performance"] == pytest.approx(1 / 1.08)


# -- feature sources by formula --------------------------------------------------------------------
def test_pnpoly_features_by_hand():
    # 20e6 points, 600 vertices; 256 threads a block, 4 points a thread.
    row = FEATURE_SOURCES["kt_pnpoly"](pd.DataFrame({"block_size_x": [256], "tile_size": [4]})).iloc[0]
    assert row["threads"] == 5_000_000 and row["work_groups"] == 19531.25 and row["work_group_size"] == 256
    assert (row["global_loads_per_thread"], row["global_stores_per_thread"]) == (8, 4)
    assert row["flops_per_thread"] == 8 * 600 * 4 and row["loop_iterations_per_thread"] == 600 * 4
    assert math.isnan(row["cache_lines_per_warp_access"])


def test_convolution_features_by_hand_with_and_without_shared_memory():
    # 4096^2 outputs, 15 x 15 filter (halo 14); 16 x 8 threads, 2 x 1 outputs each: the staged tile is
    # (16*2 + 14) x (8*1 + 14) = 46 x 22 = 1012 floats, 1012 / 128 loads per thread.
    rows = pd.DataFrame({"block_size_x": [16, 16], "block_size_y": [8, 8], "tile_size_x": [2, 2],
                         "tile_size_y": [1, 1], "use_shmem": [1, 0]})
    shared, direct = (r for _, r in FEATURE_SOURCES["kt_convolution"](rows).iterrows())
    assert shared["threads"] == 4096 * 4096 / 2 and shared["work_groups"] == 65536 and shared["work_group_size"] == 128
    assert shared["global_loads_per_thread"] == 1012 / 128 and shared["local_stores_per_thread"] == 1012 / 128
    assert shared["local_memory_bytes"] == 4 * 1012 and shared["local_loads_per_thread"] == 225 * 2
    assert (shared["flops_per_thread"], shared["barriers_per_thread"]) == (900, 1)
    # 16 lanes of a row read 64 bytes: one 128-byte line (2 per 32 lanes), two 32-byte sectors (4 per 32).
    assert (shared["cache_lines_per_warp_access"], shared["sectors_per_warp_access"]) == (2.0, 4.0)
    assert direct["global_loads_per_thread"] == 225 * 2 and direct["local_memory_bytes"] == 0
    # Without a use_shmem column the kernel stages its tile.
    absent = FEATURE_SOURCES["kt_convolution"](rows.drop(columns="use_shmem")).iloc[1]
    assert absent["global_loads_per_thread"] == 1012 / 128
    # 48 threads a row: a warp's 32 lanes read 128 bytes of it, one line (not 192 bytes over 48 threads).
    wide = FEATURE_SOURCES["kt_convolution"](rows.assign(block_size_x=48)).iloc[0]
    assert (wide["cache_lines_per_warp_access"], wide["sectors_per_warp_access"]) == (1.0, 4.0)


def test_clblast_gemm_features_by_hand():
    # M = N = K = 4096; 64 x 64 tiles of C per 16 x 16 threads (4 x 4 outputs each), KWG 32, A staged.
    rows = pd.DataFrame({"MWG": [64], "NWG": [64], "KWG": [32], "MDIMC": [16], "NDIMC": [16], "SA": [1], "SB": [0]})
    row = FEATURE_SOURCES["clblast_gemm"](rows).iloc[0]
    assert row["threads"] == 4096 * 4096 / 16 and row["work_groups"] == 4096 and row["work_group_size"] == 256
    assert row["global_loads_per_thread"] == 4096 * 4 / 16 + 4096 * 4  # A cooperatively staged, B direct
    assert row["global_stores_per_thread"] == 16 and row["local_loads_per_thread"] == 4096 * 4
    assert row["local_stores_per_thread"] == 4096 * 4 / 16 and row["local_memory_bytes"] == 4 * 32 * 64
    assert row["flops_per_thread"] == 2 * 4096 * 16 and row["barriers_per_thread"] == 2 * 4096 / 32
    assert row["loop_iterations_per_thread"] == 4096 * 16


def test_feature_columns_a_table_has_only_some_of_are_taken_and_the_rest_left_unknown():
    row = FEATURE_SOURCES["columns"](pd.DataFrame({"threads": ["64"], "work_groups": [2]})).iloc[0]
    assert (row["threads"], row["work_groups"]) == (64, 2) and math.isnan(row["flops_per_thread"])


def test_the_k40c_trace_names_stand_for_the_amaris_programs_the_papers_describe():
    from gpuperf.decisions.program_features import amaris_kernel

    names = {alias: amaris_kernel(alias).name for alias in (
        "matMul_gpu_uncoalesced", "matMul_gpu_sharedmem_uncoalesced", "matMul_gpu_sharedmem",
        "matrix_sum_normal", "matrix_sum_coalesced")}
    assert names == {"matMul_gpu_uncoalesced": "MMGU", "matMul_gpu_sharedmem_uncoalesced": "MMSU",
                     "matMul_gpu_sharedmem": "MMSC", "matrix_sum_normal": "MAU", "matrix_sum_coalesced": "MAC"}


# -- explorers ------------------------------------------------------------------------------------
def test_before_anything_ran_a_configuration_every_gpu_failed_is_believed_a_thousand_times_slower():
    from gpuperf.decisions.explorers import TransferGuided

    # Two other GPUs: configuration 0 is the first's best and half the second's; both failed 1.
    search = TransferGuided(np.array([[0.0], [1.0]]), np.array([[1.0, 0.5], [0.0, 0.0]]))
    nothing = np.full(2, np.nan)
    assert search.believed_time([], nothing, 0) == pytest.approx(math.sqrt(2))  # exp(-(log 1 + log 0.5) / 2)
    assert search.believed_time([], nothing, 1) == pytest.approx(1000.0)  # a failure counts as 1e-3


def test_the_portfolio_took_as_many_steps_as_the_measurement_that_covered_the_last_gpu():
    from gpuperf.decisions.explorers import TransferGuided

    # Configuration 0 covers the first other GPU, 1 the second, 2 neither.
    search = TransferGuided(np.array([[0.0], [1.0], [2.0]]), np.array([[1.0, 0.5], [0.5, 1.0], [0.2, 0.2]]))
    assert search.portfolio_steps([0, 1, 2]) == 2
    assert search.portfolio_steps([2, 0, 1]) == 3
    assert search.portfolio_steps([2, 0]) == 2  # not covered yet: every measurement so far


# -- exploration ----------------------------------------------------------------------------------
def tiny_space() -> "Space":  # noqa: F821 - imported inside, as the module's other tests do
    from gpuperf.decisions.space import Space

    configs = pd.DataFrame({"x": [1, 2, 3, 4]})
    return Space(["x"], configs, np.array([4.0, 2.0, 1.0, 1.05]), "tiny")


@pytest.mark.parametrize("budget", [0, -3])
def test_explore_refuses_a_budget_of_no_evaluations(budget):
    from gpuperf.decisions.exploration import explore
    from gpuperf.errors import GpuperfError

    with pytest.raises(GpuperfError, match=f"budget {budget} must be at least 1 evaluation"):
        explore(tiny_space(), budget=budget)


@pytest.mark.parametrize("model", ["rf", "gbt"])
def test_a_surrogate_fits_alike_whatever_order_the_rows_come_in(model):
    from gpuperf.decisions.surrogates import Surrogate

    rng = np.random.default_rng(1)
    features = rng.uniform(size=(12, 2))
    values = np.sin(6 * features[:, 0]) + features[:, 1]
    shuffled = rng.permutation(12)
    queries = rng.uniform(size=(5, 2))
    first = Surrogate(model, seed=3).fit(features, values).predict(queries)
    second = Surrogate(model, seed=3).fit(features[shuffled], values[shuffled]).predict(queries)
    np.testing.assert_allclose(first[0], second[0])
    np.testing.assert_allclose(first[1], second[1])


def test_transfer_improvement_is_the_gain_over_each_gpus_best_measured_configuration():
    from gpuperf.decisions.explorers import TransferGuided

    search = TransferGuided(np.array([[0.0], [1.0], [2.0]]), np.array([[1.0, 0.5], [0.5, 1.0], [0.25, 0.25]]))
    # Measured 0 and 2; the new GPU's 1 and sqrt(8) lie log 2 / 2 from either GPU's shape (0, -log 4)
    # and (0, -log 2), so both keep weight 1/2. Best measured: 1 on the first GPU, 0.5 on the second;
    # only configuration 1 gains (1 / 0.5 - 1 = 1 on the second GPU).
    times = np.array([1.0, np.nan, math.sqrt(8)])
    np.testing.assert_allclose(search.gpu_weights([0, 2], times), [0.5, 0.5])
    np.testing.assert_allclose(search.transfer_improvement([0, 2], times), [0.0, 0.5, 0.0], atol=1e-12)


# -- speedup models -------------------------------------------------------------------------------
def test_a_speedup_of_exactly_one_is_not_counted_faster_by_the_sign_model():
    from gpuperf.decisions.advice_features import ADVICE_FEATURES, MODEL_FEATURES
    from gpuperf.decisions.speedup_models import SpeedupModel

    rng = np.random.default_rng(0)
    pairs = pd.DataFrame(rng.uniform(1, 100, size=(12, len(ADVICE_FEATURES))), columns=list(ADVICE_FEATURES))
    for name in set(MODEL_FEATURES) - set(pairs):
        pairs[name] = math.nan
    pairs["speedup"] = [1.0, 0.5] * 6  # no pair is faster: P(speedup > 1) is 0 everywhere
    pairs["family"], pairs["input"], pairs["configuration"] = "f", "n=1", ""
    prediction = SpeedupModel(select=False).fit(pairs).predict(pairs.iloc[:3])
    assert prediction.p_faster.tolist() == [0.0, 0.0, 0.0]


# -- advisor --------------------------------------------------------------------------------------
def test_a_min_confidence_of_one_is_accepted_and_one_beyond_it_refused():
    from gpuperf.decisions.advisor import advise
    from gpuperf.errors import GpuperfError

    assert advise({"threads": 64.0}, entries=[], min_confidence=1.0).suggestions == []
    assert advise({"threads": 64.0}, entries=[], min_confidence=0.0).suggestions == []
    with pytest.raises(GpuperfError, match=r"must lie in \[0, 1\], got 1.01"):
        advise({"threads": 64.0}, entries=[], min_confidence=1.01)


def test_a_device_with_pairs_of_its_own_uses_only_those():
    from gpuperf.decisions.advisor import _target_pairs

    pairs = pd.DataFrame({"target": ["device:pocl", "device:other", "gpu"], "speedup": [1.5, 0.5, 2.0]})
    own, note = _target_pairs(pairs, "device:pocl")
    assert own["speedup"].tolist() == [1.5] and note == ""
    elsewhere, note = _target_pairs(pairs, "device:new")
    assert elsewhere["speedup"].tolist() == [1.5, 0.5]
    assert note == "no pairs measured on this device; using pairs measured on other, pocl"


def test_the_explanation_shows_the_three_nearest_training_pairs_with_their_measured_speedups():
    from types import SimpleNamespace

    from gpuperf.decisions.advice_features import ADVICE_FEATURES, MODEL_FEATURES
    from gpuperf.decisions.advisor import _explanation
    from gpuperf.decisions.speedup_models import SpeedupModel

    pairs = pd.DataFrame({name: math.nan for name in MODEL_FEATURES}, index=range(12))
    pairs[list(ADVICE_FEATURES)] = 1.0
    pairs["threads"] = [2.0 ** i for i in range(12)]  # pair i lies i steps (log scale) from pair 0
    pairs["speedup"] = [1.0 + i / 100 for i in range(12)]
    pairs["family"], pairs["input"], pairs["configuration"] = "f", [f"n={i}" for i in range(12)], ""
    pairs["kernel"], pairs["change"], pairs["gpu"] = "k", "x: 1 -> 2", "g"
    model = SpeedupModel(select=False).fit(pairs)
    prediction = model.predict(pairs.iloc[[0]])
    nearest = _explanation(SimpleNamespace(when_it_helps="always"), model, 0, prediction, "")["nearest_pairs"]
    assert [p["measured_speedup"] for p in nearest] == [1.0, 1.01, 1.02]


def test_ten_pairs_that_all_measured_2x_advise_2x_with_confidence_for_one_of_them():
    """With no more pairs than neighbours (k = 10) the typical distance was taken as 0, so every
    familiarity, and every confidence, was 0: the advisor abstained on its own training pairs."""
    import math

    from gpuperf.decisions.advice_features import ADVICE_FEATURES, MODEL_FEATURES
    from gpuperf.decisions.speedup_models import SpeedupModel

    rng = np.random.default_rng(0)
    pairs = pd.DataFrame(rng.uniform(1, 100, (10, len(ADVICE_FEATURES))), columns=list(ADVICE_FEATURES))
    for name in set(MODEL_FEATURES) - set(pairs):
        pairs[name] = math.nan
    pairs = pairs.assign(speedup=2.0, family="f", input=[f"n={i % 4}" for i in range(10)], configuration="")
    for select in (False, True):
        predicted = SpeedupModel(select=select).fit(pairs).predict(pairs.iloc[[0]])
        assert predicted.speedup[0] == pytest.approx(2.0)
        assert predicted.familiarity[0] == 1.0 and predicted.confidence[0] > 0.9
    far = pairs.iloc[[0]].copy()
    far[list(ADVICE_FEATURES)] = 1e6  # far from every pair: less familiar than any of them
    assert SpeedupModel(select=False).fit(pairs).predict(far).familiarity[0] < 0.5


def test_cached_model_parts_of_another_shape_are_refitted_not_a_traceback(tmp_path, monkeypatch):
    """A cache file skops reads but whose parts are not a SpeedupModel's raised AttributeError from
    advise; any damaged cache file is refitted."""
    import math

    from gpuperf.decisions import advisor
    from gpuperf.decisions.advice_features import ADVICE_FEATURES, MODEL_FEATURES

    rng = np.random.default_rng(0)
    pairs = pd.DataFrame(rng.uniform(1, 100, (12, len(ADVICE_FEATURES))), columns=list(ADVICE_FEATURES))
    for name in set(MODEL_FEATURES) - set(pairs):
        pairs[name] = math.nan
    pairs = pairs.assign(speedup=2.0, family="f", input=[f"n={i % 4}" for i in range(12)], configuration="")
    cached = tmp_path / "model.skops"
    cached.write_bytes(b"stand-in")
    monkeypatch.setattr(advisor, "_model_path", lambda pairs: cached)
    monkeypatch.setattr(advisor, "_load_parts", lambda path: {"neighbours": 5, "weights": "distance", "knn": 3})
    model = advisor.fitted_model(pairs)
    assert model.predict(pairs.iloc[[0]]).speedup[0] == pytest.approx(2.0)
