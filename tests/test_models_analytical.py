"""BSP and roofline models: formulas on hand-computed rows, calibration, contract, column errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.pipeline import make_pipeline

from gpuperf.errors import GpuperfError
from gpuperf.models.bsp import BspModel
from gpuperf.models.roofline import RooflineModel


def _bsp_rows():
    return pd.DataFrame(
        {
            "threads": [1000.0, 2000.0],
            "instructions": [10.0, 10.0],
            "global_loads": [2.0, 4.0],
            "global_stores": [2.0, 0.0],
            "shared_loads": [1.0, 0.0],
            "shared_stores": [1.0, 0.0],
            "l1": [0.25, 0.0],
            "l2": [0.5, 0.5],
            "gpu_clock_hz": [1e9, 1e9],
            "gpu_cores": [100.0, 100.0],
        }
    )


def _bsp():
    return BspModel(shared_loads="shared_loads", shared_stores="shared_stores", l1_hit_rate="l1", l2_hit_rate="l2")


def test_bsp_cycles_follow_the_formula():
    rows = _bsp_rows()
    # row 0: 4 accesses, L1 = 1, L2 = 0.5 * 3 = 1.5, misses 1.5; comp 10; shared 2 * 5
    expected0 = 10 + 1.5 * 500 + 1 * 5 + 1.5 * 250 + 2 * 5
    # row 1: 4 accesses, L1 = 0, L2 = 2, misses 2
    expected1 = 10 + 2 * 500 + 2 * 250
    assert np.allclose(_bsp().cycles(rows), [expected0, expected1])
    assert np.allclose(_bsp().uncalibrated_time(rows), [1000 * expected0 / 1e11, 2000 * expected1 / 1e11])


def test_bsp_calibrates_lambda_on_one_row_and_predicts_the_others():
    rows = _bsp_rows()
    truth = _bsp().uncalibrated_time(rows) / 4.0  # a GPU four times faster than the bare model
    model = _bsp().fit(rows.iloc[[0]], truth[:1])
    assert model.lambda_ == pytest.approx(4.0)
    assert np.allclose(model.predict(rows), truth)


def test_bsp_is_clonable_and_usable_in_a_pipeline():
    rows = _bsp_rows()
    model = clone(_bsp())
    assert model.get_params()["l2_hit_rate"] == "l2"
    times = np.array([1e-3, 2e-3])
    predicted = make_pipeline(model).fit(rows, times).predict(rows)
    assert predicted.shape == (2,)
    # lambda is the geometric mean of the rows' ratios, so the predicted/measured ratios multiply to 1
    assert np.prod(predicted / times) == pytest.approx(1.0) and predicted[0] != pytest.approx(predicted[1])


def test_bsp_names_missing_columns_and_rejects_bad_times():
    rows = _bsp_rows().drop(columns=["gpu_cores", "l2"])
    with pytest.raises(GpuperfError, match="missing column.*gpu_cores.*l2|missing column.*l2.*gpu_cores"):
        _bsp().fit(rows, [1.0, 1.0])
    with pytest.raises(GpuperfError, match="positive"):
        _bsp().fit(_bsp_rows(), [1.0, 0.0])
    with pytest.raises(GpuperfError, match="DataFrame"):
        _bsp().fit(_bsp_rows().to_numpy(), [1.0, 1.0])
    for times in (None, 1.0, [[1.0, 2.0], [1.0, 2.0]]):  # one measured time per row
        with pytest.raises(GpuperfError, match=r"BspModel: needs one measured time per row \(2 rows\)"):
            _bsp().fit(_bsp_rows(), times)


def test_roofline_takes_the_larger_of_compute_and_memory_time():
    rows = pd.DataFrame(
        {
            "flops": [1e12, 1e9],
            "dram_bytes": [1e9, 1e12],
            "gpu_peak_f32_gflops": [1e4, 1e4],
            "gpu_memory_bandwidth_gbs": [100.0, 100.0],
        }
    )
    model = RooflineModel().fit(rows)
    assert np.allclose(model.predict(rows), [0.1, 10.0])
    calibrated = RooflineModel(calibrate=True).fit(rows, [0.2, 20.0])
    assert calibrated.efficiency_ == pytest.approx(0.5)
    assert np.allclose(calibrated.predict(rows), [0.2, 20.0])
    with pytest.raises(GpuperfError, match="gpu_peak_f32_gflops"):
        model.predict(rows.drop(columns=["gpu_peak_f32_gflops"]))
    with pytest.raises(GpuperfError, match="RooflineModel: 2 rows but 1 measured times"):
        RooflineModel(calibrate=True).fit(rows, [1.0])
    double = rows.assign(flops_f64=[1e11, 0.0], gpu_peak_f64_gflops=[100.0, 100.0])
    assert np.allclose(RooflineModel(flops_f64="flops_f64").fit(double).predict(double), [1.1, 10.0])


def test_roofline_calibrate_must_be_a_truth_value():
    """calibrate="no" was taken as true (and calibrated), while LinearCountModel checks its relative."""
    rows = pd.DataFrame({"flops": [1e12], "dram_bytes": [1e9], "gpu_peak_f32_gflops": [1e4],
                         "gpu_memory_bandwidth_gbs": [100.0]})
    with pytest.raises(GpuperfError, match="^RooflineModel: calibrate must be True or False, not 'no'$"):
        RooflineModel(calibrate="no").fit(rows, [0.2])
    assert RooflineModel(calibrate=np.bool_(True)).fit(rows, [0.2]).efficiency_ == pytest.approx(0.5)


def test_named_columns_refuse_text_that_is_no_number_and_read_a_missing_value_as_nan():
    rows = pd.DataFrame({"flops": ["1e12", "3,000"], "dram_bytes": [1e9, 1e12],
                         "gpu_peak_f32_gflops": [1e4, 1e4], "gpu_memory_bandwidth_gbs": [100.0, 100.0]})
    with pytest.raises(GpuperfError, match=r"RooflineModel: row 2: flops='3,000' is not a number"):
        RooflineModel().fit(rows).predict(rows)
    predicted = RooflineModel().fit(rows.assign(flops=1e12)).predict(rows.assign(flops=[1e12, None]))
    assert predicted[0] == pytest.approx(0.1) and np.isnan(predicted[1])


def test_bsp_lambda_is_the_geometric_mean_of_the_rows_ratios():
    """Ratios 1 and 4: lambda 2 (the arithmetic mean would be 2.5)."""
    from gpuperf.models.bsp import BspModel
    rows = pd.DataFrame({"threads": [1000.0, 2000.0], "instructions": [10.0, 10.0], "global_loads": [2.0, 4.0],
                         "global_stores": [2.0, 0.0], "gpu_clock_hz": [1e9, 1e9], "gpu_cores": [100.0, 100.0]})
    t = BspModel().uncalibrated_time(rows)
    assert BspModel().fit(rows, [t[0] / 1.0, t[1] / 4.0]).lambda_ == pytest.approx(2.0)
    with pytest.raises(GpuperfError, match="BspModel: no rows to fit"):
        BspModel().fit(rows.iloc[:0], [])
    with pytest.raises(GpuperfError, match="BspModel: 2 rows but 1 measured times"):
        BspModel().fit(rows, [1.0])


def test_roofline_efficiency_ignores_rows_without_a_bound():
    """The first row is bound at 0.1 s and took 0.2 s; the second has no work to bound."""
    from gpuperf.models.roofline import RooflineModel
    rows = pd.DataFrame({"flops": [1e12, 0.0], "dram_bytes": [1e9, 0.0],
                         "gpu_peak_f32_gflops": [1e4, 1e4], "gpu_memory_bandwidth_gbs": [100.0, 100.0]})
    model = RooflineModel(calibrate=True).fit(rows, [0.2, 1.0])
    assert model.efficiency_ == pytest.approx(0.5)


def test_bsp_predicts_nan_where_its_inputs_give_no_positive_time():
    """A hit rate above 1 takes more hits than accesses (a negative cost): no time, as for a missing input."""
    rows = pd.DataFrame({"threads": [1e4] * 3, "instructions": [100.0] * 3, "global_loads": [10.0] * 3,
                         "global_stores": [1.0] * 3, "gpu_clock_hz": [1e9] * 3, "gpu_cores": [1e3] * 3,
                         "h": [0.5, 1.5, np.nan]})
    model = BspModel(l1_hit_rate="h").fit(rows.iloc[:1], [1e-3])
    predicted = model.predict(rows)
    assert predicted[0] == pytest.approx(1e-3) and np.isnan(predicted[1:]).all()
    assert model.undefined_rows(rows).tolist() == [False, True, True]


def test_analytical_models_take_times_as_one_column_and_score_only_defined_predictions():
    """A one-column table of times was refused by BspModel with a misleading message ('one measured
    time per row (3)' for 3 rows) and a 2 x 2 table taken by RooflineModel (raveled to 4 values,
    with 4 rows); score() on a row with no BSP time raised scikit-learn's 'Input contains NaN'."""
    from gpuperf.models.bsp import BspModel

    rows = pd.DataFrame({"threads": [1000.0, 2000.0], "instructions": [10.0, 10.0], "global_loads": [2.0, 4.0],
                         "global_stores": [2.0, 0.0], "gpu_clock_hz": [1e9, 1e9], "gpu_cores": [100.0, 100.0]})
    times = BspModel().uncalibrated_time(rows) / 2.0
    as_table = BspModel().fit(rows, pd.DataFrame({"time_s": times}))
    assert as_table.lambda_ == pytest.approx(2.0) and as_table.score(rows, times) == pytest.approx(1.0)
    with pytest.raises(GpuperfError, match=r"BspModel: 1 of 2 rows have no predicted time .*the first row 2"):
        as_table.score(rows.assign(instructions=[10.0, np.nan]), times)
    roof = pd.DataFrame({"flops": [1e12, 1e9, 1e9, 1e9], "dram_bytes": [1e9, 1e12, 1e9, 1e9],
                         "gpu_peak_f32_gflops": 1e4, "gpu_memory_bandwidth_gbs": 100.0})
    with pytest.raises(GpuperfError, match=r"RooflineModel: needs one measured time per row \(4 rows\), "
                       r"got shape \(2, 2\)"):
        RooflineModel(calibrate=True).fit(roof, [[0.2, 20.0], [0.1, 0.1]])
    with pytest.raises(GpuperfError, match="RooflineModel: 1 of 4 rows have no predicted time"):
        RooflineModel().fit(roof).score(roof.assign(flops=[1e12, np.nan, 1e9, 1e9]), [0.1, 10.0, 0.01, 0.01])


