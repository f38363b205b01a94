"""gpuperf.decisions: deciding with predictions.

* :mod:`~gpuperf.decisions.exploration`: explore a variant space in predicted-best-first order
  (with other GPUs' measurements, or online from scratch), judged by evaluations to reach 90,
  95 and 99 % of the best against random order, plain transfer and Kernel Tuner's strategies;
* :mod:`~gpuperf.decisions.tune`: the same search for real, as ask/tell (:class:`GuidedSearch`) or
  measuring a catalog space's variants on a device (:func:`tune_space`), or as a Kernel Tuner
  strategy (:class:`~gpuperf.decisions.kernel_tuner_strategy.GuidedStrategy`);
* :mod:`~gpuperf.decisions.ask`: the same search from a table measured so far by any harness
  (:func:`next_configuration`);
* :mod:`~gpuperf.decisions.geometry`: choose threads per block and blocks for a parallel loop;
* :mod:`~gpuperf.decisions.advisor`: ranked optimization suggestions for a kernel
  (:func:`advise_kernel`) or a profiled launch (:func:`advise_profile`).
"""

from gpuperf._lazy import lazy_exports

# Names re-exported here, loaded on first use so that choosing a launch geometry does not import
# the learned models.
_EXPORTS = {
    "Advice": "advisor",
    "Suggestion": "advisor",
    "advise": "advisor",
    "advise_kernel": "advisor",
    "advise_profile": "advisor",
    "NextConfiguration": "ask",
    "next_configuration": "ask",
    "partly_measured": "ask",
    "ExploreResult": "exploration",
    "explore": "exploration",
    "make_explorer": "exploration",
    "plain_transfer_order": "exploration",
    "result_summary": "exploration",
    "POLICIES": "geometry",
    "DeviceDescriptor": "geometry",
    "Geometry": "geometry",
    "KernelDescriptor": "geometry",
    "choose_geometry": "geometry",
    "device_descriptor": "geometry",
    "evals_to": "search_metrics",
    "normalised_performance": "search_metrics",
    "random_expected_evals": "search_metrics",
    "Space": "space",
    "read_space": "space",
    "space_from_frame": "space",
    "transfer_matrix": "space",
    "GuidedSearch": "tune",
    "TuneResult": "tune",
    "tune_space": "tune",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
