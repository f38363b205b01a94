"""Accuracy of gpuperf's optimization advisor, evaluated as Taheri, Qasem & Burtscher do.

Prints, per split (same program other input; held-out tuning configurations; train on other
programs, test on a held-out program family), per optimization and target (GPUs, or the pocl CPU
device of the generated pairs): the sign accuracy (speedup > 1 predicted right), the same on pairs
clearly away from 1, the accuracy of each model and of a constant predictor, the median
actual/predicted speedup ratio and the share of ratios within [0.8, 1.25].

    python benchmarks/bench_advise.py [--split inputs] [--weights uniform] [--csv out.csv]
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import pandas as pd

COLUMNS = ["pairs", "sign_accuracy", "sign_accuracy_clear", "sign_accuracy_knn", "sign_accuracy_m5p",
           "sign_accuracy_logistic", "sign_accuracy_constant", "confident_share", "sign_accuracy_confident",
           "median_ratio", "ratio_within_0.8_1.25", "log2_mae", "log2_mae_constant"]


def main() -> None:
    from gpuperf.decisions import advise_eval
    from gpuperf.decisions.optimizations import load_optimizations
    from gpuperf.decisions.pairs import training_pairs
    from gpuperf.decisions.speedup_models import SpeedupModel

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", action="append", choices=advise_eval.SPLITS)
    parser.add_argument("--weights", default="distance", choices=("distance", "uniform"), help="k-NN weighting")
    parser.add_argument("--csv", help="write every test prediction to this CSV")
    args = parser.parse_args()
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)
    start = time.perf_counter()
    pairs = training_pairs(load_optimizations().values())
    print(f"{len(pairs)} training pairs in {time.perf_counter() - start:.1f} s")
    print(pairs.groupby(["optimization", "target"]).agg(pairs=("speedup", "size"), families=("family", "nunique"),
                                                        faster=("speedup", lambda s: (s > 1).mean())).round(2))
    factory = partial(SpeedupModel, weights=args.weights)
    results = []
    for split in args.split or advise_eval.SPLITS:
        start = time.perf_counter()
        result = advise_eval.evaluate(pairs, split, factory)
        results.append(result)
        print(f"\n== split: {split} (k-NN weights {args.weights}; {time.perf_counter() - start:.0f} s) ==")
        if result.empty:
            print("no folds")
            continue
        by_target = advise_eval.summarise(result, ["target"])
        print(by_target[["target", *COLUMNS]].round(3).to_string(index=False))
        per = advise_eval.summarise(result, ["target", "optimization"])
        print(per[["target", "optimization", *COLUMNS]].round(3).to_string(index=False))
        if split == "programs":
            held = advise_eval.summarise(result, ["target", "optimization", "family"])
            print(held[["target", "optimization", "family", "pairs", "sign_accuracy", "sign_accuracy_constant",
                        "median_ratio"]].round(3).to_string(index=False))
    if args.csv and results:
        pd.concat(results, ignore_index=True).to_csv(args.csv, index=False)


if __name__ == "__main__":
    main()