def test_bsp_names_a_hit_rate_outside_zero_to_one_and_a_repeated_column():
    rows = _bsp_rows()
    rows.loc[1, "l2"] = 50.0  # nvprof's percentage
    with pytest.raises(GpuperfError, match=r"BspModel: row 2: l2=50.0 is not a fraction in \[0, 1\] \(1 such rows; a "
                                           "percentage must be divided by 100\\)"):
        _bsp().fit(rows, [1e-3, 2e-3])
    model = _bsp().fit(_bsp_rows(), [1e-3, 2e-3])
    assert np.isnan(model.predict(rows)).tolist() == [False, True]  # predicted: no time, as for a missing input
    doubled = pd.concat([_bsp_rows(), _bsp_rows()[["threads"]]], axis=1)
    with pytest.raises(GpuperfError, match="column.s. threads appear more than once"):
        _bsp().fit(doubled, [1e-3, 2e-3])


def test_bad_measured_times_are_named_by_row_for_the_analytical_and_count_models():
    for times in ([1e-3, np.inf], [1e-3, np.nan], [1e-3, -1.0]):
        with pytest.raises(GpuperfError, match="BspModel: measured times must be positive, finite numbers; row 2 of"):
            _bsp().fit(_bsp_rows(), times)
    from gpuperf.models.linear import LinearCountModel

    X = pd.DataFrame({"f32_ops": [1.0, 2.0]})
    with pytest.raises(GpuperfError, match=r"LinearCountModel: needs one measured time per row \(2 rows\), got none"):
        LinearCountModel(properties=["f32_ops"]).fit(X, None)
    with pytest.raises(GpuperfError, match=r"LinearCountModel: needs one measured time per row \(2 rows\), got shape \(2, 2\)"):
        LinearCountModel(properties=["f32_ops"]).fit(X, [[1.0, 1.0], [2.0, 2.0]])


