"""The feature vector the optimization advisor sees: one vocabulary for every source of pairs.

A "before" kernel is described by a few of gpuperf's static features (names as in
``gpuperf.features``), two derived ratios, what the optimization changes in them (``change_*``:
log2(1 + after) - log2(1 + before) of each, NaN where the after kernel is unknown), and the target
GPU's descriptor. Every source of
training pairs fills these names: loopy kernels through ``extract_features``, tuning-space
configurations through their own formulas (``gpuperf.decisions.program_features``), a profiler row
through its counters (``gpuperf.decisions.profile``). Features count per work-item (thread) and
per launch, not per cycle: only the profiler knows cycles, and no measured before/after pair
carries counters. Names a source cannot fill are NaN; the
models impute them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from gpuperf.kernels.kernel import Kernel

# Static features taken as they are from ``extract_features``.
STATIC_FEATURES = (
    "threads",
    "work_groups",
    "work_group_size",
    "global_loads_per_thread",
    "global_stores_per_thread",
    "local_loads_per_thread",
    "local_stores_per_thread",
    "local_memory_bytes",
    "flops_per_thread",
    "cache_lines_per_warp_access",
    "sectors_per_warp_access",
    "barriers_per_thread",
    "loop_iterations_per_thread",
)
# Ratios derived from them (``add_derived``).
DERIVED_FEATURES = ("arithmetic_intensity", "local_per_global_access")
ADVICE_FEATURES = STATIC_FEATURES + DERIVED_FEATURES
# What the optimization changes: the after kernel's features against the before kernel's.
CHANGE_FEATURES = tuple(f"change_{name}" for name in ADVICE_FEATURES)
# The GPU descriptor's numbers the models use.
GPU_FEATURES = (
    "gpu_sms",
    "gpu_boost_clock_mhz",
    "gpu_memory_bandwidth_gbs",
    "gpu_l2_bytes",
    "gpu_shared_memory_per_sm_bytes",
    "gpu_peak_f32_gflops",
    "gpu_flops_per_byte",
    "gpu_compute_capability",
)
MODEL_FEATURES = ADVICE_FEATURES + CHANGE_FEATURES + GPU_FEATURES
# Features an entry's ``applies_when`` may use besides the models' (no source of training pairs fills
# them): the most lines one access touches, where the average over accesses hides a scattered one, and
# the most sectors one access touches over the fewest its bytes fit in (a float4 access touching 16
# sectors, or 8-wide rows of 32 bytes, are coalesced).
CONDITION_FEATURES = ("max_cache_lines_per_warp_access", "max_sectors_over_fewest")
# Features judged on the global accesses gpuperf can analyse only; ``ANALYSABLE`` is their share (by
# warp requests), so below 1 the others (an index array's gather or scatter, say) are not in them.
PER_ACCESS_FEATURES = ("cache_lines_per_warp_access", "sectors_per_warp_access", *CONDITION_FEATURES)
ANALYSABLE = "analysable_access_fraction"
SECTORS_OF_32_FLOATS = 4  # 32 lanes x 4 bytes in 32-byte sectors
FLOAT_BYTES = 4


def with_condition_features(features: Mapping[str, float]) -> dict[str, float]:
    """``features`` with the condition features a source lacks: where the most lines of one access is
    not known (a profile's counters give only the average), the average stands for it (the most is
    at least that); where the sectors over the fewest are not known, the average sectors over the 4
    that 32 lanes of 4-byte elements need stand for them, else the most lines (a line holds 32 such
    lanes)."""
    filled = dict(features)

    def unknown(name: str) -> bool:
        return filled.get(name) is None or pd.isna(filled.get(name))

    if unknown("max_cache_lines_per_warp_access"):
        filled["max_cache_lines_per_warp_access"] = filled.get("cache_lines_per_warp_access", math.nan)
    if unknown("max_sectors_over_fewest"):
        sectors = filled.get("sectors_per_warp_access")
        known = sectors is not None and not pd.isna(sectors)
        filled["max_sectors_over_fewest"] = (sectors / SECTORS_OF_32_FLOATS if known
                                             else filled["max_cache_lines_per_warp_access"])
    return filled


def add_derived(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the derived ratios computed from its static columns (NaN where missing)."""
    frame = frame.copy()
    missing = pd.Series(math.nan, index=frame.index)
    loads = frame.get("global_loads_per_thread", missing)
    stores = frame.get("global_stores_per_thread", missing)
    global_accesses = loads + stores
    flops = frame.get("flops_per_thread", missing)
    local = frame.get("local_loads_per_thread", missing) + frame.get("local_stores_per_thread", missing)
    frame["arithmetic_intensity"] = flops / (FLOAT_BYTES * global_accesses).where(global_accesses > 0)
    frame["local_per_global_access"] = local / global_accesses.where(global_accesses > 0)
    return frame


def _log2_1p(values: pd.Series) -> pd.Series:
    values = pd.to_numeric(values, errors="coerce")
    return np.sign(values) * np.log2(1 + values.abs())


def change_features(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """``change_*`` of each row: log2(1 + after) - log2(1 + before) per advice feature (sign kept)."""
    out = pd.DataFrame(index=before.index)
    for name, change in zip(ADVICE_FEATURES, CHANGE_FEATURES):
        if name in before and name in after:
            out[change] = _log2_1p(after[name]).to_numpy() - _log2_1p(before[name]).to_numpy()
        else:
            out[change] = math.nan
    return out


def gpu_features(gpu: str | None) -> dict[str, float]:
    """The descriptor numbers of ``gpu`` (NaN for every one when ``gpu`` is None)."""
    if gpu is None:
        return dict.fromkeys(GPU_FEATURES, math.nan)
    from gpuperf.hardware.specs import get_gpu

    described = get_gpu(gpu).as_features()
    return {name: described.get(name, math.nan) for name in GPU_FEATURES}


def with_gpu_features(frame: pd.DataFrame, gpu_column: str = "gpu") -> pd.DataFrame:
    """``frame`` with the GPU features of each row's GPU (NaN where gpuperf has no descriptor)."""
    from gpuperf.errors import GpuperfError

    frame = frame.copy()
    table = {}
    for name in frame[gpu_column].dropna().unique():
        try:
            table[name] = gpu_features(str(name))
        except GpuperfError:
            table[name] = gpu_features(None)
    for feature in GPU_FEATURES:
        frame[feature] = frame[gpu_column].map(lambda g, f=feature: table.get(g, {}).get(f, math.nan))
    return frame


def kernel_features(kernel: Kernel, sizes: Mapping[str, Any] | None = None) -> dict[str, float]:
    """The advice features of a gpuperf kernel at ``sizes`` (static analysis, no device), with the
    condition features and the share of global accesses analysed (``ANALYSABLE``)."""
    from gpuperf.features import extract_features

    static = extract_features(kernel, sizes)
    row = pd.DataFrame([{name: static.get(name, math.nan) for name in STATIC_FEATURES}])
    derived = {k: float(v) for k, v in add_derived(row).iloc[0].items()}
    return {**derived, **{name: float(static.get(name, math.nan)) for name in (*CONDITION_FEATURES, ANALYSABLE)}}


def kernel_change_features(kernel: Kernel, after: Kernel, sizes: Mapping[str, Any] | None = None) -> dict[str, float]:
    """``change_*`` of turning ``kernel`` into ``after`` (another variant) at ``sizes``."""
    before_row = pd.DataFrame([kernel_features(kernel, sizes)])
    after_row = pd.DataFrame([kernel_features(after, sizes)])
    return {k: float(v) for k, v in change_features(before_row, after_row).iloc[0].items()}
