"""Explore one kernel's variant space with a model trained on other kernels (the LIFT paper's setting).

Every variant is described by static features that mean the same for any kernel (the LIFT paper's
Table 1 by default); the target is normalised performance: the best time of the variant's program
and input over its time (1 for the best variant, 0 for a failure). Leaving each kernel out in turn:

- ``model``: a model trained on the other kernels' variants (standardised PCA keeping 95 % of the
  variance + 5-nearest-neighbour regression, :class:`~gpuperf.models.learned.PcaKnnRegressor`) ranks
  the held-out kernel's variants, evaluated best-predicted first;
- ``parameters``: no model: configurations ranked by their mean normalised performance on the other
  kernels, matched by their transformation parameters (where the spaces share them);
- ``random``: the exact expectation of random order.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from sklearn.base import RegressorMixin, clone

from gpuperf.datasets.schema import is_ok, row_location
from gpuperf.datasets.tables import names_user_file, numeric_column
from gpuperf.decisions.search_metrics import FRACTIONS, evals_to, random_expected_evals
from gpuperf.errors import GpuperfError, GpuperfNote, counted
from gpuperf.features.table import FEATURES, LIFT
from gpuperf.models.learned import PcaKnnRegressor

if TYPE_CHECKING:
    from gpuperf.kernels.space import VariantSpace

LIFT_FEATURES = tuple(f.name for f in FEATURES if f.source == LIFT)


def own_kernel_rows(table: pd.DataFrame, name: str) -> pd.Series:
    """Which rows of ``table`` measured the catalog kernel ``name`` (its variants included): its
    ``kernel`` is ``name`` and, in a campaign export, its ``kernel_spec`` names no user's file (a
    user's ``/home/me/k.py:make`` whose program is called ``name`` too is another kernel)."""
    if "kernel" not in table.columns:
        return pd.Series(False, index=table.index)
    own = table["kernel"].astype(str).str.strip().eq(name)
    if "kernel_spec" in table.columns:
        own &= ~table["kernel_spec"].map(names_user_file).astype(bool)
    return own


def program_columns(table: pd.DataFrame) -> tuple[str, ...]:
    """What tells one program and input from another in ``table``: the kernel, the GPU or device and the
    problem size where the table has them, and the size parameters of catalog kernels."""
    from gpuperf.kernels.catalog import get_kernel

    columns = ["kernel", *(c for c in ("gpu", "device", "problem_size") if c in table.columns)]
    for name in table["kernel"].dropna().unique() if "kernel" in table.columns else ():
        try:
            sizes = get_kernel(str(name)).params
        except GpuperfError:
            continue  # not a catalog kernel: its input is named by the columns above only
        columns += [c for c in sizes if c in table.columns and c not in columns]
    return tuple(columns)


def normalised_performance(table: pd.DataFrame, program: Sequence[str]) -> pd.Series:
    """Best time of each row's program and input (the ``program`` columns) over the row's time; 0 if failed."""
    ok = is_ok(table["status"]) if "status" in table else pd.Series(True, index=table.index)
    times = table["time_s"].where(ok & (table["time_s"] > 0))
    best = times.groupby([table[c] for c in program], dropna=False).transform("min")
    return (best / times).fillna(0.0)


def _check(table: pd.DataFrame, features: Sequence[str], program: Sequence[str]) -> None:
    missing = [c for c in [*features, *program, "time_s"] if c not in table.columns]
    if missing:
        raise GpuperfError(f"variant table lacks column(s) {', '.join(missing)}")
    if table["kernel"].nunique() < 2:
        raise GpuperfError("exploring on other kernels needs variants of at least two kernels")


def usable_features(features: Sequence[str], train: pd.DataFrame, *others: pd.DataFrame) -> list[str]:
    """``features`` every table has without gaps and that vary across ``train``."""
    return [f for f in features if all(f in t.columns and t[f].notna().all() for t in (train, *others))
            and train[f].nunique() > 1]


def predict_performance(train: pd.DataFrame, test: pd.DataFrame, features: Sequence[str],
                        model: RegressorMixin | None = None) -> np.ndarray:
    """``model`` (default PCA + 5-NN) fitted on ``train``'s normalised performance, predicting ``test``'s rows."""
    fitted = clone(model if model is not None else PcaKnnRegressor())
    fitted.fit(train[list(features)].to_numpy(float), train["performance"].to_numpy())
    return fitted.predict(test[list(features)].to_numpy(float))


