"""Evaluation behaviour that mutation testing showed untested: float32 predictions at the edge of the
``within`` band, ``Evaluation.overall`` leaving in-sample folds out, leave-one-kernel-out refusing
``fit_by``, the skipped counts of reference-based leave one GPU out, GPUs below the training range,
the hindsight bound's macro average, one-launch calibration's median of repeats and its sources, the
kernel-mapping check's microseconds, and the machine balance at base clocks. Small hand-made tables,
every expected value worked out by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression

from gpuperf.errors import GpuperfError
from gpuperf.evaluation.elsewhere import SOURCE_TIME, hindsight_scaled_mape, one_launch_calibration
from gpuperf.evaluation.gpu_range import unlike_training_gpus
from gpuperf.evaluation.metrics import within
from gpuperf.evaluation.protocols import Evaluation, leave_one_kernel_out
from gpuperf.evaluation.published import check_kernel_mapping, published_predictions
from gpuperf.evaluation.tables import join_gpu_descriptors, with_base_clocks
from gpuperf.evaluation.transfer import REFERENCE_KEY, leave_one_group_out_with_reference
from gpuperf.models.learned import make_model
from gpuperf.models.reference import REFERENCE_COLUMN, ReferenceResidual


def test_float32_predictions_1_2_times_the_measurement_are_within_the_band():
    """float32(1.2) is 1.2000000477 and float32(0.8) 0.7999999523: both within, by the rounding of the
    predictions' type, though the measurements are float64."""
    measured = np.array([1.0, 1.0, 1.0, 1.0])
    predicted = np.array([1.2, 0.8, 1.3, 0.7], dtype=np.float32)
    assert within(measured, predicted) == 0.5


def test_overall_metrics_pool_only_the_held_out_folds():
    """The in-sample fold (predicted exactly, it was fitted on) never counts: MAPE (0.5 + 0.25) / 2."""
    predictions = pd.DataFrame({
        "kernel": ["k"] * 4, "fold": ["A", "A", "fit", "fit"],
        "measured": [2.0, 4.0, 1.0, 1.0], "predicted": [3.0, 3.0, 1.0, 1.0],
    })
    evaluation = Evaluation("e", ("gpu",), predictions, in_sample=("fit",))
    assert evaluation.overall["n"] == 2
    assert evaluation.overall["mape"] == pytest.approx(0.375)


def test_leave_one_kernel_out_refuses_fit_by_naming_it():
    frame = pd.DataFrame({"kernel": ["a", "a", "b", "b"], "gpu": "X", "flops": [1.0, 2.0, 1.0, 2.0],
                          "time_s": [1.0, 2.0, 3.0, 4.0]})
    with pytest.raises(GpuperfError, match="fit_by cannot be used when kernels are held out"):
        leave_one_kernel_out(LinearRegression(), frame, ["flops"], fit_by="kernel")


def test_reference_folds_count_only_held_out_rows_without_a_reference_as_skipped():
    """L ran on A, B and C; K on A only; M on C only. Holding out C, M's 8 rows have no reference
    (skipped) but neither have K's training rows on A, which are not held out and not skipped; holding
    out A, K's 8 rows are skipped; holding out B, nothing."""
    rows = []
    for size in range(1, 9):
        for kernel, gpu, seconds in (("L", "A", 1e-3), ("L", "B", 2e-3), ("L", "C", 4e-3),
                                     ("K", "A", 3e-3), ("M", "C", 5e-3)):
            rows.append({"kernel": kernel, "gpu": gpu, "time_s": seconds * size, "flops": float(size),
                         **dict.fromkeys(REFERENCE_KEY[1:], 1), "input.size.1": size})
    estimator = ReferenceResidual(make_model("linear", log_target=False, log_inputs=True))
    evaluation = leave_one_group_out_with_reference(estimator, pd.DataFrame(rows), ["flops", REFERENCE_COLUMN], "gpu")
    assert evaluation.skipped == {"A": 8, "C": 8}
    assert evaluation.predictions.groupby("fold").size().to_dict() == {"A": 8, "B": 8, "C": 8}


def test_a_gpu_below_the_training_range_is_named_as_an_extrapolation():
    [(gpu, reason)] = unlike_training_gpus(["GTX 970", "Tesla K40"], ["gpu_sms"], ["GTX 680"])
    assert gpu == "GTX 680" and "its gpu_sms 8 lies below the 13 to 15 of the 2 GPUs" in reason


