"""M5P model tree (Quinlan's M5 as refined by Wang & Witten, the model behind Weka's M5P).

The tree splits on the largest standard-deviation reduction, fits a linear model (numpy least
squares) at every node on the attributes tested in the node's subtree as grown (before pruning,
as Weka's ``attsTestedBelow``), prunes a subtree when its node's linear model has no larger
estimated error, and smooths each leaf's model with the models on its path to the root.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from gpuperf.errors import GpuperfError


class M5PRegressor(RegressorMixin, BaseEstimator):
    """M5P model tree for numeric attributes.

    Growing stops at nodes with fewer than ``2 * min_samples_leaf`` rows, with a target standard
    deviation below ``min_std_fraction`` of the root's, or at ``max_depth``. A linear model's
    estimated error is its mean absolute residual times ``(n + pruning_multiplier * v) / (n - v)``
    (``v`` parameters, ``n`` rows; 10 when ``n <= v``); attributes are dropped one at a time,
    smallest standardised coefficient first, while that estimate does not rise (a tie drops the
    attribute: the simpler model). Ties between columns (equal split gains, equal attribute weights:
    columns that are multiples of each other) go to the column first when the columns are sorted by
    their training values, then by name, so the model does not depend on the columns' order.
    Smoothing blends a
    prediction ``p`` coming up from a child of ``n`` rows with the parent's model ``q`` as
    ``(n p + k q) / (n + k)``, ``k = smoothing``; since all models are linear, each leaf keeps one
    folded model.

    Simplified compared with Weka: numeric attributes only (no nominal-to-binary coding), no
    missing values, the subtree error is the row-weighted mean of the children's estimated errors,
    and a leaf that was never split keeps a constant model (Quinlan's rule: a node's model uses only
    the attributes tested beneath it), which smoothing then blends with its ancestors' models.
    The rules are the published ones (Quinlan; Wang & Witten), which Weka's code departs from in
    places: Weka's split search keeps at least a fifth of the rows on each side and scores a split
    on the fifth root of the variance, its pruning error is the root mean squared residual, and its
    linear models drop attributes by the Akaike criterion, so a tree here can split, prune and
    keep attributes where Weka's would not.
    """

    def __init__(
        self,
        min_samples_leaf: int = 4,
        min_std_fraction: float = 0.05,
        max_depth: int = 32,
        pruning_multiplier: float = 2.0,
        smoothing: float = 15.0,
        prune: bool = True,
        smooth: bool = True,
    ):
        self.min_samples_leaf = min_samples_leaf
        self.min_std_fraction = min_std_fraction
        self.max_depth = max_depth
        self.pruning_multiplier = pruning_multiplier
        self.smoothing = smoothing
        self.prune = prune
        self.smooth = smooth

    # -- fitting -----------------------------------------------------------------------------
    _parameter_constraints = {
        "min_samples_leaf": [Interval(Integral, 1, None, closed="left")],
        "min_std_fraction": [Interval(Real, 0, None, closed="left")],
        "max_depth": [Interval(Integral, 0, None, closed="left")],
        "pruning_multiplier": [Interval(Real, 0, None, closed="left")],
        "smoothing": [Interval(Real, 0, None, closed="left")],
        "prune": ["boolean"],
        "smooth": ["boolean"],
    }

    def fit(self, X, y):
        """Grow the tree, fit a linear model at every node, prune and (with ``smooth``) smooth."""
        self._validate_params()
        X, y = validate_data(self, X, y, y_numeric=True)
        X, y = X.astype(float), y.astype(float)
        # Grown on the columns in a canonical order, so that ties (equal split gains, equal attribute
        # weights) go the same way whatever the columns' positions; the fitted arrays name the
        # columns as given.
        self._columns = _canonical_columns(X, getattr(self, "feature_names_in_", None))
        self._X, self._y = X[:, self._columns], y
        self._X_by_feature = np.ascontiguousarray(self._X.T)  # one row per feature, for the splits
        self._root_std = float(np.std(y))
        self._nodes: list[dict] = []
        root = self._grow(np.arange(len(y)), depth=0)
        self._fit_models(root)
        self._compile(root)
        del self._X, self._X_by_feature, self._y, self._nodes, self._root_std, self._columns
        return self

    def _new_node(self, rows: np.ndarray) -> int:
        self._nodes.append({"rows": rows, "feature": -1, "threshold": 0.0, "left": -1, "right": -1, "below": set()})
        return len(self._nodes) - 1

    def _grow(self, rows: np.ndarray, depth: int) -> int:
        node = self._new_node(rows)
        y = self._y[rows]
        too_small = len(rows) < 2 * self.min_samples_leaf
        if too_small or depth >= self.max_depth or np.std(y) <= self.min_std_fraction * self._root_std:
            return node
        split = self._best_split(rows)
        if split is None:
            return node
        feature, threshold = split
        goes_left = self._X[rows, feature] <= threshold
        left, right = self._grow(rows[goes_left], depth + 1), self._grow(rows[~goes_left], depth + 1)
        # The attributes tested in the grown subtree (Weka's attsTestedBelow), fixed before pruning.
        below = {feature} | self._nodes[left]["below"] | self._nodes[right]["below"]
        self._nodes[node].update(feature=feature, threshold=threshold, left=left, right=right, below=below)
        return node

    def _best_split(self, rows: np.ndarray) -> tuple[int, float] | None:
        """The (feature, threshold) with the largest standard-deviation reduction, or None.

        Every feature's sorted prefix sums at once (one row per feature): each row's sums, cumulative
        sums and arithmetic are those of that feature alone, so the splits are the same as one by one."""
        y = self._y[rows] - self._y[rows].mean()
        n, m, node_std = len(rows), self.min_samples_leaf, float(np.std(y))
        best, best_gain = None, 0.0
        sizes = np.arange(1, n)  # left part holds the first `size` sorted rows
        x = np.ascontiguousarray(self._X_by_feature[:, rows])
        order = np.argsort(x, axis=1, kind="stable")
        xs, ys = np.take_along_axis(x, order, axis=1), np.ascontiguousarray(y[order])
        s1, s2 = np.cumsum(ys, axis=1)[:, :-1], np.cumsum(ys**2, axis=1)[:, :-1]
        t1, t2 = ys.sum(axis=1, keepdims=True), (ys**2).sum(axis=1, keepdims=True)
        var_left = np.maximum(s2 / sizes - (s1 / sizes) ** 2, 0.0)
        var_right = np.maximum((t2 - s2) / (n - sizes) - ((t1 - s1) / (n - sizes)) ** 2, 0.0)
        weighted = sizes / n * np.sqrt(var_left) + (n - sizes) / n * np.sqrt(var_right)
        valid = (xs[:, 1:] > xs[:, :-1]) & (sizes >= m) & (n - sizes >= m)
        weighted = np.where(valid, weighted, np.inf)
        picks = np.argmin(weighted, axis=1)
        for feature in np.flatnonzero(valid.any(axis=1)):
            i = int(picks[feature])
            gain = node_std - weighted[feature, i]
            if gain > best_gain + 1e-12 * (abs(best_gain) + 1.0):
                low, high = xs[feature, i], xs[feature, i + 1]
                middle = float((low + high) / 2)  # two adjacent floats' mean rounds to one of them
                best, best_gain = (int(feature), middle if middle < high else float(low)), gain
        return best

    def _fit_models(self, node: int) -> float:
        """Fit linear models bottom-up, prune; return the node's estimated error."""
        spec = self._nodes[node]
        rows = spec["rows"]
        if spec["feature"] >= 0:
            left_error = self._fit_models(spec["left"])
            right_error = self._fit_models(spec["right"])
            n_left, n_right = len(self._nodes[spec["left"]]["rows"]), len(self._nodes[spec["right"]]["rows"])
            subtree_error = (n_left * left_error + n_right * right_error) / (n_left + n_right)
        spec["coef"], spec["intercept"], model_error = self._linear_model(rows, sorted(spec["below"]))
        if spec["feature"] < 0:
            return model_error
        if self.prune and model_error <= subtree_error + 1e-9 * self._root_std:  # ties: round-off
            spec.update(feature=-1, left=-1, right=-1)
            return model_error
        return subtree_error

    def _estimated_error(self, residual: np.ndarray, n_params: int) -> float:
        n = len(residual)
        factor = 10.0 if n <= n_params else (n + self.pruning_multiplier * n_params) / (n - n_params)
        return float(np.mean(np.abs(residual)) * factor)

    def _linear_model(self, rows: np.ndarray, features: list[int]) -> tuple[np.ndarray, float, float]:
        """Least squares on ``features`` with greedy attribute elimination; (coef, intercept, error)."""
        X, y = self._X[rows], self._y[rows]

        def fit(used: list[int]):
            coef = np.zeros(self._X.shape[1])
            if not used:
                return coef, float(y.mean()), self._estimated_error(y - y.mean(), 1)
            coef[used], intercept = _least_squares(X[:, used], y)
            residual = y - X[:, used] @ coef[used] - intercept
            return coef, intercept, self._estimated_error(residual, len(used) + 1)

        used = list(features)
        best = fit(used)
        y_std = float(np.std(y)) or 1.0
        while used:
            weights = np.abs(best[0][used]) * X[:, used].std(axis=0) / y_std
            candidate_used = [f for k, f in enumerate(used) if k != int(np.argmin(weights))]
            candidate = fit(candidate_used)
            if candidate[2] > best[2]:
                break
            used, best = candidate_used, candidate
        return best

    def _compile(self, root: int) -> None:
        """Keep reachable nodes as flat arrays; fold smoothing into each leaf's model."""
        order: list[int] = []
        stack = [(root, [])]
        paths: dict[int, list[int]] = {}
        while stack:
            node, path = stack.pop()
            order.append(node)
            paths[node] = path + [node]
            spec = self._nodes[node]
            if spec["feature"] >= 0:
                stack.extend([(spec["right"], paths[node]), (spec["left"], paths[node])])
        index = {node: i for i, node in enumerate(order)}
        specs = [self._nodes[node] for node in order]
        self.feature_ = np.array([self._columns[s["feature"]] if s["feature"] >= 0 else -1 for s in specs], dtype=int)
        self.threshold_ = np.array([s["threshold"] for s in specs], dtype=float)
        self.left_ = np.array([index.get(s["left"], -1) for s in specs], dtype=int)
        self.right_ = np.array([index.get(s["right"], -1) for s in specs], dtype=int)
        self.n_samples_ = np.array([len(s["rows"]) for s in specs], dtype=int)
        self.coef_ = np.zeros((len(order), self._X.shape[1]))
        self.intercept_ = np.zeros(len(order))
        for i, node in enumerate(order):
            if self.feature_[i] < 0:
                self.coef_[i, self._columns], self.intercept_[i] = self._smoothed(paths[node])

    def _smoothed(self, path: list[int]) -> tuple[np.ndarray, float]:
        leaf = self._nodes[path[-1]]
        coef, intercept = leaf["coef"].copy(), leaf["intercept"]
        if not self.smooth:
            return coef, intercept
        for child, parent in zip(path[::-1], path[-2::-1]):
            n, k = len(self._nodes[child]["rows"]), self.smoothing
            q = self._nodes[parent]
            coef = (n * coef + k * q["coef"]) / (n + k)
            intercept = (n * intercept + k * q["intercept"]) / (n + k)
        return coef, intercept

    def check_fitted_values(self) -> None:
        """An error where the fitted tree could not have come from :meth:`fit` (a file edited by
        hand): the nodes form one tree, each child after its parent (no cycle a prediction could
        loop in), every split on a known feature at a finite threshold, every leaf model finite."""
        n = len(self.feature_)
        arrays = (self.threshold_, self.left_, self.right_, self.intercept_)
        if n == 0 or any(len(a) != n for a in arrays) or np.shape(self.coef_) != (n, self.n_features_in_):
            raise GpuperfError("M5PRegressor: the tree's node arrays disagree in length")
        inner = np.flatnonzero(self.feature_ >= 0)
        if (self.feature_ >= self.n_features_in_).any() or (self.feature_ < -1).any():
            raise GpuperfError("M5PRegressor: a split names a feature the model does not have")
        children = np.concatenate([self.left_[inner], self.right_[inner]])
        after_parent = (children > np.concatenate([inner, inner])).all() and (children < n).all()
        if not after_parent or sorted(children.tolist()) != list(range(1, n)):
            raise GpuperfError("M5PRegressor: the nodes' links do not form one tree")
        if not np.isfinite(self.threshold_[inner]).all():
            raise GpuperfError("M5PRegressor: a split threshold is not a finite number")
        leaves = np.flatnonzero(self.feature_ < 0)
        if not (np.isfinite(self.coef_[leaves]).all() and np.isfinite(self.intercept_[leaves]).all()):
            raise GpuperfError("M5PRegressor: a leaf model's coefficients are not finite numbers")

    # -- prediction --------------------------------------------------------------------------
    def apply(self, X) -> np.ndarray:
        """The leaf index each row falls into."""
        check_is_fitted(self)
        return self._leaves(validate_data(self, X, reset=False).astype(float))

    def _leaves(self, X: np.ndarray) -> np.ndarray:
        node = np.zeros(len(X), dtype=int)
        inner = self.feature_[node] >= 0
        while inner.any():
            rows = np.flatnonzero(inner)
            at = node[rows]
            go_left = X[rows, self.feature_[at]] <= self.threshold_[at]
            node[rows] = np.where(go_left, self.left_[at], self.right_[at])
            inner = self.feature_[node] >= 0
        return node

    def predict(self, X) -> np.ndarray:
        """Each row's leaf model, smoothed along its path to the root when ``smooth``. A row's terms
        are summed in the order of their values, so the rounding does not depend on the columns' order."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False).astype(float)
        leaf = self._leaves(X)
        return np.sort(X * self.coef_[leaf], axis=1).sum(axis=1) + self.intercept_[leaf]

    @property
    def n_leaves_(self) -> int:
        check_is_fitted(self)
        return int((self.feature_ < 0).sum())


def _canonical_columns(X: np.ndarray, names: np.ndarray | None) -> np.ndarray:
    """The column positions of ``X`` sorted by the columns' values (the first row first), then by
    name where the columns have names: an order that moves with the columns, not with their positions.
    Columns of equal values and no names keep their order; growing on either gives the same tree."""
    keys = [X[row] for row in range(len(X) - 1, -1, -1)]
    if names is not None:
        keys.insert(0, np.asarray(names, dtype=str))
    return np.lexsort(keys)


def _least_squares(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """Ordinary least squares with an intercept (minimum-norm where X is rank deficient), solved on
    standardised columns: a column in tiny units is not cut off as a small singular value."""
    x_mean, y_mean = X.mean(axis=0), y.mean()
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0
    coef = np.linalg.lstsq((X - x_mean) / scale, y - y_mean, rcond=None)[0] / scale
    return coef, float(y_mean - x_mean @ coef)
