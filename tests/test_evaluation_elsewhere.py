"""A GPU's times predicted from launches profiled on another GPU."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression

from gpuperf.errors import GpuperfError
from gpuperf.evaluation.elsewhere import (
    hindsight_scaled_mape,
    macro_mape_by_pair,
    mape_optimal_factor,
    missing_kernels,
    one_launch_calibration,
    profiled_elsewhere,
)
from gpuperf.hardware.specs import get_gpu

GPUS = ("Tesla K20", "Tesla K40", "GTX Titan")
KEY = ["kernel", "n"]


def launches() -> pd.DataFrame:
    """Two kernels at five sizes on three GPUs: time = work / peak, the counter ``work`` the
    same on every GPU."""
    rows = []
    for gpu in GPUS:
        for kernel, scale in (("a", 1.0), ("b", 3.0)):
            for n in (1, 2, 4, 8, 16):
                rows.append({"kernel": kernel, "n": n, "gpu": gpu, "work": scale * n,
                             "time_s": scale * n / get_gpu(gpu).peak_f32_gflops, "status": "ok"})
    return pd.DataFrame(rows)


def build(frame: pd.DataFrame) -> pd.DataFrame:
    """The model's table: log2 work and log2 peak of the GPU the row names."""
    peak = frame["gpu"].map(lambda name: get_gpu(name).peak_f32_gflops)
    return frame.assign(log_work=np.log2(frame["work"]), log_peak=np.log2(peak),
                        log_time=np.log2(frame["time_s"]))


class LogLinear(LinearRegression):
    """Fits log2 time; predicts seconds."""

    def fit(self, X, y):
        return super().fit(X, np.log2(y))

    def predict(self, X):
        return np.exp2(super().predict(X))


def test_exact_model_predicts_every_pair_and_baselines_follow_their_definitions():
    pairs = profiled_elsewhere(LogLinear(), launches(), build, ["log_work", "log_peak"], KEY, max_train_rows=None)
    assert len(pairs) == 3 * 2 * 10 and set(pairs["target_gpu"]) == set(GPUS)
    assert (pairs["target_gpu"] != pairs["source_gpu"]).all()
    np.testing.assert_allclose(pairs["predicted"], pairs["measured"], rtol=1e-9)
    np.testing.assert_allclose(pairs["peak_scaled"], pairs["measured"], rtol=1e-12)
    ratio = pairs["source_time_s"] / pairs["measured"]
    peaks = {g: get_gpu(g).peak_f32_gflops for g in GPUS}
    np.testing.assert_allclose(ratio, pairs["target_gpu"].map(peaks) / pairs["source_gpu"].map(peaks))
    table = macro_mape_by_pair(pairs, "source_time_s")
    assert table.shape == (3, 3) and np.isnan(np.diag(table.to_numpy())).all()
    k20, k40 = peaks["Tesla K20"], peaks["Tesla K40"]
    assert table.loc["Tesla K20", "Tesla K40"] == pytest.approx(abs(1 - k20 / k40))


def test_the_predicted_gpus_own_counters_are_never_read():
    frame = launches()
    before = profiled_elsewhere(LogLinear(), frame, build, ["log_work", "log_peak"], KEY,
                                targets=["Tesla K40"], max_train_rows=None)
    scrambled = frame.copy()
    mine = scrambled["gpu"] == "Tesla K40"
    scrambled.loc[mine, "work"] = scrambled.loc[mine, "work"].to_numpy()[::-1] * 100
    after = profiled_elsewhere(LogLinear(), scrambled, build, ["log_work", "log_peak"], KEY,
                               targets=["Tesla K40"], max_train_rows=None)
    pd.testing.assert_frame_equal(before, after)
    # Its times are read only as what the predictions are scored against.
    slower = frame.assign(time_s=np.where(mine, frame["time_s"] * 2, frame["time_s"]))
    moved = profiled_elsewhere(LogLinear(), slower, build, ["log_work", "log_peak"], KEY,
                               targets=["Tesla K40"], max_train_rows=None)
    np.testing.assert_allclose(moved["predicted"], before["predicted"])
    np.testing.assert_allclose(moved["measured"], 2 * before["measured"])


