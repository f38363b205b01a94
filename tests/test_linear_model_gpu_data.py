"""The linear count model's GPU property set, judged on the bundled H100 and H200 measurements."""

from __future__ import annotations

import json

import re

import numpy as np
import pandas as pd
import pytest
from scipy.stats import gmean

from gpuperf.datasets.bundled import data_dir
from gpuperf.errors import GpuperfError
from gpuperf.evaluation.linear_eval import evaluate_linear_table
from gpuperf.kernels import get_kernel
from gpuperf.models.properties import PROPERTY_SETS, describe_property, kernel_properties

H100 = data_dir() / "linear_model_h100.csv.gz"
H200 = data_dir() / "linear_model_h200.csv.gz"
ITEM = ["item_flops", "item_special", "item_loads", "item_strided_loads"]


def test_per_work_item_counts_follow_one_work_items_chain() -> None:
    nbody = kernel_properties(get_kernel("nbody"), {"n": 4096}, ITEM)
    # per body j: 3 differences, 3 squares, 3 additions and the running sum; a division and a sqrt
    assert nbody["item_flops"] == 10 * 4096 and nbody["item_special"] == 2 * 4096
    # x, y, z, mass prefetched tile by tile (128 work-items load 128 values each time) plus its own x, y, z
    assert nbody["item_loads"] == 4 * 4096 / 128 + 3 and nbody["item_strided_loads"] == 0
    rows = kernel_properties(get_kernel("row_sum"), {"n": 256, "m": 512}, ITEM)
    columns = kernel_properties(get_kernel("column_sum"), {"n": 256, "m": 512}, ITEM)
    assert (rows["item_loads"], rows["item_strided_loads"]) == (0, 512)  # neighbours a row apart
    assert (columns["item_loads"], columns["item_strided_loads"]) == (256, 0)  # neighbours adjacent
    assert all(describe_property(name).sign == 1 for name in ITEM)


def test_the_gpu_set_is_the_papers_set_plus_the_per_work_item_counts() -> None:
    assert PROPERTY_SETS["gpu"] == (*PROPERTY_SETS["stevens_klockner"], *ITEM)
    assert "overlap_bytes" in PROPERTY_SETS["stevens_klockner"]


def test_the_table_evaluation_gives_what_the_h100_run_printed() -> None:
    log = (data_dir() / "gpu_session_h100.log").read_text()
    printed = re.search(r"held-out mean per-kernel gmre ([\d.]+) \(median ([\d.]+), worst ([\d.]+)\)", log)
    # the run on the GPU used the set the gpu class had then: the paper's
    summary = evaluate_linear_table(H100, property_set="stevens_klockner").summary()
    assert [round(summary[k], 3) for k in ("held_out_mean_gmre", "held_out_median_gmre", "held_out_worst_gmre")] \
        == [float(v) for v in printed.groups()]


def test_the_table_evaluation_gives_what_the_h200_run_printed() -> None:
    log = (data_dir() / "gpu_session_h200.log").read_text()
    printed = re.search(r"held-out mean per-kernel gmre ([\d.]+) \(median ([\d.]+), worst ([\d.]+)\)", log)
    summary = evaluate_linear_table(H200).summary()  # the gpu set, as on the GPU
    assert [round(summary[k], 3) for k in ("held_out_mean_gmre", "held_out_median_gmre", "held_out_worst_gmre")] \
        == [float(v) for v in printed.groups()]
    assert summary["held_out_mean_gmre"] <= 0.25


def test_the_gpu_plan_reaches_past_the_l2_and_the_fit_uses_those_points() -> None:
    from gpuperf.models.linear_calibration import CALIBRATION_PLANS

    l2_bytes = 50 * 2**20  # the H100's and H200's
    vector_copy = CALIBRATION_PLANS["gpu"]["vector_copy"]
    assert len(vector_copy) == 4 and 2 * 4 * vector_copy[-1]["n"] > 10 * l2_bytes  # read and write, floats
    copy_2d = CALIBRATION_PLANS["gpu"]["copy_2d"][-1]
    assert 2 * 4 * copy_2d["n"] * copy_2d["m"] > 5 * l2_bytes
    assert all(len(sizes) == 3 for sizes in CALIBRATION_PLANS["cpu"].values())  # the CPU plan is unchanged
    fitted = evaluate_linear_table(H200).calibration.data
    assert (fitted.groupby("kernel").size() == 4).sum() == 16  # every DRAM-sized point the H200 measured
    assert len(evaluate_linear_table(H100).calibration.data) == 99  # the H100 table predates them


