"""Calibrating the linear count model on a device, saving it, and predicting with the saved model.

``calibrate(device, out)`` measures the measurement kernels at several sizes (a campaign in a
measurement store, so a stopped calibration resumes and a repeated one reuses its points), fits a
:class:`~gpuperf.models.linear.LinearCountModel` on the device class's properties and saves it as
JSON (device, property names, weights, gpuperf version; no pickle).

Timing on a shared machine. Each point is measured in ``passes`` separate campaign passes, one
after the other, and the calibration uses the fastest run over all passes (``statistic="min"``):
other processes only ever slow a kernel down, and the short kernels of the plans below usually
find a moment with the device to themselves. ``statistic="median"`` takes the median over passes
of each pass's median instead. With ``cycles`` above 1 the points are instead timed interleaved, all
of them in one group (``interleave = "campaign"``, gpuperf.measure.interleave): each cycle times every
point once in a shuffled order, so every point's time (``statistic="median"``: the median of its
per-cycle round medians; ``"min"``: its fastest launch) is taken over the same machine states.
"""

from __future__ import annotations

import math
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpuperf.errors import GpuperfError, refuse_one_string, unknown_name_error
from gpuperf.kernels.catalog import get_kernel
from gpuperf.kernels.kernel import KernelLike
from gpuperf.models.linear import LinearCountModel
from gpuperf.models.properties import check_property_names, properties_table, property_names, sizes_label

MODEL_KIND = "linear_count_model"
STATISTICS = ("min", "median")
Plan = Mapping[str, Sequence[Mapping[str, int]]]
# An interleaved cycle's round per point: short, so that one cycle over every point stays brief.
INTERLEAVED_REPEATS = 3
INTERLEAVED_ROUND_S = 0.02


def _sizes(**lists: Sequence[int]) -> list[dict[str, int]]:
    """``_sizes(n=[1, 2], m=[3, 4])`` -> ``[{n: 1, m: 3}, {n: 2, m: 4}]`` (paired, not a product)."""
    keys = list(lists)
    return [dict(zip(keys, values)) for values in zip(*lists.values())]


_MEMORY_1D = ("vector_copy", "add_four_vectors", "vector_fill", "scale_add_stride1", "scale_add_stride2",
              "sum_filled_stride2", "sum_filled_stride3")
_CALIBRATION_2D = ("copy_2d", "shifted_sum_2d", "poly_2d_f32", "poly_2d_f64", "div_2d", "sqrt_2d",
                   "local_copy_2d", "local_reverse_2d", "call_mix_2d")


def _plan(scale: int) -> dict[str, list[dict[str, int]]]:
    """Every measurement kernel at three sizes; ``scale`` multiplies the work (1 for a CPU)."""
    s = scale
    plan = {name: _sizes(n=[65536 * s, 262144 * s, 1048576 * s]) for name in _MEMORY_1D}
    matmul = _sizes(n=[64 * s, 128 * s, 128 * s], m=[128, 128, 128], k=[32, 64, 128])
    plan.update(matmul_naive=matmul, matmul_tiled_prefetch=matmul)
    transpose = _sizes(n=[144 * s, 272 * s, 528 * s], m=[1040, 1040, 1040])
    plan.update(transpose=transpose, transpose_prefetch=transpose, empty=_sizes(n=[4096 * s, 65536 * s, 1048576 * s]))
    for bits in (32, 64):
        for op in ("add", "mul"):
            plan[f"arith_f{bits}_{op}"] = _sizes(n=[4096 * s, 16384 * s, 4096 * s], k=[64, 64, 256])
        plan[f"arith_f{bits}_div"] = _sizes(n=[4096 * s, 16384 * s, 4096 * s], k=[64, 64, 128])
        plan[f"arith_f{bits}_sqrt"] = _sizes(n=[1024 * s, 4096 * s, 1024 * s], k=[64, 64, 256])
        plan[f"arith_f{bits}_exp"] = _sizes(n=[256 * s, 256 * s, 512 * s], k=[32, 64, 64])
    for name in _CALIBRATION_2D:
        plan[name] = _sizes(n=[128 * s, 256 * s, 512 * s], m=[256, 512, 1024])
    plan["row_sum"] = _sizes(n=[256 * s, 512 * s, 1024 * s], m=[256, 512, 512])
    plan["column_sum"] = _sizes(n=[256, 512, 512], m=[256 * s, 512 * s, 1024 * s])
    return plan