def test_bad_input_is_one_clear_error():
    frame = launches()
    with pytest.raises(GpuperfError, match="appears twice on one GPU"):
        profiled_elsewhere(LogLinear(), pd.concat([frame, frame.iloc[:1]]), build, ["log_work"], KEY)
    with pytest.raises(GpuperfError, match="missing column"):
        profiled_elsewhere(LogLinear(), frame.drop(columns="n"), build, ["log_work"], KEY)
    with pytest.raises(GpuperfError, match="no rows for GPU"):
        profiled_elsewhere(LogLinear(), frame, build, ["log_work"], KEY, targets=["Tesla V100"])


def test_failed_or_non_positive_launches_are_left_out_on_either_side_of_a_pair():
    frame = launches()
    k40 = frame["gpu"].eq("Tesla K40")
    frame.loc[k40 & frame["kernel"].eq("a") & frame["n"].eq(4), "status"] = "RuntimeFailedConfig"
    frame.loc[k40 & frame["kernel"].eq("b") & frame["n"].eq(8), "time_s"] = 0.0
    pairs = profiled_elsewhere(LogLinear(), frame, build, ["log_work", "log_peak"], KEY, max_train_rows=None)
    # each lost K40 launch drops 2 pairs with K40 as target and 2 with it as source
    assert len(pairs) == 3 * 2 * 10 - 2 * 4
    on_k40 = pairs[pairs["target_gpu"].eq("Tesla K40") | pairs["source_gpu"].eq("Tesla K40")]
    assert len(on_k40) == 2 * 2 * 8
    assert (pairs["measured"] > 0).all() and (pairs["source_time_s"] > 0).all()


def test_no_launch_shared_by_two_gpus_is_one_clear_error():
    frame = launches()
    frame["n"] = frame["n"] * frame["gpu"].map({g: 100**i for i, g in enumerate(GPUS)})  # n differs per GPU
    with pytest.raises(GpuperfError, match="no launch was measured on two GPUs"):
        profiled_elsewhere(LogLinear(), frame, build, ["log_work"], KEY)


class _RecordingMean:
    """Predicts the mean training time; records the training rows of every fit."""

    fits: list = []

    def get_params(self, deep=True):
        return {}

    def set_params(self, **params):
        return self

    def fit(self, X, y):
        _RecordingMean.fits.append(tuple(sorted(X["log_work"].round(6))))
        self.mean_ = float(np.mean(y))
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)


def test_training_keeps_at_most_max_train_rows_launches_per_kernel_and_gpu_drawn_with_the_seed():
    def fits(seed):
        _RecordingMean.fits = []
        profiled_elsewhere(_RecordingMean(), launches(), build, ["log_work"], KEY, targets=["Tesla K40"],
                           max_train_rows=1, seed=seed)
        return list(_RecordingMean.fits)

    first = fits(0)
    assert len(first) == 2 and all(len(rows) == 2 for rows in first)  # a and b, one launch on K20 and on Titan
    assert fits(0) == first
    assert any(fits(seed) != first for seed in (1, 2, 3))


def test_pair_scores_average_per_kernel_mapes_with_equal_weight():
    """Kernel a: one launch 50 % off; b: three launches 10 % off; c: exact. Macro: 0.2 (pooled would be 0.16)."""
    rows = [("a", 2.0, 1.0), ("b", 1.0, 1.1), ("b", 2.0, 2.2), ("b", 1.0, 0.9), ("c", 3.0, 3.0)]
    pairs = pd.DataFrame([{"target_gpu": "B", "source_gpu": "A", "kernel": k, "measured": m, "predicted": p}
                          for k, m, p in rows])
    table = macro_mape_by_pair(pairs)
    assert table.loc["B", "A"] == pytest.approx(0.2)


def test_missing_kernels_names_what_a_source_lacks_of_the_targets_kernels():
    """T is scored on a, b, c from A and on b alone from M; A is scored on a from T."""
    rows = [("T", "A", k) for k in "abc"] + [("T", "M", "b"), ("A", "T", "a")]
    pairs = pd.DataFrame(rows, columns=["target_gpu", "source_gpu", "kernel"])
    missing = missing_kernels(pairs)
    assert missing.to_dict() == {("A", "T"): (), ("T", "A"): (), ("T", "M"): ("a", "c")}


