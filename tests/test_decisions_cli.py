"""The explore and geometry commands: JSON keys and one-line errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import pandas as pd

from gpuperf.cli import main
from gpuperf.datasets import load_dataset
from gpuperf.errors import GpuperfError


def write_space(path, optimum: tuple[int, int], scale: float = 1.0) -> str:
    xs, ys = np.meshgrid(np.arange(1, 11), [1, 2, 4, 8, 16], indexing="ij")
    frame = pd.DataFrame({"bx": xs.ravel(), "tile": ys.ravel()})
    frame["time_ms"] = scale * (1 + 0.1 * (frame["bx"] - optimum[0]) ** 2 + 0.2 * np.abs(np.log2(frame["tile"] / optimum[1])))
    frame.to_csv(path, index=False)
    return str(path)


def run_json(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_explore_json_with_training_tables(tmp_path, capsys):
    space = write_space(tmp_path / "target.csv", (7, 4))
    train = [write_space(tmp_path / f"other{i}.csv", (7 + i % 2, 4), 1.5 + i) for i in range(3)]
    argv = ["explore", space, "--params", "bx,tile", "--json", "--budget", "20"]
    for path in train:
        argv += ["--train", path]
    result = run_json(capsys, argv)
    for key in ("evals_to_90", "evals_to_95", "evals_to_99", "random_evals_to_90", "transfer_evals_to_90", "best_time", "order"):
        assert key in result
    assert result["best_time"] == 1.0 and result["time_column"] == "time_ms"
    assert result["evals_to_90"] <= 2 and result["transfer_evals_to_90"] >= 1
    assert 1 <= result["random_evals_to_90"] <= 50
    assert set(result["order"][0]) == {"bx", "tile", "time"}
    assert len(result["order"]) == result["evaluated"] <= 20


def test_a_training_table_holding_the_spaces_own_times_is_left_out(tmp_path, capsys):
    """A Kernel Tuner cache names its kernel by the function (pnpoly_kernel), a table by the
    program (pnpoly): the same times on the same GPU, here in another unit, are its own data."""
    target = pd.read_csv(write_space(tmp_path / "target.csv", (7, 4))).assign(kernel="pnpoly_kernel", gpu="V100")
    target.to_csv(tmp_path / "target.csv", index=False)
    own = target.assign(kernel="pnpoly", time_s=target["time_ms"] / 1000).drop(columns="time_ms")
    elsewhere = pd.read_csv(write_space(tmp_path / "k20.csv", (3, 16))).assign(kernel="pnpoly", gpu="K20")
    pd.concat([own, elsewhere.assign(time_s=elsewhere["time_ms"] / 1000).drop(columns="time_ms")]).to_csv(
        tmp_path / "train.csv", index=False)
    argv = ["explore", str(tmp_path / "target.csv"), "--params", "bx,tile", "--train", str(tmp_path / "train.csv"),
            "--json", "--no-progress"]
    assert main(argv) == 0
    printed = capsys.readouterr()
    assert "train.csv (Tesla V100 PCIe 32GB) holds the space's own times" in printed.err
    assert json.loads(printed.out)["transfer_evals_to_90"] > 1  # from the K20 alone, which misleads
    # The same times on another GPU are another GPU's (as made-up tables often are).
    from gpuperf.decisions.space import read_space, read_training_spaces, same_measurements

    space = read_space(str(tmp_path / "target.csv"), ["bx", "tile"])
    others = read_training_spaces(tmp_path / "train.csv", ["bx", "tile"])
    assert [same_measurements(space, other) for other in others] == [False, True]
    moved = others[1]
    moved.gpu = "K20"
    assert not same_measurements(space, moved)


def test_a_flat_training_table_with_the_spaces_flat_times_is_kept(tmp_path, capsys):
    """Every configuration 1 ms in both tables: a coincidence of a flat space, not its own data."""
    flat = pd.read_csv(write_space(tmp_path / "flat.csv", (5, 4))).assign(time_ms=1.0)
    flat.to_csv(tmp_path / "flat.csv", index=False)
    flat.to_csv(tmp_path / "train.csv", index=False)
    result = run_json(capsys, ["explore", str(tmp_path / "flat.csv"), "--params", "bx,tile",
                               "--train", str(tmp_path / "train.csv"), "--json"])
    assert result["evals_to_90"] == 1


def test_explore_static_ranking_from_training_tables(tmp_path, capsys):
    space = write_space(tmp_path / "target.csv", (4, 2))
    other = write_space(tmp_path / "other.csv", (4, 2), 3.0)
    result = run_json(capsys, ["explore", space, "--params", "bx,tile", "--train", other, "--no-refit", "--json"])
    assert result["method"] == "static model (et)" and result["evals_to_99"] == 1


def test_explore_online_without_training(tmp_path, capsys):
    space = write_space(tmp_path / "target.csv", (3, 16))
    result = run_json(capsys, ["explore", space, "--params", "bx,tile", "--json", "--model", "knn", "--budget", "50"])
    assert result["transfer_evals_to_90"] is None
    assert result["evals_to_99"] is not None and result["method"] == "online (knn)"


def test_explore_bad_input_is_one_line(tmp_path, capsys):
    space = write_space(tmp_path / "target.csv", (3, 16))
    assert main(["explore", space, "--params", "bx,width", "--json"]) == 2
    assert "target.csv: missing parameter column(s) width" in capsys.readouterr().err
    text = (tmp_path / "target.csv").read_text().splitlines()
    text[3] = text[3].rsplit(",", 1)[0] + ",slow"
    (tmp_path / "broken.csv").write_text("\n".join(text) + "\n")
    assert main(["explore", str(tmp_path / "broken.csv"), "--params", "bx,tile"]) == 2
    err = capsys.readouterr().err
    assert "broken.csv: line 4: time_ms='slow' is not a positive number" in err and len(err.strip().splitlines()) == 1
    (tmp_path / "empty.csv").write_text("bx,tile,time_ms\n")
    assert main(["explore", str(tmp_path / "empty.csv"), "--params", "bx,tile"]) == 2
    assert "empty.csv: the table has no rows" in capsys.readouterr().err
    assert main(["explore", space, "--params", "bx,tile", "--model", "svm"]) == 2
    assert "unknown model 'svm'" in capsys.readouterr().err
    other = write_space(tmp_path / "other.csv", (3, 16), 2.0)
    assert main(["explore", space, "--params", "bx,tile", "--train", other, "--no-refit", "--model", "gp"]) == 2
    assert "with --no-refit use et, rf, gbt or knn" in capsys.readouterr().err
    assert main(["explore", space, "--params", "bx,tile", "--train", space]) == 2  # its own times
    assert ("--train: every table is the space's own kernel and GPU or holds its own times; nothing to transfer "
            "from") in capsys.readouterr().err


def test_explore_names_an_empty_time_as_a_configuration_not_measured_yet(tmp_path, capsys):
    """A space measured partly (as gpuperf ask fills it in): the empty cell is named as such, not as a
    time of nan, and ask is named as the command for it."""
    text = Path(write_space(tmp_path / "t.csv", (3, 16))).read_text()
    lines = text.splitlines()
    lines[2] = lines[2].rsplit(",", 1)[0] + ","
    (tmp_path / "partly.csv").write_text("\n".join(lines) + "\n")
    assert main(["explore", str(tmp_path / "partly.csv"), "--params", "bx,tile"]) == 2
    err = capsys.readouterr().err
    assert "partly.csv: line 3: time_ms is empty (a configuration not measured yet" in err and "nan" not in err
    assert "gpuperf ask names what to measure next" in err and len(err.strip().splitlines()) == 1


def test_geometry_json(capsys):
    result = run_json(capsys, ["geometry", "--gpu", "V100", "--trip", "128", "--policy", "libomptarget", "--json"])
    assert {k: result[k] for k in ("threads", "blocks", "class", "policy")} == {
        "threads": 32, "blocks": 4, "class": "ideal", "policy": "libomptarget"}
    short = run_json(capsys, ["geometry", "--gpu", "V100", "--trip", "40", "--json"])
    assert (short["threads"], short["blocks"], short["class"]) == (1, 40, "short")
    assert main(["geometry", "--gpu", "V100", "--trip", "10", "--policy", "fastest"]) == 2
    assert "unknown launch-geometry policy 'fastest'" in capsys.readouterr().err


def test_explore_reads_kernel_tuner_caches_like_csv_tables(tmp_path, capsys):
    from gpuperf.datasets import load_dataset, write_kernel_tuner_cache

    hub = load_dataset("benchmark_hub_spaces")
    keys = ["block_size_x", "between_method", "tile_size", "use_method"]
    paths = {}
    for label in ("RTX_3090", "RTX_3060_laptop"):
        rows = hub[(hub["kernel"] == "pnpoly") & (hub["gpu_label"] == label)]
        cache = write_kernel_tuner_cache(rows, tmp_path / f"{label}.json", tune_params_keys=keys)
        table = tmp_path / f"{label}.csv"
        rows[["gpu", "status", *keys, "time_s"]].to_csv(table, index=False)
        paths[label] = (str(cache), str(table))
    # A cache names its parameters and GPU itself; a CSV needs --params.
    from_caches = run_json(capsys, ["explore", paths["RTX_3090"][0], "--train", paths["RTX_3060_laptop"][0],
                                    "--budget", "8", "--json"])
    from_tables = run_json(capsys, ["explore", paths["RTX_3090"][1], "--train", paths["RTX_3060_laptop"][1],
                                    "--params", ",".join(keys), "--budget", "8", "--json"])
    assert from_caches["configurations"] == from_tables["configurations"] == 4092
    for key in ("evals_to_90", "transfer_evals_to_90", "best_time", "random_expected_evals_to_90"):
        assert from_caches[key] == pytest.approx(from_tables[key], rel=1e-12)
    assert [tuple(e[k] for k in keys) for e in from_caches["order"]] == [
        tuple(e[k] for k in keys) for e in from_tables["order"]]
    # Mixed: a cache explored with CSV training data of the same parameters.
    mixed = run_json(capsys, ["explore", paths["RTX_3090"][0], "--train", paths["RTX_3060_laptop"][1],
                              "--budget", "8", "--json"])
    assert mixed["order"] == from_caches["order"]
    assert main(["explore", paths["RTX_3090"][1]]) == 2
    err = capsys.readouterr().err
    assert "RTX_3090.csv: say which columns are the parameters (--params" in err and len(err.strip().splitlines()) == 1


def test_a_training_table_of_several_gpus_counts_as_one_space_per_gpu(tmp_path, capsys):
    from gpuperf.decisions.space import read_training_spaces

    parts = []
    for gpu, optimum in (("Tesla K20", (7, 4)), ("Tesla K40", (8, 4))):
        write_space(tmp_path / "part.csv", optimum)
        parts.append(pd.read_csv(tmp_path / "part.csv").assign(gpu=gpu))
    table = pd.concat(parts, ignore_index=True)
    table.to_csv(tmp_path / "both.csv", index=False)
    spaces = read_training_spaces(tmp_path / "both.csv", ["bx", "tile"])
    assert [s.gpu for s in spaces] == ["Tesla K20", "Tesla K40"] and [len(s) for s in spaces] == [50, 50]
    assert spaces[1].where.endswith("both.csv (Tesla K40)")
    target = write_space(tmp_path / "target.csv", (8, 4))
    joint = run_json(capsys, ["explore", target, "--params", "bx,tile", "--train", str(tmp_path / "both.csv"), "--json"])
    separate = []
    for i, part in enumerate(parts):
        part.to_csv(tmp_path / f"gpu{i}.csv", index=False)
        separate += ["--train", str(tmp_path / f"gpu{i}.csv")]
    alone = run_json(capsys, ["explore", target, "--params", "bx,tile", *separate, "--json"])
    assert joint["order"] == alone["order"] and joint["transfer_evals_to_90"] == alone["transfer_evals_to_90"]
    table.loc[57, "time_ms"] = -1.0  # file line 59, in the second GPU's rows
    table.to_csv(tmp_path / "broken.csv", index=False)
    assert main(["explore", target, "--params", "bx,tile", "--train", str(tmp_path / "broken.csv")]) == 2
    assert "broken.csv (Tesla K40): line 59: time_ms=" in capsys.readouterr().err


def test_a_training_tables_kernel_tuned_over_more_parameters_is_left_out(tmp_path):
    """A bx-only space trained on a table that also holds a kernel tuned over (bx, tile): that
    kernel's rows repeat each bx, so they are not the same space and are left out."""
    from gpuperf.decisions.space import read_training_spaces

    write_space(tmp_path / "part.csv", (7, 4))
    wide = pd.read_csv(tmp_path / "part.csv").assign(kernel="wide", gpu="Tesla K20")
    narrow = wide[wide["tile"] == 4].drop(columns="tile").assign(kernel="narrow", gpu="Tesla K40")
    pd.concat([wide, narrow], ignore_index=True).to_csv(tmp_path / "mixed.csv", index=False)
    spaces = read_training_spaces(tmp_path / "mixed.csv", ["bx"])
    assert [(s.gpu, len(s)) for s in spaces] == [("Tesla K40", 10)]
    pd.concat([wide, wide.assign(gpu="Tesla K40")], ignore_index=True).to_csv(tmp_path / "wide.csv", index=False)
    with pytest.raises(GpuperfError, match=r"wide.csv \(Tesla K20\): line 3: configuration 1 appears twice \(its rows "
                                           "differ in tile: a parameter not among those searched \(named by --params"):
        read_training_spaces(tmp_path / "wide.csv", ["bx"])
    with pytest.raises(GpuperfError, match="mixed.csv: no kernel in it has the parameters width"):
        read_training_spaces(tmp_path / "mixed.csv", ["width"])


