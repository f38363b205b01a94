"""Hand-worked figures for decision helpers whose behaviour the other tests left open (mutation testing)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpuperf.decisions.search_metrics import cost_to, random_cost_to


# -- search costs ----------------------------------------------------------------------------------


def test_cost_to_sums_the_costs_up_to_the_first_good_pick_or_of_the_whole_order():
    performance = np.array([0.5, 1.0, 0.8])
    cost = np.array([1.0, 2.0, 4.0])
    # order 0, 2, 1: performance 0.5, 0.8, 1.0 -> the third reaches 90 %: 1 + 4 + 2
    assert cost_to(performance, cost, [0, 2, 1], 0.9) == pytest.approx(7.0)
    # order 2, 1: the second reaches it: 4 + 2
    assert cost_to(performance, cost, [2, 1], 0.9) == pytest.approx(6.0)
    # order 0, 2 never reaches 90 %: the whole order is paid for, 1 + 4
    assert cost_to(performance, cost, [0, 2], 0.9) == pytest.approx(5.0)


def test_random_cost_to_averages_the_orders_of_seeds_0_to_seeds_minus_1():
    performance = np.array([1.0, 0.1, 0.2, 0.3, 0.4])
    cost = np.array([1.0, 10.0, 100.0, 1000.0, 10000.0])  # each order's cost names the picks it paid for
    per_seed = [cost_to(performance, cost, np.random.default_rng(seed).permutation(5), 0.9) for seed in range(3)]
    assert len(set(per_seed)) > 1  # the seeds give different orders
    assert random_cost_to(performance, cost, 0.9, seeds=1) == pytest.approx(per_seed[0])
    assert random_cost_to(performance, cost, 0.9, seeds=3) == pytest.approx(np.mean(per_seed))


# -- calibrated sign confidence --------------------------------------------------------------------


def test_the_sign_calibrator_gives_the_chance_of_being_right_not_of_being_wrong():
    """Wide margins were right and narrow ones wrong: a wide margin is likely right, a narrow one not."""
    from gpuperf.decisions.sign_confidence import fit_sign_calibrator, p_sign_right

    margins = np.array([0.05, 0.1, 0.15, 0.2, 1.0, 1.2, 1.4, 1.6])
    right = np.array([0, 0, 0, 1, 0, 1, 1, 1])
    evidence = np.column_stack([margins, np.full(8, 0.8), np.full(8, 1.0), right])
    calibrator = fit_sign_calibrator(evidence)
    p = p_sign_right(calibrator, np.array([[1.5, 0.8, 1.0], [0.05, 0.8, 1.0]]))
    assert p[0] > 0.5 > p[1]


@pytest.mark.parametrize("right, expected", [(1, 1.0), (0, 0.0)])
def test_evidence_that_was_always_right_or_always_wrong_gives_its_base_rate(right, expected):
    from gpuperf.decisions.sign_confidence import fit_sign_calibrator, p_sign_right

    evidence = np.array([[0.5, 1.0, 1.0, right], [1.5, 0.5, 2.0, right], [0.1, 0.7, 1.0, right]], dtype=float)
    calibrator = fit_sign_calibrator(evidence)
    np.testing.assert_allclose(p_sign_right(calibrator, evidence), [expected] * 3)


# -- what a geometry decision costs -----------------------------------------------------------------


def test_a_cost_table_leaves_out_kernel_times_of_zero_or_below():
    """Times 0 and -1 ms are no kernel times: the median of 1, 2, 5 ms is 2 ms and the shortest 1 ms."""
    from gpuperf.decisions.geometry_cost import cost_table

    table = cost_table({"heuristic": 10.0}, np.array([0.0, 1e-3, -1e-3, 2e-3, 5e-3]))
    assert table.loc["heuristic", "share_of_median_kernel"] == pytest.approx(5e-3)
    assert table.loc["heuristic", "share_of_shortest_kernel"] == pytest.approx(1e-2)


def test_per_call_time_is_the_best_of_the_repeats():
    """The first of three runs is slowed by 0.2 s, the others are not: the best run is what counts."""
    import time

    from gpuperf.decisions.geometry_cost import per_call_us

    calls = []

    def function():
        calls.append(1)
        if len(calls) == 1:
            time.sleep(0.2)

    assert per_call_us(function, number=1, repeat=3) < 0.1e6
    assert len(calls) == 3


# -- ranking by a calibrated count model -------------------------------------------------------------


def test_ranking_evaluations_and_their_summary_on_two_hand_made_kernels():
    """Kernel a: performance 1, 0.5, 0.952, 0.25 explored in predicted order 0.5, 0.25, 0.952, 1 reaches
    90 % and 95 % at 3, 99 % at 4; random order (N + 1) / (good + 1) = 5/3, 5/3, 5/2. Kernel b:
    performance 0.5, 1 in that order: 2, 2, 2; random 3/2 each. The summary is their geometric means."""
    from gpuperf.decisions.count_ranking import evaluations_summary, ranking_evaluations

    predictions = pd.DataFrame({
        "kernel": ["b", "a", "a", "a", "a", "b"],
        "time_s": [2.0, 1.0, 2.0, 1.05, 4.0, 1.0],
        "predicted_s": [1.0, 4.0, 1.0, 3.0, 2.0, 2.0],
    })
    evaluations = ranking_evaluations(predictions)
    assert list(evaluations.index) == ["a", "b"]
    assert evaluations.loc["a", ["evals_to_90", "evals_to_95", "evals_to_99"]].tolist() == [3, 3, 4]
    assert evaluations.loc["b", ["evals_to_90", "evals_to_95", "evals_to_99"]].tolist() == [2, 2, 2]
    np.testing.assert_allclose(evaluations.loc["a", ["random_evals_to_90", "random_evals_to_95", "random_evals_to_99"]]
                               .to_numpy(dtype=float), [5 / 3, 5 / 3, 5 / 2])
    np.testing.assert_allclose(evaluations.loc["b", ["random_evals_to_90", "random_evals_to_95", "random_evals_to_99"]]
                               .to_numpy(dtype=float), [1.5, 1.5, 1.5])
    # sqrt(3 * 2) = 2.449, sqrt(4 * 2) = 2.828; sqrt(5/3 * 3/2) = 1.581, sqrt(5/2 * 3/2) = 1.936
    assert evaluations_summary(evaluations) == ("2.45 / 2.45 / 2.83", "1.58 / 1.58 / 1.94")


# -- the same pair measured on other GPUs ----------------------------------------------------------


def _pairs(rows, change="local_x: 16 -> 32"):
    return pd.DataFrame({"kernel": "k", "change": change, "configuration": [r[0] for r in rows], "input": "",
                         "gpu": [r[1] for r in rows], "speedup": [r[2] for r in rows]})


def test_a_pairs_settings_match_whatever_spaces_follow_their_commas():
    from gpuperf.decisions.pair_transfer import PairTransfer

    transfer = PairTransfer().fit(_pairs([("n=64,m=32", "H100 SXM", 2.0), ("n=64,m=32", "RTX 3090", 2.0)]))
    queries = _pairs([("m=32, n=64", "H200", np.nan), (" n=64 ,m=32 ", "H200", np.nan)])
    np.testing.assert_allclose(transfer.predict(queries).log2_speedup, [1.0, 1.0])


def test_a_pair_whose_gpus_always_disagree_is_transferred_with_no_confidence():
    """Each GPU's measurements are left out together: GPU x's two (4x) against y's 0.5x and back, the sign
    is wrong every time, so the calibrator's base rate, and the confidence, is 0."""
    from gpuperf.decisions.pair_transfer import PairTransfer

    transfer = PairTransfer().fit(_pairs([("n=1", "x", 4.0), ("n=1", "x", 4.0), ("n=1", "y", 0.5)]))
    result = transfer.predict(_pairs([("n=1", "z", np.nan)]))
    assert result.log2_speedup[0] == pytest.approx((2 + 2 - 1) / 3)
    assert result.confidence[0] == 0.0
    assert result.gpus == [("x", "y")]  # each GPU named once