def test_hindsight_bound_is_the_mean_over_kernels_not_the_median():
    """Kernel a: exact (0). Kernel b: measured (1, 2) from source (1, 1): ratios 1, 2 weighted 1, 1/2,
    the weighted median factor 1, MAPE (0 + 1/2) / 2 = 0.25. Kernel c: measured (1, 3): factor 1, MAPE
    (0 + 2/3) / 2 = 1/3. Macro: (0 + 0.25 + 1/3) / 3 = 7/36 (the median would be 0.25)."""
    pairs = pd.DataFrame({
        "target_gpu": "T", "source_gpu": "S", "kernel": ["a", "b", "b", "c", "c"],
        "measured": [2.0, 1.0, 2.0, 1.0, 3.0], SOURCE_TIME: [1.0, 1.0, 1.0, 1.0, 1.0],
    })
    bound = hindsight_scaled_mape(pairs)
    assert bound.loc["T", "S"] == pytest.approx(7 / 36)


def test_one_launch_calibration_takes_the_median_of_a_launchs_repeated_times():
    """B's launch 1 was timed three times (1, 1, 4 s): its median 1 s, so B is A exactly (the mean,
    2 s, would make it half as fast on launch 1 only)."""
    frame = pd.DataFrame({"kernel": "k", "n": [1, 2, 1, 1, 1, 2], "gpu": ["A", "A", "B", "B", "B", "B"],
                          "time_s": [1.0, 2.0, 1.0, 1.0, 4.0, 2.0]})
    result = one_launch_calibration(frame, ["kernel", "n"], draws=10).set_index("gpu")
    assert result["mape"].tolist() == pytest.approx([0.0, 0.0], abs=1e-12)
    assert result.loc["B", "launches"] == 2


def test_one_launch_calibration_scores_only_the_launches_it_did_not_calibrate_on():
    """A times launches 1 and 2 in 1 s and 2 s, B both in 1 s. Calibrated on launch 1 (ratio 1), B's launch 2
    is predicted 2 s: error 1; on launch 2 (ratio 1/2), launch 1 is predicted 0.5 s: error 0.5. Every draw
    scores 0.5 or 1, never the calibration launch's own exact 0 (which gave 0.25 to 0.5). Kernel c has a
    single launch on B: nothing to score, no row."""
    frame = pd.DataFrame({"kernel": ["k"] * 4 + ["c"] * 2, "n": [1, 2, 1, 2, 1, 1],
                          "gpu": ["A", "A", "B", "B", "A", "B"], "time_s": [1.0, 2.0, 1.0, 1.0, 1.0, 3.0]})
    result = one_launch_calibration(frame, ["kernel", "n"], draws=20).set_index(["gpu", "kernel"])
    assert 0.5 <= result.loc[("B", "k"), "mape"] <= 1.0
    assert ("B", "c") not in result.index and ("A", "c") not in result.index


def test_one_launch_calibration_averages_every_launch_as_the_calibration_launch_exactly():
    """The same two launches: calibrated on launch 1, error 1; on launch 2, error 0.5. Each launch once gives
    0.75 exactly, whatever the seed (random draws gave an estimate that moved with it)."""
    frame = pd.DataFrame({"kernel": "k", "n": [1, 2, 1, 2], "gpu": ["A", "A", "B", "B"],
                          "time_s": [1.0, 2.0, 1.0, 1.0]})
    for seed in (0, 1):
        result = one_launch_calibration(frame, ["kernel", "n"], seed=seed).set_index("gpu")
        assert result.loc["B", "mape"] == pytest.approx(0.75, abs=1e-12)
        assert result.loc["A", "mape"] == pytest.approx(0.5 * (0.5 + 1.0), abs=1e-12)


def test_one_launch_calibration_refuses_draws_below_one_or_not_whole():
    """draws=0 said 'no kernel was measured on two GPUs' of a table measured on two; draws=-1 and 2.5 were numpy
    tracebacks."""
    from gpuperf.errors import GpuperfError

    frame = pd.DataFrame({"kernel": "k", "n": [1, 2, 1, 2], "gpu": ["A", "A", "B", "B"],
                          "time_s": [1.0, 2.0, 1.0, 1.0]})
    for draws, said in ((0, "draws must be at least 1"), (-1, "draws must be at least 1"),
                        (2.5, "draws must be a whole number")):
        with pytest.raises(GpuperfError, match=f"one-launch calibration: {said}"):
            one_launch_calibration(frame, ["kernel", "n"], draws=draws)
    assert len(one_launch_calibration(frame, ["kernel", "n"], draws=1)) == 2


