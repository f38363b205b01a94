"""Surrogate models an exploration refits on the configurations measured so far.

Each predicts a mean and a spread per configuration: the posterior standard deviation of a
Gaussian process (``gp``: Matern 5/2 with one length scale per feature, fitted by maximum
likelihood at every refit), the spread of the trees' predictions (``rf``, ``et``), of the
neighbours' values (``knn``), or none (``gbt``, which is then greedy). Features should be
scaled to [0, 1] (:func:`unit_scale`). The acquisition is the expected improvement over the
best measured value (higher is better).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.stats import norm
from sklearn.ensemble import ExtraTreesRegressor, GradientBoostingRegressor, RandomForestRegressor
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from gpuperf.errors import unknown_name_error

SURROGATES = ("gp", "et", "rf", "gbt", "knn")
TREES = 50


class Surrogate:
    """``fit(X, y)`` then ``predict(X) -> (mean, spread)``."""

    def __init__(self, name: str, seed: int = 0, length_bounds: tuple[float, float] = (1e-2, 1e2)):
        """``length_bounds``: the bounds of ``gp``'s length scales (of unit-scaled features)."""
        if name not in SURROGATES:
            raise unknown_name_error("model", name, SURROGATES)
        self.name, self.seed = name, seed % 2**32  # scikit-learn's seeds are below 2**32; a seed plus a step wraps
        self.length_bounds = tuple(length_bounds)

    def fit(self, features: np.ndarray, values: np.ndarray) -> "Surrogate":
        """Fit on the rows in the order of their values (features, then value): the random
        forest's bootstrap and the boosted trees' subsample draw by row position, so the fit must
        not depend on the order in which the configurations were numbered or measured."""
        features = np.asarray(features, dtype=float)
        order = np.lexsort((np.asarray(values, dtype=float), *features.T[::-1]))
        features, values = features[order], np.asarray(values, dtype=float)[order]
        n = len(values)
        self._values = values
        if self.name == "gp":
            width = features.shape[1]
            kernel = ConstantKernel(1.0, (1e-2, 1e2)) * Matern(
                np.full(width, 0.5), self.length_bounds, nu=2.5
            ) + WhiteKernel(1e-3, (1e-6, 1e-1))
            self._model = GaussianProcessRegressor(kernel, normalize_y=True, random_state=self.seed)
            with warnings.catch_warnings(), threadpool_limits(1):  # a small kernel matrix: threads only contend
                warnings.simplefilter("ignore", ConvergenceWarning)
                self._model.fit(features, self._values)
            return self
        if self.name == "rf":
            self._model = RandomForestRegressor(TREES, max_features=0.7, random_state=self.seed, n_jobs=1)
        elif self.name == "et":
            self._model = ExtraTreesRegressor(TREES, max_features=0.7, random_state=self.seed, n_jobs=1)
        elif self.name == "gbt":
            self._model = GradientBoostingRegressor(
                n_estimators=100, max_depth=3, learning_rate=0.1, subsample=0.8 if n >= 10 else 1.0,
                random_state=self.seed,
            )
        else:
            self._scaler = StandardScaler().fit(features)
            self._model = NearestNeighbors(n_neighbors=min(5, n)).fit(self._scaler.transform(features))
            return self
        self._model.fit(features, self._values)
        return self

    def predict(self, features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.name == "gp":
            with threadpool_limits(1):
                mean, spread = self._model.predict(features, return_std=True)
            return mean, spread
        if self.name in ("rf", "et"):
            rows = np.ascontiguousarray(features, dtype=np.float32)  # what each tree's input check makes of them, once
            per_tree = np.stack([tree.predict(rows, check_input=False) for tree in self._model.estimators_])
            return per_tree.mean(axis=0), per_tree.std(axis=0)
        if self.name == "gbt":
            return self._model.predict(features), np.zeros(len(features))
        _, neighbours = self._model.kneighbors(self._scaler.transform(features))
        values = self._values[neighbours]
        return values.mean(axis=1), values.std(axis=1)


def expected_improvement(mean: np.ndarray, spread: np.ndarray, best: float) -> np.ndarray:
    """EI of each configuration over ``best`` (maximising); the mean itself where there is no spread."""
    if not np.any(spread > 0):
        return mean
    spread = np.maximum(spread, 1e-12)
    z = (mean - best) / spread
    return (mean - best) * norm.cdf(z) + spread * norm.pdf(z)


def unit_scale(features: np.ndarray) -> np.ndarray:
    """Each column mapped onto [0, 1] (constant columns to 0)."""
    features = np.asarray(features, dtype=float)
    if features.size == 0:
        return features
    low, high = features.min(axis=0), features.max(axis=0)
    return (features - low) / np.where(high > low, high - low, 1.0)