# Sizes keep each kernel short on the device class (tens of microseconds to a millisecond or two on
# one CPU core), so that the fastest of many runs is rarely disturbed by other processes.
def _gpu_plan() -> dict[str, list[dict[str, int]]]:
    """The CPU plan's work times 16, and a fourth point for each memory and 2D kernel whose arrays
    (256 and 128 MiB of floats) dwarf a GPU's L2 cache, so that the fit sees DRAM-bound traffic."""
    plan = _plan(16)
    for name in _MEMORY_1D:
        plan[name] = plan[name] + _sizes(n=[64 * 1048576])
    for name in _CALIBRATION_2D:
        plan[name] = plan[name] + _sizes(n=[8192], m=[4096])
    return plan


CALIBRATION_PLANS: dict[str, dict[str, list[dict[str, int]]]] = {"cpu": _plan(1), "gpu": _gpu_plan()}


# -- devices ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DeviceInfo:
    name: str  # canonical, e.g. opencl:0:0
    description: str  # the device's own name
    device_class: str  # "cpu" | "gpu"
    platform: str = ""  # the OpenCL platform's name, e.g. "Portable Computing Language" (empty: not OpenCL)

    @property
    def property_set(self) -> str:
        """The property set the device's class and runtime call for: ``intel_cpu`` on Intel's CPU
        OpenCL runtime, else the class's own (``cpu``, so pocl's, or ``gpu``)."""
        if self.device_class == "cpu" and "intel" in self.platform.lower():
            return "intel_cpu"
        return self.device_class


def device_info(device: str) -> DeviceInfo:
    """The canonical name, description, class (cpu or gpu) and OpenCL platform of a measurement device."""
    from gpuperf.measure.devices import open_device

    opened = open_device(device)
    description = opened.provenance().get("device_name", opened.name)
    device_class, platform = "gpu", ""
    raw = getattr(opened, "device", None)
    if raw is not None:  # OpenCL: ask the device for its type
        import pyopencl as cl

        device_class = "cpu" if raw.type & cl.device_type.CPU else "gpu"
        platform = raw.platform.name
    return DeviceInfo(opened.name, description, device_class, platform)


# -- measuring --------------------------------------------------------------------------------------
def restrict_plan(plan: Plan, kernels: Sequence[str] | None) -> dict[str, list[dict[str, int]]]:
    """The plan's entries for ``kernels`` only (all when None); unknown names are an error, and so is
    one string ("vector_copy" would read as the kernels v, e, c, ...)."""
    refuse_one_string(kernels, "kernels", names="calibration kernel names")
    if not kernels:
        return {name: list(sizes) for name, sizes in plan.items()}
    for name in kernels:
        if name not in plan:
            raise unknown_name_error("calibration kernel", name, plan)
    return {name: list(plan[name]) for name in kernels}


