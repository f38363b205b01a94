"""gpuperf's main job on its embedded defaults: the catalog, its features, measurements and reports.

Each step writes its files into one report folder and adds a section to ``index.md``; a step that
cannot run here (no NVRTC, no OpenCL device) is reported in the index rather than ending the demo.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from rich.console import Console

from gpuperf.errors import GpuperfError, named_values
from gpuperf.files import written_whole

console = Console(stderr=True)
STEPS_FILE = "index_steps.json"  # the steps' texts, kept for a rerun of some of them


@dataclass
class DemoReport:
    """The report folder, and per step its Markdown sections and headline figures.

    The steps' texts are kept in ``index_steps.json`` beside ``index.md``, so a rerun of some steps
    (``--step``) replaces their sections and keeps the others'."""

    out: Path
    step: str = "set-up"
    sections: dict[str, list[str]] = field(default_factory=dict)
    headlines: dict[str, list[str]] = field(default_factory=dict)

    def add(self, title: str, body: str) -> None:
        self.sections.setdefault(self.step, []).append(f"## {title}\n\n{body.strip()}\n")

    def headline(self, text: str) -> None:
        """One line of the summary that opens the index and ends the demo's output."""
        self.headlines.setdefault(self.step, []).append(text)

    def start(self, step: str) -> None:
        """Begin (or redo) ``step``: its earlier sections and headlines are dropped."""
        self.step = step
        self.sections[step], self.headlines[step] = [], []

    def write_index(self) -> Path:
        steps = kept_steps(self.out)
        steps |= {step: {"sections": self.sections.get(step, []), "headlines": self.headlines.get(step, [])}
                  for step in self.sections}
        with written_whole(self.out / STEPS_FILE, through_links=False) as temporary:  # a killed demo leaves the earlier one whole
            temporary.write_text(json.dumps(steps, indent=1), encoding="utf-8")
        order = ["set-up", *STEPS]
        ordered = [steps[step] for step in order if step in steps]
        summary = [f"- {line}" for texts in ordered for line in texts["headlines"]]
        body = "\n".join(section for texts in ordered for section in texts["sections"])
        path = self.out / "index.md"
        with written_whole(path, through_links=False) as temporary:  # a killed step leaves the earlier index whole
            temporary.write_text("# gpuperf demo report\n\n"
                                 + ("## Summary\n\n" + "\n".join(summary) + "\n\n" if summary else "") + body,
                                 encoding="utf-8")
        return path


def write_table(frame: pd.DataFrame, path: Path, index: bool = False) -> None:
    """``frame`` as CSV at ``path`` (counts as whole numbers, as every table gpuperf writes), whole or
    not at all (a killed step leaves the earlier table)."""
    from gpuperf.datasets.schema import with_whole_counts

    with written_whole(path, through_links=False) as temporary:
        with_whole_counts(frame).to_csv(temporary, index=index)


def _gmean(values: pd.Series) -> float:
    """Geometric mean of the numbers in ``values`` (NaN if none)."""
    import numpy as np

    numbers = pd.to_numeric(values, errors="coerce").dropna()
    return float(np.exp(np.log(numbers).mean())) if len(numbers) else float("nan")


def kept_steps(out: str | Path) -> dict[str, dict[str, list[str]]]:
    """The steps' texts kept in the report folder ``out`` ({} where there are none, or where the file
    is damaged: a note says so and the index starts again from this run's steps)."""
    kept = Path(out) / STEPS_FILE
    if not kept.is_file():
        return {}
    try:
        steps = json.loads(kept.read_text(encoding="utf-8"))
        problem = None if _steps_shape(steps) else "not a step's sections and headlines by step name"
    except ValueError as exc:
        problem = str(exc)
    if problem:
        console.print(f"note: {kept}: damaged ({problem}); the index starts again from this run's steps",
                      markup=False, soft_wrap=True)
        return {}
    return steps


def _steps_shape(steps: object) -> bool:
    """Whether ``steps`` is what :meth:`Report.write_index` keeps: per step name, lists of texts."""
    return isinstance(steps, dict) and all(
        isinstance(texts, dict) and all(isinstance(texts.get(key), list) and all(isinstance(t, str) for t in texts[key])
                                        for key in ("sections", "headlines"))
        for texts in steps.values())


def summary_lines(out: str | Path) -> list[str]:
    """The headlines of every step in the report folder ``out`` (this run's and kept earlier ones)."""
    steps = kept_steps(out)
    return [line for step in ["set-up", *STEPS] for line in steps.get(step, {}).get("headlines", [])]


def _markdown_table(frame: pd.DataFrame, max_rows: int = 40) -> str:
    """The first ``max_rows`` rows as a Markdown table, with a note of how many more the CSV holds."""
    from gpuperf.evaluation.report import markdown_table

    more = f"\n\n({len(frame) - max_rows} more rows in the CSV)" if len(frame) > max_rows else ""
    return markdown_table(frame.head(max_rows), digits=4) + more


