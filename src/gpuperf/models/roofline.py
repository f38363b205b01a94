"""The roofline bound as an estimator: time = max(flops / peak, bytes / bandwidth)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from gpuperf.errors import GpuperfError
from gpuperf.models._columns import check_positive, defined_score, measured_times, named_columns

GIGA = 1e9


class RooflineModel(RegressorMixin, BaseEstimator):
    """time = max(flops / peak + flops_f64 / peak_f64, bytes / bandwidth) / efficiency, read from
    named DataFrame columns.

    ``flops`` names the floating-point operations per launch (single precision, or all of them);
    ``flops_f64`` (optional) the double-precision ones, run at the f64 peak; ``memory_bytes`` the
    bytes moved to or from device memory. ``peak``, ``peak_f64`` (GFLOP/s) and ``bandwidth`` (GB/s)
    name the GPU descriptor columns that :func:`gpuperf.datasets.join.with_gpu_features` joins.
    Without ``calibrate`` the model is the bare bound (``efficiency_ = 1``); with it, ``fit`` sets
    ``efficiency_`` to the geometric mean of bound / measured over the training rows that have a
    bound (a launch with no flops and no bytes has none: the roofline predicts 0 s for it).
    """

    def __init__(
        self,
        flops: str = "flops",
        memory_bytes: str = "dram_bytes",
        flops_f64: str | None = None,
        peak: str = "gpu_peak_f32_gflops",
        peak_f64: str = "gpu_peak_f64_gflops",
        bandwidth: str = "gpu_memory_bandwidth_gbs",
        calibrate: bool = False,
    ):
        self.flops = flops
        self.memory_bytes = memory_bytes
        self.flops_f64 = flops_f64
        self.peak = peak
        self.peak_f64 = peak_f64
        self.bandwidth = bandwidth
        self.calibrate = calibrate

    def columns(self) -> list[str]:
        """Every column the model reads: the work columns, then the GPU descriptor's."""
        work = [self.flops, self.flops_f64, self.memory_bytes]
        descriptor = [self.peak, self.peak_f64 if self.flops_f64 else None, self.bandwidth]
        return [c for c in (*work, *descriptor) if c is not None]

    def _check_named(self) -> None:
        """An error where a column the bound needs is not named (None)."""
        needed = {"flops": self.flops, "memory_bytes": self.memory_bytes, "peak": self.peak,
                  "bandwidth": self.bandwidth}
        if self.flops_f64 is not None:
            needed["peak_f64"] = self.peak_f64
        unnamed = [role for role, column in needed.items() if column is None]
        if unnamed:
            because = " (flops_f64 is set)" if unnamed == ["peak_f64"] else ""
            raise GpuperfError(f"RooflineModel: {', '.join(unnamed)} must name a column{because}")

    def bound(self, X) -> np.ndarray:
        """The uncalibrated roofline time of each row, in seconds."""
        self._check_named()
        v = named_columns(X, {
            "flops": self.flops, "bytes": self.memory_bytes, "peak": self.peak, "bw": self.bandwidth,
            "flops_f64": self.flops_f64, "peak_f64": self.peak_f64 if self.flops_f64 else None,
        }, "RooflineModel")
        for role in ("flops", "flops_f64", "bytes"):
            values = v[role]
            negative = np.flatnonzero(values < 0) if values is not None else []
            if len(negative):
                column = {"flops": self.flops, "flops_f64": self.flops_f64, "bytes": self.memory_bytes}[role]
                raise GpuperfError(f"RooflineModel: row {int(negative[0])}: {column}={float(values[negative[0]]):g} is "
                                   "work done, which cannot be negative")
        with np.errstate(divide="ignore", invalid="ignore"):  # a zero peak: no bound (inf or NaN), not a warning
            compute = v["flops"] / (v["peak"] * GIGA)
            if v["flops_f64"] is not None:  # a GPU without a published f64 peak may still run f32 kernels
                has_f64 = v["flops_f64"] > 0
                compute = compute + np.where(has_f64, v["flops_f64"] / np.where(has_f64, v["peak_f64"] * GIGA, 1.0), 0.0)
            return np.maximum(compute, v["bytes"] / (v["bw"] * GIGA))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # a row with a missing input predicts NaN: no roofline time for it
        return tags

    def fit(self, X, y=None):
        """Check the columns; with ``calibrate``, fit the efficiency to the times ``y`` (seconds)."""
        if not isinstance(self.calibrate, (bool, np.bool_)):
            raise GpuperfError(f"RooflineModel: calibrate must be True or False, not {self.calibrate!r}")
        bound = self.bound(X)
        efficiency = 1.0
        if self.calibrate:  # checked before anything is set: a refit that fails leaves the model as it was
            times = measured_times(y, len(X), "RooflineModel")
            bounded = np.isfinite(bound) & (bound > 0)
            if not bounded.any():
                raise GpuperfError("RooflineModel: no training row has a bound (flops or bytes) to calibrate on")
            efficiency = float(np.exp(np.mean(np.log(bound[bounded] / times[bounded]))))
        self.efficiency_ = efficiency
        self.n_features_in_ = X.shape[1]
        self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        return self

    def check_fitted_values(self) -> None:
        """An error where ``efficiency_`` could not have come from :meth:`fit` (a file edited by hand)."""
        check_positive(self.efficiency_, "efficiency_", "RooflineModel")

    def predict(self, X) -> np.ndarray:
        """Predicted times in seconds: the bound over the fitted efficiency."""
        check_is_fitted(self)
        return self.bound(X) / self.efficiency_

    def score(self, X, y, sample_weight=None) -> float:
        """R^2 of the predictions (an error where a row has no roofline time)."""
        return defined_score(self, X, y, sample_weight, "RooflineModel")
