"""Amaris et al.'s BSP model on the matrix/vector kernels of the bundled ``matvec_bsp`` table.

Per-thread counts come from the kernels' definitions (n x n matrices, 16 x 16 thread blocks and
tiles for the matrix kernels, 256-thread blocks for the vector kernels, one thread per output):

============  ==========  ============  ===========  ============  ============  =============
kernel        threads     instructions  global lds   global sts    shared lds    shared sts
============  ==========  ============  ===========  ============  ============  =============
MMGU, MMGC    n^2         n             2n           1             0             0
MMSU, MMSC    n^2         n             2n/16        1             2n            2n/16
MAU, MAC      n^2         1             2            1             0             0
vAdd          n           1             2            1             0             0
dotP          n           2             2            1/256         2             2
MSA           4096        4 n/4096      n/4096       1             4             4
============  ==========  ============  ===========  ============  ============  =============

MM = matrix multiply (G: global memory, S: shared-memory tiles; U/C: uncoalesced/coalesced, same
counts, different lambda), MA = matrix add, dotP = dot product (a 256-thread tree reduction in
shared memory, one partial sum stored per block), MSA = maximum subarray (32 blocks x 128
threads, each scanning n/4096 elements with about 4 instructions per element, then a shared
reduction of 4 values). A constant factor in a kernel's counts is absorbed by its lambda.

lambda is calibrated per kernel and architecture on one input size of one board (Tesla K40 for
Kepler, GTX 970 for Maxwell) and used for every other size and board of that architecture.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuperf.datasets import load_dataset
from gpuperf.errors import GpuperfError
from gpuperf.evaluation.metrics import mape
from gpuperf.evaluation.tables import join_gpu_descriptors, with_base_clocks
from gpuperf.models.bsp import BspModel

CALIBRATION_BOARDS = {"Kepler": "Tesla K40", "Maxwell": "GTX 970"}
MSA_THREADS = 32 * 128


def _counts(kernel: str, n: np.ndarray) -> dict[str, np.ndarray]:
    n = n.astype(float)
    one, zero = np.ones_like(n), np.zeros_like(n)
    if kernel in ("MMGU", "MMGC"):
        return dict(threads=n**2, instructions=n, global_loads=2 * n, global_stores=one,
                    shared_loads=zero, shared_stores=zero)
    if kernel in ("MMSU", "MMSC"):
        return dict(threads=n**2, instructions=n, global_loads=2 * n / 16, global_stores=one,
                    shared_loads=2 * n, shared_stores=2 * n / 16)
    if kernel in ("MAU", "MAC"):
        return dict(threads=n**2, instructions=one, global_loads=2 * one, global_stores=one,
                    shared_loads=zero, shared_stores=zero)
    if kernel == "vAdd":
        return dict(threads=n, instructions=one, global_loads=2 * one, global_stores=one,
                    shared_loads=zero, shared_stores=zero)
    if kernel == "dotP":
        return dict(threads=n, instructions=2 * one, global_loads=2 * one, global_stores=one / 256,
                    shared_loads=2 * one, shared_stores=2 * one)
    if kernel == "MSA":
        per_thread = n / MSA_THREADS
        return dict(threads=MSA_THREADS * one, instructions=4 * per_thread, global_loads=per_thread,
                    global_stores=one, shared_loads=4 * one, shared_stores=4 * one)
    raise GpuperfError(f"matvec_bsp: no counts for kernel '{kernel}'")


def matvec_table(frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """The matvec_bsp table with per-thread counts and GPU descriptors (cores; ``gpu_clock_hz``, the
    base clock, see :func:`~gpuperf.evaluation.tables.with_base_clocks`)."""
    frame = load_dataset("matvec_bsp") if frame is None else frame
    frame = with_base_clocks(join_gpu_descriptors(frame, "matvec_bsp"))
    parts = []
    for kernel, part in frame.groupby("kernel", sort=False):
        counts = _counts(str(kernel), part["n"].to_numpy())
        parts.append(part.assign(**counts))
    return pd.concat(parts).loc[frame.index]


def bsp_model() -> BspModel:
    """The BSP model on the columns of :func:`matvec_table` (no cache-hit terms: none counted)."""
    return BspModel(shared_loads="shared_loads", shared_stores="shared_stores")


def calibrate_and_predict(
    table: pd.DataFrame, boards: dict[str, str] | None = None, per_gpu: bool = False
) -> pd.DataFrame:
    """Per kernel and architecture: fit lambda on the calibration board's median size, predict every
    row of that architecture (``per_gpu``: calibrate on every GPU's own median size instead, as the
    paper fits a lambda per kernel and GPU). Returns the rows with ``predicted_s``, ``lambda`` and
    ``calibration`` (True on the calibration row)."""
    boards = CALIBRATION_BOARDS if boards is None else boards
    parts = []
    scope = "gpu" if per_gpu else "gpu_architecture"
    for (kernel, group), part in table.groupby(["kernel", scope], sort=True):
        board = group if per_gpu else boards.get(str(group))
        on_board = part[part["gpu"] == board]
        if on_board.empty:
            raise GpuperfError(f"matvec_bsp: no {kernel} rows on calibration board {board} for {group}")
        sizes = np.sort(on_board["n"].unique())
        size = sizes[len(sizes) // 2]
        calibration = on_board[on_board["n"] == size]
        model = bsp_model().fit(calibration, calibration["time_s"])
        parts.append(
            part.assign(
                predicted_s=model.predict(part),
                **{"lambda": model.lambda_},
                calibration=part.index.isin(calibration.index),
                calibration_board=board,
                calibration_n=size,
            )
        )
    return pd.concat(parts)


def compare_with_paper_bsp(predicted: pd.DataFrame) -> pd.DataFrame:
    """MAPE per (kernel, GPU) of our calibrated BSP and the paper's ``bsp_pred_s`` on the same rows
    (calibration rows excluded), with our lambda."""
    rows = []
    for (kernel, gpu), part in predicted[~predicted["calibration"]].groupby(["kernel", "gpu"], sort=True):
        rows.append(
            {
                "kernel": kernel,
                "gpu": gpu,
                "architecture": part["gpu_architecture"].iloc[0],
                "lambda": part["lambda"].iloc[0],
                "n_rows": len(part),
                "ours_mape": mape(part["time_s"], part["predicted_s"]),
                "paper_mape": mape(part["time_s"], part["bsp_pred_s"]),
            }
        )
    return pd.DataFrame(rows).set_index(["kernel", "gpu"])
