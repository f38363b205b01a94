"""A GPU's times of the stencil variants from another GPU's, as ``gpuperf predict-gpu`` gives them.

    python benchmarks/bench_predict_gpu.py [--tables stencil_spaces_h100,stencil_spaces_h200] [--draws N]

The question a scheduler asks: the job's launches were timed on one GPU; how long on the other? For
each GPU and stencil, one variant is timed on the GPU (each variant in turn, the scores averaged; ``--draws N``:
N drawn at random instead) and every
variant's time is predicted as the other GPU's time of it, scaled by the two GPUs' ratio on that one
variant (``gpuperf.evaluation.elsewhere.one_launch_calibration``, the rule ``predict-gpu`` applies).
Beside it, two predictions that time nothing on the GPU: the other GPU's time as it is, and scaled by
the ratio of the GPUs' memory bandwidths from their descriptors (the stencils move their arrays once
per launch, so bandwidth is the datasheet figure a scheduler would reach for). Scores: MAPE per
stencil, then the mean over stencils.

On the bundled H100 and H200 tables (the same 192 variants, n = m = 4096): one timed variant gives a
mean per-stencil MAPE of 0.085 for either GPU (0.03 to 0.11 per stencil); the other GPU's time as it is
0.106 for the H200 (from the H100's) and 0.089 for the H100; the bandwidth ratio 0.229 and 0.307: the
H200's 1.43x bandwidth buys these stencils a median 0.83 to 0.97x the time, not 0.70x. Between these two
sibling GPUs (one GH100 die) the one timed variant gains little over taking the time as it is: it
loses on three stencils for each GPU (Gaussian 5x5, jacobi2d_5pt and srad1), where the variants' ratios
spread about as much as the GPUs differ. The timed variant itself, predicted exactly, is not scored.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd


def unscaled_errors(table: pd.DataFrame) -> pd.DataFrame:
    """Per target GPU and kernel: the MAPE of the other GPU's time as it is and bandwidth-scaled."""
    from gpuperf.hardware.specs import get_gpu

    times = table.groupby(["kernel", "variant", "gpu"])["time_s"].median().unstack("gpu").dropna()
    gpus = list(times.columns)
    if len(gpus) != 2:
        raise SystemExit(f"the tables hold {len(gpus)} GPUs ({', '.join(gpus)}); give two")
    rows = []
    for target, source in (gpus, gpus[::-1]):
        ratio = get_gpu(source).memory_bandwidth_gbs / get_gpu(target).memory_bandwidth_gbs
        measured, other = times[target], times[source]
        for kernel in times.index.get_level_values("kernel").unique():
            m, o = measured.loc[kernel], other.loc[kernel]
            rows.append({"gpu": target, "kernel": kernel, "as_is": float(np.mean(np.abs(o - m) / m)),
                         "bandwidth_scaled": float(np.mean(np.abs(o * ratio - m) / m))})
    return pd.DataFrame(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default="stencil_spaces_h100,stencil_spaces_h200",
                        help="two bundled dataset names or paths, the same variants measured on two GPUs")
    parser.add_argument("--draws", type=int, default=None,
                        help="random choices of the one timed variant (default: each variant in turn, exact)")
    args = parser.parse_args()
    from gpuperf.datasets import load_dataset
    from gpuperf.evaluation.elsewhere import one_launch_calibration

    table = pd.concat([load_dataset(name.strip()) for name in args.tables.split(",")], ignore_index=True)
    one = one_launch_calibration(table, ["kernel", "variant"], draws=args.draws)
    scores = one.rename(columns={"mape": "one_timed"})[["gpu", "kernel", "one_timed"]].merge(
        unscaled_errors(table), on=["gpu", "kernel"])
    for gpu, part in scores.groupby("gpu"):
        print(f"\n{gpu}: MAPE per stencil, predicted from the other GPU's times")
        print(part.drop(columns="gpu").set_index("kernel").round(3).to_string())
        means = part[["one_timed", "as_is", "bandwidth_scaled"]].mean()
        print("  mean over stencils: " + ", ".join(f"{name} {value:.3f}" for name, value in means.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
