"""(threads, blocks) sweeps: grid-stride loops at chosen geometries, the sweep plan, the policies
judged on measured sweeps, and the geometry-sweep command."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from gpuperf.cli import main
from gpuperf.decisions.geometry import device_descriptor, heuristic, llvm_default, KernelDescriptor
from gpuperf.decisions.geometry_sweep import (
    check_sweep,
    cpu_descriptor,
    loop_registers,
    policy_picks,
    sweep_choices,
    unjudged_notes,
    sweep_geometries,
    sweep_summary,
    table_descriptor,
)
from gpuperf.errors import GpuperfError, GpuperfNote
from gpuperf.kernels.parallel_loops import grid_stride_loop
from gpuperf.measure.timing import TimingSettings, measure

QUICK = TimingSettings(warmup=1, min_repeats=2, min_time_s=0.0, max_repeats=3)


@pytest.mark.parametrize("body", ["saxpy", "polynomial"])
@pytest.mark.parametrize("threads,blocks", [(32, 3), (64, 40)])  # the grid loops over 1000 / leaves items idle
@pytest.mark.opencl
def test_grid_stride_loops_cover_every_iteration_at_any_geometry(body, threads, blocks):
    kernel = grid_stride_loop(body, threads, blocks)
    measured = measure(kernel, {"n": 1000}, settings=QUICK)
    assert measured.verified  # the reference check fails if an iteration is skipped or done twice
    assert measured.local_size == (threads, 1, 1) and measured.global_size == (threads * blocks, 1, 1)
    assert kernel.variant == {"threads": threads, "blocks": blocks}


@pytest.mark.opencl
def test_grid_stride_loops_stay_exact_on_grids_of_a_million_threads():
    # isl's loop bound multiplies the ids by the grid size: in 32-bit indices it overflowed and
    # skipped iterations
    measured = measure(grid_stride_loop("saxpy", 128, 7813), {"n": 1_000_000}, settings=QUICK)
    assert measured.verified and measured.global_size == (128 * 7813, 1, 1)


def test_grid_stride_loop_refuses_unknown_bodies_and_empty_launches():
    with pytest.raises(GpuperfError, match="unknown parallel loop 'copy'"):
        grid_stride_loop("copy", 32, 1)
    with pytest.raises(GpuperfError, match="at least one thread"):
        grid_stride_loop("saxpy", 0, 4)


def test_sweep_holds_the_grid_and_every_policy_pick():
    h100 = device_descriptor("H100")
    trip = 10_000_000
    pairs = sweep_geometries(h100, trip)
    assert len(pairs) == len(set(pairs))
    for pick in policy_picks(h100, trip).values():
        assert pick in pairs
    long_loop = heuristic(h100, KernelDescriptor(trip))
    assert long_loop.loop_class == "long" and (long_loop.threads, long_loop.blocks) in pairs
    assert (128, -(-trip // 128)) in pairs and (32, 1) in pairs and (1024, 1) in pairs
    assert max(t for t, _ in pairs) == 1024
    assert all(blocks <= -(-trip // threads) for threads, blocks in pairs)
    assert len(sweep_geometries(h100, trip, 4)) < len(pairs)
    with pytest.raises(GpuperfError, match="trip count 0"):
        sweep_geometries(h100, 0)
    with pytest.raises(GpuperfError, match="blocks step 1"):
        sweep_geometries(h100, 100, 1)


def synthetic_sweep(device, trips, kernels=("loop_a", "loop_b")) -> pd.DataFrame:
    """Times with one optimum at 256 threads x (one block per 4 iterations per thread ... capped at 4 x SMs)."""
    rows = []
    for kernel_index, kernel in enumerate(kernels):
        for trip in trips:
            for threads, blocks in sweep_geometries(device, trip):
                best_blocks = min(-(-trip // (256 * 4)), 4 * device.sms)
                slowdown = 1 + 0.3 * abs(np.log2(threads / 256)) + 0.2 * abs(np.log2(blocks / best_blocks))
                rows.append({"kernel": kernel, "trip": trip, "threads": threads, "blocks": blocks,
                             "time_s": (kernel_index + 1) * 1e-6 * trip / 1000 * slowdown, "status": "ok"})
    return pd.DataFrame(rows)


def test_policies_are_judged_on_their_exact_picks():
    h100 = device_descriptor("H100")
    table = synthetic_sweep(h100, [100_000, 10_000_000])
    choices = sweep_choices(table, h100)
    assert len(choices) == 4
    times = table.set_index(["kernel", "trip", "threads", "blocks"])["time_s"]
    for _, row in choices.iterrows():
        for policy in ("llvm", "heuristic", "libomptarget", "occupancy"):
            expected = policy_picks(h100, row["trip"])[policy]
            assert (row[f"{policy}_threads"], row[f"{policy}_blocks"]) == expected
            assert row[policy] == times[(row["kernel"], row["trip"], *expected)]
        group = table[(table["kernel"] == row["kernel"]) & (table["trip"] == row["trip"])]
        assert row["best"] == group["time_s"].min()
        assert row["best_threads"] == 256
    # the two loops' times differ by a factor but share their shape: trained on one, the model
    # picks the other's optimum
    assert (choices["model"] == choices["best"]).all()
    summary = sweep_summary(choices)
    expected = np.exp(np.mean(np.log(choices["llvm"] / choices["heuristic"])))
    assert summary.loc["heuristic", "speedup_vs_llvm"] == pytest.approx(expected)
    assert summary.loc["model", "within_10pct"] == 1.0 and summary.loc["llvm", "speedup_vs_llvm"] == 1.0
    assert summary.loc["best", "speedup_vs_llvm"] >= summary["speedup_vs_llvm"].max() - 1e-12


def test_a_single_loop_has_no_model_and_unmeasured_picks_are_blank():
    h100 = device_descriptor("H100")
    table = synthetic_sweep(h100, [100_000], kernels=("loop_a",))
    a100 = device_descriptor("A100")  # judged with other limits: some picks were never measured
    choices = sweep_choices(table, a100)
    assert "model" not in choices.columns
    heuristic_pick = policy_picks(a100, 100_000)["heuristic"]
    measured = set(zip(table["threads"], table["blocks"]))
    assert np.isnan(choices.loc[0, "heuristic"]) == (heuristic_pick not in measured)
    assert choices.loc[0, "llvm"] > 0


def test_policies_see_the_loops_registers():
    h100 = device_descriptor("H100")
    registers = loop_registers("polynomial", h100)  # NVRTC, no GPU needed
    assert 8 <= registers <= 255
    assert loop_registers("polynomial", cpu_descriptor("cpu", 2, 4096, 65536)) == 32
    trip = 100_000_000
    heavy = policy_picks(h100, trip, registers=255)["heuristic"]
    assert heavy != policy_picks(h100, trip, registers=32)["heuristic"]  # fewer resident blocks
    table = synthetic_sweep(h100, [trip], kernels=("loop_a",))
    assert heavy not in set(zip(table["threads"], table["blocks"]))
    table = pd.concat([table, pd.DataFrame([{"kernel": "loop_a", "trip": trip, "threads": heavy[0],
                                             "blocks": heavy[1], "time_s": 1.0, "status": "ok"}])])
    choices = sweep_choices(table.assign(registers=255), h100)
    assert (choices.loc[0, "heuristic_threads"], choices.loc[0, "heuristic_blocks"]) == heavy
    assert choices.loc[0, "heuristic"] == 1.0


def test_sweep_tables_are_checked_with_file_and_line():
    table = pd.DataFrame({"kernel": ["k", "k"], "trip": [10, 10], "threads": [32, 64], "blocks": [1, 1],
                          "time_s": [1e-6, 0.0]})
    with pytest.raises(GpuperfError, match=r"s\.csv: row 2: time_s must be a positive number, not 0"):
        check_sweep(table, "s.csv")  # a frame built in memory: rows, not file lines
    with pytest.raises(GpuperfError, match=r"row 2: threads must be a positive whole number, not 33\.5"):
        check_sweep(table.assign(time_s=1e-6, threads=[32, 33.5]), "s.csv")
    with pytest.raises(GpuperfError, match=r"row 2: k at trip 10, 32 threads x 1 blocks is measured twice"):
        check_sweep(table.assign(time_s=[1e-6, 2e-6], threads=32), "s.csv")
    with pytest.raises(GpuperfError, match=r"column gpu names several GPUs"):
        check_sweep(table.assign(time_s=1e-6, gpu=["A", "B"]), "s.csv")
    with pytest.raises(GpuperfError, match=r"row 1: trip 100000000000000000000 is too large \(at most 2\*\*63 - 1\)"):
        check_sweep(table.assign(time_s=1e-6, trip=1e20), "s.csv")
    with pytest.raises(GpuperfError, match=r"row 2: registers must be a positive whole number, not 'abc'"):
        check_sweep(table.assign(time_s=1e-6, registers=["64", "abc"]), "s.csv")
    registers = check_sweep(table.assign(time_s=1e-6, trip=[10, 20], registers=[64, None]), "s.csv")["registers"]
    assert registers.tolist() == [64, 32]  # an empty cell: the policies' default of 32 per thread
    with pytest.raises(GpuperfError, match=r"s\.csv: missing column\(s\) blocks"):
        check_sweep(table.drop(columns="blocks"), "s.csv")
    failed = table.assign(status=["ok", "RunFailed: out of resources"])
    assert len(check_sweep(failed, "s.csv")) == 1  # a failed point is skipped, not an error
    with pytest.raises(GpuperfError, match="no measured point"):
        check_sweep(failed.assign(status="RunFailed"), "s.csv")


def test_a_sweep_concatenated_from_parts_gives_the_picks_of_the_whole():
    """pd.concat of two sweeps repeats index labels: the model's picks raised pandas' InvalidIndexError."""
    h100 = device_descriptor("H100")
    table = synthetic_sweep(h100, [100_000, 10_000_000])
    parts = [part.reset_index(drop=True) for _, part in table.groupby("kernel")]
    joined = pd.concat(parts)
    assert not joined.index.is_unique
    pd.testing.assert_frame_equal(sweep_choices(joined, h100), sweep_choices(pd.concat(parts, ignore_index=True), h100))


def test_a_blank_loop_name_or_a_register_count_that_varies_in_a_group_names_its_line():
    table = pd.DataFrame({"kernel": ["k", None], "trip": [10, 10], "threads": [32, 64], "blocks": [1, 1],
                          "time_s": [1e-6, 2e-6]})
    with pytest.raises(GpuperfError, match=r"s\.csv: row 2: kernel is empty"):
        check_sweep(table, "s.csv")
    with pytest.raises(GpuperfError, match=r"row 2: registers 40, but row 1 says 30 for k at trip 10"):
        check_sweep(table.assign(kernel="k", registers=[30, 40]), "s.csv")
    h100 = device_descriptor("H100")
    too_many = synthetic_sweep(h100, [1000]).assign(registers=300)
    with pytest.raises(GpuperfError, match=r"s\.csv: row 1: registers per thread 300 is outside 0\.\.255"):
        sweep_choices(too_many, h100, "s.csv")
    failed_first = pd.concat([too_many.iloc[[0]].assign(time_s=np.nan, status="run_failed"), too_many],
                             ignore_index=True)  # the culprit is the table's second row, after a failed one
    with pytest.raises(GpuperfError, match=r"s\.csv: row 2: registers per thread 300"):
        sweep_choices(failed_first, h100, "s.csv")


def test_the_command_says_which_rows_its_figures_leave_out(tmp_path, capsys):
    h100 = device_descriptor("H100")
    table = synthetic_sweep(h100, [1000, 100_000]).assign(gpu="H100")
    llvm = (table["threads"] == 128) & (table["blocks"] == -(-table["trip"] // 128))
    table.loc[llvm & (table["trip"] == 1000) & (table["kernel"] == "loop_a"), "status"] = "RunFailed: test"
    path = tmp_path / "sweep.csv"
    table.to_csv(path, index=False)
    assert main(["geometry-sweep", "--table", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    result, err = json.loads(captured.out), captured.err
    assert result["points"] == len(table) - 1  # the failed row is no point
    assert "LLVM's default pick failed in 1 group(s), which are left out of the figures" in err
    assert "loop_a trip=1000" in err and "1 row whose status is not ok left out" in err
    table[~llvm].to_csv(path, index=False)
    assert main(["geometry-sweep", "--table", str(path)]) == 2
    assert "no (loop, trip count) group measured LLVM's default pick (loop_a trip=1000: 128 x 8)" in (
        capsys.readouterr().err)


def test_table_descriptor_prefers_gpu_then_recorded_limits_then_the_gpu_column():
    cpu = cpu_descriptor("some CPU", 4, 4096, 65536)
    recorded = pd.DataFrame([{f"device_{k}": v for k, v in cpu.as_dict().items()} | {"gpu": "some CPU"}])
    rebuilt = table_descriptor(recorded, "t.csv")
    assert rebuilt.as_dict() == cpu.as_dict()
    assert table_descriptor(recorded, "t.csv", gpu="V100").name == device_descriptor("V100").name
    assert table_descriptor(pd.DataFrame({"gpu": ["A100"]}), "t.csv").name == device_descriptor("A100").name
    with pytest.raises(GpuperfError, match="t.csv: name the GPU"):
        table_descriptor(pd.DataFrame({"gpu": ["A100", "V100"]}), "t.csv")
    with pytest.raises(GpuperfError, match=r"t.csv: no device descriptor: gpuperf does not describe the GPU "
                                            r"'pthread-CPU' and the table lacks device_name, device_sms, "):
        table_descriptor(pd.DataFrame({"gpu": ["pthread-CPU"]}), "t.csv")


def test_cpu_descriptor_caps_long_loops_at_one_group_per_compute_unit():
    cpu = cpu_descriptor("cpu", 4, 4096, 65536)
    assert heuristic(cpu, KernelDescriptor(1_000_000)).as_dict() == {
        "threads": 4096, "blocks": 4, "class": "long", "policy": "heuristic"}
    assert heuristic(cpu, KernelDescriptor(3)).loop_class == "short"
    assert llvm_default(cpu, KernelDescriptor(1000)).blocks == 8


@pytest.mark.opencl
def test_measure_sweep_reports_progress_through_builds_and_timed_rounds():
    from gpuperf.decisions.geometry_sweep import measure_sweep, sweep_settings
    from gpuperf.measure.devices import open_device

    device = open_device("opencl:0")
    cpu = cpu_descriptor("cpu", 1, 256, 65536)
    calls: list[tuple[int, int]] = []
    table = measure_sweep(device, ["saxpy"], [100], cpu, sweep_settings(2), blocks_step=4,
                          progress=lambda done, total: calls.append((done, total)))
    points = len(sweep_geometries(cpu, 100, 4))
    assert len(table) == points and (table["status"] == "ok").all()
    assert calls[-1] == (points * 3, points * 3)  # one build and two rounds per point
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert len(calls) > points  # the bar moves while the group is timed, not only while it builds


@pytest.mark.opencl
def test_geometry_sweep_command_measures_saves_and_judges(tmp_path, capsys):
    out = tmp_path / "sweep.csv"
    # a loop or trip count named twice is measured once
    argv = ["geometry-sweep", "--device", "opencl:0", "--loops", "saxpy,loop_saxpy", "--trips", "300,300",
            "--blocks-step", "8", "--cycles", "3",
            "--out", str(out), "--report", str(tmp_path / "report"), "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    saved = pd.read_csv(out)
    assert result["points"] == len(saved) and (saved["status"] == "ok").all()
    assert set(saved["kernel"]) == {"loop_saxpy"} and set(saved["trip"]) == {300}
    assert set(result["policies"]) >= {"llvm", "heuristic", "libomptarget", "occupancy", "best"}
    assert result["policies"]["llvm"]["speedup_vs_llvm"] == 1.0
    assert result["policies"]["llvm"]["choices"] == 1 and isinstance(result["policies"]["llvm"]["choices"], int)
    (pick,) = result["picks"]
    assert pick["best"] == saved["time_s"].min()
    assert (tmp_path / "report" / "report.md").exists() and (tmp_path / "report" / "time_maps.png").exists()
    # the saved file is judged the same way later, with the limits it was measured under
    assert main(["geometry-sweep", "--table", str(out), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["picks"] == result["picks"]
    assert main(["geometry-sweep", "--table", str(out), "--cycles", "5"]) == 2
    assert "--cycles times a new sweep" in capsys.readouterr().err


def test_geometry_sweep_command_errors(tmp_path, capsys):
    assert main(["geometry-sweep"]) == 2
    assert "give either --device" in capsys.readouterr().err
    assert main(["geometry-sweep", "--device", "opencl:0", "--loops", "copy"]) == 2
    assert "unknown parallel loop 'copy'" in capsys.readouterr().err
    assert main(["geometry-sweep", "--device", "opencl:0", "--trips", "100,x"]) == 2
    assert "--trips: 'x' is not a whole number" in capsys.readouterr().err
    assert main(["geometry-sweep", "--device", "opencl:0", "--loops", ","]) == 2
    assert "--loops: name at least one of saxpy, polynomial" in capsys.readouterr().err
    assert main(["geometry-sweep", "--device", "opencl:0", "--cycles", "0"]) == 2
    assert "--cycles: 0 must be at least 1" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"kernel": ["k"], "trip": [10], "threads": [32], "time_s": [1.0]}).to_csv(bad, index=False)
    assert main(["geometry-sweep", "--table", str(bad), "--gpu", "V100"]) == 2
    assert "bad.csv: missing column(s) blocks" in capsys.readouterr().err
    pd.DataFrame({"kernel": ["k"], "time_s": [1.0], "status": ["ok"]}).to_csv(bad, index=False)
    assert main(["geometry-sweep", "--table", str(bad), "--gpu", "V100"]) == 2  # was a KeyError from the status check
    assert "bad.csv: missing column(s) trip, threads, blocks" in capsys.readouterr().err


def test_the_bundled_pocl_sweep_is_judged_with_the_limits_it_was_measured_under(tmp_path):
    from gpuperf.datasets.bundled import data_dir
    from gpuperf.decisions.reports import bundled_sweep_report

    measured = pd.read_csv(data_dir() / "geometry_sweep_pocl.csv.gz")
    descriptor = table_descriptor(measured, "bundled")
    assert descriptor.sms == 2 and descriptor.max_threads_per_block == 4096
    choices = sweep_choices(measured, descriptor)
    assert len(choices) == 6  # two loops x three trip counts, every policy's pick measured
    assert np.isfinite(choices[["llvm", "libomptarget", "heuristic", "occupancy", "model", "best"]]).all().all()
    assert (choices["best"] <= choices[["llvm", "heuristic", "model"]].min(axis=1)).all()
    report = (bundled_sweep_report(tmp_path)["markdown"]).read_text()
    assert "heuristic" in report and "![time_maps](time_maps.png)" in report
    # each policy's column holds its pick's time in seconds: one notation down the column
    # in the tables' policy order (llvm, libomptarget, heuristic, ...): it was the choices' own order
    assert "| loop_polynomial trip=1000 | 2.17e-05 | 128 | 8 | 1.84e-05 | 32 | 32 | 2.96e-05 | 4096 | 1 |" in report
    assert "| loop_polynomial trip=100000 | 1.24e-03 | 128 | 782 | 1.22e-03 | 32 | 3125 | 5.48e-04 | 4096 | 2 |" in report


def test_sweep_grid_runs_threads_from_32_to_the_limit_and_blocks_up_to_one_iteration_per_thread():
    """256 threads per block at most, trip 600: 32 threads need 19 blocks (powers of 2 up to 16, then
    exactly 19), 64 need 10, 128 need 5, 256 need 3."""
    cpu = cpu_descriptor("cpu", 4, 256, 32768)
    picks = set(policy_picks(cpu, 600).values())
    grid = ({(32, b) for b in (1, 2, 4, 8, 16, 19)} | {(64, b) for b in (1, 2, 4, 8, 10)}
            | {(128, b) for b in (1, 2, 4, 5)} | {(256, b) for b in (1, 2, 3)})
    assert (64, 10) not in picks  # so the grid itself must hold it
    assert set(sweep_geometries(cpu, 600)) == grid | picks
    over = cpu_descriptor("cpu", 4, 64, 32768)  # LLVM's 128 threads cannot run there: not measured
    assert (128, 2) in policy_picks(over, 200).values() and all(t <= 64 for t, _ in sweep_geometries(over, 200))


def test_sweep_grid_stops_at_1024_threads_per_block_on_a_larger_device():
    cpu = cpu_descriptor("cpu", 2, 4096, 32768)
    picks = set(policy_picks(cpu, 4096).values())
    grid_threads = {t for t, _ in set(sweep_geometries(cpu, 4096)) - picks}
    assert grid_threads == {32, 64, 128, 256, 512, 1024}


def test_model_targets_are_log2_times_over_the_best_of_each_loop_and_trip():
    from gpuperf.decisions.geometry_sweep import _relative_log_time

    frame = pd.DataFrame({"kernel": ["a", "a", "a", "a"], "trip": [4, 4, 8, 8], "time_s": [1.0, 4.0, 8.0, 16.0]})
    assert _relative_log_time(frame).tolist() == [0.0, 2.0, 0.0, 1.0]


def test_the_model_policy_never_trains_on_the_loop_it_picks_for(monkeypatch):
    from gpuperf.decisions import geometry_sweep

    fitted = []

    class Recording:
        def __init__(self, **kwargs):
            pass

        def fit(self, X, y):
            fitted.append(sorted(set(np.exp2(X[:, 2]).round().astype(int))))
            return self

        def predict(self, X):
            return np.zeros(len(X))

    monkeypatch.setattr(geometry_sweep, "RandomForestRegressor", Recording)
    table = pd.DataFrame({"kernel": ["a"] * 3 + ["b"] * 2, "trip": [4, 4, 4, 8, 8], "threads": [32, 64, 128, 32, 64],
                          "blocks": [1, 1, 1, 1, 1], "time_s": [1.0, 2.0, 3.0, 1.0, 2.0]})
    assert geometry_sweep.model_picks(table) is not None
    assert fitted == [[8], [4]]  # a's model saw only b's trip count, b's only a's


def test_a_sweep_of_one_loop_says_why_it_has_no_model_policy():
    """The model policy vanished from a one-loop sweep's tables without a word."""
    h100 = device_descriptor("H100")
    one = synthetic_sweep(h100, [100_000]).query("kernel == kernel.iloc[0]")
    with pytest.warns(GpuperfNote, match=r"s\.csv: one loop \(.*\), so no model policy: .* sweep two or more loops"):
        choices = sweep_choices(one, h100, "s.csv")
    assert "model" not in choices.columns


