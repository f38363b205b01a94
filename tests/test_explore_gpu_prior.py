"""Transfer-guided exploration weighs other GPUs' data by how alike the GPUs' descriptors are."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from gpuperf.decisions.bundled_spaces import leave_one_gpu_out, subset, tuning_families
from gpuperf.decisions.exploration import in_content_order, make_explorer
from gpuperf.decisions.explorers import TransferGuided, run_search
from gpuperf.decisions.gpu_similarity import gpu_distance, prior_weights
from gpuperf.decisions.space import Space, parameter_features, space_from_frame, transfer_matrix
from gpuperf.errors import GpuperfError


def grid_space(optimum: tuple[int, int], gpu: str | None = None) -> Space:
    """A 12 x 12 grid whose time grows smoothly away from ``optimum``."""
    xs, ys = np.meshgrid(np.arange(1, 13), np.arange(1, 13), indexing="ij")
    configs = pd.DataFrame({"x": xs.ravel(), "y": ys.ravel()})
    times = 1.0 + 0.05 * ((configs["x"] - optimum[0]) ** 2 + (configs["y"] - optimum[1]) ** 2)
    return Space(["x", "y"], configs, times.to_numpy(dtype=float), f"grid on {gpu}", gpu=gpu)


def test_gpu_distance_puts_one_architecture_together_and_other_vendors_apart():
    assert gpu_distance("RTX 3090", "RTX 3090") == 0.0
    assert gpu_distance("RTX 3090", "RTX A6000") == pytest.approx(gpu_distance("RTX A6000", "RTX 3090"))
    assert gpu_distance("RTX 3090", "RTX A6000") < gpu_distance("RTX 3090", "Titan RTX")
    assert gpu_distance("RTX 3090", "Titan RTX") < gpu_distance("RTX 3090", "Radeon PRO W6600")
    assert gpu_distance("Tesla K20", "GTX Titan X") < gpu_distance("Tesla K20", "RTX A6000")


def test_prior_weights_favour_the_alike_gpu_and_fall_back_to_equal_weights():
    weights = prior_weights("RTX A6000", ["RTX A4000", "Titan RTX", "Radeon PRO W6600"])
    assert weights.sum() == pytest.approx(1.0)
    assert weights[0] > weights[1] > weights[2]
    assert prior_weights("RTX A6000", ["RTX A4000", "my lab card"]).tolist() == [0.5, 0.5]
    assert prior_weights(None, ["RTX A4000", "Titan RTX"]).tolist() == [0.5, 0.5]
    assert prior_weights("RTX A6000", []).size == 0


def test_the_first_pick_follows_the_gpu_the_prior_favours_over_the_majority():
    # Two Turing GPUs agree on (3, 3); the one Ampere GPU, like the new one, peaks at (10, 10).
    others = [grid_space((3, 3), "Titan RTX"), grid_space((3, 3), "RTX 2080 Ti"), grid_space((10, 10), "RTX A4000")]
    target = grid_space((10, 10), "RTX A6000")
    features = parameter_features(target.configs, target.params)
    transfer = transfer_matrix(target, others)
    plain = run_search(TransferGuided(features, transfer), target.times, budget=1)
    assert target.config(plain[0]) == {"x": 3, "y": 3}  # equal weights: the majority's optimum
    explorer = make_explorer(target, others)
    assert in_content_order(others)[explorer.prior_weights.argmax()].gpu == "RTX A4000"  # the search's order
    guided = run_search(explorer, target.times, budget=1)
    assert target.config(guided[0]) == {"x": 10, "y": 10}
    unnamed = [grid_space((3, 3)), grid_space((3, 3)), grid_space((10, 10))]  # no GPU names
    unnamed_target = grid_space((10, 10))
    order = run_search(make_explorer(unnamed_target, unnamed), unnamed_target.times, budget=1)
    assert unnamed_target.config(order[0]) == {"x": 3, "y": 3}


def test_space_from_frame_reads_one_gpu_name_and_rejects_two():
    frame = pd.DataFrame({"b": [1, 2, 4], "time_ms": [3.0, 2.0, 1.0], "gpu": ["RTX 3090"] * 3})
    assert space_from_frame(frame, ["b"], "time_ms", "t.csv").gpu == "RTX 3090"
    assert space_from_frame(frame.drop(columns="gpu"), ["b"], "time_ms", "t.csv").gpu is None
    frame.loc[2, "gpu"] = "Titan RTX"
    with pytest.raises(GpuperfError, match="t.csv: column gpu names 2 GPUs"):
        space_from_frame(frame, ["b"], "time_ms", "t.csv")


def test_bundled_spaces_name_their_gpu_and_keep_it_through_subsets():
    family = next(f for f in tuning_families() if f.name == "hub/convolution")
    gpu, space, others = next(leave_one_gpu_out(family))
    assert space.gpu == gpu and {o.gpu for o in others} == set(family.gpus) - {gpu}
    assert subset(space, 50).without_failures().gpu == gpu


def test_the_residual_model_predicts_the_other_gpus_shape_from_two_measurements():
    # The new GPU is the other GPU three times slower: after two poor measurements the residual
    # model (the others' weighted log performance, shifted, plus what it misses) already points
    # at the other GPU's optimum, which the parameters alone could not know.
    other, target = grid_space((9, 4), "RTX A4000"), grid_space((9, 4), "RTX A6000")
    target.times = 3.0 * target.times
    features = parameter_features(target.configs, target.params)
    transfer = transfer_matrix(target, [other])
    explorer = TransferGuided(features, transfer, seed=1)
    at = {(x, y): i for i, (x, y) in enumerate(zip(target.configs["x"], target.configs["y"]))}
    measured = [at[(1, 12)], at[(2, 11)]]
    times = np.full(len(target), np.nan)
    times[measured] = target.times[measured]
    improvement = explorer.model_improvement(measured, times)
    assert target.config(int(np.argmax(improvement))) == {"x": 9, "y": 4}
    direct = TransferGuided(features, transfer, seed=1, residual=False).model_improvement(measured, times)
    assert target.config(int(np.argmax(direct))) != {"x": 9, "y": 4}


def test_the_distance_unit_is_fixed_so_describing_more_gpus_does_not_move_the_prior():
    import math

    from gpuperf.decisions.gpu_similarity import DESCRIPTORS, SPREAD_GPUS, _spread
    from gpuperf.hardware.specs import get_gpu, gpus

    assert {get_gpu(name).name for name in SPREAD_GPUS} == set(SPREAD_GPUS)
    assert len(gpus()) > len(SPREAD_GPUS)  # GPUs described since: they may be compared, not rescale
    logs = np.array([[math.log(getattr(get_gpu(name), d)) for d in DESCRIPTORS] for name in SPREAD_GPUS])
    np.testing.assert_allclose(_spread(), logs.std(axis=0))
    assert 0 < gpu_distance("RTX 4090", "RTX 3090") < gpu_distance("RTX 4090", "Instinct MI300X")


def test_prior_weights_measure_distance_beyond_the_nearest():
    from gpuperf.decisions.gpu_similarity import SCALE, gpu_distance, prior_weights

    others = ["RTX A4000", "Titan RTX"]
    d = np.array([gpu_distance("RTX A6000", other) for other in others])
    assert d.min() > 0.1  # neither is the target: the nearest's own distance must not count
    w = prior_weights("RTX A6000", others)
    nearest = int(np.argmin(d))
    expected = np.exp(-((d - d[nearest]) ** 2) / (2 * SCALE**2))
    assert w == pytest.approx(expected / expected.sum(), rel=1e-12)
    assert SCALE == 0.5


@pytest.mark.parametrize("a, b, mismatches", [
    ("RTX 3090", "RTX A6000", 0),  # both NVIDIA Ampere
    ("RTX 3090", "Titan RTX", 1),  # NVIDIA, Ampere against Turing
    ("RTX 3090", "Radeon PRO W6600", 2),  # another vendor and another architecture
])
def test_gpu_distance_is_the_rms_of_scaled_log_descriptors_plus_one_per_mismatch(a, b, mismatches):
    """distance^2 = mean over the seven descriptors of (log a - log b)^2 / (their spread over
    SPREAD_GPUS)^2, plus 1 for another vendor and 1 for another architecture."""
    from gpuperf.decisions.gpu_similarity import SPREAD_GPUS
    from gpuperf.hardware.specs import get_gpu

    names = ("sms", "cores_per_sm", "boost_clock_mhz", "memory_bandwidth_gbs", "l2_bytes",
             "shared_memory_per_sm_bytes", "peak_f32_gflops")

    def logs(gpu):
        return np.array([math.log(getattr(get_gpu(gpu), n)) for n in names])

    spread = np.array([logs(gpu) for gpu in SPREAD_GPUS]).std(axis=0)
    squared = float(np.mean(((logs(a) - logs(b)) / spread) ** 2))
    assert gpu_distance(a, b) ** 2 == pytest.approx(squared + mismatches, rel=1e-12)


def test_the_distance_unit_follows_a_changed_gpuperf_gpus_in_a_running_process(monkeypatch, tmp_path):
    """A user's entry replacing one of SPREAD_GPUS moves the unit; the unit was cached for the life of the
    process, so a notebook that set GPUPERF_GPUS after a first distance kept the old one."""
    from gpuperf.decisions.gpu_similarity import DESCRIPTORS, SPREAD_GPUS, _spread
    from gpuperf.hardware.specs import get_gpu

    def unit():
        return np.array([[math.log(getattr(get_gpu(name), d)) for d in DESCRIPTORS] for name in SPREAD_GPUS]).std(axis=0)

    before = gpu_distance("RTX 3090", "RTX A6000")
    h200 = get_gpu("H200")
    fields = {d: getattr(h200, d) for d in DESCRIPTORS if d != "shared_memory_per_sm_bytes"}
    fields["sms"], fields["peak_f32_gflops"] = h200.sms * 8, h200.peak_f32_gflops * 8
    lines = [f"{key} = {value!r}" for key, value in fields.items()]
    (tmp_path / "h200.toml").write_text("\n".join([
        "[[gpu]]", 'name = "H200"', f'vendor = "{h200.vendor}"', f'architecture = "{h200.architecture}"',
        f'compute_capability = "{h200.compute_capability}"', f"memory_gb = {h200.memory_gb!r}", *lines,
        f"shared_memory_per_sm_bytes = {h200.shared_memory_per_sm_bytes}", 'source = "a user\'s own entry"', ""]))
    monkeypatch.setenv("GPUPERF_GPUS", str(tmp_path / "h200.toml"))
    assert get_gpu("H200").sms == h200.sms * 8
    np.testing.assert_allclose(_spread(), unit())
    assert gpu_distance("RTX 3090", "RTX A6000") != pytest.approx(before, rel=1e-9)
    monkeypatch.delenv("GPUPERF_GPUS")
    assert gpu_distance("RTX 3090", "RTX A6000") == pytest.approx(before, rel=1e-12)
