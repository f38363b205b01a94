"""How well the speedup models advise, evaluated as Taheri, Qasem & Burtscher do.

Per optimization and kind of target (GPUs, or one measured device), pairs are split three ways:

- ``inputs``: same program, other input. Pairs with an input (problem size) are grouped by
  (family, input) and split 4-fold; each fold's inputs are held out of training entirely.
- ``configurations``: pairs from tuning spaces (one input, many configurations) grouped by
  (family, configuration) and split 4-fold, so a held-out configuration is unseen on every GPU.
- ``programs``: train on the other program families, test on the held-out one.
- ``gpus``: same programs, other GPU: each GPU's pairs held out in turn (GPU pairs only), so a
  held-out pair may have been measured on the other GPUs, whose speedups then predict it
  (``pair_transfer``) instead of the models.

Per test pair: the measured and predicted speedups of each model, the confidence, and the feature
set and regression that inner CV on the fold's training pairs chose. ``summarise`` gives the sign
accuracy (predicted and measured speedup on the same side of 1) on all pairs; the same on the pairs
whose measured speedup is outside the noise band [1/1.1, 1.1] (pairs inside it count as "no effect":
both figures are reported, never only the second), and their share; the number of pairs measured
at exactly 1 (timer steps; a tie counts as "not faster") and the sign accuracy without them; the
sign accuracy of the predictions with confidence of at least 0.9 and 0.75 (the advisor abstains on
the others) and the coverage (share of pairs predicted that confidently); the median actual/predicted speedup ratio, the
share of ratios within [0.8, 1.25], the mean absolute log2 error; and the sign accuracy and log2
error of a constant predictor (the training pairs' mean log2 speedup) for comparison, and the sign
accuracy of two baselines that know the test pair's program: the same program's mean (the mean log2
speedup of its family's training pairs; the constant where there are none) and the same pair at other
sizes (the mean log2 speedup of the same variant's training pairs at the other inputs: family, kernel,
change, GPU and configuration but the input's values; the same program's mean where there are none);
the share of pairs predicted from the same pair measured on other GPUs, and the models' own sign accuracy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd
from sklearn.model_selection import GroupKFold

from gpuperf.datasets.schema import text_cells
from gpuperf.decisions.speedup_models import SpeedupModel
from gpuperf.errors import GpuperfError
from gpuperf.evaluation.metrics import BOUND_TOLERANCE

SPLITS = ("inputs", "configurations", "programs", "gpus")
NOISE_BAND = 1.1  # run-to-run timing noise of the pocl CPU measurements is about +-10 %
CONFIDENT = 0.9
LESS_CONFIDENT = 0.75
FOLDS = 4
ModelFactory = Callable[[], SpeedupModel]


def target_class(target: pd.Series) -> pd.Series:
    return target.where(target.eq("gpu"), "device")


def _folds(pairs: pd.DataFrame, split: str) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(train positions, test positions) of each fold of ``split``."""
    has_input = text_cells(pairs["input"]).ne("").to_numpy()
    if split == "gpus":
        if not pairs["target"].eq("gpu").all():
            return
        for gpu in pairs["gpu"].unique():
            test = pairs["gpu"].eq(gpu).to_numpy()
            if not test.all():
                yield np.flatnonzero(~test), np.flatnonzero(test)
        return
    if split == "programs":
        for family in pairs["family"].unique():
            test = pairs["family"].eq(family).to_numpy()
            if test.all():
                return
            yield np.flatnonzero(~test), np.flatnonzero(test)
        return
    candidates = has_input if split == "inputs" else ~has_input
    column = "input" if split == "inputs" else "configuration"
    groups = (pairs["family"].astype(str) + "|" + text_cells(pairs[column])).to_numpy()
    rows = np.flatnonzero(candidates)
    distinct = np.unique(groups[rows])
    if len(distinct) < 2:
        return
    for _, test_index in GroupKFold(n_splits=min(FOLDS, len(distinct))).split(rows, groups=groups[rows]):
        test_groups = set(groups[rows[test_index]])
        held = np.isin(groups, list(test_groups))
        yield np.flatnonzero(~held), np.flatnonzero(held & candidates)


