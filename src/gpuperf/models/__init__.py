"""gpuperf.models: performance models as scikit-learn estimators, feature selection, persistence.

- ``make_model(name)`` (``MODEL_NAMES``): linear regression, SVR, random forest, gradient-boosted
  trees, :class:`M5PRegressor`, :class:`PcaKnnRegressor`; :class:`LogTarget` fits on log2 times;
- analytical: :class:`BspModel` (Amaris et al.), :class:`RooflineModel`;
- selection: :class:`SpearmanClusterSelector`, :func:`mutual_information_ranking`;
- persistence: :func:`save_model`, :func:`load_model` (JSON or skops, no pickle).

Models take plain feature matrices (the analytical ones a DataFrame with named columns); GPU
descriptors are joined to tables before they reach a model.
"""

import importlib

# Names re-exported here, loaded on first use so that importing one model module stays cheap.
_EXPORTS = {
    "BspModel": "bsp",
    "LogTarget": "learned",
    "MODEL_NAMES": "learned",
    "PcaKnnRegressor": "learned",
    "log_features": "learned",
    "make_model": "learned",
    "M5PRegressor": "m5p",
    "ModelVersionWarning": "persistence",
    "load_model": "persistence",
    "model_info": "persistence",
    "save_model": "persistence",
    "RooflineModel": "roofline",
    "SpearmanClusterSelector": "selection",
    "mutual_information_ranking": "selection",
    "spearman_scores": "selection",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"gpuperf.models.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'gpuperf.models' has no attribute '{name}'")
