"""Commands that decide with predictions: explore a variant space, tune one on a device, rank a
catalog space's variants from other kernels' measurements, choose a launch geometry."""

from __future__ import annotations

import dataclasses
import sys
from functools import partial
from pathlib import Path
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Optional

import typer

from gpuperf.cli.output import (
    at_least, boards_note, checked_seed, comma_separated, described_gpu, known_choice, claimed_output, csv_output_name, is_empty_claim, new_output_file, nothing_to_resume, output_lock, parse_params,
    not_blank, print_json, print_table, refuse_model_name, refuse_surrogate_file, report_folder, shown_if_unreported,
    space_sizes, whole_counts, with_notes,
)
from gpuperf.errors import GpuperfError, counted
from gpuperf.progress import progress_bar, progress_task

if TYPE_CHECKING:
    import pandas as pd

    from gpuperf.decisions.space import Space
    from gpuperf.decisions.tune import TuneResult


SAVED_MODELS_PREDICT = "a saved model's predictions of a table: gpuperf predict-table DATA --model {model} --out PRED.csv"


def explore_command(
    space: str = typer.Argument(
        ..., help="one kernel on one GPU: a CSV or Parquet table (parameter columns and a time column; .csv.gz too), "
        "a Kernel Tuner cache (.json, .json.gz, .json.bz2, .json.xz) or a bundled dataset's name (with --kernel and --gpu)"),
    params: Optional[str] = typer.Option(
        None, "--params", help="comma-separated parameter columns, e.g. MWG,NWG,VWM (by default a cache's own, "
        "or the names in a table's variant labels)"),
    kernel: Optional[str] = typer.Option(None, "--kernel", "-k", help="pick this kernel's rows from a table of several"),
    gpu: Optional[str] = typer.Option(
        None, "--gpu", help="pick this GPU's rows from a table of several (its name, or words of it such as V100)"),
    param: Optional[list[str]] = typer.Option(
        None, "-p", "--param", help="pick the rows of this size from a table of several, e.g. -p n=1024 (repeatable); "
        "--train tables then count one space per size too"),
    target: Optional[str] = typer.Option(None, "--target", help="time column (default: time_ms, time_s or time; a cache's time)"),
    train: Optional[list[str]] = typer.Option(
        None, "--train", help="the same parameters measured on another GPU: a table, a cache or a bundled dataset's name "
        "(repeatable; a table of several kernels, GPUs or problem sizes counts as one per kernel, GPU and "
        "problem size)"),
    model: Optional[str] = typer.Option(
        None, "--model", "-m", help="surrogate: et (default with --train), gp (default without), rf, gbt or knn"
    ),
    budget: int = typer.Option(200, "--budget", help="at most this many evaluations"),
    refit: bool = typer.Option(True, "--refit/--no-refit", metavar="", help="refit after each measurement (--no-refit: one ranking from --train)"),
    seed: int = typer.Option(0, "--seed", help="seed of the model and of the first random picks"),
    report: Optional[str] = typer.Option(None, "--report", help="also write a report folder (table and curves) here"),
    no_progress: bool = typer.Option(False, "--no-progress", metavar="", help="no progress bar"),
    as_json: bool = typer.Option(False, "--json", metavar="", help="print JSON"),
) -> None:
    """Simulate exploring a measured variant space in predicted-best-first order."""
    checked_seed(seed)
    not_blank("--target", target, "the time column")
    refuse_surrogate_file(model, "explore", SAVED_MODELS_PREDICT.format(model=model))
    at_least("--budget", budget, 1)
    from gpuperf.decisions.exploration import explore, result_summary
    from gpuperf.decisions.space import is_kernel_tuner_cache, read_space

    if report is not None:
        report_folder(report)
    names = comma_separated(params) if params else None
    sizes = parse_params(param, text=True)  # a table's size may be text, e.g. problem_size=[1024, 1024]
    with progress_bar(no_progress or as_json) as bar:  # a cache of 100,000 configurations reads for seconds
        reading = bar.add_task(f"reading {space}{' and the --train tables' if train else ''}", total=None)
        measured = read_space(space, names, target, kernel, gpu, sizes)
        measured, others = other_gpus_spaces(measured, train or [], target, list(sizes), gpu)
        bar.remove_task(reading)
    if not names and not is_kernel_tuner_cache(space):
        print(f"note: parameters from the variant labels of {measured.where}: {', '.join(measured.params)}", file=sys.stderr)
    undescribed_gpu_note(measured.gpu, others)
    with progress_task(f"exploring {len(measured)} configurations", no_progress or as_json) as progress:
        result = explore(measured, others, model=model, refit=refit, budget=budget, seed=seed, size_columns=list(sizes),
                         progress=progress)
    summary = result_summary(measured, result)
    if report is not None:
        from gpuperf.decisions.reports import exploration_report

        label = measured.where.replace(space, Path(space).name, 1) if Path(space).is_file() else measured.where
        found = summary["best_found_time"]
        notes = [f"Space {measured.where}: {len(measured)} configurations, times in {summary['time_column']}; best "
                 f"{summary['best_time']:.4g}, best found {'nothing that ran' if found is None else f'{found:.4g}'}"
                 f" in {summary['evaluated']} evaluations.",
                 f"Trained on: {', '.join(train)} ({len(others)} space(s) measured elsewhere)."
                 if train else "No other GPU's data: online search."]
        figures = {key: summary[key] for key in ("best_time", "best_found_time", "evaluated", "time_column")}
        summary["report"] = str(exploration_report(report, {label: result}, f"Exploring {label}", notes,
                                                   metrics={"exploration": figures})["markdown"])
    if as_json:
        print_json(summary)
        return
    keys = [k for k in summary if k not in ("order",)]
    print_table([{"figure": k, "value": summary[k]} for k in keys], title=f"explore {space}")
    print_table(
        numbered(failures_named(summary["order"][:10]), measured.params,
                 time_column=summary.get("time_column") or "time"),
        title="first evaluations (--json for the whole order)",
    )
    print(verdict(summary))