def variant_keys(pairs: pd.DataFrame) -> pd.Series:
    """A pair's identity less its input: family, kernel, change, GPU and the configuration's other values."""
    def text(column: str) -> pd.Series:  # (a hand-made table may lack a column: it then tells no pairs apart)
        return text_cells(pairs[column]) if column in pairs else pd.Series("", index=pairs.index)

    rest = [_without(configuration, set(given.split(",")))
            for configuration, given in zip(text("configuration"), text("input"))]
    return text("family") + "|" + text("kernel") + "|" + text("change") + "|" + text("gpu") + "|" + pd.Series(
        rest, index=pairs.index)


def _without(configuration: str, values: set[str]) -> str:
    return ",".join(item for item in configuration.split(",") if item not in values)


def _training_means(log2: pd.Series, keys: pd.Series, train: np.ndarray, test: np.ndarray) -> pd.Series:
    """Per test pair: the mean of ``log2`` over the training pairs of its key (NaN where there are none)."""
    means = log2.iloc[train].groupby(keys.iloc[train]).mean()
    return keys.iloc[test].map(means).reset_index(drop=True)


def evaluate(pairs: pd.DataFrame, split: str, factory: ModelFactory = SpeedupModel) -> pd.DataFrame:
    if split not in SPLITS:
        from gpuperf.errors import unknown_name_error

        raise unknown_name_error("evaluation split", split, SPLITS)
    return _evaluate(pairs, split, factory)


def _evaluate(pairs: pd.DataFrame, split: str, factory: ModelFactory) -> pd.DataFrame:
    """One row per test pair and fold: optimization, target class, family, measured and predicted speedups."""
    results = []
    pairs = pairs.assign(target_class=target_class(pairs["target"]))
    for (optimization, target), group in pairs.groupby(["optimization", "target_class"], sort=True):
        group = group.reset_index(drop=True)
        log2, variants = np.log2(group["speedup"]), variant_keys(group)
        for fold, (train, test) in enumerate(_folds(group, split)):
            if len(train) == 0 or len(test) == 0:
                continue
            model = factory().fit(group.iloc[train])
            predicted = model.predict(group.iloc[test])
            constant = float(log2.iloc[train].mean())
            same_program = _training_means(log2, group["family"].astype(str), train, test).fillna(constant)
            same_pair = _training_means(log2, variants, train, test).fillna(same_program)
            results.append(pd.DataFrame({
                "optimization": optimization, "target": target, "split": split, "fold": fold,
                "family": group["family"].iloc[test].to_numpy(),
                "measured": group["speedup"].iloc[test].to_numpy(),
                "predicted": predicted.speedup, "knn": predicted.knn, "m5p": predicted.m5p,
                "p_faster": predicted.p_faster, "confidence": predicted.confidence,
                "model_speedup": predicted.speedup if predicted.model_speedup is None else predicted.model_speedup,
                "measured_elsewhere": [bool(gpus) for gpus in predicted.measured_on],
                "constant": np.exp2(constant),
                "same_program": np.exp2(same_program.to_numpy()), "same_pair": np.exp2(same_pair.to_numpy()),
                "feature_set": model.choice[0], "regression": model.choice[1],
            }))
    if not results:
        return pd.DataFrame(columns=["optimization", "target", "split", "fold", "family", "measured", "predicted"])
    return pd.concat(results, ignore_index=True)


def _sign_accuracy(measured: pd.Series, predicted: pd.Series) -> float:
    return float(((measured > 1) == (predicted > 1)).mean()) if len(measured) else float("nan")


def _baseline_accuracy(results: pd.DataFrame, baseline: str) -> float:
    """The sign accuracy of a baseline's column; NaN for results made without it."""
    return _sign_accuracy(results["measured"], results[baseline]) if baseline in results else float("nan")


