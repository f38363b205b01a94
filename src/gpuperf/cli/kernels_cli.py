"""Commands about kernels: the catalog, variant spaces and static features."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuperf.cli.output import (
    boards_note, csv_output_name, described_gpu, kernel_sizes, known_choice, new_output_file, print_json, print_table,
    report_folder, whole_counts,
)
from gpuperf.errors import GpuperfError

if TYPE_CHECKING:
    from gpuperf.kernels.space import VariantSpace

ParamsOption = Annotated[list[str] | None, typer.Option("-p", "--param", help="size parameter, e.g. -p n=4096")]


def kernels(
    category: Annotated[str | None, typer.Option(help="measurement, test or stencil")] = None,
    as_json: Annotated[bool, typer.Option("--json", metavar="", help="print JSON")] = False,
) -> None:
    """List the kernel catalog."""
    from gpuperf.kernels.catalog import CATEGORIES, entries

    known_choice("--category", "category", category, CATEGORIES)
    rows = [{
        "name": entry.name,
        "category": entry.category,
        "params": list(entry.params),
        "default_sizes": dict(entry.default_sizes),
        "description": entry.description,
    } for entry in entries(category)]
    if as_json:
        print_json(rows)
    else:
        print_table(
            [{**r, "params": ",".join(r["params"])} for r in rows],
            title=f"gpuperf kernel catalog ({len(rows)} kernels)",
            columns=["name", "category", "params", "description"],
            prose=["description"],
        )


def spaces(
    name: Annotated[str | None, typer.Argument(help="a space to list the variants of: a catalog one, e.g. jacobi2d_5pt, or path/file.py:function")] = None,
    limit: Annotated[int, typer.Option(help="at most this many variants")] = 20,
    as_json: Annotated[bool, typer.Option("--json", metavar="", help="print JSON")] = False,
) -> None:
    """List the variant spaces, or the valid and skipped variants of one."""
    from gpuperf.kernels.space import get_space, space_names

    if name is None:
        rows = [{"space": n, "parameters": dict(get_space(n).parameters)} for n in space_names()]
        if as_json:
            print_json(rows)
        else:
            print_table([{"space": r["space"], "parameters": ", ".join(
                f"{k} in {v}" for k, v in r["parameters"].items())} for r in rows], title="variant spaces",
                prose=["parameters"])
        return
    if limit < 1:
        raise GpuperfError(f"--limit {limit}: must be at least 1")
    space = get_space(name)
    variants = space.variants(limit=limit)
    skipped = space.skipped(limit=limit)
    total, passing = _check_counts(space)
    named = [_variant_name(name, k) for k in variants]
    if as_json:
        print_json({"space": name, "configurations": total, "passing_check": passing,
                    "variants": named, "skipped": [{"config": c, "reason": r} for c, r in skipped]})
    else:
        print(f"{name}: {total} configurations, {_check_summary(space, total, passing)}")
        if variants:
            print_table([{"variant": n} for n in named], title=f"{name}: first {len(variants)} valid variants")
        else:
            print(f"{name}: no valid variant; every configuration is skipped")
        if skipped:
            print_table([{"config": str(c), "reason": r} for c, r in skipped],
                        title=f"first {len(skipped)} skipped" if len(skipped) == limit else "skipped",
                        prose=["config", "reason"])
        else:
            print("no configuration is skipped")


def _variant_name(space_name: str, variant: Any) -> str:
    """The name that names ``variant`` of the space named ``space_name``, as a kernel argument takes it:
    ``stencil2d[local_x=4,...]``, or ``my_kernels.py:scale_space[local_x=16]`` for a user's space, whose
    own VariantSpace name (``scale``) names no space on the command line."""
    return f"{space_name}[{variant.variant_label}]" if variant.variant_label else space_name


def _check_summary(space: VariantSpace, total: int, passing: int) -> str:
    """What the space's cheap check made of its ``total`` configurations, ``passing`` of them passing."""
    if space.check is None:
        return "each built (the space has no check)"
    if passing < total:
        return f"{passing} passing the space's check ({total - passing} rejected by it)"
    return "each passing the space's check"


def _check_counts(space: VariantSpace) -> tuple[int, int]:
    """(configurations, those the space's cheap check passes), one configuration at a time (a check
    that raises is an error naming the configuration, as listing the skipped ones gives it)."""
    total = passing = 0
    for config in space.configurations():
        total += 1
        passing += space.rejection(config) is None
    return total, passing


