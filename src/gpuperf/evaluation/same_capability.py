"""A held-out GPU's time of a launch from the training GPUs of its compute capability, scaled.

The prediction is the geometric mean, over the training GPUs of the held-out GPU's compute
capability (a descriptor; over every training GPU that has the launch where none of them has it),
of their times of the same launch (``REFERENCE_KEY``), each scaled to the held-out GPU by one law
of the two GPUs' descriptors (``LAWS``):

- ``same``: not at all; ``clock``: the ratio of clocks; ``clock_sms``: of clock x SMs;
- ``waves``: of clock x the launch's waves of blocks (blocks over SMs x resident blocks per SM,
  resident blocks limited by threads, registers, shared memory and the block limit);
- ``bandwidth``: of DRAM bandwidth; ``waves_bw``: the geometric mean of ``waves`` and ``bandwidth``.

One law per held-out group, chosen by an inner leave-one-GPU-out on the training GPUs only (each
predicted from the other training GPUs; per-kernel MAPE macro over kernels, averaged over them):
nothing of the held-out GPUs' times enters. The Rodinia reproduction's ``same_capability``
scenario; ``benchmarks/bench_rodinia_scaled_reference.py`` scales the GPU nearest by counters.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from gpuperf.errors import GpuperfError
from gpuperf.evaluation.gpu_scaling import held_out_evaluation
from gpuperf.evaluation.protocols import TARGET, Evaluation
from gpuperf.evaluation.transfer import REFERENCE_KEY

LAWS = ("same", "clock", "clock_sms", "waves", "bandwidth", "waves_bw")
CAPABILITY = "gpu_compute_capability"
GPU_COLUMNS = ("gpu_clock_mhz", "gpu_sms", "gpu_memory_bandwidth_gbs", "gpu_max_threads_per_sm",
               "gpu_max_blocks_per_sm", "gpu_registers_per_sm", "gpu_shared_memory_per_sm_bytes", CAPABILITY)
LAUNCH_COLUMNS = ("grid.x", "grid.y", "block.x", "block.y", "registers.per.thread", "static.smem")


def waves(launches: pd.DataFrame, gpu: pd.Series) -> np.ndarray:
    """Waves of blocks each of ``launches`` needs on ``gpu`` (its descriptors)."""
    column = {c: launches[c].to_numpy(float) for c in LAUNCH_COLUMNS}
    threads = column["block.x"] * column["block.y"]
    shared = column["static.smem"]
    with np.errstate(invalid="ignore", divide="ignore"):
        resident = np.fmin.reduce([
            np.full(len(launches), float(gpu.gpu_max_blocks_per_sm)), gpu.gpu_max_threads_per_sm // threads,
            gpu.gpu_registers_per_sm // (np.maximum(column["registers.per.thread"], 1) * threads),
            np.where(shared > 0, gpu.gpu_shared_memory_per_sm_bytes // np.maximum(shared, 1), np.inf)])
        return np.ceil(column["grid.x"] * column["grid.y"] / (gpu.gpu_sms * np.maximum(resident, 1)))


def log_scales(launches: pd.DataFrame, source: pd.Series, target: pd.Series) -> dict[str, np.ndarray]:
    """Per law, the log of what ``launches``' times on ``source`` are multiplied by to stand for
    ``target``'s (``launches``: the source's rows, whose registers and shared memory both GPUs'
    waves take)."""
    clock = np.log(source.gpu_clock_mhz / target.gpu_clock_mhz)
    bandwidth = np.log(source.gpu_memory_bandwidth_gbs / target.gpu_memory_bandwidth_gbs)
    with np.errstate(invalid="ignore", divide="ignore"):
        wave = clock + np.log(waves(launches, target) / waves(launches, source))
    laws = {"same": 0.0, "clock": clock, "clock_sms": clock + np.log(source.gpu_sms / target.gpu_sms),
            "waves": wave, "bandwidth": bandwidth, "waves_bw": (wave + bandwidth) / 2}
    return {law: np.broadcast_to(laws[law], (len(launches),)) for law in LAWS}


class ScaledTimes:
    """Each GPU's log time of every launch of ``frame``, scaled to every GPU by every law: read only
    for the source GPUs a prediction names."""

    def __init__(self, frame: pd.DataFrame, key: Sequence[str] = REFERENCE_KEY) -> None:
        missing = [c for c in dict.fromkeys([*key, *LAUNCH_COLUMNS, *GPU_COLUMNS, "kernel", "gpu", TARGET])
                   if c not in frame.columns]
        if missing:
            raise GpuperfError(f"same-capability scaling: missing column(s) {', '.join(missing)}")
        self.key = list(key)
        gpus = frame["gpu"].astype(str)
        self.descriptors = frame.groupby(gpus)[list(GPU_COLUMNS)].first()
        self.gpus = list(self.descriptors.index)
        times = pd.to_numeric(frame[TARGET], errors="coerce")
        usable = frame[times.gt(0) & np.isfinite(times)].assign(gpu=gpus, log_time=np.log(times))
        rows = {gpu: part.groupby(self.key, dropna=False)[[*LAUNCH_COLUMNS, "log_time"]].median()
                for gpu, part in usable.groupby("gpu")}
        self.launches = pd.Index([]) if not rows else rows[next(iter(rows))].index
        for part in rows.values():
            self.launches = self.launches.union(part.index)
        kernels = self.launches.get_level_values("kernel") if len(self.key) > 1 else self.launches
        self.kernel_codes, uniques = pd.factorize(kernels)
        self.kernel_count = len(uniques)
        self.measured = np.full((len(self.launches), len(self.gpus)), np.nan)
        self.scaled = {law: np.full((len(self.launches), len(self.gpus), len(self.gpus)), np.nan) for law in LAWS}
        for s, source in enumerate(self.gpus):
            if source not in rows:
                continue
            launches = rows[source].reindex(self.launches)
            self.measured[:, s] = launches["log_time"].to_numpy()
            for t, target in enumerate(self.gpus):
                scales = log_scales(launches, self.descriptors.loc[source], self.descriptors.loc[target])
                for law in LAWS:
                    self.scaled[law][:, s, t] = self.measured[:, s] + scales[law]

    def predict(self, law: str, target: str, training: Sequence[str]) -> np.ndarray:
        """Per launch, the log time on ``target`` from ``training``'s (NaN where none has the launch)."""
        t = self.gpus.index(target)
        capability = self.descriptors[CAPABILITY]
        same = [g for g in training if capability[g] == capability[target]]
        predicted = np.full(len(self.launches), np.nan)
        # every training GPU, overridden by those of the same capability where they have the launch
        for sources in ([g for g in training if g != target], same):
            columns = self.scaled[law][:, [self.gpus.index(g) for g in sources if g != target], t]
            known = np.isfinite(columns)
            mean = np.where(known, columns, 0.0).sum(axis=1) / np.maximum(known.sum(axis=1), 1)
            predicted = np.where(known.any(axis=1), mean, predicted)
        return predicted

    def score(self, law: str, target: str, training: Sequence[str]) -> float:
        """``target``'s per-kernel MAPE predicted from ``training``, macro over its kernels (NaN when
        nothing is predicted)."""
        measured = np.exp(self.measured[:, self.gpus.index(target)])
        errors = np.abs(np.exp(self.predict(law, target, training)) - measured) / measured
        known = np.isfinite(errors)
        counts = np.bincount(self.kernel_codes[known], minlength=self.kernel_count)
        sums = np.bincount(self.kernel_codes[known], errors[known], minlength=self.kernel_count)
        return float(np.mean(sums[counts > 0] / counts[counts > 0])) if counts.any() else np.nan

    def choose_law(self, training: Sequence[str]) -> str:
        """The law of best mean score over ``training``'s GPUs, each predicted from the others
        (``LAWS[0]`` when fewer than two training GPUs leave nothing to compare)."""
        scores = {}
        for law in LAWS:
            inner = [self.score(law, held, [g for g in training if g != held]) for held in training]
            scores[law] = np.nanmean(inner) if np.isfinite(inner).any() else np.inf
        return min(scores, key=scores.get)


