"""Cross-GPU reference times and residual learning on them (the ``transfer`` scenario)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.dummy import DummyRegressor

from gpuperf.errors import GpuperfError
from gpuperf.evaluation.reproduce import BSP_FEATURES, PRIMARY_RUN, rodinia_table, run_protocol, run_rodinia, scenario
from gpuperf.evaluation.transfer import cross_gpu_reference
from gpuperf.models.reference import REFERENCE_COLUMN, ReferenceResidual

KEY = ["kernel"]


def launches() -> pd.DataFrame:
    """Two launches (keys a, b) on three GPUs; b is missing on GPU z."""
    return pd.DataFrame({
        "kernel": ["a", "a", "a", "b", "b"],
        "gpu": ["x", "y", "z", "x", "y"],
        "time_s": [2.0, 8.0, 32.0, 4.0, 16.0],
    })


def test_reference_averages_log2_times_of_the_other_training_gpus():
    frame = launches()
    train = frame["gpu"].ne("z")
    reference = cross_gpu_reference(frame, train, key=KEY)
    # x's row of a: y's time only (its own GPU left out); z (held out): mean of x and y.
    assert reference.tolist()[:3] == [3.0, 1.0, 2.0]
    assert reference.tolist()[3:] == [4.0, 2.0]
    everyone = cross_gpu_reference(frame, pd.Series(True, index=frame.index), key=KEY)
    assert everyone.tolist()[:3] == [4.0, 3.0, 2.0] and np.isnan(everyone.tolist()[3:]).sum() == 0


def test_reference_never_reads_the_held_out_gpus_times():
    frame = launches()
    train = frame["gpu"].ne("y")
    before = cross_gpu_reference(frame, train, key=KEY)
    changed = frame.assign(time_s=np.where(train, frame["time_s"], 1e9))
    assert before.equals(cross_gpu_reference(changed, train, key=KEY))
    # b was measured on x alone among the training GPUs: x's own row has no reference.
    assert np.isnan(before.iloc[3]) and before.iloc[4] == 2.0
    with pytest.raises(GpuperfError, match="missing column"):
        cross_gpu_reference(frame.drop(columns="gpu"), train, key=KEY)


def test_reference_residual_predicts_the_reference_scaled_by_the_learned_ratio():
    X = pd.DataFrame({REFERENCE_COLUMN: [1.0, 2.0, 3.0], "size": [1.0, 2.0, 3.0]})
    y = np.exp2(X[REFERENCE_COLUMN] + 1.0)  # every time twice its reference
    model = ReferenceResidual(DummyRegressor()).fit(X, y)
    new = pd.DataFrame({REFERENCE_COLUMN: [10.0], "size": [7.0]})
    assert model.predict(new) == pytest.approx([2.0 ** 11])
    with pytest.raises(GpuperfError, match=REFERENCE_COLUMN):
        model.predict(new.drop(columns=REFERENCE_COLUMN))


@pytest.fixture(scope="module")
def small():
    table = rodinia_table()
    rows = table[table["gpu"].isin(["Tesla K40", "Tesla K20", "GTX Titan"])]
    rows = rows[rows["kernel"].isin(["bpnn_layerforward_CUDA", "lud_diagonal", "calculate_temp"])]
    return rows.groupby(["gpu", "kernel"]).head(20)


def test_transfer_predictions_for_a_held_out_gpu_ignore_its_measured_times(small, held_out_ignores_own_times):
    # Titan trains the other folds: their references and predictions move (checked by the fixture).
    before, _ = held_out_ignores_own_times(small, "transfer", "GTX Titan", max_train_rows=20)
    assert len(before) == len(small) and (before["gpu"] == before["fold"]).all()
    with pytest.raises(GpuperfError, match="not for protocol kernel"):
        run_protocol(small, "transfer", "linear", "kernel")


def test_nested_selection_considers_transfer_for_gpu_wise_protocols_only(small):
    result = run_rodinia(small, scenarios=("bsp", "transfer"), models=("linear",),
                         protocols=("gpu", "kernel"), max_train_rows=20, inner_max_train_rows=20)
    assert "transfer/linear/gpu" in result.evaluations and "transfer/linear/kernel" not in result.evaluations
    assert not result.choices["kernel"]["choice"].str.contains("transfer").any()
    assert np.isfinite(result.macro("gpu").loc[PRIMARY_RUN]).all()


def test_reference_scenarios_add_the_reference_to_their_base_features(small):
    assert scenario("transfer", small).features == [*scenario("gpuperf", small).features, REFERENCE_COLUMN]
    assert scenario("transfer_bsp", small).features == [*BSP_FEATURES, REFERENCE_COLUMN]
    with pytest.raises(GpuperfError, match="transfer_bsp"):
        scenario("transfer_bs", small)


def test_a_held_out_gpu_with_nothing_to_score_is_skipped_not_an_error():
    """GPU C holds only kernel K, which no other GPU with a reference time has: its rows count as skipped and
    the other GPUs are scored (an error in the shared protocol code ended the whole run)."""
    from gpuperf.evaluation.transfer import REFERENCE_KEY, leave_one_group_out_with_reference
    from gpuperf.models.learned import make_model

    rows = []
    for size in range(1, 9):
        for kernel, gpu, seconds in (("L", "A", 1e-3), ("L", "B", 2e-3), ("K", "A", 3e-3), ("K", "C", 4e-3),
                                     ("L", "D", 1.2e-3), ("M", "D", 3.3e-3), ("M", "A", 3.1e-3)):
            rows.append({"kernel": kernel, "gpu": gpu, "time_s": seconds * size, "flops": float(size),
                         **dict.fromkeys(REFERENCE_KEY[1:], 1), "input.size.1": size})
    estimator = ReferenceResidual(make_model("linear", log_target=False, log_inputs=True))
    evaluation = leave_one_group_out_with_reference(estimator, pd.DataFrame(rows), ["flops", REFERENCE_COLUMN], "gpu")
    assert evaluation.skipped.get("C") == 8 and "C" not in evaluation.per_group.index
    assert {"A", "D"} <= set(evaluation.per_group.index)


@pytest.mark.parametrize("neighbours", [None, 1])
def test_a_launch_with_an_empty_key_value_has_a_reference(neighbours):
    """A one-dimensional size (input.size.2 empty) was dropped from the per-GPU means: no reference."""
    frame = launches().assign(size=[np.nan, np.nan, np.nan, 8.0, 8.0], gpu_clock_mhz=1000.0,
                              gpu_memory_bandwidth_gbs=500.0, gpu_cores=2048.0, gpu_cores_per_sm=128.0)
    reference = cross_gpu_reference(frame, frame["gpu"].ne("z"), key=["kernel", "size"], neighbours=neighbours)
    assert reference.iloc[2] == pytest.approx(2.0 if neighbours is None else 1.0) and reference.notna().all()
