"""Fitting and evaluating models on dataset tables: ``fit``, ``predict-table``, ``evaluate``, and
``predict-gpu`` (a GPU's times from other GPUs' times of the same launches, no model).

A table is a CSV (``.csv``, ``.csv.gz``) or Parquet (``.parquet``, ``.pq``) file, or a bundled
dataset's name, with the measured time in ``time_s`` (or, without it, in one of ``time_ms``,
``time_us``, ``time_ns``, taken in seconds: :func:`gpuperf.datasets.schema.time_column`) and the
GPU's name in ``gpu``. Rows whose ``status`` is not ``ok`` are left out; every other row needs a
positive, finite time.

Default features (the learned models, without ``--features``):
:func:`gpuperf.evaluation.feature_columns.default_features` (its module lists the rules).

``--gpu-features`` joins the GPU descriptor columns (``gpu_*``) by ``gpu`` first, so they count as
features too; ``bsp`` always joins them (it reads the clock and core count). ``bsp`` reads its
inputs by role (``gpuperf.models.registry.BSP_INPUTS``: nvprof counters or gpuperf's static
features, recognised from the columns; ``--bsp-columns role=column,...`` overrides). ``linear``
reads the property columns of ``--property-set`` (default ``gpu``) that the table has, or
``--features``.
"""

from __future__ import annotations

import difflib
import math
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuperf.cli.output import (
    caught_warnings, counted, model_output_file, new_output_file, print_json, print_table, report_folder,
)
from gpuperf.errors import GpuperfError, unknown_name_error
from gpuperf.progress import progress_bar

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from gpuperf.models.registry import ModelOptions

PREDICTED = "predicted_time_s"
PREDICTED_GPU = "predicted_gpu"  # predict-table --gpu: the GPU the rows were predicted for
PROTOCOLS = {"leave-one-gpu-out": "gpu", "leave-one-kernel-out": "kernel", "leave-one-size-out": None}  # None: --sizes


# -- reading and checking tables -------------------------------------------------------------------
def read_table(source: str) -> tuple[pd.DataFrame, str]:
    """The table at ``source`` (a CSV or Parquet file, or a bundled dataset's name) and its label."""
    from gpuperf.datasets import BUNDLED, load_dataset
    from gpuperf.datasets.bundled import bundled_dataset_at, data_table
    from gpuperf.datasets.tables import CSV_SUFFIXES, PARQUET_SUFFIXES, read_table_file

    if not Path(source).exists() and source in BUNDLED:
        return load_dataset(source).reset_index(drop=True), source
    path = data_table(source)
    bundled = bundled_dataset_at(path)
    if bundled:  # a bundled table's file, named by its path: read in the dataset shape, as by its name
        return load_dataset(bundled).reset_index(drop=True), str(path)
    if not path.exists() and not path.name.lower().endswith((*CSV_SUFFIXES, *PARQUET_SUFFIXES)):
        raise unknown_name_error("table file or bundled dataset", source, BUNDLED)
    frame = read_table_file(path)  # refuses a profiler's own CSV, naming the importer
    return frame.reset_index(drop=True), str(path)