def test_sweep_summary_counts_only_choices_with_a_measured_llvm_default():
    """Heuristic vs LLVM: 1 s vs 1 s, and 4 s vs 2 s (best 2 s); the row without LLVM's time is left out."""
    choices = pd.DataFrame({"llvm": [1.0, np.nan, 2.0], "heuristic": [1.0, 1.0, 4.0], "best": [1.0, 1.0, 2.0],
                            "llvm_threads": [32] * 3, "heuristic_threads": [64] * 3, "best_threads": [32] * 3})
    summary = sweep_summary(choices)
    assert summary.loc["heuristic", "choices"] == 2
    assert summary.loc["heuristic", "speedup_vs_llvm"] == pytest.approx(0.5**0.5)
    assert summary.loc["heuristic", "within_10pct"] == pytest.approx(0.5)
    assert summary.loc["llvm", "choices"] == 2


def test_a_table_recording_two_device_descriptors_is_refused():
    rows = [{f"device_{k}": v for k, v in cpu_descriptor(name, units, 4096, 65536).as_dict().items()}
            for name, units in (("cpu", 4), ("cpu", 8))]
    with pytest.raises(GpuperfError, match=r"t.csv: rows record different device descriptors \(row 2: device_sms=8, "
                                           r"the first row's 4\)"):
        table_descriptor(pd.DataFrame(rows), "t.csv")


