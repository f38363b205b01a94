"""Commands about data: the bundled datasets, and importing outside measurements."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from gpuperf.cli.output import counted, csv_output_name, new_output_file, notes_kept, print_json, print_table

if TYPE_CHECKING:
    import pandas as pd

    from gpuperf.cli.output import KeptNotes


def import_command(
    format_name: str = typer.Argument(..., metavar="FORMAT", help="kernel-tuner, nvprof or ncu"),
    paths: list[Path] = typer.Argument(..., metavar="FILE", help="the file(s) to import (a Kernel Tuner cache "
                                       ".json, a profiler CSV); several of one format are written as one table, such "
                                       "as a Kernel Tuner cache per GPU"),
    out: Path = typer.Option(..., "--out", "-o", help="where to write the dataset table (CSV)"),
    metrics: Optional[Path] = typer.Option(
        None, "--metrics", help="nvprof only: an nvprof --metrics/--events CSV whose averages join the profile, "
        "or one with --print-gpu-trace whose launches join a GPU trace's by Correlation_ID"
    ),
    gpu: Optional[str] = typer.Option(
        None, "--gpu", help="the GPU the file's times were taken on, where the file does not name it (an nvprof "
        "summary; an ncu CSV without device__attribute_display_name; a Kernel Tuner cache with an empty device_name)"
    ),
    as_json: bool = typer.Option(False, "--json", metavar="", help="print JSON: the file written, its rows, the notes"),
) -> None:
    """Import measurements into gpuperf's dataset shape and write them as CSV."""
    with notes_kept() as notes:
        summary = imported(format_name, paths, out, metrics, gpu, notes)
    if as_json:
        print_json({**summary, "notes": notes})
    else:
        print(f"wrote {counted(summary['rows'], 'row')} ({summary['failed']} not ok) to {out}")


def imported(format_name: str, paths: list[Path], out: Path, metrics: Optional[Path], gpu: Optional[str],
             notes: KeptNotes) -> dict:
    """Imports ``paths`` and writes them to ``out`` as one table: the summary ``--json`` prints (less its notes)."""
    import pandas as pd

    from gpuperf.datasets import write_dataset_csv
    from gpuperf.errors import GpuperfError
    from gpuperf.progress import progress_task

    csv_output_name(out)
    new_output_file(out)
    if metrics is not None and format_name != "nvprof":
        raise GpuperfError(f"--metrics goes with the nvprof format, not '{format_name}'")
    seen: set[Path] = set()
    for path in paths:
        if path.resolve() in seen:
            raise GpuperfError(f"{path}: named twice; each file is imported once")
        seen.add(path.resolve())
    if metrics is not None and len(paths) > 1:
        raise GpuperfError(f"--metrics joins one profile; import the {len(paths)} files one at a time")
    frames = [imported_file(format_name, path, metrics, gpu, notes) for path in paths]
    frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    with progress_task(f"writing {counted(len(frame), 'row')} to {out}"):
        write_dataset_csv(frame, out)
    return {"out": str(out), "format": format_name, "rows": len(frame), "failed": int((frame["status"] != "ok").sum()),
            "gpus": sorted({str(g) for g in frame.get("gpu", ()) if pd.notna(g)})}


def imported_file(format_name: str, path: Path, metrics: Optional[Path], gpu: Optional[str],
                  notes: KeptNotes) -> pd.DataFrame:
    """One file's rows in the dataset shape, with a note for each GPU name no descriptor has."""
    import pandas as pd

    from gpuperf.datasets import import_file
    from gpuperf.datasets.schema import canonical_gpu, lookup_gpu, text_cells
    from gpuperf.errors import GpuperfError
    from gpuperf.hardware.specs import gpu_suggestion, other_boards_note
    from gpuperf.progress import progress_task

    options = {key: value for key, value in (("metrics", metrics), ("gpu", gpu)) if value is not None}
    with progress_task(f"importing {path}"):  # a cache of 100,000 configurations imports for seconds
        frame = import_file(format_name, path, **options)
    if frame.empty:
        raise GpuperfError(f"{path}: no launches or configurations in it; nothing to write")
    if format_name == "kernel-tuner":
        named = text_cells(frame["device"]).str.strip()
        if gpu is None and named.eq("").all():
            raise GpuperfError(f"{path}: the cache names no GPU (its device_name is empty); say which GPU it ran on "
                               "(--gpu)")
    # The GPU names the rows take: --gpu's, else the file's own (each as the file spells it and as resolved).
    if gpu is not None:
        named_gpus = [(gpu, canonical_gpu(gpu), f"--gpu {gpu}")]
    else:
        spelled = frame["device"] if "device" in frame.columns else frame["gpu"]
        pairs = sorted({(str(d), str(g)) for d, g in zip(spelled, frame["gpu"]) if pd.notna(d) and str(d).strip()})
        named_gpus = [(device, resolved, f"{path}: GPU '{device}'") for device, resolved in pairs]
    for spelling, resolved, where in named_gpus:
        notes.add(other_boards_note(spelling))
        if lookup_gpu(resolved) is None:
            notes.add(f"note: {where}: no GPU descriptor has this name ({gpu_suggestion(spelling)}); the rows name "
                      "it as given, so no GPU features join them")
    return frame


def datasets_command(
    as_json: bool = typer.Option(False, "--json", metavar="", help="print JSON (with kernel and GPU names)"),
) -> None:
    """List the bundled datasets: rows, kernels, GPUs, source and license, and the folder they are in."""
    from gpuperf.datasets import dataset_summary
    from gpuperf.datasets.bundled import data_dir

    summary = dataset_summary(progress=True)
    if as_json:
        print_json(summary)
        return
    columns = ["name", "rows", "kernels", "gpus", "license"]
    rows = [{c: row[c] for c in columns} for row in summary]
    print_table(rows, title="Bundled datasets (gpuperf datasets --json for more)")
    print(f"Files, with their provenance (README.md) and licences (LICENSES.md), in {data_dir().resolve()}")
    by_source: dict[str, list[str]] = {}
    for row in summary:
        by_source.setdefault(row["source"], []).append(row["name"])
    for source, names in by_source.items():
        print(f"{', '.join(names)}: {source}")


def register(app: typer.Typer) -> None:
    """Add this area's commands to ``app``."""
    app.command("import")(import_command)
    app.command("datasets")(datasets_command)
