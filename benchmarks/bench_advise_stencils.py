"""What the stencil variants measured on an H100 say about the advisor's stencil optimizations, beside pocl's.

Pairs of variants of one stencil that differ in one parameter only, from a smaller to a larger value,
are measured speedups of one optimization: local_x or local_y (larger_work_groups), outputs_y
(thread_coarsening), unroll (unrolling), prefetch 0 -> 1 (local_memory_prefetch). Prints, per
optimization and per optimization and stencil, the number of pairs, the median speedup and the share
of pairs that got faster:

- on the H100 (``stencil_spaces_h100``: 24 variants per stencil at 4096, the advisor's GPU pairs);
- on pocl with the same rule (``stencil_spaces_pocl``: 64 variants per stencil at 1024);
- on pocl as the advisor trains on it (``advise_pairs_pocl``: four stencils x 30 variants x 3 sizes);

then, unless ``--no-models``, how well the advisor predicts the H100 pairs' signs with each stencil
held out, trained on (a) the GPU pairs without the H100's (the advisor before they were added), (b)
the same plus the other stencils' H100 pairs (the advisor now), (c) the pocl pairs (a CPU-trained
advisor), beside a constant predictor (the training pairs' mean log2 speedup). About 4 minutes on
2 shared cores, nearly all of it fitting the models.

    python benchmarks/bench_advise_stencils.py [--no-models] [--other-gpu stencil_spaces_h200]

Figures (54 H100 pairs; the stencil pairs before them were all measured on pocl): median speedup
(share faster) on the H100 / pocl, same rule / pocl, the advisor's pairs: larger_work_groups
1.11 (67 %) / 0.995 (48 %) / 0.997 (47 %); thread_coarsening 1.96 (91 %) / 0.90 (31 %) / 0.82 (36 %);
unrolling 1.003 (83 %) / 1.28 (86 %) / 1.80 (97 %); local_memory_prefetch 0.99 (one pair) / 0.54
(11 %) / 0.39 (6 %). Of the 22 (optimization, stencil) with pairs on both devices, the two medians
fall on the same side of 1 in 41 %. Sign accuracy on the H100 pairs, each stencil held out (constant
predictor in brackets): trained on the GPU pairs without the H100's, 50 % (50 %) of the 42 pairs it
could assess (unrolling had no GPU pairs); with the other stencils' H100 pairs, 76 % (57 %) of 54
(larger_work_groups 67 % (67 %), thread_coarsening 91 % (9 %), unrolling 83 % (83 %)); trained on
pocl, 63 % (41 %) of 54, its median predictions 0.21 for thread_coarsening (measured 1.96) and 2.4 for
unrolling (measured 1.003).

Then the same 54 pairs on another GPU (``--other-gpu``, by default ``stencil_spaces_h200``: the H100's
variants measured on an H200). There the median speedups are larger_work_groups 1.20 (63 % faster),
thread_coarsening 1.96 (91 %), unrolling 1.001 (58 %), local_memory_prefetch 0.99 (one pair); 16 of the
54 are within 2 % of no change. The H100's measured pair has the H200's sign in 89 % of the pairs
(larger_work_groups 97 %, thread_coarsening 100 %, unrolling 58 %: nine of its twelve pairs are within
2 % of 1). The advisor, trained on every GPU pair, the H100's included, predicts each of these pairs from
the H100's measurement of the same pair (``pair_transfer``), so it gets the same 89 %; its models alone
get 67 % (constant 50 %): they predict larger work-groups help on every pair (63 %, as the constant
does), since the thousands of GEMM and convolution pairs outweigh the 30 stencil pairs that would tell
the stencils apart.

Since the H200's designed stencil pairs (``advise_pairs_h200``) joined the GPU pairs, the same run gives
(2026-11-28): sign accuracy on the 54 H100 pairs, each stencil held out, 59 % (constant 57 %) trained on the
GPU pairs without the H100's (the H200's among them: thread_coarsening 91 %, unrolling now assessed, 42 %),
74 % (57 %) with the other stencils' H100 pairs too (larger_work_groups 70 %, thread_coarsening 91 %,
unrolling 67 %), 63 % (41 %) trained on pocl; the models' median predictions with every GPU pair: 1.23 for
larger_work_groups (measured 1.11), 1.69 for thread_coarsening (1.96), 1.006 for unrolling (1.003). On the
H200 (``stencil_spaces_h200``) the advisor still gets 89 % from the H100's measured pairs; its models alone 61 %.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np
import pandas as pd

from gpuperf.decisions.optimizations import load_optimizations
from gpuperf.decisions.pairs import DEVICE_TARGET, GPU_TARGET, spec_pairs

H100 = "stencil_spaces_h100"
POCL_SPACES = "stencil_spaces_pocl"
POCL_PAIRS = "advise_pairs_pocl.csv.gz"
OPTIMIZATIONS = ("larger_work_groups", "thread_coarsening", "unrolling", "local_memory_prefetch")


def stencil_pairs(dataset: str = H100, like: str = H100) -> pd.DataFrame:
    """The advisor's pairs of the ``like`` dataset's ``[[pairs]]`` tables, read from ``dataset``."""
    entries = load_optimizations()
    parts = [spec_pairs(replace(spec, dataset=dataset), name)
             for name in OPTIMIZATIONS for spec in entries[name].pairs if spec.dataset == like]
    return pd.concat(parts, ignore_index=True)


def speedup_summary(pairs: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per group: pairs, median speedup and the share of pairs that got faster."""
    summary = pairs.groupby(by).agg(pairs=("speedup", "size"), median_speedup=("speedup", "median"),
                                    faster=("speedup", lambda s: float((s > 1).mean()))).reset_index()
    return summary.astype({"pairs": "Int64"})


