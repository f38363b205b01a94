"""The linear count model of Stevens & Klöckner: runtime = sum of weight x property.

Each property is a per-launch count taken statically from the kernel (bytes moved by memory space
and stride class, operations by type, barriers, launches, ...; see
:mod:`gpuperf.models.properties`). The weights are fitted per device by least squares on the
*relative* error: each row of the system is divided by its measured time, so a 10 us and a 10 ms
kernel weigh the same. Weights of costs are kept non-negative and the overlap term non-positive
(``scipy.optimize.lsq_linear`` with bounds), which keeps extrapolation to unseen kernels sane.
"""

from __future__ import annotations

import warnings

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.optimize import lsq_linear
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from gpuperf.errors import GpuperfError
from gpuperf.models._columns import one_time_per_row
from gpuperf.models.properties import check_property_names, property_names, property_signs

BOUNDS = ("sign", "none")


def _row_named(frame: pd.DataFrame, position: int) -> str:
    """Row ``position`` of ``frame`` by its label, and by its position too where labels repeat."""
    label = frame.index[position]
    return str(label) if frame.index.is_unique else f"{label} (position {position + 1} of {len(frame)})"


class LinearCountModel(RegressorMixin, BaseEstimator):
    """time = X @ weights over named property columns.

    ``properties`` names the columns, each one of gpuperf's property names (``gpuperf.models.properties``,
    whose expected signs ``bounds`` uses; default: the ``property_set``'s, e.g. ``"gpu"`` or ``"cpu"``).
    ``relative=True`` fits the relative error (rows divided by their measured time); ``False`` fits
    plain least squares on seconds. ``bounds="sign"`` keeps each weight on its property's expected
    side of zero (costs >= 0, overlap <= 0); ``"none"`` leaves every weight free.
    ``X`` is a DataFrame with the property columns (extra columns are ignored) or an array whose
    columns are the properties in order.
    """

    def __init__(
        self,
        properties: Sequence[str] | None = None,
        property_set: str = "gpu",
        relative: bool = True,
        bounds: str = "sign",
    ):
        self.properties = properties
        self.property_set = property_set
        self.relative = relative
        self.bounds = bounds

    # -- inputs -------------------------------------------------------------------------------
    def _names(self) -> tuple[str, ...]:
        if self.properties is not None:
            if isinstance(self.properties, str):
                raise GpuperfError(f"LinearCountModel: properties is a list of property names, not one text "
                                   f"({self.properties!r}); write properties=[{self.properties!r}]")
            if len(self.properties) == 0:
                raise GpuperfError("LinearCountModel: properties names none; name at least one, or leave it "
                                   "None for the property set's")
            return check_property_names(self.properties, where="LinearCountModel")
        return property_names(self.property_set)

    def _matrix(self, X, names: Sequence[str]) -> np.ndarray:
        if isinstance(X, pd.DataFrame):
            missing = [n for n in names if n not in X.columns]
            if missing:
                raise GpuperfError(f"LinearCountModel: missing property column(s) {', '.join(missing)}")
            repeated = sorted({str(n) for n in X.columns[X.columns.duplicated()] if n in names})
            if repeated:
                raise GpuperfError(f"LinearCountModel: property column(s) {', '.join(repeated)} appear more than once")
            columns = X.loc[:, list(names)]
            for name in names:
                text = pd.to_numeric(columns[name], errors="coerce").isna() & columns[name].notna()
                if text.any():
                    position = int(text.to_numpy().argmax())  # labels may repeat: the value by position
                    raise GpuperfError(f"LinearCountModel: property column {name} holds values that are not numbers "
                                       f"({columns[name].iloc[position]!r} in row {_row_named(X, position)})")
            matrix = columns.apply(pd.to_numeric).to_numpy(dtype=float)
        else:
            try:
                matrix = np.asarray(X, dtype=float)
            except (TypeError, ValueError) as error:
                raise GpuperfError(f"LinearCountModel: property values must be numbers ({error})") from None
            if matrix.ndim != 2 or matrix.shape[1] != len(names):
                raise GpuperfError(
                    f"LinearCountModel: expected {len(names)} property columns ({', '.join(names)}), "
                    f"got an array of shape {matrix.shape}"
                )
        bad = ~np.isfinite(matrix)
        if bad.any():
            row, column = (int(i[0]) for i in np.nonzero(bad))
            label = _row_named(X, row) if isinstance(X, pd.DataFrame) else row  # the frame's own row label
            raise GpuperfError(f"LinearCountModel: property values must be finite; {names[column]} is "
                               f"{matrix[row, column]} in row {label}")
        negative = matrix < 0
        if negative.any():  # a count below zero (a scaled column, a slip) would price as negative time
            row, column = (int(i[0]) for i in np.nonzero(negative))
            label = _row_named(X, row) if isinstance(X, pd.DataFrame) else row
            raise GpuperfError(f"LinearCountModel: property values are counts and cannot be negative; "
                               f"{names[column]} is {matrix[row, column]} in row {label}")
        return matrix

    def _bounds(self, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        if self.bounds not in BOUNDS:
            raise GpuperfError(f"LinearCountModel: bounds must be one of {', '.join(BOUNDS)}, not {self.bounds!r}")
        if self.bounds == "none":
            return np.full(len(names), -np.inf), np.full(len(names), np.inf)
        signs = np.array(property_signs(names), dtype=float)
        lower = np.where(signs > 0, 0.0, -np.inf)
        upper = np.where(signs < 0, 0.0, np.inf)
        return lower, upper

    # -- fitting ------------------------------------------------------------------------------
    def fit(self, X, y, sample_weight=None):
        """Fit the weights; ``y`` holds measured times in seconds (positive with ``relative``)."""
        if not isinstance(self.relative, (bool, np.bool_)):
            raise GpuperfError(f"LinearCountModel: relative must be True or False, not {self.relative!r}")
        names = self._names()
        A = self._matrix(X, names)
        y = one_time_per_row(y, len(A), "LinearCountModel")
        if len(y) == 0:
            raise GpuperfError("LinearCountModel: no rows to fit")
        if not np.all(np.isfinite(y)) or (self.relative and not np.all(y > 0)):
            raise GpuperfError("LinearCountModel: measured times must be finite and positive")
        if sample_weight is None:
            rows = np.ones(len(y))
        else:
            weights = np.asarray(sample_weight, dtype=float).ravel()
            if weights.shape != y.shape or not np.all(np.isfinite(weights) & (weights >= 0)) or not weights.any():
                raise GpuperfError(f"LinearCountModel: sample_weight must be {len(y)} finite, non-negative "
                                   "weights, not all zero")
            rows = np.sqrt(weights)
        if self.relative:
            A, b = A / y[:, None], np.ones(len(y))
        else:
            b = y.copy()
        A, b = A * rows[:, None], b * rows
        lower, upper = self._bounds(names)
        # Scale each column to unit norm: the counts span many orders of magnitude. A positive scale
        # keeps each bound's sign, and unused (all-zero) columns get weight zero.
        norms = np.linalg.norm(A, axis=0)
        used = norms > 0
        coef = np.zeros(len(names))
        if used.any():
            scaled = A[:, used] / norms[used]
            solution = lsq_linear(scaled, b, bounds=(lower[used], upper[used]), method="bvls")
            # bvls may end a hair outside a bound (-8e-18 for a cost): clip, so that the weights keep
            # their sign bounds (a saved model is checked against them on loading) and never price
            # a launch at a negative time
            coef[used] = np.clip(solution.x, lower[used], upper[used]) / norms[used]
        self.coef_ = coef
        self.property_names_ = list(names)
        self.n_features_in_ = len(names)
        if isinstance(X, pd.DataFrame):
            self.feature_names_in_ = np.asarray(names, dtype=object)
        elif hasattr(self, "feature_names_in_"):  # refitted on an array: the names were another fit's
            del self.feature_names_in_
        return self

    def check_fitted_values(self) -> None:
        """An error where the fitted weights could not have come from :meth:`fit` (a file edited by
        hand): one finite weight per known property, each within its sign bound."""
        names = list(self.property_names_)
        check_property_names(names, where="LinearCountModel")
        weights = np.asarray(self.coef_, dtype=float)
        if weights.shape != (len(names),) or not np.isfinite(weights).all():
            raise GpuperfError(f"LinearCountModel: the weights are not {len(names)} finite numbers, one per property")
        lower, upper = self._bounds(names)
        outside = [n for n, w, lo, hi in zip(names, weights, lower, upper) if not lo <= w <= hi]
        if outside:
            raise GpuperfError(f"LinearCountModel: the weight of {outside[0]} is outside its sign bound")

    # -- predicting ---------------------------------------------------------------------------
    def predict(self, X) -> np.ndarray:
        """Predicted times in seconds."""
        check_is_fitted(self)
        self._warn_unnamed(X)
        return self._matrix(X, self.property_names_) @ self.coef_

    def _warn_unnamed(self, X) -> None:
        """scikit-learn's warning where a model fitted on named columns is given an array: its
        columns are taken in the fitted order, which nothing checks."""
        if hasattr(self, "feature_names_in_") and not isinstance(X, pd.DataFrame):
            warnings.warn(f"X does not have valid feature names, but {type(self).__name__} was fitted with feature "
                          f"names; its columns are taken as {', '.join(self.property_names_)} in that order",
                          UserWarning, stacklevel=3)

    def contributions(self, X) -> pd.DataFrame:
        """Seconds each property contributes to each row's prediction (rows sum to ``predict``)."""
        check_is_fitted(self)
        self._warn_unnamed(X)
        values = self._matrix(X, self.property_names_) * self.coef_
        index = X.index if isinstance(X, pd.DataFrame) else None
        return pd.DataFrame(values, columns=self.property_names_, index=index)

    @property
    def weights_(self) -> dict[str, float]:
        """Fitted weight of each property (seconds per unit of the property)."""
        check_is_fitted(self)
        return {name: float(w) for name, w in zip(self.property_names_, self.coef_)}