def _k20_and_k40_spaces(tmp_path) -> list[pd.DataFrame]:
    """Kernel k's space on a Tesla K20 (optimum bx=7, tile=4) and on a Tesla K40 (bx=8, tile=4), in that
    order; both together written to tmp_path/both.csv."""
    parts = []
    for gpu, optimum in (("Tesla K20", (7, 4)), ("Tesla K40", (8, 4))):
        write_space(tmp_path / "part.csv", optimum)
        parts.append(pd.read_csv(tmp_path / "part.csv").assign(gpu=gpu, kernel="k"))
    pd.concat(parts, ignore_index=True).to_csv(tmp_path / "both.csv", index=False)
    return parts


def test_the_spaces_own_gpu_in_a_training_table_is_left_out(tmp_path, capsys):
    parts = _k20_and_k40_spaces(tmp_path)
    parts[1].to_csv(tmp_path / "target.csv", index=False)
    parts[0].to_csv(tmp_path / "k20.csv", index=False)
    argv = ["explore", str(tmp_path / "target.csv"), "--params", "bx,tile", "--json"]
    with_own = run_json(capsys, argv + ["--train", str(tmp_path / "both.csv")])
    without = run_json(capsys, argv + ["--train", str(tmp_path / "k20.csv")])
    assert with_own["order"] == without["order"]
    assert main(argv + ["--train", str(tmp_path / "target.csv")]) == 2
    assert "every table is the space's own kernel and GPU" in capsys.readouterr().err
    parts[1].assign(gpu="K40").to_csv(tmp_path / "spelled.csv", index=False)  # the same GPU, spelled otherwise
    assert main(argv + ["--train", str(tmp_path / "spelled.csv")]) == 2
    assert "every table is the space's own kernel and GPU" in capsys.readouterr().err


