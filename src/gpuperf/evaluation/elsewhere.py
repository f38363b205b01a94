"""A GPU's times predicted from launches profiled on another GPU: a scheduler's question.

Leave one GPU out answers "how fast on GPU B" with B's own profiler counters, which a scheduler
deciding whether to send a job to B does not have. Here every launch of held-out GPU B is
described by the profile of the same launch (``key``) on another GPU A, with B's descriptor in
place of A's (``build`` derives every descriptor-dependent column again), and predicted by a model
fitted on the GPUs other than B (A's own rows included: the scheduler has profiled and timed the
job on A). Nothing measured on B is read except the times the predictions are scored against.

Two baselines need no model: A's measured time as it is, and A's time scaled by the ratio of the
GPUs' peak FP32 throughput, as ``build`` describes them (``gpu_peak_f32_gflops``: at the clocks the
model's features take, the base clocks in Rodinia's table). Scores are per-kernel MAPE,
macro-averaged over kernels, per pair (B, A); :func:`missing_kernels` names the pairs that lack a kernel B has, whose average is over
fewer kernels and so not comparable with B's other pairs. A third figure is not a prediction but a
bound read knowing the answer (:func:`hindsight_scaled_mape`): A's time times the one factor per
kernel that fits B best. It says how much of B's time the same launch on A carries, if only the
right factor were known.

:func:`one_launch_calibration` finds that factor without hindsight, as the BSP model calibrates its
lambda: one launch per kernel is timed on B, and every other launch of the kernel is predicted as
the geometric mean over the other GPUs of their time of it, each scaled by its ratio on that one
launch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from sklearn.base import clone

from gpuperf.datasets.schema import is_ok
from gpuperf.errors import GpuperfError, whole_number
from gpuperf.evaluation.metrics import mape
from gpuperf.evaluation.protocols import TARGET, balanced_subsample
from gpuperf.hardware.specs import get_gpu
from gpuperf.models.cross_gpu import scaled_times

PEAK = "peak_f32_gflops"
PEAK_COLUMN = f"gpu_{PEAK}"
SOURCE_TIME = "source_time_s"


def _fit_per_kernel(estimator, train: pd.DataFrame, features: Sequence[str], target: str) -> dict:
    return {
        kernel: clone(estimator).fit(part[list(features)], part[target].to_numpy(dtype=float))
        for kernel, part in train.groupby("kernel", sort=False)
    }


def _usable(frame: pd.DataFrame, target: str) -> pd.DataFrame:
    times = pd.to_numeric(frame[target], errors="coerce")
    ok = times.gt(0) & np.isfinite(times)
    if "status" in frame.columns:
        ok &= is_ok(frame["status"])
    return frame.loc[ok]


def profiled_elsewhere(
    estimator,
    raw: pd.DataFrame,
    build: Callable[[pd.DataFrame], pd.DataFrame],
    features: Sequence[str],
    key: Sequence[str],
    *,
    targets: Sequence[str] | None = None,
    target: str = TARGET,
    max_train_rows: int | None = 500,
    seed: int = 0,
) -> pd.DataFrame:
    """Per launch of each held-out GPU (``targets``: all by default) and each other GPU that ran
    it: ``target_gpu``, ``source_gpu``, ``kernel``, ``measured`` (on the target), ``predicted``
    (from the source's profile), ``source_time_s`` and ``peak_scaled`` (the baselines; the peaks
    are ``build``'s ``gpu_peak_f32_gflops`` where it joins them, else the descriptors' boost-clock ones).

    ``raw`` is the dataset as loaded (one row per GPU and launch ``key``); ``build`` turns such
    rows into the model's table (descriptors joined, derived columns), whatever GPU they name.
    """
    raw = _usable(raw, target)
    missing = [c for c in [*key, "gpu", "kernel"] if c not in raw.columns]
    if missing:
        raise GpuperfError(f"profiled elsewhere: missing column(s) {', '.join(missing)}")
    if raw.duplicated([*key, "gpu"]).any():
        raise GpuperfError(f"profiled elsewhere: a launch ({', '.join(key)}) appears twice on one GPU")
    table = build(raw)
    gpus = sorted(raw["gpu"].astype(str).unique())
    peaks = _peaks(table, gpus)
    unknown = [g for g in (targets or ()) if g not in gpus]
    if unknown:
        raise GpuperfError(f"profiled elsewhere: no rows for GPU(s) {', '.join(unknown)}")
    parts = []
    for held_out in targets or gpus:
        train = table.loc[table["gpu"].astype(str).ne(held_out)]
        if max_train_rows is not None:
            train = balanced_subsample(train, ["kernel", "gpu"], max_train_rows, seed)
        models = _fit_per_kernel(estimator, train, features, target)
        measured = raw.loc[raw["gpu"].astype(str).eq(held_out), [*key, target]]
        peak = peaks[held_out]
        for source in gpus:
            if source == held_out:
                continue
            rows = raw.loc[raw["gpu"].astype(str).eq(source)]
            pairs = rows.merge(measured, on=list(key), suffixes=("_source", ""))
            pairs = pairs.loc[pairs["kernel"].isin(list(models))]
            if pairs.empty:
                continue
            source_times = pairs.pop(f"{target}_source").to_numpy(dtype=float)
            as_target = build(pairs.assign(gpu=held_out))
            predicted = np.empty(len(pairs))
            for kernel, model in models.items():
                mask = as_target["kernel"].eq(kernel).to_numpy()
                if mask.any():
                    predicted[mask] = model.predict(as_target.loc[mask, list(features)])
            parts.append(pd.DataFrame({
                "target_gpu": held_out,
                "source_gpu": source,
                "kernel": pairs["kernel"].to_numpy(),
                "measured": pairs[target].to_numpy(dtype=float),
                "predicted": predicted,
                SOURCE_TIME: source_times,
                "peak_scaled": source_times * peaks[source] / peak,
            }))
    if not parts:
        raise GpuperfError("profiled elsewhere: no launch was measured on two GPUs")
    return pd.concat(parts, ignore_index=True)


def _peaks(table: pd.DataFrame, gpus: Sequence[str]) -> dict[str, float]:
    """Each GPU's peak FP32 GFLOP/s as the built ``table`` has it (at the clock its features take:
    :func:`~gpuperf.evaluation.tables.with_base_clocks` scales it to the base clock), else its
    descriptor's (at the boost clock)."""
    if PEAK_COLUMN not in table.columns:
        return {gpu: float(getattr(get_gpu(gpu), PEAK)) for gpu in gpus}
    return table.groupby(table["gpu"].astype(str))[PEAK_COLUMN].first().astype(float).to_dict()


