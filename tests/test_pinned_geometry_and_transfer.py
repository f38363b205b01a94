"""Hand-worked checks of the figures, choices and errors of the launch-geometry judges, Kernel Tuner's
strategies, plain pair transfer and ask, each pinning a behaviour no other test held."""

from __future__ import annotations

import contextlib
import io
import random
import warnings

import numpy as np
import pandas as pd
import pytest

from gpuperf.decisions.geometry_eval import choices, summarise
from gpuperf.decisions.geometry_model import ChoiceTable
from gpuperf.decisions.geometry_sweep import cpu_descriptor, sweep_geometries
from gpuperf.decisions.gpu_similarity import prior_weights
from gpuperf.decisions.pair_transfer import PairTransfer
from gpuperf.decisions.sign_confidence import p_sign_right
from gpuperf.decisions.space import Space
from gpuperf.errors import GpuperfError


def _shapes(shapes, gpu="V100", registers=np.nan):
    """One choice group of (bx, by, time) shapes over a 2^20-iteration launch."""
    rows = [{"group": 0, "bx": bx, "by": by, "threads": bx * by, "blocks": 2**20 / (bx * by),
             "registers": registers, "smem": np.nan, "time": time} for bx, by, time in shapes]
    return ChoiceTable("synthetic", "k", "k", gpu, pd.DataFrame(rows))


# -- block-shape evaluation -----------------------------------------------------------------------


def test_a_pick_15_percent_slower_than_the_best_is_not_within_10_percent():
    """Best 1.0 s in both groups; llvm's picks take 1.15 s (not within 10 %) and 1.05 s (within)."""
    picked = pd.DataFrame({"group": [0, 1], "llvm": [1.15, 1.05], "llvm_threads": [128, 128],
                           "best": [1.0, 1.0], "best_threads": [256, 256]})
    assert summarise(picked)["llvm"]["within_10pct"] == 0.5


def test_the_typical_threads_of_a_policy_are_its_most_frequent_pick():
    """Picks of 64, 128 and 128 threads: 128 is the usual one, whatever the first group picked."""
    picked = pd.DataFrame({"group": [0, 1, 2], "llvm": [1.0, 1.0, 1.0], "llvm_threads": [128, 128, 128],
                           "heuristic": [2.0, 1.0, 1.0], "heuristic_threads": [64, 128, 128],
                           "best": [1.0, 1.0, 1.0], "best_threads": [128, 128, 128]})
    assert summarise(picked)["heuristic"]["typical_threads"] == 128


def test_occupancy_takes_32_registers_for_a_shape_that_recorded_none():
    """V100 (65,536 registers, 2,048 threads and 32 blocks per SM). At 32 registers a 32-thread block
    is held back by the 32-block limit (32 warps), a 384-thread one by the threads (5 blocks of 12
    warps: 60): 384 wins. (At 64 registers it would be 1 block of 12 warps against 32 of 1: 32 would.)"""
    picked = choices(_shapes([(32, 1, 2.0), (384, 1, 1.0)]), None)
    assert picked["occupancy_threads"].iloc[0] == 384


# -- sweeps ---------------------------------------------------------------------------------------


def test_a_sweep_on_a_cpu_device_measures_the_heuristics_block_of_its_whole_work_group_limit():
    """A CPU device of 4 compute units and work-groups of up to 4096: the grid stops at 1024 threads,
    but the heuristic's long-loop pick, 4096 x 4 (one group per compute unit), and the occupancy rule's
    4096 x ceil(1,000,000 / 4096) = 245 are measured as they are."""
    geometries = sweep_geometries(cpu_descriptor("cpu", 4, 4096, 65536), 1_000_000)
    assert {(4096, 4), (4096, 245)} <= set(geometries)
    assert sorted({threads for threads, _ in geometries}) == [32, 64, 128, 256, 512, 1024, 4096]


# -- plain pair transfer --------------------------------------------------------------------------


def _pairs(rows):
    """Pairs of kernel k and one change, one per (configuration, GPU, speedup)."""
    return pd.DataFrame({"kernel": "k", "change": "c", "configuration": [r[0] for r in rows], "input": "",
                         "gpu": [r[1] for r in rows], "speedup": [r[2] for r in rows]})