def test_per_work_item_counts_predict_an_under_filled_launch() -> None:
    paper = evaluate_linear_table(H100, property_set="stevens_klockner")
    gpu = evaluate_linear_table(H100)
    assert gpu.calibration.model.property_names_ == list(PROPERTY_SETS["gpu"])
    assert paper.held_out_error()["nbody"] > 10  # 32 work-groups on 132 SMs: throughput terms miss it
    assert gpu.held_out_error()["nbody"] < 1
    weights = gpu.calibration.model.weights_
    assert 0 < weights["item_loads"] < weights["item_strided_loads"]  # an L1 hit is quicker than a strided load
    assert set(gpu.held_out["kernel"]) == set(paper.held_out["kernel"]) and len(gpu.held_out) == 39


def test_a_bad_table_is_refused_naming_what_is_wrong() -> None:
    table = pd.read_csv(H100)
    with pytest.raises(GpuperfError, match="no column time_s_min"):
        evaluate_linear_table(table.drop(columns="time_s_min"))
    two = pd.concat([table, table.assign(device="cuda:1")])
    with pytest.raises(GpuperfError, match=r"several devices \(cuda:0, cuda:1\)"):
        evaluate_linear_table(two)
    with pytest.raises(GpuperfError, match="device class must be one of cpu, gpu"):
        evaluate_linear_table(table, device_class="tpu")


@pytest.mark.parametrize("tag", ["h100", "h200"])
def test_the_calibrated_model_ranks_variants_it_never_saw(tag: str) -> None:
    from gpuperf.decisions.count_ranking import evaluations_summary, ranking_evaluations
    from gpuperf.evaluation.linear_eval import variant_predictions, variant_ranking

    calibration = evaluate_linear_table(data_dir() / f"linear_model_{tag}.csv.gz").calibration
    variants = pd.read_csv(data_dir() / f"stencil_spaces_{tag}.csv.gz")
    predictions = variant_predictions(calibration, variants)
    assert len(predictions) == len(variants) == 192 and (predictions["predicted_s"] > 0).all()
    ranking = variant_ranking(predictions).join(ranking_evaluations(predictions))
    assert len(ranking) == 8 and (ranking["variants"] == 24).all()
    for kernel, row in ranking.iterrows():
        part = predictions[predictions["kernel"] == kernel]
        picked = part.loc[part["predicted_s"].idxmin(), "time_s"]
        assert row["pick_over_best"] == pytest.approx(picked / part["time_s"].min())
        assert row["random_pick_over_best"] == pytest.approx(part["time_s"].mean() / part["time_s"].min())
        in_order = part.sort_values("predicted_s", kind="stable")["time_s"].to_numpy()
        first_within_90 = 1 + int(((part["time_s"].min() / in_order) >= 0.9).argmax())
        assert row["evals_to_90"] == first_within_90 and row["evals_to_99"] >= row["evals_to_95"] >= first_within_90
    assert (ranking["spearman"] > 0.5).all()  # the counts order the variants, not just the kernels
    assert ranking["pick_over_best"].mean() < ranking["random_pick_over_best"].mean() / 2
    assert ranking["evals_to_90"].sum() < ranking["random_evals_to_90"].sum() / 2  # as an exploration order
    model, random = evaluations_summary(ranking)
    assert model.startswith(f"{gmean(ranking['evals_to_90']):.2f} / ") and len(random.split(" / ")) == 3
    with pytest.raises(GpuperfError, match="variant table: no column variant"):
        variant_predictions(calibration, variants.drop(columns="variant"))


def test_calibrate_from_the_h100_table_gives_a_model_that_predicts_without_a_gpu(tmp_path, capsys) -> None:
    import json

    from gpuperf.cli import main

    model = tmp_path / "h100.json"
    assert main(["calibrate", "--table", str(H100), "--out", str(model), "--json"]) == 0
    metadata = json.loads(capsys.readouterr().out)
    assert metadata["device_name"] == "H100 SXM" and metadata["device_class"] == "gpu"
    assert metadata["properties"] == list(PROPERTY_SETS["gpu"]) and metadata["calibration_points"] == 99
    assert "nbody" not in metadata["calibration_kernels"]  # held-out kernels stay out of the fit
    assert main(["predict", "nbody", "-p", "n=8192", "--model", str(model), "--json"]) == 0
    predicted = json.loads(capsys.readouterr().out)
    measured = pd.read_csv(H100).query("kernel == 'nbody' and n == 8192")["time_s_min"].iloc[0]
    assert 0.5 < predicted["time_s"] / measured < 2
    assert predicted["contributions_s"]["item_special"] > predicted["contributions_s"]["f32_ops"]
    assert main(["predict", "nbody", "-p", "n=8192", "--model", str(model)]) == 0
    assert "nbody at n=8192 on H100 SXM" in capsys.readouterr().out  # it said "{'n': 8192} on cuda:0"


