"""``predict-gpu``: a GPU's times of a job's launches from other GPUs' times of the same launches, scaled
by a few launches timed on it (no model, no counters: what a scheduler pricing a job on another GPU has)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpuperf.cli.model_tables import (
    exact_repeats, print_note, read_table, repeats_note, rows_boards_notes, status_note, table_output_name,
    write_table,
)
from gpuperf.cli.output import comma_separated, counted, new_output_file, print_json, print_table
from gpuperf.errors import GpuperfError

if TYPE_CHECKING:
    import pandas as pd

JsonArg = Annotated[bool, typer.Option("--json", metavar="", help="print JSON")]


def predict_gpu_command(
    data: Annotated[list[str], typer.Argument(
        help="CSV or Parquet table(s) (gpu, kernel, the --key columns, time_s); several are read as one")],
    gpu: Annotated[str, typer.Option("--gpu", help="the GPU to predict (some launches of each kernel timed on it)")],
    key: Annotated[str, typer.Option(
        "--key", help="columns a,b,... that name a launch beside kernel (and variant): sizes, grid, block")],
    out: Annotated[Path, typer.Option("--out", "-o", help="CSV (or .parquet) to write")],
    as_json: JsonArg = False,
) -> None:
    """Predict a GPU's time of the launches timed on other GPUs, scaled by a few launches timed on it."""
    from gpuperf.datasets.profiler_csv import respelled_profiled_names
    from gpuperf.hardware.specs import other_boards_note
    from gpuperf.models.cross_gpu import PREDICTED as PREDICTED_COLUMN
    from gpuperf.models.cross_gpu import times_on_gpu

    table_output_name(out)
    new_output_file(out)
    columns = comma_separated(key)
    if not columns:
        raise GpuperfError("--key: name the columns that tell launches apart, e.g. --key n or --key grid.x,block.x")
    tables = [(respelled_profiled_names(table), label) for table, label in map(read_table, data)]  # older imports
    frame, where = launch_tables(tables, columns)
    result = times_on_gpu(frame, gpu, columns, where)  # its measured rows: see times_on_gpu
    named = other_boards_note(gpu)
    for note in dict.fromkeys([named, *rows_boards_notes(frame, True)]):  # rows of two spellings are one GPU
        print_note(note)
    written = result.priced.assign(predicted_gpu=result.gpu)  # the launches it timed too: the job's total
    write_table(written, out)
    for each, each_where in tables:
        print_note(status_note(each, each_where))
    print_note(repeated_launches_note(frame, where))
    if result.not_calibrated:
        print_note(f"note: not predicted, no launch timed on {result.gpu}: kernel(s) "
                    f"{', '.join(result.not_calibrated)}")
    print_note(not_predicted_note(result.not_predicted, result.gpu))
    print_note(disagreeing_note(result.disagreeing, where))
    spread = spread_launches(written)
    print_note(spread_note(spread, result.gpu))
    measured = int((written["source"] == "measured").sum())
    summary = {"gpu": result.gpu, "out": str(out), "rows": len(written), "predicted": len(written) - measured,
               "measured": measured, "time_column": PREDICTED_COLUMN,
               "kernels": result.kernels.to_dict("records"), "not_calibrated": result.not_calibrated,
               "not_predicted": result.not_predicted.to_dict("records"),
               "disagreeing_launches": result.disagreeing.to_dict("records"),  # print_json: NaN as null
               "spread_launches": spread.to_dict("records"),
               "predicted_total_s": float((written[PREDICTED_COLUMN] * written["launches"]).sum()),
               "uncovered_source_time_s": result.uncovered}
    if as_json:
        print_json(summary)
        return
    print_table(summary["kernels"], title=f"{result.gpu}: launches predicted per kernel")
    print(f"the job on {result.gpu}: {summary['predicted_total_s']:.4g} s ({PREDICTED_COLUMN} x launches summed)"
          + ("; not priced: launches taking " + ", ".join(f"{seconds:.4g} s on {name}" for name, seconds
                                                          in result.uncovered.items()) if result.uncovered else ""))
    print(f"wrote {counted(len(written), 'row')} with {PREDICTED_COLUMN} to {out} ({summary['predicted']} predicted, "
          f"{measured} timed on {result.gpu}: their median)")


def launch_tables(tables: list[tuple[pd.DataFrame, str]], key: list[str]) -> tuple[pd.DataFrame, str]:
    """The (table, label) pairs as one table (on the union of their columns) and its label; each is
    checked first (a gpu column, the key's, positive times; a time_ms table's times taken as time_s),
    so an error names its file and row."""
    import pandas as pd

    from gpuperf.datasets.schema import TARGET, measured_rows
    from gpuperf.models.cross_gpu import check_launches_named

    tables = [(summary_calls(frame, where), where) for frame, where in tables]
    if len(tables) == 1:
        frame, where = tables[0]
        if "gpu" not in frame.columns:
            raise GpuperfError(f"{where}: missing column gpu (the GPU each row was timed on)")
        return frame, where
    frames = []
    for frame, where in tables:
        missing = [column for column in ("gpu", "kernel", *key) if column not in frame.columns]
        if missing:
            raise GpuperfError(f"{where}: missing column(s) {', '.join(missing)} (the GPU and the launch: kernel and --key)")
        measured = measured_rows(frame, where, other_units=True)  # an error names the file and row
        check_launches_named(measured, key, where)
        if TARGET not in frame.columns:  # timed in another unit: its seconds, for a table of several units
            frame = frame.assign(**{TARGET: measured[TARGET].reindex(frame.index)})
        if "status" not in frame.columns:  # every row measured, beside a table whose status says which are
            frame = frame.assign(status="ok")
        frames.append(frame)
    return pd.concat(frames, ignore_index=True), " + ".join(where for _, where in tables)


