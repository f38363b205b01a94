"""Kernel Tuner's own search strategies on a measured space, through its simulation mode.

The space is written as a Kernel Tuner cache (every configuration, failed ones with their
error name); ``kernel_tuner.interface.tune_cache`` then restricts the search to the cached
configurations and replays their times. It skips configurations whose cached entry is an
error (they never cost an evaluation), so compare with gpuperf's orders on
``space.without_failures()``. The evaluation order is the order in which each
configuration was first visited (revisits cost nothing in simulation mode), so it is measured
with the same evals-to-X figures as gpuperf's own orders. Kernel Tuner's strategies draw from
Python's and NumPy's global random generators, which are seeded per run.
"""

from __future__ import annotations

import contextlib
import io
import random
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpuperf.datasets.schema import shift_decimal
from gpuperf.decisions.space import Space, configuration_keys, plain_value
from gpuperf.errors import GpuperfError

STRATEGIES = ("random_sample", "genetic_algorithm", "simulated_annealing", "bayes_opt", "greedy_ils", "mls")


def write_space_cache(space: Space, path: str | Path, kernel_name: str = "kernel", device_name: str = "gpu") -> Path:
    """``space`` as a closed Kernel Tuner cache file (times in ms, failures as RuntimeFailedConfig)."""
    from gpuperf.datasets.kernel_tuner import write_kernel_tuner_cache

    frame = pd.DataFrame({p: space.configs[p].map(plain_value) for p in space.params})
    frame.insert(0, "kernel", kernel_name)
    frame.insert(1, "variant", "")
    frame.insert(2, "gpu", device_name)
    frame.insert(3, "device", device_name)
    frame.insert(4, "source", space.where or "gpuperf")
    # Any unit, written as if ms: the decimal point moved in the text, so the cache replays the
    # space's own numbers exactly.
    frame["time_s"] = [shift_decimal(t, -3) for t in space.times]
    frame["status"] = np.where(np.isnan(space.times), "RuntimeFailedConfig", "ok")
    return write_kernel_tuner_cache(frame, path, tune_params_keys=space.params, problem_size=[1])


def strategy_order(cache: str | Path, space: Space, strategy: str | Any, budget: int, seed: int = 0) -> list[int]:
    """Indices of ``space`` in the order Kernel Tuner's ``strategy`` (a name, or a strategy object
    such as gpuperf's :class:`GuidedStrategy`) first evaluates them."""
    from kernel_tuner.interface import strategy_map, tune_cache

    if isinstance(strategy, str) and strategy not in strategy_map:
        raise GpuperfError(f"unknown Kernel Tuner strategy '{strategy}' (known: {', '.join(sorted(strategy_map))})")
    # Kernel Tuner's strategies draw from the global generators: seeded for the run, the caller's
    # state put back after, so a host program's own draws go on as if this had not run.
    python_state, numpy_state = random.getstate(), np.random.get_state()
    random.seed(seed)
    np.random.seed(seed)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            results, _ = tune_cache(str(cache), strategy=strategy, strategy_options={"max_fevals": budget},
                                    quiet=True)
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)
    index = pd.Series(np.arange(len(space)), index=configuration_keys(space.configs, space.params).to_numpy())
    order: list[int] = []
    seen: set[int] = set()
    visited = pd.DataFrame([{p: result[p] for p in space.params} for result in results], columns=space.params)
    for key in configuration_keys(visited, space.params):  # matched as the space's (True as 1, 16.0 as 16)
        position = int(index[key])
        if position not in seen:
            seen.add(position)
            order.append(position)
    return order[:budget]


def strategy_orders(space: Space, strategies: tuple[str, ...], budget: int, seeds: int) -> dict[str, list[list[int]]]:
    """Per strategy, one evaluation order per seed (the space's cache written to a temporary file)."""
    with tempfile.TemporaryDirectory(prefix="gpuperf-kt-") as folder:
        cache = write_space_cache(space, Path(folder) / "space.json")
        return {s: [strategy_order(cache, space, s, budget, seed) for seed in range(seeds)] for s in strategies}
