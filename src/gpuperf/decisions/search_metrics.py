"""How fast a search order reaches a good configuration, and what random order would do.

Performance is normalised by the best of the space: ``best_time / time`` in (0, 1], 0 for a
configuration that failed. Random order is exact: the draws until the first of ``m`` good
configurations among ``N`` (without replacement) follow a negative hypergeometric law, with
``P(T > k) = C(N - m, k) / C(N, k)`` and ``E[T] = (N + 1) / (m + 1)``; the expected best found
after ``k`` draws follows from the same order statistics.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import gammaln

from gpuperf.errors import GpuperfError

FRACTIONS = (0.9, 0.95, 0.99)


def normalised_performance(times: Sequence[float] | np.ndarray) -> np.ndarray:
    """``best / time`` per configuration; NaN (failed) times give 0."""
    times = np.asarray(times, dtype=float)
    finite = np.isfinite(times) & (times > 0)
    if not finite.any():
        return np.zeros(len(times))
    best = times[finite].min()
    out = np.zeros(len(times))
    out[finite] = best / times[finite]
    return out


def _checked(performance: Sequence[float] | np.ndarray, fraction: float) -> np.ndarray:
    """``performance`` as an array, once ``fraction`` is a share of the best and the values are
    normalised performance (best / time: 0 to 1), not times; else an error saying which."""
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float, np.floating, np.integer)) \
            or not 0 < fraction <= 1:
        raise GpuperfError(f"fraction {fraction!r}: a share of the best performance, above 0 and at most 1 (0.9)")
    performance = np.asarray(performance, dtype=float)
    if np.any(performance > 1 + 1e-9):
        raise GpuperfError(f"performance holds {np.nanmax(performance):g}: give normalised performance (best / time, "
                           "0 to 1; normalised_performance(times)), not times")
    return performance


def evals_to(performance_in_order: Sequence[float] | np.ndarray, fraction: float) -> int | None:
    """Evaluations until one reaches ``fraction`` of the best (1-based); None if none does."""
    hits = np.flatnonzero(_checked(performance_in_order, fraction) >= fraction - 1e-12)
    return int(hits[0]) + 1 if len(hits) else None


def best_found_curve(performance_in_order: Sequence[float] | np.ndarray, length: int | None = None) -> np.ndarray:
    """Best normalised performance found after 1, 2, ... evaluations; with ``length``, cut or padded
    to that many evaluations (a search that stopped keeps its last value)."""
    curve = np.maximum.accumulate(np.asarray(performance_in_order, dtype=float))
    if length is None:
        return curve
    last = curve[-1] if len(curve) else 0.0
    return np.concatenate([curve, np.full(max(0, length - len(curve)), last)])[:length]


def _log_choose(n: np.ndarray | int, k: np.ndarray | int) -> np.ndarray:
    n, k = np.asarray(n, dtype=float), np.asarray(k, dtype=float)
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


def random_expected_evals(performance: Sequence[float] | np.ndarray, fraction: float) -> float:
    """Exact expected evaluations of random order (without replacement) to reach ``fraction``."""
    performance = _checked(performance, fraction)
    good = int(np.sum(performance >= fraction - 1e-12))
    return (len(performance) + 1) / (good + 1)


def random_survival(performance: Sequence[float] | np.ndarray, fraction: float, ks: Sequence[int] | np.ndarray) -> np.ndarray:
    """P(random order has not reached ``fraction`` after k evaluations), for each k."""
    performance = np.asarray(performance, dtype=float)
    n, good = len(performance), int(np.sum(performance >= fraction - 1e-12))
    ks = np.asarray(ks, dtype=int)
    out = np.zeros(len(ks))
    feasible = ks <= n - good
    out[feasible] = np.exp(_log_choose(n - good, ks[feasible]) - _log_choose(n, ks[feasible]))
    return out


def _check_budget(budget: int) -> None:
    """Refuse a ``budget`` that is no whole number of evaluations of at least 1 (a flag, a float)."""
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise GpuperfError(f"budget {budget!r} must be a whole number of evaluations, at least 1")


def random_expected_evals_within(performance: Sequence[float] | np.ndarray, fraction: float, budget: int) -> float:
    """Random order's expected evaluations to reach ``fraction``, scored as a search of ``budget``
    evaluations is: a miss within the budget counts ``budget + 1``. Exact: E[min(T, budget + 1)], the sum of
    P(T > k) for k = 0..budget; at most :func:`random_expected_evals`, equal once ``budget`` covers the space."""
    _check_budget(budget)
    performance = _checked(performance, fraction)
    return float(_survival_to(performance, fraction, budget).sum())


def _survival_to(performance: np.ndarray, fraction: float, budget: int) -> np.ndarray:
    """:func:`random_survival` at k = 0..min(``budget``, len + 1): it is 0 past the space's size, so a huge
    ``budget`` (a "no limit" 2**63 - 1) costs no more than the space itself."""
    return random_survival(performance, fraction, np.arange(0, min(int(budget), len(performance) + 1) + 1))


def random_evals_quantile(performance: Sequence[float] | np.ndarray, fraction: float, q: float) -> int:
    """The ``q`` quantile of random order's evaluations to reach ``fraction`` (exact); ``len + 1``
    when no configuration reaches it (as :func:`random_expected_evals` and :func:`simulate_random` count it)."""
    performance = _checked(performance, fraction)
    if isinstance(q, bool) or not 0 < q <= 1:
        raise GpuperfError(f"quantile {q!r}: above 0 and at most 1 (0.9)")
    ks = np.arange(1, len(performance) + 1)
    cdf = 1.0 - random_survival(performance, fraction, ks)
    reached = np.flatnonzero(cdf >= q - 1e-12)
    return int(ks[reached[0]]) if len(reached) else len(performance) + 1


def random_expected_curve(performance: Sequence[float] | np.ndarray, ks: Sequence[int] | np.ndarray) -> np.ndarray:
    """Exact expected best normalised performance after k random evaluations, for each k.

    With the values sorted ascending, v_(1) <= ... <= v_(N), the best of k draws is at most
    v_(j) with probability C(j, k) / C(N, k). After N or more evaluations every configuration has
    been tried (the best, v_(N)); after none, nothing has (0).
    """
    values = np.sort(np.asarray(performance, dtype=float))
    n = len(values)
    out = []
    for k in np.asarray(ks, dtype=int):
        if k <= 0 or k >= n:
            out.append(0.0 if k <= 0 or n == 0 else float(values[-1]))
            continue
        j = np.arange(k, n + 1)
        cdf = np.exp(_log_choose(j, k) - _log_choose(n, k))  # P(max <= v_(j)), j = k..N
        pmf = np.diff(np.concatenate([[0.0], cdf]))
        out.append(float(np.sum(pmf * values[k - 1 :])))
    return np.asarray(out)


def simulate_random(
    performance: Sequence[float] | np.ndarray, fraction: float, seeds: int = 100, start_seed: int = 0
) -> np.ndarray:
    """Evaluations to reach ``fraction`` in ``seeds`` random orders (by simulation)."""
    performance = np.asarray(performance, dtype=float)
    out = np.empty(seeds, dtype=int)
    for i in range(seeds):
        order = np.random.default_rng(start_seed + i).permutation(len(performance))
        out[i] = evals_to(performance[order], fraction) or len(performance) + 1
    return out


def cost_to(performance: Sequence[float] | np.ndarray, cost: Sequence[float] | np.ndarray, order: Sequence[int],
            fraction: float) -> float:
    """The summed ``cost`` (say compile + benchmark seconds per configuration) of the evaluations in
    ``order`` until one reaches ``fraction`` of the best (all of ``order`` when none does)."""
    performance, cost = np.asarray(performance, dtype=float), np.asarray(cost, dtype=float)
    order = np.asarray(order, dtype=int)
    reached = evals_to(performance[order], fraction) or len(order)
    return float(cost[order[:reached]].sum())


def random_expected_cost_within(performance: Sequence[float] | np.ndarray, cost: Sequence[float] | np.ndarray,
                                fraction: float, budget: int) -> float:
    """Random order's expected summed ``cost`` until it reaches ``fraction``, scored as a search of ``budget``
    evaluations is (:func:`cost_to` of its first ``budget``): the cost of its first min(T, budget) draws. Exact:
    the first good draw is in with probability P(T <= budget), each alike; the bad ones drawn before it number
    E[min(T, budget)] - P(T <= budget), each alike."""
    _check_budget(budget)
    performance, cost = _checked(performance, fraction), np.asarray(cost, dtype=float)
    if cost.shape != performance.shape:
        raise GpuperfError(f"cost holds {cost.size} values for {performance.size} configurations")
    good = performance >= fraction - 1e-12
    survival = _survival_to(performance, fraction, budget)  # 0 past its end
    reached = 1.0 - (survival[budget] if budget < len(survival) else 0.0)  # P(T <= budget)
    bad_drawn = survival[:min(int(budget), len(survival))].sum() - reached  # E[min(T, budget)] - P(T <= budget)
    total = reached * cost[good].mean() if good.any() else 0.0
    return float(total + (bad_drawn * cost[~good].mean() if (~good).any() else 0.0))


def random_cost_to(performance: Sequence[float] | np.ndarray, cost: Sequence[float] | np.ndarray, fraction: float,
                   seeds: int = 100) -> float:
    """The mean :func:`cost_to` of ``seeds`` seeded random orders, with no budget (beside a search of a budget,
    :func:`random_expected_cost_within`)."""
    size = len(np.asarray(performance))
    return float(np.mean([cost_to(performance, cost, np.random.default_rng(seed).permutation(size), fraction)
                          for seed in range(seeds)]))
