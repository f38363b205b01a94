"""How alike two GPUs are by their descriptors (gpus.toml), as prior weights of other GPUs' data.

The distance between GPUs ``a`` and ``b`` is the square root of: the mean squared difference of
their log descriptors (SMs, FP32 lanes per SM, boost clock, memory bandwidth, L2 size, shared
memory per SM, peak FP32), each scaled by its standard deviation over ``SPREAD_GPUS`` (the 26 GPUs
gpuperf described when ``SCALE`` was chosen: a fixed unit, so that describing more GPUs does not
move the prior), plus 1 for another vendor and 1 for another architecture (case, '-', '_' and spaces
aside). A GPU at distance ``d`` beyond the nearest
weighs ``exp(-(d - nearest)^2 / (2 * scale^2))``. GPUs gpuperf does not know give no prior
(equal weights).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from gpuperf.hardware.specs import GpuSpec, canonical_gpu_name, descriptors_state, get_gpu, normalize_name

DESCRIPTORS = (
    "sms",
    "cores_per_sm",
    "boost_clock_mhz",
    "memory_bandwidth_gbs",
    "l2_bytes",
    "shared_memory_per_sm_bytes",
    "peak_f32_gflops",
)
SCALE = 0.5  # prior width in distance units (one setting for every space)
# The GPUs whose descriptor spread is the distance unit (gpus.toml as SCALE was chosen on it).
SPREAD_GPUS = (
    "GTX 680", "Tesla K40", "Tesla K20", "GTX Titan", "Quadro K5200", "GTX Titan X", "GTX 970", "GTX 980",
    "Tesla P100 SXM2", "Tesla P100 PCIe 12GB", "GTX 1080 Ti", "Tesla V100 PCIe 32GB", "RTX 2070 Super",
    "Titan RTX", "RTX 2080 Ti", "RTX 3090", "RTX 3060 Laptop", "RTX A4000", "RTX A6000", "A100 PCIe 40GB",
    "H100 SXM", "H200", "Instinct MI50", "Instinct MI250X GCD", "Radeon PRO W6600", "Radeon PRO W7800",
)


def _log_descriptors(spec: GpuSpec) -> np.ndarray:
    return np.array([math.log(getattr(spec, name)) for name in DESCRIPTORS])


def _spread() -> np.ndarray:
    """The standard deviation of each log descriptor over ``SPREAD_GPUS`` as described now (a user's
    ``GPUPERF_GPUS`` entry may replace one of them: read again when the variable or its files change)."""
    return _spread_for(descriptors_state())


@functools.cache
def _spread_for(state: tuple) -> np.ndarray:
    """:func:`_spread`; ``state`` (:func:`descriptors_state`) is part of the cache's key alone."""
    values = np.array([_log_descriptors(get_gpu(name)) for name in SPREAD_GPUS])
    spread = values.std(axis=0)
    return np.where(spread > 0, spread, 1.0)


def gpu_distance(a: str, b: str) -> float:
    """Descriptor distance between two known GPUs (names or aliases)."""
    first, second = get_gpu(a), get_gpu(b)
    scaled = (_log_descriptors(first) - _log_descriptors(second)) / _spread()
    # one architecture spelt two ways (a user's "ada lovelace", gpus.toml's "Ada Lovelace") is one
    other_architecture = normalize_name(first.architecture) != normalize_name(second.architecture)
    mismatch = (first.vendor != second.vendor) + other_architecture
    return math.sqrt(float(np.mean(scaled**2)) + mismatch)


def prior_weights(target: str | None, others: Sequence[str | None], scale: float = SCALE) -> np.ndarray:
    """Weights (summing to 1) of ``others`` for ``target``: alike GPUs weigh more; equal
    weights when any of the GPUs is unnamed or unknown to gpuperf."""
    count = len(others)
    if count == 0:
        return np.empty(0)
    names = [target, *others]
    if any(canonical_gpu_name(name) is None for name in names):
        return np.full(count, 1.0 / count)
    distance = np.array([gpu_distance(target, other) for other in others])
    weights = np.exp(-((distance - distance.min()) ** 2) / (2 * scale**2))
    return weights / weights.sum()
