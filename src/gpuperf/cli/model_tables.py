"""Reading, checking and preparing a table for a model: what ``fit``, ``predict-table``, ``evaluate`` and
``predict-gpu`` share, with the notes they print about it.

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

import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuperf.cli.output import caught_warnings, comma_separated, counted, known_choice
from gpuperf.errors import (
    STANDARD_INPUT, GpuperfError, did_you_mean, first_names, standard_input_refused, unknown_name_error,
)

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from gpuperf.evaluation.protocols import Evaluation
    from gpuperf.models.registry import ModelOptions


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
    if not path.exists() and source == STANDARD_INPUT:
        raise standard_input_refused()
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


def print_note(note: str | None) -> None:
    if note:
        import sys

        print(note, file=sys.stderr)


def json_notes(notes: Sequence[str]) -> list[str]:
    """``notes`` as ``--json`` lists them: without ``note: ``."""
    return [note.removeprefix("note: ") for note in notes]


def read_rows_notes(frame: pd.DataFrame, where: str, gpus_used: bool) -> list[str]:
    """The notes on a table as read: the rows left out for their status (:func:`status_note`) and the board
    each GPU name is taken as (:func:`rows_boards_notes`, where ``gpus_used``)."""
    return [note for note in (status_note(frame, where), *rows_boards_notes(frame, gpus_used)) if note]


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


def bounded_note(evaluation: Evaluation) -> str | None:
    """A note counting the predictions the model clipped to its bounds (a runaway extrapolation)."""
    total = sum(evaluation.bounded.values())
    if not total:
        return None
    return clipped_note(total, len(evaluation.predictions))


def skipped_note(evaluation: Evaluation, per_kernel: bool) -> str | None:
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
        counted = "1 feature" if features == 1 else f"{features} features"
        return (f"note: {where}: {counted} and an intercept for {rows} training rows, enough for {model} "
                "to fit the training rows (nearly) exactly, so its training MAPE says little of its error on other "
                "rows; fit on more rows or fewer features (--features, --select)")
    return None


def one_prediction_note(evaluation: Evaluation, model: str) -> str | None:
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


def require_columns(frame: pd.DataFrame, columns: Sequence[str], where: str, what: str, otherwise: str = "") -> None:
    """One error naming every missing column (with the nearest names for the first, else the hint ``otherwise``)."""
    from gpuperf.datasets.schema import variant_parameters

    missing = [c for c in columns if c not in frame.columns]
    if not missing:
        return
    hint = did_you_mean(missing[0], frame.columns) or (f" ({otherwise})" if otherwise else "")
    descriptors = [c for c in frame.columns if str(c).startswith("gpu_")]
    if any(str(c).startswith("gpu_") for c in missing) and "gpu" in frame.columns and not descriptors:
        hint = " (--gpu-features joins the gpu_* columns of each row's GPU descriptor)"
    if set(missing) <= set(variant_parameters(frame)):  # a features row written before they were columns
        hint = (" (they are in the rows' variant labels only: `gpuperf features KERNEL[...] -p ... --out ROW.csv` "
                "writes a variant's parameters as columns)")
    raise GpuperfError(f"{where}: missing {what} column(s) {', '.join(missing)}{hint}")


def numeric_features(frame: pd.DataFrame, features: Sequence[str], where: str, missing_hint: str = "") -> pd.DataFrame:
    """``frame`` with the ``features`` as floats; a non-number or a missing value names its row, and a missing
    column is an error (with ``missing_hint`` where nothing nearer explains it)."""
    import numpy as np
    import pandas as pd

    from gpuperf.datasets.schema import row_location

    require_columns(frame, features, where, "feature", missing_hint)
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
                lacks = descriptor_lacks(gpu, column.removeprefix("gpu_"))
                raise GpuperfError(
                    f"{where}: {row_location(out, position)}: the descriptor of GPU '{gpu}' {lacks} "
                    f"(see gpuperf gpus), and the model uses {column}; {way_out}"
                )
            raise GpuperfError(f"{where}: {row_location(out, position)}: column {column}={raw!r} is {problem}")
        out[column] = numbers
    return out


def counted_or(count: int, what: str, none: str) -> str:
    """``1 GPU``, ``3 GPUs``, or ``none`` for 0."""
    return none if count == 0 else f"{count} {what}{'s' if count != 1 else ''}"


def descriptor_lacks(gpu: str, field: str) -> str:
    """What the descriptor of ``gpu`` does wrong for a numeric ``field``: gives it as text, or has none."""
    from gpuperf.hardware import get_gpu

    try:
        listed = getattr(get_gpu(str(gpu)), field, None)
    except GpuperfError:
        listed = None
    return f"gives {field} as {listed!r}, not a number" if isinstance(listed, str) and listed else f"has no {field}"


# -- preparing a table for a model -----------------------------------------------------------------

def refuse_other_gpus_of_a_one_gpu_model(info: dict, options: dict, model: Path, rows: "pd.DataFrame",
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
    read: pd.DataFrame | None = None  # the same rows as read: a size column that is a feature, exact past 2**53

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
    from gpuperf.models.registry import (
        BSP_SIGNATURES,
        ROOFLINE_SIGNATURES,
        add_static_bsp_inputs,
    )

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


def refuse_features_of_another_version(info: dict, model: Path, absent: list[str]) -> None:
    """A model saved by another gpuperf release using columns the table lacks: refit it, rather than
    make up a column that may not mean what the model learned."""
    import gpuperf
    from gpuperf.models.persistence import release

    saved = str(info.get("gpuperf_version") or "")
    if absent and saved and release(saved) != release(gpuperf.__version__):
        raise GpuperfError(f"{model}: saved by gpuperf {saved}, it uses {first_names(absent, 4)}, which the table "
                           f"lacks; gpuperf {gpuperf.__version__} may not compute such a column or give it the same "
                           "meaning: refit the model with this gpuperf")


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


def exact_repeats(frame: pd.DataFrame) -> np.ndarray | None:
    """Per row, whether it repeats an earlier one in every column; None where none does (or a cell holds
    a list or other unhashable value, so that no row can be compared whole)."""
    try:
        repeated = frame.duplicated().to_numpy()
    except TypeError:
        return None
    return repeated if repeated.any() else None


def repeats_note(frame: pd.DataFrame, where: str, repeated: np.ndarray, rows: str, outcome: str) -> str:
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
    from gpuperf.datasets.schema import time_column
    from gpuperf.features.table import with_zero_counts
    from gpuperf.models.registry import NEEDS_GPU_FEATURES, ROOFLINE_MODELS, bsp_table_kind, roofline_table_kind

    given = named_features(features)
    measured = time_column(frame, where)  # time_s, or the time in another unit (time_ms, ...)
    refuse_features_not_read(given, measured, options.name)
    frame, notes = measured_rows_named_alike(frame, where)
    gpu_features = gpu_features or options.name in NEEDS_GPU_FEATURES
    if base_clock and not gpu_features:
        raise GpuperfError("--base-clock: it sets the clock of the GPU descriptors; join them with --gpu-features")
    kind = bsp_table_kind(frame.columns) if options.name == "bsp" else None
    roofline_kind = roofline_table_kind(frame.columns) if options.name in ROOFLINE_MODELS else None
    frame, join_notes = noted(lambda: extend_table(frame, where, gpu_features, kind, base_clock, roofline_kind))
    notes.extend(join_notes)  # a GPU with no base clock under --base-clock: --json lists it too
    frame, chosen, feature_notes = model_features(frame, where, options, given, kind, roofline_kind)
    notes.extend(feature_notes)
    notes.extend(training_rows_notes(frame, where, options, chosen, gpu_features))
    return Prepared(numeric_features(with_zero_counts(frame, chosen), chosen, where), chosen, gpu_features, kind,
                    base_clock, roofline_kind, notes, frame)


def named_features(features: str | None) -> list[str]:
    """The columns ``--features`` names, each once (empty without ``--features``)."""
    given = comma_separated(features)
    if features is not None and not given:
        raise GpuperfError("--features names no column; leave it out for the default features")
    repeated = sorted({name for name in given if given.count(name) > 1})
    if repeated:
        raise GpuperfError(f"--features names {', '.join(repeated)} more than once")
    return given


def refuse_features_not_read(given: Sequence[str], measured: str, model: str) -> None:
    """An error where ``--features`` names a key or a time (``measured``, the table's time column), or is
    given to a model that reads its inputs by role (bsp, the rooflines)."""
    from gpuperf.evaluation.feature_columns import KEYS_AND_OUTCOMES, is_measured_time
    from gpuperf.models.registry import ROOFLINE_MODELS

    timing = [name for name in given if name in KEYS_AND_OUTCOMES or is_measured_time(name) or name == measured]
    if timing:
        raise GpuperfError(f"--features: {', '.join(timing)} is a key or the measured time, not a feature")
    if given and model == "bsp":
        raise GpuperfError("model bsp: --features does not apply to it; name its inputs with --bsp-columns")
    if given and model in ROOFLINE_MODELS:
        raise GpuperfError(f"model {model}: --features does not apply to it; it reads flops and bytes columns "
                           "(flops and dram_bytes, or a profiler's or gpuperf's own counts)")


def measured_rows_named_alike(frame: pd.DataFrame, where: str) -> tuple[pd.DataFrame, list[str]]:
    """The measured rows of ``frame`` (:func:`~gpuperf.datasets.schema.measured_rows`, a time in another unit
    taken in seconds) with one spelling per GPU, kernel and variant, each exact repeat counted once, and the
    notes saying so."""
    from gpuperf.datasets.schema import measured_rows

    frame, notes = noted(lambda: measured_rows(frame, where, other_units=True))  # time_ms: a note
    frame, repeated_note = without_exact_repeats(with_one_spelling_per_name(frame), where)
    return frame, [*notes, repeated_note] if repeated_note else notes


def with_one_spelling_per_name(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with one spelling of each GPU, kernel and variant name, as gpuperf groups and joins them."""
    from gpuperf.datasets.profiler_csv import respelled_profiled_names
    from gpuperf.datasets.schema import canonical_gpus
    from gpuperf.datasets.tables import names_alike

    if "gpu" in frame.columns:  # one GPU spelt two ways (NVIDIA GeForce RTX 3090, RTX 3090) is one GPU
        frame = frame.assign(gpu=canonical_gpus(frame["gpu"]))
    frame = respelled_profiled_names(frame)  # an older import's matmul_tiled<int=16> is today's matmul_tiled<16>
    for key in ("kernel", "variant"):  # "saxpy " and "saxpy" are one kernel, its own fold in leave-one-kernel-out
        if key in frame.columns:
            frame = frame.assign(**{key: names_alike(frame[key])})
    return frame


def model_features(frame: pd.DataFrame, where: str, options: ModelOptions, given: list[str], bsp_kind: str | None,
                   roofline_kind: str | None) -> tuple[pd.DataFrame, list[str], list[str]]:
    """The rows the model of ``options`` can use, the columns it reads and notes on what was left out: bsp's
    inputs by role, the roofline's work and peaks, the ``--features`` given, a learned model's default
    features, or the linear count model's property columns."""
    from gpuperf.models.properties import check_property_names
    from gpuperf.models.registry import LEARNED, ROOFLINE_MODELS

    notes: list[str] = []
    if options.name == "bsp":
        chosen = bsp_input_columns(frame, where, options, bsp_kind)
    elif options.name in ROOFLINE_MODELS:
        chosen = roofline_input_columns(frame, where, roofline_kind)
        frame, notes = rows_the_roofline_bounds(frame, where)
    elif given:
        chosen = given
        if options.name == "linear":  # its sign bounds come from what each property is
            check_property_names(given, where=f"{where}: --features: the linear count model prices gpuperf's "
                                 "properties by name (a table of other columns fits with --model lr)")
    elif options.name in LEARNED:
        chosen, notes = default_learned_features(frame, where)
    else:
        chosen, notes = linear_property_columns(frame, where, options.property_set)
    if not chosen:
        raise GpuperfError(f"{where}: no numeric feature columns; name them with --features")
    return frame, chosen, notes


def bsp_input_columns(frame: pd.DataFrame, where: str, options: ModelOptions, bsp_kind: str | None) -> list[str]:
    """The columns bsp reads, each once: its roles' columns for the table's kind, with ``--bsp-columns``'s;
    an error names every role whose column the table lacks."""
    from gpuperf.models.registry import bsp_columns

    roles = {role: column for role, column in bsp_columns(options, bsp_kind).items() if column is not None}
    absent = [f"{role}={column}" for role, column in roles.items() if column not in frame.columns]
    if absent:
        raise GpuperfError(f"{where}: no column for BSP input(s) {', '.join(absent)} (role=column); name the "
                           "table's own columns with --bsp-columns role=column,...")
    return list(dict.fromkeys(roles.values()))  # one column may serve two roles (loads and stores)


def roofline_input_columns(frame: pd.DataFrame, where: str, roofline_kind: str | None) -> list[str]:
    """The columns the roofline of ``roofline_kind`` reads; an error names a missing one or a negative value."""
    from gpuperf.models.registry import roofline_columns

    chosen = roofline_columns(roofline_kind)
    require_columns(frame, chosen, where, "roofline input")
    refuse_negative_work(frame, chosen, where)
    return chosen


def rows_the_roofline_bounds(frame: pd.DataFrame, where: str) -> tuple[pd.DataFrame, list[str]]:
    """``frame`` without the rows :func:`unbounded_rows` marks, and a note counting them (none where none is)."""
    unbounded = unbounded_rows(frame)
    if not unbounded.any():
        return frame, []
    return frame[~unbounded], [unbounded_note(unbounded, where)]


def default_learned_features(frame: pd.DataFrame, where: str) -> tuple[list[str], list[str]]:
    """A learned model's default features (:func:`~gpuperf.evaluation.feature_columns.default_features`)
    and the notes naming the columns left out of them."""
    from gpuperf.evaluation.feature_columns import default_features
    from gpuperf.features.table import is_count_column, with_zero_counts

    counts = [c for c in frame.columns if is_count_column(str(c))]  # a count family held as an empty cell is 0
    return noted(lambda: default_features(with_zero_counts(frame, counts), where))


def linear_property_columns(frame: pd.DataFrame, where: str, property_set: str | None) -> tuple[list[str], list[str]]:
    """The columns of the ``property_set`` (default gpu) properties the table has, for the linear count model,
    and a note naming those it lacks; an error where it has none."""
    from gpuperf.models.properties import property_names

    named = property_set or "gpu"
    known = property_names(named)
    chosen = [name for name in known if name in frame.columns]
    if not chosen:
        raise GpuperfError(f"{where}: no column of the {named} property set ({', '.join(known[:4])}, ...): the linear "
                           "count model prices gpuperf's properties by name (a table of other columns fits with "
                           "--model lr); for points of gpuperf's measurement kernels (a campaign export), gpuperf "
                           f"calibrate --table {where} --out MODEL.json counts the properties from the kernels")
    absent = [name for name in known if name not in chosen]
    if not absent:
        return chosen, []
    return chosen, [f"note: {where}: linear fits the {len(chosen)} of the {len(known)} {named} properties it has "
                    f"columns for; missing: {first_names(absent, 6)} (for points of gpuperf's kernels, gpuperf "
                    f"calibrate --table {where} counts them from the kernels)"]


def training_rows_notes(frame: pd.DataFrame, where: str, options: ModelOptions, chosen: Sequence[str],
                        gpu_features: bool) -> list[str]:
    """Notes on what the training rows let the model of ``options`` learn."""
    from gpuperf.models.registry import LEARNED

    if options.name in LEARNED:
        notes = [gpus_untold_note(frame, where, chosen, gpu_features), raw_times_note(frame, where, options)]
    elif options.name == "bsp":
        notes = [one_lambda_note(frame, where)]
    elif options.name == "linear":
        notes = [one_set_of_weights_note(frame, where)]
    else:
        notes = []
    return [note for note in notes if note]


def distinct_count(frame: pd.DataFrame, column: str) -> int:
    """How many values ``column`` holds (empty cells aside); 0 where the table lacks it."""
    return frame[column].nunique() if column in frame.columns else 0


def gpus_untold_note(frame: pd.DataFrame, where: str, chosen: Sequence[str], gpu_features: bool) -> str | None:
    """A note where a learned model cannot tell the table's GPUs apart: the descriptors of its one GPU are
    constant, or its several GPUs have no descriptor among the features."""
    gpus = distinct_count(frame, "gpu")
    if gpu_features and gpus == 1:
        return (f"note: {where}: one GPU ({frame['gpu'].iloc[0]}), so its descriptor columns are constant and the "
                "model cannot tell GPUs apart; fit on several GPUs to predict another")
    if gpus > 1 and not any(name.startswith("gpu_") for name in chosen):
        hint = ("name gpu_* columns in --features to use the joined descriptors" if gpu_features
                else "--gpu-features joins their descriptors by name")
        return (f"note: {where}: {gpus} GPUs, but no GPU descriptor among the features, so the model tells the GPUs "
                f"apart only by the other features; {hint}")
    return None


def one_lambda_note(frame: pd.DataFrame, where: str) -> str | None:
    """A note where one bsp lambda is fitted for several kernels."""
    kernels, gpus = distinct_count(frame, "kernel"), distinct_count(frame, "gpu")
    if kernels < 2:
        return None
    on = f" on {gpus} GPUs" if gpus > 1 else ""
    return (f"note: {where}: one lambda for {kernels} kernels{on}: Amaris et al. calibrate lambda per kernel "
            "(evaluate --per-kernel fits one per kernel)")


def one_set_of_weights_note(frame: pd.DataFrame, where: str) -> str | None:
    """A note where one linear count model is fitted for several GPUs."""
    gpus = distinct_count(frame, "gpu")
    if gpus < 2:
        return None
    return (f"note: {where}: {gpus} GPUs, one set of weights: the linear count model prices one device's counts, "
            "so it predicts every GPU alike; fit one model per GPU (or calibrate per device)")


def raw_times_note(frame: pd.DataFrame, where: str, options: ModelOptions) -> str | None:
    """A note where a learned model fits raw times that span :data:`SPREAD_FOR_LOG_TARGET` or more."""
    import numpy as np

    decades = float(np.log10(frame["time_s"].max()) - np.log10(frame["time_s"].min())) if len(frame) else 0.0
    if options.log_target or decades < np.log10(SPREAD_FOR_LOG_TARGET):
        return None
    return (f"note: {where}: its times span {times_span(decades)}; fitted on raw times, {options.name} weighs the "
            "slowest rows and may rank the rest badly; --log-target fits log2 times")


def times_span(decades: float) -> str:
    """The slowest time over the fastest, ``decades`` powers of ten apart: ``1,000x``, or ``1e+600x`` past
    what a float holds in digits worth printing."""
    return f"{10 ** decades:,.0f}x" if decades < 15 else f"{10 ** (decades % 1):.3g}e+{int(decades)}x"


def noted(call: Callable[[], Any]) -> tuple[Any, list[str]]:
    """``call()``'s value and the gpuperf notes it raised, as ``note: ...`` lines for a command to print
    with its own notes (and list under ``--json``'s ``notes``); other warnings pass on.
    Use it where the command prints the notes itself, in its own order; ``output.with_notes`` and
    ``output.notes_kept`` print them on stderr for it."""
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
    from gpuperf.models.properties import PROPERTY_SETS
    from gpuperf.models.registry import SVR_KERNELS, ModelOptions, parse_bsp_columns, parse_select

    known_choice("--svr-kernel", "SVR kernel", svr_kernel, list(SVR_KERNELS))
    known_choice("--property-set", "property set", property_set, list(PROPERTY_SETS))
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
        if hasattr(selector, "defined_") and not selector.defined_[best]:
            return undefined_selection_note(selector, features[best], where)
        return (f"note: {where}: no feature reached |Spearman r| >= {selector.threshold:g} with the time; kept the "
                f"single best, {features[best]} (|r| = {selector.scores_[best]:.3f})")
    reached = f"{passed} feature reached" if passed == 1 else f"{passed} features reached"
    return (f"note: {where}: only {reached} |Spearman r| >= {selector.threshold:g} with the time "
            f"(asked for {selector.k}); {'it is' if passed == 1 else f'all {passed} are'} kept")


def undefined_selection_note(selector, kept: str, where: str) -> str:
    """The note where no feature's Spearman r with the time is defined, so the one kept is no better than another."""
    why = ("every feature is constant over the training rows" if selector.target_varies_
           else "the training rows have one time")
    return (f"note: {where}: no feature's |Spearman r| with the time is defined ({why}), so --select ranks none "
            f"above another; kept {kept}, the first")


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


def names_in(frame: pd.DataFrame, column: str) -> list[str]:
    """The distinct names in ``column`` (none where the table lacks it); empty cells name nothing."""
    return sorted(map(str, frame[column].dropna().unique())) if column in frame.columns else []


def unnamed_rows_notes(frame: pd.DataFrame, where: str) -> list[str]:
    """A note per gpu or kernel column with empty cells: those rows are fitted, but counted under no name."""
    import numpy as np

    from gpuperf.datasets.schema import row_location

    notes = []
    for column in ("gpu", "kernel"):
        if column not in frame.columns:
            continue
        blank = np.flatnonzero(frame[column].isna().to_numpy())
        if len(blank):
            verb = "has" if len(blank) == 1 else "have"
            notes.append(f"note: {where}: {len(blank)} of {len(frame)} measured rows {verb} no {column} (first: "
                         f"{row_location(frame, int(blank[0]))}); fitted, but counted under no {column}")
    return notes


def table_output_name(out: Path) -> None:
    """An error, before anything runs, for an ``--out`` named as no table gpuperf writes."""
    from gpuperf.datasets.tables import PARQUET_SUFFIXES

    if not out.name.lower().endswith((".csv", ".csv.gz", *PARQUET_SUFFIXES)):
        raise GpuperfError(f"--out {out}: the table is written as CSV or Parquet; name it .csv, .csv.gz or .parquet")


def write_table(frame: pd.DataFrame, out: Path) -> None:
    """``frame`` as CSV, or Parquet where ``out`` says so, written whole (counts as whole numbers)."""
    from gpuperf.datasets import write_dataset_csv
    from gpuperf.datasets.tables import PARQUET_SUFFIXES

    if out.name.lower().endswith(PARQUET_SUFFIXES):
        from gpuperf.files import written_whole

        from gpuperf.datasets.schema import with_whole_counts

        with written_whole(out, new=True) as temporary:  # refused at the start if there: kept if one appears
            with_whole_counts(frame).to_parquet(temporary, index=False)
    else:
        write_dataset_csv(frame, out)