def model_order(train: pd.DataFrame, test: pd.DataFrame, features: Sequence[str],
                model: RegressorMixin | None = None) -> np.ndarray:
    """Positions of ``test``'s rows, best predicted first."""
    return np.argsort(-predict_performance(train, test, features, model), kind="stable")


def parameter_order(train: pd.DataFrame, test: pd.DataFrame, parameters: Sequence[str]) -> np.ndarray:
    """Positions of ``test``'s rows by the mean performance of the same parameters on the other kernels
    (configurations the others lack come last)."""
    mean = train.groupby(list(parameters))["performance"].mean()
    keys = pd.MultiIndex.from_frame(test[list(parameters)]) if len(parameters) > 1 else test[parameters[0]]
    score = mean.reindex(keys).to_numpy()
    return np.argsort(-np.nan_to_num(score, nan=-1.0), kind="stable")


def leave_one_kernel_out(
    table: pd.DataFrame,
    features: Sequence[str] = LIFT_FEATURES,
    parameters: Sequence[str] = (),
    model: RegressorMixin | None = None,
    program: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Per kernel (and input, if ``program`` names size columns): evaluations to reach 90/95/99 % of
    the best with the model's order, with the parameter-matched order (when ``parameters`` are
    given) and random order's exact expectation."""
    features = usable_features(features, table)
    program = program or program_columns(table)
    _check(table, features, program)
    table = table.assign(performance=normalised_performance(table, program)).reset_index(drop=True)
    rows = []
    for kernel in sorted(table["kernel"].unique()):
        train = table[table["kernel"] != kernel]
        for key, test in table[table["kernel"] == kernel].groupby(list(program), sort=True, dropna=False):
            performance = test["performance"].to_numpy()
            row: dict[str, object] = dict(zip(program, key if isinstance(key, tuple) else (key,)))
            row["variants"] = len(test)
            order = model_order(train, test, features, model)
            matched = parameter_order(train, test, parameters) if parameters else None
            row.update(_evaluations(performance, order, matched))
            rows.append(row)
    return pd.DataFrame(rows)


def _evaluations(performance: np.ndarray, order: np.ndarray, matched: np.ndarray | None) -> dict[str, float]:
    """Evaluations to reach each of ``FRACTIONS`` of the best in the model's ``order``, random order's
    exact expectation, the parameter-matched order's to 90 % (when ``matched`` is given) and the
    performance of the model's first pick."""
    figures = {f"model_evals_to_{round(f * 100)}": evals_to(performance[order], f) for f in FRACTIONS}
    if matched is not None:
        figures["parameters_evals_to_90"] = evals_to(performance[matched], 0.9)
    figures |= {f"random_evals_to_{round(f * 100)}": random_expected_evals(performance, f) for f in FRACTIONS}
    figures["top_predicted_performance"] = float(performance[order[0]])
    return figures


TRAINED_ON = ("all", "others", "same")