# -- steps ------------------------------------------------------------------------------------------
def catalog_step(report: DemoReport) -> None:
    """The kernel catalog and the variant spaces."""
    from gpuperf.kernels.catalog import entries
    from gpuperf.kernels.space import get_space, space_names

    catalog = pd.DataFrame([
        {"kernel": e.name, "category": e.category, "params": ",".join(e.params), "description": e.description}
        for e in entries()
    ])
    write_table(catalog, report.out / "catalog.csv")
    rows = []
    for name in space_names():
        space = get_space(name)
        configs = list(space.configurations())
        rows.append({"space": name, "configurations": len(configs),
                     "pass_static_checks": sum(space.rejection(c) is None for c in configs),
                     "parameters": "; ".join(f"{k}: {v}" for k, v in space.parameters.items())})
    spaces = pd.DataFrame(rows)
    write_table(spaces, report.out / "spaces.csv")
    report.add(
        "Kernel catalog",
        f"{len(catalog)} kernels ([catalog.csv](catalog.csv)) and {len(spaces)} variant spaces "
        f"([spaces.csv](spaces.csv)).\n\n{_markdown_table(catalog)}\n\n{_markdown_table(spaces)}",
    )


def features_step(report: DemoReport) -> None:
    """Static features of every catalog kernel at its default sizes, and of a stencil space sample."""
    from gpuperf.features import feature_table
    from gpuperf.kernels.catalog import get_kernel, kernel_names
    from gpuperf.kernels.space import get_space

    kernels = [get_kernel(name) for name in kernel_names()]
    start = time.perf_counter()
    frame = feature_table(kernels, [dict(k.default_sizes) for k in kernels], pairwise=True, progress=True)
    variants = get_space("stencil2d").variants(limit=200)
    sizes = [{"n": 1024, "m": 1024}] * len(variants)
    space_frame = feature_table(variants, sizes, pairwise=True, progress=True)
    elapsed = time.perf_counter() - start
    write_table(frame, report.out / "features.csv")
    write_table(space_frame, report.out / "features_stencil2d_space.csv")
    size_names = {name for kernel in kernels for name in kernel.params}
    feature_columns = [c for c in frame.columns if c not in ("kernel", "variant") and c not in size_names]
    lift = ["kernel", "global_size_0", "local_size_0", "global_loads_per_thread", "global_stores_per_thread",
            "local_loads_per_thread", "cache_lines_per_warp_access", "barriers_per_thread", "flops"]
    report.add(
        "Static features",
        f"{len(feature_columns)} features for {len(frame)} catalog kernels ([features.csv](features.csv), with "
        f"their names and sizes) and "
        f"{len(space_frame)} stencil2d variants ([features_stencil2d_space.csv](features_stencil2d_space.csv)) "
        f"in {elapsed:.1f} s. The LIFT paper's per-thread features:\n\n"
        f"{_markdown_table(frame[[c for c in lift if c in frame.columns]])}",
    )


def hardware_step(report: DemoReport) -> None:
    """GPU descriptors, and NVRTC registers with H100 occupancy for the catalog kernels."""
    from gpuperf.features.occupancy import occupancy
    from gpuperf.features.resources import compile_resources
    from gpuperf.hardware.specs import get_gpu, gpus
    from gpuperf.kernels.catalog import get_kernel, kernel_names

    descriptors = pd.DataFrame([g.as_dict() for g in gpus()])
    write_table(descriptors, report.out / "gpus.csv")
    h100 = get_gpu("H100")
    rows = []
    for name in kernel_names():
        kernel = get_kernel(name)
        used = compile_resources(kernel, "sm_90")
        threads = 1
        for extent in kernel.launch()[1]:
            threads *= extent
        fit = occupancy(h100, threads, max(used.registers, 1), used.shared_memory_bytes)
        rows.append({"kernel": name, "registers": used.registers, "shared_memory_bytes": used.shared_memory_bytes,
                     "spill_bytes": used.spill_bytes, "threads_per_block": threads,
                     "h100_occupancy": fit.occupancy, "limiter": fit.limiter})
    resources = pd.DataFrame(rows)
    write_table(resources, report.out / "resources.csv")
    report.add(
        "GPUs and compiler resources",
        f"{len(descriptors)} GPU descriptors ([gpus.csv](gpus.csv)). Registers, shared memory and spills from "
        f"NVRTC for sm_90, and occupancy on the H100 ([resources.csv](resources.csv)):\n\n"
        f"{_markdown_table(resources)}",
    )


DEMO_CAMPAIGN = """\
# The demo's measurement campaign: gpuperf campaign run campaign.toml --store measurements.sqlite
name = "demo"
device = "{device}"
seed = 0
verify = true

[timing]
warmup = 1
min_repeats = 5
min_time_s = 0.02
max_repeats = 200

[[kernels]]
kernel = "vector_copy"
sizes = [{{n = 4096}}, {{n = 65536}}, {{n = 1048576}}, {{n = 4194304}}]
{kernels}
[[spaces]]
space = "jacobi2d_5pt"
limit = 6
sizes = [{{n = 512, m = 512}}]
"""