# -- the bundled H100 sweep (data/geometry_sweep_h100.csv.gz: saxpy and polynomial on one H100) ----------
H100_PICKS = {  # the definitions worked by hand for the H100 (132 SMs, 32 blocks and 2048 threads
    # per SM, so 64 threads per block fill an SM: the heuristic's block; 4224 resident blocks of 64)
    1000: {"heuristic": (64, 16), "llvm": (128, 8), "libomptarget": (32, 32), "occupancy": (1024, 1)},
    100_000: {"heuristic": (64, 1563), "llvm": (128, 782), "libomptarget": (32, 3125), "occupancy": (1024, 98)},
    10_000_000: {"heuristic": (64, 4224), "llvm": (128, 78125), "libomptarget": (128, 3200),
                 "occupancy": (1024, 9766)},
}
RULE_POLICIES = ["llvm", "libomptarget", "heuristic", "occupancy"]


@pytest.fixture(scope="module")
def h100_sweep():
    from gpuperf.datasets.bundled import data_dir

    measured = pd.read_csv(data_dir() / "geometry_sweep_h100.csv.gz")
    descriptor = table_descriptor(measured, "geometry_sweep_h100.csv.gz")
    return measured, descriptor, sweep_choices(measured, descriptor, "geometry_sweep_h100.csv.gz")