def summary_calls(frame: pd.DataFrame, where: str) -> pd.DataFrame:
    """``frame`` with its ``repeats`` taken as ``calls``, with a note naming ``where``, where it is an nvprof
    summary imported by an earlier version (``kernel_full_name`` and ``time_s_max``, ``repeats`` but no
    ``calls``: those stored a kernel's call count as repeats); another table's repeats are timing runs."""
    summary = {"repeats", "kernel_full_name", "time_s_max"} <= set(frame.columns) and "calls" not in frame.columns
    if not summary:
        return frame
    print_note(f"note: {where}: an nvprof summary imported by an earlier gpuperf version, its call counts in "
                "repeats: each row's repeats taken as its calls (the launches it stands for)")
    return frame.rename(columns={"repeats": "calls"})


def repeated_launches_note(frame: pd.DataFrame, where: str) -> str | None:
    """A note counting the rows that repeat an earlier one in every column (a trace pasted twice?),
    each still counted as a launch (a job's launches can share every value), naming the first."""
    repeated = exact_repeats(frame)
    if repeated is None:
        return None
    return repeats_note(frame, where, repeated, "rows",
                        "each counts as a launch in launches; if the table holds a trace twice, drop them")


def _launch_text(row: pd.Series, leave_out: tuple[str, ...]) -> str:
    return ", ".join(f"{column}={row[column]}" for column in row.index if column not in leave_out
                     and not (isinstance(row[column], float) and math.isnan(row[column])))


def not_predicted_note(not_predicted: pd.DataFrame, gpu: str) -> str | None:
    """A note counting the launches of calibrated kernels no GPU could be scaled for, naming the first."""
    if not_predicted.empty:
        return None
    first = not_predicted.iloc[0]
    shown = ("timed_on", "calibrated_variant")
    note = (f"note: not predicted, {len(not_predicted)} launch(es) timed only on GPUs that timed no launch of the "
            f"kernel that {gpu} timed (no ratio to scale them by); the first: {_launch_text(first, shown)} "
            f"on {first['timed_on']}")
    if "calibrated_variant" not in not_predicted.columns or not not_predicted["calibrated_variant"].notna().any():
        return note
    alike = not_predicted[not_predicted["calibrated_variant"].notna()]
    variant = alike.iloc[0]["calibrated_variant"]
    return (note + f"; {len(alike)} of them differ from a launch {gpu} timed only by variant (the first: "
            f"{_launch_text(alike.iloc[0], shown)}, timed on {gpu} "
            + (f"as variant={variant})" if variant else "with no variant)"))


def disagreeing_note(disagreeing: pd.DataFrame, where: str) -> str | None:
    """A note naming the first launch timed on one GPU at times far apart (None when there is none)."""
    from gpuperf.models.cross_gpu import DISAGREEING

    if disagreeing.empty:
        return None
    first = disagreeing.iloc[0]
    launch = _launch_text(first, ("gpu", "times", "fastest_time_s", "slowest_time_s"))
    return (f"note: {where}: {len(disagreeing)} launch(es) timed more than once on one GPU at times over "
            f"{DISAGREEING:g}x apart, each counted by its median; the first: {launch} on {first['gpu']}, "
            f"{int(first['times'])} times from {first['fastest_time_s']:.3g} s to {first['slowest_time_s']:.3g} s")


def spread_launches(priced: pd.DataFrame) -> pd.DataFrame:
    """The predicted rows whose GPUs' scaled times lie over :data:`DISAGREEING` times apart (``spread``)."""
    from gpuperf.models.cross_gpu import DISAGREEING, SPREAD

    wide = (priced["source"] == "predicted") & (priced[SPREAD] > DISAGREEING)
    return priced[wide].drop(columns=["source", "predicted_gpu"], errors="ignore").reset_index(drop=True)


def spread_note(spread: pd.DataFrame, gpu: str) -> str | None:
    """A note counting the predicted launches whose GPUs disagree over 2x, naming the first (None when none)."""
    from gpuperf.models.cross_gpu import DISAGREEING, SPREAD

    if spread.empty:
        return None
    first = spread.iloc[0]
    launch = _launch_text(first, ("predicted_time_s", "gpus_used", SPREAD, "launches"))
    return (f"note: {len(spread)} launch(es) predicted for {gpu} from GPUs whose scaled times lie over "
            f"{DISAGREEING:g}x apart (spread), their geometric mean taken; the first: {launch}, spread "
            f"{first[SPREAD]:.3g} over {int(first['gpus_used'])} GPUs")


def register(app: typer.Typer) -> None:
    """Add ``predict-gpu``."""
    app.command("predict-gpu")(predict_gpu_command)