class LocalDeviceUnusable(GpuperfError):
    """No device here can run kernels: the demo's steps on the local device are not run, the others are."""


def local_device() -> str:
    """The first CUDA GPU when CuPy sees one, else the first OpenCL device (pocl's CPU here), once it has
    opened and built a program."""
    from gpuperf.measure import available_devices
    from gpuperf.measure.devices import open_device

    names = [name for name, _ in available_devices()]
    cuda = [n for n in names if n.startswith("cuda:")]
    if not names:
        raise LocalDeviceUnusable("no OpenCL or CUDA device found (install pocl-binary-distribution for a CPU device)")
    name = cuda[0] if cuda else names[0]
    try:
        open_device(name)
    except GpuperfError as exc:
        raise LocalDeviceUnusable(str(exc)) from None
    return name


def measure_step(report: DemoReport) -> None:
    """A small campaign on the local device: every catalog kernel at its default sizes, copy at four sizes."""
    from gpuperf.kernels.catalog import get_kernel, kernel_names
    from gpuperf.measure import export_store, load_campaign, run_campaign
    from gpuperf.measure.campaign import stored_failure_lines
    from gpuperf.measure.store import Store

    device = local_device()
    blocks = []
    for name in kernel_names("measurement") + kernel_names("test") + kernel_names("stencil"):
        if name == "vector_copy":
            continue
        sizes = ", ".join(f"{k} = {v}" for k, v in get_kernel(name).default_sizes.items())
        blocks.append(f"[[kernels]]\nkernel = \"{name}\"\nsizes = [{{{sizes}}}]\n")
    campaign_file = report.out / "campaign.toml"
    campaign_file.write_text(DEMO_CAMPAIGN.format(device=device, kernels="\n".join(blocks)), encoding="utf-8")
    store = report.out / "measurements.sqlite"
    result = run_campaign(load_campaign(campaign_file), store)
    table = export_store(store, report.out / "measurements.csv", "csv", replace=True)  # the demo's own, rewritten
    shown = table[["kernel", "variant", "status", "time_s", "time_s_iqr", "repeats"]]
    measured = result.measured + result.already_stored
    report.headline(f"Measured {measured} catalog points on {result.device} (failures: {result.failed or 'none'})"
                    + ("; every output checked against NumPy." if measured else "."))
    with Store(store, create=False) as opened:  # this run's failures and those a rerun keeps from the store
        failures = stored_failure_lines(opened.rows(result.campaign))
    for line in failures:
        report.headline(f"Failed: {line}")
    failed_text = "".join(f"Failed: {line}\n\n" for line in failures)
    copy = table[table["kernel"].eq("vector_copy")][["n", "time_s"]].sort_values("n")
    report.add(
        "Measurements on the local device",
        f"Device `{result.device}`: {result.measured} points measured now, {result.already_stored} already in the "
        f"store, failures {result.failed or 'none'} ([campaign.toml](campaign.toml), "
        f"[measurements.csv](measurements.csv) with static features). Results are checked against NumPy.\n\n"
        f"{failed_text}Copy time against size:\n\n{_markdown_table(copy)}\n\n{_markdown_table(shown, max_rows=60)}",
    )


# Timed interleaved, the held-out error stays steady on a busy machine: with two other processes
# copying memory, 0.157-0.181 in two runs against 0.191-0.247 for three passes one after the other
# (equal, 0.17-0.21 either way, on an idle machine). 30 cycles rather than 15, so that most points
# catch the machine's fast seconds at least once: 15-cycle campaigns gave 0.16-0.27, 30-cycle ones
# 0.16-0.20 (see benchmarks/bench_linear_model.py).
LINEAR_MODEL_CYCLES = 30


