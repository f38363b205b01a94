"""Commands for measuring: ``measure``, ``devices`` and ``campaign run|status|export``."""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from gpuperf.cli.output import (
    at_least, checked_seed, counted, kernel_sizes, named_values, new_output_file, notes_kept, print_json, print_table,
    store_file,
)
from gpuperf.errors import GpuperfError, GpuperfNote

if TYPE_CHECKING:
    from gpuperf.measure.timing import Measurement, TimingSettings

campaign_app = typer.Typer(help="Sweep kernels x variants x sizes on a device into a measurement store.",
                           no_args_is_help=True)

MEASUREMENT_KEYS = ("time_s", "time_s_min", "time_s_iqr", "repeats", "device", "verified")


def measure_command(
    kernel: str = typer.Argument(..., help="catalog name, variant name\\[param=value,...] or path/file.py:function"),
    param: list[str] = typer.Option(None, "--param", "-p", help="size parameter, e.g. -p n=4096"),
    device: str = typer.Option("opencl:0", "--device", "-d", help="opencl:0, opencl:<platform>:<device>, cuda:0"),
    no_verify: bool = typer.Option(False, "--no-verify", metavar="", help="do not check the outputs against the reference"),
    min_repeats: int = typer.Option(5, "--min-repeats", help="timed runs at least"),
    min_time: float = typer.Option(0.1, "--min-time", help="summed kernel seconds at least"),
    max_repeats: int = typer.Option(1000, "--max-repeats", help="timed runs at most (a note says when they stop "
                                    "short of --min-time)"),
    seed: int = typer.Option(0, "--seed", help="random seed of the inputs"),
    json_out: bool = typer.Option(False, "--json", metavar="", help="print JSON"),
) -> None:
    """Time one kernel at one set of sizes on a device (median of device-side timers)."""
    from gpuperf.kernels.catalog import get_kernel
    from gpuperf.measure.timing import TimingSettings, measure

    at_least("--min-repeats", min_repeats, 1)
    if max_repeats < min_repeats:
        raise GpuperfError(f"--max-repeats {max_repeats}: must be at least --min-repeats ({min_repeats})")
    if not 0 <= min_time < math.inf:
        raise GpuperfError(f"--min-time {min_time}: must be a finite number of seconds, not negative")
    checked_seed(seed)
    settings = TimingSettings.from_mapping({"min_repeats": min_repeats, "min_time_s": min_time,
                                            "max_repeats": max_repeats}, "options")
    found = get_kernel(kernel)
    result = measure(found, kernel_sizes(found, param), device=device, verify=not no_verify, settings=settings, seed=seed)
    data = {key: getattr(result, key) for key in MEASUREMENT_KEYS}
    data.update(kernel=result.kernel, sizes=result.sizes, retries=result.retries, stable=result.stable,
                max_rel_error=result.max_rel_error, compile_s=result.compile_s,
                global_size=result.global_size, local_size=result.local_size, provenance=result.provenance)
    notes = measurement_notes(result, verify=not no_verify, settings=settings)
    if json_out:
        print_json({**data, "notes": notes})
    else:
        shown = {k: v for k, v in data.items() if k not in ("provenance", "sizes")}
        print_table([{"field": k, "value": v} for k, v in shown.items()], title=f"{result.kernel} at {named_values(result.sizes)}")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)


def measurement_notes(result: Measurement, verify: bool, settings: TimingSettings | None = None) -> list[str]:
    """What the figures do not say themselves: why outputs were not checked, an unsteady time, runs
    that stopped short of ``settings.min_time_s`` (at ``max_repeats`` or ``max_round_s`` of wall time)."""
    notes = []
    summed = float(sum(result.samples))
    if settings is not None and summed < settings.min_time_s:
        cause = (f"at {len(result.samples)} runs (--max-repeats {settings.max_repeats})"
                 if len(result.samples) >= settings.max_repeats else
                 f"after {settings.max_round_s:g} s of wall time")
        notes.append(f"the timed runs sum to {summed:.3g} s, short of --min-time {settings.min_time_s:g} s: they "
                     f"stopped {cause}")
    if not result.verified:
        notes.append("outputs not checked: --no-verify" if not verify else
                     "outputs not checked: the kernel has no NumPy reference")
    if not result.stable:
        notes.append(f"the runs' spread stayed wide after {result.retries} re-measure(s): the time is unsteady "
                     "(a busy machine?); compare it with care")
    return notes


def devices_command(json_out: bool = typer.Option(False, "--json", metavar="", help="print JSON")) -> None:
    """List the devices gpuperf can measure on, and why one cannot build kernels."""
    from gpuperf.measure.devices import available_devices, build_problems, no_device_reason

    listed = available_devices()
    problems = build_problems([name for name, _ in listed])
    rows = [{"device": name, "description": description, "cannot_build": problems[name]}
            for name, description in listed]
    if not rows:
        warnings.warn(GpuperfNote(f"no device to measure on: {no_device_reason()}"), stacklevel=1)
    if json_out:
        print_json(rows)
    elif rows:
        print_table(_devices_table(rows), title="devices", prose=("description", "cannot build kernels"))