def held_out_signs(h100: pd.DataFrame, training: pd.DataFrame) -> pd.DataFrame:
    """Per H100 pair, each stencil held out: the measured speedup and the predicted ones of models
    trained on the GPU pairs without the H100's (``before``), with the other stencils' H100 pairs
    (``now``) and on the pocl pairs (``pocl``), and the constant predictor of each."""
    from gpuperf.decisions.speedup_models import SpeedupModel

    others = training[~training["dataset"].eq(H100)]
    rows = []
    for (optimization, kernel), test in h100.groupby(["optimization", "kernel"]):
        same = others[others["optimization"].eq(optimization)]
        sources = {
            "before": same[same["target"].eq(GPU_TARGET)],
            "now": pd.concat([same[same["target"].eq(GPU_TARGET)],
                              h100[h100["optimization"].eq(optimization) & ~h100["kernel"].eq(kernel)]]),
            "pocl": same[same["target"].str.startswith(DEVICE_TARGET)],
        }
        row = pd.DataFrame({"optimization": optimization, "kernel": kernel, "measured": test["speedup"].to_numpy()})
        for label, train in sources.items():
            if train.empty:
                row[label] = row[f"{label}_constant"] = np.nan
                continue
            row[label] = SpeedupModel().fit(train).predict(test).speedup
            row[f"{label}_constant"] = float(np.exp2(np.log2(train["speedup"]).mean()))
        rows.append(row)
    return pd.concat(rows, ignore_index=True)


