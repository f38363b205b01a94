"""Kernel Tuner caches: reading (closed and in-progress), writing, and Kernel Tuner reading what gpuperf wrote."""

from __future__ import annotations

import gzip
import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuperf.datasets import load_dataset, read_kernel_tuner_cache, write_kernel_tuner_cache
from gpuperf.errors import GpuperfError

FIXTURE = Path(__file__).parent / "data" / "kernel_tuner_vector_add.json"
KT_1_5_CACHE = Path(__file__).parent / "data" / "kernel_tuner_1_5_c_backend.json"


def simulate(path: Path, kernel: str, problem_size, tune_params: dict) -> list[dict]:
    """Kernel Tuner's own brute-force search over ``path`` in simulation mode (no GPU needed)."""
    import kernel_tuner

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, _ = kernel_tuner.tune_kernel(
            kernel, f"__global__ void {kernel}() {{}}", problem_size, [], tune_params,
            lang="CUDA", cache=str(path), simulation_mode=True, strategy="brute_force", quiet=True,
        )
    return results


def test_reads_every_configuration_with_its_status():
    frame = read_kernel_tuner_cache(FIXTURE)
    published = json.loads(FIXTURE.read_text())["cache"]
    assert len(frame) == len(published) == 8
    assert frame.attrs["parameters"] == ["block_size_x", "tile_size"]
    assert set(frame["gpu"]) == {"RTX A4000"} and set(frame["device"]) == {"NVIDIA RTX A4000"}
    assert frame["status"].value_counts().to_dict() == {"ok": 6, "CompilationFailedConfig": 1, "RuntimeFailedConfig": 1}
    for _, row in frame.iterrows():
        entry = published[f"{row['block_size_x']},{row['tile_size']}"]
        assert row["variant"] == f"block_size_x={row['block_size_x']},tile_size={row['tile_size']}"
        if row["status"] == "ok":
            assert row["time_s"] == pytest.approx(entry["time"] / 1e3, rel=1e-15)
            assert row["repeats"] == len(entry["times"])
            assert row["time_s_min"] == pytest.approx(min(entry["times"]) / 1e3, rel=1e-15)
            assert row["GFLOP/s"] == entry["GFLOP/s"]
        else:
            assert np.isnan(row["time_s"]) and row["status"] == entry["time"]
        assert row["compile_time_s"] == pytest.approx(entry["compile_time"] / 1e3, rel=1e-15)


def test_reads_kernel_tuner_1_5_failures_recorded_as_error_with_no_time():
    frame = read_kernel_tuner_cache(KT_1_5_CACHE)
    assert frame["status"].tolist() == ["ok", "ok", "CompilationFailedConfig"]
    assert np.isnan(frame["time_s"].iloc[2])
    assert frame["compile_time_s"].iloc[2] == pytest.approx(0.05157275398960337)
    assert frame["time_s"].iloc[0] == pytest.approx(3.8708687850407193e-3)
    assert "__error__" not in frame.columns  # the error is the status, not a column of its own beside it


def test_old_kernel_tuner_failure_time_and_gzipped_caches_read(tmp_path):
    cache = json.loads(FIXTURE.read_text())
    cache["cache"]["32,1"]["time"] = 1e20  # how Kernel Tuner before 0.4 recorded a failure
    path = tmp_path / "old.json.gz"
    path.write_bytes(gzip.compress(json.dumps(cache).encode()))
    frame = read_kernel_tuner_cache(path).set_index("variant")
    assert frame.loc["block_size_x=32,tile_size=1", "status"] == "ErrorConfig"
    assert np.isnan(frame.loc["block_size_x=32,tile_size=1", "time_s"])
    (tmp_path / "binary.json").write_bytes(gzip.compress(b"{}"))
    with pytest.raises(GpuperfError, match=r"binary\.json: gzip-compressed data under a name without \.gz"):
        read_kernel_tuner_cache(tmp_path / "binary.json")


def test_bzip2_and_xz_caches_read_as_profiler_files_do(tmp_path):
    """An .xz cache was 'not a Kernel Tuner cache (not UTF-8 JSON text ...)', though profiler CSVs may be
    gzip, bzip2 or xz; explore takes them as caches too."""
    import bz2
    import lzma

    from gpuperf.decisions.space import read_space

    plain = read_kernel_tuner_cache(FIXTURE)
    for suffix, compress in ((".bz2", bz2.compress), (".xz", lzma.compress)):
        path = tmp_path / f"cache.json{suffix}"
        path.write_bytes(compress(FIXTURE.read_bytes()))
        pd.testing.assert_frame_equal(read_kernel_tuner_cache(path).drop(columns="source"),
                                      plain.drop(columns="source"))
        assert len(read_space(path)) == len(plain)  # failures kept as failures
    (tmp_path / "cut.json.xz").write_bytes(lzma.compress(FIXTURE.read_bytes())[:40])
    with pytest.raises(GpuperfError, match="cut.json.xz: not a Kernel Tuner cache"):
        read_kernel_tuner_cache(tmp_path / "cut.json.xz")


def test_a_cache_through_a_csv_or_parquet_table_keeps_its_repeat_times_and_list_fields(tmp_path):
    """Written back from the table gpuperf import writes, a cache lost its per-repeat times (JSON text in
    CSV, an array in Parquet); a list field read from Parquet raised 'truth value of an array is ambiguous'
    and one from CSV was written as text."""
    from gpuperf.datasets import write_dataset_csv
    from gpuperf.datasets.tables import read_table_file

    first = read_kernel_tuner_cache(FIXTURE).assign(power_readings=[(1.0, 2.5)] * 8)
    write_dataset_csv(first, tmp_path / "t.csv")
    first.to_parquet(tmp_path / "t.parquet")
    direct = json.loads(write_kernel_tuner_cache(first, tmp_path / "direct.json").read_text())["cache"]
    for name in ("t.csv", "t.parquet"):
        written = write_kernel_tuner_cache(read_table_file(tmp_path / name), tmp_path / f"{name}.json",
                                           tune_params_keys=["block_size_x", "tile_size"])
        cache = json.loads(written.read_text())["cache"]
        assert cache.keys() == direct.keys()
        for key, entry in direct.items():
            assert cache[key].get("times") == entry.get("times") and cache[key]["power_readings"] == [1.0, 2.5]