def linear_model_step(report: DemoReport) -> None:
    """Calibrate the linear count model on the local device and test it on kernels it never saw; first,
    the same on the bundled H100 points."""
    gpu_linear_section(report)
    from gpuperf.evaluation.linear_eval import evaluate_linear_model
    from gpuperf.evaluation.linear_report import bundled_evaluations, linear_report, local_label
    from gpuperf.models.linear_calibration import save_calibration

    device = local_device()
    result = evaluate_linear_model(device, report.out / "linear_model.sqlite", progress=True,
                                   cycles=LINEAR_MODEL_CYCLES)
    save_calibration(result.calibration, report.out / "linear_model.json", replace=True)
    linear_report(report.out / "linear", {**bundled_evaluations(), local_label(result, device): result})
    errors = pd.DataFrame({"in_sample_gmre": result.in_sample()}).join(
        pd.DataFrame({"held_out_gmre": result.held_out_error()}), how="outer").reset_index(names="kernel")
    write_table(errors, report.out / "linear_model_errors.csv")
    summary = result.summary()
    report.headline(
        f"Linear count model calibrated on {device}: geometric-mean relative error per held-out kernel "
        f"{summary['held_out_mean_gmre']:.3f} on average (median {summary['held_out_median_gmre']:.3f}; target "
        f"at most 0.25; 0.1 means predictions off by 10 %).")
    report.add(
        "Linear count model on the local device",
        f"Calibrated on {summary['in_sample_kernels']} measurement kernels, tested on "
        f"{summary['held_out_kernels']} held-out kernels at sizes not used for fitting "
        f"([linear_model.json](linear_model.json), [linear_model_errors.csv](linear_model_errors.csv)). "
        f"Geometric-mean relative error per kernel: held-out mean {summary['held_out_mean_gmre']:.3f}, "
        f"median {summary['held_out_median_gmre']:.3f}, worst {summary['held_out_worst_gmre']:.3f}; "
        f"in-sample mean {summary['in_sample_mean_gmre']:.3f}. Calibration and held-out points are timed "
        f"together in {LINEAR_MODEL_CYCLES} interleaved cycles, so both sets see the same machine states "
        f"(`gpuperf calibrate --cycles {LINEAR_MODEL_CYCLES}` times its points the same way). Report "
        "with the fitted weights and predicted against measured time, beside the bundled H100 and H200 "
        "calibrations: [linear/report.md](linear/report.md)."
        f"\n\n{_markdown_table(errors, max_rows=60)}",
    )


def gpu_linear_section(report: DemoReport) -> None:
    """The linear count model calibrated and tested on the bundled H100 points (no GPU needed)."""
    from gpuperf.datasets.bundled import data_dir
    from gpuperf.evaluation.linear_eval import evaluate_linear_table

    table = data_dir() / "linear_model_h100.csv.gz"
    rows, calibrations = [], {}
    for property_set in ("gpu", "stevens_klockner"):
        evaluation = evaluate_linear_table(table, property_set=property_set)
        calibrations[property_set] = evaluation.calibration
        summary = evaluation.summary()
        worst = evaluation.held_out_error().idxmax()
        rows.append({"property_set": property_set, "held_out_mean_gmre": summary["held_out_mean_gmre"],
                     "held_out_median_gmre": summary["held_out_median_gmre"],
                     "worst": f"{worst} {summary['held_out_worst_gmre']:.2f}",
                     "in_sample_mean_gmre": summary["in_sample_mean_gmre"]})
    frame = pd.DataFrame(rows)
    write_table(frame, report.out / "linear_model_h100.csv")
    report.headline(f"Linear count model on an NVIDIA H100 (bundled points): held-out mean gmre "
                    f"{rows[0]['held_out_mean_gmre']:.3f} with the gpu property set, {rows[1]['held_out_mean_gmre']:.3f} "
                    "with the paper's set alone.")
    report.add(
        "Linear count model on an NVIDIA H100",
        "Calibrated and tested on the bundled H100 points (`data/linear_model_h100.csv.gz`: the same calibration "
        "and held-out kernels at the `gpu` plan's sizes, timed in 10 interleaved cycles; "
        "`gpuperf reproduce linear` reruns it beside the bundled H200 points), with the `gpu` property "
        "set and with the paper's set alone (`stevens_klockner`), which has no per-work-item counts and so misses "
        "launches too small to fill the GPU ([linear_model_h100.csv](linear_model_h100.csv))."
        f"\n\n{_markdown_table(frame)}\n\n{h100_variant_ranking(report, calibrations['gpu'])}",
    )


def h100_variant_ranking(report: DemoReport, calibration) -> str:
    """The H100 stencil variants (none in the fit) ranked by the calibrated model: a paragraph and its table."""
    from gpuperf.datasets.bundled import data_dir
    from gpuperf.decisions.count_ranking import evaluations_summary, ranking_evaluations
    from gpuperf.evaluation.linear_eval import variant_predictions, variant_ranking

    predictions = variant_predictions(calibration, pd.read_csv(data_dir() / "stencil_spaces_h100.csv.gz"))
    evaluations = ranking_evaluations(predictions)
    ranking = variant_ranking(predictions).join(evaluations)
    write_table(ranking, report.out / "linear_model_h100_variants.csv", index=True)
    model, random = evaluations_summary(evaluations)
    report.headline(f"The H100 count model ranks the 192 measured H100 stencil variants (none in its fit) with "
                    f"Spearman {ranking['spearman'].mean():.2f} per stencil: {model} evaluations to reach "
                    f"90 / 95 / 99 % of the best in predicted order, random order {random}.")
    columns = ["variants", "spearman", "pick_over_best", "random_pick_over_best", *evaluations.columns]
    return ("The same model (`gpu` set) ranks the 192 stencil variants measured on the same H100, none of them in "
            "its fit (`gpuperf rank SPACE --model` ranks a whole space this way; "
            "[linear_model_h100_variants.csv](linear_model_h100_variants.csv)): per stencil, the rank correlation "
            "with the measured times, the measured time of the variant predicted fastest over the best (a random "
            "variant's for comparison) and the evaluations to reach 90 / 95 / 99 % of the best in predicted order "
            f"(random order: the exact expectation).\n\n{_markdown_table(ranking[columns].reset_index())}")


