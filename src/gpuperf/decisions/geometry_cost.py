"""What one launch-geometry decision costs: each policy's time per call, set against kernel times.

Lloyd et al.'s lesson: a predictor that takes longer than the kernel it configures is useless. Each
figure is the best of ``repeat`` timings of ``number`` calls (``timeit``), on the V100's descriptor
with a new trip count per call: the heuristic given a descriptor, and from a GPU name (looked up
per call); LLVM's and libomptarget's rules; the occupancy policy with its resource lookups cached
and with new resources (every block size tried); the random-forest model per call, trained once
beforehand (not timed).
"""

from __future__ import annotations

import timeit
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd

from gpuperf.decisions.geometry import (
    KernelDescriptor, choose_geometry, clear_caches, device_descriptor, heuristic, libomptarget, llvm_default,
    occupancy_policy,
)
from gpuperf.errors import GpuperfNote

HEURISTIC_TARGET_US = 5.0  # gpuperf's target for one heuristic call
HEURISTIC = "heuristic (descriptor given)"


def per_call_us(function: Callable[[], object], number: int, repeat: int = 5) -> float:
    """Microseconds per call of ``function``: the best of ``repeat`` runs of ``number`` calls."""
    return min(timeit.repeat(function, number=number, repeat=repeat)) / number * 1e6


def policy_costs(gpu: str = "V100", number: int = 20_000, repeat: int = 5) -> dict[str, float]:
    """Microseconds per call of each policy (cold variants and the model with fewer calls)."""
    device = device_descriptor(gpu)
    trips = iter(np.random.default_rng(0).integers(1, 10**8, 10**7).tolist())

    def cold(policy: Callable) -> Callable[[], object]:
        def call() -> None:
            clear_caches()
            policy(device, KernelDescriptor(next(trips), 40, 0))
        return call

    figures = {
        HEURISTIC: per_call_us(lambda: heuristic(device, KernelDescriptor(next(trips), 32, 0)), number, repeat),
        "heuristic (from GPU name)": per_call_us(lambda: choose_geometry(gpu, next(trips), 32, 0), number, repeat),
        "llvm": per_call_us(lambda: llvm_default(device, KernelDescriptor(next(trips))), number, repeat),
        "libomptarget": per_call_us(lambda: libomptarget(device, KernelDescriptor(next(trips))), number, repeat),
        "occupancy (cached resources)": per_call_us(
            lambda: occupancy_policy(device, KernelDescriptor(next(trips), 40, 0)), number, repeat),
        "heuristic (new resources: occupancy computed)": per_call_us(cold(heuristic), max(number // 10, 1), repeat),
        "occupancy (new resources: 32 sizes tried)": per_call_us(cold(occupancy_policy), max(number // 100, 1), repeat),
    }
    choose_geometry(gpu, 10**6, policy="model")  # trains the model once (not timed)
    with warnings.catch_warnings():  # a timed trip past the model's training range: its note, once per call, is
        warnings.simplefilter("ignore", GpuperfNote)  # no finding of the timing (hundreds of them in a report)
        figures["model (random forest over 32 block sizes)"] = per_call_us(
            lambda: choose_geometry(gpu, next(trips), policy="model"), max(number // 400, 1), repeat)
    return figures


def cost_table(costs: dict[str, float], kernel_times_s: np.ndarray) -> pd.DataFrame:
    """Per policy: microseconds per call and that as a share of the median and of the shortest kernel time."""
    times = np.asarray(kernel_times_s, dtype=float)
    times = times[np.isfinite(times) & (times > 0)]
    median, shortest = float(np.median(times)), float(times.min())
    return pd.DataFrame({
        "us_per_call": costs,
        "share_of_median_kernel": {name: us * 1e-6 / median for name, us in costs.items()},
        "share_of_shortest_kernel": {name: us * 1e-6 / shortest for name, us in costs.items()},
    }).rename_axis("policy")