def test_whole_float_parameters_written_as_whole_numbers_are_noted(tmp_path):
    """A table read from CSV holds ratio 1.0, 2.0 as floats: the cache keys say 1 and 2, which a Kernel
    Tuner space of floats does not find; the writer says so and how to keep them."""
    from gpuperf.errors import GpuperfNote

    frame = read_kernel_tuner_cache(FIXTURE).assign(tile_size=lambda f: f["tile_size"].astype(float))
    frame.attrs.pop("tune_params")  # as a table file has none
    with pytest.warns(GpuperfNote, match=r"parameter tile_size holds whole numbers as floats, written as whole "
                                         r"numbers \(1, 2\); where Kernel Tuner's tune_params held floats"):
        written = write_kernel_tuner_cache(frame, tmp_path / "c.json", tune_params_keys=["block_size_x", "tile_size"])
    assert "32,1" in json.loads(written.read_text())["cache"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        written = write_kernel_tuner_cache(frame, tmp_path / "d.json", tune_params_keys=["block_size_x", "tile_size"],
                                           tune_params={"block_size_x": [32, 64, 128, 256], "tile_size": [1.0, 2.0]})
    assert "32,1.0" in json.loads(written.read_text())["cache"]


def test_round_trip_read_write_read_is_equal(tmp_path):
    first = read_kernel_tuner_cache(FIXTURE)
    path = write_kernel_tuner_cache(first, tmp_path / "again.json")
    second = read_kernel_tuner_cache(path)
    pd.testing.assert_frame_equal(first.drop(columns="source"), second.drop(columns="source"))
    assert json.loads(path.read_text())["cache"] == json.loads(FIXTURE.read_text())["cache"]


def test_milliseconds_come_back_from_seconds_within_two_float_steps():
    """As _ms says: 15 significant digits come back exactly; Kernel Tuner 1.5's 17 may move a float step
    (6.4033122062683105 -> 6.40331220626831) or two (506.31784428020461 -> 506.31784428020472), no more."""
    import math

    from gpuperf.datasets.kernel_tuner import _ms
    from gpuperf.datasets.schema import shift_decimal

    assert _ms(shift_decimal(6.4033122062683105, -3)) == 6.40331220626831
    assert _ms(shift_decimal(506.31784428020461, -3)) == 506.31784428020472
    for ms in np.random.default_rng(0).uniform(1e-3, 1e3, 5000):
        assert abs(_ms(shift_decimal(ms, -3)) - ms) <= 2 * math.ulp(ms)
        written = float(f"{ms:.15g}")
        assert _ms(shift_decimal(written, -3)) == written


def test_kernel_tuner_reads_a_cache_gpuperf_wrote(tmp_path):
    frame = read_kernel_tuner_cache(FIXTURE)
    path = write_kernel_tuner_cache(frame, tmp_path / "vector_add.json")
    results = simulate(path, "vector_add", 1048576, {"block_size_x": [32, 64, 128, 256], "tile_size": [1, 2]})
    reported = {(r["block_size_x"], r["tile_size"]): r["time"] for r in results}
    assert len(reported) == len(frame)
    for _, row in frame.iterrows():
        time = reported[(row["block_size_x"], row["tile_size"])]
        if row["status"] == "ok":
            assert time == pytest.approx(row["time_s"] * 1e3, rel=1e-15)
        else:
            assert time == row["status"]


def test_kernel_tuner_reads_a_bundled_space_gpuperf_wrote(tmp_path):
    hub = load_dataset("benchmark_hub_spaces")
    space = hub[(hub["kernel"] == "pnpoly") & (hub["gpu_label"] == "RTX_3090")]
    keys = ["block_size_x", "between_method", "tile_size", "use_method"]
    path = write_kernel_tuner_cache(space, tmp_path / "pnpoly.json", tune_params_keys=keys)
    tune_params = {k: sorted(int(v) for v in space[k].unique()) for k in keys}
    results = simulate(path, "pnpoly", 20000000, tune_params)
    reported = {tuple(r[k] for k in keys): r["time"] for r in results}
    assert len(reported) == len(space) == 4092
    measured = {tuple(int(row[k]) for k in keys): row for _, row in space.iterrows()}
    failed = 0
    for config, row in measured.items():
        if row["status"] == "ok":
            assert reported[config] == pytest.approx(row["time_s"] * 1e3, rel=1e-15)
        else:
            failed += 1
            assert reported[config] == row["status"]
    assert failed == (space["status"] != "ok").sum() > 0
    back = read_kernel_tuner_cache(path)
    assert back["time_s"].equals(space["time_s"].reset_index(drop=True))


def test_reads_a_cache_left_open_by_a_running_tuner(tmp_path):
    from kernel_tuner import util

    path = tmp_path / "running.json"
    shutil.copy(FIXTURE, path)
    util.read_cache(str(path), open_cache=True)  # Kernel Tuner reopens the file for appending
    text = path.read_text()
    assert text.endswith(",") and not text.rstrip(",").endswith("}\n}")
    frame = read_kernel_tuner_cache(path)
    pd.testing.assert_frame_equal(frame.drop(columns="source"), read_kernel_tuner_cache(FIXTURE).drop(columns="source"))
    # ... and appends entries one per line while it runs
    entry = {"block_size_x": 512, "tile_size": 1, "time": 0.0441, "times": [0.0441]}
    util.store_cache("512,1", entry, str(path), {})
    assert len(read_kernel_tuner_cache(path)) == 9


def test_a_cache_cut_inside_an_entry_names_the_position(tmp_path):
    text = FIXTURE.read_text()
    cut = text.index('"64,1"') + 40
    path = tmp_path / "cut.json"
    path.write_text(text[:cut])
    line = text[:cut].count("\n") + 1
    column = cut - text[:cut].rfind("\n")
    expected = rf"cut.json: truncated or malformed Kernel Tuner cache at the end of the file, line {line}, column {column} "
    with pytest.raises(GpuperfError, match=expected):
        read_kernel_tuner_cache(path)
    # a broken entry in the middle of a file is located where it breaks
    broken = text.replace('"tile_size": 2, "time": 0.0797', '"tile_size": 2 "time": 0.0797')
    path.write_text(broken)
    at = broken.index('"time": 0.0797')
    line, column = broken[:at].count("\n") + 1, at - broken[:at].rfind("\n")
    with pytest.raises(GpuperfError, match=rf"cut.json: truncated or malformed Kernel Tuner cache at line {line}, column {column} "):
        read_kernel_tuner_cache(path)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: c["cache"]["32,2"].update(time="fast"), r"cache entry '32,2': time='fast' is neither"),
        (lambda c: c["cache"]["64,1"].update(time=-0.5), r"cache entry '64,1': time=-0.5 is neither"),
        (lambda c: c["cache"]["128,1"].pop("tile_size"), r"cache entry '128,1' lacks parameter\(s\) tile_size"),
        (lambda c: c["cache"]["128,2"].pop("time"), r"cache entry '128,2' has neither 'time' nor '__error__'"),
        (lambda c: c["cache"]["128,2"].update(__error__=None), r"cache entry '128,2': __error__ is null, not the name "
                                                               r"of an error \(Kernel Tuner's are ErrorConfig, "),
        (lambda c: c["cache"]["128,2"].update(__error__=" "), r"cache entry '128,2': __error__ is \" \", not the name"),
        (lambda c: c["cache"]["256,1"].update(block_size_x=512), r"cache entry '256,1' holds the parameters of '512,1'"),
        (lambda c: c.pop("tune_params_keys"), r"missing key\(s\) tune_params_keys"),
        (lambda c: c.update(tune_params_keys=[]), r"tune_params_keys is empty: the cache names no tunable parameter"),
    ],
)
def test_malformed_caches_name_the_file_and_key(tmp_path, edit, message):
    cache = json.loads(FIXTURE.read_text())
    edit(cache)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(cache))
    with pytest.raises(GpuperfError, match=message) as caught:
        read_kernel_tuner_cache(path)
    assert str(path) in str(caught.value)


