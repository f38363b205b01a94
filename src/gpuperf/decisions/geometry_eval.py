"""Judge launch-geometry policies on measured block-shape choices.

In each choice group (configurations that differ only in block shape) a policy picks one
shape; it is scored by its time against the default's (LLVM's 128 threads: the group's shape of
exactly 128 threads, the widest in x if several) and the group's best. A group without a 128-thread
shape has no baseline: it is left out of every policy's figures, with a note. A policy that
yields a thread count picks the shape with the nearest count (in log2), the widest in x on ties
(consecutive iterations along x, as a 1-D loop maps them); the rules' trip count is the threads
x blocks of the group's 128-thread shape (LLVM's one iteration per thread). The occupancy policy picks the shape with the most resident warps (the shape's own registers and
shared memory where the table has them, else 32 registers and none), the largest on ties.
A policy may pick a configuration that failed (not ok in the table): a failed pick, counted as not
within 10 % of the best. The baseline and the best are measured shapes. The tables' kernels cannot loop over a capped grid, so only the threads per block of the
heuristic's long-loop class take effect.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from gpuperf.decisions.geometry import (
    DEFAULT_REGISTERS,
    LLVM_THREADS,
    DeviceDescriptor,
    KernelDescriptor,
    device_descriptor,
    resident_blocks_per_sm,
    rules_for,
)
from gpuperf.decisions.geometry_model import ChoiceTable, GeometryModel
from gpuperf.errors import GpuperfError, GpuperfNote

EVALUATED_POLICIES = ("llvm", "libomptarget", "heuristic", "occupancy", "model", "best")


def _first_per_group(frame: pd.DataFrame, keys: list[str], ascending: list[bool]) -> pd.Series:
    """Per group, the index of the first row in the given order."""
    ranked = frame.sort_values(["group", *keys], ascending=[True, *ascending], kind="stable")
    return ranked.groupby("group", sort=True).head(1).set_index("group")["_row"]


def _resident_warps(device: DeviceDescriptor, threads: int, registers: float, shared: float) -> int:
    registers = int(registers) if np.isfinite(registers) else DEFAULT_REGISTERS
    shared = int(shared) if np.isfinite(shared) else 0
    if threads > device.max_threads_per_block:
        return -1
    try:
        blocks = resident_blocks_per_sm(device, threads, registers, shared)
    except GpuperfError:
        return -1
    return blocks * -(-threads // device.warp_size)


def _policy_threads(device: DeviceDescriptor, trips: np.ndarray, policy) -> np.ndarray:
    unique = {int(t): policy(device, KernelDescriptor(int(t))).threads for t in np.unique(trips)}
    return np.array([unique[int(t)] for t in trips], dtype=float)


def _baseline(frame: pd.DataFrame, threads: int) -> pd.Series:
    """Per group that has one, the row of LLVM's default: the shape of exactly ``threads`` threads,
    the widest in x."""
    return _first_per_group(frame[frame["threads"] == threads], ["bx", "by"], [False, False])


def _trips(frame: pd.DataFrame, baseline: pd.Series) -> np.ndarray:
    """Per row, its group's trip count: the threads x blocks of LLVM's 128-thread shape (one iteration
    per thread), which a sampled table's missing shapes do not change; a group without it (left out
    of the figures) its largest launch."""
    launch = frame["threads"] * frame["blocks"]
    largest = launch.groupby(frame["group"]).transform("max")
    return frame["group"].map(launch.loc[baseline.to_numpy()].set_axis(baseline.index)).fillna(largest).to_numpy()


def choices(table: ChoiceTable, model: GeometryModel | None) -> pd.DataFrame:
    """Per group (of two or more measured shapes), the time and threads of each policy's pick and the
    best; ``POLICY_failed`` where the pick is a configuration that failed (its time NaN);
    ``llvm`` is NaN in a group without a shape of exactly LLVM's threads (noted; ``summarise``
    leaves such groups out)."""
    device = device_descriptor(table.gpu)
    frame = table.frame
    frame = frame[frame["time"].notna().groupby(frame["group"]).transform("sum") >= 2].copy()
    frame["_row"] = frame.index
    picks: dict[str, pd.Series] = {}
    applicable = rules_for(device)
    llvm_threads = LLVM_THREADS
    picks["llvm"] = _baseline(frame, llvm_threads)  # a group where it failed has no baseline: left out, noted
    trips = _trips(frame, picks["llvm"])
    targets = {name: _policy_threads(device, trips, applicable[name])
               for name in ("libomptarget", "heuristic") if name in applicable}
    for policy, wanted in targets.items():
        frame["_distance"] = np.round(np.abs(np.log2(frame["threads"].to_numpy() / wanted)), 9)
        picks[policy] = _first_per_group(frame, ["_distance", "bx", "by"], [True, False, False])
    resources = frame[["threads", "registers", "smem"]].fillna(-1.0)  # -1: not recorded
    warps = {
        key: _resident_warps(device, int(key[0]), key[1] if key[1] >= 0 else np.nan, key[2] if key[2] >= 0 else np.nan)
        for key in resources.drop_duplicates().itertuples(index=False, name=None)
    }
    frame["_warps"] = [warps[key] for key in resources.itertuples(index=False, name=None)]
    picks["occupancy"] = _first_per_group(frame, ["_warps", "threads", "bx"], [False, False, False])
    if model is not None:
        frame["_predicted"] = model.predict(frame["threads"], frame["blocks"], device.sms, frame["bx"])
        picks["model"] = _first_per_group(frame, ["_predicted"], [True])
    picks["best"] = _first_per_group(frame, ["time"], [True])
    groups = picks["best"].index
    out = pd.DataFrame({"group": groups})
    for policy, rows in picks.items():
        rows = rows.reindex(groups)
        made = rows.notna().to_numpy()
        chosen = rows[made].astype(int).to_numpy()
        times, threads = np.full(len(groups), np.nan), np.full(len(groups), llvm_threads)
        times[made] = table.frame.loc[chosen, "time"].to_numpy()
        threads[made] = table.frame.loc[chosen, "threads"].to_numpy()
        out[policy], out[f"{policy}_threads"] = times, threads
        if policy != "best":
            out[f"{policy}_failed"] = made & np.isnan(times)  # it picked a configuration that failed
    _note_without_baseline(table, out, llvm_threads)
    return out


def _note_without_baseline(table: ChoiceTable, picked: pd.DataFrame, threads: int) -> None:
    failed = int(picked["llvm_failed"].sum())
    lacking = int(picked["llvm"].isna().sum()) - failed
    if lacking or failed:
        reasons = [f"{count} {why}" for count, why in (
            (lacking, f"have no block shape of exactly {threads} threads"),
            (failed, f"have LLVM's {threads}-thread shape recorded as failed")) if count]
        warnings.warn(GpuperfNote(
            f"{table.label} on {table.gpu}: groups judged {len(picked) - lacking - failed} of {len(picked)}: "
            f"{' and '.join(reasons)} (LLVM's default, the baseline of every speedup) and are left out of every "
            "policy's figures"), stacklevel=3)


def judged(picked: pd.DataFrame) -> pd.DataFrame:
    """The groups with LLVM's default measured: those every policy is judged on."""
    return picked[picked["llvm"].notna()]