def undescribed_gpu_note(gpu: str | None, others: Sequence[Space]) -> None:
    """A note when the space's GPU is named but not one gpuperf describes, while other GPUs' data would be
    weighed by their likeness to it: they are weighed equally instead."""
    from gpuperf.hardware.specs import canonical_gpu_name, gpu_suggestion

    if others and gpu and canonical_gpu_name(gpu) is None:
        print(f"note: the space's GPU '{gpu}' is not one gpuperf describes ({gpu_suggestion(gpu)}), so the "
              "other GPUs' data are weighed equally, not by likeness to it",
              file=sys.stderr)


def failures_named(order: list[dict]) -> list[dict]:
    """``explore``'s evaluations with the time of one that failed (None, null in ``--json``) shown as
    ``failed``, not as an empty cell that reads as a time not known."""
    return [{**row, "time": "failed" if row["time"] is None else row["time"]} for row in order]


def numbered(rows: list[dict], params: Sequence[str] = (), time_column: str = "time") -> list[dict]:
    """``rows`` numbered from 1 in a first column "#" ("trial" where a parameter is named "#", and so on), a
    value of ``params`` shown as its setting (None as None, not an empty cell; a float as Python spells it,
    1.0 as 1.0, as ``--json`` gives it), and the ``time`` key headed by ``time_column``, which names its
    unit (time_s, time_ms), where no parameter has that name."""
    taken = {key for row in rows for key in row}
    label = next(name for name in ("#", "trial", *(f"trial{'_' * n}" for n in range(1, len(taken) + 2)))
                 if name not in taken)
    header = time_column if time_column not in taken else "time"
    return [{label: i + 1, **{(header if k == "time" else k): _setting_text(v) if k in params else v
                              for k, v in row.items()}} for i, row in enumerate(rows)]


def _setting_text(value: object) -> object:
    """A parameter's setting as a table cell shows it: None and floats as text (``None``, ``1.0``), not
    an empty cell or a float's rounded figure; anything else as it is."""
    return "None" if value is None else repr(value) if isinstance(value, float) else value


def other_gpus_spaces(space: Space, train: Sequence[str], target: str | None, size_columns: Sequence[str] = (),
                      gpu: str | None = None) -> tuple[Space, list[Space]]:
    """The space, its GPU named as the ``--train`` tables record the ``--gpu`` word ``gpu`` where
    that named it (:func:`~gpuperf.decisions.space.with_recorded_gpu`), and the tables' spaces (one
    per size in ``size_columns`` too), leaving out (with a note) any of the space's own kernel, GPU
    and size, or holding its own times; from a table of several kernels that holds the space's own
    kernel, only that kernel's spaces (the same kernel measured elsewhere). The tables are read in
    the order of their names, each once (the search orders their spaces by content:
    :func:`~gpuperf.decisions.exploration.in_content_order`)."""
    from gpuperf.decisions.exploration import measured_elsewhere
    from gpuperf.decisions.space import read_training_spaces, with_recorded_gpu
    from gpuperf.decisions.training import same_kernel_where_held, sharing_configurations

    ordered = one_name_per_file(train)  # the order --train names its tables in does not change the search
    spaces = [s for path in ordered for s in same_kernel_where_held(
        space, read_training_spaces(path, space.params, target, size_columns), path, size_columns)]
    space = with_recorded_gpu(space, spaces, gpu)
    others = measured_elsewhere(space, spaces, size_columns, label="--train")
    return space, sharing_configurations(space, others)


def one_name_per_file(names: Sequence[str]) -> list[str]:
    """``names`` sorted, each file once however it is spelt (``v100.json``, ``./v100.json``: the first
    name in that order); a bundled dataset's name, no file, by its name."""
    kept: dict[object, str] = {}
    for name in sorted(dict.fromkeys(names)):
        path = Path(name)
        kept.setdefault(path.resolve() if path.exists() else name, name)
    return list(kept.values())


def ask_command(
    space: str = typer.Argument(
        ..., help="every configuration of one kernel on one GPU, one row each (CSV or Parquet; .csv.gz too): parameter "
        "columns and a time column holding the times measured so far, empty where a configuration has not run yet "
        "(a failure: a status other than ok, or a failure name such as InvalidConfig as its time)"),
    params: Optional[str] = typer.Option(
        None, "--params", help="comma-separated parameter columns (by default the names in a table's variant labels)"),
    kernel: Optional[str] = typer.Option(None, "--kernel", "-k", help="pick this kernel's rows from a table of several"),
    gpu: Optional[str] = typer.Option(
        None, "--gpu", help="pick this GPU's rows from a table of several, or name the GPU a table without a gpu "
        "column was measured on (the search then trusts the alike GPUs of --train more)"),
    param: Optional[list[str]] = typer.Option(
        None, "-p", "--param", help="pick the rows of this size from a table of several, e.g. -p n=1024 (repeatable)"),
    target: Optional[str] = typer.Option(
        None, "--target", help="time column (default: time_ms, time_s or time, whichever the table has; a table "
        "with none has nothing measured yet, its times to go in this column; one the table lacks is refused where "
        "it holds times under another name)"),
    train: Optional[list[str]] = typer.Option(
        None, "--train", help="the same parameters measured on another GPU, as explore takes them (repeatable)"),
    model: Optional[str] = typer.Option(
        None, "--model", "-m", help="surrogate: et (default with --train), gp (default without), rf, gbt or knn"),
    seed: int = typer.Option(0, "--seed", help="seed of the model and of the first random picks"),
    count: int = typer.Option(1, "--count", help="name this many configurations to measure at once (a batch)"),
    no_progress: bool = typer.Option(False, "--no-progress", metavar="", help="no progress bar"),
    as_json: bool = typer.Option(False, "--json", metavar="", help="print JSON"),
) -> None:
    """Name the configuration to measure next, from a table of the space measured so far."""
    checked_seed(seed)
    from gpuperf.datasets.schema import variant_parameters
    from gpuperf.decisions.ask import next_configuration, partly_measured
    from gpuperf.decisions.space import (
        TIME_COLUMNS,
        gpu_named,
        is_kernel_tuner_cache,
        read_table,
        select_rows,
        with_literal_texts,
    )

    at_least("--count", count, 1)
    not_blank("--target", target, "the time column")
    refuse_surrogate_file(model, "ask", SAVED_MODELS_PREDICT.format(model=model))
    if is_kernel_tuner_cache(space):
        raise GpuperfError(f"{space}: a Kernel Tuner cache holds only the configurations that ran; list every "
                           "configuration in a table, or tune with GuidedStrategy inside Kernel Tuner")
    frame = read_table(space).reset_index(drop=True)  # labels: positions in SPACE, kept by --gpu and --kernel
    frame, pick_gpu = gpu_named(frame, gpu)
    sizes = parse_params(param, text=True)
    frame, where = select_rows(frame, space, kernel, pick_gpu, sizes)
    names = comma_separated(params) if params else variant_parameters(frame)
    if not names:
        raise GpuperfError(f"{where}: say which columns are the parameters (--params P1,P2,...)")
    times = [target] if target else list(TIME_COLUMNS)  # only an empty time cell is "not measured yet"
    table = partly_measured(with_literal_texts(frame, space, names, times=times), names, target, where)
    space_on_gpu, others = other_gpus_spaces(table.space, train or [], target, list(sizes), gpu)
    table = dataclasses.replace(table, space=space_on_gpu)
    undescribed_gpu_note(table.space.gpu, others)
    with progress_task(f"choosing {count} of {int(table.pending.sum())} configurations to measure next",
                       no_progress or as_json):  # a surrogate over thousands of points fits for a minute
        result = next_configuration(table, others, model, seed, count)
    if as_json:
        print_json(result.summary())
        return
    if result.config is None:
        print(f"Every configuration of {where} has been measured ({result.failed} failed).")
    for pick in result.batch:
        shown = ", ".join(f"{k}={v}" for k, v in pick["config"].items())
        print(f"Measure next: {pick['row']} of {where}: {shown}")
    if result.batch:
        print(f"(times go in column {result.time_column})")
    if result.best_config is not None:
        best = f"best so far {result.best_time:.6g} ({result.time_column}) at {result.best_row}"
    else:
        best = "nothing has run yet" if result.measured == 0 else "none has run successfully yet"
    if 0 < len(result.batch) < count:
        print(f"note: --count {count}: only {len(result.batch)} configuration(s) left to measure", file=sys.stderr)
    print(f"{result.measured} of {result.measured + result.remaining} measured ({result.failed} failed); {best}; "
          f"search: {result.method}.")