def test_one_launch_calibration_of_every_launch_matches_scoring_each_calibration_launch_alone():
    """Launches with missing times on some GPUs: the fast exact average equals the mean of the per-launch MAPE
    (a calibration launch that leaves none predicted counting for nothing)."""
    from gpuperf.evaluation.elsewhere import _calibrated_error, _every_launch_errors

    rng = np.random.default_rng(3)
    for _ in range(50):
        launches, gpus = int(rng.integers(1, 12)), int(rng.integers(1, 4))
        sources = np.exp(rng.normal(size=(launches, gpus)))
        sources[rng.random((launches, gpus)) < 0.4] = np.nan
        measured = np.exp(rng.normal(size=launches))
        alone = [_calibrated_error(sources, measured, launch) for launch in range(launches)]
        assert _every_launch_errors(sources, measured) == pytest.approx(np.array(alone), abs=1e-12, nan_ok=True)


def test_one_launch_calibration_counts_only_the_gpus_that_ran_the_kernel_as_sources():
    """Kernel a ran on A, B and C, kernel b on A and B only: A's b has one source, its a two."""
    rows = [{"kernel": kernel, "n": n, "gpu": gpu, "time_s": float(n)}
            for kernel, gpus in (("a", "ABC"), ("b", "AB")) for gpu in gpus for n in (1, 2)]
    result = one_launch_calibration(pd.DataFrame(rows), ["kernel", "n"], draws=3).set_index(["gpu", "kernel"])
    assert result.loc[("A", "a"), "sources"] == 2 and result.loc[("A", "b"), "sources"] == 1
    assert result.loc[("C", "a"), "sources"] == 2


def test_kernel_mapping_check_gives_median_times_in_microseconds():
    """HOT (calculate_temp) published at 100 and 300 us on the K40: median 200 us; bundled 50 us."""
    published = published_predictions(pd.DataFrame({
        "kernel": ["HOT", "HOT"], "gpu": "Tesla K40", "model": "RF",
        "time_s": [1e-4, 3e-4], "predictions": [1e-4, 3e-4],
    }))
    table = pd.DataFrame({"gpu": ["Tesla K40"], "kernel": ["calculate_temp"], "time_s": [5e-5]})
    [row] = check_kernel_mapping(table, published).to_dict("records")
    assert row["kernel_code"] == "HOT" and row["kernel"] == "calculate_temp"
    assert row["published_median_us"] == pytest.approx(200.0)
    assert row["bundled_median_us"] == pytest.approx(50.0)
    assert row["ratio"] == pytest.approx(4.0)


def test_base_clocks_carry_the_machine_balance_with_the_f32_peak():
    """The K40's 5040 GFLOP/s at its 875 MHz boost is 5040 x 745 / 875 = 4291.2 at its 745 MHz base
    clock: 4291.2 / 276.5 GB/s = 15.52 flops per byte (18.23 at the boost clock)."""
    joined = join_gpu_descriptors(pd.DataFrame({"gpu": ["Tesla K40"], "time_s": [1.0]}))
    assert joined["gpu_flops_per_byte"].iloc[0] == pytest.approx(5040.0 / 276.5)
    based = with_base_clocks(joined)
    assert based["gpu_peak_f32_gflops"].iloc[0] == pytest.approx(4291.2)
    assert based["gpu_flops_per_byte"].iloc[0] == pytest.approx(4291.2 / 276.5)


