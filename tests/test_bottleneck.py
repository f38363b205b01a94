"""The multi-resource bottleneck model (the ``bottleneck`` scenario of the Rodinia reproduction)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpuperf.errors import GpuperfError
from gpuperf.evaluation.bottleneck import (
    COUNTERS,
    TERMS,
    bottleneck_terms,
    fit_coefficients,
    leave_one_group_out_bottleneck,
)
from gpuperf.evaluation.reproduce import OPT_IN_SCENARIOS, applies, run_protocol, scenario_runs

GPUS = pd.DataFrame({
    "gpu": ["k1", "k2", "k3", "m1", "m2"],
    "gpu_architecture": ["Kepler", "Kepler", "Kepler", "Maxwell", "Maxwell"],
    "gpu_compute_capability": [3.5, 3.5, 3.0, 5.2, 5.2],
    "gpu_clock_mhz": [700.0, 900.0, 1000.0, 1050.0, 1000.0],
    "gpu_sms": [13.0, 15.0, 8.0, 13.0, 24.0],
    "gpu_memory_bandwidth_gbs": [200.0, 280.0, 190.0, 220.0, 330.0],
    "gpu_peak_f32_gflops": [3500.0, 4300.0, 3100.0, 3500.0, 6100.0],
    "gpu_peak_f64_gflops": [1170.0, 1430.0, 130.0, 110.0, 190.0],
    "gpu_max_threads_per_sm": 2048.0, "gpu_max_blocks_per_sm": [16.0] * 3 + [32.0] * 2,
    "gpu_registers_per_sm": 65536.0, "gpu_shared_memory_per_sm_bytes": [49152.0] * 3 + [98304.0] * 2,
})


def synthetic(rows_per_gpu: int = 12) -> pd.DataFrame:
    """Two kernels with random counters: kernel a takes 2 x its DRAM time + 3 x its issue time,
    kernel b 1.5 x its latency (per-wave) time + 4 us."""
    rng = np.random.default_rng(0)
    rows = []
    for kernel in ("a", "b"):
        for gpu in GPUS.itertuples():
            for _ in range(rows_per_gpu):
                row = {c: float(rng.uniform(1e3, 1e7)) for c in COUNTERS}
                row |= {"kernel": kernel, "gpu": gpu.gpu, "grid.x": float(rng.integers(1, 400)), "grid.y": 1.0,
                        "block.x": 256.0, "block.y": 1.0, "registers.per.thread": 32.0, "static.smem": 0.0,
                        "warps_launched": 64.0}
                rows.append(row)
    frame = pd.DataFrame(rows).merge(GPUS, on="gpu")
    terms = bottleneck_terms(frame.assign(time_s=1.0))
    frame["time_s"] = np.where(frame["kernel"].eq("a"), 2 * terms["dram"] + 3 * terms["issue"],
                               1.5 * terms["lat_alu"] + 4 * terms["overhead"])
    return frame


def test_terms_follow_the_descriptors():
    frame = synthetic()
    terms = bottleneck_terms(frame)
    assert list(terms.columns) == list(TERMS)
    clock = frame["gpu_clock_mhz"] * 1e6
    assert np.allclose(terms["issue"], frame["inst_executed"] / (4 * frame["gpu_sms"] * clock))
    assert np.allclose(terms["dram"], (frame["device_memory_read_transactions"] + frame["l2_write_transactions"])
                       * 32 / (frame["gpu_memory_bandwidth_gbs"] * 1e9))
    latency = bottleneck_terms(frame, latency=True)
    kepler = frame["gpu_architecture"].eq("Kepler")
    assert np.allclose(latency.loc[kepler, "lat_alu"], 9 * terms.loc[kepler, "lat_alu"])
    assert np.allclose(latency.loc[~kepler, "lat_alu"], 6 * terms.loc[~kepler, "lat_alu"])


def test_coefficients_are_recovered_and_non_negative():
    frame = synthetic()
    terms = bottleneck_terms(frame).to_numpy()
    a = frame["kernel"].eq("a").to_numpy()
    coefficients = fit_coefficients(terms[a], frame["time_s"].to_numpy()[a], ridge=0.0)
    expected = np.zeros(len(TERMS))
    expected[[TERMS.index("dram"), TERMS.index("issue")]] = [2.0, 3.0]
    assert np.allclose(coefficients, expected, rtol=1e-6, atol=1e-9)
    assert (fit_coefficients(terms[a], -frame["time_s"].to_numpy()[a]) == 0).all()  # no usable row


def test_held_out_gpu_predicted_from_its_own_counters():
    frame = synthetic()
    evaluation = leave_one_group_out_bottleneck(frame, max_train_rows=None, ridge=0.0)
    rows = evaluation.predictions
    assert not evaluation.skipped and len(rows) == len(frame)
    assert np.allclose(rows["predicted"], rows["measured"], rtol=1e-6)
    # the default ridge shares weight between proportional terms (dram, dram_fixed): close, not exact
    shrunk = leave_one_group_out_bottleneck(frame, max_train_rows=None).predictions
    assert np.allclose(shrunk["predicted"], shrunk["measured"], rtol=0.1)
    # the held-out GPU's times never enter its predictions
    changed = frame.assign(time_s=np.where(frame["gpu"].eq("k2"), frame["time_s"] * 40.0, frame["time_s"]))
    after = leave_one_group_out_bottleneck(changed, max_train_rows=None, ridge=0.0).predictions
    k2 = rows["gpu"].eq("k2")
    assert np.array_equal(rows.loc[k2, "predicted"], after.loc[k2, "predicted"])


def test_a_kernel_no_training_gpu_ran_is_skipped():
    frame = synthetic()
    frame = frame[~(frame["kernel"].eq("b") & frame["gpu_architecture"].eq("Kepler"))]
    evaluation = leave_one_group_out_bottleneck(frame, group="gpu_architecture")
    assert evaluation.skipped == {"Maxwell": 24}
    assert set(evaluation.predictions["kernel"]) == {"a"}


def test_bottleneck_is_an_opt_in_scenario_of_the_gpu_wise_protocols():
    assert "bottleneck" in OPT_IN_SCENARIOS
    assert scenario_runs(["bottleneck"], ["gbt"]) == ["bottleneck/sum", "bottleneck/sum_latency"]
    assert applies("bottleneck", "architecture") and not applies("bottleneck", "kernel")
    evaluation = run_protocol(synthetic(), "bottleneck", "sum_latency", "gpu")
    assert evaluation.name == "bottleneck/sum_latency/gpu"
    with pytest.raises(GpuperfError, match="kernel"):
        run_protocol(synthetic(), "bottleneck", "sum", "kernel")
    with pytest.raises(GpuperfError, match="bottleneck variant"):
        run_protocol(synthetic(), "bottleneck", "gbt", "gpu")


def test_missing_columns_and_unknown_architectures_are_named():
    with pytest.raises(GpuperfError, match="inst_executed"):
        bottleneck_terms(synthetic().drop(columns="inst_executed"))
    with pytest.raises(GpuperfError, match="Pascal"):
        bottleneck_terms(synthetic().assign(gpu_architecture="Pascal"), latency=True)
    bottleneck_terms(synthetic().assign(gpu_architecture="Pascal"))  # without latencies: no table needed


def test_reproduce_cli_accepts_the_scenario():
    from gpuperf.cli.reproduce_cli import _known_scenarios

    assert _known_scenarios("bsp,bottleneck") == ["bsp", "bottleneck"]
