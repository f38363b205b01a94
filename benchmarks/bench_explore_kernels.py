"""Exploring each stencil's variant space with a model trained on the other stencils (the LIFT paper).

Reads the measured stencil variants (``data/stencil_spaces_pocl.csv.gz``, written by
``benchmarks/stencil_space_campaign.py``), leaves each kernel out in turn and prints the evaluations
needed to reach 90/95/99 % of its best variant when evaluated in the order predicted by PCA (95 %) +
5-NN on the LIFT features, trained on the other kernels only; next to it, ranking by the same
transformation parameters' mean normalised performance on the other kernels (no model) and random
order's exact expectation. A second run adds loopy's per-launch counts to the features.

    python benchmarks/bench_explore_kernels.py [--table data/stencil_spaces_pocl.csv.gz]

Geometric means of evaluations to reach 90 % (LIFT features; model / same parameters, no model /
random order), by data file: the committed 100-cycle run 6.46 / 6.79 / 22.31 (worst kernel, gaussian_5x5,
45); the 25-cycle run under load (``_25cycles``) 5.65 / 6.21 / 21.70 (46); one point after the other
(``_unpaired``) 4.55 / 12.66 / 21.07.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
from scipy.stats import gmean

from gpuperf.decisions.cross_kernel import LIFT_FEATURES, leave_one_kernel_out

ROOT = Path(__file__).resolve().parents[1]
PARAMETERS = ("local_x", "local_y", "outputs_y", "prefetch", "unroll")
EXTRA = ("flops", "global_bytes", "local_bytes", "work_groups", "work_group_size")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", default=str(ROOT / "data" / "stencil_spaces_pocl.csv.gz"))
    args = parser.parse_args()
    table = pd.read_csv(args.table)
    pd.set_option("display.width", 200)
    ok = table["status"].eq("ok")
    print(f"{len(table)} variants of {table['kernel'].nunique()} kernels ({int(ok.sum())} ran)")
    for label, features in (("LIFT features", LIFT_FEATURES), ("LIFT features + launch totals", (*LIFT_FEATURES, *EXTRA))):
        result = leave_one_kernel_out(table, features=features, parameters=PARAMETERS)
        print(f"\n== {label}: evaluations to reach a fraction of the best, each kernel left out ==")
        print(result.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
        print(f"geometric means: model {gmean(result['model_evals_to_90']):.2f} to 90 % "
              f"({gmean(result['model_evals_to_95']):.2f} to 95 %, {gmean(result['model_evals_to_99']):.2f} to 99 %); "
              f"parameters, no model {gmean(result['parameters_evals_to_90']):.2f}; "
              f"random {gmean(result['random_evals_to_90']):.2f}; worst kernel (model) "
              f"{int(result['model_evals_to_90'].max())}")


if __name__ == "__main__":
    main()