# GPUs gpuperf does not know (x, y, z, w) weigh alike: the evidence is worked out by hand.
UNNAMED = [("n=1", "x", 4.0), ("n=1", "y", 0.5), ("n=1", "z", 2.0),       # log2: 2, -1, 1
           ("n=2", "x", 0.25), ("n=2", "y", 0.5), ("n=2", "z", 2.0),      # log2: -2, -1, 1
           ("n=3", "x", 1.0), ("n=3", "y", 0.5)]                          # log2: 0, -1


def test_held_out_evidence_is_margin_share_on_the_predicted_side_and_log2_of_one_plus_the_gpus():
    """Each GPU's measurement left out, the others' mean log2 speedup predicts it. Rows: [|mean|, share of
    the others on the mean's side (> 0 or not), log2(1 + others), whether the predicted sign was right]."""
    l3 = np.log2(3)
    expected = [
        [0.0, 0.5, l3, 0], [1.5, 1.0, l3, 0], [0.5, 0.5, l3, 1],  # n=1 without x (mean 0: not > 0), y, z
        [0.0, 0.5, l3, 1], [0.5, 0.5, l3, 1], [1.5, 1.0, l3, 0],  # n=2 without x, y, z
        [1.0, 1.0, 1.0, 1], [0.0, 1.0, 1.0, 1],                   # n=3: a speedup of exactly 1 is not > 0
    ]
    evidence = PairTransfer().fit(_pairs(UNNAMED))._held_out_evidence()
    assert sorted(map(tuple, evidence.round(12).tolist())) == sorted(map(tuple, np.round(expected, 12).tolist()))


def test_the_share_on_the_predicted_side_weighs_each_gpu_by_its_likeness():
    """Held out, the H200 is predicted from the H100 (2x) and the RTX 3090 (0.5x); the H100 weighs
    more, so the mean is > 0 and the share on that side is the H100's weight, not one half."""
    rows = [("n=4", "H100 SXM", 2.0), ("n=4", "RTX 3090", 0.5), ("n=4", "H200", 4.0)]
    evidence = PairTransfer().fit(_pairs(rows))._held_out_evidence()
    weights = prior_weights("H200", ["H100 SXM", "RTX 3090"])
    assert weights[0] > 0.5
    assert evidence[2, 1] == pytest.approx(weights[0]) and evidence[2, 0] == pytest.approx(weights[0] - weights[1])


def test_a_transferred_pairs_confidence_takes_the_evidence_of_all_its_gpus():
    """n=1 asked for another unnamed GPU: mean (2 - 1 + 1) / 3, two of three GPUs on its side, 3 GPUs."""
    transfer = PairTransfer().fit(_pairs(UNNAMED))
    result = transfer.predict(_pairs([("n=1", "w", np.nan)]))
    assert result.log2_speedup[0] == pytest.approx(2 / 3)
    expected = p_sign_right(transfer.calibrator, np.array([[2 / 3, 2 / 3, np.log2(4)]]))
    assert result.confidence[0] == pytest.approx(expected[0])


# -- Kernel Tuner's strategies --------------------------------------------------------------------


def _grid_space() -> Space:
    xs, ys = np.meshgrid(np.arange(1, 5), np.arange(1, 5), indexing="ij")
    configs = pd.DataFrame({"x": xs.ravel(), "y": ys.ravel()})
    times = 1.0 + 0.1 * ((configs["x"] - 3) ** 2 + (configs["y"] - 2) ** 2)
    return Space(["x", "y"], configs, times.to_numpy(dtype=float), "grid")


def test_a_strategy_that_revisits_configurations_is_counted_once_per_configuration(tmp_path):
    """Greedy ILS revisits configurations (11 results for a budget of 5 on this 4 x 4 grid); revisits
    cost nothing in simulation mode, so the order is 5 distinct configurations, each where first visited."""
    from kernel_tuner.interface import tune_cache

    from gpuperf.decisions.kernel_tuner_baseline import strategy_order, write_space_cache

    space = _grid_space()
    cache = write_space_cache(space, tmp_path / "space.json")
    order = strategy_order(cache, space, "greedy_ils", budget=5)
    assert len(order) == 5 and len(set(order)) == 5
    random.seed(0)  # the same seeded run, read directly
    np.random.seed(0)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        results, _ = tune_cache(str(cache), strategy="greedy_ils", strategy_options={"max_fevals": 5}, quiet=True)
    visited = [int(r["x"] - 1) * 4 + int(r["y"] - 1) for r in results]
    assert len(visited) > 5  # revisits happened
    assert order == list(dict.fromkeys(visited))[:5]


