"""The Amaris et al. reproduction on the bundled Rodinia nvprof table, and the BSP model on the
matrix/vector kernels, as one report (Markdown, HTML, JSON metrics, plots).

``reproduce_rodinia(out)`` runs it, ``reproduce_rodinia(out, QUICK_SCENARIOS, QUICK_MODELS)`` its quick set
(what ``gpuperf reproduce rodinia`` runs without ``--full``); that command and ``benchmarks/bench_rodinia.py``
call it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd


from gpuperf.datasets import load_dataset
from gpuperf.errors import name_list
from gpuperf.evaluation.bsp_matvec import calibrate_and_predict, compare_with_paper_bsp, matvec_table
from gpuperf.evaluation.elsewhere import (
    hindsight_scaled_mape,
    macro_mape_by_pair,
    missing_kernels,
    one_launch_calibration,
    profiled_elsewhere,
)
from gpuperf.evaluation.published import (
    PUBLISHED_MODELS,
    check_kernel_mapping,
    published_per_kernel,
    published_predictions,
)
from gpuperf.evaluation.report import text_table, write_report
from gpuperf.evaluation.reproduce import (
    BASELINES,
    BETTER_MODELS,
    PAPER_MODELS,
    PRIMARY_RUN,
    PROTOCOLS,
    REFERENCE_SCENARIOS,
    SCENARIOS,
    build_model,
    compare_with_paper,
    rodinia_table,
    run_rodinia,
    scenario,
    selected_features,
    target_check,
)
from gpuperf.evaluation.tables import (
    LAUNCH_COLUMNS,
    counted_clocks,
    counter_columns,
    known_columns,
    profiled_f64_peaks,
)
from gpuperf.evaluation.transfer import REFERENCE_KEY
from gpuperf.models.selection import mutual_information_ranking


# The quick set: the analytical model's features and gpuperf's own (launch, GPU descriptors and
# resource times, which see f64 work at each GPU's f64 peak), each with gradient-boosted trees and
# a random forest, the same-capability scaled reference, and their nested selection.
QUICK_SCENARIOS, QUICK_MODELS = ("bsp", "gpuperf", "same_capability"), ("gbt", "random_forest")
# The run that predicts a GPU from launches profiled on another (the paper's random forest on the
# analytical model's inputs).
ELSEWHERE_SCENARIO, ELSEWHERE_MODEL = "bsp", "random_forest"


# Not a prediction: the best single profiling GPU's time times the per-kernel factor that fits the
# predicted GPU best, both chosen knowing its times.
HINDSIGHT = "best profiling GPU's time x per-kernel factor, in hindsight (a bound)"


ONE_LAUNCH = ("Calibrated by one launch per kernel on the predicted GPU (as BSP's lambda): the other GPUs' "
              "times of the same launch scaled by their ratio on it, against leave one GPU out and the paper")


def one_launch_table(targets: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """Per GPU: :func:`~gpuperf.evaluation.elsewhere.one_launch_calibration`'s per-kernel MAPE macro
    over kernels (all, and those the paper published for the GPU), beside ``targets``' leave one GPU
    out figure and the paper's best."""
    cells = one_launch_calibration(load_dataset("rodinia_nvprof"), REFERENCE_KEY)
    paper = published_per_kernel(published)
    rows = []
    for gpu, part in cells.groupby("gpu"):
        shared = part["kernel"].isin(paper.loc[paper["gpu"] == gpu, "kernel"])
        rows.append({"gpu": gpu, "one_launch": part["mape"].mean(), "kernels": len(part),
                     "one_launch_on_shared": part.loc[shared, "mape"].mean() if shared.any() else np.nan})
    table = pd.DataFrame(rows).set_index("gpu")
    table[f"{PRIMARY_RUN} (no launch on it)"] = targets["ours"].reindex(table.index)
    table["paper_best"] = targets["paper_best"].reindex(table.index) if "paper_best" in targets else np.nan
    table["meets_half"] = (table["one_launch_on_shared"] <= 0.5 * table["paper_best"]).where(
        table["paper_best"].notna())
    return table


# Per predicted GPU: how many profiling GPUs its means and bound are over, and those left out.
COVERING = "profiling GPUs (all its kernels)"
LEFT_OUT = "left out (kernels they lack)"


