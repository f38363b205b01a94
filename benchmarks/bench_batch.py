"""Measuring several configurations at once: rounds and evaluations to reach 90 % of the best.

A cluster user measures a batch of configurations per round (one per GPU of the same kind, or one
batch job); ``gpuperf ask --count N`` and ``GuidedSearch.ask_batch`` name N at a time, each pick
made as if the ones before it had run at the time the search expects of them (kriging believer).
For every bundled GEMM, convolution and pnpoly space with each GPU left out (the 37 headline spaces
of bench_explore.py, the other GPUs as training data), this prints per batch size the geometric
means of the rounds and of the evaluations needed to reach 90 % of the best; a search that does
not reach it within the budget counts as budget + 1 evaluations and as the rounds that budget
takes plus one. A batch of 1 is the sequential search of bench_explore.py.

    python benchmarks/bench_batch.py                  # batches of 1, 2, 4 and 8, seed 0 (about 1.5 minutes)
    python benchmarks/bench_batch.py --seeds 3        # the figures in docs/decisions.md (about 4 minutes)
    python benchmarks/bench_batch.py --rule worst     # another rule for the picks not measured yet

The rule makes little difference here. Seed 0, rounds / evaluations / most rounds on one space, for
batches of 2, 4 and 8: the search's own expectation (gpuperf's rule) 1.54 / 1.87 / 31, 1.30 / 1.86 /
12, 1.24 / 2.00 / 19; the best time so far 1.58 / 1.92 / 66, 1.36 / 1.91 / 29, 1.30 / 2.08 / 12; the
worst 1.50 / 1.82 / 30, 1.34 / 1.87 / 19, 1.31 / 2.11 / 20; a failure 1.62 / 1.97 / 42, 1.31 / 1.85 /
12, 1.20 / 1.92 / 11 (one at a time: 1.86 / 1.86 / 60). Those figures predate the search's own-best
portfolio picks; with them, --seeds 3 gives rounds / evaluations / most rounds 1.71 / 1.71 / 68 one at a
time, 1.43 / 1.73 / 32.7, 1.25 / 1.72 / 21.3 and 1.20 / 1.79 / 11.3 (2026-12-01); with the slice pick
as well, 1.65 / 1.65 / 61.3, 1.42 / 1.71 / 38.0, 1.29 / 1.74 / 27.0 and 1.20 / 1.78 / 12.7 (2026-12-01).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings

import numpy as np
from scipy.stats import gmean

from gpuperf.decisions.bundled_spaces import leave_one_gpu_out, tuning_families
from gpuperf.decisions.exploration import make_explorer
from gpuperf.decisions.explorers import run_batched_search
from gpuperf.decisions.search_metrics import evals_to


def _ran(measured, times) -> np.ndarray:
    values = np.asarray(times, dtype=float)[list(measured)]
    return values[np.isfinite(values)]


def _best_so_far(measured, times, index) -> float:
    ran = _ran(measured, times)
    return float(ran.min()) if len(ran) else 1.0


def _worst_so_far(measured, times, index) -> float:
    ran = _ran(measured, times)
    return float(ran.max()) if len(ran) else 1.0


def _failed(measured, times, index) -> float:
    return float("nan")


# What a pick counts as until it is measured: the time the search expects of it (kriging
# believer, gpuperf's rule), or a "constant liar": the best or worst time so far, or a failure.
RULES = {"believer": None, "best": _best_so_far, "worst": _worst_so_far, "failed": _failed}


def rounds_and_evals(space, others, batch: int, seed: int, budget: int, rule: str = "believer") -> tuple[int, int]:
    """Rounds and evaluations the batched search takes to reach 90 % (censored at the budget)."""
    rounds = run_batched_search(make_explorer(space, others, None, True, seed), space.times, budget, batch, 0.9,
                                RULES[rule])
    order = [i for picks in rounds for i in picks]
    evals = evals_to(space.performance[order], 0.9)
    if evals is None:
        return math.ceil(budget / batch) + 1, budget + 1
    done = np.cumsum([len(picks) for picks in rounds])
    return int(np.searchsorted(done, evals) + 1), evals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", default="1,2,4,8")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--rule", default="believer", choices=sorted(RULES),
                        help="what a pick of the batch counts as until it is measured (default: the time the "
                        "search expects of it; best, worst: the best or worst time measured so far; failed)")
    args = parser.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    warnings.filterwarnings("ignore")
    started = time.time()
    rounds = {b: [] for b in batches}
    evals = {b: [] for b in batches}
    for family in tuning_families():
        if "~" in family.name:  # older versions of a space: not headline spaces
            continue
        for gpu, space, others in leave_one_gpu_out(family):
            space = space.without_failures()
            cells = []
            for batch in batches:
                runs = [rounds_and_evals(space, others, batch, seed, args.budget, args.rule)
                        for seed in range(args.seeds)]
                rounds[batch].append(np.mean([r for r, _ in runs]))
                evals[batch].append(np.mean([e for _, e in runs]))
                cells.append(f"b{batch}: {rounds[batch][-1]:5.1f} rounds {evals[batch][-1]:6.1f} evals")
            print(f"{family.name:24s} {gpu:22s} " + "  ".join(cells), flush=True)
    count = len(rounds[batches[0]])
    print(f"\n== {count} spaces, {args.seeds} seed(s), rule {args.rule}: geometric means to reach 90 % of the best ==")
    print(f"  {'batch':>5s} {'rounds':>7s} {'evaluations':>12s} {'max rounds':>11s}")
    for batch in batches:
        print(f"  {batch:5d} {gmean(rounds[batch]):7.2f} {gmean(evals[batch]):12.2f} {max(rounds[batch]):11.1f}")
    print(f"\n({time.time() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
