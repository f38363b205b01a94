"""Learned performance models as scikit-learn estimators.

The models of Amaris et al. (linear regression, SVR, random forest with 50 trees and
``max_features=3``, all on a log2 target), the LIFT paper's PCA + k-NN, an M5P model tree and
gradient-boosted trees as the modern baseline. Every model takes a plain feature matrix and
predicts a time; :func:`make_model` builds one by name.
"""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
from scipy import sparse
from sklearn import get_config
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.compose import TransformedTargetRegressor
from sklearn.decomposition import PCA
from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor
from sklearn.linear_model import LinearRegression
from sklearn.neighbors import KNeighborsRegressor
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.svm import SVR
from sklearn.utils import get_tags
from sklearn.utils.validation import check_is_fitted, column_or_1d, has_fit_parameter, validate_data

from gpuperf.errors import GpuperfError, unknown_name_error
from gpuperf.models._columns import real_number, whole_number
from gpuperf.models.m5p import M5PRegressor

MODEL_NAMES = ("linear", "svr_linear", "svr_rbf", "random_forest", "gbt", "m5p", "pca_knn")
# The command line's names (gpuperf fit --model) for the same models; its ``linear`` is the linear
# count model (gpuperf.models.linear), not this module's least squares, which it calls ``lr``.
CLI_ALIASES = {"lr": "linear", "rf": "random_forest", "knn": "pca_knn", "svr": "svr_rbf"}


class LogTarget(TransformedTargetRegressor):
    """Fit ``regressor`` on log2(y) and predict exp2 of its output (times must be positive).

    Amaris et al. fit every model on the log2 of the execution time: relative errors then weigh
    the same for a 10 us and a 10 s kernel. A linear model (or a model tree's leaf models) on a
    log target extrapolates exponentially: one input far outside the training range can give
    1e85 s. Predictions are therefore bounded to the training times widened by ``bound_factor``,
    ``[min(y) / bound_factor, max(y) * bound_factor]`` (``None``: unbounded). The default 8 lets
    a model extrapolate three doublings past what it saw, which covers the GPU-to-GPU and
    size-to-size spread of the bundled tables, and caps the damage of a runaway extrapolation at
    that factor.
    """

    func = np.log2
    inverse_func = np.exp2
    transformer = None
    check_inverse = False

    def __init__(self, regressor=None, bound_factor: float | None = 8.0):
        self.regressor = regressor
        self.bound_factor = bound_factor

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.positive_only = True  # times: fitted on their log2
        tags.target_tags.multi_output = False  # one column of times, whatever the regressor takes
        tags.input_tags.allow_nan = takes_missing(self._get_regressor())
        return tags

    def fit(self, X, y, **fit_params):
        check_bound_factor(self.bound_factor, "LogTarget")
        shape = np.asarray(y).shape
        if len(shape) == 2 and shape[1] > 1:  # one pair of bounds would clip every column alike
            raise GpuperfError(f"LogTarget: y has {shape[1]} columns; it fits one column of times "
                               "(fit one model per target)")
        if len(shape) == 2:  # a column vector: flattened with scikit-learn's DataConversionWarning
            y = column_or_1d(y, warn=True)
        times = positive_times(y, "LogTarget")
        self.__dict__.pop("feature_names_in_", None)  # sklearn sets it on a DataFrame but never clears it
        super().fit(X, y, **routed_sample_weight(self._get_regressor(), fit_params))
        log_y = np.log2(times)
        widen = 0.0 if self.bound_factor is None else np.log2(self.bound_factor)
        self.log_bounds_ = (float(log_y.min() - widen), float(log_y.max() + widen))
        return self

    def check_fitted_values(self) -> None:
        """An error where ``log_bounds_`` could not have come from :meth:`fit` (a file edited by hand)."""
        check_bounds(self.log_bounds_, "log_bounds_", "LogTarget")

    def predict(self, X, **predict_params):
        """exp2 of the regressor's log2 prediction, clipped to the widened training range."""
        return self.predict_bounded(X, **predict_params)[0]

    def predict_bounded(self, X, **predict_params) -> tuple[np.ndarray, np.ndarray]:
        """The predictions, and which of them the bounds clipped (the regressor's own lay outside)."""
        check_is_fitted(self)
        log_predicted = np.asarray(self.regressor_.predict(X, **predict_params), dtype=float)
        if self.bound_factor is None:
            return np.exp2(log_predicted), np.zeros(len(log_predicted), dtype=bool)
        clipped = outside(log_predicted, self.log_bounds_)
        return np.exp2(np.clip(log_predicted, *self.log_bounds_)), clipped


