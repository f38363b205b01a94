"""Held-out evaluation of the linear count model on one device.

The model is calibrated on the measurement kernels (``gpuperf.models.linear_calibration``) and
tested on kernels it never saw: the test kernels and the LIFT stencils, each at three sizes. Both
sets are measured into the same store (resumable, reused on the next run). The figure of merit is
the geometric-mean relative error per kernel, exp(mean |ln(predicted / measured)|) - 1, as the
Loopy performance-model paper reports it (0.06 to 0.42 per GPU there; this is the stricter reading: a
geometric mean of |predicted - measured| / measured over the same predictions is never larger).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gpuperf.errors import GpuperfError, GpuperfNote
from gpuperf.models.linear_calibration import (
    CALIBRATION_PLANS,
    STATISTICS,
    Calibration,
    DeviceInfo,
    calibrate,
    combine_measured,
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
                          progress: bool = False, cycles: int = 1,
                          properties: Sequence[str] | None = None) -> LinearEvaluation:
    """Calibrate on ``device`` and predict the held-out kernels measured on the same device
    (``properties``, when given, name the model's properties instead of ``property_set``'s).

    With ``cycles`` above 1 the calibration and held-out points are timed in one interleaved
    campaign, so the model is tested on times taken under the same machine states as its fit's."""
    info = device_info(device)
    plan = restrict_plan(HELD_OUT_PLANS[info.device_class], held_out_kernels)
    if cycles == 1:
        calibration = calibrate(device, store, kernels=calibration_kernels, passes=passes,
                                property_set=property_set, properties=properties, statistic=statistic,
                                progress=progress)
        measured = measure_plan(plan, info.name, store, f"linear-held-out-{info.device_class}", passes, statistic,
                                progress)
    else:
        property_choice(info, property_set, properties)  # a bad name fails before anything is measured
        fitting = restrict_plan(CALIBRATION_PLANS[info.device_class], calibration_kernels)
        both = measure_plan({**fitting, **plan}, info.name, store, f"linear-evaluation-{info.device_class}",
                            statistic=statistic, progress=progress, cycles=cycles)
        timing = {"statistic": statistic, "passes": 1, "cycles": cycles}
        calibration = fit_calibration(both[both["kernel"].isin(fitting)].reset_index(drop=True), info, store,
                                      property_set, properties, timing=timing)
        measured = both[both["kernel"].isin(plan)].reset_index(drop=True)
    return _predicted(calibration, measured)


def _predicted(calibration: Calibration, measured: pd.DataFrame) -> LinearEvaluation:
    data = with_properties(measured, calibration.model.property_names_)
    data["predicted_s"] = calibration.model.predict(data)
    return LinearEvaluation(calibration, data)


def evaluate_linear_table(table: pd.DataFrame | str | Path, device_class: str | None = "gpu",
                          property_set: str | None = None, statistic: str = "min",
                          properties: Sequence[str] | None = None) -> LinearEvaluation:
    """The held-out evaluation of :func:`evaluate_linear_model` on points already measured (a table
    as :func:`calibrate_from_table` takes it), its device of class ``device_class``."""
    measured, info, source = _measured_table(table, device_class, statistic)
    calibration = _fit_table(measured, info, source, info.device_class, property_set, properties, statistic)
    return _predicted(calibration, measured[measured["kernel"].isin(HELD_OUT_PLANS[info.device_class])]
                      .reset_index(drop=True))


