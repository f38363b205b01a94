"""Reports of the three decisions, each a folder with ``report.md``, ``report.html``, ``metrics.json``
and PNG plots (written by :func:`gpuperf.evaluation.report.write_report`):

- :func:`exploration_report`: evaluations to reach 90/95/99 % of the best per explored space, and
  the curves of best-found performance against evaluations (the search, plain transfer, random
  order's exact expectation);
- :func:`advisor_report`: sign accuracy per optimization and target, and strip charts of the
  measured speedups and of the actual/predicted speedup ratios (Taheri, Qasem & Burtscher);
- :func:`geometry_report`: per policy, the geometric-mean speedup over LLVM's default and the share
  of choices within 10 % of the best, and a strip chart of the per-choice speedups;
- :func:`tuning_report`: a real tuning run's trials and its best-so-far time against trials.

The ``*_study`` functions run each decision on the bundled data and write its report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from gpuperf.decisions.exploration import ExploreResult
from gpuperf.decisions.search_metrics import FRACTIONS, best_found_curve, evals_to, random_expected_curve
from gpuperf.decisions.tune import METHOD_COLUMN, SEED_COLUMN, TuneResult
from gpuperf.errors import GpuperfError, named_values, unknown_name_error
from gpuperf.evaluation.figures import Figure
from gpuperf.evaluation.report import save_figure, write_report

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from gpuperf.decisions.geometry import DeviceDescriptor

Echo = Callable[[str], None]
CURVE_LIMIT = 1000  # evaluations drawn at most (plain transfer may need thousands to reach the best)


def exploration_curves(result: ExploreResult, length: int | None = None) -> dict[str, np.ndarray]:
    """Best found (normalised) after each evaluation: the search and plain transfer over the
    evaluations they made (at most ``length``), random order's expectation over 1..``length``
    (default: the longest of the orders, the budget and random order's 90th percentile to 90 %)."""
    length = min(length or _horizon(result), CURVE_LIMIT)
    curves = {result.method: best_found_curve(result.performance[result.order[:length]])}
    if result.transfer_order is not None:
        curves["plain transfer"] = best_found_curve(result.performance[result.transfer_order[:length]])
    curves[RANDOM_CURVE] = random_expected_curve(result.performance, np.arange(1, length + 1))
    return curves


# random order's expected best found after k evaluations: where it crosses 90 % is not random order's expected
# evaluations to reach 90 % (random_expected_evals_to_90), the mean of a distribution with a long tail
RANDOM_CURVE = "random (expected best found)"


def _horizon(result: ExploreResult) -> int:
    """Evaluations a plot of ``result`` should span (at most the space's size)."""
    spans = [len(result.order), len(result.transfer_order or ()), result.budget or 0,
             int(np.ceil(result.baselines.get("random_evals_to_90_p90") or 0))]
    return max(1, min(max(spans), len(result.performance)))


SHORT_HORIZON = 10  # evaluations up to which a curve's axis labels each one


def step_points(curve: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A best-found curve as points of a steps-post line: each level holds from its evaluation to
    the next, the last one up to one step on (else it shows only as a vertical rise at the end)."""
    steps = np.arange(1, len(curve) + 2)
    return (steps, np.append(curve, curve[-1:])) if len(curve) else (steps[:0], curve)


def plot_curves(cases: Mapping[str, ExploreResult], path: Path, columns: int = 4) -> Path:
    """One panel per space: best found against evaluations (log x axis, one range for every panel);
    a search's line ends at its last evaluation, marked with a dot, and is drawn over the baselines'."""
    rows = -(-len(cases) // columns)
    width = min(columns, len(cases))
    fig = Figure(figsize=(max(5.0, 3.4 * width), max(3.6, 2.8 * rows)))
    horizon = min(max(_horizon(result) for result in cases.values()), CURVE_LIMIT)
    for position, (label, result) in enumerate(cases.items(), 1):
        ax = fig.add_subplot(rows, width, position)
        for name, curve in exploration_curves(result, horizon).items():
            steps = np.arange(1, len(curve) + 1)
            layer = 3 if name == result.method else 2  # where the search follows a baseline, it stays in sight
            (line,) = ax.plot(*step_points(curve), label=name, drawstyle="steps-post", zorder=layer)
            if name != RANDOM_CURVE and len(curve):
                ax.plot(steps[-1], curve[-1], "o", color=line.get_color(), markersize=3, zorder=layer)
        ax.axhline(0.9, color="grey", linewidth=0.6, linestyle=":", label="90 % of the best")
        ax.set_xscale("log")
        ax.set_xlim(1, max(horizon, 1) + 1)
        if horizon <= SHORT_HORIZON:  # every evaluation labelled: 1, 2 and 5 alone would leave 3 and 4 bare
            ax.set_xticks(range(1, horizon + 2), [str(step) for step in range(1, horizon + 2)])
            ax.minorticks_off()
        else:
            plain_log_ticks(ax, between=False)  # evaluations are whole numbers
        ax.set_ylim(0, 1.02)
        ax.set_title(label, fontsize=8)
        ax.set_xlabel("evaluations", fontsize=7)
        ax.set_ylabel("best time / best found so far", fontsize=7)
        ax.tick_params(labelsize=6)
    fig.axes[0].legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    save_figure(fig, path, dpi=100, bbox_inches="tight")
    return path


def time_unit(seconds: float) -> tuple[str, float]:
    """The unit (s, ms, us) in which ``seconds`` reads as a number of at least 1, and its scale."""
    for unit, scale in (("s", 1.0), ("ms", 1e3)):
        if seconds >= 1.0 / scale:
            return unit, scale
    return "us", 1e6


def three_digits(value: float) -> str:
    """``value`` with three significant digits, trailing zeros kept (50.0) and no bare point (222, not 222.)."""
    return f"{value:#.3g}".rstrip(".")


def plain_log_ticks(ax: Axes, axis: str = "x", between: bool = True) -> None:
    """Label a log axis at 1, 2 and 5 times each power of ten, in plain numbers (matplotlib's minor
    labels overlap, and its major ones alone leave a short range with one label); with ``between``,
    a range of less than a factor 5 (the data drawn so far) gets labels between those too (0.8,
    1.25, 1.5, ...)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    target = ax.xaxis if axis == "x" else ax.yaxis
    low, high = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
    short = between and low > 0 and high / low < 5.0
    subs = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0) if short else (1.0, 2.0, 5.0)
    target.set_major_locator(LogLocator(base=10, subs=subs))
    target.set_minor_formatter(NullFormatter())
    target.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))


