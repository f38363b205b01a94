"""Fitting and evaluating models on dataset tables: ``fit``, ``predict-table`` and ``evaluate``.

What a table holds, which rows count, the default features and how ``--gpu-features``, ``bsp`` and
``linear`` read their columns: :mod:`gpuperf.cli.model_tables`, which prepares every table these
commands read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuperf.cli.model_tables import (
    Prepared, bounded_note, clipped_note, constant_fit_note, counted_or, degenerate_fit_note, descriptor_lacks,
    extend_table, failed_without_features, finite_or_none, fitting_errors, held_out_gpus_notes, json_notes,
    model_options, names_in, noted, numeric_features, one_prediction_note, outside_training_gpus_note,
    prepare_training, print_note, read_rows_notes, read_table, refuse_features_of_another_version,
    refuse_other_gpus_of_a_one_gpu_model, require_columns, rows_boards_notes, selected_features, selected_gpus_note,
    selection_note, skipped_note, table_output_name, unbounded_note, unbounded_rows, unnamed_rows_notes,
    write_table,
)
from gpuperf.cli.output import (
    KeptNotes, comma_separated, counted, given_on_command_line, known_choice, model_output_file, new_output_file, notes_kept, print_json,
    print_table, refuse_model_name, report_folder,
)
from gpuperf.errors import GpuperfError, first_names
from gpuperf.progress import progress_task

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from gpuperf.evaluation.protocols import Evaluation
    from gpuperf.models.registry import ModelOptions


PREDICTED = "predicted_time_s"
PREDICTED_GPU = "predicted_gpu"  # predict-table --gpu: the GPU the rows were predicted for
PROTOCOLS = {"leave-one-gpu-out": "gpu", "leave-one-kernel-out": "kernel", "leave-one-size-out": None}  # None: --sizes


# -- commands ---------------------------------------------------------------------------------------
DataArg = Annotated[str, typer.Argument(help="CSV or Parquet table (time_s, gpu, features), or a bundled dataset name")]
ModelArg = Annotated[str, typer.Option("--model", "-m", help=(
    "knn, lr, svr, rf, m5p, gbt, bsp, linear, roofline (one efficiency factor fitted) or roofline_bound (the bare bound)"))]
LogTargetArg = Annotated[bool, typer.Option("--log-target", metavar="", help="learned models: fit on log2(time)")]
FeaturesArg = Annotated[str | None, typer.Option("--features", help="feature columns a,b,... (default: numeric, not keys or timings)")]
SelectArg = Annotated[str | None, typer.Option(
    "--select", help="spearman:K keeps at most K features (Amaris et al.): one per cluster of those whose "
    "|Spearman r| with the time is at least 0.75")]
GpuFeaturesArg = Annotated[bool, typer.Option("--gpu-features", metavar="", help="join GPU descriptor columns by gpu")]
BaseClockArg = Annotated[bool, typer.Option(
    "--base-clock", metavar="",
    help="GPU descriptors at the base clock, not the boost clock (GPUs that ran at base, e.g. profiled with clocks "
    "locked)")]
SvrKernelArg = Annotated[str, typer.Option("--svr-kernel", help="svr: rbf or linear")]
BspColumnsArg = Annotated[str | None, typer.Option("--bsp-columns", help="bsp: role=column,... (threads, cores, ...)")]
PropertySetArg = Annotated[str | None, typer.Option("--property-set", help="linear: gpu, cpu, intel_cpu or stevens_klockner properties")]
JsonArg = Annotated[bool, typer.Option("--json", metavar="", help="print JSON")]
ReportArg = Annotated[str | None, typer.Option("--report", help="folder for a Markdown/HTML report with plots")]


def refuse_typed_svr_kernel(ctx: typer.Context, model: str) -> None:
    """--svr-kernel given for a model other than svr is refused at its default value (rbf) too, as any
    other value is, instead of passing without a word."""
    if model != "svr" and given_on_command_line(ctx, "svr_kernel"):
        raise GpuperfError(f"model {model}: --svr-kernel does not apply to it")


def fit_command(
    ctx: typer.Context,
    data: DataArg,
    model: ModelArg,
    out: Annotated[Path, typer.Option("--out", "-o", help="model file: .json or .skops")],
    log_target: LogTargetArg = False,
    features: FeaturesArg = None,
    select: SelectArg = None,
    gpu_features: GpuFeaturesArg = False,
    base_clock: BaseClockArg = False,
    svr_kernel: SvrKernelArg = "rbf",
    bsp_columns: BspColumnsArg = None,
    property_set: PropertySetArg = None,
    as_json: JsonArg = False,
) -> None:
    """Fit a model on a table's measured rows and save it with its feature names."""
    from gpuperf.models.persistence import save_model

    refuse_model_file(model, "fit")
    options = model_options(model, log_target, select, svr_kernel, bsp_columns, property_set)
    refuse_typed_svr_kernel(ctx, options.name)
    if out.suffix not in (".json", ".skops"):
        raise GpuperfError(f"--out {out}: use a .json or .skops model file")
    new_file = not model_output_file(out).exists()  # a model another run writes meanwhile is kept
    frame, where = read_table(data)
    prepared = prepare_training(frame, where, options, features, gpu_features, base_clock)
    fitted = fitted_estimator(prepared, options, where)
    trained = fitted.predict(prepared.frame[prepared.features])
    metadata = fit_metadata(prepared, options, fitted, trained, where)
    save_model(fitted, out, feature_names=prepared.features, metadata=metadata, new=new_file, replace=True)
    notes = fit_notes(frame, prepared, options, fitted, trained, metadata, where, gpu_features)
    for note in notes:
        print_note(note)
    if as_json:
        print_json({"out": str(out), "features": prepared.features, **metadata,
                    "notes": json_notes(notes)})
        return
    print_fit_summary(options.name, prepared, metadata, out)