def test_the_mape_optimal_factor_beats_every_other_factor():
    rng = np.random.default_rng(3)
    measured, source = rng.uniform(1, 10, 25), rng.uniform(1, 10, 25)
    best = mape_optimal_factor(measured, source)
    grid = np.linspace(0.05, 20, 4001)
    on_grid = [np.mean(np.abs(measured - c * source) / measured) for c in grid]
    assert np.mean(np.abs(measured - best * source) / measured) <= min(on_grid) + 1e-12
    # Not the plain median of the ratios, which minimises another error.
    plain = float(np.median(measured / source))
    assert np.mean(np.abs(measured - best * source) / measured) < np.mean(np.abs(measured - plain * source) / measured)
    assert mape_optimal_factor(np.array([6.0]), np.array([2.0])) == pytest.approx(3.0)


def test_hindsight_scaling_is_exact_where_one_factor_per_kernel_relates_two_gpus():
    pairs = profiled_elsewhere(LogLinear(), launches(), build, ["log_work", "log_peak"], KEY, max_train_rows=None)
    exact = hindsight_scaled_mape(pairs)
    assert exact.shape == (3, 3) and np.nanmax(exact.to_numpy()) == pytest.approx(0.0, abs=1e-12)
    # Kernel b on the K40 off by a factor that grows with the size: no one factor fits it.
    bent = pairs.copy()
    rows = bent["target_gpu"].eq("Tesla K40") & bent["kernel"].eq("b")
    bent.loc[rows, "measured"] *= np.linspace(1, 2, rows.sum())
    scores = hindsight_scaled_mape(bent)
    assert scores.loc["Tesla K40"].dropna().gt(0.01).all()
    assert np.nanmax(scores.drop(index="Tesla K40").to_numpy()) == pytest.approx(0.0, abs=1e-12)
    assert scores.loc["Tesla K40", "Tesla K20"] == pytest.approx(
        macro_of_kernels(bent.loc[bent["target_gpu"].eq("Tesla K40") & bent["source_gpu"].eq("Tesla K20")]))


def macro_of_kernels(pairs: pd.DataFrame) -> float:
    """Per-kernel MAPE of the best factor, each found by brute force, averaged over kernels."""
    scores = []
    for _, part in pairs.groupby("kernel"):
        m, s = part["measured"].to_numpy(), part["source_time_s"].to_numpy()
        scores.append(min(np.mean(np.abs(m - c * s) / m) for c in np.unique(m / s)))
    return float(np.mean(scores))


def test_one_launch_calibration_is_exact_where_every_gpu_is_another_one_scaled():
    result = one_launch_calibration(launches(), KEY, draws=5)
    assert len(result) == 3 * 2 and set(result["gpu"]) == set(GPUS)
    assert result["mape"].max() == pytest.approx(0.0, abs=1e-12)
    assert (result["launches"] == 5).all() and (result["sources"] == 2).all()


def test_one_launch_calibration_scores_the_other_launches_and_averages_the_draws():
    """B is A with its second launch twice as slow: calibrated on launch 1, B's launch 2 is predicted
    2 against 4, error 0.5; on launch 2, launch 1 is predicted 2 against 1, error 1. The calibration
    launch itself (exact) is not scored."""
    frame = pd.DataFrame({"kernel": "k", "n": [1, 2, 1, 2], "gpu": ["A", "A", "B", "B"],
                          "time_s": [1.0, 2.0, 1.0, 4.0]})
    result = one_launch_calibration(frame, KEY, draws=400).set_index("gpu")
    assert result.loc["B", "mape"] == pytest.approx(0.75, abs=0.03)
    # A from B: launch 2 predicted 4 against 2 on launch 1, error 1; launch 1 predicted 0.5 against 1, error 0.5.
    assert result.loc["A", "mape"] == pytest.approx((1.0 + 0.5) / 2, abs=0.03)
    single = frame[frame["n"] == 1]
    with pytest.raises(GpuperfError, match="besides the calibration launch"):  # nothing left to score
        one_launch_calibration(single, KEY)


