"""Stevens & Klöckner's linear count model reproduced as a report: calibrated per device, tested on held-out kernels.

Each device's model is fitted on its calibration kernels' points and tested on the held-out kernels
(the test kernels and the LIFT stencils, at sizes the fit never saw) measured on the same device
(:mod:`gpuperf.evaluation.linear_eval`). The devices are the bundled GPU tables, measured by gpuperf
on an NVIDIA H100 and an H200, and optionally the local device, measured now. The report holds the
geometric-mean relative error per kernel (the paper reports 0.06-0.42 per GPU; gpuperf's target is at
most 0.25 on held-out kernels), the fitted weights, and predicted against measured time on log axes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from gpuperf.evaluation.linear_eval import LinearEvaluation, evaluate_linear_model, evaluate_linear_table
from gpuperf.evaluation.protocols import Evaluation
from gpuperf.evaluation.report import text_table, write_report

BUNDLED_TABLES = {"H100 SXM": "linear_model_h100.csv.gz", "H200": "linear_model_h200.csv.gz"}
TARGET_GMRE = 0.25
PAPER_RANGE = "0.06-0.42"
# The two folds: the plots title the held-out one "held out: ...", the in-sample one by its name.
CALIBRATION, HELD_OUT = "the calibration kernels (in-sample)", "the test kernels and stencils (never fitted)"


# the per-device figures reproduce linear prints (the report has them all)
HEADLINE_COLUMNS = ["held_out_kernels", "held_out_mean_gmre", "held_out_median_gmre", "held_out_worst_gmre",
                    "worst_held_out_kernel", "in_sample_mean_gmre", "meets_target"]


def summary_table(evaluations: Mapping[str, LinearEvaluation]) -> pd.DataFrame:
    """Per device: points, kernels and the geometric-mean relative error per kernel, in-sample and held out."""
    rows = []
    for device, evaluation in evaluations.items():
        summary = evaluation.summary()
        worst = evaluation.held_out_error().idxmax()
        rows.append({
            "device": device, "calibration_points": len(evaluation.calibration.data),
            "held_out_points": len(evaluation.held_out), **summary,
            "worst_held_out_kernel": worst, "meets_target": summary["held_out_mean_gmre"] <= TARGET_GMRE,
        })
    return pd.DataFrame(rows).set_index("device")


def per_kernel_table(evaluations: Mapping[str, LinearEvaluation]) -> pd.DataFrame:
    """Geometric-mean relative error of each kernel (rows) on each device (columns), and whether it was held out."""
    columns = {}
    for device, evaluation in evaluations.items():
        columns[device] = pd.concat([evaluation.in_sample(), evaluation.held_out_error()])
    table = pd.DataFrame(columns).rename_axis("kernel")
    held = set().union(*(set(e.held_out_error().index) for e in evaluations.values()))
    table.insert(0, "held_out", [kernel in held for kernel in table.index])
    return table.sort_values(["held_out", *list(evaluations)[:1]], ascending=[False, False])


def weights_table(evaluations: Mapping[str, LinearEvaluation]) -> pd.DataFrame:
    """The fitted weight of each property (seconds per unit) on each device."""
    return pd.DataFrame({device: e.calibration.model.weights_ for device, e in evaluations.items()}).rename_axis(
        "property")


def as_evaluation(device: str, evaluation: LinearEvaluation) -> Evaluation:
    """The calibration and held-out points as a protocol ``Evaluation`` (folds: in-sample, held out), for
    the report's metrics tables and its predicted-vs-measured plot."""
    parts = []
    for fold, frame in ((CALIBRATION, evaluation.calibration.data), (HELD_OUT, evaluation.held_out)):
        parts.append(pd.DataFrame({"kernel": frame["kernel"].to_numpy(), "gpu": device, "fold": fold,
                                   "measured": frame["time_s"].to_numpy(float),
                                   "predicted": frame["predicted_s"].to_numpy(float)}))
    return Evaluation(f"linear count model on {device}", ("fold",), pd.concat(parts, ignore_index=True),
                      in_sample=(CALIBRATION,))