def fitted_estimator(prepared: Prepared, options: ModelOptions, where: str) -> Any:
    """``options``' model fitted on the prepared rows' features and times (bsp's inputs checked first)."""
    from gpuperf.models.registry import build_estimator

    table, names = prepared.frame, prepared.features
    estimator = build_estimator(options, names, prepared.table_kind)
    if options.name == "bsp":
        check_bsp_inputs(estimator, table[names], where)
    with fitting_errors(where, options.name, table[names]):
        return estimator.fit(table[names], table["time_s"].to_numpy())


def fit_metadata(prepared: Prepared, options: ModelOptions, fitted: Any, trained: np.ndarray,
                 where: str) -> dict[str, Any]:
    """What the model file saves beside the model, and ``--json`` prints: the table, the options, the
    features --select kept and the training metrics of the ``trained`` predictions."""
    from gpuperf.evaluation.metrics import all_metrics

    table = prepared.frame
    return {
        "model": options.name,
        "dataset": where,
        "rows": len(table),
        "gpus": names_in(table, "gpu"),
        "kernels": names_in(table, "kernel"),
        "options": prepared.options(options),
        "selected_features": selected_features(fitted, prepared.features),
        "train_metrics": finite_or_none(all_metrics(table["time_s"], trained)),
    }


def fit_notes(frame: pd.DataFrame, prepared: Prepared, options: ModelOptions, fitted: Any, trained: np.ndarray,
              metadata: Mapping[str, Any], where: str, gpu_features: bool) -> list[str]:
    """fit's notes: the rows of ``frame`` (the table as read) left out, then what the fit on the prepared
    rows tells of the features, the GPUs and the ``trained`` predictions."""
    table, names = prepared.frame, prepared.features
    return read_rows_notes(frame, where, prepared.gpu_features) + [note for note in (
        *unnamed_rows_notes(table, where), *prepared.notes, indistinct_note(table, names, where),
        selection_note(fitted, names, where), selected_gpus_note(metadata, names, gpu_features, where),
        constant_fit_note(trained, table["time_s"], options.name, where),
        degenerate_fit_note(trained, table["time_s"], len(metadata["selected_features"] or names), options.name, where),
        not_positive_note(trained, len(trained), metadata["options"],
                          ", so the training gmre (a ratio of logs) is undefined (null)")) if note]


def print_fit_summary(model: str, prepared: Prepared, metadata: Mapping[str, Any], out: Path) -> None:
    """fit's line without --json: the rows, GPUs, kernels and features fitted on, the training MAPE and ``out``."""
    names, kept = prepared.features, metadata["selected_features"]
    gpus, kernels = len(metadata["gpus"]), len(metadata["kernels"])
    where_from = ", ".join(part for part in (counted_or(gpus, "GPU", "no gpu column"),
                                             counted_or(kernels, "kernel", "no kernel column")))
    print(f"fitted {model} on {counted(len(prepared.frame), 'row')} ({where_from}) with {len(names)} features"
          + (f", {len(kept)} selected" if kept is not None else "")
          + f"; training MAPE {_fraction(metadata['train_metrics']['mape'])}; wrote {out}")


def _fraction(value: float | None) -> str:
    """A MAPE-like fraction with its percentage: ``0.147 (14.7 %)``."""
    if value is None:
        return "undefined"
    return f"{value:.3g} ({value:.1%})" if value < 1e4 else f"{value:.3g} ({value * 100:.3g}%)"


METRICS_CAPTION = ("mape, gmre, median_ape: fractions (0.10 = 10 %; gmre = exp(mean |ln(predicted / measured)|) - 1); "
                   "within_20pct: share of predictions within 0.8-1.2x of the measured time; spearman, kendall "
                   "(tau-b): rank correlations (1 = the same order; undefined "
                   "with fewer than 2 rows or one predicted or measured time for every row); "
                   "top5_overlap: share of the 5 fastest measured among the 5 fastest predicted (rows tied across the 5th "
                   "place share it; undefined with 5 rows or fewer); overall: mape, gmre, median_ape and within_20pct pool "
                   "every held-out row, spearman, kendall and top5_overlap are the mean of the groups' values where "
                   "defined")


