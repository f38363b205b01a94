"""The command line's promises that mutation testing found unguarded: JSON values, size parsing at
its limits, and the notes and errors about files a command writes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from gpuperf.cli import main
from gpuperf.cli.output import parse_params, print_json, whole_counts
from gpuperf.errors import GpuperfError
from test_advise_cli import ENTRY  # the advise tests' entry, trained on the bundled matvec pairs


def test_print_json_writes_nan_and_both_infinities_as_null(capsys):
    print_json({"nan": math.nan, "inf": math.inf, "minus_inf": np.float64(-np.inf), "x": [1.5, math.inf]})
    assert json.loads(capsys.readouterr().out) == {"nan": None, "inf": None, "minus_inf": None, "x": [1.5, None]}


def test_whole_counts_turn_only_whole_values_of_count_features_into_integers():
    counted = whole_counts({"threads": 256.0, "work_groups": 2.5, "local_size_0": 32.0, "flops": 7.0})
    assert counted == {"threads": 256, "work_groups": 2.5, "local_size_0": 32, "flops": 7.0}
    assert type(counted["threads"]) is int and type(counted["work_groups"]) is float
    assert type(counted["flops"]) is float  # not a count of whole things


def test_a_size_of_2_to_the_63_is_out_of_range_as_no_64_bit_index_holds_it(capsys):
    assert main(["features", "vector_copy", "-p", f"n={2**63}"]) == 2
    assert f"value '{2**63}' is out of range" in capsys.readouterr().err
    assert parse_params([f"n={2**62}"]) == {"n": 2**62}


def test_a_text_size_given_twice_is_refused_as_a_number_given_twice_is(tmp_path, capsys):
    assert main(["explore", str(tmp_path / "space.csv"), "-p", "problem_size=[1]", "-p", "problem_size=[2]"]) == 2
    assert "parameter 'problem_size' is given twice" in capsys.readouterr().err


def test_only_an_empty_output_file_is_called_a_killed_runs_claim(tmp_path, capsys):
    """tune --out refuses an existing file; only an empty one (a run killed before its first trial)
    gets the hint to remove it or --resume, as a file of trials is no such claim."""
    trials = tmp_path / "trials.csv"
    trials.write_text("local_x,time_s,status\n16,0.001,ok\n")
    argv = ["tune", "jacobi2d_5pt", "-p", "n=128", "-p", "m=128", "--budget", "1", "--out", str(trials)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "the file exists; gpuperf does not overwrite files" in err and "it is empty" not in err
    assert trials.read_text() == "local_x,time_s,status\n16,0.001,ok\n"
    trials.write_text("")
    assert main(argv) == 2
    assert "(it is empty: a run killed before its first result left it claimed; remove it, or --resume)" in \
        capsys.readouterr().err


def test_a_refused_rerun_into_a_file_of_trials_names_resume(tmp_path, capsys):
    """tune --out on the trials of an earlier run said only 'choose another --out or move it away', never
    that --resume goes on with that run; a command that takes no --resume still does not mention it."""
    trials = tmp_path / "trials.csv"
    trials.write_text("local_x,time_s,status\n16,0.001,ok\n")
    argv = ["tune", "jacobi2d_5pt", "-p", "n=128", "-p", "m=128", "--budget", "1", "--out", str(trials)]
    assert main(argv) == 2
    assert f"--out {trials}: the file exists; gpuperf does not overwrite files (choose another --out or move it " \
           "away; or --resume to go on with the run it holds)" in capsys.readouterr().err
    assert main(["import", "nvprof", str(Path(__file__).parent / "data" / "nvprof_gpu_trace.csv"), "--out",
                 str(trials)]) == 2
    assert "--resume" not in capsys.readouterr().err


def test_an_empty_claim_names_resume_only_where_the_command_takes_it(tmp_path):
    from gpuperf.cli.output import new_output_file

    claim = tmp_path / "claim.csv"
    claim.write_text("")
    with pytest.raises(GpuperfError) as error:
        new_output_file(claim)
    assert "--resume" not in str(error.value) and "it is empty" not in str(error.value)
    with pytest.raises(GpuperfError, match=r"\(it is empty: a run killed before its first result left it claimed; "
                                           r"remove it, or --resume\); .* or move it away\)$"):
        new_output_file(claim, resumable=True)


def test_the_gpus_table_shows_large_figures_as_whole_numbers(capsys, monkeypatch):
    from gpuperf.hardware import get_gpu

    monkeypatch.setenv("COLUMNS", "250")
    assert main(["gpus"]) == 0
    out = capsys.readouterr().out
    peak = get_gpu("H100").peak_f32_gflops
    assert peak >= 10000 and not float(peak).is_integer()  # shown rounded: 66908.2 as 66908, not 6.691e+04
    assert f" {round(peak)} " in out
    assert "e+0" not in out


def test_the_occupancy_table_lists_each_limit_as_its_own_row(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["occupancy", "--gpu", "H100", "--threads", "256", "--registers", "32"]) == 0
    out = capsys.readouterr().out
    assert "blocks allowed by registers" in out and "blocks allowed by shared_memory" in out
    assert "block_limits" not in out  # the limits as rows, not one dict


def test_an_unknown_kernel_category_is_refused_naming_the_known_ones(capsys):
    assert main(["kernels", "--category", "stencils", "--json"]) == 2
    captured = capsys.readouterr()
    assert "unknown category 'stencils'; did you mean stencil" in captured.err and captured.out == ""


def test_metrics_go_with_the_nvprof_format_only(tmp_path, capsys):
    data = Path(__file__).parent / "data"
    out = tmp_path / "out.csv"
    argv = ["import", "kernel-tuner", str(data / "kernel_tuner_vector_add.json"), "--out", str(out),
            "--metrics", str(data / "nvprof_gpu_trace.csv")]
    assert main(argv) == 2
    assert "--metrics goes with the nvprof format, not 'kernel-tuner'" in capsys.readouterr().err
    assert not out.exists()


def test_the_datasets_table_counts_kernels_and_gpus(capsys, monkeypatch):
    import gpuperf.datasets

    row = {"name": "mine", "rows": 12, "kernels": 3, "gpus": 2, "license": "MIT", "source": "my lab"}
    monkeypatch.setattr(gpuperf.datasets, "dataset_summary", lambda progress=False: [row])  # reading every bundled table is slow
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "name" in line and "license" in line)
    assert [cell.strip() for cell in header.strip("┃ ").split("┃")] == ["name", "rows", "kernels", "gpus", "license"]
    row = next(line for line in out.splitlines() if line.startswith("│ mine "))
    assert [cell.strip() for cell in row.strip("│ ").split("│")] == ["mine", "12", "3", "2", "MIT"]
    assert "mine: my lab" in out


@pytest.mark.opencl
def test_max_repeats_equal_to_min_repeats_times_exactly_that_many_runs(capsys):
    argv = ["measure", "vector_copy", "-p", "n=1024", "--min-repeats", "3", "--max-repeats", "3", "--min-time", "0",
            "--json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["repeats"] == 3
    assert main(["measure", "vector_copy", "-p", "n=1024", "--min-repeats", "3", "--max-repeats", "2"]) == 2
    assert "--max-repeats 2: must be at least --min-repeats (3)" in capsys.readouterr().err


@pytest.mark.opencl
def test_campaign_run_json_counts_the_variant_sizes_it_leaves_out(tmp_path, capsys):
    campaign = tmp_path / "mixed.toml"
    campaign.write_text('name = "mixed"\n[[spaces]]\nspace = "stencil2d"\nlimit = 1\n'
                        'sizes = [{n = 100, m = 100}, {n = 64, m = 64}]\n'
                        "[timing]\nwarmup = 1\nmin_repeats = 2\nmin_time_s = 0\nmax_repeats = 2\nmax_retries = 0\n")
    assert main(["campaign", "run", str(campaign), "--store", str(tmp_path / "s.sqlite"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["planned"], summary["measured"], summary["skipped_variant_sizes"]) == (1, 1, 1)


def test_fit_writes_a_model_only_to_a_json_or_skops_file(tmp_path, capsys):
    table = tmp_path / "t.csv"
    table.write_text("gpu,kernel,n,time_s\nH100,k,1,1.0\nH100,k,2,2.0\nH100,k,3,3.0\n")
    out = tmp_path / "m.csv"
    assert main(["fit", str(table), "--model", "lr", "--out", str(out)]) == 2
    assert f"--out {out}: use a .json or .skops model file" in capsys.readouterr().err
    assert not out.exists()


def test_a_trip_of_exactly_2_to_the_63_is_too_large(capsys):
    assert main(["geometry", "--gpu", "H100", "--trip", str(2**63), "--json"]) == 2
    assert f"--trip: '{2**63}' is too large (at most 2**63 - 1)" in capsys.readouterr().err


def test_times_200_times_apart_get_the_log_target_hint_and_10_times_apart_do_not(tmp_path, capsys):
    table = tmp_path / "t.csv"
    rows = [f"H100,k,{n},{0.01 * n}" for n in (1, 2, 5, 10)]
    table.write_text("gpu,kernel,n,time_s\n" + "\n".join(rows) + "\n")
    assert main(["fit", str(table), "--model", "lr", "--out", str(tmp_path / "a.json")]) == 0
    assert "--log-target" not in capsys.readouterr().err
    table.write_text("gpu,kernel,n,time_s\n" + "\n".join([*rows, "H100,k,200,2.0"]) + "\n")
    assert main(["fit", str(table), "--model", "lr", "--out", str(tmp_path / "b.json")]) == 0
    assert "its times span 200x; fitted on raw times, lr weighs the slowest rows" in capsys.readouterr().err


def test_a_predicted_time_of_zero_counts_as_not_positive():
    import pandas as pd

    from gpuperf.cli.models_cli import not_positive_note

    note = not_positive_note(pd.Series([0.0, 1e-9, 2.0]), 3, {"name": "lr", "log_target": False})
    assert note is not None and note.startswith("note: 1 of 3 predictions are not positive times")


def test_sizes_naming_a_column_twice_are_refused_before_the_table_is_read(tmp_path, capsys):
    argv = ["evaluate", str(tmp_path / "absent.csv"), "--model", "lr", "--protocol", "leave-one-size-out",
            "--sizes", "n, m,n"]
    assert main(argv) == 2
    assert "--sizes names a column more than once: n, m,n" in capsys.readouterr().err


def test_predict_gpu_scales_the_other_gpus_times_and_writes_a_gzipped_table(tmp_path, capsys):
    import pandas as pd

    table = tmp_path / "times.csv"
    table.write_text("gpu,kernel,n,time_s\nA100,k,1,1.0\nA100,k,2,2.0\nA100,k,3,3.0\nH100 SXM,k,1,0.5\n")
    out = tmp_path / "h100.csv.gz"
    assert main(["predict-gpu", str(table), "--gpu", "H100 SXM", "--key", "n", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["gpu"], summary["predicted"], summary["time_column"]) == ("H100 SXM", 2, "predicted_time_s")
    written = pd.read_csv(out, compression="gzip")
    assert written["n"].tolist() == [1, 2, 3] and written["source"].tolist() == ["measured", "predicted", "predicted"]
    assert np.allclose(written["predicted_time_s"], [0.5, 1.0, 1.5])  # A100's times x 0.5 / 1.0, from n=1
    assert (written["predicted_gpu"] == "H100 SXM").all()


def test_the_spearman_selection_note_only_when_fewer_features_than_asked_reach_the_threshold(tmp_path, capsys):
    table = tmp_path / "t.csv"  # a and b rank the rows as the time does (|r| = 1), c does not (|r| < 0.75)
    rows = [f"H100,k,{n},{n * n + 1},{(n * 7) % 5},{0.001 * n}" for n in range(1, 13)]
    table.write_text("gpu,kernel,a,b,c,time_s\n" + "\n".join(rows) + "\n")
    assert main(["fit", str(table), "--model", "lr", "--select", "spearman:2", "--out", str(tmp_path / "two.json"),
                 "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["selected_features"] == ["a", "b"] and "reached" not in captured.err
    assert main(["fit", str(table), "--model", "lr", "--select", "spearman:3", "--out", str(tmp_path / "three.json")]) == 0
    assert "only 2 features reached |Spearman r| >= 0.75 with the time (asked for 3)" in capsys.readouterr().err


def test_only_a_spec_ending_in_its_closing_bracket_names_a_variant_space():
    from gpuperf.cli.advise_cli import variant_space_name

    assert variant_space_name("stencil2d[local_x=16]") == "stencil2d"
    assert variant_space_name(" my.py:space [local_x=16] ") == "my.py:space"
    assert variant_space_name("stencil2d[local_x=16") is None
    assert variant_space_name("stencil2d") is None


def test_numbered_rows_count_from_one_and_head_the_time_by_its_column():
    from gpuperf.cli.decisions_cli import numbered

    rows = [{"bx": 1, "tile": None, "time": 0.5}, {"bx": 2, "tile": 4, "time": 0.25}]
    assert numbered(rows, ["tile"], "time_ms") == [{"#": 1, "bx": 1, "tile": "None", "time_ms": 0.5},
                                                  {"#": 2, "bx": 2, "tile": 4, "time_ms": 0.25}]
    assert [row["trial"] for row in numbered([{"#": 7, "time": 1.0}])] == [1]  # a parameter named # keeps its name


def test_a_search_that_ties_its_baseline_is_not_said_to_lose_to_it():
    from gpuperf.cli.decisions_cli import verdict

    summary = {"evals_to_90": 5, "random_expected_evals_to_90": 5.0, "evaluated": 8, "best_found_time": 1.0,
               "best_time": 1.0, "budget": 20}
    assert verdict(summary) == ("The search reached 90 % of the best after 5 evaluations; random order needs 5.0 on "
                                "average (exact expectation; random_evals_to_90 is the mean of seeded runs). It stopped "
                                "at the best configuration.")
    assert "this space favours a baseline" in verdict({**summary, "evals_to_90": 6})


def test_geometry_json_names_the_gpu_an_alias_stands_for_and_defaults_to_32_registers(capsys):
    def geometry(*extra: str) -> dict:
        assert main(["geometry", "--gpu", "H100", "--trip", "1e6", "--policy", "occupancy", *extra, "--json"]) == 0
        return json.loads(capsys.readouterr().out)

    default = geometry()
    # 1024 threads x 32 registers: two blocks fill the H100's 65536 registers per SM; ceil(1e6 / 1024) = 977 blocks
    assert default == {"threads": 1024, "blocks": 977, "class": "long", "policy": "occupancy", "gpu": "H100 SXM",
                       "trip": 1_000_000, "notes": ["'H100' is taken as the H100 SXM; gpuperf also describes the H100 "
                                                    "PCIe: name the board if it ran on another"]}
    assert geometry("--registers", "32") == default
    assert (geometry("--registers", "128")["threads"]) == 512  # 1024 x 128 registers would not fit one SM


def test_geometry_by_default_fits_a_gpu_that_allows_63_registers_a_thread(capsys):
    assert main(["geometry", "--gpu", "GTX 680", "--trip", "100000", "--policy", "occupancy", "--json"]) == 0
    chosen = json.loads(capsys.readouterr().out)
    assert (chosen["gpu"], chosen["threads"], chosen["blocks"]) == ("GTX 680", 1024, 98)  # ceil(100000 / 1024)


def test_ask_on_a_fully_measured_table_says_so_without_a_count_note(tmp_path, capsys):
    table = tmp_path / "space.csv"
    table.write_text("bx,tile,time_ms\n1,1,2.0\n1,2,1.5\n2,1,1.0\n2,2,3.0\n")
    assert main(["ask", str(table), "--params", "bx,tile", "--count", "2"]) == 0
    captured = capsys.readouterr()
    assert f"Every configuration of {table} has been measured (0 failed)." in captured.out
    assert "4 of 4 measured (0 failed); best so far 1 (time_ms) at line 4" in captured.out  # the header is line 1
    assert "--count" not in captured.err


def test_advise_json_names_each_optimization_that_does_not_apply_with_its_reason(tmp_path, capsys):
    (tmp_path / "t_coalesce.toml").write_text(ENTRY.format(
        name="t_coalesce", before="MAU", after="MAC", condition='applies_when = "cache_lines_per_warp_access > 3"',
        summary="do t_coalesce"))
    argv = ["advise", "vector_copy", "-p", "n=4096", "--gpu", "GTX 970", "--json", "--optimizations", str(tmp_path),
            "--only", "t_coalesce"]
    assert main(argv) == 0  # vector_copy's warps read one line per access: coalesced already
    advice = json.loads(capsys.readouterr().out)
    assert advice["suggestions"] == [] and advice["below_threshold"] == []
    assert [set(entry) for entry in advice["not_suggested"]] == [{"optimization", "reason"}]
    assert advice["not_suggested"][0]["optimization"] == "t_coalesce"


def test_advise_json_writes_the_dates_and_times_of_an_entrys_apply_parameters_as_iso_text(tmp_path, capsys):
    """A TOML date among an entry's apply.parameters crashed ``advise --json`` (no JSON for a date)."""
    from gpuperf.cli.advise_cli import advice_json
    from gpuperf.decisions.advisor import Advice, Suggestion
    from gpuperf.decisions.optimizations import load_optimizations

    entry = ENTRY.format(name="t_dated", before="MAU", after="MAC", condition="", summary="do t_dated")
    (tmp_path / "t_dated.toml").write_text(entry.replace(
        "[apply]\n", "[apply]\nparameters = { since = 2024-01-02, at = 07:32:00, stamp = 2024-01-02T07:32:00Z }\n"))
    dated = load_optimizations([tmp_path])["t_dated"]
    suggestion = Suggestion(dated.name, dated.title, 1.5, 0.9, {"summary": "s"}, dict(dated.apply))
    print_json({"subject": "k", **advice_json(Advice([suggestion], [suggestion]), 1.05, 0.5)})
    (shown,) = json.loads(capsys.readouterr().out)["suggestions"]
    assert shown["apply"]["parameters"] == {"since": "2024-01-02", "at": "07:32:00", "stamp": "2024-01-02T07:32:00+00:00"}


