"""Real tuning runs on the local device: the ranked start against random first picks.

    python benchmarks/bench_tune.py [--spaces jacobi2d_5pt,srad1,gradient] [--budget 12] [--seeds 2]
                                    [--count-model MODEL.json] [--device cuda:0] [--size 4096]
                                    [--table stencil_spaces_h100.csv.gz] [--out RUNS.csv]

For each space (n = m = ``--size``, 1024 by default) it measures the default variant, then runs ``gpuperf tune``'s online
search twice per seed: with its first picks ranked by the model trained on the other kernels'
measured variants (``--start ranked``, the default) and with random first picks (``--start
random``), and with ``--count-model`` (a linear count model of the device, from ``gpuperf
calibrate``) a third time, its first picks ranked by that model (``--start counts``). It prints the
best time found after 3, 6 and ``--budget`` trials as a speedup over the
default variant. The runs of one space and seed are interleaved with the default's measurement
on a shared machine, so compare within a row; the simulation on measured variants is in
bench_explore_kernels.py.

Measured on this 2-core machine's pocl (defaults: 3 spaces, 2 seeds, 12 trials): speedup of the best
found over the default variant, geometric mean over the 6 runs, after 3 / 6 / 12 trials: ranked
start 1.00 / 1.22 / 1.39, random start 0.43 / 0.95 / 0.98; the ranked start was ahead after 12
trials in 6 of 6 runs. The default variant's own time moved by up to 1.5x between seeds.

With ``--count-model`` (pocl's count model from ``POCL_MAX_PTHREAD_COUNT=1 gpuperf calibrate --device
opencl:0 --cycles 15``, its `cpu` property set; a later run of the same command): ranked 1.24 / 1.27 / 1.30,
random 0.50 / 0.98 / 1.13, counts 1.07 / 1.08 / 1.20; the counts start was ahead of the ranked start
after 12 trials in 1 of 6 runs. On pocl the model trained on pocl's own stencil measurements ranks better
than the count model; on the H100 variants (simulated, ``bench_linear_model.py --variants``) the count
model ranks better than models trained on pocl.

On an NVIDIA H200 (``--device cuda:0 --size 4096 --table stencil_spaces_h100.csv.gz --count-model
H100.json``, H100.json from ``gpuperf calibrate --table data/linear_model_h100.csv.gz``; five runs,
``data/tune_h200.csv``): ranked 1.33 / 1.38 / 1.47, counts 1.32 / 1.38 / 1.41, random 1.23 / 1.24 /
1.41; the ranked start was ahead of random after 12 trials in 4 of 5 runs and the counts start ahead of
the ranked one in 1 of 5. srad1 with seed 0, tuned in two calls minutes apart, gave each start's best
after 12 trials within 0.2 %: on the GPU one run is already a steady figure.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import pandas as pd
from scipy.stats import gmean

CHECKPOINTS = (3, 6)


def best_after(result, trials: int) -> float:
    times = [t.time_s for t in result.trials[:trials] if t.time_s is not None]
    return min(times) if times else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spaces", default="jacobi2d_5pt,srad1,gradient")
    parser.add_argument("--budget", type=int, default=12)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--device", default="opencl:0")
    parser.add_argument("--count-model", help="also start from this linear count model's ranking")
    parser.add_argument("--table", default="stencil_spaces_pocl.csv.gz",
                        help="measured variants of other kernels for the ranked start (a path, or a name in data/)")
    parser.add_argument("--size", type=int, default=1024, help="n = m of every space")
    parser.add_argument("--out", help="also write the runs' rows to this CSV file")
    args = parser.parse_args()
    os.environ.setdefault("POCL_MAX_PTHREAD_COUNT", "1")
    from gpuperf.datasets.bundled import data_dir
    from gpuperf.decisions.count_ranking import rank_space_by_counts
    from gpuperf.decisions.tune import default_variant_time, rank_by_other_kernels, tune_space
    from gpuperf.models.linear_calibration import load_linear_model

    sizes = {"n": args.size, "m": args.size}
    table_path = args.table if os.path.exists(args.table) else data_dir() / args.table
    table = pd.read_csv(table_path)
    print(f"device {args.device}, n = m = {args.size}, ranked start trained on {table_path}", flush=True)
    checkpoints = (*CHECKPOINTS, args.budget)
    count_model = load_linear_model(args.count_model)[0] if args.count_model else None
    starts = ("ranked", "random", *(("counts",) if count_model is not None else ()))
    rows = []
    for space in args.spaces.split(","):
        rankings = {"ranked": rank_by_other_kernels(space, sizes, table), "random": None}
        if count_model is not None:
            rankings["counts"] = rank_space_by_counts(space, sizes, count_model)
        for seed in range(args.seeds):
            default = default_variant_time(space, sizes, args.device)
            row = {"space": space, "seed": seed, "default_ms": default * 1e3}
            for start in starts:
                result = tune_space(space, sizes, args.device, args.budget, seed=seed, ranking=rankings[start])
                for k in checkpoints:
                    row[f"{start}_{k}"] = default / best_after(result, k)
            rows.append(row)
            if args.out:  # after every run: an interrupted benchmark keeps the runs it finished
                pd.DataFrame(rows).to_csv(args.out, index=False)
            print(", ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)
    frame = pd.DataFrame(rows)
    print("\nspeedup of the best found over the default variant after k trials (geometric mean over runs):")
    for start in starts:
        print(f"  {start:7s} " + "  ".join(f"k={k}: {gmean(frame[f'{start}_{k}']):.2f}" for k in checkpoints))
    wins = int(np.sum(frame[f"ranked_{args.budget}"] > frame[f"random_{args.budget}"]))
    print(f"ranked start ahead after {args.budget} trials in {wins} of {len(frame)} runs")
    if count_model is not None:
        wins = int(np.sum(frame[f"counts_{args.budget}"] > frame[f"ranked_{args.budget}"]))
        print(f"counts start ahead of the ranked start after {args.budget} trials in {wins} of {len(frame)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
