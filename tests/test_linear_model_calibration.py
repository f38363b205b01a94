"""Calibrating the linear count model on the local OpenCL device, saving it and predicting with it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuperf.cli import main
from gpuperf.errors import GpuperfError
from gpuperf.kernels import get_kernel
from gpuperf.measure.store import Store
from gpuperf.models import linear_calibration
from gpuperf.models.linear import LinearCountModel
from gpuperf.models.linear_calibration import (
    Calibration,
    DeviceInfo,
    calibrate,
    fit_calibration,
    load_linear_model,
    predict_kernel,
    property_choice,
    save_calibration,
)
from gpuperf.models.persistence import save_model
from gpuperf.models.properties import PROPERTY_SETS
from gpuperf.models.roofline import RooflineModel

# The arith points differ in n (more work-items doing the same work), not in k: on pocl's CPU device
# the time per add grows with the dependent chain's length k (one thread: 0.14 ns at k = 8, 0.30 at 64,
# 0.72 at 512), so k = 64 -> 256 took 8.5x the time for 4x the operations, which no non-negative
# per-operation weight fits (the fourth point came out at 0.3x of its time). n = 4096 -> 16384 took 4.0x.
# vector_fill, not copy_2d: copy_2d at 256 x 256 has vector_copy at 65536's very properties (but for
# int_ops) and took 2.7x its time on pocl, so no weights fit both (0.33x of its time under load).
PLAN = {
    "vector_copy": [{"n": 65536}, {"n": 262144}],
    "arith_f32_add": [{"n": 4096, "k": 64}, {"n": 16384, "k": 64}],
    "vector_fill": [{"n": 65536}, {"n": 262144}],
}
CYCLES = 5
NAMES = ["launches", "work_items", "footprint_load_bytes", "footprint_write_only_bytes", "vector_f32_ops"]


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Calibration, Path]:
    folder = tmp_path_factory.mktemp("calibration")
    # Interleaved cycles: every point's time is taken over the same machine states, steady on a busy machine.
    calibration = calibrate("opencl:0", folder / "store.db", properties=NAMES, plan=PLAN, cycles=CYCLES)
    path = save_calibration(calibration, folder / "model.json")
    return calibration, path


@pytest.mark.opencl
def test_calibration_measures_every_point_and_fits_them(calibrated: tuple[Calibration, Path]) -> None:
    calibration, path = calibrated
    data = calibration.data
    assert sorted(data["kernel"].unique()) == sorted(PLAN)
    assert len(data) == 6 and (data["time_s"] > 0).all() and (data["passes"] == 1).all()
    assert calibration.device.device_class == "cpu"
    assert list(calibration.model.property_names_) == NAMES
    assert all(weight >= 0 for weight in calibration.model.coef_)
    ratio = data["predicted_s"] / data["time_s"]
    assert ratio.between(1 / 3, 3).all(), ratio.tolist()
    document = json.loads(path.read_text())
    metadata = document["metadata"]
    assert metadata["kind"] == "linear_count_model" and metadata["device"] == calibration.device.name
    assert metadata["properties"] == NAMES and set(metadata["weights"]) == set(NAMES)
    assert metadata["cycles"] == CYCLES and metadata["passes"] == 1
    assert document["feature_names"] == NAMES and document["gpuperf_version"]
    with Store(metadata["store"], create=False) as store:
        rows = store.rows(f"linear-calibration-cpu-interleaved{CYCLES}")
    assert len(rows) == 6 and all(len(r["samples"]) == CYCLES and r["status"] == "ok" for r in rows)


@pytest.mark.opencl
def test_a_second_calibration_reuses_the_stored_points(calibrated: tuple[Calibration, Path]) -> None:
    calibration, path = calibrated
    again = calibrate("opencl:0", Path(calibration.metadata["store"]), properties=NAMES, plan=PLAN, cycles=CYCLES)
    pd.testing.assert_series_equal(again.data["time_s"], calibration.data["time_s"])


@pytest.mark.opencl
def test_another_devices_points_in_the_store_are_left_out(calibrated: tuple[Calibration, Path], tmp_path) -> None:
    calibration, _ = calibrated
    shared = tmp_path / "shared.db"
    with sqlite3.connect(calibration.metadata["store"]) as source, sqlite3.connect(shared) as target:
        source.backup(target)
    with sqlite3.connect(shared) as db:  # the same points, 100x faster, as another device measured them
        columns = [r[1] for r in db.execute("PRAGMA table_info(points)") if r[1] != "id"]
        picked = ",".join({"device": "'opencl:9:0'", "time_s": "time_s/100", "time_s_min": "time_s_min/100"}.get(c, c)
                          for c in columns)
        db.execute(f"INSERT INTO points ({','.join(columns)}) SELECT {picked} FROM points")
    again = calibrate("opencl:0", shared, properties=NAMES, plan=PLAN, cycles=CYCLES)
    pd.testing.assert_series_equal(again.data["time_s"], calibration.data["time_s"])


@pytest.mark.opencl
def test_gpuperf_predict_loads_the_model_and_predicts_near_the_measured_time(
    calibrated: tuple[Calibration, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    calibration, path = calibrated
    assert main(["predict", "vector_copy", "-p", "n=262144", "--model", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    measured = calibration.data.set_index(["kernel", "sizes"]).loc[("vector_copy", "n=262144"), "time_s"]
    assert 1 / 3 < result["time_s"] / measured < 3
    assert result["device"] == calibration.device.name
    assert sum(result["contributions_s"].values()) == pytest.approx(result["time_s"])
    assert result["properties"]["footprint_load_bytes"] == 4 * 262144
    assert main(["predict", "vector_copy", "-p", "n=262144", "--model", str(path)]) == 0
    assert "time_s" in capsys.readouterr().out
    older = path.with_name("older.json")  # --json carries the note of a model saved by another version
    older.write_text(json.dumps({**json.loads(path.read_text()), "gpuperf_version": "0.0.1"}))
    assert main(["predict", "vector_copy", "-p", "n=262144", "--model", str(older), "--json"]) == 0
    captured = capsys.readouterr()
    said = [note for note in json.loads(captured.out)["notes"] if "saved by gpuperf 0.0.1" in note]
    assert len(said) == 1 and captured.err.count("saved by gpuperf 0.0.1") == 1


def test_a_store_named_like_the_model_file_is_refused_before_measuring(tmp_path: Path, capsys) -> None:
    """calibrate --out m.json --store m.json measured every point into m.json, then wrote the model over it."""
    out = tmp_path / "m.json"
    assert main(["calibrate", "--out", str(out), "--store", str(tmp_path / "." / "m.json"), "--kernel", "vector_copy",
                 "--passes", "1", "--no-progress"]) == 2
    assert "the same file as --out; the store keeps the measurements" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing measured, nothing written


@pytest.mark.opencl
def test_gpuperf_calibrate_writes_a_model_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Eight light kernels of the CPU plan, 3 sizes each: 24 points for the cpu set's 22 properties (23 in
    intel_cpu, on Intel's runtime). One kernel (3 points) is too few to fit them: refused before anything
    is measured."""
    out = tmp_path / "cpu.json"
    property_set = linear_calibration.device_info("opencl:0").property_set
    assert main(["calibrate", "--out", str(out), "--kernel", "empty", "--passes", "1", "--no-progress"]) == 2
    assert (f"calibration on opencl:0:0: 3 planned points (1 kernels) for {len(PROPERTY_SETS[property_set])} "
            "properties; a fit needs at least one point per property") in capsys.readouterr().err
    assert not (tmp_path / "calibration.db").exists() and not out.exists()
    kernels = [arg for name in ("empty", "vector_copy", "vector_fill", "copy_2d", "scale_add_stride1",
                                "add_four_vectors", "row_sum", "column_sum") for arg in ("--kernel", name)]
    code = main(["calibrate", "--out", str(out), *kernels, "--passes", "1", "--no-progress", "--json"])
    assert code == 0
    metadata = json.loads(capsys.readouterr().out)
    assert len(metadata["calibration_kernels"]) == 8 and metadata["calibration_points"] == 24
    assert (tmp_path / "calibration.db").is_file()
    model, saved = load_linear_model(out)
    assert saved["property_set"] == property_set and tuple(model.property_names_) == tuple(saved["properties"])
    code = main(["calibrate", "--out", str(out), *kernels, "--cycles", "2", "--no-progress", "--json"])
    assert code == 0 and json.loads(capsys.readouterr().out)["cycles"] == 2


