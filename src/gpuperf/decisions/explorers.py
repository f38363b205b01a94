"""Search orders over a variant space: each explorer picks the next configuration to measure.

``next(measured, times)`` gets the indices measured so far (in order) and an array of times
indexed by configuration (only the measured entries are read; NaN: the configuration failed)
and returns the next index. Models see ``-log(time)`` relative to the fastest measured time, so
any time unit gives the same picks; a failure counts as half a unit of log below the worst
measured time.

* :class:`PlainTransfer`: the mean normalised performance on the other GPUs, fixed order.
* :class:`TransferGuided`: other GPUs' data, updated as measurements arrive. It treats the new
  GPU as one of the others and a configuration within 5 % of a GPU's best (among the space's
  configurations) as *covering* it.
  - portfolio: the first pick covers the largest weight of other GPUs, each GPU weighted by
    its prior (``prior``; equal by default; :mod:`gpu_similarity` gives GPUs alike the new one
    more weight; ties: the higher mean normalised performance); each next pick covers the
    largest weight of GPUs no measured configuration covers yet, a GPU's weight being its
    prior times how well it agrees with the measured points (relative log performance,
    Gaussian weight with ``sigma``), until every other GPU is covered (at most one pick per
    other GPU; ties: the larger transfer expected improvement, below). An outlier GPU is then
    likely to meet another GPU's optimum. The ``best_picks`` (2) picks after the first come
    before the covering ones: each the own best configuration of the heaviest other GPU (weights
    as above) whose best is not measured yet (0: the covering portfolio alone). A configuration
    within 5 % of a GPU's best may still be far from its best on a new GPU (pnpoly on the V100:
    the others' covering picks reach 0.6-0.85 there, two of their own bests over 0.99).
    The ``slice_picks`` (1) picks after those, up to ``1 + best_picks + slice_picks`` in all, each
    take the best configuration (by the weighted mean of the other GPUs' log performance) of the
    best *slice* no measured configuration lies in, a slice being one combination of the flags
    (parameters with at most ``slice_values``, 2, values: SA/SB, read_only/use_padding/use_shmem;
    0: none): a new GPU that favours other flags than the rest (hub GEMM on the RTX 3090 wants SA
    1, the others SA 0) meets them at once (fewer evaluations over the bundled spaces on three
    seed sets, more on one space; benchmarks/bench_explore.py's docstring).
    Then *hit* picks (``hit_spread``, 0.05; 0: none), each the configuration likeliest to be within
    5 % of the new GPU's best, the new GPU being one of the other GPUs (weights as above) and a
    configuration's ratio to that GPU's best carrying over up to a log-normal spread of
    ``hit_spread``, each GPU's weight shrunk by the chance that a measured configuration already
    hit it; while some configuration's chance exceeds ``HIT_CHANCE`` (2 %). A configuration at
    exactly 95 % of a GPU's best covers it but hits it at even odds only, so these picks may go
    back to GPUs the covering portfolio counts as met (the W7800's convolution_milo: 9 evaluations
    to 90 % where the covering portfolio took 17-31); the covering picks then go on for any GPU
    still uncovered.
  - then model expected improvement: a surrogate (et, gp, rf, gbt, knn) refitted on the
    measured points over the parameters plus each other GPU's log performance of the
    configuration. With ``residual`` (the default) the surrogate learns what a line in the
    weighted mean of the other GPUs' log performance, fitted to the measured values, misses,
    and the prediction is that line plus the surrogate's; without, it learns the measured
    values themselves.
    Every ``period``-th of these steps (0: none) is a transfer expected improvement step
    instead (the largest expected gain over the best found so far, the new GPU drawn from the
    weighted others).
* :class:`StaticModel`: a surrogate fitted once on other GPUs' normalised performance (no
  refit; at most ``STATIC_ROWS`` rows, drawn at random); configurations the others measured
  keep their median.
* :class:`OnlineSearch`: no prior data; ``initial`` random picks (5 with the default Gaussian
  process, or the first of a given order), then model expected improvement over the parameters,
  refitted after every measurement (batch of 1).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.stats import norm

from gpuperf.decisions.surrogates import Surrogate, expected_improvement, unit_scale

FLOOR = 1e-3  # normalised performance below this counts as this (failures are 0)
COVER = 0.95  # a configuration within 5 % of another GPU's best covers that GPU
BEST_PICKS = 2  # picks after the first that take another GPU's own best configuration
SLICE_PICKS = 1  # picks after those from the best combination of flag values not measured yet
HIT_SPREAD = 0.05  # log spread of a configuration's 95 % on another GPU carrying over to the new one (0: no hit picks)
HIT_CHANCE = 0.02  # the hit picks go on while an unmeasured configuration's chance of a hit exceeds this
STATIC_ROWS = 50_000
INITIAL_PICKS = 5  # the online Gaussian process's random picks before it takes over
INITIAL_PICKS_TREES = 10  # the same for the other surrogates (extra trees on 5 points can stall on a smooth grid)
GP_LENGTH_BOUNDS = (0.05, 20.0)  # the online Gaussian process's length scales, of unit-scaled parameters


def _log_performance(matrix: np.ndarray) -> np.ndarray:
    """log of normalised performance, failures and absent entries floored; absent ones take
    the row's mean over the GPUs that have it (or the floor)."""
    logs = np.log(np.clip(np.nan_to_num(matrix, nan=FLOOR), FLOOR, None))
    absent = np.isnan(matrix)
    if absent.any():
        counts = (~absent).sum(axis=1)
        sums = np.where(absent, 0.0, logs).sum(axis=1)
        row_mean = np.where(counts > 0, sums / np.maximum(counts, 1), np.log(FLOOR))
        logs = np.where(absent, row_mean[:, None], logs)
    return logs