def test_a_cache_tuned_for_another_objective_without_times_is_refused_as_such(tmp_path):
    cache = json.loads(FIXTURE.read_text())
    cache["objective"] = "score"
    for entry in cache["cache"].values():
        entry["score"] = entry.pop("time")
    path = tmp_path / "score.json"
    path.write_text(json.dumps(cache))
    with pytest.raises(GpuperfError, match="score.json: the cache was tuned for objective 'score' and records no time"):
        read_kernel_tuner_cache(path)


def test_a_file_that_is_not_json_is_named_so(tmp_path):
    path = tmp_path / "table.csv"
    path.write_text("block_size_x,time\n32,1.5\n")
    with pytest.raises(GpuperfError, match=r"table.csv: not a Kernel Tuner cache \(not JSON: it starts with 'block_size_x"):
        read_kernel_tuner_cache(path)


def test_an_empty_file_is_refused(tmp_path):
    path = tmp_path / "empty.json"
    path.write_text("\n")
    with pytest.raises(GpuperfError, match="empty.json: empty file"):
        read_kernel_tuner_cache(path)


def test_writes_gpuperf_measurements_with_failures(tmp_path):
    frame = pd.DataFrame(
        {
            "kernel": "saxpy", "variant": "", "gpu": "RTX 3090", "device": "NVIDIA GeForce RTX 3090",
            "source": "campaign", "block": [64.0, 128.0, 256.0], "time_s": [2.5e-5, 1.75e-5, np.nan],
            "status": ["ok", "ok", "compile_error"],
        }
    )
    path = write_kernel_tuner_cache(frame, tmp_path / "saxpy.json", tune_params_keys=["block"], problem_size=[4096])
    cache = json.loads(path.read_text())
    assert cache["tune_params"] == {"block": [64, 128, 256]}
    assert cache["cache"]["64"]["time"] == 0.025 and cache["cache"]["256"]["time"] == "CompilationFailedConfig"
    results = simulate(path, "saxpy", 4096, {"block": [64, 128, 256]})
    assert [r["time"] for r in results] == [0.025, 0.0175, "CompilationFailedConfig"]


def test_writing_refuses_ambiguous_measurements_and_writes_nothing(tmp_path):
    frame = read_kernel_tuner_cache(FIXTURE)
    twice = pd.concat([frame, frame.head(1)])
    with pytest.raises(GpuperfError, match="row 9 of the table written: configuration '32,1' appears twice"):
        write_kernel_tuner_cache(twice, tmp_path / "twice.json")
    two_kernels = pd.concat([frame, frame.assign(kernel="other")])
    with pytest.raises(GpuperfError, match="2 values of 'kernel'"):
        write_kernel_tuner_cache(two_kernels, tmp_path / "two.json")
    assert list(tmp_path.iterdir()) == []


def test_text_and_fractional_parameters_round_trip_through_kernel_tuner(tmp_path):
    configs = [(s, f) for s in ("static", "dynamic") for f in (0.5, 1.0, 2.0)]
    frame = pd.DataFrame(
        {
            "kernel": "spmv", "variant": "", "gpu": "RTX 3090", "device": "NVIDIA GeForce RTX 3090", "source": "x",
            "schedule": [s for s, _ in configs], "factor": [f for _, f in configs],
            "time_s": [1e-4 * (i + 1) for i in range(len(configs))], "status": "ok",
        }
    )
    path = write_kernel_tuner_cache(frame, tmp_path / "spmv.json", tune_params_keys=["schedule", "factor"], problem_size=[1])
    results = simulate(path, "spmv", 1, json.loads(path.read_text())["tune_params"])
    assert sorted(r["time"] for r in results) == pytest.approx([0.1 * (i + 1) for i in range(len(configs))], rel=1e-15)
    back = read_kernel_tuner_cache(path)
    assert back["variant"].tolist()[:2] == ["factor=0.5,schedule=static", "factor=1,schedule=static"]
    assert sorted(zip(back["schedule"], back["factor"])) == sorted(configs)


