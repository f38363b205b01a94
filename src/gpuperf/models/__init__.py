"""gpuperf.models: performance models as scikit-learn estimators, feature selection, persistence.

- ``make_model(name)`` (``MODEL_NAMES``): linear regression, SVR, random forest, gradient-boosted
  trees, :class:`M5PRegressor`, :class:`PcaKnnRegressor`; :class:`LogTarget` fits on log2 times;
- analytical: :class:`LinearCountModel` (Stevens & Klöckner), :class:`BspModel` (Amaris et al.),
  :class:`RooflineModel`; :class:`ReferenceResidual` learns the ratio to a reference time;
- selection: :class:`SpearmanClusterSelector`, :func:`mutual_information_ranking` and
  :func:`normalised_mutual_information` (LIFT paper);
- persistence: :func:`save_model`, :func:`load_model` (JSON or skops, no pickle);
- cross-GPU: :func:`times_on_gpu`, a GPU's times from other GPUs' times of the same launches scaled
  by a few launches timed on it (no fitted model; ``gpuperf predict-gpu``).

Models take plain feature matrices (BSP and the roofline a DataFrame with named columns; the
linear count model either); GPU
descriptors are joined to tables before they reach a model.
"""

from gpuperf._lazy import lazy_exports

# Names re-exported here, loaded on first use so that importing one model module stays cheap.
_EXPORTS = {
    "BspModel": "bsp",
    "CrossGpuPrediction": "cross_gpu",
    "times_on_gpu": "cross_gpu",
    "CLI_ALIASES": "learned",
    "LogTarget": "learned",
    "MODEL_NAMES": "learned",
    "PcaKnnRegressor": "learned",
    "log_features": "learned",
    "make_model": "learned",
    "LinearCountModel": "linear",
    "M5PRegressor": "m5p",
    "ModelVersionWarning": "persistence",
    "load_model": "persistence",
    "model_info": "persistence",
    "save_model": "persistence",
    "ReferenceResidual": "reference",
    "RooflineModel": "roofline",
    "SpearmanClusterSelector": "selection",
    "mutual_information_ranking": "selection",
    "normalised_mutual_information": "selection",
    "spearman_scores": "selection",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
