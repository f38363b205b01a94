"""Commands for the linear count model: ``calibrate`` (measure and fit on a device) and ``predict``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from gpuperf.cli.output import (
    at_least, kernel_sizes, known_choice, model_output_file, named_values, print_json, print_table, refuse_model_name,
    store_file, with_notes,
)

if TYPE_CHECKING:
    import pandas as pd

    from gpuperf.kernels.kernel import Kernel


def calibrate_command(
    out: Path = typer.Option(..., "--out", "-o", help="model file to write (.json)"),
    device: str = typer.Option(None, "--device", "-d", help="opencl:0 (default), opencl:<platform>:<device>, cuda:0"),
    store: Path = typer.Option(None, "--store", help="measurement store (default: calibration.db next to --out)"),
    passes: int = typer.Option(None, "--passes", help="campaign passes (default 3); each point's fastest run over all "
                               "counts (its median with --statistic median)"),
    cycles: int = typer.Option(1, "--cycles", help="above 1: time every point in this many interleaved cycles "
                               "(one campaign, no passes)"),
    kernel: list[str] = typer.Option(None, "--kernel", "-k", help="calibrate on this kernel only (repeatable)"),
    property_set: str = typer.Option(None, "--property-set", help="cpu, intel_cpu, gpu or stevens_klockner "
                                     "(default: the device's class; intel_cpu on Intel's CPU OpenCL runtime)"),
    add_property: list[str] = typer.Option(None, "--add-property", help="a property to fit beside the set's "
                                           "(repeatable), e.g. footprint_beyond_50MiB"),
    statistic: str = typer.Option("min", "--statistic", help="min (fastest run) or median over the passes (cycles)"),
    table: Path = typer.Option(None, "--table", help="fit on these points measured before (a campaign export, "
                               "e.g. data/linear_model_h100.csv.gz) instead of measuring: no device needed"),
    device_class: str = typer.Option(None, "--device-class", help="with --table: its device's class, gpu or cpu "
                                     "(default: the class its calibration campaign names, else gpu)"),
    no_progress: bool = typer.Option(False, "--no-progress", metavar="", help="no progress bar"),
    json_out: bool = typer.Option(False, "--json", metavar="", help="print the model's metadata as JSON"),
) -> None:
    """Measure the measurement kernels on a device, fit the linear count model and save it.

    With --table, fit it on points measured before instead (the bundled H100 points give an H100 model on any machine)."""
    from gpuperf.errors import GpuperfError
    from gpuperf.models.linear_calibration import (
        CALIBRATION_PLANS, STATISTICS, calibrate, device_info, save_calibration, with_added_properties,
    )
    from gpuperf.models.properties import PROPERTY_SETS

    if out.suffix != ".json":
        raise GpuperfError(f"--out: '{out}' must end in .json")
    known_choice("--statistic", "statistic", statistic, STATISTICS)
    known_choice("--device-class", "device class", device_class, list(CALIBRATION_PLANS))
    known_choice("--property-set", "property set", property_set, list(PROPERTY_SETS))
    at_least("--passes", passes, 1)
    at_least("--cycles", cycles, 1)
    if passes is not None and cycles > 1:
        raise GpuperfError("--passes and --cycles are two ways to time the points; give one of them")
    new_file = not model_output_file(out, calibration=True).exists()  # a model another run writes meanwhile is kept
    if table is not None:
        from gpuperf.evaluation.linear_eval import calibrate_from_table, table_device_class

        if kernel or store or passes is not None or cycles != 1 or device is not None:
            raise GpuperfError("--table fits on the table's calibration points: --device, --kernel, --store, --passes "
                               "and --cycles are for measuring")
        if add_property and device_class is None:  # the added properties follow the class's set
            device_class = table_device_class(table)
        properties = with_added_properties(device_class, property_set, add_property or ())
        calibration = calibrate_from_table(table, device_class, property_set, statistic, properties)
        store = table
    else:
        device = device or "opencl:0"
        passes = 3 if passes is None else passes
        from gpuperf.files import real_path

        store = store_file(store) if store else out.parent / "calibration.db"
        if real_path(store) == real_path(out):  # the model would replace every measured point
            raise GpuperfError(f"--store {store}: the same file as --out; the store keeps the measurements and --out "
                               "the model: name two files")
        properties = None
        if add_property:
            properties = with_added_properties(device_info(device).property_set, property_set, add_property)
        calibration = calibrate(device, store, kernels=kernel or None, passes=passes, property_set=property_set,
                                properties=properties, statistic=statistic, progress=not (no_progress or json_out),
                                cycles=cycles)
    save_calibration(calibration, out, new=new_file, replace=True)
    unpriced = calibration.data[calibration.data["predicted_s"] <= 0]
    if len(unpriced):  # the overlap weight is negative: it can outweigh every cost
        print(f"note: the model predicts no positive time for {len(unpriced)} of its own {len(calibration.data)} "
              f"calibration points (kernels {', '.join(sorted(unpriced['kernel'].unique()))}): its overlap weight "
              "outweighs the costs there, so its predictions near them mean nothing; look for a glitched time "
              "among the points", file=sys.stderr)
    unobserved = calibration.metadata["unobserved_properties"]
    if unobserved:
        print(f"note: no calibration point has any {', '.join(unobserved)}: their weights stay 0, so predictions "
              "leave that work out (predict names it where a kernel has it); calibrate on kernels that do it",
              file=sys.stderr)
    if json_out:
        print_json(calibration.metadata)
        return
    errors = calibration.per_kernel_error()
    rows = [{"kernel": name, "points": int((calibration.data["kernel"] == name).sum()), "gmre": value}
            for name, value in errors.items()]
    print_table(rows, title=f"in-sample error on {calibration.device.name} ({calibration.device.description})")
    weights = [{"property": name, "weight": value} for name, value in calibration.model.weights_.items()]
    print_table(weights, title="weights (seconds per unit)")
    print(fit_summary(errors))
    print(f"wrote {out} ({'points from' if table is not None else 'store'} {store})")


def fit_summary(errors: pd.Series) -> str:
    """The calibration's in-sample error (``errors``: gmre by kernel) in a sentence, naming the kernels it
    misses by over 2x."""
    missed = [f"{name} ({value:.1f})" for name, value in errors.sort_values(ascending=False).items() if value > 1.0]
    text = (f"gmre = exp(mean |ln(predicted / measured)|) - 1 over a kernel's points (0.1: off by 10 %); mean over "
            f"the {len(errors)} calibration kernels {errors.mean():.3f}, median {errors.median():.3f}.")
    if missed:
        text += (f" Missed by more than 2x: {', '.join(missed)}; the properties do not explain their times on this "
                 "device, so predictions for kernels like them are unreliable (`gpuperf reproduce linear "
                 "--device DEVICE` tests the model on kernels it never saw, measured on DEVICE).")
    return text


def predict_command(
    kernel: str = typer.Argument(..., help="catalog name, name\\[param=value,...] or path/file.py:function"),
    model: Path = typer.Option(..., "--model", "-m", help="model file written by 'gpuperf calibrate'"),
    param: list[str] = typer.Option(None, "--param", "-p", help="size parameter, e.g. -p n=4096"),
    json_out: bool = typer.Option(False, "--json", metavar="", help="print JSON with each property's contribution and notes"),
) -> None:
    """Predict a kernel's time at given sizes with a calibrated linear count model."""
    from gpuperf.kernels.catalog import get_kernel
    from gpuperf.models.linear_calibration import load_linear_model, predict_kernel

    refuse_model_name(model, "predict", "one 'gpuperf calibrate' wrote")
    (fitted, metadata), loading_notes = with_notes(lambda: load_linear_model(model))  # another version's model
    found = get_kernel(kernel)
    result = predict_kernel(fitted, found, kernel_sizes(found, param))
    result["device"] = metadata.get("device")
    cannot = launch_note(found, result["sizes"], metadata)  # its block already names the GPU's limit
    notes = [note for note in [cannot or generated_note(found, result["sizes"], metadata)] if note]
    unpriced = [name for name in metadata.get("unobserved_properties") or () if result["properties"].get(name)]
    if unpriced:
        values = ", ".join(f"{name}={result['properties'][name]:g}" for name in unpriced)
        notes.append(f"{model}: the kernel has {values}, which no calibration point had: priced at 0 s, so the time "
                     "is an underestimate")
    if result["time_s"] <= 0:
        notes.append(f"{model}: a time that is not positive ({result['time_s']:.4g} s): the model's overlap weight "
                     "outweighs its costs for this kernel at these sizes, so it does not describe it")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if json_out:
        print_json({**result, "notes": [*loading_notes, *notes]})
        return
    rows = [{"property": name, "value": result["properties"][name], "seconds": seconds}
            for name, seconds in result["contributions_s"].items() if seconds]
    where = metadata.get("device_name") or result["device"]  # the GPU's name, not the device spec it ran as
    print_table(rows, title=f"{result['kernel']} at {named_values(result['sizes'])} on {where}")
    print(f"time_s {result['time_s']:.4g}")


