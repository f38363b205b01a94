"""Saving and loading models: round trips, trusted types, version and feature-name checks."""

from __future__ import annotations

import base64
import fractions
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.compose import ColumnTransformer
from sklearn.feature_selection import SelectKBest
from threadpoolctl import threadpool_limits

import gpuperf
from gpuperf.errors import GpuperfError
from gpuperf.models.bsp import BspModel
from gpuperf.models.learned import make_model
from gpuperf.models.persistence import ModelVersionWarning, load_model, model_info, save_model
from gpuperf.models.selection import SpearmanClusterSelector, spearman_scores


@pytest.fixture(autouse=True)
def one_thread():
    """Small fits: OpenMP worker threads of the boosted trees would only slow them down."""
    with threadpool_limits(1):
        yield


def _data():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.uniform(1, 10, (120, 3)), columns=["loads", "stores", "threads"])
    return X, (1e-5 * X["loads"] * X["threads"]).to_numpy()


@pytest.mark.parametrize(
    "name, suffix",
    [("m5p", ".json"), ("linear", ".json"), ("svr_rbf", ".json"), ("random_forest", ".skops"),
     ("gbt", ".skops"), ("pca_knn", ".skops"), ("m5p", ".skops"), ("random_forest", ".json"),
     ("gbt", ".json"), ("pca_knn", ".json")],
)
def test_round_trip_gives_identical_predictions(tmp_path, name, suffix):
    X, y = _data()
    model = make_model(name, log_inputs=True).fit(X, y)
    path = save_model(model, tmp_path / f"model{suffix}", metadata={"dataset": "test"})
    loaded = load_model(path, feature_names=list(X.columns))
    assert np.array_equal(loaded.predict(X), model.predict(X))
    info = model_info(path)
    assert info["feature_names"] == list(X.columns) and info["metadata"] == {"dataset": "test"}
    assert info["gpuperf_version"] == gpuperf.__version__


@pytest.mark.parametrize("name, suffix", [("random_forest", ".skops"), ("gbt", ".json"), ("pca_knn", ".json")])
def test_two_fits_of_the_same_rows_save_the_same_bytes(tmp_path, name, suffix):
    X, y = _data()
    models = [make_model(name).fit(X, y) for _ in range(2)]  # both alive: skops' id()-names would differ
    paths = [save_model(model, tmp_path / f"model{i}{suffix}") for i, model in enumerate(models)]
    assert paths[0].read_bytes() == paths[1].read_bytes()
    assert np.array_equal(load_model(paths[1], feature_names=list(X.columns)).predict(X), models[0].predict(X))


