"""Evaluation protocols: hold out a GPU, a kernel, a size, or train on chosen kernels only.

Every protocol fits fresh clones of an estimator on the training rows only, predicts the held-out
rows and returns an :class:`Evaluation` with the per-row predictions and metrics per group.
"""

from __future__ import annotations

import math
import re
import warnings

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sklearn.base import clone

from gpuperf.datasets.schema import canonical_gpu, canonical_gpus, is_ok, require_frame, row_location
from gpuperf.errors import GpuperfError, GpuperfNote, name_list, refuse_one_string
from gpuperf.evaluation.metrics import all_metrics
from gpuperf.hardware.specs import spelling_key
from gpuperf.models.learned import takes_missing

TARGET = "time_s"
KEY_COLUMNS = ("kernel", "variant", "gpu")


@dataclass
class Evaluation:
    """Per-row predictions of one protocol run, with metric tables derived from them.

    ``predictions`` has the frame's key columns, ``fold`` (the held-out group), ``measured``,
    ``predicted``, ``bounded`` (the model clipped the prediction to its bounds) and ``row`` (the
    row's index label in the input frame).
    """

    name: str
    group: tuple[str, ...]
    predictions: pd.DataFrame
    skipped: dict[str, int] = field(default_factory=dict)
    in_sample: tuple[str, ...] = ()  # folds of rows the model was fitted on: shown, never pooled as held out

    def __repr__(self) -> str:
        folds = self.predictions["fold"].nunique() if "fold" in self.predictions.columns else 0
        shown = ", ".join(f"{name}={value:.3g}" for name, value in self.overall.items() if name in ("mape", "gmre"))
        return f"Evaluation({self.name!r}, {folds} folds, {len(self.held_out)} held-out rows, {shown})"

    @property
    def held_out(self) -> pd.DataFrame:
        """The predictions of rows the model was not fitted on (every fold but ``in_sample``)."""
        return self.predictions[~self.predictions["fold"].isin(self.in_sample)]

    def metrics_by(self, columns: str | Sequence[str]) -> pd.DataFrame:
        """One row of metrics per value of ``columns`` (e.g. "gpu" or ["gpu", "kernel"])."""
        columns = [columns] if isinstance(columns, str) else list(columns)
        missing = [str(c) for c in columns if c not in self.predictions.columns]
        if missing:
            raise GpuperfError(f"{self.name}: no column(s) {', '.join(missing)} in the predictions; metrics_by takes "
                               f"{', '.join(map(str, self.predictions.columns))}")
        rows = []
        groups = self.predictions.groupby(columns, sort=False)
        for key, part in sorted(groups, key=lambda group: natural_key(group[0])):
            key = key if isinstance(key, tuple) else (key,)
            rows.append(dict(zip(columns, key)) | all_metrics(part["measured"], part["predicted"]))
        return pd.DataFrame(rows, columns=None if rows else columns).set_index(columns)

    @property
    def per_group(self) -> pd.DataFrame:
        """Metrics for each held-out group."""
        return self.metrics_by("fold")

    @property
    def bounded(self) -> dict[str, int]:
        """How many predictions of each held-out group the model clipped to its bounds (the
        training times widened by ``LogTarget``'s ``bound_factor``); groups with none are left out."""
        if "bounded" not in self.predictions.columns:
            return {}
        counts = self.predictions.groupby("fold")["bounded"].sum()
        return {str(fold): int(counts[fold]) for fold in sorted(counts.index, key=natural_key) if counts[fold] > 0}

    @property
    def overall(self) -> dict[str, float]:
        """The held-out rows' metrics: the error metrics (mape, median_ape, within_20pct, gmre) and ``n``
        over all rows together, the rank metrics (spearman, kendall, top-k overlap) the mean of the
        held-out groups' values where defined (NaN where none is). Ranks pooled over groups would score
        the differences between groups (a larger size takes longer), not the order within each."""
        held_out = self.held_out
        result = all_metrics(held_out["measured"], held_out["predicted"])
        rank_names = [name for name in result if is_rank_metric(name)]
        per_fold = [all_metrics(part["measured"], part["predicted"])
                    for _, part in held_out.groupby("fold", sort=False)]
        for name in rank_names:
            defined = [metrics[name] for metrics in per_fold if math.isfinite(metrics[name])]
            result[name] = float(np.mean(defined)) if defined else math.nan
        return result

    def macro_mape(self, by: str | Sequence[str] = ("fold",), over: str = "kernel") -> pd.Series:
        """MAPE per (``by``, ``over``) cell, averaged over ``over`` with equal weight per value."""
        by = [by] if isinstance(by, str) else list(by)
        cells = self.metrics_by(by + [over])["mape"]
        means = cells.groupby(level=by, sort=False).mean().rename("macro_mape")
        return means.loc[sorted(means.index, key=natural_key)]