def test_the_bundled_h100_sweep_is_judged_with_the_h100_limits_it_recorded(h100_sweep):
    measured, descriptor, choices = h100_sweep
    assert len(check_sweep(measured, "h100")) == len(measured) == 334  # every point verified and timed
    assert descriptor.spec is not None and descriptor.spec.vendor == "NVIDIA"
    assert (descriptor.sms, descriptor.max_blocks_per_sm, descriptor.max_threads_per_sm,
            descriptor.preferred_threads_per_block) == (132, 32, 2048, 64)
    recorded = measured.filter(like="device_").drop_duplicates()
    assert len(recorded) == 1
    assert all(recorded.iloc[0][f"device_{k}"] == v for k, v in descriptor.as_dict().items() if k != "name")
    # every (loop, trip count) is judged, each policy on a measured pick; the run column changes nothing
    assert sorted(zip(choices["kernel"], choices["trip"])) == [
        (kernel, trip) for kernel in ("loop_polynomial", "loop_saxpy") for trip in (1000, 100_000, 10_000_000)]
    assert np.isfinite(choices[[*RULE_POLICIES, "model", "best"]].to_numpy(dtype=float)).all()
    assert choices["points"].tolist() == measured.groupby(["kernel", "trip"]).size().tolist()
    again = sweep_choices(measured.drop(columns="sweep_file"), descriptor)
    pd.testing.assert_frame_equal(again, choices)