def not_positive_note(predicted: pd.Series, total: int, options: Mapping[str, Any], consequence: str = "") -> str | None:
    """A note counting predictions that are not positive times (a model without a log target may make them)."""
    from gpuperf.models.registry import LEARNED

    not_positive = int((predicted <= 0).sum())
    if not not_positive:
        return None
    learned_without_log = options.get("name") in LEARNED and not options.get("log_target")
    return (f"note: {not_positive} of {total} predictions are not positive times{consequence}"
            + (" (the model extrapolates below zero; a log target, --log-target, cannot)" if learned_without_log else ""))


def indistinct_note(frame: pd.DataFrame, features: Sequence[str], where: str) -> str | None:
    """A note when rows of different kernels have identical features: no model can tell them apart."""
    import pandas as pd

    if "kernel" not in frame.columns or not len(features) or frame["kernel"].nunique() < 2:
        return None
    keys = pd.util.hash_pandas_object(frame[list(features)], index=False)
    kernels = frame["kernel"].groupby(keys.to_numpy()).transform("nunique")
    shared = kernels.to_numpy() > 1
    if not shared.any():
        return None
    count = frame.loc[shared, "kernel"].nunique()
    return (f"note: {where}: {int(shared.sum())} of {len(frame)} rows ({count} kernels) have the same feature values "
            f"as rows of another kernel, so no model can tell them apart; add features that differ between kernels")


def check_bsp_inputs(estimator, inputs: pd.DataFrame, where: str) -> None:
    """Every row's BSP inputs give a positive time (else an error naming the file row)."""
    import numpy as np

    from gpuperf.datasets.schema import row_location

    bad = estimator.undefined_rows(inputs)
    if bad.any():
        position = int(np.flatnonzero(bad)[0])
        raise GpuperfError(f"{where}: {row_location(inputs, position)}: the BSP inputs give no positive time "
                           f"({int(bad.sum())} such rows); check the counts")


def saved_options(info: Mapping[str, Any], model: Path | str) -> dict[str, Any]:
    """A saved model's options, with how its table is extended checked (a hand-edited file)."""
    from gpuperf.models.registry import BSP_SIGNATURES, ROOFLINE_SIGNATURES

    options = dict((info.get("metadata") or {}).get("options") or {})
    for field_name, known in (("bsp_inputs", BSP_SIGNATURES), ("roofline_inputs", ROOFLINE_SIGNATURES)):
        value = options.get(field_name)
        if value is not None and (not isinstance(value, str) or value not in known):
            raise GpuperfError(f"{model}: damaged model file: metadata.options.{field_name} is {value!r}, not one of "
                               f"{', '.join(known)}")
    return options


def refuse_model_file(model: str, command: str) -> None:
    """An error where ``--model`` names a saved model file (``fit --out``'s) rather than a model kind: ``evaluate``
    fits its kind anew with each group held out, and ``fit`` fits one; it names the options of the file's kind."""
    from gpuperf.models.persistence import model_info
    from gpuperf.models.registry import MODEL_CHOICES

    if model in MODEL_CHOICES or not (model.lower().endswith((".json", ".skops")) or Path(model).is_file()):
        known_choice("--model", "model", model, MODEL_CHOICES)
        return
    try:
        options = saved_options(model_info(Path(model)), model)
    except GpuperfError:  # no file there, or not a model: the kinds alone
        options = {}
    flags = saved_model_flags(options)
    like = f"; the kind {model} was fitted as: --model {' '.join(flags)}" if flags else ""
    raise GpuperfError(f"--model {model}: {command} takes a model kind ({', '.join(MODEL_CHOICES)}), which it fits "
                       f"{'anew with each group held out' if command == 'evaluate' else 'on the table'}, not a saved "
                       f"model{like}; a saved model's predictions of a table: gpuperf predict-table DATA --model "
                       f"{model} --out PRED.csv")


def saved_model_flags(options: Mapping[str, Any]) -> list[str]:
    """The command-line options that fit a model of the kind ``options`` (a saved model's) describe: its
    name first; empty where they name none."""
    if not options.get("name"):
        return []
    flags = [str(options["name"])]
    flags += [flag for key, flag in (("log_target", "--log-target"), ("gpu_features", "--gpu-features"),
                                     ("base_clock", "--base-clock")) if options.get(key)]
    if options.get("select"):
        flags.append(f"--select spearman:{options['select']}")
    if options.get("svr_kernel") not in (None, "rbf"):
        flags.append(f"--svr-kernel {options['svr_kernel']}")
    if options.get("property_set"):
        flags.append(f"--property-set {options['property_set']}")
    if options.get("bsp_columns"):
        flags.append("--bsp-columns " + ",".join(f"{role}={column}" for role, column in options["bsp_columns"].items()))
    return flags