def is_rank_metric(name: str) -> bool:
    """Whether metric ``name`` scores the order of the rows (spearman, kendall, topK_overlap)."""
    return name in ("spearman", "kendall") or re.fullmatch(r"top\d+_overlap", name) is not None


def _as_columns(group: str | Sequence[str]) -> list[str]:
    return [group] if isinstance(group, str) else list(group)


def _usable_rows(frame: pd.DataFrame, features: Sequence[str], target: str, where: str,
                 groups: Sequence[str] = (), allow_nan: bool = False) -> pd.DataFrame:
    """The measured rows (status ok in any case, or every row without a status column). On them, a
    time that is not a positive number, a feature that is not a number (or missing, unless the
    model ``allow_nan``) or a missing ``groups`` value is an error naming the row."""
    refuse_one_string(features, "features", where)  # "flops" would read as the columns f, l, o, p, s
    if len(features) == 0:
        raise GpuperfError(f"{where}: no feature columns given; name at least one (default_features(frame) lists "
                           "the usual ones)")
    missing = [c for c in [*features, *groups, target] if c not in frame.columns]
    if missing:
        raise GpuperfError(f"{where}: missing column(s) {', '.join(map(str, missing))}")
    unnamed = [repr(c) for c in features if not isinstance(c, str)]
    if unnamed and len(unnamed) < len(features):  # scikit-learn takes feature names of one kind
        raise GpuperfError(f"{where}: features mix column names and other labels ({', '.join(unnamed[:3])}); "
                           "name every column with a string (frame.columns = frame.columns.astype(str))")
    measured = _measured(frame)
    times = pd.to_numeric(frame[target], errors="coerce").astype(float)  # a nullable column's <NA> as NaN
    _refuse_first(frame, measured & ~(times.gt(0) & np.isfinite(times)), target, "is not a positive number", where)
    for column in groups:
        _refuse_first(frame, measured & frame[column].isna(), column, "has no value: its group is unknown", where,
                      show_value=False)
    for column in features:
        values = pd.to_numeric(frame[column], errors="coerce").astype(float)
        _refuse_first(frame, measured & values.isna() & frame[column].notna(), column, "is not a number", where)
        _refuse_first(frame, measured & np.isinf(values), column, "is not a finite number", where)
        if not allow_nan:
            _refuse_first(frame, measured & frame[column].isna(), column,
                          "has no value, and this model takes no missing features", where, show_value=False)
    return frame.loc[measured]


def _measured(frame: pd.DataFrame) -> pd.Series:
    """Whether each row is measured: status ok in any case, or every row without a status column."""
    return is_ok(frame["status"]) if "status" in frame.columns else pd.Series(True, index=frame.index)


def _refuse_first(frame: pd.DataFrame, bad: pd.Series, column: str, problem: str, where: str,
                  show_value: bool = True) -> None:
    """An error naming the first ``bad`` row, its ``column`` (and value) and the ``problem``."""
    if bad.any():
        position = int(np.flatnonzero(bad.to_numpy())[0])
        value = frame[column].iloc[position]
        value = value.item() if isinstance(value, np.generic) else value
        shown = f"{column}={value!r}" if show_value else column
        raise GpuperfError(f"{where}: {row_location(frame, position)}: {shown} {problem}")


