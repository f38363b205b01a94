"""Exploring each stencil's variant space with a model trained on the other stencils (the LIFT paper).

Reads the measured stencil variants (``data/stencil_spaces_pocl.csv.gz``, written by
``benchmarks/stencil_space_campaign.py``), leaves each kernel out in turn and prints the evaluations
needed to reach 90/95/99 % of its best variant when evaluated in the order predicted by PCA (95 %) +
5-NN on the LIFT features, trained on the other kernels only; next to it, ranking by the same
transformation parameters' mean normalised performance on the other kernels (no model) and random
order's exact expectation (the mean over every random order) at 90, 95 and 99 %, and how often
10,000 seeded random orders of each kernel do as well as the model over all kernels (geometric mean
of the evaluations: a one-sided p-value). A second run adds loopy's per-launch counts to the
features; on a table with registers and occupancy (a GPU's), a third adds those.

    python benchmarks/bench_explore_kernels.py [--table data/stencil_spaces_pocl.csv.gz] [--across TABLE]
    python benchmarks/bench_explore_kernels.py --table stencil_spaces_h100
    python benchmarks/bench_explore_kernels.py --table stencil_spaces_h100 --machine-loads   # the LIFT run only

``--machine-loads`` takes ``global_loads_per_thread`` from the machine code (sm_90 SASS, where no load
sits in a loop: the source's count scaled to the load instructions; ``gpuperf.features.compiled``), which
on the H200's counters gives the load requests the compiler makes (28 of the 192 GPU variants change;
tried 2026-11-28, not adopted: mixed). LIFT features, evaluations to 90 / 95 / 99 %, source counts ->
machine code's: H100 1.44 / 2.85 / 5.30 -> 1.54 / 2.90 / 4.80, H200 1.25 / 1.86 / 3.56 -> 1.39 / 1.65 / 2.60.

On a GPU table (``--table stencil_spaces_h100``) it then ranks each stencil's variants with models
trained on the same stencils measured on another device (``--across``, default the pocl table): on
every stencil there, on the other stencils only and on the same stencil only, with the LIFT features
and with the five transformation parameters as features, and prints how well the two devices'
measured rankings of the configurations both measured agree.

Geometric means of evaluations to reach 90 % (LIFT features; model / same parameters, no model /
random order), by data file: the committed 100-cycle run 6.80 / 6.79 / 22.31 (worst kernel, gaussian_5x5,
51; with the launch totals 6.43, worst 44; 6.46 / 6.79 / 22.31, worst 45, before the stored features of
the prefetch variants were refreshed on 2026-11-28, data/README.md); before that refresh, the 25-cycle run
under load (``_25cycles``) 5.65 / 6.21 / 21.70 (46); one point after the other (``_unpaired``) 4.55 /
12.66 / 21.07.

Last, the searches ``gpuperf tune`` runs, refitted as they measure (3 seeds, stopped at 90 %):
with each other kernel's measured variants as one ``--train`` table, the transfer-guided search takes
8.87 (worst srad2, 45), no better than the static rankings on this data (7.73, worst 43, before a
fix: a kernel whose best variant the space lacks could never count as covered, so the search never
handed over to its model; on the bundled GPU spaces the fix changes nothing); the online search
takes 11.98 with random first picks and 4.70 / 6.30 / 5.59 when its first 3 / 5 / 10 picks follow
the model's ranking (``--start ranked`` uses 3, chosen on these same kernels).

On the H100 table (24 variants per stencil at 4096, where random order is already short: about half
a space's variants are within 10 % of its best for some stencils), leaving each stencil out, the LIFT
features' model needs 1.44 / 2.85 / 5.30 evaluations to reach 90 / 95 / 99 % (geometric means; random
order 3.02 / 6.34 / 10.60; random orders do as well with probability 0.017 / 0.037 / 0.077), worst
gaussian_5x5 (9 to 90 %, random 6.25); adding the launch totals 1.30 / 3.11 / 5.55, adding registers
and occupancy 1.47 / 2.74 / 5.27; the same parameters on the other stencils (no model) 3.27 to 90 %,
as the 24-variant draws share few configurations. Trained on pocl instead (across devices, LIFT
features): on every stencil 1.85 / 3.56 / 7.24 (p 0.139 / 0.135 / 0.313; gaussian_5x5 needs 17), on
the other stencils 1.53 / 2.97 / 4.69 (p 0.029 / 0.049 / 0.037), on the same stencil 1.76 / 3.28 /
8.76; the pocl and H100 normalised performance of the 21 (stencil, configuration) both measured
agree to a Spearman correlation of 0.10, and the models' predictions with the H100's to 0.12-0.31
(mean over stencils). So the CPU-trained models are not reliably better than random order on the
GPU: weakly at 90 %, not at 99 %. The searches: guided by the other stencils' tables 1.82, online
2.04 with random first picks, 1.30 with the model's first 3. (Figures as of 2026-11-28, after the
prefetch variants' stored features were refreshed; before, the LIFT model took 1.44 / 3.36 / 5.45.)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import gmean

from gpuperf.datasets import BUNDLED, load_dataset
from gpuperf.decisions.cross_kernel import (
    LIFT_FEATURES,
    TRAINED_ON,
    across_devices,
    leave_one_kernel_out,
    model_order,
    normalised_performance,
    program_columns,
    usable_features,
)
from gpuperf.decisions.exploration import make_explorer
from gpuperf.decisions.explorers import run_search
from gpuperf.decisions.search_metrics import evals_to
from gpuperf.decisions.space import space_from_frame, transfer_matrix

ROOT = Path(__file__).resolve().parents[1]
PARAMETERS = ("local_x", "local_y", "outputs_y", "prefetch", "unroll")
EXTRA = ("flops", "global_bytes", "local_bytes", "work_groups", "work_group_size")
GPU_EXTRA = ("registers_per_thread", "occupancy")
TRAINED_LABELS = {"all": "every kernel", "others": "the other kernels", "same": "the same kernel"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", default=str(ROOT / "data" / "stencil_spaces_pocl.csv.gz"))
    parser.add_argument("--across", default=None, help="Also rank TABLE's kernels with models trained on this "
                        "table of the same stencils measured on another device (default for a GPU table: the pocl one)")
    parser.add_argument("--machine-loads", action="store_true",
                        help="global_loads_per_thread from the machine code (LIFT features only, then stop)")
    args = parser.parse_args()
    table = load_table(args.table)
    if args.machine_loads:
        machine = table.assign(global_loads_per_thread=machine_loads_per_thread(table))
        print(f"{int((machine['global_loads_per_thread'] != table['global_loads_per_thread']).sum())} of "
              f"{len(table)} variants' global_loads_per_thread change")
        for label, data in (("source counts", table), ("machine code's loads", machine)):
            result = leave_one_kernel_out(data, features=LIFT_FEATURES, parameters=PARAMETERS)
            print(f"LIFT features, {label}: {summary(result)}; worst kernel {int(result['model_evals_to_90'].max())}")
        return
    pd.set_option("display.width", 250)
    ok = table["status"].eq("ok")
    print(f"{len(table)} variants of {table['kernel'].nunique()} kernels ({int(ok.sum())} ran)")
    feature_sets = [("LIFT features", LIFT_FEATURES), ("LIFT features + launch totals", (*LIFT_FEATURES, *EXTRA))]
    if all(c in table.columns for c in GPU_EXTRA):  # the GPU compiler's registers and the occupancy they allow
        feature_sets.append(("LIFT features + registers, occupancy", (*LIFT_FEATURES, *GPU_EXTRA)))
    for label, features in feature_sets:
        result = leave_one_kernel_out(table, features=features, parameters=PARAMETERS)
        print(f"\n== {label}: evaluations to reach a fraction of the best, each kernel left out ==")
        print(result.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
        print(f"geometric means: model {summary(result)}; parameters, no model "
              f"{gmean(result['parameters_evals_to_90']):.2f} to 90 %; worst kernel (model) "
              f"{int(result['model_evals_to_90'].max())}\n{chances(table, result)}")
    across = args.across or (None if is_pocl(table) else "stencil_spaces_pocl")
    if across is not None:
        across_section(load_table(across), table, across)
    searches = searches_on_other_kernels(table)
    print("\n== the searches gpuperf tune runs, refitted as they measure: evaluations to 90 % ==")
    print(searches.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    print("geometric means: " + ", ".join(f"{c} {gmean(searches[c].dropna()):.2f} (worst {searches[c].max():.0f})"
                                          for c in searches.columns if c != "kernel"))


def machine_loads_per_thread(table: pd.DataFrame, arch: str = "sm_90") -> list[float]:
    """Each variant's global loads per work-item scaled to its machine code's load instructions, where
    none sits in a loop (else as stored)."""
    from gpuperf.features.compiled import machine_per_source
    from gpuperf.features.counts import symbolic_counts
    from gpuperf.kernels.catalog import get_kernel

    values = []
    for _, row in table.iterrows():
        kernel = get_kernel(f"{row['kernel']}[{row['variant']}]")
        evaluated = symbolic_counts(kernel).values(kernel.resolve_sizes({"n": int(row["n"]), "m": int(row["m"])}))
        scales = machine_per_source(kernel, evaluated, arch)
        values.append(float(row["global_loads_per_thread"]) * (scales[0] if scales else 1.0))
    return values


def load_table(path: str) -> pd.DataFrame:
    """A measured variant table by path or bundled name (``stencil_spaces_h100``)."""
    return load_dataset(path) if path in BUNDLED else pd.read_csv(path)


def is_pocl(table: pd.DataFrame) -> bool:
    return table["device"].astype(str).str.startswith("opencl").all() and "occupancy" not in table.columns


def summary(result: pd.DataFrame) -> str:
    """Geometric means over kernels of the model's and random order's evaluations to 90/95/99 %."""
    return ", ".join(f"{gmean(result[f'model_evals_to_{p}']):.2f} to {p} % "
                     f"(random {gmean(result[f'random_evals_to_{p}']):.2f})" for p in (90, 95, 99))


def chances(test: pd.DataFrame, result: pd.DataFrame) -> str:
    """The line saying how often random order does as well as the model, at 90, 95 and 99 %."""
    return ("probability that random order's geometric mean is at most the model's (10,000 seeds): "
            + ", ".join(f"{chance(test, result, p / 100):.3f} at {p} %" for p in (90, 95, 99)))


def chance(test: pd.DataFrame, result: pd.DataFrame, fraction: float = 0.9, seeds: int = 10_000) -> float:
    """How often random orders of each kernel's variants (``seeds`` draws) need, as a geometric mean over
    the kernels, at most the evaluations the model's orders needed: a one-sided p-value."""
    column = f"model_evals_to_{round(fraction * 100)}"
    program = program_columns(test)
    scored = test.assign(performance=normalised_performance(test, program))
    logs, rng = np.zeros(seeds), np.random.default_rng(0)
    for _, part in scored.groupby(list(program), sort=True):
        performance = part["performance"].to_numpy()
        orders = np.argsort(rng.random((seeds, len(performance))), axis=1)  # one random order per row
        logs += np.log(np.argmax(performance[orders] >= fraction - 1e-12, axis=1) + 1)  # the best always reaches
    return float(np.mean(np.exp(logs / len(result)) <= gmean(result[column]) + 1e-9))


