"""``gpuperf advise``: JSON suggestions for a kernel or a profiled launch, clear errors otherwise."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from gpuperf.cli import main
from gpuperf.decisions.profile import profile_features

KEYS = {"optimization", "predicted_speedup", "confidence", "explanation", "apply"}

# A small database of the matvec-measured coalescing and shared-memory pairs, under new names.
ENTRY = '''
name = "{name}"
title = "t"
description = "d"
when_it_helps = "helps in tests"
{condition}
[example]
before = "b"
after = "a"
[apply]
kind = "source"
summary = "{summary}"
[[pairs]]
dataset = "matvec_bsp"
kernel = "{before}"
after_kernel = "{after}"
features = "amaris_matvec"
'''


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    folder = tmp_path_factory.mktemp("optimizations")
    for name, before, after, condition in (
        ("t_coalesce", "MAU", "MAC", 'applies_when = "cache_lines_per_warp_access > 3"'),
        ("t_shared", "MMGU", "MMSU", ""),
    ):
        (folder / f"{name}.toml").write_text(
            ENTRY.format(name=name, before=before, after=after, condition=condition, summary=f"do {name}"))
    return folder


def run_json(capsys, args):
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)


def only(database):
    return ["--optimizations", str(database), "--only", "t_coalesce", "--only", "t_shared"]


def test_kernel_json(capsys, database):
    # row_sum: each work-item walks its own row, so a warp touches 32 rows (uncoalesced, like MAU)
    advice = run_json(capsys, ["advise", "row_sum", "-p", "n=1024", "-p", "m=1024", "--gpu", "GTX 970",
                               "--threshold", "1.05", "--min-confidence", "0", "--json", *only(database)])
    assert set(advice) == {"subject", "suggestions", "below_threshold", "not_suggested", "notes"}
    assert advice["subject"] == "row_sum at n=1024, m=1024 on GTX 970"
    out = advice["suggestions"]
    assert isinstance(out, list) and out
    assert all(s["predicted_speedup"] < 1.05 for s in advice["below_threshold"])
    assert len(out) + len(advice["below_threshold"]) + len(advice["not_suggested"]) == 2
    for suggestion in out:
        assert KEYS <= set(suggestion)
        assert suggestion["predicted_speedup"] >= 1.05
        assert 0 <= suggestion["confidence"] <= 1
        assert suggestion["explanation"]["nearest_pairs"][0]["gpu"]
        assert suggestion["apply"]["summary"] == f"do {suggestion['optimization']}"
    assert "t_coalesce" in {s["optimization"] for s in out}


def test_threshold_filters(capsys, database):
    args = ["advise", "row_sum", "-p", "n=1024", "-p", "m=1024", "--gpu", "GTX 970", "--json", "--min-confidence", "0",
            *only(database)]
    everything = run_json(capsys, [*args, "--threshold", "0.0001"])["suggestions"]
    assert len(everything) == 2
    cut = min(s["predicted_speedup"] for s in everything) + 1e-3
    above = run_json(capsys, [*args, "--threshold", str(cut)])
    assert [s["optimization"] for s in above["suggestions"]] == [s["optimization"] for s in everything
                                                                 if s["predicted_speedup"] >= cut]
    assert [s["optimization"] for s in above["below_threshold"]] == [s["optimization"] for s in everything
                                                                     if s["predicted_speedup"] < cut]


def test_min_confidence_abstains(capsys, database):
    args = ["advise", "row_sum", "-p", "n=1024", "-p", "m=1024", "--gpu", "GTX 970", "--threshold", "0.0001",
            *only(database)]
    everything = run_json(capsys, [*args, "--json", "--min-confidence", "0"])["suggestions"]
    cut = max(s["confidence"] for s in everything) + 0.001  # JSON rounds to 3 decimals
    unsure = run_json(capsys, [*args, "--json", "--min-confidence", str(cut)])
    assert unsure["suggestions"] == [] and len(unsure["not_suggested"]) == 2
    assert all(n["reason"].startswith("abstained: predicted") for n in unsure["not_suggested"])
    assert main([*args, "--min-confidence", str(min(cut, 1.0))]) == 0
    printed = capsys.readouterr().out
    assert "no optimization is predicted" in printed and "abstained: predicted" in printed and "below the threshold" not in printed  # above 0.0001, unsure
    assert main([*args, "--min-confidence", "1.5"]) == 2
    assert "min_confidence (--min-confidence) must lie in [0, 1]" in capsys.readouterr().err


def test_by_default_the_advisor_abstains_where_the_sign_is_more_likely_wrong(capsys, database):
    args = ["advise", "row_sum", "-p", "n=1024", "-p", "m=1024", "--gpu", "GTX 970", "--threshold", "0.0001", "--json",
            *only(database)]
    every = run_json(capsys, [*args, "--min-confidence", "0"])["suggestions"]
    default = run_json(capsys, args)
    assert [s for s in every if s["confidence"] < 0.5]  # the case the default guards against occurs here
    assert [s["optimization"] for s in default["suggestions"]] == [s["optimization"] for s in every
                                                                   if s["confidence"] >= 0.5]
    abstained = {n["optimization"] for n in default["not_suggested"] if n["reason"].startswith("abstained")}
    assert abstained == {s["optimization"] for s in every if s["confidence"] < 0.5}


def test_coalesced_kernel_gets_no_coalescing_advice(capsys, database):
    out = run_json(capsys, ["advise", "column_sum", "-p", "n=1024", "-p", "m=1024", "--gpu", "GTX 970",
                            "--threshold", "0.0001", "--json", *only(database)])
    assert "t_coalesce" not in {s["optimization"] for s in out["suggestions"]}
    assert {"optimization": "t_coalesce", "reason": "does not apply: cache_lines_per_warp_access > 3 is false "
            "for this kernel"} in out["not_suggested"]
    assert main(["advise", "column_sum", "-p", "n=1024", "-p", "m=1024", "--threshold", "0.0001", *only(database)]) == 0
    assert "does not apply" in capsys.readouterr().out


PROFILE = {"kernel": "k", "gpu": "Tesla K40", "grid.x": 64, "grid.y": 64, "block.x": 16, "block.y": 16,
           "gld_inst_32bit": 2 * 1024 * 1024, "gst_inst_32bit": 1024 * 1024, "shared_load": 0, "shared_store": 0,
           "floating_point_operations.single_precision.": 1024 * 1024, "global_load_transactions_per_request": 16,
           "static.smem": 0}


def test_profile_features_per_thread():
    features = profile_features(PROFILE)
    assert features["threads"] == 1024 * 1024 and features["work_group_size"] == 256
    assert features["global_loads_per_thread"] == 2 and features["global_stores_per_thread"] == 1
    assert features["flops_per_thread"] == 1 and features["sectors_per_warp_access"] == 16
    assert features["local_loads_per_thread"] == 0 and features["arithmetic_intensity"] == pytest.approx(1 / 12)
    assert features["cache_lines_per_warp_access"] != features["cache_lines_per_warp_access"]  # unknown: NaN
    warp_counts = profile_features({**{k: v for k, v in PROFILE.items() if "inst_32bit" not in k},
                                    "gld_request": 2 * 1024 * 1024 / 32})
    assert warp_counts["global_loads_per_thread"] == 2


def test_a_double_precision_profile_counts_its_64_bit_loads_and_flops():
    """A launch of doubles read as no loads, no stores and no flops (the 32-bit and single-precision
    counters were 0 and came first), and its coalesced requests of 8 sectors as 2x the fewest."""
    doubles = {**PROFILE, "gld_inst_32bit": 0, "gld_inst_64bit": 2 * 1024 * 1024, "gst_inst_32bit": 0,
               "gst_inst_64bit": 1024 * 1024, "floating_point_operations.single_precision.": 0,
               "floating_point_operations.double_precision.": 3 * 1024 * 1024, "global_load_transactions_per_request": 8}
    features = profile_features(doubles)
    assert features["global_loads_per_thread"] == 2 and features["global_stores_per_thread"] == 1
    assert features["flops_per_thread"] == 3 and features["max_sectors_over_fewest"] == 1  # 8 sectors / 8 bytes
    assert profile_features(PROFILE)["max_sectors_over_fewest"] == 16 / 4


@pytest.mark.parametrize(("change", "message"), [
    ({"gld_inst_32bit": -5}, "column gld_inst_32bit: -5 is not a count"),
    ({"gld_inst_32bit": float("inf")}, "column gld_inst_32bit: inf is not a count"),
    ({"block.x": 1e12}, "no GPU runs blocks of more than 1024"),
])
def test_profile_counters_are_counts(change, message):
    from gpuperf.errors import GpuperfError

    with pytest.raises(GpuperfError, match=message):
        profile_features({**PROFILE, **change})


def test_profile_json(tmp_path, capsys, database):
    path = tmp_path / "row.csv"
    pd.DataFrame([PROFILE, {**PROFILE, "block.x": 32}]).to_csv(path, index=False)
    out = run_json(capsys, ["advise", "--profile", str(path), "--row", "2", "--threshold", "0.0001", "--json",
                            "--min-confidence", "0", *only(database)])["suggestions"]
    assert {s["optimization"] for s in out} == {"t_coalesce", "t_shared"}
    assert all(KEYS <= set(s) for s in out)


def test_profile_advice_names_the_features_its_counters_do_not_give(tmp_path, capsys, database):
    """Before, a profile with geometry and few counters got advice with no word that the models
    imputed the rest."""
    path = tmp_path / "row.csv"
    few = {k: v for k, v in PROFILE.items() if k not in ("shared_load", "shared_store", "static.smem")}
    pd.DataFrame([PROFILE, few]).to_csv(path, index=False)
    args = ["advise", "--profile", str(path), "--threshold", "0.0001", "--json", "--min-confidence", "0",
            *only(database)]
    complete = run_json(capsys, [*args, "--row", "1"])["suggestions"]
    assert complete and not any("no counter" in s["explanation"]["summary"] for s in complete)
    partial = run_json(capsys, [*args, "--row", "2"])["suggestions"]
    assert partial and all("the profile has no counter for local_loads_per_thread, local_stores_per_thread, "
                           "local_memory_bytes: imputed from the training pairs" in s["explanation"]["summary"]
                           for s in partial)


def test_advice_names_what_it_advises_and_the_threshold(tmp_path, capsys, database):
    args = ["advise", "row_sum", "-p", "n=1024", "-p", "m=1024", "--gpu", "GTX 970", "--min-confidence", "0",
            *only(database)]
    assert main([*args, "--threshold", "1000"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("Advice for row_sum at n=1024, m=1024 on GTX 970\n")
    assert "below the threshold 1000x" in printed
    path = tmp_path / "row.csv"
    pd.DataFrame([{**PROFILE, "kernel": "histogram", "gpu": "GTX 970"}]).to_csv(path, index=False)
    assert main(["advise", "--profile", str(path), "--min-confidence", "0", *only(database)]) == 0
    assert capsys.readouterr().out.startswith(f"Advice for {path}, row 1 (histogram, GTX 970)\n")
    # A variant's [..] is part of its name, not console markup.
    variant = "stencil2d[local_x=64,outputs_y=4]"
    assert main(["advise", variant, "-p", "n=1024", "-p", "m=1024", "--gpu", "GTX 970", "--min-confidence", "0",
                 *only(database)]) == 0
    assert capsys.readouterr().out.startswith(
        "Advice for stencil2d[local_x=64,local_y=16,outputs_y=4,prefetch=0,unroll=1] at n=1024, m=1024 on GTX 970\n")


def test_the_advice_header_names_the_gpu_a_profile_row_gives_in_its_device_column(tmp_path, capsys, database):
    path = tmp_path / "row.csv"
    for row in ({**PROFILE, "gpu": None, "device": "NVIDIA H100 80GB HBM3"},
                {**{k: v for k, v in PROFILE.items() if k != "gpu"}, "device": "NVIDIA H100 80GB HBM3"}):
        pd.DataFrame([row]).to_csv(path, index=False)
        advice = run_json(capsys, ["advise", "--profile", str(path), "--min-confidence", "0", "--json", *only(database)])
        assert advice["subject"] == f"{path}, row 1 (k, H100 SXM)"


def test_a_zero_y_or_z_extent_in_a_profile_row_is_refused_as_a_zero_x_is():
    from gpuperf.errors import GpuperfError

    for column in ("grid.x", "grid.y", "block.y", "block.z"):
        with pytest.raises(GpuperfError, match=f"row 1: {column}=0: grid and block sizes must be positive"
                           if column != "grid.x" else "row 1: grid and block sizes must be positive"):
            profile_features({**PROFILE, column: 0}, "row 1")
    assert profile_features({**PROFILE, "block.z": None})["work_group_size"] == 256  # empty: 1


def test_an_optimization_named_twice_in_only_is_assessed_once(capsys, database):
    args = ["advise", "row_sum", "-p", "n=1024", "-p", "m=1024", "--gpu", "GTX 970", "--threshold", "0.0001",
            "--min-confidence", "0", "--json", "--optimizations", str(database)]
    advice = run_json(capsys, [*args, "--only", "t_shared", "--only", "t_shared"])
    assert [s["optimization"] for s in advice["suggestions"]] == ["t_shared"]
    listed = run_json(capsys, [*args, "--only", "t_shared, t_coalesce"])  # as docs/decisions.md writes it
    assert {s["optimization"] for s in listed["suggestions"] + listed["below_threshold"]} <= {"t_shared", "t_coalesce"}
    assert "t_coalesce" in json.dumps(listed)


def test_only_names_an_entry_in_either_unicode_normal_form(capsys, tmp_path):
    """An entry named 't_sharé' (NFC, as the database keys it) is named by --only in NFD too, as a
    macOS file name or another keyboard gives it, and get_optimization alike."""
    import unicodedata

    from gpuperf.decisions.optimizations import get_optimization

    (tmp_path / "t_sharé.toml").write_text(ENTRY.format(name="t_sharé", before="MMGU", after="MMSU", condition="",
                                                        summary="do it"), encoding="utf-8")
    decomposed = unicodedata.normalize("NFD", "t_sharé")
    assert decomposed != "t_sharé" and get_optimization(decomposed, [tmp_path]).name == "t_sharé"
    advice = run_json(capsys, ["advise", "row_sum", "-p", "n=1024", "-p", "m=1024", "--gpu", "GTX 970", "--threshold",
                               "0.0001", "--min-confidence", "0", "--json", "--optimizations", str(tmp_path),
                               "--only", decomposed])
    assert {s["optimization"] for s in advice["suggestions"] + advice["below_threshold"]} == {"t_sharé"}


def test_a_gpu_given_for_a_profile_row_that_names_another_is_refused(tmp_path, capsys, database):
    """The counters are the named GPU's: advising them for another would mix two GPUs; --gpu names
    the GPU of a row that names one gpuperf does not describe, and the header says which it used."""
    path = tmp_path / "row.csv"
    pd.DataFrame([{**PROFILE, "kernel": "histogram", "gpu": "GTX 970"}]).to_csv(path, index=False)
    assert main(["advise", "--profile", str(path), "--gpu", "H100", *only(database)]) == 2
    assert (f"--gpu H100: {path}: row 1 was profiled on the GTX 970, and its counters are that GPU's"
            in capsys.readouterr().err)
    assert main(["advise", "--profile", str(path), "--gpu", "gtx970", "--min-confidence", "0", *only(database)]) == 0
    capsys.readouterr()
    pd.DataFrame([{**PROFILE, "kernel": "histogram", "gpu": "Lab GPU 7"}]).to_csv(path, index=False)
    assert main(["advise", "--profile", str(path), "--gpu", "GTX 970", "--min-confidence", "0", *only(database)]) == 0
    assert capsys.readouterr().out.startswith(f"Advice for {path}, row 1 (histogram, GTX 970)\n")


def test_profile_of_a_bundled_table_by_its_name(tmp_path, capsys, database):
    """A bundled table is usable by name wherever a table is: --profile rodinia_nvprof --row N
    advises on its row N as on the same row written to a file."""
    from gpuperf.datasets import load_dataset

    path = tmp_path / "rodinia.csv"
    load_dataset("rodinia_nvprof").head(3).to_csv(path, index=False)
    args = ["--row", "3", "--threshold", "0.0001", "--json", "--min-confidence", "0", *only(database)]
    by_name = run_json(capsys, ["advise", "--profile", "rodinia_nvprof", *args])
    by_path = run_json(capsys, ["advise", "--profile", str(path), *args])
    assert by_name.pop("subject").startswith("rodinia_nvprof, row 3 (") and by_path.pop("subject").startswith(
        f"{path}, row 3 (")
    assert by_name == by_path
    assert main(["advise", "--profile", "schoonhoven_spaces", *only(database)]) == 2
    assert "schoonhoven_spaces: no launch geometry (grid.x, block.x) in this bundled table" in capsys.readouterr().err


def test_profile_of_an_imported_nvprof_summary_says_it_has_no_launch_geometry(tmp_path, capsys, database):
    """import nvprof SUMMARY -> advise --profile: a summary has no grid or block sizes; the error says
    which import has them instead of reading the imported table as a raw nvprof file again."""
    from pathlib import Path

    summary = Path(__file__).parent / "data" / "nvprof_summary.csv"
    out = tmp_path / "summary.csv"
    assert main(["import", "nvprof", str(summary), "--gpu", "V100", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["advise", "--profile", str(out), *only(database)]) == 2
    err = capsys.readouterr().err
    assert "summary.csv: no launch geometry (grid.x, block.x) in this table; import an nvprof GPU trace" in err
    assert "Kernel Name" not in err


@pytest.mark.parametrize("name, importer, gpu", [("nvprof_gpu_trace.csv", "nvprof", None),
                                                ("ncu_raw.csv", "ncu", None), ("ncu_details.csv", "ncu", "H100")])
def test_profile_straight_from_the_profiler_is_imported_on_the_fly(tmp_path, capsys, database, name, importer, gpu):
    """advise --profile on the profiler's own CSV ("==" log lines and all) advises as on the table
    gpuperf import writes from it; --gpu names the GPU where the profile does not."""
    from pathlib import Path

    raw = Path(__file__).parent / "data" / name
    imported = tmp_path / "imported.csv"
    named = ["--gpu", gpu] if gpu else []
    assert main(["import", importer, str(raw), "--out", str(imported), *named]) == 0
    capsys.readouterr()
    args = ["--threshold", "0.0001", "--json", "--min-confidence", "0", *named, *only(database)]
    from_raw = run_json(capsys, ["advise", "--profile", str(raw), *args])
    from_table = run_json(capsys, ["advise", "--profile", str(imported), *args])
    assert from_raw.pop("subject").startswith(f"{raw}, row 1") and from_table.pop("subject").startswith(
        f"{imported}, row 1")
    assert from_raw == from_table
    parquet = tmp_path / "imported.parquet"  # a table as Parquet: it was taken for a profiler's CSV, not UTF-8
    pd.read_csv(imported).to_parquet(parquet)
    from_parquet = run_json(capsys, ["advise", "--profile", str(parquet), *args])
    assert from_parquet.pop("subject").startswith(f"{parquet}, row 1") and from_parquet == from_table
    if gpu:
        assert main(["advise", "--profile", str(raw), *only(database)]) == 2
        err = capsys.readouterr().err
        assert f"{name}: line 6: the profile names no GPU" in err and "(--gpu)" in err


@pytest.mark.parametrize("args, message", [
    (["advise"], "give a KERNEL or --profile"),
    (["advise", "row_sum", "--only", "t_nothing"], "unknown optimization 't_nothing'"),
    (["advise", "row_sum", "--gpu", "GTX 970", "--device", "opencl:0"], "either --gpu or --device"),
    (["advise", "--profile", "missing.csv"], "missing.csv' does not exist"),
])
def test_errors(capsys, database, args, message):
    assert main([*args, "--optimizations", str(database)]) == 2
    assert message in capsys.readouterr().err


def test_optimizations_list(capsys, database):
    out = run_json(capsys, ["optimizations", "--optimizations", str(database), "--json"])
    names = {row["name"] for row in out}
    assert {"t_coalesce", "t_shared", "coalescing", "local_memory_prefetch"} <= names


@pytest.mark.opencl
def test_device_json_applies_the_space_parameter(capsys):
    spec = "stencil2d[local_x=16,local_y=4,outputs_y=4,prefetch=0,unroll=1]"
    out = run_json(capsys, ["advise", spec, "-p", "n=512", "-p", "m=512", "--device", "opencl:0",
                            "--only", "unrolling", "--threshold", "0.0001", "--json"])["suggestions"]
    assert [s["optimization"] for s in out] == ["unrolling"]
    assert out[0]["apply"]["variant"] == spec.replace("unroll=1", "unroll=4")
    nearest = out[0]["explanation"]["nearest_pairs"]
    assert all(p["change"] in ("unroll: 1 -> 2", "unroll: 1 -> 4") for p in nearest)


def test_an_optimization_trained_on_a_device_only_says_how_to_get_its_advice(capsys, tmp_path):
    from gpuperf.decisions.optimizations import builtin_folder

    # unrolling without its GPU pairs (the H200's, then the H100's): trained on the pocl pairs alone
    text = (builtin_folder() / "unrolling.toml").read_text()
    (tmp_path / "unrolling.toml").write_text(text[: text.index("# The same before/after variants measured on an NVIDIA H200")])
    assert "stencil_spaces_h100" not in (tmp_path / "unrolling.toml").read_text()
    out = run_json(capsys, ["advise", "stencil2d[local_x=16,local_y=4,outputs_y=4,prefetch=1,unroll=1]", "-p", "n=512",
                            "-p", "m=512", "--only", "unrolling", "--threshold", "0.0001", "--json",
                            "--min-confidence", "0", "--optimizations", str(tmp_path)])
    (entry,) = out["not_suggested"]
    assert entry["optimization"] == "unrolling" and entry["reason"].startswith(
        "not assessed: its pairs were measured on a device (")
    assert entry["reason"].endswith("not on GPUs; advise for a device with --device")


def test_unrolling_on_a_gpu_is_advised_from_the_gpu_stencil_pairs(capsys):
    """The H100's and H200's unroll pairs (H100: speedups 0.999 to 1.34, median 1.003; H200: median 1.000)
    give unrolling a GPU model: assessed for a GPU, its nearest pairs stencil unroll pairs measured on those
    GPUs, its prediction near 1 and below the default threshold."""
    spec = "stencil2d[local_x=16,local_y=4,outputs_y=4,prefetch=0,unroll=1]"
    out = run_json(capsys, ["advise", spec, "-p", "n=4096", "-p", "m=4096", "--gpu", "H100 SXM",
                            "--only", "unrolling", "--threshold", "0.0001", "--min-confidence", "0", "--json"])
    (suggestion,) = out["suggestions"]
    nearest = suggestion["explanation"]["nearest_pairs"]
    assert nearest and all(p["gpu"] in ("H100 SXM", "H200") and p["change"].startswith("unroll: ") for p in nearest)
    assert 0.9 < suggestion["predicted_speedup"] < 1.05
    assert suggestion["apply"]["variant"] == spec.replace("unroll=1", "unroll=4")


@pytest.mark.opencl
def test_an_optimization_trained_on_gpus_only_says_so_when_asked_for_a_device(capsys):
    out = run_json(capsys, ["advise", "stencil2d[local_x=16,local_y=4,outputs_y=4,prefetch=1,unroll=1]", "-p", "n=512",
                            "-p", "m=512", "--device", "opencl:0", "--only", "padding", "--json"])
    (entry,) = out["not_suggested"]
    assert (entry["optimization"], entry["reason"]) == (
        "padding", "not assessed: its pairs were measured on GPUs only, none on a device; advise for a GPU with --gpu")


def test_a_file_named_as_a_bundled_table_is_read_as_the_file(tmp_path, monkeypatch, capsys, database):
    monkeypatch.chdir(tmp_path)
    pd.DataFrame([PROFILE]).to_csv(tmp_path / "rodinia_nvprof", index=False)
    assert main(["advise", "--profile", "rodinia_nvprof", "--min-confidence", "0", *only(database)]) == 0
    assert capsys.readouterr().out.startswith("Advice for rodinia_nvprof, row 1 (k, Tesla K40)\n")


def test_a_profilers_csv_without_its_log_lines_is_imported_too(tmp_path, capsys, database):
    """ncu --csv --log-file FILE writes the CSV without its ==PROF== lines: it reads as a plain table
    with no grid.x column, and is advised on as the profiler's own file is."""
    from pathlib import Path

    raw = Path(__file__).parent / "data" / "ncu_raw.csv"
    bare = tmp_path / "ncu_bare.csv"
    bare.write_text("".join(line for line in raw.read_text().splitlines(keepends=True) if not line.startswith("==")))
    args = ["--threshold", "0.0001", "--json", "--min-confidence", "0", *only(database)]
    from_bare = run_json(capsys, ["advise", "--profile", str(bare), *args])
    from_raw = run_json(capsys, ["advise", "--profile", str(raw), *args])
    assert from_bare.pop("subject") == f"{bare}, row 1 (matmul_tiled<16>, RTX A4000)"
    assert from_raw.pop("subject") == f"{raw}, row 1 (matmul_tiled<16>, RTX A4000)"
    assert from_bare == from_raw