def test_explore_gpu_on_a_table_without_a_gpu_column_names_its_gpu_as_ask_does(tmp_path, capsys):
    """The space's own GPU in a training table is then left out, as for a space that names it."""
    parts = _k20_and_k40_spaces(tmp_path)
    parts[1].drop(columns=["gpu", "kernel"]).to_csv(tmp_path / "unnamed.csv", index=False)
    parts[1].to_csv(tmp_path / "named.csv", index=False)
    argv = ["--params", "bx,tile", "--train", str(tmp_path / "both.csv"), "--json"]
    named = run_json(capsys, ["explore", str(tmp_path / "named.csv"), *argv])
    by_option = run_json(capsys, ["explore", str(tmp_path / "unnamed.csv"), "--gpu", "K40", *argv])
    assert by_option["order"] == named["order"]
    asked = run_json(capsys, ["ask", str(tmp_path / "unnamed.csv"), "--gpu", "K40", *argv])
    assert asked["remaining"] == len(parts[1]) - asked["measured"] - asked["failed"]


def test_target_names_the_spaces_time_column_and_training_tables_keep_their_own(tmp_path, capsys):
    space = pd.read_csv(write_space(tmp_path / "target.csv", (7, 4)))
    space.rename(columns={"time_ms": "kernel_ms"}).to_csv(tmp_path / "renamed.csv", index=False)
    other = write_space(tmp_path / "other.csv", (7, 4), 2.0)
    renamed = run_json(capsys, ["explore", str(tmp_path / "renamed.csv"), "--params", "bx,tile", "--target", "kernel_ms",
                                "--train", other, "--json"])
    plain = run_json(capsys, ["explore", str(tmp_path / "target.csv"), "--params", "bx,tile", "--train", other, "--json"])
    assert renamed["evals_to_90"] == plain["evals_to_90"] and renamed["transfer_evals_to_90"] == plain["transfer_evals_to_90"]


def test_the_same_gpu_at_another_problem_size_or_an_unnamed_gpu_is_training_data(tmp_path, capsys):
    parts = {}
    for name, gpu, size, optimum in (("target", "RTX 3090", "[4096]", (8, 4)), ("small", "RTX 3090", "[1024]", (7, 4)),
                                     ("unnamed_a", "", "[4096]", (8, 4)), ("unnamed_b", "", "[4096]", (7, 4))):
        write_space(tmp_path / "part.csv", optimum)
        parts[name] = tmp_path / f"{name}.csv"
        pd.read_csv(tmp_path / "part.csv").assign(gpu=gpu, kernel="k", problem_size=size).to_csv(parts[name], index=False)
    argv = ["--params", "bx,tile", "--json"]
    other_size = run_json(capsys, ["explore", str(parts["target"]), "--train", str(parts["small"]), *argv])
    assert other_size["transfer_evals_to_90"] is not None and "left out" not in capsys.readouterr().err
    unnamed = run_json(capsys, ["explore", str(parts["unnamed_a"]), "--train", str(parts["unnamed_b"]), *argv])
    assert unnamed["transfer_evals_to_90"] is not None


def test_gzipped_caches_and_parquet_tables_are_spaces_too(tmp_path, capsys):
    import gzip
    import shutil

    from gpuperf.datasets import load_dataset, write_kernel_tuner_cache

    hub = load_dataset("benchmark_hub_spaces")
    keys = ["block_size_x", "between_method", "tile_size", "use_method"]
    rows = {label: hub[(hub["kernel"] == "pnpoly") & (hub["gpu_label"] == label)] for label in ("RTX_3090", "RTX_3060_laptop")}
    space = write_kernel_tuner_cache(rows["RTX_3090"], tmp_path / "space.json", tune_params_keys=keys)
    train = write_kernel_tuner_cache(rows["RTX_3060_laptop"], tmp_path / "train.json", tune_params_keys=keys)
    with open(train, "rb") as plain, gzip.open(tmp_path / "train.json.gz", "wb") as packed:
        shutil.copyfileobj(plain, packed)
    expected = run_json(capsys, ["explore", str(space), "--train", str(train), "--budget", "5", "--json"])
    gzipped = run_json(capsys, ["explore", str(space), "--train", str(tmp_path / "train.json.gz"), "--budget", "5", "--json"])
    assert gzipped["order"] == expected["order"]
    rows["RTX_3090"][["gpu", "status", *keys, "time_s"]].to_parquet(tmp_path / "space.parquet")
    rows["RTX_3060_laptop"][["gpu", "status", *keys, "time_s"]].to_parquet(tmp_path / "train.parquet")
    parquet = run_json(capsys, ["explore", str(tmp_path / "space.parquet"), "--train", str(tmp_path / "train.parquet"),
                                "--params", ",".join(keys), "--budget", "5", "--json"])
    assert parquet["order"] == expected["order"]


def test_a_repeated_configuration_says_in_which_columns_its_rows_differ(tmp_path, capsys):
    frame = pd.read_csv(write_space(tmp_path / "t.csv", (7, 4)))
    pd.concat([frame.assign(layout="row"), frame.assign(layout="col")]).to_csv(tmp_path / "two.csv", index=False)
    assert main(["explore", str(tmp_path / "two.csv"), "--params", "bx,tile"]) == 2
    assert "two.csv: line 52: configuration 1,1 appears twice (its rows differ in layout" in capsys.readouterr().err


def test_explore_reads_any_csv_name_and_says_a_damaged_gzip_is_unreadable(tmp_path, capsys):
    import lzma

    table = pd.read_csv(write_space(tmp_path / "t.csv", (7, 4)))
    with lzma.open(tmp_path / "t.csv.xz", "wt") as packed:
        table.to_csv(packed, index=False)
    table.to_csv(tmp_path / "t.txt", index=False)
    expected = run_json(capsys, ["explore", str(tmp_path / "t.csv"), "--params", "bx,tile", "--json"])
    for name in ("t.csv.xz", "t.txt"):
        assert run_json(capsys, ["explore", str(tmp_path / name), "--params", "bx,tile", "--json"])["order"] == expected["order"]
    for name in ("bad.csv.gz", "bad.json.gz", "BAD.JSON.GZ"):
        (tmp_path / name).write_bytes(b"\x1f\x8b\x08\x00garbage")
        assert main(["explore", str(tmp_path / name), "--params", "bx,tile"]) == 2
        assert f"{name}: not a" in capsys.readouterr().err


def test_why_a_configuration_repeats_names_parameters_not_measured_outcomes(tmp_path, capsys):
    frame = pd.read_csv(write_space(tmp_path / "t.csv", (7, 4)))
    both = pd.concat([frame.assign(layout="row", gflops=1.0, compile_s=0.1),
                      frame.assign(layout="col", gflops=2.0, compile_s=0.2)])
    both.to_csv(tmp_path / "two.csv", index=False)
    assert main(["explore", str(tmp_path / "two.csv"), "--params", "bx,tile"]) == 2
    err = capsys.readouterr().err
    assert "its rows differ in layout:" in err and "gflops" not in err and "compile_s" not in err
    frame.rename(columns={"time_ms": "ms/step"}).to_csv(tmp_path / "steps.csv", index=False)
    assert run_json(capsys, ["explore", str(tmp_path / "steps.csv"), "--params", "bx,tile", "--target", "ms/step",
                             "--json"])["time_column"] == "ms/step"  # a time per step, not a rate


def test_a_bundled_table_trains_by_name_without_the_spaces_own_kernel(tmp_path, capsys):
    from gpuperf.datasets import load_dataset

    params = "local_x,local_y,outputs_y,prefetch,unroll"
    table = load_dataset("stencil_spaces_pocl")
    table[table["kernel"] == "stencil2d"].to_csv(tmp_path / "stencil2d.csv", index=False)
    argv = ["explore", str(tmp_path / "stencil2d.csv"), "--params", params, "--budget", "5", "--json"]
    assert main(argv + ["--train", "stencil_spaces_pocl"]) == 0
    printed = capsys.readouterr()
    result = json.loads(printed.out)
    assert "stencil_spaces_pocl (stencil2d) is the space's own kernel and GPU" in printed.err
    assert result["method"].startswith("transfer-guided") and result["transfer_evals_to_90"] is not None