def balanced_subsample(frame: pd.DataFrame, by: Sequence[str], max_rows: int, seed: int = 0) -> pd.DataFrame:
    """At most ``max_rows`` random rows per value of the ``by`` columns (all rows of smaller groups; an
    empty value is a group of its own; no ``by`` columns: the whole frame is one group)."""
    if frame.empty:
        return frame
    codes = (frame.groupby(list(by), sort=False, dropna=False).ngroup().to_numpy() if len(by)
             else np.zeros(len(frame), dtype=np.int64))
    order = np.argsort(codes, kind="stable")  # each group's positions in turn, groups in order of appearance
    kept = [
        # the rows DataFrame.sample(n=max_rows, random_state=seed) draws, without a frame per group
        positions[np.random.RandomState(seed).choice(len(positions), size=max_rows, replace=False)]
        if len(positions) > max_rows else positions
        for positions in np.split(order, np.flatnonzero(np.diff(codes[order])) + 1)
    ]
    return frame.take(np.concatenate(kept))


def _fit_predict(estimator, train: pd.DataFrame, test: pd.DataFrame, features, target, fit_by,
                 fitted: dict | None = None):
    """Predictions for ``test`` (NaN where no model applies) from clones fitted on ``train``, and
    which of them the model bounded (see :func:`predict_bounded`); ``fitted``: see :func:`fitted_clone`."""
    predicted = pd.Series(np.nan, index=test.index)
    bounded = pd.Series(False, index=test.index)
    if fit_by is None:
        parts = [(np.arange(len(test)), train)]
    else:
        parts = []
        for key, positions in test.groupby(fit_by, sort=False).indices.items():
            key = key if isinstance(key, tuple) else (key,)
            mask = np.logical_and.reduce([train[c].eq(v).to_numpy() for c, v in zip(fit_by, key)])
            parts.append((positions, train.loc[mask]))
    for positions, train_part in parts:
        if len(train_part) == 0:
            continue
        model = fitted_clone(estimator, train_part[list(features)], train_part[target].to_numpy(dtype=float), fitted)
        predicted.iloc[positions], bounded.iloc[positions] = predict_bounded(model, test.iloc[positions][list(features)])
    return predicted, bounded


def fitted_clone(estimator, X: pd.DataFrame, y: np.ndarray, fitted: dict | None = None):
    """A clone of ``estimator`` fitted on ``X`` and ``y``. With ``fitted`` (a dict kept by the caller for
    one estimator), a model fitted on the same values in the same order is taken from it instead, and
    dropped from it: nested selection's inner folds fit each training set for two outer groups."""
    if fitted is None:
        return clone(estimator).fit(X, y)
    key = (tuple(X.columns), pd.util.hash_pandas_object(X, index=False).to_numpy().tobytes(), y.tobytes())
    model = fitted.pop(key, None)
    if model is None:
        model = fitted[key] = clone(estimator).fit(X, y)
    return model


def predict_bounded(model, X) -> tuple[np.ndarray, np.ndarray]:
    """A fitted model's predictions for ``X``, and which of them it clipped to its bounds
    (``LogTarget``, ``ReferenceResidual``; none for a model without bounds)."""
    if hasattr(model, "predict_bounded"):
        predicted, clipped = model.predict_bounded(X)
        return np.asarray(predicted, dtype=float), np.asarray(clipped, dtype=bool)
    return np.asarray(model.predict(X), dtype=float), np.zeros(len(X), dtype=bool)


def split_evaluation(
    estimator,
    frame: pd.DataFrame,
    features: Sequence[str],
    train_mask: pd.Series | np.ndarray | Sequence[bool],
    *,
    name: str = "split",
    fold: str = "test",
    target: str = TARGET,
    fit_by: str | Sequence[str] | None = None,
    max_train_rows: int | None = None,
    balance_by: str | Sequence[str] = ("kernel", "gpu"),
    seed: int = 0,
) -> Evaluation:
    """Fit on the rows where ``train_mask`` (a Series on ``frame``'s index, or one flag per row) is
    true, predict all other rows; ``max_train_rows`` and ``balance_by`` as :func:`leave_one_group_out`
    takes them."""
    require_frame(frame, name)
    if not isinstance(train_mask, pd.Series):
        flags = np.asarray(train_mask, dtype=bool)
        if flags.shape != (len(frame),):
            raise GpuperfError(f"{name}: train_mask holds {flags.size} flags for {len(frame)} rows; give one per row")
    else:  # (a mask on the frame's own index may repeat its labels: no reindexing needed, nor possible)
        same = train_mask.index.equals(frame.index)
        flags = (train_mask if same else train_mask.reindex(frame.index)).fillna(False).astype(bool).to_numpy()
    flags = flags[_measured(frame).to_numpy(dtype=bool)]
    frame = _usable_rows(frame, features, target, name, allow_nan=takes_missing(estimator))
    train_mask = pd.Series(flags, index=frame.index)  # by position, as labels may repeat
    return _run(estimator, frame, features, [(fold, train_mask)], name, ("fold",), target, fit_by,
                max_train_rows, balance_by, seed)


