"""``gpuperf advise``: which optimizations would speed a kernel up, by how much, and how to apply them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.markup import escape

from gpuperf.cli.output import boards_note, console, described_gpu, kernel_sizes, print_json, print_table, with_notes

if TYPE_CHECKING:
    from gpuperf.decisions.advisor import Advice
    from gpuperf.kernels.kernel import Kernel

OptimizationsOption = Annotated[
    list[str] | None,  # text: an empty name is refused, not read as the current folder
    typer.Option("--optimizations", help="a folder of extra optimization entries (*.toml); repeatable"),
]


def variant_space_name(spec: str, kernel: Kernel | None = None) -> str | None:
    """The space a variant spec names (``stencil2d`` of ``stencil2d[local_x=16]``, ``my.py:space`` of
    ``my.py:space[local_x=16]``, and of ``my.py:space`` alone, which names its default variant
    ``kernel``); None for a kernel that is no variant."""
    name, bracket, _ = spec.partition("[")
    if bracket and spec.rstrip().endswith("]"):
        return name.strip()
    return spec.strip() if kernel is not None and kernel.variant and _names_a_user_space(spec.strip()) else None


def _names_a_user_space(spec: str) -> bool:
    """Whether ``spec`` is a user's ``file.py:function`` returning a variant space."""
    from gpuperf.errors import GpuperfError
    from gpuperf.kernels.space import get_space

    if ".py:" not in spec:
        return False
    try:
        get_space(spec)
    except GpuperfError:  # a function returning a kernel (one that records a variant of its own)
        return False
    return True


