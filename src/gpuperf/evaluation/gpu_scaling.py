"""Log-linear scaling of each launch's time across GPUs: a baseline for leave one GPU out.

Per kernel, ``log2 t(launch, gpu) = c(launch) + sum_j a_j * log2 d_j(gpu)`` over GPU descriptors
``d_j`` (core clock, memory bandwidth, cores, ...). The coefficients ``a`` are fitted on the
training GPUs' times within each launch (so ``c`` drops out), every launch of a kernel weighted
equally, and shrunk by ridge (``ridge``) towards the fit pooled over all kernels; ``c(launch)`` is
the mean over the training GPUs of ``log2 t - a . log2 d``. A held-out GPU's prediction is
``c + a . log2 d(gpu)``: it extrapolates along the descriptors where trees stop at the edge. Only
the training GPUs' times are read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from gpuperf.errors import GpuperfError
from gpuperf.evaluation.protocols import TARGET, Evaluation
from gpuperf.evaluation.transfer import NEIGHBOUR_DESCRIPTORS, REFERENCE_KEY

SCALING_DESCRIPTORS = NEIGHBOUR_DESCRIPTORS  # clock, bandwidth, cores, cores per SM


def _within_launch(times: np.ndarray, logs: np.ndarray):
    """Launch means of ``times`` (launches x GPUs, NaN where not measured) and ``logs`` (GPUs x
    descriptors), and the stacked deviations from them of launches measured on 2+ GPUs."""
    known = np.isfinite(times)
    counts = known.sum(axis=1)
    mean_time = np.where(known, times, 0.0).sum(axis=1) / np.maximum(counts, 1)
    mean_logs = (known @ logs) / np.maximum(counts, 1)[:, None]
    used = known & (counts >= 2)[:, None]
    deviations = (logs[None, :, :] - mean_logs[:, None, :])[used]
    return mean_time, mean_logs, (times - mean_time[:, None])[used], deviations


def scaling_predictions(
    frame: pd.DataFrame,
    held_out: str | Sequence[str],
    descriptors: Sequence[str] = SCALING_DESCRIPTORS,
    ridge: float = 0.1,
    key: Sequence[str] = REFERENCE_KEY,
) -> pd.Series:
    """Predicted times of the rows of ``frame`` on the ``held_out`` GPU(s) (NaN where no training
    GPU has the launch), from the other GPUs' times of the same launches (module docstring)."""
    missing = [c for c in [*key, *descriptors, "gpu", TARGET] if c not in frame.columns]
    if missing:
        raise GpuperfError(f"scaling_predictions: missing column(s) {', '.join(missing)}")
    gpus = frame["gpu"].astype(str)
    held_out = [held_out] if isinstance(held_out, str) else list(held_out)
    unknown = sorted(set(held_out) - set(gpus))
    if unknown:
        raise GpuperfError(f"scaling_predictions: no rows for GPU(s) {', '.join(unknown)}")
    logs = np.log2(frame.groupby(gpus)[list(descriptors)].first().astype(float))
    train = frame[~gpus.isin(held_out)]
    times = train.assign(log2_time=np.log2(train[TARGET].astype(float)), gpu=gpus[train.index])
    per_kernel = {}
    for kernel, part in times.groupby("kernel", sort=True):
        table = part.pivot_table(index=list(key), columns="gpu", values="log2_time")
        stats = _within_launch(table.to_numpy(), logs.loc[table.columns].to_numpy())
        gram = stats[3].T @ stats[3] / max(len(stats[2]), 1)
        per_kernel[kernel] = (table, stats, gram, stats[3].T @ stats[2] / max(len(stats[2]), 1))
    rows = frame[gpus.isin(held_out)]
    predicted = pd.Series(np.nan, index=rows.index, name="predicted")
    if not per_kernel:  # no training GPU left: nothing to scale from
        return predicted
    width = len(descriptors)
    pooled = np.linalg.lstsq(sum(p[2] for p in per_kernel.values()), sum(p[3] for p in per_kernel.values()),
                             rcond=None)[0]
    for (kernel, gpu), part in rows.groupby(["kernel", gpus[rows.index]], sort=False):
        if kernel not in per_kernel:
            continue
        table, (mean_time, mean_logs, _, _), gram, moment = per_kernel[kernel]
        slopes = np.linalg.solve(gram + ridge * np.eye(width), moment + ridge * pooled)
        target = logs.loc[gpu].to_numpy()
        launch = pd.Series(mean_time + (target[None, :] - mean_logs) @ slopes, index=table.index)
        index = pd.MultiIndex.from_frame(part[list(key)]) if len(key) > 1 else pd.Index(part[key[0]])
        predicted[part.index] = np.exp2(launch.reindex(index).to_numpy())
    return predicted


def leave_one_group_out_scaling(
    frame: pd.DataFrame, group: str = "gpu", descriptors: Sequence[str] = SCALING_DESCRIPTORS,
    ridge: float = 0.1, name: str = "scaling", key: Sequence[str] = REFERENCE_KEY,
) -> Evaluation:
    """Hold out each value of a GPU-wise ``group`` column (``gpu``, ``gpu_architecture``) in turn
    and predict its GPUs with :func:`scaling_predictions`."""
    if group not in frame.columns:
        raise GpuperfError(f"{name}: missing column {group}")
    labels = frame[group].astype(str)
    folds = ((fold, scaling_predictions(frame, frame.loc[labels.eq(fold), "gpu"].astype(str).unique(),
                                        descriptors, ridge, key)) for fold in sorted(labels.unique()))
    return held_out_evaluation(frame, group, name, folds)


def held_out_evaluation(frame: pd.DataFrame, group: str, name: str,
                        folds: Iterable[tuple[str, pd.Series]]) -> Evaluation:
    """The evaluation of each held-out fold's predicted times of ``frame``'s rows (a Series by row label;
    rows left NaN are counted as skipped)."""
    parts, skipped = [], {}
    for fold, predicted in folds:
        known = predicted.notna()
        if (~known).any():
            skipped[fold] = int((~known).sum())
        rows = frame.loc[predicted.index[known], [c for c in dict.fromkeys(("kernel", "variant", "gpu", group))
                                                  if c in frame.columns]].copy()
        rows["fold"] = fold
        rows["measured"] = frame.loc[rows.index, TARGET].to_numpy(dtype=float)
        rows["predicted"] = predicted[known].to_numpy()
        rows["row"] = rows.index
        parts.append(rows)
    return Evaluation(name, (group,), pd.concat(parts, ignore_index=True), skipped)