def verdict(summary: dict) -> str:
    """One line setting the search's evaluations to 90 % beside its baselines', and why it stopped. Random
    order is judged scored as the search is (a miss within the budget counting budget + 1), where the summary
    has that figure."""
    ours, chance = summary["evals_to_90"], summary.get("random_expected_evals_to_90")
    within = summary.get("random_expected_evals_to_90_within_budget")
    transfer = summary.get("transfer_evals_to_90")
    reached = (f"reached 90 % of the best after {_evaluations(ours)}" if ours is not None
               else f"did not reach 90 % of the best in {_evaluations(summary['evaluated'])}")
    scored = (f"; {within:.1f} within the budget of {summary['budget']}, a miss counting {summary['budget'] + 1}"
              if within is not None else "")
    against = [f"random order needs {chance:.1f} on average (exact expectation{scored}; random_evals_to_90 is the "
               f"mean of seeded runs)"] if chance is not None else []
    if transfer is not None:
        against.append(f"plain transfer {transfer}")
    baselines = [b for b in (within if within is not None else chance, transfer) if b is not None]
    if ours is None:  # cut short by its budget: lost only to a baseline that got there within it
        worse = any(b <= summary["evaluated"] for b in baselines)
    else:
        worse = any(ours > b for b in baselines)
    stop = ("it stopped at the best configuration" if summary["best_found_time"] == summary["best_time"]
            else f"it stopped at its budget of {summary['budget']}")
    return (f"The search {reached}; {'; '.join(against) or 'no baseline'}"
            + ("; this space favours a baseline" if worse else "") + f". {stop.capitalize()}.")


def _evaluations(count: int) -> str:
    return f"{count} evaluation{'' if count == 1 else 's'}"


DEFAULT_VARIANT_TABLE = "stencil_spaces_pocl.csv.gz"


def _variant_table(path: str | None) -> tuple[pd.DataFrame, str]:
    """The table of other kernels' measured variants at ``path`` (rank's --train, tune's --rank-train), or
    the bundled :data:`DEFAULT_VARIANT_TABLE`, and where it was read."""
    from gpuperf.cli.model_tables import read_table
    from gpuperf.datasets.bundled import data_dir

    return read_table(path or str(data_dir() / DEFAULT_VARIANT_TABLE))


def _gpuperf_model_kind(path: str) -> str | None:
    """The kind of model gpuperf saved in ``path`` ("" where its header names none); None for no model."""
    from gpuperf.models.persistence import model_info

    try:
        info = model_info(path)
    except (GpuperfError, OSError, ValueError):
        return None
    if info.get("format") != "gpuperf-model":
        return None
    return str((info.get("metadata") or {}).get("kind") or "")