def test_the_h100_policies_are_judged_on_their_exact_measured_picks(h100_sweep):
    measured, descriptor, choices = h100_sweep
    times = measured.set_index(["kernel", "trip", "threads", "blocks"])["time_s"]
    registers = measured.groupby("kernel")["registers"].first()
    for _, row in choices.iterrows():
        picks = policy_picks(descriptor, row["trip"], registers[row["kernel"]])
        assert {p: picks[p] for p in RULE_POLICIES} == H100_PICKS[row["trip"]]
        for policy in [*RULE_POLICIES, "model", "best"]:
            pick = (row[f"{policy}_threads"], row[f"{policy}_blocks"])
            assert row[policy] == times[(row["kernel"], row["trip"], *pick)]  # the time measured at that pick
        group = measured[(measured["kernel"] == row["kernel"]) & (measured["trip"] == row["trip"])]
        assert row["best"] == group["time_s"].min()
        assert row["best"] <= row[[*RULE_POLICIES, "model"]].min()
    row = choices.set_index("group").loc["loop_saxpy trip=100000"]
    assert (row["libomptarget"], row["best"]) == (times[("loop_saxpy", 100_000, 32, 3125)],
                                                  times[("loop_saxpy", 100_000, 256, 256)])
    assert row["libomptarget"] == pytest.approx(6.048e-6) and row["best"] == pytest.approx(4.448e-6)


def test_the_h100_figures_per_loop_trip_count_and_overall(h100_sweep):
    from gpuperf.decisions.geometry_sweep import figure_labels, sweep_figures

    _, _, choices = h100_sweep
    summary = sweep_summary(choices)
    assert (summary["choices"] == 6).all() and summary.loc["llvm", "speedup_vs_llvm"] == 1.0
    assert summary.loc["best", "speedup_vs_llvm"] == summary["speedup_vs_llvm"].max()
    assert summary.loc["best", "within_10pct"] == 1.0
    # the measured figures: the capped grids gain at 10^7 iterations, small blocks lose at 10^5
    assert summary.loc["heuristic", "speedup_vs_llvm"] == pytest.approx(1.0566, abs=5e-4)
    assert summary.loc["libomptarget", "speedup_vs_llvm"] == pytest.approx(0.9913, abs=5e-4)
    assert summary.loc["occupancy", "speedup_vs_llvm"] == pytest.approx(0.9504, abs=5e-4)
    assert summary.loc["best", "speedup_vs_llvm"] == pytest.approx(1.1256, abs=5e-4)
    assert summary.loc[RULE_POLICIES, "within_10pct"].tolist() == pytest.approx([4 / 6] * 4)
    figures = sweep_figures(choices)
    assert list(dict.fromkeys(figures["scope"])) == [*choices["group"], "trip=1000", "trip=100000",
                                                     "trip=10000000", "all"]
    per = figures.set_index(["scope", "policy"])
    for trip in (1000, 100_000, 10_000_000):
        part = choices[choices["trip"] == trip]
        for policy in [*RULE_POLICIES, "model", "best"]:
            expected = np.exp(np.mean(np.log(part["llvm"] / part[policy])))
            assert per.loc[(f"trip={trip}", policy), "speedup_vs_llvm"] == pytest.approx(expected)
            assert per.loc[(f"trip={trip}", policy), "choices"] == 2
            assert per.loc[(f"trip={trip}", policy), "trip"] == trip
        assert per.loc[(f"trip={trip}", "best"), "within_10pct"] == 1.0
    assert per.loc[("trip=100000", "libomptarget"), "within_10pct"] == 0.0  # 32-thread blocks: 1.36-1.39x the best
    assert per.loc[("trip=10000000", "llvm"), "within_10pct"] == 0.0  # one iteration per thread: 1.15-1.56x
    assert per.loc[("trip=1000", "heuristic"), "within_10pct"] == 1.0
    assert per.loc[("all", "heuristic"), "speedup_vs_llvm"] == pytest.approx(summary.loc["heuristic", "speedup_vs_llvm"])
    assert per.loc[("all", "llvm"), "trip"] is None
    labels = figure_labels(figures).set_index("scope")
    assert labels.loc["trip=100000", "libomptarget"] == "0.78x 0/2"
    assert labels.loc["all", "best"] == "1.13x 6/6" and labels.loc["loop_saxpy trip=1000", "llvm"] == "1.00x 1/1"