def test_an_ncu_raw_page_with_only_whole_launch_sizes_is_advised_on(tmp_path, capsys, database):
    """An older raw page has no Block Size and Grid Size columns '(x, y, z)', only the counts
    launch__block_size and launch__grid_size: the advice is that of the page with both (the counts are
    the products of x, y and z); it was refused as having no launch geometry."""
    import csv
    from pathlib import Path

    raw = Path(__file__).parent / "data" / "ncu_raw.csv"
    lines = raw.read_text().splitlines(keepends=True)
    log, table = [line for line in lines if line.startswith("==")], [line for line in lines if not line.startswith("==")]
    rows = list(csv.reader(table))

    def without(columns: tuple[str, ...], name: str) -> Path:
        keep = [i for i, column in enumerate(rows[0]) if column not in columns]
        path = tmp_path / name
        with path.open("w", newline="") as handle:
            handle.writelines(log)
            csv.writer(handle, quoting=csv.QUOTE_ALL).writerows([[row[i] for i in keep] for row in rows])
        return path

    counts = without(("Block Size", "Grid Size"), "ncu_counts.csv")
    args = ["--threshold", "0.0001", "--json", "--min-confidence", "0", *only(database)]
    from_counts = run_json(capsys, ["advise", "--profile", str(counts), *args])
    from_raw = run_json(capsys, ["advise", "--profile", str(raw), *args])
    assert from_counts.pop("subject") == f"{counts}, row 1 (matmul_tiled<16>, RTX A4000)"
    from_raw.pop("subject")
    assert from_counts == from_raw
    none = without(("Block Size", "Grid Size", "launch__block_size", "launch__grid_size"), "ncu_none.csv")
    assert main(["advise", "--profile", str(none), *only(database)]) == 2
    assert ("ncu_none.csv: no launch geometry in this profile (Grid Size and Block Size, or launch__grid_size and "
            "launch__block_size): profile with Nsight Compute's LaunchStats section") in capsys.readouterr().err


