"""Details of dataset tables, their join with GPU descriptors, bundled-table formats, Kernel Tuner
caches, GPU descriptor checks and file writing that no test pinned (a mutation-testing pass changed
each and every test still passed): each is checked through the function a user calls, against a
value worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuperf.datasets import load_dataset, read_kernel_tuner_cache, write_kernel_tuner_cache
from gpuperf.datasets.join import with_gpu_features
from gpuperf.datasets.schema import measured_rows
from gpuperf.errors import GpuperfError
from test_hardware_specs import RTX_4070  # a user's own descriptor entry

DATA = Path(__file__).parent / "data"
CACHE = DATA / "kernel_tuner_vector_add.json"


def written(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# -- the GPU join ---------------------------------------------------------------------------------


def test_a_gpu_cell_of_blanks_is_an_empty_gpu_not_an_unknown_one():
    frame = pd.DataFrame({"gpu": ["Tesla K40", "   "], "x": [1, 2]})
    with pytest.raises(GpuperfError, match=r"^t\.csv: row 2: column gpu is empty$"):
        with_gpu_features(frame, "t.csv")


def test_the_gpu_join_names_the_first_row_at_fault():
    frame = pd.DataFrame({"gpu": ["Tesla K40", None, "GTX 6800", None, "GTX 6800"], "x": range(5)})
    with pytest.raises(GpuperfError, match=r"^t\.csv: row 2: column gpu is empty$"):
        with_gpu_features(frame, "t.csv")
    with pytest.raises(GpuperfError, match=r"^t\.csv: row 3: unknown GPU 'GTX 6800'"):
        with_gpu_features(frame.assign(gpu=frame["gpu"].fillna("GTX 680")), "t.csv")


def test_the_gpu_join_keeps_the_files_row_numbering(tmp_path):
    """A CSV's rows are numbered by line (header line 1): the joined table's errors number them so too."""
    from gpuperf.datasets.schema import row_location

    frame = load_dataset(written(tmp_path / "t.csv", "kernel,gpu,time_s\nk,Tesla K40,1e-3\nk,GTX 680,2e-3\n"))
    joined = with_gpu_features(frame, "t.csv")
    assert row_location(joined, 1) == "line 3" and joined["gpu_sms"].tolist() == [15.0, 8.0]


# -- dataset-shape checks -------------------------------------------------------------------------


def test_measured_rows_hold_their_times_as_numbers():
    """A failed row's text time makes the column text; the ok rows' times come back as floats."""
    frame = pd.DataFrame({"kernel": ["k", "k"], "time_s": ["0.5", "n/a"], "status": ["ok", "failed"]})
    kept = measured_rows(frame, "t.csv")
    assert kept["time_s"].tolist() == [0.5] and kept["time_s"].dtype == np.float64


def test_measured_rows_take_one_time_column_in_another_unit_as_seconds_with_a_note():
    """other_units: time_ms's 3.87533 is time_s 0.00387533 (the decimal moved), the row at fault named by
    time_ms; two such columns without time_s are ambiguous; without other_units time_s is required."""
    from gpuperf.errors import GpuperfNote

    frame = pd.DataFrame({"kernel": ["k"] * 3, "time_ms": [3.87533, 250.0, None], "status": ["ok", "ok", "failed"]})
    with pytest.warns(GpuperfNote, match=r"^t\.csv: the measured time is time_ms, taken as time_s in seconds"):
        kept = measured_rows(frame, "t.csv", other_units=True)
    assert kept["time_s"].tolist() == [0.00387533, 0.25] and kept["time_ms"].tolist() == [3.87533, 250.0]
    assert "time_s" not in frame.columns  # the caller's table is not changed
    with pytest.raises(GpuperfError, match=r"t\.csv: missing column time_s \(the measured time in seconds\); the "
                                           r"table has time_ms"):
        measured_rows(frame, "t.csv")
    bad = frame.assign(time_ms=["3", "-1", None]).rename(columns={"time_ms": "time_ns"})
    with pytest.raises(GpuperfError, match=r"t\.csv: row 2: time_ns='-1' is not a positive number"):
        measured_rows(bad, "t.csv", other_units=True)
    with pytest.raises(GpuperfError, match=r"t\.csv: no time_s, and 2 time columns \(time_ms, time_us\): which "
                                           r"one is the measured time is ambiguous"):
        measured_rows(frame.assign(time_us=1.0), "t.csv", other_units=True)
    assert measured_rows(frame.assign(time_s=1.0, time_us=2.0), "t.csv", other_units=True)["time_s"].tolist() == [1.0, 1.0]
    cycles = measured_rows(frame.assign(cycles=[7.0, 9.0, 1.0]), "t.csv", target="cycles", other_units=True)
    assert cycles["cycles"].tolist() == [7.0, 9.0] and "time_s" not in cycles.columns  # another target: as read


def test_an_infinite_time_in_a_dataset_shaped_table_is_refused_by_line(tmp_path):
    path = written(tmp_path / "inf.csv", "kernel,variant,gpu,device,source,time_s,status\n"
                                         "k,,V100,d,s,1e-3,ok\nk,,V100,d,s,inf,ok\n")
    with pytest.raises(GpuperfError, match=r"inf\.csv: line 3: time_s=inf is not a positive number"):
        load_dataset(path)


def test_a_tables_columns_are_keys_then_parameters_then_time_then_status():
    frame = read_kernel_tuner_cache(CACHE)  # the cache's tune_params_keys: block_size_x, tile_size
    assert list(frame.columns)[:9] == ["kernel", "variant", "gpu", "device", "source", "block_size_x", "tile_size",
                                       "time_s", "status"]


def test_a_caches_unknown_device_name_is_the_gpu_without_its_surrounding_blanks(tmp_path):
    cache = {"device_name": " My GPU ", "kernel_name": "k", "tune_params_keys": ["b"],
             "cache": {"1": {"b": 1, "time": 0.5}}}
    frame = read_kernel_tuner_cache(written(tmp_path / "c.json", json.dumps(cache)))
    assert frame["gpu"].tolist() == ["My GPU"] and frame["device"].tolist() == [" My GPU "]


# -- reading CSV tables ---------------------------------------------------------------------------


def test_a_header_typed_with_spaces_after_its_commas_names_the_columns_without_them(tmp_path):
    frame = load_dataset(written(tmp_path / "t.csv", "kernel, gpu, time_s\nk,V100,1e-3\n"))
    assert list(frame.columns) == ["kernel", "gpu", "time_s"] and frame["time_s"].tolist() == [1e-3]


def test_a_blank_line_inside_a_table_makes_errors_count_rows_not_lines(tmp_path):
    """Lines: header, k 1e-3, blank, k -1 (line 4). pandas skips the blank line, so the bad time is
    row 2: a line number (3, from the row's label) would point at the blank line."""
    path = written(tmp_path / "t.csv", "kernel,time_s\nk,1e-3\n\nk,-1\n")
    with pytest.raises(GpuperfError, match=r"t\.csv: row 2: time_s=-1\.0 is not a positive number"):
        load_dataset(path)


def test_a_last_row_one_field_short_without_a_line_end_is_refused_as_cut(tmp_path):
    """The header names 3 columns; the last line gives 2 and no line end: cut while written."""
    path = written(tmp_path / "cut.csv", "kernel,time_s,status\nk,1e-3,ok\nk,2e-3")
    with pytest.raises(GpuperfError, match=r"cut\.csv: line 3: 2 fields, the header has 3, and no line end"):
        load_dataset(path)


def test_a_table_holding_status_and_a_status_column_in_another_case_loads(tmp_path):
    """Only a table lacking gpuperf's own spelling is refused: here ``status`` is read, ``Status`` kept."""
    frame = load_dataset(written(tmp_path / "t.csv", "kernel,time_s,status,Status\nk,1e-3,ok,x\n"))
    assert list(frame.columns) == ["kernel", "time_s", "status", "Status"] and frame["Status"].tolist() == ["x"]


# -- a bundled table's format ---------------------------------------------------------------------

KTT_HEADER = ("BLOCK_SIZE_X,kernel,device,status,duration_us,registers,smem_bytes,cmem_bytes,global_x,global_y,"
              "local_x,local_y\n")
SCHOONHOVEN_HEADER = "kernel,gpu,device_name,block_size_x,time_mean_ms,time_median_ms,time_std_ms,n_runs\n"


def test_a_failed_ktt_row_whose_time_is_blanks_has_no_time(tmp_path):
    """A cell of blanks is an empty cell, not a value that is no number."""
    path = written(tmp_path / "ktt.csv", KTT_HEADER
                   + "16,Convolution,NVIDIA GeForce RTX 2080 Ti,Ok,1500.5,28,2944,4356,2048,128,16,8\n"
                   + "32,Convolution,NVIDIA GeForce RTX 2080 Ti,ComputationFailed, ,30,3000,4356,1024,128,32,8\n")
    frame = load_dataset(path)
    assert frame["status"].tolist() == ["ok", "ComputationFailed"]
    assert frame["time_s"].iloc[0] == 1500.5e-6 and np.isnan(frame["time_s"].iloc[1])  # us -> s


def test_a_tables_device_name_picks_the_board_its_gpu_label_leaves_open(tmp_path):
    """Label A100 alone is the A100 PCIe 40GB; the device name says SXM4 80GB, and is read first."""
    path = written(tmp_path / "s.csv", SCHOONHOVEN_HEADER + "gemm,A100,NVIDIA A100-SXM4-80GB,16,1.5,1.5,0.1,32\n")
    frame = load_dataset(path)
    assert frame["gpu"].tolist() == ["A100 SXM4 80GB"] and frame["gpu_label"].tolist() == ["A100"]
    assert frame["device"].tolist() == ["NVIDIA A100-SXM4-80GB"]


def test_a_zero_time_in_a_bundled_format_is_named_by_its_published_column(tmp_path):
    path = written(tmp_path / "ktt.csv", KTT_HEADER
                   + "16,Convolution,NVIDIA GeForce RTX 2080 Ti,Ok,0,28,2944,4356,2048,128,16,8\n")
    with pytest.raises(GpuperfError, match=r"ktt\.csv: line 2: duration_us gives time 0\.0 s, not a positive time$"):
        load_dataset(path)


def test_a_table_lacking_a_bundled_formats_converted_columns_is_not_taken_for_that_format(tmp_path):
    """Every benchmark-hub column but its ms fields (time_std_ms, ...): no format, not a crash reading them."""
    path = written(tmp_path / "hub.csv", "source,kernel,gpu,device_name,block_size_x,time_ms,status,n_times\n"
                                         "f,gemm,A100,NVIDIA A100-PCIE-40GB,16,1.5,ok,32\n")
    with pytest.raises(GpuperfError, match=r"hub\.csv: columns match neither the dataset shape"):
        load_dataset(path)


@pytest.mark.parametrize(("text", "message"), [
    ("Device,Kernel,Invocations\nTesla K40c (0),k,1\n",  # exactly an nvprof metrics header, nothing more
     r"a profiler's own CSV \(its Device, Invocations, Kernel columns\), not a table: gpuperf import nvprof"),
    ("[1, 2]\n", r"JSON text, not a CSV table"),
    ("kernel,time_s\n", r"the table has no rows$"),
    ("kernel;time_s\nk;1e-3\n", r"one column named 'kernel;time_s\.\.\.': the file is separated by ';'"),
    ("kernel\ttime_s\nk\t1e-3\n", r"one column named 'kernel\ttime_s\.\.\.': the file is separated by tabs"),
    ("sep=,\nkernel,time_s\nk,1\n",
     r"line 1: 'sep=,' is a spreadsheet's separator hint, not a header; delete that line"),
])
def test_files_that_are_no_csv_table_are_named_for_what_they_are(tmp_path, text, message):
    path = written(tmp_path / "t.csv", text)
    with pytest.raises(GpuperfError, match=r"t\.csv: " + message):
        load_dataset(path)


def test_a_bundled_table_written_out_in_the_dataset_shape_loads_back_as_it_is(tmp_path):
    """Its columns still hold a gpuperf export's (campaign, kernel_key, measured_at): the dataset shape is
    recognised first, so its source stays the dataset's name, not the file's path."""
    from gpuperf.datasets.importers import write_dataset_csv

    path = write_dataset_csv(load_dataset("stencil_spaces_pocl").head(3), tmp_path / "t.csv")
    assert load_dataset(path)["source"].tolist() == ["stencil_spaces_pocl"] * 3


def test_a_bundled_table_edited_to_the_same_size_is_read_anew(monkeypatch, tmp_path):
    """The cache key holds the file's modification time, not its size alone: one digit changed."""
    import gzip
    import os

    header = "gpu,kernel,n,time_s,bsp_pred_s\n"
    folder = tmp_path / "data"
    folder.mkdir()
    copy = folder / "gpuperfpredict_matvec_bsp.csv.gz"
    monkeypatch.setenv("GPUPERF_DATA_DIR", str(folder))
    # stored (level 0) with a fixed gzip time: the file's size follows the text's length alone
    copy.write_bytes(gzip.compress((header + "GTX-970,MMGU,256,0.000785813,0.000696147\n").encode(), 0, mtime=0))
    assert load_dataset("matvec_bsp")["time_s"].tolist() == [0.000785813]
    size = copy.stat().st_size
    copy.write_bytes(gzip.compress((header + "GTX-970,MMGU,256,0.000785814,0.000696147\n").encode(), 0, mtime=0))
    stat = copy.stat()
    os.utime(copy, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert copy.stat().st_size == size and load_dataset("matvec_bsp")["time_s"].tolist() == [0.000785814]


def test_a_schoonhoven_tables_ms_columns_land_in_seconds(tmp_path):
    path = written(tmp_path / "s.csv", SCHOONHOVEN_HEADER + "gemm,V100,Tesla V100-PCIE-32GB,16,1.5,1.25,0.1,32\n")
    row = load_dataset(path).iloc[0]  # each ms value with its decimal point moved three places
    assert (row["time_s"], row["time_s_median"], row["time_s_std"], row["repeats"]) == (0.0015, 0.00125, 0.0001, 32)
    assert row["variant"] == "block_size_x=16"


@pytest.mark.parametrize("name", ["missing.csv.gz", "missing.parquet", "missing.pq"])
def test_a_missing_table_named_by_its_suffix_is_no_such_file_not_an_unknown_dataset(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(GpuperfError, match=rf"^{name}: no such file$"):
        load_dataset(name)


def test_a_bundled_table_loaded_by_name_says_which_it_is():
    assert load_dataset("matvec_bsp").attrs["dataset"] == "matvec_bsp"


# -- writing a dataset table ----------------------------------------------------------------------


def test_list_cells_are_written_as_json_lists_like_tuples(tmp_path):
    """json.dumps, not str(): a text item in double quotes, None as null."""
    from gpuperf.datasets.importers import write_dataset_csv

    frame = pd.DataFrame({"kernel": ["k"], "time_s": [1e-3], "names": [["x", None]], "times_s": [(1e-3, 2e-3)]})
    path = write_dataset_csv(frame, tmp_path / "t.csv")
    assert path.read_text() == 'kernel,time_s,names,times_s\nk,0.001,"[""x"", null]","[0.001, 0.002]"\n'


def test_writing_a_table_into_a_missing_folder_names_the_folder(tmp_path):
    from gpuperf.datasets.importers import write_dataset_csv

    target = tmp_path / "nofolder" / "t.csv"
    with pytest.raises(GpuperfError, match=r"t\.csv: folder .*nofolder does not exist$"):
        write_dataset_csv(pd.DataFrame({"kernel": ["k"], "time_s": [1e-3]}), target)


def test_a_table_file_that_appears_while_it_is_written_is_kept(tmp_path, monkeypatch):
    """Another run (here: the writer itself, just before its rename) puts a file there: it stays."""
    import gpuperf.datasets.importers as importers

    write_csv = importers.write_csv

    def racing(frame, temporary, named):
        named.write_text("theirs\n")
        write_csv(frame, temporary, named)

    monkeypatch.setattr(importers, "write_csv", racing)
    target = tmp_path / "t.csv"
    with pytest.raises(GpuperfError, match=r"t\.csv: a file appeared there while this run wrote it; it is kept"):
        importers.write_dataset_csv(pd.DataFrame({"kernel": ["k"], "time_s": [1e-3]}), target)
    assert target.read_text() == "theirs\n" and [p.name for p in tmp_path.iterdir()] == ["t.csv"]


# -- Kernel Tuner caches ---------------------------------------------------------------------------


def test_a_cache_tuned_for_time_whose_entry_lacks_a_time_names_that_entry(tmp_path):
    """The objective message is for caches tuned for something else; for ``time`` the entry is at fault."""
    cache = {"device_name": "NVIDIA RTX A4000", "kernel_name": "k", "tune_params_keys": ["b"], "objective": "time",
             "cache": {"1": {"b": 1, "GFLOP/s": 3.0}}}
    with pytest.raises(GpuperfError, match=r"c\.json: cache entry '1' has neither 'time' nor '__error__'$"):
        read_kernel_tuner_cache(written(tmp_path / "c.json", json.dumps(cache)))


def test_failure_kinds_written_to_a_cache_become_kernel_tuners_error_names(tmp_path):
    frame = read_kernel_tuner_cache(CACHE)
    frame["status"] = frame["status"].astype(object)
    frame.loc[[0, 1, 2], "status"] = ["compilation failed", "Invalid geometry", "timeout"]
    cache = json.loads(write_kernel_tuner_cache(frame, tmp_path / "w.json").read_text())["cache"]
    # "compil" in the lowered status, then "invalid" in the lowered status, else a runtime failure
    assert [cache[key]["time"] for key in ("32,1", "32,2", "64,1")] == [
        "CompilationFailedConfig", "InvalidConfig", "RuntimeFailedConfig"]


def test_a_written_caches_device_is_the_gpu_where_the_device_column_holds_a_device_spec(tmp_path):
    """``opencl:0:1`` (platform 0, device 1) is gpuperf's device spec, as is ``cuda:0``; a row with no
    device is no second device."""
    frame = read_kernel_tuner_cache(CACHE)
    frame["device"] = ["opencl:0:1"] * 3 + [None] + ["opencl:0:1"] * 4
    header = json.loads(write_kernel_tuner_cache(frame, tmp_path / "w.json").read_text())
    assert header["device_name"] == "RTX A4000"  # the cache's gpu column


# -- GPU descriptor checks ------------------------------------------------------------------------

# An AMD entry whose FP32 peak is its FMA rate: 2 x 1 SM x 64 cores x 1000 MHz / 1000 = 128 GFLOP/s.
GOOD = {"name": "X", "vendor": "AMD", "architecture": "a", "compute_capability": "gfx1", "sms": 1,
        "cores_per_sm": 64, "boost_clock_mhz": 1000, "memory_bandwidth_gbs": 100.0, "memory_gb": 1,
        "l2_bytes": 1048576, "shared_memory_per_sm_bytes": 65536, "max_shared_memory_per_block_bytes": 65536,
        "max_threads_per_block": 1, "warp_size": 64, "peak_f32_gflops": 128.0}


@pytest.mark.parametrize("edit", [
    {"memory_bandwidth_gbs": 10.0},  # the least bandwidth taken
    {"l2_bytes": 262144},  # the least L2 taken
    {"shared_memory_per_sm_bytes": 16384, "max_shared_memory_per_block_bytes": 16384},  # the least shared memory
    {"registers_per_sm": 8192},  # the least registers
    {"memory_bandwidth_gbs": 50000.0, "memory_gb": 4096.0},  # the most bandwidth and memory taken
    {"boost_clock_mhz": 100.0, "peak_f32_gflops": 12.8},  # the least boost clock, its FMA rate 2 x 64 x 100 / 1000
    {"base_clock_mhz": 1000.0},  # a base clock equal to the boost clock
    {"base_clock_mhz": 300.0},  # 0.3 of the boost clock: above a quarter
    {"peak_f64_gflops": 129.28},  # 1.01 x the FP32 peak: the tolerance's edge
    {"peak_f32_gflops": 512.0},  # 4 x the FMA rate: a datasheet's dual issue, the tolerance's edge
    {"peak_f32_gflops": 32.0},  # a quarter of the FMA rate, the other edge
])
def test_descriptor_values_at_the_edges_of_the_checks_are_taken(edit):
    from gpuperf.hardware.specs import _spec_from_entry

    assert _spec_from_entry({**GOOD, **edit}, {}).name == "X"


@pytest.mark.parametrize(("edit", "message"), [
    ({"peak_f64_gflops": 134.4}, r"peak_f64_gflops=134\.4 is above peak_f32_gflops=128\.0"),  # 1.05 x
    ({"peak_f32_gflops": 576.0}, r"peak_f32_gflops=576\.0 is 4\.5x the FMA rate"),  # 576 / 128
    ({"warp_size": 32.5}, r"warp_size=32\.5 must be a whole number"),
    ({"base_clock_mhz": 240.0}, r"base_clock_mhz=240\.0 is below a quarter of boost_clock_mhz=1000"),
])
def test_descriptor_values_past_the_checks_are_refused(edit, message):
    from gpuperf.hardware.specs import _spec_from_entry

    with pytest.raises(GpuperfError, match=r"GPU 'X' field " + message):
        _spec_from_entry({**GOOD, **edit}, {})


def test_a_cache_whose_device_name_is_blanks_takes_the_gpu_given_and_keeps_its_own_error_names(tmp_path):
    cache = {"device_name": "  ", "kernel_name": "k", "tune_params_keys": ["b"],
             "cache": {"1": {"b": 1, "time": 0.5}, "2": {"b": 2, "__error__": "OutOfResources"}}}
    frame = read_kernel_tuner_cache(written(tmp_path / "c.json", json.dumps(cache)), gpu="RTX A4000")
    assert frame["gpu"].tolist() == ["RTX A4000"] * 2 and frame["device"].tolist() == ["RTX A4000"] * 2
    assert frame["status"].tolist() == ["ok", "OutOfResources"]  # Kernel Tuner 1.x's __error__, as written
    assert frame["time_s"].iloc[0] == 0.0005 and np.isnan(frame["time_s"].iloc[1])  # 0.5 ms


def test_writing_a_cache_from_rows_with_no_device_asks_for_the_device_name(tmp_path):
    frame = read_kernel_tuner_cache(CACHE)
    frame["device"] = None
    with pytest.raises(GpuperfError, match=r"hold 0 values of 'device'; pass device_name or select one"):
        write_kernel_tuner_cache(frame, tmp_path / "w.json")
    assert not (tmp_path / "w.json").exists()


# -- file writing rules ---------------------------------------------------------------------------


def test_writing_a_table_over_a_folder_says_it_is_a_folder(tmp_path):
    from gpuperf.datasets.importers import write_dataset_csv

    (tmp_path / "out").mkdir()
    with pytest.raises(GpuperfError, match=r"out: is a folder; give a file name for the CSV$"):
        write_dataset_csv(pd.DataFrame({"kernel": ["k"], "time_s": [1e-3]}), tmp_path / "out")


@pytest.mark.parametrize(("name", "stored"), [("t.csv.gz", b"t.csv"), ("T.CSV.GZ", b"T.CSV.GZ")])
def test_a_table_named_gz_in_any_case_is_gzipped_naming_itself_not_the_temporary_file(tmp_path, name, stored):
    """gzip's header keeps the file's name (Python drops a lower-case .gz from it), not the temporary's."""
    import gzip

    from gpuperf.datasets.importers import write_dataset_csv

    data = write_dataset_csv(pd.DataFrame({"kernel": ["k"], "time_s": [1e-3]}), tmp_path / name).read_bytes()
    assert data[:2] == b"\x1f\x8b" and data[10:data.index(b"\0", 10)] == stored  # magic, then FNAME after 10 bytes
    assert gzip.decompress(data) == b"kernel,time_s\nk,0.001\n"


def test_quadro_before_a_known_name_is_a_brand_word():
    from gpuperf.hardware import get_gpu

    assert get_gpu("NVIDIA Quadro RTX A4000").name == "RTX A4000"


def test_a_folder_of_users_gpus_takes_a_toml_suffix_in_any_case(monkeypatch, tmp_path):
    from gpuperf.hardware import get_gpu

    (tmp_path / "LAB.TOML").write_text(RTX_4070)
    monkeypatch.setenv("GPUPERF_GPUS", str(tmp_path))
    assert get_gpu("RTX 4070").sms == 46


def test_a_users_gpu_file_edited_to_the_same_size_is_read_again(monkeypatch, tmp_path):
    """The descriptors are cached under each file's modification time as well as its size."""
    import os

    from gpuperf.hardware import get_gpu

    path = tmp_path / "lab.toml"
    path.write_text(RTX_4070)
    monkeypatch.setenv("GPUPERF_GPUS", str(path))
    assert get_gpu("RTX 4070").sms == 46
    size = path.stat().st_size
    path.write_text(RTX_4070.replace("sms = 46", "sms = 47"))  # FMA rate 2 x 47 x 128 x 2475 / 1000: peak 0.98x
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert path.stat().st_size == size and get_gpu("RTX 4070").sms == 47


def test_an_unknown_gpu_is_answered_with_at_most_three_of_the_nearest_model_numbers():
    """RTX 3080: RTX 3090 and RTX 3060 Laptop share "rtx30" (5 letters, at least 4 counted); RTX 2080 Ti
    shares only "rtx" and comes from difflib's close matches, before the other RTX boards."""
    from gpuperf.hardware import get_gpu

    with pytest.raises(GpuperfError, match=r"unknown GPU 'RTX 3080'; did you mean RTX 3090, RTX 3060 Laptop, "
                                           r"RTX 2080 Ti\? \("):
        get_gpu("RTX 3080")
    with pytest.raises(GpuperfError, match=r"unknown GPU 'GTX'; did you mean GTX Titan X, GTX 1080 Ti, GTX Titan\? \("):
        get_gpu("GTX")  # held in many names: the three longest


def test_a_brand_word_alias_is_noted_as_one_board_of_several():
    """The Amaris profiles call the Quadro K5200 "Quadro": a brand word alone, taken as that board."""
    from gpuperf.hardware.specs import other_boards_note

    assert other_boards_note("Quadro") == (
        "note: 'Quadro' is taken as the Quadro K5200: name the board if it ran on another (one gpuperf does not "
        "describe is added by GPUPERF_GPUS=my_gpus.toml)")


def test_a_descriptors_machine_balance_is_its_fp32_peak_over_its_bandwidth():
    from gpuperf.hardware.specs import _spec_from_entry

    features = _spec_from_entry(GOOD, {}).as_features()
    # 128 GFLOP/s over 100 GB/s; 1 SM x 64 cores; an AMD gfx name is no NVIDIA compute capability
    assert features["gpu_flops_per_byte"] == 1.28 and features["gpu_cores"] == 64.0
    assert np.isnan(features["gpu_compute_capability"])


def test_a_boards_own_name_gets_no_note_though_another_boards_name_starts_with_it():
    """GTX Titan is a board of its own; GTX Titan X's name merely starts with it."""
    from gpuperf.hardware.specs import other_boards_note

    assert other_boards_note("GTX Titan") is None and other_boards_note("NVIDIA GeForce GTX Titan") is None
