"""Tune with your own measuring code: a table of configurations, gpuperf naming what to measure next.

The space is the tile shape of a tiled NumPy matrix transpose (a stand-in for any kernel you time
yourself: a CUDA kernel, a batch job). Its configurations go in a CSV with an empty ``time_s``
column; each round gpuperf reads the table, names the next configurations to measure (two at a
time, as two workers would), they are timed and their times written into the table, and gpuperf is
asked again. The shell equivalent of one round is

    gpuperf ask transpose_space.csv --params tile_x,tile_y --count 2 --json

with no other GPU's data here, so the search is the online one (a Gaussian process after its
first random picks). The table is written to a new temporary folder, printed at the end.

    python examples/measure_by_hand.py
"""

from __future__ import annotations

import itertools
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from gpuperf.decisions import next_configuration, partly_measured
from gpuperf.decisions.space import read_table  # as gpuperf ask reads it: rows named by their line in the file

SIZE = 1024
TILES = (8, 16, 32, 64, 128, 256)
ROUNDS = 4
WORKERS = 2


def tiled_transpose(matrix: np.ndarray, tile_x: int, tile_y: int) -> np.ndarray:
    out = np.empty_like(matrix.T)
    for i in range(0, matrix.shape[0], tile_y):
        for j in range(0, matrix.shape[1], tile_x):
            out[j:j + tile_x, i:i + tile_y] = matrix[i:i + tile_y, j:j + tile_x].T
    return out


def measure(matrix: np.ndarray, tile_x: int, tile_y: int, repeats: int = 3) -> float:
    """Your own measuring code: the median of a few timed runs, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        tiled_transpose(matrix, tile_x, tile_y)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main() -> dict[str, object]:
    """The configurations measured, in order, and the best one found."""
    matrix = np.random.default_rng(0).random((SIZE, SIZE), dtype=np.float32)
    folder = Path(tempfile.mkdtemp(prefix="gpuperf-example-"))
    space = folder / "transpose_space.csv"
    pd.DataFrame(list(itertools.product(TILES, TILES)), columns=["tile_x", "tile_y"]).assign(
        time_s=np.nan).to_csv(space, index=False)

    measured = []
    for round_number in range(1, ROUNDS + 1):
        table = read_table(space)
        step = next_configuration(partly_measured(table, ["tile_x", "tile_y"], where=str(space)), count=WORKERS)
        for pick in step.batch:  # each worker measures one and writes its time into the table
            table.loc[pick["index"], "time_s"] = measure(matrix, **pick["config"])
            measured.append(pick["config"])
        table.to_csv(space, index=False)
        shown = "; ".join(f"{p['row']}: tile {p['config']['tile_x']}x{p['config']['tile_y']}" for p in step.batch)
        print(f"round {round_number}: measured {shown}")

    final = next_configuration(partly_measured(read_table(space), ["tile_x", "tile_y"], where=str(space)))
    best = final.best_config
    print(f"{final.measured} of {final.measured + final.remaining} configurations measured; best "
          f"tile {best['tile_x']}x{best['tile_y']} at {final.best_time * 1e3:.2f} ms ({final.best_row} of {space.name})")
    print(f"the table: {space} (left for you to read; delete its folder when done)")
    return {"measured": measured, "best": best, "best_time": final.best_time, "table": str(space)}


if __name__ == "__main__":
    main()
