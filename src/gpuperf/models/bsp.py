"""Amaris et al.'s BSP-based analytical model of a GPU kernel's execution time."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from gpuperf.errors import GpuperfError
from gpuperf.models._columns import (
    check_positive, defined_score, fractions, measured_times, named_columns, real_number,
)


# The latencies, in cycles; and the inputs every BSP time needs (the others count as 0 when None).
LATENCIES = ("global_latency", "l1_latency", "l2_latency", "shared_latency")
REQUIRED_COLUMNS = ("threads", "instructions", "global_loads", "global_stores", "clock_hz", "cores")


class BspModel(RegressorMixin, BaseEstimator):
    """T = t * (comp + comm_GM + comm_SM) / (R * P * lambda), per Amaris et al.

    Per thread: ``comp = instructions * cycles_per_instruction``;
    ``comm_GM = (ld + st - L1 - L2) * global_latency + L1 * l1_latency + L2 * l2_latency`` where
    ``ld``, ``st`` are the global loads and stores, ``L1 = h1 * (ld + st)`` the L1 hits and
    ``L2 = h2 * (ld + st - L1)`` the L2 hits (``h1``, ``h2``: hit fractions in [0, 1]; a column
    named None counts as 0); ``comm_SM = (shared loads + shared stores) * shared_latency``.
    ``t`` is the number of threads, ``R`` the clock rate in Hz, ``P`` the number of cores.
    Latencies are in cycles (defaults: the paper's 5 for shared memory and L1, 500 for global
    memory, 250 for L2); each cost is a finite number of at least 0, checked when fitting and predicting.

    Inputs are read by column name from a DataFrame (profiler counters or static counts turned
    into per-thread numbers). ``fit`` calibrates ``lambda_``: the geometric mean over the given
    rows of the uncalibrated prediction divided by the measured time; the paper calibrates on one
    input size on one board, so pass just those rows.
    """

    def __init__(
        self,
        threads: str = "threads",
        instructions: str = "instructions",
        global_loads: str = "global_loads",
        global_stores: str = "global_stores",
        shared_loads: str | None = None,
        shared_stores: str | None = None,
        l1_hit_rate: str | None = None,
        l2_hit_rate: str | None = None,
        clock_hz: str = "gpu_clock_hz",
        cores: str = "gpu_cores",
        cycles_per_instruction: float = 1.0,
        global_latency: float = 500.0,
        l1_latency: float = 5.0,
        l2_latency: float = 250.0,
        shared_latency: float = 5.0,
    ):
        self.threads = threads
        self.instructions = instructions
        self.global_loads = global_loads
        self.global_stores = global_stores
        self.shared_loads = shared_loads
        self.shared_stores = shared_stores
        self.l1_hit_rate = l1_hit_rate
        self.l2_hit_rate = l2_hit_rate
        self.clock_hz = clock_hz
        self.cores = cores
        self.cycles_per_instruction = cycles_per_instruction
        self.global_latency = global_latency
        self.l1_latency = l1_latency
        self.l2_latency = l2_latency
        self.shared_latency = shared_latency

    def _check_parameters(self) -> None:
        """An error where a cost is not a finite number of at least 0 (cycles per instruction, latencies in
        cycles) or an input every BSP time needs names no column (None)."""
        for name in ("cycles_per_instruction", *LATENCIES):
            value = getattr(self, name)
            if not real_number(value) or not 0 <= value < np.inf:
                raise GpuperfError(f"BspModel: {name} must be a finite number of at least 0 (cycles), got {value!r}")
        unnamed = [role for role in REQUIRED_COLUMNS if getattr(self, role) is None]
        if unnamed:
            raise GpuperfError(f"BspModel: {', '.join(unnamed)} must name a column")

    def cycles(self, X) -> np.ndarray:
        """Per-thread cycles ``comp + comm_GM + comm_SM`` for each row."""
        self._check_parameters()
        v = named_columns(X, self._column_names(), "BspModel")
        return self._cycles(v, len(X))

    def _cycles(self, v: dict, n_rows: int) -> np.ndarray:
        zero = np.zeros(n_rows)
        accesses = v["global_loads"] + v["global_stores"]
        l1_hits = (v["l1_hit_rate"] if v["l1_hit_rate"] is not None else zero) * accesses
        l2_hits = (v["l2_hit_rate"] if v["l2_hit_rate"] is not None else zero) * (accesses - l1_hits)
        comp = v["instructions"] * self.cycles_per_instruction
        comm_gm = (
            (accesses - l1_hits - l2_hits) * self.global_latency
            + l1_hits * self.l1_latency
            + l2_hits * self.l2_latency
        )
        shared = sum(v[role] if v[role] is not None else zero for role in ("shared_loads", "shared_stores"))
        return comp + comm_gm + shared * self.shared_latency

    def uncalibrated_time(self, X) -> np.ndarray:
        """``t * cycles / (R * P)``: the prediction with lambda = 1, in seconds."""
        self._check_parameters()
        v = named_columns(X, self._column_names(), "BspModel")
        time = v["threads"] * self._cycles(v, len(X)) / (v["clock"] * v["cores"])
        for rate in (v["l1_hit_rate"], v["l2_hit_rate"]):  # no time from more hits than accesses, or fewer than none
            if rate is not None:
                time = np.where((rate < 0) | (rate > 1), np.nan, time)
        return time

    def undefined_rows(self, X) -> np.ndarray:
        """Rows whose inputs give no positive, finite time (zero counts, a missing clock, ...)."""
        return _undefined(self.uncalibrated_time(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # a row with a missing input predicts NaN: no BSP time for it
        return tags

    def fit(self, X, y):
        """Calibrate ``lambda_`` on the measured times ``y`` (seconds) of the rows of DataFrame ``X``."""
        self._check_parameters()
        v = named_columns(X, self._column_names(), "BspModel")  # first: X is a DataFrame from here on
        if len(X) == 0:
            raise GpuperfError("BspModel: no rows to fit")
        measured = measured_times(y, len(X), "BspModel")
        fractions(v["l1_hit_rate"], X, self.l1_hit_rate, "BspModel")
        fractions(v["l2_hit_rate"], X, self.l2_hit_rate, "BspModel")
        time = self.uncalibrated_time(X)
        bad = _undefined(time)
        if bad.any():
            position = int(np.flatnonzero(bad)[0])
            raise GpuperfError(
                f"BspModel: row {position + 1} of the fitted rows: its inputs give a non-positive or "
                f"undefined time ({int(bad.sum())} such rows); check the counts"
            )
        self.lambda_ = float(np.exp(np.mean(np.log(time / measured))))
        self.n_features_in_ = X.shape[1]
        self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        return self

    def check_fitted_values(self) -> None:
        """An error where ``lambda_`` could not have come from :meth:`fit` (a file edited by hand)."""
        check_positive(self.lambda_, "lambda_", "BspModel")

    def predict(self, X) -> np.ndarray:
        """Predicted times in seconds: the BSP cost of each row over the calibrated lambda; NaN for a
        row whose inputs give no positive time (see :meth:`undefined_rows`)."""
        check_is_fitted(self)
        time = self.uncalibrated_time(X)
        return np.where(_undefined(time), np.nan, time / self.lambda_)

    def score(self, X, y, sample_weight=None) -> float:
        """R^2 of the predictions (an error where a row has no BSP time)."""
        return defined_score(self, X, y, sample_weight, "BspModel")

    def _column_names(self) -> dict[str, str | None]:
        return {
            "threads": self.threads,
            "clock": self.clock_hz,
            "cores": self.cores,
            "instructions": self.instructions,
            "global_loads": self.global_loads,
            "global_stores": self.global_stores,
            "shared_loads": self.shared_loads,
            "shared_stores": self.shared_stores,
            "l1_hit_rate": self.l1_hit_rate,
            "l2_hit_rate": self.l2_hit_rate,
        }


def _undefined(time: np.ndarray) -> np.ndarray:
    return ~(np.isfinite(time) & (time > 0))