@contextmanager
def fitting_errors(where: str, model: str, features: pd.DataFrame | None = None,
                   doing: str = "be fitted on") -> Iterator[None]:
    """A model that cannot be fitted on (or predict from) the table's values (scikit-learn's
    ValueError: values too large to scale, a degenerate table) as one error naming the table, and the
    first value beyond float32's range in ``features`` when there is one (tree models work in
    float32); NumPy's overflow warnings, which only announce it, are silenced."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            yield
    except GpuperfError:
        raise
    except ValueError as error:
        in_float32 = features is not None and "float32" in str(error)  # scikit-learn's trees cast to float32
        beyond = _beyond_float32(features, where, model) if in_float32 else None
        reason = f"{model} could not {doing} its values ({str(error).splitlines()[0]})"
        overflowed = features is not None and not in_float32 and any(
            word in str(error) for word in ("NaN", "infinity", "not finite", "large values"))
        largest = _largest_value(features, where, reason) if overflowed else None
        raise GpuperfError(beyond or largest or f"{where}: {reason}; check for values too large to scale") from None


def _largest_value(features: pd.DataFrame, where: str, reason: str) -> str | None:
    """Where a model met NaN in finite features (its scaling overflowed: the squares of values past
    1e154 exceed float64), the largest-magnitude value by row and column (None if a feature has NaN)."""
    import numpy as np

    from gpuperf.datasets.schema import row_location

    values = np.abs(features.to_numpy(dtype=float, na_value=np.nan))
    if not values.size or not np.isfinite(values).all():
        return None
    row, column = np.unravel_index(int(np.argmax(values)), values.shape)
    value = features.iloc[row, column]
    return (f"{where}: {row_location(features, int(row))}: column {features.columns[column]}={float(value):g} is the "
            f"largest value, and {reason}: values this large overflow its scaling (their squares exceed float64's "
            "range); rescale the column (a larger unit, or its log)")


def _beyond_float32(features: pd.DataFrame, where: str, model: str) -> str | None:
    """The first feature value whose magnitude float32 cannot hold, by row and column (None if none)."""
    import numpy as np

    from gpuperf.datasets.schema import row_location

    limit = float(np.finfo(np.float32).max)
    for column in features.columns:
        values = features[column].to_numpy(dtype=float, na_value=np.nan)
        large = np.flatnonzero(np.abs(values) > limit)
        if len(large):
            return (f"{where}: {row_location(features, int(large[0]))}: column {column}={values[large[0]]:g} is "
                    f"beyond float32's range ({limit:.3g}), which {model} works in")
    return None


def _print_note(note: str | None) -> None:
    if note:
        import sys

        print(note, file=sys.stderr)


def status_note(frame: pd.DataFrame, where: str) -> str | None:
    """A note counting the rows :func:`measured_rows` leaves out for their status, naming the first."""
    import numpy as np
    import pandas as pd

    from gpuperf.datasets.schema import is_ok, row_location

    if "status" not in frame.columns:
        return None
    left_out = ~is_ok(frame["status"])
    if not left_out.any():
        return None
    first = int(np.flatnonzero(left_out.to_numpy())[0])
    status = frame["status"].iloc[first]
    shown = "empty" if pd.isna(status) or not str(status).strip() else repr(status)
    return (f"note: {where}: left out {int(left_out.sum())} of {len(frame)} rows whose status is not ok "
            f"(first: {row_location(frame, first)}, status {shown})")


def bounded_note(evaluation) -> str | None:
    """A note counting the predictions the model clipped to its bounds (a runaway extrapolation)."""
    total = sum(evaluation.bounded.values())
    if not total:
        return None
    return clipped_note(total, len(evaluation.predictions))


def skipped_note(evaluation, per_kernel: bool) -> str | None:
    """A note naming the held-out groups with rows left out of the metrics (no prediction for them)."""
    if not evaluation.skipped:
        return None
    total = sum(evaluation.skipped.values())
    groups = ", ".join(f"{fold} ({count})" for fold, count in evaluation.skipped.items())
    why = ("their kernel has no training rows outside the held-out group (--per-kernel), or the model gives "
           "them no time" if per_kernel else "the model gives them no time")
    return f"note: {total} held-out rows have no prediction and are left out of the metrics: {groups}; {why}"


def constant_fit_note(predicted: np.ndarray, measured: pd.Series, model: str, where: str) -> str | None:
    """A note when a fitted model gives every training row one time although their times differ."""
    import numpy as np

    if measured.nunique() < 2 or np.unique(predicted).size != 1:
        return None
    why = (": gradient-boosted trees keep at least 20 rows per leaf, so under 40 rows they cannot split"
           if model == "gbt" and len(measured) < 40 else "")
    return (f"note: {where}: {model} predicts one time ({float(predicted[0]):.3g} s) for all {len(measured)} "
            f"training rows, whose times differ{why}; it tells no row apart from another")


EXACT_FIT_MODELS = ("lr", "svr", "m5p")  # with a feature per row but one (and an intercept), each can fit them all


def degenerate_fit_note(predicted: np.ndarray, measured: pd.Series, features: int, model: str,
                        where: str) -> str | None:
    """A note where the training metrics say nothing of the model: one training row, one time for
    every row, or (lr, svr, m5p, unless it predicts one time) a feature per row but one or more: with
    the intercept, as many parameters as rows."""
    import numpy as np

    rows = len(measured)
    if model == "roofline_bound":  # nothing fitted: its training metrics test the bound itself
        return None
    if rows == 1:
        return (f"note: {where}: fitted on 1 row ({float(measured.iloc[0]):.3g} s): the training metrics say nothing "
                "of how the model tells launches apart; fit on more rows")
    if measured.nunique() < 2:
        return (f"note: {where}: all {rows} training rows have one time ({float(measured.iloc[0]):.3g} s): the model "
                "learns no difference between rows, and the training metrics say nothing of one")
    if model in EXACT_FIT_MODELS and features + 1 >= rows and np.unique(predicted).size > 1:
        return (f"note: {where}: {features} features and an intercept for {rows} training rows, enough for {model} "
                "to fit the training rows (nearly) exactly, so its training MAPE says little of its error on other "
                "rows; fit on more rows or fewer features (--features, --select)")
    return None


def one_prediction_note(evaluation, model: str) -> str | None:
    """A note naming the held-out groups of two or more rows where the model predicted one time for
    every row (their rank correlations are undefined)."""
    constant = [str(fold) for fold, part in evaluation.predictions.groupby("fold", sort=False)
                if len(part) >= 2 and part["predicted"].nunique() == 1]
    if not constant:
        return None
    shown = ", ".join(constant[:5]) + (f" and {len(constant) - 5} more" if len(constant) > 5 else "")
    return (f"note: {model} predicted one time for every row of {shown}: spearman and kendall are undefined there "
            "(the model does not tell those rows apart)")


def clipped_note(clipped: int, total: int) -> str:
    return (f"note: {clipped} of {total} predictions were clipped to the training times widened by the bound "
            f"factor (the model extrapolated further)")


def require_columns(frame: pd.DataFrame, columns: Sequence[str], where: str, what: str) -> None:
    """One error naming every missing column (with the nearest names for the first)."""
    from gpuperf.datasets.schema import variant_parameters

    missing = [c for c in columns if c not in frame.columns]
    if not missing:
        return
    close = difflib.get_close_matches(missing[0], [str(c) for c in frame.columns], n=3, cutoff=0.6)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    descriptors = [c for c in frame.columns if str(c).startswith("gpu_")]
    if any(str(c).startswith("gpu_") for c in missing) and "gpu" in frame.columns and not descriptors:
        hint = " (--gpu-features joins the gpu_* columns of each row's GPU descriptor)"
    if set(missing) <= set(variant_parameters(frame)):  # a features row written before they were columns
        hint = (" (they are in the rows' variant labels only: `gpuperf features KERNEL[...] -p ... --out ROW.csv` "
                "writes a variant's parameters as columns)")
    raise GpuperfError(f"{where}: missing {what} column(s) {', '.join(missing)}{hint}")


def numeric_features(frame: pd.DataFrame, features: Sequence[str], where: str) -> pd.DataFrame:
    """``frame`` with the ``features`` as floats; a non-number or a missing value names its row."""
    import numpy as np
    import pandas as pd

    from gpuperf.datasets.schema import row_location

    require_columns(frame, features, where, "feature")
    out = frame.copy()
    for column in features:
        values = out[column]
        numbers = pd.to_numeric(values, errors="coerce").astype(float)
        bad = ~np.isfinite(numbers.to_numpy())
        if bad.any():
            position = int(bad.nonzero()[0][0])
            raw = values.iloc[position]
            raw = raw.item() if isinstance(raw, np.generic) else raw
            problem = "not a number" if pd.isna(numbers.iloc[position]) and not pd.isna(raw) else "missing or infinite"
            if column.startswith("gpu_") and "gpu" in out.columns and pd.isna(raw):
                gpu = out["gpu"].iloc[position]
                way_out = ("the roofline needs it for this row's f64 work: leave such rows out"
                           if column == "gpu_peak_f64_gflops" and "flops_f64" in features else
                           "fit with --features naming the descriptor columns every GPU you price has")
                lacks = _descriptor_lacks(gpu, column.removeprefix("gpu_"))
                raise GpuperfError(
                    f"{where}: {row_location(out, position)}: the descriptor of GPU '{gpu}' {lacks} "
                    f"(see gpuperf gpus), and the model uses {column}; {way_out}"
                )
            raise GpuperfError(f"{where}: {row_location(out, position)}: column {column}={raw!r} is {problem}")
        out[column] = numbers
    return out


def _counted(count: int, what: str, none: str) -> str:
    """``1 GPU``, ``3 GPUs``, or ``none`` for 0."""
    return none if count == 0 else f"{count} {what}{'s' if count != 1 else ''}"


def _descriptor_lacks(gpu: str, field: str) -> str:
    """What the descriptor of ``gpu`` does wrong for a numeric ``field``: gives it as text, or has none."""
    from gpuperf.hardware import get_gpu

    try:
        listed = getattr(get_gpu(str(gpu)), field, None)
    except GpuperfError:
        listed = None
    return f"gives {field} as {listed!r}, not a number" if isinstance(listed, str) and listed else f"has no {field}"


# -- preparing a table for a model -----------------------------------------------------------------

def _refuse_other_gpus_of_a_one_gpu_model(info: dict, options: dict, model: Path, rows: "pd.DataFrame",
                                          source: str) -> None:
    """A learned model fitted with GPU descriptors on one GPU never saw them vary: rows of another GPU
    would silently get that GPU's predictions."""
    from gpuperf.datasets.schema import canonical_gpu
    from gpuperf.models.registry import LEARNED

    trained_on = [canonical_gpu(name) for name in (info.get("metadata") or {}).get("gpus") or []]
    if not options.get("gpu_features") or options.get("name") not in LEARNED or len(trained_on) != 1:
        return
    if "gpu" not in rows.columns:
        return
    others = sorted({canonical_gpu(str(name)) for name in rows["gpu"].dropna().unique()} - set(trained_on))
    if others:
        asked = f"--gpu {others[0]}" if source == "--gpu" else f"{source}'s rows of {others[0]}"
        raise GpuperfError(f"{model}: fitted on one GPU ({trained_on[0]}), so its GPU descriptors never varied "
                           f"and {asked} would get {trained_on[0]}'s predictions; fit it on a table of "
                           "several GPUs")


