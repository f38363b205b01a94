"""gpuperf.decisions: deciding with predictions.

* :mod:`~gpuperf.decisions.explore`: explore a variant space in predicted-best-first order
  (with other GPUs' measurements, or online from scratch), judged by evaluations to reach 90,
  95 and 99 % of the best against random order, plain transfer and Kernel Tuner's strategies;
* :mod:`~gpuperf.decisions.tune`: the same search for real, as ask/tell (:class:`GuidedSearch`) or
  measuring a catalog space's variants on a device (:func:`tune_space`), or as a Kernel Tuner
  strategy (:class:`~gpuperf.decisions.kernel_tuner_strategy.GuidedStrategy`);
* :mod:`~gpuperf.decisions.geometry`: choose threads per block and blocks for a parallel loop;
* :mod:`~gpuperf.decisions.advise`: ranked optimization suggestions for a kernel
  (:func:`advise_kernel`) or a profiled launch (:func:`advise_profile`).
"""

from gpuperf.decisions.advise import Advice, Suggestion, advise, advise_kernel, advise_profile
from gpuperf.decisions.explore import ExploreResult, explore, make_explorer, plain_transfer_order, result_summary
from gpuperf.decisions.geometry import (
    POLICIES,
    DeviceDescriptor,
    Geometry,
    KernelDescriptor,
    choose_geometry,
    device_descriptor,
)
from gpuperf.decisions.search_metrics import evals_to, normalised_performance, random_expected_evals
from gpuperf.decisions.space import Space, read_space, space_from_frame, transfer_matrix
from gpuperf.decisions.tune import GuidedSearch, TuneResult, tune_space

__all__ = [
    "POLICIES",
    "Advice",
    "Suggestion",
    "advise",
    "advise_kernel",
    "advise_profile",
    "DeviceDescriptor",
    "ExploreResult",
    "Geometry",
    "GuidedSearch",
    "KernelDescriptor",
    "Space",
    "TuneResult",
    "choose_geometry",
    "device_descriptor",
    "evals_to",
    "explore",
    "make_explorer",
    "normalised_performance",
    "plain_transfer_order",
    "random_expected_evals",
    "read_space",
    "result_summary",
    "space_from_frame",
    "transfer_matrix",
    "tune_space",
]