def test_a_launch_one_training_gpu_timed_does_not_weaken_its_kernels_slopes():
    """Clocks 2, 4 (training) and 8 (held out): log2 clock 1, 2, 3. Kernel a's time goes as clock^-1,
    b's as clock^-2. Within the launches both training GPUs timed, deviations are +-0.5: gram 0.25,
    moment 0.25 x slope; pooled slope (-0.25 - 0.5) / 0.5 = -1.5; with ridge 0.1 a's slope is
    (-0.25 - 0.15) / 0.35 = -8/7 and b's (-0.5 - 0.15) / 0.35 = -13/7. a's launch n=2, timed on the
    clock-2 GPU only, tells nothing about slopes and must not dilute a's gram and moment."""
    from gpuperf.evaluation.gpu_scaling import scaling_predictions

    clocks = {"G1": 2.0, "G2": 4.0, "G3": 8.0}
    rows = [("a", 1, "G1"), ("a", 1, "G2"), ("a", 1, "G3"), ("a", 2, "G1"), ("a", 2, "G3"),
            ("b", 1, "G1"), ("b", 1, "G2"), ("b", 1, "G3")]
    frame = pd.DataFrame([{"kernel": k, "n": n, "gpu": g, "gpu_clock_mhz": clocks[g],
                           "time_s": n / clocks[g] ** (1 if k == "a" else 2)} for k, n, g in rows])
    predicted = scaling_predictions(frame, "G3", descriptors=["gpu_clock_mhz"], ridge=0.1, key=["kernel", "n"])
    # launch mean log2 time + (3 - mean log2 clock) x slope
    expected = [2 ** (-1.5 + 1.5 * -8 / 7), 2 ** (0.0 + 2 * -8 / 7), 2 ** (-3.0 + 1.5 * -13 / 7)]
    assert predicted.tolist() == pytest.approx(expected, rel=1e-12)


def test_bsp_inputs_are_per_thread_counts_and_a_clipped_l2_hit_fraction():
    """2 x 1 blocks of 32 x 2 threads: 128 threads, 4 warps. 1 - DRAM reads / L2 reads: 1 - 30 / 40 =
    0.25; more DRAM than L2 reads (1 - 50 / 40 = -0.25) clips to 0; no L2 reads counts as no hits."""
    from gpuperf.evaluation.tables import add_bsp_inputs

    frame = pd.DataFrame({
        "grid.x": 2, "grid.y": 1, "block.x": 32, "block.y": 2, "warps_launched": 4.0, "inst_executed": [400, 400, 400],
        "gld_request": 8, "gst_request": 4, "shared_load": 12, "shared_store": 2,
        "l2_read_transactions": [40, 40, 0], "device_memory_read_transactions": [30, 50, 10], "gpu_clock_mhz": 745.0,
    })
    out = add_bsp_inputs(frame)
    assert out["threads"].tolist() == [128, 128, 128] and out["instructions"].tolist() == [100.0] * 3
    assert out[["global_loads", "global_stores", "shared_loads", "shared_stores"]].iloc[0].tolist() == [2, 1, 3, 0.5]
    assert out["l2_hit_fraction"].tolist() == pytest.approx([0.25, 0.0, 0.0])
    assert out["gpu_clock_hz"].iloc[0] == pytest.approx(745e6)


def test_issue_time_is_warp_instructions_over_four_schedulers_per_sm():
    """8e6 warp instructions on 10 SMs x 4 schedulers at 1000 MHz: 8e6 / 4e10 = 2e-4 s; one clock period 1 ns."""
    from gpuperf.evaluation.tables import add_resource_times

    frame = pd.DataFrame({
        "inst_executed": [8e6], "device_memory_read_transactions": [1e6], "l2_read_transactions": [3e6],
        "l2_write_transactions": [1e6], "global_load_transactions": [2e6], "global_store_transactions": [0.0],
        "shared_load_transactions": [0.0], "shared_store_transactions": [1e6],
        "floating_point_operations.single_precision.": [2e9], "floating_point_operations.double_precision.": [1e9],
        "gpu_sms": [10], "gpu_clock_mhz": [1000.0], "gpu_memory_bandwidth_gbs": [64.0],
        "gpu_peak_f32_gflops": [1000.0], "gpu_peak_f64_gflops": [500.0],
    })
    out = add_resource_times(frame).iloc[0]
    assert out["t_issue"] == pytest.approx(2e-4)
    assert out["t_dram"] == pytest.approx(2e6 * 32 / 64e9)  # (DRAM reads + L2 writes) x 32 B
    assert out["t_l2"] == pytest.approx(4e6 * 32 / (64 * 1e10))
    assert out["t_global"] == pytest.approx(2e6 / 1e10) and out["t_shared"] == pytest.approx(1e6 / 1e10)
    assert out["t_fp32"] == pytest.approx(2e-3) and out["t_fp64"] == pytest.approx(2e-3)
    assert out["t_cycle"] == pytest.approx(1e-9)