def row_statistic(statistic: Callable[..., np.ndarray], matrix: np.ndarray) -> np.ndarray:
    """``statistic`` (np.nanmean, np.nanmedian) of each row; NaN for rows with no value."""
    if matrix.shape[1] == 0:
        return np.full(len(matrix), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return statistic(matrix, axis=1)


def _reference_time(measured: Sequence[int], times: np.ndarray) -> float:
    """The fastest measured time (1 where none ran): the unit the models see times in."""
    measured_times = np.asarray(times, dtype=float)[list(measured)]
    ran = measured_times[np.isfinite(measured_times) & (measured_times > 0)]
    return float(ran.min()) if len(ran) else 1.0


def _measured_values(measured: Sequence[int], times: np.ndarray) -> np.ndarray | None:
    """-log(time / the fastest measured time) of the measured points, to 12 decimals, so that times
    in any unit give the same values to the last bit; failures half a log unit below the worst; None
    if all failed."""
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.round(-np.log(np.asarray(times, dtype=float)[list(measured)] / _reference_time(measured, times)), 12)
    ok = np.isfinite(values)
    if not ok.any():
        return None
    return np.where(ok, values, values[ok].min() - 0.5)


def _best_unmeasured(scores: np.ndarray, measured: Sequence[int], tie_break: np.ndarray) -> int:
    scores = scores + 1e-9 * (np.abs(scores).max() + 1.0) * tie_break
    scores[list(measured)] = -np.inf
    return int(np.argmax(scores))


def _rank_scale(values: np.ndarray, tied_by: np.ndarray) -> np.ndarray:
    """Ranks scaled to [0, 1): a tie-break that never outweighs a real difference. Equal values
    rank by the rows of ``tied_by`` (a configuration's parameter features), not by their position
    in the table."""
    ranks = np.empty(len(values))
    ranks[np.lexsort([*np.asarray(tied_by, dtype=float).T[::-1], values])] = np.arange(len(values))
    return ranks / max(len(values), 1)


class PlainTransfer:
    """Mean normalised performance over the other GPUs, best first; configurations none of
    them measured come last. Equal means go by ``tied_by`` (the parameter features), as the guided
    search breaks ties, not by the rows' order (without it, the earlier row first)."""

    def __init__(self, transfer: np.ndarray, tied_by: np.ndarray | None = None):
        mean = np.nan_to_num(row_statistic(np.nanmean, transfer), nan=-1.0)
        tied_by = -np.arange(len(mean), dtype=float)[:, None] if tied_by is None else tied_by
        self.order = np.argsort(-_rank_scale(mean, tied_by), kind="stable")

    def next(self, measured: Sequence[int], times: np.ndarray) -> int:
        return int(self.order[len(measured)])


class TransferGuided:
    """A portfolio covering the other GPUs, then a refitted surrogate (see the module docstring)."""

    def __init__(
        self,
        features: np.ndarray,
        transfer: np.ndarray,
        model: str = "et",
        seed: int = 0,
        period: int = 0,
        sigma: float = 0.2,
        refit: bool = True,
        cover: float = COVER,
        prior: np.ndarray | None = None,
        residual: bool = True,
        best_picks: int = BEST_PICKS,
        slice_picks: int = SLICE_PICKS,
        slice_values: int = 2,
        hit_spread: float = HIT_SPREAD,
    ):
        count = transfer.shape[1]
        self.prior_weights = np.full(count, 1.0 / max(count, 1)) if prior is None else np.asarray(prior, dtype=float)
        # to 12 decimals: other GPUs' times in another unit normalise 1 ulp apart, which moved the trees' splits
        transfer = np.round(np.asarray(transfer, dtype=float), 12)
        self.transfer = np.clip(np.nan_to_num(transfer, nan=0.0), 0.0, None)
        self.logs = _log_performance(transfer)
        # Covering is judged against each GPU's best among this space's configurations: its own
        # best may be one the space lacks. A GPU none of them ran on cannot be covered.
        best = self.transfer.max(axis=0) if len(self.transfer) else np.zeros(count)
        self.coverable = best > 0
        self.covers = (self.transfer >= cover * best) & self.coverable
        # the chance that a configuration is within ``cover`` of the new GPU's best if the new GPU is that other GPU,
        # its ratio to that GPU's best carrying over up to a log-normal spread of ``hit_spread``
        ratio = np.log(np.clip(self.transfer / np.where(best > 0, best, 1.0), FLOOR, None))
        self.hits = (norm.cdf((ratio - np.log(cover)) / hit_spread) * self.coverable) if hit_spread > 0 else None
        mean = row_statistic(np.nanmean, transfer)
        self.tie_break = _rank_scale(np.nan_to_num(mean, nan=-1.0), tied_by=features)
        self.features = unit_scale(np.hstack([features, self.logs, np.median(self.logs, axis=1, keepdims=True)]))
        self.model, self.seed = model, seed
        self.period, self.sigma, self.refit, self.residual = period, sigma, refit, residual
        self.best_picks = best_picks
        # slices: the combinations of the parameters with at most ``slice_values`` values (flags)
        self.slice_picks = slice_picks
        raw = np.asarray(features, dtype=float)
        flags = [c for c in range(raw.shape[1]) if 1 < len(np.unique(raw[:, c])) <= slice_values]
        self.slice_of = (np.unique(raw[:, flags], axis=0, return_inverse=True)[1].reshape(-1)
                         if flags else np.zeros(len(raw), dtype=int))
        # each other GPU's own best configuration among the space's (ties: the larger mean normalised
        # performance over the others, then the parameters)
        self.own_best = np.array([np.lexsort((self.tie_break, column))[-1] for column in self.transfer.T], dtype=int)
        self._last_prediction: tuple[Any, Any] = (None, None)  # (measured rows and times, model_prediction's)

    def gpu_weights(self, measured: Sequence[int], times: np.ndarray) -> np.ndarray:
        """Weight of each other GPU: its prior weight times the agreement of its relative log
        performance with the new GPU's."""
        values = _measured_values(measured, times)
        if values is None or len(measured) < 2:
            return self.prior_weights
        relative = values - values.max()
        logs = self.logs[list(measured)]
        others = logs - logs.max(axis=0)
        distance = np.mean((relative[:, None] - others) ** 2, axis=0)
        weights = self.prior_weights * np.exp(-(distance - distance.min()) / (2 * self.sigma**2))
        return weights / weights.sum() if weights.sum() > 0 else self.prior_weights

    def portfolio_steps(self, measured: Sequence[int]) -> int:
        """How many of the first measured points it took to cover every other GPU (len if not yet)."""
        covered = (np.logical_or.accumulate(self.covers[list(measured)], axis=0) | ~self.coverable).all(axis=1)
        return int(np.argmax(covered)) + 1 if covered.any() else len(measured)

    def portfolio_scores(self, measured: Sequence[int], times: np.ndarray) -> np.ndarray | None:
        """Weighted count of the still uncovered GPUs each configuration covers; None once all are."""
        uncovered = ~self.covers[list(measured)].any(axis=0) & self.coverable
        if not uncovered.any():
            return None
        return self.covers @ (self.gpu_weights(measured, times) * uncovered)

    def own_best_pick(self, measured: Sequence[int], times: np.ndarray) -> int | None:
        """The own best configuration of the heaviest other GPU (prior times agreement; ties: the
        larger mean) whose best is not measured yet; None once ``best_picks`` picks followed the
        first or every other GPU's best was measured."""
        if len(measured) > self.best_picks:
            return None
        done = set(measured)
        left = [j for j in range(len(self.own_best)) if self.coverable[j] and int(self.own_best[j]) not in done]
        if not left:
            return None
        weights = self.gpu_weights(measured, times)
        j = max(left, key=lambda k: (weights[k], self.tie_break[self.own_best[k]]))
        return int(self.own_best[j])

    def slice_pick(self, measured: Sequence[int], times: np.ndarray) -> int | None:
        """The best configuration, by the weighted mean of the other GPUs' log performance, of the
        best slice (a combination of flag values) no measured configuration lies in, until
        ``1 + best_picks + slice_picks`` picks; None after them, without ``slice_picks`` or when
        every slice was measured."""
        if self.slice_picks <= 0 or len(measured) >= 1 + self.best_picks + self.slice_picks:
            return None
        tried = np.isin(self.slice_of, self.slice_of[list(measured)])
        if tried.all():
            return None
        mean = self.logs @ self.gpu_weights(measured, times)
        return _best_unmeasured(np.where(tried, mean.min() - 100.0, mean), measured, self.tie_break)

    def hit_scores(self, measured: Sequence[int], times: np.ndarray) -> np.ndarray | None:
        """Each configuration's chance of a hit (within ``cover`` of the new GPU's best), the new GPU being one of
        the other GPUs (weights as above) that no measured configuration hit (0 for the measured); None without
        ``hit_spread`` or once no configuration's chance exceeds ``HIT_CHANCE``."""
        if self.hits is None:
            return None
        missed = np.prod(1.0 - self.hits[list(measured)], axis=0)  # the chance each other GPU's hit is still ahead
        scores = self.hits @ (self.gpu_weights(measured, times) * missed)  # an uncoverable GPU's hits are 0
        scores[list(measured)] = 0.0
        return scores if scores.max() > HIT_CHANCE else None

    def own_best_steps(self, measured: Sequence[int]) -> int:
        """How many of the measured points after the first were own-best picks."""
        wanted = {int(b) for j, b in enumerate(self.own_best) if self.coverable[j]}
        steps = 0
        while steps < min(self.best_picks, len(measured) - 1) and not wanted <= set(measured[: steps + 1]):
            steps += 1
        return steps

    def transfer_improvement(self, measured: Sequence[int], times: np.ndarray) -> np.ndarray:
        """Expected gain over the best found so far, the new GPU drawn from the weighted others."""
        weights = self.gpu_weights(measured, times)
        best = np.maximum(self.transfer[list(measured)].max(axis=0), FLOOR)
        return np.maximum(self.transfer / best - 1.0, 0.0) @ weights

    def transfer_line(self, measured: Sequence[int], times: np.ndarray, values: np.ndarray) -> np.ndarray:
        """The weighted mean of the other GPUs' log performance, fitted onto the measured values
        by least squares (slope clipped to [0, 1]; 1 below three measurements)."""
        mean = self.logs @ self.gpu_weights(measured, times)
        at_measured = mean[list(measured)]
        slope = 1.0
        if len(values) >= 3 and at_measured.var() > 0:
            slope = float(np.clip(np.cov(values, at_measured, bias=True)[0, 1] / at_measured.var(), 0.0, 1.0))
        return slope * mean + np.mean(values - slope * at_measured)

    def model_prediction(self, measured: Sequence[int], times: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """The refitted surrogate's -log(time) and spread per configuration; None below two measurements.
        The last one is kept: a batch's pick and the time it believes of it use one fit."""
        values = _measured_values(measured, times)
        if values is None or len(measured) < 2:
            return None
        rows = list(measured)
        key = (tuple(rows), np.asarray(times, dtype=float)[rows].tobytes())
        if self._last_prediction[0] != key:
            base = self.transfer_line(measured, times, values) if self.residual else np.zeros(len(self.features))
            residuals = np.round(values - base[rows], 12)  # the line's sums differ in the last bit with the row order
            surrogate = Surrogate(self.model, self.seed + len(measured)).fit(self.features[rows], residuals)
            mean, spread = surrogate.predict(self.features)
            self._last_prediction = (key, (base + mean, spread))
        return self._last_prediction[1]

    def model_improvement(self, measured: Sequence[int], times: np.ndarray) -> np.ndarray | None:
        predicted = self.model_prediction(measured, times)
        if predicted is None:
            return None
        return expected_improvement(*predicted, _measured_values(measured, times).max())

    def believed_time(self, measured: Sequence[int], times: np.ndarray, index: int) -> float:
        """The time the search expects of configuration ``index``: the surrogate's, or (below two
        measurements) the weighted other GPUs' fitted to the measurements so far."""
        results = sorted(measured)
        unit = _reference_time(results, times)
        predicted = self.model_prediction(results, times) if self.refit else None
        if predicted is not None:
            return unit * float(np.exp(-predicted[0][index]))
        values = _measured_values(results, times)
        if values is None:
            return float(np.exp(-(self.logs @ self.gpu_weights(results, times))[index]))
        return unit * float(np.exp(-self.transfer_line(results, times, values)[index]))

    def next(self, measured: Sequence[int], times: np.ndarray) -> int:
        if not measured:
            return _best_unmeasured(self.covers @ self.prior_weights, [], self.tie_break)
        results = sorted(measured)  # what was measured, whatever order it came in
        pick = self.own_best_pick(results, times)
        if pick is not None:
            return pick
        pick = self.slice_pick(results, times)
        if pick is not None:
            return pick
        scores = self.hit_scores(results, times)
        if scores is not None:
            return _best_unmeasured(scores, results, self.tie_break)
        scores = self.portfolio_scores(results, times)
        if scores is not None:  # ties: the larger transfer expected improvement
            scores = scores + 1e-6 * self.transfer_improvement(results, times)
            return _best_unmeasured(scores, results, self.tie_break)
        after = len(measured) - max(1 + self.own_best_steps(measured), self.portfolio_steps(measured))
        transfer_step = not self.refit or (self.period > 0 and after % self.period == self.period - 1)
        scores = None if transfer_step else self.model_improvement(results, times)
        if scores is None:
            scores = self.transfer_improvement(results, times)
        return _best_unmeasured(scores, results, self.tie_break)


class StaticModel:
    """A surrogate trained once on other GPUs' normalised performance; their median where measured."""

    def __init__(
        self,
        features: np.ndarray,
        transfer: np.ndarray,
        train_features: Sequence[np.ndarray],
        train_performance: Sequence[np.ndarray],
        model: str = "et",
        seed: int = 0,
    ):
        rows, values = np.vstack(train_features), np.round(np.concatenate(train_performance), 12)  # as GuidedSearch's
        if len(values) > STATIC_ROWS:
            keep = np.random.default_rng(seed).choice(len(values), STATIC_ROWS, replace=False)
            rows, values = rows[keep], values[keep]
        surrogate = Surrogate(model, seed).fit(rows, values)
        predicted, _ = surrogate.predict(features)
        median = row_statistic(np.nanmedian, np.round(np.asarray(transfer, dtype=float), 12))
        score = np.where(np.isnan(median), predicted, median)
        self.order = np.lexsort((-predicted, -score))

    def next(self, measured: Sequence[int], times: np.ndarray) -> int:
        return int(self.order[len(measured)])


class OnlineSearch:
    """No prior data: random picks first (``initial``: 5 with ``gp``, 10 with the other surrogates by
    default; or the first of a given ``start`` order, e.g. a ranking by a model trained on other
    kernels), then the refitted surrogate's expected improvement.

    With ``gp`` (Matern 5/2, one length scale per parameter), ``length_bounds`` bound the length
    scales of the unit-scaled parameters ([0.05, 20] by default: a scale of 0.01 treats neighbouring
    grid values as unrelated, one of 100 ignores the parameter, and a handful of points fitted by
    maximum likelihood often lands on either).
    The defaults (5 picks, [0.05, 20]; before: 10 picks, [0.01, 100]) were chosen on the bundled
    spaces of schoonhoven pnpoly and convolution and hub pnpoly and convolution_milo (22 spaces,
    each GPU alone): fewer evaluations to 90 % of the best on each of three seed sets, and more
    spaces won against Kernel Tuner's best strategy on two of them (pooled over the 9 seeds, 15 of
    22 against 12; the third set 13 against 15); benchmarks/bench_explore.py's docstring has the
    figures and the variants tried (``--online-variant``)."""

    def __init__(self, features: np.ndarray, model: str = "gp", seed: int = 0, initial: int | None = None,
                 start: Sequence[int] | None = None, length_bounds: tuple[float, float] = GP_LENGTH_BOUNDS):
        self.features, self.model, self.seed = unit_scale(features), model, seed
        self.length_bounds = tuple(length_bounds)
        if initial is None:
            initial = INITIAL_PICKS if model == "gp" else INITIAL_PICKS_TREES
        self.rng = np.random.default_rng(seed)
        # Drawn even when ``start`` is given, so the tie-break is the same for both kinds of start.
        self.start = self.rng.permutation(len(features))[: max(1, initial)]
        self.tie_break = self.rng.random(len(features))
        if start is not None:
            self.start = np.asarray(start, dtype=int)[: max(1, initial)]
        self._last_prediction: tuple[Any, Any] = (None, None)  # (measured rows and values, _prediction's)

    def next(self, measured: Sequence[int], times: np.ndarray) -> int:
        step = len(measured)
        if step < len(self.start):  # the first start pick not measured yet (some may have been measured elsewhere)
            done = set(measured)
            return next(int(i) for i in self.start if i not in done)
        results = sorted(measured)  # what was measured, whatever order it came in
        values = _measured_values(results, times)
        if values is None:  # every pick so far failed: keep sampling at random
            return _best_unmeasured(np.zeros(len(self.features)), measured, self.tie_break)
        mean, spread = self._prediction(results, values)
        return _best_unmeasured(expected_improvement(mean, spread, values.max()), measured, self.tie_break)

    def _prediction(self, results: list[int], values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The surrogate fitted on ``results``' values: its mean and spread per configuration (the last
        one kept, so a batch's pick and the time it believes of it use one fit)."""
        key = (tuple(results), values.tobytes())
        if self._last_prediction[0] != key:
            surrogate = Surrogate(self.model, self.seed + len(results), self.length_bounds)
            surrogate.fit(self.features[results], values)
            self._last_prediction = (key, surrogate.predict(self.features))
        return self._last_prediction[1]

    def believed_time(self, measured: Sequence[int], times: np.ndarray, index: int) -> float:
        """The time the surrogate expects of configuration ``index``; the geometric mean of the
        measured times before there is a surrogate (or 1 before anything ran)."""
        results = sorted(measured)
        values = _measured_values(results, times)
        if values is None:
            return 1.0
        unit = _reference_time(results, times)
        if len(results) < len(self.start):
            return unit * float(np.exp(-values.mean()))
        return unit * float(np.exp(-self._prediction(results, values)[0][index]))


def next_batch(explorer, measured: Sequence[int], times: np.ndarray, count: int, believe=None) -> list[int]:
    """The next ``count`` distinct picks of ``explorer`` to measure at once: after each pick the
    search goes on as if that configuration had run at the time it expects of it (the "kriging
    believer" rule), so the picks spread over what it would try next. Explorers without a
    ``believed_time`` (a fixed order) take their next picks as they come. ``believe(measured,
    times, index)`` replaces the explorer's expectation (to compare other rules)."""
    measured, times = list(measured), np.array(times, dtype=float)
    believe = believe or getattr(explorer, "believed_time", None)
    picks: list[int] = []
    wanted = min(count, len(times) - len(measured))
    for _ in range(wanted):
        index = explorer.next(measured, times)
        picks.append(index)
        if len(picks) == wanted:  # no pick follows: what it would believe of this one is never used
            break
        times[index] = believe(measured, times, index) if believe is not None else 1.0
        measured.append(index)
    return picks


def run_search(explorer, times: np.ndarray, budget: int, stop_at: float | None = 1.0,
               progress: Callable[[int, int], None] | None = None) -> list[int]:
    """Simulate ``explorer`` on measured ``times``: the indices in evaluation order, up to
    ``budget`` evaluations or until a configuration reaches ``stop_at`` of the best.
    ``progress(done, total)`` is called after every evaluation, ``total`` the evaluations the search
    may make (``budget``, or the space's size where that is smaller)."""
    times = np.asarray(times, dtype=float)
    best = np.nanmin(times)
    seen = np.full(len(times), np.nan)
    measured: list[int] = []
    picked: set[int] = set()  # the membership test on a list made plain transfer's whole-space order quadratic
    for _ in range(min(budget, len(times))):
        index = explorer.next(measured, seen)
        if index in picked:
            raise RuntimeError(f"explorer picked configuration {index} twice")
        measured.append(index)
        picked.add(index)
        seen[index] = times[index]
        if progress is not None:
            progress(len(measured), min(budget, len(times)))
        if stop_at is not None and np.isfinite(times[index]) and best / times[index] >= stop_at - 1e-12:
            break
    return measured


def run_batched_search(explorer, times: np.ndarray, budget: int, batch: int,
                       stop_at: float | None = 1.0, believe=None) -> list[list[int]]:
    """Simulate ``explorer`` measuring ``batch`` configurations at a time (:func:`next_batch`) on
    measured ``times``: the rounds, each the indices measured together, up to ``budget``
    evaluations or until a round reaches ``stop_at`` of the best."""
    times = np.asarray(times, dtype=float)
    best = np.nanmin(times)
    seen = np.full(len(times), np.nan)
    measured: list[int] = []
    rounds: list[list[int]] = []
    while len(measured) < min(budget, len(times)):
        picks = next_batch(explorer, measured, seen, min(batch, budget - len(measured)), believe)
        measured += picks
        seen[picks] = times[picks]
        rounds.append(picks)
        ran = [i for i in picks if np.isfinite(times[i])]
        if stop_at is not None and ran and best / min(times[ran]) >= stop_at - 1e-12:
            break
    return rounds