def plot_strips(values: Mapping[str, np.ndarray], path: Path, xlabel: str, title: str, seed: int = 0,
                geometric_mean: bool = False) -> Path:
    """A strip chart: one row of jittered points per category, log x axis, a line at 1, a bar at each
    row's median (its geometric mean where the report's tables give that)."""
    rng = np.random.default_rng(seed)
    names = list(values)
    fig = Figure(figsize=(7.5, 0.45 * len(names) + 1.2))
    ax = fig.add_subplot(1, 1, 1)
    for row, name in enumerate(names):
        points = np.asarray(values[name], dtype=float)
        points = points[np.isfinite(points) & (points > 0)]
        size, alpha = strip_marker(len(points))
        ax.scatter(points, row + rng.uniform(-0.25, 0.25, len(points)), s=size, alpha=alpha)
        if len(points):
            centre = float(np.exp(np.mean(np.log(points)))) if geometric_mean else float(np.median(points))
            ax.plot([centre] * 2, [row - 0.35, row + 0.35], color="black", linewidth=1.2)
    ax.axvline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xscale("log")
    plain_log_ticks(ax)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=7)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    save_figure(fig, path, dpi=100)
    return path


def strip_marker(count: int) -> tuple[float, float]:
    """Marker size and opacity for a strip of ``count`` points: small and see-through where thousands
    overlap, large and solid where a handful would otherwise vanish."""
    return (4.0, 0.35) if count > 200 else (16.0, 0.8) if count <= 30 else (8.0, 0.6)


def exploration_report(folder: str | Path, cases: Mapping[str, ExploreResult],
                       title: str = "Exploration", notes: Sequence[str] = (),
                       tables: Mapping[str, pd.DataFrame] | None = None,
                       metrics: Mapping | None = None) -> dict[str, Path]:
    """Evaluations to 90/95/99 % per space (``cases``: label -> result), plain transfer's, and the
    curves; ``notes`` come first (what was explored, with what); ``tables`` follow the first table;
    ``metrics`` join the table in ``metrics.json``."""
    if not cases:
        raise GpuperfError("an exploration report needs at least one explored space")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for label, result in cases.items():
        row: dict[str, object] = {"space": label, "configurations": len(result.performance)}
        for fraction in FRACTIONS:
            row[f"evals_to_{round(fraction * 100)}"] = result.evals(fraction)
        if result.transfer_order is not None:
            row["transfer_evals_to_90"] = evals_to(result.performance[result.transfer_order], 0.9)
        for key in ("random_expected_evals_to_90", "random_expected_evals_to_90_within_budget", "random_evals_to_90",
                    "random_evals_to_90_p10", "random_evals_to_90_p90"):
            if key in result.baselines:
                row[key] = result.baselines[key]
        rows.append(row)
    table = pd.DataFrame(rows).set_index("space")
    image = plot_curves(cases, folder / "exploration_curves.png")
    methods = ", ".join(sorted({result.method for result in cases.values()}))
    budgets = sorted({result.budget for result in cases.values() if getattr(result, "budget", None)})
    notes = [*notes, f"Method: {methods}" + (f", at most {', '.join(map(str, budgets))} evaluations" if budgets else "")
             + ". Evaluations counted until the first configuration at or above each fraction of the space's "
             "best; blank: not reached within that budget. "
             + ("Plain transfer (the configurations in order of their mean normalised performance on the other "
                "GPUs, no model) is followed until it reaches the best, with no budget. "
                if any(result.transfer_order is not None for result in cases.values()) else "")
             + "random_expected_evals_to_90: random order's exact expectation, with no budget; "
             "random_expected_evals_to_90_within_budget: the same scored as the search is, a miss within the budget "
             "counting budget + 1; random_evals_to_90: "
             "the mean over seeded random orders, with the 10th and 90th percentiles of the exact distribution. In "
             "the plot, \"best time / best found so far\" is the best time divided by the best time found so far; "
             "a dot ends each search where it stopped (at the best or its budget); the random curve is the expected "
             "best found after each number of evaluations, whose 90 % crossing is not random_expected_evals_to_90 "
             "(an expected number of evaluations, which a few long random runs raise); et = extra trees, gp = "
             "Gaussian process."]
    return write_report(folder, title, tables={"Evaluations to reach a fraction of the best": table, **(tables or {})},
                        notes=notes, metrics=metrics,
                        plots=[("Best found against evaluations", "The dotted line marks 90 % of the best.", image)])