def _write_half_then_fail(path, text):
    """A write cut short, as by a full disk or a killed process: half the content, then an error."""
    with open(path, "w") as out:
        out.write(text[: len(text) // 2])
    raise OSError(28, "No space left on device")


@pytest.mark.parametrize("suffix", [".json", ".skops"])
def test_a_refit_whose_write_fails_keeps_the_model_there(tmp_path, monkeypatch, suffix):
    X, y = _data()
    path = save_model(make_model("linear").fit(X, y), tmp_path / f"model{suffix}", metadata={"fit": 1})
    before = path.read_bytes()
    refit = make_model("linear").fit(X, 2 * y)
    monkeypatch.setattr(Path, "write_text", lambda self, text, *a, **k: _write_half_then_fail(self, text))
    monkeypatch.setattr(Path, "write_bytes", lambda self, data: _write_half_then_fail(self, "x" * len(data)))
    with pytest.raises(GpuperfError, match=rf"model{suffix}: cannot be written \(No space left on device\)"):
        save_model(refit, path, metadata={"fit": 2}, replace=True)
    monkeypatch.undo()
    assert path.read_bytes() == before and model_info(path)["metadata"] == {"fit": 1}
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no half-written file beside it


def test_json_embeds_compiled_models_as_checked_skops_payload(tmp_path):
    X, y = _data()
    path = save_model(make_model("random_forest").fit(X, y), tmp_path / "rf.json")
    document = json.loads(path.read_text())
    assert "model" not in document and document["feature_names"] == list(X.columns)
    evil = sio.dumps(fractions.Fraction(1, 3))  # a type outside the trusted list
    document["model_skops"] = base64.b64encode(evil).decode("ascii")
    path.write_text(json.dumps(document))
    with pytest.raises(GpuperfError, match="refusing untrusted type"):
        load_model(path)
    document["model_skops"] = "not base64!"
    path.write_text(json.dumps(document))
    with pytest.raises(GpuperfError, match="rf.json: model_skops is not a valid skops payload"):
        load_model(path)
    good = base64.b64encode(sio.dumps(make_model("random_forest").fit(X, y))).decode("ascii")
    document["model_skops"] = good[: len(good) // 2 // 4 * 4]  # cut short, still valid base64
    path.write_text(json.dumps(document))
    with pytest.raises(GpuperfError, match="rf.json: model_skops is not a valid skops payload .BadZipFile"):
        load_model(path)


def test_bsp_model_round_trips_through_json(tmp_path):
    rows = pd.DataFrame(
        {"threads": [1e3], "instructions": [5.0], "global_loads": [1.0], "global_stores": [1.0],
         "gpu_clock_hz": [1e9], "gpu_cores": [10.0]}
    )
    model = BspModel().fit(rows, [1e-3])
    loaded = load_model(save_model(model, tmp_path / "bsp.json"))
    assert loaded.lambda_ == model.lambda_ and loaded.get_params() == model.get_params()


def test_feature_name_mismatch_names_missing_and_extra_columns(tmp_path):
    X, y = _data()
    path = save_model(make_model("linear").fit(X, y), tmp_path / "lr.json")
    with pytest.raises(GpuperfError, match="missing column\\(s\\) stores; extra column\\(s\\) flops"):
        load_model(path, feature_names=["loads", "threads", "flops"])
    with pytest.raises(GpuperfError, match="different order"):
        load_model(path, feature_names=["threads", "stores", "loads"])


def test_other_version_warns_or_fails_when_strict(tmp_path):
    X, y = _data()
    path = save_model(make_model("linear").fit(X, y), tmp_path / "lr.json")
    document = json.loads(path.read_text())
    document["gpuperf_version"] = "0.0.1"
    path.write_text(json.dumps(document))
    with pytest.warns(ModelVersionWarning, match="0.0.1"):
        load_model(path)
    with pytest.raises(GpuperfError, match="saved by gpuperf 0.0.1"):
        load_model(path, strict_version=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_model(save_model(make_model("linear").fit(X, y), tmp_path / "same.json"))


def test_json_loader_refuses_untrusted_types(tmp_path):
    path = tmp_path / "evil.json"
    path.write_text(json.dumps({
        "format": "gpuperf-model", "format_version": 1, "gpuperf_version": gpuperf.__version__,
        "feature_names": None, "model": {"__object__": "os.system", "state": {"__mapping__": {}}},
    }))
    with pytest.raises(GpuperfError, match="untrusted type os.system"):
        load_model(path)


def test_saving_checks_what_is_saved_and_loading_the_format_version(tmp_path):
    from sklearn.linear_model import LinearRegression

    from gpuperf.models.selection import SpearmanClusterSelector

    X, y = np.random.default_rng(0).normal(size=(20, 3)), np.arange(20.0)
    with pytest.raises(GpuperfError, match="does not predict"):
        save_model(SpearmanClusterSelector(k=1, threshold=0).fit(X, y), tmp_path / "selector.json")
    with pytest.raises(GpuperfError, match="1 feature names for a model fitted on 3 features"):
        save_model(LinearRegression().fit(X, y), tmp_path / "lr.json", feature_names=["x"])
    with pytest.raises(GpuperfError, match="the M5PRegressor is not fitted; fit it before saving"):
        save_model(make_model("m5p", log_target=False), tmp_path / "unfitted.json")
    assert not (tmp_path / "unfitted.json").exists()
    stale = LinearRegression().fit(pd.DataFrame(X, columns=["a", "b", "c"]), y)
    stale.n_features_in_ = 2  # names left from an earlier fit, as a refit on an array could leave them
    with pytest.raises(GpuperfError, match="3 feature names for a model fitted on 2 features"):
        save_model(stale, tmp_path / "stale.json")
    path = save_model(LinearRegression().fit(X, y), tmp_path / "lr.json", feature_names=["a", "b", "c"])
    document = json.loads(path.read_text())
    path.write_text(json.dumps(dict(document, format_version=99)))
    with pytest.raises(GpuperfError, match="format version 99; this gpuperf reads version 1"):
        load_model(path)


def test_a_file_whose_feature_names_are_not_its_models_own_is_damaged(tmp_path):
    from sklearn.linear_model import LinearRegression

    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [1.0, 0.0, 1.0]})
    fitted = LinearRegression().fit(frame, [1.0, 2.0, 3.5])
    with pytest.raises(GpuperfError, match="the feature_names given \\(b, a, ...\\) are not the model's own"):
        save_model(fitted, tmp_path / "lr.json", feature_names=["b", "a"])
    path = save_model(fitted, tmp_path / "lr.json")
    document = json.loads(path.read_text())
    path.write_text(json.dumps(dict(document, feature_names=["b", "a"])))
    with pytest.raises(GpuperfError, match="damaged model file: its feature_names \\(b, a, ...\\) are not"):
        load_model(path)


def test_bad_files_give_one_line_errors(tmp_path):
    with pytest.raises(GpuperfError, match="no such model file"):
        load_model(tmp_path / "absent.json")
    (tmp_path / "model.pkl").write_bytes(b"x")
    with pytest.raises(GpuperfError, match="unknown model file type"):
        load_model(tmp_path / "model.pkl")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(GpuperfError, match="not a JSON model file"):
        load_model(tmp_path / "broken.json")
    (tmp_path / "broken.skops").write_bytes(b"not a zip")
    with pytest.raises(GpuperfError, match="broken.skops: not a readable skops file"):
        load_model(tmp_path / "broken.skops")
    X, y = _data()
    document = json.loads(save_model(make_model("linear", log_target=False).fit(X, y), tmp_path / "good.json").read_text())
    (tmp_path / "headless.json").write_text(json.dumps({k: v for k, v in document.items() if k != "model"}))
    with pytest.raises(GpuperfError, match="headless.json: a gpuperf model file without its model"):
        load_model(tmp_path / "headless.json")
    document["model"]["state"]["__mapping__"]["steps"] = 5
    (tmp_path / "damaged.json").write_text(json.dumps(document))
    with pytest.raises(GpuperfError, match="damaged.json: damaged model"):
        load_model(tmp_path / "damaged.json")


def test_feature_selection_pipeline_round_trips_through_skops(tmp_path):
    X, y = _data()
    select = ColumnTransformer([
        ("counters", SpearmanClusterSelector(k=1, threshold=0.0), [0, 1]),
        ("gpu", SelectKBest(spearman_scores, k=1), [2]),
    ])
    model = make_model("random_forest", log_inputs=True, preprocess=select).fit(X, y)
    loaded = load_model(save_model(model, tmp_path / "selected.skops"))
    assert np.array_equal(loaded.predict(X), model.predict(X))


def test_a_json_model_saves_and_loads_without_importing_skops(tmp_path):
    """skops takes about a second to import; a command working with a .json model never needs it."""
    import subprocess
    import sys

    script = f"""
import sys
import numpy as np
from sklearn.linear_model import LinearRegression
from gpuperf.models.persistence import load_model, save_model
model = LinearRegression().fit(np.arange(6.0).reshape(3, 2), [1.0, 2.0, 3.0])
save_model(model, {str(tmp_path / 'm.json')!r}, ["a", "b"])
load_model({str(tmp_path / 'm.json')!r}, ["a", "b"])
print(sorted(name for name in sys.modules if name.split(".")[0] == "skops"))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("suffix", [".json", ".skops"])
def test_a_model_loading_would_refuse_is_refused_when_saved(tmp_path, suffix):
    """A fitted search holds a scorer and a splitter that loading does not trust: saving it would
    write a file that can never be read back, so nothing is written; its best estimator saves."""
    from sklearn.model_selection import GridSearchCV

    X = np.random.default_rng(0).uniform(1, 10, (40, 3))
    y = X[:, 0] * 1e-3 + 1e-4
    search = GridSearchCV(make_model("m5p"), {"regressor__min_samples_leaf": [2, 4]}, cv=3).fit(X, y)
    path = tmp_path / f"search{suffix}"
    with pytest.raises(GpuperfError, match=r"the model holds type\(s\) that loading refuses \(.*KFold"):
        save_model(search, path)
    assert not path.exists()
    save_model(search.best_estimator_, path)
    np.testing.assert_array_equal(load_model(path).predict(X), search.predict(X))


def test_metadata_takes_numpy_scalars_as_numbers_and_refuses_other_objects(tmp_path):
    X, y = _data()
    model = make_model("linear").fit(X, y)
    path = save_model(model, tmp_path / "m.json", metadata={"rows": np.int64(40), "mape": [np.float32(0.5)]})
    assert model_info(path)["metadata"] == {"rows": 40, "mape": [0.5]}
    with pytest.raises(GpuperfError, match=r"bad.json: metadata: object is not a JSON value"):
        save_model(model, tmp_path / "bad.json", metadata={"x": object()})
    assert not (tmp_path / "bad.json").exists()


def test_a_model_whose_state_was_edited_so_it_cannot_predict_is_refused_on_loading(tmp_path):
    X, y = _data()
    path = save_model(make_model("linear", log_target=False).fit(X, y), tmp_path / "good.json",
                      metadata={"options": {"name": "lr"}})
    text = path.read_text()
    assert '"intercept_": ' in text and '"coef_"' in text
    start = text.index('"intercept_": ') + len('"intercept_": ')
    end = min(text.index(c, start) for c in ",}\n" if c in text[start:])
    edits = {
        "text_intercept": text[:start] + '"abc"' + text[end:],
        "options": text.replace('"options": {', '"options": "x", "kept": {', 1),
    }
    document = json.loads(text)
    edits["no_coef"] = json.dumps(document).replace('"coef_"', '"gone_"', 1)
    errors = {
        "text_intercept": "damaged model \\(it cannot predict: UFuncTypeError",
        "options": "damaged model file: metadata.options must be an object, not 'x'",
        "no_coef": "damaged model \\(it cannot predict: AttributeError",
    }
    for name, edited in edits.items():
        (tmp_path / f"{name}.json").write_text(edited)
        with pytest.raises(GpuperfError, match=f"{name}.json: {errors[name]}"):
            load_model(tmp_path / f"{name}.json")
    assert np.allclose(load_model(path).predict(X), make_model("linear", log_target=False).fit(X, y).predict(X))


def test_fitted_values_no_fit_could_give_are_refused_on_loading(tmp_path):
    """A hand-edited file loaded whole: a BSP lambda_ of -1 predicted negative times (0: infinite), a
    roofline efficiency_ of 0 infinite ones, and a linear count model with a weight against its sign
    bound loaded through load_model (only load_linear_model checked it)."""
    from gpuperf.models.linear import LinearCountModel
    from gpuperf.models.properties import property_names
    from gpuperf.models.roofline import RooflineModel

    rows = pd.DataFrame({"threads": [1e3], "instructions": [5.0], "global_loads": [1.0], "global_stores": [1.0],
                         "gpu_clock_hz": [1e9], "gpu_cores": [10.0]})
    bsp = save_model(BspModel().fit(rows, [1e-3]), tmp_path / "bsp.json")
    roof_rows = pd.DataFrame({"flops": [1e9, 1e10], "dram_bytes": [1e9, 1e8], "gpu_peak_f32_gflops": 1e4,
                              "gpu_memory_bandwidth_gbs": 100.0})
    roof = save_model(RooflineModel(calibrate=True).fit(roof_rows, [0.02, 0.002]), tmp_path / "roof.json")
    names = list(property_names("gpu"))
    table = pd.DataFrame(np.random.default_rng(0).uniform(1, 10, (3 * len(names), len(names))), columns=names)
    linear = save_model(LinearCountModel().fit(table, table.sum(axis=1) * 1e-9), tmp_path / "linear.json")

    def edited(path, key, value):
        document = json.loads(path.read_text())
        state = document["model"]["state"]["__mapping__"]
        state[key] = value(state[key])
        path.write_text(json.dumps(document))

    for value, shown in ((-1.0, "-1.0"), (0.0, "0.0")):
        edited(bsp, "lambda_", lambda _: value)
        with pytest.raises(GpuperfError, match=rf"bsp.json: damaged model \(BspModel: lambda_ is {shown}, not a positive"):
            load_model(bsp)
    edited(roof, "efficiency_", lambda _: 0.0)
    with pytest.raises(GpuperfError, match=r"roof.json: damaged model \(RooflineModel: efficiency_ is 0.0"):
        load_model(roof)
    edited(linear, "coef_", lambda coef: dict(coef, data=[-1.0, *coef["data"][1:]]))
    with pytest.raises(GpuperfError, match=rf"linear.json: damaged model \(LinearCountModel: the weight of {names[0]} "
                       "is outside its sign bound"):
        load_model(linear)


def test_metadata_numbers_that_are_not_finite_are_written_as_null(tmp_path):
    """A NaN in metadata was written as a bare NaN, which strict JSON readers refuse."""
    X, y = _data()
    path = save_model(make_model("linear", log_target=False).fit(X, y), tmp_path / "m.json",
                      metadata={"gmre": float("nan"), "fold": {"worst": [1.0, float("inf")]}})
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text, parse_constant=lambda name: pytest.fail(name))["metadata"] == {
        "gmre": None, "fold": {"worst": [1.0, None]}}


def test_edited_prediction_bounds_are_refused_on_loading(tmp_path):
    """A LogTarget whose log_bounds_ were edited to NaN loaded and predicted NaN; crossed bounds
    would clip every prediction to the high one."""
    X, y = _data()
    path = save_model(make_model("linear", log_target=True).fit(X, y), tmp_path / "lt.json")
    for bounds in ([float("nan"), float("nan")], [-3.0, -12.0], [1.0]):
        document = json.loads(path.read_text())
        document["model"]["state"]["__mapping__"]["log_bounds_"] = {"__tuple__": bounds}
        edited = tmp_path / "edited.json"
        edited.write_text(json.dumps(document))
        with pytest.raises(GpuperfError, match=r"edited.json: damaged model \(LogTarget: log_bounds_ is .*not two "
                           "finite numbers, low before high"):
            load_model(edited)
    assert load_model(path).predict(X).shape == (len(X),)


@pytest.mark.parametrize(("field", "edit", "message"), [
    ("threshold_", lambda data: data.__setitem__(0, {"__float__": "nan"}), "a split threshold is not a finite"),
    ("left_", lambda data: data.__setitem__(0, 0), "links do not form one tree"),
    ("right_", lambda data: data.__setitem__(0, 1), "links do not form one tree"),
    ("feature_", lambda data: data.__setitem__(0, 99), "a split names a feature"),
    ("intercept_", lambda data: data.__setitem__(-1, {"__float__": "nan"}), "a leaf model's coefficients are not"),
    ("left_", lambda data: data.__setitem__(0, 999), "links do not form one tree"),
])
def test_an_edited_model_tree_is_refused_on_loading_not_looped_in(tmp_path, field, edit, message):
    """An M5P file whose threshold was NaN loaded and predicted negative times; a left link back to
    the root made loading loop forever."""
    X, y = _data()
    path = save_model(make_model("m5p", log_target=False).fit(X, y), tmp_path / "m5p.json")
    document = json.loads(path.read_text())
    state = document["model"]["state"]["__mapping__"]
    assert state["feature_"]["data"][0] >= 0, "the root must split for this test"
    edit(state[field]["data"])
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(document))
    with pytest.raises(GpuperfError, match=rf"edited.json: damaged model \(M5PRegressor: .*{message}"):
        load_model(edited)
    assert load_model(path).predict(X).shape == (len(X),)


def test_log_target_refuses_several_target_columns():
    X, y = _data()
    with pytest.raises(GpuperfError, match="LogTarget: y has 2 columns"):
        make_model("linear", log_target=True).fit(X, np.column_stack([y, y * 1e6]))


def test_a_skops_file_whose_schema_has_another_shape_is_one_error_naming_it(tmp_path):
    """skops raised TypeError (or AttributeError) on a schema.json of another shape: a traceback, and
    the geometry model's cache so damaged was never refitted."""
    import zipfile

    from gpuperf.models.persistence import load_model

    for name, schema in (("a.skops", '{"x": 1}'), ("b.skops", "[1]")):
        with zipfile.ZipFile(tmp_path / name, "w") as archive:
            archive.writestr("schema.json", schema)
        with pytest.raises(GpuperfError, match=rf"{name}: not a readable skops file"):
            load_model(tmp_path / name)


def test_save_model_never_writes_over_a_file_unless_told(tmp_path):
    """A notebook's results.json is not a model to replace: refused, and kept whole."""
    from sklearn.linear_model import LinearRegression

    from gpuperf.errors import GpuperfError
    from gpuperf.models.persistence import load_model, save_model

    model = LinearRegression().fit([[1.0], [2.0], [3.0]], [1.0, 2.0, 3.1])
    results = tmp_path / "results.json"
    results.write_text('{"my": "results"}')
    with pytest.raises(GpuperfError, match="results.json: already exists; save_model writes over a file only when "
                                           "given replace=True"):
        save_model(model, results)
    assert results.read_text() == '{"my": "results"}'
    save_model(model, results, replace=True)
    assert load_model(results).predict([[4.0]])[0] == pytest.approx(model.predict([[4.0]])[0])


def test_a_source_trees_version_label_is_no_other_version_and_another_release_says_refit(tmp_path):
    """0.2.0 against 0.2.0+source warned although no feature changed; another release did not say what to do."""
    X, y = _data()
    path = save_model(make_model("linear").fit(X, y), tmp_path / "lr.json")
    document = json.loads(path.read_text())
    release = gpuperf.__version__.split("+")[0]
    for saved in (release, release + "+source"):
        path.write_text(json.dumps(dict(document, gpuperf_version=saved)))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            load_model(path)
    path.write_text(json.dumps(dict(document, gpuperf_version="0.0.1")))
    with pytest.warns(ModelVersionWarning, match="refit it with this gpuperf before trusting its predictions"):
        load_model(path)


def test_save_model_does_not_write_through_a_dangling_link_unless_told(tmp_path):
    X, y = _data()
    link = tmp_path / "model.json"
    link.symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(GpuperfError, match="model.json: already exists"):
        save_model(make_model("linear").fit(X, y), link)
    assert not (tmp_path / "elsewhere.json").exists()


def test_a_skops_file_dates_its_members_with_the_fixed_date_and_keeps_shared_objects_shared(tmp_path):
    import zipfile

    X, y = _data()
    model = make_model("random_forest").fit(X, y)
    forest = model.regressor_
    forest.estimators_ = [forest.estimators_[0]] * len(forest.estimators_)  # one tree object named twice and more
    path = save_model(model, tmp_path / "model.skops")
    with zipfile.ZipFile(path) as saved:
        assert {info.date_time for info in saved.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    loaded = load_model(path, feature_names=list(X.columns))
    trees = loaded.regressor_.estimators_
    assert all(tree is trees[0] for tree in trees)
    assert np.array_equal(loaded.predict(X), model.predict(X))


@pytest.mark.parametrize("suffix", [".skops", ".json"])
def test_a_knn_fitted_on_thousands_of_rows_round_trips(tmp_path, suffix):
    """Its PCA comes from the covariance's eigenvectors (the full SVD below 2,000 rows): saved and
    loaded, it predicts the same."""
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.uniform(1, 10, (3000, 3)), columns=["loads", "stores", "threads"])
    model = make_model("pca_knn").fit(X, 1e-5 * X["loads"] * X["threads"])
    assert model.regressor_.pipeline_.named_steps["pca"].svd_solver == "covariance_eigh"
    loaded = load_model(save_model(model, tmp_path / f"model{suffix}"), feature_names=list(X.columns))
    assert np.array_equal(loaded.predict(X), model.predict(X))


def test_feature_names_given_as_one_string_are_refused_not_read_as_characters(tmp_path):
    """feature_names="abc" for a model of three features was saved as the features a, b and c."""
    model = make_model("lr").fit(np.arange(1.0, 31.0).reshape(10, 3), np.arange(1.0, 11.0))
    with pytest.raises(GpuperfError, match=r"feature_names lists column names, e\.g\. \['abc'\], not the string"):
        save_model(model, tmp_path / "m.json", feature_names="abc")
    assert not (tmp_path / "m.json").exists()
    save_model(model, tmp_path / "m.json", feature_names=["a", "b", "c"])
    with pytest.raises(GpuperfError, match=r"feature_names lists column names, e\.g\. \['abc'\], not the string"):
        load_model(tmp_path / "m.json", feature_names="abc")


@pytest.mark.parametrize("suffix", [".skops", ".json"])
def test_a_forest_is_saved_deflated_and_loads_back_predicting_the_same(tmp_path, suffix):
    """A random forest's trees (about 70 bytes a node, stored as skops writes them) are deflated:
    the file is a fraction of its members' size and predicts exactly as the fitted model."""
    import io
    import zipfile

    X, y = _data()
    model = make_model("random_forest").fit(X, y)
    path = save_model(model, tmp_path / f"rf{suffix}")
    data = (base64.b64decode(json.loads(path.read_text())["model_skops"]) if suffix == ".json"
            else path.read_bytes())
    with zipfile.ZipFile(io.BytesIO(data)) as saved:
        members = saved.infolist()
    assert {info.compress_type for info in members} == {zipfile.ZIP_DEFLATED}
    assert sum(info.compress_size for info in members) < sum(info.file_size for info in members) / 2
    loaded = load_model(path, feature_names=list(X.columns))
    assert np.array_equal(loaded.predict(X), model.predict(X))


def test_a_forest_saved_uncompressed_by_an_earlier_version_still_loads(tmp_path):
    """Files written before the members were deflated (skops' stored members) load and predict the same."""
    X, y = _data()
    model = make_model("random_forest").fit(X, y)
    header = {"format": "gpuperf-model", "format_version": 1, "gpuperf_version": gpuperf.__version__,
              "feature_names": list(X.columns), "metadata": {}}
    sio.dump(dict(header, model=model), tmp_path / "old.skops")
    (tmp_path / "old.json").write_text(json.dumps(dict(header, model_skops=base64.b64encode(
        sio.dumps(model)).decode("ascii"))))
    for name in ("old.skops", "old.json"):
        loaded = load_model(tmp_path / name, feature_names=list(X.columns))
        assert np.array_equal(loaded.predict(X), model.predict(X)), name


def test_a_full_temporary_folder_while_saving_a_forest_is_one_error_naming_the_model(tmp_path, monkeypatch):
    """The model's skops members pass through a temporary file: a full disk there is an error naming
    the model file, which keeps the model saved before."""
    import errno
    import tempfile

    X, y = _data()
    model = make_model("random_forest").fit(X, y)
    path = save_model(model, tmp_path / "rf.skops")
    before = path.read_bytes()

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tempfile, "TemporaryFile", full)
    with pytest.raises(GpuperfError, match=r"rf\.skops: cannot be written \(No space left on device in the "
                                           r"temporary folder .*\); it is left as it was"):
        save_model(model, path, replace=True)
    assert path.read_bytes() == before