@pytest.mark.parametrize("name, gpu", [("nvprof_summary.csv", ["--gpu", "V100"]), ("nvprof_summary.csv", []),
                                       ("nvprof_metrics.csv", [])])
def test_a_profile_straight_from_nvprof_without_launch_geometry_says_so(capsys, database, name, gpu):
    """An nvprof summary or metrics CSV imports, but has no grid or block sizes to advise on: said
    at once, not after asking for a --gpu that cannot help."""
    from pathlib import Path

    path = Path(__file__).parent / "data" / name
    assert main(["advise", "--profile", str(path), *gpu, *only(database)]) == 2
    err = capsys.readouterr().err
    assert f"{name}: no launch geometry (grid.x, block.x) in this profile; an nvprof summary or metrics CSV has none" \
        in err


def test_per_launch_nvprof_metrics_without_geometry_say_to_join_them_to_a_trace(capsys, database):
    """--print-gpu-trace --metrics writes launches without grid or block sizes: advise says to import them beside
    the GPU trace, not to profile with --print-gpu-trace, which they were."""
    from pathlib import Path

    path = Path(__file__).parent / "data" / "nvprof_metric_trace.csv"
    assert main(["advise", "--profile", str(path), *only(database)]) == 2
    err = capsys.readouterr().err
    assert (f"{path}: no launch geometry (grid.x, block.x) in nvprof's per-launch metrics; import them beside a GPU "
            f"trace of the same program (gpuperf import nvprof TRACE.csv --metrics {path} --out LAUNCHES.csv)") in err
    assert "overflowed" not in err  # said before reading the rows


