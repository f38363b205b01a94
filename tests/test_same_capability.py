"""The same-capability scaled reference (the ``same_capability`` scenario of the Rodinia reproduction)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpuperf.errors import GpuperfError
from gpuperf.evaluation.reproduce import SCENARIOS, applies, run_protocol, scenario_runs
from gpuperf.evaluation.same_capability import LAWS, ScaledTimes, leave_one_group_out_same_capability

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


def test_missing_columns_are_named():
    with pytest.raises(GpuperfError, match="registers.per.thread"):
        ScaledTimes(synthetic().drop(columns="registers.per.thread"))
    assert set(LAWS) >= {"clock", "waves", "bandwidth"}