def measure_plan(plan: Plan, device: str, store: str | Path, campaign: str, passes: int = 3,
                 statistic: str = "min", progress: bool = False, cycles: int = 1) -> pd.DataFrame:
    """Measure every (kernel, sizes) of ``plan`` in ``passes`` campaign passes into ``store``, or,
    with ``cycles`` above 1, in one campaign that times all of them in that many interleaved cycles.

    Points already in the store are reused, so a stopped run resumes. Returns one row per point:
    ``kernel``, ``sizes`` (text), ``sizes_dict``, ``time_s`` (the ``statistic`` over the passes) and
    ``passes`` (how many passes measured it); points that failed in every pass are left out.
    """
    from gpuperf.measure.campaign import Campaign, Entry, run_campaign, stored_failure_lines
    from gpuperf.measure.store import Store
    from gpuperf.measure.timing import TimingSettings

    if statistic not in STATISTICS:
        raise GpuperfError(f"statistic must be one of {', '.join(STATISTICS)}, not '{statistic}'")
    if passes < 1:
        raise GpuperfError(f"passes must be at least 1, not {passes}")
    if cycles < 1:
        raise GpuperfError(f"cycles must be at least 1, not {cycles}")
    entries = []
    for name, sizes in plan.items():
        kernel = get_kernel(name)
        entries.append(Entry(kernel, name, tuple(kernel.resolve_sizes(s) for s in sizes), verify=True))
    if cycles > 1:
        settings = TimingSettings(min_repeats=INTERLEAVED_REPEATS, min_time_s=INTERLEAVED_ROUND_S, max_retries=0,
                                  cycles=cycles)
        campaigns = [Campaign(f"{campaign}-interleaved{cycles}", Path(store), device, settings, 0, tuple(entries),
                              interleave="campaign")]
    else:
        settings = TimingSettings(min_repeats=10, min_time_s=0.1, max_retries=1)
        campaigns = [Campaign(f"{campaign}-pass{index + 1}", Path(store), device, settings, 0, tuple(entries))
                     for index in range(passes)]
    measured_on = {run_campaign(one, store, progress=progress).device for one in campaigns}
    with Store(store, create=False) as opened:  # a store may hold other devices' points too
        stored = [row for one in campaigns for row in opened.rows(one.name) if row["device"] in measured_on]
    rows = [row for row in stored if row["status"] == "ok"]
    if not rows:
        failures = "; ".join(stored_failure_lines(stored))
        because = f": {failures}" if failures else ""
        raise GpuperfError(f"calibration on {device}: no point could be measured{because} (see the store {store})")
    return combine_measured(rows, plan, statistic)


def combine_measured(rows: list[dict[str, Any]], plan: Plan, statistic: str) -> pd.DataFrame:
    """One row per planned (kernel, sizes) of the measured ``rows`` (a store's: ``kernel_spec``,
    ``sizes``, ``time_s``, ``time_s_min``): its ``statistic`` over the rows that measured it."""
    wanted = {(name, sizes_label(get_kernel(name).resolve_sizes(s))) for name, sizes in plan.items() for s in sizes}
    times: dict[tuple[str, str], list[float]] = {}
    sizes_of: dict[tuple[str, str], dict[str, int]] = {}
    for row in rows:
        if row["kernel_spec"] not in plan:
            continue
        sizes = get_kernel(row["kernel_spec"]).resolve_sizes(row["sizes"])  # in the kernel's order
        key = (row["kernel_spec"], sizes_label(sizes))
        if key in wanted:
            value = row["time_s_min"] if statistic == "min" else row["time_s"]
            times.setdefault(key, []).append(float(value))
            sizes_of[key] = sizes
    records = []
    for (kernel, label), values in times.items():
        time = min(values) if statistic == "min" else float(np.median(values))
        records.append({"kernel": kernel, "sizes": label, "sizes_dict": sizes_of[(kernel, label)],
                        "time_s": time, "passes": len(values)})
    return pd.DataFrame(records, columns=["kernel", "sizes", "sizes_dict", "time_s", "passes"])