def models_step(report: DemoReport) -> None:
    """Amaris et al.'s study rerun on the bundled Rodinia data (quick set), and BSP on matvec."""
    import json

    from gpuperf.evaluation.rodinia_report import QUICK_MODELS, QUICK_SCENARIOS, reproduce_rodinia

    paths = reproduce_rodinia(report.out / "rodinia", QUICK_SCENARIOS, QUICK_MODELS, echo=lambda line: None)
    metrics = json.loads(paths["json"].read_text(encoding="utf-8"))
    tables = metrics.get("tables", {})
    wanted = ("Leave one GPU out", "Leave one architecture out", "Targets",
              "Profiled on another GPU: mean", "Calibrated by one launch", "BSP (lambda per kernel and architecture)")
    shown = [f"### {title}\n\n{_markdown_table(pd.DataFrame(rows))}" for title, rows in tables.items()
             if title.startswith(wanted) and isinstance(rows, list) and rows]
    targets = next((pd.DataFrame(rows) for title, rows in tables.items() if title.startswith("Targets")), None)
    if targets is not None and len(targets):
        report.headline(
            f"Rodinia on {len(targets)} GPUs, each left out in turn: per-kernel MAPE {targets['ours'].min():.2f} to "
            f"{targets['ours'].max():.2f} (0.10 = 10 %); at most 0.25 on {int(targets['meets_ceiling'].sum())} "
            f"of {len(targets)} GPUs.")
    calibrated = next((pd.DataFrame(rows) for title, rows in tables.items()
                       if title.startswith("Calibrated by one launch")), None)
    if calibrated is not None and len(calibrated):
        report.headline(
            f"Rodinia with one launch per kernel timed on the GPU predicted (as BSP's lambda), from the other "
            f"GPUs' times of the same launches: per-kernel MAPE {calibrated['one_launch'].min():.2f} to "
            f"{calibrated['one_launch'].max():.2f}.")
    report.add(
        "Models on real GPU data: Amaris et al. reproduced",
        "Leave-one-GPU-out, leave-one-architecture-out and leave-one-kernel-out on the bundled Rodinia nvprof "
        "table, side by side with the paper's published predictions; each GPU predicted from launches profiled "
        "on another GPU (a scheduler's view), against that GPU's time, and from the other GPUs' times of the "
        "same launches calibrated by one launch per kernel; the BSP model on the matrix/vector "
        "kernels. Full report: [rodinia/report.md](rodinia/report.md) ([HTML](rodinia/report.html)); "
        "`gpuperf reproduce rodinia --full` runs every scenario and model.\n\n" + "\n\n".join(shown),
    )


def advise_step(report: DemoReport) -> None:
    """Optimization suggestions for a stencil on the H100 and on the local device."""
    from gpuperf.decisions.advisor import advise_kernel
    from gpuperf.decisions.advise_eval import summarise
    from gpuperf.decisions.reports import advisor_study
    from gpuperf.kernels.catalog import get_kernel

    kernel = get_kernel("stencil2d[local_x=32,local_y=4,prefetch=0]")
    sizes = {"n": 2048, "m": 2048}
    rows = []
    targets = [("H100", {"gpu": "H100"})]
    try:
        device = local_device()
        targets.append((device, {"device": device}))
    except LocalDeviceUnusable as exc:
        report.add("Optimization advice on the local device (not run)", f"Not run here: {exc}")
    for target, options in targets:
        advice = advise_kernel(kernel, sizes, threshold=1.0, **options)
        rows += [{"target": target, "optimization": s.optimization, "predicted_speedup": s.predicted_speedup,
                  "confidence": s.confidence} for s in advice.assessed]
    frame = pd.DataFrame(rows)
    write_table(frame, report.out / "advice.csv")
    results, _ = advisor_study(report.out / "advise", ("inputs",))
    accuracy = summarise(results, ["target"])[["target", "pairs", "sign_accuracy", "sign_accuracy_constant"]]
    report.headline("Advisor, held-out inputs: sign of the speedup right in " + ", ".join(
        f"{row.sign_accuracy:.0%} of {row.pairs} {row.target} pairs (always guessing the commoner sign: "
        f"{row.sign_accuracy_constant:.0%})" for row in accuracy.itertuples()) + ".")
    report.add(
        "Optimization advice",
        f"Predicted speedups of each optimization in the database for `{kernel.key}` at n = m = 2048 "
        f"([advice.csv](advice.csv)); `gpuperf advise` lists those above a threshold with explanations.\n\n"
        f"{_markdown_table(frame)}\n\nHow well the advisor predicts the sign of the speedup on inputs held out "
        f"of its training pairs (report with strip charts: [advise/report.md](advise/report.md); "
        f"`gpuperf reproduce advisor --split programs` for other programs):\n\n{_markdown_table(accuracy)}",
    )