def rank_command(
    space: str = typer.Argument(..., help="a variant space: a catalog one (see gpuperf spaces), e.g. jacobi2d_9pt, or path/file.py:function"),
    param: Optional[list[str]] = typer.Option(None, "-p", "--param", help="size parameter, e.g. -p n=1024 -p m=1024"),
    train: Optional[list[str]] = typer.Option(
        None, "--train", help="measured variants of other kernels with static features and time_s, one table "
        f"(default: the bundled {DEFAULT_VARIANT_TABLE}, measured on pocl)"),
    model: Optional[Path] = typer.Option(
        None, "--model", "-m", help="rank by the time a linear count model predicts (a file written by "
        "'gpuperf calibrate') instead of a model trained on other kernels; no measured variants needed"),
    top: int = typer.Option(20, "--top", help="show this many variants (--json: all)"),
    limit: Optional[int] = typer.Option(None, "--limit", help="only the first N valid configurations (a quick look)"),
    no_progress: bool = typer.Option(False, "--no-progress", metavar="", help="no progress bar"),
    as_json: bool = typer.Option(False, "--json", metavar="", help="print JSON"),
) -> None:
    """Rank a space's variants by predicted performance (LIFT model; a count model with --model)."""

    from gpuperf.datasets.kernel_tuner import CACHE_SUFFIXES
    from gpuperf.datasets.schema import check_dataset
    from gpuperf.decisions.cross_kernel import LIFT_FEATURES, own_kernel_rows, rank_space
    from gpuperf.kernels.space import get_space

    at_least("--top", top, 1)
    at_least("--limit", limit, 1)
    if model is not None:
        refuse_model_name(model, "rank", "a linear count model 'gpuperf calibrate' wrote")
    if model is not None and train:
        raise GpuperfError("--model ranks by a calibrated linear count model, --train by measured variants: give one")
    if train and len(train) > 1:  # the rows of two tables could not be named by file and line in errors
        raise GpuperfError(f"--train takes one table here, not {len(train)}; join them into one first")
    train = train[0] if train else None
    sizes = parse_params(param)
    chosen = get_space(space)  # an unknown space fails here, before anything is read
    full_sizes = space_sizes(chosen, sizes)
    if model is not None:
        _rank_by_counts(space, chosen.parameters, full_sizes, model, top, limit, no_progress, as_json)
        return
    if train is not None and train.lower().endswith(CACHE_SUFFIXES):
        kind = _gpuperf_model_kind(train)
        if kind == "linear_count_model":
            raise GpuperfError(f"--train {train} is a gpuperf model, not measured variants: rank --model {train} "
                               "ranks by this linear count model from gpuperf calibrate")
        if kind is not None:
            raise GpuperfError(f"--train {train} is a gpuperf model, not measured variants: rank --train takes a "
                               "table of other kernels' measured variants (such as data/stencil_spaces_h100.csv.gz), "
                               "and --model a linear count model from gpuperf calibrate")
        raise GpuperfError(f"--train {train}: rank learns from gpuperf's static features of other kernels' variants "
                           "(a measurement campaign's export, such as data/stencil_spaces_h100.csv.gz), which a "
                           "JSON file such as a Kernel Tuner cache lacks; a cache trains explore and ask (--train)")
    table, where = _variant_table(train)
    check_dataset(table, where)  # an ok row needs a positive time: none is taken for a failure
    own = own_kernel_rows(table, chosen.name)
    table = table[~own]  # other kernels only: the space's own measurements would be the answer
    if table.empty:
        raise GpuperfError(f"{where}: no measured variants of kernels other than {chosen.name}")
    with progress_task(f"building {space} variants", no_progress or as_json) as progress:
        ranked = rank_space(space, sizes, table, limit=limit, where=where, progress=progress)
    shown = ranked[["variant", *chosen.parameters, "predicted_performance", *[c for c in LIFT_FEATURES if c in ranked]]]
    if as_json:
        print_json({"space": space, "sizes": full_sizes, "train": where, "train_rows": len(table),
                    "left_out_rows_of_this_kernel": int(own.sum()),
                    "variants": [whole_counts(row) for row in shown.to_dict(orient="records")]})
        return
    columns = [*chosen.parameters, "predicted_performance"]
    print_table(ranked[columns].head(top).to_dict(orient="records"),
                title=f"{space}: {len(ranked)} variants, best predicted first (trained on {len(table)} rows of {where})")


def _rank_by_counts(space: str, parameters: Sequence[str], sizes: dict, model_path: Path, top: int, limit: int | None,
                    no_progress: bool, as_json: bool) -> None:
    """``gpuperf rank --model``: the space's variants ranked by a calibrated linear count model."""
    from gpuperf.decisions.count_ranking import PREDICTED_PERFORMANCE, PREDICTED_TIME

    ranked, metadata = ranking_by_counts(space, sizes, model_path, show=not (no_progress or as_json), limit=limit)
    device = metadata.get("device_name") or metadata.get("device")
    if as_json:
        print_json({"space": space, "sizes": sizes, "model": str(model_path), "device": metadata.get("device"),
                    "device_name": metadata.get("device_name"), "variants": ranked.to_dict(orient="records")})
        return
    columns = [*parameters, PREDICTED_TIME, PREDICTED_PERFORMANCE]
    print_table(ranked[columns].head(top).to_dict(orient="records"),
                title=f"{space}: {len(ranked)} variants, fastest predicted first (linear count model of {device})")