def routed_sample_weight(estimator, fit_params: dict) -> dict:
    """``fit_params`` with a ``sample_weight`` addressed to a Pipeline's final step, as a Pipeline
    takes it (``linearregression__sample_weight``); an error where that step takes no weights."""
    weights = fit_params.get("sample_weight")
    if weights is None or get_config()["enable_metadata_routing"]:  # routing: the steps' own requests decide
        return fit_params
    final, prefix = estimator, ""
    while isinstance(final, Pipeline):
        name, final = final.steps[-1]
        prefix += f"{name}__"
    if not (has_fit_parameter(final, "sample_weight") or _takes_keywords(final.fit)):
        raise GpuperfError(f"{type(final).__name__} takes no sample weights (the linear, SVR, random forest and "
                           "gradient-boosted models do)")
    return {**{k: v for k, v in fit_params.items() if k != "sample_weight"}, f"{prefix}sample_weight": weights}


def _takes_keywords(method) -> bool:  # noqa: ANN001 - a bound method
    """Whether ``method`` takes any keyword (``fit(X, y, **params)``: GridSearchCV, VotingRegressor,
    TransformedTargetRegressor pass the weights on to their own estimators)."""
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(method).parameters.values())


def takes_missing(estimator) -> bool:
    """Whether ``estimator`` fits and predicts rows with missing (NaN) features: scikit-learn's
    ``allow_nan`` tag, looking through a Pipeline, whose function transformers (the log scale) pass
    NaN on, to the steps that must take it."""
    if isinstance(estimator, Pipeline):
        return all(takes_missing(step) for _, step in estimator.steps
                   if step not in (None, "passthrough") and not isinstance(step, FunctionTransformer))
    try:
        return bool(get_tags(estimator).input_tags.allow_nan)
    except (AttributeError, TypeError):
        return False


def check_bound_factor(bound_factor: float | None, who: str) -> None:
    """A factor widening the training range that predictions are clipped to: at least 1 and finite (a
    saved model's bounds are finite numbers), or None for no bounds."""
    if bound_factor is None:
        return
    if not real_number(bound_factor) or not 1 <= bound_factor < np.inf:
        raise GpuperfError(f"{who}: bound_factor must be a finite number at least 1 (or None for no bounds), "
                           f"got {bound_factor!r}")


def positive_times(y, who: str) -> np.ndarray:
    """``y`` as floats, when every one is a positive, finite time (a model fits their log2)."""
    if y is None:
        raise GpuperfError(f"{who} requires y to be passed, but the target y is None")
    times = np.asarray(y)
    if times.dtype.kind == "c":
        raise GpuperfError(f"{who}: Complex data not supported")
    times = times.astype(float)
    bad = ~(np.isfinite(times) & (times > 0))
    if bad.any():
        first = np.argwhere(bad)[0]
        where = ", ".join(str(i) for i in first)
        value = float(times[tuple(first)])
        raise GpuperfError(f"{who}: the target must be positive, finite times (it is fitted on their log2); "
                           f"{int(bad.sum())} of {bad.size} are not, the first at position {where}: {value}")
    return times


def check_bounds(bounds, name: str, who: str) -> None:
    """Fitted bounds a model clips its predictions to: two finite numbers, low <= high (a file edited
    by hand may hold others: NaN bounds predict NaN, crossed ones the high bound for every row)."""
    values = np.asarray(bounds, dtype=float) if isinstance(bounds, (tuple, list, np.ndarray)) else None
    if values is None or values.shape != (2,) or not np.isfinite(values).all() or values[0] > values[1]:
        raise GpuperfError(f"{who}: {name} is {bounds!r}, not two finite numbers, low before high")


def outside(values: np.ndarray, bounds: tuple[float, float]) -> np.ndarray:
    """Which ``values`` lie outside ``bounds``."""
    low, high = bounds
    return (values < low) | (values > high)


def signed_log1p(values):
    """sign(x) * log(1 + |x|): a log scale for counters that may be zero. A DataFrame stays one, with
    its own column names, so the steps after the log scale check them against the fitted ones; a sparse
    matrix stays one (zeros map to zero), for the next step to take or refuse as it does."""
    if sparse.issparse(values):
        scaled = values.tocsr().astype(float)
        scaled.data = signed_log1p(scaled.data)
        return scaled
    if isinstance(values, pd.DataFrame):
        return pd.DataFrame(signed_log1p(values.to_numpy(dtype=float)), index=values.index, columns=values.columns)
    values = np.asarray(values, dtype=float)
    return np.sign(values) * np.log1p(np.abs(values))


def log_features() -> FunctionTransformer:
    """A transformer putting every feature on a log scale (:func:`signed_log1p`); a DataFrame keeps its
    column names, so the next step refuses columns renamed or in another order than fitted."""
    return FunctionTransformer(signed_log1p)


EIGH_ROWS = 2_000  # below this many rows the full SVD takes milliseconds: kept, with its exact neighbour order


def pca_solver(shape: tuple[int, int]) -> str:
    """PCA's solver for a ``shape`` (rows, features) matrix: the eigenvectors of the features' covariance
    for at least ``EIGH_ROWS`` rows and ten per feature (at most 1,000 features), where the full SVD of
    every row costs far more for the same components; the full SVD otherwise."""
    rows, features = shape
    return "covariance_eigh" if features <= 1_000 and rows >= max(10 * features, EIGH_ROWS) else "full"


