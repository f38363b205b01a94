"""Save and load fitted models without pickle: JSON or skops, with version and feature checks.

A saved model records the gpuperf version that wrote it and the feature names it was fitted on.

- ``.json``: gpuperf's own readable format. It stores an estimator's state (numbers, strings,
  arrays, nested estimators) and rebuilds only the classes and functions in ``JSON_TYPES``; it
  suits gpuperf's models (M5P, BSP, roofline, PCA + k-NN excepted) and linear models, SVR,
  scalers and pipelines of them. Models holding compiled objects (random forests, boosted trees,
  k-NN search trees) keep the readable JSON header and carry the model as an embedded skops
  payload (``model_skops``, base64), loaded with the same trusted-type check as ``.skops`` files.
- ``.skops``: ``skops.io`` for every model; loading refuses any type outside ``SKOPS_TRUSTED``.

Version policy: loading a file written by another gpuperf version warns (``ModelVersionWarning``)
and goes on, since models depend on scikit-learn, not on gpuperf internals; pass
``strict_version=True`` to make it an error. Feature policy: ``load_model(path, feature_names)``
raises if the saved names differ, naming the missing and the extra columns.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import io
import json
import math
import tempfile
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

import gpuperf
from gpuperf.errors import GpuperfError, GpuperfNote, clipped, missing_file, parser_limits, refuse_one_string
from gpuperf.files import written_whole

FORMAT = "gpuperf-model"
FORMAT_VERSION = 1

# Classes the JSON loader rebuilds, and the functions it may refer to.
JSON_TYPES = (
    "gpuperf.models.linear.LinearCountModel",
    "gpuperf.models.m5p.M5PRegressor",
    "gpuperf.models.bsp.BspModel",
    "gpuperf.models.roofline.RooflineModel",
    "gpuperf.models.learned.LogTarget",
    "gpuperf.models.reference.ReferenceResidual",
    "gpuperf.models.selection.SpearmanClusterSelector",
    "sklearn.pipeline.Pipeline",
    "sklearn.preprocessing._data.StandardScaler",
    "sklearn.preprocessing._function_transformer.FunctionTransformer",
    "sklearn.linear_model._base.LinearRegression",
    "sklearn.linear_model._ridge.Ridge",
    "sklearn.svm._classes.SVR",
    "sklearn.decomposition._pca.PCA",
    "sklearn.compose._target.TransformedTargetRegressor",
)
JSON_FUNCTIONS = ("numpy.log2", "numpy.exp2", "numpy.log", "numpy.exp", "gpuperf.models.learned.signed_log1p")

# Types skops may load beyond its own defaults (which cover scikit-learn's estimators).
SKOPS_TRUSTED = (
    "gpuperf.models.linear.LinearCountModel",
    "gpuperf.models.reference.ReferenceResidual",
    "gpuperf.models.m5p.M5PRegressor",
    "gpuperf.models.bsp.BspModel",
    "gpuperf.models.roofline.RooflineModel",
    "gpuperf.models.learned.LogTarget",
    "gpuperf.models.learned.PcaKnnRegressor",
    "gpuperf.models.learned.signed_log1p",
    "gpuperf.models.selection.SpearmanClusterSelector",
    "gpuperf.models.selection.spearman_scores",
    "sklearn.tree._tree.Tree",
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
    "sklearn.neighbors._kd_tree.KDTree",
    "sklearn.neighbors._ball_tree.BallTree",
    "sklearn.metrics._dist_metrics.EuclideanDistance64",
    "sklearn.utils._bunch.Bunch",
)


class ModelVersionWarning(GpuperfNote):
    """A saved model was written by a different gpuperf version."""


def save_model(model: Any, path: str | Path, feature_names: Sequence[str] | None = None,
               metadata: dict | None = None, new: bool = False, through_links: bool = True,
               replace: bool = False) -> Path:
    """Write a fitted ``model`` to ``path`` (``.json`` or ``.skops``), a new file unless ``replace``
    (then with ``new``, a file that appeared at ``path`` meanwhile, another run's model, is kept and
    the write refused); not ``through_links`` (a cache file), a symbolic link at ``path`` is replaced,
    not written through.

    ``feature_names`` default to the model's ``feature_names_in_`` (set when fitted on a DataFrame);
    given, there must be one per feature the model was fitted on. Only a model (something that
    predicts) is saved: a selector or transformer goes inside a Pipeline.
    """
    path = Path(path)
    refuse_one_string(feature_names, "feature_names", str(path))  # "threads" would read as t, h, r, ...
    if not replace:
        if path.exists() or path.is_symlink():
            raise GpuperfError(f"{path}: already exists; save_model writes over a file only when given replace=True")
        new = True
    if not callable(getattr(model, "predict", None)):
        raise GpuperfError(f"{path}: {type(model).__name__} does not predict; save a model (a selector or "
                           "transformer goes inside a Pipeline with one)")
    try:
        check_is_fitted(model)
    except NotFittedError:
        raise GpuperfError(f"{path}: the {type(model).__name__} is not fitted; fit it before saving") from None
    names = feature_names if feature_names is not None else getattr(model, "feature_names_in_", None)
    fitted_on = getattr(model, "n_features_in_", None)
    if names is not None and fitted_on is not None and len(list(names)) != fitted_on:
        raise GpuperfError(f"{path}: {len(list(names))} feature names for a model fitted on {fitted_on} features")
    if feature_names is not None:
        _check_own_names(model, [str(n) for n in feature_names], path, "the feature_names given")
    header = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "gpuperf_version": gpuperf.__version__,
        "feature_names": None if names is None else [str(n) for n in names],
        "metadata": _json_metadata(metadata, path),
    }
    if path.suffix == ".json":
        try:
            document = dict(header, model=_encode(model, "model"))
        except GpuperfError:  # compiled parts (trees, search structures): an embedded skops payload
            document = dict(header, model_skops=base64.b64encode(_loadable_skops(model, path)).decode("ascii"))
        with written_whole(path, new=new, through_links=through_links) as temporary:  # a failed write keeps the model being refitted
            temporary.write_text(json.dumps(document, indent=1), encoding="utf-8")
    elif path.suffix == ".skops":
        data = _loadable_skops(dict(header, model=model), path)
        with written_whole(path, new=new, through_links=through_links) as temporary:
            temporary.write_bytes(data)
    else:
        raise GpuperfError(f"{path}: unknown model file type '{path.suffix}'; use .json or .skops")
    return path


def _json_metadata(metadata: dict | None, path: Path) -> dict:
    """``metadata`` as plain JSON values (NumPy scalars as numbers, NaN and infinities as null, which
    strict JSON readers take); anything else is an error."""
    def plain(value: Any) -> Any:
        if isinstance(value, np.generic):
            return value.item()
        raise TypeError(f"{type(value).__name__} is not a JSON value")

    def finite(value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, dict):
            return {key: finite(item) for key, item in value.items()}
        if isinstance(value, list):
            return [finite(item) for item in value]
        return value

    try:
        return finite(json.loads(json.dumps(metadata or {}, default=plain)))
    except (TypeError, ValueError) as error:
        raise GpuperfError(f"{path}: metadata: {error}") from None


def model_info(path: str | Path) -> dict:
    """The header of a saved model: format, gpuperf_version, feature_names, metadata."""
    document = _read(Path(path))
    return {key: value for key, value in document.items() if key not in ("model", "model_skops")}


def load_model(path: str | Path, feature_names: Sequence[str] | None = None, strict_version: bool = False,
               probe: bool = True) -> Any:
    """Read a model saved by :func:`save_model`, checking version and (if given) feature names, and
    (``probe``) that it predicts a row of its features; a caller that checks the model's state itself,
    with a more telling message, passes ``probe=False``."""
    refuse_one_string(feature_names, "feature_names", str(path))  # "threads" would read as t, h, r, ...
    path = Path(path)
    document = _read(path)
    _check_version(path, document.get("gpuperf_version"), strict_version)
    if feature_names is not None:
        check_feature_names(document.get("feature_names"), feature_names, str(path))
    if "model_skops" in document:
        model = _load_skops_payload(document["model_skops"], path)
    elif "model" not in document:
        raise GpuperfError(f"{path}: a gpuperf model file without its model")
    elif path.suffix != ".json":
        model = document["model"]
    else:
        try:
            with parser_limits(path):
                model = _decode(document["model"], str(path))
        except GpuperfError:
            raise
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            raise GpuperfError(f"{path}: damaged model ({type(error).__name__}: {error})") from None
    if not callable(getattr(model, "predict", None)):
        raise GpuperfError(f"{path}: damaged model (it cannot predict)")
    _check_own_names(model, document.get("feature_names"), path)
    _check_fitted_values(model, path)
    if probe:
        _check_predicts(model, document.get("feature_names"), path)
    return model


# What predicting with a model whose state was edited by hand raises (NumPy's ufunc type errors are TypeErrors).
DAMAGE = (ValueError, TypeError, AttributeError, LookupError, ArithmeticError)


def _check_predicts(model: Any, names: Sequence[str] | None, path: Path) -> None:
    """The model predicts one row of its features (all 1): a file whose state was edited so that it
    cannot is refused here, not in the middle of a command. A gpuperf error (a model refusing that
    artificial row) is no damage."""
    if not names:
        return
    import pandas as pd

    probe = pd.DataFrame([np.ones(len(names))], columns=list(names))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.predict(probe)
    except GpuperfError:
        return
    except DAMAGE as error:
        raise GpuperfError(f"{path}: damaged model (it cannot predict: {type(error).__name__}: {error})") from None


def _check_fitted_values(model: Any, path: Path) -> None:
    """Each part of ``model`` (the steps of a pipeline, the regressor inside a wrapper) that can
    check its fitted values does: a value edited by hand (a negative lambda, a weight against its
    sign bound) is refused, naming the file."""
    parts = [model]
    while parts:
        part = parts.pop()
        parts += [step for _, step in getattr(part, "steps", [])]
        parts += [getattr(part, name) for name in ("regressor_", "estimator_") if hasattr(part, name)]
        check = getattr(part, "check_fitted_values", None)
        if callable(check):
            try:
                check()
            except GpuperfError as error:
                raise GpuperfError(f"{path}: damaged model ({error})") from None
            except DAMAGE as error:
                raise GpuperfError(f"{path}: damaged model ({type(error).__name__}: {error})") from None


def _check_own_names(model: Any, saved: Sequence[str] | None, path: Path,
                     what: str = "damaged model file: its feature_names") -> None:
    """The file's feature names are the model's own (where the model knows its names): a file
    saved with other names would predict from the wrong columns."""
    own = getattr(model, "feature_names_in_", None)
    if saved is not None and own is not None and [str(n) for n in own] != [str(n) for n in saved]:
        raise GpuperfError(f"{path}: {what} ({', '.join(map(str, saved[:4]))}, ...) "
                           f"are not the model's own ({', '.join(map(str, list(own)[:4]))}, ...)")


def _skops():
    """``skops.io``, imported on first use: it takes about a second, which a JSON model never needs."""
    import skops.io

    return skops.io


def _loadable_skops(value: Any, path: Path) -> bytes:
    """``value`` as skops bytes, its members deflated, refusing what :func:`load_model` would refuse to
    read back. skops writes them stored (a random forest's trees: about 70 bytes a node); they pass
    through a temporary file, not a second copy in memory, on their way to :func:`_reproducible_skops`."""
    try:
        with tempfile.TemporaryFile() as stored:
            _skops().dump(value, stored)
            stored.seek(0)
            data = _reproducible_skops(stored)
    except OSError as error:  # a full temporary folder names no file: name the model being saved
        raise GpuperfError(f"{path}: cannot be written ({error.strerror or error} in the temporary folder "
                           f"{tempfile.gettempdir()}); it is left as it was") from None
    untrusted = [t for t in _skops().get_untrusted_types(data=data) if t not in SKOPS_TRUSTED]
    if untrusted:
        raise GpuperfError(f"{path}: the model holds type(s) that loading refuses ({', '.join(untrusted)}); save "
                           "the fitted estimator itself (a search's best_estimator_), without functions of your own")
    return data


SKOPS_DATE_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest a zip member may carry
# Deflate's fastest level: a random forest's members shrink 3.5x (its default level, 6: 3.9x, in twice the time).
SKOPS_COMPRESS_LEVEL = 1


def _reproducible_skops(source: BinaryIO) -> bytes:
    """The skops zip in ``source`` as bytes that depend only on the model, its members deflated: skops
    names objects and array members by their ``id()`` (and byte members by a random UUID) and dates
    members with the save time; here they are numbered in the order ``schema.json`` first names them,
    and the zip is written again with its members sorted and a fixed date. Loading reads members by
    the names in ``schema.json``."""
    source = zipfile.ZipFile(source)
    schema = json.loads(source.read("schema.json"))
    renamed = _renumber_skops_schema(schema)
    members = {renamed.get(info.filename, info.filename): info for info in source.infolist()}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for name in sorted(members):
            info = zipfile.ZipInfo(name, date_time=SKOPS_DATE_TIME)
            info.external_attr, info.create_system = 0o600 << 16, 3  # as skops' own, on any system
            content = json.dumps(schema, indent=2) if name == "schema.json" else source.read(members[name])
            target.writestr(info, content, zipfile.ZIP_DEFLATED, SKOPS_COMPRESS_LEVEL)
    return out.getvalue()


def _renumber_skops_schema(schema: Any) -> dict[str, str]:
    """Number the nodes' ``__id__`` (from 1: skops reads 0 as no id) and their members (``file``) in
    the order ``schema`` first names them, in place; return the members' new names by old name.
    A node that names an id or member again (a shared object) gets the same number."""
    ids: dict[int, int] = {}
    files: dict[str, str] = {}
    stack = [schema]
    while stack:
        state = stack.pop()
        if isinstance(state, list):
            stack.extend(reversed(state))
            continue
        if not isinstance(state, dict):
            continue
        if "__loader__" in state:  # a node's state: its id and its member are skops' own entries
            if isinstance(state.get("__id__"), int):
                state["__id__"] = ids.setdefault(state["__id__"], len(ids) + 1)
            if isinstance(state.get("file"), str):
                old = state["file"]
                state["file"] = files.setdefault(old, f"{len(files) + 1}{Path(old).suffix}")
        stack.extend(reversed(list(state.values())))
    return files


def _load_skops_payload(payload: str, path: Path):
    """The model embedded in a JSON file as base64 skops bytes, refusing untrusted types."""
    try:
        data = base64.b64decode(payload, validate=True)
        types = _skops().get_untrusted_types(data=data)
    except (binascii.Error, ValueError, TypeError, AttributeError, zipfile.BadZipFile, KeyError, EOFError) as error:
        raise GpuperfError(f"{path}: model_skops is not a valid skops payload ({type(error).__name__}: {error})") from None
    untrusted = [t for t in types if t not in SKOPS_TRUSTED]
    if untrusted:
        raise GpuperfError(f"{path}: refusing untrusted type(s) {', '.join(untrusted)}")
    try:
        return _skops().loads(data, trusted=list(types))
    except (ValueError, TypeError, AttributeError, zipfile.BadZipFile, KeyError, EOFError) as error:
        raise GpuperfError(f"{path}: model_skops is damaged ({type(error).__name__}: {error})") from None


def check_feature_names(saved, given, where: str) -> None:
    """Raise if ``given`` differs from the ``saved`` feature names, naming missing and extra ones."""
    if saved is None:
        raise GpuperfError(f"{where}: the model was saved without feature names; cannot check them")
    saved, given = [str(n) for n in saved], [str(n) for n in given]
    missing = [n for n in saved if n not in given]
    extra = [n for n in given if n not in saved]
    if missing or extra:
        parts = ([f"missing column(s) {', '.join(missing)}"] if missing else []) + (
            [f"extra column(s) {', '.join(extra)}"] if extra else []
        )
        raise GpuperfError(f"{where}: features differ from the saved model: {'; '.join(parts)}")
    if saved != given:
        raise GpuperfError(f"{where}: features are in a different order than the saved model's: {', '.join(saved)}")


def _read(path: Path) -> dict:
    if not path.is_file():
        raise missing_file(path, f"{path}: no such model file")
    if path.suffix == ".json":
        try:
            with parser_limits(path):
                document = json.loads(path.read_text(encoding="utf-8-sig"))
        except json.JSONDecodeError as error:
            raise GpuperfError(f"{path}: not a JSON model file ({error.msg} at line {error.lineno})") from None
        except UnicodeDecodeError:
            raise GpuperfError(f"{path}: not a JSON model file (not UTF-8 text)") from None
    elif path.suffix == ".skops":
        try:
            found = _skops().get_untrusted_types(file=path)
        except (zipfile.BadZipFile, ValueError, KeyError, OSError, TypeError, AttributeError) as error:
            # TypeError, AttributeError: a schema.json of another shape
            raise GpuperfError(f"{path}: not a readable skops file ({type(error).__name__}: {error})") from None
        untrusted = [t for t in found if t not in SKOPS_TRUSTED]
        if untrusted:
            raise GpuperfError(f"{path}: refusing untrusted type(s) {', '.join(untrusted)}")
        try:
            document = _skops().load(path, trusted=list(found))
        except Exception as error:  # a damaged member: numpy, skops or a model's own reader raises
            raise GpuperfError(f"{path}: damaged skops model file ({type(error).__name__}: {error})") from None
    else:
        raise GpuperfError(f"{path}: unknown model file type '{path.suffix}'; use .json or .skops")
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise GpuperfError(f"{path}: not a gpuperf model file")
    if document.get("format_version") != FORMAT_VERSION:
        raise GpuperfError(f"{path}: model file format version {document.get('format_version')!r}; this gpuperf "
                           f"reads version {FORMAT_VERSION} (refit the model with this gpuperf)")
    names = document.get("feature_names")
    if names is not None and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise GpuperfError(f"{path}: feature_names must be a list of column names, not {names!r}")
    metadata = document.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise GpuperfError(f"{path}: damaged model file: metadata must be an object, not {metadata!r}")
    options = (metadata or {}).get("options")
    if options is not None and not isinstance(options, dict):
        raise GpuperfError(f"{path}: damaged model file: metadata.options must be an object, not {options!r}")
    for key in ("gpus", "kernels", "selected_features"):
        value = (metadata or {}).get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise GpuperfError(f"{path}: damaged model file: metadata.{key} must be a list of names or null, "
                               f"not {clipped(repr(value))}")
    return document


def release(version: str) -> str:
    """``version`` without a local label (``0.3.0+source`` is 0.3.0)."""
    return version.split("+", 1)[0]


def _check_version(path: Path, saved: str | None, strict: bool) -> None:
    if not isinstance(saved, str) or not saved:
        raise GpuperfError(f"{path}: damaged model file: it records no gpuperf_version (which gpuperf wrote it)")
    if release(saved) == release(gpuperf.__version__):  # a source tree's "+source" changes no feature
        return
    message = (f"{path}: saved by gpuperf {saved}, loading with gpuperf {gpuperf.__version__}: what some feature "
               "columns mean changed between them (docs/models.md in gpuperf's source repository); refit it with "
               "this gpuperf before trusting its predictions")
    if strict:
        raise GpuperfError(message)
    warnings.warn(message, ModelVersionWarning, stacklevel=3)


def _qualified(obj) -> str:
    kind = obj if isinstance(obj, type) else type(obj)
    return f"{kind.__module__}.{kind.__qualname__}"


def _function_name(obj) -> str | None:
    if isinstance(obj, np.ufunc):
        return f"numpy.{obj.__name__}"
    if callable(obj) and hasattr(obj, "__module__") and hasattr(obj, "__qualname__"):
        return f"{obj.__module__}.{obj.__qualname__}"
    return None


def _encode(value, where: str) -> Any:
    """A JSON-ready form of ``value``; raises for anything outside the JSON format."""
    if value is None or isinstance(value, (bool, str, int)) and not isinstance(value, np.generic):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if isinstance(value, np.generic):
        return _encode(value.item(), where)
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufOU":
            raise GpuperfError(f"cannot save {where} (array of {value.dtype}) to JSON; use a .skops file")
        return {"__ndarray__": value.dtype.str, "shape": list(value.shape),
                "data": [_encode(v, where) for v in value.ravel().tolist()]}
    if isinstance(value, list):
        return [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise GpuperfError(f"cannot save {where} (a dict with non-string keys) to JSON; use a .skops file")
        return {"__mapping__": {k: _encode(v, f"{where}.{k}") for k, v in value.items()}}
    name = _function_name(value)
    if name in JSON_FUNCTIONS:
        return {"__function__": name}
    if _qualified(value) in JSON_TYPES:
        state = value.__getstate__() if hasattr(value, "__getstate__") else vars(value)
        return {"__object__": _qualified(value), "state": _encode(dict(state), where)}
    raise GpuperfError(f"cannot save {where} ({_qualified(value)}) to JSON; use a .skops file")


def _resolve(qualified: str):
    module, _, name = qualified.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _decode(value, where: str) -> Any:
    if isinstance(value, list):
        return [_decode(v, where) for v in value]
    if not isinstance(value, dict):
        return value
    if "__float__" in value:
        return float(value["__float__"])
    if "__ndarray__" in value:
        return _decode_array(value, where)
    if "__tuple__" in value:
        return tuple(_decode(v, where) for v in value["__tuple__"])
    if "__mapping__" in value:
        return {k: _decode(v, where) for k, v in value["__mapping__"].items()}
    if "__function__" in value:
        if value["__function__"] not in JSON_FUNCTIONS:
            raise GpuperfError(f"{where}: refusing untrusted function {value['__function__']}")
        return _resolve(value["__function__"])
    if "__object__" in value:
        if value["__object__"] not in JSON_TYPES:
            raise GpuperfError(f"{where}: refusing untrusted type {value['__object__']}")
        kind = _resolve(value["__object__"])
        obj = kind.__new__(kind)
        state = _decode(value["state"], where)
        if hasattr(obj, "__setstate__"):
            obj.__setstate__(state)
        else:
            obj.__dict__.update(state)
        return obj
    raise GpuperfError(f"{where}: unrecognised entry with keys {', '.join(sorted(value))}")


def _decode_array(value: dict, where: str) -> np.ndarray:
    """An array saved by :func:`_encode`; one whose values do not fit its dtype (a hand-edited file)
    is refused, not cast: numbers read as 3-character text would predict nonsense."""
    try:
        dtype = _saved_dtype(value["__ndarray__"])
        data = [_decode(v, where) for v in value["data"]]
        if not _fits(dtype.kind, data):
            raise ValueError(f"its values are not of its dtype {value['__ndarray__']}")
        return np.array(data, dtype=dtype).reshape(value["shape"])
    except (TypeError, ValueError, KeyError) as error:
        raise GpuperfError(f"{where}: damaged model file: an array ({error})") from None


def _saved_dtype(name: Any) -> np.dtype:
    """The dtype ``name`` where :func:`_encode` writes such dtypes: numbers of at most 16 bytes, objects
    and text. Text gets the width its values need, not the width named: a hand-edited ``<U100000000``
    would ask for gigabytes."""
    if not isinstance(name, str):
        raise ValueError(f"__ndarray__ must name a dtype, not {name!r}")
    dtype = np.dtype(name)
    if dtype.kind == "U" and dtype.subdtype is None:
        return np.dtype(f"{dtype.byteorder}U")
    if dtype.kind == "O" or dtype.kind in "biufc" and dtype.itemsize <= 16 and dtype.subdtype is None:
        return dtype
    raise ValueError(f"dtype {name!r} is not one a gpuperf model file holds")


def _fits(kind: str, data: list) -> bool:
    """Whether JSON values can be an array of dtype kind ``kind`` as they are."""
    if kind == "b":
        return all(isinstance(v, bool) for v in data)
    if kind == "U":
        return all(isinstance(v, str) for v in data)
    if kind in "iuf":
        return all(isinstance(v, (int, float)) for v in data)
    return kind == "O"