@pytest.mark.opencl
def test_passes_and_cycles_must_be_positive(tmp_path: Path) -> None:
    for bad in ({"cycles": 0}, {"passes": 0}):
        with pytest.raises(GpuperfError, match="must be at least 1"):
            calibrate("opencl:0", tmp_path / "store.db", properties=NAMES, plan=PLAN, **bad)


@pytest.mark.opencl
def test_an_unknown_property_fails_before_anything_is_measured(tmp_path: Path) -> None:
    from gpuperf.evaluation.linear_eval import evaluate_linear_model

    with pytest.raises(GpuperfError, match="unknown property 'footprint_byte'"):
        calibrate("opencl:0", tmp_path / "store.db", properties=["footprint_byte"], plan=PLAN)
    with pytest.raises(GpuperfError, match="unknown property set 'tpu'"):
        evaluate_linear_model("opencl:0", tmp_path / "store.db", property_set="tpu", cycles=3)
    assert not (tmp_path / "store.db").exists()


@pytest.mark.opencl
def test_interleaved_evaluation_measures_fitting_and_held_out_kernels_together(tmp_path: Path) -> None:
    from gpuperf.evaluation.linear_eval import evaluate_linear_model

    evaluation = evaluate_linear_model("opencl:0", tmp_path / "store.db", calibration_kernels=["vector_copy", "empty"],
                                       held_out_kernels=["stencil2d"], cycles=2, properties=NAMES)  # 6 points, 5 weights
    assert set(evaluation.calibration.data["kernel"]) == {"vector_copy", "empty"}
    assert set(evaluation.held_out["kernel"]) == {"stencil2d"} and len(evaluation.held_out) == 3
    assert (evaluation.held_out["predicted_s"] > 0).all()
    with Store(tmp_path / "store.db", create=False) as store:
        rows = store.rows("linear-evaluation-cpu-interleaved2")
    assert {r["kernel_spec"] for r in rows} == {"vector_copy", "empty", "stencil2d"}
    assert all(len(r["samples"]) == 2 for r in rows)
    assert evaluation.calibration.metadata["cycles"] == 2 and evaluation.calibration.metadata["passes"] == 1


