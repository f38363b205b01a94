"""Branches of model files that other tests leave unrun: a hand-edited or damaged .json model naming an
untrusted function or type, an entry or array it cannot hold, or metadata of the wrong shape, and
state that cannot be written to JSON."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression

from gpuperf.errors import GpuperfError
from gpuperf.models.learned import make_model
from gpuperf.models.persistence import load_model, save_model


def saved(tmp_path: Path, names: tuple[str, str, str] = ("a", "b", "c")) -> Path:
    """A log-target linear model fitted on three features, saved as JSON."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.uniform(1, 10, (40, 3)), columns=list(names))
    return save_model(make_model("linear").fit(X, (X.iloc[:, 0] * X.iloc[:, 1]).to_numpy()), tmp_path / "model.json")


def edited(path: Path, old: str, new: str) -> Path:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return path


def test_a_model_file_naming_an_untrusted_function_is_refused(tmp_path):
    path = edited(saved(tmp_path), '"__function__": "numpy.log2"', '"__function__": "os.system"')
    with pytest.raises(GpuperfError, match=r"model\.json: refusing untrusted function os\.system$"):
        load_model(path)


def test_a_model_file_naming_an_untrusted_type_is_refused(tmp_path):
    path = edited(saved(tmp_path), '"sklearn.preprocessing._data.StandardScaler"', '"subprocess.Popen"')
    with pytest.raises(GpuperfError, match=r"model\.json: refusing untrusted type subprocess\.Popen$"):
        load_model(path)


def test_a_model_file_entry_of_no_known_kind_is_refused(tmp_path):
    path = edited(saved(tmp_path), '"__tuple__"', '"__frozenset__"')
    with pytest.raises(GpuperfError, match=r"model\.json: unrecognised entry with keys __frozenset__$"):
        load_model(path)


def test_a_json_document_of_another_format_is_not_a_gpuperf_model(tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"format": "onnx", "model": {}}))
    with pytest.raises(GpuperfError, match=r"other\.json: not a gpuperf model file$"):
        load_model(path)
    path.write_text("[1, 2]")
    with pytest.raises(GpuperfError, match=r"other\.json: not a gpuperf model file$"):
        load_model(path)


@pytest.mark.parametrize("metadata, message", [
    ([1, 2], r"damaged model file: metadata must be an object, not \[1, 2\]$"),
    ({"gpus": "V100"}, r"damaged model file: metadata\.gpus must be a list of names or null, not 'V100'$"),
    ({"kernels": ["k", 3]}, r"damaged model file: metadata\.kernels must be a list of names or null"),
])
def test_model_metadata_of_the_wrong_shape_is_refused(tmp_path, metadata, message):
    path = saved(tmp_path)
    document = json.loads(path.read_text())
    document["metadata"] = metadata
    path.write_text(json.dumps(document))
    with pytest.raises(GpuperfError, match=r"model\.json: " + message):
        load_model(path)


def array_entry(path: Path) -> tuple[dict, dict]:
    """The saved document and its first array of floats (found depth first)."""
    document = json.loads(path.read_text())
    stack = [document["model"]]
    while stack:
        value = stack.pop()
        if isinstance(value, dict) and str(value.get("__ndarray__")).startswith("<f"):
            return document, value
        stack.extend(value.values() if isinstance(value, dict) else value if isinstance(value, list) else [])
    raise AssertionError("no array in the model file")


@pytest.mark.parametrize("dtype, message", [
    ("<c32", r"dtype '<c32' is not one a gpuperf model file holds"),
    ("|V8", r"dtype '\|V8' is not one a gpuperf model file holds"),
    ("<U3", r"its values are not of its dtype <U3"),
    (7, r"__ndarray__ must name a dtype, not 7"),
])
def test_an_array_whose_dtype_a_model_file_cannot_hold_is_refused(tmp_path, dtype, message):
    path = saved(tmp_path)
    document, entry = array_entry(path)
    entry["__ndarray__"] = dtype
    path.write_text(json.dumps(document))
    with pytest.raises(GpuperfError, match=r"model\.json: damaged model file: an array \(" + message + r"\)$"):
        load_model(path)