def _complete_pairs(table: pd.DataFrame, missing: pd.Series) -> pd.DataFrame:
    """``table`` (predicted x profiling GPU) with the pairs that lack a kernel blanked."""
    complete = missing.map(len).eq(0).unstack("source_gpu", fill_value=False)
    return table.where(complete.reindex(index=table.index, columns=table.columns, fill_value=False))


def _left_out(missing: pd.Series) -> pd.Series:
    """Per predicted GPU: the profiling GPUs that lack one of its kernels, each with those kernels."""
    lacking = missing.loc[missing.map(len).gt(0)]
    text = {target: "; ".join(f"{source} (no {', '.join(kernels)})" for (_, source), kernels in part.items())
            for target, part in lacking.groupby(level="target_gpu")}
    return pd.Series(text, dtype=object).reindex(missing.index.unique("target_gpu"), fill_value="")


def elsewhere_tables(table: pd.DataFrame, own_profile: pd.Series | None,
                     max_train_rows: int = 500) -> dict[str, pd.DataFrame]:
    """Each GPU predicted from every other GPU's profile of the same launches (see
    :mod:`gpuperf.evaluation.elsewhere`; ``table``: :func:`rodinia_table`): the pair table, and per
    predicted GPU the mean over profiling GPUs next to the two baselines, (``own_profile``) leave
    one GPU out and the hindsight figure (``HINDSIGHT``). The means and the bound are over the
    profiling GPUs that ran every kernel the predicted GPU has (``COVERING`` counts them; ``LEFT_OUT``
    names the others): a pair lacking a kernel averages over fewer kernels than leave one GPU out."""
    raw = load_dataset("rodinia_nvprof")
    chosen = scenario(ELSEWHERE_SCENARIO, table)
    pairs = profiled_elsewhere(build_model(ELSEWHERE_MODEL, chosen), raw, rodinia_table, chosen.features,
                               REFERENCE_KEY, max_train_rows=max_train_rows)
    missing = missing_kernels(pairs)
    run = f"{ELSEWHERE_SCENARIO}/{ELSEWHERE_MODEL}"
    by_pair = macro_mape_by_pair(pairs).rename_axis(index="predicted GPU", columns="profiled GPU")
    source_time, peak_scaled = (macro_mape_by_pair(pairs, column) for column in ("source_time_s", "peak_scaled"))
    summary = pd.DataFrame({
        f"{run}, profiled elsewhere": _complete_pairs(by_pair, missing).mean(axis=1),
        "profiling GPU's time": _complete_pairs(source_time, missing).mean(axis=1),
        "profiling GPU's time x peak FP32 ratio": _complete_pairs(peak_scaled, missing).mean(axis=1),
    })
    if own_profile is not None:
        summary[f"{run}, own profile (leave one GPU out)"] = own_profile
    summary[HINDSIGHT] = _complete_pairs(hindsight_scaled_mape(pairs), missing).min(axis=1)
    summary[COVERING] = missing.map(len).eq(0).groupby(level="target_gpu").sum()
    summary[LEFT_OUT] = _left_out(missing)
    summary.index.name = "predicted GPU"
    return {
        f"Profiled on another GPU: {run}, per-kernel MAPE (rows: GPU predicted, columns: GPU profiled)": by_pair,
        "Profiled on another GPU: mean over profiling GPUs, against baselines": summary,
    }


def _show(echo: Callable[[str], None], title: str, table: pd.DataFrame) -> None:
    """``table`` under its title, its numbers as the report prints them."""
    echo(f"\n== {title}")
    echo(text_table(table))