def calibrate_from_table(table: pd.DataFrame | str | Path, device_class: str | None = "gpu",
                         property_set: str | None = None, statistic: str = "min",
                         properties: Sequence[str] | None = None) -> Calibration:
    """The linear count model fitted on the calibration points of a table measured before, such as
    ``campaign export`` writes (``kernel``, one column per size parameter, ``time_s``, ``time_s_min``,
    ``status``; e.g. the bundled ``data/linear_model_h100.csv.gz``), its device of class
    ``device_class`` (None: the class gpuperf's calibration campaigns name in its ``campaign`` column,
    ``linear-calibration-cpu``, else gpu): a model of a GPU for a machine without it. Points outside the class's
    calibration plan are ignored, as is a row of a user's kernel (its ``kernel`` or ``kernel_spec`` naming
    a ``file.py``), whatever its name, never run, and a row of a space's variant (a non-empty ``variant``,
    ``kernel_spec`` ``stencil2d[local_x=...]``), which is not its plain kernel; ``properties`` names the
    model's properties instead of ``property_set``'s."""
    measured, info, source = _measured_table(table, device_class, statistic)
    return _fit_table(measured, info, source, info.device_class, property_set, properties, statistic)


def _fit_table(measured: pd.DataFrame, info: DeviceInfo, source: str, device_class: str,
               property_set: str | None, properties: Sequence[str] | None, statistic: str) -> Calibration:
    fitting = measured[measured["kernel"].isin(CALIBRATION_PLANS[device_class])].reset_index(drop=True)
    _, names = property_choice(info, property_set, properties)
    if len(fitting) < len(names):
        raise GpuperfError(
            f"{source}: {len(fitting)} calibration points ({fitting['kernel'].nunique()} kernels) for "
            f"{len(names)} properties; a fit needs at least one point per property: rows of the {device_class} "
            "class's calibration kernels at their planned sizes, as a calibration campaign's export holds them")
    return fit_calibration(fitting, info, source, property_set, properties,
                           timing={"statistic": statistic, "table": source})


CAMPAIGN_CLASS = re.compile(r"linear-(?:calibration|held-out|evaluation)-(cpu|gpu)(?:-.*)?")


def campaign_device_class(frame: pd.DataFrame, source: str) -> str | None:
    """The device class gpuperf's own calibration campaigns name in ``frame``'s ``campaign`` column
    (``linear-calibration-cpu-pass1``: cpu), with a note where it is not gpu; None where they name none, or two."""
    if "campaign" not in frame.columns:
        return None
    names = frame["campaign"].dropna().astype(str).str.strip().unique()
    found = {match.group(1) for match in map(CAMPAIGN_CLASS.fullmatch, names) if match}
    if len(found) != 1:
        return None
    device_class = found.pop()
    if device_class != "gpu":  # the default class needs no word
        warnings.warn(GpuperfNote(f"{source}: points of gpuperf's {device_class} calibration campaigns (campaign "
                                  f"{', '.join(sorted(names))}): fitted as a {device_class} device's (--device-class "
                                  "names another class)"), stacklevel=4)
    return device_class


def table_device_class(table: str | Path) -> str:
    """The device class of a calibration table's points: as :func:`campaign_device_class` reads it, else gpu."""
    from gpuperf.datasets.bundled import data_table
    from gpuperf.datasets.tables import read_table_file

    return campaign_device_class(read_table_file(data_table(table)), str(table)) or "gpu"