def _bsp_launch(**columns) -> pd.DataFrame:
    base = {"threads": 1000.0, "instructions": 100.0, "global_loads": 2.0, "global_stores": 2.0,
            "gpu_clock_hz": 1e9, "gpu_cores": 100.0}
    rows = max(len(np.atleast_1d(value)) for value in columns.values()) if columns else 1
    return pd.DataFrame({name: np.broadcast_to(value, rows) for name, value in (base | columns).items()})


def test_bsp_counts_each_instruction_at_its_cycles_per_instruction():
    rows = _bsp_launch()
    extra = BspModel(cycles_per_instruction=4.0).cycles(rows) - BspModel(cycles_per_instruction=1.0).cycles(rows)
    np.testing.assert_allclose(extra, 3 * 100.0)


def test_bsp_time_of_a_launch_with_no_work_is_undefined_not_zero():
    rows = _bsp_launch(instructions=[100.0, 0.0], global_loads=[2.0, 0.0], global_stores=[2.0, 0.0])
    model = BspModel().fit(rows.iloc[:1], [1e-3])
    predicted = model.predict(rows)
    assert predicted[0] == pytest.approx(1e-3) and np.isnan(predicted[1])
    assert model.undefined_rows(rows).tolist() == [False, True]


def test_bsp_hit_rates_outside_0_to_1_are_undefined_or_refused():
    rows = _bsp_launch(h=[0.5, -0.5])
    model = BspModel(l1_hit_rate="h").fit(rows.iloc[:1], [1e-3])
    assert np.isnan(model.predict(rows)[1])
    with pytest.raises(GpuperfError, match="percent"):
        BspModel(l1_hit_rate="h").fit(_bsp_launch(h=[0.5, 50.0]), [1e-3, 1e-3])