def test_tuple_and_float32_parameters_read_as_kernel_tuner_keys_them(tmp_path):
    # Kernel Tuner keys an entry with str() of the values it tuned, (1, 2) and float32 0.1, but JSON
    # stores the tuple as a list and the float32 as its float64 expansion 0.10000000149011612.
    tuned = [((1, 2), np.float32(0.1)), ((3, 4), np.float32(0.7))]
    entries = {
        ",".join(str(v) for v in (pair, scale)): {"pair": list(pair), "scale": float(scale), "time": 1.0 + i}
        for i, (pair, scale) in enumerate(tuned)
    }
    assert list(entries) == ["(1, 2),0.1", "(3, 4),0.7"]
    cache = {"device_name": "NVIDIA RTX A4000", "kernel_name": "k", "tune_params_keys": ["pair", "scale"],
             "cache": entries}
    path = tmp_path / "k.json"
    path.write_text(json.dumps(cache))
    frame = read_kernel_tuner_cache(path)
    assert frame["pair"].tolist() == [(1, 2), (3, 4)]
    assert frame["scale"].tolist() == [float(np.float32(0.1)), float(np.float32(0.7))]
    assert frame["time_s"].tolist() == pytest.approx([1e-3, 2e-3])
    # A key that no spelling of the stored values gives is still refused.
    cache["cache"] = {"(1, 2),0.2": entries["(1, 2),0.1"]}
    path.write_text(json.dumps(cache))
    with pytest.raises(GpuperfError, match=r"cache entry '\(1, 2\),0.2' holds the parameters of '\[1, 2\],0.1"):
        read_kernel_tuner_cache(path)


def test_is_ok_ignores_case_and_spacing():
    from gpuperf.datasets.schema import is_ok

    status = pd.Series([" ok ", "OK", "ok\n", "", None, np.nan, "failed"])
    assert is_ok(status).tolist() == [True, True, True, False, False, False, False]


def test_row_location_uses_the_rows_original_label_after_filtering():
    from gpuperf.datasets.schema import ROW_NUMBERING, row_location

    # Rows 0, 3, 7 of a CSV kept after filtering: position 2 is data row 7, i.e. line 9 (header line 1).
    frame = pd.DataFrame({"x": [1, 2, 3]}, index=[0, 3, 7])
    frame.attrs[ROW_NUMBERING] = "line"
    assert row_location(frame, 2) == "line 9"
    frame.attrs[ROW_NUMBERING] = "entry"
    assert row_location(frame, 1) == "entry 4"
    # Non-unique labels: fall back to the position.
    assert row_location(pd.DataFrame({"x": [1, 2]}, index=[5, 5]), 1) == "row 2"


def test_kernel_tuner_repeat_spread_is_the_interquartile_range(tmp_path):
    from gpuperf.datasets import read_kernel_tuner_cache

    # times 1..5 ms -> 0.001..0.005 s: Q1 = 0.002, Q3 = 0.004 (numpy linear), IQR 0.002 s.
    cache = {"device_name": "NVIDIA RTX A4000", "kernel_name": "k", "tune_params_keys": ["bx"],
             "cache": {"32": {"bx": 32, "time": 3.0, "times": [5.0, 1.0, 4.0, 2.0, 3.0]}}}
    path = tmp_path / "k.json"
    path.write_text(json.dumps(cache))
    row = read_kernel_tuner_cache(path).iloc[0]
    assert row["time_s"] == pytest.approx(0.003)
    assert row["time_s_iqr"] == pytest.approx(0.002, rel=1e-12)
    assert row["time_s_min"] == pytest.approx(0.001) and row["repeats"] == 5


def test_a_zero_ms_time_is_left_out_with_one_note_naming_the_entry_and_the_count(tmp_path):
    """A time of 0 ms (a kernel faster than the timer resolves) is no measurement: the entry is left out
    with one note naming it and how many, the rest kept (the whole cache was refused); its repeats of
    0 ms get no note of their own. A negative time is still refused naming the entry."""
    from gpuperf.errors import GpuperfNote

    cache = {"device_name": "NVIDIA RTX A4000", "kernel_name": "k", "tune_params_keys": ["bx"],
             "cache": {"32": {"bx": 32, "time": 0.0, "times": [0.0, 0.0]}, "64": {"bx": 64, "time": 0.5},
                       "128": {"bx": 128, "time": 0}, "256": {"bx": 256, "time": "InvalidConfig"}}}
    path = tmp_path / "zero.json"
    path.write_text(json.dumps(cache))
    with pytest.warns(GpuperfNote) as notes:
        frame = read_kernel_tuner_cache(path)
    assert [str(n.message) for n in notes] == [f"{path}: 2 entries give a time of 0 ms, no measured time (the first: "
                                               "'32'); they are left out"]
    assert frame["bx"].tolist() == [64, 256] and frame["status"].tolist() == ["ok", "InvalidConfig"]
    cache["cache"] = {"32": {"bx": 32, "time": -0.5}, "64": {"bx": 64, "time": 0.5}}
    path.write_text(json.dumps(cache))
    with pytest.raises(GpuperfError, match=r"zero.json: cache entry '32': time=-0.5 is neither a positive number of ms"):
        read_kernel_tuner_cache(path)


def test_an_error_after_a_left_out_zero_ms_entry_names_the_entry_in_the_file(tmp_path):
    """The entries left out for a time of 0 ms shifted the numbers of the later ones: a bad value in
    entry 4 was named as in entry 2, itself a 0 ms entry left out."""
    from gpuperf.datasets.schema import row_location
    from gpuperf.decisions.space import space_from_frame
    from gpuperf.errors import GpuperfNote

    cache = {"device_name": "NVIDIA RTX A4000", "kernel_name": "k", "tune_params_keys": ["bx"],
             "cache": {"32": {"bx": 32, "time": 0}, "64": {"bx": 64, "time": 0},
                       "128": {"bx": 128, "time": 0.5, "my_ms": 1.0},
                       "256": {"bx": 256, "time": 0.7, "my_ms": "abc"}}}
    path = tmp_path / "kt.json"
    path.write_text(json.dumps(cache))
    with pytest.warns(GpuperfNote):
        frame = read_kernel_tuner_cache(path)
    assert [row_location(frame, i) for i in range(len(frame))] == ["entry 3", "entry 4"]
    with pytest.raises(GpuperfError, match=r"kt.json: entry 4: my_ms='abc' is not a positive number"):
        space_from_frame(frame, ["bx"], "my_ms", str(path))