def _measured_table(table: pd.DataFrame | str | Path, device_class: str | None,
                    statistic: str) -> tuple[pd.DataFrame, DeviceInfo, str]:
    """The planned points of a measured table (see :func:`calibrate_from_table`), its device and name.
    A row that is ok must have a positive ``time_s`` and ``time_s_min`` and sizes its kernel accepts;
    ok rows outside the plan are counted in a note."""
    from gpuperf.datasets.bundled import data_table
    from gpuperf.datasets.schema import is_ok, row_location
    from gpuperf.datasets.tables import numeric_column, read_table_file
    from gpuperf.kernels.catalog import get_kernel

    if device_class is not None and device_class not in CALIBRATION_PLANS:
        raise GpuperfError(f"device class must be one of {', '.join(CALIBRATION_PLANS)}, not '{device_class}'")
    if statistic not in STATISTICS:
        raise GpuperfError(f"statistic must be one of {', '.join(STATISTICS)}, not '{statistic}'")
    source = "the table" if isinstance(table, pd.DataFrame) else str(table)
    frame = table if isinstance(table, pd.DataFrame) else read_table_file(data_table(table))
    if device_class is None:
        device_class = campaign_device_class(frame, source) or "gpu"
    missing = [c for c in ("kernel", "time_s", "time_s_min") if c not in frame.columns]
    if missing:
        raise GpuperfError(f"{source}: no column {', '.join(missing)}")
    devices = sorted(frame["device"].dropna().astype(str).unique()) if "device" in frame else []
    if len(devices) > 1:
        raise GpuperfError(f"{source}: points of several devices ({', '.join(devices)}); give one device's")
    gpus = sorted(frame["gpu"].dropna().astype(str).unique()) if "gpu" in frame else []
    if len(gpus) > 1:
        raise GpuperfError(f"{source}: points of several GPUs ({', '.join(gpus)}); give one GPU's")
    ok = is_ok(frame["status"]) if "status" in frame else pd.Series(True, frame.index)
    if not ok.all():
        first = int(np.flatnonzero(~ok.to_numpy())[0])
        status = frame["status"].iloc[first]
        shown = "empty" if pd.isna(status) or not str(status).strip() else repr(status)
        warnings.warn(GpuperfNote(f"{source}: left out {int((~ok).sum())} of {len(frame)} rows whose status is not "
                                  f"ok (first: {row_location(frame, first)}, status {shown})"), stacklevel=3)
    times = {column: numeric_column(frame, column, source).to_numpy(dtype=float)
             for column in ("time_s", "time_s_min")}
    ok_rows = ok.to_numpy()
    plan = {**CALIBRATION_PLANS[device_class], **HELD_OUT_PLANS[device_class]}
    outside = 0  # ok rows of kernels the plan does not name: left out (a file.py:function is never run)
    users = 0  # of them, rows of a user's file
    rows = []
    points: dict[tuple, dict[str, int]] = {}  # (kernel, its size cells) -> checked sizes: each point checked once
    for position, row in enumerate(frame.to_dict("records")):
        if not ok_rows[position]:
            continue
        time_s, time_s_min = times["time_s"][position], times["time_s_min"][position]
        for column, value in (("time_s", time_s), ("time_s_min", time_s_min)):
            if np.isnan(value):
                raise GpuperfError(f"{source}, {row_location(frame, position)}: {column} has no value (empty or NaN) "
                                   "in a row whose status is ok")
            if not (np.isfinite(value) and value > 0):
                raise GpuperfError(f"{source}, {row_location(frame, position)}: {column}={row[column]!r} is not a "
                                   "positive time (status ok)")
        if time_s_min > time_s:
            raise GpuperfError(f"{source}, {row_location(frame, position)}: time_s_min={row['time_s_min']!r} is above "
                               f"time_s={row['time_s']!r}: the fastest run of a point cannot be slower than its "
                               "typical one")
        user = _users_file(row)
        name = _point_kernel(row)
        if user or name not in plan:
            if not user:  # a catalog name is checked (a typo is named); a user file never run
                try:
                    get_kernel(str(row["kernel"]))
                except (GpuperfError, ValueError) as exc:
                    raise GpuperfError(f"{source}, {row_location(frame, position)}: {_unknown_hint(exc, frame)}"
                                       ) from None
            outside += 1
            users += user
            continue
        try:
            kernel = get_kernel(name)
            key = (name, *(repr(row.get(size)) for size in kernel.params))
            if key not in points:
                points[key] = _checked_sizes(kernel, row)
        except (GpuperfError, ValueError) as exc:
            raise GpuperfError(f"{source}, {row_location(frame, position)}: {exc}") from None
        rows.append({"kernel_spec": name, "sizes": dict(points[key]), "time_s": float(time_s),
                     "time_s_min": float(time_s_min)})
    measured = combine_measured(rows, plan, statistic)
    unplanned = outside + len(rows) - int(measured["passes"].sum())
    if unplanned:
        warnings.warn(GpuperfNote(
            f"{source}: {unplanned} of {outside + len(rows)} ok rows are not points of the {device_class} class's "
            "calibration or held-out plan (kernel and sizes) and are left out"
            + (f" ({users} of them a user's file.py:function, never run)" if users else "")), stacklevel=3)
    description = str(frame["gpu"].dropna().iloc[0]) if "gpu" in frame and frame["gpu"].notna().any() else source
    info = DeviceInfo(devices[0] if devices else "table", description, device_class)
    return measured, info, source