def test_roofline_calibrates_only_on_rows_with_a_finite_positive_bound():
    rows = pd.DataFrame({"flops": [1e12, 1e9], "dram_bytes": [1e9, 1e9], "gpu_peak_f32_gflops": [1e4, 0.0],
                         "gpu_memory_bandwidth_gbs": [100.0, 100.0]})
    # Row 1: compute 0.1 s, memory 0.01 s -> bound 0.1 s against 0.2 s; row 2's zero peak gives no bound.
    assert RooflineModel(calibrate=True).fit(rows, [0.2, 1.0]).efficiency_ == pytest.approx(0.5)
    nothing = pd.DataFrame({"flops": [0.0], "dram_bytes": [0.0], "gpu_peak_f32_gflops": [1e4],
                            "gpu_memory_bandwidth_gbs": [100.0]})
    with pytest.raises(GpuperfError, match="no training row has a bound"):
        RooflineModel(calibrate=True).fit(nothing, [1.0])


def test_roofline_reads_the_f64_peak_only_with_an_f64_work_column():
    assert "gpu_peak_f64_gflops" not in RooflineModel().columns()
    assert "gpu_peak_f64_gflops" in RooflineModel(flops_f64="flops_f64").columns()


def test_a_roofline_without_a_column_it_needs_is_one_error():
    rows = pd.DataFrame({"flops": [1e9], "dram_bytes": [1e6], "f64": [1e9], "gpu_peak_f32_gflops": [1e4],
                         "gpu_memory_bandwidth_gbs": [900.0]})
    with pytest.raises(GpuperfError, match=r"peak_f64 must name a column \(flops_f64 is set\)"):
        RooflineModel(flops_f64="f64", peak_f64=None).fit(rows)
    with pytest.raises(GpuperfError, match="RooflineModel: flops, bandwidth must name a column"):
        RooflineModel(flops=None, bandwidth=None).fit(rows)
    assert RooflineModel(peak_f64=None).fit(rows).predict(rows)[0] == pytest.approx(1e-4)


def test_a_roofline_refit_that_fails_leaves_the_fitted_efficiency_as_it_was():
    """The efficiency was reset to 1 before the times were checked: a failed refit left a model 2x off
    that still predicted."""
    rows = pd.DataFrame({"flops": [1e12, 1e9], "dram_bytes": [1e9, 1e12], "gpu_peak_f32_gflops": [1e4, 1e4],
                         "gpu_memory_bandwidth_gbs": [100.0, 100.0]})
    model = RooflineModel(calibrate=True).fit(rows, [0.2, 20.0])
    with pytest.raises(GpuperfError, match="measured times"):
        model.fit(rows, [0.2, float("nan")])
    assert model.efficiency_ == pytest.approx(0.5)
    assert np.allclose(model.predict(rows), [0.2, 20.0])