def across_section(train: pd.DataFrame, test: pd.DataFrame, where: str) -> None:
    """Rank ``test``'s kernels with models trained on the same stencils measured on another device."""
    device = lambda t: ", ".join(sorted(t["gpu"].astype(str).unique()))  # noqa: E731
    print(f"\n== across devices: {device(test)} variants ranked by models trained on {device(train)} ({where}) ==")
    agreement = shared_configurations(train, test)
    print(f"same kernel and configuration measured on both: {len(agreement)} pairs; Spearman correlation of their "
          f"normalised performance {agreement['train'].corr(agreement['test'], method='spearman'):.2f}")
    for label, features in (("LIFT features", LIFT_FEATURES), ("parameters as features", PARAMETERS)):
        for trained_on in TRAINED_ON:
            result = across_devices(train, test, features, trained_on, parameters=PARAMETERS)
            print(f"\n-- {label}, trained on {TRAINED_LABELS[trained_on]} in {where} --")
            print(result.drop(columns=[c for c in ("gpu", "device", "n", "m") if c in result])
                  .to_string(index=False, float_format=lambda v: f"{v:.2f}"))
            print(f"geometric means: model {summary(result)}; parameters, no model "
                  f"{gmean(result['parameters_evals_to_90']):.2f} to 90 %; worst kernel (model) "
                  f"{int(result['model_evals_to_90'].max())}; mean Spearman {result['spearman'].mean():.2f}\n"
                  f"{chances(test, result)}")