def outside_training_gpus_note(info: dict, options: dict, rows: "pd.DataFrame", source: str) -> str | None:
    """A note where a learned model with GPU descriptors prices a GPU unlike every GPU it was fitted on
    (:func:`~gpuperf.evaluation.gpu_range.unlike_training_gpus`)."""
    from gpuperf.evaluation.gpu_range import unlike_training_gpus
    from gpuperf.models.registry import LEARNED

    metadata = info.get("metadata") or {}
    used = [str(name) for name in metadata.get("selected_features") or info.get("feature_names") or []
            if str(name).startswith("gpu_")]
    if not options.get("gpu_features") or options.get("name") not in LEARNED or not used or "gpu" not in rows.columns:
        return None
    asked = [str(name) for name in rows["gpu"].dropna().unique()]
    unlike = unlike_training_gpus(metadata.get("gpus") or [], used, asked, bool(options.get("base_clock")),
                                  options.get("name"))
    if not unlike:
        return None
    return "\n".join(f"note: {f'--gpu {name}' if source == '--gpu' else f'{source}: rows of {name}'}: {reason}"
                     for name, reason in unlike)


@dataclass
class Prepared:
    """A table ready for a model: its rows, the feature columns and how the table was extended."""

    frame: pd.DataFrame
    features: list[str]
    gpu_features: bool
    bsp_inputs: str | None  # counters, static or None (see registry.BSP_INPUTS)
    base_clock: bool = False  # GPUs taken to run at their base clock, not their boost clock
    roofline_inputs: str | None = None  # counters, static or None (see registry.ROOFLINE_INPUTS)
    notes: list[str] = field(default_factory=list)  # what was left out, printed once the command succeeds

    def options(self, options: ModelOptions) -> dict[str, Any]:
        """The model options with how the table was extended (saved with the model)."""
        return {**options.as_dict(), "gpu_features": self.gpu_features, "bsp_inputs": self.bsp_inputs,
                "base_clock": self.base_clock, "roofline_inputs": self.roofline_inputs}

    @property
    def table_kind(self) -> str | None:
        """The kind of table an analytical model reads its inputs from (bsp or roofline)."""
        return self.bsp_inputs or self.roofline_inputs


def _refuse_zero_divisor(frame: pd.DataFrame, where: str, column: str) -> None:
    """The BSP inputs are per warp (counters) or per thread (static counts): a measured row whose
    ``column`` is 0 or negative cannot give them, and is named."""
    import numpy as np
    import pandas as pd

    from gpuperf.datasets.schema import is_ok, row_location

    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    measured = is_ok(frame["status"]).to_numpy() if "status" in frame.columns else np.ones(len(frame), bool)
    bad = np.flatnonzero(measured & (values <= 0))
    if len(bad):
        raise GpuperfError(f"{where}: {row_location(frame, int(bad[0]))}: {column}={values[bad[0]]:g}; the BSP inputs "
                           f"are counts per {'warp' if column == 'warps_launched' else 'thread'}, divided by "
                           f"{column}, which must be positive")


def extend_table(frame: pd.DataFrame, where: str, gpu_features: bool, bsp_inputs: str | None,
                 base_clock: bool = False, roofline_inputs: str | None = None) -> pd.DataFrame:
    """Join the GPU descriptors (at base clocks if ``base_clock``) and derive the BSP or roofline
    inputs, as fitting did."""
    from gpuperf.datasets.join import with_gpu_features
    from gpuperf.evaluation.tables import (
        add_bsp_inputs,
        add_roofline_inputs,
        add_static_roofline_inputs,
        with_base_clocks,
    )
    from gpuperf.models.registry import BSP_SIGNATURES, ROOFLINE_SIGNATURES, add_static_bsp_inputs

    if gpu_features:
        frame = with_gpu_features(frame, where)
        if base_clock:
            frame = with_base_clocks(frame)
    if bsp_inputs is not None:
        require_columns(frame, BSP_SIGNATURES[bsp_inputs], where, f"BSP input ({bsp_inputs})")
        _refuse_zero_divisor(frame, where, "warps_launched" if bsp_inputs == "counters" else "threads")
        frame = add_bsp_inputs(frame) if bsp_inputs == "counters" else add_static_bsp_inputs(frame)
    if roofline_inputs is not None:
        require_columns(frame, ROOFLINE_SIGNATURES[roofline_inputs], where, f"roofline input ({roofline_inputs})")
        frame = add_roofline_inputs(frame) if roofline_inputs == "counters" else add_static_roofline_inputs(frame)
        if "gpu_peak_f64_gflops" in frame.columns:  # a GPU with no published f64 peak bounds f32 launches
            frame = frame.assign(gpu_peak_f64_gflops=frame["gpu_peak_f64_gflops"].where(frame["flops_f64"] > 0, 0.0))
    return frame


def unbounded_rows(frame: pd.DataFrame) -> pd.Series:
    """Rows the roofline cannot bound: f64 work on a GPU with no published f64 peak."""
    import pandas as pd

    if "flops_f64" not in frame.columns or "gpu_peak_f64_gflops" not in frame.columns:
        return pd.Series(False, index=frame.index)
    return (frame["flops_f64"] > 0) & frame["gpu_peak_f64_gflops"].isna()


def _refuse_features_of_another_version(info: dict, model: Path, absent: list[str]) -> None:
    """A model saved by another gpuperf release using columns the table lacks: refit it, rather than
    make up a column that may not mean what the model learned."""
    import gpuperf
    from gpuperf.models.persistence import release

    saved = str(info.get("gpuperf_version") or "")
    if absent and saved and release(saved) != release(gpuperf.__version__):
        raise GpuperfError(f"{model}: saved by gpuperf {saved}, it uses {', '.join(absent[:4])}"
                           f"{', ...' if len(absent) > 4 else ''}, which the table lacks; gpuperf "
                           f"{gpuperf.__version__} may not compute such a column or give it the same meaning: refit "
                           "the model with this gpuperf")