def predict_table_command(
    data: DataArg,
    model: Annotated[Path, typer.Option("--model", "-m", help="model file written by 'gpuperf fit'")],
    out: Annotated[Path, typer.Option("--out", "-o", help="CSV (or .parquet) to write")],
    gpu: Annotated[str | None, typer.Option(
        "--gpu", help="predict every row as if run on this GPU (its descriptor replaces the row's)")] = None,
    as_json: JsonArg = False,
) -> None:
    """Predict every row of a table with a saved model: the rows plus predicted_time_s."""
    with notes_kept() as notes:
        summary = predicted_table(data, model, out, gpu, notes)
    if as_json:
        print_json({**summary, "notes": notes})
    else:
        print(f"wrote {counted(summary['rows'], 'row')} with {PREDICTED} to {out}")


def predicted_table(data: str, model: Path, out: Path, gpu: str | None, notes: KeptNotes) -> dict[str, Any]:
    """Writes ``data``'s rows with ``model``'s predictions to ``out``: the summary ``--json`` prints (less its
    notes, which go to ``notes``)."""
    refuse_model_name(model, "predict-table", "one 'gpuperf fit' or 'gpuperf calibrate' wrote")
    table_output_name(out)
    new_output_file(out)
    info, names, options, fitted = saved_model(model)
    if gpu is not None:
        refuse_gpu_the_model_ignores(model, info, names, options)
        gpu = gpu_board(gpu, notes)
    with progress_task(f"reading {data}"):  # a million rows read for a minute
        frame, where = read_table(data)
    for note in rows_boards_notes(frame, gpu is None and bool(options.get("gpu_features"))):
        notes.add(note)
    to_count = properties_to_count(info, names, frame, model, where)
    rows = frame if gpu is None else frame.assign(gpu=gpu)
    table = model_inputs(rows, where, info, names, options, to_count, notes)
    if gpu is not None:
        refuse_descriptor_gaps(gpu, names, table)
    refuse_features_of_another_version(info, model, [str(n) for n in names if n not in table.columns])
    unbounded = unbounded_rows(table)
    failed = failed_without_features(table, names)
    priced = rows.loc[table.index[~unbounded & ~failed]]  # a failed row left unpriced names no GPU to price
    source = "--gpu" if gpu is not None else where
    refuse_other_gpus_of_a_one_gpu_model(info, options, model, priced, source)
    notes.add(outside_training_gpus_note(info, options, priced, source))
    table = features_to_price(table[~unbounded & ~failed], names, fitted, model, where)
    result, clipped = with_predictions(frame, table[names], fitted, str(options.get("name") or model), where)
    for note in unpredicted_and_clipped_notes(unbounded, failed, clipped, len(result), where):
        notes.add(note)
    notes.add(not_positive_note(result.loc[table.index, PREDICTED], len(result), options))
    result, dropped_note = labelled_with_gpu(result, gpu, where)
    notes.add(dropped_note)
    write_predictions(result, frame, where, out)
    return {"out": str(out), "rows": len(result), "predicted": int(result[PREDICTED].notna().sum()),
            "time_column": PREDICTED, "gpu": gpu}


def saved_model(model: Path) -> tuple[dict[str, Any], list[str], dict[str, Any], Any]:
    """A saved model's information, feature names, options (checked) and the fitted model."""
    from gpuperf.models.persistence import load_model, model_info

    info = model_info(model)
    names = info.get("feature_names")
    if not names:
        raise GpuperfError(f"{model}: the model was saved without feature names")
    options = saved_options(info, model)
    fitted = load_model(model)  # a damaged file is named before the table is blamed for lacking its columns
    return info, names, options, fitted


def refuse_gpu_the_model_ignores(model: Path, info: Mapping[str, Any], names: Sequence[str],
                                 options: Mapping[str, Any]) -> None:
    """An error where ``--gpu`` cannot change the model's predictions: it was fitted without GPU descriptors,
    or no descriptor is among the features it uses (those ``--select`` kept)."""
    if not options.get("gpu_features"):
        raise GpuperfError(f"{model}: the model does not use GPU descriptors, so --gpu cannot change its "
                           "predictions; fit it with --gpu-features")
    selected = (info.get("metadata") or {}).get("selected_features")
    kept = selected or names
    if not any(str(name).startswith("gpu_") for name in kept):
        chose = "--select kept" if selected else "its features are"
        raise GpuperfError(f"{model}: no GPU descriptor among the features the model uses ({chose} "
                           f"{first_names(list(map(str, kept)), 4)}), so --gpu cannot change its predictions; fit it "
                           "keeping a gpu_* column")


