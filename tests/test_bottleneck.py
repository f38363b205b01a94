"""The multi-resource bottleneck model (the ``bottleneck`` scenario of the Rodinia reproduction)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpuperf.errors import GpuperfError
from gpuperf.evaluation.bottleneck import (
    COUNTERS,
    DRAM_BYTES_PER_CYCLE,
    MEMORY_LATENCY_TRANSFERS,
    TERMS,
    bottleneck_terms,
    fit_coefficients,
    leave_one_group_out_bottleneck,
)
from gpuperf.evaluation.reproduce import OPT_IN_SCENARIOS, applies, run_protocol, scenario_runs
from gpuperf.evaluation.tables import with_memory_data_rates

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
    assert scenario_runs(["bottleneck"], ["gbt"]) == ["bottleneck/sum", "bottleneck/sum_latency",
                                                      "bottleneck/sum_latency_memclock",
                                                      "bottleneck/sum_latency_memclock_dramclock"]
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


def one_launch(**counters: float) -> pd.DataFrame:
    """One Kepler launch of 130 blocks of 256 threads (8 resident per SM: 2 waves on 13 SMs) at 700 MHz."""
    gpu = {"gpu": "k", "gpu_architecture": "Kepler", "gpu_compute_capability": 3.5, "gpu_clock_mhz": 700.0,
           "gpu_sms": 13.0, "gpu_memory_bandwidth_gbs": 250.0, "gpu_peak_f32_gflops": 3500.0,
           "gpu_peak_f64_gflops": 1170.0, "gpu_max_threads_per_sm": 2048.0, "gpu_max_blocks_per_sm": 16.0,
           "gpu_registers_per_sm": 65536.0, "gpu_shared_memory_per_sm_bytes": 49152.0}
    launch = {"grid.x": 130.0, "grid.y": 1.0, "block.x": 256.0, "block.y": 1.0, "registers.per.thread": 32.0,
              "static.smem": 0.0}
    values = {"inst_executed": 1e6, "warps_launched": 100.0, "gld_request": 1000.0, "gst_request": 300.0,
              "shared_load": 500.0, "shared_store": 200.0, "shared_load_transactions": 4000.0,
              "shared_store_transactions": 1000.0, "device_memory_read_transactions": 2e5,
              "l2_read_transactions": 3e5, "l2_write_transactions": 5e4, "load.store_instructions": 6.4e5,
              "floating_point_operations.single_precision.": 7e8,
              "floating_point_operations.double_precision.": 1.17e7} | counters
    return pd.DataFrame([gpu | launch | values])


def test_each_term_is_its_counters_over_the_rate_the_docstring_gives():
    """Hand-computed: 13 SMs x 700 MHz = 9.1e9 SM cycles a second; 2 waves of 100 warps; Kepler latencies 9,
    300 and 47 cycles."""
    sm_cycles, per_wave = 13 * 700e6, 2 / 700e6 / 100
    expected = {
        "issue": 1e6 / (4 * sm_cycles), "fp32": 7e8 / 3500e9, "fp64": 1.17e7 / 1170e9,
        "dram": 2.5e5 * 32 / 250e9, "dram_fixed": 2.5e5 * 32 / 200e9, "l2": 3.5e5 * 32 / (64 * sm_cycles),
        "shared": 5000 / sm_cycles, "ldst": 6.4e5 / (32 * sm_cycles), "lat_alu": per_wave * 1e6,
        "lat_mem": per_wave * 1300, "lat_smem": per_wave * 700, "overhead": 1e-6,
    }
    terms = bottleneck_terms(one_launch()).iloc[0]
    assert dict(terms) == pytest.approx(expected, rel=1e-12)
    latency = bottleneck_terms(one_launch(), latency=True).iloc[0]
    cycles = {"lat_alu": 9, "lat_mem": 300, "lat_smem": 47}
    assert dict(latency) == pytest.approx(expected | {k: expected[k] * c for k, c in cycles.items()}, rel=1e-12)


def test_a_launch_of_no_counted_warps_is_timed_per_warp_as_one():
    terms = bottleneck_terms(one_launch(warps_launched=0.0)).iloc[0]
    assert terms["lat_alu"] == pytest.approx(2 / 700e6 * 1e6)


def test_the_ridge_penalises_the_scaled_coefficients_squared():
    """One term of relative values 1 and 2 (scaled: 0.5 and 1): minimising mean((s c' - 1)^2) + ridge c'^2 gives
    c' = mean(s) / (mean(s^2) + ridge) = 0.75 / 0.725 at ridge 0.1, c = c' / 2."""
    coefficients = fit_coefficients(np.array([[1.0], [2.0]]), np.array([1.0, 1.0]), ridge=0.1)
    assert coefficients == pytest.approx([0.75 / 0.725 / 2])


def test_rows_without_a_positive_time_are_left_out_of_the_fit():
    terms = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0]])
    times = np.array([2.0, 3.0, 5.0, -7.0])
    assert fit_coefficients(terms, times, ridge=0.0) == pytest.approx([2.0, 3.0])
    assert fit_coefficients(terms[:3], times[:3], ridge=0.0) == pytest.approx([2.0, 3.0])
    assert fit_coefficients(terms, np.array([2.0, 3.0, 5.0, 0.0]), ridge=0.0) == pytest.approx([2.0, 3.0])


def test_sum_latency_is_the_bottleneck_model_with_each_architectures_latencies():
    frame = synthetic()
    for variant, latency in (("sum", False), ("sum_latency", True)):
        run = run_protocol(frame, "bottleneck", variant, "gpu").predictions
        direct = leave_one_group_out_bottleneck(frame, "gpu", latency=latency).predictions
        assert np.allclose(run["predicted"].to_numpy(), direct["predicted"].to_numpy(), rtol=1e-12)
    with_latency = run_protocol(frame, "bottleneck", "sum_latency", "gpu").predictions["predicted"]
    assert not np.allclose(with_latency, run_protocol(frame, "bottleneck", "sum", "gpu").predictions["predicted"])


def test_each_gpu_times_its_rows_by_its_own_descriptors():
    """A second GPU of 26 SMs runs the same 130 blocks in 1 wave, not the first GPU's 2."""
    frame = pd.concat([one_launch(), one_launch().assign(gpu="k2", gpu_sms=26.0)], ignore_index=True)
    terms = bottleneck_terms(frame)
    assert list(terms["lat_alu"]) == pytest.approx([2 / 700e6 / 100 * 1e6, 1 / 700e6 / 100 * 1e6], rel=1e-12)
    assert list(terms["issue"]) == pytest.approx([1e6 / (4 * 13 * 700e6), 1e6 / (4 * 26 * 700e6)], rel=1e-12)


def test_memory_clock_times_the_global_latency_in_cycles_of_the_memory_clock():
    """2 waves of 100 warps, 1300 global requests, at 6 Gb/s per pin: the same on a GPU of another SM clock;
    the other terms as ``sum_latency``'s."""
    frame = pd.concat([one_launch(), one_launch().assign(gpu="k2", gpu_clock_mhz=900.0)], ignore_index=True)
    frame["gpu_memory_data_rate_gbps"] = 6.0
    terms = bottleneck_terms(frame, latency=True, memory_clock=True)
    expected = 2 / 100 * 1300 * MEMORY_LATENCY_TRANSFERS / 6e9
    assert list(terms["lat_mem"]) == pytest.approx([expected, expected], rel=1e-12)
    others = [t for t in TERMS if t != "lat_mem"]
    assert np.allclose(terms[others], bottleneck_terms(frame, latency=True)[others], rtol=1e-12)
    slower = bottleneck_terms(frame.assign(gpu_memory_data_rate_gbps=5.0), latency=True, memory_clock=True)
    assert list(slower["lat_mem"]) == pytest.approx([expected * 6 / 5] * 2, rel=1e-12)


def test_memory_clock_needs_each_gpus_data_rate():
    with pytest.raises(GpuperfError, match="gpu_memory_data_rate_gbps"):
        bottleneck_terms(one_launch(), memory_clock=True)
    with pytest.raises(GpuperfError, match="no memory data rate .* for GPU.s. k$"):
        bottleneck_terms(one_launch().assign(gpu_memory_data_rate_gbps=np.nan), memory_clock=True)


def test_memory_data_rates_are_bandwidth_over_bus_width():
    """Tesla K20: 200 GB/s on 320 bits, 5 Gb/s per pin; GTX Titan 288.4 GB/s on 384; a GPU the table lacks: NaN."""
    frame = pd.DataFrame({"gpu": ["Tesla K20", "GTX Titan", "H100"], "gpu_memory_bandwidth_gbs": [200.0, 288.4, 3350.0]})
    rates = with_memory_data_rates(frame)["gpu_memory_data_rate_gbps"]
    assert rates.iloc[:2].tolist() == pytest.approx([5.0, 288.4 * 8 / 384])
    assert np.isnan(rates.iloc[2])


def test_sum_latency_memclock_is_the_bottleneck_model_with_the_memory_clock_latency():
    frame = synthetic().assign(gpu_memory_data_rate_gbps=lambda f: f["gpu_memory_bandwidth_gbs"] * 8 / 256)
    run = run_protocol(frame, "bottleneck", "sum_latency_memclock", "gpu")
    assert run.name == "bottleneck/sum_latency_memclock/gpu"
    direct = leave_one_group_out_bottleneck(frame, "gpu", latency=True, memory_clock=True).predictions
    assert np.allclose(run.predictions["predicted"], direct["predicted"], rtol=1e-12)
    latency = run_protocol(frame, "bottleneck", "sum_latency", "gpu").predictions["predicted"]
    assert not np.allclose(run.predictions["predicted"], latency)


def test_sum_latency_memclock_reads_the_rodinia_gpus_data_rates_when_the_table_has_none():
    names = {"k1": "Tesla K20", "k2": "Tesla K40", "k3": "GTX 680", "m1": "GTX 970", "m2": "GTX Titan X"}
    frame = synthetic().assign(gpu=lambda f: f["gpu"].map(names))
    run = run_protocol(frame, "bottleneck", "sum_latency_memclock", "gpu").predictions
    direct = leave_one_group_out_bottleneck(with_memory_data_rates(frame), "gpu", latency=True,
                                            memory_clock=True).predictions
    assert len(run) == len(frame)
    assert np.allclose(run["predicted"], direct["predicted"], rtol=1e-12)


def test_dram_clock_adds_the_dram_bytes_at_a_rate_of_the_sm_clock():
    """2.5e5 DRAM transactions of 32 B at 32 B per cycle of 700 MHz, whatever the SMs or the bandwidth."""
    frame = pd.concat([one_launch(), one_launch().assign(gpu="k2", gpu_sms=26.0, gpu_memory_bandwidth_gbs=500.0)],
                      ignore_index=True)
    terms = bottleneck_terms(frame, dram_clock=True)
    assert list(terms.columns) == [*TERMS, "dram_clock"]
    assert list(terms["dram_clock"]) == pytest.approx([2.5e5 * 32 / (DRAM_BYTES_PER_CYCLE * 700e6)] * 2, rel=1e-12)
    assert np.allclose(terms[list(TERMS)], bottleneck_terms(frame), rtol=1e-12)


def test_sum_latency_memclock_dramclock_fits_the_dram_clock_term_too():
    """Kernel a's time made 5 x its dram_clock term: recovered by the variant that has it, not by the one that lacks it."""
    frame = synthetic().assign(gpu_memory_data_rate_gbps=lambda f: f["gpu_memory_bandwidth_gbs"] * 8 / 256)
    a = frame["kernel"].eq("a")
    frame.loc[a, "time_s"] = 5 * bottleneck_terms(frame, dram_clock=True).loc[a, "dram_clock"]
    frame = frame[a]
    run = run_protocol(frame, "bottleneck", "sum_latency_memclock_dramclock", "gpu").predictions
    direct = leave_one_group_out_bottleneck(frame, "gpu", latency=True, memory_clock=True, dram_clock=True).predictions
    assert np.allclose(run["predicted"], direct["predicted"], rtol=1e-12)
    without = run_protocol(frame, "bottleneck", "sum_latency_memclock", "gpu").predictions
    error = (run["predicted"] / run["measured"] - 1).abs().mean()
    assert error < 0.1 and error < (without["predicted"] / without["measured"] - 1).abs().mean() / 2