def refuse_negative_work(frame: pd.DataFrame, columns: Sequence[str], where: str) -> None:
    """An error naming the first row with a negative value in a roofline input (work, or a peak)."""
    import numpy as np
    import pandas as pd

    from gpuperf.datasets.schema import row_location

    for column in columns:
        negative = np.flatnonzero(pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float) < 0)
        if len(negative):
            value = frame[column].iloc[negative[0]]
            value = value.item() if isinstance(value, np.generic) else value
            raise GpuperfError(f"{where}: {row_location(frame, int(negative[0]))}: {column}={value!r} is work done "
                               "(or a peak), which cannot be negative")


def unbounded_note(unbounded: pd.Series, where: str, what: str = "left out") -> str:
    """A note counting the rows :func:`unbounded_rows` marks (``what`` was done with them)."""
    return (f"note: {where}: {what} {counted(int(unbounded.sum()), 'row')} with f64 work on a GPU whose f64 peak is not "
            "published (the roofline has no bound for them)")


def failed_without_features(frame: pd.DataFrame, features: Sequence[str]) -> pd.Series:
    """Rows whose run failed (a status that is not ok) and that have no value for some feature: a
    failed run often records no counters, and such a row gets no prediction."""
    import pandas as pd

    from gpuperf.datasets.schema import is_ok

    if "status" not in frame.columns:
        return pd.Series(False, index=frame.index)
    present = [c for c in features if c in frame.columns]
    return ~is_ok(frame["status"]) & frame[present].isna().any(axis=1)


def without_exact_repeats(frame: pd.DataFrame, where: str) -> tuple[pd.DataFrame, str | None]:
    """``frame`` with each row that repeats an earlier one in every column (a copied table or a
    pasted block) counted once, and a note naming the first repeat (None when there is none)."""
    repeated = exact_repeats(frame)
    if repeated is None:
        return frame, None
    return frame[~repeated], repeats_note(frame, where, repeated, "measured rows", "each is counted once")


def exact_repeats(frame: pd.DataFrame):
    """Per row, whether it repeats an earlier one in every column; None where none does (or a cell holds
    a list or other unhashable value, so that no row can be compared whole)."""
    try:
        repeated = frame.duplicated().to_numpy()
    except TypeError:
        return None
    return repeated if repeated.any() else None


def repeats_note(frame: pd.DataFrame, where: str, repeated, rows: str, outcome: str) -> str:
    """The note counting the ``repeated`` rows of ``frame`` (called ``rows``), naming the first, then ``outcome``."""
    import numpy as np

    from gpuperf.datasets.schema import row_location

    first = row_location(frame, int(np.flatnonzero(repeated)[0]))
    return (f"note: {where}: {int(repeated.sum())} of {len(frame)} {rows} repeat an earlier row in every "
            f"column (the first at {first}); {outcome}")


# Times this many times apart get the --log-target hint (a learned model on raw times weighs the slowest).
SPREAD_FOR_LOG_TARGET = 100.0