def gpu_board(gpu: str, notes: KeptNotes) -> str:
    """The name of the GPU board ``--gpu`` names (an error where gpuperf describes none), with a note where
    it names a model of several boards (A100)."""
    from gpuperf.hardware.specs import get_gpu, other_boards_note

    try:
        board = get_gpu(gpu).name
    except GpuperfError as error:
        raise GpuperfError(f"--gpu: {error}") from None
    notes.add(other_boards_note(gpu))
    return board


def properties_to_count(info: Mapping[str, Any], names: Sequence[str], frame: pd.DataFrame, model: Path,
                        where: str) -> list[str]:
    """The property columns a linear count model from ``gpuperf calibrate`` reads and the table lacks, to be
    counted from the rows' kernels (none for another model); an error where it has no kernel column."""
    absent = [str(name) for name in names if name not in frame.columns]
    if (info.get("metadata") or {}).get("kind") != "linear_count_model" or not absent:
        return []
    if "kernel" not in frame.columns:
        raise GpuperfError(f"{model}: a linear count model from gpuperf calibrate prices a kernel from its counts: "
                           f"gpuperf predict KERNEL -p ... --model {model}; {where} lacks its property columns "
                           f"({first_names(absent, 4)}) and a kernel column")
    return absent


def model_inputs(rows: pd.DataFrame, where: str, info: Mapping[str, Any], names: Sequence[str],
                 options: Mapping[str, Any], to_count: list[str], notes: KeptNotes) -> pd.DataFrame:
    """``rows`` extended as the model's training table was (GPU descriptors, BSP or roofline inputs), with the
    properties ``to_count`` counted from their kernels, empty counts as 0 and the features ``--select`` left
    out set to 0."""
    from gpuperf.features.table import with_zero_counts

    table = extend_table(rows, where, bool(options.get("gpu_features")), options.get("bsp_inputs"),
                         bool(options.get("base_clock")), options.get("roofline_inputs"))  # names a row's bad GPU
    if to_count:  # gpuperf's kernels (a campaign export): counted as calibrate --table counts them
        from gpuperf.evaluation.linear_eval import counted_properties

        table = counted_properties(table, to_count, where)
    table, unused_note = with_unselected_as_zero(with_zero_counts(table, names), info, names, where)
    notes.add(unused_note)
    return table


def with_unselected_as_zero(table: pd.DataFrame, info: Mapping[str, Any], names: Sequence[str],
                            where: str) -> tuple[pd.DataFrame, str | None]:
    """``table`` with the features the model's ``--select`` left out set to 0 (the selector drops them whatever
    they hold), and a note naming those the table lacks (None where it has them all)."""
    selected = (info.get("metadata") or {}).get("selected_features")
    unselected = [str(name) for name in names if selected and name not in selected]
    unused = [name for name in unselected if name not in table.columns]
    table = table.assign(**dict.fromkeys(unselected, 0.0))
    if not unused:
        return table, None
    return table, (f"note: {where}: no column(s) {first_names(unused, 4)}; the model's --select left them out, so "
                   "they do not change its predictions")


def refuse_descriptor_gaps(gpu: str, names: Sequence[str], table: pd.DataFrame) -> None:
    """An error where the descriptor of ``--gpu`` lacks a field the model uses (its column empty in every row):
    the GPU's gap, not the table's."""
    for column in (str(c) for c in names if str(c).startswith("gpu_") and c in table.columns):
        if len(table) and table[column].isna().all():
            lacks = descriptor_lacks(gpu, column.removeprefix("gpu_"))
            raise GpuperfError(f"--gpu {gpu}: its descriptor {lacks} (see gpuperf gpus), and the model uses {column}; "
                               "fit with --features naming the descriptor columns every GPU you price has")


def features_to_price(table: pd.DataFrame, names: Sequence[str], fitted: Any, model: Path, where: str) -> pd.DataFrame:
    """``table`` with the model's features as numbers; an error names a missing column, a value that is not a
    number, or (bsp) a row whose inputs give no time, as fit refuses it."""
    table = numeric_features(table, names, where, f"{model} was fitted on them: to price rows without them, fit a "
                             "model with --features naming columns these rows have")
    if hasattr(fitted, "undefined_rows"):  # bsp
        check_bsp_inputs(fitted, table[names], where)
    return table


def with_predictions(frame: pd.DataFrame, inputs: pd.DataFrame, fitted: Any, model_name: str,
                     where: str) -> tuple[pd.DataFrame, np.ndarray]:
    """``frame`` (the rows as read, not a copy of a million rows) with ``fitted``'s predictions from ``inputs``
    (the features of the rows it can price; the others get none) in :data:`PREDICTED`, and which predictions
    were clipped to the model's bounds."""
    import numpy as np

    from gpuperf.evaluation.protocols import predict_bounded

    frame[PREDICTED] = np.nan
    clipped = np.zeros(0, dtype=bool)
    if len(inputs):  # else every row is noted as one that has no prediction
        with fitting_errors(where, model_name, inputs, doing="predict from"):
            predicted, clipped = predict_bounded(fitted, inputs)
        frame.loc[inputs.index, PREDICTED] = predicted
    return frame, clipped