def leave_one_group_out(
    estimator,
    frame: pd.DataFrame,
    features: Sequence[str],
    group: str | Sequence[str],
    *,
    target: str = TARGET,
    fit_by: str | Sequence[str] | None = None,
    groups: Sequence | None = None,
    max_train_rows: int | None = None,
    balance_by: str | Sequence[str] = ("kernel", "gpu"),
    seed: int = 0,
    name: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    fitted: dict | None = None,
    group_values: pd.DataFrame | None = None,
) -> Evaluation:
    """For each value of ``group`` (or those listed in ``groups``): fit on every other row, predict it.

    ``fit_by`` fits one model per value of those columns (e.g. one per kernel, as Amaris et al.);
    held-out rows whose ``fit_by`` value has no training rows, and rows the model predicts no time for
    (NaN), are left out of the metrics and counted in ``Evaluation.skipped``; an error when none is left.
    ``max_train_rows`` caps the training rows per ``balance_by`` cell (a random subsample; a table with
    none of those columns is one cell). ``group``, ``fit_by`` and ``balance_by`` take one column as a string
    (``"gpu"``) or several as a list, as pandas' ``groupby`` does; ``groups`` and ``features`` refuse one string.
    ``progress(done, total)`` is called before the first held-out group and after each. ``fitted``
    (a dict kept across runs of one estimator) reuses a model fitted on the same training rows (:func:`fitted_clone`).
    ``group_values`` (the rows of ``frame`` in its order) labels the groups where ``frame`` holds the ``group``
    columns converted: a size that is also a feature, as floats, would merge sizes past 2**53.
    """
    columns = _as_columns(group)
    where = name or f"leave-one-{'-'.join(columns)}-out"
    require_frame(frame, where)
    values = _group_values(frame, columns, group_values, where)
    frame = _usable_rows(frame, features, target, where, columns, takes_missing(estimator))
    labels = label_texts(values[columns[0]])  # one column: no slow row-wise join
    if len(columns) > 1:
        labels = labels.str.cat([label_texts(values[c]) for c in columns[1:]], sep="/")
    column = values[columns[0]]
    whole = len(columns) == 1 and (_whole_floats(column) or pd.api.types.is_integer_dtype(column))
    wanted = (sorted(labels.unique(), key=natural_key) if groups is None
              else [_group_text(g, whole) for g in name_list(groups, "groups", where)])
    wanted = list(dict.fromkeys(wanted))  # a group named twice (two spellings of it) is held out once
    present = set(labels.unique())  # once, not once per held-out group: seconds on the Rodinia table's 43,837 rows
    unknown = [g for g in wanted if g not in present]
    if unknown:
        raise GpuperfError(f"{where}: no rows for held-out group(s) {', '.join(unknown)}")
    _note_case_twins(wanted, where)
    # each group's training mask made as its fold runs: all at once, groups x rows of them (about 2 GB for 10,000 sizes
    # of 200,000 rows) were held before the first fit
    folds = ((g, labels.ne(g)) for g in wanted)
    evaluation = _run(estimator, frame, features, folds, where, tuple(columns), target, fit_by,
                      max_train_rows, balance_by, seed, progress, fitted, fold_count=len(wanted))
    if evaluation.predictions.empty:  # (one split may have none: a caller running several counts it as skipped)
        why = (f"no held-out row's {', '.join(_as_columns(fit_by))} has training rows outside its group" if fit_by
               else "the model predicts no time (NaN) for every held-out row")
        raise GpuperfError(f"{where}: nothing to score: {why}")
    return evaluation