def test_geometry_sweep_command_judges_the_bundled_h100_sweep(capsys, monkeypatch):
    from gpuperf.cli import output
    from gpuperf.datasets.bundled import data_dir

    monkeypatch.setattr(output.console, "width", 160)  # the tables' rows unwrapped

    path = str(data_dir() / "geometry_sweep_h100.csv.gz")
    assert main(["geometry-sweep", "--table", path, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["device"], result["points"], result["choices"]) == ("H100 SXM", 334, 6)
    assert result["policies"]["heuristic"]["speedup_vs_llvm"] == pytest.approx(1.0566, abs=5e-4)
    scopes = {(f["scope"], f["policy"]): f for f in result["figures"]}
    assert scopes[("trip=10000000", "heuristic")]["within_10pct"] == 1.0
    assert scopes[("all", "best")]["trip"] is None and scopes[("trip=1000", "llvm")]["trip"] == 1000
    assert main(["geometry-sweep", "--table", path]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the title wraps where the table's width (the path's) says
    assert "H100 SXM, 334 points" in out and "trip=100000" in out and "0.78x 0/2" in out and "64x4224" in out


# -- the bundled H200 sweep (data/geometry_sweep_h200.csv.gz): short loops, below the 132 SMs, too ------
def test_the_h200_sweep_judges_the_short_loop_class_measured():
    from gpuperf.datasets.bundled import data_dir
    from gpuperf.decisions.geometry import loop_class

    measured = pd.read_csv(data_dir() / "geometry_sweep_h200.csv.gz")
    descriptor = table_descriptor(measured, "geometry_sweep_h200.csv.gz")
    assert len(check_sweep(measured, "h200")) == len(measured) == 204
    assert (descriptor.sms, descriptor.preferred_threads_per_block) == (132, 64)
    choices = sweep_choices(measured, descriptor, "geometry_sweep_h200.csv.gz").set_index("group")
    assert sorted(set(choices["trip"])) == [64, 128, 1000, 100_000]
    for trip in (64, 128):
        assert loop_class(descriptor, KernelDescriptor(trip)) == "short"
        for kernel in ("loop_saxpy", "loop_polynomial"):
            row = choices.loc[f"{kernel} trip={trip}"]
            assert (row["heuristic_threads"], row["heuristic_blocks"]) == (1, trip)  # one thread per block
            assert (row["llvm_threads"], row["llvm_blocks"]) == (128, 1)
            # measured: the paper's short-loop rule is slower than LLVM's one block on this GPU
            assert row["heuristic"] > row["llvm"]
    assert np.isfinite(choices[[*RULE_POLICIES, "model", "best"]].to_numpy(dtype=float)).all()


@pytest.mark.opencl
def test_an_interrupted_sweep_resumes_from_its_out_file_measuring_no_group_twice(tmp_path, capsys):
    from gpuperf.cli import main

    out = tmp_path / "sweep.csv"
    argv = ["geometry-sweep", "--device", "opencl:0", "--loops", "saxpy", "--cycles", "1", "--out", str(out),
            "--no-progress", "--json"]
    assert main([*argv, "--trips", "1000"]) == 0  # as a sweep of two trip counts stopped after its first
    first = pd.read_csv(out)
    capsys.readouterr()
    assert main([*argv, "--trips", "1000,4000", "--resume"]) == 0
    assert json.loads(capsys.readouterr().out)["points"] > len(first)
    both = pd.read_csv(out)
    assert sorted(both["trip"].unique()) == [1000, 4000]
    pd.testing.assert_frame_equal(both[both["trip"] == 1000].reset_index(drop=True), first)  # kept, not re-timed
    assert main([*argv, "--trips", "1000", "--resume", "--gpu", "H100"]) == 2
    assert "sweep.csv: the sweep to resume is judged with the " in capsys.readouterr().err
    assert main(argv[:-4] + ["--resume"]) == 2
    assert "--resume goes on with the sweep whose points --out holds: give --out" in capsys.readouterr().err
    cut = both.iloc[:len(first) - 3]  # a file cut short inside the first group: it was taken as whole silently
    cut.to_csv(out, index=False)
    assert main([*argv, "--trips", "1000", "--resume"]) == 0
    assert (f"1 (loop, trip count) group(s) of the sweep to resume hold other geometries than this sweep plans (first: "
            f"loop_saxpy at trip 1000: {len(first) - 3} of {len(first)}; a file cut short, or another --blocks-step); "
            "kept as they are, not measured again") in capsys.readouterr().err
    pd.testing.assert_frame_equal(pd.read_csv(out), cut)  # measurements never dropped


def test_the_h200_long_sweep_judges_the_capped_long_loops():
    from gpuperf.datasets.bundled import data_dir
    from gpuperf.decisions.geometry import loop_class

    measured = pd.read_csv(data_dir() / "geometry_sweep_h200_long.csv.gz")
    descriptor = table_descriptor(measured, "geometry_sweep_h200_long.csv.gz")
    assert len(check_sweep(measured, "h200_long")) == len(measured) == 380
    choices = sweep_choices(measured, descriptor, "geometry_sweep_h200_long.csv.gz").set_index("group")
    assert sorted(set(choices["trip"])) == [1_000_000, 10_000_000]
    assert np.isfinite(choices[[*RULE_POLICIES, "model", "best"]].to_numpy(dtype=float)).all()
    assert loop_class(descriptor, KernelDescriptor(10_000_000)) == "long"
    for kernel in ("loop_saxpy", "loop_polynomial"):
        row = choices.loc[f"{kernel} trip=10000000"]
        assert (row["heuristic_threads"], row["heuristic_blocks"]) == (64, 4224)  # capped at the resident blocks
        # measured: the capped grid beats LLVM's one iteration per thread and is within 10 % of the best
        assert row["heuristic"] < row["llvm"] / 1.4 and row["heuristic"] <= 1.1 * row["best"]


def test_judging_a_sweep_for_another_gpu_names_the_policies_whose_picks_it_never_measured(capsys):
    """The occupancy policy vanished from every table, and the heuristic was judged on 4 of 6 choices
    beside llvm's 6, without a word on stderr."""
    from gpuperf.datasets.bundled import data_dir

    assert main(["geometry-sweep", "--table", str(data_dir() / "geometry_sweep_h100.csv.gz"), "--gpu", "RTX 5090",
                 "--json"]) == 0
    err = capsys.readouterr().err
    assert "occupancy's pick was not measured in 6 of 6 group(s), which its figures leave out" in err
    assert "none is judged" in err and "heuristic's pick was not measured in 2 of 6 group(s)" in err
    assert main(["geometry-sweep", "--table", str(data_dir() / "geometry_sweep_h100.csv.gz"), "--json"]) == 0
    assert "was not measured" not in capsys.readouterr().err  # judged for the GPU it was taken on


def test_a_sweep_judged_with_another_gpus_descriptor_still_names_the_gpu_it_was_measured_on(capsys, tmp_path):
    """--gpu MI300X over the H100 sweep labelled the report and --json "Instinct MI300X"; every time
    in it was measured on the H100."""
    from gpuperf.datasets.bundled import data_dir

    table = str(data_dir() / "geometry_sweep_h100.csv.gz")
    assert main(["geometry-sweep", "--table", table, "--gpu", "MI300X", "--report", str(tmp_path / "r"),
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["device"], result["descriptor"]) == ("H100 SXM", "Instinct MI300X")
    assert "Device: H100 SXM, judged with the Instinct MI300X's descriptor;" in (tmp_path / "r" / "report.md").read_text()
    assert main(["geometry-sweep", "--table", table, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["device"], result["descriptor"]) == ("H100 SXM", "H100 SXM")


@pytest.mark.opencl
def test_resuming_another_devices_sweep_is_refused_before_anything_is_measured(tmp_path, capsys):
    """--gpu H100 matched the H100 sweep's recorded descriptor, so pocl's points were appended to the
    H100 file, which then could not be read back (two GPUs in its gpu column)."""
    import gzip
    import shutil

    from gpuperf.datasets.bundled import data_dir

    out = tmp_path / "h100.csv"
    with gzip.open(data_dir() / "geometry_sweep_h100.csv.gz", "rb") as source, open(out, "wb") as target:
        shutil.copyfileobj(source, target)
    before = out.read_bytes()
    assert main(["geometry-sweep", "--device", "opencl:0", "--out", str(out), "--resume", "--trips", "5000",
                 "--loops", "saxpy", "--cycles", "1", "--gpu", "H100", "--no-progress"]) == 2
    assert "the sweep to resume was measured on NVIDIA H100 80GB HBM3, this one on " in capsys.readouterr().err
    assert out.read_bytes() == before
    trials = tmp_path / "trials.csv"  # not a sweep: said so, not "name the GPU with --gpu"
    trials.write_text("kernel,time_s\nk,1.0\n")
    assert main(["geometry-sweep", "--device", "opencl:0", "--out", str(trials), "--resume", "--trips", "1000",
                 "--loops", "saxpy", "--gpu", "H100", "--no-progress"]) == 2
    assert "missing column(s) trip, threads, blocks" in capsys.readouterr().err


def test_points_no_launch_makes_are_left_out_with_a_note_and_a_missing_time_is_named():
    """A 2048-thread block or a grid past 2**31 - 1 blocks was judged, and could be the 'best'; a
    CPU's sweep judged with a GPU's descriptor (--gpu) holds such points too: left out, noted."""
    h100 = device_descriptor("H100")
    table = synthetic_sweep(h100, [100_000])
    plain = sweep_choices(table, h100, "s.csv")
    for threads, blocks, limit in ((2048, 1, "at most 1024 threads a block"),
                                   (128, 99_999_999_999, "at most 2147483647 blocks of 128 threads")):
        bad = pd.concat([table, pd.DataFrame([{"kernel": "loop_a", "trip": 100_000, "threads": threads,
                                               "blocks": blocks, "time_s": 1e-12, "status": "ok"}])], ignore_index=True)
        with pytest.warns(GpuperfNote, match=rf"s\.csv: 1 point\(s\) no launch on H100 SXM makes are left out \(first: "
                                             rf"row {len(bad)}, {threads} threads x {blocks} blocks; {limit}\)"):
            judged = sweep_choices(bad, h100, "s.csv")
        pd.testing.assert_frame_equal(judged, plain)  # the fastest point of all is no pick and not the best
    empty = pd.DataFrame({"kernel": ["k"], "trip": [10], "threads": [32], "blocks": [1], "time_s": [None]})
    with pytest.raises(GpuperfError, match=r"row 1: time_s must be a positive number, not a missing value \(an empty "
                                           r"cell or nan\)"):
        check_sweep(empty, "s.csv")


def test_a_point_at_exactly_the_grids_largest_block_count_is_kept():
    """2**31 - 1 blocks is a launch CUDA makes: judged (here the fastest, so the best), not left out."""
    h100 = device_descriptor("H100")
    table = synthetic_sweep(h100, [100_000])
    edge = pd.concat([table, pd.DataFrame([{"kernel": "loop_a", "trip": 100_000, "threads": 128,
                                            "blocks": 2**31 - 1, "time_s": 1e-12, "status": "ok"}])], ignore_index=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GpuperfNote)
        judged = sweep_choices(edge, h100, "s.csv")
    best = judged[judged["kernel"] == "loop_a"].iloc[0]
    assert (best["best"], best["best_blocks"]) == (1e-12, 2**31 - 1)


@pytest.mark.opencl
def test_a_sweep_too_large_for_the_devices_memory_is_refused_before_anything_is_built():
    from gpuperf.decisions.geometry_sweep import measure_sweep
    from gpuperf.measure.devices import open_device

    device = open_device("opencl:0")
    with pytest.raises(GpuperfError, match=r"trip 10,000,000,000,000: a loop's two float arrays take 80,000,000,000,000 "
                                           r"bytes, more than the [\d,]+ bytes of .*'s global memory"):
        measure_sweep(device, ["saxpy"], [100, 10**13], cpu_descriptor("cpu", 1, 256, 65536))


def test_resuming_with_another_descriptor_says_descriptors_differ_not_devices():
    """It said 'measured on H100 SXM, this one on pthread-...' of two sweeps both measured on pocl."""
    from gpuperf.datasets.bundled import data_dir
    from gpuperf.decisions.geometry_sweep import earlier_sweep

    h100 = pd.read_csv(data_dir() / "geometry_sweep_h100.csv.gz")
    with pytest.raises(GpuperfError, match=r"h100\.csv: the sweep to resume is judged with the H100 SXM's descriptor, "
                                           r"this one with the A100 .*'s; resume it with the same --gpu"):
        earlier_sweep(h100, "h100.csv", device_descriptor("A100"))


def test_a_failed_pick_counts_as_a_miss_not_as_a_choice_left_out():
    """The heuristic's 64 x 1563 failed at trip 100,000: it was dropped, so failing raised its share within 10 %."""
    h100 = device_descriptor("H100")
    table = synthetic_sweep(h100, [1000, 100_000])
    picks = policy_picks(h100, 100_000)
    heuristic = (table["trip"] == 100_000) & (table["threads"] == picks["heuristic"][0]) \
        & (table["blocks"] == picks["heuristic"][1])
    assert heuristic.sum() == 2 and picks["heuristic"] != picks["llvm"]
    failed = table.assign(status=np.where(heuristic, "RunFailed: test", "ok"))
    choices = sweep_choices(failed, h100, "s.csv")
    summary = sweep_summary(choices)
    assert summary.loc["heuristic", "choices"] == len(choices) and summary.loc["heuristic", "failed_picks"] == 2
    hits = int((choices["heuristic"] <= 1.1 * choices["best"]).sum())  # a failed pick (NaN) is no hit
    assert summary.loc["heuristic", "within_10pct"] == pytest.approx(hits / len(choices))
    assert any("heuristic's pick failed in 2 of" in note for note in unjudged_notes(choices, "s.csv"))


@pytest.mark.opencl
def test_a_sweep_resumed_on_an_out_file_not_there_yet_starts_anew_with_a_note(tmp_path, capsys):
    from gpuperf.cli import main

    out = tmp_path / "sweep.csv"
    assert main(["geometry-sweep", "--device", "opencl:0", "--loops", "saxpy", "--cycles", "1", "--out", str(out),
                 "--no-progress", "--json", "--trips", "1000", "--resume"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["points"] == len(pd.read_csv(out)) > 0
    assert f"note: --resume: {out} does not exist yet" in captured.err


def test_a_sweep_reports_metrics_hold_the_per_scope_figures_as_numbers(tmp_path):
    """docs/models.md: metrics.json keeps full-precision numbers; the pages' "1.46x 1/1" cells are labels only."""
    from gpuperf.decisions.geometry_sweep import sweep_figures
    from gpuperf.decisions.reports import sweep_report

    h100 = device_descriptor("H100")
    table = synthetic_sweep(h100, [100_000, 10_000_000])
    choices = sweep_choices(table, h100)
    paths = sweep_report(tmp_path, choices, sweep_summary(choices), table, h100.name, descriptor=h100)
    records = json.loads(paths["json"].read_text())["tables"]["Per (loop, trip count), per trip count and overall"]
    figures = sweep_figures(choices)
    assert [(r["scope"], r["policy"]) for r in records] == list(zip(figures["scope"], figures["policy"]))
    overall = next(r for r in records if r["scope"] == "all" and r["policy"] == "heuristic")
    expected = figures[(figures["scope"] == "all") & (figures["policy"] == "heuristic")].iloc[0]
    assert overall["speedup_vs_llvm"] == expected["speedup_vs_llvm"] and overall["choices"] == 4
    assert overall["trip"] is None and isinstance(overall["within_10pct"], float)
    assert "| all |" in paths["markdown"].read_text()  # the page still shows the labels


def test_a_sweep_report_judged_for_an_amd_gpu_gives_llvms_default_as_256_threads(tmp_path, monkeypatch):
    """LLVM's default block is 256 threads on an AMD GPU: the glossary and the strip chart's axis say so, as the
    pick table's llvm_threads does."""
    from gpuperf.decisions import reports

    labels = []
    drawn = reports.plot_strips
    monkeypatch.setattr(reports, "plot_strips", lambda values, path, xlabel, *a, **k: (
        labels.append(xlabel), drawn(values, path, xlabel, *a, **k))[1])
    mi300x = device_descriptor("MI300X")
    table = synthetic_sweep(mi300x, [100_000])
    choices = sweep_choices(table, mi300x)
    assert set(choices["llvm_threads"]) == {256}
    page = reports.sweep_report(tmp_path, choices, sweep_summary(choices), table, mi300x.name,
                                descriptor=mi300x)["markdown"].read_text()
    assert "llvm = LLVM's default, 256 threads" in page and "128 threads" not in page
    assert labels == ["speedup over LLVM's default (256 threads)"]


def test_policy_picks_past_the_largest_grid_are_capped_as_geometry_caps_them(tmp_path):
    """A 5e9-iteration loop on an MI300X (past HIP's 2**32 - 1 work-items) and a 3e11 one on an H100: the sweep
    judges the launch geometry prints, capped at the grid, not one no launch on the GPU makes."""
    from gpuperf.decisions.geometry import choose_geometry

    for gpu, trip in (("MI300X", 5_000_000_000), ("H100 SXM", 300_000_000_000)):
        device = device_descriptor(gpu)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", GpuperfNote)
            for policy, pick in policy_picks(device, trip).items():
                chosen = choose_geometry(device, trip, policy=policy)
                assert pick == (chosen.threads, chosen.blocks)
    table = tmp_path / "cap.csv"
    table.write_text("kernel,trip,threads,blocks,time_s\nloop_saxpy,300000000000,128,2147483647,1.0\n"
                     "loop_saxpy,300000000000,64,4224,0.9\nloop_saxpy,300000000000,128,3200,0.95\n")
    assert main(["geometry-sweep", "--table", str(table), "--gpu", "H100 SXM", "--json"]) == 0


@pytest.mark.opencl
def test_a_saved_sweep_has_a_provenance_file_saying_how_and_when_it_was_measured(tmp_path, capsys):
    out = tmp_path / "sweep.csv"
    argv = ["geometry-sweep", "--device", "opencl:0", "--loops", "saxpy", "--blocks-step", "8", "--cycles", "1",
            "--out", str(out), "--no-progress", "--json"]
    assert main([*argv, "--trips", "300"]) == 0
    record = json.loads((tmp_path / "sweep.provenance.json").read_text())
    assert record["file"] == "sweep.csv" and record["rows"] == len(pd.read_csv(out))
    assert record["command"] == ("gpuperf geometry-sweep --device opencl:0 --loops saxpy --trips 300 --blocks-step 8 "
                                 "--cycles 1")
    assert record["device"] == record["provenance"]["device_name"] and record["provenance"]["timer"] == "kernel_event"
    assert record["provenance"]["timing"]["cycles"] == 1 and record["measured_from"] <= record["measured_to"]
    first_started = record["measured_from"]
    assert main([*argv, "--trips", "300,600", "--resume"]) == 0  # the resumed sweep keeps when it began
    resumed = json.loads((tmp_path / "sweep.provenance.json").read_text())
    assert resumed["measured_from"] == first_started and resumed["rows"] == len(pd.read_csv(out)) > record["rows"]
    (tmp_path / "sweep.provenance.json").unlink()  # a sweep saved before provenance files: when it began is unknown
    assert main([*argv, "--trips", "300,600,900", "--resume"]) == 0
    assert json.loads((tmp_path / "sweep.provenance.json").read_text())["measured_from"] is None


@pytest.mark.parametrize("trips", ["0", "1000,-5"])
def test_geometry_sweep_names_the_trips_option_of_a_trip_count_below_one(trips, tmp_path, capsys):
    """--trips 0 is refused naming the option, before a device is opened or --out is claimed."""
    out = tmp_path / "sweep.csv"
    assert main(["geometry-sweep", "--device", "opencl:0", "--trips", trips, "--out", str(out)]) == 2
    assert f"--trips: trip count {trips.split(',')[-1]} must be at least 1" in capsys.readouterr().err
    assert not out.exists()


def test_a_sweep_recorded_per_another_unit_than_its_gpus_descriptor_now_says_so():
    """Limits recorded per CU (device_unit) and judged with a descriptor's per SM were set aside without a
    word, though each per-unit limit means another thing; an empty device_unit is no other unit."""
    from gpuperf.datasets.bundled import data_dir

    sweep = pd.read_csv(data_dir() / "geometry_sweep_h100.csv.gz")
    with pytest.warns(GpuperfNote, match=r"h100.csv: the sweep recorded device_unit='CU' \(the descriptor's SM\) "
                                         r"for the H100 SXM: .* not with the limits it ran under"):
        assert table_descriptor(sweep.assign(device_unit="CU"), "h100.csv").unit == "SM"
    with warnings.catch_warnings():
        warnings.simplefilter("error", GpuperfNote)
        assert table_descriptor(sweep.assign(device_unit=np.nan), "h100.csv").sms == 132


def test_a_sweep_recorded_under_other_limits_than_its_gpus_descriptor_now_says_so(tmp_path, monkeypatch):
    """A GPUPERF_GPUS entry replacing the H100 SXM (66 SMs) silently judged the sweep recorded with 132 SMs
    by the new descriptor: the recorded limits were set aside without a word."""
    from gpuperf.datasets.bundled import data_dir

    sweep = pd.read_csv(data_dir() / "geometry_sweep_h100.csv.gz")
    with warnings.catch_warnings():
        warnings.simplefilter("error", GpuperfNote)
        assert table_descriptor(sweep, "h100.csv").sms == 132  # as recorded: no note
    entry = ("[[gpu]]\nname = \"H100 SXM\"\nvendor = \"NVIDIA\"\narchitecture = \"Hopper\"\n"
             "compute_capability = \"9.0\"\nsms = 66\ncores_per_sm = 128\nboost_clock_mhz = 1980\n"
             "memory_bandwidth_gbs = 3350.0\nmemory_gb = 80\nl2_bytes = 52428800\npeak_f32_gflops = 33454.1\n")
    (tmp_path / "h100.toml").write_text(entry)
    monkeypatch.setenv("GPUPERF_GPUS", str(tmp_path / "h100.toml"))
    with pytest.warns(GpuperfNote, match=r"h100.csv: the sweep recorded device_sms=132 \(the descriptor's 66\) for "
                                         r"the H100 SXM: .* not with the limits it ran under"):
        assert table_descriptor(sweep, "h100.csv").sms == 66