def unpredicted_and_clipped_notes(unbounded: pd.Series, failed: pd.Series, clipped: np.ndarray, rows: int,
                                  where: str) -> list[str]:
    """Notes counting the rows left without a prediction (no roofline bound; a failed run lacking a feature)
    and the predictions clipped to the model's bounds, of ``rows``."""
    notes = []
    if unbounded.any():
        notes.append(unbounded_note(unbounded, where, "no prediction for"))
    if failed.any():
        notes.append(f"note: {where}: no prediction for {counted(int(failed.sum()), 'row')} whose run failed (status "
                     "not ok) and that lack a feature value")
    if clipped.any():
        notes.append(clipped_note(int(clipped.sum()), rows))
    return notes


def labelled_with_gpu(result: pd.DataFrame, gpu: str | None, where: str) -> tuple[pd.DataFrame, str | None]:
    """``result`` with the ``--gpu`` its rows were predicted for in :data:`PREDICTED_GPU`; without ``--gpu``,
    without that column (an earlier run's label) and a note saying so."""
    if gpu is not None:
        result[PREDICTED_GPU] = gpu
        return result, None
    if PREDICTED_GPU not in result.columns:
        return result, None
    return result.drop(columns=[PREDICTED_GPU]), (f"note: {where}: dropped its {PREDICTED_GPU} column, left by an "
                                                  f"earlier predict-table --gpu: these {PREDICTED} are for each row's "
                                                  "own GPU")


def write_predictions(result: pd.DataFrame, frame: pd.DataFrame, where: str, out: Path) -> None:
    """``result`` written to ``out``, each column that holds whole numbers in ``frame`` (the table read) written
    as whole numbers."""
    from gpuperf.datasets.tables import whole_number_columns

    for column in whole_number_columns(frame, where):  # 4 with empty cells around is read as 4.0: written as 4
        result[column] = result[column].astype("Int64")
    with progress_task(f"writing {counted(len(result), 'row')} to {out}"):  # a million rows write for minutes
        write_table(result, out)


def evaluate_command(
    ctx: typer.Context,
    data: DataArg,
    model: ModelArg,
    protocol: Annotated[str, typer.Option("--protocol", help="leave-one-gpu-out, leave-one-kernel-out or "
                                          "leave-one-size-out (with --sizes)")],
    log_target: LogTargetArg = False,
    features: FeaturesArg = None,
    select: SelectArg = None,
    gpu_features: GpuFeaturesArg = False,
    base_clock: BaseClockArg = False,
    svr_kernel: SvrKernelArg = "rbf",
    bsp_columns: BspColumnsArg = None,
    property_set: PropertySetArg = None,
    per_kernel: Annotated[bool, typer.Option("--per-kernel", metavar="", help="one model per kernel (leave-one-gpu-out)")] = False,
    sizes: Annotated[str | None, typer.Option(
        "--sizes", help="leave-one-size-out: the columns naming a problem size, comma-separated (n,m or "
        "input.size.1,input.size.2); each combination of their values is held out in turn")] = None,
    as_json: JsonArg = False,
    report: ReportArg = None,
    no_progress: Annotated[bool, typer.Option("--no-progress", metavar="", help="no progress bar")] = False,
) -> None:
    """Hold out each GPU (kernel, or problem size) in turn: fit on the other rows, predict the held-out ones."""
    from gpuperf.datasets.tables import kernels_told_apart

    refuse_model_file(model, "evaluate")
    columns = held_out_columns(protocol, sizes)
    options = model_options(model, log_target, select, svr_kernel, bsp_columns, property_set)
    refuse_typed_svr_kernel(ctx, options.name)
    folder = None if report is None else report_folder(report)  # kept a str: "" is refused, not taken as "."
    frame, where = read_table(data)
    frame = kernels_told_apart(frame)  # a user's kernel named like another is held out as itself
    if per_kernel and group_name(columns) == "kernel":
        raise GpuperfError("--per-kernel: kernels held out one at a time have no rows to fit their own model")
    require_columns(frame, [*columns, "kernel"] if per_kernel else columns, where, "group")
    prepared = prepare_training(frame, where, options, features, gpu_features, base_clock)
    refuse_rows_of_no_group(prepared.frame, columns, where)
    values = held_out_values(prepared, columns)
    groups = group_names(values)
    refuse_fewer_than_two_groups(groups, columns, where, protocol)
    evaluation, protocol_notes = held_out_evaluation(prepared, options, columns, values, len(groups), where=where,
                                                     protocol=protocol, per_kernel=per_kernel,
                                                     hidden=no_progress or as_json)
    result = evaluation_result(evaluation, prepared, options, columns, where=where, protocol=protocol,
                               per_kernel=per_kernel)
    notes = [*read_rows_notes(frame, where, prepared.gpu_features or "gpu" in columns), *prepared.notes,
             *protocol_notes, *evaluation_notes(evaluation, prepared, options, columns, where, per_kernel)]
    result["notes"] = json_notes(notes)
    if folder is not None:
        result["report"] = str(write_evaluation_report(folder, result, evaluation, prepared)["markdown"])
    for note in notes:
        print_note(note)
    if as_json:
        print_json(result)
        return
    print_evaluation_table(result)
    if report is not None:
        print(f"wrote {result['report']}")


