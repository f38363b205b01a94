"""Explore a variant space: rank its configurations by predicted performance and evaluate them
in that order, refitting as measurements arrive (the LIFT paper's exploration).

:func:`explore` simulates the search on a measured space (one kernel on one GPU): with other
GPUs' measurements of the same kernel (``train``) it uses :class:`TransferGuided` (other GPUs
weighted by how alike they are to the space's GPU, where the spaces name known GPUs), without them
:class:`OnlineSearch`; ``refit=False`` ranks once with a model trained on ``train``. It reports
the evaluations needed to reach 90, 95 and 99 % of the space's best, against random order (exact
expectation and a simulation over seeds) and plain transfer (mean normalised performance on the
other GPUs, no model).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from gpuperf.datasets.schema import canonical_gpu
from gpuperf.decisions.explorers import OnlineSearch, PlainTransfer, StaticModel, TransferGuided, run_search
from gpuperf.decisions.gpu_similarity import prior_weights
from gpuperf.decisions.search_metrics import (
    FRACTIONS,
    best_found_curve,
    evals_to,
    random_evals_quantile,
    random_expected_evals,
    random_expected_evals_within,
    simulate_random,
)
from gpuperf.decisions.space import (
    Space,
    check_size_columns,
    parameter_features,
    require_shared_configurations,
    same_kernel_and_gpu,
    same_measurements,
    same_space_copy,
    transfer_matrix,
)
from gpuperf.decisions.surrogates import SURROGATES
from gpuperf.errors import GpuperfError, GpuperfNote, unknown_name_error, whole_number

TRANSFER_MODEL = "et"  # refitted after every measurement, with other GPUs' data (a cheap step)
ONLINE_MODEL = "gp"  # refitted after every measurement, no prior data
STATIC_MODEL = "et"  # trained once on whole tables (too many rows for a Gaussian process)
DEFAULT_BUDGET = 200
RANDOM_SEEDS = 100


@dataclass
class ExploreResult:
    """One simulated exploration of a measured space."""

    order: list[int]
    performance: np.ndarray  # normalised performance of the whole space
    method: str
    baselines: dict[str, float | None] = field(default_factory=dict)
    transfer_order: list[int] | None = None  # plain transfer's order, when other GPUs' data were given
    budget: int | None = None  # the most evaluations the search was allowed

    def evals(self, fraction: float) -> int | None:
        return evals_to(self.performance[self.order], fraction)

    def curve(self) -> np.ndarray:
        return best_found_curve(self.performance[self.order])


def make_explorer(
    space: Space,
    train: Sequence[Space] = (),
    model: str | None = None,
    refit: bool = True,
    seed: int = 0,
    initial: int | None = None,
    start: Sequence[int] | None = None,
    options: dict | None = None,
):
    """The explorer for ``space``: transfer-guided with ``train``, online without (its first
    ``initial`` picks random, by default 5 with ``gp`` and 10 with the others, or the first of
    ``start``); ``model`` defaults to ``et`` with ``train`` (also for a ranking without refits),
    ``gp`` without. ``options``: keyword arguments
    of :class:`TransferGuided` (e.g. ``best_picks``, ``slice_picks``) with ``train``, of :class:`OnlineSearch`
    (``length_bounds``) without, to compare variants."""
    model = model or default_model(bool(train), refit)
    if model not in SURROGATES:
        raise unknown_name_error("model", model, SURROGATES)
    if model == "gp" and not refit:
        raise GpuperfError("a Gaussian process cannot be trained on whole tables; with --no-refit use et, rf, gbt or knn")
    if not train:
        if not refit:
            raise GpuperfError("without --train tables the exploration must refit as it measures (drop --no-refit)")
        return OnlineSearch(parameter_features(space.configs, space.params), model, seed, initial, start, **(options or {}))
    train = in_content_order(train)  # the search learns alike whatever order the tables came in
    transfer = transfer_matrix(space, train)
    if refit:
        require_shared_configurations(space, train, transfer)
        prior = prior_weights(space.gpu, [t.gpu for t in train])
        return TransferGuided(parameter_features(space.configs, space.params), transfer, model, seed, prior=prior,
                              **(options or {}))
    # One encoding for the space and every table, so a code or a log means the same value in each.
    tables = [space.configs[space.params], *(t.configs[space.params] for t in train)]
    encoded = parameter_features(pd.concat(tables, ignore_index=True), space.params)
    features, *train_features = np.split(encoded, np.cumsum([len(t) for t in tables])[:-1])
    return StaticModel(features, transfer, train_features, [t.performance for t in train], model, seed)


def in_content_order(train: Sequence[Space]) -> list[Space]:
    """``train`` ordered by what the spaces hold (canonical GPU name, then size and times, then
    where they came from), not by file names or a table's grouping: the extra-trees features take
    the other GPUs' columns in this order, so another order gave other figures."""
    def key(other: Space) -> tuple:
        times = other.times[np.isfinite(other.times)]
        return ("" if other.gpu is None else canonical_gpu(other.gpu), str(other.gpu or ""), len(other),
                float(np.sum(np.sort(times))), other.where)

    return sorted(train, key=key)