def with_properties(measured: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    """``measured`` with one column per property (computed from each kernel's static counts)."""
    kernels = {name: get_kernel(name) for name in measured["kernel"].unique()}
    table = properties_table(((kernels[k], s) for k, s in zip(measured["kernel"], measured["sizes_dict"])), names)
    return pd.concat([measured.reset_index(drop=True), table[list(names)]], axis=1)


# -- calibrating ------------------------------------------------------------------------------------
@dataclass
class Calibration:
    model: LinearCountModel
    device: DeviceInfo
    data: pd.DataFrame  # the calibration points with their properties, measured and predicted times
    metadata: dict[str, Any] = field(default_factory=dict)

    def per_kernel_error(self) -> pd.Series:
        """Geometric-mean relative error of the fit for each calibration kernel (in-sample)."""
        return per_kernel_gmre(self.data, "time_s", "predicted_s")


def per_kernel_gmre(frame: pd.DataFrame, measured: str, predicted: str) -> pd.Series:
    """exp(mean |ln(predicted / measured)|) - 1 per kernel (non-positive predictions count as inf)."""
    def gmre(part: pd.DataFrame) -> float:
        ratio = part[predicted].to_numpy(float) / part[measured].to_numpy(float)
        if np.any(ratio <= 0):
            return math.inf
        return float(np.expm1(np.mean(np.abs(np.log(ratio)))))

    return frame.groupby("kernel", sort=True)[[measured, predicted]].apply(gmre).rename("gmre")


def property_choice(info: DeviceInfo, property_set: str | None = None,
                    properties: Sequence[str] | None = None) -> tuple[str, tuple[str, ...]]:
    """The property set's name (default: the device's, :attr:`DeviceInfo.property_set`) and the property
    names (``properties`` if given, else the set's); an unknown name raises GpuperfError."""
    set_name = property_set or info.property_set
    names = property_names(set_name)
    return set_name, (check_property_names(properties) if properties else names)


def with_added_properties(default_set: str, property_set: str | None, added: Sequence[str]) -> tuple[str, ...] | None:
    """The properties of ``property_set`` (default: ``default_set``, a device class's or
    :attr:`DeviceInfo.property_set`) followed by ``added``; None when nothing is added (the set's own
    properties apply)."""
    if not added:
        return None
    return check_property_names([*property_names(property_set or default_set), *added], where="--add-property")


def calibrate(device: str, store: str | Path, kernels: Sequence[str] | None = None, passes: int = 3,
              property_set: str | None = None, properties: Sequence[str] | None = None,
              statistic: str = "min", progress: bool = False, plan: Plan | None = None,
              cycles: int = 1) -> Calibration:
    """Measure the calibration plan on ``device`` and fit the model.

    ``plan`` maps kernel names to lists of sizes (default: ``CALIBRATION_PLANS`` of the device's
    class); ``kernels`` keeps only some of its kernels. ``property_set`` defaults to the device's
    class; ``properties`` names the properties explicitly instead. ``passes``, ``cycles`` and
    ``statistic`` as in :func:`measure_plan`.
    """
    info = device_info(device)
    _, names = property_choice(info, property_set, properties)  # a bad name fails before anything is measured
    plan = restrict_plan(plan if plan is not None else CALIBRATION_PLANS[info.device_class], kernels)
    planned = sum(len(sizes) for sizes in plan.values())
    if planned < len(names):
        raise GpuperfError(f"calibration on {info.name}: {planned} planned points ({len(plan)} kernels) for "
                           f"{len(names)} properties; a fit needs at least one point per property (keep more "
                           "kernels, or name fewer properties)")
    campaign = f"linear-calibration-{info.device_class}"
    measured = measure_plan(plan, info.name, store, campaign, passes, statistic, progress, cycles)
    timing = {"statistic": statistic, "passes": passes if cycles == 1 else 1, "cycles": cycles}
    return fit_calibration(measured, info, store, property_set, properties, timing)


def fit_calibration(measured: pd.DataFrame, info: DeviceInfo, store: str | Path, property_set: str | None = None,
                    properties: Sequence[str] | None = None, timing: Mapping[str, Any] | None = None) -> Calibration:
    """Fit the model on measured calibration points (``measure_plan``'s rows); ``timing`` is how
    they were measured, kept in the metadata."""
    set_name, names = property_choice(info, property_set, properties)
    if measured.empty:
        raise GpuperfError(f"calibration on {info.name}: no point could be measured (see the store {store})")
    if len(measured) < len(names):
        raise GpuperfError(f"calibration on {info.name}: {len(measured)} measured points for {len(names)} properties; "
                           f"a fit needs at least one point per property (see the store {store} for the failed ones)")
    data = with_properties(measured, names)
    model = LinearCountModel(properties=names, property_set=set_name).fit(data, data["time_s"])
    data["predicted_s"] = model.predict(data)
    metadata = {
        "kind": MODEL_KIND,
        "device": info.name,
        "device_name": info.description,
        "device_class": info.device_class,
        "property_set": set_name,
        "properties": list(names),
        "weights": model.weights_,
        "unobserved_properties": [name for name in names if not data[name].astype(bool).any()],  # weight 0: unpriced
        **dict(timing or {}),
        "host": platform.node(),
        "calibration_points": int(len(data)),
        "calibration_kernels": sorted(data["kernel"].unique()),
        "store": str(store),
    }
    calibration = Calibration(model, info, data, metadata)
    metadata["in_sample_gmre"] = {k: float(v) for k, v in calibration.per_kernel_error().items()}
    return calibration


# -- saving, loading, predicting ---------------------------------------------------------------------
def save_calibration(calibration: Calibration, path: str | Path, new: bool = False, replace: bool = False) -> Path:
    """Write the calibrated model as JSON (``gpuperf.models.persistence``; ``new`` and ``replace`` as there)."""
    from gpuperf.models.persistence import save_model

    path = Path(path)
    if path.suffix != ".json":
        raise GpuperfError(f"{path}: a linear count model is saved as .json")
    path.parent.mkdir(parents=True, exist_ok=True)
    return save_model(calibration.model, path, feature_names=calibration.model.property_names_,
                      metadata=calibration.metadata, new=new, replace=replace)


def load_linear_model(path: str | Path) -> tuple[LinearCountModel, dict[str, Any]]:
    """The model and its metadata from a file written by :func:`save_calibration`."""
    from gpuperf.models.persistence import load_model, model_info

    path = Path(path)
    info = model_info(path)  # raises for a missing file or one that is not a gpuperf model
    metadata = info.get("metadata") or {}
    if not isinstance(metadata, dict) or metadata.get("kind") != MODEL_KIND:
        fitted = metadata.get("model") if isinstance(metadata, dict) else None
        if fitted == "linear":
            raise GpuperfError(f"{path}: a linear count model fitted by 'gpuperf fit' on a table: predict its "
                               "table's rows with 'gpuperf predict-table'; 'gpuperf predict' takes a model made by "
                               "'gpuperf calibrate'")
        if isinstance(fitted, str):  # fit's metadata names the model
            raise GpuperfError(f"{path}: a model made by 'gpuperf fit' (--model {fitted}): 'gpuperf predict' takes one made "
                               "by 'gpuperf calibrate'; price a kernel with this one from its feature row: gpuperf "
                               "features KERNEL -p ... --out ROW.csv, then gpuperf predict-table ROW.csv --model "
                               f"{path} --out PRED.csv")
        raise GpuperfError(f"{path}: not a model made by 'gpuperf calibrate'")
    saved = info.get("feature_names") or []
    check_property_names(saved, where=f"{path}")
    if "properties" in metadata and list(metadata["properties"]) != list(saved):
        raise GpuperfError(f"{path}: its metadata lists other properties than the model's")
    model = load_model(path, feature_names=saved, probe=False)  # its weights are checked below, by name
    if not isinstance(model, LinearCountModel) or list(model.property_names_) != list(saved):
        raise GpuperfError(f"{path}: the model's properties do not match the file's property list")
    _check_listed_weights(model, metadata.get("weights"), path)
    return model, metadata


def _check_listed_weights(model: LinearCountModel, listed: Any, path: Path) -> None:
    """The weights the metadata lists for a reader are the ones the model predicts with: a file
    edited in one place and not the other would predict what it does not say."""
    if listed is None:
        return
    own = model.weights_
    if not isinstance(listed, dict) or set(listed) != set(own):
        raise GpuperfError(f"{path}: metadata.weights must list the model's {len(own)} properties' weights")
    for name, weight in own.items():
        value = listed[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isclose(value, weight, rtol=1e-9, atol=0.0):
            raise GpuperfError(f"{path}: metadata.weights.{name} is {value!r}, but the model predicts with {weight!r}; "
                               "edit a model by refitting it (gpuperf calibrate), not by hand")


def predict_kernel(model: LinearCountModel, kernel: KernelLike, sizes: Mapping[str, Any] | None = None
                   ) -> dict[str, Any]:
    """Predicted time of ``kernel`` (a ``Kernel``, a loopy TranslationUnit, or a catalog name or
    ``path/file.py:function``, as ``extract_features`` takes) at ``sizes`` with each property's value and
    contribution."""
    from gpuperf.models.properties import kernel_properties

    from gpuperf.kernels.catalog import as_kernel

    kernel = as_kernel(kernel, "predict_kernel")
    resolved = kernel.resolve_sizes(sizes)
    values = kernel_properties(kernel, resolved, model.property_names_)
    frame = pd.DataFrame([values])
    contributions = model.contributions(frame).iloc[0]
    return {
        "kernel": kernel.key,
        "sizes": resolved,
        "time_s": float(model.predict(frame)[0]),
        "properties": values,
        "contributions_s": {name: float(contributions[name]) for name in model.property_names_},
    }