def test_counter_columns_leave_out_the_bsp_inputs_derived_from_them():
    from gpuperf.evaluation.tables import counter_columns

    frame = pd.DataFrame({"kernel": ["k"], "elapsed_cycles_sm": [1.0], "inst_executed": [10.0], "threads": [64],
                          "instructions": [2.0], "l2_hit_fraction": [0.5], "t_issue": [1e-6], "gpu_sms": [13],
                          "time_s": [1e-3], "gld_request": [4.0], "name": ["x"]})
    assert counter_columns(frame) == ["inst_executed", "gld_request"]


def test_static_roofline_inputs_split_flops_by_precision():
    """10 flops of which ops_f64_add 2 and ops_f64_mul 1 (one missing: 0): f64 3, f32 7."""
    from gpuperf.evaluation.tables import add_static_roofline_inputs

    frame = pd.DataFrame({"flops": [10.0, 4.0], "ops_f64_add": [2.0, np.nan], "ops_f64_mul": [1.0, 0.0]})
    out = add_static_roofline_inputs(frame)
    assert out["flops_f64"].tolist() == [3.0, 0.0] and out["flops_f32"].tolist() == [7.0, 4.0]


def test_known_columns_leave_out_columns_with_a_missing_or_infinite_value():
    from gpuperf.evaluation.tables import known_columns

    frame = pd.DataFrame({"a": [1.0, 2.0], "b": [1.0, np.inf], "c": [np.nan, 1.0], "d": [3, 4]})
    assert known_columns(frame, ["a", "b", "c", "d", "e"]) == ["a", "d"]


def test_roofline_dram_bytes_are_32_byte_transactions():
    """(DRAM reads 3 + L2 writes 1) x 32 B = 128 B."""
    from gpuperf.evaluation.tables import add_roofline_inputs

    frame = pd.DataFrame({"floating_point_operations.single_precision.": [5], "floating_point_operations.double_precision.": [2],
                          "device_memory_read_transactions": [3], "l2_write_transactions": [1]})
    out = add_roofline_inputs(frame).iloc[0]
    assert (out["flops_f32"], out["flops_f64"], out["dram_bytes"]) == (5.0, 2.0, 128.0)


def k40_paper_and_ours() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The paper's RF and our predictions on the K40, each with per-kernel MAPE 0, 0.1 and 0.5
    (calculate_temp, bpnn_layerforward_CUDA, lud_diagonal)."""
    codes = {"HOT": "calculate_temp", "BCK-K1": "bpnn_layerforward_CUDA", "LUD-K1": "lud_diagonal"}
    errors = {"HOT": 0.0, "BCK-K1": 0.1, "LUD-K1": 0.5}
    published = published_predictions(pd.DataFrame({
        "kernel": list(codes), "gpu": "Tesla K40", "model": "RF", "time_s": 1e-3,
        "predictions": [1e-3 * (1 + errors[c]) for c in codes]}))
    predictions = pd.DataFrame({"kernel": list(codes.values()), "gpu": "Tesla K40", "fold": "Tesla K40",
                                "measured": 2.0, "predicted": [2.0 * (1 - errors[c]) for c in codes]})
    return published, predictions


def test_comparison_with_the_paper_macro_row_is_the_mean_over_kernels():
    """On the K40, per-kernel MAPE 0, 0.1 and 0.5 on both sides: the (macro) row is 0.2 (the median
    would be 0.1)."""
    from gpuperf.evaluation.reproduce import Reproduction, compare_with_paper

    published, predictions = k40_paper_and_ours()
    result = Reproduction({"s/m/gpu": Evaluation("s/m/gpu", ("gpu",), predictions)})
    table = compare_with_paper(result, ["s/m"], published)
    macro = table.loc[("Tesla K40", "(macro)")]
    assert macro["paper RF"] == pytest.approx(0.2) and macro["s/m"] == pytest.approx(0.2)
    assert table.loc[("Tesla K40", "lud_diagonal"), "s/m"] == pytest.approx(0.5)


def test_comparison_with_the_paper_macro_row_averages_the_kernels_every_column_has():
    """Run t/n cannot predict the worst kernel (0.5): every column's macro is over the other two (0.05), not
    t/n's over two beside 0.2 for the others over three, which would make the run lacking a kernel look best."""
    from gpuperf.evaluation.reproduce import Reproduction, compare_with_paper

    published, predictions = k40_paper_and_ours()
    lacking = predictions[predictions["kernel"] != "lud_diagonal"]
    result = Reproduction({"s/m/gpu": Evaluation("s/m/gpu", ("gpu",), predictions),
                           "t/n/gpu": Evaluation("t/n/gpu", ("gpu",), lacking)})
    table = compare_with_paper(result, ["s/m", "t/n"], published)
    macro = table.loc[("Tesla K40", "(macro)")]
    assert list(macro[["paper RF", "s/m", "t/n"]]) == pytest.approx([0.05, 0.05, 0.05])
    assert table.loc[("Tesla K40", "lud_diagonal"), "s/m"] == pytest.approx(0.5)  # the kernel's row stays