def test_the_roofline_refuses_negative_work():
    import pandas as pd

    from gpuperf.errors import GpuperfError
    from gpuperf.models.roofline import RooflineModel

    X = pd.DataFrame({"flops": [1e9, -1.0], "dram_bytes": [1e9, 1e9], "gpu_peak_f32_gflops": [1e4, 1e4],
                      "gpu_memory_bandwidth_gbs": [1e3, 1e3]})
    with pytest.raises(GpuperfError, match="row 1: flops=-1 is work done, which cannot be negative"):
        RooflineModel().fit(X, [1e-3, 1e-3])


@pytest.mark.parametrize("column", ["dram_bytes", "flops_f64"])
def test_the_roofline_refuses_negative_bytes_and_f64_work(column):
    X = pd.DataFrame({"flops": [1e9, 1e9], "flops_f64": [0.0, 0.0], "dram_bytes": [1e9, 1e9],
                      "gpu_peak_f32_gflops": [1e4, 1e4], "gpu_peak_f64_gflops": [5e3, 5e3],
                      "gpu_memory_bandwidth_gbs": [1e3, 1e3]})
    X.loc[1, column] = -0.5
    with pytest.raises(GpuperfError, match=f"row 1: {column}=-0.5 is work done"):
        RooflineModel(flops_f64="flops_f64", peak_f64="gpu_peak_f64_gflops").fit(X, [1e-3, 1e-3])


@pytest.mark.parametrize("params, message", [
    ({"global_latency": "500"}, "global_latency must be a finite number of at least 0"),  # a value from a config file
    ({"l1_latency": -5.0}, "l1_latency must be a finite number of at least 0"),
    ({"cycles_per_instruction": float("nan")}, "cycles_per_instruction must be a finite number of at least 0"),
    ({"shared_latency": True}, "shared_latency must be a finite number of at least 0"),
    ({"threads": None, "cores": None}, "threads, cores must name a column"),
])
def test_bsp_names_a_bad_cost_or_an_unnamed_required_input(params, message):
    """A grid search over the latencies, or set_params after fitting, meets a gpuperf error naming the
    parameter, not numpy's 'ufunc multiply' nor a negative latency priced silently."""
    rows, times = _bsp_rows(), np.array([1e-3, 2e-3])
    with pytest.raises(GpuperfError, match=message):
        _bsp().set_params(**params).fit(rows, times)
    fitted = _bsp().fit(rows, times)
    with pytest.raises(GpuperfError, match=message):
        fitted.set_params(**params).predict(rows)


def test_a_missing_column_named_by_a_number_is_named_in_the_error():
    """A DataFrame's columns may be numbers (a frame built from an array), and so the names given: a
    missing one is a gpuperf error naming it, not a TypeError from joining the names."""
    with pytest.raises(GpuperfError, match="BspModel: missing column.*3"):
        BspModel(instructions=3).fit(_bsp_rows(), [1e-3, 2e-3])
    with pytest.raises(GpuperfError, match="RooflineModel: missing column.*flops.*|RooflineModel: missing column.*7"):
        RooflineModel(memory_bytes=7).fit(pd.DataFrame({"flops": [1.0]}))
    numbered = _bsp_rows().rename(columns={"instructions": 3})
    assert BspModel(instructions=3).fit(numbered, [1e-3, 2e-3]).predict(numbered).shape == (2,)


def test_bsp_fitted_on_something_without_rows_asks_for_a_dataframe():
    """scikit-learn's check_regressor_data_not_an_array: an input with no len() met a TypeError before
    the DataFrame check."""
    class NotAnArray:  # as scikit-learn's: an array-like through __array__ only
        def __init__(self, data):
            self.data = data

        def __array__(self, dtype=None, copy=None):
            return np.asarray(self.data, dtype=dtype)

    with pytest.raises(GpuperfError, match="BspModel: expects a pandas DataFrame with named columns"):
        BspModel().fit(NotAnArray(_bsp_rows().to_numpy()), [1e-3, 2e-3])
    with pytest.raises(GpuperfError, match="BspModel: no rows to fit"):
        _bsp().fit(_bsp_rows().iloc[:0], [])
