"""Launch-geometry policies on the bundled block-shape choices, and each policy's cost per call.

For every kernel with block-shape parameters (convolution and pnpoly block_size_x/y, GEMM's
MDIMC x NDIMC, the KTT tables' block sizes) on every GPU with per-SM limits in its descriptor,
each group of configurations differing only in block shape is one choice. Per policy: the
geometric-mean speedup over LLVM's default (the group's shape of exactly 128 threads) and the
fraction of choices within 10 % of the group's best, over the groups that have that shape and where it ran (the
others are left out and counted: 425 of hub/gemm's 2,777 on the RTX 3060 Laptop, a 10,000-row sample, lack it;
44 of the 188 groups of hub/convolution and ktt Convolution on each RTX GPU have it recorded as failed, where
another 128-thread shape such as 64 x 2 stood in for it until 2026-12-01: the best shape's speedup over
LLVM's default there now reads 1.42-1.80, on the RTX 3090 1.458 where it read 1.689); the model is trained
leave-one-kernel-out. Then the cost of one call
of each policy, set against the measured kernel times. The summary is given over every table, the
NVIDIA GPUs' and the AMD GPUs' (hub/convolution_milo on the MI50, MI250X, W6600 and W7800, judged
with LLVM's AMDGPU occupancy rules; libomptarget's rule is NVIDIA's, so it is left out there).

    python benchmarks/bench_geometry.py

With the AMD GPUs added (2026-11-22; the 38 NVIDIA tables' figures did not change): on the 4 AMD
tables the occupancy policy's geometric-mean speedup over LLVM's default is 1.03 (0.86-1.19), the
heuristic's 0.99, the model's 0.70; the best block shape's 1.76. With the baseline the exact 128-thread
shape (2026-12-01; before, the nearest thread count stood in for it): hub/gemm on the RTX 3060 Laptop,
2,352 of 2,777 groups judged: heuristic 1.000, occupancy 0.841, model 0.841, best 1.120; LLVM's default
within 10 % of the best in 0.609 of them. A pick of a configuration the table records as failed counts as
a miss (failed picks; before, the policy got its runner-up): the occupancy policy's in 55 of
hub/convolution_milo's 160 groups on the RTX A6000; on the AMD tables its speedup (over the picks that ran)
reads 1.035 (was 1.031).
"""

from __future__ import annotations

import sys
import time

import numpy as np
from scipy.stats import gmean

from gpuperf.decisions.geometry import POLICIES
from gpuperf.decisions.geometry_cost import HEURISTIC, HEURISTIC_TARGET_US, policy_costs
from gpuperf.decisions.geometry_eval import EVALUATED_POLICIES, choices, leave_one_kernel_out_models, summarise
from gpuperf.decisions.geometry_model import choice_tables
from gpuperf.errors import GpuperfError
from gpuperf.hardware.specs import get_gpu


def evaluate() -> tuple[list[dict], float]:
    tables = choice_tables()
    models = leave_one_kernel_out_models(tables)
    rows, kernel_times = [], []
    print(f"{'kernel':22s} {'GPU':22s} " + " ".join(f"{p:>19s}" for p in EVALUATED_POLICIES))
    print(f"{'':45s} " + " ".join(f"{'speedup/in10%/tpb':>19s}" for _ in EVALUATED_POLICIES))
    for table in tables:
        try:
            picked = choices(table, models[table.family])
        except GpuperfError as exc:
            print(f"{table.label:22s} {table.gpu:22s} skipped: {exc}")
            continue
        summary = summarise(picked)
        judged = int(picked["llvm"].notna().sum())
        kernel_times.extend(table.frame["time"].dropna().tolist())  # a failed configuration has none
        rows.append({"label": table.label, "gpu": table.gpu, "vendor": get_gpu(table.gpu).vendor, **summary})
        cells = [
            f"{summary[p]['speedup_vs_llvm']:.2f}/{summary[p]['within_10pct']:.2f}/{summary[p]['typical_threads']:>4d}"
            if p in summary else "-"  # libomptarget's rule is for NVIDIA GPUs only
            for p in EVALUATED_POLICIES
        ]
        print(f"{table.label:22s} {table.gpu:22s} " + " ".join(f"{c:>19s}" for c in cells)
              + (f"  (groups judged {judged} of {len(picked)})" if judged < len(picked) else ""), flush=True)
    print(f"\n== over {len(rows)} (kernel, GPU) tables ==")
    for vendor, chosen in (("every GPU", rows), ("NVIDIA GPUs", [r for r in rows if r["vendor"] == "NVIDIA"]),
                           ("AMD GPUs", [r for r in rows if r["vendor"] == "AMD"])):
        print(f"  -- {vendor} ({len(chosen)} tables)")
        for policy in EVALUATED_POLICIES:
            speedups = [r[policy]["speedup_vs_llvm"] for r in chosen if policy in r]
            within = [r[policy]["within_10pct"] for r in chosen if policy in r]
            failed = sum(r[policy]["failed_picks"] for r in chosen if policy in r)
            if not speedups:
                continue
            print(
                f"  {policy:13s} geometric-mean speedup over llvm {gmean(speedups):.3f} "
                f"(tables {min(speedups):.2f}-{max(speedups):.2f}); within 10 % of best: {np.mean(within):.1%}"
                + (f" ({len(speedups)} tables)" if len(speedups) != len(chosen) else "")
                + (f"; failed picks: {failed}" if failed else "")
            )
    return rows, float(np.median(kernel_times))


def costs(median_kernel_s: float) -> None:
    figures = policy_costs("V100")
    print("\n== cost per call (best of 5 repeats; V100 descriptor) ==")
    for name, us in figures.items():
        share = us * 1e-6 / median_kernel_s
        print(f"  {name:46s} {us:10.2f} us  ({share:.2e} of the median measured kernel time {median_kernel_s * 1e3:.2f} ms)")
    verdict = "meets" if figures[HEURISTIC] < HEURISTIC_TARGET_US else "misses"
    print(f"heuristic per call: {figures[HEURISTIC]:.2f} us ({verdict} the {HEURISTIC_TARGET_US:.0f} us target)")


def main() -> int:
    started = time.time()
    assert set(POLICIES) <= set(EVALUATED_POLICIES)
    _, median_kernel_s = evaluate()
    costs(median_kernel_s)
    print(f"\n({time.time() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