def test_reading_a_cache_with_many_zero_ms_entries_takes_linear_work(tmp_path, monkeypatch):
    """Each entry kept was looked for in a list of the 0 ms ones: 40,000 entries, half of them 0 ms,
    took 8 s. Counted here as comparisons of the entries' keys, which a set hardly needs."""
    from gpuperf.datasets import kernel_tuner
    from gpuperf.errors import GpuperfNote

    compared = []

    class Key(str):
        __hash__ = str.__hash__

        def __eq__(self, other):
            compared.append(1)
            return str.__eq__(self, other)

    entries = {Key(str(bx)): {"bx": bx, "time": 0 if bx % 2 else 0.5} for bx in range(1, 2001)}
    cache = {"device_name": "NVIDIA RTX A4000", "kernel_name": "k", "tune_params_keys": ["bx"], "cache": entries}
    monkeypatch.setattr(kernel_tuner, "_parse", lambda path: cache)
    with pytest.warns(GpuperfNote):
        frame = read_kernel_tuner_cache(tmp_path / "many.json")
    assert len(frame) == 1000 and len(compared) < 20 * len(entries)


def test_check_dataset_refuses_a_zero_time_on_an_ok_row():
    """time_s must be > 0 (strictly) where status is ok: 0.0 s is no measured time; a failed row may
    carry anything (here NaN). Row 2 is position 1, so the error names 'row 2'."""
    from gpuperf.datasets.schema import check_dataset

    frame = pd.DataFrame({"kernel": ["k", "k", "k"], "time_s": [1e-3, 0.0, np.nan],
                          "status": ["ok", "ok", "failed"]})
    with pytest.raises(GpuperfError, match=r"t.csv: row 2: time_s=0.0 is not a positive number"):
        check_dataset(frame, "t.csv")
    assert check_dataset(frame.iloc[[0, 2]], "t.csv") is not None  # positive time, and a failed row


def test_none_and_whole_float_settings_round_trip_as_kernel_tuner_spells_them(tmp_path):
    """A cache of tune_params MODE=[None, 1] and F=[0.5, 1.0] (keys '32,None,1.0'): written back with
    or without its tune_params, Kernel Tuner finds every configuration under the original values."""
    tune_params = {"block_size_x": [32, 128], "MODE": [None, 1], "F": [0.5, 1.0]}
    keys = [(b, m, f) for b in tune_params["block_size_x"] for m in tune_params["MODE"] for f in tune_params["F"]]
    cache = {",".join(map(str, k)): {"block_size_x": k[0], "MODE": k[1], "F": k[2], "time": 1.0 + i,
                                     "times": [1.0 + i] * 3, "compile_time": 5.0, "verification_time": 0,
                                     "benchmark_time": 3.0, "strategy_time": 0, "framework_time": 0.1,
                                     "timestamp": "2026-11-27 10:00:00.000000+00:00"} for i, k in enumerate(keys)}
    original = tmp_path / "none.json"
    original.write_text(json.dumps({"device_name": "pocl", "kernel_name": "k", "problem_size": [1024],
                                    "tune_params_keys": list(tune_params), "tune_params": tune_params,
                                    "objective": "time", "cache": cache}))
    frame = read_kernel_tuner_cache(original)
    written = write_kernel_tuner_cache(frame, tmp_path / "again.json")
    assert json.loads(written.read_text())["cache"].keys() == cache.keys()
    plain = frame.copy()
    plain.attrs = {k: v for k, v in frame.attrs.items() if k != "tune_params"}  # a table read from CSV has none
    bare = write_kernel_tuner_cache(plain, tmp_path / "bare.json")
    assert {k: set(v) for k, v in json.loads(bare.read_text())["tune_params"].items()} == {
        k: set(v) for k, v in tune_params.items()}  # None as null, 1.0 as a float
    for path in (written, bare):
        results = simulate(path, "k", 1024, tune_params)
        assert sorted(r["time"] for r in results) == pytest.approx([1.0 + i for i in range(len(keys))])


def test_commands_given_a_cache_where_it_cannot_serve_say_what_does(capsys):
    from gpuperf.cli import main

    assert main(["explore", str(FIXTURE), "--target", "time"]) == 2
    assert "(a Kernel Tuner cache's time, in ms, is read as time_s, in seconds: --target time_s)" in (
        capsys.readouterr().err)
    assert main(["explore", str(FIXTURE), "--target", "compile_time"]) == 2  # every entry has one
    assert "compile_time, in ms, is read as compile_time_s, in seconds: --target compile_time_s" in (
        capsys.readouterr().err)
    assert main(["rank", "jacobi2d_5pt", "-p", "n=256", "-p", "m=256", "--train", str(FIXTURE)]) == 2
    err = capsys.readouterr().err
    assert "which a JSON file such as a Kernel Tuner cache lacks; a cache trains explore and ask (--train)" in err
    assert "import kernel-tuner" not in err


def test_rank_given_a_compressed_cache_says_what_a_cache_trains(tmp_path, capsys):
    """A .json.xz cache got 'a JSON file, not a table; ... gpuperf import kernel-tuner', whose table rank
    refuses too."""
    import lzma

    from gpuperf.cli import main

    cache = tmp_path / "kt.json.xz"
    cache.write_bytes(lzma.compress(FIXTURE.read_bytes()))
    assert main(["rank", "jacobi2d_5pt", "-p", "n=256", "-p", "m=256", "--train", str(cache)]) == 2
    err = capsys.readouterr().err
    assert "a cache trains explore and ask (--train)" in err and "import kernel-tuner" not in err


def test_a_cache_with_a_byte_order_mark_is_read(tmp_path):
    """Windows editors save UTF-8 with a byte-order mark; the CSV readers took it, the cache reader did not."""
    marked = tmp_path / "marked.json"
    marked.write_text(FIXTURE.read_text(), encoding="utf-8-sig")
    pd.testing.assert_frame_equal(read_kernel_tuner_cache(marked).drop(columns="source"),
                                  read_kernel_tuner_cache(FIXTURE).drop(columns="source"))


@pytest.mark.parametrize("mark", ["\ufeff", ""])
def test_a_utf16_cache_is_read_as_the_utf8_one(tmp_path, mark):
    """PowerShell's > writes UTF-16: the CSV readers took it, the cache reader called it no cache. Without a
    byte-order mark (.NET's Encoding.Unicode) it was called truncated or malformed at line 1. UTF-32 alike."""
    for encoding in ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"):
        wide = tmp_path / f"{encoding}.json"
        wide.write_bytes((mark + FIXTURE.read_text()).encode(encoding))
        pd.testing.assert_frame_equal(read_kernel_tuner_cache(wide).drop(columns="source"),
                                      read_kernel_tuner_cache(FIXTURE).drop(columns="source"))