def group_name(columns: Sequence[str]) -> str:
    """How tables and JSON name the held-out group: gpu, kernel, or n/m (the ``--sizes`` columns)."""
    return "/".join(columns)


def refuse_rows_of_no_group(frame: pd.DataFrame, columns: Sequence[str], where: str) -> None:
    """An error naming the first measured row with no value in a held-out column: its group is unknown."""
    import numpy as np

    from gpuperf.datasets.schema import row_location

    for column in columns:
        blank = np.flatnonzero(frame[column].isna().to_numpy())
        if len(blank):
            raise GpuperfError(f"{where}: {row_location(frame, int(blank[0]))}: {column} has no value: the row's "
                               f"{group_name(columns)} is unknown ({len(blank)} such measured rows)")


def held_out_values(prepared: Prepared, columns: list[str]) -> pd.DataFrame:
    """The held-out columns of the measured rows, as read (a size column that is a feature stays exact past 2**53)."""
    return prepared.read[columns] if prepared.read is not None else prepared.frame[columns]


def group_names(values: pd.DataFrame) -> np.ndarray:
    """Each held-out group's name: a distinct combination of ``values``, joined by / (4096, as the result tables
    write it)."""
    labels = values.dropna().drop_duplicates().map(
        lambda value: str(int(value)) if isinstance(value, float) and value.is_integer() else str(value))
    return labels.agg("/".join, axis=1).unique()


def refuse_fewer_than_two_groups(groups: np.ndarray, columns: Sequence[str], where: str, protocol: str) -> None:
    """An error where the measured rows hold fewer than two groups to hold out in turn."""
    if len(groups) < 2:
        raise GpuperfError(f"{where}: {protocol} needs measured rows of at least two values of {group_name(columns)}; "
                           f"the table holds {'one' if len(groups) else 'none'}{f' ({groups[0]})' if len(groups) else ''}")


def held_out_evaluation(prepared: Prepared, options: ModelOptions, columns: list[str], values: pd.DataFrame,
                        groups: int, *, where: str, protocol: str, per_kernel: bool,
                        hidden: bool) -> tuple[Evaluation, list[str]]:
    """The model of ``options`` fitted on ``prepared``'s rows with each of the ``groups`` (``values`` of
    ``columns``) held out in turn, one model per kernel where ``per_kernel``, behind a progress bar unless
    ``hidden``; and the notes it raised."""
    from gpuperf.evaluation.protocols import leave_one_group_out
    from gpuperf.models.registry import build_estimator

    estimator = build_estimator(options, prepared.features, prepared.table_kind)
    with fitting_errors(where, options.name, prepared.frame[prepared.features]), \
            progress_task(f"fitting {options.name} with each {group_name(columns)} held out", hidden,
                          total=groups) as progress:
        evaluation, notes = noted(lambda: leave_one_group_out(
            estimator, prepared.frame, prepared.features, columns, name=protocol,
            fit_by="kernel" if per_kernel else None, progress=progress, group_values=values))
    return evaluation, notes


def evaluation_result(evaluation: Evaluation, prepared: Prepared, options: ModelOptions, columns: Sequence[str], *,
                      where: str, protocol: str, per_kernel: bool) -> dict[str, Any]:
    """What ``evaluate --json`` prints, less its notes: the model and protocol, and the metrics per held-out
    group and overall."""
    return {
        "dataset": where,
        "model": options.name,
        "options": prepared.options(options),
        "protocol": protocol,
        "per_kernel": per_kernel,
        "group": group_name(columns),
        "rows": len(evaluation.predictions),
        "features": prepared.features,
        "overall": evaluation.overall,
        "per_group": {str(key): dict(row) for key, row in evaluation.per_group.to_dict(orient="index").items()},
        "skipped": evaluation.skipped,
        "bounded": evaluation.bounded,
    }


