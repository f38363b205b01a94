"""The demo: its steps write their files and sections, and a failing step is reported, not hidden."""

from __future__ import annotations

import pandas as pd
import pytest

from gpuperf import demo
from gpuperf.cli import main


def test_the_exploration_headline_counts_a_miss_as_budget_plus_one(tmp_path, monkeypatch):
    """Geometric means: the search's 4 and a miss within 100 (101) give 20.10; random order within the budget
    (9 and 16: 12.0) beside its expectation with no budget (4 and 9: 6.0)."""
    from gpuperf.decisions import cross_kernel, reports

    frame = pd.DataFrame({"gpu": ["a", "b"], "evals_to_90": [4.0, None], "transfer_evals_to_90": [2.0, 8.0],
                          "random_expected_evals_to_90": [4.0, 9.0],
                          "random_expected_evals_to_90_within_budget": [9.0, 16.0], "random_evals_to_90": [1.0, 1.0]})
    monkeypatch.setattr(reports, "exploration_study", lambda *args, **kwargs: (frame, {}))
    monkeypatch.setattr(cross_kernel, "leave_one_kernel_out", lambda *args, **kwargs: pd.DataFrame({"x": [1]}))
    monkeypatch.setattr(demo, "tuning_section", lambda *args: None)
    report = demo.DemoReport(tmp_path, step="explore")
    demo.explore_step(report)
    line, = report.headlines["explore"]
    assert "left out: 20.10 evaluations to reach 90 % of the best" in line
    assert "plain transfer 4.00, random order 12.0 (the exact expectation, scored as the search is; with no budget 6.0" \
        in line


def test_the_demo_checks_its_steps_report_folders_before_any_work(tmp_path, monkeypatch, capsys) -> None:
    """A tuning report where a step writes its own (geometry/sweep) is refused before any step runs."""
    ran = []
    monkeypatch.setitem(demo.STEPS, "geometry", lambda report: ran.append("geometry"))
    monkeypatch.setitem(demo.STEPS, "catalog", lambda report: ran.append("catalog"))
    tuned = tmp_path / "geometry" / "sweep"
    tuned.mkdir(parents=True)
    (tuned / "metrics.json").write_text('{"metrics": {"tuning": {"budget": 5}}}')
    assert main(["demo", "--out", str(tmp_path), "--step", "geometry"]) == 2
    assert f"--out {tuned}: holds a tuning report (gpuperf tune)" in capsys.readouterr().err
    assert ran == []
    assert main(["demo", "--out", str(tmp_path), "--step", "catalog"]) == 0  # a step writing no geometry/sweep
    assert ran == ["catalog"]