def _group_values(frame: pd.DataFrame, columns: list[str], given: pd.DataFrame | None, where: str) -> pd.DataFrame:
    """The ``columns`` of ``given`` (else of ``frame``) on the measured rows, indexed as ``frame``'s."""
    if given is None:
        return frame.loc[_measured(frame)] if all(c in frame.columns for c in columns) else frame
    if len(given) != len(frame):
        raise GpuperfError(f"{where}: group_values holds {len(given)} rows for {len(frame)}; give one per row")
    missing = [c for c in columns if c not in given.columns]
    if missing:
        raise GpuperfError(f"{where}: group_values has no column(s) {', '.join(map(str, missing))}")
    measured = _measured(frame).to_numpy(dtype=bool)
    return given[columns].iloc[np.flatnonzero(measured)].set_axis(frame.index[measured])


def natural_key(value: object) -> tuple:
    """Sort key that orders group labels as a reader expects: numbers by value (``2000`` before
    ``10000``), sizes joined by ``/`` part by part, text after numbers, and the digits within text
    by value too (``512x512`` before ``4096x4096``)."""
    parts = value if isinstance(value, tuple) else (value,)
    key: list[tuple[int, float, tuple]] = []
    for part in parts:
        for piece in str(part).split("/"):
            try:
                number = float(piece)
            except ValueError:
                number = math.nan
            key.append((1, 0.0, _text_key(piece)) if math.isnan(number) else (0, number, ()))
    return tuple(key)


def _text_key(text: str) -> tuple:
    """``"4096x4096"`` -> its runs of digits by value and the text between them as text."""
    return tuple((0, int(run), "") if run.isdigit() else (1, 0, run) for run in re.split(r"(\d+)", text) if run)


def _whole_floats(values: pd.Series) -> bool:
    """A float column holding whole numbers only (a size read as 4096.0)."""
    return pd.api.types.is_float_dtype(values) and bool((values.dropna() % 1 == 0).all())


def label_texts(values: pd.Series) -> pd.Series:
    """A group column's values as the labels of held-out groups: whole numbers without a decimal
    point (a size read as 4096.0 is group 4096), anything else as its text without the spaces around
    it (``"1024x1024 "`` is group ``1024x1024``, held out with it)."""
    if _whole_floats(values):
        return values.map(lambda v: str(int(v)) if pd.notna(v) else "nan")
    return values.astype(str).str.strip()


def _note_case_twins(labels: Sequence[str], where: str) -> None:
    """A note naming the held-out groups whose labels differ only in letter case (kernels are named
    case-sensitively, so they stay groups of their own; GPU names were merged before)."""
    spellings: dict[str, list[str]] = {}
    for label in labels:
        spellings.setdefault(label.casefold(), []).append(label)
    twins = [" and ".join(sorted(names)) for names in spellings.values() if len(names) > 1]
    if twins:
        warnings.warn(GpuperfNote(f"{where}: group labels that differ only in letter case are held out as separate "
                                  f"groups: {'; '.join(twins)}"), stacklevel=3)


def _group_text(group: object, whole: bool) -> str:
    """A held-out group given by its value as :func:`label_texts` labels it in a column of whole
    numbers, integers or ``whole`` floats (4096.0 is group 4096 there; 2.0 stays 2.0 beside 0.5)."""
    if whole and isinstance(group, (float, np.floating)) and float(group).is_integer():
        return str(int(group))
    return str(group).strip()


