"""Hand-worked checks of how a (threads, blocks) sweep is judged and resumed, and of what the
geometry-sweep command prints and writes, each pinning a behaviour no other test held."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from gpuperf.cli import main
from gpuperf.decisions.geometry import device_descriptor
from gpuperf.decisions.geometry_sweep import (
    cpu_descriptor,
    figure_labels,
    pick_labels,
    sweep_choices,
    sweep_figures,
    sweep_geometries,
    sweep_summary,
    table_descriptor,
)
from gpuperf.errors import GpuperfError


def _choices(llvm, heuristic, best, trip=1000):
    """One choice per time: loop_i at ``trip``, 128 threads for llvm, 64 for the heuristic."""
    return pd.DataFrame({"group": [f"loop_{i} trip={trip}" for i in range(len(llvm))],
                         "kernel": [f"loop_{i}" for i in range(len(llvm))], "trip": trip,
                         "llvm": llvm, "llvm_threads": 128, "llvm_blocks": 8,
                         "heuristic": heuristic, "heuristic_threads": 64, "heuristic_blocks": 16,
                         "best": best, "best_threads": 256, "best_blocks": 4})


def test_a_pick_exactly_10_percent_slower_than_the_best_is_within_10_percent():
    """Best 2.0 s; LLVM's 2.2 s is 1.1 x 2.0 (exactly, in floating point): within. The heuristic's
    2.4 s is not. Speedups over LLVM: 1.0 and 2.2 / 2.4."""
    summary = sweep_summary(_choices([2.2], [2.4], [2.0]))
    assert summary.loc["llvm", "within_10pct"] == 1.0
    assert summary.loc["heuristic", "within_10pct"] == 0.0
    assert summary.loc["heuristic", "speedup_vs_llvm"] == pytest.approx(2.2 / 2.4)


def test_a_figure_label_counts_the_choices_within_10_percent_of_the_best_whole():
    """22 choices, the heuristic within 10 % of the best on 15: 15 / 22 = 0.6818..., times 22 is
    14.999999999999998 in floating point: the label says 15/22, not 14/22. The heuristic takes 2 s
    on the other 7 (LLVM 1 s): speedup 2 ** (-7 / 22) = 0.80."""
    heuristic = [1.0] * 15 + [2.0] * 7
    figures = sweep_figures(_choices([1.0] * 22, heuristic, [1.0] * 22))
    labels = figure_labels(figures).set_index("scope")
    assert labels.loc["all", "heuristic"] == "0.80x 15/22"
    assert labels.loc["trip=1000", "heuristic"] == "0.80x 15/22"
    assert labels.loc["all", "llvm"] == "1.00x 22/22"


def test_each_policys_pick_is_labelled_threads_x_blocks_with_the_points_measured():
    """H100, trip 1000: LLVM 128 x 8, the heuristic 64 x 16; each loop measured at 3 geometries."""
    h100 = device_descriptor("H100")
    rows = [{"kernel": kernel, "trip": 1000, "threads": t, "blocks": b, "time_s": s}
            for kernel in ("loop_a", "loop_b") for t, b, s in ((128, 8, 2e-6), (64, 16, 3e-6), (256, 4, 1e-6))]
    choices = sweep_choices(pd.DataFrame(rows), h100)
    labels = pick_labels(choices, ["llvm", "heuristic", "best"])
    assert labels.to_dict(orient="records") == [
        {"loop, trip": "loop_a trip=1000", "llvm": "128x8", "heuristic": "64x16", "best": "256x4", "points": 3},
        {"loop, trip": "loop_b trip=1000", "llvm": "128x8", "heuristic": "64x16", "best": "256x4", "points": 3}]


def test_the_bundled_h100_sweep_gives_the_model_and_best_figures_the_docs_print():
    """docs/decisions.md: model 1.00x 2/2 | 1.07x 2/2 | 1.20x 1/2 | 1.09x 5/6, best ... 1.13x (6/6)."""
    from gpuperf.datasets.bundled import data_dir

    measured = pd.read_csv(data_dir() / "geometry_sweep_h100.csv.gz")
    choices = sweep_choices(measured, table_descriptor(measured, "h100"), "h100")
    labels = figure_labels(sweep_figures(choices)).set_index("scope")
    assert labels.loc[["trip=1000", "trip=100000", "trip=10000000", "all"], "model"].tolist() == [
        "1.00x 2/2", "1.07x 2/2", "1.20x 1/2", "1.09x 5/6"]
    assert labels.loc["all", "best"] == "1.13x 6/6"
    # the model's leave-one-loop-out picks: the best at 1,000 and 100,000, not at 10,000,000
    picks = choices.set_index("group")
    assert (picks.loc["loop_saxpy trip=100000", "model_threads"], picks.loc["loop_saxpy trip=100000", "model_blocks"]) \
        == (256, 256)
    assert (picks.loc["loop_polynomial trip=10000000", "model_threads"],
            picks.loc["loop_polynomial trip=10000000", "model_blocks"]) == (128, 1024)


def _sweep_csv(path, trips, gpu="stub", descriptor=None, step=2):
    """A sweep file as geometry-sweep --out writes it: loop_saxpy over the plan for each trip count."""
    descriptor = descriptor or cpu_descriptor("stub", 2, 4096, 65536)
    limits = {f"device_{k}": v for k, v in descriptor.as_dict().items()}
    rows = [{"kernel": "loop_saxpy", "trip": trip, "threads": t, "blocks": b, "time_s": 1e-6 * (1 + i),
             "status": "ok", "registers": 32, "gpu": gpu, **limits}
            for trip in trips for i, (t, b) in enumerate(sweep_geometries(descriptor, trip, step))]
    frame = pd.DataFrame(rows)
    frame.to_csv(path, index=False)
    return frame


class _StubDevice:
    """An opened device that must build nothing: every group of the sweep to resume is held."""
    name = "stub:0"

    def provenance(self):
        return {"device_name": "stub"}

    def compile(self, kernel):
        raise AssertionError("nothing should be measured")


@pytest.fixture
def stub_device(monkeypatch):
    from gpuperf.decisions import geometry_sweep
    from gpuperf.measure import devices

    monkeypatch.setattr(devices, "open_device", lambda name: _StubDevice())
    monkeypatch.setattr(geometry_sweep, "measured_device_descriptor",
                        lambda device, gpu=None: cpu_descriptor("stub", 2, 4096, 65536))


def test_resuming_with_fewer_trip_counts_keeps_and_judges_the_others(tmp_path, capsys, stub_device):
    """The file holds trips 100 and 200 (10 and 13 points: at 200, 32 x 1, 2, 4, 7; 64 x 1, 2, 4; 128 x 1, 2;
    256, 512, 1024 x 1 and the heuristic's 4096 x 1); resumed with --trips 100 alone, nothing is
    measured and both groups are judged, with no note: trip 200 is no group this sweep plans."""
    out = tmp_path / "sweep.csv"
    held = _sweep_csv(out, [100, 200])
    assert held.groupby("trip").size().tolist() == [10, 13]
    before = out.read_bytes()
    assert main(["geometry-sweep", "--device", "stub", "--loops", "saxpy", "--trips", "100", "--out", str(out),
                 "--resume", "--no-progress", "--json"]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert (result["points"], result["choices"]) == (23, 2)
    assert "hold other geometries" not in captured.err
    assert out.read_bytes() == before


def test_resuming_without_blocks_step_plans_the_default_step_of_2(tmp_path, capsys, stub_device):
    """trip 100 on a 4096-work-item CPU: 32 threads x 1, 2, 4 blocks; 64 x 1, 2; 128, 256, 512, 1024 x 1;
    the heuristic's 4096 x 1: 10 geometries at step 2, 9 at step 4 (32 x 2 dropped)."""
    out = tmp_path / "sweep.csv"
    _sweep_csv(out, [100])
    argv = ["geometry-sweep", "--device", "stub", "--loops", "saxpy", "--trips", "100", "--out", str(out),
            "--resume", "--no-progress", "--json"]
    assert main(argv) == 0
    assert "hold other geometries" not in capsys.readouterr().err  # the default step is the file's
    assert main([*argv, "--blocks-step", "4"]) == 0
    assert ("1 (loop, trip count) group(s) of the sweep to resume hold other geometries than this sweep plans "
            "(first: loop_saxpy at trip 100: 10 of 9;") in capsys.readouterr().err


def test_a_sweep_table_naming_no_gpu_asks_for_gpu(tmp_path, capsys):
    path = tmp_path / "sweep.csv"
    pd.DataFrame({"kernel": ["loop_a"], "trip": [1000], "threads": [128], "blocks": [8],
                  "time_s": [1e-6]}).to_csv(path, index=False)
    assert main(["geometry-sweep", "--table", str(path), "--json"]) == 2
    assert "sweep.csv: name the GPU the sweep was measured on with --gpu (the table has no gpu column)" in (
        capsys.readouterr().err)


def test_a_recorded_descriptor_with_a_fractional_limit_is_refused():
    """device_sms 2.5 is no device: refused, not read as 2 SMs."""
    cpu = cpu_descriptor("some CPU", 4, 4096, 65536)
    recorded = pd.DataFrame([{f"device_{k}": v for k, v in cpu.as_dict().items()} | {"device_sms": 2.5}])
    with pytest.raises(GpuperfError, match=r"t\.csv: column device_sms must be a positive whole number, not 2\.5"):
        table_descriptor(recorded, "t.csv")


def test_the_report_is_named_in_json_and_holds_its_plots(tmp_path, capsys):
    """Two loops at one trip count on the H100: report.md, speedup_vs_llvm.png and time_maps.png."""
    rows = [{"kernel": kernel, "trip": 1000, "threads": t, "blocks": b, "time_s": s, "gpu": "H100"}
            for kernel in ("loop_a", "loop_b") for t, b, s in ((128, 8, 2e-6), (64, 16, 3e-6), (256, 4, 1e-6))]
    table = tmp_path / "sweep.csv"
    pd.DataFrame(rows).to_csv(table, index=False)
    report = tmp_path / "report"
    assert main(["geometry-sweep", "--table", str(table), "--report", str(report), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["report"] == str(report / "report.md")
    assert (result["points"], result["choices"]) == (6, 2)
    for name in ("report.md", "speedup_vs_llvm.png", "time_maps.png"):
        assert (report / name).exists(), name
    text = (report / "report.md").read_text()
    assert "![speedup_vs_llvm](speedup_vs_llvm.png)" in text and "![time_maps](time_maps.png)" in text


def test_a_sweep_is_refused_once_its_two_float_arrays_outgrow_the_devices_memory():
    """8,000 bytes of memory: 1,001 iterations take 8 bytes each (x and y, float32), 8,008 in all."""
    from gpuperf.decisions.geometry_sweep import measure_sweep

    device = _StubDevice()
    device.memory_bytes = 8000
    with pytest.raises(GpuperfError, match=r"trip 1,001: a loop's two float arrays take 8,008 bytes, more than the "
                                           r"8,000 bytes of stub:0's global memory"):
        measure_sweep(device, ["saxpy"], [100, 1001], cpu_descriptor("stub", 2, 4096, 65536))


def test_a_policys_typical_threads_are_its_most_frequent_pick_not_the_middle_one():
    """Picks of 32, 32, 256, 512 and 1024 threads: the usual one is 32 (the median would be 256)."""
    from gpuperf.decisions.geometry_eval import summarise

    picked = pd.DataFrame({"group": range(5), "llvm": 1.0, "llvm_threads": 128, "heuristic": 1.0,
                           "heuristic_threads": [32, 32, 256, 512, 1024], "best": 1.0, "best_threads": 128})
    assert summarise(picked)["heuristic"]["typical_threads"] == 32


def _wide_table(path, wide_only=False, gpu="H100"):
    """Two loops at trip 1000 on an H100: 128 and 256 threads (and LLVM's 128 x 8), and a 2048-thread
    point no H100 launch makes; every row ok."""
    shapes = [(2048, 1)] if wide_only else [(128, 8), (256, 4), (2048, 1)]
    rows = [{"kernel": kernel, "trip": 1000, "threads": t, "blocks": b, "time_s": 1e-6 * (1 + i), "status": "ok",
             "gpu": gpu} for kernel in ("loop_saxpy", "loop_polynomial") for i, (t, b) in enumerate(shapes)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_points_no_launch_makes_are_not_called_failed_rows_nor_counted_in_the_report(tmp_path, capsys):
    """The 2048-thread points were noted as left out, then again as rows 'whose status is not ok' (all
    were ok); the report counted them among its measured points (6, where --json said 4)."""
    table = _wide_table(tmp_path / "wide.csv")
    assert main(["geometry-sweep", "--table", str(table), "--report", str(tmp_path / "r"), "--json"]) == 0
    captured = capsys.readouterr()
    assert "2 point(s) no launch on H100 SXM makes are left out" in captured.err
    assert "status is not ok" not in captured.err
    assert json.loads(captured.out)["points"] == 4
    assert "4 measured points" in (tmp_path / "r" / "report.md").read_text()
    rows = pd.read_csv(table)
    rows.loc[0, "status"] = "failed"
    rows.to_csv(table, index=False)
    assert main(["geometry-sweep", "--table", str(table), "--json"]) == 0
    assert "1 row whose status is not ok left out" in capsys.readouterr().err


def test_a_sweep_no_point_of_which_the_gpu_can_launch_is_one_error_not_a_traceback(tmp_path, capsys):
    table = _wide_table(tmp_path / "allwide.csv", wide_only=True)
    assert main(["geometry-sweep", "--table", str(table), "--json"]) == 2
    assert "none of its 2 point(s) can be launched on H100 SXM" in capsys.readouterr().err


def test_a_sweep_measured_with_another_gpus_descriptor_names_the_device_it_ran_on(tmp_path, capsys):
    """A sweep taken on a CPU with --gpu H100 records the H100's descriptor (device_name: H100 SXM) and
    the CPU in its gpu column: --json's device named the H100."""
    from gpuperf.decisions.geometry import device_descriptor

    _sweep_csv(tmp_path / "cpu.csv", [1000], gpu="pthread-Some CPU", descriptor=device_descriptor("H100"))
    frame = pd.read_csv(tmp_path / "cpu.csv")
    pd.concat([frame, frame.assign(kernel="loop_polynomial")]).to_csv(tmp_path / "cpu.csv", index=False)
    assert main(["geometry-sweep", "--table", str(tmp_path / "cpu.csv"), "--gpu", "H100", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["device"], result["descriptor"]) == ("pthread-Some CPU", "H100 SXM")