def test_state_json_cannot_hold_is_saved_as_an_embedded_skops_payload_that_loads_back(tmp_path):
    """A dict with non-string keys, or an array of dates, in a model's state: the .json file embeds
    the model as skops instead of failing, and the state comes back as it was."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.uniform(1, 10, (40, 3)), columns=["a", "b", "c"])
    y = (X["a"] * X["b"]).to_numpy()
    plain = json.loads(saved(tmp_path).read_text())
    assert "model" in plain and "model_skops" not in plain
    for name, value in (("keyed", {1: "one"}), ("dated", np.array(["2026-01-01"], dtype="datetime64[D]"))):
        model = make_model("linear").fit(X, y)
        model.extra_ = value
        path = save_model(model, tmp_path / f"{name}.json")
        document = json.loads(path.read_text())
        assert "model_skops" in document and "model" not in document
        loaded = load_model(path)
        assert str(loaded.extra_) == str(value)
        np.testing.assert_allclose(loaded.predict(X), model.predict(X))


def test_an_array_of_text_saved_under_a_text_dtype_loads_back_as_text(tmp_path):
    """A hand-edited ``<U1`` (one character wide) holding the feature names loads with the width its
    values need, not refused and not cut."""
    path = saved(tmp_path, ("loads", "stores", "threads"))
    text = path.read_text()
    assert text.count('"__ndarray__": "|O"') >= 1
    path.write_text(text.replace('"__ndarray__": "|O"', '"__ndarray__": "<U1"'))
    loaded = load_model(path)
    assert loaded.feature_names_in_.dtype.kind == "U" and loaded.feature_names_in_.tolist() == ["loads", "stores", "threads"]


# -- the reference-residual model ----------------------------------------------------------------------


def reference_training() -> pd.DataFrame:
    from gpuperf.models.reference import REFERENCE_COLUMN

    return pd.DataFrame({"x": np.linspace(0.0, 1.0, 11), REFERENCE_COLUMN: 0.0})


def test_a_reference_residual_without_a_regressor_or_a_reference_column_is_refused():
    from gpuperf.models.reference import REFERENCE_COLUMN, ReferenceResidual

    train = reference_training()
    with pytest.raises(GpuperfError, match=r"^ReferenceResidual: no regressor given$"):
        ReferenceResidual().fit(train, np.exp2(train["x"]))
    with pytest.raises(GpuperfError, match=rf"^ReferenceResidual: inputs need a {REFERENCE_COLUMN} column$"):
        ReferenceResidual(LinearRegression()).fit(train.to_numpy(), np.exp2(train["x"]))


def test_a_reference_residual_without_a_bound_factor_never_clips():
    """Residuals 0..1 in training; x = 50 extrapolates to a residual of 50, kept as it is."""
    from gpuperf.models.reference import REFERENCE_COLUMN, ReferenceResidual

    train = reference_training()
    model = ReferenceResidual(LinearRegression(), bound_factor=None).fit(train, np.exp2(train["x"]))
    assert model.residual_bounds_ == pytest.approx((0.0, 1.0))
    predicted, clipped = model.predict_bounded(pd.DataFrame({"x": [50.0], REFERENCE_COLUMN: [1.0]}))
    assert clipped.tolist() == [False] and predicted == pytest.approx([2.0 ** 51])


def test_a_saved_reference_residual_with_crossed_bounds_is_a_damaged_model(tmp_path):
    from gpuperf.models.reference import ReferenceResidual

    train = reference_training()
    path = save_model(ReferenceResidual(LinearRegression()).fit(train, np.exp2(train["x"])), tmp_path / "ref.json")
    assert load_model(path).residual_bounds_ == pytest.approx((-3.0, 4.0))  # 0..1 widened by log2(8)
    document = json.loads(path.read_text())
    document["model"]["state"]["__mapping__"]["residual_bounds_"] = {"__tuple__": [4.0, -3.0]}
    path.write_text(json.dumps(document))
    with pytest.raises(GpuperfError, match=r"ref\.json: damaged model \(ReferenceResidual: residual_bounds_ is "
                                           r"\(4\.0, -3\.0\), not two finite numbers, low before high\)$"):
        load_model(path)


# -- feature selection -----------------------------------------------------------------------------------


def test_spearman_scores_refuse_a_single_column_of_values_and_a_target_of_several():
    from gpuperf.models.selection import spearman_scores

    with pytest.raises(GpuperfError, match=r"^spearman_scores: X must be a table of rows and columns, got shape \(3,\)$"):
        spearman_scores(np.array([1.0, 2.0, 3.0]), [1.0, 2.0, 3.0])
    with pytest.raises(GpuperfError, match=r"^spearman_scores: y: one column of values expected, got shape \(3, 2\)$"):
        spearman_scores(np.ones((3, 2)), np.ones((3, 2)))
    assert spearman_scores(np.array([[1.0, 5.0], [2.0, 5.0], [3.0, 5.0]]), np.array([[3.0], [2.0], [1.0]])).tolist() \
        == [1.0, 0.0]  # a one-column target is a target; a constant column scores 0


def test_a_spearman_matrix_of_one_row_leaves_every_column_alone_without_a_warning():
    import warnings

    from gpuperf.models.selection import spearman_matrix

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "degrees of freedom <= 0" is no message for a user
        assert spearman_matrix(np.array([[1.0, 2.0, 3.0]])).tolist() == np.eye(3).tolist()


def test_mutual_information_of_two_constants_is_zero_not_nan():
    from gpuperf.models.selection import normalised_mutual_information

    assert normalised_mutual_information([2.0] * 8, [5.0] * 8) == 0.0
    assert normalised_mutual_information(np.arange(8.0), np.arange(8.0), bins=2) == pytest.approx(0.5)