def test_an_ncu_csv_exported_without_its_log_lines_gets_the_ncu_importers_error(tmp_path, capsys, database):
    """ncu --import REPORT --csv writes no ==PROF== lines: the file is still Nsight Compute's, and its
    importer's error (no GPU named) is the one to show, not "not nvprof's"."""
    from pathlib import Path

    details = Path(__file__).parent / "data" / "ncu_details.csv"
    bare = tmp_path / "details.csv"
    bare.write_text("".join(line for line in details.read_text().splitlines(keepends=True)
                            if not line.startswith("==PROF==")))
    assert main(["advise", "--profile", str(bare), *only(database)]) == 2
    err = capsys.readouterr().err
    assert "the profile names no GPU" in err and "not nvprof's" not in err


def test_a_profile_advised_for_a_gpu_named_by_its_model_names_the_board_it_is_taken_for(capsys, database):
    """--gpu H100 gave the subject '(saxpy, H100)' and no note, where kernel advice says 'H100 SXM' and
    import notes the PCIe board; --row 0 did not say rows count from 1."""
    from pathlib import Path

    details = str(Path(__file__).parent / "data" / "ncu_details.csv")
    out = run_json(capsys, ["advise", "--profile", details, "--gpu", "H100", "--json", *only(database)])
    assert out["subject"].endswith("(saxpy, H100 SXM)")
    assert main(["advise", "--profile", details, "--gpu", "H100", "--json", *only(database)]) == 0
    assert "note: 'H100' is taken as the H100 SXM" in capsys.readouterr().err
    assert main(["advise", "--profile", details, "--gpu", "H100", "--row", "0", *only(database)]) == 2
    err = capsys.readouterr().err
    assert err.endswith("row 0 does not exist (the table has 2 rows, counted from 1)\n") and err.count("\n") == 1