def shared_configurations(train: pd.DataFrame, test: pd.DataFrame) -> pd.DataFrame:
    """Each (kernel, configuration) both tables measured, with its normalised performance in each."""
    keys = ["kernel", *PARAMETERS]
    scored = [t.assign(performance=normalised_performance(t, program_columns(t)))[[*keys, "performance"]]
              for t in (train, test)]
    return scored[0].merge(scored[1], on=keys, suffixes=("_train", "_test")).rename(
        columns={"performance_train": "train", "performance_test": "test"})


RANKED_STARTS = (3, 5, 10)


def searches_on_other_kernels(table: pd.DataFrame, seeds: int = 3) -> pd.DataFrame:
    """Per kernel, evaluations to 90 % (mean over ``seeds``; the space's size + 1 when never reached)
    of the searches ``gpuperf tune`` runs: transfer-guided with the other kernels' variants as its
    tables, and online with random first picks or the first k of the model's ranking."""
    table = table[table["status"].eq("ok")].reset_index(drop=True)
    spaces = {kernel: space_from_frame(part, PARAMETERS, "time_s", kernel) for kernel, part in table.groupby("kernel")}
    scored = table.assign(performance=normalised_performance(table, ["kernel"]))
    features = usable_features(LIFT_FEATURES, scored)
    rows = []
    for kernel, space in spaces.items():
        own = scored["kernel"].eq(kernel)
        ranking = model_order(scored[~own], scored[own].reset_index(drop=True), features)
        # The other kernels' spaces that share a configuration with this one (the H100 table's draws
        # of 24 share few); without any, the transfer-guided search has nothing to go on.
        others = [other for name, other in spaces.items()
                  if name != kernel and np.isfinite(transfer_matrix(space, [other])).any()]
        searches = {"guided_by_tables": lambda seed: make_explorer(space, others, None, True, seed),
                    "online_random": lambda seed: make_explorer(space, (), None, True, seed)}
        for k in RANKED_STARTS:
            searches[f"online_ranked{k}"] = lambda seed, k=k: make_explorer(space, (), None, True, seed, k, ranking)
        row = {"kernel": kernel}
        if not others:
            del searches["guided_by_tables"]
        for label, build in searches.items():
            counts = []
            for seed in range(seeds):
                order = run_search(build(seed), space.times, len(space), 0.9)
                counts.append(evals_to(space.performance[order], 0.9) or len(space) + 1)
            row[label] = float(np.mean(counts))
        rows.append(row)
    return pd.DataFrame(rows)


if __name__ == "__main__":
    main()