def prepare_training(
    frame: pd.DataFrame, where: str, options: ModelOptions, features: str | None, gpu_features: bool,
    base_clock: bool = False,
) -> Prepared:
    """The measured rows of ``frame`` extended for ``options`` and their feature columns."""
    from gpuperf.models.registry import (
        LEARNED, NEEDS_GPU_FEATURES, ROOFLINE_MODELS, bsp_columns, bsp_table_kind, roofline_columns,
        roofline_table_kind,
    )
    from gpuperf.datasets.profiler_csv import respelled_profiled_names
    from gpuperf.datasets.schema import canonical_gpus, measured_rows, time_column
    from gpuperf.evaluation.feature_columns import KEYS_AND_OUTCOMES, default_features, is_measured_time
    from gpuperf.features.table import is_count_column, with_zero_counts
    from gpuperf.models.properties import check_property_names, property_names

    notes: list[str] = []
    given = [name.strip() for name in (features or "").split(",") if name.strip()]
    if features is not None and not given:
        raise GpuperfError("--features names no column; leave it out for the default features")
    repeated = sorted({name for name in given if given.count(name) > 1})
    if repeated:
        raise GpuperfError(f"--features names {', '.join(repeated)} more than once")
    measured = time_column(frame, where)  # time_s, or the time in another unit (time_ms, ...)
    timing = [name for name in given if name in KEYS_AND_OUTCOMES or is_measured_time(name) or name == measured]
    if timing:
        raise GpuperfError(f"--features: {', '.join(timing)} is a key or the measured time, not a feature")
    if given and options.name == "bsp":
        raise GpuperfError("model bsp: --features does not apply to it; name its inputs with --bsp-columns")
    if given and options.name in ROOFLINE_MODELS:
        raise GpuperfError(f"model {options.name}: --features does not apply to it; it reads flops and bytes columns "
                           "(flops and dram_bytes, or a profiler's or gpuperf's own counts)")
    frame, unit_notes = noted(lambda: measured_rows(frame, where, other_units=True))  # time_ms: a note
    notes.extend(unit_notes)
    if "gpu" in frame.columns:  # one GPU spelt two ways (NVIDIA GeForce RTX 3090, RTX 3090) is one GPU
        frame = frame.assign(gpu=canonical_gpus(frame["gpu"]))
    frame = respelled_profiled_names(frame)  # an older import's matmul_tiled<int=16> is today's matmul_tiled<16>
    for key in ("kernel", "variant"):  # "saxpy " and "saxpy" are one kernel, its own fold in leave-one-kernel-out
        if key in frame.columns:
            stripped = frame[key].map(lambda value: value.strip() if isinstance(value, str) else value)
            frame = frame.assign(**{key: stripped})
    frame, repeated_note = without_exact_repeats(frame, where)
    if repeated_note:
        notes.append(repeated_note)
    gpu_features = gpu_features or options.name in NEEDS_GPU_FEATURES
    if base_clock and not gpu_features:
        raise GpuperfError("--base-clock: it sets the clock of the GPU descriptors; join them with --gpu-features")
    kind = bsp_table_kind(frame.columns) if options.name == "bsp" else None
    roofline_kind = roofline_table_kind(frame.columns) if options.name in ROOFLINE_MODELS else None
    frame = extend_table(frame, where, gpu_features, kind, base_clock, roofline_kind)
    if options.name == "bsp":
        roles = {role: column for role, column in bsp_columns(options, kind).items() if column is not None}
        chosen = list(dict.fromkeys(roles.values()))  # one column may serve two roles (loads and stores)
        absent = [f"{role}={column}" for role, column in roles.items() if column not in frame.columns]
        if absent:
            raise GpuperfError(f"{where}: no column for BSP input(s) {', '.join(absent)} (role=column); name the "
                               "table's own columns with --bsp-columns role=column,...")
    elif options.name in ROOFLINE_MODELS:
        chosen = roofline_columns(roofline_kind)
        require_columns(frame, chosen, where, "roofline input")
        refuse_negative_work(frame, chosen, where)
        unbounded = unbounded_rows(frame)
        if unbounded.any():
            frame = frame[~unbounded]
            notes.append(unbounded_note(unbounded, where))
    elif given:
        chosen = given
        if options.name == "linear":  # its sign bounds come from what each property is
            check_property_names(given, where=f"{where}: --features: the linear count model prices gpuperf's "
                                 "properties by name (a table of other columns fits with --model lr)")
    elif options.name in LEARNED:  # a count family held as an empty cell is 0, as where features are named
        chosen = default_features(with_zero_counts(frame, [c for c in frame.columns if is_count_column(str(c))]), where)
    else:
        known = property_names(options.property_set or "gpu")
        chosen = [name for name in known if name in frame.columns]
        if not chosen:
            raise GpuperfError(f"{where}: no column of the {options.property_set or 'gpu'} property set "
                               f"({', '.join(known[:4])}, ...): the linear count model prices gpuperf's properties by "
                               "name (a table of other columns fits with --model lr); for points of gpuperf's "
                               f"measurement kernels (a campaign export), gpuperf calibrate --table {where} --out "
                               "MODEL.json counts the properties from the kernels")
        absent = [name for name in known if name not in chosen]
        if absent:
            notes.append(f"note: {where}: linear fits the {len(chosen)} of the {len(known)} "
                         f"{options.property_set or 'gpu'} properties it has columns for; missing: "
                         f"{', '.join(absent[:6])}{', ...' if len(absent) > 6 else ''} (for points of gpuperf's "
                         f"kernels, gpuperf calibrate --table {where} counts them from the kernels)")
    if not chosen:
        raise GpuperfError(f"{where}: no numeric feature columns; name them with --features")
    gpus = frame["gpu"].nunique() if "gpu" in frame.columns else 0
    if options.name in LEARNED and gpu_features and gpus == 1:
        notes.append(f"note: {where}: one GPU ({frame['gpu'].iloc[0]}), so its descriptor columns are constant and "
                     "the model cannot tell GPUs apart; fit on several GPUs to predict another")
    if options.name in LEARNED and gpus > 1 and not any(name.startswith("gpu_") for name in chosen):
        hint = ("name gpu_* columns in --features to use the joined descriptors" if gpu_features
                else "--gpu-features joins their descriptors by name")
        notes.append(f"note: {where}: {gpus} GPUs, but no GPU descriptor among the features, so the model tells "
                     f"the GPUs apart only by the other features; {hint}")
    kernels = frame["kernel"].nunique() if "kernel" in frame.columns else 0
    if options.name == "bsp" and kernels > 1:
        on = f" on {gpus} GPUs" if gpus > 1 else ""
        notes.append(f"note: {where}: one lambda for {kernels} kernels{on}: Amaris et al. calibrate lambda per kernel "
                     "(evaluate --per-kernel fits one per kernel)")
    if options.name == "linear" and gpus > 1:
        notes.append(f"note: {where}: {gpus} GPUs, one set of weights: the linear count model prices one device's "
                     "counts, so it predicts every GPU alike; fit one model per GPU (or calibrate per device)")
    spread = frame["time_s"].max() / frame["time_s"].min() if len(frame) else 1.0
    if options.name in LEARNED and not options.log_target and spread >= SPREAD_FOR_LOG_TARGET:
        notes.append(f"note: {where}: its times span {spread:,.0f}x; fitted on raw times, {options.name} weighs the "
                     "slowest rows and may rank the rest badly; --log-target fits log2 times")
    return Prepared(numeric_features(with_zero_counts(frame, chosen), chosen, where), chosen, gpu_features, kind,
                    base_clock, roofline_kind, notes)


def noted(call: Callable[[], Any]) -> tuple[Any, list[str]]:
    """``call()``'s value and the gpuperf notes it raised, as ``note: ...`` lines for a command to print
    with its own notes (and list under ``--json``'s ``notes``); other warnings pass on."""
    from gpuperf.errors import GpuperfNote

    value, caught = caught_warnings(call)
    notes = []
    for warning in caught:
        if issubclass(warning.category, GpuperfNote):
            notes.append(f"note: {warning.message}")
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return value, notes


def model_options(model: str, log_target: bool, select: str | None, svr_kernel: str,
                  bsp_columns: str | None, property_set: str | None) -> ModelOptions:
    from gpuperf.models.registry import ModelOptions, parse_bsp_columns, parse_select

    return ModelOptions(model, log_target=log_target, svr_kernel=svr_kernel, select=parse_select(select),
                        bsp_columns=parse_bsp_columns(bsp_columns), property_set=property_set)


def selected_features(model, features: Sequence[str]) -> list[str] | None:
    """The features a fitted model's Spearman selector kept, or None without one."""
    from sklearn.pipeline import Pipeline

    inner = getattr(model, "regressor_", model)
    if isinstance(inner, Pipeline) and "preprocess" in inner.named_steps:
        mask = inner.named_steps["preprocess"].get_support()
        return [name for name, keep in zip(features, mask) if keep]
    return None


def selection_note(model, features: Sequence[str], where: str) -> str | None:
    """A note when fewer features than asked for reached the Spearman threshold (None otherwise)."""
    from sklearn.pipeline import Pipeline

    inner = getattr(model, "regressor_", model)
    selector = inner.named_steps.get("preprocess") if isinstance(inner, Pipeline) else None
    if selector is None or not hasattr(selector, "scores_"):
        return None
    passed = int((selector.scores_ >= selector.threshold).sum())
    if passed >= selector.k:
        return None
    if passed == 0:
        best = int(selector.candidates_[0])
        return (f"note: {where}: no feature reached |Spearman r| >= {selector.threshold:g} with the time; kept the "
                f"single best, {features[best]} (|r| = {selector.scores_[best]:.3f})")
    reached = f"{passed} feature reached" if passed == 1 else f"{passed} features reached"
    return (f"note: {where}: only {reached} |Spearman r| >= {selector.threshold:g} with the time "
            f"(asked for {selector.k}); {'it is' if passed == 1 else f'all {passed} are'} kept")