def _run(estimator, frame, features, folds, name, group, target, fit_by, max_train_rows, balance_by, seed,
         progress=None, fitted=None, fold_count=None):
    """Fits and predicts each of ``folds`` ((label, training mask) pairs: a list, or an iterable of
    ``fold_count`` of them)."""
    total = len(folds) if fold_count is None else fold_count
    whole = isinstance(max_train_rows, (int, np.integer)) and not isinstance(max_train_rows, bool)
    if max_train_rows is not None and (not whole or max_train_rows < 1):
        raise GpuperfError(f"{name}: max_train_rows {max_train_rows!r} must be a whole number, at least 1 (or None)")
    fit_by = None if fit_by is None else _as_columns(fit_by)
    keys = [c for c in (*KEY_COLUMNS, *(fit_by or ()), *group) if c in frame.columns]
    keys = list(dict.fromkeys(keys))
    balance = [c for c in _as_columns(balance_by) if c in frame.columns]
    # only the columns fitting and scoring read: each fold's training, test and subsampled rows copy these, not the
    # whole table (the Rodinia table has 122 columns, its text ones slow to take)
    frame = frame[list(dict.fromkeys([*keys, *balance, *features, target]))]
    parts, skipped = [], {}
    if progress is not None:
        progress(0, total)
    for done, (fold, train_mask) in enumerate(folds, start=1):
        train, test = frame.loc[train_mask], frame.loc[~train_mask]
        if len(train) == 0:
            raise GpuperfError(f"{name}: no training rows when holding out {fold}")
        if len(test) == 0:
            raise GpuperfError(f"{name}: no measured rows left to test in {fold}: every one is a training row")
        if max_train_rows is not None:
            train = balanced_subsample(train, balance, max_train_rows, seed)
        predicted, bounded = _fit_predict(estimator, train, test, features, target, fit_by, fitted)
        kept = predicted.notna()
        if (~kept).any():
            skipped[fold] = int((~kept).sum())
        part = test.loc[kept, keys].copy()
        part["fold"] = fold
        part["measured"] = test.loc[kept, target].to_numpy(dtype=float)
        part["predicted"] = predicted[kept].to_numpy(dtype=float)
        part["bounded"] = bounded[kept].to_numpy(dtype=bool)
        part["row"] = test.index[kept]
        parts.append(part)
        if progress is not None:
            progress(done, total)
    predictions = pd.concat(parts, ignore_index=True)
    return Evaluation(name=name, group=tuple(group), predictions=predictions, skipped=skipped)


def leave_one_gpu_out(estimator, frame, features, **options) -> Evaluation:
    """Hold out each GPU in turn (``gpu`` column). A GPU spelt two ways (``V100``, ``Tesla V100``) is one,
    held out whole under its canonical name, as ``groups`` may name it either way (``mystery gpu`` for
    the table's ``Mystery GPU``, a GPU gpuperf does not describe, too)."""
    require_frame(frame, options.get("name") or "leave-one-gpu-out")
    if "gpu" in frame.columns:
        frame = frame.assign(gpu=canonical_gpus(frame["gpu"]))
    if options.get("groups") is not None:
        in_table = {spelling_key(str(gpu)): gpu for gpu in frame["gpu"].dropna().unique()} if "gpu" in frame else {}
        names = [canonical_gpu(name) for name in name_list(options["groups"], "groups",
                                                               options.get("name") or "leave-one-gpu-out")]
        options["groups"] = [in_table.get(spelling_key(name), name) for name in names]
    return leave_one_group_out(estimator, frame, features, "gpu", **options)


def leave_one_kernel_out(estimator, frame, features, **options) -> Evaluation:
    """Hold out each kernel in turn (``kernel`` column)."""
    if options.get("fit_by") is not None:
        raise GpuperfError("leave-one-kernel-out: fit_by cannot be used when kernels are held out")
    return leave_one_group_out(estimator, frame, features, "kernel", **options)


def leave_one_size_out(estimator, frame, features, sizes: str | Sequence[str], **options) -> Evaluation:
    """Hold out each problem size (the combination of the ``sizes`` columns) in turn."""
    return leave_one_group_out(estimator, frame, features, sizes, name="leave-one-size-out", **options)


def fit_on_kernels(estimator, frame, features, train_kernels: Sequence[str], **options) -> Evaluation:
    """Fit on the rows of ``train_kernels`` (e.g. the measurement kernels), predict all the others;
    kernels named as leave-one-kernel-out names them (``"k1 "`` is kernel ``k1``)."""
    require_frame(frame, "fit-on-kernels")
    if "kernel" not in frame.columns:
        raise GpuperfError("fit-on-kernels: missing column(s) kernel")
    kernels = label_texts(frame["kernel"])
    wanted = [str(k).strip() for k in name_list(train_kernels, "train_kernels", "fit-on-kernels")]
    unknown = [k for k in wanted if k not in set(kernels)]
    if unknown:
        raise GpuperfError(f"fit-on-kernels: no rows for kernel(s) {', '.join(unknown)}")
    mask = kernels.isin(wanted)
    if mask.all():
        raise GpuperfError("fit-on-kernels: the training kernels are every kernel of the table; none is left to "
                           "test on")
    return split_evaluation(estimator, frame, features, mask, name="fit-on-kernels", fold="other kernels", **options)