def _users_file(row: dict) -> bool:
    """Whether a row is a user's kernel: its ``kernel``, or the ``kernel_spec`` a campaign export writes
    (a user's kernel keeps only its function's name in ``kernel``, which may be a catalog kernel's), names
    a ``file.py``."""
    spec = row.get("kernel_spec")
    return ".py" in str(row["kernel"]) or (isinstance(spec, str) and ".py" in spec)


def _point_kernel(row: dict) -> str:
    """The kernel a row measured, as a plan names it: the ``kernel_spec`` a campaign export writes, or
    else ``kernel[variant]`` for a row of a space's variant (a non-empty ``variant``), else ``kernel``;
    a variant of a catalog space is not its plain kernel of the same name."""
    spec, variant = row.get("kernel_spec"), row.get("variant")
    if isinstance(spec, str) and spec.strip():
        return spec.strip()
    if variant is not None and not pd.isna(variant) and str(variant).strip():
        return f"{row['kernel']}[{str(variant).strip()}]"
    return str(row["kernel"])


def counted_properties(frame: pd.DataFrame, names: Sequence[str], source: str) -> pd.DataFrame:
    """``frame`` with the properties ``names`` counted from each row's kernel (its ``kernel_spec``, else
    ``kernel[variant]``, else ``kernel``) at its sizes, as :func:`calibrate_from_table` counts a campaign
    export's points; a failed row (status not ok) that cannot be counted gets none, and an ok one is an
    error naming its row. A row whose kernel names a user's ``file.py`` is never run: it cannot be counted."""
    from gpuperf.datasets.schema import is_ok, row_location
    from gpuperf.kernels.catalog import get_kernel
    from gpuperf.models.properties import kernel_properties

    ok = is_ok(frame["status"]).to_numpy() if "status" in frame else np.ones(len(frame), dtype=bool)
    kernels: dict[str, object] = {}
    counted: dict[tuple, dict[str, float]] = {}
    values = []
    for position, row in enumerate(frame.to_dict("records")):
        spec = _point_kernel(row)
        try:
            if _users_file(row):  # a table's name runs no file, as calibrate --table runs none
                raise GpuperfError(f"{spec} names a user's file, which gpuperf does not run for a table; price it "
                                   f"with gpuperf predict {spec} -p ... --model MODEL")
            kernel = kernels[spec] if spec in kernels else kernels.setdefault(spec, get_kernel(spec))
            sizes = _checked_sizes(kernel, row)
            key = (spec, *sizes.items())
            if key not in counted:
                counted[key] = kernel_properties(kernel, sizes, names)
        except (GpuperfError, ValueError) as exc:
            if ok[position]:
                raise GpuperfError(f"{source}, {row_location(frame, position)}: its properties cannot be counted "
                                   f"({_unknown_hint(exc, frame)})") from None
            values.append(dict.fromkeys(names, np.nan))
            continue
        values.append(counted[key])
    return frame.assign(**{name: [value[name] for value in values] for name in names})