def explore_step(report: DemoReport) -> None:
    """Model-guided exploration of the bundled pnpoly spaces, each GPU left out in turn."""
    from gpuperf.datasets.bundled import data_dir
    from gpuperf.decisions.cross_kernel import leave_one_kernel_out
    from gpuperf.decisions.reports import exploration_study

    budget = 100
    frame, _ = exploration_study(report.out / "explore", "schoonhoven/pnpoly", budget=budget)
    write_table(frame, report.out / "explore_pnpoly.csv")
    report.headline(
        f"Exploring pnpoly with each of {len(frame)} GPUs left out: "
        f"{_gmean(frame['evals_to_90'].fillna(budget + 1)):.2f} evaluations to reach 90 % of the best (geometric "
        f"mean; a miss within the budget of {budget} counts {budget + 1}), plain transfer "
        f"{_gmean(frame['transfer_evals_to_90']):.2f}, random order "
        f"{_gmean(frame['random_expected_evals_to_90_within_budget']):.1f} (the exact expectation, scored as the "
        f"search is; with no budget {_gmean(frame['random_expected_evals_to_90']):.1f}; the mean of 100 seeded "
        f"orders: {_gmean(frame['random_evals_to_90']):.1f}).")
    report.add(
        "Exploring a tuning space",
        f"Schoonhoven et al.'s pnpoly space on each GPU, explored in the order a model trained on the other "
        f"GPUs predicts (refitted as measurements arrive), against plain transfer (mean normalised performance "
        f"on the other GPUs) and random order (its exact expectation, and the mean of 100 seeded orders) "
        f"([explore_pnpoly.csv](explore_pnpoly.csv); "
        f"report with the curves, gpuperf's online search and Kernel Tuner's own strategies on the same spaces: "
        f"[explore/report.md](explore/report.md)). `gpuperf reproduce exploration "
        f"--family NAME` explores another family of bundled spaces (schoonhoven/GEMM, hub/convolution, ...; "
        f"a name it does not know lists them all).\n\n{_markdown_table(frame)}",
    )
    kernels = leave_one_kernel_out(pd.read_csv(data_dir() / "stencil_spaces_pocl.csv.gz"),
                                   parameters=("local_x", "local_y", "outputs_y", "prefetch", "unroll"))
    write_table(kernels, report.out / "explore_stencils.csv")
    report.add(
        "Exploring on other kernels",
        "Each stencil's measured variants (64 per stencil, the bundled stencil_spaces_pocl table: pocl on the "
        "machine named in its gpu column, not this run's) ranked by PCA + 5-NN on the LIFT features, "
        "trained on the other stencils only, against ranking by the same parameters on the other stencils and "
        "random order ([explore_stencils.csv](explore_stencils.csv)); `gpuperf rank SPACE -p n=...` ranks a "
        f"whole space this way before anything runs.\n\n{_markdown_table(kernels)}",
    )
    tuning_section(report, data_dir() / "stencil_spaces_pocl.csv.gz")


TUNED_SPACE, TUNED_SIZES, TUNING_BUDGET = "jacobi2d_5pt", {"n": 1024, "m": 1024}, 12


def tuning_section(report: DemoReport, measured_variants: Path) -> None:
    """Tune a stencil on the local device, its first picks ranked by a model trained on other stencils."""
    from gpuperf.decisions.reports import tuning_report
    from gpuperf.decisions.tune import RANKED_PICKS, default_variant_time, rank_by_other_kernels, tune_space
    from gpuperf.kernels.space import get_space

    space = get_space(TUNED_SPACE)
    ranking = rank_by_other_kernels(TUNED_SPACE, TUNED_SIZES, pd.read_csv(measured_variants), measured_variants.name)
    device = local_device()
    default = default_variant_time(TUNED_SPACE, TUNED_SIZES, device)
    result = tune_space(TUNED_SPACE, TUNED_SIZES, device, TUNING_BUDGET, ranking=ranking)
    trials = result.table()
    write_table(trials, report.out / "tune_jacobi2d_5pt.csv")
    tuning_report(report.out / "tune", result, default)
    best = result.best()
    if best is not None:
        report.headline(f"Tuning {TUNED_SPACE} on {device}: {default / best.time_s:.2f}x the default variant's speed "
                        f"after {len(result.trials)} trials.")
    found = "no variant ran" if best is None else (
        f"best after {result.trials.index(best) + 1} of {len(result.trials)} trials: {named_values(best.config)}, "
        f"{best.time_s * 1e3:.3f} ms, {default / best.time_s:.2f}x the default variant's "
        f"{default * 1e3:.3f} ms ({named_values(space.defaults)})")
    params = list(space.parameters)
    shown = trials[[*params, "status"]].assign(time_ms=(trials["time_s"] * 1e3).round(4))
    report.add(
        "Tuning on the local device",
        f"`gpuperf tune {TUNED_SPACE} -p n=1024 -p m=1024 --budget {TUNING_BUDGET}` on {device} ({result.gpu}): "
        f"each variant the search picks is built, verified and timed. The first {RANKED_PICKS} picks follow the "
        f"ranking of PCA + 5-NN on static features trained on the other stencils' measured variants "
        f"({measured_variants.name}, never this stencil's own: the LIFT setting), then a Gaussian process refits "
        f"on every time. {found}. Trials in order: [tune_jacobi2d_5pt.csv](tune_jacobi2d_5pt.csv); report with "
        f"the best-so-far curve: [tune/report.md](tune/report.md).\n\n"
        f"{_markdown_table(shown)}",
    )