def test_a_stencil_change_measured_on_the_h100_is_advised_for_the_h200_from_that_measurement(capsys):
    """larger_work_groups (local_x: 16 -> 32) of this jacobi2d_5pt variant at 4096 x 4096 was measured on
    the H100: advised for the H200, that speedup is the prediction (checked against the other GPUs'
    pairs measured on several GPUs) and the explanation says where it comes from; at 2048 x 2048,
    measured nowhere, the models predict."""
    from gpuperf.decisions.optimizations import load_optimizations
    from gpuperf.decisions.pairs import training_pairs

    pairs = training_pairs([load_optimizations()["larger_work_groups"]])
    measured = pairs[pairs["kernel"].eq("jacobi2d_5pt") & pairs["change"].eq("local_x: 16 -> 32")
                     & pairs["configuration"].eq("n=4096,m=4096,local_y=2,outputs_y=8,prefetch=1,unroll=1")]
    spec = "jacobi2d_5pt[local_x=16,local_y=2,outputs_y=8,prefetch=1,unroll=1]"
    args = ["advise", spec, "--gpu", "H200", "--only", "larger_work_groups", "--threshold", "0.0001", "--json",
            "--min-confidence", "0"]
    (suggestion,) = run_json(capsys, [*args, "-p", "n=4096", "-p", "m=4096"])["suggestions"]
    assert suggestion["predicted_speedup"] == pytest.approx(float(measured["speedup"].iloc[0]), rel=1e-3)
    assert suggestion["explanation"]["measured_on"] == ["H100 SXM"]
    assert suggestion["explanation"]["summary"].startswith("this very change of this kernel at these sizes")
    (elsewhere,) = run_json(capsys, [*args, "-p", "n=2048", "-p", "m=2048"])["suggestions"]
    assert elsewhere["explanation"]["measured_on"] == []


def test_a_profile_row_naming_an_unknown_gpu_is_refused_unless_one_is_given(tmp_path, capsys, database):
    """A row whose gpu gpuperf does not describe: one error naming the file, row, column and name (not
    advice with the GPU features silently imputed); --gpu names the GPU instead."""
    path = tmp_path / "row.csv"
    pd.DataFrame([PROFILE, {**PROFILE, "gpu": "FooGPU-9000"}]).to_csv(path, index=False)
    assert main(["advise", "--profile", str(path), "--row", "2", *only(database)]) == 2
    assert f"{path}: row 2: gpu 'FooGPU-9000' is not a GPU gpuperf describes" in capsys.readouterr().err
    assert main(["advise", "--profile", str(path), "--row", "2", "--gpu", "GTX 970", *only(database)]) == 0


def test_a_value_next_to_its_bound_prints_with_the_digits_that_tell_them_apart():
    from gpuperf.decisions.advisor import decimals_apart

    assert decimals_apart(1.0498, 1.05) == "1.0498"  # not "1.05x, below the threshold 1.05x"
    assert decimals_apart(0.4996, 0.5) == "0.4996"
    assert (decimals_apart(0.73, 1.05), decimals_apart(0.5, 0.5)) == ("0.73", "0.50")
    # above its bound but rounding below it (a suggestion at 1.2013 for --threshold 1.20133): more digits
    assert decimals_apart(1.2013329, 1.20133, 4) == "1.201333" and decimals_apart(1.2049, 1.2, 2) == "1.205"
    from gpuperf.decisions.advisor import Suggestion

    shown = Suggestion("o", "t", 1.2013329, 0.50004, {}, {}).to_dict(threshold=1.20133, min_confidence=0.5)
    assert (shown["predicted_speedup"], shown["confidence"]) == (1.201333, 0.50004)
    assert Suggestion("o", "t", 1.2013329, 0.50004, {}, {}).to_dict()["predicted_speedup"] == 1.2013


def test_gpu_names_the_advised_row_of_a_raw_profile_from_several_gpus(tmp_path, capsys, database):
    """--gpu is checked against the advised row, as for an imported table, not against every row."""
    path = tmp_path / "two.csv"
    path.write_text(
        "==1== NVPROF is profiling process 1, command: ./app\n"
        '"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z","Registers Per Thread",'
        '"Static SMem","Dynamic SMem","Device","Context","Stream","Name","Correlation_ID"\n'
        "ms,us,,,,,,,,B,B,,,,,\n"
        '1.0,2.5,4096,1,1,256,1,1,16,0,0,"Tesla T4 (0)","1","7","vecAdd(float*, float*, float*, int)",1\n'
        '2.0,3.5,4096,1,1,256,1,1,16,0,0,"Tesla K40c (1)","2","14","vecAdd(float*, float*, float*, int)",2\n')
    args = ["advise", "--profile", str(path), "--min-confidence", "0", *only(database)]  # a T4: not described
    assert main([*args, "--row", "1", "--gpu", "V100"]) == 0
    assert capsys.readouterr().out.startswith(f"Advice for {path}, row 1 (vecAdd, ")
    assert main([*args, "--row", "2", "--gpu", "V100"]) == 2
    assert "row 2 was profiled on the" in capsys.readouterr().err