def test_properties_no_calibration_point_has_are_named_at_calibration_and_where_a_kernel_has_them(
        tmp_path, capsys) -> None:
    """Memory kernels only: the special functions keep weight 0, and a kernel calling exp is told so."""
    from gpuperf.cli import main

    memory = ["vector_copy", "vector_fill", "add_four_vectors", "copy_2d", "empty",  # noqa: F841 - the query's @memory
              "transpose", "column_sum", "row_sum"]
    pd.read_csv(H100).query("kernel in @memory").to_csv(tmp_path / "memory.csv", index=False)
    model = tmp_path / "memory.json"
    assert main(["calibrate", "--table", str(tmp_path / "memory.csv"), "--out", str(model), "--json"]) == 0
    printed = capsys.readouterr()
    unobserved = json.loads(printed.out)["unobserved_properties"]
    assert {"f64_special", "item_special"} <= set(unobserved) and "global_load_bytes_stride1" not in unobserved
    assert f"no calibration point has any {', '.join(unobserved)}: their weights stay 0" in printed.err
    assert main(["predict", "arith_f64_exp", "--model", str(model), "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any("the kernel has f64_special=65536, item_special=64, which no calibration point had" in n
               for n in notes), notes
    assert main(["predict", "vector_copy", "--model", str(model), "--json"]) == 0
    assert not any("no calibration point had" in n for n in json.loads(capsys.readouterr().out)["notes"])


def test_calibrate_from_a_table_refuses_measuring_options_and_names_a_bad_row(tmp_path, capsys) -> None:
    from gpuperf.cli import main

    assert main(["calibrate", "--table", str(H100), "--out", str(tmp_path / "m.json"), "--cycles", "5"]) != 0
    assert "--table fits on the table's calibration points" in capsys.readouterr().err
    bad = pd.read_csv(H100)
    bad.loc[3, "kernel"] = "vector_copyy"
    path = tmp_path / "bad.csv"
    bad.to_csv(path, index=False)
    assert main(["calibrate", "--table", str(path), "--out", str(tmp_path / "m.json")]) != 0
    assert f"{path}, line 5: unknown kernel 'vector_copyy'" in capsys.readouterr().err


def test_calibrate_adds_properties_beside_the_set_and_refuses_unknown_or_repeated_ones(tmp_path, capsys) -> None:
    import json

    from gpuperf.cli import main

    model = tmp_path / "beyond.json"
    args = ["calibrate", "--table", str(H100), "--out", str(model), "--add-property", "footprint_beyond_50MiB"]
    assert main([*args, "--json"]) == 0
    metadata = json.loads(capsys.readouterr().out)
    assert metadata["properties"] == [*PROPERTY_SETS["gpu"], "footprint_beyond_50MiB"]
    plain = evaluate_linear_table(H100)
    beyond = evaluate_linear_table(H100, properties=metadata["properties"])
    weights = beyond.calibration.model.weights_
    assert weights["footprint_beyond_50MiB"] > 0  # bytes past the H100's 50 MiB L2 cost time of their own
    assert beyond.summary()["in_sample_mean_gmre"] < plain.summary()["in_sample_mean_gmre"]
    for added, message in (("footprint_beyond_50MB", "unknown property 'footprint_beyond_50MB'; did you mean "
                                                     "footprint_beyond_<N>MiB"),
                           ("item_loads", "a property is listed twice")):
        assert main(["calibrate", "--table", str(H100), "--out", str(tmp_path / "m.json"),
                     "--add-property", added]) != 0
        assert f"--add-property: {message}" in capsys.readouterr().err


def test_calibrate_from_a_table_counts_rows_outside_the_plan_and_refuses_too_few_points(tmp_path, capsys) -> None:
    """Rows at sizes the plan does not hold are left out with a note; too few points for the
    properties is an error, not a model that fits them exactly."""
    from gpuperf.cli import main

    table = pd.read_csv(H100)
    doubled = table.assign(n=table["n"] * 2)
    path = tmp_path / "doubled.csv"
    doubled.to_csv(path, index=False)
    assert main(["calibrate", "--table", str(path), "--out", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert re.search(r"doubled.csv: \d+ of 138 ok rows are not points of the gpu class's calibration", err)
    assert re.search(r"doubled.csv: \d+ calibration points \(\d+ kernels\) for 18 properties; a fit needs", err)
    assert not (tmp_path / "m.json").exists()
    # A table with some extra rows still fits, saying how many it left out.
    extra = pd.concat([table, doubled.head(5)])
    extra.to_parquet(tmp_path / "extra.parquet", index=False)  # any table format gpuperf reads
    assert main(["calibrate", "--table", str(tmp_path / "extra.parquet"), "--out", str(tmp_path / "e.json")]) == 0
    assert "5 of 143 ok rows are not points" in capsys.readouterr().err
    # A row of a kernel the plan does not name is counted with them, never built: a file kernel is not run.
    (tmp_path / "planted.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').write('x')\n")
    foreign = pd.concat([table, table.head(1).assign(kernel=f"{tmp_path / 'planted.py'}:k"),
                         table.head(1).assign(kernel="stencil2d[local_x=16,local_y=4,outputs_y=1,prefetch=0,unroll=1]")])
    foreign.to_csv(tmp_path / "foreign.csv", index=False)
    assert main(["calibrate", "--table", str(tmp_path / "foreign.csv"), "--out", str(tmp_path / "f.json")]) == 0
    assert "2 of 140 ok rows are not points" in capsys.readouterr().err
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize(("column", "value", "message"), [
    ("time_s_min", "abc", "line 6: time_s_min='abc' is not a number"),
    ("time_s_min", -1e-5, "line 6: time_s_min=-1e-05 is not a positive time (status ok)"),
    ("time_s", np.nan, "line 6: time_s has no value (empty or NaN) in a row whose status is ok"),
    ("n", 1000, "line 6: kernel 'add_four_vectors': sizes n=1000 violate its assumptions"),
    ("n", "abc", "line 6: size n='abc' is not a number"),
    ("n", 65536.5, "line 6: size n=65536.5 is not a whole number"),  # not truncated to 65536
    ("n", np.nan, "line 6: size n of add_four_vectors is empty"),  # not its default size
    ("time_s_min", 1.0, "line 6: time_s_min=1.0 is above time_s="),
])
def test_calibrate_from_a_table_names_the_row_of_a_bad_time_or_size(tmp_path, capsys, column, value, message) -> None:
    from gpuperf.cli import main

    table = pd.read_csv(H100)
    assert table.loc[4, "kernel"] == "add_four_vectors"
    table[column] = table[column].astype(object)
    table.loc[4, column] = value
    table.to_csv(tmp_path / "bad.csv", index=False)
    assert main(["calibrate", "--table", str(tmp_path / "bad.csv"), "--out", str(tmp_path / "m.json")]) == 2
    assert message in capsys.readouterr().err


def test_calibrate_from_a_table_takes_min_or_median_only(tmp_path, capsys) -> None:
    from gpuperf.cli import main

    assert main(["calibrate", "--table", str(H100), "--statistic", "mean", "--out", str(tmp_path / "m.json")]) == 2
    assert capsys.readouterr().err == ("gpuperf: error: --statistic: unknown statistic 'mean'; did you mean median, "
                                       "min?\n")


def test_calibrate_names_the_option_of_a_bad_statistic_or_device_class(tmp_path, capsys) -> None:
    """Said before any device is opened or table read, naming the option as --passes and --cycles do."""
    from gpuperf.cli import main

    out = str(tmp_path / "m.json")
    for argv, message in (
        (["--statistic", "mean", "--device", "cuda:99"],
         "--statistic: unknown statistic 'mean'; did you mean median, min?"),
        (["--table", str(H100), "--device-class", "tpu"],
         "--device-class: unknown device class 'tpu'; did you mean gpu, cpu?"),
        (["--table", str(H100), "--device-class", "", "--add-property", "footprint_beyond_50MiB"],
         "--device-class: unknown device class ''; did you mean cpu, gpu?"),
    ):
        assert main(["calibrate", *argv, "--out", out]) == 2
        assert capsys.readouterr().err == f"gpuperf: error: {message}\n"
    assert not (tmp_path / "m.json").exists() and not (tmp_path / "calibration.db").exists()


def test_calibrate_from_a_table_refuses_points_of_several_gpus_and_a_device_to_measure(tmp_path, capsys) -> None:
    from gpuperf.cli import main

    both = pd.concat([pd.read_csv(H100), pd.read_csv(H200)])
    assert both["device"].nunique() == 1  # both GPUs were cuda:0 to the campaigns that measured them
    both.to_csv(tmp_path / "both.csv", index=False)
    assert main(["calibrate", "--table", str(tmp_path / "both.csv"), "--out", str(tmp_path / "m.json")]) == 2
    assert "both.csv: points of several GPUs (H100 SXM, H200); give one GPU's" in capsys.readouterr().err
    assert main(["calibrate", "--table", str(H100), "--device", "cuda:0", "--out", str(tmp_path / "m.json")]) == 2
    assert "--table fits on the table's calibration points: --device, --kernel" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()


def test_a_model_file_is_refitted_only_by_the_command_that_wrote_its_kind(tmp_path, capsys) -> None:
    from gpuperf.cli import main

    calibrated, fitted = tmp_path / "h100.json", tmp_path / "lr.json"
    table = tmp_path / "t.csv"
    table.write_text("kernel,gpu,x,time_s\na,K20,1,1e-3\na,K20,2,2e-3\nb,K20,1,1e-2\nb,K20,3,3e-2\n")
    assert main(["calibrate", "--table", str(H100), "--out", str(calibrated)]) == 0
    assert main(["fit", str(table), "--model", "lr", "--out", str(fitted)]) == 0
    kept = calibrated.read_bytes(), fitted.read_bytes()
    capsys.readouterr()
    assert main(["fit", str(table), "--model", "lr", "--out", str(calibrated)]) == 2
    assert f"--out {calibrated}: holds a linear count model gpuperf calibrate wrote" in capsys.readouterr().err
    assert main(["calibrate", "--table", str(H100), "--out", str(fitted)]) == 2
    assert f"--out {fitted}: holds a model gpuperf fit wrote" in capsys.readouterr().err
    assert (calibrated.read_bytes(), fitted.read_bytes()) == kept
    assert main(["calibrate", "--table", str(H100), "--out", str(calibrated)]) == 0  # a refit of its own kind
    assert main(["fit", str(table), "--model", "rf", "--out", str(fitted)]) == 0


def test_calibrate_from_a_table_notes_rows_of_an_unknown_status(tmp_path, capsys) -> None:
    from gpuperf.cli import main

    table = pd.read_csv(H100)
    table.loc[4, "status"] = "bogus"
    table.to_csv(tmp_path / "status.csv", index=False)
    assert main(["calibrate", "--table", str(tmp_path / "status.csv"), "--out", str(tmp_path / "m.json")]) == 0
    assert "left out 1 of 138 rows whose status is not ok (first: line 6, status 'bogus')" in capsys.readouterr().err


def test_a_model_that_prices_points_at_no_positive_time_says_so(tmp_path, capsys) -> None:
    """A glitched time (1 ns) pulls the overlap weight below every cost near it: calibrate and
    predict say the times are not positive instead of printing them as times."""
    from gpuperf.cli import main

    table = pd.read_csv(H100)
    glitch = table[(table["kernel"] == "vector_copy") & (table["n"] == 1048576)].iloc[[0]]
    table = pd.concat([table, glitch.assign(time_s=1e-9, time_s_min=1e-9)], ignore_index=True)
    table.to_csv(tmp_path / "glitch.csv", index=False)
    assert main(["calibrate", "--table", str(tmp_path / "glitch.csv"), "--out", str(tmp_path / "m.json")]) == 0
    assert "note: the model predicts no positive time for" in capsys.readouterr().err
    assert main(["predict", "copy_2d", "-p", "n=8192", "-p", "m=1024", "--model", str(tmp_path / "m.json")]) == 0
    assert "a time that is not positive" in capsys.readouterr().err
    args = ["predict", "copy_2d", "-p", "n=8192", "-p", "m=1024", "--model", str(tmp_path / "m.json"), "--json"]
    assert main(args) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert len(notes) == 1 and "a time that is not positive" in notes[0]
    assert main(["predict", "copy_2d", "-p", "n=1024", "-p", "m=16", "--model", str(tmp_path / "m.json"),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["notes"] == []  # a positive time



def test_calibrate_from_a_table_leaves_out_a_users_kernel_named_like_a_catalog_one(tmp_path, capsys) -> None:
    """An export names a user's kernel by its function (`saxpy`, or `vector_copy` for a kernel of
    20 multiply-adds an element): `saxpy` was refused as an unknown kernel, and `vector_copy` fitted as
    the catalog's. Its kernel_spec names its file: both are left out, never run, with the note."""
    from gpuperf.cli import main

    table = pd.read_csv(H100)
    assert main(["calibrate", "--table", str(H100), "--out", str(tmp_path / "plain.json")]) == 0
    copy = table[table["kernel"] == "vector_copy"].head(1)
    (tmp_path / "clash.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').write('x')\n")
    users = pd.concat([copy.assign(kernel_spec=f"{tmp_path / 'clash.py'}:my_copy", time_s=1.0, time_s_min=1.0),
                       copy.assign(kernel="saxpy", kernel_spec=f"{tmp_path / 'clash.py'}:saxpy")])
    mixed = pd.concat([table.assign(kernel_spec=table["kernel"]), users])
    mixed.to_csv(tmp_path / "mixed.csv", index=False)
    capsys.readouterr()
    assert main(["calibrate", "--table", str(tmp_path / "mixed.csv"), "--out", str(tmp_path / "mixed.json")]) == 0
    assert ("mixed.csv: 2 of 140 ok rows are not points of the gpu class's calibration or held-out plan (kernel and "
            "sizes) and are left out (2 of them a user's file.py:function, never run)") in capsys.readouterr().err
    assert not (tmp_path / "ran").exists()
    fitted, plain = (json.loads((tmp_path / name).read_text()) for name in ("mixed.json", "plain.json"))
    assert fitted["metadata"]["weights"] == plain["metadata"]["weights"]
    # An export from before kernel_spec: the unknown name says how to tell a user's kernel apart.
    users.drop(columns="kernel_spec").tail(1).pipe(lambda row: pd.concat([table, row])).to_csv(
        tmp_path / "old.csv", index=False)
    assert main(["calibrate", "--table", str(tmp_path / "old.csv"), "--out", str(tmp_path / "old.json")]) == 2
    assert ("unknown kernel 'saxpy'; did you mean" in (err := capsys.readouterr().err)
            and "(a user's kernel? this export names no kernel_spec; export the store again" in err)


def test_a_row_of_a_space_variant_is_not_its_plain_kernels_point(monkeypatch, recwarn) -> None:
    """An export of a stencil space's variant (kernel stencil2d, a non-empty variant, kernel_spec
    stencil2d[local_x=...]) at a held-out size was read as a point of the plain stencil2d: its faster
    time became that point's, changing the held-out figures. It is left out with the note, unless the
    plan holds that variant."""
    from gpuperf.evaluation.linear_eval import HELD_OUT_PLANS

    table = pd.read_csv(H100)
    plain = evaluate_linear_table(table).held_out_error()
    label = "local_x=4,local_y=1,outputs_y=1,prefetch=1,unroll=1"
    stencil = table[table["kernel"] == "stencil2d"]
    variants = stencil.assign(variant=label, kernel_key=f"stencil2d[{label}]", time_s=stencil["time_s"] / 10,
                              time_s_min=stencil["time_s_min"] / 10)
    exported = pd.concat([table.assign(kernel_spec=table["kernel"]),
                          variants.assign(kernel_spec=f"stencil2d[{label}]")])
    for mixed in (exported, pd.concat([table, variants])):  # an export with kernel_spec, and one from before it
        recwarn.clear()
        assert evaluate_linear_table(mixed).held_out_error().equals(plain)
        assert any("3 of 141 ok rows are not points of the gpu class's calibration or held-out plan" in str(w.message)
                   for w in recwarn)
    monkeypatch.setitem(HELD_OUT_PLANS["gpu"], f"stencil2d[{label}]", HELD_OUT_PLANS["gpu"]["stencil2d"])
    held = evaluate_linear_table(exported).held_out
    assert held["kernel"].value_counts()[[f"stencil2d[{label}]", "stencil2d"]].tolist() == [3, 3]


def test_properties_given_as_one_string_are_refused_showing_the_list_to_write():
    from gpuperf.evaluation.linear_eval import calibrate_from_table

    table = data_dir() / "linear_model_h100.csv.gz"
    for call in (calibrate_from_table, evaluate_linear_table):
        with pytest.raises(GpuperfError, match=r"properties: properties lists property names, e\.g\. \['f32_ops'\], "
                                               r"not the string 'f32_ops'"):
            call(table, properties="f32_ops")
