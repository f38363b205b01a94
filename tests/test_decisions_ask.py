"""gpuperf ask: the next configuration to measure, from a table of the space measured so far."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from gpuperf.cli import main
from gpuperf.decisions.ask import next_configuration, partly_measured, unmeasured_rows
from gpuperf.decisions.exploration import make_explorer
from gpuperf.decisions.explorers import run_search
from gpuperf.decisions.space import Space, read_table
from gpuperf.errors import GpuperfError


def grid(optimum: tuple[int, int], scale: float = 1.0) -> Space:
    xs, ys = np.meshgrid(np.arange(1, 11), np.arange(1, 11), indexing="ij")
    configs = pd.DataFrame({"x": xs.ravel(), "y": ys.ravel()})
    times = scale * (1.0 + 0.05 * ((configs["x"] - optimum[0]) ** 2 + (configs["y"] - optimum[1]) ** 2))
    times[(configs["x"] == 3).to_numpy()] = np.nan  # a column of failures
    return Space(["x", "y"], configs, times.to_numpy(dtype=float), "grid")


def unmeasured_table(space: Space) -> pd.DataFrame:
    return space.configs.assign(time_ms=np.nan, status="")


def measured_table(spaces: dict[str, Space]) -> pd.DataFrame:
    """Each GPU's space measured: its times, its GPU's name and a status (failures run_failed)."""
    return pd.concat([space.configs.assign(time_ms=space.times, gpu=gpu,
                                           status=np.where(np.isnan(space.times), "run_failed", "ok"))
                      for gpu, space in spaces.items()])


def record(table: pd.DataFrame, index: int, space: Space) -> None:
    if np.isnan(space.times[index]):
        table.loc[index, "status"] = "compile_failed"
    else:
        table.loc[index, "time_ms"] = space.times[index]


@pytest.mark.parametrize("with_train", [False, True])
def test_asking_again_after_each_measurement_is_the_guided_search(with_train):
    """Measuring what ask names and asking again picks exactly what explore simulates."""
    target = grid((8, 4))
    train = [grid((7, 4), 2.0), grid((2, 9), 0.5)] if with_train else []
    simulated = run_search(make_explorer(target, train, None, True, seed=1), target.times, 14, stop_at=None)
    table, asked = unmeasured_table(target), []
    for _ in range(14):
        step = next_configuration(partly_measured(table, ["x", "y"]), train, seed=1)
        asked.append(step.index)
        record(table, step.index, target)
    assert asked == simulated
    assert step.measured == 13 and step.remaining == 100 - 13
    assert step.failed == int(np.isnan(target.times[asked[:13]]).sum())
    ran = [i for i in asked[:13] if np.isfinite(target.times[i])]
    best = min(ran, key=lambda i: target.times[i])
    assert step.best_time == target.times[best] and step.best_row == f"row {best + 1}"
    assert step.best_config == target.config(best)


def test_rows_measured_elsewhere_are_never_asked_for_and_count_as_measured():
    target = grid((8, 4))
    table = unmeasured_table(target)
    for index in (0, 20, 55):  # a default configuration and two from an earlier run
        record(table, index, target)
    seen = {0, 20, 55}
    for _ in range(12):
        step = next_configuration(partly_measured(table, ["x", "y"]))
        assert step.index not in seen
        seen.add(step.index)
        record(table, step.index, target)
    assert step.measured == 14


def test_unmeasured_rows_have_neither_a_time_nor_a_status():
    table = pd.DataFrame({"x": [1, 2, 3, 4, 5], "time_ms": [1.0, None, " ", None, "InvalidConfig"],
                          "status": ["ok", "", None, "run_failed", ""]})
    assert unmeasured_rows(table, "time_ms").tolist() == [False, True, True, False, False]
    assert unmeasured_rows(table.drop(columns="time_ms"), "time_ms").tolist() == [False, True, True, False, True]
    measured = partly_measured(table, ["x"])
    assert measured.space.time_column == "time_ms"
    assert np.isnan(measured.space.times[1:]).all() and measured.space.times[0] == 1.0


def test_every_configuration_measured_names_no_next_one():
    target = grid((8, 4))
    table = unmeasured_table(target)
    for index in range(len(target)):
        record(table, index, target)
    step = next_configuration(partly_measured(table, ["x", "y"]))
    assert step.index is None and step.config is None and step.remaining == 0
    assert step.best_time == np.nanmin(target.times)


def test_a_measured_row_with_a_bad_time_is_named_by_its_line(tmp_path):
    path = tmp_path / "space.csv"
    pd.DataFrame({"x": [1, 2, 3], "time_ms": [1.5, -2.0, None]}).to_csv(path, index=False)
    assert main(["ask", str(path), "--params", "x"]) == 2
    with pytest.raises(GpuperfError, match="space.csv: line 3: time_ms=-2 is not a positive number"):
        partly_measured(read_table(path), ["x"], where=str(path))


def test_ask_command_json_and_text(tmp_path, capsys):
    target = grid((8, 4))
    table = unmeasured_table(target).drop(columns=["time_ms", "status"])  # nothing measured, no time column yet
    table.to_csv(tmp_path / "space.csv", index=False)
    assert main(["ask", str(tmp_path / "space.csv"), "--params", "x,y", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert set(first) == {"next", "next_row", "index", "batch", "measured", "failed", "remaining", "best",
                          "best_row", "best_time", "time_column", "method"}
    assert first["measured"] == 0 and first["remaining"] == 100 and first["time_column"] == "time_ms"
    assert first["next"] == target.config(first["index"]) and first["next_row"] == f"line {first['index'] + 2}"
    assert first["method"] == "online (gp)" and first["best"] is None

    table["time_ms"] = np.nan
    table.loc[first["index"], "time_ms"] = 2.5
    table.to_csv(tmp_path / "space.csv", index=False)
    assert main(["ask", str(tmp_path / "space.csv"), "--params", "x,y"]) == 0
    out = capsys.readouterr().out
    assert "Measure next: line" in out and "(times go in column time_ms)" in out
    assert f"1 of 100 measured (0 failed); best so far 2.5 (time_ms) at line {first['index'] + 2}" in out


def test_ask_command_with_other_gpus_names_the_gpu_and_leaves_its_own_rows_out(tmp_path, capsys):
    target, other = grid((8, 4)), grid((7, 4), 2.0)
    rows = measured_table({"Tesla V100 PCIe 32GB": other, "A100 PCIe 40GB": target})
    rows.to_csv(tmp_path / "others.csv", index=False)
    unmeasured_table(target).drop(columns="status").to_csv(tmp_path / "space.csv", index=False)
    argv = ["ask", str(tmp_path / "space.csv"), "--params", "x,y", "--train", str(tmp_path / "others.csv"),
            "--gpu", "A100", "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "A100 PCIe 40GB) is the space's own kernel and GPU" in captured.err
    step = json.loads(captured.out)
    assert step["method"] == "transfer-guided (et)"
    expected = run_search(make_explorer(target, [other], None, True), target.times, 1)[0]
    assert step["index"] == expected


def test_ask_refuses_a_kernel_tuner_cache(tmp_path, capsys):
    path = tmp_path / "cache.json"
    path.write_text("{}")
    assert main(["ask", str(path)]) == 2
    assert "cache.json: a Kernel Tuner cache holds only the configurations that ran" in capsys.readouterr().err


@pytest.mark.parametrize("with_train", [False, True])
def test_a_batch_starts_with_the_next_pick_and_names_distinct_unmeasured_configurations(with_train):
    target = grid((8, 4))
    train = [grid((7, 4), 2.0), grid((2, 9), 0.5)] if with_train else []
    table = unmeasured_table(target)
    for index in (5, 40, 77):
        record(table, index, target)
    single = next_configuration(partly_measured(table, ["x", "y"]), train, seed=2)
    batch = next_configuration(partly_measured(table, ["x", "y"]), train, seed=2, count=6)
    indices = [pick["index"] for pick in batch.batch]
    assert indices[0] == single.index == batch.index and len(set(indices)) == 6
    assert not {5, 40, 77} & set(indices)
    assert [pick["config"] for pick in batch.batch] == [target.config(i) for i in indices]
    assert batch.batch[1]["row"] == f"row {indices[1] + 1}"


def test_a_batch_larger_than_what_is_left_names_what_is_left_and_zero_is_refused():
    target = grid((8, 4))
    table = unmeasured_table(target)
    for index in range(len(target) - 2):
        record(table, index, target)
    step = next_configuration(partly_measured(table, ["x", "y"]), count=5)
    assert sorted(pick["index"] for pick in step.batch) == [98, 99]
    with pytest.raises(GpuperfError, match="a batch of 0 configurations"):
        next_configuration(partly_measured(table, ["x", "y"]), count=0)


def test_ask_command_count_prints_a_batch(tmp_path, capsys):
    unmeasured_table(grid((8, 4))).drop(columns="status").to_csv(tmp_path / "space.csv", index=False)
    assert main(["ask", str(tmp_path / "space.csv"), "--params", "x,y", "--count", "3"]) == 0
    out = capsys.readouterr().out
    assert out.count("Measure next: line") == 3 and "(times go in column time_ms)" in out


def test_ask_json_index_is_the_rows_position_in_the_file_when_gpu_picks_rows(tmp_path, capsys):
    """A script writing the time back at --json's index fills the row ask named, not another GPU's."""
    target, other = grid((8, 4)), grid((7, 4), 2.0)
    rows = pd.concat([other.configs.assign(time_ms=other.times, gpu="Tesla V100 PCIe 32GB"),
                      target.configs.assign(time_ms=np.nan, gpu="A100 PCIe 40GB")], ignore_index=True)
    rows.to_csv(tmp_path / "space.csv", index=False)
    assert main(["ask", str(tmp_path / "space.csv"), "--params", "x,y", "--gpu", "A100", "--json"]) == 0
    step = json.loads(capsys.readouterr().out)
    assert step["next_row"] == f"line {step['index'] + 2}"
    assert rows.loc[step["index"], "gpu"] == "A100 PCIe 40GB"
    assert rows.loc[step["index"], ["x", "y"]].to_dict() == step["next"]


def test_a_header_typed_with_spaces_after_its_commas_names_the_columns(tmp_path, capsys):
    """A table written by hand as "x, y, time_ms": its time column is time_ms, so the time typed in
    counts as measured (not a table with nothing measured, asking for the same row again)."""
    path = tmp_path / "space.csv"
    path.write_text("x, y, time_ms\n1,1,\n1,2, 2.5\n2,1,\n2,2,\n")
    assert main(["ask", str(path), "--params", "x,y", "--json"]) == 0
    step = json.loads(capsys.readouterr().out)
    assert step["measured"] == 1 and step["best_row"] == "line 3" and step["best_time"] == 2.5
    assert step["next_row"] != "line 3"
    path.write_text("x, x ,time_ms\n1,2,3\n")
    assert main(["ask", str(path), "--params", "x"]) == 2
    assert "space.csv: the header names column x more than once" in capsys.readouterr().err


def test_indices_are_the_frames_labels_so_a_filtered_frame_is_written_back_at_the_right_rows():
    target = grid((8, 4))
    table = pd.concat([unmeasured_table(grid((2, 2))).assign(gpu="other"), unmeasured_table(target).assign(gpu="mine")],
                      ignore_index=True)
    mine = table[table["gpu"] == "mine"]
    step = next_configuration(partly_measured(mine, ["x", "y"]), count=3)
    for pick in step.batch:
        assert table.loc[pick["index"], "gpu"] == "mine"
        assert table.loc[pick["index"], ["x", "y"]].to_dict() == pick["config"]
    assert step.index == step.batch[0]["index"] >= 100


def test_a_campaign_export_with_the_kernel_measured_as_itself_asks_among_its_variants(tmp_path):
    """A row with none of the parameters (the kernel's own measurement beside its variants) is left
    out with a note; the rows ask names are still the table's own."""
    from gpuperf.errors import GpuperfNote

    target = grid((8, 4))
    plain = pd.DataFrame({"x": [np.nan], "y": [np.nan], "time_ms": [0.5], "status": ["ok"]})
    table = pd.concat([plain, unmeasured_table(target)], ignore_index=True)
    record(table, 11, target)  # the configuration in row 10 of the grid
    with pytest.warns(GpuperfNote, match="left out 1 row"):
        step = next_configuration(partly_measured(table, ["x", "y"]), count=3)
    assert step.measured == 1 and step.remaining == 99 and step.best_row == "row 12"
    assert step.best_config == table.loc[11, ["x", "y"]].to_dict()
    for pick in step.batch:
        assert table.loc[pick["index"], ["x", "y"]].to_dict() == pick["config"]


def test_ask_gpu_names_the_tables_gpu_so_the_alike_gpus_of_train_lead(tmp_path, capsys):
    """A table without a gpu column: --gpu names its GPU, and the first pick is the best region of
    the training GPU most like it (a V100 for an A100, a GTX 970 for a GTX 980)."""
    target, v100, gtx970 = grid((8, 4)), grid((7, 4), 2.0), grid((2, 9), 0.5)
    rows = measured_table({"Tesla V100 PCIe 32GB": v100, "GTX 970": gtx970})
    rows.to_csv(tmp_path / "others.csv", index=False)
    unmeasured_table(target).drop(columns="status").to_csv(tmp_path / "space.csv", index=False)
    for gpu, alike in (("A100 PCIe 40GB", (7, 4)), ("GTX 980", (2, 9))):
        argv = ["ask", str(tmp_path / "space.csv"), "--params", "x,y", "--train", str(tmp_path / "others.csv"),
                "--gpu", gpu, "--json"]
        assert main(argv) == 0
        first = json.loads(capsys.readouterr().out)["next"]
        assert abs(first["x"] - alike[0]) + abs(first["y"] - alike[1]) <= 1, gpu


def test_ask_kernel_picks_one_kernels_rows_from_a_table_of_several(tmp_path, capsys):
    target, other = grid((8, 4)), grid((7, 4), 2.0)
    rows = pd.concat([other.configs.assign(time_ms=other.times, kernel="done"),
                      target.configs.assign(time_ms=np.nan, kernel="todo")], ignore_index=True)
    rows.loc[[130, 140], "time_ms"] = [2.0, 3.0]
    rows.to_csv(tmp_path / "space.csv", index=False)
    assert main(["ask", str(tmp_path / "space.csv"), "--params", "x,y", "--kernel", "todo", "--json"]) == 0
    step = json.loads(capsys.readouterr().out)
    assert step["measured"] == 2 and step["remaining"] == 98 and rows.loc[step["index"], "kernel"] == "todo"
    assert step["index"] not in (130, 140) and step["best_row"] == "line 132"


def test_ask_params_may_be_typed_with_spaces_after_the_commas(tmp_path, capsys):
    unmeasured_table(grid((8, 4))).drop(columns="status").to_csv(tmp_path / "space.csv", index=False)
    assert main(["ask", str(tmp_path / "space.csv"), "--params", "x, y", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["next"]) == {"x", "y"}


def test_ask_seed_is_the_searchs_seed(tmp_path, capsys):
    """Nothing measured yet: the first pick is a random one, drawn with --seed."""
    table = unmeasured_table(grid((8, 4))).drop(columns="status")
    table.to_csv(tmp_path / "space.csv", index=False)
    expected = [next_configuration(partly_measured(table, ["x", "y"]), seed=seed).index for seed in (0, 5)]
    assert expected[0] != expected[1]
    for seed, index in zip((0, 5), expected):
        assert main(["ask", str(tmp_path / "space.csv"), "--params", "x,y", "--seed", str(seed), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["index"] == index


def test_ask_command_says_when_every_configuration_is_measured(tmp_path, capsys):
    target = grid((8, 4))
    table = unmeasured_table(target)
    for index in range(len(target)):
        record(table, index, target)
    table.to_csv(tmp_path / "space.csv", index=False)
    assert main(["ask", str(tmp_path / "space.csv"), "--params", "x,y"]) == 0
    out = capsys.readouterr().out
    assert f"Every configuration of {tmp_path / 'space.csv'} has been measured (10 failed)." in out
    assert "Measure next" not in out and "times go in" not in out
    assert "100 of 100 measured (10 failed)" in out
    with pytest.raises(GpuperfError, match="a batch of 0 configurations"):
        next_configuration(partly_measured(table, ["x", "y"]), count=0)
    table.loc[5, ["time_ms", "status"]] = [np.nan, ""]
    table.to_csv(tmp_path / "space.csv", index=False)
    assert main(["ask", str(tmp_path / "space.csv"), "--params", "x,y"]) == 0
    out = capsys.readouterr().out
    assert "Every configuration" not in out and "Measure next: line 7 of" in out


def test_ask_without_params_or_variant_labels_says_to_name_them(tmp_path, capsys):
    unmeasured_table(grid((8, 4))).drop(columns="status").to_csv(tmp_path / "space.csv", index=False)
    assert main(["ask", str(tmp_path / "space.csv")]) == 2
    assert "space.csv: say which columns are the parameters (--params P1,P2,...)" in capsys.readouterr().err


def test_a_steps_summary_is_plain_json_with_the_tables_row_labels():
    """summary() is what ask --json prints, so a script can json.dump it as it is, whatever
    integers label the frame's rows (here NumPy's)."""
    table = unmeasured_table(grid((8, 4))).set_axis(np.arange(100, 200))
    step = next_configuration(partly_measured(table, ["x", "y"]), count=2)
    summary = json.loads(json.dumps(step.summary()))
    assert summary["index"] == step.index >= 100 and type(step.index) is int
    assert [pick["index"] for pick in summary["batch"]] == [pick["index"] for pick in step.batch]


def test_a_header_typed_with_spaces_before_its_commas_names_the_columns(tmp_path, capsys):
    path = tmp_path / "space.csv"
    path.write_text("x ,y ,time_ms \n1,1,\n1,2,2.5\n2,1,\n2,2,\n")
    assert main(["ask", str(path), "--params", "x,y", "--json"]) == 0
    step = json.loads(capsys.readouterr().out)
    assert step["measured"] == 1 and step["best_row"] == "line 3" and set(step["next"]) == {"x", "y"}


def test_a_target_the_table_lacks_is_refused_where_it_holds_its_times_under_another_name(tmp_path, capsys):
    """--target tme_ms (a typo) or time_us on a table of time_ms would ask as if nothing had run and
    send the times to a new column; a table with no time column at all takes the name given."""
    path = tmp_path / "space.csv"
    pd.DataFrame({"x": [1, 2, 3], "time_ms": [1.5, None, None]}).to_csv(path, index=False)
    for target in ("tme_ms", "time_us"):
        assert main(["ask", str(path), "--params", "x", "--target", target]) == 2
        assert (f"space.csv: missing time column '{target}' (the table has time_ms); --target names the column "
                "the times measured so far are in") in capsys.readouterr().err
    pd.DataFrame({"x": [1, 2, 3]}).to_csv(path, index=False)
    assert main(["ask", str(path), "--params", "x", "--target", "time_us", "--json"]) == 0
    step = json.loads(capsys.readouterr().out)
    assert step["measured"] == 0 and step["time_column"] == "time_us"
    pd.DataFrame({"time_x": [1, 2, 3]}).to_csv(path, index=False)  # a parameter spelt like a time is none
    assert main(["ask", str(path), "--params", "time_x", "--target", "time_s", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["time_column"] == "time_s"


def test_ask_names_the_rows_picked_by_gpu_kernel_and_size_once_as_explore_does(tmp_path, capsys):
    """--kernel, --gpu and -p together name the rows as explore names them: one parenthesis."""
    target = grid((8, 4))
    rows = pd.concat([unmeasured_table(target).assign(kernel="k", gpu=gpu, n=n)
                      for gpu in ("Tesla K20", "Tesla V100 PCIe 32GB") for n in (64, 128)], ignore_index=True)
    rows.to_csv(tmp_path / "campaign.csv", index=False)
    assert main(["ask", str(tmp_path / "campaign.csv"), "--params", "x,y", "--kernel", "k", "--gpu", "V100",
                 "-p", "n=128"]) == 0
    out = capsys.readouterr().out
    assert "campaign.csv (k, Tesla V100 PCIe 32GB, n=128): x=" in out and ") (" not in out
    line = int(out.split("Measure next: line ")[1].split()[0])
    assert 302 <= line <= 401  # a row of the V100 at n=128 (rows 300 to 399, lines 302 to 401)


def test_a_row_whose_status_is_ok_but_whose_time_is_empty_is_named_as_such(tmp_path, capsys):
    """Not as a configuration not measured yet (ask's own job), nor as a time of nan."""
    path = tmp_path / "space.csv"
    path.write_text("x,time_ms,status\n1,1.5,ok\n2,,ok\n3,,\n")
    assert main(["ask", str(path), "--params", "x"]) == 2
    err = capsys.readouterr().err
    assert ("space.csv: line 3: time_ms is empty though its status is 'ok' (a configuration that ran needs its "
            "time; one that failed, a status other than ok)") in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("word", ["nan", "NA", "NaN"])
def test_a_time_written_as_nan_is_no_configuration_to_measure_again(tmp_path, capsys, word):
    """Only an empty time cell is "not measured yet": ask named the row with nan to measure next, and
    explore called its time empty."""
    path = tmp_path / "space.csv"
    path.write_text(f"x,time_ms\n1,1.5\n2,{word}\n3,\n")
    for command in (["ask", str(path), "--params", "x"], ["explore", str(path), "--params", "x"]):
        assert main(command) == 2
        assert f"space.csv: line 3: time_ms='{word}' is not a positive number" in capsys.readouterr().err


def test_a_utf16_table_is_asked_about_as_a_utf8_one(tmp_path, capsys):
    """Windows PowerShell's > writes UTF-16: re-reading the cells as text raised UnicodeDecodeError."""
    path = tmp_path / "space.csv"
    path.write_text("x,time_ms\n1,1.5\n2,\n", encoding="utf-16")
    assert main(["ask", str(path), "--params", "x", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["next"] == {"x": 2}


def test_ask_after_failures_only_says_none_ran_and_a_short_batch_is_noted(tmp_path, capsys):
    path = tmp_path / "fails.csv"
    path.write_text("bx,tile,time_ms\n32,1,InvalidConfig\n64,1,RuntimeFailedConfig\n128,1,\n")
    assert main(["ask", str(path), "--params", "bx,tile", "--count", "3"]) == 0
    printed = capsys.readouterr()
    assert "Measure next: line 4 of" in printed.out
    assert "2 of 3 measured (2 failed); none has run successfully yet;" in printed.out
    assert "note: --count 3: only 1 configuration(s) left to measure" in printed.err


def test_training_data_may_be_one_table_and_a_wrong_kind_is_named():
    """A DataFrame as train raised 'The truth value of a DataFrame is ambiguous'; train=5 'int object is not iterable'."""
    target, other = grid((8, 4)), grid((7, 4), 2.0)
    frame = other.configs.assign(time_ms=other.times, gpu="other GPU")
    table = unmeasured_table(target)
    record(table, 0, target)
    as_list = next_configuration(partly_measured(table, ["x", "y"]), [other], seed=1, count=2)
    as_frame = next_configuration(partly_measured(table, ["x", "y"]), frame, seed=1, count=2)
    assert as_frame.method.startswith("transfer-guided") and as_frame.batch == as_list.batch
    with pytest.raises(GpuperfError, match="train: int is not a Space, a table, a path to one or a list of these"):
        next_configuration(partly_measured(table, ["x", "y"]), 5)


def test_a_table_whose_every_configuration_ran_and_failed_asks_for_nothing_more(tmp_path, capsys):
    """next is null once every configuration has run; where all of them failed ask raised 'every
    configuration failed' (exit 2), and a harness waiting for null looped on the error."""
    path = tmp_path / "failed.csv"
    path.write_text("bs,time_ms\n32,InvalidConfig\n64,RuntimeFailedConfig\n")
    assert main(["ask", str(path), "--params", "bs", "--json"]) == 0
    step = json.loads(capsys.readouterr().out)
    assert (step["next"], step["measured"], step["failed"], step["remaining"], step["best"]) == (None, 2, 2, 0, None)


def test_ask_gpu_word_names_the_train_tables_gpu_as_explore_does(tmp_path, capsys):
    """--gpu 2070 on a table naming no GPU is the --train tables' RTX 2070 Super, as explore's --gpu
    2070 picks it: its own rows are left out of --train, so ask's first pick is explore's."""
    target, other = grid((8, 4)), grid((2, 9), 0.5)
    rows = measured_table({"A100 PCIe 40GB": other, "RTX 2070 Super": target})
    rows.to_csv(tmp_path / "all.csv", index=False)
    unmeasured_table(target).drop(columns="status").to_csv(tmp_path / "space.csv", index=False)
    common = ["--params", "x,y", "--train", str(tmp_path / "all.csv"), "--gpu", "2070", "--json"]
    assert main(["explore", str(tmp_path / "all.csv"), *common, "--no-progress"]) == 0
    explored = json.loads(capsys.readouterr().out)["order"][0]
    assert main(["ask", str(tmp_path / "space.csv"), *common]) == 0
    captured = capsys.readouterr()
    assert "(RTX 2070 Super) is the space's own kernel and GPU" in captured.err
    assert json.loads(captured.out)["next"] == {"x": explored["x"], "y": explored["y"]}
    rows.assign(gpu=rows["gpu"].replace("A100 PCIe 40GB", "RTX 2070")).to_csv(tmp_path / "both.csv", index=False)
    assert main(["ask", str(tmp_path / "space.csv"), *common[:2], "--train", str(tmp_path / "both.csv"),
                 "--gpu", "2070"]) == 2
    assert "--gpu 2070 names 2 GPUs of the --train tables (RTX 2070, RTX 2070 Super); name one" in capsys.readouterr().err


def test_tables_not_given_as_dataframes_are_errors_naming_what_to_pass():
    from gpuperf.decisions import GuidedSearch
    from gpuperf.decisions.space import space_from_frame

    rows = [{"a": 1, "time_s": 1.0}, {"a": 2, "time_s": None}]
    with pytest.raises(GpuperfError, match=r"^table: the table must be a pandas DataFrame \(got list\)"):
        partly_measured(rows, ["a"])
    with pytest.raises(GpuperfError, match=r"^t: the table must be a pandas DataFrame \(got list\)"):
        space_from_frame(rows, ["a"], "time_s", "t")
    with pytest.raises(GpuperfError, match=r"^GuidedSearch: the configurations must be a pandas DataFrame \(got "
                                           r"ndarray\)"):
        GuidedSearch(np.array([[1], [2]]), ["a"])
    with pytest.raises(GpuperfError, match=r"next_configuration takes a table read by partly_measured\(frame, "
                                           r"params\), not a DataFrame"):
        next_configuration(pd.DataFrame(rows))
    assert next_configuration(partly_measured(pd.DataFrame(rows), ["a"])).config == {"a": 2}


def test_tell_checks_a_repeated_configuration_without_comparing_it_with_every_measured_one(counting_int):
    """tell checked for a repeat in the list of measured positions: ask on a table of 100,000
    configurations, all measured, spent 100 s telling them to its search. Counted in comparisons,
    not seconds: a list's check makes one per configuration measured before."""
    from gpuperf.decisions import GuidedSearch

    configs = pd.DataFrame({"x": np.arange(2_000)})
    search = GuidedSearch(configs, ["x"])
    position = search._position
    search._position = lambda label, what: counting_int(position(label, what))
    for label in range(len(configs)):
        search.tell(label, 1.0 + label)
    assert counting_int.comparisons < len(configs)  # a list's check: about 2,000,000
    assert search.best() == 0
    with pytest.raises(GpuperfError, match="configuration 7 was already measured"):
        search.tell(7, 2.0)


def test_an_empty_time_ms_beside_the_time_s_filled_in_is_refused_not_taken_as_nothing_measured(tmp_path, capsys):
    """A template's time_ms left empty while the times went into time_s: asking by time_ms would say
    nothing ran and name a configuration measured already; --target time_s asks by the times."""
    path = tmp_path / "space.csv"
    pd.DataFrame({"x": [1, 2, 3, 4], "time_s": [1.0, None, 2.0, None], "time_ms": [None] * 4}).to_csv(path, index=False)
    assert main(["ask", str(path), "--params", "x"]) == 2
    assert ("space.csv: time column time_ms is empty but time_s holds values; --target time_s names it if it holds "
            "the times measured so far") in capsys.readouterr().err
    assert main(["ask", str(path), "--params", "x", "--target", "time_s", "--json"]) == 0
    step = json.loads(capsys.readouterr().out)
    assert step["measured"] == 2 and step["next"]["x"] in (2, 4)
    frame = pd.DataFrame({"x": [1, 2], "time_ms": [None, None], "time_s": [None, None]})  # nothing measured yet
    assert partly_measured(frame, ["x"]).pending.all()


def test_explore_and_a_train_table_with_an_empty_time_ms_beside_time_s_say_so(tmp_path, capsys):
    """explore's table and a --train table whose time_ms is empty while time_s holds the times: one error naming
    both columns, as ask gives, not 'line 2: time_ms is empty (a configuration not measured yet)' or 'no row is
    measured yet'; the training table read without the empty column trains."""
    space = tmp_path / "space.csv"
    pd.DataFrame({"x": [1, 2, 3, 4], "time_ms": [None] * 4, "time_s": [4.0, 3.0, 2.0, 1.0]}).to_csv(space, index=False)
    assert main(["explore", str(space), "--params", "x"]) == 2
    assert ("space.csv: time column time_ms is empty but time_s holds values; --target time_s names it if it holds "
            "the times") in capsys.readouterr().err
    asked = tmp_path / "ask.csv"
    pd.DataFrame({"x": [1, 2, 3, 4], "time_ms": [2.0, None, None, None]}).to_csv(asked, index=False)
    train = tmp_path / "train.csv"
    pd.DataFrame({"x": [1, 2, 3, 4], "time_ms": [None] * 4, "time_s": [4.0, 3.0, 2.0, 1.0]}).to_csv(train, index=False)
    assert main(["ask", str(asked), "--params", "x", "--train", str(train)]) == 2
    assert ("train.csv: time column time_ms is empty but time_s holds values; leave the empty column out of this "
            "training table") in capsys.readouterr().err
    pd.read_csv(train).drop(columns="time_ms").to_csv(train, index=False)
    assert main(["ask", str(asked), "--params", "x", "--train", str(train), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["measured"] == 1
