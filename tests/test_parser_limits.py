"""JSON and TOML inputs nested deeper than Python's recursion allows, or holding integers of more than
4300 digits, and compressed files too large once decompressed, are one error naming the file, not a
RecursionError, ValueError or MemoryError traceback."""

from __future__ import annotations

import json

import pytest

from gpuperf.errors import GpuperfError

DEEP_JSON = "[" * 100_000 + "]" * 100_000
LONG_INTEGER = "1" + "0" * 5000


@pytest.mark.parametrize("text, message", [(f'{{"a": {DEEP_JSON}}}', "nested too deeply to read"),
                                           (f'{{"a": {LONG_INTEGER}}}', "more than 4300 digits")])
def test_a_kernel_tuner_cache(tmp_path, text, message):
    from gpuperf.datasets.kernel_tuner import read_kernel_tuner_cache

    path = tmp_path / "cache.json"
    path.write_text(text)
    with pytest.raises(GpuperfError, match=f"{path}: .*{message}"):
        read_kernel_tuner_cache(path)


@pytest.mark.parametrize("model, message", [(DEEP_JSON, "nested too deeply to read"),
                                            (LONG_INTEGER, "more than 4300 digits"),
                                            ("[" * 700 + "]" * 700, "nested too deeply to read")])
def test_a_json_model_file(tmp_path, model, message):
    import gpuperf
    from gpuperf.models.persistence import FORMAT, FORMAT_VERSION, load_model

    header = json.dumps({"format": FORMAT, "format_version": FORMAT_VERSION, "gpuperf_version": gpuperf.__version__})
    path = tmp_path / "m.json"
    path.write_text(header[:-1] + f', "model": {model}}}')
    with pytest.raises(GpuperfError, match=f"{path}: .*{message}"):
        load_model(path)


DEEP_TOML = "a = " + "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("text, message", [(DEEP_TOML, "nested too deeply to read"),
                                           (f"a = {LONG_INTEGER}", "more than 4300 digits")])
def test_toml_inputs(tmp_path, text, message):
    from gpuperf.decisions.optimizations import load_entry
    from gpuperf.hardware.specs import _parse
    from gpuperf.measure.campaign import load_campaign

    path = tmp_path / "entry.toml"
    path.write_text(text)
    for read in (load_entry, load_campaign, lambda p: _parse(p.read_text(), str(p))):
        with pytest.raises(GpuperfError, match=f"{path}: .*{message}"):
            read(path)


def test_a_deep_metrics_json_is_not_a_report_gpuperf_wrote(tmp_path):
    from gpuperf.cli.output import _holds_tuning_report
    from gpuperf.evaluation.report import linked_plots

    (tmp_path / "metrics.json").write_text(DEEP_JSON)
    (tmp_path / "report.md").write_text("![a](a.png)")
    assert linked_plots(tmp_path / "report.md") == set()
    assert _holds_tuning_report(tmp_path) is False


def _runs_out_of_memory(*args, **kwargs):
    raise MemoryError


def test_a_kernel_tuner_cache_too_large_once_decompressed_is_one_error(tmp_path, monkeypatch):
    import gzip

    from gpuperf.datasets.kernel_tuner import read_kernel_tuner_cache

    path = tmp_path / "cache.json.gz"
    path.write_bytes(gzip.compress(b"{}"))
    monkeypatch.setattr(gzip, "decompress", _runs_out_of_memory)  # as a small file holding gigabytes would
    with pytest.raises(GpuperfError, match=f"{path}: too large once decompressed to read into this machine's memory"):
        read_kernel_tuner_cache(path)


def test_a_table_too_large_once_decompressed_is_one_error(tmp_path, monkeypatch):
    import gzip

    from gpuperf.datasets import tables

    path = tmp_path / "t.csv.gz"
    path.write_bytes(gzip.compress(b"kernel,gpu,time_s\nk,g,1\n"))
    monkeypatch.setattr(tables, "_lines", _runs_out_of_memory)  # counting the lines of a huge decompressed file
    with pytest.raises(GpuperfError, match=f"{path}: too large once decompressed to read"):
        tables.read_table_file(path)


def test_a_profilers_csv_too_large_once_decompressed_is_one_error(tmp_path, monkeypatch):
    import gzip

    from gpuperf.datasets import profiler_csv
    from gpuperf.datasets.nvprof import import_nvprof

    path = tmp_path / "trace.csv.gz"
    path.write_bytes(gzip.compress(b'"Start","Duration","Name"\n1,2,"k"\n'))
    monkeypatch.setitem(profiler_csv.OPENERS, ".gz", _runs_out_of_memory)  # as a small file holding gigabytes would
    with pytest.raises(GpuperfError, match=f"{path}: too large once decompressed to read"):
        import_nvprof(path)