def test_a_predicted_slowdown_is_as_confident_as_a_speedup_of_the_same_size():
    """The margin is |log2 speedup|: a pair measured at 1/4x on two GPUs is as sure a slowdown as one
    measured at 4x on them is a speedup."""
    from gpuperf.decisions.pair_transfer import PairTransfer

    rows = [("n=1", "x", 8.0), ("n=1", "y", 8.0), ("n=2", "x", 6.0), ("n=2", "y", 6.0),
            ("n=3", "x", 1.1), ("n=3", "y", 0.9), ("n=4", "x", 1.05), ("n=4", "y", 0.95),
            ("n=5", "x", 0.25), ("n=5", "y", 0.25), ("n=6", "x", 4.0), ("n=6", "y", 4.0)]
    transfer = PairTransfer().fit(_pairs(rows))
    result = transfer.predict(_pairs([("n=5", "z", np.nan), ("n=6", "z", np.nan)]))
    np.testing.assert_allclose(result.log2_speedup, [-2.0, 2.0])
    assert result.confidence[0] == pytest.approx(result.confidence[1])
    assert result.confidence[1] > 0.5


# -- how well the advisor's models advise ----------------------------------------------------------


def test_advise_summary_figures_on_four_hand_made_pairs():
    """Measured 2, 0.5, 1.05, 1.2 (faster, slower, faster, faster) against predicted 1.5, 2, 0.9, 1."""
    from gpuperf.decisions.advise_eval import summarise

    results = pd.DataFrame({
        "measured": [2.0, 0.5, 1.05, 1.2], "predicted": [1.5, 2.0, 0.9, 1.0],
        "knn": [1.5, 0.8, 1.2, 0.7], "m5p": [0.5, 0.5, 0.5, 0.5], "p_faster": [0.5, 0.2, 0.6, 0.7],
        "constant": [1.2] * 4, "confidence": [0.9, 0.75, 0.95, 0.5],
        "model_speedup": [0.8, 2.0, 0.9, 1.0], "measured_elsewhere": [True, False, False, False],
    })
    row = summarise(results).iloc[0]
    expected = {
        "pairs": 4, "sign_accuracy": 0.25,
        "sign_accuracy_clear": 1 / 3, "clear_share": 0.75,  # 1.05 is inside the noise band
        "sign_accuracy_knn": 0.75, "sign_accuracy_m5p": 0.25,
        "sign_accuracy_logistic": 0.75,  # p_faster 0.5 is no prediction of faster
        "sign_accuracy_constant": 0.75, "elsewhere_share": 0.25,
        "sign_accuracy_models": 0.0,  # the models' own speedups, not the transferred ones
        "confident_share": 0.5, "sign_accuracy_confident": 0.5,  # confidence 0.9 counts as confident
        "confident_share_0.75": 0.75, "sign_accuracy_confident_0.75": 1 / 3,
        "median_ratio": (1.05 / 0.9 + 1.2) / 2, "ratio_within_0.8_1.25": 0.5,
        "log2_mae": np.mean(np.abs(np.log2([2 / 1.5, 0.25, 1.05 / 0.9, 1.2]))),
        "log2_mae_constant": np.mean(np.abs(np.log2(np.array([2.0, 0.5, 1.05, 1.2]) / 1.2))),
    }
    for name, value in expected.items():
        assert row[name] == pytest.approx(value), name