def summarise(picked: pd.DataFrame, policies: Sequence[str] = EVALUATED_POLICIES) -> dict[str, dict[str, float]]:
    """Per policy: geometric-mean speedup over llvm, fraction within 10 % of the best, the usual
    threads, over the choices it made (``choices``: libomptarget's rule makes none on AMD GPUs) in the
    groups with LLVM's default measured (the others have no baseline). A pick that failed (``POLICY_failed``)
    is a choice made and not within 10 %, counted in ``failed_picks``; it has no speedup."""
    out = {}
    picked = judged(picked)
    for policy in policies:
        if policy not in picked.columns:
            continue
        failed = _failed(picked, policy)
        made = picked[picked[policy].notna() | failed]
        if made.empty:
            continue
        timed = made[made[policy].notna()]
        speedup = timed["llvm"] / timed[policy]
        out[policy] = {
            "speedup_vs_llvm": float(np.exp(np.mean(np.log(speedup)))) if len(timed) else float("nan"),
            "within_10pct": float(np.mean(made[policy] <= 1.1 * made["best"])),
            "typical_threads": int(made[f"{policy}_threads"].mode().iloc[0]),
            "choices": len(made),
            "failed_picks": int(failed.sum()),
        }
    return out


def _failed(picked: pd.DataFrame, policy: str) -> pd.Series:
    """Per group, whether ``policy``'s pick was tried and failed (no such column: none did)."""
    column = f"{policy}_failed"
    if column not in picked.columns:
        return pd.Series(False, index=picked.index)
    return picked[column].fillna(False).astype(bool)


def leave_one_kernel_out_models(tables: Sequence[ChoiceTable]) -> dict[str, GeometryModel]:
    """One model per kernel family, trained on every other family's tables."""
    families = sorted({t.family for t in tables})
    return {f: GeometryModel().fit([t for t in tables if t.family != f]) for f in families}
