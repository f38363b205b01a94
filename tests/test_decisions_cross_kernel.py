"""Exploring a kernel's variants with a model trained on other kernels (LIFT's setting)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from gpuperf.decisions.cross_kernel import leave_one_kernel_out, normalised_performance, rank_space
from gpuperf.errors import GpuperfError


def variant_table(kernels=("a", "b", "c"), seed: int = 0) -> pd.DataFrame:
    """Variants whose time depends on the same two features in every kernel (best: width 32, no barrier)."""
    rng = np.random.default_rng(seed)
    rows = []
    for scale, kernel in enumerate(kernels, 1):
        for width in (4, 8, 16, 32, 64, 128):
            for barriers in (0, 1, 2):
                time = scale * (1 + abs(np.log2(width / 32)) + 0.7 * barriers) * rng.uniform(0.98, 1.02)
                rows.append({"kernel": kernel, "local_size_0": width, "barriers_per_thread": barriers,
                             "noise_feature": rng.normal(), "time_s": time, "status": "ok"})
    return pd.DataFrame(rows)


def test_normalised_performance_per_program_and_failures():
    table = pd.DataFrame({"kernel": ["a", "a", "b", "b"], "time_s": [1.0, 2.0, 4.0, 1.0],
                          "status": ["ok", "ok", "ok", "run_failed"]})
    assert normalised_performance(table, ["kernel"]).tolist() == [1.0, 0.5, 1.0, 0.0]
    spelled = table.assign(status=["OK", " Ok ", "ok", "run_failed"])  # ok in any case, as fit reads it
    assert normalised_performance(spelled, ["kernel"]).tolist() == [1.0, 0.5, 1.0, 0.0]


def test_model_from_other_kernels_finds_the_best_first():
    table = variant_table()
    result = leave_one_kernel_out(table, features=("local_size_0", "barriers_per_thread"),
                                  parameters=("local_size_0", "barriers_per_thread"))
    assert list(result["kernel"]) == ["a", "b", "c"] and (result["variants"] == 18).all()
    assert (result["model_evals_to_90"] <= 2).all() and (result["parameters_evals_to_90"] == 1).all()
    assert (result["random_evals_to_90"] > 3).all()


def test_model_is_trained_without_the_held_out_kernel():
    table = variant_table()
    flipped = table["kernel"] == "c"  # kernel c alone prefers the widest groups
    table.loc[flipped, "time_s"] = 1 + abs(np.log2(table.loc[flipped, "local_size_0"] / 128))
    result = leave_one_kernel_out(table, features=("local_size_0", "barriers_per_thread")).set_index("kernel")
    assert result.loc["c", "model_evals_to_90"] > 1  # others' data points elsewhere, and c's own is not used


def test_errors_name_the_missing_columns():
    with pytest.raises(GpuperfError, match="lacks column"):
        leave_one_kernel_out(variant_table().drop(columns="time_s"), features=("local_size_0",))
    with pytest.raises(GpuperfError, match="at least two kernels"):
        leave_one_kernel_out(variant_table(kernels=("a",)), features=("local_size_0",))


def test_rank_space_ranks_catalog_variants_without_running_them():
    train = variant_table()
    ranked = rank_space("stencil2d", {"n": 256, "m": 256}, train, limit=12)
    assert 1 <= len(ranked) <= 12 and ranked["variant"].str.startswith("stencil2d[").all()
    assert ranked["predicted_performance"].is_monotonic_decreasing
    best_width = ranked.iloc[0]["local_size_0"]
    assert abs(np.log2(best_width / 32)) <= abs(np.log2(ranked["local_size_0"] / 32)).min()


def test_rank_space_notes_a_model_that_predicts_every_variant_alike():
    """Trained on five rows, 5-NN predicts their mean for every variant: the 'ranking' is then the space's
    order, which a user took for a ranking; a model telling variants apart gets no note."""
    import warnings

    from gpuperf.errors import GpuperfNote

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ranked = rank_space("stencil2d", {"n": 256, "m": 256}, variant_table().head(5), limit=4, where="five.csv")
    assert ranked["predicted_performance"].nunique() == 1
    [note] = [str(w.message) for w in caught if issubclass(w.category, GpuperfNote)]
    assert note.startswith(f"the model trained on five.csv predicts every one of the {len(ranked)} variants alike")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ranked = rank_space("stencil2d", {"n": 256, "m": 256}, variant_table(), limit=12)
    assert ranked["predicted_performance"].nunique() > 1
    assert not [w for w in caught if "alike" in str(w.message)]

def test_rank_command_json_and_errors(tmp_path, capsys):
    import json

    from gpuperf.cli import main

    train = tmp_path / "variants.csv"
    variant_table().to_csv(train, index=False)
    argv = ["rank", "jacobi2d_5pt", "-p", "n=256", "-p", "m=256", "--train", str(train), "--limit", "8", "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["train_rows"] == 54 and result["left_out_rows_of_this_kernel"] == 0
    with_own = pd.concat([variant_table(), variant_table().assign(kernel="jacobi2d_5pt")], ignore_index=True)
    with_own.to_csv(tmp_path / "with_own.csv", index=False)
    assert main([*argv[:-4], str(tmp_path / "with_own.csv"), *argv[-3:]]) == 0
    own = json.loads(capsys.readouterr().out)
    assert own["train_rows"] == 54 and own["left_out_rows_of_this_kernel"] == 54
    assert own["variants"] == result["variants"]  # the space's own measurements never train its ranking
    with_own.assign(kernel=" " + with_own["kernel"] + " ").to_csv(tmp_path / "padded.csv", index=False)
    assert main([*argv[:-4], str(tmp_path / "padded.csv"), *argv[-3:]]) == 0  # " jacobi2d_5pt " is the kernel too
    assert json.loads(capsys.readouterr().out)["left_out_rows_of_this_kernel"] == 54
    predicted = [v["predicted_performance"] for v in result["variants"]]
    assert 1 <= len(predicted) <= 8 and predicted == sorted(predicted, reverse=True)
    assert main(["rank", "jacobi2d", "-p", "n=256", "--train", str(train)]) == 2
    assert "did you mean" in capsys.readouterr().err
    variant_table().assign(status="OK").to_csv(train, index=False)
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["variants"] == result["variants"]
    negative = variant_table()
    negative.loc[5, "time_s"] = -1.0
    negative.to_csv(train, index=False)
    assert main(argv) == 2
    assert "variants.csv: line 7: time_s=-1.0 is not a positive number" in capsys.readouterr().err
    variant_table().drop(columns="time_s").to_csv(train, index=False)
    assert main(argv) == 2
    assert "variants.csv: missing column(s) time_s" in capsys.readouterr().err


def test_performance_is_normalised_per_program_and_input():
    from gpuperf.datasets.bundled import data_dir
    from gpuperf.decisions.cross_kernel import normalised_performance, program_columns

    table = pd.read_csv(data_dir() / "stencil_spaces_pocl.csv.gz")
    larger = table.assign(n=table["n"] * 2, m=table["m"] * 2, time_s=table["time_s"] * 4)
    both = pd.concat([table, larger], ignore_index=True)
    assert program_columns(both)[:1] == ("kernel",) and {"n", "m"} <= set(program_columns(both))
    best = normalised_performance(both, program_columns(both)).groupby([both["kernel"], both["n"]]).max()
    assert (best == 1.0).all()  # the best variant of each kernel at each size



def test_rank_space_skips_variants_whose_assumptions_the_sizes_break(tiled_space):
    ranked = rank_space(tiled_space, {"n": 32}, variant_table())
    assert sorted(ranked["variant"]) == ["twice[local_x=16]", "twice[local_x=32]"]
    with pytest.raises(GpuperfError, match=r"no valid variant of twice at these sizes \(n=8\): all 3 skipped; "
                                           r"the first: sizes outside its assumptions: kernel 'twice\[local_x=16\]'"):
        rank_space(tiled_space, {"n": 8}, variant_table())
    with pytest.raises(GpuperfError, match="has no size parameter m"):  # wrong for every variant: said at once
        rank_space(tiled_space, {"n": 32, "m": 4}, variant_table())


def test_rank_command_ranks_the_stencil_variants_valid_at_small_sizes(capsys):
    import json

    from gpuperf.cli import main

    assert main(["rank", "stencil2d", "-p", "n=48", "-p", "m=48", "--limit", "56", "--json"]) == 0
    captured = capsys.readouterr()
    ranked = json.loads(captured.out)["variants"]
    variants = [v["variant"] for v in ranked]
    assert len(variants) == 52  # the last 4 have 32-row tiles, which do not divide 48
    assert "stencil2d: 4 of 56 variants left out at n=48, m=48; the first: sizes outside" in captured.err
    # each variant's parameters are given, and whole counts are integers
    first = ranked[0]
    assert first["variant"] == "stencil2d[" + ",".join(f"{k}={first[k]}" for k in
                                                       ("local_x", "local_y", "outputs_y", "prefetch", "unroll")) + "]"
    assert type(first["local_size_0"]) is int and first["local_size_0"] == first["local_x"]
    assert "stencil2d[local_x=4,local_y=4,outputs_y=8,prefetch=0,unroll=1]" not in variants
    assert main(["rank", "stencil2d", "-p", "n=40", "-p", "m=48", "--limit", "4"]) == 2
    assert "no valid variant of stencil2d at these sizes (n=40, m=48): all 4 skipped" in capsys.readouterr().err


def test_a_zero_or_negative_time_counts_as_a_failure():
    """Times 0 and -1 are no measurements: performance 0, and the best stays the 1.0 of row 2."""
    table = pd.DataFrame({"kernel": ["a"] * 4, "time_s": [0.0, 1.0, -1.0, 2.0]})
    assert normalised_performance(table, ["kernel"]).tolist() == [0.0, 1.0, 0.0, 0.5]


def test_usable_features_have_no_gaps_in_any_table_and_vary_in_training():
    from gpuperf.decisions.cross_kernel import usable_features

    train = pd.DataFrame({"varies": [1, 2, 3], "constant": [3, 3, 3], "gap": [1.0, 2.0, np.nan],
                          "gap_in_test": [1, 2, 3], "here_only": [1, 2, 3]})
    test = pd.DataFrame({"varies": [5], "constant": [3], "gap": [1.0], "gap_in_test": [np.nan]})
    names = ["varies", "constant", "gap", "gap_in_test", "here_only", "absent"]
    assert usable_features(names, train, test) == ["varies"]


def test_parameter_order_ranks_by_mean_performance_and_unknown_configurations_last():
    """On the other kernels p = 1 reads 1.0 and 0.0 (mean 0.5, best 1.0), p = 2 reads 0.8 twice,
    p = 3 reads 0.0 (all failed); p = 4 none measured: order 2, 1, 3, then 4."""
    from gpuperf.decisions.cross_kernel import parameter_order

    train = pd.DataFrame({"p": [1, 1, 2, 2, 3], "performance": [1.0, 0.0, 0.8, 0.8, 0.0]})
    test = pd.DataFrame({"p": [4, 3, 1, 2]})
    assert parameter_order(train, test, ["p"]).tolist() == [3, 2, 1, 0]


class SmallestFirst:
    """A stand-in model that predicts the smallest first feature best; it records its training rows."""

    fitted_rows: list[int] = []

    def get_params(self, deep=True):
        return {}

    def set_params(self, **params):
        return self

    def fit(self, X, y):
        SmallestFirst.fitted_rows.append(len(X))
        return self

    def predict(self, X):
        return -X[:, 0]


def test_leave_one_kernel_out_trains_on_the_others_and_judges_the_models_first_pick():
    """Three kernels with widths 8, 16, 32 (time 1 + |log2(width / 32)|: performance 1/3, 1/2, 1).
    Each held-out kernel's model is fitted on the other two (6 rows); the model prefers width 8,
    so its first pick reads 1/3 and it takes 3 evaluations to reach 90, 95 and 99 %."""
    rows = [{"kernel": k, "local_size_0": w, "time_s": 1 + abs(math.log2(w / 32))}
            for k in "abc" for w in (8, 16, 32)]
    SmallestFirst.fitted_rows = []
    result = leave_one_kernel_out(pd.DataFrame(rows), features=("local_size_0",), model=SmallestFirst())
    assert SmallestFirst.fitted_rows == [6, 6, 6]
    assert result["top_predicted_performance"].tolist() == pytest.approx([1 / 3] * 3)
    for percent in (90, 95, 99):
        assert result[f"model_evals_to_{percent}"].tolist() == [3, 3, 3]


def test_across_devices_trains_on_every_other_or_the_same_kernel_of_the_other_table():
    """The other device's table (kernels a, b, c; 18 variants each) trains; each test kernel's
    model sees all 54 rows, the 36 of the other kernels or the 18 of its own."""
    from gpuperf.decisions.cross_kernel import across_devices

    train, test = variant_table(), variant_table(kernels=("a", "b"), seed=1)
    for trained_on, rows in (("all", [54, 54]), ("others", [36, 36]), ("same", [18, 18])):
        SmallestFirst.fitted_rows = []
        result = across_devices(train, test, ("local_size_0", "barriers_per_thread"), trained_on, model=SmallestFirst(),
                                parameters=("local_size_0", "barriers_per_thread"))
        assert SmallestFirst.fitted_rows == rows and result["train_rows"].tolist() == rows
        assert result["kernel"].tolist() == ["a", "b"] and (result["variants"] == 18).all()
        assert (result["model_evals_to_90"] > 1).all()  # the stand-in prefers the narrowest groups: wrong here
        assert (result["parameters_evals_to_90"] == 1).all()  # both devices' best is width 32, no barrier
        assert (result["random_evals_to_90"] == result["random_evals_to_99"]).all()  # one variant within 10 %
    result = across_devices(train, test, ("local_size_0", "barriers_per_thread"), "others")
    assert (result["model_evals_to_90"] <= 2).all() and (result["spearman"] > 0.7).all()
    with pytest.raises(GpuperfError, match="trained_on='mine'"):
        across_devices(train, test, trained_on="mine")
    with pytest.raises(GpuperfError, match="share none of the feature columns"):
        across_devices(train, test, ("absent",))


def _h100():
    from gpuperf.datasets import load_dataset

    return load_dataset("stencil_spaces_h100")


def _valid_counts(result, variants=24):
    for percent in (90, 95, 99):
        counts = result[f"model_evals_to_{percent}"]
        assert counts.notna().all() and counts.between(1, variants).all() and (counts == counts.round()).all()
    assert (result["model_evals_to_90"] <= result["model_evals_to_95"]).all()
    assert (result["model_evals_to_95"] <= result["model_evals_to_99"]).all()


def test_on_the_h100_stencils_a_model_of_the_other_kernels_beats_random_order():
    """The LIFT setting on the H100 table: each stencil's 24 variants ranked by PCA + 5-NN trained on
    the other seven. Every count is a whole number of evaluations within the space, random order's is
    its exact expectation, and over the eight stencils the model needs fewer evaluations than random
    order to reach 90 % (geometric means 1.44 and 3.02 when measured)."""
    from scipy.stats import gmean

    table = _h100()
    result = leave_one_kernel_out(table, parameters=("local_x", "local_y", "outputs_y", "prefetch", "unroll"))
    assert len(result) == 8 and (result["variants"] == 24).all() and set(result["gpu"]) == {"H100 SXM"}
    _valid_counts(result)
    performance = normalised_performance(table, ["kernel"])
    good = (performance >= 0.9).groupby(table["kernel"]).sum()
    assert result.set_index("kernel")["random_evals_to_90"].to_dict() == (25 / (good + 1)).to_dict()
    assert gmean(result["model_evals_to_90"]) < 0.6 * gmean(result["random_evals_to_90"])


def test_pocl_trained_models_rank_the_h100_variants():
    """Across devices: the pocl table (64 variants of each stencil at 1024) trains, the H100 table
    (24 at 4096) is ranked; registers and occupancy, which pocl lacks, are not used."""
    from gpuperf.datasets import load_dataset
    from gpuperf.decisions.cross_kernel import LIFT_FEATURES, across_devices

    pocl = load_dataset("stencil_spaces_pocl")
    features = (*LIFT_FEATURES, "registers_per_thread", "occupancy")
    for trained_on, rows in (("all", 512), ("others", 448), ("same", 64)):
        result = across_devices(pocl, _h100(), features, trained_on)
        assert len(result) == 8 and (result["train_rows"] == rows).all()
        _valid_counts(result)
        assert result["spearman"].between(-1, 1).all()


def test_explore_benchmark_searches_run_on_the_h100_table():
    """The H100 draws of 24 share few configurations between stencils (hotspot2d only one, with
    srad2): the transfer-guided search takes the stencils that share any, and every search counts
    whole evaluations within the space."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_explore_kernels.py"
    spec = importlib.util.spec_from_file_location("bench_explore_kernels", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    searches = bench.searches_on_other_kernels(_h100(), seeds=1)
    assert len(searches) == 8 and searches.drop(columns="kernel").notna().all().all()
    assert searches.drop(columns="kernel").apply(lambda c: c.between(1, 24)).all().all()


def test_rank_and_explore_take_the_h100_table_by_name(capsys):
    import json

    from gpuperf.cli import main

    assert main(["rank", "jacobi2d_9pt", "-p", "n=4096", "-p", "m=4096", "--train", "stencil_spaces_h100",
                 "--limit", "6", "--json", "--no-progress"]) == 0
    ranked = json.loads(capsys.readouterr().out)
    assert ranked["train_rows"] == 168 and ranked["left_out_rows_of_this_kernel"] == 24
    assert len(ranked["variants"]) == 6
    assert main(["explore", "stencil_spaces_h100", "--kernel", "jacobi2d_9pt", "--train", "stencil_spaces_pocl",
                 "--json", "--no-progress"]) == 0
    explored = json.loads(capsys.readouterr().out)
    assert 1 <= explored["evals_to_90"] <= explored["evals_to_99"] <= 24
    assert explored["best_time"] == _h100().query("kernel == 'jacobi2d_9pt'")["time_s"].min()
    assert explored["random_expected_evals_to_90"] == pytest.approx(25 / 8)  # 7 of its 24 within 90 %


@pytest.mark.parametrize(("value", "problem"), [("abc", "'abc' is not a number"), ("inf", "inf is not a finite number")])
def test_rank_space_names_a_training_feature_that_is_no_finite_number(value, problem):
    train = variant_table().astype({"local_size_0": object})
    train.loc[4, "local_size_0"] = value
    with pytest.raises(GpuperfError, match=f"variants.csv: row 5: local_size_0={problem}"):
        rank_space("stencil2d", {"n": 256, "m": 256}, train, limit=2, where="variants.csv")


def test_rank_space_notes_a_feature_with_gaps_and_counts_a_repeated_row_once():
    from gpuperf.errors import GpuperfNote

    train = variant_table()
    gappy = train.copy()
    gappy.loc[3, "barriers_per_thread"] = np.nan
    with pytest.warns(GpuperfNote, match="barriers_per_thread left out of the ranking model: some rows have no value"):
        rank_space("stencil2d", {"n": 256, "m": 256}, gappy, limit=6, where="variants.csv")
    once = rank_space("stencil2d", {"n": 256, "m": 256}, train, limit=6)
    with pytest.warns(GpuperfNote, match=f"variants.csv: {len(train)} rows repeat an earlier row exactly"):
        twice = rank_space("stencil2d", {"n": 256, "m": 256}, pd.concat([train, train]), limit=6, where="variants.csv")
    pd.testing.assert_frame_equal(once, twice)


def test_rank_names_the_sizes_it_took_from_the_defaults(tmp_path, capsys):
    """Before, rank used m = 4096 without a word and its JSON sizes held only n."""
    import json

    from gpuperf.cli import main

    train = tmp_path / "variants.csv"
    variant_table().to_csv(train, index=False)
    assert main(["rank", "jacobi2d_5pt", "-p", "n=256", "--train", str(train), "--limit", "4", "--json"]) == 0
    captured = capsys.readouterr()
    assert "note: jacobi2d_5pt: sizes not given take its defaults: m=4096" in captured.err
    assert json.loads(captured.out)["sizes"] == {"n": 256, "m": 4096}
    assert main(["rank", "jacobi2d_5pt", "-p", "n=256", "-p", "m=256", "--train", str(train), "--limit", "4"]) == 0
    assert "sizes not given" not in capsys.readouterr().err


def test_rank_given_a_model_as_training_table_says_it_belongs_to_model(tmp_path, capsys):
    from sklearn.linear_model import LinearRegression

    from gpuperf.cli import main
    from gpuperf.models.persistence import save_model

    fitted = LinearRegression().fit(pd.DataFrame({"launches": [1.0, 2.0]}), [1.0, 2.0])
    path = tmp_path / "count_model.json"
    save_model(fitted, path, metadata={"kind": "linear_count_model"})
    assert main(["rank", "jacobi2d_5pt", "-p", "n=256", "-p", "m=256", "--train", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"--train {path} is a gpuperf model, not measured variants: rank --model {path}" in err
    other = tmp_path / "fitted.json"  # a model from gpuperf fit, which --model does not take either
    save_model(fitted, other, metadata={"kind": "learned"})
    assert main(["rank", "jacobi2d_5pt", "-p", "n=256", "-p", "m=256", "--train", str(other)]) == 2
    err = capsys.readouterr().err
    assert "is a gpuperf model, not measured variants: rank --train takes a table" in err and "--model " + str(other) not in err


def test_rank_space_refuses_a_table_holding_one_variant_per_program_and_input():
    """Every normalised performance was 1: the ranking was the space's own order, with no word."""
    train = variant_table()
    train = train.assign(n=np.arange(len(train)))  # each row its own problem size
    with pytest.raises(GpuperfError, match="variants.csv: each of its .* rows is the only variant of its program"):
        rank_space("stencil2d", {"n": 256, "m": 256}, train, limit=6, program=("kernel", "n"), where="variants.csv")


def test_an_empty_program_column_is_one_input_not_a_missing_one():
    table = pd.DataFrame({"kernel": "k", "problem_size": [np.nan, np.nan], "time_s": [1.0, 2.0]})
    assert normalised_performance(table, ["kernel", "problem_size"]).tolist() == [1.0, 0.5]


def test_rank_space_extracts_features_once_for_variants_that_differ_only_in_unrolling(monkeypatch):
    from gpuperf.decisions.cross_kernel import LIFT_FEATURES
    from gpuperf.features import table as feature_module
    from gpuperf.kernels.space import get_space

    extracted = []
    real = feature_module.extract_features
    monkeypatch.setattr(feature_module, "extract_features",
                        lambda kernel, *a, **k: extracted.append(kernel) or real(kernel, *a, **k))
    ranked = rank_space("stencil2d", {"n": 256, "m": 256}, variant_table(), limit=20)
    assert len(ranked) == 20 and ranked["variant"].is_unique and len(extracted) == 8  # 8 sets of unroll siblings
    space, features = get_space("stencil2d"), [c for c in LIFT_FEATURES if c in ranked]
    for _, row in ranked.iterrows():  # each row's features are its own variant's
        own = real(space.build({p: row[p] for p in space.parameters}), {"n": 256, "m": 256})
        assert row["variant"] == space.key({p: row[p] for p in space.parameters})
        assert [row[f] for f in features] == [own[f] for f in features]


def test_rank_space_takes_kernels_of_one_name_from_different_sources_as_different_programs(monkeypatch):
    """A campaign export names a user's kernel by its program's name only (loopy's default loopy_kernel, or a
    catalog kernel's): two users' files, or a user's file and the catalog, became one program, the slower
    one's variants normalised against the other's best. Its kernel_spec tells them apart; a space's
    variants (kernel_spec jacobi2d_5pt[...]) stay one program."""
    from gpuperf.decisions import cross_kernel

    def measured(kernel: str, source: str, scale: float) -> pd.DataFrame:
        part = variant_table(kernels=(kernel,))
        specs = [f"{source}[local_size_0={w},barriers_per_thread={b}]"
                 for w, b in zip(part["local_size_0"], part["barriers_per_thread"])]
        return part.assign(time_s=part["time_s"] * scale, kernel_spec=specs)

    sources = {"/home/a/a.py:make": ("loopy_kernel", 1.0), "/home/b/b.py:make": ("loopy_kernel", 100.0),
               "jacobi2d_5pt": ("jacobi2d_5pt", 1.0), "/home/b/j.py:jacobi": ("jacobi2d_5pt", 50.0)}
    train = pd.concat([measured(kernel, source, scale) for source, (kernel, scale) in sources.items()],
                      ignore_index=True)
    trained = []
    real = cross_kernel.predict_performance

    def recorded(fitted: pd.DataFrame, *args, **kwargs):
        trained.append(fitted)
        return real(fitted, *args, **kwargs)

    monkeypatch.setattr(cross_kernel, "predict_performance", recorded)
    rank_space("stencil2d", {"n": 256, "m": 256}, train, limit=4)
    best = trained[0].groupby(trained[0]["kernel_spec"].str.split("[").str[0])["performance"].max()
    assert best.to_dict() == dict.fromkeys(sorted(sources), 1.0)


def test_rank_and_tune_keep_a_users_kernel_named_like_the_ranked_one_in_training(tmp_path, capsys, monkeypatch):
    """A campaign export names a user's kernel by its program's name only: a user's file whose program is called
    jacobi2d_5pt was taken for the catalog kernel's own rows and left out of training by rank --train and tune
    --rank-train (tune by the exact name only, rank with its spaces stripped). Its kernel_spec tells them apart."""
    import json

    from gpuperf.cli import main
    from gpuperf.decisions import cross_kernel, tune

    catalog = variant_table(kernels=("jacobi2d_5pt",)).assign(kernel_spec="jacobi2d_5pt[local_x=8]")
    users = variant_table(kernels=(" jacobi2d_5pt",)).assign(kernel_spec=" /home/b/j.py:jacobi")
    others = variant_table().assign(kernel_spec=lambda t: t["kernel"])
    table = pd.concat([others, catalog, users], ignore_index=True)
    table.to_csv(tmp_path / "export.csv", index=False)
    argv = ["rank", "jacobi2d_5pt", "-p", "n=256", "-p", "m=256", "--train", str(tmp_path / "export.csv"),
            "--limit", "4", "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["train_rows"] == 72 and result["left_out_rows_of_this_kernel"] == 18
    trained = []
    monkeypatch.setattr(cross_kernel, "rank_space", lambda space, sizes, train, **kw: trained.append(train))
    tune.rank_by_other_kernels("jacobi2d_5pt", {"n": 256, "m": 256}, table)
    assert len(trained[0]) == 72 and (trained[0]["kernel_spec"] != "jacobi2d_5pt[local_x=8]").all()
    tune.rank_by_other_kernels("jacobi2d_5pt", {"n": 256, "m": 256}, table.drop(columns="kernel_spec"))
    assert len(trained[1]) == 54  # a table without kernel_spec: a kernel's name is all there is


def test_rank_trains_on_a_tune_out_table_extracting_its_variants_features(tmp_path, capsys):
    """tune --out writes trials without static features (kernel, variant, sizes, parameters, time_s, status):
    rank --train (and tune --rank-train) extract each measured trial's features from its variant, with a note,
    instead of refusing the table; a failed trial is no training row."""
    from gpuperf.cli import main

    trials = tmp_path / "trials.csv"
    pd.DataFrame({"kernel": ["jacobi2d_5pt"] * 3, "device": ["opencl:0"] * 3, "gpu": ["cpu"] * 3,
                  "variant": ["local_x=4,local_y=2,outputs_y=4,prefetch=0,unroll=1",
                              "local_x=32,local_y=8,outputs_y=4,prefetch=0,unroll=1",
                              "local_x=32,local_y=16,outputs_y=8,prefetch=1,unroll=8"],
                  "n": [128] * 3, "m": [128] * 3, "time_s": [3.9e-5, 2.9e-5, None],
                  "status": ["ok", "ok", "invalid_variant"]}).to_csv(trials, index=False)
    assert main(["rank", "stencil2d", "-p", "n=128", "-p", "m=128", "--train", str(trials), "--limit", "3",
                 "--json"]) == 0
    captured = capsys.readouterr()
    assert "no static feature columns: extracted from each measured row's kernel at its sizes (2 variants)" in captured.err
    ranked = json.loads(captured.out)
    assert ranked["train_rows"] == 3 and len(ranked["variants"]) == 3