def test_an_entry_given_twice_with_other_values_is_refused_not_overwritten(tmp_path):
    text = FIXTURE.read_text()
    data = json.loads(text)
    key = next(k for k, v in data["cache"].items() if isinstance(v.get("time"), float))
    entry = json.dumps(data["cache"][key])
    again = json.dumps({**data["cache"][key], "time": 0.05})
    twice = tmp_path / "twice.json"
    twice.write_text(text.replace('"cache": {', f'"cache": {{\n"{key}": {again},', 1))
    assert f'"{key}": {again}' in twice.read_text()
    with pytest.raises(GpuperfError, match=rf"twice.json: '{key}' is given twice with different values \(time "):
        read_kernel_tuner_cache(twice)
    same = tmp_path / "same.json"  # the same entry repeated loses nothing
    same.write_text(text.replace('"cache": {', f'"cache": {{\n"{key}": {entry},', 1))
    assert len(read_kernel_tuner_cache(same)) == 8
    with_nan = json.dumps({**data["cache"][key], "GFLOP/s": float("nan")})  # NaN equals itself here
    same.write_text(text.replace(f'"{key}": {entry}', f'"{key}": {with_nan}').replace(
        '"cache": {', f'"cache": {{\n"{key}": {with_nan},', 1))
    assert len(read_kernel_tuner_cache(same)) == 8


def test_a_null_device_name_is_no_name_and_a_null_kernel_name_is_refused(tmp_path):
    data = json.loads(FIXTURE.read_text())
    unnamed = tmp_path / "unnamed.json"
    unnamed.write_text(json.dumps({**data, "device_name": None}))
    frame = read_kernel_tuner_cache(unnamed)
    assert set(frame["device"]) == {""} and set(frame["gpu"]) == {""}  # as Kernel Tuner 1.5's empty name
    nameless = tmp_path / "nameless.json"
    nameless.write_text(json.dumps({**data, "kernel_name": None}))
    with pytest.raises(GpuperfError, match="nameless.json: kernel_name is None, not a kernel's name"):
        read_kernel_tuner_cache(nameless)


def test_times_or_a_millisecond_field_holding_no_numbers_is_noted(tmp_path):
    from gpuperf.errors import GpuperfNote

    data = json.loads(FIXTURE.read_text())
    key = next(iter(data["cache"]))
    data["cache"][key] = {**data["cache"][key], "times": "oops", "compile_time": "slow"}
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(data))
    with pytest.warns(GpuperfNote) as notes:
        frame = read_kernel_tuner_cache(odd)
    said = [str(note.message) for note in notes]
    assert any(s.endswith(f"odd.json: 1 entry gives times as no numbers (the first: '{key}': 'oops'); times_s is "
                          "left empty there") for s in said)
    assert any(s.endswith(f"odd.json: 1 entry gives compile_time as no number (the first: '{key}': 'slow'); "
                          "compile_time_s is left empty there") for s in said)
    assert len(frame) == 8


def test_a_cache_naming_no_device_gets_its_gpu_from_python_too():
    """Only the command line could name the GPU of a C-backend cache (empty device_name): from
    Python, import_file("kernel-tuner", ..., gpu=...) raised TypeError and read_kernel_tuner_cache
    had no way to. A cache naming its device refuses another GPU given and keeps its own name when
    the GPU given agrees with it."""
    from gpuperf.datasets import import_file

    cache = KT_1_5_CACHE
    assert set(read_kernel_tuner_cache(cache)["gpu"]) == {""}
    frame = import_file("kernel-tuner", cache, gpu="A4000")
    assert set(frame["gpu"]) == {"RTX A4000"} and set(frame["device"]) == {"A4000"}
    with pytest.raises(GpuperfError, match=r"names its device \(NVIDIA RTX A4000\); the GPU given \(K40\)"):
        read_kernel_tuner_cache(FIXTURE, gpu="K40")
    agreeing = read_kernel_tuner_cache(FIXTURE, gpu="RTX A4000")  # as nvprof and ncu imports accept it
    pd.testing.assert_frame_equal(agreeing, read_kernel_tuner_cache(FIXTURE))


def test_writing_a_cache_keeps_an_existing_file_and_names_the_device_not_its_spec(tmp_path):
    """A cache was silently replaced; a tune --out table (device opencl:0, gpu the device's name)
    was written with device_name "opencl:0"."""
    frame = pd.DataFrame({"kernel": ["k", "k"], "device": ["opencl:0"] * 2, "gpu": ["RTX 4090"] * 2,
                          "x": [1, 2], "time_s": [1e-3, 2e-3], "status": ["ok", "ok"], "problem_size": ["[1]"] * 2})
    path = tmp_path / "k.json"
    path.write_text("{}")
    with pytest.raises(GpuperfError, match=r"k.json: already exists \(another run.s output\?\); a cache is written to a new file"):
        write_kernel_tuner_cache(frame, path, tune_params_keys=["x"])
    assert path.read_text() == "{}"
    write_kernel_tuner_cache(frame, path, tune_params_keys=["x"], replace=True)
    assert json.loads(path.read_text())["device_name"] == "RTX 4090"


def test_repeats_are_counts_even_beside_failed_configurations():
    frame = read_kernel_tuner_cache(FIXTURE)
    ran = frame["status"] == "ok"
    assert frame.loc[ran, "repeats"].tolist() == [7] * int(ran.sum()) and frame.loc[~ran, "repeats"].isna().all()
    assert str(frame["repeats"].dtype) == "Int64"


def test_the_interquartile_range_is_numpys_to_the_last_bit():
    """read per entry without np.percentile's cost, the spread of a cache's times is the same number."""
    import random

    from gpuperf.datasets.kernel_tuner import _interquartile_range

    rng = random.Random(0)
    for _ in range(2000):
        values = [rng.random() * 10 ** rng.randint(-6, 2) for _ in range(rng.randint(1, 40))]
        q1, q3 = np.percentile(values, [25, 75])
        assert _interquartile_range(values) == float(q3 - q1)


