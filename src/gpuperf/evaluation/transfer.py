"""Cross-GPU reference times: the same launch's geometric-mean time on the training GPUs.

When a GPU is held out, every launch of the bundled Rodinia table (a kernel, its input sizes and
its launch geometry: ``REFERENCE_KEY``) was also measured on the training GPUs. The reference of
a row is the mean log2 time of its key over the training rows of the *other* GPUs: a held-out
row's reference uses every training GPU, a training row's reference every training GPU but its
own, so both mean "this launch's typical time elsewhere". Only training rows' times are read:
the held-out GPU's measurements never enter a reference.

With ``neighbours=k`` the reference averages only the ``k`` training GPUs (other than the row's
own) nearest to the row's GPU by its descriptors (:func:`gpu_distances`): "this launch's time on
the most similar GPUs".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from gpuperf.errors import GpuperfError
from gpuperf.evaluation.protocols import KEY_COLUMNS, TARGET, Evaluation, split_evaluation
from gpuperf.models.reference import REFERENCE_COLUMN

REFERENCE_KEY = ("kernel", "input.size.1", "input.size.2", "grid.x", "grid.y", "block.x", "block.y")
# GPU descriptors that place GPUs near each other for ``neighbours`` references: clock, memory
# bandwidth, cores and cores per SM (the architecture's SM width), compared in log2 and standardised.
NEIGHBOUR_DESCRIPTORS = ("gpu_clock_mhz", "gpu_memory_bandwidth_gbs", "gpu_cores", "gpu_cores_per_sm")


def gpu_distances(frame: pd.DataFrame, descriptors: Sequence[str] = NEIGHBOUR_DESCRIPTORS,
                  gpu_column: str = "gpu") -> pd.DataFrame:
    """Euclidean distances between the GPUs of ``frame`` over their log2 ``descriptors``, each
    standardised across those GPUs (a GPU x GPU table). Reads descriptors only, never times."""
    missing = [c for c in [*descriptors, gpu_column] if c not in frame.columns]
    if missing:
        raise GpuperfError(f"gpu_distances: missing column(s) {', '.join(missing)}")
    values = frame.groupby(frame[gpu_column].astype(str))[list(descriptors)].first().astype(float)
    if not (values > 0).all().all():
        raise GpuperfError(f"gpu_distances: descriptors must be positive: {', '.join(descriptors)}")
    logs = np.log2(values)
    spread = logs.std(ddof=0).replace(0.0, 1.0)
    scaled = ((logs - logs.mean()) / spread).to_numpy()
    distances = np.sqrt(((scaled[:, None, :] - scaled[None, :, :]) ** 2).sum(axis=2))
    return pd.DataFrame(distances, index=values.index, columns=values.index)


def cross_gpu_reference(
    frame: pd.DataFrame,
    train_mask: pd.Series,
    key: Sequence[str] = REFERENCE_KEY,
    gpu_column: str = "gpu",
    target: str = TARGET,
    neighbours: int | None = None,
) -> pd.Series:
    """Per row of ``frame``: the mean log2 ``target`` of its ``key`` over the training rows
    (``train_mask``) of the other GPUs (only the ``neighbours`` nearest of them that have the key,
    when given); NaN where no other training GPU has the key."""
    key = list(key)
    missing = [c for c in [*key, gpu_column, target] if c not in frame.columns]
    if missing:
        raise GpuperfError(f"cross_gpu_reference: missing column(s) {', '.join(missing)}")
    train_mask = train_mask.reindex(frame.index).fillna(False).astype(bool)
    times = pd.to_numeric(frame[target], errors="coerce")
    usable = train_mask & times.gt(0) & np.isfinite(times)
    gpus = frame[gpu_column].astype(str)
    train = frame.loc[usable, key].assign(gpu=gpus[usable], log2_time=np.log2(times[usable]))
    # one value per key and GPU; an empty key value (a size with no second dimension) is a value too
    per_gpu = train.groupby([*key, "gpu"], sort=False, dropna=False)["log2_time"].mean()
    if neighbours is not None:
        return _neighbour_reference(frame, key, gpu_column, per_gpu.unstack("gpu"), neighbours)
    totals = per_gpu.groupby(level=key, sort=False, dropna=False).agg(["sum", "count"]).reset_index()
    rows = frame[key].reset_index(drop=True).assign(gpu=gpus.to_numpy())
    joined = rows.merge(totals, on=key, how="left")
    own = rows.merge(per_gpu.rename("own").reset_index(), on=[*key, "gpu"], how="left")["own"]
    total = joined["sum"].fillna(0.0) - own.fillna(0.0)
    count = joined["count"].fillna(0).to_numpy() - own.notna().to_numpy()
    reference = np.where(count > 0, total.to_numpy() / np.maximum(count, 1), np.nan)
    return pd.Series(reference, index=frame.index, name=REFERENCE_COLUMN)


def _neighbour_reference(frame: pd.DataFrame, key: list[str], gpu_column: str, per_gpu: pd.DataFrame,
                         neighbours: int) -> pd.Series:
    """The mean of ``per_gpu`` (key x training GPU log2 times) over each row's ``neighbours``
    nearest other GPUs that have its key."""
    if neighbours < 1:
        raise GpuperfError(f"cross_gpu_reference: neighbours must be at least 1, not {neighbours}")
    distances = gpu_distances(frame, gpu_column=gpu_column)
    gpus = frame[gpu_column].astype(str)
    keys = pd.MultiIndex.from_frame(frame[key]) if len(key) > 1 else pd.Index(frame[key[0]])
    reference = pd.Series(np.nan, index=frame.index, name=REFERENCE_COLUMN)
    for gpu in gpus.unique():
        others = [g for g in distances.loc[gpu].sort_values(kind="stable").index if g != gpu and g in per_gpu]
        if not others:
            continue
        ordered = per_gpu[others].to_numpy()
        known = np.isfinite(ordered)
        chosen = known & (np.cumsum(known, axis=1) <= neighbours)  # the nearest GPUs that have the key
        sums, counts = np.where(chosen, ordered, 0.0).sum(axis=1), chosen.sum(axis=1)
        means = pd.Series(np.where(counts > 0, sums / np.maximum(counts, 1), np.nan), index=per_gpu.index)
        rows = gpus.eq(gpu).to_numpy()
        reference[rows] = means.reindex(keys[rows]).to_numpy()
    return reference


def leave_one_group_out_with_reference(
    estimator,
    frame: pd.DataFrame,
    features: Sequence[str],
    group: str,
    *,
    fit_by: str | None = "kernel",
    max_train_rows: int | None = None,
    seed: int = 0,
    name: str = "transfer",
    neighbours: int | None = None,
) -> Evaluation:
    """Leave one ``group`` value out (GPU-wise groups), with ``REFERENCE_COLUMN`` recomputed in
    every fold from that fold's training rows only; ``features`` may name it. Rows with no
    reference (a key no other training GPU has) are neither trained on nor predicted, nor is a
    fold whose training rows all lack one (a single training GPU): those rows count as skipped.
    ``neighbours`` as in :func:`cross_gpu_reference`."""
    if group not in frame.columns:
        raise GpuperfError(f"{name}: missing column {group}")
    labels = frame[group].astype(str)
    parts, skipped = [], {}
    for held_out in sorted(labels.unique()):
        train_mask = labels.ne(held_out)
        reference = cross_gpu_reference(frame, train_mask, neighbours=neighbours)
        known = reference.notna()
        if not (known & train_mask).any() or not (known & ~train_mask).any():
            skipped[held_out] = int((~train_mask).sum())
            continue
        if (~known & ~train_mask).any():
            skipped[held_out] = int((~known & ~train_mask).sum())
        rows = frame.loc[known].assign(**{REFERENCE_COLUMN: reference[known]})
        evaluation = split_evaluation(estimator, rows, features, train_mask[known], name=name, fold=held_out,
                                      fit_by=fit_by, max_train_rows=max_train_rows, seed=seed)
        parts.append(evaluation.predictions)
        skipped |= {held_out: skipped.get(held_out, 0) + n for n in evaluation.skipped.values()}
    if not parts:  # nothing predictable: an empty evaluation (scores as missing, not as an error)
        columns = [c for c in dict.fromkeys([*KEY_COLUMNS, fit_by or "kernel"]) if c in frame.columns]
        parts = [pd.DataFrame(columns=[*columns, "fold", "measured", "predicted", "bounded", "row"])]
    return Evaluation(name, (group,), pd.concat(parts, ignore_index=True), skipped)
