"""The data, hardware, kernels, measure, calibrate and reproduce commands, their table and report
outputs and the progress bar, pinned where mutation testing found them unchecked: defaults passed on
to the work (calibrate's passes, device and store; reproduce's split, folder and quick set; campaign
export's and run's flags), which options go with which study, table cells at their boundaries, the
output names a table may take, report-folder locks within one command, and the notes commands print.
The long studies and device runs are replaced by fakes that record what they were asked."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from gpuperf.cli import main
from gpuperf.cli.output import command_locks, print_table, report_folder
from test_pinned_loading_and_cli_defaults import SAXPY, _fake_measure  # a user kernel; measure replaced by a fake

DATA = Path(__file__).parent / "data"


def _cells(out: str) -> list[list[str]]:
    """The body rows of a rich table, each as its stripped cells."""
    return [[cell.strip() for cell in line.strip().strip("│").split("│")] for line in out.splitlines()
            if line.startswith("│")]


# -- output: table cells ---------------------------------------------------------------------------


def test_a_whole_number_is_shown_in_full_only_below_10_to_the_15(capsys):
    """output._format: "floats to 4 significant digits, but a whole number (a count) in full below 10**15,
    an undefined number (NaN) a dash, None empty"; 10**15 itself is no longer shown in full."""
    print_table([{"a": 999_999_999_999_999.0, "b": 1e15, "c": None, "d": 0.123456, "e": float("nan")}])
    (row,) = _cells(capsys.readouterr().out)
    assert row == ["999999999999999", "1e+15", "", "0.1235", "-"]


# -- output: where commands write --------------------------------------------------------------------