def test_comparison_with_the_paper_macro_row_is_nan_for_a_gpu_where_no_kernel_has_every_column():
    """Run t/n predicted nothing on the GTX 980: its (macro) row is there, every column NaN (as the docstring
    says), and the K40's stays the mean over its kernels."""
    from gpuperf.evaluation.reproduce import Reproduction, compare_with_paper

    codes = {"HOT": "calculate_temp", "BCK-K1": "bpnn_layerforward_CUDA"}
    published = published_predictions(pd.DataFrame({
        "kernel": list(codes) * 2, "gpu": ["Tesla K40"] * 2 + ["GTX 980"] * 2, "model": "RF", "time_s": 1e-3,
        "predictions": [1.1e-3, 1.3e-3] * 2}))
    predictions = pd.DataFrame({"kernel": list(codes.values()) * 2, "gpu": ["Tesla K40"] * 2 + ["GTX 980"] * 2,
                                "fold": ["Tesla K40"] * 2 + ["GTX 980"] * 2, "measured": 2.0, "predicted": 1.6})
    k40 = predictions[predictions["gpu"] == "Tesla K40"]
    result = Reproduction({"s/m/gpu": Evaluation("s/m/gpu", ("gpu",), predictions),
                           "t/n/gpu": Evaluation("t/n/gpu", ("gpu",), k40)})
    table = compare_with_paper(result, ["s/m", "t/n"], published)
    assert table.loc[("GTX 980", "(macro)")].isna().all()
    assert list(table.loc[("Tesla K40", "(macro)"), ["paper RF", "s/m", "t/n"]]) == pytest.approx([0.2, 0.2, 0.2])


def test_transfer_near_scenarios_average_the_two_nearest_training_gpus():
    from gpuperf.evaluation.reproduce import scenario

    frame = pd.DataFrame({"kernel": ["k"], "time_s": [1.0]})
    assert scenario("transfer_near", frame).neighbours == 2 and scenario("transfer_near_bsp", frame).neighbours == 2
    assert scenario("transfer", frame).neighbours is None


def test_a_point_whose_fastest_run_equals_its_typical_one_is_accepted():
    """One timed run: time_s_min = time_s, a valid point. Three such points pass the row checks and
    fall short of a fit only for their number."""
    from gpuperf.datasets.bundled import data_dir
    from gpuperf.evaluation.linear_eval import calibrate_from_table

    table = pd.read_csv(data_dir() / "linear_model_h100.csv.gz").head(3)
    single = table.assign(time_s_min=table["time_s"])
    with pytest.raises(GpuperfError, match=r"the table: 3 calibration points \(.*\) for \d+ properties"):
        calibrate_from_table(single, statistic="min")


def test_one_calibration_point_short_of_the_properties_is_refused():
    """The gpu set's 18 properties need 18 points: 17 are refused before any fit."""
    from gpuperf.datasets.bundled import data_dir
    from gpuperf.evaluation.linear_eval import calibrate_from_table
    from gpuperf.models.linear_calibration import CALIBRATION_PLANS

    table = pd.read_csv(data_dir() / "linear_model_h100.csv.gz")
    points = table[table["kernel"].isin(CALIBRATION_PLANS["gpu"])].head(17)
    with pytest.raises(GpuperfError, match=r"17 calibration points \(.*\) for 18 properties"):
        calibrate_from_table(points)

