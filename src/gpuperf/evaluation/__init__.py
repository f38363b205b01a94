"""gpuperf.evaluation: metrics, evaluation protocols, reports, and the Amaris et al. reproduction.

- ``metrics``: MAPE, median APE, geometric-mean relative error, within 0.8-1.2x, Spearman, Kendall,
  top-k overlap;
- ``protocols``: leave one GPU / kernel / size out, fit on chosen kernels; each returns an
  :class:`Evaluation` (per-row predictions, metrics per group and overall);
- ``report``: Markdown/HTML/JSON reports with plots;
- ``tables``: GPU descriptors joined to datasets, derived per-launch columns;
- ``feature_columns``: which columns of a table are features when none are named;
- ``reproduce`` / ``bsp_matvec``: the Rodinia and matrix/vector reproductions
  (``python benchmarks/bench_rodinia.py`` prints the figures).
"""

from gpuperf._lazy import lazy_exports

# Names re-exported here, loaded on first use so that importing one evaluation module stays cheap.
_EXPORTS = {
    "all_metrics": "metrics",
    "geometric_mean_relative_error": "metrics",
    "mape": "metrics",
    "median_ape": "metrics",
    "Evaluation": "protocols",
    "fit_on_kernels": "protocols",
    "leave_one_gpu_out": "protocols",
    "leave_one_group_out": "protocols",
    "leave_one_kernel_out": "protocols",
    "leave_one_size_out": "protocols",
    "split_evaluation": "protocols",
    "write_report": "report",
    "counter_columns": "tables",
    "default_features": "feature_columns",
    "join_gpu_descriptors": "tables",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
