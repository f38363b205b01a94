"""gpuperf.features: static features of a kernel, computed from the kernel alone.

``extract_features(kernel, sizes, gpu=None)`` and ``feature_table(kernels, sizes_list)`` live in
``gpuperf.features.table``; the symbolic counts behind them in ``counts`` (with the fast IR path
in ``fastcount``), cache lines per warp in ``access``, registers in ``resources`` and occupancy in
``occupancy``. Names are imported lazily so that ``gpuperf.features.occupancy`` stays light.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "extract_features": "gpuperf.features.table",
    "feature_table": "gpuperf.features.table",
    "FEATURES": "gpuperf.features.table",
    "features_markdown": "gpuperf.features.table",
    "symbolic_counts": "gpuperf.features.counts",
    "SymbolicCounts": "gpuperf.features.counts",
    "warp_access_summary": "gpuperf.features.access",
    "warp_accesses": "gpuperf.features.access",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'gpuperf.features' has no attribute '{name}'")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name]), name)