def test_import_takes_an_upper_case_csv_name(tmp_path, capsys):
    out = tmp_path / "VECTOR_ADD.CSV"
    assert main(["import", "kernel-tuner", str(DATA / "kernel_tuner_vector_add.json"), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote 8 rows (2 not ok) to {out}"  # as the .csv test's cache gives
    assert len(pd.read_csv(out)) == 8


def test_an_empty_file_in_the_way_of_a_command_without_resume_gets_no_resume_hint(tmp_path, capsys):
    out = tmp_path / "taken.csv"
    out.write_text("")
    assert main(["import", "kernel-tuner", str(DATA / "kernel_tuner_vector_add.json"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--out {out}: the file exists; gpuperf does not overwrite files" in err
    assert "--resume" not in err and "it is empty" not in err



def test_an_output_that_is_a_folder_or_in_a_missing_folder_is_named_as_such(tmp_path, capsys):
    folder, missing = tmp_path / "table.csv", tmp_path / "missing" / "table.csv"
    folder.mkdir()
    for out, message in ((folder, f"--out {folder}: a folder; name a file"),
                         (missing, f"--out {missing}: folder {missing.parent} does not exist")):
        assert main(["import", "kernel-tuner", str(DATA / "kernel_tuner_vector_add.json"), "--out", str(out)]) == 2
        assert message in capsys.readouterr().err
    assert list(folder.iterdir()) == [] and not missing.parent.exists()


def test_one_command_may_name_its_report_folder_twice_and_an_existing_empty_folder_stays(tmp_path):
    made, existing = tmp_path / "made", tmp_path / "existing"
    existing.mkdir()
    with command_locks():
        for folder in (made, existing):
            assert report_folder(folder) == folder
            assert report_folder(folder) == folder  # the lock this command holds is no other run's
    assert not made.exists()  # made for the lock, left empty: removed
    assert existing.is_dir() and list(existing.iterdir()) == []  # the user's folder: kept


# -- reproduce: options and defaults, with the studies replaced ----------------------------------------


def test_reproduce_advisor_defaults_to_the_inputs_split_in_its_own_folder(studies, tmp_path, monkeypatch, capsys):
    """docs/files.md: reproduce STUDY writes gpuperf-reproduce/STUDY/ unless --out names another folder."""
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "advisor"]) == 0
    assert studies == [{"study": "advisor", "out": "gpuperf-reproduce/advisor", "splits": ("inputs",)}]
    assert capsys.readouterr().out == "advisor: working\nreport: gpuperf-reproduce/advisor/report.md\n"


def test_reproduce_rodinia_runs_the_quick_set_unless_full(studies, tmp_path, capsys):
    from gpuperf.evaluation.rodinia_report import QUICK_MODELS, QUICK_SCENARIOS

    assert main(["reproduce", "rodinia", "--out", str(tmp_path / "quick")]) == 0
    assert main(["reproduce", "rodinia", "--full", "--out", str(tmp_path / "full")]) == 0
    assert main(["reproduce", "rodinia", "--scenarios", "bsp,scaling", "--out", str(tmp_path / "picked")]) == 0
    assert [{k: v for k, v in call.items() if k in ("scenarios", "models")} for call in studies] == [
        {"scenarios": QUICK_SCENARIOS, "models": QUICK_MODELS},
        {},  # --full: the study's own defaults, every scenario and model
        {"scenarios": ("bsp", "scaling"), "models": QUICK_MODELS},
    ]


def test_reproduce_json_prints_the_reports_metrics_and_nothing_else(studies, tmp_path, capsys):
    assert main(["reproduce", "geometry", "--out", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"metrics": {"study": "geometry"}}  # no "geometry: working"


def test_scenarios_go_with_reproduce_rodinia_only(studies, capsys):
    assert main(["reproduce", "advisor", "--scenarios", "bsp"]) == 2
    captured = capsys.readouterr()
    assert "--scenarios goes with reproduce rodinia, not advisor" in captured.err and studies == []


def test_a_folder_holding_a_tuning_report_is_refused_and_another_reports_folder_is_rewritten(studies, tmp_path,
                                                                                              capsys):
    tuned, evaluated = tmp_path / "tuned", tmp_path / "evaluated"
    for folder, metrics in ((tuned, {"tuning": {"budget": 5}}), (evaluated, {"mape": 0.1})):
        folder.mkdir()
        (folder / "metrics.json").write_text(json.dumps({"metrics": metrics}))
    assert main(["reproduce", "geometry", "--out", str(tuned)]) == 2
    assert f"--out {tuned}: holds a tuning report (gpuperf tune)" in capsys.readouterr().err
    assert main(["reproduce", "geometry", "--out", str(evaluated)]) == 0
    assert [call["out"] for call in studies] == [str(evaluated)]



def test_reproduce_geometry_checks_its_sweep_folders_before_any_work(studies, tmp_path, capsys):
    """docs/files.md: the sweeps' reports inside --out (sweep/, sweep_h100/) are checked as --out is, before any
    work: a tuning report there is never written over, a file there is named at once, not after a minute."""
    tuned, blocked = tmp_path / "tuned", tmp_path / "blocked"
    (tuned / "sweep").mkdir(parents=True)
    (tuned / "sweep" / "metrics.json").write_text(json.dumps({"metrics": {"tuning": {"budget": 5}}}))
    blocked.mkdir()
    (blocked / "sweep_h100").write_text("x")
    assert main(["reproduce", "geometry", "--out", str(tuned)]) == 2
    assert f"--out {tuned / 'sweep'}: holds a tuning report (gpuperf tune)" in capsys.readouterr().err
    assert main(["reproduce", "geometry", "--out", str(blocked)]) == 2
    assert f"--out {blocked / 'sweep_h100'}: a file, not a folder" in capsys.readouterr().err
    assert studies == []
    assert main(["reproduce", "advisor", "--out", str(blocked)]) == 0  # another study writes no sweep_h100/


# -- progress ----------------------------------------------------------------------------------------


def test_a_progress_bar_is_transient_unless_asked_otherwise():
    from gpuperf.progress import progress_bar

    assert progress_bar().live.transient is True
    assert progress_bar(False, transient=False).live.transient is False




def test_a_size_without_a_name_is_refused(capsys):
    assert main(["features", "vector_copy", "-p", " =4096"]) == 2
    assert "parameter ' =4096' must look like name=value" in capsys.readouterr().err


# -- data and kernels --------------------------------------------------------------------------------


def test_the_datasets_table_names_the_datasets_of_one_source_together(capsys, monkeypatch):
    import gpuperf.datasets

    rows = [{"name": name, "rows": 1, "kernels": 1, "gpus": 1, "license": "MIT", "source": source}
            for name, source in (("a", "lab one"), ("b", "lab two"), ("c", "lab one"))]
    monkeypatch.setattr(gpuperf.datasets, "dataset_summary", lambda progress=False: rows)  # reading every bundled table is slow
    assert main(["datasets"]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == ["a, c: lab one", "b: lab two"]


def test_spaces_lists_20_variants_by_default_and_titles_a_cut_list_as_the_first_ones(capsys, monkeypatch):
    assert main(["spaces", "stencil2d", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert (len(listed["variants"]), len(listed["skipped"])) == (20, 20)  # 660 pass the check: the list is cut
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["spaces", "srad1", "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert "first 2 valid variants" in out and "first 2 skipped" in out



def test_a_space_whose_check_rejects_nothing_says_each_configuration_passes(tmp_path, capsys):
    (tmp_path / "open_space.py").write_text(
        "from gpuperf.kernels.space import VariantSpace\n" + SAXPY.replace("def saxpy():", "def saxpy(config=None):")
        + "\n\ndef open_space():\n    return VariantSpace(name='open', parameters={'local_x': [32, 64]}, "
          "defaults={'local_x': 32}, check=lambda c: None, make=lambda c: saxpy())\n")
    assert main(["spaces", f"{tmp_path / 'open_space.py'}:open_space"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # a long temporary path wraps
    assert "open_space: 2 configurations, each passing the space's check" in out and "rejected" not in out


# -- hardware ----------------------------------------------------------------------------------------


def test_the_gpus_table_gives_the_l2_in_mib(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["gpus"]) == 0
    (h100,) = [row for row in _cells(capsys.readouterr().out) if row[0] == "H100 SXM"]
    assert h100[7] == "50"  # its 52428800 bytes of L2 / 2**20 = 50 MiB (the 8th column, "L2 MiB")


def test_occupancy_takes_no_shared_memory_by_default(capsys):
    assert main(["occupancy", "--gpu", "H100", "--threads", "256", "--registers", "32", "--json"]) == 0
    # H100: 228 KiB of shared memory per SM, 1 KiB reserved per block: 228 blocks with none of their own
    # (1 byte would round up to 128 and allow 228 KiB / 1152 B = 202)
    assert json.loads(capsys.readouterr().out)["block_limits"]["shared_memory"] == 228


def test_a_limit_that_does_not_apply_reads_no_limit(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["occupancy", "--gpu", "MI250X", "--threads", "256", "--registers", "32"]) == 0
    rows = {row[0]: row[1] for row in _cells(capsys.readouterr().out)}
    assert rows["blocks allowed by shared_memory"] == "no limit"  # 0 B of LDS limits no work-group count
    assert rows["blocks allowed by registers"] == "8"


def test_resources_count_the_threads_of_a_two_dimensional_block(capsys):
    assert main(["resources", "copy_2d", "-p", "n=256", "-p", "m=256", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["threads_per_block"] == 256  # copy_2d's 16 x 16 x 1 work-group


# -- measure and campaigns ---------------------------------------------------------------------------


def test_one_repeat_is_the_least_measure_takes(monkeypatch, capsys):
    calls = _fake_measure(monkeypatch, samples=(0.25,))
    assert main(["measure", "vector_copy", "-p", "n=4096", "--min-repeats", "1", "--max-repeats", "1",
                 "--min-time", "0", "--json"]) == 0
    assert (calls["settings"].min_repeats, calls["settings"].max_repeats) == (1, 1)


def test_runs_stopped_at_max_repeats_are_said_to_have_stopped_there(monkeypatch, capsys):
    _fake_measure(monkeypatch, samples=(0.25, 0.25))
    assert main(["measure", "vector_copy", "-p", "n=4096", "--min-repeats", "2", "--max-repeats", "2", "--min-time",
                 "1", "--json"]) == 0
    # 2 runs of 0.25 s sum to 0.5 s < 1 s, and 2 runs are --max-repeats 2: that is where they stopped
    assert json.loads(capsys.readouterr().out)["notes"] == [
        "the timed runs sum to 0.5 s, short of --min-time 1 s: they stopped at 2 runs (--max-repeats 2)"]


def test_campaign_export_passes_its_flags_on(tmp_path, monkeypatch, capsys):
    import gpuperf.measure.export as export

    asked = []

    def fake_export(store, out, fmt, campaign, features, cycle_times, progress):
        asked.append((fmt, campaign, features, cycle_times))
        return pd.DataFrame({"kernel": ["a", "b"], "n": [1, 2], "time_s": [0.1, 0.2]})

    monkeypatch.setattr(export, "export_store", fake_export)
    store = str(tmp_path / "s.sqlite")
    assert main(["campaign", "export", "--store", store, "--out", str(tmp_path / "a.csv"), "--no-progress"]) == 0
    assert capsys.readouterr().out == f"wrote 2 rows x 3 columns to {tmp_path / 'a.csv'}\n"
    assert main(["campaign", "export", "--store", store, "--out", str(tmp_path / "b.csv"), "--no-features",
                 "--cycle-times", "--campaign", "c1", "--format", "csv", "--no-progress"]) == 0
    assert asked == [(None, None, True, False), ("csv", "c1", False, True)]


def test_campaign_run_passes_retry_failed_and_shows_no_bar_with_json(tmp_path, monkeypatch, capsys):
    import gpuperf.measure.campaign as campaign

    asked = []

    def fake_run(loaded, store, device, progress, retry_failed):
        asked.append((device, progress, retry_failed))
        return SimpleNamespace(to_dict=lambda: {"planned": 1})

    monkeypatch.setattr(campaign, "run_campaign", fake_run)
    file = tmp_path / "c.toml"
    file.write_text('name = "c"\n[[kernels]]\nkernel = "vector_copy"\nsizes = [{n = 4096}]\n')
    store = str(tmp_path / "s.sqlite")
    assert main(["campaign", "run", str(file), "--store", store, "--retry-failed", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"planned": 1, "skipped_variant_sizes": 0}
    assert main(["campaign", "run", str(file), "--store", store, "-d", "opencl:0:0"]) == 0
    assert asked == [(None, False, True), ("opencl:0:0", True, False)]


# -- calibrate and predict, with the measuring and the model replaced -------------------------------


@pytest.fixture
def fake_calibrate(monkeypatch):
    """calibrate with the measuring fit replaced: records what it was asked; the model it 'fits' prices
    one of its three points (kernel a's first) at exactly 0 s."""
    import gpuperf.evaluation.linear_eval as linear_eval
    import gpuperf.models.linear_calibration as linear_calibration

    asked = []

    def fake(device, store, **options):
        asked.append({"device": device, "store": store, **options})
        return SimpleNamespace(
            data=pd.DataFrame({"kernel": ["a", "a", "b"], "predicted_s": [0.0, 1.0, 2.0]}),
            metadata={"unobserved_properties": []}, device=SimpleNamespace(name="opencl:0:0", description="pocl"),
            model=SimpleNamespace(weights_={"flops": 1e-9}),
            per_kernel_error=lambda: pd.Series({"a": 0.5, "b": 0.25}))

    monkeypatch.setattr(linear_calibration, "calibrate", fake)
    monkeypatch.setattr(linear_eval, "calibrate_from_table",
                        lambda table, device_class, property_set, statistic, properties: fake("table", table))
    monkeypatch.setattr(linear_calibration, "save_calibration", lambda calibration, out, new, replace: out)
    return asked


def test_calibrate_measures_three_passes_on_opencl_0_into_a_store_beside_the_model(fake_calibrate, tmp_path, capsys):
    """docs: --device opencl:0 (default), --passes (default 3), --store (default calibration.db next to --out)."""
    out = tmp_path / "m.json"
    assert main(["calibrate", "--out", str(out), "--json"]) == 0
    assert fake_calibrate == [{"device": "opencl:0", "store": tmp_path / "calibration.db", "kernels": None, "passes": 3,
                               "property_set": None, "properties": None, "statistic": "min", "progress": False,
                               "cycles": 1}]
    assert main(["calibrate", "--out", str(out), "--cycles", "4", "--no-progress", "--json"]) == 0
    assert (fake_calibrate[-1]["cycles"], fake_calibrate[-1]["passes"]) == (4, 3)


def test_calibrate_notes_a_point_priced_at_exactly_0_s_and_names_the_store(fake_calibrate, tmp_path, capsys,
                                                                           monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    out = tmp_path / "m.json"
    assert main(["calibrate", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "note: the model predicts no positive time for 1 of its own 3 calibration points (kernels a)" in captured.err
    assert captured.out.splitlines()[-1] == f"wrote {out} (store {tmp_path / 'calibration.db'})"
    table = tmp_path / "points.csv"  # fitted on a table (read by the fake): no store, the points' file is named
    assert main(["calibrate", "--table", str(table), "--out", str(tmp_path / "t.json")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"wrote {tmp_path / 't.json'} (points from {table})"


def test_two_passes_in_two_cycles_are_refused(fake_calibrate, tmp_path, capsys):
    assert main(["calibrate", "--out", str(tmp_path / "m.json"), "--passes", "2", "--cycles", "2"]) == 2
    assert "--passes and --cycles are two ways to time the points; give one of them" in capsys.readouterr().err
    assert fake_calibrate == []  # refused before measuring



def test_calibrate_writes_its_model_only_to_a_json_file(fake_calibrate, tmp_path, capsys):
    assert main(["calibrate", "--out", str(tmp_path / "m.csv")]) == 2
    assert f"--out: '{tmp_path / 'm.csv'}' must end in .json" in capsys.readouterr().err
    assert fake_calibrate == []


def test_a_kernel_missed_by_exactly_2x_is_not_named_as_missed_by_more():
    from gpuperf.cli.calibrate_cli import fit_summary

    # gmre 1.0: exp(mean |ln(p / m)|) = 2, off by exactly 2x; 1.5 is over it
    assert "Missed by" not in fit_summary(pd.Series({"a": 1.0, "b": 0.5}))
    assert "Missed by more than 2x: c (1.5);" in fit_summary(pd.Series({"a": 1.0, "c": 1.5}))


@pytest.fixture
def fake_prediction(monkeypatch):
    """predict with the model replaced: a time of exactly 0 s from one priced property (flops, 2e-9 s,
    outweighed by an overlap of -2e-9 s) and one that adds nothing (bytes), for a model of an H100 SXM
    measured as opencl:0:0; the model's class is set per test."""
    import gpuperf.models.linear_calibration as linear_calibration

    metadata = {"device": "opencl:0:0", "device_name": "H100 SXM", "device_class": "cpu", "unobserved_properties": []}
    result = {"kernel": "vector_copy", "sizes": {"n": 4096}, "properties": {"flops": 2.0, "bytes": 0.0, "overlap": 1.0},
              "contributions_s": {"flops": 2e-9, "bytes": 0.0, "overlap": -2e-9}, "time_s": 0.0}
    monkeypatch.setattr(linear_calibration, "load_linear_model", lambda path: (None, metadata))
    monkeypatch.setattr(linear_calibration, "predict_kernel", lambda fitted, kernel, sizes: dict(result))
    return metadata


def test_predict_notes_a_time_of_exactly_0_and_lists_only_the_properties_that_cost_time(fake_prediction, capsys,
                                                                                       monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["predict", "vector_copy", "-p", "n=4096", "--model", "m.json"]) == 0
    captured = capsys.readouterr()
    assert "note: m.json: a time that is not positive (0 s)" in captured.err
    assert [row[0] for row in _cells(captured.out)] == ["flops", "overlap"]  # bytes add 0 s: left out
    # the title names the GPU (device_name), not the device spec it was measured as
    assert "vector_copy at n=4096 on H100 SXM" in " ".join(captured.out.split())


def test_only_a_gpu_models_launch_limits_are_checked(fake_prediction, monkeypatch, capsys):
    import gpuperf.features.occupancy as occupancy
    from gpuperf.errors import GpuperfError

    def refuse(*args):
        raise GpuperfError("too wide")

    monkeypatch.setattr(occupancy, "check_block_limits", refuse)  # every launch refused
    assert main(["predict", "vector_copy", "-p", "n=4096", "--model", "m.json", "--json"]) == 0
    assert "cannot launch" not in capsys.readouterr().err  # a CPU's model: its GPU name says no work-group limit
    fake_prediction["device_class"] = "gpu"
    assert main(["predict", "vector_copy", "-p", "n=4096", "--model", "m.json", "--json"]) == 0
    assert "vector_copy cannot launch on the H100 SXM the model describes (too wide)" in capsys.readouterr().err


def test_an_empty_scenarios_or_device_option_is_given_not_left_out(studies, tmp_path, capsys):
    """--scenarios "" ran rodinia's quick set, and reproduce geometry --scenarios "" ran the geometry
    study, as if the option had not been given."""
    assert main(["reproduce", "rodinia", "--scenarios", "", "--out", str(tmp_path / "r")]) == 2
    assert "--scenarios '' names no scenario" in capsys.readouterr().err
    assert main(["reproduce", "geometry", "--scenarios", "", "--out", str(tmp_path / "g")]) == 2
    assert "--scenarios goes with reproduce rodinia, not geometry" in capsys.readouterr().err
    assert main(["reproduce", "geometry", "--device", "", "--out", str(tmp_path / "g")]) == 2
    assert "--device goes with reproduce linear, not geometry" in capsys.readouterr().err
    assert studies == []
