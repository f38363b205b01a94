"""``gpuperf reproduce linear``: the linear count model per device, tested on held-out kernels, as a report."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from gpuperf.cli import main
from gpuperf.evaluation.linear_eval import evaluate_linear_table


def test_the_report_holds_each_bundled_gpus_held_out_errors_and_plots(tmp_path, capsys):
    """The H100's and H200's calibrations, each tested on its own held-out kernels: the report's figures
    are those of evaluate_linear_table on the same tables, with a predicted-vs-measured plot per GPU."""
    from gpuperf.datasets.bundled import data_dir

    assert main(["reproduce", "linear", "--out", str(tmp_path), "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    report = (tmp_path / "report.md").read_text()
    for device, file in (("H100 SXM", "linear_model_h100.csv.gz"), ("H200", "linear_model_h200.csv.gz")):
        expected = evaluate_linear_table(data_dir() / file).summary()
        (row,) = [r for r in metrics["metrics"]["per_device"] if r["device"] == device]
        assert row["held_out_mean_gmre"] == pytest.approx(expected["held_out_mean_gmre"])
        assert row["meets_target"] == (expected["held_out_mean_gmre"] <= 0.25)
        slug = device.lower().replace(" ", "_")
        assert (tmp_path / f"pred_vs_measured_{slug}.png").exists() and f"## Evaluation {device}" in report
    assert "## Geometric-mean relative error per kernel" in report and "| nbody | True |" in report
    assert "## Fitted weights (seconds per unit)" in report
    # The pooled figure is the held-out rows' only: the calibration points are shown, never pooled.
    held_out = evaluate_linear_table(data_dir() / "linear_model_h100.csv.gz").held_out
    assert f"Overall (error metrics pooled over {len(held_out)} held-out rows" in report
    assert "Not pooled: the calibration kernels (in-sample), whose rows the model was fitted on." in report


def test_reproduce_linear_prints_each_devices_held_out_figures_as_the_readme_says(tmp_path, capsys):
    """The README's table names `reproduce linear` as printing the H100's and H200's held-out figures: it
    printed only where its report went."""
    from gpuperf.datasets.bundled import data_dir

    assert main(["reproduce", "linear", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == f"report: {tmp_path / 'report.md'}"
    for device, file in (("H100 SXM", "linear_model_h100.csv.gz"), ("H200", "linear_model_h200.csv.gz")):
        expected = evaluate_linear_table(data_dir() / file).summary()
        (row,) = [line for line in lines if line.startswith(device + " ")]
        assert row.split()[len(device.split()):len(device.split()) + 3] == [
            str(expected["held_out_kernels"]), f"{expected['held_out_mean_gmre']:.3f}",
            f"{expected['held_out_median_gmre']:.3f}"]


@pytest.mark.opencl
def test_the_local_device_joins_the_report_when_asked(tmp_path):
    """--device measures the calibration and held-out kernels on it (here eight light ones, 24 points
    for the cpu set's 22 properties, 23 in intel_cpu, and one, two cycles)."""
    from gpuperf.evaluation.linear_report import linear_study

    light = ["empty", "vector_copy", "vector_fill", "copy_2d", "scale_add_stride1", "add_four_vectors", "row_sum",
             "column_sum"]
    paths = linear_study(tmp_path, tables={}, device="opencl:0", cycles=2, calibration_kernels=light,
                         held_out_kernels=["stencil2d"])
    summary = pd.DataFrame(json.loads(paths["json"].read_text())["metrics"]["per_device"])
    (row,) = summary.to_dict(orient="records")
    assert row["device"].endswith("(opencl:0)") and row["held_out_kernels"] == 1 and row["held_out_points"] == 3
    assert (tmp_path / "linear_model.sqlite").exists()


def test_device_goes_with_the_linear_study_only(capsys):
    assert main(["reproduce", "geometry", "--device", "opencl:0"]) == 2
    assert "--device goes with reproduce linear, not geometry" in capsys.readouterr().err


def test_reproduce_writes_beside_the_demos_reports_not_over_them(tmp_path, monkeypatch, capsys):
    """reproduce's default folder was gpuperf-report/STUDY, the very folders the demo's index links:
    a rerun replaced the report the index quoted figures from."""
    monkeypatch.chdir(tmp_path)
    linked = tmp_path / "gpuperf-report" / "linear" / "report.md"
    linked.parent.mkdir(parents=True)
    linked.write_text("the demo's linear report\n")
    assert main(["reproduce", "linear", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)
    assert linked.read_text() == "the demo's linear report\n"
    assert (tmp_path / "gpuperf-reproduce" / "linear" / "report.md").exists()
