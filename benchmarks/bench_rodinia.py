"""Amaris et al. reproduced on the bundled Rodinia nvprof table, against the paper's predictions.

    python benchmarks/bench_rodinia.py            # every scenario, model and protocol (~20 min)
    python benchmarks/bench_rodinia.py --quick    # bsp and gpuperf features x gbt and random forest, nested (~2 min)
    python benchmarks/bench_rodinia.py --scenarios bsp,transfer --models gbt,random_forest
                                                  # with the cross-GPU reference runs (~3 min)
    python benchmarks/bench_rodinia.py --scenarios bsp,scaling --models gbt,random_forest --protocols gpu,architecture
                                                  # with log-linear scaling across GPUs as candidates
    python benchmarks/bench_rodinia.py --scenarios bsp,gpuperf,same_capability,bottleneck --models gbt,random_forest \
        --protocols gpu,architecture [--inner-aggregate median]
                                                  # the quick set with the opt-in bottleneck model's four variants
                                                  # (sum, sum_latency, sum_latency_memclock,
                                                  # sum_latency_memclock_dramclock) as candidates (~4 min)

Prints per-kernel MAPE (macro-averaged over kernels) per held-out GPU for every run, the same for
leave-one-architecture-out, leave-one-kernel-out per kernel, the side-by-side comparison with the
paper's published per-sample predictions, the targets (at most half of the paper's best per GPU,
at most 0.25 everywhere) for the primary run ``nested/select`` (per held-out GPU, the run or vote
chosen by an inner leave-one-GPU-out on the training GPUs only), each GPU predicted from the others'
profiles with a hindsight bound (one factor per kernel fitted to its own times), the same calibrated by
one launch per kernel timed on it (as BSP's lambda), and the BSP model on the matrix/vector kernels.
Writes a Markdown/HTML/JSON report with plots to --out (default gpuperf-reproduce/rodinia-benchmark; the demo's gpuperf-report/ is left alone).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gpuperf.evaluation.reproduce import BETTER_MODELS, OPT_IN_SCENARIOS, PAPER_MODELS, PROTOCOLS, SCENARIOS
from gpuperf.evaluation.rodinia_report import QUICK_MODELS, QUICK_SCENARIOS, reproduce_rodinia


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="only {bsp,gpuperf} x {gbt,random_forest} and their nested selection")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help=f"comma-separated; also {', '.join(OPT_IN_SCENARIOS)} (cross-GPU reference)")
    parser.add_argument("--models", default=",".join(PAPER_MODELS + BETTER_MODELS))
    parser.add_argument("--protocols", default=",".join(PROTOCOLS))
    parser.add_argument("--max-train-rows", type=int, default=500, help="per kernel and GPU (random subsample)")
    parser.add_argument("--inner-max-train-rows", type=int, default=40,
                        help="per kernel and GPU in the nested selection's inner runs")
    parser.add_argument("--inner-aggregate", default="mean", choices=("mean", "median"),
                        help="how nested selection combines its inner folds' figures")
    parser.add_argument("--out", type=Path, default=Path("gpuperf-reproduce/rodinia-benchmark"))
    args = parser.parse_args()
    scenarios, models = args.scenarios.split(","), args.models.split(",")
    if args.quick:
        scenarios, models = list(QUICK_SCENARIOS), list(QUICK_MODELS)
    paths = reproduce_rodinia(args.out, scenarios, models, args.protocols.split(","), args.max_train_rows,
                              echo=lambda line: print(line, flush=True),
                              inner_max_train_rows=args.inner_max_train_rows,
                              inner_aggregate=args.inner_aggregate)
    print(f"\nreport: {paths['markdown']} (and report.html, metrics.json, {len(paths) - 3} plots)")


if __name__ == "__main__":
    main()