def reproduce_rodinia(
    out: str | Path,
    scenarios: Sequence[str] = SCENARIOS,
    models: Sequence[str] = PAPER_MODELS + BETTER_MODELS,
    protocols: Sequence[str] = PROTOCOLS,
    max_train_rows: int = 500,
    echo: Callable[[str], None] = print,
    inner_max_train_rows: int = 40,
    inner_aggregate: str = "mean",
) -> dict[str, Path]:
    """Run the reproduction, print its tables through ``echo`` and write the report into ``out``.

    The primary run (``nested/select``) picks, per held-out group, among the requested runs by an
    inner protocol on the training rows only (``inner_max_train_rows`` per kernel and GPU)."""
    scenarios, models, protocols = (name_list(scenarios, "scenarios", "reproduce_rodinia"),
                                    name_list(models, "models", "reproduce_rodinia"),
                                    name_list(protocols, "protocols", "reproduce_rodinia"))
    table = rodinia_table()
    published = published_predictions()
    _show(echo, "Kernel codes of the published predictions vs bundled kernels (median measured time, us)",
         check_kernel_mapping(table, published).set_index(["gpu", "kernel_code"]))

    start = time.perf_counter()
    result = run_rodinia(table, scenarios, models, protocols, max_train_rows,
                         progress=lambda key: echo(f"  running {key}"), inner_max_train_rows=inner_max_train_rows,
                         inner_aggregate=inner_aggregate)
    echo(f"\n{len(result.evaluations)} runs in {time.perf_counter() - start:.0f} s")

    tables: dict[str, pd.DataFrame] = {
        "Clock check: MHz implied by each GPU's counters (elapsed SM cycles / time / SMs) vs its descriptors":
            counted_clocks(table),
        "FP64 peak check: GFLOP/s nvprof rated each GPU's launches against (f64 flops / time / flop efficiency)"
        " vs its descriptors at that clock": profiled_f64_peaks(table),
    }
    if "gpu" in protocols:
        tables["Leave one GPU out: per-kernel MAPE, macro over kernels"] = result.macro("gpu")
    if "architecture" in protocols:
        tables["Leave one architecture out (train Kepler, test Maxwell and back): macro MAPE"] = result.macro(
            "architecture")
    if "kernel" in protocols:
        kernel_out = {key: e.metrics_by("kernel")["mape"] for key, e in result.evaluations.items()
                      if key.endswith("/kernel")}
        tables["Leave one kernel out: MAPE per held-out kernel"] = pd.DataFrame(kernel_out).T
    for protocol, choices in result.choices.items():
        tables[f"{PRIMARY_RUN} ({protocol}): option chosen per held-out group by the inner protocol"] = choices
    if "gpu" in protocols:
        paper_like = [f"{s}/{m}" for s in scenarios for m in models if m in PUBLISHED_MODELS.values()]
        runs = sorted({PRIMARY_RUN, *paper_like, *BASELINES} & {k.rsplit("/", 1)[0] for k in result.evaluations})
        tables["Per kernel and GPU vs the paper (standard MAPE, leave one GPU out)"] = compare_with_paper(
            result, runs, published)
        if f"{PRIMARY_RUN}/gpu" in result.evaluations:
            targets = target_check(result, PRIMARY_RUN, published)
            tables[f"Targets for {PRIMARY_RUN}"] = targets
            tables[ONE_LAUNCH] = one_launch_table(targets, published)
        own = result.macro("gpu")
        run = f"{ELSEWHERE_SCENARIO}/{ELSEWHERE_MODEL}"
        tables |= elsewhere_tables(table, own.loc[run] if run in own.index else None, max_train_rows)

    matvec = matvec_table()
    for label, per_gpu in (("lambda per kernel and architecture", False), ("lambda per kernel and GPU", True)):
        compared = compare_with_paper_bsp(calibrate_and_predict(matvec, per_gpu=per_gpu))
        tables[f"BSP on matrix/vector kernels, {label}: ours vs paper's bsp_pred_s"] = compared
        tables[f"BSP ({label}): mean MAPE per GPU"] = compared.groupby(level="gpu")[["ours_mape", "paper_mape"]].mean()

    for title, shown in tables.items():
        _show(echo, title, shown)

    candidates = known_columns(table, [*LAUNCH_COLUMNS, *counter_columns(table)])
    sample = table.sample(n=min(len(table), 5000), random_state=0)
    ranking = mutual_information_ranking(sample[candidates], np.log2(sample["time_s"]), bins=10)
    selector, names = selected_features(table, k=10)
    kept = [names[i] for i in selector.selected_]
    echo(f"\nSpearman-cluster selection (all kernels, k=10): {', '.join(kept)}")
    plotted = [f"{PRIMARY_RUN}/{p}" for p in protocols]
    complete = set(SCENARIOS) <= set(scenarios) and set(PAPER_MODELS + BETTER_MODELS) <= set(models)
    extent = "every scenario and model" if complete else "a subset; --full runs every scenario and model"
    paths = write_report(
        Path(out),
        "gpuperf: Amaris et al. reproduced on the Rodinia nvprof table",
        evaluations={k: e for k, e in result.evaluations.items() if k in plotted},
        tables=tables,
        notes=[
            f"Runs: scenarios {', '.join(scenarios)}; models {', '.join(models)}; protocols "
            f"{', '.join(protocols)} ({extent}). Beside them, the baseline roofline/calibrated: each launch's "
            "roofline bound on its GPU (flops at the peaks, DRAM bytes at the bandwidth) over an efficiency "
            "fitted per kernel on the training rows; it is never a candidate of nested selection.",
            "Per-kernel MAPE = mean |measured - predicted| / measured per kernel and GPU; macro = mean over kernels. "
            "The \"Evaluation\" sections' per-group figures and overall error figures pool rows instead "
            "(overall rank figures are the mean over held-out groups), so lud_perimeter, with most of the rows, "
            "dominates them; the macro tables are the ones compared with the paper.",
            "Bundled rows are medians of identical launches; the paper's samples are single invocations.",
            f"Targets for {PRIMARY_RUN}: ours = its per-kernel MAPE macro over the kernels (leave one GPU out); "
            "ours_on_shared = the same over the kernels the paper published for that GPU; paper_best = the "
            "paper's best model's macro over those kernels; meets_half = ours_on_shared at most half of "
            "paper_best; meets_ceiling = ours at most 0.25; the cross_architecture columns are the same run "
            "trained on the other architecture only. Blank: the paper published nothing for that GPU.",
            "Profiled on another GPU: each held-out GPU's launches described by another GPU's profile of the"
            " same launch, with the held-out GPU's descriptor (a scheduler's view: no counters from the GPU"
            " predicted); the model is fitted on the other GPUs' rows as in leave one GPU out. The peak FP32"
            " ratio is of base-clock peaks, the clocks the GPUs ran at and the features take. The hindsight"
            " column fits one factor per kernel to the predicted GPU's own times: a bound, not a prediction."
            " The means and the bound are over the profiling GPUs that ran every kernel the predicted GPU has"
            f" (\"{COVERING}\"); the pair table also shows the others (\"{LEFT_OUT}\"), whose figures average"
            " fewer kernels (the Maxwell GPUs never ran lud_perimeter, the hardest kernel).",
            "Calibrated by one launch per kernel: another protocol than leave one GPU out, since one launch of each"
            " kernel is timed on the predicted GPU (each launch in turn, the figures averaged over them; it is not"
            " scored, predicted exactly), as the"
            " BSP model's lambda is calibrated on one input size; every other launch is the geometric mean over the"
            " other GPUs of their time of it times their ratio on the calibration launch. No counters and no model:"
            " the other GPUs must have run the same launches.",
            f"Primary run: {PRIMARY_RUN}, chosen per held-out group by nested cross-validation on the training"
            f" rows only, among the runs above (not the roofline baseline) and their votes: vote(a, b, ...) is"
            f" the geometric mean of those runs' predictions, the inner protocol's top 2 or 3; inner_score is"
            f" the chosen option's per-kernel MAPE, macro-averaged, on the inner protocol. The feature ranking (normalised mutual information with log2"
            f" time) and the clustering below describe the whole table, not what any run used; Spearman-cluster"
            f" selection on all kernels (k=10) keeps: {', '.join(kept)} (the select scenarios reselect inside"
            f" each fold, on training rows only).",
            *(["transfer* runs: the same launch's mean log2 time on the training GPUs (all of them, or for"
               " transfer_near* the two nearest by descriptors; recomputed in every fold from training rows"
               " only) joins gpuperf's / bsp's features; models learn the ratio to it. scaling runs scale each"
               " launch's training-GPU times log-linearly along GPU descriptors. same_capability runs take the"
               " geometric mean of the launch's times on the training GPUs of the held-out GPU's compute"
               " capability, scaled by the law (clock, waves, bandwidth, ...) an inner leave one GPU out chose."
               " Not run when a kernel is held"
               " out (no reference exists)."]
              if set(scenarios) & set(REFERENCE_SCENARIOS) else []),
        ],
        feature_ranking=ranking,
        dendrogram_of=(selector.linkage_, [names[i] for i in selector.candidates_], 10),
    )
    return paths