def test_a_size_past_2_to_the_53_keeps_every_digit_up_to_2_to_the_63_minus_1(capsys):
    """Sizes went through a float: 2**53 + 1 became 2**53, and 2**63 - 1 (which a 64-bit index holds)
    was refused as out of range after rounding up to 2**63."""
    assert parse_params([f"n={2**53 + 1}", f"m={2**63 - 1}", "k=4.096e3"]) == {"n": 2**53 + 1, "m": 2**63 - 1, "k": 4096}
    assert main(["features", "vector_copy", "-p", f"n={-2**63}"]) == 2
    assert f"value '{-2**63}' is out of range" in capsys.readouterr().err


def test_several_sizes_in_one_p_say_to_give_one_p_per_size(capsys):
    """-p n=1024,m=1024 said only "value '1024,m=1024' is not a number"; a table's text size too."""
    assert main(["features", "jacobi2d_5pt", "-p", "n=1024,m=1024"]) == 2
    assert ("parameter 'n=1024,m=1024': value '1024,m=1024' is not a number; give one -p per size: -p n=1024 "
            "-p m=1024") in capsys.readouterr().err
    with pytest.raises(GpuperfError, match=r"give one -p per size: -p n=1 -p m=2$"):
        parse_params(["n=1, m=2"], text=True)
    with pytest.raises(GpuperfError, match=r"give one -p per size: -p n=1 -p m=2 -p k=3$"):
        parse_params(["n=1;m=2 k=3"])
    with pytest.raises(GpuperfError, match=r"give one -p per size: -p NAME=VALUE -p NAME=VALUE$"):
        parse_params(["n=m=1024"])
    with pytest.raises(GpuperfError, match=r"give one -p per size: -p NAME=VALUE -p NAME=VALUE$"):
        parse_params(["n=1,m=2,k"])  # k has no value: no pieces to repeat as they are
    with pytest.raises(GpuperfError, match=r"value 'big' is not a number$"):
        parse_params(["n=big"])
    assert parse_params(["problem_size=[1024, 1024]"], text=True) == {"problem_size": "[1024, 1024]"}