def advise(
    kernel: Annotated[
        str | None, typer.Argument(help="catalog name, name\\[param=value,...] or path/file.py:function")
    ] = None,
    param: Annotated[list[str] | None, typer.Option("-p", "--param", help="size parameter, e.g. -p n=4096")] = None,
    gpu: Annotated[str | None, typer.Option(help="advise for this GPU (its descriptor joins the features)")] = None,
    device: Annotated[str | None, typer.Option("--device", "-d", help="advise for a measured device, e.g. opencl:0 (pocl)")] = None,
    profile: Annotated[Path | None, typer.Option(
        help="a profiled launch: a table with geometry and counters as gpuperf import nvprof|ncu writes it, "
        "the profiler's own CSV (nvprof GPU trace, Nsight Compute), or a bundled table's name such as rodinia_nvprof")] = None,
    row: Annotated[Optional[int], typer.Option(help=(
        "which row of the --profile table (from 1; default 1); of a profiler's own CSV, which kernel launch "
        "(memory copies and sets are no rows)"))] = None,
    threshold: Annotated[float, typer.Option(help="suggest only predicted speedups at or above this")] = 1.05,
    min_confidence: Annotated[float, typer.Option(
        help="abstain from suggestions whose calibrated confidence (the chance the predicted sign is right) "
             "is below this (0 to 1; 0 suggests every prediction above the threshold); an entry with too few "
             "training groups to calibrate has an uncalibrated score instead, said in a note")] = 0.5,
    optimizations: OptimizationsOption = None,
    only: Annotated[list[str] | None, typer.Option(
        "--only", help="assess only these optimizations (comma-separated; repeatable)")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", metavar="", help="print JSON: subject, suggestions, below_threshold, not_suggested, notes")] = False,
    no_progress: Annotated[bool, typer.Option("--no-progress", metavar="", help="no progress bar")] = False,
) -> None:
    """Suggest optimizations for a kernel (static features) or a profiled launch (--profile)."""
    from gpuperf.decisions.advisor import decimals_apart
    from gpuperf.decisions.optimizations import load_optimizations, select_entries
    from gpuperf.errors import GpuperfError

    if (kernel is None) == (profile is None):
        raise GpuperfError("give a KERNEL or --profile ROW.csv (one of them)")
    if row is not None and profile is None:
        raise GpuperfError("--row picks a row of the --profile table; a KERNEL has none")
    row = 1 if row is None else row

    def advised() -> tuple[Advice, str, bool]:
        entries = select_entries(load_optimizations(optimizations or ()), only)
        if profile is not None:
            return (*_profile_advice(profile, row, gpu, param, device, threshold, entries, min_confidence,
                                     as_json or no_progress), bool(entries))
        return (*_kernel_advice(kernel, param, gpu, device, threshold, entries, min_confidence,
                                as_json or no_progress), bool(entries))

    # every note said on the way (a folder of no entries, a pairs table's time in ms, a mistake in an entry) is
    # printed on stderr and carried by --json
    (result, subject, any_entry), notes = with_notes(advised)
    # said once the advice is made, so an error is the only line; "H100": the SXM board, though gpuperf
    # describes the PCIe one too
    boards = boards_note(gpu) if gpu is not None else None
    if as_json:
        advice = advice_json(result, threshold, min_confidence)
        advice["notes"] = [*notes, *(note for note in advice["notes"] if note not in notes)]
        if boards:  # --json lists every note printed on stderr, as the others, without "note: "
            advice["notes"].append(boards)
        print_json({"subject": subject, **advice})
        return
    console.print(f"[bold]Advice for {escape(subject)}[/bold]", highlight=False, soft_wrap=True)
    if not any_entry:
        _line("no optimization was assessed: the optimization database holds no entries")
    elif not result.suggestions:
        _line(f"no optimization is predicted at or above {threshold:g}x with confidence >= {min_confidence:g}")
    print_table(
        [{"optimization": s.optimization, "predicted speedup": f"{decimals_apart(s.predicted_speedup, threshold)}x",
          "confidence": decimals_apart(s.confidence, min_confidence),
          "apply": s.apply.get("variant") or s.apply["summary"]}
         for s in result.suggestions],
        title=f"suggested optimizations (predicted speedup >= {threshold:g})",
    )
    for s in result.suggestions:
        _line(f"[bold]{escape(s.optimization)}[/bold]: {escape(s.explanation['summary'])}")
    below = [s for s in result.assessed if s not in result.suggestions and s.predicted_speedup < threshold]
    for s in below:
        shown = decimals_apart(s.predicted_speedup, threshold)
        _line(f"[dim]{escape(s.optimization)}: predicted {shown}x, below the threshold {threshold:g}x[/dim]")
    for name, reason in result.skipped:
        _line(f"[dim]{escape(name)}: {escape(reason)}[/dim]")


def _line(markup: str) -> None:
    """One line of advice: word-wrapped on a terminal, whole where stdout is a file or a pipe (a log, a
    script's grep), as the table above it is, instead of broken at 80 columns mid-sentence."""
    console.print(markup, highlight=False, soft_wrap=not console.is_terminal)


def _profile_advice(profile: str, row: int, gpu: str | None, param: list[str] | None, device: str | None,
                    threshold: float, entries: list, min_confidence: float, hidden: bool) -> tuple[Advice, str]:
    """The advice for row ``row`` of the profile table ``profile``, and what it is about."""
    from gpuperf.decisions.advisor import advise_profile
    from gpuperf.decisions.profile import profile_gpu, read_profile
    from gpuperf.errors import GpuperfError

    if param or device:
        raise GpuperfError("--profile takes no -p or --device: the profile row describes the launch")
    launch = read_profile(profile, row, gpu)
    with _progress_bar(hidden) as progress:
        result = advise_profile(launch, gpu, threshold, entries, where=f"{profile}: row {row}",
                                min_confidence=min_confidence, progress=progress)
    # --gpu names a GPU the row does not describe; else the GPU the row names in gpu or device
    used = _gpu_name(gpu) if gpu is not None else profile_gpu(launch)
    named = [str(value) for value in (launch.get("kernel"), used) if value not in (None, "")]
    return result, f"{profile}, row {row}" + (f" ({', '.join(named)})" if named else "")


def _kernel_advice(kernel: str, param: list[str] | None, gpu: str | None, device: str | None, threshold: float,
                   entries: list, min_confidence: float, hidden: bool) -> tuple[Advice, str]:
    """The advice for the kernel ``kernel`` at the sizes ``param``, and what it is about."""
    from gpuperf.decisions.advisor import advise_kernel
    from gpuperf.kernels import get_kernel

    described_gpu(gpu)  # a --profile's GPU is checked as import checks it
    found = get_kernel(kernel)
    sizes = kernel_sizes(found, param)
    with _progress_bar(hidden) as progress:
        result = advise_kernel(found, sizes, gpu, device, threshold, entries, min_confidence=min_confidence,
                               progress=progress, space=variant_space_name(kernel, found))
    where = device or (_gpu_name(gpu) if gpu else "the GPUs of the bundled training pairs")
    return result, f"{found.key} at {', '.join(f'{k}={v}' for k, v in sizes.items())} on {where}"


@contextmanager
def _progress_bar(hidden: bool) -> Iterator[Callable[[int, int, str], None]]:
    """A transient bar over the optimizations assessed (a first run fits every entry's models: minutes)."""
    from gpuperf.progress import progress_bar

    with progress_bar(hidden) as bar:  # on stderr: stdout holds only the advice
        task = bar.add_task("assessing optimizations", total=None)

        def update(done: int, total: int, name: str) -> None:
            bar.update(task, completed=done, total=total, description=f"assessing {name}")

        yield update


def advice_json(result: Advice, threshold: float, min_confidence: float | None = None) -> dict[str, list]:
    """``suggestions`` (above the threshold, confident enough), ``below_threshold`` (assessed, not
    suggested), ``not_suggested``: every other optimization with its reason (does not apply, not
    assessed, abstained), and ``notes``: mistakes found in the entries."""
    return {
        "suggestions": [s.to_dict(threshold, min_confidence) for s in result.suggestions],
        "below_threshold": [s.to_dict(threshold, min_confidence) for s in result.assessed
                            if s.predicted_speedup < threshold],
        "not_suggested": [{"optimization": name, "reason": reason} for name, reason in result.skipped],
        "notes": list(result.notes),  # mistakes in the entries, also printed on stderr
    }


def optimizations_list(
    optimizations: OptimizationsOption = None,
    as_json: Annotated[bool, typer.Option("--json", metavar="", help="print JSON")] = False,
) -> None:
    """List the optimization database: entries, where they come from and their training pairs."""
    from gpuperf.decisions.optimizations import load_optimizations

    rows = [
        {"name": e.name, "title": e.title, "apply": e.apply["kind"], "pairs": [p.change for p in e.pairs],
         "file": str(e.path)}
        for e in load_optimizations(optimizations or ()).values()
    ]
    if as_json:
        print_json(rows)
    else:
        print_table([{**r, "pairs": len(r["pairs"])} for r in rows], title="optimization database",
                    columns=["name", "title", "apply", "pairs", "file"])


def _gpu_name(gpu: str) -> str:
    """The GPU an alias (``A100``, ``H100``) stands for, as advice for it is about that GPU."""
    from gpuperf.hardware.specs import get_gpu

    return get_gpu(gpu).name


def register(app: typer.Typer) -> None:
    """Add this area's commands to ``app``."""
    app.command("advise")(advise)
    app.command("optimizations")(optimizations_list)