def _devices_table(rows: list[dict]) -> list[dict]:
    """``devices``' rows for its table: a column saying why a device cannot build kernels, where one cannot."""
    if not any(row["cannot_build"] for row in rows):
        return [{"device": row["device"], "description": row["description"]} for row in rows]
    return [{"device": row["device"], "description": row["description"],
             "cannot build kernels": row["cannot_build"] or ""} for row in rows]


@campaign_app.command("run")
def campaign_run(
    file: Path = typer.Argument(..., help="campaign TOML file"),
    store: Path = typer.Option(..., "--store", help="SQLite measurement store (created if missing, in an existing folder)"),
    device: str = typer.Option(None, "--device", "-d", help="override the file's device"),
    retry_failed: bool = typer.Option(False, "--retry-failed", metavar="", help="take the failed points again"),
    no_progress: bool = typer.Option(False, "--no-progress", metavar="", help="no progress bar"),
    json_out: bool = typer.Option(False, "--json", metavar="", help="print the run's summary as JSON"),
) -> None:
    """Measure every point of FILE not yet in the store (resumes where a previous run stopped)."""
    from gpuperf.measure.campaign import first_failures, load_campaign, run_campaign

    store_file(store)
    campaign = load_campaign(file)
    if campaign.skipped:
        print(f"note: {file}: {len(campaign.skipped)} variant(s) left out at sizes outside their assumptions "
              f"(e.g. {campaign.skipped[0]})", file=sys.stderr)
    for note in campaign.defaulted:
        print(f"note: {note}", file=sys.stderr)
    report = run_campaign(campaign, store, device=device, progress=not (no_progress or json_out),
                          retry_failed=retry_failed)
    summary = report.to_dict()
    summary["skipped_variant_sizes"] = len(campaign.skipped)
    for line in first_failures(summary.get("failures", [])):
        print(f"note: {campaign.name}: {line}", file=sys.stderr)
    if json_out:
        print_json(summary)
    else:
        shown = {k: v for k, v in summary.items() if k != "failures"}  # named in the notes above
        print_table([{"field": k, "value": v} for k, v in shown.items()], title=f"campaign {campaign.name}")


@campaign_app.command("status")
def campaign_status_command(
    store: Path = typer.Option(..., "--store", help="SQLite measurement store"),
    json_out: bool = typer.Option(False, "--json", metavar="", help="print JSON"),
) -> None:
    """Points done, failed and remaining per campaign in the store."""
    from gpuperf.measure.campaign import campaign_status

    rows = campaign_status(store)
    if json_out:
        print_json(rows)
    else:
        columns = ["campaign", "device", "planned", "done", "failed", "compile_failed", "run_failed",
                   "verify_failed", "remaining", "outside_plan", "partly_cycled"]
        print_table(rows, title=f"store {store}", columns=columns)


@campaign_app.command("export")
def campaign_export(
    store: Path = typer.Option(..., "--store", help="SQLite measurement store"),
    out: Path = typer.Option(..., "--out", "-o", help="output file"),
    fmt: str = typer.Option(None, "--format", help="csv or parquet (default: from --out's suffix)"),
    campaign: str = typer.Option(None, "--campaign", help="only this campaign"),
    no_features: bool = typer.Option(False, "--no-features", metavar="", help="leave out the static feature columns"),
    cycle_times: bool = typer.Option(False, "--cycle-times", metavar="",
                                     help="add cycle_times_s and cycle_group: an interleaved point's "
                                          "per-cycle times and the cycles' identifier"),
    no_progress: bool = typer.Option(False, "--no-progress", metavar="", help="no progress bar"),
    json_out: bool = typer.Option(False, "--json", metavar="", help="print JSON: the file written, its rows, the notes"),
) -> None:
    """Write the store as a dataset table (one row per point)."""
    from gpuperf.measure.export import export_store

    from gpuperf.progress import progress_task

    new_output_file(out)
    with notes_kept() as notes, progress_task("exporting points", no_progress or json_out) as progress:
        frame = export_store(store, out, fmt, campaign=campaign, features=not no_features, cycle_times=cycle_times,
                             progress=progress)
    if json_out:
        print_json({"out": str(out), "rows": len(frame), "columns": [str(c) for c in frame.columns],
                    "campaigns": sorted(map(str, frame["campaign"].dropna().unique())) if "campaign" in frame else [],
                    "notes": notes})
        return
    print(f"wrote {counted(len(frame), 'row')} x {counted(len(frame.columns), 'column')} to {out}")


def register(app: typer.Typer) -> None:
    """Add this area's commands to ``app``."""
    app.command("measure")(measure_command)
    app.command("devices")(devices_command)
    app.add_typer(campaign_app, name="campaign")