def _unknown_hint(exc: Exception, frame: pd.DataFrame) -> str:
    """``exc``'s message, with how to tell a user's kernel apart where an export from before
    ``kernel_spec`` was written (a campaign's ``kernel_key`` and no ``kernel_spec``) may hold one."""
    if "kernel_key" in frame.columns and "kernel_spec" not in frame.columns:
        return (f"{exc} (a user's kernel? this export names no kernel_spec; export the store again, and "
                "calibrate --table leaves a user's file.py:function out)")
    return str(exc)


def _checked_sizes(kernel, row: dict) -> dict[str, int]:  # noqa: ANN001 - a gpuperf Kernel
    """A row's sizes of ``kernel``: every one present, whole and accepted by the kernel."""
    blank = [name for name in kernel.params if name not in row or pd.isna(row[name])]
    if blank:  # a point is named by all its sizes: a default would stand in for a measured size
        raise GpuperfError(f"size {', '.join(blank)} of {kernel.name} is "
                           f"{'missing' if blank[0] not in row else 'empty'}")
    sizes = {name: _whole_size(row[name], name) for name in kernel.params}
    kernel.resolve_sizes(sizes)
    return sizes


def _whole_size(value: object, name: str) -> int:
    """A size read from a table: a whole number (``4096`` or ``4096.0``), anything else an error naming it."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise GpuperfError(f"size {name}={value!r} is not a number") from None
    if not number.is_integer():
        raise GpuperfError(f"size {name}={value!r} is not a whole number")
    return int(number)


def variant_predictions(calibration: Calibration, table: pd.DataFrame) -> pd.DataFrame:
    """The calibrated model's time for every measured variant of a variant table (``kernel``,
    ``variant`` labels, size columns, ``time_s``; e.g. ``data/stencil_spaces_h100.csv.gz``): the rows
    with their ``predicted_s``. No variant need have been measured for the fit."""
    from gpuperf.datasets.schema import is_ok
    from gpuperf.kernels.catalog import get_kernel

    missing = [c for c in ("kernel", "variant", "time_s") if c not in table.columns]
    if missing:
        raise GpuperfError(f"variant table: no column {', '.join(missing)}")
    rows = table[is_ok(table["status"])] if "status" in table else table
    rows = rows.reset_index(drop=True)
    specs = rows["kernel"].astype(str) + "[" + rows["variant"].astype(str) + "]"
    params = {name: get_kernel(name).params for name in rows["kernel"].astype(str).unique()}  # a variant's are its kernel's
    sizes = [{name: int(row[name]) for name in params[str(row["kernel"])]} for _, row in rows.iterrows()]
    measured = pd.DataFrame({"kernel": specs, "sizes": "", "sizes_dict": sizes, "time_s": rows["time_s"]})
    predicted = calibration.model.predict(with_properties(measured, calibration.model.property_names_))
    return rows[["kernel", "variant", "time_s"]].assign(predicted_s=predicted)


def variant_ranking(predictions: pd.DataFrame) -> pd.DataFrame:
    """Per kernel, how well the predictions rank its variants: ``gmre`` (exp(mean |ln(predicted /
    measured)|) - 1), ``spearman`` (rank correlation with the measured times), ``pick_over_best``
    (measured time of the variant predicted fastest over the fastest measured) and, for comparison,
    ``random_pick_over_best`` (the same for a variant drawn at random: the mean time over the best)."""
    from scipy.stats import spearmanr

    def judged(part: pd.DataFrame) -> pd.Series:
        best = part["time_s"].min()
        return pd.Series({
            "variants": len(part),
            "gmre": float(np.expm1(np.mean(np.abs(np.log(part["predicted_s"] / part["time_s"]))))),
            "spearman": float(spearmanr(part["predicted_s"], part["time_s"]).statistic),
            "pick_over_best": float(part.loc[part["predicted_s"].idxmin(), "time_s"] / best),
            "random_pick_over_best": float(part["time_s"].mean() / best),
        })

    return predictions.groupby("kernel", sort=True)[["time_s", "predicted_s"]].apply(judged)