def ranking_by_counts(space: str, sizes: dict, model_path: Path, show: bool,
                      limit: int | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """``space``'s variants ranked by a calibrated linear count model's predicted time, and the
    model file's metadata. A file that is no such model fails before any variant is built."""
    from gpuperf.decisions.count_ranking import rank_space_by_counts
    from gpuperf.models.linear_calibration import load_linear_model

    fitted, metadata = load_linear_model(model_path)
    with progress_task(f"building {space} variants", not show) as progress:
        ranked = rank_space_by_counts(space, sizes, fitted, limit=limit,
                                      cuda=str(metadata.get("device") or "").startswith("cuda"), progress=progress)
    return ranked, metadata


def geometry_command(
    gpu: str = typer.Option(..., "--gpu", help="GPU name or alias (see gpuperf gpus)"),
    trip: str = typer.Option(..., "--trip", help="loop trip count: independent iterations to spread over threads "
                             "(1000000 or 1e6)"),
    registers: int = typer.Option(32, "--registers", help="registers per thread (AMD: VGPRs)"),
    smem: int = typer.Option(0, "--smem", help="shared memory per block, bytes"),
    policy: str = typer.Option("heuristic", "--policy", help="heuristic, llvm, libomptarget, occupancy or model"),
    as_json: bool = typer.Option(False, "--json", metavar="", help="print JSON"),
) -> None:
    """Threads per block and blocks for a parallel loop."""
    from gpuperf.decisions.geometry import POLICIES, choose_geometry, device_descriptor

    known_choice("--policy", "launch-geometry policy", policy, POLICIES)
    described_gpu(gpu, required=True)
    count = _whole(trip, "trip")
    at_least("--trip", count, 1)
    at_least("--registers", registers, 0)
    at_least("--smem", smem, 0)
    (chosen, name), notes = with_notes(lambda: (choose_geometry(gpu, count, registers, smem, policy),
                                                 device_descriptor(gpu).name))
    result = {**chosen.as_dict(), "gpu": name, "trip": count}
    notes += filter(None, [boards_note(gpu)])
    if as_json:
        print_json({**result, "notes": notes})
        return
    print_table([{"figure": k, "value": v} for k, v in result.items()], title="launch geometry")


def _whole(text: str, what: str) -> int:
    """A whole number written plainly or in exponent form (1000000, 1e6), below 2**63."""
    from decimal import Decimal, InvalidOperation

    text = text.strip()
    try:  # exactly: 1e23 is 10**23, which a float is not
        value = Decimal(text)
    except InvalidOperation:
        value = Decimal("NaN")
    if not value.is_finite() or value != value.to_integral_value():
        raise GpuperfError(f"--{what}: '{text}' is not a whole number")
    if value >= 2**63:  # no 64-bit loop index counts that far
        raise GpuperfError(f"--{what}: '{text}' is too large (at most 2**63 - 1)")
    return int(value)


def _int_list(text: str, what: str) -> list[int]:
    return [_whole(part, what) for part in text.split(",")]


def _measured_on(measured, descriptor: str) -> str:
    """The GPU a sweep table was measured on: its gpu column, each name as gpuperf's descriptor names it
    where it knows the GPU (a CPU's as recorded); else the ``device_name`` a sweep records of its
    descriptor; else the descriptor's name."""
    from gpuperf.hardware.specs import canonical_gpu_name

    for column in ("gpu", "device_name"):
        if column in measured.columns:
            names = sorted({canonical_gpu_name(str(name)) or str(name) for name in measured[column].dropna()
                            if str(name).strip()})
            if names:
                return ", ".join(names)
    return descriptor


def geometry_sweep_command(
    device: Optional[str] = typer.Option(
        None, "--device", "-d", help="measure on this device: opencl:0, opencl:<platform>:<device>, cuda:0"),
    table: Optional[str] = typer.Option(
        None, "--table", help="judge an already measured sweep instead (CSV: kernel, trip, threads, blocks, time_s)"),
    loops: Optional[str] = typer.Option(
        None, "--loops", help="parallel loops to measure (saxpy, polynomial; default both)"),
    trips: Optional[str] = typer.Option(
        None, "--trips", help="trip counts (loop iterations), comma-separated (default 1000,100000,1000000)"),
    gpu: Optional[str] = typer.Option(
        None, "--gpu", help="GPU whose descriptor the policies use (default: the device's own, or the table's)"),
    blocks_step: Optional[int] = typer.Option(None, "--blocks-step", help="blocks grow by this factor along the "
                                              "sweep (default 2)"),
    cycles: Optional[int] = typer.Option(None, "--cycles", help="with --device: interleaved timing cycles per loop "
                                         "and trip count (default 15)"),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="write every point as CSV, as each loop and trip count is timed"),
    resume: bool = typer.Option(
        False, "--resume", metavar="", help="go on with the interrupted sweep whose points --out holds (the same "
        "device): its (loop, trip count) groups are kept, not measured again; --out then holds every point"),
    report: Optional[str] = typer.Option(None, "--report", help="also write a report folder"),
    no_progress: bool = typer.Option(False, "--no-progress", metavar="", help="no progress bar"),
    as_json: bool = typer.Option(False, "--json", metavar="", help="print JSON"),
) -> None:
    """Measure parallel loops over a (threads, blocks) grid and judge the launch-geometry policies on it."""
    from gpuperf.decisions import geometry_sweep as sweep

    if (device is None) == (table is None):
        raise GpuperfError("give either --device (measure a sweep) or --table (judge a measured one)")
    if table is not None and cycles is not None:
        raise GpuperfError("--cycles times a new sweep (--device); a --table was timed already")
    if table is not None and out is not None:
        raise GpuperfError("--out writes a new sweep's points (--device); a --table is written already")
    if resume and out is None:
        raise GpuperfError("--resume goes on with the sweep whose points --out holds: give --out")
    if table is not None and (loops is not None or trips is not None or blocks_step is not None):
        raise GpuperfError("--loops, --trips and --blocks-step choose what a new sweep measures (--device); a --table "
                           "holds its own")
    at_least("--blocks-step", blocks_step, 2)
    for option, value in (("--loops", loops), ("--trips", trips)):
        if value is not None and not value.strip():
            raise GpuperfError(f"{option} is empty; name at least one, or leave the option out for its defaults")
    loops = "saxpy,polynomial" if loops is None else loops
    trips = "1000,100000,1000000" if trips is None else trips
    blocks_step = 2 if blocks_step is None else blocks_step
    if report is not None:
        report_folder(report)
    cycles = 15 if cycles is None else cycles
    if table is not None:
        from gpuperf.cli.model_tables import read_table

        measured, where = read_table(table)
        descriptor = sweep.table_descriptor(measured, where, gpu)
    else:
        measured, where, descriptor = _measure_sweep(device, loops, trips, gpu, blocks_step, cycles, out,
                                                     show=not (no_progress or as_json), resume=resume)
    choices = sweep.sweep_choices(measured, descriptor, where)
    _note_unjudged_rows(len(measured) - len(sweep.check_sweep(measured, where)), choices, where)
    summary = sweep.sweep_summary(choices)
    figures = sweep.sweep_figures(choices)
    points = int(choices["points"].sum())
    measured_on = _measured_on(measured, descriptor.name)
    shown = measured_on if measured_on == descriptor.name else f"{measured_on}, judged with the {descriptor.name}'s descriptor"
    result = {
        "device": measured_on, "descriptor": descriptor.name, "points": points, "choices": len(choices),
        "policies": summary.astype(object).to_dict(orient="index"),  # object: choices stay whole numbers
        "figures": figures.to_dict(orient="records"),  # per (loop, trip count), per trip count, and "all"
        "picks": choices.to_dict(orient="records"),
    }

    def show() -> None:
        if as_json:
            print_json(result)
            return
        print_table(summary.reset_index().to_dict(orient="records"),
                    title=f"launch-geometry policies on {where} ({shown}, {points} points)")
        print_table(sweep.figure_labels(figures).to_dict(orient="records"),
                    title="per (loop, trip count), per trip count and overall: speedup over LLVM's default, "
                          "choices within 10 % of the best")
        print_table(sweep.pick_labels(choices, summary.index).to_dict(orient="records"),
                    title="each policy's pick, threads x blocks")

    if report is not None:
        from gpuperf.decisions.reports import sweep_report

        with shown_if_unreported(show, "policies' picks"):
            written = sweep_report(report, choices, summary, measured, shown, descriptor=descriptor)
        result["report"] = str(written["markdown"])
    show()


