"""The roofline bound as an estimator: time = max(flops / peak, bytes / bandwidth)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from gpuperf.errors import GpuperfError
from gpuperf.models._columns import named_columns


class RooflineModel(RegressorMixin, BaseEstimator):
    """time = max(flops / peak, bytes / bandwidth) / efficiency, read from named DataFrame columns.

    ``flops`` and ``memory_bytes`` name the work columns (floating-point operations, bytes moved to or
    from device memory); ``peak`` (flop/s) and ``bandwidth`` (bytes/s) name GPU descriptor
    columns joined to the table. Without ``calibrate`` the model is the bare bound
    (``efficiency_ = 1``); with it, ``fit`` sets ``efficiency_`` to the geometric mean of
    bound / measured over the training rows.
    """

    def __init__(
        self,
        flops: str = "flops",
        memory_bytes: str = "dram_bytes",
        peak: str = "gpu_peak_flops",
        bandwidth: str = "gpu_bandwidth_bytes_s",
        calibrate: bool = False,
    ):
        self.flops = flops
        self.memory_bytes = memory_bytes
        self.peak = peak
        self.bandwidth = bandwidth
        self.calibrate = calibrate

    def bound(self, X) -> np.ndarray:
        """The uncalibrated roofline time of each row, in seconds."""
        v = named_columns(
            X, {"flops": self.flops, "bytes": self.memory_bytes, "peak": self.peak, "bw": self.bandwidth}, "RooflineModel"
        )
        return np.maximum(v["flops"] / v["peak"], v["bytes"] / v["bw"])

    def fit(self, X, y=None):
        bound = self.bound(X)
        self.efficiency_ = 1.0
        if self.calibrate:
            measured = np.asarray(y, dtype=float)
            ratio = bound / measured
            if len(measured) != len(X) or not np.all(np.isfinite(ratio) & (ratio > 0)):
                raise GpuperfError("RooflineModel: calibration needs positive times and positive bounds")
            self.efficiency_ = float(np.exp(np.mean(np.log(ratio))))
        self.n_features_in_ = X.shape[1]
        self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        return self

    def predict(self, X) -> np.ndarray:
        check_is_fitted(self)
        return self.bound(X) / self.efficiency_