def across_devices(
    train: pd.DataFrame,
    test: pd.DataFrame,
    features: Sequence[str] = LIFT_FEATURES,
    trained_on: str = "all",
    model: RegressorMixin | None = None,
    parameters: Sequence[str] = (),
) -> pd.DataFrame:
    """Each kernel's variants measured on one device (``test``, say a GPU) ranked by a model trained on
    variants measured on another (``train``, say a CPU): of every kernel (``trained_on="all"``), of the
    other kernels only (``"others"``) or of the same kernel only (``"same"``). Per kernel of ``test``:
    evaluations to reach 90/95/99 % of its best in the model's order and random order's exact
    expectation, the Spearman correlation of predicted with measured performance and the measured
    performance of the model's first pick; with ``parameters``, also the evaluations to 90 % in the
    order of the same configurations' mean performance in the training rows (no model; configurations
    they lack come last). Features are those both tables have without gaps and that vary in ``train``;
    normalised performance is per kernel, device and size in each table."""
    from scipy.stats import spearmanr

    if trained_on not in TRAINED_ON:
        raise GpuperfError(f"trained_on={trained_on!r}: one of {', '.join(TRAINED_ON)}")
    for label, table in (("training", train), ("test", test)):
        missing = [c for c in ("kernel", "time_s") if c not in table.columns]
        if missing or table.empty:
            raise GpuperfError(f"{label} table: " + (f"lacks column(s) {', '.join(missing)}" if missing else "no rows"))
    usable = usable_features(features, train, test)
    if not usable:
        raise GpuperfError(f"the tables share none of the feature columns ({', '.join(list(features)[:4])}, ...)")
    train = train.assign(performance=normalised_performance(train, program_columns(train))).reset_index(drop=True)
    program = program_columns(test)
    test = test.assign(performance=normalised_performance(test, program)).reset_index(drop=True)
    rows = []
    for key, part in test.groupby(list(program), sort=True, dropna=False):
        kernel = part["kernel"].iloc[0]
        chosen = {"all": train, "others": train[train["kernel"] != kernel],
                  "same": train[train["kernel"] == kernel]}[trained_on]
        row: dict[str, object] = dict(zip(program, key if isinstance(key, tuple) else (key,)))
        row["variants"], row["train_rows"] = len(part), len(chosen)
        if chosen.empty:
            rows.append(row)
            continue
        predicted = predict_performance(chosen, part, usable, model)
        order = np.argsort(-predicted, kind="stable")
        performance = part["performance"].to_numpy()
        matched = parameter_order(chosen, part, parameters) if parameters else None
        row.update(_evaluations(performance, order, matched))
        row["spearman"] = float(spearmanr(predicted, performance).statistic) if np.ptp(predicted) > 0 else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def rank_space(
    space: str,
    sizes: dict[str, int],
    train: pd.DataFrame,
    features: Sequence[str] = LIFT_FEATURES,
    model: RegressorMixin | None = None,
    program: Sequence[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    limit: int | None = None,
    where: str = "training table",
) -> pd.DataFrame:
    """Every valid variant (the first ``limit``) of the catalog space ``space`` at ``sizes``, ranked by the normalised
    performance a model trained on the measured ``train`` variants predicts; nothing is run.

    ``progress(done, total)`` is called as variants are built. Columns: ``variant`` (its spec), the
    space's parameters, the features (without the integer-operation ones where unroll siblings share
    theirs: :func:`~gpuperf.kernels.space.shared_static_rows`) and ``predicted_performance``, best
    first. Errors name the training table as ``where``."""
    from gpuperf.kernels.space import get_space

    from gpuperf.datasets.tables import kernels_told_apart

    chosen = get_space(space)
    train = kernels_told_apart(train)  # a user's kernel named like another is not its variant
    if not any(feature in train.columns for feature in features) and "kernel" in train.columns:
        train = with_static_features(train, features, where)  # a tune --out table: variants, no features
    program = program or program_columns(train)
    missing = [c for c in [*program, "time_s"] if c not in train.columns]
    if missing:  # before the variants are built
        raise GpuperfError(f"{where}: missing column(s) {', '.join(missing)} (measured variants with their time_s)")
    train = checked_training_features(train, features, where)
    groups = train.groupby([train[c] for c in program], dropna=False).ngroups
    if groups == len(train) and len(train) > 1:  # every variant alone in its program and input: all 1
        raise GpuperfError(f"{where}: each of its {len(train)} rows is the only variant of its program and input "
                           f"({', '.join(program)}), so every normalised performance is 1 and there is nothing to "
                           "rank by; the table needs several variants measured per kernel and size")
    candidates = _candidate_rows(chosen, sizes, features, limit, progress)
    usable = usable_features(features, train, candidates)
    gappy = [f for f in features if f in train.columns and f in candidates.columns and train[f].isna().any()]
    if gappy:
        first = int(np.flatnonzero(train[gappy[0]].isna().to_numpy())[0])
        warnings.warn(f"{where}: feature(s) {', '.join(gappy)} left out of the ranking model: some rows have no "
                      f"value ({gappy[0]} first at {row_location(train, first)})", GpuperfNote, stacklevel=2)
    if not usable:
        raise GpuperfError(f"{where}: has none of the static feature columns ({', '.join(list(features)[:4])}, ...) "
                           "the ranking model reads")
    train = train.assign(performance=normalised_performance(train, program))
    candidates["predicted_performance"] = predict_performance(train, candidates, usable, model)
    _note_one_prediction(candidates["predicted_performance"], where)
    return candidates.sort_values("predicted_performance", ascending=False, kind="stable").reset_index(drop=True)


def _note_one_prediction(predicted: pd.Series, where: str) -> None:
    """A note where the model predicts every variant alike: its order is then the space's own, not a ranking."""
    if len(predicted) > 1 and predicted.nunique() == 1:
        warnings.warn(f"the model trained on {where} predicts every one of the {len(predicted)} variants alike "
                      f"({predicted.iloc[0]:.4g}), so it cannot tell them apart and they keep the space's order: "
                      "variants measured on kernels nearer this one, or a device's linear count model (gpuperf "
                      "calibrate), may rank them", GpuperfNote, stacklevel=3)


def with_static_features(train: pd.DataFrame, features: Sequence[str], where: str) -> pd.DataFrame:
    """``train``'s measured rows (status ok) with the static ``features`` of each row's kernel (its
    ``kernel_spec``, else ``kernel[variant]``, else ``kernel``) at its sizes, for a table of measured variants
    without them (``tune --out``'s trials), with a note; an ok row whose kernel gpuperf cannot build is an error
    naming it."""
    from gpuperf.features.table import extract_features
    from gpuperf.kernels.catalog import get_kernel

    measured = train[is_ok(train["status"])] if "status" in train.columns else train
    rows, extracted = [], {}
    for position, row in enumerate(measured.to_dict("records")):
        spec, variant = row.get("kernel_spec"), row.get("variant")
        if not (isinstance(spec, str) and spec.strip()):
            named = isinstance(variant, str) and variant.strip()
            spec = f"{row['kernel']}[{variant.strip()}]" if named else str(row["kernel"])
        try:
            kernel = get_kernel(spec.strip())
            sizes = {name: int(row[name]) for name in kernel.params if name in row and not pd.isna(row[name])}
            key = (kernel.key, *sizes.items())
            if key not in extracted:
                extracted[key] = extract_features(kernel, sizes)
        except (GpuperfError, ValueError) as exc:
            raise GpuperfError(f"{where}: has none of the static feature columns ({', '.join(list(features)[:4])}, "
                               f"...) the ranking model reads, and they cannot be extracted from the kernel of its "
                               f"{row_location(measured, position)} ({exc})") from None
        rows.append({name: extracted[key].get(name, np.nan) for name in features})
    warnings.warn(f"{where}: no static feature columns: extracted from each measured row's kernel at its sizes "
                  f"({counted(len(extracted), 'variant')})", GpuperfNote, stacklevel=3)
    return measured.reset_index(drop=True).assign(**pd.DataFrame(rows, columns=list(features)))


def checked_training_features(train: pd.DataFrame, features: Sequence[str], where: str) -> pd.DataFrame:
    """``train`` with its ``features`` columns as numbers (a value that is no number, or infinite,
    is an error naming its row) and without rows that repeat another exactly (a copied row would
    count twice among the nearest neighbours), with a note saying how many went."""
    present = [f for f in features if f in train.columns]
    numbers = {f: numeric_column(train, f, where) for f in present}
    for feature, values in numbers.items():
        infinite = np.isinf(values.to_numpy())
        if infinite.any():
            row = int(np.flatnonzero(infinite)[0])
            raise GpuperfError(f"{where}: {row_location(train, row)}: {feature}={float(values.iloc[row])!r} is not "
                               "a finite number")
    train = train.assign(**numbers)
    repeated = train.duplicated()
    if repeated.any():
        warnings.warn(f"{where}: {counted(int(repeated.sum()), 'row')} {'repeats' if int(repeated.sum()) == 1 else 'repeat'} an earlier row exactly; each counted once",
                      GpuperfNote, stacklevel=3)
        train = train[~repeated]
    return train


def _candidate_rows(space: VariantSpace, sizes: dict[str, int], features: Sequence[str], limit: int | None,
                    progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """One row per valid variant of ``space`` (see :func:`~gpuperf.kernels.space.sized_variants`)
    at ``sizes``: its spec, parameters and static features (extracted once for the variants that differ
    only in the space's count-neutral parameters, where ``features`` read no index arithmetic:
    :func:`~gpuperf.kernels.space.shared_static_rows`)."""
    from gpuperf.features.table import extract_features
    from gpuperf.kernels.space import shared_static_rows, sized_variants

    built = sized_variants(space, sizes, limit, progress)
    static = shared_static_rows(space, built, lambda kernel: extract_features(kernel, sizes), features)
    rows = [{"variant": kernel.key, **config, **row} for (config, kernel), row in zip(built, static)]
    return pd.DataFrame(rows)
