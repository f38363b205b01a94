"""The measure and campaign commands: JSON output, and one clear error for malformed input."""

from __future__ import annotations

import hashlib
import json
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from gpuperf.cli import main

pytestmark = pytest.mark.slow

TIMING = "[timing]\nwarmup = 1\nmin_repeats = 5\nmin_time_s = 0.005\nmax_repeats = 100\nmax_retries = 0\n"


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.opencl
def test_measure_json_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["measure", "vector_copy", "-p", "n=65536", "--min-time", "0.01", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    for key in ("time_s", "time_s_min", "time_s_iqr", "repeats", "device", "verified"):
        assert key in data
    assert data["verified"] is True and data["device"].startswith("opencl:")
    assert 0 < data["time_s_min"] <= data["time_s"] and data["repeats"] >= 5
    assert data["sizes"] == {"n": 65536} and data["provenance"]["loopy"]


@pytest.mark.opencl
def test_runs_stopped_short_of_min_time_by_max_repeats_are_noted(capsys: pytest.CaptureFixture[str]) -> None:
    """vector_copy at n=4096 runs in microseconds: 20 runs cannot sum to 10 s, and the note says
    where they stopped (--json too); --max-repeats below --min-repeats is refused by name."""
    args = ["measure", "vector_copy", "-p", "n=4096", "--min-repeats", "3", "--min-time", "10"]
    assert main([*args, "--max-repeats", "20", "--json"]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert result["repeats"] == 20
    (note,) = [n for n in result["notes"] if "--min-time" in n]  # beside it maybe an unsteady time's note
    assert "short of --min-time 10 s: they stopped at 20 runs (--max-repeats 20)" in note
    assert f"note: {note}" in captured.err
    assert main([*args, "--max-repeats", "2"]) == 2
    assert "--max-repeats 2: must be at least --min-repeats (3)" in capsys.readouterr().err


def test_measure_unknown_device_and_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["measure", "vector_copy", "-p", "n=4096", "--device", "opencl:5:0"], capsys)
    assert code == 2 and not out
    assert err.count("\n") == 1 and "device 'opencl:5:0'" in err and "available devices: opencl:0" in err
    code, _, err = run_cli(["measure", "vector_cpy", "-p", "n=4096"], capsys)
    assert code == 2 and "unknown kernel 'vector_cpy'" in err and "vector_copy" in err


@pytest.mark.opencl
def test_campaign_run_status_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.toml"
    path.write_text('name = "cli"\n[[kernels]]\nkernel = "vector_copy"\nsizes = [{n = 4096}, {n = 8192}]\n' + TIMING)
    store = tmp_path / "s.sqlite"
    code, out, _ = run_cli(["campaign", "run", str(path), "--store", str(store), "--no-progress", "--json"], capsys)
    assert code == 0 and json.loads(out)["measured"] == 2
    code, out, _ = run_cli(["campaign", "status", "--store", str(store), "--json"], capsys)
    (status,) = json.loads(out)
    assert code == 0 and (status["done"], status["failed"], status["remaining"]) == (2, 0, 0)
    for fmt, reader in (("csv", pd.read_csv), ("parquet", pd.read_parquet)):
        out_file = tmp_path / f"points.{fmt}"
        code, _, _ = run_cli(["campaign", "export", "--store", str(store), "--format", fmt, "--out", str(out_file)], capsys)
        assert code == 0 and sorted(reader(out_file)["n"]) == [4096, 8192]
    out_file = tmp_path / "cycles.csv"
    code, _, _ = run_cli(["campaign", "export", "--store", str(store), "--out", str(out_file), "--cycle-times"], capsys)
    exported = pd.read_csv(out_file)
    # timed one point at a time: no cycles to pair (its launches are not matched with another point's)
    assert code == 0 and "cycle_times_s" in exported.columns and exported["cycle_times_s"].isna().all()
    code, _, err = run_cli(["campaign", "status", "--store", str(tmp_path / "none.sqlite")], capsys)
    assert code == 2 and "does not exist" in err and not (tmp_path / "none.sqlite").exists()
    gzipped = tmp_path / "points.csv.gz"  # the format a name promises, compressed or not
    code, _, _ = run_cli(["campaign", "export", "--store", str(store), "--out", str(gzipped)], capsys)
    assert code == 0 and sorted(pd.read_csv(gzipped)["n"]) == [4096, 8192]
    header = gzipped.read_bytes()
    assert header[10:header.index(b"\0", 10)] == b"points.csv"  # the gzip header names it, not its temporary file
    mismatch = tmp_path / "e2.csv"
    code, _, err = run_cli(["campaign", "export", "--store", str(store), "--format", "parquet", "--out", str(mismatch)],
                           capsys)
    assert code == 2 and "a csv name for a parquet table" in err and not mismatch.exists()
    for unnamed in ("exported", "e.json"):  # no --format given: the name is what says too little
        code, _, err = run_cli(["campaign", "export", "--store", str(store), "--out", str(tmp_path / unnamed)], capsys)
        assert code == 2 and f"--out {tmp_path / unnamed}: its name ends in neither .csv" in err and "--format:" not in err
    code, _, _ = run_cli(["campaign", "export", "--store", str(store), "--format", "csv", "--out",
                          str(tmp_path / "exported")], capsys)
    assert code == 0 and sorted(pd.read_csv(tmp_path / "exported")["n"]) == [4096, 8192]


BROKEN = """
import loopy as lp
import numpy as np


def broken():
    return lp.make_kernel("{[i]: 0<=i<n}", "b[i] = no_such_function(a[i])",
                          [lp.GlobalArg("a,b", np.float32, shape="n"), "..."], name="broken",
                          lang_version=(2018, 2))
"""


@pytest.mark.opencl
def test_campaign_run_names_the_first_failure_of_each_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only the counts per status were shown: which point failed, and why, took a store export."""
    (tmp_path / "kernels.py").write_text(BROKEN)
    path = tmp_path / "c.toml"
    path.write_text('name = "f"\n[[kernels]]\nkernel = "kernels.py:broken"\nsizes = [{n = 64}, {n = 128}]\n'
                    '[[kernels]]\nkernel = "vector_copy"\nsizes = [{n = 4096}]\n' + TIMING)
    code, out, err = run_cli(["campaign", "run", str(path), "--store", str(tmp_path / "s.sqlite"), "--no-progress",
                              "--json"], capsys)
    summary = json.loads(out)
    assert code == 0 and summary["measured"] == 1 and summary["failed"] == {"compile_failed": 2}
    assert [(f["kernel"], f["sizes"], f["status"]) for f in summary["failures"]] == [
        ("broken", {"n": 64}, "compile_failed"), ("broken", {"n": 128}, "compile_failed")]
    assert all("no_such_function" in f["error"] and "\n" not in f["error"] for f in summary["failures"])
    (note,) = [line for line in err.splitlines() if "compile_failed" in line]
    assert note.startswith("note: f: 2 point(s) compile_failed, the first broken at n=64: ") and "no_such_function" in note
    code, out, err = run_cli(["campaign", "run", str(path), "--store", str(tmp_path / "t.sqlite"), "--no-progress"],
                             capsys)
    assert code == 0 and "failures" not in out and "the first broken at n=64" in err


MALFORMED = {
    "bad_toml": ("[[kernels]\nkernel = 'vector_copy'", "not valid TOML"),
    "unknown_kernel": ('[[kernels]]\nkernel = "vector_cpy"\nsizes = [{n = 4096}]', "kernels[0].kernel: unknown kernel 'vector_cpy'"),
    "missing_sizes": ('[[kernels]]\nkernel = "vector_copy"', "kernels[0]: missing sizes"),
    "unknown_size": ('[[kernels]]\nkernel = "vector_copy"\nsizes = [{n = 4096, q = 2}]', "kernels[0].sizes[0]: kernel 'vector_copy' has no size parameter q"),
    "bad_assumption": ('[[kernels]]\nkernel = "vector_copy"\nsizes = [{n = 1000}]', "kernels[0].sizes[0]: kernel 'vector_copy': sizes n=1000 violate its assumptions"),
    "unknown_key": ('[[kernels]]\nkernel = "vector_copy"\nsize = [{n = 4096}]', "kernels[0]: unknown key 'size'"),
    "bad_timing": ('[timing]\nmin_repeats = "many"\n[[kernels]]\nkernel = "vector_copy"\nsizes = [{n = 4096}]', "timing.min_repeats"),
    "bad_interleave": ('interleave = 2\n[[kernels]]\nkernel = "vector_copy"\nsizes = [{n = 4096}]', "interleave: expected a string, got 2"),
    "timing_not_a_table": ('timing = 5\n[[kernels]]\nkernel = "vector_copy"\nsizes = [{n = 4096}]', "timing: expected a table, got 5"),
    "unknown_device": ('device = "opencl:9:9"\n[[kernels]]\nkernel = "vector_copy"\nsizes = [{n = 4096}]', "device: device 'opencl:9:9' does not exist"),
    "unknown_space": ('[[spaces]]\nspace = "jacobi"\nsizes = [{n = 256, m = 256}]', "spaces[0].space: unknown variant space 'jacobi'"),
    "nothing": ('name = "empty"', "no points to measure"),
    "no_variant_fits": ('[[spaces]]\nspace = "stencil2d"\nlimit = 2\nsizes = [{n = 100, m = 100}]',
                        "no points to measure: every variant of its spaces breaks its assumptions at the sizes given "
                        "(e.g. stencil2d[local_x=4,local_y=1,outputs_y=1,prefetch=0,unroll=1] at n=100,m=100"),
}


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A store holding one measured point (its bytes)."""
    from gpuperf.measure import load_campaign, run_campaign

    folder = tmp_path_factory.mktemp("stored")
    good = folder / "good.toml"
    good.write_text('name = "stored"\n[[kernels]]\nkernel = "vector_copy"\nsizes = [{n = 4096}]\n' + TIMING)
    assert run_campaign(load_campaign(good), folder / "s.sqlite", progress=False).measured == 1
    return (folder / "s.sqlite").read_bytes()


@pytest.mark.parametrize("case", sorted(MALFORMED))
@pytest.mark.opencl
def test_malformed_campaign_names_file_and_key_and_leaves_store_alone(case: str, stored: bytes, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "s.sqlite"
    store.write_bytes(stored)
    digest = hashlib.sha256(store.read_bytes()).hexdigest()
    text, expected = MALFORMED[case]
    bad = tmp_path / "malformed.toml"
    bad.write_text(textwrap.dedent(text) + "\n")
    code, out, err = run_cli(["campaign", "run", str(bad), "--store", str(store), "--no-progress"], capsys)
    assert code == 2 and not out
    assert err.startswith("gpuperf: error: ") and err.count("\n") == 1
    assert str(bad) in err and expected in err, err
    assert hashlib.sha256(store.read_bytes()).hexdigest() == digest


def test_example_campaign_file_is_valid() -> None:
    from gpuperf.measure import load_campaign

    example = Path(__file__).resolve().parents[1] / "examples" / "campaign.toml"
    campaign = load_campaign(example)
    assert campaign.name == "example" and campaign.settings.min_repeats == 5
    kernels = [entry.kernel.name for entry in campaign.entries]
    assert kernels[:2] == ["vector_copy", "jacobi2d_5pt"] and len(kernels) == 2 + 10
    assert len(campaign.points("opencl:0:0")) == 4 + 4 + 10


@pytest.mark.parametrize(("argv", "message"), [
    (["measure", "vector_copy", "-p", "n=4096", "--min-repeats", "0"], "--min-repeats 0: must be at least 1"),
    (["calibrate", "--out", "{tmp}/m.json", "--passes", "2", "--cycles", "5"], "--passes and --cycles are two ways"),
    (["spaces", "stencil2d", "--limit", "0"], "--limit 0: must be at least 1"),
])
def test_options_out_of_range_or_at_odds_are_refused_by_name(tmp_path, capsys, argv, message):
    from gpuperf.cli import main

    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.opencl
def test_measure_says_why_outputs_were_not_checked(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["measure", "vector_copy", "-p", "n=4096", "--no-verify", "--min-time", "0"]) == 0
    assert "note: outputs not checked: --no-verify" in capsys.readouterr().err
    assert main(["measure", "vector_copy", "-p", "n=4096", "--min-time", "0"]) == 0
    assert "outputs not checked" not in capsys.readouterr().err


def test_measure_refuses_an_endless_minimum_time_and_a_negative_seed(capsys):
    assert main(["measure", "vector_copy", "-p", "n=4096", "--min-time", "inf"]) == 2
    assert "--min-time inf: must be a finite number" in capsys.readouterr().err
    assert main(["measure", "vector_copy", "-p", "n=4096", "--seed", "-1"]) == 2
    assert "--seed -1: must not be negative" in capsys.readouterr().err


@pytest.mark.opencl
def test_arrays_too_large_for_the_machine_are_one_error(monkeypatch):
    from gpuperf.errors import GpuperfError
    from gpuperf.measure import timing

    def out_of_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(timing, "measure_compiled", out_of_memory)
    with pytest.raises(GpuperfError, match="vector_copy at n=4096: its arrays do not fit in this machine's memory"):
        timing.measure("vector_copy", {"n": 4096})


@pytest.mark.opencl
def test_a_run_names_the_variants_it_leaves_out_at_sizes_outside_their_assumptions(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mixed = tmp_path / "mixed.toml"
    mixed.write_text('name = "mixed"\n[[spaces]]\nspace = "stencil2d"\nlimit = 1\n'
                     'sizes = [{n = 100, m = 100}, {n = 64, m = 64}]\n' + TIMING)
    code, _, err = run_cli(["campaign", "run", str(mixed), "--store", str(tmp_path / "s.sqlite"), "--no-progress"],
                           capsys)
    assert code == 0
    assert f"note: {mixed}: 1 variant(s) left out at sizes outside their assumptions (e.g. stencil2d[" in err
    assert "at n=100,m=100: outside its assumptions)" in err


@pytest.mark.opencl
def test_measure_and_campaign_tables_name_sizes_and_failures_in_words(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """measure's title read "vector_copy {'n': 4096}" and campaign run's summary "failed {}"."""
    code, out, _ = run_cli(["measure", "vector_copy", "-p", "n=4096", "--min-time", "0.001"], capsys)
    assert code == 0 and "vector_copy at n=4096" in out and "{" not in out
    path = tmp_path / "c.toml"
    path.write_text('name = "words"\n[[kernels]]\nkernel = "vector_copy"\nsizes = [{n = 4096}]\n' + TIMING)
    code, out, _ = run_cli(["campaign", "run", str(path), "--store", str(tmp_path / "s.sqlite"), "--no-progress"],
                           capsys)
    assert code == 0 and "│ none " in out and "{" not in out


@pytest.mark.opencl
def test_export_and_status_of_a_store_a_run_is_measuring_into_say_so(stored: bytes, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """campaign export of a store a campaign run still measured into wrote a partial table, looking finished."""
    import os

    from gpuperf.measure.store import measuring_into

    store = tmp_path / "s.sqlite"
    store.write_bytes(stored)
    with measuring_into(store):  # as a campaign run in another terminal holds it
        code, out, err = run_cli(["campaign", "export", "--store", str(store), "--out", str(tmp_path / "a.csv")],
                                 capsys)
        assert code == 0 and out.startswith("wrote 1 row")
        assert f"note: a campaign run (process {os.getpid()}) is still measuring into {store}: the table holds the 1 " \
               "point(s) stored so far; export again when it ends" in err
        code, _, err = run_cli(["campaign", "status", "--store", str(store)], capsys)
        assert code == 0 and f"note: a campaign run (process {os.getpid()}) is measuring into {store} now" in err
    code, _, err = run_cli(["campaign", "export", "--store", str(store), "--out", str(tmp_path / "b.csv")], capsys)
    assert code == 0 and "measuring" not in err
    code, _, err = run_cli(["campaign", "status", "--store", str(store)], capsys)
    assert code == 0 and "measuring" not in err


def test_a_store_in_a_missing_folder_is_refused_as_an_out_file_is(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """campaign run --store and calibrate --store made a mistyped folder silently (fit, predict-table and
    campaign export refuse one), and a file on the way was "cannot create its folder (File exists)"."""
    from gpuperf.errors import GpuperfError
    from gpuperf.measure.store import Store

    path = tmp_path / "c.toml"
    path.write_text('name = "cli"\n[[kernels]]\nkernel = "vector_copy"\nsizes = [{n = 4096}]\n' + TIMING)
    store = tmp_path / "nofold" / "s.sqlite"
    code, _, err = run_cli(["campaign", "run", str(path), "--store", str(store), "--no-progress"], capsys)
    assert code == 2 and err == f"gpuperf: error: --store {store}: folder {store.parent} does not exist\n"
    code, _, err = run_cli(["calibrate", "--out", str(tmp_path / "m.json"), "--store", str(store), "--kernel",
                            "vector_copy", "--passes", "1", "--no-progress"], capsys)
    assert code == 2 and err == f"gpuperf: error: --store {store}: folder {store.parent} does not exist\n"
    assert not store.parent.exists()
    (tmp_path / "afile").write_text("")
    code, _, err = run_cli(["campaign", "run", str(path), "--store", str(tmp_path / "afile" / "s.sqlite"),
                            "--no-progress"], capsys)
    assert code == 2 and f"{tmp_path / 'afile'} is a file, not a folder" in err
    with pytest.raises(GpuperfError, match="a file is on the way"):
        Store(tmp_path / "afile" / "s.sqlite")


@pytest.mark.opencl
def test_campaign_export_json_names_the_file_rows_and_notes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.toml"
    path.write_text('name = "cli"\n[[kernels]]\nkernel = "vector_copy"\nsizes = [{n = 4096}]\n' + TIMING)
    store = tmp_path / "s.sqlite"
    assert run_cli(["campaign", "run", str(path), "--store", str(store), "--no-progress", "--json"], capsys)[0] == 0
    import gpuperf.files

    monkeypatch.setattr(gpuperf.files, "lock_holder", lambda _store: 4242)  # a run measuring into it now
    out_file = tmp_path / "points.csv"
    code, out, err = run_cli(["campaign", "export", "--store", str(store), "--out", str(out_file), "--json"], capsys)
    summary = json.loads(out)
    exported = pd.read_csv(out_file)
    assert code == 0 and summary["out"] == str(out_file) and summary["rows"] == len(exported) == 1
    assert summary["columns"] == list(exported.columns) and summary["campaigns"] == ["cli"]
    (note,) = summary["notes"]
    assert "process 4242" in note and f"note: {note}" in err
