"""Feature selection: Spearman filtering with hierarchical clustering (Amaris et al.) and
normalised mutual information ranking (LIFT paper)."""

from __future__ import annotations


import numpy as np
import pandas as pd
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform
from scipy.stats import rankdata
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from gpuperf.errors import GpuperfError
from gpuperf.models._columns import real_number, whole_number


def spearman_scores(X, y) -> np.ndarray:
    """|Spearman r| of every column of ``X`` against ``y`` (0 for constant columns).

    Usable as the ``score_func`` of scikit-learn's ``SelectKBest``. A missing or infinite value is an
    error naming its column and row (counted from 1).
    """
    names = list(X.columns) if isinstance(X, pd.DataFrame) else None
    X = _as_floats(X, "spearman_scores: X")
    if X.ndim != 2:
        raise GpuperfError(f"spearman_scores: X must be a table of rows and columns, got shape {X.shape}")
    y = _values(y, "spearman_scores: y")
    if len(X) != len(y):
        raise GpuperfError(f"spearman_scores: {len(X)} rows in X but {len(y)} in y")
    bad = ~np.isfinite(X)
    if bad.any():
        row, column = (int(i[0]) for i in np.nonzero(bad))
        name = names[column] if names is not None else column
        raise GpuperfError(f"spearman_scores: column {name}: {int(bad[:, column].sum())} of {len(X)} values are "
                           f"missing or infinite (the first at row {row + 1}); fill or drop them before ranking")
    ranks = rankdata(X, axis=0) - (len(X) + 1) / 2
    target = rankdata(y) - (len(y) + 1) / 2
    scale = np.sqrt((ranks**2).sum(axis=0) * (target**2).sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        scores = np.abs(target @ ranks) / scale
    return np.where(scale > 0, np.nan_to_num(scores), 0.0)


def spearman_defined(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per column of ``X``, whether its Spearman r with ``y`` is defined: both vary over the rows
    (one row, one time for every row or a constant column leave it undefined)."""
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    if len(y) < 2 or np.all(y == y[0]):
        return np.zeros(X.shape[1], dtype=bool)
    return np.any(X != X[:1], axis=0)


def spearman_matrix(X: np.ndarray) -> np.ndarray:
    """|Spearman r| between the columns of ``X`` (1 on the diagonal)."""
    if X.shape[1] == 1:
        return np.ones((1, 1))
    if len(X) < 2:  # no correlation to measure: every column stands alone
        return np.eye(X.shape[1])
    ranks = rankdata(X, axis=0)  # Spearman's r: Pearson's on the ranks (ties share their mean rank)
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = np.corrcoef(ranks, rowvar=False)
    corr = np.nan_to_num(np.abs(statistic))  # a constant column correlates with none: it stands alone
    np.fill_diagonal(corr, 1.0)
    return corr


def log_max_normalised(X: np.ndarray) -> np.ndarray:
    """log1p(|x|) divided by its column maximum: the scale on which feature variances compare."""
    logs = np.log1p(np.abs(np.asarray(X, dtype=float)))
    top = logs.max(axis=0)
    return logs / np.where(top > 0, top, 1.0)


LINKAGE_METHODS = ("single", "complete", "average", "weighted", "centroid", "median", "ward")


class SpearmanClusterSelector(SelectorMixin, BaseEstimator):
    """Amaris et al.'s selection: keep features with |Spearman r| to the target >= ``threshold``,
    cluster the survivors hierarchically on the distance 1 - |Spearman r| (``method`` linkage)
    into ``k`` clusters, and keep each cluster's feature of highest variance.

    Variances are taken on ``log1p(x) / max(log1p(x))`` so that counters of different magnitude
    compare (the paper normalises with log and max the same way). If fewer than ``k`` features
    pass the threshold, all of them are kept, and if none does, the one of highest |r|. After ``fit``: ``scores_`` (|r| to the target),
    ``defined_`` (whether a feature's r is defined: it and the target vary), ``candidates_`` (indices above the threshold), ``linkage_`` (scipy linkage matrix over the
    candidates), ``clusters_`` (cluster label per candidate) and ``selected_`` (kept indices).
    """

    def __init__(self, k: int = 10, threshold: float = 0.75, method: str = "average"):
        self.k = k
        self.threshold = threshold
        self.method = method

    def fit(self, X, y):
        """Keep the features whose |Spearman r| with ``y`` reaches the threshold, cluster them and
        select the highest-variance feature of each cluster."""
        X, y = validate_data(self, X, y, y_numeric=True)
        if not whole_number(self.k) or self.k < 1:
            raise GpuperfError(f"SpearmanClusterSelector: k must be a whole number of at least 1, got {self.k!r}")
        if not real_number(self.threshold) or not 0 <= self.threshold:
            raise GpuperfError(f"SpearmanClusterSelector: threshold must be a number of at least 0 (an |r|), "
                               f"got {self.threshold!r}")
        if self.method not in LINKAGE_METHODS:
            raise GpuperfError(f"SpearmanClusterSelector: method must be one of {', '.join(LINKAGE_METHODS)} "
                               f"(scipy's linkage), got {self.method!r}")
        self.scores_ = spearman_scores(X, y)
        self.defined_ = spearman_defined(X, y)
        self.target_varies_ = bool(len(y) > 1 and np.any(y != y[0]))
        candidates = np.flatnonzero(self.scores_ >= self.threshold)
        if len(candidates) == 0:  # keep the single best feature rather than nothing (a defined |r| first)
            candidates = np.array([int(np.argmax(np.where(self.defined_, self.scores_, -1.0)))])
        self.candidates_ = candidates
        variances = log_max_normalised(X[:, candidates]).var(axis=0)
        if len(candidates) <= self.k:
            self.linkage_ = self._linkage(X[:, candidates]) if len(candidates) > 1 else None
            self.clusters_ = np.arange(1, len(candidates) + 1)
            self.selected_ = candidates
            return self
        self.linkage_ = self._linkage(X[:, candidates])
        self.clusters_ = fcluster(self.linkage_, t=self.k, criterion="maxclust")
        chosen = [
            candidates[members][np.argmax(variances[members])]
            for members in (self.clusters_ == label for label in np.unique(self.clusters_))
        ]
        self.selected_ = np.sort(np.array(chosen))
        return self

    def _linkage(self, X: np.ndarray) -> np.ndarray:
        distance = np.clip(1.0 - spearman_matrix(X), 0.0, None)
        np.fill_diagonal(distance, 0.0)
        return linkage(squareform(distance, checks=False), method=self.method)

    def _get_support_mask(self) -> np.ndarray:
        check_is_fitted(self)
        mask = np.zeros(self.n_features_in_, dtype=bool)
        mask[self.selected_] = True
        return mask


def _discretise(values: np.ndarray, bins: int) -> np.ndarray:
    """Equal-frequency bin labels (ties share a bin, so constant columns give one bin; values tied at
    the minimum that fill the lowest quantiles form a bin of their own, as those tied at the maximum do)."""
    edges = np.unique(np.quantile(values, np.linspace(0, 1, bins + 1)[1:-1]))
    labels = np.searchsorted(edges, values, side="right")
    if len(edges) and edges[0] == values.min():
        labels = np.where(values == edges[0], 0, labels)
    return labels


def _entropy(labels: np.ndarray) -> float:
    p = np.bincount(labels) / len(labels)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def normalised_mutual_information(x, y, bins: int = 10) -> float:
    """R = I(X, Y) / (H(X) + H(Y)) on ``bins`` equal-frequency bins: 0 for independent, 1/2 for
    identical. Missing or infinite values are refused (a bin edge would be NaN)."""
    _check_bins(bins)
    a, b = _values(x, "x"), _values(y, "y")
    if len(a) != len(b):
        raise GpuperfError(f"normalised_mutual_information: {len(a)} values in x but {len(b)} in y")
    return _information(a, b, bins)


def _check_bins(bins: int) -> None:
    if not whole_number(bins) or bins < 2:
        raise GpuperfError(f"normalised_mutual_information: bins must be a whole number of at least 2, got {bins!r}")


def _information(x: np.ndarray, y: np.ndarray, bins: int) -> float:
    """:func:`normalised_mutual_information` of checked values."""
    a, b = _discretise(x, bins), _discretise(y, bins)
    h_a, h_b = _entropy(a), _entropy(b)
    if h_a + h_b == 0:
        return 0.0
    joint = _entropy(a * (b.max() + 1) + b)
    return (h_a + h_b - joint) / (h_a + h_b)


def _as_floats(values, name: str) -> np.ndarray:
    try:
        if isinstance(values, (pd.DataFrame, pd.Series)):  # a nullable column's <NA> as NaN, named below
            return values.to_numpy(dtype=float, na_value=np.nan)
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError) as error:
        raise GpuperfError(f"{name}: values must be numbers ({error})") from None


def _values(values, name: str) -> np.ndarray:
    """``values`` as a 1-D float array (a one-column table too); an error naming ``name`` if any
    is missing or infinite, or not a number."""
    array = _as_floats(values, name)
    if array.ndim == 2 and array.shape[1] == 1:
        array = array.ravel()
    if array.ndim != 1:
        raise GpuperfError(f"{name}: one column of values expected, got shape {array.shape}")
    if len(array) == 0:
        raise GpuperfError(f"{name}: no values")
    bad = ~np.isfinite(array)
    if bad.any():
        raise GpuperfError(f"{name}: {int(bad.sum())} of {len(array)} values are missing or infinite (the first at "
                           f"row {int(np.argmax(bad)) + 1}); fill or drop them before ranking")
    return array


def mutual_information_ranking(X, y, bins: int = 10) -> pd.Series:
    """Features ranked by normalised mutual information with ``y`` (LIFT paper), highest first.

    ``X`` is a DataFrame (its column names index the result) or an array (columns ``x0``...);
    a missing or infinite value is an error naming its column.
    """
    frame = X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X)).add_prefix("x")
    _check_bins(bins)
    target = _values(y, "y")
    if len(frame) != len(target):
        raise GpuperfError(f"mutual_information_ranking: {len(frame)} rows in X but {len(target)} in y")
    scores = {name: _information(_values(frame[name], f"column {name}"), target, bins) for name in frame}
    return pd.Series(scores, name="normalised_mutual_information").sort_values(ascending=False)