def test_an_entry_naming_a_parameter_its_space_lacks_says_so(capsys, tmp_path):
    (tmp_path / "wide_y.toml").write_text('''name = "wide_y"
title = "Taller work-groups"
description = "Make work-groups taller along y."
when_it_helps = "When a work-group is short along y."
[example]
before = "dim3 block(16, 4);"
after = "dim3 block(16, 16);"
[apply]
kind = "loopy"
summary = "larger local_y (space parameter local_y: 4 -> 16)"
space_parameter = { name = "local_yy", before = 4, after = 16 }
[[pairs]]
dataset = "advise_pairs_h200.csv.gz"
kernel = ["stencil2d", "jacobi2d_9pt", "hotspot2d", "gradient"]
parameter = "local_y"
before = 4
after = 16
features = "columns"
configuration = ["n", "m", "local_x", "local_y", "outputs_y", "prefetch", "unroll"]
inputs = ["n", "m"]
''')
    out = run_json(capsys, ["advise", "stencil2d[local_x=16,local_y=4,outputs_y=1,prefetch=0,unroll=1]", "-p", "n=4096",
                            "-p", "m=4096", "--gpu", "H200", "--only", "wide_y", "--min-confidence", "0", "--json",
                            "--optimizations", str(tmp_path)])
    (suggestion,) = out["suggestions"] + out["below_threshold"]
    assert "variant" not in suggestion["apply"]
    assert ("no variant to apply: apply.space_parameter.name 'local_yy' of wide_y is no parameter of the space "
            "stencil2d (local_x, local_y, outputs_y, prefetch, unroll)") in json.dumps(suggestion["explanation"])
    (note,) = out["notes"]  # whether the entry is suggested, below the threshold or abstained
    assert note.startswith(f"{tmp_path / 'wide_y.toml'}: no variant to apply: apply.space_parameter.name 'local_yy'")
    # the table view showed only "predicted 1.00x, below the threshold": the entry's mistake is a note on stderr too
    assert main(["advise", "stencil2d[local_x=16,local_y=4,outputs_y=1,prefetch=0,unroll=1]", "-p", "n=4096", "-p",
                 "m=4096", "--gpu", "H200", "--only", "wide_y", "--min-confidence", "0",
                 "--optimizations", str(tmp_path)]) == 0
    assert (f"note: {tmp_path / 'wide_y.toml'}: no variant to apply: apply.space_parameter.name 'local_yy'"
            in " ".join(capsys.readouterr().err.split()))


def test_the_subject_names_the_gpu_an_alias_stands_for_and_an_endless_threshold_is_refused(capsys, database):
    advice = run_json(capsys, ["advise", "row_sum", "-p", "n=1024", "-p", "m=1024", "--gpu", "A100",
                               "--min-confidence", "0", "--json", *only(database)])
    assert advice["subject"] == "row_sum at n=1024, m=1024 on A100 PCIe 40GB"  # not "on A100"
    # --json lists the note naming the board taken, as it lists every note printed on stderr: as the
    # others, without "note: "
    assert any(note.startswith("'A100' is taken as the A100 PCIe 40GB") for note in advice["notes"])
    assert not any(note.startswith("note: ") for note in advice["notes"])
    assert main(["advise", "row_sum", "-p", "n=1024", "-p", "m=1024", "--gpu", "GTX 970", "--threshold", "inf",
                 *only(database)]) == 2
    assert "threshold (--threshold) must be a positive, finite speedup, got inf" in capsys.readouterr().err


CLASH = '''
import loopy as lp
import numpy as np


def stencil2d():
    p = lp.make_kernel("{[i,j]: 0<=i<n and 0<=j<m}", "b[i,j] = 2*a[i,j]",
                       [lp.GlobalArg("a,b", np.float32, shape="n,m"), "..."],
                       assumptions="n >= 1 and m >= 1 and n mod 16 = 0 and m mod 16 = 0", name="scale2d",
                       lang_version=(2018, 2))
    p = lp.split_iname(p, "j", 16, outer_tag="g.0", inner_tag="l.0")
    return lp.split_iname(p, "i", 16, outer_tag="g.1", inner_tag="l.1")
'''


def test_a_users_kernel_named_like_a_catalog_space_is_none_of_its_variants(tmp_path):
    """A file's stencil2d() was advised the catalog stencil2d's variant, with that stencil's H200 pair
    quoted as "this very change of this kernel at these sizes"."""
    from gpuperf.decisions.advisor import _space_change
    from gpuperf.decisions.optimizations import load_optimizations
    from gpuperf.kernels import get_kernel

    (tmp_path / "clash.py").write_text(CLASH)
    entry = load_optimizations()["thread_coarsening"]
    assert _space_change(entry, get_kernel(f"{tmp_path / 'clash.py'}:stencil2d")) == (None, None, "", "")
    variant, reason, *_ = _space_change(entry, get_kernel("stencil2d"))
    assert variant is not None and variant.startswith("stencil2d[")


USER_STENCIL = '''
import loopy as lp
import numpy as np
from gpuperf.kernels import Kernel
from gpuperf.kernels.space import VariantSpace


def make(config):
    p = lp.make_kernel("{[i, j]: 0<=i<n and 0<=j<m}", "b[i, j] = (a[i, j] + a[i + 1, j] + a[i + 2, j]) / 3",
                       [lp.GlobalArg("a", np.float32, shape="(n + 2, m)"), lp.GlobalArg("b", np.float32, shape="(n, m)"),
                        "..."], assumptions="n >= 64 and m >= 64 and n mod 64 = 0 and m mod 64 = 0",
                       name="stencil2d", lang_version=(2018, 2))
    p = lp.split_iname(p, "j", config["local_x"], outer_tag="g.0", inner_tag="l.0")
    p = lp.split_iname(p, "i", config["local_y"] * config["outputs_y"], outer_tag="g.1")
    p = lp.split_iname(p, "i_inner", config["outputs_y"], outer_tag="l.1")
    return Kernel(name="stencil2d", program=p, params=("n", "m"), variant=dict(config))


def space():
    return VariantSpace(name="stencil2d", parameters={"local_x": [16, 32], "local_y": [4, 16], "outputs_y": [1, 2, 4],
                                                      "prefetch": [0], "unroll": [1]},
                        defaults={"local_x": 16, "local_y": 4, "outputs_y": 1, "prefetch": 0, "unroll": 1},
                        check=lambda c: None, make=make)
'''
SETTINGS = "local_x=16,local_y=4,outputs_y=1,prefetch=0,unroll=1"


def test_a_users_space_named_like_a_catalog_stencil_is_not_identified_with_its_measured_pairs(tmp_path):
    """A user's space whose kernels are named stencil2d was given the catalog stencil2d's H200 pairs as
    "this very change of this kernel at these sizes was measured": its variants carry no pair identity."""
    from gpuperf.decisions.advisor import _space_change, _with_identity
    from gpuperf.decisions.optimizations import load_optimizations
    from gpuperf.kernels import get_kernel

    (tmp_path / "mine.py").write_text(USER_STENCIL)
    entry, sizes = load_optimizations()["thread_coarsening"], {"n": 1024, "m": 1024}
    for space in (f"{tmp_path / 'mine.py'}:space", "stencil2d"):
        kernel = get_kernel(f"{space}[{SETTINGS}]")
        variant, reason, *_ = _space_change(entry, kernel, space)
        assert reason is None and variant == f"{space}[{SETTINGS.replace('outputs_y=1', 'outputs_y=4')}]"
        query = _with_identity(pd.DataFrame([{"x": 1.0}]), entry, kernel, variant, sizes, "H200", space)
        if space == "stencil2d":
            assert query["kernel"].tolist() == ["stencil2d"] and query["change"].tolist() == ["outputs_y: 1 -> 4"]
        else:
            assert "kernel" not in query.columns and query["gpu"].tolist() == ["H200"]