def _note_unjudged_rows(failed: int, choices: pd.DataFrame, where: str) -> None:
    """Say which rows the figures leave out or count as missed: failed points, groups that lack LLVM's
    pick (the baseline of every speedup), each policy's failed and unmeasured picks
    (:func:`gpuperf.decisions.geometry_sweep.unjudged_notes`); none measuring LLVM's leaves nothing to judge."""
    from gpuperf.decisions.geometry_sweep import unjudged_notes

    notes = unjudged_notes(choices, where)
    if failed:
        notes.append(f"{where}: {counted(failed, 'row')} whose status is not ok left out of the points")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)


def _measure_sweep(device: str, loops: str, trips: str, gpu: str | None, blocks_step: int, cycles: int,
                   out: str | None, show: bool, resume: bool = False):
    from gpuperf.datasets import write_dataset_csv
    from gpuperf.decisions import geometry_sweep as sweep
    from gpuperf.kernels.parallel_loops import LOOP_BODIES
    from gpuperf.measure.devices import open_device

    bodies = [body.removeprefix("loop_") for body in comma_separated(loops)]  # saxpy or loop_saxpy
    bodies = list(dict.fromkeys(bodies))  # a loop named twice is measured once
    if not bodies:
        raise GpuperfError(f"--loops: name at least one of {', '.join(LOOP_BODIES)}")
    for body in bodies:
        known_choice("--loops", "parallel loop", body, LOOP_BODIES)
    counts = list(dict.fromkeys(_int_list(trips, "trips")))  # a trip count given twice is measured once
    below = next((count for count in counts if count < 1), None)
    if below is not None:
        raise GpuperfError(f"--trips: trip count {below} must be at least 1")
    if cycles < 1:
        raise GpuperfError(f"--cycles: {cycles} must be at least 1")
    if out:
        csv_output_name(out)
    opened = open_device(device)
    descriptor = sweep.measured_device_descriptor(opened, gpu)
    with output_lock(out):  # one run at a time: a second, resumed or not, would write over its trials
        resume, held = _resumed_output(out, resume)  # resumed, every point it holds is written back with the new
        earlier = None if held is None else sweep.earlier_sweep(*held, descriptor,
                                                                opened.provenance().get("device_name", opened.name))
        for trip in counts:
            sweep.sweep_geometries(descriptor, trip, blocks_step)  # bad trips or steps fail before anything runs
        settings = sweep.sweep_settings(cycles)
        command = (f"gpuperf geometry-sweep --device {device} --loops {','.join(bodies)} --trips "
                   f"{','.join(map(str, counts))} --blocks-step {blocks_step} --cycles {cycles}")
        started = _run_started(out, resume)

        def record(rows: list[dict]) -> None:
            if out:  # saved as each loop and trip count is timed: an interrupted sweep keeps what it measured
                import pandas as pd

                write_dataset_csv(pd.DataFrame(rows), out, replace=True)
                _write_sweep_provenance(out, opened, settings, command, started, descriptor)

        with claimed_output(None if resume else out), \
                progress_task(f"sweeping {','.join(bodies)} on {device}", not show) as progress:
            measured = sweep.measure_sweep(opened, bodies, counts, descriptor, settings,
                                           blocks_step=blocks_step, record=record, earlier=earlier, progress=progress)
        return measured, device, descriptor


def _run_started(out: str | None, resume: bool) -> str | None:
    """When the sweep or tuning run writing ``out`` began: now, unless it resumes an earlier run, whose start
    ``out``'s provenance file records (None: no such record, as in a file saved before provenance files)."""
    import json

    from gpuperf.datasets.provenance import provenance_path

    if not resume or is_empty_claim(out):
        return _utc_now()
    if not out:
        return None
    try:
        return json.loads(provenance_path(out).read_text(encoding="utf-8")).get("measured_from")
    except (OSError, ValueError, AttributeError):
        return None


def _sweep_timer(opened) -> str:
    """The timer a sweep's points were taken with: a CUDA device's gated or ungated events; on OpenCL, a
    grid-stride loop is one kernel, timed by its own profiling event."""
    if hasattr(opened, "gate_failure"):
        return "cuda_event_span" if opened.gate_failure else "cuda_event_gated"
    return "kernel_event"


def _utc_now() -> str:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _write_sweep_provenance(out: str, opened, settings, command: str, started: str | None, descriptor) -> None:
    """``out``'s ``.provenance.json``: how and when its points were measured (``started``: when the sweep,
    or the one it resumes, began), with the table's ``file``, ``rows`` and ``sha256``."""
    from gpuperf.datasets.provenance import write_provenance
    from gpuperf.measure.timing import provenance

    taken = provenance(opened, _sweep_timer(opened), settings)
    write_provenance(out, {
        "what": "grid-stride parallel loops over a (threads, blocks) grid (gpuperf.decisions.geometry_sweep), every "
                "output verified against NumPy", "command": command,
        "device": taken.get("device_name", taken["device"]), "measured_from": started,
        "measured_to": taken["timestamp"],
        "descriptor": descriptor.as_dict(), "provenance": taken})


def _write_trials_provenance(out: str, so_far, command: str, started: str | None) -> None:
    """``out``'s ``.provenance.json``: how and when a tuning run's trials were measured (``started``: when
    the run, or the one it resumes, began; ``provenance``: how its last measured trial was taken)."""
    from gpuperf.datasets.provenance import write_provenance

    write_provenance(out, {
        "what": "a tuning run's trials (gpuperf tune), in the order the search picked them", "command": command,
        "device": so_far.taken.get("device_name") or so_far.gpu or so_far.device, "measured_from": started,
        "measured_to": _utc_now(), "provenance": so_far.taken})


TUNE_STARTS = ("ranked", "counts", "random")
COUNT_RANKING = "a linear count model"


def ranking_by_other_kernels(space: str, sizes: dict, table_path: str | None, show: bool) -> pd.DataFrame:
    """``space``'s variants ranked by a model trained on other kernels' measured variants (the table at
    ``table_path``, or the bundled one)."""
    from gpuperf.decisions.tune import rank_by_other_kernels

    table, where = _variant_table(table_path)
    with progress_task(f"ranking {space} variants", not show) as progress:
        return rank_by_other_kernels(space, sizes, table, where, progress=progress)