def measured_elsewhere(space: Space, train: Sequence[Space], size_columns: Sequence[str] = (),
                       label: str = "the training spaces") -> list[Space]:
    """``train`` without the spaces that are ``space`` itself, each left out with a note: its own
    kernel and GPU (and size, also in ``size_columns``), or its own times under other names (a
    Kernel Tuner cache of the same run). A simulation that learns from the times it is scored on
    overstates the search. A copy of a space kept (:func:`~gpuperf.decisions.space.same_space_copy`)
    is left out too, with a note: it would count one GPU twice. An error when nothing is left of a ``train`` given; ``label`` names
    ``train`` in both."""
    check_size_columns(size_columns)
    others = []
    for other in train:
        if same_kernel_and_gpu(space, other, size_columns):
            warnings.warn(GpuperfNote(f"{other.where} is the space's own kernel and GPU ({other.gpu}); left out of "
                                      f"{label}"), stacklevel=3)
        elif same_measurements(space, other):
            warnings.warn(GpuperfNote(f"{other.where} holds the space's own times (every configuration both have, "
                                      f"timed alike); left out of {label}"), stacklevel=3)
        elif (copied := next((kept for kept in others if same_space_copy(kept, other, size_columns)), None)):
            warnings.warn(GpuperfNote(f"{other.where} holds the same measurements as {copied.where} (its GPU, kernel "
                                      f"and size, every configuration timed alike); left out of {label}, counted "
                                      "once"), stacklevel=3)
        else:
            others.append(other)
    if train and not others:
        raise GpuperfError(f"{label}: every table is the space's own kernel and GPU or holds its own times; nothing to "
                           "transfer from")
    return others


def default_model(with_train: bool, refit: bool) -> str:
    if not refit:
        return STATIC_MODEL
    return TRANSFER_MODEL if with_train else ONLINE_MODEL


def plain_transfer_order(space: Space, train: Sequence[Space], budget: int | None = None) -> list[int]:
    """Plain transfer's evaluation order (until the best, or ``budget`` evaluations)."""
    explorer = PlainTransfer(transfer_matrix(space, in_content_order(train)),
                             parameter_features(space.configs, space.params))
    return run_search(explorer, space.times, budget or len(space))


def explore(
    space: Space,
    train: Sequence[Space] = (),
    model: str | None = None,
    refit: bool = True,
    budget: int = DEFAULT_BUDGET,
    seed: int = 0,
    random_seeds: int = RANDOM_SEEDS,
    progress: Callable[[int, int], None] | None = None,
    size_columns: Sequence[str] = (),
) -> ExploreResult:
    """Simulate the exploration of a measured ``space`` (stops at its best or after ``budget``);
    ``progress(done, total)`` follows the search (:func:`~gpuperf.decisions.explorers.run_search`).
    ``train`` spaces that are ``space`` itself (its kernel and GPU at its size, also in
    ``size_columns``) are left out (:func:`measured_elsewhere`)."""
    if whole_number(budget, "budget") < 1:
        raise GpuperfError(f"budget {budget} must be at least 1 evaluation")
    budget = int(budget)
    train = [train] if isinstance(train, Space) else list(train)  # one training space, as GuidedSearch takes one table
    for other in train:
        if not isinstance(other, Space):  # a table or its path: GuidedSearch reads those, explore takes spaces
            raise GpuperfError(f"explore: train holds a {type(other).__name__}, not a Space; read each table with "
                               "gpuperf.decisions.read_space (or gpuperf.decisions.tune.training_spaces)")
    train = measured_elsewhere(space, train, size_columns)
    model = model or default_model(bool(train), refit)
    explorer = make_explorer(space, train, model, refit, seed)
    order = run_search(explorer, space.times, budget, progress=progress)
    performance = space.performance
    method = ("transfer-guided" if refit else "static model") if train else "online"
    result = ExploreResult(order, performance, f"{method} ({model})", budget=budget)
    for fraction in FRACTIONS:
        label = f"{round(fraction * 100)}"
        result.baselines[f"random_expected_evals_to_{label}"] = random_expected_evals(performance, fraction)
    # scored as the search is, a miss within the budget counting budget + 1 (the key above: no budget)
    result.baselines["random_expected_evals_to_90_within_budget"] = random_expected_evals_within(performance, 0.9,
                                                                                                  budget)
    result.baselines["random_evals_to_90"] = float(np.mean(simulate_random(performance, 0.9, random_seeds)))
    result.baselines["random_evals_to_90_p10"] = random_evals_quantile(performance, 0.9, 0.1)
    result.baselines["random_evals_to_90_p90"] = random_evals_quantile(performance, 0.9, 0.9)
    if train:
        result.transfer_order = plain_transfer_order(space, train)
    result.baselines["transfer_evals_to_90"] = (
        evals_to(performance[result.transfer_order], 0.9) if train else None
    )
    return result


def result_summary(space: Space, result: ExploreResult, order_limit: int | None = None) -> dict[str, object]:
    """The JSON the ``explore`` command prints."""
    shown = result.order if order_limit is None else result.order[:order_limit]
    summary: dict[str, object] = {
        "space": space.where,
        "configurations": len(space),
        "method": result.method,
        "evaluated": len(result.order),
        "budget": result.budget,
        "evals_to_90": result.evals(0.9),
        "evals_to_95": result.evals(0.95),
        "evals_to_99": result.evals(0.99),
        "time_column": space.time_column,  # best_time and the order's times are in this column's unit
        "best_time": space.best_time,
        "best_found_time": _best_found(space.times[result.order]),
        **result.baselines,
        "order": [{**space.config(i), "time": _time(space.times[i])} for i in shown],
    }
    return summary


def _time(value: float) -> float | None:
    return None if not np.isfinite(value) else float(value)


def _best_found(times: np.ndarray) -> float | None:
    """The fastest evaluated time (None when nothing evaluated ran)."""
    ok = times[np.isfinite(times)]
    return float(ok.min()) if len(ok) else None