def held_out_gpus_notes(prepared: Prepared, model: str, columns: Sequence[str], where: str) -> list[str]:
    """Where GPUs are held out one at a time from a learned model with GPU descriptors: a note for each
    held-out GPU unlike every other one (:func:`~gpuperf.evaluation.gpu_range.unlike_training_gpus`),
    or one note where each fold is fitted on a single GPU."""
    from gpuperf.evaluation.gpu_range import unlike_training_gpus
    from gpuperf.models.registry import LEARNED

    used = [name for name in prepared.features if str(name).startswith("gpu_")]
    if list(columns) != ["gpu"] or model not in LEARNED or not prepared.gpu_features or not used:
        return []
    gpus = sorted(prepared.frame["gpu"].dropna().astype(str).unique())
    if len(gpus) == 2:
        return [f"note: {where}: two GPUs, so each fold is fitted on one GPU, whose descriptors never vary: the "
                "held-out GPU is predicted as if it were the other"]
    return [f"note: {where}: held-out {name}: {reason}" for held in gpus
            for name, reason in unlike_training_gpus([g for g in gpus if g != held], used, [held],
                                                     prepared.base_clock, model)]


def selected_gpus_note(metadata: dict, features: Sequence[str], gpu_features: bool, where: str) -> str | None:
    """A note where ``--select`` left out every GPU descriptor the table's several GPUs brought."""
    kept = metadata.get("selected_features")
    offered = [name for name in features if str(name).startswith("gpu_")]
    if not gpu_features or kept is None or len(metadata.get("gpus") or []) < 2 or not offered:
        return None
    if any(str(name).startswith("gpu_") for name in kept):
        return None
    return (f"note: {where}: --select kept no GPU descriptor ({len(offered)} offered), so the model tells the GPUs "
            "apart only by the other features and predict-table --gpu refuses it; to keep descriptors, name the "
            "features with --features instead")


def rows_boards_notes(frame: pd.DataFrame, gpus_used: bool) -> list[str]:
    """Where a table's GPU names a model of several boards gpuperf describes (A100), which board its rows
    are taken as (:func:`~gpuperf.hardware.specs.other_boards_note`): for a command whose result the rows'
    GPUs change (``gpus_used``: descriptors joined, rows grouped or scaled by GPU)."""
    from gpuperf.hardware.specs import other_boards_note

    if not gpus_used or "gpu" not in frame.columns:
        return []
    names = sorted({str(name) for name in frame["gpu"].dropna().unique()})
    return [note for note in map(other_boards_note, names) if note]


