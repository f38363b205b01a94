"""How gpuperf's readers and writers scale with the size of a user's table.

    python benchmarks/bench_large_tables.py [--rows 20000] [--points 100]

Each step runs on a synthetic input of ``--rows`` rows and of ten times as many (a campaign store: ``--points``
points and ten times as many), in one run, and prints the seconds of both and their ratio: 10 is time linear in
the rows, more is worse than linear (a run on a tenth of the rows comes first, untimed: imports and a kernel
built are no row's cost). The inputs are made in a temporary folder:

- a dataset table (kernel, gpu, seven numeric features, time_s), read as fit, evaluate and predict-table read it
  (``read_csv``) and written as predict-table writes it (``write_dataset_csv``);
- a Kernel Tuner cache of five parameters (``read_kernel_tuner_cache``, as explore and ask read it);
- an Nsight Compute raw page, ``tests/data/ncu_raw.csv``'s launches repeated (``import_ncu``);
- a measurement store of one kernel (vector_copy) at as many sizes as points, exported with its static
  features and registers (``store_table``, as ``gpuperf campaign export`` makes its table).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from gpuperf.datasets import import_ncu, read_kernel_tuner_cache, write_dataset_csv
from gpuperf.datasets.tables import read_csv
from gpuperf.measure import store_table
from gpuperf.measure.store import Store

TESTS = Path(__file__).resolve().parents[1] / "tests" / "data"
GPUS = ["Tesla K40", "GTX 980", "Tesla P100 SXM2", "Tesla V100 PCIe 32GB", "RTX 2080 Ti", "RTX 3090"]


def dataset_table(rows: int, path: Path) -> Path:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({
        "kernel": rng.choice([f"k{i}" for i in range(50)], rows), "gpu": rng.choice(GPUS, rows),
        "n": rng.integers(1, 1 << 20, rows), "m": rng.integers(1, 4096, rows), "flops": rng.lognormal(10, 3, rows),
        "bytes": rng.lognormal(12, 2, rows), "threads": rng.choice([32, 64, 128, 256, 512, 1024], rows),
        "ratio": rng.random(rows), "loads": rng.integers(0, 10000, rows).astype(float)})
    frame["time_s"] = 1e-9 * (frame["flops"] + frame["bytes"] / 3) * (1 + 0.1 * rng.random(rows))
    frame.to_csv(path, index=False)
    return path


def kernel_tuner_cache(entries: int, path: Path) -> Path:
    params = {"block_size_x": [16, 32, 64, 128, 256, 512, 1024], "block_size_y": [1, 2, 4, 8, 16, 32],
              "tile_x": list(range(1, 21)), "tile_y": list(range(1, 21)), "unroll": list(range(20))}
    cache = {}
    for combo in itertools.islice(itertools.product(*params.values()), entries):
        time_ms = round(0.05 + 0.001 * sum(combo[2:]), 6)
        cache[",".join(map(str, combo))] = {**dict(zip(params, combo)), "time": time_ms, "times": [time_ms] * 3,
                                            "compile_time": 400.0, "framework_time": 0.8}
    path.write_text(json.dumps({"device_name": "NVIDIA RTX A4000", "kernel_name": "synthetic",
                                "problem_size": [1048576], "tune_params_keys": list(params),
                                "tune_params": params, "objective": "time", "cache": cache}))
    return path


def ncu_raw_page(launches: int, path: Path) -> Path:
    lines = (TESTS / "ncu_raw.csv").read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = list(csv.reader(lines[start + 2:]))
    with path.open("w", newline="") as out:
        out.writelines(lines[start:start + 2])
        writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
        for launch in range(launches):
            writer.writerow([str(launch), *rows[launch % len(rows)][1:]])
    return path


def campaign_store(points: int, path: Path) -> Path:
    rows = [{"campaign": "bench", "kernel": "vector_copy", "sizes": {"n": 1024 * (i + 1)}, "device": "cuda:0",
             "geometry": f"{1024 * (i + 1)}x1x1/256x1x1", "kernel_name": "vector_copy", "variant": "",
             "variant_params": {}, "kernel_spec": "vector_copy", "status": "ok",
             "provenance": {"device_name": "NVIDIA H100 80GB HBM3"}, "time_s": 1e-6 * (i + 1), "repeats": 7}
            for i in range(points)]
    with Store(path) as store:
        store.add_many(rows)
    return path


def seconds(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        call()
    return time.perf_counter() - start


def step(label: str, small: int, make: Callable[[int, Path], Path], run: Callable[[Path], object],
         folder: Path, suffix: str) -> None:
    warm_up = make(max(1, small // 10), folder / f"{label.split()[0]}_warm_up{suffix}")
    seconds(lambda: run(warm_up))  # imports, a kernel built: not the rows' cost
    timings = []
    for count in (small, 10 * small):
        made = make(count, folder / f"{label.split()[0]}_{count}{suffix}")
        timings.append(seconds(lambda: run(made)))
    print(f"{label:34} {small:>9,} {timings[0]:8.2f} {10 * small:>10,} {timings[1]:8.2f} "
          f"{timings[1] / timings[0]:7.1f} {1e6 * timings[1] / (10 * small):9.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--points", type=int, default=100)
    args = parser.parse_args()
    print(f"{'step':34} {'rows':>9} {'s':>8} {'10x rows':>10} {'s':>8} {'ratio':>7} {'us/row':>9}")
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        step("read_csv (a dataset table)", args.rows, dataset_table, read_csv, folder, ".csv")
        step("write_dataset_csv (predict-table)", args.rows, dataset_table,
             lambda path: write_dataset_csv(pd.read_csv(path), path.with_suffix(".out.csv"), replace=True),
             folder, ".csv")
        step("read_kernel_tuner_cache", args.rows, kernel_tuner_cache, read_kernel_tuner_cache, folder, ".json")
        step("import_ncu (raw page)", args.rows, ncu_raw_page, import_ncu, folder, ".csv")
        step("store_table (campaign export)", args.points, campaign_store, store_table, folder, ".sqlite")
    print("ratio: seconds at 10x the rows over seconds at the rows (10: linear); us/row at 10x the rows")


if __name__ == "__main__":
    main()