def test_a_nan_among_an_entrys_times_gives_no_minimum_wherever_it_sits(tmp_path):
    """Python's min() gave NaN for [nan, a, b] but a number for [a, nan, b]; NumPy's was NaN for both. A NaN
    repeat is no time: the entry's times are left unread."""
    import json as json_module

    from gpuperf.datasets.kernel_tuner import _record

    for times in ([float("nan"), 0.0838, 0.0835], [0.0838, float("nan"), 0.0835]):
        row = _record("1", {"x": 1, "time": 0.0836, "times": times}, ["x"], "c.json")
        assert "time_s_min" not in row and "times_s" not in row, json_module.dumps(times)


@pytest.mark.parametrize(("times", "said"), [
    ([-5, 0.08, 0.08], "times that are not all positive, finite ms (the first: '{key}': [-5, 0.08, 0.08])"),
    ([0.08, 0, 0.08], "times that are not all positive, finite ms (the first: '{key}': [0.08, 0, 0.08])"),
    ([84.1, 84.2], "times whose fastest is slower than the time they give (the first: '{key}': [84.1, 84.2], "
                   "time {time!r})"),
])
def test_repeats_that_are_no_times_or_contradict_the_time_are_left_unread_with_a_note(tmp_path, times, said):
    """A negative repeat gave a negative time_s_min, repeats in s rather than ms one 1000 times time_s."""
    from gpuperf.errors import GpuperfNote

    data = json.loads(FIXTURE.read_text())
    key = next(k for k, v in data["cache"].items() if isinstance(v.get("time"), float))
    data["cache"][key]["times"] = times
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(data))
    with pytest.warns(GpuperfNote) as notes:
        frame = read_kernel_tuner_cache(odd)
    expected = "odd.json: 1 entry gives " + said.format(key=key, time=data["cache"][key]["time"])
    assert any(str(n.message).endswith(expected + "; times_s is left empty there") for n in notes)
    row = frame.iloc[list(data["cache"]).index(key)]  # rows in the cache's order
    assert pd.isna(row["time_s_min"]) and not isinstance(row["times_s"], tuple) and row["time_s"] > 0
    assert len(frame) == 8 and (frame["time_s_min"].dropna() > 0).all()


def test_repeats_whose_mean_is_the_time_to_the_last_float_step_are_read(tmp_path):
    from gpuperf.datasets.kernel_tuner import _record

    """A mean a float step below the repeats' minimum is rounding, not a contradiction."""
    row = _record("1", {"x": 1, "time": 0.09999999999999999, "times": [0.1, 0.1, 0.1]}, ["x"], "c.json")
    assert row["times_s"] == (1e-4, 1e-4, 1e-4)


@pytest.mark.parametrize("name", ["kernel", "status", "repeats", "problem_size", "time_s"])
def test_a_parameter_named_like_a_column_gpuperf_writes_is_refused_by_name(tmp_path, name):
    """A parameter 'kernel' failed in pandas ('cannot insert kernel'), 'problem_size' had every
    row's value written over by the header's."""
    cache = json.loads(FIXTURE.read_text())
    cache["tune_params_keys"] = [name if k == "tile_size" else k for k in cache["tune_params_keys"]]
    for entry in cache["cache"].values():
        entry[name] = entry.pop("tile_size")
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(cache))
    with pytest.raises(GpuperfError, match=f"{path}: tunable parameter '{name}' has the name of a column gpuperf "
                                           "writes beside the parameters"):
        read_kernel_tuner_cache(path)


