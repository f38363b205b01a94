"""How well the speedup models advise, evaluated as Taheri, Qasem & Burtscher do.

Per optimization and kind of target (GPUs, or one measured device), pairs are split three ways:

- ``inputs``: same program, other input. Pairs with an input (problem size) are grouped by
  (family, input) and split 4-fold; each fold's inputs are held out of training entirely.
- ``configurations``: pairs from tuning spaces (one input, many configurations) grouped by
  (family, configuration) and split 4-fold, so a held-out configuration is unseen on every GPU.
- ``programs``: train on the other program families, test on the held-out one.

Per test pair: the measured and predicted speedups of each model. ``summarise`` gives the sign
accuracy (predicted and measured speedup on the same side of 1), the same on the pairs whose
measured speedup is clearly away from 1 (outside [1/1.05, 1.05]), the median actual/predicted
speedup ratio, the share of ratios within [0.8, 1.25], the sign accuracy of the predictions with
confidence of at least 0.7 (and their share), the mean absolute log2 error, and the sign accuracy
and log2 error of a constant predictor (the training pairs' mean log2 speedup) for comparison.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd
from sklearn.model_selection import GroupKFold

from gpuperf.decisions.speedup_models import SpeedupModel

SPLITS = ("inputs", "configurations", "programs")
CLEAR = 1.05
CONFIDENT = 0.7
FOLDS = 4
ModelFactory = Callable[[], SpeedupModel]


def _target_class(target: pd.Series) -> pd.Series:
    return target.where(target.eq("gpu"), "device")


def _folds(pairs: pd.DataFrame, split: str) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(train positions, test positions) of each fold of ``split``."""
    has_input = pairs["input"].fillna("").ne("").to_numpy()
    if split == "programs":
        for family in pairs["family"].unique():
            test = pairs["family"].eq(family).to_numpy()
            if test.all():
                return
            yield np.flatnonzero(~test), np.flatnonzero(test)
        return
    candidates = has_input if split == "inputs" else ~has_input
    column = "input" if split == "inputs" else "configuration"
    groups = (pairs["family"] + "|" + pairs[column]).to_numpy()
    rows = np.flatnonzero(candidates)
    distinct = np.unique(groups[rows])
    if len(distinct) < 2:
        return
    for _, test_index in GroupKFold(n_splits=min(FOLDS, len(distinct))).split(rows, groups=groups[rows]):
        test_groups = set(groups[rows[test_index]])
        held = np.isin(groups, list(test_groups))
        yield np.flatnonzero(~held), np.flatnonzero(held & candidates)


def evaluate(pairs: pd.DataFrame, split: str, factory: ModelFactory = SpeedupModel) -> pd.DataFrame:
    if split not in SPLITS:
        from gpuperf.errors import unknown_name_error

        raise unknown_name_error("evaluation split", split, SPLITS)
    return _evaluate(pairs, split, factory)


def _evaluate(pairs: pd.DataFrame, split: str, factory: ModelFactory) -> pd.DataFrame:
    """One row per test pair and fold: optimization, target class, family, measured and predicted speedups."""
    results = []
    pairs = pairs.assign(target_class=_target_class(pairs["target"]))
    for (optimization, target), group in pairs.groupby(["optimization", "target_class"], sort=True):
        group = group.reset_index(drop=True)
        for fold, (train, test) in enumerate(_folds(group, split)):
            if len(train) == 0 or len(test) == 0:
                continue
            model = factory().fit(group.iloc[train])
            predicted = model.predict(group.iloc[test])
            constant = float(np.log2(group["speedup"].iloc[train]).mean())
            results.append(pd.DataFrame({
                "optimization": optimization, "target": target, "split": split, "fold": fold,
                "family": group["family"].iloc[test].to_numpy(),
                "measured": group["speedup"].iloc[test].to_numpy(),
                "predicted": predicted.speedup, "knn": predicted.knn, "m5p": predicted.m5p,
                "p_faster": predicted.p_faster, "confidence": predicted.confidence,
                "constant": np.exp2(constant),
            }))
    if not results:
        return pd.DataFrame(columns=["optimization", "target", "split", "fold", "family", "measured", "predicted"])
    return pd.concat(results, ignore_index=True)


def _sign_accuracy(measured: pd.Series, predicted: pd.Series) -> float:
    return float(((measured > 1) == (predicted > 1)).mean()) if len(measured) else float("nan")


def summarise(results: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Sign accuracies and actual/predicted ratios, per group of ``by`` (all rows when None)."""
    groups = results.groupby(by, sort=True) if by else [((), results)]
    rows = []
    for key, group in groups:
        clear = group[(group["measured"] > CLEAR) | (group["measured"] < 1 / CLEAR)]
        confident = group[group["confidence"] >= CONFIDENT]
        ratio = group["measured"] / group["predicted"]
        row = dict(zip(by or [], key if isinstance(key, tuple) else (key,)))
        row.update({
            "pairs": len(group),
            "sign_accuracy": _sign_accuracy(group["measured"], group["predicted"]),
            "sign_accuracy_clear": _sign_accuracy(clear["measured"], clear["predicted"]),
            "sign_accuracy_knn": _sign_accuracy(group["measured"], group["knn"]),
            "sign_accuracy_m5p": _sign_accuracy(group["measured"], group["m5p"]),
            "sign_accuracy_logistic": float(((group["measured"] > 1) == (group["p_faster"] > 0.5)).mean()),
            "sign_accuracy_constant": _sign_accuracy(group["measured"], group["constant"]),
            "confident_share": len(confident) / len(group) if len(group) else float("nan"),
            "sign_accuracy_confident": _sign_accuracy(confident["measured"], confident["predicted"]),
            "median_ratio": float(ratio.median()),
            "ratio_within_0.8_1.25": float(((ratio >= 0.8) & (ratio <= 1.25)).mean()),
            "log2_mae": float(np.abs(np.log2(group["measured"] / group["predicted"])).mean()),
            "log2_mae_constant": float(np.abs(np.log2(group["measured"] / group["constant"])).mean()),
        })
        rows.append(row)
    return pd.DataFrame(rows)
