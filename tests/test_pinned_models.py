"""Hand-worked checks on tiny inputs for the models' numbers, files and errors that mutation testing
found no test pinning: BSP hit rates and error rows, roofline calibration and f64 columns, the
selector's linkage, mutual information's bins and names, PCA + k-NN's defaults, the RBF SVR's C,
sample weights and unobserved properties of the linear count model, and checks on saved models."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpuperf.errors import GpuperfError
from gpuperf.models.bsp import BspModel
from gpuperf.models.learned import PcaKnnRegressor, make_model
from gpuperf.models.roofline import RooflineModel
from gpuperf.models.selection import (
    SpearmanClusterSelector,
    mutual_information_ranking,
    normalised_mutual_information,
)


def _launch(**columns) -> pd.DataFrame:
    base = {"threads": 1000.0, "instructions": 1000.0, "global_loads": 2.0, "global_stores": 2.0,
            "gpu_clock_hz": 1e9, "gpu_cores": 100.0}
    rows = max(len(np.atleast_1d(value)) for value in columns.values()) if columns else 1
    return pd.DataFrame({name: np.broadcast_to(value, rows) for name, value in (base | columns).items()})


@pytest.mark.parametrize(("role", "cycles"), [("l1_hit_rate", 624.0), ("l2_hit_rate", 1800.0)])
def test_bsp_a_hit_rate_just_above_one_predicts_no_time_even_where_the_cost_stays_positive(role, cycles):
    # h = 1.2 on 4 accesses: 4.8 hits, misses -0.8. L1: cycles 1000 - 0.8 * 500 + 4.8 * 5 = 624 > 0;
    # L2: 1000 - 400 + 4.8 * 250 = 1800 > 0. Yet more hits than accesses is no time (NaN), as the
    # docstring's [0, 1] fractions say.
    rows = _launch(h=[0.5, 1.2])
    assert BspModel(**{role: "h"}).cycles(rows)[1] == pytest.approx(cycles)
    model = BspModel(**{role: "h"}).fit(rows.iloc[:1], [1e-3])
    predicted = model.predict(rows)
    assert predicted[0] == pytest.approx(1e-3) and np.isnan(predicted[1])
    assert model.undefined_rows(rows).tolist() == [False, True]


def test_bsp_fit_names_the_first_row_without_a_time():
    # Rows 2 and 3 have no work (0 instructions, 0 accesses): the error names row 2, the first.
    rows = _launch(instructions=[1000.0, 0.0, 0.0], global_loads=[2.0, 0.0, 0.0], global_stores=[2.0, 0.0, 0.0])
    with pytest.raises(GpuperfError, match=r"BspModel: row 2 of the fitted rows: .*\(2 such rows\)"):
        BspModel().fit(rows, [1e-3, 1e-3, 1e-3])


def _roofline_rows(**columns) -> pd.DataFrame:
    base = {"flops": [1e12, 1e14], "dram_bytes": [0.0, 0.0], "gpu_peak_f32_gflops": [1e4, 1e4],
            "gpu_memory_bandwidth_gbs": [100.0, 100.0]}
    return pd.DataFrame(base | columns)


def test_roofline_efficiency_is_the_geometric_mean_of_bound_over_measured():
    # Bounds 0.1 s and 10 s, measured 0.1 s and 2.5 s: ratios 1 and 4, geometric mean 2 (arithmetic 2.5).
    rows = _roofline_rows()
    model = RooflineModel(calibrate=True).fit(rows, [0.1, 2.5])
    assert model.efficiency_ == pytest.approx(2.0)
    assert np.allclose(model.predict(rows), [0.05, 5.0])


def test_roofline_a_kernel_without_f64_work_needs_no_f64_peak():
    # A GPU with no published f64 peak (NaN) runs an f32-only launch: 1e12 flops at 1e4 GFLOP/s = 0.1 s.
    rows = _roofline_rows(flops_f64=[0.0, 1e9], gpu_peak_f64_gflops=[np.nan, 100.0])
    predicted = RooflineModel(flops_f64="flops_f64").fit(rows).predict(rows)
    assert predicted == pytest.approx([0.1, 10.0 + 0.01])


def test_selector_clusters_with_average_linkage_by_default():
    # Ranks of 4 rows: r(a, b) = r(a, c) = 1 - 2/10 = 0.8, r(b, c) = 1 - 4/10 = 0.6. Distances 0.2, 0.2, 0.4:
    # a joins b at 0.2, then c joins at the average of 0.2 and 0.4, 0.3 (complete linkage: 0.4).
    X = pd.DataFrame({"a": [1.0, 2, 3, 4], "b": [1.0, 2, 4, 3], "c": [2.0, 1, 3, 4]})
    selector = SpearmanClusterSelector(k=1).fit(X, X["a"])
    assert selector.scores_ == pytest.approx([1.0, 0.8, 0.8])
    assert selector.linkage_[:, 2] == pytest.approx([0.2, 0.3])
    assert list(selector.get_feature_names_out()) == ["a"]  # equal variances: the first


def test_normalised_mutual_information_uses_ten_bins_by_default():
    # x = 0..9 in 10 bins determines y = x mod 2: I = ln 2, R = ln 2 / (ln 10 + ln 2). In 5 bins each
    # bin holds one even and one odd x: I = 0.
    x, y = np.arange(10.0), np.arange(10) % 2
    assert normalised_mutual_information(x, y) == pytest.approx(np.log(2) / np.log(20))
    assert normalised_mutual_information(x, y, bins=5) == pytest.approx(0.0, abs=1e-12)


def test_mutual_information_ranking_names_an_arrays_columns_x0_x1():
    # Column 1 equals y (R = 1/2); column 0 is constant (R = 0).
    y = np.arange(10.0)
    ranking = mutual_information_ranking(np.column_stack([np.ones(10), y]), y)
    assert list(ranking.index) == ["x1", "x0"]
    assert ranking.tolist() == pytest.approx([0.5, 0.0])


def test_roofline_lists_the_f64_work_column_among_those_it_reads():
    assert RooflineModel(flops_f64="f64").columns() == [
        "flops", "f64", "dram_bytes", "gpu_peak_f32_gflops", "gpu_peak_f64_gflops", "gpu_memory_bandwidth_gbs"]


def _two_correlated_columns():
    # Standardised, the columns correlate r = 2 / sqrt(5) = 0.894: the first component explains
    # (1 + r) / 2 = 94.7 % of the variance, short of 95 %.
    return np.array([[-1.0, -3.0], [-1.0, -1.0], [1.0, 1.0], [1.0, 3.0]])


def test_pca_knn_keeps_a_second_component_when_the_first_explains_under_95_percent():
    model = PcaKnnRegressor().fit(_two_correlated_columns(), [1.0, 2.0, 3.0, 10.0])
    pca = model.pipeline_.named_steps["pca"]
    assert pca.explained_variance_ratio_[0] == pytest.approx((1 + 2 / np.sqrt(5)) / 2)
    assert pca.n_components_ == 2


def test_pca_knn_on_fewer_rows_than_neighbours_averages_all_of_them():
    # 4 training rows, 5 neighbours asked: every prediction is the mean of the 4 targets, 4.0.
    model = PcaKnnRegressor().fit(_two_correlated_columns(), [1.0, 2.0, 3.0, 10.0])
    assert model.predict(np.array([[0.0, 0.0], [5.0, -5.0]])).tolist() == pytest.approx([4.0, 4.0])


def test_rbf_svr_fits_two_far_apart_times_closely():
    # Standardised x = -1, 1; log2 targets 0, 20; RBF gamma 1: K = exp(-4). Symmetric duals -a, a and
    # intercept 10 would need a (1 - e^-4) = 9.9, a = 10.08, above C = 10: a = C = 10, so
    # f(-1) = 10 - 10 (1 - e^-4) = 0.183 and the predictions are 2^0.183 and 2^19.817.
    X = np.array([[0.0], [1.0]])
    predicted = make_model("svr_rbf").fit(X, [1.0, 2.0**20]).predict(X)
    low = 10 * np.exp(-4.0)
    assert predicted == pytest.approx([2.0**low, 2.0 ** (20 - low)], rel=1e-3)


def test_linear_count_model_a_zero_sample_weight_leaves_its_row_out():
    # Rows 1 and 2 take 1 us per f32 op; row 3 (weight 0) would pull the weight up: the fit gives 1e-6.
    from gpuperf.models.linear import LinearCountModel

    frame = pd.DataFrame({"f32_ops": [1.0, 2.0, 1.0]})
    model = LinearCountModel(properties=["f32_ops"]).fit(frame, [1e-6, 2e-6, 5e-6], sample_weight=[1.0, 1.0, 0.0])
    assert model.weights_ == {"f32_ops": pytest.approx(1e-6, rel=1e-10)}


def test_normalised_mutual_information_of_two_constants_is_zero():
    # One bin each: H(X) = H(Y) = 0, nothing shared, R = 0 (not 1/2, which is for identical values).
    assert normalised_mutual_information([3.0, 3.0, 3.0], [7.0, 7.0, 7.0]) == 0.0


def _saved_linear_count_model(tmp_path):
    from gpuperf.models.linear import LinearCountModel
    from gpuperf.models.persistence import save_model

    frame = pd.DataFrame({"f32_ops": [1.0, 2.0]})
    return save_model(LinearCountModel(properties=["f32_ops"]).fit(frame, [1e-6, 2e-6]), tmp_path / "m.json")


def test_a_saved_array_edited_to_hold_text_is_refused_not_cast(tmp_path):
    import json

    from gpuperf.models.persistence import load_model

    path = _saved_linear_count_model(tmp_path)
    document = json.loads(path.read_text())
    coef = document["model"]["state"]["__mapping__"]["coef_"]
    assert coef["data"] == [pytest.approx(1e-6)]
    coef["data"] = ["5e-6"]  # text that numpy would cast to 5e-6 without a word
    path.write_text(json.dumps(document))
    with pytest.raises(GpuperfError, match=r"damaged model file: an array \(its values are not of its dtype <f8\)"):
        load_model(path)


def test_a_text_array_gets_the_width_of_its_values_not_the_width_its_dtype_names():
    from gpuperf.models.persistence import _decode_array

    array = _decode_array({"__ndarray__": "<U1000000", "shape": [3], "data": ["ab", "c", "def"]}, "m.json")
    assert array.dtype == np.dtype("<U3") and array.tolist() == ["ab", "c", "def"]  # not 3 x 4 MB


@pytest.mark.parametrize("dtype", ["(100000,)<f8", "<c32", "V8", "S5", 7])
def test_an_array_dtype_a_model_file_never_holds_is_refused(dtype):
    from gpuperf.models.persistence import _decode_array

    with pytest.raises(GpuperfError, match=r"m.json: damaged model file: an array \(.*"):
        _decode_array({"__ndarray__": dtype, "shape": [1], "data": [1.0]}, "m.json")


def test_checking_feature_names_of_a_model_saved_without_them_is_a_named_error(tmp_path):
    from gpuperf.models.persistence import load_model, save_model

    model = make_model("linear", log_target=False).fit(np.array([[1.0], [2.0], [3.0]]), [1.0, 2.0, 3.0])
    path = save_model(model, tmp_path / "plain.json")  # fitted on an array: no feature names
    assert load_model(path).predict(np.array([[4.0]])) == pytest.approx([4.0])
    with pytest.raises(GpuperfError, match="plain.json: the model was saved without feature names; cannot check them"):
        load_model(path, feature_names=["x"])


def test_a_calibration_with_one_point_per_property_fits_and_lists_the_unobserved_one():
    # vector_copy at n = 2^16, 2^18, 2^20 loads 4 n bytes; times 2 us + 1e-10 s per byte: an exact fit
    # on 3 points for 3 properties, and no point has a barrier (weight 0, listed as unobserved).
    from gpuperf.kernels import get_kernel
    from gpuperf.models.linear_calibration import DeviceInfo, fit_calibration

    kernel = get_kernel("vector_copy")
    points = pd.DataFrame([{"kernel": "vector_copy", "sizes": f"n={n}", "sizes_dict": kernel.resolve_sizes({"n": n}),
                            "time_s": 2e-6 + 4 * n * 1e-10, "passes": 1} for n in (65536, 262144, 1048576)])
    calibration = fit_calibration(points, DeviceInfo("opencl:0:0", "test CPU", "cpu"), "store.sqlite",
                                  properties=["launches", "global_load_bytes", "barriers"])
    weights = calibration.metadata["weights"]
    assert weights["launches"] == pytest.approx(2e-6, rel=1e-6)
    assert weights["global_load_bytes"] == pytest.approx(1e-10, rel=1e-6)
    assert weights["barriers"] == 0.0
    assert calibration.metadata["unobserved_properties"] == ["barriers"]


def test_a_calibrated_model_whose_listed_weight_was_edited_slightly_is_refused(tmp_path):
    import json

    from gpuperf.models.linear import LinearCountModel
    from gpuperf.models.linear_calibration import Calibration, DeviceInfo, load_linear_model, save_calibration

    frame = pd.DataFrame({"launches": [1.0, 1.0], "work_items": [1e3, 1e5]})
    model = LinearCountModel(properties=["launches", "work_items"]).fit(frame, [2e-6, 1.1e-5])
    metadata = {"kind": "linear_count_model", "weights": model.weights_}
    path = save_calibration(Calibration(model, DeviceInfo("opencl:0:0", "cpu", "cpu"), frame, metadata),
                            tmp_path / "model.json")
    assert load_linear_model(path)[1]["weights"]["launches"] == pytest.approx(model.coef_[0], rel=1e-12)
    document = json.loads(path.read_text())
    document["metadata"]["weights"]["launches"] *= 1.0001  # one part in 10^4: not the weight it predicts with
    path.write_text(json.dumps(document))
    with pytest.raises(GpuperfError, match="metadata.weights.launches is .*, but the model predicts with"):
        load_linear_model(path)


def test_model_info_of_a_json_model_with_an_embedded_skops_payload_is_its_header_only(tmp_path):
    from gpuperf.models.persistence import model_info, save_model

    X = pd.DataFrame({"loads": [1.0, 2.0, 3.0, 4.0], "stores": [4.0, 3.0, 2.0, 1.0]})
    model = make_model("random_forest").fit(X, [1.0, 2.0, 3.0, 4.0])
    path = save_model(model, tmp_path / "forest.json", metadata={"note": "tiny"})
    assert "model_skops" in path.read_text()
    info = model_info(path)
    assert set(info) == {"format", "format_version", "gpuperf_version", "feature_names", "metadata"}
    assert info["feature_names"] == ["loads", "stores"] and info["metadata"] == {"note": "tiny"}


def test_a_model_file_with_an_empty_gpuperf_version_is_refused(tmp_path):
    import json

    from gpuperf.models.persistence import load_model

    path = _saved_linear_count_model(tmp_path)
    document = json.loads(path.read_text())
    document["gpuperf_version"] = ""
    path.write_text(json.dumps(document))
    with pytest.raises(GpuperfError, match="m.json: damaged model file: it records no gpuperf_version"):
        load_model(path)


def test_a_calibration_is_saved_only_as_json(tmp_path):
    from gpuperf.models.linear import LinearCountModel
    from gpuperf.models.linear_calibration import Calibration, DeviceInfo, save_calibration

    frame = pd.DataFrame({"launches": [1.0, 1.0]})
    model = LinearCountModel(properties=["launches"]).fit(frame, [2e-6, 2e-6])
    calibration = Calibration(model, DeviceInfo("opencl:0:0", "cpu", "cpu"), frame, {"kind": "linear_count_model"})
    with pytest.raises(GpuperfError, match=r"model.skops: a linear count model is saved as .json"):
        save_calibration(calibration, tmp_path / "model.skops")
    assert not (tmp_path / "model.skops").exists()