def leave_one_group_out_same_capability(
    frame: pd.DataFrame, group: str = "gpu", name: str = "same_capability", key: Sequence[str] = REFERENCE_KEY,
) -> Evaluation:
    """Hold out each value of a GPU-wise ``group`` column (``gpu``, ``gpu_architecture``) in turn and
    predict its GPUs' rows from the other GPUs' times (module docstring); rows no other GPU has
    the launch of are skipped."""
    if group not in frame.columns:
        raise GpuperfError(f"{name}: missing column {group}")
    scaled = ScaledTimes(frame, key)
    labels, gpus = frame[group].astype(str), frame["gpu"].astype(str)
    keys = pd.MultiIndex.from_frame(frame[list(key)]) if len(key) > 1 else pd.Index(frame[key[0]])

    def fold_predictions(fold: str) -> pd.Series:
        held_out = set(gpus[labels.eq(fold)])
        training = [g for g in scaled.gpus if g not in held_out]
        law = scaled.choose_law(training)
        predicted = pd.Series(np.nan, index=frame.index[labels.eq(fold)])
        for gpu in held_out:
            rows = labels.eq(fold) & gpus.eq(gpu)
            launch = pd.Series(np.exp(scaled.predict(law, gpu, training)), index=scaled.launches)
            predicted[rows[rows].index] = launch.reindex(keys[rows.to_numpy()]).to_numpy()
        return predicted

    return held_out_evaluation(frame, group, name, ((fold, fold_predictions(fold)) for fold in sorted(labels.unique())))