def features(
    kernel: Annotated[str, typer.Argument(help="catalog name, name\\[param=value,...] or path/file.py:function")],
    param: ParamsOption = None,
    gpu: Annotated[str | None, typer.Option(
        help="add registers (NVRTC) and occupancy features for this GPU (an AMD GPU gets them empty)")] = None,
    as_json: Annotated[
        bool, typer.Option("--json", metavar="", help=r"print a flat JSON object: kernel, variant, \[gpu,] sizes, then features")
    ] = False,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="also write the features as a one-row CSV table (a features table's columns), "
        "for predict-table to price with a model made by fit")] = None,
) -> None:
    """Static features of a kernel at the given sizes, from the kernel alone."""
    from gpuperf.features import extract_features
    from gpuperf.hardware import get_gpu
    from gpuperf.kernels import get_kernel

    described_gpu(gpu)
    if out is not None:  # refused before anything is counted
        csv_output_name(out)
        new_output_file(out)
    knl = get_kernel(kernel)
    sizes = kernel_sizes(knl, param)
    values = extract_features(knl, sizes, gpu=gpu) if out is None else written_feature_row(knl, sizes, gpu, out)
    if gpu is not None and get_gpu(gpu).vendor != "NVIDIA":  # registers and occupancy left empty
        print(f"note: {gpu}: registers and occupancy left empty (NVRTC compiles for NVIDIA GPUs); for an AMD GPU, "
              f"gpuperf occupancy --gpu {shlex.quote(gpu)} --threads T --registers N computes occupancy from a VGPR "
              "count", file=sys.stderr)
    if gpu is not None:
        boards_note(gpu)  # on stderr: the JSON row has no notes
        warp_note(get_gpu(gpu))
    refused_launch_note(knl, sizes, gpu is None or get_gpu(gpu).vendor == "NVIDIA")
    if as_json:  # one row of feature_table's shape, so it names what was counted
        keys = {"kernel": knl.name, "variant": knl.variant_label} | ({"gpu": get_gpu(gpu).name} if gpu else {})
        print_json(keys | sizes | whole_counts(values))
    elif out is not None:
        print(f"wrote the {len(values)} features of {knl.key} at {', '.join(f'{k}={v}' for k, v in sizes.items())} "
              f"to {out}")
    else:
        at = ", ".join(f"{k}={v}" for k, v in sizes.items())  # defaults included: say which sizes were used
        print_table([{"feature": k, "value": v} for k, v in values.items()], title=f"features of {knl.key} at {at}")


def refused_launch_note(knl: Any, sizes: dict[str, int], nvidia: bool) -> None:
    """Say where measure would refuse the kernel at ``sizes`` as generated, as predict does: its int32
    indices wrap, or (for an NVIDIA GPU, or none named) its grid or blocks pass CUDA's limits; or
    loopy refuses to generate its code at all (:attr:`~gpuperf.kernels.Kernel.generation_refusal`)."""
    from gpuperf.measure.timing import generated_launch_problem

    problem, through = generated_launch_problem(knl, sizes), ""
    if problem is None and nvidia:
        problem, through = generated_launch_problem(knl, sizes, cuda=True), " through CUDA"
    if problem is not None:
        print(f"note: measure would refuse this launch{through} ({problem}): the features are for a kernel that "
              "cannot run as generated", file=sys.stderr)
    refusal = knl.generation_refusal
    if refusal is not None:
        print(f"note: loopy refuses to generate this kernel's code ({refusal}), so measure reports a compile "
              "failure: the features are for a kernel that cannot run as generated", file=sys.stderr)


def warp_note(descriptor: Any) -> None:
    """Say, for a GPU whose warp (wavefront) is not 32 lanes, that the per-warp features count 32."""
    from gpuperf.features.lanes import WARP_SIZE

    if descriptor.warp_size != WARP_SIZE:
        print(f"note: {descriptor.name}: the per-warp features (cache_lines_per_warp_access, sectors_per_warp_access, "
              f"...) count warps of {WARP_SIZE} lanes on every GPU, not its {descriptor.warp_size}-lane wavefronts",
              file=sys.stderr)


def written_feature_row(knl: Any, sizes: dict[str, int], gpu: str | None, out: Path) -> dict[str, Any]:
    """Write the kernel's row of :func:`~gpuperf.features.feature_table` (kernel, variant, ``gpu``
    with ``--gpu``, sizes, a space variant's parameters, features: the columns ``fit`` finds in a
    features table) to ``out``,
    whole or not at all, and return its features."""
    from gpuperf.datasets import write_dataset_csv
    from gpuperf.features import feature_table
    from gpuperf.hardware import get_gpu

    table = feature_table(knl, sizes, gpu=gpu)
    if gpu is not None:  # the GPU predict-table joins the descriptors of (--gpu-features models)
        table.insert(2, "gpu", get_gpu(gpu).name)
    write_dataset_csv(table, out)
    keys = {"kernel", "variant", "gpu", *sizes, *knl.variant}
    return {name: value.item() if hasattr(value, "item") else value
            for name, value in table.iloc[0].items() if name not in keys}


def demo(
    out: Annotated[str, typer.Option("--out", "-o", help="report folder")] = "gpuperf-report",
    step: Annotated[list[str] | None, typer.Option(help="run only these steps (repeatable): catalog, features, hardware, measure, linear-model, models, advise, explore, geometry")] = None,
) -> None:
    """gpuperf's main job on its embedded defaults: writes a report folder with index.md."""
    from gpuperf.demo import STEPS, run_demo, step_reports, summary_lines

    for name in step or []:
        known_choice("--step", "demo step", name, STEPS)
    index = run_demo(str(report_folder(out, "--out", step_reports(step))), step)
    for line in summary_lines(index.parent):
        print(f"- {line}")
    print(f"report: {index}")


def register(app: typer.Typer) -> None:
    """Add the kernel commands to ``app``."""
    app.command("demo")(demo)
    app.command("kernels")(kernels)
    app.command("spaces")(spaces)
    app.command("features")(features)
