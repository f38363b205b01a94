"""Accuracy metrics for predicted execution times.

All take ``measured`` and ``predicted`` times (seconds, positive) of equal length:

- ``mape``: mean absolute percentage error as a fraction, mean(|measured - predicted| / measured)
  (the standard definition: divided by the measurement, not the prediction);
- ``median_ape``: the median of the same ratios;
- ``geometric_mean_relative_error``: exp(mean(|ln(predicted / measured)|)) - 1, the typical factor
  by which a prediction is off, minus one: 0.25 means "off by x1.25 or /1.25 on (geometric)
  average"; over- and under-prediction by the same factor count the same;
- ``within``: the fraction of rows with 0.8 <= predicted / measured <= 1.2 (bounds adjustable);
- ``spearman``, ``kendall``: rank correlation of predicted with measured times;
- ``top_k_overlap``: of the k fastest rows by measurement, the fraction also among the k fastest
  by prediction.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import kendalltau, spearmanr

from gpuperf.errors import GpuperfError, whole_number


def _times(values, side: str) -> np.ndarray:
    try:
        return np.asarray(values, dtype=float).ravel()
    except (TypeError, ValueError) as error:
        raise GpuperfError(f"metrics: {side} times must be numbers ({error})") from None


def _pair(measured, predicted) -> tuple[np.ndarray, np.ndarray]:
    m = _times(measured, "measured")
    p = _times(predicted, "predicted")
    if m.shape != p.shape:
        raise GpuperfError(f"metrics: {len(m)} measured but {len(p)} predicted times")
    if len(m) == 0:
        raise GpuperfError("metrics: no times to compare")
    if not np.all(np.isfinite(m) & (m > 0)):
        raise GpuperfError("metrics: measured times must be positive and finite")
    if np.isnan(p).any():
        raise GpuperfError("metrics: predicted times must not be NaN")
    return m, p


def _constant(values: np.ndarray) -> bool:
    return len(np.unique(values)) < 2


def absolute_percentage_errors(measured, predicted) -> np.ndarray:
    """|measured - predicted| / measured for each row."""
    m, p = _pair(measured, predicted)
    with np.errstate(over="ignore"):  # an error past float64 (1e300 s for 1e-300 s) is inf
        return np.abs(m - p) / m


def mape(measured, predicted) -> float:
    """Mean of |measured - predicted| / measured (a fraction: 0.1 is 10 %)."""
    return float(np.mean(absolute_percentage_errors(measured, predicted)))


def median_ape(measured, predicted) -> float:
    """Median of |measured - predicted| / measured."""
    return float(np.median(absolute_percentage_errors(measured, predicted)))


def geometric_mean_relative_error(measured, predicted) -> float:
    """exp(mean |ln(predicted / measured)|) - 1; predictions must be positive."""
    m, p = _pair(measured, predicted)
    if not np.all((p > 0) & np.isfinite(p)):
        raise GpuperfError("metrics: geometric-mean relative error needs positive, finite predictions")
    with np.errstate(over="ignore"):  # the difference of logs: no ratio to overflow or underflow
        return float(np.expm1(np.mean(np.abs(np.log(p) - np.log(m)))))


BOUND_TOLERANCE = 1e-12  # relative: a prediction of exactly 0.8 x the measurement is within, though
# 0.08 / 0.1 is 0.7999999999999999 in floating point


def _rounding(values) -> float:
    """The relative rounding of ``values``' floating-point type (0 for other types)."""
    dtype = getattr(values, "dtype", None)
    dtype = np.asarray(values).dtype if dtype is None else dtype
    dtype = getattr(dtype, "numpy_dtype", dtype)  # pandas' Float32 holds float32 values
    floating = isinstance(dtype, np.dtype) and np.issubdtype(dtype, np.floating)  # not a category, not text
    return float(np.finfo(dtype).eps) if floating else 0.0


def within(measured, predicted, low: float = 0.8, high: float = 1.2) -> float:
    """Fraction of rows with low <= predicted / measured <= high (the bounds included, up to the
    rounding of the times' floating-point type: float32 times 1.2 x apart are within)."""
    if not 0 <= low <= high:
        raise GpuperfError(f"within: low ({low}) must be at most high ({high}), and not negative")
    tolerance = max(BOUND_TOLERANCE, 4 * _rounding(measured), 4 * _rounding(predicted))
    m, p = _pair(measured, predicted)
    inside = (p >= low * m * (1 - tolerance)) & (p <= high * m * (1 + tolerance))
    return float(np.mean(inside))


def spearman(measured, predicted) -> float:
    """Spearman rank correlation (NaN with fewer than two rows or a constant side)."""
    m, p = _pair(measured, predicted)
    if _constant(m) or _constant(p):
        return float("nan")
    return float(spearmanr(m, p).statistic)


def kendall(measured, predicted) -> float:
    """Kendall tau-b rank correlation (NaN with fewer than two rows or a constant side)."""
    m, p = _pair(measured, predicted)
    if _constant(m) or _constant(p):
        return float("nan")
    return float(kendalltau(m, p).statistic)


def top_k_overlap(measured, predicted, k: int = 5) -> float:
    """|k fastest by measurement & k fastest by prediction| / k; NaN with k rows or fewer (every row is
    then among the k fastest on both sides, whatever the prediction).

    Rows tied across the k-th place are each among the k fastest with the same probability (the places
    left over the rows tied for them), on each side independently: the expected overlap when ties are
    broken at random, whatever the rows' order. Constant predictions score k / n, as a random order does.
    """
    m, p = _pair(measured, predicted)
    k = whole_number(k, "metrics: k")
    if k < 1:
        raise GpuperfError(f"metrics: k must be at least 1, got {k}")
    if len(m) <= k:
        return float("nan")
    return float(np.sum(_chance_among_fastest(m, k) * _chance_among_fastest(p, k)) / k)


def _chance_among_fastest(values: np.ndarray, k: int) -> np.ndarray:
    """Each row's probability of being among the ``k`` smallest ``values``, ties broken at random."""
    kth = np.sort(values)[k - 1]
    below, tied = values < kth, values == kth
    return np.where(below, 1.0, np.where(tied, (k - below.sum()) / tied.sum(), 0.0))


def all_metrics(measured, predicted, k: int = 5) -> dict[str, float]:
    """Every metric above, by name, plus the row count ``n``; ``gmre`` is NaN where a prediction is
    not a positive time (where :func:`geometric_mean_relative_error` raises)."""
    m, p = _pair(measured, predicted)
    k = whole_number(k, "metrics: k")
    result = {
        "n": int(len(m)),
        "mape": mape(m, p),
        "median_ape": median_ape(m, p),
        "within_20pct": within(measured, predicted),  # the original types: float32 rounding widens the bounds
        "spearman": spearman(m, p),
        "kendall": kendall(m, p),
        f"top{k}_overlap": top_k_overlap(m, p, k),
    }
    usable = np.all((p > 0) & np.isfinite(p))
    result["gmre"] = geometric_mean_relative_error(m, p) if usable else float("nan")
    return result