def evaluation_notes(evaluation: Evaluation, prepared: Prepared, options: ModelOptions, columns: Sequence[str],
                     where: str, per_kernel: bool) -> list[str]:
    """The notes on the held-out predictions: GPUs held out unlike the others, predictions clipped or missing,
    groups given one time, kernels the features do not tell apart, and times that are not positive."""
    not_positive = not_positive_note(evaluation.predictions["predicted"], len(evaluation.predictions),
                                     prepared.options(options), ", so gmre (a ratio of logs) is undefined (null) for "
                                     "the groups holding them and overall")
    notes = (*held_out_gpus_notes(prepared, options.name, columns, where), bounded_note(evaluation),
             skipped_note(evaluation, per_kernel), one_prediction_note(evaluation, options.name),
             indistinct_note(prepared.frame, prepared.features, where), not_positive)
    return [note for note in notes if note]


def print_evaluation_table(result: Mapping[str, Any]) -> None:
    """``evaluate``'s metrics per held-out group and overall, as a table with the caption saying what each is."""
    group = result["group"]
    label = f"{group} (held out)" if group in result["overall"] else group  # a size column named n, say
    rows = [{label: key, **metrics} for key, metrics in result["per_group"].items()]
    rows.append({label: "overall", **result["overall"]})
    print_table(rows, title=f"{result['model']} on {result['dataset']}, {result['protocol']}",
                columns=[label, "n", "mape", "gmre", "median_ape", "within_20pct", "spearman", "kendall",
                         "top5_overlap"])
    print(METRICS_CAPTION)


def held_out_columns(protocol: str, sizes: str | None) -> list[str]:
    """The columns whose values ``protocol`` holds out in turn: gpu, kernel, or the ``--sizes`` columns."""
    known_choice("--protocol", "protocol", protocol, PROTOCOLS)
    named = comma_separated(sizes)
    if PROTOCOLS[protocol] is not None:
        if sizes is not None:
            raise GpuperfError(f"--sizes names what leave-one-size-out holds out; {protocol} holds out "
                               f"{PROTOCOLS[protocol]}")
        return [PROTOCOLS[protocol]]
    if not named:
        raise GpuperfError("leave-one-size-out holds out each problem size: name its columns with --sizes (e.g. n,m)")
    if len(set(named)) < len(named):
        raise GpuperfError(f"--sizes names a column more than once: {sizes}")
    return named


def write_evaluation_report(folder: Path, result: dict, evaluation: Evaluation, prepared: Prepared) -> dict[str, Path]:
    """The Markdown/HTML report of one evaluation, with a Spearman ranking of the features."""
    import pandas as pd

    from gpuperf.evaluation.report import write_report
    from gpuperf.models.selection import spearman_scores

    frame, names = prepared.frame, prepared.features
    ranking = pd.Series(spearman_scores(frame[names], frame["time_s"]), index=names,
                        name="|Spearman r| with time_s").sort_values(ascending=False)
    options = ", ".join(f"{k}={v}" for k, v in result["options"].items() if v not in (None, False, {}, "rbf"))
    notes = [
        f"Dataset {result['dataset']}: {result['rows']} held-out rows, protocol {result['protocol']}"
        + (", one model per kernel." if result["per_kernel"] else "."),
        f"Model {result['model']} ({options}).",
        f"Features ({len(names)}): {', '.join(names)}.",
        "Feature ranking: each feature's |Spearman r| with the measured time over all rows (a description of the "
        "table, not the model's importance); the plot shows the top 25.",
        *(f"Note: {note}" for note in result["notes"]),
    ]
    clustering = selection_clustering(prepared, result["options"]["select"])
    if clustering is not None:
        kept, _ = clustering
        notes.insert(4, f"Feature clustering: --select spearman:{result['options']['select']} fitted on all rows "
                        f"(each fold refits it on its training rows{', per kernel' if result['per_kernel'] else ''}) "
                        f"keeps: {', '.join(kept)}.")
    title = f"{result['model']} on {result['dataset']}: {result['protocol']}"
    return write_report(folder, title, {result["protocol"]: evaluation}, notes=notes, feature_ranking=ranking,
                        dendrogram_of=clustering[1] if clustering is not None else None,
                        metrics={"overall": result["overall"], "bounded": result["bounded"]})


def selection_clustering(prepared: Prepared, select: int | None) -> tuple[list[str], tuple | None] | None:
    """For ``--select spearman:K``, the features its selector keeps on all of ``prepared``'s rows and its
    dendrogram (linkage, leaf names, K), None for the dendrogram where fewer than two features are clustered;
    None without ``--select``."""
    if select is None:
        return None
    from gpuperf.models.selection import SpearmanClusterSelector

    names = prepared.features
    selector = SpearmanClusterSelector(k=select).fit(prepared.frame[names], prepared.frame["time_s"])
    kept = [names[i] for i in selector.selected_]
    if selector.linkage_ is None:
        return kept, None
    return kept, (selector.linkage_, [names[i] for i in selector.candidates_], select)


def register(app: typer.Typer) -> None:
    """Add this area's commands to ``app``."""
    app.command("fit")(fit_command)
    app.command("predict-table")(predict_table_command)
    app.command("evaluate")(evaluate_command)
