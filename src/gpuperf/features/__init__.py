"""gpuperf.features: static features of a kernel, computed from the kernel alone.

``extract_features(kernel, sizes, gpu=None)`` and ``feature_table(kernels, sizes_list)`` live in
``gpuperf.features.table``; the symbolic counts behind them in ``counts`` (with the fast IR path
in ``fastcount``), cache lines per warp in ``access``, registers in ``resources`` and occupancy in
``occupancy``. Names are imported lazily so that ``gpuperf.features.occupancy`` stays light.
"""

from gpuperf._lazy import lazy_exports

_EXPORTS = {
    "extract_features": "table",
    "feature_table": "table",
    "FEATURES": "table",
    "features_markdown": "table",
    "symbolic_counts": "counts",
    "SymbolicCounts": "counts",
    "warp_access_summary": "access",
    "warp_accesses": "access",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