def sign_table(predictions: pd.DataFrame) -> pd.DataFrame:
    """Sign accuracy per optimization and overall of each training source and its constant predictor
    (pairs a source could not assess are left out of its figure and counted in ``assessed``)."""
    rows = []
    for optimization, group in [*predictions.groupby("optimization"), ("all", predictions)]:
        row = {"optimization": optimization, "pairs": len(group)}
        for label in ("before", "now", "pocl"):
            assessed = group[group[label].notna()]
            faster = assessed["measured"] > 1
            row[f"{label}_assessed"] = len(assessed)
            for column in (label, f"{label}_constant"):
                row[column] = float(((assessed[column] > 1) == faster).mean()) if len(assessed) else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def other_gpu_signs(h100: pd.DataFrame, other: pd.DataFrame, training: pd.DataFrame) -> pd.DataFrame:
    """Per optimization and overall, on ``other`` (the H100's pairs measured on another GPU): pairs,
    how often the H100's pair got faster where the other GPU's did (``h100_sign``), and the sign
    accuracy of the advisor trained on every GPU pair (the H100's included: it predicts each pair from
    the H100's measurement of it), of its models alone and of its constant."""
    from gpuperf.decisions.speedup_models import SpeedupModel

    keys = ["optimization", "kernel", "configuration", "change"]
    both = other.merge(h100[[*keys, "speedup"]], on=keys, suffixes=("", "_h100"))
    parts = []
    for optimization, test in both.groupby("optimization"):
        train = training[training["optimization"].eq(optimization) & training["target"].eq(GPU_TARGET)]
        prediction = SpeedupModel().fit(train).predict(test)
        parts.append(test.assign(predicted=prediction.speedup, models=prediction.model_speedup,
                                 constant=float(np.exp2(np.log2(train["speedup"]).mean()))))
    predictions = pd.concat(parts, ignore_index=True)
    rows = []
    for optimization, group in [*predictions.groupby("optimization"), ("all", predictions)]:
        faster = group["speedup"] > 1
        rows.append({"optimization": optimization, "pairs": len(group),
                     "within_2pct_of_1": int((np.abs(np.log(group["speedup"])) < np.log(1.02)).sum()),
                     **{label: float(((group[column] > 1) == faster).mean())
                        for label, column in (("h100_sign", "speedup_h100"), ("advisor", "predicted"),
                                              ("models", "models"), ("constant", "constant"))}})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-models", action="store_true", help="only the measured speedups, no advisor models")
    parser.add_argument("--other-gpu", default="stencil_spaces_h200",
                        help="the same variants measured on another GPU, whose pairs the advisor then predicts")
    args = parser.parse_args()
    pd.set_option("display.width", 250)
    h100 = stencil_pairs()
    tables = {"H100": h100, "pocl, same rule": stencil_pairs(POCL_SPACES),
              "pocl, advisor's pairs": stencil_pairs(POCL_PAIRS, POCL_PAIRS)}
    print("== measured speedups of each optimization: pairs, median speedup, share faster ==")
    merged = None
    for label, pairs in tables.items():
        summary = speedup_summary(pairs, ["optimization"]).set_index("optimization").add_prefix(f"{label}: ")
        merged = summary if merged is None else merged.join(summary, how="outer")
    print(merged.to_string(float_format=lambda v: f"{v:.3f}"))
    print("\n== per stencil ==")
    merged = None
    for label, pairs in tables.items():
        summary = speedup_summary(pairs, ["optimization", "kernel"]).set_index(["optimization", "kernel"])
        summary = summary.add_prefix(f"{label}: ")
        merged = summary if merged is None else merged.join(summary, how="outer")
    print(merged.to_string(float_format=lambda v: f"{v:.3f}"))
    both = merged.dropna(subset=["H100: median_speedup", "pocl, same rule: median_speedup"])
    agree = ((both["H100: median_speedup"] > 1) == (both["pocl, same rule: median_speedup"] > 1)).mean()
    print(f"(optimization, stencil) with pairs on both devices: {len(both)}; the H100 and pocl (same rule) medians "
          f"on the same side of 1 in {agree:.0%}")
    if args.no_models:
        return
    from gpuperf.decisions.pairs import training_pairs

    entries = load_optimizations()
    training = training_pairs([entries[name] for name in OPTIMIZATIONS])
    predictions = held_out_signs(h100, training)
    print("\n== the advisor on the H100 pairs, each stencil held out: sign accuracy (constant predictor) ==")
    print("before: GPU pairs without the H100's; now: with the other stencils' H100 pairs; pocl: the pocl pairs")
    print(sign_table(predictions).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    medians = predictions.groupby("optimization")[["measured", "before", "now", "pocl"]].median()
    print("\nmedian measured and predicted speedups:\n" + medians.to_string(float_format=lambda v: f"{v:.3f}"))
    other = stencil_pairs(args.other_gpu)
    print(f"\n== {args.other_gpu}: the same pairs on another GPU, the advisor trained on every GPU pair ==")
    print(speedup_summary(other, ["optimization"]).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print("sign accuracy: h100_sign, the H100's measured pair; advisor (from the H100's pair); models, the advisor's "
          "models alone; constant (the training pairs' mean)")
    print(other_gpu_signs(h100, other, training).to_string(index=False, float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()