def test_rank_counts_are_positive(capsys):
    for option in ("--limit", "--top"):
        assert main(["rank", "jacobi2d_5pt", "-p", "n=256", "-p", "m=256", option, "-1"]) == 2
        assert f"{option} -1: must be at least 1" in capsys.readouterr().err


def test_rank_names_a_training_table_it_cannot_use(tmp_path, capsys):
    (tmp_path / "times.csv").write_text("kernel,time_s\nk,1\n")
    assert main(["rank", "jacobi2d_5pt", "-p", "n=256", "-p", "m=256", "--limit", "2",
                 "--train", str(tmp_path / "times.csv")]) == 2
    assert "times.csv: has none of the static feature columns" in capsys.readouterr().err


def test_a_variant_names_each_parameter_once_and_reproduce_a_scenario_at_least(capsys):
    assert main(["features", "stencil2d[local_x=32,local_x=16]"]) == 2
    assert "parameter local_x is given twice" in capsys.readouterr().err
    assert main(["reproduce", "rodinia", "--scenarios", ","]) == 2
    assert "--scenarios ',' names no scenario" in capsys.readouterr().err


def test_geometry_trip_may_be_written_in_exponent_form(capsys):
    assert main(["geometry", "--gpu", "H100", "--trip", "1e6", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["trip"] == 1_000_000
    assert main(["geometry", "--gpu", "H100", "--trip", "1.5e0"]) == 2
    assert "--trip: '1.5e0' is not a whole number" in capsys.readouterr().err
    for text, trip in (("1e18", 10**18), ("1234567890123456789e0", 1234567890123456789)):  # exactly, not via a float
        assert main(["geometry", "--gpu", "H100", "--trip", text, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["trip"] == trip
    for text in ("1e23", "1e400"):  # past what a 64-bit loop index counts
        assert main(["geometry", "--gpu", "H100", "--trip", text]) == 2
        assert f"--trip: '{text}' is too large (at most 2**63 - 1)" in capsys.readouterr().err


def test_explore_ends_with_a_verdict_against_its_baselines(tmp_path, capsys):
    from gpuperf.cli.decisions_cli import verdict

    space = write_space(tmp_path / "target.csv", (7, 4))
    other = write_space(tmp_path / "other.csv", (6, 4), 2.0)
    assert main(["explore", space, "--params", "bx,tile", "--train", other, "--model", "knn", "--budget", "20"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("The search reached 90 % of the best after ") and "random order needs " in last
    assert last.endswith("It stopped at the best configuration.")
    lost = {"evals_to_90": 12, "random_expected_evals_to_90": 3.45, "transfer_evals_to_90": 20, "evaluated": 79,
            "best_found_time": 1.0, "best_time": 1.0, "budget": 200}
    assert "random order needs 3.5 on average" in verdict(lost) and "this space favours a baseline" in verdict(lost)
    short = {**lost, "evals_to_90": None, "evaluated": 5, "best_found_time": 2.0, "budget": 5}
    assert verdict(short).startswith("The search did not reach 90 % of the best in 5 evaluations")
    assert verdict(short).endswith("It stopped at its budget of 5.")
    assert "this space favours a baseline" in verdict(short)  # random order gets there in 3.45 on average
    cut = {**short, "evaluated": 2, "budget": 2}  # a budget of 2: no baseline got there in 2 either
    assert "favours a baseline" not in verdict(cut)
    assert "favours a baseline" in verdict({**cut, "transfer_evals_to_90": 2})  # plain transfer did, at 2
    first = {**lost, "evals_to_90": 1}
    # random order scored as the search is (a miss within 100 counting 101): 98.7, not its 1454 with no budget
    wide = {**lost, "evals_to_90": 99, "random_expected_evals_to_90": 1454.33, "budget": 100, "evaluated": 99,
            "random_expected_evals_to_90_within_budget": 98.7, "transfer_evals_to_90": None}
    assert "1454.3 on average (exact expectation; 98.7 within the budget of 100, a miss counting 101;" in verdict(wide)
    assert "favours a baseline" in verdict(wide)
    assert "favours a baseline" not in verdict({**wide, "evals_to_90": 95})
    assert verdict(first).startswith("The search reached 90 % of the best after 1 evaluation;")
    assert verdict({**short, "evaluated": 1, "budget": 1}).startswith("The search did not reach 90 % of the best in "
                                                                      "1 evaluation;")


def test_explore_picks_one_kernel_and_gpu_from_a_table_that_also_trains_it(tmp_path, capsys):
    """The left-out GPU's own rows never train its search; the other kernel lacks the parameters."""
    frames = []
    for gpu, optimum in (("Tesla V100 PCIe 32GB", (7, 4)), ("Tesla K20", (7, 4)), ("GTX 1080 Ti", (8, 4))):
        frame = pd.read_csv(write_space(tmp_path / "one.csv", optimum))
        frames.append(frame.assign(kernel="conv", gpu=gpu))
    frames.append(pd.DataFrame({"kernel": "gemm", "gpu": "Tesla K20", "MWG": [16, 32], "time_ms": [1.0, 2.0]}))
    pd.concat(frames).to_csv(tmp_path / "all.csv", index=False)
    table = str(tmp_path / "all.csv")
    assert main(["explore", table, "--params", "bx,tile", "--kernel", "conv", "--gpu", "V100", "--train", table,
                 "--json", "--no-progress"]) == 0
    printed = capsys.readouterr()
    result = json.loads(printed.out)
    assert result["space"] == f"{table} (conv, Tesla V100 PCIe 32GB)" and result["configurations"] == 50
    assert result["method"].startswith("transfer-guided") and result["evals_to_90"] <= 2
    assert "(conv, Tesla V100 PCIe 32GB) is the space's own kernel and GPU" in printed.err


def test_explore_trains_on_the_same_kernel_where_a_table_of_several_holds_it(tmp_path, capsys):
    """The H200's srad1 variants guided by the H100's measurements of the same stencil: the other
    stencils' spaces in the H100 table (other configurations) are left out with a note."""
    assert main(["explore", "stencil_spaces_h200", "--kernel", "srad1", "--train", "stencil_spaces_h100",
                 "--json", "--no-progress"]) == 0
    printed = capsys.readouterr()
    result = json.loads(printed.out)
    assert result["configurations"] == 24 and result["method"].startswith("transfer-guided")
    assert result["evals_to_90"] == result["transfer_evals_to_90"] == 1  # the two GPUs rank srad1's variants alike
    assert "only its rows of srad1, the space's own kernel (7 space(s) of other kernels left out)" in printed.err
    # a table without the space's kernel trains it on its other stencils: those sharing no configuration
    # with srad1's are left out, with a note, and the others guide the search
    h100 = load_dataset("stencil_spaces_h100")
    h100.assign(kernel=" " + h100["kernel"] + " ").to_csv(tmp_path / "padded.csv", index=False)
    assert main(["explore", "stencil_spaces_h200", "--kernel", "srad1", "--train", str(tmp_path / "padded.csv"),
                 "--no-progress"]) == 0  # " srad1 " is srad1: the other stencils still left out
    assert "only its rows of srad1, the space's own kernel (7 space(s)" in capsys.readouterr().err
    h100[h100["kernel"] != "srad1"].to_csv(tmp_path / "others.csv", index=False)
    assert main(["explore", "stencil_spaces_h200", "--kernel", "srad1", "--train", str(tmp_path / "others.csv"),
                 "--no-progress"]) == 0
    assert "space(s) share no configuration with stencil_spaces_h200 (srad1" in capsys.readouterr().err
    h100[h100["kernel"] == "hotspot2d"].to_csv(tmp_path / "hotspot.csv", index=False)  # none shares one
    assert main(["explore", "stencil_spaces_h200", "--kernel", "srad1", "--train", str(tmp_path / "hotspot.csv"),
                 "--no-progress"]) == 2
    assert "none of its 24 configurations is one of" in capsys.readouterr().err


def test_explore_and_ask_pick_a_size_of_a_campaign_at_several_and_train_on_the_others(tmp_path, capsys):
    """-p n=64 picks the rows of one size; the same table as --train counts one space per GPU and
    size, and only the space's own GPU at its own size is left out."""
    rows = []
    for gpu, scale in (("Tesla V100 PCIe 32GB", 1.0), ("Tesla K20", 3.0)):
        for n in (64, 128):
            frame = pd.read_csv(write_space(tmp_path / "part.csv", (7, 4), scale * n / 64))
            rows.append(frame.assign(kernel="k", gpu=gpu, n=n, variant="bx=" + frame["bx"].astype(str)
                                     + ",tile=" + frame["tile"].astype(str)))
    pd.concat(rows).to_csv(tmp_path / "export.csv", index=False)
    export = str(tmp_path / "export.csv")
    result = run_json(capsys, ["explore", export, "--gpu", "V100", "-p", "n=64", "--train", export, "--json"])
    assert result["space"].endswith("export.csv (Tesla V100 PCIe 32GB, n=64)") and result["configurations"] == 50
    assert main(["explore", export, "--gpu", "V100", "-p", "n=64", "--train", export, "--json"]) == 0
    err = capsys.readouterr().err
    assert "export.csv (Tesla V100 PCIe 32GB, n=64) is the space's own kernel and GPU" in err
    assert err.count("left out of --train") == 1 and "left out of the training spaces" not in err
    asked = run_json(capsys, ["ask", export, "--gpu", "V100", "-p", "n=128", "--train", export, "--json"])
    assert asked["next"] is None and asked["measured"] == 50 and asked["method"] == "transfer-guided (et)"
    assert main(["explore", export, "--gpu", "V100", "-p", "n=32"]) == 2
    assert "no row has n=32 (it holds 64, 128)" in capsys.readouterr().err


def test_a_table_of_several_kernels_without_kernel_says_to_pick_one(tmp_path, capsys):
    """A bundled-style table of two kernels with their own parameters, explored without --kernel:
    the row lacking a parameter is named with the way out; the other kernel's rows, left out, are
    named as such, not as the kernel measured as itself."""
    rows = pd.DataFrame({"kernel": ["a", "a", "b", "b"], "gpu": ["V100"] * 4, "p": [1, 2, None, None],
                         "r": [None, None, 8, 16], "time_s": [1.0, 2.0, 3.0, 4.0]})
    rows.to_csv(tmp_path / "two.csv", index=False)
    assert main(["explore", str(tmp_path / "two.csv"), "--params", "p,r", "--gpu", "V100"]) == 2
    err = capsys.readouterr().err
    assert "two.csv (Tesla V100 PCIe 32GB): line 4: parameter p has no value (the table holds 2 kernels, a, b: pick one with " \
           "--kernel)" in err
    assert main(["explore", str(tmp_path / "two.csv"), "--params", "p", "--json"]) == 0
    assert "two.csv: left out 2 rows with none of the parameters (first: line 4; other kernels' rows (b); " \
           "--kernel picks one)" in capsys.readouterr().err
    assert run_json(capsys, ["explore", str(tmp_path / "two.csv"), "--params", "p", "--kernel", "a",
                             "--json"])["configurations"] == 2
    rows.iloc[[0, 1, 2]].assign(kernel=[None, "a", "a"], p=[None, 1, 2]).to_csv(tmp_path / "unnamed.csv", index=False)
    assert main(["explore", str(tmp_path / "unnamed.csv"), "--params", "p", "--json"]) == 0  # no kernel name: itself
    assert "(first: line 2; the kernel measured as itself, not as a variant)" in capsys.readouterr().err


def test_a_training_table_of_several_gpus_at_two_sizes_names_the_repeated_row_and_the_size(tmp_path, capsys):
    """Not "no kernel in it has the parameters", which it has: each GPU's rows repeat at n = 64 and
    128, and -p picks the size."""
    space = write_space(tmp_path / "target.csv", (7, 4))
    one = pd.read_csv(write_space(tmp_path / "one.csv", (6, 4), 2.0))
    rows = pd.concat([one.assign(gpu=gpu, n=n) for gpu in ("Tesla K20", "GTX 970") for n in (64, 128)],
                     ignore_index=True)
    rows.to_csv(tmp_path / "others.csv", index=False)
    assert main(["explore", space, "--params", "bx,tile", "--train", str(tmp_path / "others.csv")]) == 2
    err = capsys.readouterr().err
    assert "others.csv (GTX 970): line 152: configuration 1,1 appears twice (its rows differ in n: " in err
    assert "a size with -p, e.g. -p n=128)" in err and len(err.strip().splitlines()) == 1  # the repeated row's size


def test_a_space_of_two_problem_sizes_is_told_to_pick_one_with_its_own_size_as_the_example(tmp_path, capsys):
    """Kernel Tuner caches of two problem sizes imported into one table were told "e.g. -p n=1024", a size
    parameter the table does not have; the example is now the repeated row's problem_size, quoted for the shell."""
    rows = pd.DataFrame([{"block_size_x": bx, "problem_size": size, "source": f"{size[1:5]}.json", "time_s": bx * 1e-6}
                         for size in ("[2048, 2048]", "[4096, 4096]") for bx in (32, 64, 128)])
    rows.to_csv(tmp_path / "sizes.csv", index=False)
    assert main(["explore", str(tmp_path / "sizes.csv"), "--params", "block_size_x"]) == 2
    err = capsys.readouterr().err
    assert "configuration 32 appears twice (its rows differ in problem_size, source: " in err
    assert 'e.g. -p "problem_size=[4096, 4096]")' in err
    assert main(["explore", str(tmp_path / "sizes.csv"), "--params", "block_size_x", "-p",
                 "problem_size=[4096, 4096]", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["configurations"] == 3


def test_a_space_gpu_gpuperf_does_not_describe_is_noted_where_other_gpus_would_be_weighed(tmp_path, capsys):
    """--gpu names the GPU of a table without a gpu column; an unknown name cannot weigh the --train
    GPUs by likeness, and a note says they are weighed equally (a known name gets no note)."""
    grid = [{"a": a, "b": b} for a in (1, 2, 4) for b in (1, 2)]
    pd.DataFrame([{**c, "time_s": 1.0 + c["a"] / c["b"]} for c in grid]).to_csv(tmp_path / "space.csv", index=False)
    pd.DataFrame([{**c, "gpu": "V100", "time_s": 2.0 + c["a"] * c["b"]} for c in grid]).to_csv(
        tmp_path / "other.csv", index=False)
    args = ["explore", str(tmp_path / "space.csv"), "--params", "a,b", "--train", str(tmp_path / "other.csv"),
            "--json", "--no-progress"]
    assert main([*args, "--gpu", "FooGPU-9000"]) == 0
    assert "note: the space's GPU 'FooGPU-9000' is not one gpuperf describes" in capsys.readouterr().err
    assert main([*args, "--gpu", "A100"]) == 0
    assert "not one gpuperf describes" not in capsys.readouterr().err


def test_train_spaces_sharing_no_configuration_are_left_out_where_others_share_some(tmp_path, capsys):
    """A space naming no kernel, a --train table of two kernels: the one tuned over other values of
    the parameters cannot guide the search and is left out, with a note; the other guides it."""
    space = write_space(tmp_path / "target.csv", (7, 4))
    shared = pd.read_csv(write_space(tmp_path / "a.csv", (7, 4), 2.0)).assign(kernel="conv", gpu="K20")
    apart = pd.read_csv(write_space(tmp_path / "b.csv", (7, 4))).assign(kernel="gemm", gpu="K20")
    apart["bx"] += 100  # none of the target's configurations
    pd.concat([shared, apart]).to_csv(tmp_path / "train.csv", index=False)
    result = run_json(capsys, ["explore", space, "--params", "bx,tile", "--train", str(tmp_path / "train.csv"),
                               "--json", "--no-progress"])
    assert result["method"].startswith("transfer-guided") and result["evals_to_90"] <= 2
    assert main(["explore", space, "--params", "bx,tile", "--train", str(tmp_path / "train.csv"), "--no-progress"]) == 0
    assert "note: --train: 1 space(s) share no configuration with" in capsys.readouterr().err
    apart.to_csv(tmp_path / "apart.csv", index=False)  # nothing shared at all: the error names it
    assert main(["explore", space, "--params", "bx,tile", "--train", str(tmp_path / "apart.csv")]) == 2
    assert "none of its 50 configurations is one of" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["explore", "SPACE", "--params", "bx,tile"], ["ask", "SPACE", "--params", "bx,tile"],
                                     ["tune", "jacobi2d_5pt", "-p", "n=128", "-p", "m=128", "--budget", "1"],
                                     ["measure", "vector_copy", "-p", "n=1024"]])
def test_a_negative_seed_is_one_clear_error_before_any_work(tmp_path, capsys, command):
    space = write_space(tmp_path / "space.csv", (4, 2))
    argv = [space if part == "SPACE" else part for part in command]
    assert main([*argv, "--seed", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "gpuperf: error: --seed -1: must not be negative"


def test_a_parameter_value_none_or_na_is_a_setting_not_a_missing_value(tmp_path, capsys):
    """pandas reads None, NA and null as missing; as a tuning parameter's value they are settings
    (Kernel Tuner writes a None value so), in a table, an ask table and a cache's JSON null alike.
    An empty cell is still no value."""
    (tmp_path / "none.csv").write_text("bs,hint,time_ms\n32,None,1.0\n32,L1,0.9\n64,NA,0.6\n64,L1,0.5\n")
    result = run_json(capsys, ["explore", str(tmp_path / "none.csv"), "--params", "bs,hint", "--json", "--no-progress"])
    assert result["configurations"] == 4 and result["best_time"] == 0.5
    assert sorted(str(c["hint"]) for c in result["order"]) == ["L1", "L1", "NA", "None"]
    (tmp_path / "ask.csv").write_text("bs,hint,time_ms\n32,None,1.0\n32,L1,\n64,None,\n64,L1,0.5\n")
    step = run_json(capsys, ["ask", str(tmp_path / "ask.csv"), "--params", "bs,hint", "--json"])
    assert step["measured"] == 2 and step["next"]["hint"] in (None, "L1")  # the setting None as JSON's null
    cache = {"device_name": "NVIDIA RTX A4000", "kernel_name": "k", "tune_params_keys": ["bs", "hint"],
             "cache": {f"{bs},{hint}": {"bs": bs, "hint": None if hint == "None" else hint, "time": time}
                       for bs, hint, time in ((32, "None", 1.0), (32, "L1", 0.9), (64, "None", 0.6), (64, "L1", 0.5))}}
    (tmp_path / "cache.json").write_text(json.dumps(cache))
    assert run_json(capsys, ["explore", str(tmp_path / "cache.json"), "--json", "--no-progress"])["configurations"] == 4
    (tmp_path / "empty.csv").write_text("bs,hint,time_ms\n32,,1.0\n64,L1,0.5\n")
    assert main(["explore", str(tmp_path / "empty.csv"), "--params", "bs,hint", "--no-progress"]) == 2
    assert "empty.csv: line 2: parameter hint has no value" in capsys.readouterr().err


def test_configurations_whose_values_hold_commas_are_told_apart(tmp_path, capsys):
    (tmp_path / "comma.csv").write_text('shape,order,time_ms\n"16,16",x,1.0\n16,"16,x",0.5\n"8,8",x,0.7\n')
    result = run_json(capsys, ["explore", str(tmp_path / "comma.csv"), "--params", "shape,order", "--json",
                               "--no-progress"])
    assert result["configurations"] == 3 and result["best_time"] == 0.5


def test_ask_trains_on_the_other_gpus_of_the_table_it_asks_about(tmp_path, capsys):
    """One table of two GPUs, the A100 measured partly: --train on the same file leaves out the
    A100's rows not measured yet (a note) and its own GPU (a note), and trains on the V100."""
    path = tmp_path / "long.csv"
    path.write_text("gpu,bs,tile,time_ms\nV100,32,1,2.0\nV100,32,2,1.5\nV100,64,1,1.0\nV100,64,2,1.2\n"
                    "A100,32,1,0.9\nA100,32,2,\nA100,64,1,\nA100,64,2,\n")
    assert main(["ask", str(path), "--params", "bs,tile", "--gpu", "A100", "--train", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["next"] == {"bs": 64, "tile": 1}  # the V100's fastest
    err = captured.err
    assert f"{path}: left out 3 rows not measured yet (no time_ms, no status; first: line 7)" in err


def test_ask_refuses_a_table_whose_times_sit_in_a_column_it_does_not_read(tmp_path, capsys):
    path = tmp_path / "us.csv"
    for column in ("time_us", "runtime"):
        path.write_text(f"bs,{column}\n32,1.0\n64,\n128,0.5\n")
        assert main(["ask", str(path), "--params", "bs"]) == 2
        assert (f"us.csv: no time column (time_ms, time_s, time), but column {column} holds values; --target "
                f"{column} names it") in capsys.readouterr().err
    step = run_json(capsys, ["ask", str(path), "--params", "bs", "--target", "runtime", "--json"])
    assert step["measured"] == 2 and step["next"] == {"bs": 64}


def test_explore_names_a_time_column_and_a_parameter_under_other_names_as_ask_does(tmp_path, capsys):
    """explore said only 'no time column ...; name it with --target' of a table timed in runtime_ms, and
    'missing time column' / 'missing parameter column(s)' with no suggestion, where ask named the column."""
    path = tmp_path / "own.csv"
    path.write_text("block_size_x,runtime_ms\n16,1.5\n32,1.2\n64,1.1\n")
    assert main(["explore", str(path), "--params", "block_size_x"]) == 2
    assert ("own.csv: no time column (time_ms, time_s, time), but column runtime_ms holds values; --target runtime_ms "
            "names it if it holds the times") in capsys.readouterr().err
    assert main(["explore", str(path), "--params", "block_size_x", "--target", "runtime"]) == 2
    assert ("own.csv: missing time column 'runtime' (the table has runtime_ms); --target names the column the times "
            "are in") in capsys.readouterr().err
    for command in ("explore", "ask"):
        assert main([command, str(path), "--params", "block_size", "--target", "runtime_ms"]) == 2
        assert "own.csv: missing parameter column(s) block_size (did you mean block_size_x?)" in capsys.readouterr().err
    (tmp_path / "plain.csv").write_text("bs,cost\n32,1.0\n")  # no column looks like a time: as before
    assert main(["explore", str(tmp_path / "plain.csv"), "--params", "bs"]) == 2
    assert "plain.csv: no time column (time_ms, time_s, time); name it with --target" in capsys.readouterr().err


def test_time_and_parameter_hints_name_only_columns_that_are_no_parameter(tmp_path):
    """The hints of decisions.space: a parameter is never offered as the time or as another parameter; an
    empty column under a time's name holds no times; a target's hint names the table's time columns."""
    from gpuperf.decisions.space import read_space, require_parameter_columns

    with pytest.raises(GpuperfError, match=r"t\.csv: missing parameter column\(s\) block_size \(did you mean "
                                           r"block_size_x\?\)$"):
        require_parameter_columns(["block_size_y", "block_size_x", "time"], ["block_size", "block_size_y"], "t.csv")
    near = tmp_path / "near.csv"  # time_m, a parameter, is a near spelling of time_ms
    near.write_text("time_m,cost\n1,2.0\n2,3.0\n")
    with pytest.raises(GpuperfError, match=r"near\.csv: no time column \(time_ms, time_s, time\); name it with "
                                           r"--target$"):
        read_space(near, ["time_m"])
    empty = tmp_path / "empty.csv"
    empty.write_text("bs,time_us\n32,\n64,\n")
    with pytest.raises(GpuperfError, match=r"empty\.csv: no time column \(time_ms, time_s, time\); name it with "
                                           r"--target$"):
        read_space(empty, ["bs"])
    timed = tmp_path / "timed.csv"
    timed.write_text("bs,time_ms\n32,1.0\n64,2.0\n")
    with pytest.raises(GpuperfError, match=r"timed\.csv: missing time column 'duration' \(the table has time_ms\); "
                                           r"--target names the column the times are in$"):
        read_space(timed, ["bs"], "duration")


def test_a_training_table_without_a_time_column_says_to_rename_it(tmp_path, capsys):
    (tmp_path / "s.csv").write_text("bs,time_ms\n32,1.0\n64,0.5\n128,0.7\n")
    (tmp_path / "t.csv").write_text("bs,runtime\n32,2.0\n64,1.0\n128,1.5\n")
    assert main(["explore", str(tmp_path / "s.csv"), "--params", "bs", "--train", str(tmp_path / "t.csv")]) == 2
    assert ("t.csv: no time column (time_ms, time_s, time) in this training table; --target names the space's time "
            "column, so rename this table's to one of these") in capsys.readouterr().err


def test_two_campaigns_on_one_gpu_model_are_two_spaces_told_apart_by_gpu_label(tmp_path, capsys):
    """The bundled hub table holds two campaigns on an RTX A4000 (gpu_label A4000 and a4000) with
    different parameters: explore --gpu A100 --train TABLE failed on the A4000's rows ('parameter
    extra has no value'), and --gpu A4000 on its own space the same way."""
    frames = []
    for label, gpu, optimum, scale, extra in (("A100", "A100 PCIe 40GB", (7, 4), 1.0, True),
                                              ("A4000", "RTX A4000", (6, 4), 2.0, True),
                                              ("a4000", "RTX A4000", (6, 2), 2.5, False)):
        frame = pd.read_csv(write_space(tmp_path / f"{label}.csv", optimum, scale))
        frame = frame.assign(kernel="conv", gpu=gpu, gpu_label=label)
        if extra:  # the newer campaign tuned one more parameter
            frame = pd.concat([frame.assign(extra=0), frame.assign(extra=1, time_ms=frame["time_ms"] * 1.1)])
        frames.append(frame)
    table = tmp_path / "hub.csv"
    pd.concat(frames).to_csv(table, index=False)
    out = run_json(capsys, ["explore", str(table), "--params", "bx,tile,extra", "--kernel", "conv", "--gpu", "A100",
                            "--train", str(table), "--budget", "20", "--json"])
    assert out["evals_to_90"] is not None
    out = run_json(capsys, ["explore", str(table), "--params", "bx,tile", "--kernel", "conv", "--gpu", "a4000",
                            "--budget", "20", "--json"])
    assert out["space"].endswith("(conv, RTX A4000, a4000)") and out["configurations"] == 50
    assert main(["explore", str(table), "--params", "bx,tile", "--kernel", "conv", "--gpu", "RTX A4000"]) == 2
    assert ("--gpu RTX A4000 picks 2 campaigns on RTX A4000 (gpu_label A4000, a4000), each its own space; name one "
            "by its label, e.g. --gpu a4000") in capsys.readouterr().err


def test_a_table_of_two_kernel_tuner_caches_picks_one_problem_size_by_its_text(tmp_path, capsys):
    """Caches of one kernel at two problem sizes imported into one table: -p problem_size=[...] was
    refused as no number, so the table could not be explored or asked about."""
    from gpuperf.datasets import read_kernel_tuner_cache, write_dataset_csv

    one = read_kernel_tuner_cache(Path(__file__).parent / "data" / "kernel_tuner_vector_add.json")
    two = one.assign(problem_size="[2097152]", time_s=one["time_s"] * 2)
    table = tmp_path / "two_sizes.csv"
    write_dataset_csv(pd.concat([one, two], ignore_index=True), table)
    assert main(["explore", str(table), "--json"]) == 2
    assert "its rows differ in problem_size" in capsys.readouterr().err
    for pick in ("problem_size=[2097152]", "problem_size=[ 2097152 ]"):
        assert main(["explore", str(table), "-p", pick, "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["best_time"] == pytest.approx(2 * one["time_s"].min())
    assert main(["ask", str(table), "-p", "problem_size=[1048576]", "--json"]) == 0
    capsys.readouterr()
    assert main(["explore", str(table), "-p", "problem_size=[4]"]) == 2
    assert "no row has problem_size=[4] (it holds [1048576], [2097152])" in capsys.readouterr().err


def test_explore_and_ask_read_a_bundled_tables_file_by_path_as_by_its_name(capsys):
    """explore data/schoonhoven_spaces.csv.gz asked for --params: the file was read as raw rows."""
    from gpuperf.datasets.bundled import data_dir

    path = str(data_dir() / "schoonhoven_spaces.csv.gz")
    picked = ["--kernel", "pnpoly", "--gpu", "V100", "--train", "schoonhoven_spaces", "--json"]
    by_name = run_json(capsys, ["explore", "schoonhoven_spaces", *picked])
    by_path = run_json(capsys, ["explore", path, *picked])
    assert by_path["evals_to_90"] == by_name["evals_to_90"] and by_path["order"] == by_name["order"]
    assert run_json(capsys, ["ask", path, *picked])["next"] is None  # every configuration measured


@pytest.mark.parametrize("model", ["rf", "gbt", "et"])
def test_the_guided_order_depends_neither_on_the_spaces_row_order_nor_on_the_train_order(tmp_path, capsys, model):
    """rf's bootstrap and gbt's subsample draw by row position: the surrogate sees the rows in a fixed order."""
    space = pd.read_csv(write_space(tmp_path / "space.csv", (7, 4)))
    space.sample(frac=1, random_state=3).to_csv(tmp_path / "shuffled.csv", index=False)
    trains = [write_space(tmp_path / f"other{i}.csv", (5 + i, 2 + 2 * i), 1.5 + i) for i in range(2)]
    argv = ["--params", "bx,tile", "--model", model, "--json", "--no-progress", "--budget", "30"]
    orders = [run_json(capsys, ["explore", str(tmp_path / name), "--train", trains[first], "--train",
                                trains[1 - first], *argv])["order"]
              for name, first in (("space.csv", 0), ("shuffled.csv", 0), ("space.csv", 1))]
    assert len(orders[0]) >= 3 and orders[1] == orders[0] and orders[2] == orders[0]


def test_the_guided_order_on_a_measured_space_is_the_same_shuffled_and_with_train_times_in_seconds(tmp_path, capsys):
    """500 configurations of the bundled convolution space on the V100, the P100, Titan RTX and K20 training:
    the fitted line's sums over the rows, and the other GPUs' times normalised from seconds, differ from the
    plain run's in the last bit, which moved the extra trees' splits and so the picks (17 evaluations, the
    shuffled space and seconds otherwise); both are rounded to 12 decimals now."""
    from gpuperf.datasets.bundled import data_dir

    params = ["block_size_x", "block_size_y", "tile_size_x", "tile_size_y", "use_padding", "read_only"]
    frame = pd.read_csv(data_dir() / "schoonhoven_spaces.csv.gz", low_memory=False)
    convolution = frame[frame["kernel"] == "convolution"]
    configs = convolution[convolution["gpu"] == "V100"][params].sample(500, random_state=0)
    tables = {gpu: convolution[convolution["gpu"] == gpu].merge(configs, on=params)[["gpu", *params, "time_mean_ms"]]
              for gpu in ("V100", "P100", "TITAN_RTX", "K20")}
    tables["V100"].to_csv(tmp_path / "space.csv", index=False)
    tables["V100"].sample(frac=1, random_state=1).to_csv(tmp_path / "shuffled.csv", index=False)
    for gpu in ("P100", "TITAN_RTX", "K20"):
        tables[gpu].to_csv(tmp_path / f"{gpu}_ms.csv", index=False)
        seconds = tables[gpu].assign(time_s=tables[gpu]["time_mean_ms"] / 1e3).drop(columns="time_mean_ms")
        seconds.to_csv(tmp_path / f"{gpu}_s.csv", index=False)

    def order(space: str, unit: str) -> list:
        trains = [arg for gpu in ("P100", "TITAN_RTX", "K20") for arg in ("--train", str(tmp_path / f"{gpu}_{unit}.csv"))]
        return run_json(capsys, ["explore", str(tmp_path / space), "--params", ",".join(params), "--target",
                                 "time_mean_ms", *trains, "--json", "--no-progress"])["order"]

    plain = order("space.csv", "ms")
    assert len(plain) > 3 and order("shuffled.csv", "ms") == plain and order("space.csv", "s") == plain


def test_a_bundled_table_named_by_its_data_path_is_read_outside_a_checkout(tmp_path, monkeypatch):
    """explore, ask and tune --train refused data/NAME.csv.gz run from any other folder (as with an
    installed gpuperf) while fit, rank and calibrate read the bundled data's file of that name."""
    from gpuperf.decisions.space import read_space, read_table, read_training_spaces

    monkeypatch.chdir(tmp_path)
    bundled = read_table("data/stencil_spaces_pocl.csv.gz")  # a registered dataset: read as by its name
    assert bundled.equals(read_table("stencil_spaces_pocl"))
    space = read_space("data/stencil_spaces_pocl_25cycles.csv.gz", kernel="stencil2d")  # a table read as a file
    assert len(space) == 64 and space.params == ["local_x", "local_y", "outputs_y", "prefetch", "unroll"]
    spaces = read_training_spaces("data/stencil_spaces_pocl.csv.gz", space.params)
    assert len(spaces) == 8


def test_a_training_table_named_twice_or_copied_counts_once(tmp_path, capsys):
    """--train v100.json --train ./v100.json, or a copy of it under another name, weighed the V100 twice
    (other figures, no word); the file is read once and a copy is left out with a note."""
    import shutil

    space = write_space(tmp_path / "target.csv", (7, 4))
    first = write_space(tmp_path / "first.csv", (2, 1), 1.5)
    second = write_space(tmp_path / "second.csv", (9, 16), 2.0)
    shutil.copy(first, tmp_path / "copy.csv")
    argv = ["explore", space, "--params", "bx,tile", "--train", first, "--train", second, "--json", "--budget", "50"]
    once = run_json(capsys, argv)
    for again in (f"{tmp_path}/./first.csv", str(tmp_path / "copy.csv")):
        twice = run_json(capsys, [*argv, "--train", again])
        assert (twice["order"], twice["transfer_evals_to_90"]) == (once["order"], once["transfer_evals_to_90"])
    assert main([*argv, "--train", str(tmp_path / "copy.csv")]) == 0
    assert f"first.csv holds the same measurements as {tmp_path / 'copy.csv'} " in capsys.readouterr().err
    assert main([*argv, "--train", f"{tmp_path}/./first.csv"]) == 0  # one file, read once: no copy to speak of
    assert "holds the same measurements" not in capsys.readouterr().err


def test_explores_order_gives_each_setting_as_the_cache_does(tmp_path, capsys):
    """A parameter of floats 0.5, 1.0, 2.0 came back as 0.5, 1, 2, and a null setting as the text "None":
    the order's settings are the cache's (an integer column of floats, as a table of several kernels
    makes it, stays whole numbers)."""
    entries = {}
    for i, (bs, scale, opt) in enumerate((bs, scale, opt) for bs in (32, 64) for scale in (0.5, 1.0, 2.0)
                                         for opt in (None, 3)):
        entries[f"{bs},{scale},{opt}"] = {"bs": bs, "scale": scale, "opt": opt, "time": 1.0 + 0.1 * i}
    (tmp_path / "c.json").write_text(json.dumps({
        "device_name": "NVIDIA A100-PCIE-40GB", "kernel_name": "k", "problem_size": 1000,
        "tune_params_keys": ["bs", "scale", "opt"], "objective": "time", "cache": entries}))
    order = run_json(capsys, ["explore", str(tmp_path / "c.json"), "--budget", "12", "--json", "--no-progress"])["order"]
    assert len(order) > 2 and {(e["bs"], e["scale"], e["opt"]) for e in order} <= {
        (bs, scale, opt) for bs in (32, 64) for scale in (0.5, 1.0, 2.0) for opt in (None, 3)}
    assert all(type(e["scale"]) is float and type(e["bs"]) is int for e in order)
    table = pd.DataFrame({"bx": [32.0, 64.0, np.nan], "time_ms": [1.0, 0.5, 0.7], "kernel": ["k", "k", "other"]})
    table.to_csv(tmp_path / "t.csv", index=False)
    order = run_json(capsys, ["explore", str(tmp_path / "t.csv"), "--kernel", "k", "--params", "bx", "--json",
                              "--no-progress"])["order"]
    assert sorted(e["bx"] for e in order) == [32, 64] and all(type(e["bx"]) is int for e in order)


def test_a_caches_whole_float_settings_come_back_as_floats_to_paste_back(tmp_path, capsys):
    """A cache of tune_params scale=[1.0, 2.0] (keys '32,1.0'): explore gave scale 1 and 2 (no fraction in
    the parameter), which Kernel Tuner keys and compiles as another setting; --json and the table give
    1.0 and 2.0 now, while a table's whole floats (an integer column) stay whole numbers (tested above)."""
    entries = {f"{bs},{scale}": {"bs": bs, "scale": scale, "time": 1.0 + 0.1 * i}
               for i, (bs, scale) in enumerate((bs, scale) for bs in (32, 64) for scale in (1.0, 2.0))}
    (tmp_path / "c.json").write_text(json.dumps({
        "device_name": "NVIDIA A100-PCIE-40GB", "kernel_name": "k", "problem_size": 1000,
        "tune_params_keys": ["bs", "scale"], "tune_params": {"bs": [32, 64], "scale": [1.0, 2.0]},
        "objective": "time", "cache": entries}))
    argv = ["explore", str(tmp_path / "c.json"), "--no-progress"]
    order = run_json(capsys, [*argv, "--json"])["order"]
    assert {f"{e['bs']},{e['scale']}" for e in order} <= entries.keys()
    assert all(type(e["scale"]) is float and type(e["bs"]) is int for e in order)
    assert main(argv) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if re.match(r"│ \d+ +│", line)]
    assert rows and all(re.match(r"│ \d+ +│ (32|64) +│ (1|2)\.0 +│", line) for line in rows), rows


@pytest.mark.parametrize("command", ["explore", "ask"])
@pytest.mark.parametrize("blank", ["", " "])
def test_a_blank_target_is_refused_not_read_as_the_default_column(command, blank, tmp_path, capsys):
    """explore --target "$COL" with the variable unset explored the default time column, saying nothing."""
    space = write_space(tmp_path / "space.csv", (7, 4))
    assert main([command, space, "--params", "bx,tile", "--target", blank, "--json"]) == 2
    captured = capsys.readouterr()
    assert "--target is empty; name the time column, or leave --target out for the default" in captured.err
    assert captured.out == ""