def _share_within(ratio: pd.Series, low: float, high: float) -> float:
    """Share of ``ratio`` in [low, high], the bounds included up to rounding (0.72 / 0.9 is 0.7999999999999999),
    as metrics.within counts them."""
    return float(((ratio >= low * (1 - BOUND_TOLERANCE)) & (ratio <= high * (1 + BOUND_TOLERANCE))).mean())


def summarise(results: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Sign accuracies and actual/predicted ratios, per group of ``by`` (all rows when None)."""
    groups = results.groupby(by, sort=True) if by else [((), results)]
    rows = []
    for key, group in groups:
        clear = group[(group["measured"] > NOISE_BAND) | (group["measured"] < 1 / NOISE_BAND)]
        untied = group[group["measured"] != 1]
        confident = group[group["confidence"] >= CONFIDENT]
        less = group[group["confidence"] >= LESS_CONFIDENT]
        ratio = group["measured"] / group["predicted"]
        elsewhere = group.get("measured_elsewhere", pd.Series(False, index=group.index))
        row = dict(zip(by or [], key if isinstance(key, tuple) else (key,)))
        row.update({
            "pairs": len(group),
            "sign_accuracy": _sign_accuracy(group["measured"], group["predicted"]),
            "sign_accuracy_clear": _sign_accuracy(clear["measured"], clear["predicted"]),
            "clear_share": len(clear) / len(group) if len(group) else float("nan"),
            "ties": len(group) - len(untied),
            "sign_accuracy_no_ties": _sign_accuracy(untied["measured"], untied["predicted"]),
            "sign_accuracy_knn": _sign_accuracy(group["measured"], group["knn"]),
            "sign_accuracy_m5p": _sign_accuracy(group["measured"], group["m5p"]),
            "sign_accuracy_logistic": float(((group["measured"] > 1) == (group["p_faster"] > 0.5)).mean()),
            "sign_accuracy_constant": _sign_accuracy(group["measured"], group["constant"]),
            "sign_accuracy_same_program": _baseline_accuracy(group, "same_program"),
            "sign_accuracy_same_pair": _baseline_accuracy(group, "same_pair"),
            "elsewhere_share": float(elsewhere.mean()) if len(group) else float("nan"),
            "sign_accuracy_models": _sign_accuracy(group["measured"], group.get("model_speedup", group["predicted"])),
            "confident_share": len(confident) / len(group) if len(group) else float("nan"),
            "sign_accuracy_confident": _sign_accuracy(confident["measured"], confident["predicted"]),
            "confident_share_0.75": len(less) / len(group) if len(group) else float("nan"),
            "sign_accuracy_confident_0.75": _sign_accuracy(less["measured"], less["predicted"]),
            "median_ratio": float(ratio.median()),
            "ratio_within_0.8_1.25": _share_within(ratio, 0.8, 1.25),
            "log2_mae": float(np.abs(np.log2(group["measured"] / group["predicted"])).mean()),
            "log2_mae_constant": float(np.abs(np.log2(group["measured"] / group["constant"])).mean()),
        })
        rows.append(row)
    return pd.DataFrame(rows)


def repeatability(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """How often two measurements of the same pairs agree, per optimization and target.

    ``first`` and ``second``: pair tables of the same pairs measured twice (e.g. from a repeated
    campaign). Returns pairs matched, the share whose speedups lie on the same side of 1 (the sign
    accuracy a perfect model of the first run could reach on the second) and the median factor
    between the two speedups."""
    keys = ["optimization", "target", "family", "change", "configuration", "input"]
    matched = first[[*keys, "speedup"]].merge(second[[*keys, "speedup"]], on=keys, suffixes=("_first", "_second"))
    if matched.empty:
        raise GpuperfError("repeatability: the two pair tables have no pair in common")
    matched["agree"] = (matched["speedup_first"] > 1) == (matched["speedup_second"] > 1)
    matched["factor"] = np.exp2(np.abs(np.log2(matched["speedup_first"] / matched["speedup_second"])))
    return matched.groupby(["target", "optimization"], as_index=False).agg(
        pairs=("agree", "size"), sign_agreement=("agree", "mean"), median_factor=("factor", "median"))