def tuning_report(folder: str | Path, result: TuneResult, default_time: float | None = None) -> dict[str, Path]:
    """A tuning run's trials in order and its best-so-far time against trials (log y axis), next
    to the space's default variant's time where it was measured (``default_time``)."""
    from matplotlib.ticker import MaxNLocator  # matplotlib itself comes through gpuperf.evaluation.figures

    if not result.trials:
        raise GpuperfError("a tuning report needs at least one trial")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    trials = result.table()
    same = ["kernel", "device", "variant", *result.sizes, METHOD_COLUMN, SEED_COLUMN]  # the same on every row
    trials = trials.drop(columns=[c for c in same if c in trials.columns])
    trials.index = pd.RangeIndex(1, len(trials) + 1, name="trial")
    times = trials["time_s"].astype(float).to_numpy()
    best_so_far = np.fmin.accumulate(np.where(np.isfinite(times), times, np.nan))
    unit, scale = time_unit(np.nanmedian(times) if np.isfinite(times).any() else 1.0)
    fig = Figure(figsize=(6.5, 3.4))
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(trials.index, times * scale, "o", color="grey", markersize=3, label="trial")
    ax.plot(trials.index, best_so_far * scale, drawstyle="steps-post", label="best so far")
    if default_time is not None:
        ax.axhline(default_time * scale, color="black", linewidth=0.8, linestyle=":", label="default variant")
    ax.set_yscale("log")
    plain_log_ticks(ax, "y")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("trial")
    ax.set_ylabel(f"time ({unit})")
    where = result.device if result.gpu is None else f"{result.device} ({result.gpu})"
    ax.set_title(f"Tuning {result.space} on {where}: best so far against trials", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    image = folder / "tuning_curve.png"
    save_figure(fig, image, dpi=100, bbox_inches="tight")
    best = result.best()
    summary = {"space": result.space, "sizes": result.sizes, "device": result.device, "gpu": result.gpu,
               "method": result.method, "trials": len(result.trials),
               "failed": sum(t.status != "ok" for t in result.trials),
               "best_time_s": None if best is None else best.time_s,
               "best": None if best is None else best.config, "default_time_s": default_time}
    notes = [f"{result.space} at {named_values(result.sizes)} on {where}; method: {result.method}."]
    if best is not None and default_time is not None:
        unit, scale = time_unit(min(best.time_s, default_time))
        if default_time == best.time_s:  # the default's own trial (tune passes it where it was tried)
            notes.append(f"Best {named_values(best.config)}: the default variant ({three_digits(best.time_s * scale)} {unit}).")
        elif default_time < best.time_s:  # the default, timed apart, beats every trial
            notes.append(f"The default variant ({three_digits(default_time * scale)} {unit}, not among the trials) "
                         f"is faster than every trial: the best, {named_values(best.config)}, takes "
                         f"{best.time_s / default_time:.2f}x its time ({three_digits(best.time_s * scale)} {unit}); "
                         "keep the default.")
        else:
            notes.append(f"Best {named_values(best.config)}: {default_time / best.time_s:.2f}x as fast as the default variant "
                         f"({three_digits(best.time_s * scale)} {unit} against "
                         f"{three_digits(default_time * scale)} {unit}).")
    return write_report(folder, f"Tuning {result.space}", tables={"Trials in order": trials}, notes=notes,
                        metrics={"tuning": summary},
                        plots=[("Best so far against trials", "Times on a log scale.", image)])


def advisor_report(folder: str | Path, results: pd.DataFrame, title: str = "Optimization advisor",
                   notes: Sequence[str] = ()) -> dict[str, Path]:
    """Sign accuracy per optimization and target, and strip charts of measured and actual/predicted speedups.

    ``results``: :func:`gpuperf.decisions.advise_eval.evaluate`'s rows (several splits may be concatenated)."""
    from gpuperf.decisions.advise_eval import CONFIDENT, NOISE_BAND, summarise

    if results.empty:
        raise GpuperfError("an advisor report needs at least one evaluated pair")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    summary_columns = ["pairs", "sign_accuracy", "sign_accuracy_constant", "clear_share", "sign_accuracy_clear",
                       "confident_share", "sign_accuracy_confident", "median_ratio", "ratio_within_0.8_1.25",
                       "log2_mae", "log2_mae_constant", "elsewhere_share", "sign_accuracy_models"]
    overall = summarise(results, ["split", "target"]).set_index(["split", "target"])
    detail = summarise(results, ["split", "target", "optimization"]).set_index(["split", "target", "optimization"])
    labels = results["optimization"] + " (" + results["target"] + ", " + results["split"] + ")"
    measured = {name: part["measured"].to_numpy() for name, part in results.groupby(labels, sort=True)}
    ratios = {name: (part["measured"] / part["predicted"]).to_numpy() for name, part in results.groupby(labels, sort=True)}
    plots = [
        ("Measured speedups", "Each point a held-out pair; the bar marks the median.",
         plot_strips(measured, folder / "measured_speedups.png",
                     "measured speedup: time before / time after (> 1: faster)",
                     "Measured speedup of each optimization")),
        ("Actual / predicted speedup", "1 is a perfect prediction; the bar marks the median.",
         plot_strips(ratios, folder / "speedup_ratios.png", "actual / predicted speedup",
                     "Actual over predicted speedup")),
    ]
    tables = {"Overall": overall[[c for c in summary_columns if c in overall]],
              "Per optimization": detail[[c for c in summary_columns if c in detail]]}
    return write_report(folder, title, tables=tables, plots=plots,
                        notes=[
                            "Speedup = time before / time after the optimization (> 1: faster). Targets: gpu = "
                            "pairs measured on GPUs (published data); device = pairs measured by gpuperf on a "
                            "local device (the bundled ones on pocl's CPU OpenCL device).",
                            "sign_accuracy: predicted and measured speedup on the same side of 1; "
                            "sign_accuracy_constant: the same for a constant prediction, the training pairs' "
                            "geometric-mean speedup (where every held-out pair is a speedup, it scores 1 too); "
                            f"clear_share / sign_accuracy_clear: the pairs whose measured speedup is outside "
                            f"1/{NOISE_BAND:g}..{NOISE_BAND:g} (beyond timing noise) and the accuracy on them; "
                            f"confident_share / sign_accuracy_confident: the pairs predicted with calibrated "
                            f"confidence >= {CONFIDENT:g} and the accuracy on them; median_ratio and "
                            "ratio_within_0.8_1.25: actual / predicted speedup; log2_mae: mean |log2(actual / "
                            "predicted)| (and the constant's); elsewhere_share: the pairs predicted from the same "
                            "pair measured on other GPUs (split gpus) instead of by the models, whose own sign "
                            "accuracy is sign_accuracy_models.",
                            *notes,
                        ])


def policy_summary(picks: Mapping[str, pd.DataFrame], policies: Sequence[str]) -> pd.DataFrame:
    """One row per policy over all choices: speedup over LLVM, share within 10 % of the best, usual threads."""
    from gpuperf.decisions.geometry_eval import summarise

    return pd.DataFrame(summarise(pd.concat(list(picks.values()), ignore_index=True), policies)).T.rename_axis("policy")


def geometry_report(folder: str | Path, picks: Mapping[str, pd.DataFrame], policies: Sequence[str],
                    title: str = "Launch geometry", notes: Sequence[str] = (),
                    costs: pd.DataFrame | None = None) -> dict[str, Path]:
    """Per policy: speedup over LLVM's default and share within 10 % of the best, and a strip chart;
    with ``costs`` (:func:`gpuperf.decisions.geometry_cost.cost_table`), each policy's cost per call.

    ``picks``: per (kernel, GPU) label, :func:`gpuperf.decisions.geometry_eval.choices`'s frame."""
    from gpuperf.decisions.geometry_eval import summarise

    if not picks:
        raise GpuperfError("a geometry report needs at least one choice table")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    combined = pd.concat(list(picks.values()), ignore_index=True)
    present = [p for p in policies if p in combined.columns]
    overall = policy_summary(picks, present)
    per_table = pd.DataFrame({
        label: {p: figures["speedup_vs_llvm"] for p, figures in summarise(frame, present).items()}
        for label, frame in picks.items()
    }).T.rename_axis("table")
    judged = combined[combined["llvm"].notna()]
    strips = {p: (judged["llvm"] / judged[p]).to_numpy() for p in present if p != "llvm"}
    image = plot_strips(strips, folder / "speedup_vs_llvm.png", "speedup over LLVM's default (128 threads)",
                        "Speedup of each policy's choice", geometric_mean=True)
    tables = {"Over all choices": overall, "Geometric-mean speedup over LLVM per table": per_table}
    if costs is not None:
        tables["Cost of one decision"] = costs
    return write_report(
        folder, title,
        tables=tables,
        time_columns=COST_SHARES,  # shares spanning decades: one notation down each column, as a time column's
        plots=[("Speedup per choice", "Each point one choice of block shape; the bar marks the geometric mean, "
                "as the tables give it.", image)],
        notes=[f"{len(combined)} choices from {len(picks)} measured (kernel, GPU) tables; \"Over all choices\" pools "
               "them, so the tables with the most choices weigh most (see the per-table figures). Groups judged "
               f"{len(judged)} of {len(combined)}: a group without a block shape of exactly 128 threads (LLVM's "
               "default, the baseline of every speedup) is left out of every policy's figures.",
               geometry_glossary(), *([COST_GLOSSARY] if costs is not None else []), *notes],
    )


def geometry_glossary(trained_on: str = "the other kernel families", tables: bool = True,
                      llvm_threads: str = "128 threads") -> str:
    """What the geometry reports' policies and columns mean; ``tables``: the bundled tables' report
    (AMD GPUs among them, a typical_threads column), not a sweep's; ``llvm_threads``: LLVM's default block."""
    return (
        f"Policies: llvm = LLVM's default, {llvm_threads}; libomptarget = the NVIDIA plugin's rule"
        + (" (none for AMD GPUs: blank)" if tables else "") + "; heuristic = Lloyd et al.'s short/ideal/long "
        "loop rule; occupancy = the block size with the most resident warps; model = a random forest over "
        f"(threads, blocks) trained on {trained_on}; best = the fastest measured choice (an oracle). "
        "speedup_vs_llvm: geometric mean of the llvm choice's time over the policy's; within_10pct: share of "
        "choices within 10 % of the best; "
        + ("typical_threads: the policy's most frequent block size; " if tables else "")
        + "choices: how many choices the policy made."
    )


# The cost table's shares of a kernel's time (gpuperf.decisions.geometry_cost.cost_table).
COST_SHARES = ("share_of_median_kernel", "share_of_shortest_kernel")

COST_GLOSSARY = (
    "Cost of one decision: microseconds per call of each policy on this machine (best of repeated timings, the "
    "V100's descriptor, a new trip count per call; the model trained beforehand), and that as a share of the median "
    "and of the shortest measured kernel time in the tables above: a policy is worth calling where the share is "
    "far below 1 (gpuperf.decisions.geometry_cost)."
)


def exploration_study(folder: str | Path, family: str = "schoonhoven/pnpoly", budget: int = 100,
                      echo: Echo = lambda line: None, strategies: Sequence[str] | None = None,
                      kt_seeds: int = 3, online: bool = True) -> tuple[pd.DataFrame, dict[str, Path]]:
    """Explore a bundled family's spaces, each GPU left out in turn, against the alternatives, and write the report.

    Per left-out GPU: gpuperf's transfer-guided search (the other GPUs' data), plain transfer, gpuperf's
    online search (no prior data), Kernel Tuner's ``strategies`` (default: all of
    ``kernel_tuner_baseline.STRATEGIES``) in its simulation mode, ``kt_seeds`` seeds each, and random
    order (exact expectation), all on the left-out GPU's configurations that ran (Kernel Tuner's
    simulation never tries a failed one): evaluations to 90 % of the best (a search that does not reach it within
    ``budget`` counts as ``budget + 1``, random order too; its expectation with no budget stands beside it as
    ``random_uncapped``), and, where the data has compile and benchmark times, the tuning seconds to 90 % (a
    search's stop at its budget, random order's expected cost within it too, beside it ``random_uncapped``)."""
    from gpuperf.decisions.bundled_spaces import leave_one_gpu_out, tuning_families
    from gpuperf.decisions.exploration import explore
    from gpuperf.decisions.kernel_tuner_baseline import STRATEGIES, strategy_orders
    from gpuperf.decisions.search_metrics import (cost_to, random_cost_to, random_expected_cost_within,
                                                  random_expected_evals, random_expected_evals_within)

    families = {f.name: f for f in tuning_families()}
    if family not in families:
        from gpuperf.errors import unknown_name_error

        raise unknown_name_error("tuning family", family, list(families))
    strategies = tuple(STRATEGIES if strategies is None else strategies)

    def censored(evals: int | None) -> int:
        return budget + 1 if evals is None else evals

    cases, rows, compared, seconds = {}, [], [], []
    for gpu, space, train in leave_one_gpu_out(families[family]):
        echo(f"exploring {family} on {gpu}")
        space = space.without_failures()  # as Kernel Tuner's simulation searches it: a failure never tried
        result = cases[f"{family} on {gpu}"] = explore(space, train, budget=budget)
        rows.append({"gpu": gpu, "configurations": len(space), "evals_to_90": result.evals(0.9),
                     "transfer_evals_to_90": result.baselines["transfer_evals_to_90"],
                     "random_expected_evals_to_90": result.baselines["random_expected_evals_to_90"],
                     "random_expected_evals_to_90_within_budget":
                         result.baselines["random_expected_evals_to_90_within_budget"],
                     "random_evals_to_90": result.baselines["random_evals_to_90"],
                     "evals_to_99": result.evals(0.99)})
        row = {"gpu": gpu, "guided": censored(result.evals(0.9)),
               "plain_transfer": result.baselines["transfer_evals_to_90"]}
        if online:
            row["online"] = censored(explore(space, (), budget=budget).evals(0.9))
        performance = space.performance
        for strategy, orders in strategy_orders(space, strategies, budget, kt_seeds).items():
            row[f"kt_{strategy}"] = float(np.mean([censored(evals_to(performance[o], 0.9)) for o in orders]))
        row["random"] = random_expected_evals_within(performance, 0.9, budget)  # scored as the searches are
        row["random_uncapped"] = random_expected_evals(performance, 0.9)
        compared.append(row)
        cost = space.tuning_cost()
        if cost is not None:
            seconds.append({"gpu": gpu, "guided": cost_to(performance, cost, result.order, 0.9),
                            "plain_transfer": cost_to(performance, cost, result.transfer_order, 0.9),
                            "random": random_expected_cost_within(performance, cost, 0.9, budget),  # as searched
                            "random_uncapped": random_cost_to(performance, cost, 0.9)})
    table = pd.DataFrame(compared).set_index("gpu")
    table.loc["geometric mean"] = np.exp(np.log(table.astype(float)).mean())
    tables = {"Evaluations to 90 % against the alternatives": table}
    if seconds:
        timed = pd.DataFrame(seconds).set_index("gpu")
        timed.loc["total"] = timed.sum()
        tables["Compile + benchmark seconds to 90 %"] = timed
    kt_columns = [c for c in table.columns if c.startswith("kt_")]
    notes = [f"Alternatives: guided = gpuperf's transfer-guided search on the other GPUs' data; plain_transfer = the "
             "configurations in order of their mean normalised performance on the other GPUs; online = gpuperf's "
             "search with no prior data; kt_* = Kernel Tuner's strategies in its simulation mode on the same space "
             f"and budget ({kt_seeds} seeds, the mean); each searches the configurations that ran (Kernel Tuner's "
             "simulation never tries a failed one, so none of them does); random = random order's exact expectation, scored as the "
             f"searches are: a search that does not reach 90 % within {budget} evaluations counts as {budget + 1}, "
             "random order too (E[min(T, budget + 1)]); random_uncapped = its exact expectation with no budget, "
             "(N + 1) / (m + 1), not comparable with the others."]
    if seconds:
        notes.append("Compile + benchmark seconds to 90 %: a search that does not reach it stops at its budget, and "
                     "random is random order's exact expected cost of its first min(T, budget) evaluations, scored "
                     "alike; random_uncapped = the mean over 100 seeded random orders run until they reach 90 %, "
                     "with no budget, not comparable with the others.")
    if online and kt_columns:
        per_gpu = table.drop(index="geometric mean")
        best_kt = per_gpu[kt_columns].min(axis=1)
        notes.append(f"Online (no prior data) needs fewer evaluations than the best Kernel Tuner strategy on "
                     f"{int((per_gpu['online'] < best_kt).sum())} of {len(per_gpu)} GPUs "
                     f"({int((per_gpu['online'] == best_kt).sum())} ties).")
    return pd.DataFrame(rows), exploration_report(folder, cases, f"Exploring {family}, each GPU left out",
                                                  notes=notes, tables=tables)


def advisor_study(folder: str | Path, splits: Sequence[str] = ("inputs",), echo: Echo = lambda line: None,
                  extra: Sequence[str | Path] = (), only: Sequence[str] | None = None,
                  ) -> tuple[pd.DataFrame, dict[str, Path]]:
    """Evaluate the advisor on the bundled and measured training pairs and write the report; ``extra`` and
    ``only`` as ``gpuperf advise``'s ``--optimizations`` and ``--only``."""
    from gpuperf.decisions.advise_eval import evaluate, target_class
    from gpuperf.decisions.optimizations import load_optimizations, only_names, select_entries
    from gpuperf.decisions.pairs import training_pairs

    entries = load_optimizations(extra)
    selected = select_entries(entries, only)
    pairs = training_pairs(selected)
    trained = set(zip(pairs["optimization"], target_class(pairs["target"])))
    parts, unevaluated = [], []
    for split in splits:
        echo(f"advisor: split {split}")
        part = evaluate(pairs, split)
        evaluated = set(part[["optimization", "target"]].itertuples(index=False, name=None))
        if missed := sorted(trained - evaluated):
            shown = ", ".join(f"{name} ({target})" for name, target in missed)
            unevaluated.append(f"Trained but not evaluated by the {split} split (their pairs have no held-out group "
                               f"of that kind: e.g. one input per program, one program family, or for gpus, pairs of "
                               f"one device): {shown}.")
        if not part.empty:  # (an empty split's columns hold no numbers: concatenated, they made text of the rest)
            parts.append(part)
    if not parts:
        raise GpuperfError(" ".join(["an advisor report needs at least one evaluated pair, and none was.",
                                     *unevaluated]))
    results = pd.concat(parts, ignore_index=True)
    notes = [note] if (note := user_database_note(entries, extra)) else []
    if only_names(only):
        notes.append(f"Only the optimizations --only names were evaluated: {', '.join(e.name for e in selected)}.")
    return results, advisor_report(folder, results, notes=[*notes, *unevaluated])


def user_database_note(entries: Mapping[str, Any], extra: Sequence[str | Path] = ()) -> str:
    """Where the database evaluated is not gpuperf's own (``GPUPERF_OPTIMIZATIONS`` or the ``--optimizations``
    folders ``extra`` added, replaced or removed entries), what it holds instead, since the report's command
    alone does not reproduce it; empty otherwise. ``entries``:
    :func:`~gpuperf.decisions.optimizations.load_optimizations`'s."""
    import os

    from gpuperf.decisions.optimizations import ENV_VAR, builtin_folder

    builtin = builtin_folder().resolve()
    own = sorted(path.stem for path in builtin.glob("*.toml"))
    users = sorted(f"{name} ({entry.path})" for name, entry in entries.items()
                   if entry.path.parent.resolve() != builtin)
    removed = [name for name in own if name not in entries]
    if not users and not removed:
        return ""
    parts = ([f"entries from those folders: {', '.join(users)}"] if users else []) \
        + ([f"built-in entries removed: {', '.join(removed)}"] if removed else [])
    origins = ([f"{ENV_VAR}={os.environ.get(ENV_VAR, '')}"] if os.environ.get(ENV_VAR, "").strip() or not extra
               else []) + [f"--optimizations {folder}" for folder in extra]
    return (f"The optimization database evaluated is not gpuperf's own: {', '.join(origins)} "
            f"({'; '.join(parts)}); the command this report was written by reproduces it only with the same folders.")


# The folders inside geometry_study's report where each bundled sweep's own report goes, by sweep name.
GEOMETRY_SWEEP_FOLDERS = {"pocl": "sweep", "h100": "sweep_h100"}


def geometry_study(folder: str | Path, echo: Echo = lambda line: None,
                   cost_calls: int = 20_000) -> tuple[dict[str, pd.DataFrame], dict[str, Path]]:
    """Judge the launch-geometry policies on the bundled block-shape choices, time each policy's cost per
    call (``cost_calls`` calls per timing of the fast rules; fewer for the slow ones) and write the report."""
    from gpuperf.decisions.geometry_cost import cost_table, policy_costs
    from gpuperf.decisions.geometry_eval import EVALUATED_POLICIES, choices, leave_one_kernel_out_models
    from gpuperf.decisions.geometry_model import TABLES, choice_tables

    tables = choice_tables()
    echo(f"geometry: {len(tables)} block-shape tables; training the leave-one-kernel-out models")
    models = leave_one_kernel_out_models(tables)
    picks = {}
    for table in tables:
        try:
            picks[f"{table.label} on {table.gpu}"] = choices(table, models[table.family])
        except GpuperfError as exc:  # a GPU without per-SM limits in its descriptor
            echo(f"geometry: {table.label} on {table.gpu} skipped: {exc}")
    for name, subfolder in GEOMETRY_SWEEP_FOLDERS.items():
        sweep = bundled_sweep_report(Path(folder) / subfolder, name)
        echo(f"geometry: the bundled {BUNDLED_SWEEPS[name]} sweep judged in {sweep['markdown']}")
    note = ("The policies' threads and blocks judged together on measured (threads, blocks) sweeps of two "
            "parallel loops: on an NVIDIA H100 ([sweep_h100/report.md](sweep_h100/report.md)) and on pocl's "
            "CPU OpenCL device ([sweep/report.md](sweep/report.md)).")
    data = f"Block-shape choices from the bundled tables {', '.join(TABLES)} (provenance: the bundled data's README.md; gpuperf datasets shows where)."
    echo("geometry: timing each policy's cost per call")
    kernel_times = np.concatenate([table.frame["time"].dropna().to_numpy(dtype=float) for table in tables])
    costs = cost_table(policy_costs(number=cost_calls), kernel_times)
    return picks, geometry_report(folder, picks, EVALUATED_POLICIES, notes=[data, note], costs=costs)


# The (threads, blocks) sweeps in data/ (see data/README.md), by short name.
BUNDLED_SWEEPS = {"pocl": "geometry_sweep_pocl.csv.gz", "h100": "geometry_sweep_h100.csv.gz"}


@dataclass(frozen=True)
class JudgedSweep:
    """A measured sweep and the policies judged on it (:mod:`gpuperf.decisions.geometry_sweep`)."""

    file: str
    measured: pd.DataFrame
    descriptor: "DeviceDescriptor"  # the limits the policies used, those the sweep recorded
    choices: pd.DataFrame
    summary: pd.DataFrame
    figures: pd.DataFrame


def judge_bundled_sweep(name: str = "pocl") -> JudgedSweep:
    """The launch-geometry policies judged on a bundled sweep (``pocl`` or ``h100``, as
    ``BUNDLED_SWEEPS`` names them), with the device limits it recorded."""
    from gpuperf.datasets.bundled import data_dir
    from gpuperf.decisions.geometry_sweep import sweep_choices, sweep_figures, sweep_summary, table_descriptor

    if name not in BUNDLED_SWEEPS:
        raise unknown_name_error("bundled sweep", name, list(BUNDLED_SWEEPS))
    file = BUNDLED_SWEEPS[name]
    measured = pd.read_csv(data_dir() / file)
    descriptor = table_descriptor(measured, file)
    choices = sweep_choices(measured, descriptor, file)
    return JudgedSweep(file, measured, descriptor, choices, sweep_summary(choices), sweep_figures(choices))


def bundled_sweep_report(folder: str | Path, name: str = "pocl") -> dict[str, Path]:
    """The launch-geometry policies judged on a bundled (threads, blocks) sweep (:func:`judge_bundled_sweep`)."""
    judged = judge_bundled_sweep(name)
    return sweep_report(folder, judged.choices, judged.summary, judged.measured, judged.descriptor.name,
                        title=f"Launch geometry on a (threads, blocks) sweep: {judged.file}", descriptor=judged.descriptor)


def plot_sweep_maps(measured: pd.DataFrame, choices: pd.DataFrame, path: Path, columns: int = 3) -> Path:
    """Per (loop, trip): each measured (threads, blocks) point coloured by its time over the best
    (log2 axes), with the heuristic's and LLVM's picks marked."""
    groups = list(measured.groupby(["kernel", "trip"], sort=True))
    rows = -(-len(groups) // columns)
    fig = Figure(figsize=(3.2 * columns, 2.8 * rows))
    for index, ((kernel, trip), group) in enumerate(groups):
        ax = fig.add_subplot(rows, columns, index + 1)
        slowdown = group["time_s"] / group["time_s"].min()
        points = ax.scatter(group["threads"], group["blocks"], c=np.log2(slowdown), cmap="viridis_r", s=18)
        pick = choices[(choices["kernel"] == kernel) & (choices["trip"] == trip)].iloc[0]
        for policy, marker in (("heuristic", "x"), ("llvm", "+")):
            ax.scatter([pick[f"{policy}_threads"]], [pick[f"{policy}_blocks"]], marker=marker, s=60, color="red",
                       label=policy)
        ax.scatter([pick["best_threads"]], [pick["best_blocks"]], marker="o", s=60, facecolors="none",
                   edgecolors="red", label="best")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_title(f"{kernel} trip={trip}", fontsize=7)
        ax.set_xlabel("threads per block", fontsize=7)
        ax.set_ylabel("blocks", fontsize=7)
        ax.tick_params(labelsize=6)
        fig.colorbar(points, ax=ax).set_label("log2(time / best)", fontsize=6)
    fig.axes[0].legend(fontsize=6, loc="upper right")
    fig.tight_layout()
    save_figure(fig, path, dpi=100)
    return path


def sweep_report(folder: str | Path, choices: pd.DataFrame, summary: pd.DataFrame, measured: pd.DataFrame,
                 device: str, title: str = "Launch geometry on a (threads, blocks) sweep",
                 descriptor: DeviceDescriptor | None = None) -> dict[str, Path]:
    """The policies judged on a measured sweep (:mod:`gpuperf.decisions.geometry_sweep`): summary,
    each pick, a strip chart of speedups over LLVM's default and the time maps (of the points a launch on
    ``descriptor``'s GPU makes, as the choices were judged)."""
    from gpuperf.decisions.geometry_sweep import (
        SWEEP_POLICIES, check_sweep, figure_labels, launchable_points, sweep_figures,
    )

    if choices.empty:
        raise GpuperfError("a sweep report needs at least one measured loop and trip count")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    usable = check_sweep(measured, "sweep")
    if descriptor is not None:
        usable = launchable_points(usable, descriptor, "sweep", note=False)
    policies = [p for p in summary.index if p != "llvm"]
    strips = {p: (choices["llvm"] / choices[p]).to_numpy(dtype=float) for p in policies}
    llvm = _llvm_threads(choices)
    strip = plot_strips(strips, folder / "speedup_vs_llvm.png", f"speedup over LLVM's default ({llvm})",
                        "Speedup of each policy's (threads, blocks)", geometric_mean=True)
    maps = plot_sweep_maps(usable, choices, folder / "time_maps.png")
    picks = choices.set_index("group").drop(columns=["kernel", "trip", *choices.columns[choices.columns.str.endswith(
        "_failed")]])  # a failed pick: its blank time, counted in the summary's failed_picks
    policy_columns = [c for policy in summary.index for c in picks.columns if c == policy or c.startswith(f"{policy}_")]
    picks = picks[policy_columns + [c for c in picks.columns if c not in policy_columns]]  # the tables' policy order
    scoped, figures = "Per (loop, trip count), per trip count and overall", sweep_figures(choices)
    return write_report(
        folder, title,
        tables={"Per policy": summary, scoped: figure_labels(figures),
                "Each policy's pick (time in seconds, threads, blocks)": picks},
        json_tables={scoped: figures},  # the pages' cells are rounded text; metrics.json keeps the numbers
        time_columns=SWEEP_POLICIES,  # each policy's column holds its pick's time
        plots=[("Speedup per choice", "Each point one (loop, trip count); the bar marks the geometric mean, as the "
                "tables give it.", strip),
               ("Time over the sweep", "Each point a measured geometry; x: heuristic, +: LLVM, o: the best.", maps)],
        notes=[f"Device: {device}; {len(usable)} measured points, {len(choices)} (loop, trip count) choices. "
               "Policies judged on their exact picks; blank: the sweep did not measure that pick. Per (loop, "
               "trip count), per trip count and overall, each cell reads: the geometric-mean speedup over "
               "LLVM's default, then how many choices are within 10 % of the best, of how many. `points`: "
               "the geometries a (loop, trip count) measured, among which the best and the model pick."
               + (" With so few choices, the summary's figures are indications, not rates." if len(choices) < 20 else ""),
               geometry_glossary("the other loops' sweeps", tables=False, llvm_threads=llvm)],
    )


def _llvm_threads(choices: pd.DataFrame) -> str:
    """LLVM's default block as the sweep's picks have it ("256 threads" on an AMD GPU's descriptor)."""
    counts = sorted({int(threads) for threads in choices["llvm_threads"].dropna()})
    return f"{' or '.join(map(str, counts)) or 128} threads"