def test_one_launch_calibration_takes_the_geometric_mean_of_the_other_gpus():
    """Calibrated on launch 1, C's second launch is predicted from A (2 x 1) and B (8 x 1) as
    their geometric mean 4 = C's time: exact; calibrated on launch 2 likewise."""
    frame = pd.DataFrame({"kernel": "k", "n": [1, 2] * 3, "gpu": ["A", "A", "B", "B", "C", "C"],
                          "time_s": [1.0, 2.0, 1.0, 8.0, 1.0, 4.0]})
    result = one_launch_calibration(frame, KEY, draws=10).set_index("gpu")
    assert result.loc["C", "mape"] == pytest.approx(0.0, abs=1e-12)
    assert result.loc["A", "mape"] > 0.1 and result.loc["C", "sources"] == 2


def test_one_launch_calibration_leaves_out_what_no_other_gpu_ran_and_names_missing_columns():
    frame = launches()
    frame.loc[frame["gpu"].ne("Tesla K20") & frame["kernel"].eq("b"), "n"] += 100  # b's launches on K20 only
    result = one_launch_calibration(frame, KEY, draws=3)
    assert not ((result["gpu"] == "Tesla K20") & (result["kernel"] == "b")).any()
    with pytest.raises(GpuperfError, match="one-launch calibration: missing column"):
        one_launch_calibration(frame.drop(columns="n"), KEY)
    with pytest.raises(GpuperfError, match="no kernel was measured on two GPUs"):
        one_launch_calibration(frame[frame["gpu"] == "Tesla K20"], KEY)


def test_one_launch_calibration_scores_only_launches_a_calibrated_gpu_timed():
    """C's launch 3 was timed by A alone, and A did not time C's calibration launch 1: calibrated on
    launch 1 it has no prediction and is not scored (not a NaN that spoils the mean)."""
    frame = pd.DataFrame({"kernel": "k", "n": [2, 3, 1, 2, 1, 2, 3], "gpu": ["A", "A", "B", "B", "C", "C", "C"],
                          "time_s": [2.0, 3.0, 1.0, 2.0, 1.0, 2.0, 3.0]})
    result = one_launch_calibration(frame, KEY, draws=30).set_index("gpu")
    assert np.isfinite(result["mape"]).all() and result.loc["C", "mape"] == pytest.approx(0.0, abs=1e-12)


def test_the_peak_ratio_baseline_takes_the_peaks_at_the_clocks_the_built_table_gives():
    """Rodinia's table (base clocks) scaled the profiling GPU's time by boost-clock peaks: the GPUs ran
    at base clocks, and the model's features say so."""
    from gpuperf.evaluation.tables import join_gpu_descriptors, with_base_clocks

    def at_base_clocks(frame: pd.DataFrame) -> pd.DataFrame:
        return build(with_base_clocks(join_gpu_descriptors(frame)))

    pairs = profiled_elsewhere(LogLinear(), launches(), at_base_clocks, ["log_work", "log_peak"], KEY,
                               max_train_rows=None)
    base = {gpu: get_gpu(gpu).peak_f32_gflops * get_gpu(gpu).base_clock_mhz / get_gpu(gpu).boost_clock_mhz
            for gpu in GPUS}
    expected = pairs["source_time_s"] * pairs["source_gpu"].map(base) / pairs["target_gpu"].map(base)
    np.testing.assert_allclose(pairs["peak_scaled"], expected, rtol=1e-12)
    assert not np.allclose(pairs["peak_scaled"], pairs["measured"], rtol=1e-3)  # the boost ratio's times


def test_one_launch_calibration_over_every_launch_takes_a_table_of_more_than_63_gpus():
    """Each launch's set of timing GPUs was a bit mask in a 64-bit integer: a table of 64 GPUs or more
    stopped with an OverflowError traceback. Its figures are the mean over every calibration launch."""
    from gpuperf.evaluation.elsewhere import _calibrated_error

    rng = np.random.default_rng(0)
    gpus = [f"G{i}" for i in range(66)]
    frame = pd.DataFrame([{"kernel": "k", "n": n, "gpu": gpu, "time_s": float(np.exp(rng.normal()))}
                          for gpu in gpus for n in range(5) if gpu == "G0" or n == 0 or rng.random() < 0.6])
    result = one_launch_calibration(frame, KEY).set_index("gpu")
    times = frame.pivot(index="n", columns="gpu", values="time_s")
    sources, measured = times[gpus[1:]].to_numpy(float), times["G0"].to_numpy(float)
    expected = np.nanmean([_calibrated_error(sources, measured, launch) for launch in range(5)])
    assert result.loc["G0", "mape"] == pytest.approx(expected)