def test_held_out_kernels_are_never_calibration_kernels_and_gpus_run_them_16_times_larger() -> None:
    from gpuperf.evaluation.linear_eval import HELD_OUT_PLANS
    from gpuperf.models.linear_calibration import CALIBRATION_PLANS

    for device_class in ("cpu", "gpu"):
        assert not set(HELD_OUT_PLANS[device_class]) & set(CALIBRATION_PLANS[device_class])
        assert all(len(sizes) == 3 for sizes in HELD_OUT_PLANS[device_class].values())
    assert set(HELD_OUT_PLANS["cpu"]) == set(HELD_OUT_PLANS["gpu"])
    assert HELD_OUT_PLANS["cpu"]["nbody"] == [{"n": 256}, {"n": 384}, {"n": 512}]
    assert HELD_OUT_PLANS["gpu"]["nbody"] == [{"n": 4096}, {"n": 6144}, {"n": 8192}]
    # the scale multiplies the first extent only
    assert HELD_OUT_PLANS["gpu"]["stencil2d"] == [{"n": 2048, "m": 512}, {"n": 4096, "m": 512}, {"n": 4096, "m": 1024}]


def test_linear_evaluation_summary_counts_and_averages_kernels_in_and_out_of_sample() -> None:
    from gpuperf.evaluation.linear_eval import LinearEvaluation

    # predicted / measured: a 2 (gmre 1), b 1 (0), c 4 (3); held out: x 1.5 (0.5), y 0.8 (0.25)
    inside = pd.DataFrame({"kernel": ["a", "b", "c"], "time_s": [1.0, 2.0, 1.0], "predicted_s": [2.0, 2.0, 4.0]})
    outside = pd.DataFrame({"kernel": ["x", "y", "y"], "time_s": [2.0, 1.0, 5.0], "predicted_s": [3.0, 0.8, 4.0]})
    evaluation = LinearEvaluation(Calibration(None, DeviceInfo("d", "d", "cpu"), inside), outside)
    assert evaluation.held_out_error().to_dict() == pytest.approx({"x": 0.5, "y": 0.25})
    assert evaluation.summary() == pytest.approx({
        "in_sample_kernels": 3, "in_sample_mean_gmre": 4 / 3, "in_sample_median_gmre": 1.0,
        "held_out_kernels": 2, "held_out_mean_gmre": 0.375, "held_out_median_gmre": 0.375,
        "held_out_worst_gmre": 0.5,
    })


def test_sequential_evaluation_passes_its_settings_to_calibration_and_to_the_held_out_campaign(monkeypatch) -> None:
    from gpuperf.evaluation import linear_eval

    calls = {}

    class Model:
        property_names_ = ("work_items",)

        def predict(self, data):
            return data["work_items"] * 1e-9

    def fake_calibrate(device, store, **kwargs):
        calls["calibrate"] = (device, store, kwargs)
        return Calibration(Model(), DeviceInfo("opencl:9:0", "a GPU", "gpu"), pd.DataFrame())

    def fake_measure(plan, device, store, campaign, passes, statistic, progress):
        calls["measure"] = (plan, device, store, campaign, passes, statistic)
        rows = [(kernel, sizes) for kernel, all_sizes in plan.items() for sizes in all_sizes]
        return pd.DataFrame({"kernel": [k for k, _ in rows], "sizes_dict": [s for _, s in rows],
                             "time_s": [1.0] * len(rows)})

    monkeypatch.setattr(linear_eval, "device_info", lambda device: DeviceInfo("opencl:9:0", "a GPU", "gpu"))
    monkeypatch.setattr(linear_eval, "calibrate", fake_calibrate)
    monkeypatch.setattr(linear_eval, "measure_plan", fake_measure)
    monkeypatch.setattr(linear_eval, "with_properties",
                        lambda measured, names: measured.assign(work_items=[s["n"] for s in measured["sizes_dict"]]))
    evaluation = linear_eval.evaluate_linear_model("opencl:9", "store.db", passes=5, calibration_kernels=["empty"],
                                                   held_out_kernels=["nbody"], property_set="gpu",
                                                   statistic="median", properties=["launches", "work_items"])
    assert calls["calibrate"] == ("opencl:9", "store.db", {"kernels": ["empty"], "passes": 5, "property_set": "gpu",
                                                           "properties": ["launches", "work_items"],
                                                           "statistic": "median", "progress": False})
    plan = {"nbody": [{"n": 4096}, {"n": 6144}, {"n": 8192}]}
    assert calls["measure"] == (plan, "opencl:9:0", "store.db", "linear-held-out-gpu", 5, "median")
    assert evaluation.held_out["predicted_s"].tolist() == pytest.approx([4096e-9, 6144e-9, 8192e-9])


