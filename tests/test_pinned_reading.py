"""Details of reading profiler CSVs, bundled tables and Kernel Tuner caches that no test pinned
(an earlier mutation-testing pass changed each and every test still passed): each is checked here
through the importer a user calls, against a value worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuperf.datasets import import_ncu, import_nvprof, load_dataset, read_kernel_tuner_cache, write_kernel_tuner_cache
from gpuperf.errors import GpuperfError, GpuperfNote
from gpuperf.evaluation.feature_columns import default_features
from test_datasets_profilers import edited

DATA = Path(__file__).parent / "data"
TRACE, METRICS, NCU = DATA / "nvprof_gpu_trace.csv", DATA / "nvprof_metrics.csv", DATA / "ncu_raw.csv"
DETAILS, CACHE = DATA / "ncu_details.csv", DATA / "kernel_tuner_vector_add.json"
METRICS_HEADER = '"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"\n'


def written(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# -- nvprof ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "gb_s"), [
    ("2048.000000B/s", 2.048e-6),
    ("640.000000KB/s", 0.00064),
    ("512.500000MB/s", 0.5125),
    ("149.200000GB/s", 149.2),
    ("1.250000TB/s", 1250.0),
])
def test_nvprof_throughputs_in_any_unit_land_in_gb_per_s(tmp_path, text, gb_s):
    """nvprof prints a throughput in the unit that suits it (B/s ... TB/s); the dataset holds GB/s."""
    path = written(tmp_path / "metrics.csv", METRICS_HEADER + f'"Tesla K40c (0)","k(int)",1,"dram_read_throughput",'
                                                             f'"Device Memory Read Throughput",{text},{text},{text}\n')
    assert import_nvprof(path)["dram_read_throughput"].tolist() == [gb_s]


def test_an_nvprof_table_with_two_time_columns_is_refused_by_name(tmp_path):
    """A Rodinia-style table with two time columns: which is the kernel's time is the user's call."""
    path = written(tmp_path / "a.csv", "kernel,gpu,duration_us,time_ms\nk,Tesla K40c (0),250,9.5\n")
    with pytest.raises(GpuperfError, match=r"a\.csv: 2 time columns \(duration_us, time_ms\); keep the one"):
        import_nvprof(path)
    only_ms = import_nvprof(written(tmp_path / "b.csv", "kernel,gpu,time_ms,n\nk,Tesla K40c (0),9.5,250\n"))
    assert only_ms["time_s"].tolist() == [0.0095] and only_ms["n"].tolist() == [250]


def test_nvprof_metrics_keep_each_kernels_invocations_out_of_the_features(tmp_path):
    alone = import_nvprof(METRICS)
    assert alone["invocations"].tolist() == [3, 1]  # the Invocations column, per kernel
    assert "invocations" not in default_features(alone)  # a count of launches profiled, not of the kernel
    assert import_nvprof(TRACE, metrics=METRICS)["invocations"].tolist() == [3, 3, 3, 1]
    lacking = written(tmp_path / "events.csv",
                      '"Device","Kernel","Event Name","Min","Max","Avg"\n'
                      '"Tesla K40c (0)","k(int)","inst_executed",69632,69632,69632\n')
    frame = import_nvprof(lacking)  # an older file without the column: invocations unknown
    assert frame["invocations"].isna().all() and frame["inst_executed"].tolist() == [69632]


def test_nvprof_metrics_read_alone_name_the_canonical_gpu(tmp_path):
    alone = import_nvprof(METRICS)
    assert set(alone["gpu"]) == {"Tesla K40"} and set(alone["device"]) == {"Tesla K40c (0)"}
    unknown = written(tmp_path / "metrics.csv", METRICS_HEADER + '"Foo GPU (1)","k(int)",1,"achieved_occupancy",'
                                                                '"Achieved Occupancy",0.5,0.5,0.5\n')
    frame = import_nvprof(unknown)  # a GPU no descriptor knows: its name, the device index dropped
    assert frame["gpu"].tolist() == ["Foo GPU"] and frame["device"].tolist() == ["Foo GPU (1)"]


def test_an_nvprof_metric_given_as_a_dash_is_missing(tmp_path):
    path = written(tmp_path / "metrics.csv", METRICS_HEADER + '"Tesla K40c (0)","k(int)",1,"achieved_occupancy",'
                                                             '"Achieved Occupancy",-,-,-\n')
    assert np.isnan(import_nvprof(path)["achieved_occupancy"].iloc[0])


def test_an_nvprof_trace_row_with_one_cell_too_many_is_refused_by_line(tmp_path):
    path = edited(tmp_path, TRACE, "int) [116]\",116", "int) [116]\",116,117")
    with pytest.raises(GpuperfError, match=r"nvprof_gpu_trace.csv: line 8: 21 cells, the header has 20$"):
        import_nvprof(path)


@pytest.mark.parametrize("importer", ["nvprof", "ncu"])
def test_a_gpu_given_as_the_model_of_an_nvl_board_is_no_contradiction(tmp_path, importer):
    """NVL names a board of the model (as SXM and PCIe do): --gpu H100 agrees with an H100 NVL profile."""
    if importer == "nvprof":
        path, read = edited(tmp_path, TRACE, "Tesla K40c (0)", "NVIDIA H100 NVL (0)", count=-1), import_nvprof
    else:
        path, read = edited(tmp_path, NCU, "NVIDIA RTX A4000", "NVIDIA H100 NVL", count=-1), import_ncu
    frame = read(path, gpu="H100")
    assert set(frame["device"]) == {"NVIDIA H100 NVL" + (" (0)" if importer == "nvprof" else "")}
    assert set(frame["gpu"]) == {"NVIDIA H100 NVL"}  # the profile's own name, not H100 SXM
    with pytest.raises(GpuperfError, match="the profile names its GPU, NVIDIA H100 NVL.*--gpu H200 contradicts it"):
        read(path, gpu="H200")


# -- Nsight Compute -------------------------------------------------------------------------------


def test_ncu_launch_columns_stay_text_and_out_of_the_features():
    frame = import_ncu(NCU)
    assert frame["Context"].tolist() == ["1"] * 4 and frame["Stream"].tolist() == ["7"] * 4
    assert frame["CC"].tolist() == ["8.6"] * 4 and frame["Process Name"].tolist() == ["matmul"] * 4
    assert not {"Context", "Stream", "CC", "Process Name"} & set(default_features(frame))
    assert not {"Context", "Stream", "CC", "Process Name"} & set(frame.attrs["units"])
    details = import_ncu(DETAILS, gpu="H100")
    assert details["CC"].tolist() == ["9.0", "9.0"] and details["Process Name"].tolist() == ["saxpy", "saxpy"]
    assert details["Context"].tolist() == ["1", "1"] and details["Stream"].tolist() == ["7", "7"]


@pytest.mark.parametrize(("byte_unit", "time_unit", "first_bytes", "first_time"), [
    ("Kbyte", "usecond", 2103300.0, 62.27e-6),
    ("Kbytes", "usec", 2103300.0, 62.27e-6),  # a plural count unit, an abbreviated time unit
    ("Mbytes", "nsec", 2103300000.0, 62.27e-9),
    ("byte", "msec", 2103.3, 62.27e-3),
])
def test_ncu_unit_spellings_scale_to_bytes_and_seconds(tmp_path, byte_unit, time_unit, first_bytes, first_time):
    path = edited(tmp_path, NCU, '"Kbyte","usecond"', f'"{byte_unit}","{time_unit}"')
    frame = import_ncu(path)
    assert frame["dram__bytes_read.sum"].iloc[0] == first_bytes and frame["time_s"].iloc[0] == first_time
    assert frame.attrs["units"]["dram__bytes_read.sum"] == "byte"


def test_an_ncu_value_given_as_a_dash_is_missing(tmp_path):
    path = edited(tmp_path, NCU, '"71.82"', '"-"')
    values = import_ncu(path)["sm__throughput.avg.pct_of_peak_sustained_elapsed"]
    assert np.isnan(values.iloc[0]) and values.iloc[1:].tolist() == [80.15, 82.47, 18.33]


# -- a bundled table's format ---------------------------------------------------------------------

KTT = ("BLOCK_SIZE_X,BLOCK_SIZE_Y,kernel,device,status,duration_us,registers,smem_bytes,cmem_bytes,global_x,global_y,"
       "local_x,local_y\n"
       "16,8,Convolution,NVIDIA GeForce RTX 2080 Ti,Ok,1500.5,28,2944,4356,2048,128,16,8\n"
       "32,8,Convolution,NVIDIA GeForce RTX 2080 Ti,Ok,1200.25,30,3000,4356,1024,128,32,8\n")
KTT_FEATURES = {"registers", "smem_bytes", "cmem_bytes", "global_x", "global_y", "local_x", "local_y"}


def test_a_ktt_resources_tables_resources_are_features_not_tuning_parameters(tmp_path):
    frame = load_dataset(written(tmp_path / "ktt.csv", KTT))
    assert frame.attrs["parameters"] == ["BLOCK_SIZE_X", "BLOCK_SIZE_Y"]
    assert frame["variant"].tolist() == ["BLOCK_SIZE_X=16,BLOCK_SIZE_Y=8", "BLOCK_SIZE_X=32,BLOCK_SIZE_Y=8"]
    assert frame["registers"].tolist() == [28, 30] and frame["time_s"].tolist() == [1500.5e-6, 1200.25e-6]
    bundled = load_dataset("benchmark_hub_ktt_resources")
    assert not KTT_FEATURES & set(bundled.attrs["parameters"]) and KTT_FEATURES <= set(bundled.columns)
    assert not any(f"{name}=" in label for label in bundled["variant"].unique() for name in KTT_FEATURES)


# -- Kernel Tuner caches ---------------------------------------------------------------------------


def test_a_cache_entrys_times_holding_a_non_number_are_left_empty_with_a_note(tmp_path):
    data = json.loads(CACHE.read_text())
    data["cache"]["32,1"]["times"] = [0.0852, "n/a", 0.0835]
    path = written(tmp_path / "odd.json", json.dumps(data))
    with pytest.warns(GpuperfNote, match=r"odd.json: 1 entry gives times as no numbers \(the first: '32,1': "
                                         r"\[0.0852, 'n/a', 0.0835\]\); times_s is left empty there"):
        frame = read_kernel_tuner_cache(path)
    row = frame.iloc[0]
    assert (row["block_size_x"], row["tile_size"], row["time_s"]) == (32, 1, 0.0841e-3)
    assert pd.isna(row["times_s"]) and np.isnan(row["time_s_min"]) and pd.isna(row["repeats"])
    assert frame["repeats"].iloc[1] == 7  # the next entry keeps its own


def test_a_caches_problem_size_round_trips(tmp_path):
    frame = read_kernel_tuner_cache(CACHE)
    assert set(frame["problem_size"]) == {"[1048576]"}  # the header's value as JSON text, on each row
    again = json.loads(write_kernel_tuner_cache(frame, tmp_path / "again.json").read_text())
    assert again["problem_size"] == [1048576]
    data = json.loads(CACHE.read_text()) | {"problem_size": [4096, 2048]}
    two = read_kernel_tuner_cache(written(tmp_path / "two.json", json.dumps(data)))
    assert set(two["problem_size"]) == {"[4096, 2048]"}
    two_again = json.loads(write_kernel_tuner_cache(two, tmp_path / "two_again.json").read_text())
    assert two_again["problem_size"] == [4096, 2048]


def test_a_written_caches_header_keeps_the_parameter_order_and_objective(tmp_path):
    """Kernel Tuner refuses a cache whose tune_params_keys are not its tune_params' keys in order."""
    frame = read_kernel_tuner_cache(CACHE)
    keys = ["tile_size", "block_size_x"]
    given = {"tile_size": [2, 1], "block_size_x": [256, 128, 64, 32]}
    header = json.loads(write_kernel_tuner_cache(frame, tmp_path / "given.json", tune_params_keys=keys,
                                                 tune_params=given, objective="GFLOP/s").read_text())
    assert header["tune_params_keys"] == keys and list(header["tune_params"]) == keys
    assert header["tune_params"] == given and header["objective"] == "GFLOP/s"
    assert list(header["cache"])[:2] == ["1,32", "2,32"]  # each key in tune_params_keys' order
    shuffled = frame.iloc[[5, 0, 3, 6, 1, 7, 2, 4]]
    shuffled.attrs = {"parameters": ["block_size_x", "tile_size"]}  # as a table file read back: no tune_params
    header = json.loads(write_kernel_tuner_cache(shuffled, tmp_path / "own.json").read_text())
    assert header["tune_params"] == {"block_size_x": [32, 64, 128, 256], "tile_size": [1, 2]}  # ascending by value
    assert header["objective"] == "time"


def test_whole_numbers_past_2_to_the_53_beside_an_empty_cell_keep_apart(tmp_path, capsys):
    """pandas reads an integer column with one empty cell as float64, where 9007199254740993 is 9007199254740992:
    the column is read again from its text, so explore sees two configurations, not one 'appearing twice'."""
    from gpuperf.cli import main
    from gpuperf.datasets.tables import read_csv

    path = tmp_path / "bp.csv"
    path.write_text("a,b,time_ms\n9007199254740992,1e20,1\n9007199254740993,,2\n,2e20,3\n")
    frame = read_csv(path)
    assert frame["a"].tolist()[:2] == [2**53, 2**53 + 1] and pd.isna(frame["a"].iloc[2])
    assert frame["b"].dtype == np.float64  # written as floats: left as read
    small = tmp_path / "small.csv"
    small.write_text("a,time_ms\n1,1\n,2\n")
    assert read_csv(small)["a"].dtype == np.float64  # nothing past 2**53: as pandas reads it
    path.write_text("a,time_ms\n9007199254740992,1\n9007199254740993,2\n,3\n")
    assert main(["explore", str(path), "--params", "a", "--json"]) == 0