def geometry_step(report: DemoReport) -> None:
    """Threads and blocks for parallel loops of several trip counts on the H100, by each policy."""
    from gpuperf.decisions.geometry import RULES, choose_geometry
    from gpuperf.decisions.geometry_eval import EVALUATED_POLICIES
    from gpuperf.decisions.reports import geometry_study, policy_summary

    rows = []
    for trip in (10, 128, 4096, 1_000_000, 100_000_000):
        for policy in RULES:
            chosen = choose_geometry("H100", trip, registers=32, policy=policy)
            rows.append({"trip": trip, "policy": policy, "threads": chosen.threads, "blocks": chosen.blocks,
                         "class": chosen.loop_class})
    frame = pd.DataFrame(rows)
    write_table(frame, report.out / "geometry.csv")
    picks, _ = geometry_study(report.out / "geometry")
    judged = policy_summary(picks, EVALUATED_POLICIES)
    policies = ", ".join(f"{policy} {row.speedup_vs_llvm:.2f}x" for policy, row in judged.iterrows()
                         if policy not in ("llvm", "best"))
    best = ""
    if "best" in judged.index:
        best = f" (the measured best block shape: {judged.loc['best', 'speedup_vs_llvm']:.2f}x)"
    report.headline(f"Launch geometry on the bundled block-shape choices, speedup over LLVM's default: "
                    f"{policies}{best}.")
    report.add(
        "Launch geometry",
        "Threads per block and blocks for a parallel loop (32 registers, no shared memory) on the H100 "
        f"([geometry.csv](geometry.csv)).\n\n{_markdown_table(frame)}\n\nEach policy judged on the bundled "
        "block-shape choices (configurations that differ only in block shape; report with the strip chart: "
        "[geometry/report.md](geometry/report.md), which also times each policy's call against the measured "
        f"kernel times).\n\n{_markdown_table(judged)}",
    )
    h100_sweep_section(report)
    sweep_section(report)


def h100_sweep_section(report: DemoReport) -> None:
    """The policies judged on the bundled (threads, blocks) sweep measured on an H100 (no GPU needed)."""
    from gpuperf.decisions.geometry_sweep import figure_labels, pick_labels
    from gpuperf.decisions.reports import judge_bundled_sweep

    judged = judge_bundled_sweep("h100")
    overall = judged.figures[judged.figures["scope"] == "all"].set_index("policy")
    policies = [p for p in overall.index if p not in ("llvm", "best")]
    speedups = ", ".join(f"{p} {overall.loc[p, 'speedup_vs_llvm']:.2f}x" for p in policies)
    within = ", ".join(f"{p} {round(overall.loc[p, 'within_10pct'] * overall.loc[p, 'choices'])}/"
                       f"{overall.loc[p, 'choices']}" for p in ["llvm", *policies])
    counts = [str(t) for t in sorted(judged.choices["trip"].unique())]
    trips = ", ".join(counts[:-1]) + " and " + counts[-1] if len(counts) > 1 else counts[0]
    report.headline(f"Launch geometry on the bundled H100 sweep (saxpy and polynomial loops, trips {trips}), speedup "
                    f"over LLVM's default: {speedups} (the best measured geometry "
                    f"{overall.loc['best', 'speedup_vs_llvm']:.2f}x); within 10 % of the best: {within}.")
    figures = figure_labels(judged.figures)
    report.add(
        "Launch geometry on an H100 (bundled sweep)",
        f"`gpuperf geometry-sweep --table data/{judged.file}`: grid-stride saxpy and polynomial loops measured on an "
        f"NVIDIA H100 ({judged.descriptor.name}, {judged.descriptor.sms} SMs) over a (threads, blocks) grid at trip counts {trips}, "
        f"{len(judged.measured)} points, every output verified (the bundled data's README.md); judged here without a GPU, each "
        "policy on its exact measured pick, the model trained on the other loop's sweep (report with the time "
        "maps: [geometry/sweep_h100/report.md](geometry/sweep_h100/report.md)). Each cell: the geometric-mean "
        "speedup over LLVM's default, then the choices within 10 % of the best, of how many.\n\n"
        f"{_markdown_table(figures)}\n\nEach policy's pick, threads x blocks (points: the geometries measured):"
        f"\n\n{_markdown_table(pick_labels(judged.choices, judged.summary.index))}",
    )


