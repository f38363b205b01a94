"""Rank a variant space with a calibrated linear count model (Stevens & Klöckner): nothing is run.

Each valid variant's properties come from its static counts at the given sizes; the model
calibrated for a device (``gpuperf calibrate``) turns them into a time. Unlike the LIFT ranking
(:func:`~gpuperf.decisions.cross_kernel.rank_space`), no measured variants of other kernels are
needed, only the device's calibration, and the prediction is a time in seconds, not a relative
performance.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from gpuperf.decisions.search_metrics import FRACTIONS, evals_to, random_expected_evals

if TYPE_CHECKING:
    from gpuperf.models.linear import LinearCountModel

PREDICTED_TIME = "predicted_time_s"
PREDICTED_PERFORMANCE = "predicted_performance"


def rank_space_by_counts(
    space: str,
    sizes: Mapping[str, Any],
    model: LinearCountModel,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    cuda: bool = False,
) -> pd.DataFrame:
    """Every valid variant (the first ``limit``) of the catalog space ``space`` at ``sizes``, ranked
    by the time ``model`` predicts, fastest first. Columns: ``variant`` (its spec), the space's
    parameters, ``predicted_time_s`` and ``predicted_performance`` (the fastest predicted time over
    this one's: 1 for the first). Variants that differ only in the space's count-neutral parameters
    (unrolling) share one count of their properties unless the model reads index arithmetic. Variants
    measure would refuse at ``sizes`` (int32 indices that wrap; with ``cuda``, a grid past CUDA's limits) are
    ranked still, counted in a note naming the first."""
    from gpuperf.kernels.space import get_space, shared_static_rows, sized_variants
    from gpuperf.models.properties import kernel_properties

    chosen = get_space(space)
    built = sized_variants(chosen, sizes, limit, progress)
    names = model.property_names_
    properties = pd.DataFrame(shared_static_rows(chosen, built, lambda kernel: kernel_properties(kernel, sizes, names),
                                                 names))
    predicted = np.asarray(model.predict(properties), dtype=float)
    _unrunnable_note(chosen, built, sizes, cuda)
    ranked = pd.DataFrame([{"variant": kernel.key, **config} for config, kernel in built])
    ranked[PREDICTED_TIME] = predicted
    ranked[PREDICTED_PERFORMANCE] = predicted.min() / predicted
    return ranked.sort_values(PREDICTED_TIME, kind="stable").reset_index(drop=True)


def _unrunnable_note(space, built: list, sizes: Mapping[str, Any], cuda: bool) -> None:  # noqa: ANN001
    """A note counting the ``built`` variants gpuperf would not run at ``sizes`` as generated, naming the first;
    checked once per set of variants that differ only in the space's count-neutral parameters (unrolling),
    which change neither arrays nor grid."""
    from gpuperf.errors import GpuperfNote
    from gpuperf.measure.timing import generated_launch_problem

    checked: dict[tuple, str | None] = {}
    problems = []
    for config, kernel in built:
        token = tuple((key, value) for key, value in config.items() if key not in space.count_neutral)
        if token not in checked:
            checked[token] = generated_launch_problem(kernel, sizes, cuda)
        if checked[token]:
            problems.append(checked[token])
    if problems:
        warnings.warn(GpuperfNote(f"{space.name}: {len(problems)} of {len(built)} variants would be refused by "
                                  "measure at these sizes, their times being for kernels that cannot run as "
                                  f"generated; the first: {problems[0]}"), stacklevel=3)


def ranking_evaluations(predictions: pd.DataFrame) -> pd.DataFrame:
    """Per kernel of ``predictions`` (measured variants with their ``time_s`` and ``predicted_s``,
    as :func:`~gpuperf.evaluation.linear_eval.variant_predictions` gives them), the predictions as
    an exploration order (fastest predicted first, ties in table order): evaluations to reach each
    of ``FRACTIONS`` of the best, ``evals_to_90`` ..., beside random order's exact expectation,
    ``random_evals_to_90`` ...."""
    def judged(part: pd.DataFrame) -> pd.Series:
        performance = (part["time_s"].min() / part["time_s"]).to_numpy()
        order = np.argsort(part["predicted_s"].to_numpy(), kind="stable")
        figures = {f"evals_to_{round(f * 100)}": evals_to(performance[order], f) for f in FRACTIONS}
        figures |= {f"random_evals_to_{round(f * 100)}": random_expected_evals(performance, f) for f in FRACTIONS}
        return pd.Series(figures)

    return predictions.groupby("kernel", sort=True)[["time_s", "predicted_s"]].apply(judged)


def evaluations_summary(evaluations: pd.DataFrame) -> tuple[str, str]:
    """The geometric means over kernels of :func:`ranking_evaluations`, in predicted order and in
    random order, each as ``"1.09 / 2.81 / 6.77"`` (to 90 / 95 / 99 %)."""
    from scipy.stats import gmean

    def line(prefix: str) -> str:
        return " / ".join(f"{gmean(evaluations[f'{prefix}evals_to_{round(f * 100)}']):.2f}" for f in FRACTIONS)

    return line(""), line("random_")