class PcaKnnRegressor(RegressorMixin, BaseEstimator):
    """LIFT paper model: standardise, PCA keeping ``variance`` of the variance, k-NN regression."""

    def __init__(self, n_neighbors: int = 5, variance: float = 0.95, weights: str = "uniform"):
        self.n_neighbors = n_neighbors
        self.variance = variance
        self.weights = weights

    def fit(self, X, y):
        """Standardise, keep the principal components of 95 % of the variance, index the neighbours."""
        variance = self.variance
        if isinstance(variance, bool) or not isinstance(variance, (int, float, np.number)) or not 0 < variance <= 1:
            raise GpuperfError(f"PcaKnnRegressor: variance {variance!r} is the fraction of the variance the kept "
                               "components explain: a number in (0, 1]")
        k = self.n_neighbors
        if not whole_number(k) or k < 1:
            raise GpuperfError(f"PcaKnnRegressor: n_neighbors {k!r} is how many training rows each prediction "
                               "averages: a whole number of at least 1")
        X, y = validate_data(self, X, y, y_numeric=True)
        # variance 1 keeps every component, as one row or one feature does
        components = float(variance) if X.shape[0] > 1 and X.shape[1] > 1 and variance < 1 else None
        self.pipeline_ = Pipeline(
            [
                ("scale", StandardScaler()),
                # one row has no variance to share out (PCA would divide by n - 1 = 0)
                ("pca", PCA(n_components=components, svd_solver=pca_solver(X.shape)) if X.shape[0] > 1
                 else "passthrough"),
                ("knn", KNeighborsRegressor(min(self.n_neighbors, X.shape[0]), weights=self.weights)),
            ]
        ).fit(X, y)
        return self

    def predict(self, X):
        """The mean target of each row's nearest training rows in the reduced space."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return self.pipeline_.predict(X)


def make_model(
    name: str, log_target: bool = True, log_inputs: bool = False, random_state: int = 0, preprocess=None
):
    """A model by name (see ``MODEL_NAMES``; the command line's ``lr``, ``rf``, ``knn`` and ``svr``
    name the same models: ``CLI_ALIASES``), optionally on a log2 target and log-scaled inputs.

    ``preprocess`` (a transformer, e.g. a feature selector) runs first, before the log scaling.

    - ``linear``: standardised ordinary least squares;
    - ``svr_linear``, ``svr_rbf``: standardised epsilon-SVR with a linear or RBF kernel (without the
      log target, the target is standardised too: an epsilon of 0.1 s would swallow every kernel time);
    - ``random_forest``: 50 trees, 3 features tried per split (Amaris et al.; without the log target, fitted
      on the times over their standard deviation, so the time unit does not change the trees);
    - ``gbt``: histogram gradient-boosted trees (scikit-learn defaults);
    - ``m5p``: :class:`M5PRegressor`;  ``pca_knn``: :class:`PcaKnnRegressor`.
    """
    builders = {
        "linear": lambda: make_pipeline(StandardScaler(), LinearRegression()),
        "svr_linear": lambda: make_pipeline(StandardScaler(), _on_scaled_times(SVR(kernel="linear"), log_target)),
        "svr_rbf": lambda: make_pipeline(StandardScaler(), _on_scaled_times(SVR(kernel="rbf", C=10.0), log_target)),
        "random_forest": lambda: _on_scaled_times(RandomForestRegressor(
            n_estimators=50, max_features=3, random_state=random_state, n_jobs=1
        ), log_target, centre=False),
        "gbt": lambda: HistGradientBoostingRegressor(random_state=random_state),
        "m5p": M5PRegressor,
        "pca_knn": PcaKnnRegressor,
    }
    for flag, value in (("log_target", log_target), ("log_inputs", log_inputs)):
        if not isinstance(value, (bool, np.bool_)):
            raise GpuperfError(f"{flag} is True or False, not {value!r}")
    name = CLI_ALIASES.get(name, name)
    if name not in builders:
        raise unknown_name_error("model", name, [*builders, *CLI_ALIASES])
    model = builders[name]()
    steps = ([("preprocess", preprocess)] if preprocess is not None else []) + (
        [("log", log_features())] if log_inputs else []
    )
    if steps:
        model = Pipeline([*steps, ("model", model)])
    return LogTarget(model) if log_target else model


def _on_scaled_times(model, log_target: bool, centre: bool = True):
    """``model`` as it is on a log2 target; on times in seconds, fitted on the times over their standard
    deviation (``centre``: less their mean too). An epsilon-SVR's epsilon of 0.1 s would swallow every
    kernel time, and scikit-learn's trees take a node whose variance is under 2.2e-16 (absolute) as pure,
    so sub-microsecond times in seconds would lose splits that the same times in nanoseconds make."""
    return model if log_target else TransformedTargetRegressor(model, transformer=StandardScaler(with_mean=centre))