SWEEP_LOOPS, SWEEP_TRIPS, SWEEP_BLOCKS_STEP = ("saxpy", "polynomial"), (100_000,), 4


def sweep_section(report: DemoReport) -> None:
    """A (threads, blocks) sweep of two parallel loops on the local device, the policies judged on it."""
    from gpuperf.decisions.geometry_sweep import (
        measure_sweep, measured_device_descriptor, pick_labels, sweep_choices, sweep_summary,
    )
    from gpuperf.decisions.reports import sweep_report
    from gpuperf.measure.devices import open_device

    name = local_device()
    device = open_device(name)
    descriptor = measured_device_descriptor(device)
    measured = measure_sweep(device, SWEEP_LOOPS, SWEEP_TRIPS, descriptor, blocks_step=SWEEP_BLOCKS_STEP)
    write_table(measured, report.out / "geometry_sweep.csv")
    choices = sweep_choices(measured, descriptor)
    summary = sweep_summary(choices)
    sweep_report(report.out / "geometry_sweep", choices, summary, measured, descriptor.name, descriptor=descriptor)
    picks = pick_labels(choices, summary.index)
    report.add(
        "Launch geometry on the local device",
        f"`gpuperf geometry-sweep --device {name} --loops {','.join(SWEEP_LOOPS)} --trips "
        f"{','.join(map(str, SWEEP_TRIPS))} --blocks-step {SWEEP_BLOCKS_STEP}`: grid-stride loops measured over a "
        f"(threads, blocks) grid on {descriptor.name} (its compute units, {descriptor.sms}, counted as SMs), "
        f"{len(measured)} points ([geometry_sweep.csv](geometry_sweep.csv); report with the time maps: "
        "[geometry_sweep/report.md](geometry_sweep/report.md)). Each policy is judged on its exact pick; the "
        f"model is trained on the other loop's sweep.\n\n{_markdown_table(summary)}\n\n{_markdown_table(picks)}",
    )


STEPS: dict[str, Callable[[DemoReport], None]] = {
    "catalog": catalog_step,
    "features": features_step,
    "hardware": hardware_step,
    "measure": measure_step,
    "linear-model": linear_model_step,
    "models": models_step,
    "advise": advise_step,
    "explore": explore_step,
    "geometry": geometry_step,
}


# The report folders each step writes inside the demo's folder, checked before any work as the demo's
# own folder is (the demo's tune/ is left out: the tuning report there is the demo's own, rewritten on a rerun).
STEP_REPORTS: dict[str, tuple[str, ...]] = {
    "linear-model": ("linear",),
    "models": ("rodinia",),
    "advise": ("advise",),
    "explore": ("explore",),
    "geometry": ("geometry", "geometry/sweep", "geometry/sweep_h100", "geometry_sweep"),
}


def step_reports(steps: list[str] | None = None) -> list[str]:
    """The report folders ``steps`` (all: None) write inside the demo's folder."""
    return [folder for name in steps or list(STEPS) for folder in STEP_REPORTS.get(name, ())]


def run_demo(out: str | Path = "gpuperf-report", steps: list[str] | None = None) -> Path:
    """Run the demo steps into ``out`` and return the path of its ``index.md``."""
    # On pocl's CPU device, one worker thread makes timings far steadier on a shared machine (the
    # linear model's benchmark measures the same way); it must be set before OpenCL starts.
    os.environ.setdefault("POCL_MAX_PTHREAD_COUNT", "1")
    report = DemoReport(Path(out))
    report.out.mkdir(parents=True, exist_ok=True)
    report.start("set-up")
    report.add("Set-up", f"pocl worker threads (CPU OpenCL device only): {os.environ['POCL_MAX_PTHREAD_COUNT']}.")
    for name in steps or list(STEPS):
        console.rule(f"[bold]gpuperf demo: {name}")
        start = time.perf_counter()
        report.start(name)
        try:
            STEPS[name](report)
        except LocalDeviceUnusable as exc:  # what the step does without a device is in the report already
            report.add(f"{name} on the local device (not run)", f"Not run here: {exc}")
            report.headline(f"{name} on the local device: not run (the device cannot run kernels; its section says why)")
            console.print(f"[yellow]step {name} on the local device not run[/yellow]: {exc}")
        except Exception as exc:  # noqa: BLE001 - one failing step must not hide the others
            report.add(f"{name} (failed)", f"This step failed: `{type(exc).__name__}: {exc}`")
            report.headline(f"{name}: failed ({type(exc).__name__}: {exc})")
            console.print(f"[red]step {name} failed[/red]: {exc}")
            console.print(traceback.format_exc(), style="dim")
        console.print(f"{name}: {time.perf_counter() - start:.1f} s")
        report.write_index()
    return report.write_index()
