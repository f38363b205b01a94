"""The same-capability scaled reference (the ``same_capability`` scenario of the Rodinia reproduction)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpuperf.errors import GpuperfError
from gpuperf.evaluation.reproduce import SCENARIOS, applies, run_protocol, scenario_runs
from gpuperf.evaluation.same_capability import (
    LAWS, ScaledTimes, leave_one_group_out_same_capability, log_scales, waves,
)

# Two GPUs of capability 3.5 and three of 5.2 (each 3x slower at a clock than 3.5), one of 3.0 alone.
GPUS = pd.DataFrame({
    "gpu": ["k1", "k2", "k3", "m1", "m2", "m3", "old"],
    "gpu_compute_capability": [3.5, 3.5, 3.5, 5.2, 5.2, 5.2, 3.0],
    "gpu_architecture": ["Kepler", "Kepler", "Kepler", "Maxwell", "Maxwell", "Maxwell", "Kepler"],
    "gpu_clock_mhz": [700.0, 900.0, 1100.0, 1000.0, 1200.0, 1400.0, 1000.0],
    "gpu_sms": [13.0, 15.0, 14.0, 16.0, 22.0, 24.0, 8.0],
    "gpu_memory_bandwidth_gbs": [200.0, 300.0, 250.0, 220.0, 330.0, 280.0, 190.0],
    "gpu_max_threads_per_sm": 2048.0, "gpu_max_blocks_per_sm": [16.0] * 3 + [32.0] * 3 + [16.0],
    "gpu_registers_per_sm": 65536.0, "gpu_shared_memory_per_sm_bytes": [49152.0] * 3 + [98304.0] * 3 + [49152.0],
})
SLOWDOWN = {3.5: 1.0, 5.2: 3.0, 3.0: 1.5}


def synthetic() -> pd.DataFrame:
    """Two kernels whose every launch takes its own constant over the clock, times the capability's
    slowdown: scaled by clock, a GPU of the same capability gives a launch's time exactly."""
    rng = np.random.default_rng(0)
    rows = []
    for kernel in ("a", "b"):
        for size, constant in enumerate(rng.uniform(1.0, 100.0, size=8)):
            for gpu in GPUS.itertuples():
                rows.append({"kernel": kernel, "variant": "", "input.size.1": size, "input.size.2": 0,
                             "grid.x": 4 + 37 * size, "grid.y": 1, "block.x": 256, "block.y": 1,
                             "registers.per.thread": 32, "static.smem": 0, "gpu": gpu.gpu,
                             "time_s": constant * SLOWDOWN[gpu.gpu_compute_capability] / gpu.gpu_clock_mhz})
    return pd.DataFrame(rows).merge(GPUS, on="gpu")


def test_same_capability_scaled_by_clock_is_exact():
    frame = synthetic()
    scaled = ScaledTimes(frame)
    training = [g for g in scaled.gpus if g != "k1"]
    assert scaled.choose_law(training) == "clock"  # chosen on the training GPUs alone
    evaluation = leave_one_group_out_same_capability(frame)
    rows = evaluation.predictions
    assert not evaluation.skipped and len(rows) == len(frame)
    same_capability = rows[rows["gpu"] != "old"]
    assert np.allclose(same_capability["predicted"], same_capability["measured"], rtol=1e-9)
    # the 3.0 GPU has no sibling: every training GPU stands in, and their capabilities' slowdowns show
    alone = rows[rows["gpu"] == "old"]
    assert alone["predicted"].notna().all()
    assert not np.allclose(alone["predicted"], alone["measured"], rtol=0.05)


def test_held_out_times_never_change_its_predictions():
    frame = synthetic()
    held_out = frame["gpu"].eq("k2")
    before = leave_one_group_out_same_capability(frame).predictions
    changed = frame.assign(time_s=np.where(held_out, frame["time_s"] * 40.0, frame["time_s"]))
    after = leave_one_group_out_same_capability(changed).predictions
    k2 = before["gpu"].eq("k2")
    assert np.array_equal(before.loc[k2, "predicted"], after.loc[k2, "predicted"])
    assert not np.allclose(before.loc[before["gpu"].eq("k1"), "predicted"],
                           after.loc[after["gpu"].eq("k1"), "predicted"])


def test_architecture_held_out_falls_back_to_every_training_gpu():
    evaluation = leave_one_group_out_same_capability(synthetic(), group="gpu_architecture")
    maxwell = evaluation.predictions[evaluation.predictions["fold"] == "Maxwell"]
    assert len(maxwell) == 48 and maxwell["predicted"].notna().all()
    # no 5.2 GPU in training: the Kepler GPUs' times miss the slowdown
    assert (maxwell["predicted"] < maxwell["measured"]).mean() > 0.9


def test_same_capability_is_a_nested_candidate_of_the_gpu_wise_protocols():
    assert "same_capability" in SCENARIOS
    assert "same_capability/inner_law" in scenario_runs(SCENARIOS, ["gbt"])
    assert applies("same_capability", "gpu") and not applies("same_capability", "kernel")
    evaluation = run_protocol(synthetic(), "same_capability", "inner_law", "gpu")
    assert evaluation.name == "same_capability/inner_law/gpu"
    with pytest.raises(GpuperfError, match="kernel"):
        run_protocol(synthetic(), "same_capability", "inner_law", "kernel")
    with pytest.raises(GpuperfError, match="same_capability variant"):
        run_protocol(synthetic(), "same_capability", "gbt", "gpu")


def test_the_quick_rodinia_set_runs_the_same_capability_reference_as_a_gpu_wise_candidate():
    from gpuperf.evaluation.rodinia_report import QUICK_MODELS, QUICK_SCENARIOS

    runs = scenario_runs(QUICK_SCENARIOS, QUICK_MODELS)
    assert "same_capability/inner_law" in runs and applies("same_capability", "gpu")