def test_intels_cpu_runtime_is_fitted_with_the_intel_cpu_set_and_pocl_with_the_cpu_set() -> None:
    intel = DeviceInfo("opencl:0:0", "AMD EPYC", "cpu", "Intel(R) OpenCL")
    assert property_choice(intel) == ("intel_cpu", PROPERTY_SETS["intel_cpu"])
    assert property_choice(intel, "cpu") == ("cpu", PROPERTY_SETS["cpu"])  # a set named is the set used
    assert DeviceInfo("opencl:0:0", "pthread-AMD EPYC", "cpu", "Portable Computing Language").property_set == "cpu"
    assert DeviceInfo("opencl:1:0", "Intel(R) Arc(TM) A770", "gpu", "Intel(R) OpenCL Graphics").property_set == "gpu"
    assert DeviceInfo("table", "test CPU", "cpu").property_set == "cpu"  # a table's points name no runtime


def test_device_info_reads_the_opencl_platform(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    import pyopencl as cl

    from gpuperf.measure import devices

    raw = SimpleNamespace(type=cl.device_type.CPU, platform=SimpleNamespace(name="Intel(R) OpenCL"))
    opened = SimpleNamespace(name="opencl:0:0", device=raw, provenance=lambda: {"device_name": "AMD EPYC"})
    monkeypatch.setattr(devices, "open_device", lambda device: opened)
    info = linear_calibration.device_info("opencl:0")
    assert info == DeviceInfo("opencl:0:0", "AMD EPYC", "cpu", "Intel(R) OpenCL")
    assert info.property_set == "intel_cpu"


def test_add_property_on_intels_cpu_runtime_adds_to_the_intel_cpu_set(tmp_path: Path, monkeypatch) -> None:
    calls = {}

    def fake_calibrate(device, store, **kwargs):
        calls.update(kwargs)
        raise GpuperfError("stop before measuring")

    intel = DeviceInfo("opencl:0:0", "AMD EPYC", "cpu", "Intel(R) OpenCL")
    monkeypatch.setattr(linear_calibration, "device_info", lambda device: intel)
    monkeypatch.setattr(linear_calibration, "calibrate", fake_calibrate)
    assert main(["calibrate", "--device", "opencl:0", "--out", str(tmp_path / "m.json"),
                 "--add-property", "footprint_beyond_2MiB"]) == 2
    assert calls["properties"] == (*PROPERTY_SETS["intel_cpu"], "footprint_beyond_2MiB")


# -- bad model files ----------------------------------------------------------------------------------
def _saved_model(tmp_path: Path) -> Path:
    frame = pd.DataFrame({"launches": [1.0, 1.0], "work_items": [1e3, 1e5]})
    model = LinearCountModel(properties=["launches", "work_items"]).fit(frame, [2e-6, 1.1e-5])
    info = DeviceInfo("opencl:0:0", "test CPU", "cpu")
    calibration = Calibration(model, info, frame, {"kind": "linear_count_model", "device": info.name})
    return save_calibration(calibration, tmp_path / "model.json")


def test_a_saved_model_loads_back_with_its_weights(tmp_path: Path) -> None:
    model, metadata = load_linear_model(_saved_model(tmp_path))
    assert metadata["device"] == "opencl:0:0"
    # Two rows, two weights: the fit is exact, and the weights survive the JSON round trip.
    np.testing.assert_allclose(model.predict(np.array([[1.0, 1e3], [1.0, 1e5]])), [2e-6, 1.1e-5], rtol=1e-12)
    prediction = predict_kernel(model, get_kernel("empty"), {"n": 4096})
    assert prediction["time_s"] == pytest.approx(model.coef_[0] + 4096 * model.coef_[1])


@pytest.mark.parametrize(("edit", "message"), [
    (lambda coef: coef.__setitem__(1, -1.0), "weight of work_items is outside its sign bound"),
    (lambda coef: coef.__setitem__(0, float("nan")), "the weights are not 2 finite numbers"),
    (lambda coef: coef.pop(), "the weights are not 2 finite numbers"),
])
def test_a_model_file_with_damaged_weights_is_refused(tmp_path: Path, edit, message) -> None:
    path = _saved_model(tmp_path)
    document = json.loads(path.read_text())
    coef = document["model"]["state"]["__mapping__"]["coef_"]
    values = coef["data"] if isinstance(coef, dict) else coef
    edit(values)
    if isinstance(coef, dict):
        coef["shape"] = [len(values)]
    path.write_text(json.dumps(document))
    with pytest.raises(GpuperfError, match=message):
        load_linear_model(path)


def _scale_smallest(weights: dict, factor: float) -> None:
    name = min((n for n, w in weights.items() if w > 0), key=weights.get)
    assert weights[name] < 1e-9
    weights[name] *= factor


@pytest.mark.parametrize(("edit", "message"), [
    (lambda weights: weights.__setitem__("launches", 1.0),
     r"metadata.weights.launches is 1.0, but the model predicts with .*; edit a model by refitting it"),
    (lambda weights: weights.pop("launches"), r"metadata.weights must list the model's \d+ properties' weights"),
    (lambda weights: _scale_smallest(weights, 100.0),  # a seconds-per-byte weight, far below 1e-8
     r"metadata.weights.\w+ is [0-9.e-]+, but the model predicts with"),
])
def test_weights_the_metadata_lists_must_be_those_the_model_predicts_with(tmp_path: Path, edit, message) -> None:
    """Before, a weight edited in metadata.weights (the copy a reader sees) changed nothing: predict
    used the model's own coefficients."""
    from gpuperf.datasets.bundled import data_dir

    path = tmp_path / "h100.json"
    assert main(["calibrate", "--table", str(data_dir() / "linear_model_h100.csv.gz"), "--out", str(path)]) == 0
    load_linear_model(path)  # as written, the two copies agree
    document = json.loads(path.read_text())
    edit(document["metadata"]["weights"])
    path.write_text(json.dumps(document))
    with pytest.raises(GpuperfError, match=message):
        load_linear_model(path)


def test_bad_model_files_give_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.json"
    assert main(["predict", "empty", "--model", str(missing)]) == 2
    assert capsys.readouterr().err.strip() == f"gpuperf: error: {missing}: no such model file"

    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(GpuperfError, match="broken.json: not a JSON model file"):
        load_linear_model(broken)

    other = tmp_path / "roofline.json"
    frame = pd.DataFrame({"flops": [1.0], "dram_bytes": [1.0], "gpu_peak_f32_gflops": [1.0],
                          "gpu_memory_bandwidth_gbs": [1.0]})
    save_model(RooflineModel().fit(frame), other)
    with pytest.raises(GpuperfError, match="roofline.json: not a model made by 'gpuperf calibrate'"):
        load_linear_model(other)

    renamed = _saved_model(tmp_path)
    document = json.loads(renamed.read_text())
    document["feature_names"] = ["launches", "warp_items"]
    renamed.write_text(json.dumps(document))
    with pytest.raises(GpuperfError, match="model.json: unknown property 'warp_items'; did you mean work_items"):
        load_linear_model(renamed)


def test_predicting_a_kernel_that_lacks_a_property_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    from gpuperf.models import properties

    path = tmp_path / "loops.json"
    frame = pd.DataFrame({"launches": [1.0, 1.0], "loop_iterations": [1e3, 1e5]})
    model = LinearCountModel(properties=["launches", "loop_iterations"]).fit(frame, [2e-6, 1.1e-5])
    save_calibration(Calibration(model, DeviceInfo("opencl:0:0", "cpu", "cpu"), frame, {"kind": "linear_count_model"}),
                     path)
    real = properties.symbolic_counts
    monkeypatch.setattr(properties, "symbolic_counts", lambda k: dataclasses.replace(real(k), loop_iterations=None))
    assert main(["predict", "matmul_naive", "-p", "n=64", "-p", "m=128", "-p", "k=32", "--model", str(path)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("gpuperf: error: kernel 'matmul_naive': its static counts give no value for property "
                            "loop_iterations")
    assert "\n" not in error


def test_calibrate_sums_up_its_in_sample_error_and_names_kernels_it_misses_by_over_2x() -> None:
    from gpuperf.cli.calibrate_cli import fit_summary

    errors = pd.Series({"vector_copy": 0.05, "arith_f32_div": 13.65, "arith_f32_add": 3.0, "matmul_naive": 0.2})
    text = fit_summary(errors)
    assert "mean over the 4 calibration kernels 4.225, median 1.600." in text
    assert "Missed by more than 2x: arith_f32_div (13.7), arith_f32_add (3.0);" in text
    assert "Missed by" not in fit_summary(errors[errors < 1])


def test_passes_combine_by_the_fastest_launch_or_the_median_of_pass_medians() -> None:
    """Three passes of vector_copy at n=1024 with pass medians 1, 2 and 6 ms and fastest launches
    0.9, 0.5 and 0.7 ms: "min" takes the fastest launch of any pass (0.5 ms), "median" the median of
    the pass medians (2 ms; their mean would be 3 ms). A point outside the plan is ignored."""
    from gpuperf.models.linear_calibration import combine_measured as _combine

    plan = {"vector_copy": [{"n": 1024}]}
    rows = [{"kernel_spec": "vector_copy", "sizes": {"n": 1024}, "time_s": t, "time_s_min": fastest}
            for t, fastest in ((1e-3, 0.9e-3), (2e-3, 0.5e-3), (6e-3, 0.7e-3))]
    rows.append({"kernel_spec": "vector_copy", "sizes": {"n": 2048}, "time_s": 1.0, "time_s_min": 1.0})
    fastest = _combine(rows, plan, "min")
    assert len(fastest) == 1 and fastest["time_s"].iloc[0] == pytest.approx(0.5e-3)
    assert fastest["passes"].iloc[0] == 3
    assert _combine(rows, plan, "median")["time_s"].iloc[0] == pytest.approx(2e-3)


def test_per_kernel_gmre_counts_over_and_under_predictions_alike() -> None:
    """Kernel a: predictions 2x and 0.5x the measurement: |ln 2| both, exp(ln 2) - 1 = 1 (signed
    logs would cancel to 0). Kernel b: a prediction of 0 s is infinitely wrong."""
    from gpuperf.models.linear_calibration import per_kernel_gmre

    frame = pd.DataFrame({"kernel": ["a", "a", "b"], "measured": [1.0, 4.0, 1.0], "predicted": [2.0, 2.0, 0.0]})
    errors = per_kernel_gmre(frame, "measured", "predicted")
    assert errors["a"] == pytest.approx(1.0)
    assert errors["b"] == float("inf")


def test_predict_notes_a_work_group_the_models_gpu_cannot_launch(tmp_path: Path, capsys) -> None:
    """A 2048-work-item group was priced on the H100 model with no word that no H100 block holds it."""
    from gpuperf.datasets.bundled import data_dir

    model = tmp_path / "h100.json"
    assert main(["calibrate", "--table", str(data_dir() / "linear_model_h100.csv.gz"), "--out", str(model)]) == 0
    kernels = Path(__file__).parent / "data" / "feature_kernels.py"
    capsys.readouterr()
    assert main(["predict", f"{kernels}:wide_group_copy", "-p", "n=65536", "--model", str(model), "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert notes == ["wide_group_copy cannot launch on the H100 SXM the model describes (threads per block 2048 is "
                     "outside 1..1024 allowed on H100 SXM); its time is an extrapolation"]
    assert main(["predict", "vector_copy", "-p", "n=65536", "--model", str(model), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["notes"] == []
    from gpuperf.features.table import extract_features

    with pytest.raises(GpuperfError, match=r"^kernel '.*wide_group_copy.*': threads per block 2048 is outside 1\.\.1024"):
        extract_features(get_kernel(f"{kernels}:wide_group_copy"), {"n": 65536}, gpu="H100 SXM")


def test_predict_notes_sizes_measure_refuses(tmp_path: Path, capsys) -> None:
    """jacobi2d_5pt at 46352 x 46352 holds 2**31 + elements (its int32 indices wrap), and copy_2d at n=2097152
    has 131,072 blocks along y (CUDA's limit 65,535, and the H100 model was calibrated through CUDA): measure
    refuses both, so predict notes that its time is for a kernel that cannot run as generated."""
    from gpuperf.datasets.bundled import data_dir

    model = tmp_path / "h100.json"
    assert main(["calibrate", "--table", str(data_dir() / "linear_model_h100.csv.gz"), "--out", str(model)]) == 0
    capsys.readouterr()
    assert main(["predict", "jacobi2d_5pt", "-p", "n=46352", "-p", "m=46352", "--model", str(model), "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert len(notes) == 1 and notes[0].startswith("measure would refuse this launch (jacobi2d_5pt at n=46352, "
                                                   "m=46352: array 'a' holds 2,148,693,316 elements")
    assert notes[0].endswith("the time is for a kernel that cannot run as generated")
    assert main(["predict", "copy_2d", "-p", "n=2097152", "-p", "m=16", "--model", str(model), "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert len(notes) == 1 and "its grid has 131,072 along y, past CUDA's limit of 65,535" in notes[0]
    assert main(["predict", "jacobi2d_5pt", "-p", "n=4096", "-p", "m=4096", "--model", str(model), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["notes"] == []


def test_a_model_whose_metadata_lists_its_properties_in_another_order_is_refused(tmp_path: Path) -> None:
    from gpuperf.datasets.bundled import data_dir

    path = tmp_path / "h100.json"
    assert main(["calibrate", "--table", str(data_dir() / "linear_model_h100.csv.gz"), "--out", str(path)]) == 0
    document = json.loads(path.read_text())
    listed = document["metadata"]["properties"]
    document["metadata"]["properties"] = [listed[1], listed[0], *listed[2:]]
    path.write_text(json.dumps(document))
    with pytest.raises(GpuperfError, match="its metadata lists other properties than the model's"):
        load_linear_model(path)


@pytest.mark.opencl
def test_a_fit_needs_one_measured_point_per_property(tmp_path: Path) -> None:
    info = DeviceInfo("opencl:0:0", "test CPU", "cpu")
    sizes = get_kernel("vector_copy").resolve_sizes({"n": 65536})
    point = {"kernel": "vector_copy", "sizes": "n=65536", "sizes_dict": sizes, "time_s": 1e-5, "passes": 1}
    with pytest.raises(GpuperfError, match="1 measured points for 2 properties"):
        fit_calibration(pd.DataFrame([point]), info, "store.sqlite", properties=["global_load_bytes", "launches"])
    with pytest.raises(GpuperfError, match="1 planned points .* for 2 properties"):
        calibrate("opencl:0", tmp_path / "store.sqlite", plan={"vector_copy": [{"n": 65536}]},
                  properties=["global_load_bytes", "launches"])  # refused before anything is measured


def test_a_calibration_no_point_of_which_was_measured_names_the_first_failure(tmp_path: Path, monkeypatch) -> None:
    """Every point failed to build (a device whose compiler refuses its CPU): the error says how many failed
    so and the first one's error, not only to look in the store."""
    from types import SimpleNamespace

    from gpuperf.measure import campaign as campaign_module
    from gpuperf.measure.devices import compile_failure
    from gpuperf.models.linear_calibration import measure_plan

    def compile_(kernel):
        raise compile_failure(kernel, RuntimeError("clBuildProgram failed\nerror: unknown target CPU 'generic'"))

    device = SimpleNamespace(name="fake:0", memory_bytes=2**30, compile=compile_, provenance=dict)
    monkeypatch.setattr(campaign_module, "open_device", lambda name: device)
    plan = {"vector_copy": [{"n": 65536}, {"n": 262144}], "vector_fill": [{"n": 65536}]}
    store = tmp_path / "store.sqlite"
    expected = (r"calibration on fake:0: no point could be measured: 3 point\(s\) compile_failed, the first "
                r"vector_copy at n=65536: kernel 'vector_copy' failed to compile: RuntimeError: clBuildProgram "
                r"failed; error: unknown target CPU 'generic'.* \(see the store .*store.sqlite\)")
    with pytest.raises(GpuperfError, match=expected):
        measure_plan(plan, "fake:0", store, "linear-calibration-cpu", passes=1)
    with pytest.raises(GpuperfError, match=expected):  # rerun: the stored failures, not retried, are named alike
        measure_plan(plan, "fake:0", store, "linear-calibration-cpu", passes=1)

def test_predict_kernel_takes_a_catalog_name_as_extract_features_does(tmp_path: Path) -> None:
    model, _ = load_linear_model(_saved_model(tmp_path))
    assert predict_kernel(model, "empty", {"n": 4096}) == predict_kernel(model, get_kernel("empty"), {"n": 4096})
    with pytest.raises(GpuperfError, match="unknown kernel 'emtpy'"):
        predict_kernel(model, "emtpy", {"n": 4096})


def test_predict_kernel_takes_a_loopy_program_as_the_command_line_does(tmp_path: Path) -> None:
    """A bare TranslationUnit raised AttributeError ('TranslationUnit' object has no attribute 'resolve_sizes')."""
    import loopy as lp
    import numpy as np

    from gpuperf.kernels.kernel import kernel_from_program

    model, _ = load_linear_model(_saved_model(tmp_path))
    program = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = 2*a[i]", [lp.GlobalArg("a,b", np.float64, shape="n"), "..."],
                             assumptions="n>=128 and n mod 128 = 0", name="f64double", lang_version=(2018, 2))
    program = lp.split_iname(program, "i", 128, outer_tag="g.0", inner_tag="l.0")
    predicted = predict_kernel(model, program, {"n": 4096})
    assert predicted == predict_kernel(model, kernel_from_program(program, "f64double", ""), {"n": 4096})
    assert predicted["kernel"] == "f64double"
    with pytest.raises(GpuperfError, match="predict_kernel needs a gpuperf Kernel, a loopy TranslationUnit"):
        predict_kernel(model, None, {"n": 4096})


@pytest.mark.opencl
def test_calibration_kernels_given_as_one_string_are_refused_before_anything_is_measured(tmp_path: Path) -> None:
    from gpuperf.evaluation.linear_eval import evaluate_linear_model
    from gpuperf.models.linear_calibration import CALIBRATION_PLANS, restrict_plan

    for call in (lambda: restrict_plan(CALIBRATION_PLANS["cpu"], "empty"),
                 lambda: evaluate_linear_model("opencl:0", tmp_path / "store.sqlite", held_out_kernels="empty")):
        with pytest.raises(GpuperfError, match=r"kernels lists calibration kernel names, e\.g\. \['empty'\], not the "
                                               r"string 'empty'"):
            call()
    assert not (tmp_path / "store.sqlite").exists()


def test_calibrate_table_takes_the_device_class_its_calibration_campaign_names(tmp_path: Path, capsys) -> None:
    """A pocl calibration store's export (campaign linear-calibration-cpu-pass1) is fitted as a cpu device's
    without --device-class, as calibrate itself fitted it; --device-class still names another class."""
    from gpuperf.models.linear_calibration import CALIBRATION_PLANS

    sizes = CALIBRATION_PLANS["cpu"]["vector_copy"]
    table = tmp_path / "export.csv"
    pd.DataFrame([{"kernel": "vector_copy", "variant": "", "n": size["n"], "time_s": 1e-5, "time_s_min": 1e-5,
                   "status": "ok", "campaign": "linear-calibration-cpu-pass1"} for size in sizes]).to_csv(table,
                                                                                                     index=False)
    assert main(["calibrate", "--table", str(table), "--out", str(tmp_path / "m.json")]) != 0
    err = capsys.readouterr().err
    assert "fitted as a cpu device's" in err and "of the cpu class's calibration kernels" in err
    assert "not points of the" not in err  # none of its points left out as another class's
    assert main(["calibrate", "--table", str(table), "--device-class", "gpu", "--out", str(tmp_path / "m.json")]) != 0
    err = capsys.readouterr().err
    assert "fitted as" not in err and "of the gpu class's calibration kernels" in err


def test_predict_table_never_runs_a_users_file_a_table_names(tmp_path: Path, capsys) -> None:
    """A table's kernel_spec (or kernel) naming a user's file.py is not run to count its properties, as
    calibrate --table runs none: someone else's table ran any Python file on the machine. An ok row is an
    error naming it, a failed one gets no prediction."""
    ran = tmp_path / "ran"
    user = tmp_path / "mine.py"
    user.write_text(f"from pathlib import Path\nPath({str(ran)!r}).write_text('ran')\n\ndef make():\n    return None\n")
    model_path = _saved_model(tmp_path)
    for status in ("ok", "run_failed"):
        table = tmp_path / f"{status}.csv"
        pd.DataFrame({"kernel": ["make", "vector_copy"], "kernel_spec": [f"{user}:make", "vector_copy"],
                      "n": [1024, 65536], "time_s": [1e-5, 1e-5], "status": [status, "ok"]}).to_csv(table, index=False)
        code = main(["predict-table", str(table), "--model", str(model_path), "--out", str(tmp_path / f"{status}-out.csv")])
        err = capsys.readouterr().err
        assert not ran.exists()
        if status == "ok":
            assert code != 0 and f"{table.name}, line 2" in err and "names a user's file" in err
        else:
            assert code == 0 and np.isnan(pd.read_csv(tmp_path / f"{status}-out.csv")["predicted_time_s"][0])


def test_predict_table_counts_a_campaign_exports_kernels_for_a_calibrated_model(tmp_path: Path, capsys) -> None:
    """campaign export -> calibrate --table -> predict-table on the same export: each row's kernel (its
    kernel_spec, or kernel[variant]) counted at its sizes, as predict prices it; a failed row without sizes
    gets no prediction; a second pass over its own output gives the same figures."""
    model_path = _saved_model(tmp_path)
    model, _ = load_linear_model(model_path)
    variant = "jacobi2d_5pt[local_x=16,local_y=16,outputs_y=1,prefetch=0,unroll=1]"
    table = tmp_path / "export.csv"
    pd.DataFrame({"kernel": ["vector_copy", "jacobi2d_5pt", "vector_copy"], "variant": ["", "local_x=16", ""],
                  "kernel_spec": ["vector_copy", variant, "vector_copy"], "n": [65536, 256, None],
                  "m": [None, 256, None], "time_s": [1e-5, 2e-5, None],
                  "status": ["ok", "ok", "run_failed"]}).to_csv(table, index=False)
    out = tmp_path / "predicted.csv"
    assert main(["predict-table", str(table), "--model", str(model_path), "--out", str(out)]) == 0
    predicted = pd.read_csv(out)["predicted_time_s"]
    expected = [predict_kernel(model, get_kernel("vector_copy"), {"n": 65536})["time_s"],
                predict_kernel(model, get_kernel(variant), {"n": 256, "m": 256})["time_s"]]
    np.testing.assert_allclose(predicted[:2], expected, rtol=1e-12)
    assert np.isnan(predicted[2]) and "whose run failed" in capsys.readouterr().err
    again = tmp_path / "again.csv"
    assert main(["predict-table", str(out), "--model", str(model_path), "--out", str(again)]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(again), pd.read_csv(out))


def test_features_and_predict_note_a_kernel_loopy_refuses_to_generate(tmp_path: Path, capsys) -> None:
    """A kernel reading a[k] for k < m on an array of n: measure reports loopy's refusal as a compile
    failure, while features and predict gave numbers with no word of it."""
    from gpuperf.datasets.bundled import data_dir

    kernel = f"{Path(__file__).parent / 'data' / 'feature_kernels.py'}:sum_past_the_array"
    said = ("note: loopy refuses to generate this kernel's code (LoopyIndexError: 'a[k]' in instruction "
            "'insn_k_update' accesses out-of-bounds array element")
    assert main(["features", kernel, "-p", "n=32", "-p", "m=16", "--json"]) == 0
    err = capsys.readouterr().err
    assert said in err and err.strip().endswith("the features are for a kernel that cannot run as generated")
    model = tmp_path / "h100.json"
    assert main(["calibrate", "--table", str(data_dir() / "linear_model_h100.csv.gz"), "--out", str(model)]) == 0
    capsys.readouterr()
    assert main(["predict", kernel, "-p", "n=32", "-p", "m=64", "--model", str(model), "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert len(notes) == 1 and notes[0].startswith(said[len("note: "):])
    assert notes[0].endswith("so measure reports a compile failure: the time is for a kernel that cannot run as generated")
    assert get_kernel("vector_copy").generation_refusal is None
