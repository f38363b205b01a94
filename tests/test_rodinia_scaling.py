"""Log-linear scaling of launch times across GPUs (the ``scaling`` scenario)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpuperf.errors import GpuperfError
from gpuperf.evaluation.gpu_scaling import SCALING_DESCRIPTORS, leave_one_group_out_scaling, scaling_predictions
from gpuperf.evaluation.reproduce import SCALING_MODELS, run_protocol, scenario_runs

KEY = ("kernel", "size")


def synthetic(seed: int = 0) -> pd.DataFrame:
    """Two kernels on five GPUs: compute-bound ``a`` (time ~ 1/clock), memory-bound ``b`` (time ~
    1/bandwidth); every launch has its own constant."""
    rng = np.random.default_rng(seed)
    gpus = pd.DataFrame({
        "gpu": ["g1", "g2", "g3", "g4", "g5"],
        "gpu_clock_mhz": [700.0, 800.0, 1000.0, 1200.0, 1500.0],
        "gpu_memory_bandwidth_gbs": [300.0, 180.0, 250.0, 200.0, 340.0],
        "gpu_cores": [2000.0, 2600.0, 1500.0, 3000.0, 1800.0],
        "gpu_cores_per_sm": [192.0, 192.0, 128.0, 128.0, 192.0],
    })
    rows = []
    for kernel, column in (("a", "gpu_clock_mhz"), ("b", "gpu_memory_bandwidth_gbs")):
        for size, constant in enumerate(rng.uniform(1e-3, 1.0, size=6)):
            for gpu in gpus.itertuples():
                rows.append({"kernel": kernel, "variant": "", "size": size, "gpu": gpu.gpu,
                             "time_s": constant / getattr(gpu, column)})
    return pd.DataFrame(rows).merge(gpus, on="gpu")


def test_scaling_extrapolates_along_the_descriptors():
    frame = synthetic()
    for held_out in ("g1", "g5", "g3"):  # lowest clock, highest clock, inside the range
        predicted = scaling_predictions(frame, held_out, SCALING_DESCRIPTORS[:2], ridge=1e-6, key=KEY)
        measured = frame.loc[predicted.index, "time_s"]
        assert np.allclose(predicted, measured, rtol=1e-4)
    # Descriptors that explain nothing: the slowest GPU is missed.
    flat = scaling_predictions(frame, "g1", descriptors=["gpu_cores_per_sm"], ridge=1e-6, key=KEY)
    assert not np.allclose(flat, frame.loc[flat.index, "time_s"], rtol=0.05)


def test_held_out_gpu_times_never_change_its_predictions():
    frame = synthetic()
    held_out = frame["gpu"].eq("g1")
    before = scaling_predictions(frame, "g1", key=KEY)
    changed = frame.assign(time_s=np.where(held_out, frame["time_s"][::-1].to_numpy() * 50, frame["time_s"]))
    assert before.equals(scaling_predictions(changed, "g1", key=KEY))
    other = frame.assign(time_s=np.where(frame["gpu"].eq("g2"), frame["time_s"] * 3, frame["time_s"]))
    assert not np.allclose(before, scaling_predictions(other, "g1", key=KEY))
    with pytest.raises(GpuperfError, match="g9"):
        scaling_predictions(frame, "g9", key=KEY)
    with pytest.raises(GpuperfError, match="gpu_cores_per_sm"):
        scaling_predictions(frame.drop(columns="gpu_cores_per_sm"), "g1", key=KEY)


def test_group_protocol_holds_out_every_gpu_of_a_group():
    frame = synthetic().assign(arch=lambda f: np.where(f["gpu"].isin(["g1", "g2"]), "old", "new"))
    evaluation = leave_one_group_out_scaling(frame, "arch", descriptors=SCALING_DESCRIPTORS[:2], ridge=1e-6,
                                             key=KEY)
    assert sorted(evaluation.predictions["fold"].unique()) == ["new", "old"]
    assert len(evaluation.predictions) == len(frame)
    old = evaluation.predictions[evaluation.predictions["fold"] == "old"]  # three training GPUs: slopes identified
    assert set(old["gpu"]) == {"g1", "g2"} and np.allclose(old["predicted"], old["measured"], rtol=1e-4)


def test_scaling_runs_are_its_variants_and_gpu_wise_only():
    assert scenario_runs(["bsp", "scaling"], ["gbt"]) == ["bsp/gbt", *[f"scaling/{v}" for v in SCALING_MODELS]]
    with pytest.raises(GpuperfError, match="not for protocol kernel"):
        run_protocol(synthetic(), "scaling", "loglinear", "kernel")
    with pytest.raises(GpuperfError, match="loglinear"):
        run_protocol(synthetic(), "scaling", "loglinar", "gpu")


def test_strong_ridge_pulls_one_kernels_slopes_to_the_pooled_fit_not_to_zero():
    """With kernel a alone, the pooled fit is a's own exact fit (time ~ 1/clock): a ridge of 1e6
    shrinks towards it and still predicts g1 exactly; shrinking towards 0 would predict every launch's
    mean training time."""
    frame = synthetic()
    only_a = frame[frame["kernel"] == "a"]
    predicted = scaling_predictions(only_a, "g1", SCALING_DESCRIPTORS[:2], ridge=1e6, key=KEY)
    assert np.allclose(predicted, only_a.loc[predicted.index, "time_s"], rtol=1e-4)


def test_a_launch_missing_on_one_training_gpu_is_averaged_over_those_it_has():
    """Drop launch (a, size 0) on g2: its constant is the mean over g3..g5 only, and the exact
    1/clock scaling still predicts its g1 time (a mean over four GPUs with a zero would not)."""
    frame = synthetic()
    missing = (frame["kernel"] == "a") & (frame["size"] == 0) & (frame["gpu"] == "g2")
    predicted = scaling_predictions(frame[~missing], "g1", SCALING_DESCRIPTORS[:2], ridge=1e-6, key=KEY)
    assert np.allclose(predicted, frame.loc[predicted.index, "time_s"], rtol=1e-4)


def test_launches_no_training_gpu_measured_are_counted_as_skipped():
    """A launch measured on g1 only has no prediction when g1 is held out: one skipped row."""
    frame = synthetic()
    extra = frame[(frame["gpu"] == "g1") & (frame["kernel"] == "a")].head(1).assign(size=99)
    evaluation = leave_one_group_out_scaling(pd.concat([frame, extra], ignore_index=True), "gpu",
                                             descriptors=SCALING_DESCRIPTORS[:2], ridge=1e-6, key=KEY)
    assert evaluation.skipped == {"g1": 1}
    assert len(evaluation.predictions) == len(frame)


def test_no_training_gpu_left_gives_no_prediction_rather_than_a_crash():
    """As the docstring promises where no training GPU has the launch: NaN for every held-out row."""
    frame = synthetic()
    only = frame[frame["gpu"] == "g3"]
    predicted = scaling_predictions(only, "g3", SCALING_DESCRIPTORS[:2], key=KEY)
    assert len(predicted) == len(only) and predicted.isna().all()