def test_missing_columns_are_named():
    with pytest.raises(GpuperfError, match="registers.per.thread"):
        ScaledTimes(synthetic().drop(columns="registers.per.thread"))
    assert set(LAWS) >= {"clock", "waves", "bandwidth"}


# One GPU by hand: 10 SMs, 2,048 threads, 16 blocks, 64K registers and 48 KB of shared memory per SM.
HAND_GPU = pd.Series({"gpu_clock_mhz": 1000.0, "gpu_sms": 10.0, "gpu_memory_bandwidth_gbs": 200.0,
                      "gpu_max_threads_per_sm": 2048.0, "gpu_max_blocks_per_sm": 16.0,
                      "gpu_registers_per_sm": 65536.0, "gpu_shared_memory_per_sm_bytes": 49152.0})
# 1.5x the clock, 2x the SMs and 2x the bandwidth, the same SM
HAND_BIG = HAND_GPU.copy()
HAND_BIG[["gpu_clock_mhz", "gpu_sms", "gpu_memory_bandwidth_gbs"]] = [1500.0, 20.0, 400.0]
HAND_LAUNCHES = pd.DataFrame({"grid.x": [101, 100, 50], "grid.y": 1, "block.x": [256, 256, 128], "block.y": 1,
                              "registers.per.thread": [64, 64, 32], "static.smem": [20000, 0, 0]})


def test_waves_take_every_residency_limit():
    # resident blocks per SM: 2 by shared memory (49152 // 20000), 4 by registers (65536 // (64 x 256)),
    # 16 by the block limit; waves = ceil(blocks / (10 SMs x resident)) = ceil(5.05), ceil(2.5), ceil(0.31)
    assert waves(HAND_LAUNCHES, HAND_GPU).tolist() == [6.0, 3.0, 1.0]
    assert waves(HAND_LAUNCHES, HAND_BIG).tolist() == [3.0, 2.0, 1.0]  # 20 SMs


def test_each_law_scales_by_its_closed_form():
    scales = log_scales(HAND_LAUNCHES, HAND_GPU, HAND_BIG)
    clock = np.log(1000 / 1500)
    wave = clock + np.log(np.array([3.0, 2.0, 1.0]) / [6.0, 3.0, 1.0])
    expected = {"same": [0.0] * 3, "clock": [clock] * 3, "clock_sms": [clock + np.log(10 / 20)] * 3,
                "waves": wave, "bandwidth": [np.log(200 / 400)] * 3, "waves_bw": (wave + np.log(200 / 400)) / 2}
    for law in LAWS:
        assert scales[law] == pytest.approx(expected[law]), law


def hand_rows(kernel: str, size: int, times: dict[str, float]) -> list[dict]:
    """One launch of ``kernel`` on each GPU of ``times`` (all alike: the law ``same`` is exact)."""
    return [{"kernel": kernel, "variant": "", "input.size.1": size, "input.size.2": 0, "grid.x": 1, "grid.y": 1,
             "block.x": 32, "block.y": 1, "registers.per.thread": 32, "static.smem": 0, "gpu": gpu, "time_s": t,
             "gpu_compute_capability": 3.5, **HAND_GPU.to_dict()} for gpu, t in times.items()]


def test_score_is_macro_over_kernels():
    # kernel a: one launch, g2 takes 2 where g1 takes 1 (error 0.5); kernel b: nine exact launches
    rows = hand_rows("a", 0, {"g1": 1.0, "g2": 2.0})
    for size in range(9):
        rows += hand_rows("b", size, {"g1": 1.0, "g2": 1.0})
    scaled = ScaledTimes(pd.DataFrame(rows))
    assert scaled.score("same", "g2", ["g1"]) == pytest.approx(0.25)  # (0.5 + 0) / 2; micro: 0.5 / 10


def test_a_launch_time_is_the_median_of_its_repeats():
    rows = [row for t in (1.0, 1.0, 100.0) for row in hand_rows("a", 0, {"g1": t, "g2": t})]
    scaled = ScaledTimes(pd.DataFrame(rows))
    assert np.exp(scaled.predict("same", "g2", ["g1"])) == pytest.approx([1.0])  # mean of logs: 4.64


def test_the_law_chosen_on_the_training_gpus_predicts():
    # times over the bandwidth: only the bandwidth law makes a same-capability GPU exact
    frame = synthetic()
    frame["time_s"] *= frame["gpu_clock_mhz"] / frame["gpu_memory_bandwidth_gbs"]
    rows = leave_one_group_out_same_capability(frame).predictions
    same_capability = rows[rows["gpu"] != "old"]
    assert np.allclose(same_capability["predicted"], same_capability["measured"], rtol=1e-9)


def test_every_gpu_of_an_architecture_fold_gets_its_own_predictions():
    frame = synthetic()
    rows = leave_one_group_out_same_capability(frame, group="gpu_architecture").predictions
    maxwell = frame.loc[rows.loc[rows["fold"] == "Maxwell", "row"]].assign(
        predicted=rows.loc[rows["fold"] == "Maxwell", "predicted"].to_numpy())
    # Kepler times scaled by clock: a launch's prediction x the GPU's clock is the same on m1, m2, m3
    per_launch = (maxwell["predicted"] * maxwell["gpu_clock_mhz"]).groupby([maxwell["kernel"], maxwell["input.size.1"]])
    assert per_launch.size().eq(3).all()
    assert np.allclose(per_launch.min(), per_launch.max(), rtol=1e-9)
