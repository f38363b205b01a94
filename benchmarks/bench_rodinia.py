"""Amaris et al. reproduced on the bundled Rodinia nvprof table, against the paper's predictions.

    python benchmarks/bench_rodinia.py            # every scenario, model and protocol (~9 min)
    python benchmarks/bench_rodinia.py --quick    # the ensemble and two single models (~2 min)

Prints per-kernel MAPE (macro-averaged over kernels) per held-out GPU for every run, the same for
leave-one-architecture-out, leave-one-kernel-out per kernel, the side-by-side comparison with the
paper's published per-sample predictions, the targets (at most half of the paper's best per GPU,
at most 0.25 everywhere) for the primary run, and the BSP model on the matrix/vector kernels.
Writes a Markdown/HTML/JSON report with plots to --out (default gpuperf-report/rodinia).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from gpuperf.evaluation.bsp_matvec import calibrate_and_predict, compare_with_paper_bsp, matvec_table
from gpuperf.evaluation.published import PUBLISHED_MODELS, check_kernel_mapping, published_predictions
from gpuperf.evaluation.report import write_report
from gpuperf.evaluation.reproduce import (
    BETTER_MODELS,
    PAPER_MODELS,
    PRIMARY_RUN,
    PROTOCOLS,
    SCENARIOS,
    compare_with_paper,
    rodinia_table,
    run_rodinia,
    selected_features,
    target_check,
)
from gpuperf.evaluation.tables import LAUNCH_COLUMNS, counter_columns, known_columns
from gpuperf.models.selection import mutual_information_ranking

pd.set_option("display.width", 250)
pd.set_option("display.max_columns", 40)
pd.set_option("display.max_colwidth", 40)


def show(title: str, table: pd.DataFrame) -> None:
    print(f"\n== {title}")
    print(table.to_string(float_format=lambda v: f"{v:.3f}" if abs(v) < 1e4 else f"{v:.2g}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only bsp/gbt, bsp/random_forest and the ensemble")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--models", default=",".join(PAPER_MODELS + BETTER_MODELS))
    parser.add_argument("--protocols", default=",".join(PROTOCOLS))
    parser.add_argument("--max-train-rows", type=int, default=500, help="per kernel and GPU (random subsample)")
    parser.add_argument("--out", type=Path, default=Path("gpuperf-report/rodinia"))
    args = parser.parse_args()
    scenarios, models = args.scenarios.split(","), args.models.split(",")
    if args.quick:
        scenarios, models = ["bsp"], ["gbt", "random_forest"]

    table = rodinia_table()
    published = published_predictions()
    show("Kernel codes of the published predictions vs bundled kernels (median measured time, us)",
         check_kernel_mapping(table, published).set_index(["gpu", "kernel_code"]))

    start = time.perf_counter()
    result = run_rodinia(table, scenarios, models, args.protocols.split(","), args.max_train_rows,
                         progress=lambda key: print(f"  running {key}", flush=True))
    print(f"\n{len(result.evaluations)} runs in {time.perf_counter() - start:.0f} s")

    tables: dict[str, pd.DataFrame] = {}
    protocols = args.protocols.split(",")
    if "gpu" in protocols:
        tables["Leave one GPU out: per-kernel MAPE, macro over kernels"] = result.macro("gpu")
    if "architecture" in protocols:
        tables["Leave one architecture out (train Kepler, test Maxwell and back): macro MAPE"] = result.macro(
            "architecture")
    if "kernel" in protocols:
        kernel_out = {key: e.metrics_by("kernel")["mape"] for key, e in result.evaluations.items()
                      if key.endswith("/kernel")}
        tables["Leave one kernel out: MAPE per held-out kernel"] = pd.DataFrame(kernel_out).T
    if "gpu" in protocols:
        paper_like = [f"{s}/{m}" for s in scenarios for m in models if m in PUBLISHED_MODELS.values()]
        runs = sorted({PRIMARY_RUN, *paper_like} & {k.rsplit("/", 1)[0] for k in result.evaluations})
        tables["Per kernel and GPU vs the paper (standard MAPE, leave one GPU out)"] = compare_with_paper(
            result, runs, published)
        if f"{PRIMARY_RUN}/gpu" in result.evaluations:
            tables[f"Targets for {PRIMARY_RUN}"] = target_check(result, PRIMARY_RUN, published)

    matvec = matvec_table()
    for label, per_gpu in (("lambda per kernel and architecture", False), ("lambda per kernel and GPU", True)):
        compared = compare_with_paper_bsp(calibrate_and_predict(matvec, per_gpu=per_gpu))
        tables[f"BSP on matrix/vector kernels, {label}: ours vs paper's bsp_pred_s"] = compared
        tables[f"BSP ({label}): mean MAPE per GPU"] = compared.groupby(level="gpu")[["ours_mape", "paper_mape"]].mean()

    for title, shown in tables.items():
        show(title, shown)

    candidates = known_columns(table, [*LAUNCH_COLUMNS, *counter_columns(table)])
    sample = table.sample(n=min(len(table), 5000), random_state=0)
    ranking = mutual_information_ranking(sample[candidates], np.log2(sample["time_s"]), bins=10)
    selector, names = selected_features(table, k=10)
    kept = [names[i] for i in selector.selected_]
    print(f"\nSpearman-cluster selection (all kernels, k=10): {', '.join(kept)}")
    plotted = [f"{PRIMARY_RUN}/{p}" for p in protocols]
    paths = write_report(
        args.out,
        "gpuperf: Amaris et al. reproduced on the Rodinia nvprof table",
        evaluations={k: e for k, e in result.evaluations.items() if k in plotted},
        tables=tables,
        notes=[
            "Per-kernel MAPE = mean |measured - predicted| / measured per kernel and GPU; macro = mean over kernels.",
            "Bundled rows are medians of identical launches; the paper's samples are single invocations.",
            f"Primary run: {PRIMARY_RUN}. Selected features (k=10, all kernels): {', '.join(kept)}.",
        ],
        feature_ranking=ranking,
        dendrogram_of=(selector.linkage_, [names[i] for i in selector.candidates_], 10),
    )
    print(f"\nreport: {paths['markdown']} (and report.html, metrics.json, {len(paths) - 3} plots)")


if __name__ == "__main__":
    main()