def _tune_start(start: str | None, trained: bool, count_model: Path | None, rank_train: str | None) -> str:
    """The --start of a tune run (ranked where not given), refused where it does not go with --train
    (``trained``), --count-model or --rank-train."""
    if start is not None and trained:
        raise GpuperfError("--start picks the first variants without --train; with --train the tables do")
    start = start or "ranked"
    known_choice("--start", "start", start, TUNE_STARTS)
    if (start == "counts") != (count_model is not None):
        raise GpuperfError("--start counts ranks the first picks by the model of --count-model: give both or neither")
    if rank_train is not None and (trained or start != "ranked"):
        raise GpuperfError("--rank-train trains the ranking of --start ranked (the default without --train); "
                           f"{'--train' if trained else f'--start {start}'} makes no such ranking")
    return start


def _tune_summary(space: str, device: str, result: TuneResult) -> dict[str, Any]:
    """What tune prints (and --json gives) of its ``result``: the search, the best trial, and every trial."""
    best = result.best()
    return {
        "space": space, "sizes": result.sizes, "device": device, "gpu": result.gpu, "method": result.method,
        "evaluated": len(result.trials), "failed": sum(t.status != "ok" for t in result.trials),
        "best": None if best is None else best.config, "best_time": None if best is None else best.time_s,
        "best_at": None if best is None else result.trials.index(best) + 1,
        "trials": [{**t.config, "time": t.time_s, "status": t.status} for t in result.trials],
        "time_column": "time_s",  # the unit of best_time and each trial's time, as explore and ask name it
    }


def tune_command(
    space: str = typer.Argument(..., help="a variant space: a catalog one (see gpuperf spaces), e.g. jacobi2d_5pt, or path/file.py:function"),
    param: Optional[list[str]] = typer.Option(None, "-p", "--param", help="size parameter, e.g. -p n=1024 -p m=1024"),
    device: str = typer.Option("opencl:0", "--device", "-d", help="opencl:0, opencl:<platform>:<device>, cuda:0"),
    budget: int = typer.Option(20, "--budget", help="measure at most this many variants"),
    train: Optional[list[str]] = typer.Option(
        None, "--train", help="the space's variants measured elsewhere (a table with its parameters and a time, or a "
        "bundled dataset's name; repeatable; a table of several kernels, GPUs or problem sizes counts as one "
        "per kernel, GPU and problem size, the sizes named with -p included)"),
    model: Optional[str] = typer.Option(
        None, "--model", "-m", help="surrogate: et (default with --train), gp (default without), rf, gbt or knn"),
    seed: int = typer.Option(0, "--seed", help="seed of the model and of the first random picks"),
    start: Optional[str] = typer.Option(
        None, "--start", help="without --train: ranked (default; the first picks ranked by a model trained on "
        "other kernels' measured variants, the LIFT setting), counts (ranked by the linear count model of "
        "--count-model) or random"),
    count_model: Optional[Path] = typer.Option(
        None, "--count-model", help="for --start counts: a linear count model of the device (a file written by "
        "'gpuperf calibrate')"),
    rank_train: Optional[str] = typer.Option(
        None, "--rank-train", help="measured variants of other kernels for --start ranked "
        f"(default: the bundled {DEFAULT_VARIANT_TABLE}); this kernel's own rows are left out"),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="write every trial (parameters, time_s, status) as CSV"),
    resume: bool = typer.Option(
        False, "--resume", metavar="", help="go on with the interrupted run whose trials --out holds (the same space, "
        "sizes, device, --start, --model and --seed): they count towards --budget and are not measured again; --out then holds all trials"),
    report: Optional[str] = typer.Option(
        None, "--report", help="also write a report folder (trials, best so far against trials, the default variant)"),
    no_progress: bool = typer.Option(False, "--no-progress", metavar="", help="no progress bar"),
    as_json: bool = typer.Option(False, "--json", metavar="", help="print JSON"),
) -> None:
    """Tune a variant space on a device: measure the variants the guided search picks, one by one."""
    checked_seed(seed)
    from gpuperf.decisions.tune import tune_space
    from gpuperf.kernels.loader import resolved_user_spec
    from gpuperf.kernels.space import get_space

    at_least("--budget", budget, 1)
    refuse_surrogate_file(model, "tune", f"a calibrated linear count model ranks the first picks with --start counts "
                          f"--count-model {model}")
    sizes = parse_params(param)
    space = resolved_user_spec(space)  # a user's file however spelt, so that --resume finds it the same
    chosen = get_space(space)  # an unknown space fails here, before anything is read
    space_sizes(chosen, sizes)  # wrong sizes fail here too; tune keeps those given, to match --train tables
    start = _tune_start(start, bool(train), count_model, rank_train)
    others = _own_kernel_training_spaces(space, list(chosen.parameters), train or [], sizes)
    _check_trials_output(out, resume)
    hidden = no_progress or as_json
    with output_lock(out):  # one run at a time: a second, resumed or not, would write over its trials
        resume, earlier = _resumed_trials(out, resume, space)
        _refuse_earlier_report(report)
        ranking, ranked_by = _first_picks_ranking(start, bool(others), space, sizes, rank_train, count_model, hidden)
        save = _trials_saver(out, _run_started(out, resume),
                             _tune_command_line(space, sizes, device, budget, seed, start, train, model, count_model,
                                                rank_train))
        with claimed_output(None if resume else out), progress_bar(hidden) as bar:
            task = bar.add_task(f"tuning {space}", total=budget, completed=len(earlier.trials) if earlier else 0)

            def after_trial(so_far: TuneResult) -> None:
                bar.advance(task)
                save(so_far)

            result = tune_space(space, sizes, device, budget, others, model, seed, on_trial=after_trial, ranking=ranking,
                                ranked_by=ranked_by, earlier=earlier)
        _tuning_notes(result, earlier, budget, out, space)
        summary = _tune_summary(space, device, result)
        show = partial(_show_tune_summary, summary, space, list(chosen.parameters), as_json)
        if report is not None:
            summary["report"] = _tuning_report(report, result, space, device, show)
        show()