def finite_or_none(metrics: dict) -> dict:
    """``metrics`` with NaN and infinities as None (strict JSON)."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in metrics.items()}


def _names(frame: pd.DataFrame, column: str) -> list[str]:
    return sorted(map(str, frame[column].unique())) if column in frame.columns else []


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
PropertySetArg = Annotated[str | None, typer.Option("--property-set", help="linear: gpu, cpu or stevens_klockner properties")]
JsonArg = Annotated[bool, typer.Option("--json", metavar="", help="print JSON")]
ReportArg = Annotated[Path | None, typer.Option("--report", help="folder for a Markdown/HTML report with plots")]


def fit_command(
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
    from gpuperf.evaluation.metrics import all_metrics
    from gpuperf.models.persistence import save_model
    from gpuperf.models.registry import build_estimator

    options = model_options(model, log_target, select, svr_kernel, bsp_columns, property_set)
    if out.suffix not in (".json", ".skops"):
        raise GpuperfError(f"--out {out}: use a .json or .skops model file")
    new_file = not model_output_file(out).exists()  # a model another run writes meanwhile is kept
    frame, where = read_table(data)
    prepared = prepare_training(frame, where, options, features, gpu_features, base_clock)
    table, names = prepared.frame, prepared.features
    estimator = build_estimator(options, names, prepared.table_kind)
    if options.name == "bsp":
        check_bsp_inputs(estimator, table[names], where)
    with fitting_errors(where, options.name, table[names]):
        fitted = estimator.fit(table[names], table["time_s"].to_numpy())
    trained = fitted.predict(table[names])
    metadata: dict[str, Any] = {
        "model": options.name,
        "dataset": where,
        "rows": len(table),
        "gpus": _names(table, "gpu"),
        "kernels": _names(table, "kernel"),
        "options": prepared.options(options),
        "selected_features": selected_features(fitted, names),
        "train_metrics": finite_or_none(all_metrics(table["time_s"], trained)),
    }
    save_model(fitted, out, feature_names=names, metadata=metadata, new=new_file, replace=True)
    notes = [note for note in (
        status_note(frame, where), *rows_boards_notes(frame, prepared.gpu_features),
        *prepared.notes, indistinct_note(table, names, where),
        selection_note(fitted, names, where), selected_gpus_note(metadata, names, gpu_features, where),
        constant_fit_note(trained, table["time_s"], options.name, where),
        degenerate_fit_note(trained, table["time_s"], len(metadata["selected_features"] or names), options.name, where),
        not_positive_note(trained, len(trained), metadata["options"],
                          ", so the training gmre (a ratio of logs) is undefined (null)")) if note]
    for note in notes:
        _print_note(note)
    if as_json:
        print_json({"out": str(out), "features": names, **metadata,
                    "notes": [note.removeprefix("note: ") for note in notes]})
        return
    kept = metadata["selected_features"]
    gpus, kernels = len(metadata["gpus"]), len(metadata["kernels"])
    where_from = ", ".join(part for part in (_counted(gpus, "GPU", "no gpu column"),
                                             _counted(kernels, "kernel", "no kernel column")))
    print(f"fitted {options.name} on {counted(len(table), 'row')} ({where_from}) with {len(names)} features"
          + (f", {len(kept)} selected" if kept is not None else "")
          + f"; training MAPE {_fraction(metadata['train_metrics']['mape'])}; wrote {out}")


def _fraction(value: float | None) -> str:
    """A MAPE-like fraction with its percentage: ``0.147 (14.7 %)``."""
    return "undefined" if value is None else f"{value:.3g} ({value:.1%})"


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


def predict_table_command(
    data: DataArg,
    model: Annotated[Path, typer.Option("--model", "-m", help="model file written by 'gpuperf fit'")],
    out: Annotated[Path, typer.Option("--out", "-o", help="CSV (or .parquet) to write")],
    gpu: Annotated[str | None, typer.Option(
        "--gpu", help="predict every row as if run on this GPU (its descriptor replaces the row's)")] = None,
) -> None:
    """Predict every row of a table with a saved model: the rows plus predicted_time_s."""
    import numpy as np

    from gpuperf.evaluation.protocols import predict_bounded
    from gpuperf.features.table import with_zero_counts
    from gpuperf.hardware.specs import get_gpu, other_boards_note
    from gpuperf.models.persistence import load_model, model_info
    from gpuperf.progress import progress_bar

    _table_output(out)
    new_output_file(out)
    info = model_info(model)
    names = info.get("feature_names")
    if not names:
        raise GpuperfError(f"{model}: the model was saved without feature names")
    options = saved_options(info, model)
    fitted = load_model(model)  # a damaged file is named before the table is blamed for lacking its columns
    if gpu is not None:
        if not options.get("gpu_features"):
            raise GpuperfError(f"{model}: the model does not use GPU descriptors, so --gpu cannot change its "
                               "predictions; fit it with --gpu-features")
        selected = (info.get("metadata") or {}).get("selected_features")
        kept = selected or names
        if not any(str(name).startswith("gpu_") for name in kept):
            chose = "--select kept" if selected else "its features are"
            raise GpuperfError(f"{model}: no GPU descriptor among the features the model uses ({chose} "
                               f"{', '.join(map(str, kept[:4]))}{', ...' if len(kept) > 4 else ''}), so --gpu "
                               "cannot change its predictions; fit it keeping a gpu_* column")
        try:
            named, gpu = gpu, get_gpu(gpu).name
        except GpuperfError as error:
            raise GpuperfError(f"--gpu: {error}") from None
        _print_note(other_boards_note(named))
    with progress_bar() as bar:  # a million rows read for a minute
        bar.add_task(f"reading {data}", total=None)
        frame, where = read_table(data)
    for note in rows_boards_notes(frame, gpu is None and bool(options.get("gpu_features"))):
        _print_note(note)
    absent = [str(name) for name in names if name not in frame.columns]
    if (info.get("metadata") or {}).get("kind") == "linear_count_model" and absent:
        raise GpuperfError(f"{model}: a linear count model from gpuperf calibrate prices a kernel from its counts: "
                           f"gpuperf predict KERNEL -p ... --model {model}; {where} lacks its property columns "
                           f"({', '.join(absent[:4])}{', ...' if len(absent) > 4 else ''})")
    rows = frame if gpu is None else frame.assign(gpu=gpu)
    table = extend_table(rows, where, bool(options.get("gpu_features")), options.get("bsp_inputs"),
                         bool(options.get("base_clock")), options.get("roofline_inputs"))  # names a row's bad GPU
    table = with_zero_counts(table, names)
    selected = (info.get("metadata") or {}).get("selected_features")
    unselected = [str(name) for name in names if selected and name not in selected]
    unused = [name for name in unselected if name not in table.columns]
    table = table.assign(**dict.fromkeys(unselected, 0.0))  # the selector drops them whatever they hold
    if unused:
        _print_note(f"note: {where}: no column(s) {', '.join(unused[:4])}{', ...' if len(unused) > 4 else ''}; the "
                    "model's --select left them out, so they do not change its predictions")
    if gpu is not None:  # a field the --gpu's descriptor lacks is the GPU's, not the table's
        for column in (str(c) for c in names if str(c).startswith("gpu_") and c in table.columns):
            if len(table) and table[column].isna().all():
                lacks = _descriptor_lacks(gpu, column.removeprefix("gpu_"))
                raise GpuperfError(f"--gpu {gpu}: its descriptor {lacks} (see gpuperf gpus), and the model uses "
                                   f"{column}; fit with --features naming the descriptor columns every GPU you "
                                   "price has")
    _refuse_features_of_another_version(info, model, [str(n) for n in names if n not in table.columns])
    unbounded = unbounded_rows(table)
    failed = failed_without_features(table, names)
    priced = rows.loc[table.index[~unbounded & ~failed]]  # a failed row left unpriced names no GPU to price
    _refuse_other_gpus_of_a_one_gpu_model(info, options, model, priced, "--gpu" if gpu is not None else where)
    _print_note(outside_training_gpus_note(info, options, priced, "--gpu" if gpu is not None else where))
    table = numeric_features(table[~unbounded & ~failed], names, where)
    if hasattr(fitted, "undefined_rows"):  # bsp: a row its inputs give no time is refused, as fit refuses it
        check_bsp_inputs(fitted, table[names], where)
    result = frame  # the rows as read, with the predictions added (not a copy of a million rows)
    result[PREDICTED] = np.nan
    clipped = np.zeros(0, dtype=bool)
    if len(table):  # else every row is noted below as one that has no prediction
        with fitting_errors(where, str(options.get("name") or model), table[names], doing="predict from"):
            predicted, clipped = predict_bounded(fitted, table[names])
        result.loc[table.index, PREDICTED] = predicted
    if unbounded.any():
        _print_note(unbounded_note(unbounded, where, "no prediction for"))
    if failed.any():
        _print_note(f"note: {where}: no prediction for {counted(int(failed.sum()), 'row')} whose run failed (status not ok) "
                    "and that lack a feature value")
    if clipped.any():
        _print_note(clipped_note(int(clipped.sum()), len(result)))
    _print_note(not_positive_note(result.loc[table.index, PREDICTED], len(result), options))
    if gpu is not None:
        result[PREDICTED_GPU] = gpu
    elif PREDICTED_GPU in result.columns:  # an earlier --gpu run's label: these are for each row's own GPU
        result = result.drop(columns=[PREDICTED_GPU])
        _print_note(f"note: {where}: dropped its {PREDICTED_GPU} column, left by an earlier predict-table --gpu: "
                    f"these {PREDICTED} are for each row's own GPU")
    with progress_bar() as bar:  # a million rows write for minutes
        bar.add_task(f"writing {counted(len(result), 'row')} to {out}", total=None)
        _write_table(result, out)
    print(f"wrote {counted(len(result), 'row')} with {PREDICTED} to {out}")


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
    from gpuperf.models.cross_gpu import PREDICTED as PREDICTED_COLUMN, times_on_gpu

    _table_output(out)
    new_output_file(out)
    columns = [c.strip() for c in key.split(",") if c.strip()]
    if not columns:
        raise GpuperfError("--key: name the columns that tell launches apart, e.g. --key n or --key grid.x,block.x")
    tables = [(respelled_profiled_names(table), label) for table, label in map(read_table, data)]  # older imports
    frame, where = launch_tables(tables, columns)
    result = times_on_gpu(frame, gpu, columns, where)  # its measured rows: see times_on_gpu
    named = other_boards_note(gpu)
    for note in dict.fromkeys([named, *rows_boards_notes(frame, True)]):  # rows of two spellings are one GPU
        _print_note(note)
    written = result.priced.assign(predicted_gpu=result.gpu)  # the launches it timed too: the job's total
    _write_table(written, out)
    for each, each_where in tables:
        _print_note(status_note(each, each_where))
    _print_note(repeated_launches_note(frame, where))
    if result.not_calibrated:
        _print_note(f"note: not predicted, no launch timed on {result.gpu}: kernel(s) "
                    f"{', '.join(result.not_calibrated)}")
    _print_note(not_predicted_note(result.not_predicted, result.gpu))
    _print_note(disagreeing_note(result.disagreeing, where))
    measured = int((written["source"] == "measured").sum())
    summary = {"gpu": result.gpu, "out": str(out), "rows": len(written), "predicted": len(written) - measured,
               "measured": measured, "time_column": PREDICTED_COLUMN,
               "kernels": result.kernels.to_dict("records"), "not_calibrated": result.not_calibrated,
               "not_predicted": result.not_predicted.to_dict("records"),
               "disagreeing_launches": result.disagreeing.to_dict("records"),  # print_json: NaN as null
               "predicted_total_s": float((written[PREDICTED_COLUMN] * written["launches"]).sum()),
               "uncovered_source_time_s": result.uncovered}
    if as_json:
        print_json(summary)
        return
    print_table(summary["kernels"], title=f"{result.gpu}: launches predicted per kernel")
    print(f"the job on {result.gpu}: {summary['predicted_total_s']:.4g} s ({PREDICTED_COLUMN} x launches summed)"
          + (f"; not priced: launches taking " + ", ".join(f"{seconds:.4g} s on {name}" for name, seconds
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
    _print_note(f"note: {where}: an nvprof summary imported by an earlier gpuperf version, its call counts in "
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


def _table_output(out: Path) -> None:
    """An error, before anything runs, for an ``--out`` named as no table gpuperf writes."""
    from gpuperf.datasets.tables import PARQUET_SUFFIXES

    if not out.name.lower().endswith((".csv", ".csv.gz", *PARQUET_SUFFIXES)):
        raise GpuperfError(f"--out {out}: the table is written as CSV or Parquet; name it .csv, .csv.gz or .parquet")


def _write_table(frame: pd.DataFrame, out: Path) -> None:
    """``frame`` as CSV, or Parquet where ``out`` says so, written whole."""
    from gpuperf.datasets import write_dataset_csv
    from gpuperf.datasets.tables import PARQUET_SUFFIXES

    if out.name.lower().endswith(PARQUET_SUFFIXES):
        from gpuperf.files import written_whole

        with written_whole(out, new=True) as temporary:  # refused at the start if there: kept if one appears
            frame.to_parquet(temporary, index=False)
    else:
        write_dataset_csv(frame, out)


def evaluate_command(
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
    import numpy as np

    from gpuperf.datasets.schema import row_location
    from gpuperf.evaluation.protocols import leave_one_group_out
    from gpuperf.models.registry import build_estimator

    columns = held_out_columns(protocol, sizes)
    group = "/".join(columns)  # how tables and JSON name the held-out group: gpu, kernel, or n/m
    options = model_options(model, log_target, select, svr_kernel, bsp_columns, property_set)
    if report is not None:
        report_folder(report)
    frame, where = read_table(data)
    if per_kernel and group == "kernel":
        raise GpuperfError("--per-kernel: kernels held out one at a time have no rows to fit their own model")
    require_columns(frame, [*columns, "kernel"] if per_kernel else columns, where, "group")
    prepared = prepare_training(frame, where, options, features, gpu_features, base_clock)
    for column in columns:
        blank = np.flatnonzero(prepared.frame[column].isna().to_numpy())
        if len(blank):
            raise GpuperfError(f"{where}: {row_location(prepared.frame, int(blank[0]))}: {column} has no value: the "
                               f"row's {group} is unknown ({len(blank)} such measured rows)")
    labels = prepared.frame[columns].dropna().drop_duplicates().map(  # 4096, as the result tables write it
        lambda value: str(int(value)) if isinstance(value, float) and value.is_integer() else str(value))
    held = labels.agg("/".join, axis=1).unique()
    if len(held) < 2:
        raise GpuperfError(f"{where}: {protocol} needs measured rows of at least two values of {group}; the table "
                           f"holds {'one' if len(held) else 'none'}{f' ({held[0]})' if len(held) else ''}")
    estimator = build_estimator(options, prepared.features, prepared.table_kind)
    with fitting_errors(where, options.name, prepared.frame[prepared.features]), \
            progress_bar(no_progress or as_json) as bar:
        task = bar.add_task(f"fitting {options.name} with each {group} held out", total=len(held))
        evaluation = leave_one_group_out(estimator, prepared.frame, prepared.features, columns, name=protocol,
                                         fit_by="kernel" if per_kernel else None,
                                         progress=lambda done, total: bar.update(task, completed=done, total=total))
    result = {
        "dataset": where,
        "model": options.name,
        "options": prepared.options(options),
        "protocol": protocol,
        "per_kernel": per_kernel,
        "group": group,
        "rows": len(evaluation.predictions),
        "features": prepared.features,
        "overall": evaluation.overall,
        "per_group": {str(key): dict(row) for key, row in evaluation.per_group.to_dict(orient="index").items()},
        "skipped": evaluation.skipped,
        "bounded": evaluation.bounded,
    }
    not_positive = not_positive_note(evaluation.predictions["predicted"], len(evaluation.predictions),
                                     result["options"], ", so gmre (a ratio of logs) is undefined (null) for "
                                     "the groups holding them and overall")
    notes = [note for note in (status_note(frame, where), *rows_boards_notes(frame, prepared.gpu_features or "gpu" in columns),
                               *prepared.notes,
                               *held_out_gpus_notes(prepared, options.name, columns, where), bounded_note(evaluation),
                               skipped_note(evaluation, per_kernel), one_prediction_note(evaluation, options.name),
                               indistinct_note(prepared.frame, prepared.features, where), not_positive) if note]
    result["notes"] = [note.removeprefix("note: ") for note in notes]
    if report is not None:
        result["report"] = str(write_evaluation_report(report, result, evaluation, prepared)["markdown"])
    for note in notes:
        _print_note(note)
    if as_json:
        print_json(result)
        return
    label = f"{group} (held out)" if group in result["overall"] else group  # a size column named n, say
    rows = [{label: key, **metrics} for key, metrics in result["per_group"].items()]
    rows.append({label: "overall", **result["overall"]})
    print_table(rows, title=f"{options.name} on {where}, {protocol}",
                columns=[label, "n", "mape", "gmre", "median_ape", "within_20pct", "spearman", "kendall",
                         "top5_overlap"])
    print(METRICS_CAPTION)
    if report is not None:
        print(f"wrote {result['report']}")


def held_out_columns(protocol: str, sizes: str | None) -> list[str]:
    """The columns whose values ``protocol`` holds out in turn: gpu, kernel, or the ``--sizes`` columns."""
    if protocol not in PROTOCOLS:
        raise unknown_name_error("protocol", protocol, PROTOCOLS)
    named = [c.strip() for c in (sizes or "").split(",") if c.strip()]
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


def write_evaluation_report(folder: Path, result: dict, evaluation, prepared: Prepared) -> dict[str, Path]:
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
    app.command("predict-gpu")(predict_gpu_command)
    app.command("evaluate")(evaluate_command)
