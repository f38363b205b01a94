"""References from the training GPUs nearest by descriptors (the ``transfer_near`` scenarios)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpuperf.errors import GpuperfError
from gpuperf.evaluation.reproduce import NEIGHBOURS, rodinia_table, scenario
from gpuperf.evaluation.transfer import NEIGHBOUR_DESCRIPTORS, cross_gpu_reference, gpu_distances

KEY = ["kernel"]


def launches() -> pd.DataFrame:
    """One launch on four GPUs whose clocks are 1, 2, 8 and 64 (other descriptors equal)."""
    clocks = {"w": 1.0, "x": 2.0, "y": 8.0, "z": 64.0}
    frame = pd.DataFrame({"kernel": "a", "gpu": list(clocks), "time_s": [2.0, 4.0, 16.0, 256.0]})
    for column in NEIGHBOUR_DESCRIPTORS:
        frame[column] = 1.0
    frame["gpu_clock_mhz"] = frame["gpu"].map(clocks)
    return frame


def test_distances_compare_log2_descriptors():
    distances = gpu_distances(launches())
    # log2 clocks 0, 1, 3, 6: x is nearest w, y nearest x.
    assert distances.loc["w", "x"] < distances.loc["x", "y"] < distances.loc["y", "z"]
    assert np.allclose(np.diag(distances), 0.0) and np.allclose(distances, distances.T)
    with pytest.raises(GpuperfError, match="gpu_cores"):
        gpu_distances(launches().drop(columns="gpu_cores"))


def test_neighbour_reference_averages_the_nearest_other_training_gpus():
    frame = launches()
    train = frame["gpu"].ne("y")
    one = cross_gpu_reference(frame, train, key=KEY, neighbours=1)
    # w: x (log2 time 2); x: w (1); y (held out): x (2); z: nearest training GPU other than z is x.
    assert one.tolist() == [2.0, 1.0, 2.0, 2.0]
    two = cross_gpu_reference(frame, train, key=KEY, neighbours=2)
    assert two.tolist() == [(2 + 8) / 2, (1 + 8) / 2, (1 + 2) / 2, (1 + 2) / 2]
    # As many neighbours as training GPUs: the plain reference.
    assert np.allclose(cross_gpu_reference(frame, train, key=KEY, neighbours=3),
                       cross_gpu_reference(frame, train, key=KEY))
    # The held-out GPU's times never enter any reference.
    changed = frame.assign(time_s=np.where(train, frame["time_s"], 1e9))
    assert two.equals(cross_gpu_reference(changed, train, key=KEY, neighbours=2))
    with pytest.raises(GpuperfError, match="at least 1"):
        cross_gpu_reference(frame, train, key=KEY, neighbours=0)


@pytest.fixture(scope="module")
def small():
    table = rodinia_table()
    rows = table[table["gpu"].isin(["Tesla K40", "Tesla K20", "GTX Titan", "Quadro K5200"])]
    rows = rows[rows["kernel"].isin(["bpnn_layerforward_CUDA", "calculate_temp"])]
    return rows.groupby(["gpu", "kernel"]).head(15)


def test_transfer_near_predictions_for_a_held_out_gpu_ignore_its_measured_times(small, held_out_ignores_own_times):
    assert scenario("transfer_near", small).neighbours == NEIGHBOURS
    _, held_out = held_out_ignores_own_times(small, "transfer_near", "Tesla K20", max_train_rows=15)
    assert held_out.sum() == (small["gpu"] == "Tesla K20").sum()