# -- launch-geometry sweeps ------------------------------------------------------------------------


def test_a_sweep_is_refused_once_its_largest_loop_takes_more_than_the_devices_memory():
    """Trip 101: 8 bytes an iteration (x and y, float32) are 808 bytes, past a device of 800."""
    from gpuperf.decisions.geometry_sweep import cpu_descriptor, measure_sweep
    from gpuperf.errors import GpuperfError

    class SmallDevice:
        name = "small"
        memory_bytes = 800

    with pytest.raises(GpuperfError, match=r"trip 101: a loop's two float arrays take 808 bytes, more than the 800 "
                                           r"bytes of small's global memory"):
        measure_sweep(SmallDevice(), ["saxpy"], [100, 101], cpu_descriptor("cpu", 1, 256, 65536))


def test_block_shape_models_are_each_trained_on_the_other_families_only(monkeypatch):
    from gpuperf.decisions import geometry_eval
    from gpuperf.decisions.geometry_model import ChoiceTable

    trained: list[list[str]] = []

    class Recording:
        def fit(self, tables):
            trained.append(sorted(t.family for t in tables))
            return self

    monkeypatch.setattr(geometry_eval, "GeometryModel", Recording)
    tables = [ChoiceTable("t", f"{family}{k}", family, "V100", pd.DataFrame()) for family in ("a", "b", "c")
              for k in range(2)]
    models = geometry_eval.leave_one_kernel_out_models(tables)
    assert sorted(models) == ["a", "b", "c"]
    assert trained == [["b", "b", "c", "c"], ["a", "a", "c", "c"], ["a", "a", "b", "b"]]