def test_strategy_orders_run_seed_0_then_1(tmp_path):
    from gpuperf.decisions.kernel_tuner_baseline import strategy_order, strategy_orders, write_space_cache

    space = _grid_space()
    cache = write_space_cache(space, tmp_path / "space.json")
    runs = strategy_orders(space, ("random_sample",), budget=6, seeds=2)["random_sample"]
    assert runs == [strategy_order(cache, space, "random_sample", 6, seed=seed) for seed in (0, 1)]


def test_a_trip_count_of_exactly_2_to_the_63_is_named_too_large():
    from gpuperf.decisions.geometry_sweep import check_sweep

    table = pd.DataFrame({"kernel": ["loop_a", "loop_a"], "trip": [1000, 2**63], "threads": [128, 128],
                          "blocks": [8, 8], "time_s": [1e-6, 1e-6]})
    with pytest.raises(GpuperfError, match=r"s\.csv: row 2: trip 9223372036854775808 is too large \(at most 2\*\*63 - 1\)"):
        check_sweep(table, "s.csv")


# -- ask ------------------------------------------------------------------------------------------


def test_a_target_the_table_lacks_is_refused_when_the_table_holds_time_ms():
    """--target elapsed, nowhere near time_ms in spelling: the times measured so far would be ignored."""
    from gpuperf.decisions.ask import partly_measured

    frame = pd.DataFrame({"x": [1, 2, 3], "time_ms": [2.0, np.nan, np.nan]})
    with pytest.raises(GpuperfError, match=r"t\.csv: missing time column 'elapsed' \(the table has time_ms\)"):
        partly_measured(frame, ["x"], "elapsed", where="t.csv")


def test_the_default_time_column_is_time_ms_before_time_s_whatever_the_column_order():
    from gpuperf.decisions.ask import next_configuration, partly_measured

    frame = pd.DataFrame({"x": [1, 2, 3], "time_s": [5.0, np.nan, np.nan], "time_ms": [2.0, 1.0, np.nan]})
    step = next_configuration(partly_measured(frame, ["x"]))
    assert step.time_column == "time_ms" and step.measured == 2 and step.best_time == 1.0 and step.index == 2


def test_a_kernel_tuner_order_leaves_the_callers_random_generators_as_they_were(tmp_path):
    """The strategies are seeded for their run; a host program's own seeded draws go on unchanged
    (before, its next random.random() was the first draw after random.seed(0))."""
    from gpuperf.decisions.kernel_tuner_baseline import strategy_order, write_space_cache

    space = _grid_space()
    cache = write_space_cache(space, tmp_path / "space.json")
    random.seed(12345)
    np.random.seed(12345)
    expected = (random.random(), np.random.random())
    random.seed(12345)
    np.random.seed(12345)
    first = strategy_order(cache, space, "random_sample", 5, seed=0)
    assert (random.random(), np.random.random()) == expected
    assert strategy_order(cache, space, "random_sample", 5, seed=0) == first  # and the order stays seeded


def test_a_sweep_table_takes_trip_counts_up_to_2_to_the_63_minus_1():
    """As geometry --trip takes them: 2**63 - 1 and 2**63 - 512 are no float's 2**63, read as the text says."""
    from gpuperf.decisions.geometry_sweep import check_sweep

    for trip in (2**63 - 1, 2**63 - 512):
        table = pd.DataFrame({"kernel": ["loop_a"], "trip": [trip], "threads": [128], "blocks": [8], "time_s": [1e-6]})
        assert check_sweep(table, "s.csv")["trip"].tolist() == [trip]
    import io
    read = pd.read_csv(io.StringIO("kernel,trip,threads,blocks,time_s\nloop_a,18446744073709551615,128,8,1e-6\n"))
    with pytest.raises(GpuperfError, match=r"s\.csv: row 1: trip 18446744073709551615 is too large"):
        check_sweep(read, "s.csv")
