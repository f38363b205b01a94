"""The bundled brute-forced tuning spaces as :class:`Space` objects, one per kernel and GPU.

A *family* is one kernel of one bundled table with one parameter set (a table may hold an
older version of a kernel with fewer parameters: that is its own family); it holds one space
per GPU. Where a table measured a configuration twice on one GPU (two caches of the same
card), the space keeps the median of the successful times (NaN if every run failed).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuperf.datasets.schema import STATUS, TARGET, is_ok
from gpuperf.decisions.space import Space

TUNING_TABLES = ("schoonhoven_spaces", "benchmark_hub_spaces")
SHORT_NAMES = {"schoonhoven_spaces": "schoonhoven", "benchmark_hub_spaces": "hub"}
EXTRA_COLUMNS = ("compile_time_s", "benchmark_time_s")


@dataclass
class Family:
    """One kernel's spaces on several GPUs (same parameters)."""

    name: str
    params: list[str]
    spaces: dict[str, Space]

    @property
    def gpus(self) -> list[str]:
        return list(self.spaces)


def _family_frames(frame: pd.DataFrame, parameters: list[str]) -> list[tuple[list[str], pd.DataFrame]]:
    """Split one kernel's rows by which parameters they have."""
    present = frame[parameters].notna().to_numpy()
    codes = present @ (1 << np.arange(len(parameters), dtype=np.int64))
    return [
        ([p for p, has in zip(parameters, present[np.flatnonzero(codes == code)[0]]) if has], frame[codes == code])
        for code in pd.unique(codes)
    ]


def _space(rows: pd.DataFrame, params: list[str], where: str, gpu: str) -> Space:
    rows = rows.copy()
    rows["_time"] = rows[TARGET].where(is_ok(rows[STATUS])) if STATUS in rows.columns else rows[TARGET]
    extras = [c for c in EXTRA_COLUMNS if c in rows.columns]
    grouped = rows.groupby(params, sort=True, dropna=False)
    table = grouped["_time"].median().reset_index()
    for column in extras:
        table[column] = grouped[column].median().to_numpy()
    configs = table[params].reset_index(drop=True)
    extra = table[extras].reset_index(drop=True)
    return Space(params, configs, table["_time"].to_numpy(dtype=float), where, extra, gpu)


@functools.lru_cache(maxsize=16)
def _families(tables: tuple[str, ...], min_gpus: int, state: tuple) -> tuple[Family, ...]:
    """The families of ``tables``; ``state`` (their files' state) is part of the cache's key alone."""
    from gpuperf.datasets.bundled import load_dataset

    found: list[Family] = []
    for table in tables:
        frame = load_dataset(table)
        parameters = list(frame.attrs.get("parameters", []))
        for kernel, rows in frame.groupby("kernel", sort=True):
            splits = _family_frames(rows, parameters)
            splits.sort(key=lambda item: -len(item[0]))
            for position, (params, part) in enumerate(splits):
                params = [p for p in params if part[p].nunique() > 1] or params
                gpus = sorted(part["gpu"].unique())
                if len(gpus) < min_gpus:
                    continue
                suffix = "" if position == 0 else f"~v{position}"
                name = f"{SHORT_NAMES.get(table, table)}/{kernel}{suffix}"
                spaces = {
                    gpu: _space(part[part["gpu"] == gpu], params, f"{table}: {kernel} on {gpu}", gpu) for gpu in gpus
                }
                found.append(Family(name, params, spaces))
    return tuple(found)


def tuning_families(tables: tuple[str, ...] = TUNING_TABLES, min_gpus: int = 2) -> list[Family]:
    """Every family of the bundled tuning tables with at least ``min_gpus`` GPUs (cached)."""
    from gpuperf.datasets.bundled import tables_state

    return list(_families(tuple(tables), min_gpus, tables_state(tables)))


def leave_one_gpu_out(family: Family) -> Iterator[tuple[str, Space, list[Space]]]:
    """(gpu, its space, the other GPUs' spaces) for each GPU of the family."""
    for gpu, space in family.spaces.items():
        yield gpu, space, [other for name, other in family.spaces.items() if name != gpu]


def subset(space: Space, size: int, seed: int = 0, keep_best: bool = True) -> Space:
    """A random subset of a space's configurations (with its best, if ``keep_best``), for quick tests."""
    rng = np.random.default_rng(seed)
    size = min(size, len(space))
    chosen = rng.choice(len(space), size, replace=False)
    if keep_best:
        best = int(np.nanargmin(space.times))
        if best not in chosen:
            chosen[0] = best
    chosen = np.sort(chosen)
    return Space(
        space.params,
        space.configs.iloc[chosen].reset_index(drop=True),
        space.times[chosen],
        space.where,
        space.extra.iloc[chosen].reset_index(drop=True) if len(space.extra.columns) else pd.DataFrame(),
        space.gpu,
    )