# -- the next configuration of a table measured so far ----------------------------------------------


def test_a_table_with_an_empty_column_named_as_a_time_has_nothing_measured_yet():
    """time_us holds no value: nothing to ignore, so the table is asked about as one with no time column
    (and a time_us column holding a value is refused)."""
    from gpuperf.decisions.ask import next_configuration, partly_measured
    from gpuperf.errors import GpuperfError

    frame = pd.DataFrame({"x": [1, 2, 3], "time_us": [np.nan, np.nan, np.nan]})
    step = next_configuration(partly_measured(frame, ["x"]))
    assert (step.measured, step.remaining, step.time_column) == (0, 3, "time_ms")
    with pytest.raises(GpuperfError, match="column time_us holds values"):
        partly_measured(frame.assign(time_us=[np.nan, 5.0, np.nan]), ["x"])


def test_a_target_the_table_lacks_is_refused_where_a_column_is_spelt_near_it():
    """--target runtime_m, but the times measured so far are in runtime_ms: asking would ignore them."""
    from gpuperf.decisions.ask import partly_measured
    from gpuperf.errors import GpuperfError

    frame = pd.DataFrame({"x": [1, 2, 3], "runtime_ms": [2.0, np.nan, np.nan]})
    with pytest.raises(GpuperfError, match=r"t\.csv: missing time column 'runtime_m' \(the table has runtime_ms\)"):
        partly_measured(frame, ["x"], target="runtime_m", where="t.csv")


def test_a_table_without_a_time_column_is_refused_where_a_column_is_spelt_near_one():
    """tme_ms (a typo of time_ms) holds a value: asking would ignore it and write times to a new column."""
    from gpuperf.decisions.ask import partly_measured
    from gpuperf.errors import GpuperfError

    frame = pd.DataFrame({"x": [1, 2, 3], "tme_ms": [2.0, np.nan, np.nan]})
    with pytest.raises(GpuperfError, match=r"t\.csv: no time column \(time_ms, time_s, time\), but column tme_ms holds"):
        partly_measured(frame, ["x"], where="t.csv")


# -- Kernel Tuner's strategies ---------------------------------------------------------------------


def test_an_unknown_kernel_tuner_strategy_is_named_before_the_cache_is_read(tmp_path):
    from gpuperf.decisions.kernel_tuner_baseline import strategy_order
    from gpuperf.decisions.space import Space
    from gpuperf.errors import GpuperfError

    space = Space(["x"], pd.DataFrame({"x": [1, 2]}), np.array([1.0, 2.0]), "s")
    with pytest.raises(GpuperfError, match=r"unknown Kernel Tuner strategy 'no_such' \(known: .*random_sample"):
        strategy_order(tmp_path / "absent.json", space, "no_such", 2)