@pytest.mark.opencl
def test_demo_steps_write_report_files(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("POCL_MAX_PTHREAD_COUNT", raising=False)  # the demo sets it; restored afterwards
    monkeypatch.setattr(demo, "SWEEP_TRIPS", (300,))  # a small live sweep
    monkeypatch.setattr(demo, "SWEEP_BLOCKS_STEP", 8)
    assert main(["demo", "--out", str(tmp_path), "--step", "catalog", "--step", "geometry"]) == 0
    index = (tmp_path / "index.md").read_text()
    assert "## Kernel catalog" in index and "## Launch geometry" in index
    assert "(failed)" not in index
    catalog = pd.read_csv(tmp_path / "catalog.csv")
    assert {"vector_copy", "stencil2d", "nbody"} <= set(catalog["kernel"])
    geometry = pd.read_csv(tmp_path / "geometry.csv")
    libomptarget = geometry[(geometry["policy"] == "libomptarget") & (geometry["trip"] == 128)].iloc[0]
    assert (libomptarget["threads"], libomptarget["blocks"]) == (32, 4)
    judged = (tmp_path / "geometry" / "report.md").read_text()
    assert "heuristic" in judged and "![speedup_vs_llvm](speedup_vs_llvm.png)" in judged
    assert "## Cost of one decision" in judged and "| heuristic (descriptor given) |" in judged
    assert "[sweep/report.md](sweep/report.md)" in judged and (tmp_path / "geometry" / "sweep" / "report.md").exists()
    assert "| heuristic |" in index  # the short version: one row per policy in the index
    assert "## Launch geometry on the local device" in index
    assert "## Launch geometry on an H100 (bundled sweep)" in index  # judged from data/, no GPU needed
    assert (tmp_path / "geometry" / "sweep_h100" / "report.md").exists()
    assert "[sweep_h100/report.md](sweep_h100/report.md)" in judged
    sweep = pd.read_csv(tmp_path / "geometry_sweep.csv")
    assert set(sweep["kernel"]) == {"loop_saxpy", "loop_polynomial"} and (sweep["status"] == "ok").all()
    assert "![time_maps](time_maps.png)" in (tmp_path / "geometry_sweep" / "report.md").read_text()


def test_the_geometry_step_judges_the_bundled_h100_sweep_without_a_gpu(tmp_path) -> None:
    report = demo.DemoReport(tmp_path)
    report.start("geometry")
    demo.h100_sweep_section(report)
    (headline,) = report.headlines["geometry"]
    assert headline.startswith("Launch geometry on the bundled H100 sweep (saxpy and polynomial loops, trips 1000, "
                               "100000 and 10000000), speedup over LLVM's default: libomptarget 0.99x, heuristic "
                               "1.06x, occupancy 0.95x, model ")
    assert "(the best measured geometry 1.13x); within 10 % of the best: llvm 4/6, libomptarget 4/6, " in headline
    (section,) = report.sections["geometry"]
    assert "`gpuperf geometry-sweep --table data/geometry_sweep_h100.csv.gz`" in section
    assert "| trip=100000 | 1.00x 2/2 | 0.78x 0/2 | 0.91x 0/2 | 1.02x 2/2 |" in section
    assert "| loop_saxpy trip=10000000 | 128x78125 | 128x3200 | 64x4224 | 1024x9766 |" in section


def test_failing_step_is_reported_in_the_index(tmp_path, monkeypatch) -> None:
    def broken(report: demo.DemoReport) -> None:
        raise RuntimeError("no device here")

    monkeypatch.delenv("POCL_MAX_PTHREAD_COUNT", raising=False)
    monkeypatch.setitem(demo.STEPS, "catalog", broken)
    demo.run_demo(tmp_path, ["catalog"])
    assert "## catalog (failed)" in (tmp_path / "index.md").read_text()
    assert "no device here" in (tmp_path / "index.md").read_text()


def test_unknown_step_is_one_clear_error(tmp_path, capsys) -> None:
    assert main(["demo", "--out", str(tmp_path), "--step", "catalogue"]) == 2
    assert "unknown demo step 'catalogue'; did you mean catalog" in capsys.readouterr().err


def test_rerunning_a_step_keeps_the_others_and_the_summary_leads(tmp_path, monkeypatch, capsys) -> None:
    """`gpuperf demo --step X` after a full run replaces X's sections and keeps every other step's."""
    calls = []

    def first(report: demo.DemoReport) -> None:
        report.add("First", "one")
        report.headline("first figure 1")

    def second(report: demo.DemoReport) -> None:
        calls.append(1)
        report.add("Second", f"run {len(calls)}")
        report.headline(f"second figure {len(calls)}")

    monkeypatch.delenv("POCL_MAX_PTHREAD_COUNT", raising=False)
    monkeypatch.setattr(demo, "STEPS", {"first": first, "second": second})
    assert main(["demo", "--out", str(tmp_path)]) == 0
    assert main(["demo", "--out", str(tmp_path), "--step", "second"]) == 0
    index = (tmp_path / "index.md").read_text()
    assert "## First\n\none" in index and "run 2" in index and "run 1" not in index
    assert index.index("## Summary") < index.index("## Set-up") < index.index("## First") < index.index("## Second")
    assert "- first figure 1\n- second figure 2\n" in index
    assert capsys.readouterr().out.endswith(f"- first figure 1\n- second figure 2\nreport: {tmp_path / 'index.md'}\n")


def test_a_demo_cut_short_while_keeping_its_steps_leaves_the_earlier_ones_whole(tmp_path, monkeypatch,
                                                                                capsys) -> None:
    """The kept steps' file is replaced whole: a write that fails half-way keeps the earlier steps, and a
    file damaged some other way is noted, not a traceback on every later run."""
    def first(report: demo.DemoReport) -> None:
        report.add("First", "one")
        report.headline("first figure 1")

    def second(report: demo.DemoReport) -> None:
        report.add("Second", "two")

    monkeypatch.delenv("POCL_MAX_PTHREAD_COUNT", raising=False)
    monkeypatch.setattr(demo, "STEPS", {"first": first, "second": second})
    assert main(["demo", "--out", str(tmp_path), "--step", "first"]) == 0
    kept = (tmp_path / "index_steps.json").read_text()
    index = (tmp_path / "index.md").read_text()
    real_write_text = type(tmp_path).write_text

    def half_then_fail(path, text, *args, **kwargs):  # a full disk or a killed process
        real_write_text(path, text[: len(text) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(type(tmp_path), "write_text", half_then_fail)
    assert main(["demo", "--out", str(tmp_path), "--step", "second"]) == 2
    monkeypatch.undo()
    monkeypatch.setattr(demo, "STEPS", {"first": first, "second": second})
    assert (tmp_path / "index_steps.json").read_text() == kept
    assert (tmp_path / "index.md").read_text() == index  # the earlier index whole, not half a new one
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.md", "index_steps.json"]

    (tmp_path / "index_steps.json").write_text(kept[:20])  # damaged by something else
    assert main(["demo", "--out", str(tmp_path), "--step", "second"]) == 0
    assert "index_steps.json: damaged" in capsys.readouterr().err
    assert "## Second\n\ntwo" in (tmp_path / "index.md").read_text()
    for damaged in ("[]", '{"first": "x"}'):  # JSON, but not the steps' texts: a traceback on every later run
        (tmp_path / "index_steps.json").write_text(damaged)
        assert main(["demo", "--out", str(tmp_path), "--step", "second"]) == 0
        assert "index_steps.json: damaged (not a step's sections and headlines by step name)" in capsys.readouterr().err


def test_models_step_sums_up_leave_one_gpu_out_and_the_one_launch_calibration(tmp_path, monkeypatch) -> None:
    """The Rodinia headlines read the report's own tables: the targets' range and the one-launch range."""
    import json

    from gpuperf.evaluation import rodinia_report

    def fake_reproduction(out, scenarios, models, echo):
        out.mkdir(parents=True)
        tables = {
            "Targets for nested/select": [{"gpu": "A", "ours": 0.3, "meets_ceiling": False},
                                          {"gpu": "B", "ours": 0.1, "meets_ceiling": True}],
            rodinia_report.ONE_LAUNCH: [{"gpu": "A", "one_launch": 0.07}, {"gpu": "B", "one_launch": 0.04}],
        }
        (out / "metrics.json").write_text(json.dumps({"tables": tables}))
        return {"json": out / "metrics.json"}

    monkeypatch.setattr(rodinia_report, "reproduce_rodinia", fake_reproduction)
    report = demo.DemoReport(tmp_path)
    report.start("models")
    demo.models_step(report)
    lines = report.headlines["models"]
    assert "per-kernel MAPE 0.10 to 0.30" in lines[0] and "at most 0.25 on 1 of 2 GPUs" in lines[0]
    assert "one launch per kernel" in lines[1] and "per-kernel MAPE 0.04 to 0.07" in lines[1]
    section = report.sections["models"][0]
    assert "### Calibrated by one launch" in section and "0.07" in section


def test_linear_model_step_reports_the_bundled_h100_points_even_where_the_local_device_fails(
        tmp_path, monkeypatch) -> None:
    def no_device():
        raise RuntimeError("no OpenCL device here")

    monkeypatch.setattr(demo, "local_device", no_device)
    assert main(["demo", "--out", str(tmp_path), "--step", "linear-model"]) == 0
    index = (tmp_path / "index.md").read_text()
    assert "## Linear count model on an NVIDIA H100" in index and "linear-model (failed)" in index
    h100 = pd.read_csv(tmp_path / "linear_model_h100.csv").set_index("property_set")
    assert list(h100.index) == ["gpu", "stevens_klockner"]
    assert h100.loc["gpu", "held_out_mean_gmre"] < h100.loc["stevens_klockner", "held_out_mean_gmre"]
    assert h100.loc["stevens_klockner", "worst"].startswith("nbody ")
    assert f"{h100.loc['gpu', 'held_out_mean_gmre']:.3f} with the gpu property set" in index
    ranked = pd.read_csv(tmp_path / "linear_model_h100_variants.csv").set_index("kernel")
    assert len(ranked) == 8 and (ranked["variants"] == 24).all()
    assert ranked["evals_to_90"].sum() < ranked["random_evals_to_90"].sum()
    assert f"Spearman {ranked['spearman'].mean():.2f} per stencil" in index


@pytest.mark.parametrize(("step", "folder"), [("linear-model", "linear"), ("models", "rodinia"), ("advise", "advise"),
                                              ("explore", "explore"), ("geometry", "geometry_sweep")])
def test_each_step_checks_the_report_folder_it_writes(tmp_path, monkeypatch, capsys, step, folder) -> None:
    """Every step's own report folder (linear/, rodinia/, advise/, explore/, geometry_sweep/) holding a
    tuning report is refused before the step runs, as docs/files.md says, not written over."""
    ran = []
    monkeypatch.setitem(demo.STEPS, step, lambda report: ran.append(step))
    tuned = tmp_path / folder
    tuned.mkdir(parents=True)
    (tuned / "metrics.json").write_text('{"metrics": {"tuning": {"budget": 5}}}')
    assert main(["demo", "--out", str(tmp_path), "--step", step]) == 2
    assert f"--out {tuned}: holds a tuning report (gpuperf tune)" in capsys.readouterr().err
    assert ran == []


def test_a_local_device_that_builds_nothing_leaves_the_demos_other_steps_and_sections_whole(tmp_path, monkeypatch):
    """pocl on a CPU its LLVM does not know opens but builds nothing: the steps on the local device say they
    were not run and why, while the bundled-data sections of the same steps are kept (not a failed step)."""
    from gpuperf.errors import GpuperfError
    from gpuperf.measure import devices

    def unusable(name: str):
        raise GpuperfError(f"device '{name}' cannot build OpenCL programs: error: unknown target CPU 'generic'")

    monkeypatch.delenv("POCL_MAX_PTHREAD_COUNT", raising=False)  # the demo sets it; restored afterwards
    monkeypatch.setattr(devices, "open_device", unusable)
    assert main(["demo", "--out", str(tmp_path), "--step", "measure", "--step", "linear-model"]) == 0
    index = (tmp_path / "index.md").read_text()
    assert "(failed)" not in index
    assert "## measure on the local device (not run)" in index
    assert "## linear-model on the local device (not run)" in index
    summary = index.split("## Set-up")[0]  # one short line a step; the reason once in each step's section
    assert "- measure on the local device: not run (the device cannot run kernels; its section says why)" in summary
    assert "unknown target CPU" not in summary
    assert "unknown target CPU 'generic'" in index
    assert "Calibrated and tested on the bundled H100 points" in index  # the step's part without a device
    assert "## Linear count model on the local device" not in index


def test_the_measure_step_names_why_its_points_failed_and_claims_no_check_of_none(tmp_path, monkeypatch) -> None:
    """On a machine whose driver builds no kernel the step said 'Measured 0 catalog points ... every output
    checked against NumPy' and nothing of why: its headlines now name the first failure of each kind."""
    from types import SimpleNamespace

    from gpuperf.measure import campaign as campaign_module
    from gpuperf.measure.devices import compile_failure

    def compile_(kernel):
        raise compile_failure(kernel, RuntimeError("clBuildProgram failed\nerror: unknown target CPU 'generic'"))

    device = SimpleNamespace(name="fake:0", memory_bytes=2**30, compile=compile_, provenance=dict)
    monkeypatch.setattr(campaign_module, "open_device", lambda name: device)
    monkeypatch.setattr(demo, "local_device", lambda: "fake:0")
    report = demo.DemoReport(tmp_path)
    report.start("measure")
    demo.measure_step(report)
    first, failed = report.headlines["measure"]
    assert first.startswith("Measured 0 catalog points on fake:0 (failures: {'compile_failed': ") and "NumPy" not in first
    assert failed.startswith("Failed: ") and "point(s) compile_failed, the first vector_copy at n=4096: kernel " \
        "'vector_copy' failed to compile: RuntimeError: clBuildProgram failed; error: unknown target CPU" in failed
    assert failed in report.sections["measure"][0]


def test_the_demos_tables_write_launch_geometry_whole_and_times_as_measured(tmp_path):
    """The demo's features and sweep tables wrote a launch's sizes as 4096.0 and 256.0, unlike the other tables
    gpuperf writes; its times are written as measured."""
    frame = pd.DataFrame({"kernel": ["a", "b"], "global_size_0": [4096.0, 1024.0], "local_size_0": [256.0, None],
                          "time_s": [1.0, 2.5e-06]})
    demo.write_table(frame, tmp_path / "t.csv")
    assert (tmp_path / "t.csv").read_text().splitlines() == [
        "kernel,global_size_0,local_size_0,time_s", "a,4096,256,1.0", "b,1024,,2.5e-06"]