def test_writing_a_table_without_a_problem_size_column_says_the_column_is_missing(tmp_path):
    frame = read_kernel_tuner_cache(FIXTURE).drop(columns=["problem_size"])
    with pytest.raises(GpuperfError, match="the measurements have no 'problem_size' column; pass problem_size$"):
        write_kernel_tuner_cache(frame, tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()
    write_kernel_tuner_cache(frame, tmp_path / "x.json", problem_size=1024)
    assert json.loads((tmp_path / "x.json").read_text())["problem_size"] == 1024


def test_rows_whose_status_is_ok_in_any_case_are_written_as_measured(tmp_path):
    """check_dataset takes "OK" and " ok" for ok; the writer took them for failures and lost the times."""
    frame = pd.DataFrame({"kernel": "k", "variant": "", "gpu": "A100", "device": "A100", "source": "x",
                          "block": [64, 128, 256], "time_s": [1e-3, 2e-3, np.nan],
                          "status": ["OK", " ok", "timeout"], "problem_size": "[4096]"})
    path = write_kernel_tuner_cache(frame, tmp_path / "c.json", tune_params_keys=["block"])
    cache = json.loads(path.read_text())["cache"]
    assert [cache[k]["time"] for k in ("64", "128")] == [1.0, 2.0] and isinstance(cache["256"]["time"], str)


def test_writing_a_table_of_tuples_leaves_the_frame_as_it_was(tmp_path):
    """The table is no longer copied whole before writing: the column of tuples is, and only it."""
    import pandas as pd

    from gpuperf.datasets import write_dataset_csv

    frame = pd.DataFrame({"kernel": ["k", "k"], "block": [(2, 1), (4, 1)], "time_s": [1e-3, 2e-3]})
    write_dataset_csv(frame, tmp_path / "t.csv")
    assert frame["block"].tolist() == [(2, 1), (4, 1)]
    assert pd.read_csv(tmp_path / "t.csv")["block"].tolist() == ["[2, 1]", "[4, 1]"]


def test_tuple_valued_parameters_round_trip_under_kernel_tuners_keys(tmp_path):
    """Block shapes as tuples (JSON lists them: [[16, 16], [32, 8]]; keys '(16, 16),1'): read, then
    written back with the cache's own tune_params, every key is the one Kernel Tuner wrote."""
    cache = {f"({b[0]}, {b[1]}),{u}": {"block": list(b), "unroll": u, "time": 1.0 + i}
             for i, (b, u) in enumerate(((b, u) for b in ((16, 16), (32, 8)) for u in (1, 2)))}
    original = tmp_path / "tuples.json"
    original.write_text(json.dumps({"device_name": "pocl", "kernel_name": "k", "problem_size": [1024],
                                    "tune_params_keys": ["block", "unroll"],
                                    "tune_params": {"block": [[16, 16], [32, 8]], "unroll": [1, 2]},
                                    "objective": "time", "cache": cache}))
    written = write_kernel_tuner_cache(read_kernel_tuner_cache(original), tmp_path / "again.json")
    assert json.loads(written.read_text())["cache"].keys() == cache.keys()


def test_kernel_tuners_output_file_is_told_apart_from_its_cache(tmp_path):
    """store_output_file's results read as a cache missing every key, with no word of what the file is."""
    results = {"results": [{"configuration": {"block_size_x": 256}, "times": {"runtimes": [1.3]},
                            "measurements": [{"name": "time", "value": 1.3, "unit": "ms"}], "objectives": ["time"]}],
               "schema_version": "1.0.0"}
    (tmp_path / "out.json").write_text(json.dumps(results))
    with pytest.raises(GpuperfError, match=r"out\.json: missing key\(s\) device_name, kernel_name, tune_params_keys, "
                                           r"cache of a Kernel Tuner cache \(this is Kernel Tuner's output file, "
                                           r"store_output_file's results, .*tune_kernel's cache= option writes\)$"):
        read_kernel_tuner_cache(tmp_path / "out.json")


def test_one_configuration_under_two_keys_is_refused_naming_both(tmp_path):
    """A cache keying 32,1 and 32.0,1 was imported as two rows of one configuration with contradictory times,
    which explore then refused; configurations match by value, as explore's do."""
    data = json.loads(FIXTURE.read_text())
    key = next(k for k, v in data["cache"].items() if isinstance(v.get("time"), float))
    first = data["cache"][key]
    params = data["tune_params_keys"]
    again = {**first, params[0]: float(first[params[0]]), "time": first["time"] * 5}
    again_key = ",".join(str(again[p]) for p in params)
    data["cache"][again_key] = again
    twice = tmp_path / "twice.json"
    twice.write_text(json.dumps(data))
    with pytest.raises(GpuperfError) as error:
        read_kernel_tuner_cache(twice)
    assert str(error.value) == (f"{twice}: entry {len(data['cache'])}: configuration {again_key} appears twice (as entry "
                                f"{list(data['cache']).index(key) + 1}'s {key}: configurations match by value, so 1, 01 "
                                "and 1.0 are one setting)")


def test_writers_refuse_measurements_that_are_not_a_dataframe_and_write_nothing(tmp_path):
    from gpuperf.datasets import check_dataset, write_dataset_csv

    rows = [{"kernel": "k", "device": "H100", "bx": 32, "time_s": 1e-3, "status": "ok"}]
    with pytest.raises(GpuperfError, match=r"c\.json: the table must be a pandas DataFrame \(got list\); "
                                           r"pandas\.DataFrame\(\.\.\.\) makes one"):
        write_kernel_tuner_cache(rows, tmp_path / "c.json", tune_params_keys=["bx"], problem_size=[1])
    with pytest.raises(GpuperfError, match=r"a\.csv: the table must be a pandas DataFrame \(got list\)"):
        write_dataset_csv(rows, tmp_path / "a.csv")
    with pytest.raises(GpuperfError, match=r"^t: the table must be a pandas DataFrame \(got dict\)"):
        check_dataset(rows[0], "t")
    assert list(tmp_path.iterdir()) == []


def test_tune_params_keys_given_as_one_string_is_refused_showing_the_list_to_write(tmp_path):
    frame = pd.DataFrame({"kernel": ["k"], "device": ["H100"], "bx": [32], "time_s": [1e-3], "status": ["ok"]})
    with pytest.raises(GpuperfError, match=r"tune_params_keys lists parameter names, e\.g\. \['bx'\], not the string "
                                           r"'bx'"):
        write_kernel_tuner_cache(frame, tmp_path / "c.json", tune_params_keys="bx", problem_size=[1])
    write_kernel_tuner_cache(frame, tmp_path / "c.json", tune_params_keys=["bx"], problem_size=[1])
    assert read_kernel_tuner_cache(tmp_path / "c.json")["bx"].tolist() == [32]


def test_a_cache_of_rows_whose_device_is_the_host_names_their_gpu(tmp_path):
    """The bundled pnpoly spaces record the host (x86_64) as their device and the GPU in ``gpu``: the
    cache written from them names the GPU, so read back it is that GPU's space, not x86_64's."""
    table = load_dataset("schoonhoven_spaces")
    rows = table[(table["kernel"] == "pnpoly") & (table["gpu"] == "Tesla K20")].head(50)
    assert set(rows["device"]) == {"x86_64"}
    params = ["block_size_x", "tile_size", "between_method", "use_precomputed_slopes", "use_method"]
    path = write_kernel_tuner_cache(rows, tmp_path / "k20.json", tune_params_keys=params, problem_size=[20000])
    assert set(read_kernel_tuner_cache(path)["gpu"]) == {"Tesla K20"}
    own = pd.DataFrame({"kernel": ["k"], "device": ["pthread-AMD EPYC"], "gpu": ["pthread-AMD EPYC"], "x": [1],
                        "time_s": [1e-3], "status": ["ok"]})  # no GPU gpuperf describes: the device as it is
    path = write_kernel_tuner_cache(own, tmp_path / "cpu.json", tune_params_keys=["x"], problem_size=[1])
    assert json.loads(path.read_text())["device_name"] == "pthread-AMD EPYC"


def test_a_compressed_cache_under_a_plain_json_name_is_told_its_name(tmp_path):
    """A gzip-compressed cache named cache.json: the name that reads it (cache.json.gz), as a table named t.csv
    is told, not 'not UTF-8 JSON text'; zip data, which no cache is read as, is told to be decompressed."""
    import zipfile

    plain = tmp_path / "cache.json"
    plain.write_bytes(gzip.compress(FIXTURE.read_bytes()))
    with pytest.raises(GpuperfError, match=r"cache\.json: gzip-compressed data under a name without \.gz: name it "
                                           r"cache\.json\.gz \(read compressed\), or decompress it$"):
        read_kernel_tuner_cache(plain)
    plain.rename(tmp_path / "cache.json.gz")
    assert len(read_kernel_tuner_cache(tmp_path / "cache.json.gz")) == 8
    with zipfile.ZipFile(tmp_path / "zipped.json", "w") as archive:
        archive.write(FIXTURE, "cache.json")
    with pytest.raises(GpuperfError, match=r"zipped\.json: zip-compressed data under a name without \.zip: "
                                           r"decompress it$"):
        read_kernel_tuner_cache(tmp_path / "zipped.json")