def mape_optimal_factor(measured: np.ndarray, source: np.ndarray) -> float:
    """The factor c minimising the MAPE of ``c * source`` against ``measured``: mean |1 - c s/m| is
    convex and piecewise linear in c, least at the median of m/s weighted by s/m."""
    ratios, weights = measured / source, source / measured
    order = np.argsort(ratios, kind="stable")
    cumulative = np.cumsum(weights[order])
    return float(ratios[order][np.searchsorted(cumulative, cumulative[-1] / 2)])


def hindsight_scaled_mape(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per (target GPU, source GPU): the source's time times the per-kernel factor fitted on the
    target's own times (chosen knowing the answer, so a bound, not a prediction), MAPE per kernel
    macro-averaged over kernels (a target x source table, as :func:`macro_mape_by_pair`)."""
    def best_fit(part: pd.DataFrame) -> float:
        measured, source = part["measured"].to_numpy(float), part[SOURCE_TIME].to_numpy(float)
        return mape(measured, mape_optimal_factor(measured, source) * source)

    per_kernel = pairs.groupby(["target_gpu", "source_gpu", "kernel"]).apply(best_fit, include_groups=False)
    return per_kernel.groupby(level=["target_gpu", "source_gpu"]).mean().unstack("source_gpu")


def macro_mape_by_pair(pairs: pd.DataFrame, prediction: str = "predicted") -> pd.DataFrame:
    """Per (target GPU, source GPU): MAPE of ``prediction`` per kernel, macro-averaged (a target x
    source table)."""
    per_kernel = pairs.groupby(["target_gpu", "source_gpu", "kernel"]).apply(
        lambda part: mape(part["measured"], part[prediction]), include_groups=False)
    return per_kernel.groupby(level=["target_gpu", "source_gpu"]).mean().unstack("source_gpu")


def missing_kernels(pairs: pd.DataFrame) -> pd.Series:
    """Per (target GPU, source GPU): the kernels scored on the target from some source but not from
    this one, sorted (empty where the source ran them all). A pair missing a kernel macro-averages
    over fewer kernels than the target's other pairs, so its score is not comparable with theirs."""
    scored = pairs.groupby("target_gpu")["kernel"].agg(set)
    per_pair = pairs.groupby(["target_gpu", "source_gpu"])["kernel"].agg(set)
    missing = [tuple(sorted(scored[target] - kernels)) for (target, _), kernels in per_pair.items()]
    return pd.Series(missing, index=per_pair.index, dtype=object, name="missing_kernels")


def one_launch_calibration(raw: pd.DataFrame, key: Sequence[str], *, target: str = TARGET,
                           draws: int | None = None, seed: int = 0) -> pd.DataFrame:
    """Per GPU and kernel: the MAPE of predicting every launch of the kernel on that GPU from the
    other GPUs' times of the same launch (``key``), each scaled by its ratio on one launch timed on
    the GPU (:func:`~gpuperf.models.cross_gpu.scaled_times`, as ``gpuperf predict-gpu`` does),
    averaged over every launch as the calibration launch, each once: the exact expectation over a
    calibration launch drawn at random (with ``draws``, that many calibration launches drawn with
    ``seed`` instead, an estimate) (columns ``gpu``, ``kernel``, ``mape``, ``launches``, ``sources``).
    The calibration launch is not scored (it would be predicted exactly, its own time), as the BSP
    comparison leaves its calibration rows out; a kernel with a single launch on the GPU has nothing
    left to score and no row. A launch that no GPU timing the calibration launch timed has no
    prediction and is not scored, and a calibration launch that leaves none scored counts for nothing."""
    if draws is not None and whole_number(draws, "one-launch calibration: draws") < 1:
        raise GpuperfError(f"one-launch calibration: draws must be at least 1 (None: every launch once), not {draws!r}")
    raw = _usable(raw, target)
    missing = [c for c in [*key, "gpu", "kernel"] if c not in raw.columns]
    if missing:
        raise GpuperfError(f"one-launch calibration: missing column(s) {', '.join(missing)}")
    times = raw.groupby(["gpu", *key], sort=True)[target].median().unstack("gpu")
    rng = np.random.default_rng(seed)
    rows = []
    for gpu in times.columns:
        others = [g for g in times.columns if g != gpu]
        for kernel, part in times.loc[times[gpu].notna()].groupby(level="kernel", sort=True):
            sources = part[others].to_numpy(float)
            if np.isnan(sources).all():
                continue
            measured = part[gpu].to_numpy(float)
            if draws is None:
                errors = _every_launch_errors(sources, measured)
            else:
                errors = np.array([_calibrated_error(sources, measured, int(launch))
                                   for launch in rng.integers(len(part), size=draws)])
            errors = errors[~np.isnan(errors)]
            if not len(errors):  # one launch on the GPU: none left to score
                continue
            rows.append({"gpu": gpu, "kernel": kernel, "mape": float(np.mean(errors)),
                         "launches": len(part), "sources": int(part[others].notna().any().sum())})
    if not rows:
        raise GpuperfError("one-launch calibration: no kernel was measured on two GPUs with a launch besides the "
                           "calibration launch")
    return pd.DataFrame(rows)


def _every_launch_errors(sources: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """Per launch taken as the calibration launch, :func:`_calibrated_error`'s MAPE of the others (NaN where
    none is predicted), in O(n log n) per pair of source patterns rather than O(n^2): launches j and L
    (calibration) whose sources share the GPUs U give j the prediction exp(a_j - a_L) x measured_L, a_x the
    mean log time over U, so its ratio to measured_j is u_j x v_L, and sorted u_j with their running sums
    give the sum of |u_j v_L - 1| over j for every L at once."""
    logs = np.log(sources)
    own = np.log(measured)
    timed, pattern_of = np.unique(~np.isnan(sources), axis=0, return_inverse=True)  # the GPUs timing each launch
    pattern_of = pattern_of.ravel()
    total, scored = np.zeros(len(measured)), np.zeros(len(measured))
    for calibration, calibration_gpus in enumerate(timed):
        launches = np.flatnonzero(pattern_of == calibration)
        for pattern, pattern_gpus in enumerate(timed):
            shared = np.flatnonzero(calibration_gpus & pattern_gpus)
            if not len(shared):
                continue
            predicted = np.flatnonzero(pattern_of == pattern)
            u = np.sort(np.exp(logs[np.ix_(predicted, shared)].mean(axis=1) - own[predicted]))
            v = np.exp(own[launches] - logs[np.ix_(launches, shared)].mean(axis=1))
            running = np.concatenate([[0.0], np.cumsum(u)])
            below = np.searchsorted(u, 1.0 / v)  # u_j v_L < 1: error 1 - u_j v_L
            total[launches] += (below - v * running[below]) + (v * (running[-1] - running[below]) - (len(u) - below))
            scored[launches] += len(u) - (pattern == calibration)  # the calibration launch itself: not scored
    errors = np.full(len(measured), np.nan)
    np.divide(total, scored, out=errors, where=scored > 0)
    return errors


def _calibrated_error(sources: np.ndarray, measured: np.ndarray, launch: int) -> float:
    """The MAPE of the launches other than ``launch`` (the calibration launch, timed on the GPU), predicted
    from ``sources`` scaled by their ratio on it; NaN where none of them is predicted."""
    own = np.full(len(measured), np.nan)
    own[launch] = measured[launch]
    predicted, _ = scaled_times(sources, own)
    scored = ~np.isnan(predicted)
    scored[launch] = False
    return mape(measured[scored], predicted[scored]) if scored.any() else float("nan")