def test_a_users_space_named_alone_is_advised_as_its_default_variant(tmp_path):
    """``file.py:space`` names the space's default variant: it was advised as a plain kernel, with no
    variant to apply, while ``file.py:space[...]`` naming the same settings got one."""
    from gpuperf.cli.advise_cli import variant_space_name
    from gpuperf.decisions.advisor import _space_change
    from gpuperf.decisions.optimizations import load_optimizations
    from gpuperf.kernels import get_kernel

    (tmp_path / "mine.py").write_text(USER_STENCIL + "\n\ndef one():\n    return make({'local_x': 16, 'local_y': 4, "
                                      "'outputs_y': 1, 'prefetch': 0, 'unroll': 1})\n")
    space = f"{tmp_path / 'mine.py'}:space"
    entry = load_optimizations()["thread_coarsening"]
    changes = [_space_change(entry, get_kernel(spec), variant_space_name(spec, get_kernel(spec)))
               for spec in (space, f"{space}[{SETTINGS}]")]
    assert changes[0] == changes[1] and changes[0][0] == f"{space}[{SETTINGS.replace('outputs_y=1', 'outputs_y=4')}]"
    kernel_function = f"{tmp_path / 'mine.py'}:one"  # a function returning one kernel, recording a variant
    assert variant_space_name(kernel_function, get_kernel(kernel_function)) is None


def test_an_entry_whose_pairs_name_an_unknown_kernel_is_skipped_with_a_note_and_the_others_assessed(tmp_path):
    """A misspelt pairs kernel (or dataset, or parameter) aborted the whole advice; now that entry alone
    is not assessed, with a note naming its file and field."""
    from gpuperf.decisions.advisor import advise
    from gpuperf.decisions.optimizations import load_optimizations
    from gpuperf.errors import GpuperfNote

    for name, before in (("t_typo", "MAUX"), ("t_fine", "MAU")):
        (tmp_path / f"{name}.toml").write_text(ENTRY.format(name=name, before=before, after="MAC", condition="",
                                                            summary=name))
    entries = load_optimizations([tmp_path])
    with pytest.warns(GpuperfNote, match=r"t_typo.toml: pairs\[0\].kernel: unknown kernel 'MAUX'"):
        advice = advise(profile_features(PROFILE), entries=[entries["t_typo"], entries["t_fine"]], min_confidence=0,
                        threshold=1e-9)
    assert [s.optimization for s in advice.assessed] == ["t_fine"]
    (why,) = [why for name, why in advice.skipped if name == "t_typo"]
    assert why.startswith(f"not assessed: {tmp_path / 't_typo.toml'}: pairs[0].kernel: unknown kernel 'MAUX'")
    assert advice.notes == [f"{why.removeprefix('not assessed: ')} (t_typo is not assessed)"]


def test_no_progress_hides_the_bar_of_the_printed_advice(capsys, database, monkeypatch):
    import gpuperf.progress

    asked = []
    real = gpuperf.progress.progress_bar

    def spy(hidden=False, *columns, **options):
        asked.append(hidden)
        return real(hidden, *columns, **options)

    monkeypatch.setattr(gpuperf.progress, "progress_bar", spy)
    args = ["advise", "column_sum", "-p", "n=1024", "-p", "m=1024", "--threshold", "0.0001", *only(database)]
    assert main(args) == 0 and main([*args, "--no-progress"]) == 0
    assert asked == [False, True]
    assert "Advice for column_sum" in capsys.readouterr().out


def test_an_entry_whose_condition_cannot_be_judged_is_assessed_with_a_note(capsys, database, tmp_path):
    """A kernel with no access gpuperf can analyse was advised to coalesce, with nothing saying the
    entry's condition was unknown."""
    from pathlib import Path

    kernels = Path(__file__).parent / "data" / "feature_kernels.py"
    folder = tmp_path / "entries"
    folder.mkdir()
    (folder / "t_sectors.toml").write_text(ENTRY.format(
        name="t_sectors", before="MAU", after="MAC", condition='applies_when = "max_sectors_over_fewest > 3"',
        summary="do it"))
    args = ["advise", f"{kernels}:squared_index_copy", "-p", "n=4096", "--gpu", "GTX 970", "--min-confidence", "0",
            "--optimizations", str(folder), "--only", "t_sectors", "--json"]
    advice = run_json(capsys, args)
    assert advice["notes"] == ["t_sectors: its condition max_sectors_over_fewest > 3 cannot be judged for this kernel "
                               "(max_sectors_over_fewest unknown), so it is assessed as if it held"]
    advice = run_json(capsys, [args[0], "vector_copy", *args[2:]])  # known, and false: not assessed, no note
    assert advice["notes"] == [] and advice["not_suggested"][0]["reason"].startswith("does not apply")


def test_a_per_access_condition_false_on_the_analysable_accesses_only_is_not_judged(capsys, database, tmp_path):
    """out[idx[i]] = a[i]: coalescing 'does not apply' (max_sectors_over_fewest 1, a and idx), though the
    scattered store, the access it is about, is one gpuperf cannot analyse (analysable_access_fraction 2/3)."""
    from pathlib import Path

    kernels = Path(__file__).parent / "data" / "feature_kernels.py"
    folder = tmp_path / "entries"
    folder.mkdir()
    for name, condition in (("t_sectors", "max_sectors_over_fewest > 3"),
                            ("t_settled", "max_sectors_over_fewest > 3 and threads > 10**9")):
        (folder / f"{name}.toml").write_text(ENTRY.format(
            name=name, before="MAU", after="MAC", condition=f'applies_when = "{condition}"', summary="do it"))
    args = ["advise", f"{kernels}:scatter", "-p", "n=4096", "--gpu", "GTX 970", "--min-confidence", "0",
            "--optimizations", str(folder), "--only", "t_sectors,t_settled", "--json"]
    advice = run_json(capsys, args)
    assert advice["notes"] == ["t_sectors: its condition max_sectors_over_fewest > 3 cannot be judged for this kernel: "
                               "it is false on the global accesses gpuperf can analyse, but analysable_access_fraction "
                               "is 0.667 (the others, such as an index array's gather or scatter, are not in "
                               "max_sectors_over_fewest), so it is assessed as if it held"]
    reasons = {item["optimization"]: item["reason"] for item in advice["not_suggested"]}
    assert reasons["t_settled"].startswith("does not apply")  # the known side settles it
    assert not reasons.get("t_sectors", "").startswith("does not apply")


@pytest.mark.parametrize("condition, applies", [("max_sectors_over_fewest > 3 and threads > 10**9", False),
                                                ("max_sectors_over_fewest > 3 or threads > 1", True)])
