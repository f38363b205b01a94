"""Accuracy of gpuperf's optimization advisor, evaluated as Taheri, Qasem & Burtscher do.

Prints, per split (same program other input; held-out tuning configurations; train on other
programs, test on a held-out program family; each GPU held out, where a pair measured on the other
GPUs is predicted from those measurements), per target (GPUs, or the pocl CPU device of the
generated pairs) and optimization: the sign accuracy (speedup > 1 predicted right) on all pairs, the
same outside the +-10 % noise band and the share of pairs there, the number of pairs measured at
exactly 1 (ties, which count as "not faster") and the sign accuracy without them, the accuracy of three baselines (a
constant, the mean log2 speedup of the fold's training pairs; the same program's mean, that of its
program family's training pairs; the same pair at other sizes, that of the same variant's training pairs
at the other inputs, else the same program's mean), the coverage and sign accuracy of the
predictions with confidence >= 0.9 and >= 0.75 (the advisor abstains on the rest), the median
actual/predicted speedup ratio, the share of ratios within [0.8, 1.25], the log2 errors, the share
of pairs predicted from other GPUs' measurements of the same pair and the models' own sign accuracy,
and which feature set and regression inner CV chose per fold.
When ``data/advise_pairs_pocl_repeat.csv.gz`` or ``data/advise_pairs_h200_repeat.csv.gz`` (a
repeated campaign on pocl or on the H200) exists it also prints how often the two runs agree on each
pair's sign and the median factor between their speedups: how
reproducible a pair's sign is on the measuring machine (a model cannot be more right than the
measurements agree, except by luck).

    python benchmarks/bench_advise.py [--split inputs] [--target device] [--no-select] [--csv out.csv]

After M5P's tie-breaks were made independent of the order of the feature columns (2026-12-01, ``--target gpu``,
15 minutes on 2 shared cores): held-out inputs 93.0 % of 1,498 pairs right (larger_work_groups 88.1 %, the rest as
below; confident: 35 % of pairs, 100 % right), held-out configurations 71.8 % of 20,600, each program family held
out 58.9 % of 22,098 (constant 54.5 %), each GPU held out 63.8 % of 22,098 (models alone 62.9 %, constant 56.3 %;
32 % predicted from other GPUs' measurements; confident: 6.2 % of pairs, 88.8 % right). The figures that follow
were measured before that change.

With the H200's stencil pairs among the GPU pairs (``--target gpu``, 21 minutes on 2 shared cores):
held-out inputs, 93.2 % of 1,498 pairs right (constant 69.6 %; larger_work_groups 89.3 %, thread_coarsening
99.4 %, local_memory_prefetch and coalescing 100 %, unrolling 53.8 %: 98.7 % of its pairs are within 10 % of no
change, 33 measure exactly 1 and count as not faster, 56.9 % right without them, and the H200's two runs
agree on only 76 % of their signs). Baselines that know the program do nearly as well there (2026-12-01,
``--split inputs --target gpu``): the same program's mean 91.7 %, the same pair at the other sizes 92.1 %
(larger_work_groups 85.2 %, thread_coarsening 96.1 %, local_memory_prefetch 99.8 %, coalescing 100 %,
unrolling 53.8 %); on pocl (``--split inputs --target device``) the models' 91.5 % of 708 is below the same
pair's 92.8 % (constant 74.6 %, same program 76.3 %; larger work-groups 82.1 % both, prefetching 94.4 %
against 99.4 %, coarsening 95.8 % and unrolling 99.3 % both). Each program family held out, 56.0 % of
22,098 (constant 54.5 %), the H200 stencils' coarsening 100 % each, prefetching 100 % but hotspot2d's 33 %,
larger work-groups 81 to 94 % (2026-11-28, after the prefetch variants' stored features were refreshed; before,
93.1 %, 57.3 %, jacobi2d_9pt's prefetching 60 %, larger work-groups 73 to 95 %); each GPU held out, 64.3 %
of 22,098 (models alone 63.4 %, constant 56.3 %; before the refresh 64.7 % and 64.1 %),
32 % of them predicted from other GPUs' measurements of the same pair. Before the H200's pairs: held-out
inputs 98.7 % of 790 (constant 97.1 %: coalescing and prefetching pairs the constant gets right), each GPU
held out 64.1 % of 21,378 (models 62.8 %, constant 56.9 %).
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial

import pandas as pd

COLUMNS = ["pairs", "sign_accuracy", "sign_accuracy_clear", "clear_share", "ties", "sign_accuracy_no_ties",
           "sign_accuracy_constant",
           "sign_accuracy_same_program", "sign_accuracy_same_pair", "confident_share", "sign_accuracy_confident", "confident_share_0.75", "sign_accuracy_confident_0.75",
           "median_ratio", "ratio_within_0.8_1.25", "log2_mae", "log2_mae_constant", "elsewhere_share",
           "sign_accuracy_models"]
REPEATS = {  # a committed campaign's pairs -> the same campaign measured again
    "advise_pairs_pocl.csv.gz": "advise_pairs_pocl_repeat.csv.gz",
    "advise_pairs_h200.csv.gz": "advise_pairs_h200_repeat.csv.gz",
}


def repeat_agreement(target: str | None) -> pd.DataFrame | None:
    """Sign agreement between each committed pair campaign and its repeat, where one exists.

    Both runs' pairs are built whole, without ``max_pairs_per_gpu``: that cap draws a random sample
    of each run (the repeat has more pairs, at an extra size), so only some of its pairs would meet
    their first-run twins."""
    from dataclasses import replace

    from gpuperf.decisions import advise_eval
    from gpuperf.decisions.optimizations import load_optimizations
    from gpuperf.decisions.pairs import dataset_path, spec_pairs

    first, second = [], []
    for entry in load_optimizations().values():
        for spec in entry.pairs:
            repeat = REPEATS.get(spec.dataset)
            if repeat and dataset_path(repeat) is not None:
                whole = replace(spec, max_pairs_per_gpu=sys.maxsize)
                first.append(spec_pairs(whole, entry.name))
                second.append(spec_pairs(replace(whole, dataset=repeat), entry.name))
    if not first:
        return None
    agreement = advise_eval.repeatability(pd.concat(first), pd.concat(second))
    if target:
        agreement = agreement[agreement["target"].eq("gpu") == (target == "gpu")]
    return agreement


def main() -> None:
    from gpuperf.decisions import advise_eval
    from gpuperf.decisions.optimizations import load_optimizations
    from gpuperf.decisions.pairs import training_pairs
    from gpuperf.decisions.speedup_models import SpeedupModel

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", action="append", choices=advise_eval.SPLITS)
    parser.add_argument("--target", choices=("gpu", "device"), help="only the GPU or only the device pairs")
    parser.add_argument("--weights", default="distance", choices=("distance", "uniform"), help="k-NN weighting")
    parser.add_argument("--no-select", action="store_true",
                        help="no inner-CV choice: all features, log-mean of k-NN and M5P, uncalibrated confidence")
    parser.add_argument("--csv", help="write every test prediction to this CSV")
    args = parser.parse_args()
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)
    start = time.perf_counter()
    pairs = training_pairs(load_optimizations().values())
    if args.target:
        pairs = pairs[pairs["target"].eq("gpu") == (args.target == "gpu")]
    print(f"{len(pairs)} training pairs in {time.perf_counter() - start:.1f} s")
    print(pairs.groupby(["optimization", "target"]).agg(pairs=("speedup", "size"), families=("family", "nunique"),
                                                        faster=("speedup", lambda s: (s > 1).mean())).round(2))
    repeat = repeat_agreement(args.target)
    if repeat is not None:
        print("\n== the same pairs measured twice (pocl; the H200): sign agreement between the runs ==")
        print(repeat.round(3).to_string(index=False))
    factory = partial(SpeedupModel, weights=args.weights, select=not args.no_select)
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
        chosen = result.groupby(["target", "optimization", "feature_set", "regression"]).agg(folds=("fold", "nunique"))
        print("chosen by inner CV (folds):\n" + chosen.to_string())
        if split == "programs":
            held = advise_eval.summarise(result, ["target", "optimization", "family"])
            print(held[["target", "optimization", "family", "pairs", "sign_accuracy", "sign_accuracy_constant",
                        "confident_share", "sign_accuracy_confident", "median_ratio"]].round(3).to_string(index=False))
    if args.csv and results:
        pd.concat(results, ignore_index=True).to_csv(args.csv, index=False)


if __name__ == "__main__":
    main()
