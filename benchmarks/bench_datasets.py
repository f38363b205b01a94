"""How long loading the bundled tables and importing files takes.

    python benchmarks/bench_datasets.py

Prints, per bundled table, its size and the first (parse) and repeated (in-memory) load times.
"""

from __future__ import annotations

import time
from pathlib import Path

from gpuperf.datasets import BUNDLED, import_ncu, import_nvprof, load_dataset, read_kernel_tuner_cache
from gpuperf.datasets.bundled import data_dir


def timed(call) -> tuple[object, float]:
    start = time.perf_counter()
    result = call()
    return result, time.perf_counter() - start


def main() -> None:
    print(f"{'dataset':32} {'rows':>8} {'cols':>5} {'first s':>8} {'again s':>8}")
    total = 0.0
    for name in BUNDLED:
        frame, first = timed(lambda: load_dataset(name))
        _, again = timed(lambda: load_dataset(name))
        total += first
        print(f"{name:32} {len(frame):8d} {frame.shape[1]:5d} {first:8.2f} {again:8.3f}")
    print(f"{'all bundled tables':32} {'':8} {'':5} {total:8.2f}")
    tests = Path(__file__).resolve().parents[1] / "tests" / "data"
    for label, call in [
        ("nvprof table (Rodinia file)", lambda: import_nvprof(data_dir() / BUNDLED["rodinia_nvprof"].file)),
        ("nvprof trace + metrics", lambda: import_nvprof(tests / "nvprof_gpu_trace.csv", tests / "nvprof_metrics.csv")),
        ("ncu raw page", lambda: import_ncu(tests / "ncu_raw.csv")),
        ("Kernel Tuner cache", lambda: read_kernel_tuner_cache(tests / "kernel_tuner_vector_add.json")),
    ]:
        frame, seconds = timed(call)
        print(f"import {label:25} {len(frame):8d} rows {seconds:8.3f} s")


if __name__ == "__main__":
    main()