def test_a_condition_the_known_features_settle_needs_no_unknown_one(capsys, database, tmp_path, condition, applies):
    """A false side of an 'and' made the entry 'assessed as if it held' because the other side's feature
    was unknown (a shared-memory kernel was assessed for prefetching into shared memory)."""
    from pathlib import Path

    kernels = Path(__file__).parent / "data" / "feature_kernels.py"
    folder = tmp_path / "entries"
    folder.mkdir()
    (folder / "t_sectors.toml").write_text(ENTRY.format(
        name="t_sectors", before="MAU", after="MAC", condition=f'applies_when = "{condition}"', summary="do it"))
    advice = run_json(capsys, ["advise", f"{kernels}:squared_index_copy", "-p", "n=4096", "--gpu", "GTX 970",
                               "--min-confidence", "0", "--optimizations", str(folder), "--only", "t_sectors", "--json"])
    assert advice["notes"] == []  # settled: nothing assessed "as if it held"
    reasons = [item["reason"] for item in advice["not_suggested"]]
    assert (reasons == [f"does not apply: {condition} is false for this kernel"]) == (not applies)


def test_a_bundled_profile_named_by_its_data_path_is_read_outside_a_checkout(tmp_path, monkeypatch):
    """advise --profile data/sector_profile_h200.csv.gz was no such file run from any other folder (as
    with an installed gpuperf), though the docs name it so."""
    from gpuperf.decisions.profile import read_profile

    monkeypatch.chdir(tmp_path)
    row = read_profile("data/sector_profile_h200.csv.gz", row=2)
    assert (row["kernel"], row["gpu"], row["grid.x"], row["block.x"]) == ("add_four_vectors", "H200", 16, 256)


def test_json_notes_carry_the_database_folders_notes(tmp_path, capsys):
    """A folder of no entries was noted on stderr while --json's notes, said to hold every note printed
    there, were empty."""
    import pandas as pd

    from gpuperf.decisions.optimizations import builtin_folder

    empty, removals = tmp_path / "empty", tmp_path / "removals"
    empty.mkdir()
    removals.mkdir()
    for path in builtin_folder().glob("*.toml"):
        (removals / path.name).write_text(f'name = "{path.stem}"\nremove = true\n')
    pd.DataFrame([PROFILE]).to_csv(tmp_path / "row.csv", index=False)
    assert main(["advise", "--profile", str(tmp_path / "row.csv"), "--optimizations", str(empty),
                 "--optimizations", str(removals), "--json"]) == 0
    out, err = capsys.readouterr()
    notes = json.loads(out)["notes"]
    folder_note = f"--optimizations: optimization folder '{empty}' holds no entries (*.toml)"
    assert notes[0] == folder_note and f"note: {folder_note}" in err
    assert "the optimization database holds no entries" in notes[1]


@pytest.mark.opencl
def test_a_condition_on_what_the_optimization_changes_is_judged_on_the_change(tmp_path, capsys):
    """applies_when on change_* features loaded, but was judged before the change was known: never judged,
    every kernel was assessed "as if it held"."""
    from gpuperf.decisions.optimizations import builtin_folder

    source = (builtin_folder() / "unrolling.toml").read_text()
    table = source[:source.index("# The same before/after")].replace('name = "unrolling"', 'name = "t_unroll"')
    table = table.replace('"stencil2d", "jacobi2d_9pt", "hotspot2d", "gradient"', '"stencil2d"')
    table += "max_pairs_per_gpu = 12\n"
    args = ["advise", "stencil2d[local_x=16,local_y=4,outputs_y=4,prefetch=0,unroll=1]", "-p", "n=512", "-p",
            "m=512", "--device", "opencl:0", "--optimizations", str(tmp_path), "--only", "t_unroll", "--json",
            "--min-confidence", "0", "--threshold", "0.01"]
    for condition, holds in (("change_work_group_size != 0", False), ("change_work_group_size == 0", True)):
        (tmp_path / "t_unroll.toml").write_text(table.replace("loop_iterations_per_thread > 0", condition))
        assert main(args) == 0
        out, err = capsys.readouterr()
        advice = json.loads(out)
        assert "cannot be judged" not in err and not advice["notes"]
        if holds:
            assert [s["optimization"] for s in advice["suggestions"]] == ["t_unroll"]
        else:
            assert advice["not_suggested"] == [{"optimization": "t_unroll", "reason": "does not apply: "
                                                f"{condition} is false for this change"}]


@pytest.mark.opencl
def test_json_notes_carry_every_note_said_while_advising(tmp_path, capsys):
    """A pairs dataset read with a note (its time in ms) was noted on stderr, not in --json's notes."""
    from gpuperf.decisions.optimizations import builtin_folder

    frame = pd.read_csv(builtin_folder().parent.parent.parent / "data" / "advise_pairs_pocl.csv.gz")
    frame = frame[frame["kernel"].eq("stencil2d")].drop(columns="cycle_times_s")
    frame.assign(time_ms=frame.pop("time_s") * 1000).to_csv(tmp_path / "mine.csv", index=False)
    source = (builtin_folder() / "unrolling.toml").read_text()
    table = source[:source.index("# The same before/after")].replace('name = "unrolling"', 'name = "t_unroll"')
    (tmp_path / "t_unroll.toml").write_text(table.replace('"advise_pairs_pocl.csv.gz"', '"mine.csv"').replace(
        '"stencil2d", "jacobi2d_9pt", "hotspot2d", "gradient"', '"stencil2d"') + "max_pairs_per_gpu = 12\n")
    assert main(["advise", "stencil2d[local_x=16,local_y=4,outputs_y=4,prefetch=0,unroll=1]", "-p", "n=512", "-p",
                 "m=512", "--device", "opencl:0", "--optimizations", str(tmp_path), "--only", "t_unroll", "--json",
                 "--no-progress"]) == 0
    out, err = capsys.readouterr()
    note = f"{tmp_path / 'mine.csv'}: the measured time is time_ms, taken as time_s in seconds (ms converted)"
    assert json.loads(out)["notes"] == [note] and f"note: {note}" in err


def test_advise_profile_refuses_an_empty_gpu_as_import_does(capsys):
    """--gpu "$GPU" with the variable unset: advise --profile said "--gpu : ... row 1 was profiled on the RTX
    A4000" (a GPU named '' contradicting the profile's), where import says the option is empty."""
    from pathlib import Path

    profile = Path(__file__).parent / "data" / "ncu_raw.csv"
    assert main(["advise", "--profile", str(profile), "--gpu", ""]) == 2
    assert capsys.readouterr().err == (f"gpuperf: error: {profile}: --gpu is empty; name the GPU the times were "
                                       "taken on, or leave --gpu out\n")


def test_each_line_of_advice_is_whole_where_stdout_is_a_file_or_a_pipe(capsys, database):
    """Piped or written to a log, rich broke each suggestion's explanation and each skipped entry's reason at
    80 columns, mid-sentence, while the table above them printed whole: a grep for a suggestion got half of it."""
    args = ["advise", "row_sum", "-p", "n=1024", "-p", "m=1024", "--gpu", "GTX 970", "--min-confidence", "0",
            "--threshold", "0.0001", *only(database)]
    advice = run_json(capsys, [*args, "--json"])
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    explained = [f"{s['optimization']}: {s['explanation']['summary']}" for s in advice["suggestions"]]
    assert explained and max(map(len, explained)) > 80
    for line in explained:
        assert line in lines, line