def launch_note(kernel: Kernel, sizes: dict, metadata: dict) -> str | None:
    """A note where the kernel's work-group cannot launch on the GPU the model was calibrated on (too
    many work-items, too much local memory): its time is then the model's extrapolation."""
    from gpuperf.errors import GpuperfError
    from gpuperf.features.counts import symbolic_counts
    from gpuperf.features.occupancy import check_block_limits
    from gpuperf.hardware.specs import get_gpu

    if metadata.get("device_class") != "gpu" or not metadata.get("device_name"):
        return None
    try:
        gpu = get_gpu(metadata["device_name"])
    except GpuperfError:  # a GPU gpuperf does not describe: nothing to check against
        return None
    _, local = kernel.launch(sizes)
    memory = int(symbolic_counts(kernel).values(kernel.resolve_sizes(sizes)).local_memory_bytes)
    try:
        check_block_limits(gpu, local[0] * local[1] * local[2], 0, memory)
    except GpuperfError as error:
        return f"{kernel.key} cannot launch on the {gpu.name} the model describes ({error}); its time is an extrapolation"
    return None


def generated_note(kernel: Kernel, sizes: dict, metadata: dict) -> str | None:
    """A note where gpuperf would not run the kernel at these sizes as generated (measure refuses them):
    its int32 indices wrap, or, for a model calibrated through CUDA, its grid passes CUDA's limits; or loopy
    refuses to generate its code at all."""
    from gpuperf.measure.timing import generated_launch_problem

    problem = generated_launch_problem(kernel, sizes, cuda=str(metadata.get("device") or "").startswith("cuda"))
    if problem is not None:
        return f"measure would refuse this launch ({problem}): the time is for a kernel that cannot run as generated"
    if kernel.generation_refusal is not None:
        return (f"loopy refuses to generate this kernel's code ({kernel.generation_refusal}), so measure reports a "
                "compile failure: the time is for a kernel that cannot run as generated")
    return None


def register(app: typer.Typer) -> None:
    """Add this area's commands to ``app``."""
    app.command("calibrate")(calibrate_command)
    app.command("predict")(predict_command)
