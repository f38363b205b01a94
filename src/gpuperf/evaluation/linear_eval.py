"""Held-out evaluation of the linear count model on one device.

The model is calibrated on the measurement kernels (``gpuperf.models.linear_calibration``) and
tested on kernels it never saw: the test kernels and the LIFT stencils, each at three sizes. Both
sets are measured into the same store (resumable, reused on the next run). The figure of merit is
the geometric-mean relative error per kernel, exp(mean |ln(predicted / measured)|) - 1, as the
Loopy performance-model paper reports it (0.06 to 0.42 per GPU there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from gpuperf.models.linear_calibration import (
    CALIBRATION_PLANS,
    Calibration,
    calibrate,
    device_info,
    fit_calibration,
    measure_plan,
    per_kernel_gmre,
    property_choice,
    restrict_plan,
    with_properties,
)


def _sizes(**lists: Sequence[int]) -> list[dict[str, int]]:
    keys = list(lists)
    return [dict(zip(keys, values)) for values in zip(*lists.values())]


_STENCILS = ("stencil2d", "jacobi2d_5pt", "jacobi2d_9pt", "gaussian_5x5", "gradient", "srad1", "srad2", "hotspot2d")


def _held_out_plan(scale: int) -> dict[str, list[dict[str, int]]]:
    s = scale
    plan = {
        "finite_difference_5pt": _sizes(n=[144 * s, 272 * s, 528 * s], m=[1040, 1040, 1040]),
        "skinny_matmul": _sizes(n=[256 * s, 512 * s, 1024 * s], m=[64, 256, 256]),
        "nbody": _sizes(n=[256 * s, 384 * s, 512 * s]),
        "convolution_2d": _sizes(n=[64 * s, 128 * s, 256 * s], m=[256, 256, 256]),
        "element_local_diff": _sizes(nelements=[256 * s, 2048 * s, 8192 * s]),
    }
    for name in _STENCILS:
        plan[name] = _sizes(n=[128 * s, 256 * s, 256 * s], m=[512, 512, 1024])
    return plan


HELD_OUT_PLANS: dict[str, dict[str, list[dict[str, int]]]] = {"cpu": _held_out_plan(1), "gpu": _held_out_plan(16)}


@dataclass
class LinearEvaluation:
    calibration: Calibration
    held_out: pd.DataFrame  # kernel, sizes, time_s, properties, predicted_s

    def in_sample(self) -> pd.Series:
        """Per-kernel geometric-mean relative error on the calibration kernels."""
        return self.calibration.per_kernel_error()

    def held_out_error(self) -> pd.Series:
        """Per-kernel geometric-mean relative error on the held-out kernels."""
        return per_kernel_gmre(self.held_out, "time_s", "predicted_s")

    def summary(self) -> dict[str, float]:
        inside, outside = self.in_sample(), self.held_out_error()
        return {
            "in_sample_kernels": int(len(inside)),
            "in_sample_mean_gmre": float(inside.mean()),
            "in_sample_median_gmre": float(inside.median()),
            "held_out_kernels": int(len(outside)),
            "held_out_mean_gmre": float(outside.mean()),
            "held_out_median_gmre": float(outside.median()),
            "held_out_worst_gmre": float(outside.max()),
        }


def evaluate_linear_model(device: str, store: str | Path, passes: int = 3,
                          calibration_kernels: Sequence[str] | None = None,
                          held_out_kernels: Sequence[str] | None = None,
                          property_set: str | None = None, statistic: str = "min",
                          progress: bool = False, cycles: int = 1) -> LinearEvaluation:
    """Calibrate on ``device`` and predict the held-out kernels measured on the same device.

    With ``cycles`` above 1 the calibration and held-out points are timed in one interleaved
    campaign, so the model is tested on times taken under the same machine states as its fit's."""
    info = device_info(device)
    plan = restrict_plan(HELD_OUT_PLANS[info.device_class], held_out_kernels)
    if cycles == 1:
        calibration = calibrate(device, store, kernels=calibration_kernels, passes=passes,
                                property_set=property_set, statistic=statistic, progress=progress)
        measured = measure_plan(plan, info.name, store, f"linear-held-out-{info.device_class}", passes, statistic,
                                progress)
    else:
        property_choice(info, property_set)  # a bad name fails before anything is measured
        fitting = restrict_plan(CALIBRATION_PLANS[info.device_class], calibration_kernels)
        both = measure_plan({**fitting, **plan}, info.name, store, f"linear-evaluation-{info.device_class}",
                            statistic=statistic, progress=progress, cycles=cycles)
        timing = {"statistic": statistic, "passes": 1, "cycles": cycles}
        calibration = fit_calibration(both[both["kernel"].isin(fitting)].reset_index(drop=True), info, store,
                                      property_set, timing=timing)
        measured = both[both["kernel"].isin(plan)].reset_index(drop=True)
    data = with_properties(measured, calibration.model.property_names_)
    data["predicted_s"] = calibration.model.predict(data)
    return LinearEvaluation(calibration, data)
