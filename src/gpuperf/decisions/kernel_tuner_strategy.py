"""gpuperf's guided search as a Kernel Tuner strategy, for real tuning runs and simulation mode.

    import kernel_tuner
    from gpuperf.decisions.kernel_tuner_strategy import GuidedStrategy

    kernel_tuner.tune_kernel(name, source, size, args, tune_params,
                             strategy=GuidedStrategy(train=["gemm_A100.json", "gemm_V100.json"]),
                             strategy_options={"max_fevals": 20})

Kernel Tuner (1.x) accepts any object with a ``tune(searchspace, runner, tuning_options)``
method as its strategy. Each step asks a :class:`~gpuperf.decisions.tune.GuidedSearch` for the
next configuration, lets Kernel Tuner compile and benchmark it (or replay it from a cache in
simulation mode), and tells the search the result. ``train``: caches (or tables: files,
DataFrames, bundled names; or :class:`Space` objects), one or a list, of the same kernel's
parameters measured on other GPUs, as :class:`GuidedSearch` takes them; without them the search
is online. ``gpu``: the GPU searched on, as :class:`GuidedSearch` takes it (alike GPUs weigh
more); by default the device Kernel Tuner names, in simulation mode the cache's. As ``gpuperf
explore``'s ``--train``, the training data's spaces of that GPU and of the kernel and problem size
Kernel Tuner tunes (where they name them) are left out, with a note, and a table of several kernels
holding the tuned kernel gives only its rows, so a simulated run picks what ``gpuperf explore``
picks on that cache. The configurations are searched in sorted order of their parameter
values, so a run does not depend on how Kernel Tuner lists its search space. An objective
where higher is better (GFLOP/s, ...) is searched as its inverse, so either kind works; with
several objectives the search follows the first.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from gpuperf.decisions.exploration import measured_elsewhere
from gpuperf.decisions.space import Space, plain_value
from gpuperf.decisions.tune import GuidedSearch, TrainingData, training_spaces


class GuidedStrategy:
    """A Kernel Tuner strategy object (see the module docstring)."""

    def __init__(self, train: TrainingData | Sequence[TrainingData] = (), model: str | None = None, seed: int = 0,
                 gpu: str | None = None):
        self.train, self.model, self.seed, self.gpu = train, model, seed, gpu

    def searched_configurations(self, searchspace: Any) -> pd.DataFrame:
        """Kernel Tuner's valid configurations as a table, sorted by parameter values."""
        params = list(searchspace.tune_params)
        rows = [list(c) for c in searchspace.list]
        configs = pd.DataFrame(rows, columns=params)
        for position, name in enumerate(params):
            if any(row[position] is None for row in rows):  # kept as None: pandas makes it NaN beside numbers
                configs[name] = pd.Series([row[position] for row in rows], dtype=object)
        return configs.sort_values(params, kind="stable").reset_index(drop=True)

    def measured_elsewhere(self, configs: pd.DataFrame, params: list[str], gpu: str | None, kernel: str | None,
                           size: Any) -> list[Space]:
        """The training spaces, less those of the searched ``gpu``, ``kernel`` and problem ``size``
        (each noted), as explore's ``--train`` leaves out the space's own."""
        extra = {name: [value] * len(configs) for name, value in (("kernel", kernel), ("problem_size", size))
                 if value is not None}
        searched = Space(params, configs, np.full(len(configs), np.nan), "the tuned space", pd.DataFrame(extra),
                         gpu=gpu)
        return measured_elsewhere(searched, training_spaces(self.train, params, searched), label="train")

    def tune(self, searchspace: Any, runner: Any, tuning_options: Any) -> list[dict]:
        from kernel_tuner.strategies.common import CostFunc
        from kernel_tuner.util import StopCriterionReached

        configs = self.searched_configurations(searchspace)
        params = list(configs.columns)
        gpu = self.gpu or _device_name(runner)
        kernel = getattr(getattr(runner, "kernel_source", None), "kernel_name", None)
        size = getattr(getattr(runner, "kernel_options", None), "problem_size", None)
        train = self.measured_elsewhere(configs, params, gpu, kernel, size)
        search = GuidedSearch(configs, params, train, self.model, self.seed, gpu=gpu, kernel=kernel)
        cost = CostFunc(searchspace, tuning_options, runner)
        higher_is_better = _first(tuning_options.objective_higher_is_better)
        budget = min(tuning_options.get("max_fevals", len(search)), len(search))
        try:
            for _ in range(budget):
                index = search.ask()
                value = cost([plain_value(configs[p].iloc[index]) for p in params], check_restrictions=False)
                search.tell(index, _as_time(_first(value), higher_is_better))
        except StopCriterionReached:
            pass
        return cost.results


def _device_name(runner: Any) -> str | None:
    """The device Kernel Tuner tunes on (in simulation mode, the one its cache names); None where
    it names none."""
    try:
        name = runner.get_device_info().name
    except AttributeError:
        return None
    return str(name) if name else None


def _first(value: Any) -> Any:
    """The first objective's entry (Kernel Tuner 1.x keeps objectives, directions and costs as lists;
    the search follows the first objective)."""
    return value[0] if isinstance(value, (list, tuple)) else value


def _as_time(cost: float, higher_is_better: bool) -> float | None:
    """Kernel Tuner's cost (lower is better; the objective negated when higher is better) as a
    positive time-like value; None for a failed configuration."""
    if not math.isfinite(cost) or abs(cost) >= sys.float_info.max:
        return None
    value = -cost if higher_is_better else cost
    if value <= 0:
        return None
    return 1.0 / value if higher_is_better else value