def _own_kernel_training_spaces(space: str, parameters: list[str], train: Sequence[str], sizes: dict) -> list[Space]:
    """The spaces of the ``--train`` tables (one per kernel, GPU and size in ``sizes``), only those of
    ``space``'s own kernel where a table holds several (:func:`~gpuperf.decisions.training.own_kernel_spaces`)."""
    from gpuperf.decisions.space import read_training_spaces
    from gpuperf.decisions.training import own_kernel_spaces

    return [s for path in train for s in own_kernel_spaces(
        space, read_training_spaces(path, parameters, size_columns=list(sizes)), path)]


def _check_trials_output(out: str | None, resume: bool) -> None:
    """An error where ``--out`` is no CSV file name, or ``--resume`` has no ``--out`` to go on with."""
    if out:
        csv_output_name(out)
    if resume and not out:
        raise GpuperfError("--resume goes on with the run whose trials --out holds: give --out")


def _resumed_trials(out: str | None, resume: bool, space: str) -> tuple[bool, TuneResult | None]:
    """Whether the run resumes the one ``out`` holds, and that run's trials (None where it holds none yet)
    (:func:`_resumed_output`)."""
    from gpuperf.decisions.tune import earlier_trials

    resume, held = _resumed_output(out, resume)
    return resume, None if held is None else earlier_trials(*held, space=space)


def _resumed_output(out: str | None, resume: bool) -> tuple[bool, tuple[pd.DataFrame, str] | None]:
    """Whether a run writing ``out`` as it goes resumes the one ``out`` holds (--resume, and ``out`` there:
    where it is not, the run starts anew, with a note), and the table it holds with where it was read (None
    for an empty claim, left by a run killed before its first result). The file of a new run is checked to
    be new (gpuperf never overwrites one). Call it holding ``out``'s lock (:func:`output_lock`)."""
    resume = resume and not nothing_to_resume(out)
    if not resume:
        if out:
            new_output_file(out, resumable=True)
        return False, None
    if is_empty_claim(out):
        return True, None
    from gpuperf.cli.model_tables import read_table

    return True, read_table(out)


def _refuse_earlier_report(report: str | None) -> None:
    """An error where the ``--report`` folder holds a report already, which a tuning run would replace (a
    tuning report's trials may be their only record)."""
    if report is not None and (report_folder(report) / "report.md").exists():
        raise GpuperfError(f"--report {report}: holds an earlier report, which this run would replace (a "
                           "tuning report's trials may be their only record); name a new folder")


def _first_picks_ranking(start: str, trained: bool, space: str, sizes: dict, rank_train: str | None,
                         count_model: Path | None, hidden: bool) -> tuple[pd.DataFrame | None, str]:
    """The ranking of ``space``'s variants that gives the search its first picks, and what ranked them: by
    other kernels' measured variants (--start ranked, where no --train table guides the search, ``trained``),
    by a linear count model (--start counts); none for --start random."""
    if start == "ranked" and not trained:
        return ranking_by_other_kernels(space, sizes, rank_train, show=not hidden), "other kernels"
    if start == "counts":
        return ranking_by_counts(space, sizes, count_model, show=not hidden)[0], COUNT_RANKING
    return None, "other kernels"


def _tune_command_line(space: str, sizes: dict, device: str, budget: int, seed: int, start: str,
                       train: list[str] | None, model: str | None, count_model: Path | None,
                       rank_train: str | None) -> str:
    """The ``gpuperf tune`` command line of a run, as its trials' provenance records it."""
    return " ".join(["gpuperf tune", space, *[f"-p {k}={v}" for k, v in sizes.items()], f"--device {device}",
                     f"--budget {budget}", f"--seed {seed}",
                     *([f"--train {table}" for table in train] if train else [f"--start {start}"]),
                     *([f"--model {model}"] if model else []),
                     *([f"--count-model {count_model}"] if count_model else []),
                     *([f"--rank-train {rank_train}"] if rank_train else [])])


def _trials_saver(out: str | None, started: str | None, command: str) -> Callable[[TuneResult], None]:
    """What saves a tuning run's trials so far to ``out`` with their provenance after every trial (an
    interrupted run keeps what it measured); without ``out``, nothing."""
    from gpuperf.datasets import write_dataset_csv

    def save(so_far: TuneResult) -> None:
        if out:
            write_dataset_csv(so_far.table(), out, replace=True)
            _write_trials_provenance(out, so_far, command, started)

    return save


def _tuning_notes(result: TuneResult, earlier: TuneResult | None, budget: int, out: str | None, space: str) -> None:
    """Notes on stderr once the trials are known to be this run's: a resumed run that had spent ``budget``
    already, and one line per kind of failed trial."""
    if earlier is not None and len(earlier.trials) >= budget:
        print(f"note: {out} holds {len(earlier.trials)} trials already, --budget {budget}: nothing more is "
              "measured (raise --budget to go on)", file=sys.stderr)
    for line in result.failure_notes():
        print(f"note: {space}: {line}", file=sys.stderr)


def _show_tune_summary(summary: dict[str, Any], space: str, parameters: list[str], as_json: bool) -> None:
    """Print a tuning run's ``summary``: as JSON, or its figures and its trials in order as tables."""
    if as_json:
        print_json(summary)
        return
    keys = [k for k in summary if k != "trials"]
    print_table([{"figure": k, "value": summary[k]} for k in keys], title=f"tune {space}")
    print_table(numbered(summary["trials"], parameters, "time_s"), title="trials in order")


def _tuning_report(report: str, result: TuneResult, space: str, device: str, show: Callable[[], None]) -> str:
    """Write the tuning report of ``result`` to the folder ``report`` (its reference: the space's default
    variant's time), and where its markdown is; where that fails, ``show`` prints the trials first."""
    from gpuperf.decisions.reports import tuning_report
    from gpuperf.decisions.tune import default_variant_time

    with shown_if_unreported(show, "trials"):
        paths = tuning_report(report, result, default_variant_time(space, result.sizes, device, trials=result.trials))
    return str(paths["markdown"])


def register(app: typer.Typer) -> None:
    """Add this area's commands to ``app``."""
    app.command("explore")(explore_command)
    app.command("ask")(ask_command)
    app.command("tune")(tune_command)
    app.command("rank")(rank_command)
    app.command("geometry")(geometry_command)
    app.command("geometry-sweep")(geometry_sweep_command)
