"""Branches of the datasets package other tests leave unrun: a Kernel Tuner cache that is not one,
writing a cache from a table that cannot make one, and the checks on measured rows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuperf.datasets import read_kernel_tuner_cache, write_kernel_tuner_cache
from gpuperf.datasets.schema import check_dataset, measured_rows, time_column
from gpuperf.errors import GpuperfError


def cache(path: Path, **changes: object) -> Path:
    """A closed two-entry Kernel Tuner cache of vector_add over block_size_x, with ``changes`` to its keys."""
    data = {"device_name": "NVIDIA RTX A4000", "kernel_name": "vector_add", "tune_params_keys": ["block_size_x"],
            "cache": {"32": {"block_size_x": 32, "time": 1.5}, "64": {"block_size_x": 64, "time": 1.0}}}
    data.update(changes)
    path.write_text(json.dumps(data))
    return path


def test_a_well_formed_cache_reads_as_two_configurations(tmp_path):
    frame = read_kernel_tuner_cache(cache(tmp_path / "c.json"))
    assert frame["block_size_x"].tolist() == [32, 64] and frame["time_s"].tolist() == [0.0015, 0.001]


@pytest.mark.parametrize("changes, message", [
    ({"tune_params_keys": "block_size_x"}, "tune_params_keys must be a list of parameter names"),
    ({"tune_params_keys": ["block_size_x", 3]}, "tune_params_keys must be a list of parameter names"),
    ({"cache": [{"block_size_x": 32, "time": 1.5}]}, "'cache' must be an object of configurations"),
    ({"cache": {"32": 1.5}}, "cache entry '32' is not an object"),
    ({"device_name": 7}, "device_name is 7, not a device's name"),
])
def test_a_cache_with_a_malformed_field_is_refused_naming_it(tmp_path, changes, message):
    path = cache(tmp_path / "c.json", **changes)
    with pytest.raises(GpuperfError, match=f"^{re.escape(str(path))}: {re.escape(message)}$"):
        read_kernel_tuner_cache(path)


def test_a_json_file_that_is_no_object_is_not_a_kernel_tuner_cache(tmp_path):
    path = tmp_path / "c.json"
    path.write_text("[1, 2, 3]")
    with pytest.raises(GpuperfError, match=r"c\.json: not a Kernel Tuner cache \(top level is not a JSON object\)$"):
        read_kernel_tuner_cache(path)


def measured(**extra: object) -> pd.DataFrame:
    frame = pd.DataFrame({"kernel": ["k", "k"], "device": ["d", "d"], "b": [1, 2], "time_s": [0.5, 0.25],
                          "status": ["ok", "ok"], **extra})
    return frame


def test_writing_a_cache_needs_its_parameters_named_and_present(tmp_path):
    with pytest.raises(GpuperfError, match=r": say which columns are the tunable parameters \(tune_params_keys\)$"):
        write_kernel_tuner_cache(measured(), tmp_path / "c.json")
    with pytest.raises(GpuperfError, match=r": the measurements have no column\(s\) c$"):
        write_kernel_tuner_cache(measured(), tmp_path / "c.json", tune_params_keys=["b", "c"])
    assert not (tmp_path / "c.json").exists()


def test_writing_a_cache_refuses_a_parameter_without_a_value(tmp_path):
    frame = measured(c=[1.0, np.nan])
    with pytest.raises(GpuperfError, match=r"^writing .*c\.json: row 2 of the table written: parameter c has no value$"):
        write_kernel_tuner_cache(frame, tmp_path / "c.json", tune_params_keys=["b", "c"], problem_size=1024)


def test_a_written_cache_reads_back_as_the_measurements(tmp_path):
    path = write_kernel_tuner_cache(measured(), tmp_path / "c.json", tune_params_keys=["b"], problem_size=1024)
    back = read_kernel_tuner_cache(path)
    assert back["b"].tolist() == [1, 2] and back["time_s"].tolist() == [0.5, 0.25]


# -- measured rows -----------------------------------------------------------------------------------


def test_measured_rows_keep_the_rows_that_ran_with_their_times_as_numbers():
    frame = pd.DataFrame({"time_s": ["0.5", None, "2"], "status": ["ok", "compile_error", " OK "]})
    kept = measured_rows(frame, "t.csv")
    assert kept.index.tolist() == [0, 2] and kept["time_s"].tolist() == [0.5, 2.0]


def test_measured_rows_of_a_table_where_nothing_ran_is_an_error():
    frame = pd.DataFrame({"time_s": [np.nan, np.nan], "status": ["compile_error", "timeout"]})
    with pytest.raises(GpuperfError, match=r"^t\.csv: no rows with status ok$"):
        measured_rows(frame, "t.csv")


def test_a_row_that_ran_without_a_time_is_named():
    frame = pd.DataFrame({"time_s": [0.5, np.nan], "status": ["ok", "ok"]})
    with pytest.raises(GpuperfError, match=r"^t\.csv: row 2: time_s has no value \(empty or NaN\) in a row whose "
                                           r"status is ok$"):
        measured_rows(frame, "t.csv")


def test_a_missing_time_column_says_which_time_the_table_has():
    with pytest.raises(GpuperfError, match=r"^t\.csv: missing column time_s \(the measured time in seconds\); the "
                                           r"table has time_ms: give the time in seconds as time_s$"):
        measured_rows(pd.DataFrame({"time_ms": [1.0]}), "t.csv")
    with pytest.raises(GpuperfError, match=r"^t\.csv: missing column gflops \(the measured time\)$"):
        measured_rows(pd.DataFrame({"time_ms": [1.0]}), "t.csv", target="gflops")


def test_time_in_milliseconds_is_read_as_seconds_where_other_units_are_allowed():
    frame = pd.DataFrame({"time_ms": [1.5, 250.0]})
    assert time_column(frame, "t.csv") == "time_ms"
    with pytest.warns(Warning, match="time_ms"):
        kept = measured_rows(frame, "t.csv", other_units=True)
    assert kept["time_s"].tolist() == pytest.approx([0.0015, 0.25])
    with pytest.raises(GpuperfError, match=r"^t\.csv: no time_s, and 2 time columns \(time_ms, time_us\)"):
        time_column(frame.assign(time_us=[1.0, 2.0]), "t.csv")


def test_check_dataset_names_missing_columns_and_a_bad_time_only_in_rows_that_ran():
    with pytest.raises(GpuperfError, match=r"^t\.csv: missing column\(s\) kernel$"):
        check_dataset(pd.DataFrame({"time_s": [1.0]}), "t.csv")
    frame = pd.DataFrame({"kernel": ["k", "k", "k"], "time_s": [0.5, np.nan, -1.0],
                          "status": ["ok", "timeout", "ok"]})
    with pytest.raises(GpuperfError, match=r"^t\.csv: row 3: time_s=-1\.0 is not a positive number$"):
        check_dataset(frame, "t.csv")
    assert check_dataset(frame, "t.csv", require_time=False) is frame
    assert len(check_dataset(frame.iloc[:2], "t.csv")) == 2


# -- nvprof files that say less than gpuperf needs ------------------------------------------------------

DATA = Path(__file__).parent / "data"
TRACE, SUMMARY, METRICS = DATA / "nvprof_gpu_trace.csv", DATA / "nvprof_summary.csv", DATA / "nvprof_metrics.csv"


def without_lines(tmp_path: Path, source: Path, drop) -> Path:
    """``source`` copied without the lines ``drop(line)`` picks."""
    path = tmp_path / source.name
    path.write_text("".join(line for line in source.read_text().splitlines(keepends=True) if not drop(line)))
    return path


def test_an_nvprof_trace_without_its_units_row_is_refused_naming_the_line(tmp_path):
    from gpuperf.datasets import import_nvprof

    path = without_lines(tmp_path, TRACE, lambda line: line.startswith("ms,us,"))
    with pytest.raises(GpuperfError, match=r"nvprof_gpu_trace\.csv: line 5: no units row below the header \(nvprof "
                                           r"--csv writes one\)$"):
        import_nvprof(path)


def test_an_nvprof_trace_with_a_memory_unit_it_does_not_know_is_refused(tmp_path):
    from gpuperf.datasets import import_nvprof

    path = tmp_path / TRACE.name
    path.write_text(TRACE.read_text().replace(",,,,KB,B,KB,GB/s", ",,,,XB,B,KB,GB/s", 1))
    with pytest.raises(GpuperfError, match=r"line 5: Static SMem unit 'XB' is not one of B, KB, MB, GB$"):
        import_nvprof(path)


def test_an_nvprof_trace_of_copies_only_has_no_kernel_launches(tmp_path):
    from gpuperf.datasets import import_nvprof

    path = without_lines(tmp_path, TRACE, lambda line: "matMul" in line or "dotProd" in line)
    with pytest.raises(GpuperfError, match=r"nvprof_gpu_trace\.csv: no kernel launches in the trace$"):
        import_nvprof(path)


def test_an_nvprof_summary_of_copies_only_has_no_gpu_kernels(tmp_path):
    from gpuperf.datasets import import_nvprof

    path = without_lines(tmp_path, SUMMARY, lambda line: "GPU activities" in line and "CUDA memcpy" not in line)
    with pytest.raises(GpuperfError, match=r"nvprof_summary\.csv: no GPU kernels in the summary$"):
        import_nvprof(path, gpu="K40")


def test_an_nvprof_summary_without_its_units_row_is_refused(tmp_path):
    from gpuperf.datasets import import_nvprof

    path = without_lines(tmp_path, SUMMARY, lambda line: line.startswith(",%,"))
    with pytest.raises(GpuperfError, match=r"nvprof_summary\.csv: line 5: no units row below the header"):
        import_nvprof(path, gpu="K40")


def test_nvprof_metrics_without_a_header_or_without_rows_are_refused(tmp_path):
    from gpuperf.datasets import import_nvprof

    lines = METRICS.read_text().splitlines(keepends=True)
    lines[5], lines[6] = lines[6], lines[5]  # a metric row above the header
    headless = tmp_path / "headless" / METRICS.name
    headless.parent.mkdir()
    headless.write_text("".join(lines))
    with pytest.raises(GpuperfError, match=r"nvprof_metrics\.csv: line 6: no header row with Device, Kernel, Metric "
                                           r"Name \(or Event Name\), Avg above$"):
        import_nvprof(headless)
    empty = without_lines(tmp_path, METRICS, lambda line: line.startswith('"Tesla'))
    with pytest.raises(GpuperfError, match=r"nvprof_metrics\.csv: no metric or event rows$"):
        import_nvprof(empty)


def test_writing_a_cache_refuses_a_value_its_tune_params_do_not_list(tmp_path):
    with pytest.raises(GpuperfError, match=r"^writing .*c\.json: parameter b takes 2, not in tune_params$"):
        write_kernel_tuner_cache(measured(), tmp_path / "c.json", tune_params_keys=["b"], problem_size=1024,
                                 tune_params={"b": [1, 4]})
    path = write_kernel_tuner_cache(measured(), tmp_path / "c.json", tune_params_keys=["b"], problem_size=1024,
                                    tune_params={"b": [1, 2, 4]})
    assert json.loads(path.read_text())["tune_params"] == {"b": [1, 2, 4]}