def bundled_evaluations(tables: Mapping[str, str] = BUNDLED_TABLES,
                        echo: Callable[[str], None] = lambda line: None) -> dict[str, LinearEvaluation]:
    """Each bundled table's calibration tested on its held-out kernels, by device name."""
    from gpuperf.datasets.bundled import data_dir

    evaluations = {}
    for name, file in tables.items():
        echo(f"linear: calibrating on the bundled {name} points ({file})")
        evaluations[name] = evaluate_linear_table(data_dir() / file)
    return evaluations


def linear_study(folder: str | Path, tables: Mapping[str, str] = BUNDLED_TABLES, device: str | None = None,
                 echo: Callable[[str], None] = lambda line: None, cycles: int = 30,
                 calibration_kernels: Sequence[str] | None = None,
                 held_out_kernels: Sequence[str] | None = None) -> dict[str, Path]:
    """Calibrate and test the linear count model on each bundled table (and on ``device``, measured into
    ``folder/linear_model.sqlite`` in ``cycles`` interleaved cycles; resumed from it when rerun; all of
    each plan's kernels unless ``calibration_kernels`` or ``held_out_kernels`` name some) and write the report."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    evaluations = bundled_evaluations(tables, echo)
    if device is not None:
        echo(f"linear: measuring the calibration and held-out kernels on {device} ({cycles} cycles; minutes)")
        local = evaluate_linear_model(device, folder / "linear_model.sqlite", cycles=cycles, progress=True,
                                      calibration_kernels=calibration_kernels, held_out_kernels=held_out_kernels)
        evaluations[local_label(local, device)] = local
    paths = linear_report(folder, evaluations, tables)
    echo("\n== Held-out geometric-mean relative error per kernel (gpuperf's target: a mean of at most "
         f"{TARGET_GMRE:g})")
    echo(text_table(summary_table(evaluations)[HEADLINE_COLUMNS]))
    return paths


def local_label(evaluation: LinearEvaluation, device: str) -> str:
    """A measured device's name in the report: its description and gpuperf's name for it."""
    return f"{evaluation.calibration.device.description} ({device})"


def linear_report(folder: str | Path, evaluations: Mapping[str, LinearEvaluation],
                  tables: Mapping[str, str] = BUNDLED_TABLES) -> dict[str, Path]:
    """The report of ``evaluations`` (device name -> evaluation), ``tables`` the bundled files among them."""
    summary = summary_table(evaluations)
    notes = [
        "Runtime = sum of weight x property over the kernel's static counts; weights fitted per device by least "
        "squares on relative error (each row divided by its measured time), with sign bounds and the overlap "
        "property min(loads, stores) (gpuperf.models.linear).",
        "gmre: geometric-mean relative error per kernel, exp(mean |ln(predicted / measured)|) - 1 (0.1: off by "
        f"10 %); the Loopy paper reports {PAPER_RANGE} per GPU (this gmre is the stricter reading: a geometric mean "
        "of |predicted - measured| / measured over the same predictions is never larger); gpuperf's target is a "
        "held-out mean of at most "
        f"{TARGET_GMRE:g}.",
        "Fitted weights: a weight of exactly 0 (printed 0.000) sits on its sign bound: the property adds nothing "
        "to that device's times.",
    ]
    if tables:
        notes.append("Bundled tables: " + ", ".join(f"{name}: data/{file}" for name, file in tables.items())
                     + " (measured by gpuperf; provenance in the bundled data's README.md, gpuperf datasets shows where).")
    return write_report(
        folder, "Linear count model (Stevens & Klöckner)",
        evaluations={device: as_evaluation(device, evaluation) for device, evaluation in evaluations.items()},
        tables={"Per device": summary, "Geometric-mean relative error per kernel": per_kernel_table(evaluations),
                "Fitted weights (seconds per unit)": weights_table(evaluations)},
        notes=notes, metrics={"per_device": summary.reset_index().to_dict(orient="records")},
    )
