"""Residual learning on a reference time: predict how far a launch's time sits from a reference.

:class:`ReferenceResidual` fits its regressor on ``log2(time) - reference`` where ``reference``
is one of the input columns (a log2 time, e.g. the same launch's geometric-mean time on other
GPUs, see ``gpuperf.evaluation.transfer``), and predicts ``exp2(reference + residual)``. The
regressor sees every input column, the reference included.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.utils.validation import check_is_fitted

from gpuperf.errors import GpuperfError
from gpuperf.models._columns import one_time_per_row
from gpuperf.models.learned import check_bound_factor, check_bounds, outside, positive_times

REFERENCE_COLUMN = "reference_log2_time"


class ReferenceResidual(RegressorMixin, BaseEstimator):
    """``regressor`` on the log2 ratio of the time to the reference column ``reference_column``.

    Inputs must be a DataFrame holding ``reference_column`` (a log2 time). Predicted residuals are
    clipped to the training residuals widened by ``bound_factor`` (as ``LogTarget`` does for times).
    """

    def __init__(self, regressor=None, reference_column: str = REFERENCE_COLUMN, bound_factor: float | None = 8.0):
        self.regressor = regressor
        self.reference_column = reference_column
        self.bound_factor = bound_factor

    def _reference(self, X) -> np.ndarray:
        if not isinstance(X, pd.DataFrame) or self.reference_column not in X.columns:
            raise GpuperfError(f"ReferenceResidual: inputs need a {self.reference_column} column")
        column = X[self.reference_column]
        reference = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
        bad = np.flatnonzero(~np.isfinite(reference))
        if len(bad):
            raise GpuperfError(f"ReferenceResidual: {self.reference_column} must be a finite log2 time in every row; "
                               f"{len(bad)} rows are not, the first at position {bad[0]}: {_shown(column.iloc[bad[0]])}")
        return reference

    def _check_columns(self, X) -> None:
        """The fitted columns, in the fitted order: the regressor reads them by position."""
        if list(X.columns) != list(self.feature_names_in_):
            raise GpuperfError(f"ReferenceResidual: the columns {list(X.columns)} are not the fitted ones, in the "
                               f"fitted order: {list(self.feature_names_in_)}")

    def fit(self, X, y):
        if self.regressor is None:
            raise GpuperfError("ReferenceResidual: no regressor given")
        check_bound_factor(self.bound_factor, "ReferenceResidual")
        reference = self._reference(X)
        # one time per row: a one-column table of times would otherwise broadcast against the reference
        times = one_time_per_row(positive_times(y, "ReferenceResidual"), len(X), "ReferenceResidual")
        residual = np.log2(times) - reference
        self.regressor_ = clone(self.regressor).fit(X, residual)
        self.n_features_in_ = X.shape[1]
        self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        widen = 0.0 if self.bound_factor is None else np.log2(self.bound_factor)
        self.residual_bounds_ = (float(residual.min() - widen), float(residual.max() + widen))
        return self

    def check_fitted_values(self) -> None:
        """An error where ``residual_bounds_`` could not have come from :meth:`fit` (a file edited by hand)."""
        check_bounds(self.residual_bounds_, "residual_bounds_", "ReferenceResidual")

    def predict(self, X):
        """exp2(reference + the regressor's residual, clipped to the widened training range)."""
        return self.predict_bounded(X)[0]

    def predict_bounded(self, X) -> tuple[np.ndarray, np.ndarray]:
        """The predictions, and which of them the bounds clipped (the regressor's residual lay outside)."""
        check_is_fitted(self)
        reference = self._reference(X)
        self._check_columns(X)
        residual = np.asarray(self.regressor_.predict(X), dtype=float)
        clipped = np.zeros(len(residual), dtype=bool)
        if self.bound_factor is not None:
            clipped = outside(residual, self.residual_bounds_)
            residual = np.clip(residual, *self.residual_bounds_)
        return np.exp2(reference + residual), clipped


def _shown(value: object) -> str:
    """A cell as a user wrote it: ``inf``, not ``np.float64(inf)``."""
    return repr(value.item() if isinstance(value, np.generic) else value)
