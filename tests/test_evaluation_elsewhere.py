"""A GPU's times predicted from launches profiled on another GPU."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression

from gpuperf.errors import GpuperfError
from gpuperf.evaluation.elsewhere import macro_mape_by_pair, profiled_elsewhere
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
