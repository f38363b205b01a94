"""`gpuperf datasets` and `gpuperf import`."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from gpuperf.cli import main
from gpuperf.datasets import BUNDLED, read_kernel_tuner_cache
from gpuperf.datasets.bundled import data_dir
from gpuperf.datasets.ncu import import_ncu
from gpuperf.datasets.nvprof import import_nvprof
from gpuperf.errors import GpuperfError

DATA = Path(__file__).parent / "data"


def test_datasets_json_counts_rows_from_the_files(capsys):
    assert main(["datasets", "--json"]) == 0
    listed = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert set(listed) == set(BUNDLED)
    for name, info in BUNDLED.items():
        raw = pd.read_csv(data_dir() / info.file, low_memory=False)
        assert listed[name]["rows"] == len(raw)
        assert listed[name]["license"] == info.license and listed[name]["source"] == info.source
        assert listed[name]["gpus"] == len(listed[name]["gpu_names"])
    k40c = listed["k40c_traces"]
    assert k40c["gpu_names"] == ["Tesla K40"] and k40c["kernels"] == 7
    assert "GEMM" in listed["schoonhoven_spaces"]["kernel_names"]


def test_datasets_table_names_sources_and_licenses(capsys):
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert "221053" in out and "CC BY 4.0" in out and "AutoTuningAssociation/benchmark_hub" in out


def test_datasets_names_the_folder_its_files_are_in(capsys, monkeypatch, tmp_path):
    """datasets pointed to data/README.md, which an installed gpuperf has no data/ folder for: it names the
    folder the bundled data lies in, and --json each file's absolute path."""
    from gpuperf.datasets import bundled

    monkeypatch.setattr(bundled, "_bundled", lambda name, raw: pd.DataFrame({"kernel": ["k"], "gpu": ["g"]}))  # fast
    assert main(["datasets", "--json"]) == 0
    paths = [Path(row["path"]) for row in json.loads(capsys.readouterr().out)]
    assert paths == [(data_dir() / info.file).resolve() for info in BUNDLED.values()] and all(p.is_file() for p in paths)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPUPERF_DATA_DIR", "mine")  # relative to the working folder: listed absolute
    assert main(["datasets", "--json"]) == 0
    first = next(iter(BUNDLED.values()))
    assert json.loads(capsys.readouterr().out)[0]["path"] == str(tmp_path.resolve() / "mine" / first.file)
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert f"(LICENSES.md), in {tmp_path.resolve() / 'mine'}\n" in out and "data/README.md" not in out


def gzip_named(path: Path) -> bytes:
    """The file name a gzip header holds (RFC 1952: FNAME, after the ten-byte header)."""
    data = path.read_bytes()
    assert data[:2] == b"\x1f\x8b" and data[3] & 0x08, "gzip with a name"
    return data[10:data.index(b"\0", 10)]


def test_import_kernel_tuner_writes_the_dataset_csv(tmp_path, capsys):
    out = tmp_path / "vector_add.csv"
    assert main(["import", "kernel-tuner", str(DATA / "kernel_tuner_vector_add.json"), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote 8 rows (2 not ok) to {out}"
    written = pd.read_csv(out)
    expected = read_kernel_tuner_cache(DATA / "kernel_tuner_vector_add.json")
    assert written["time_s"].equals(expected["time_s"])
    assert json.loads(written["times_s"][0]) == list(expected["times_s"][0])
    gzipped = tmp_path / "vector_add.csv.gz"  # a .gz name gets gzipped text, readable as such
    assert main(["import", "kernel-tuner", str(DATA / "kernel_tuner_vector_add.json"), "--out", str(gzipped)]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(gzipped, compression="gzip"), written)
    assert gzip_named(gzipped) == b"vector_add.csv"  # not the temporary file it was written as
    capsys.readouterr()
    parquet = tmp_path / "vector_add.parquet"
    assert main(["import", "kernel-tuner", str(DATA / "kernel_tuner_vector_add.json"), "--out", str(parquet)]) == 2
    assert "name it .csv or .csv.gz" in capsys.readouterr().err and not parquet.exists()


def test_import_writes_several_files_of_one_format_as_one_table(tmp_path, capsys):
    """A Kernel Tuner cache per GPU had to be imported one at a time and the tables joined by hand before
    evaluate --protocol leave-one-gpu-out could hold a GPU out: import took one file."""
    cache = (DATA / "kernel_tuner_vector_add.json").read_text()
    a100 = tmp_path / "a100.json"
    a100.write_text(cache.replace('"NVIDIA RTX A4000"', '"NVIDIA A100-PCIE-40GB"'))
    out = tmp_path / "both.csv"
    args = ["import", "kernel-tuner", str(DATA / "kernel_tuner_vector_add.json"), str(a100), "--out", str(out)]
    assert main([*args, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["rows"], summary["failed"], summary["gpus"]) == (16, 4, ["A100 PCIe 40GB", "RTX A4000"])
    written = pd.read_csv(out)
    alone = read_kernel_tuner_cache(DATA / "kernel_tuner_vector_add.json")
    assert written["time_s"][:8].equals(alone["time_s"]) and written["time_s"][8:].reset_index(drop=True).equals(
        alone["time_s"])
    assert main(["evaluate", str(out), "--model", "lr", "--protocol", "leave-one-gpu-out", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["per_group"]) == {"A100 PCIe 40GB", "RTX A4000"}
    assert main(["import", "kernel-tuner", str(a100), str(tmp_path / "." / "a100.json"), "--out",
                 str(tmp_path / "twice.csv")]) == 2
    assert "a100.json: named twice" in capsys.readouterr().err and not (tmp_path / "twice.csv").exists()
    trace = DATA / "nvprof_gpu_trace.csv"
    assert main(["import", "nvprof", str(trace), str(a100), "--metrics", str(DATA / "nvprof_metrics.csv"), "--out",
                 str(tmp_path / "m.csv")]) == 2
    assert "--metrics joins one profile" in capsys.readouterr().err


def test_an_imported_table_has_the_permissions_of_any_file_written(tmp_path, capsys):
    """Written via a private temporary file, the table still ends up as the umask allows (0644 at 022)."""
    import os

    previous = os.umask(0o022)
    try:
        out = tmp_path / "vector_add.csv"
        assert main(["import", "kernel-tuner", str(DATA / "kernel_tuner_vector_add.json"), "--out", str(out)]) == 0
    finally:
        os.umask(previous)
    assert out.stat().st_mode & 0o777 == 0o644


def test_import_nvprof_with_metrics_and_ncu(tmp_path, capsys):
    out = tmp_path / "trace.csv"
    args = ["import", "nvprof", str(DATA / "nvprof_gpu_trace.csv"), "--metrics", str(DATA / "nvprof_metrics.csv")]
    assert main([*args, "--out", str(out)]) == 0
    assert "wrote 4 rows" in capsys.readouterr().out
    assert "achieved_occupancy" in pd.read_csv(out).columns
    assert main(["import", "ncu", str(DATA / "ncu_raw.csv"), "--out", str(tmp_path / "ncu.csv")]) == 0
    assert len(pd.read_csv(tmp_path / "ncu.csv")) == 4


def test_import_nvprof_joins_per_launch_metrics_to_the_trace(tmp_path, capsys):
    out = tmp_path / "launches.csv"
    args = ["import", "nvprof", str(DATA / "nvprof_gpu_trace.csv"), "--metrics", str(DATA / "nvprof_metric_trace.csv")]
    assert main([*args, "--out", str(out)]) == 0
    assert "wrote 4 rows (0 not ok)" in capsys.readouterr().out
    assert pd.read_csv(out)["achieved_occupancy"].tolist() == [0.892614, 0.967505, 0.981541, 0.82345]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["import", "nvprof", str(DATA / "nvprof_summary.csv"), "--gpu", "K40", "--metrics",
          str(DATA / "nvprof_metric_trace.csv")], "nvprof_summary.csv has no Correlation_ID column"),
        (["import", "kerneltuner", "x.json"], "unknown import format 'kerneltuner'; did you mean kernel-tuner"),
        (["import", "ncu", "missing.csv"], "missing.csv: no such file"),
        (["import", "ncu", str(DATA / "ncu_raw.csv"), "--metrics", "m.csv"], "--metrics goes with the nvprof format"),
        (["import", "kernel-tuner", str(DATA / "kernel_tuner_vector_add.json"), "--gpu", "K40"],
         str(DATA / "kernel_tuner_vector_add.json") + ": the cache names its device (NVIDIA RTX A4000); the GPU given "
         "(K40) contradicts it (a GPU given is for a cache that names none)"),
    ],
)
def test_import_errors_are_one_line_and_write_nothing(tmp_path, capsys, args, message):
    out = tmp_path / "out.csv"
    assert main([*args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists()


def test_gpu_names_the_device_of_a_cache_that_names_none(tmp_path, capsys):
    """Kernel Tuner's C backend leaves device_name empty: without --gpu the import is refused, as a
    profile naming no GPU is; --gpu fills the gpu and device columns."""
    out = tmp_path / "c.csv"
    cache = DATA / "kernel_tuner_1_5_c_backend.json"
    assert main(["import", "kernel-tuner", str(cache), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{cache}: the cache names no GPU (its device_name is empty); say which GPU it ran on (--gpu)" in err
    assert err.count("\n") == 1 and not out.exists()
    named = tmp_path / "named.csv"
    assert main(["import", "kernel-tuner", str(cache), "--gpu", "A4000", "--out", str(named)]) == 0
    written = pd.read_csv(named)
    assert set(written["gpu"]) == {"RTX A4000"} and set(written["device"]) == {"A4000"}


@pytest.mark.parametrize("gpu", ["", "   "])
def test_an_empty_gpu_is_refused_not_written_as_a_blank_gpu_column(tmp_path, capsys, gpu):
    """--gpu "$GPU" with the variable unset: an error, not rows naming no GPU (nvprof's summary) or a
    GPU said to contradict the cache's own (Kernel Tuner)."""
    out = tmp_path / "t.csv"
    for format_name, path in (("nvprof", DATA / "nvprof_summary.csv"),
                              ("kernel-tuner", DATA / "kernel_tuner_1_5_c_backend.json"),
                              ("kernel-tuner", DATA / "kernel_tuner_vector_add.json")):
        assert main(["import", format_name, str(path), "--gpu", gpu, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"{path}: --gpu is empty; name the GPU the times were taken on, or leave --gpu out" in err
        assert err.count("\n") == 1 and not out.exists()
    for read, path in ((import_nvprof, "nvprof_summary.csv"), (import_ncu, "ncu_raw.csv"),
                       (read_kernel_tuner_cache, "kernel_tuner_1_5_c_backend.json")):  # the library's readers too
        with pytest.raises(GpuperfError, match="--gpu is empty"):
            read(DATA / path, gpu=gpu)


def test_a_truncated_cache_writes_nothing(tmp_path, capsys):
    text = (DATA / "kernel_tuner_vector_add.json").read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: text.index('"128,2"') + 30])
    out = tmp_path / "out.csv"
    assert main(["import", "kernel-tuner", str(cut), "--out", str(out)]) == 2
    assert "cut.json: truncated or malformed Kernel Tuner cache" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [cut]


def test_a_profile_without_launches_writes_nothing_and_an_unknown_gpu_is_a_note(tmp_path, capsys):
    cache = json.loads((DATA / "kernel_tuner_vector_add.json").read_text())
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps(dict(cache, cache={})))
    out = tmp_path / "t.csv"
    assert main(["import", "kernel-tuner", str(empty), "--out", str(out)]) == 2
    assert "no launches or configurations in it; nothing to write" in capsys.readouterr().err and not out.exists()
    assert main(["import", "nvprof", str(DATA / "nvprof_summary.csv"), "--gpu", "K4O", "--out", str(out)]) == 0
    assert "note: --gpu K4O: no GPU descriptor has this name (did you mean Tesla K40?)" in capsys.readouterr().err
    assert set(pd.read_csv(out)["gpu"]) == {"K4O"}


def test_a_gpu_named_by_the_file_gets_the_notes_a_gpu_given_gets(tmp_path, capsys):
    cache = json.loads((DATA / "kernel_tuner_vector_add.json").read_text())
    for device, note in (("A100", "note: 'A100' is taken as the A100 PCIe 40GB; gpuperf also describes the A100 SXM4"),
                         ("Bogus 9000", "GPU 'Bogus 9000': no GPU descriptor has this name")):
        path = tmp_path / f"{device}.json"
        path.write_text(json.dumps(dict(cache, device_name=device)))
        out = tmp_path / f"{device}.csv"
        assert main(["import", "kernel-tuner", str(path), "--out", str(out)]) == 0
        assert note in capsys.readouterr().err
    assert main(["import", "kernel-tuner", str(DATA / "kernel_tuner_vector_add.json"), "--out", str(tmp_path / "a.csv")]) == 0
    assert "note" not in capsys.readouterr().err  # NVIDIA RTX A4000: one board, known


def test_fit_on_a_kernel_tuner_cache_says_to_import_it(capsys):
    assert main(["fit", str(DATA / "kernel_tuner_vector_add.json"), "--model", "lr", "--out", "m.json"]) == 2
    assert "a JSON file, not a table; a Kernel Tuner cache becomes one with gpuperf import kernel-tuner" in \
        capsys.readouterr().err


def test_rows_longer_than_the_header_are_read_as_the_header_says_or_refused(tmp_path):
    """pandas takes a first column the header does not name for an index, shifting every name by
    one: before, a comma at each line's end read time 2.5 as empty, and an unnamed first column
    silently put b's values under c."""
    from gpuperf.datasets.tables import read_csv
    from gpuperf.errors import GpuperfError

    trailing = tmp_path / "trailing.csv"
    trailing.write_text("a,b,time_ms\n1,16,2.5,\n1,32,1.9,\n")
    frame = read_csv(trailing)
    assert list(frame.columns) == ["a", "b", "time_ms"] and list(frame["time_ms"]) == [2.5, 1.9]
    assert list(frame["a"]) == [1, 1] and list(frame.index) == [0, 1]
    shifted = tmp_path / "shifted.csv"
    shifted.write_text("b,c,time_ms\n1,16,8,2.5\n2,32,8,1.9\n")
    with pytest.raises(GpuperfError, match=r"shifted.csv: line 2: 4 fields, the header names 3"):
        read_csv(shifted)
    late = tmp_path / "late.csv"  # empty extra fields above a value: the value's line is named
    late.write_text("a,b\n1,2,\n3,4,5\n")
    with pytest.raises(GpuperfError, match=r"late.csv: line 3: 3 fields, the header names 2"):
        read_csv(late)


def test_one_row_longer_than_the_others_is_named_without_blaming_every_row(tmp_path):
    """A first row longer than the header was said to make every row longer; a later long row gave
    pandas' "Expected 3 fields in line 3", which counts rows, not lines, past a value over two lines."""
    from gpuperf.datasets.tables import read_csv
    from gpuperf.errors import GpuperfError

    tables = {
        "first.csv": ("k,n,time_s\nk,1,2,5\nk,2,3\n", "line 2: 4 fields, the header names 3 (a value holding"),
        "later.csv": ("k,n,time_s\nk,1,2\nk,2,3,5\n", "line 3: 4 fields, where the rows before it have 3"),
        "spanning.csv": ('k,n,time_s\n"a\nb",1,2\nk,2,3,5\n', "line 4: 4 fields, where the rows before it have 3"),
        "gzipped.csv.gz": ("k,n,time_s\n\nk,1,2\nk,2,3,5\n", "line 4: 4 fields"),
        "then_short.csv": ("k,n,time_s\nk,1,2,5\nk,2\n", "line 2: 4 fields, the header names 3 (a value"),
        "trailing_comma.csv": ("k,n,time_s\nk,1,2,\nk,2,,3,5\n", "line 3: 5 fields, where the rows before it have 3"),
        "spanning_first.csv": ('k,n,time_s\n"a\nb",1,2,\nk,2,3,5\n', "line 4: 4 fields, the header names 3"),
        "blank_first.csv": ("k,n,time_s\n\nk,1,2,\nk,2,3,5\n", "line 4: 4 fields, the header names 3"),
    }
    for name, (text, message) in tables.items():
        path = tmp_path / name
        path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
        with pytest.raises(GpuperfError) as raised:
            read_csv(path)
        assert str(raised.value).startswith(f"{path}: {message}"), str(raised.value)
    late_comma = tmp_path / "late_comma.csv"  # a comma at a later line's end: read as the header says, as on line 2
    late_comma.write_text("k,n,time_s\nk,1,2\nk,2,3,\n")
    assert read_csv(late_comma).to_dict("list") == {"k": ["k", "k"], "n": [1, 2], "time_s": [2, 3]}


def test_a_row_cut_short_is_refused_naming_its_line_not_taken_for_a_failed_run(tmp_path):
    """A file cut while it was written ends in a short row: pandas fills its missing cells as empty
    and fit left it out as a row "whose status is not ok"."""
    from gpuperf.datasets.tables import read_csv, read_table_file
    from gpuperf.errors import GpuperfError

    whole = "kernel,n,status,time_s,note\nk,1,ok,0.5,\nk,2,ok,0.7,fast\n"
    assert read_csv(_written(tmp_path / "whole.csv", whole))["time_s"].tolist() == [0.5, 0.7]  # an empty last cell
    for name in ("cut.csv", "cut.csv.gz"):
        path = _written(tmp_path / name, whole + "k,3,o")
        with pytest.raises(GpuperfError, match=rf"{name}: line 4: 3 fields, the header has 5, and no line end"):
            read_table_file(path)
    # a short row that ends its line is written so (an ask table's time still to measure), as is a header
    # ending in a comma
    ask = read_csv(_written(tmp_path / "ask.csv", "bx,tile,time_ms\n32,1,0.5\n64,1\n"))
    assert ask["time_ms"].isna().tolist() == [False, True]
    assert len(read_csv(_written(tmp_path / "trailing.csv", "kernel,time_s,\nk,0.5\n"))) == 1


def test_bytes_that_are_not_utf8_in_a_table_are_named_by_line(tmp_path):
    """pandas reported a position inside its own read buffer, not the file's line."""
    from gpuperf.datasets.tables import read_csv
    from gpuperf.errors import GpuperfError

    rows = "".join(f"k,{i},0.5\n" for i in range(3000))
    for name in ("latin1.csv", "latin1.csv.gz"):
        text = ("kernel,n,time_s\n" + rows + "k\xe4,1,0.7\n").encode("latin-1")
        path = tmp_path / name
        path.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
        with pytest.raises(GpuperfError, match=rf"{name}: line 3002: bytes that are not UTF-8 text"):
            read_csv(path)


def test_a_compressed_table_named_as_plain_text_is_told_its_name(tmp_path):
    """gzip, bzip2 or xz data named .csv: the name to give it, not "bytes that are not UTF-8 text"; named
    with the suffix it is read, and a plain table whose header begins like a magic number is read too."""
    import bz2
    import lzma

    from gpuperf.datasets.tables import read_csv
    from gpuperf.errors import GpuperfError

    text = b"kernel,n,time_s\nk,1,0.5\n"
    for kind, suffix, compress in (("gzip", ".gz", gzip.compress), ("bzip2", ".bz2", bz2.compress),
                                   ("xz", ".xz", lzma.compress)):
        (tmp_path / "t.csv").write_bytes(compress(text))
        with pytest.raises(GpuperfError, match=rf"t\.csv: {kind}-compressed data under a name without \{suffix}: "
                                               rf"name it t\.csv\{suffix} \(read compressed\), or decompress it$"):
            read_csv(tmp_path / "t.csv")
        (tmp_path / f"t.csv{suffix}").write_bytes(compress(text))
        assert read_csv(tmp_path / f"t.csv{suffix}")["time_s"].tolist() == [0.5]
    (tmp_path / "bz.csv").write_bytes(b"BZh1,n,time_s\nk,1,0.5\n")
    assert list(read_csv(tmp_path / "bz.csv").columns) == ["BZh1", "n", "time_s"]


def test_a_zip_or_zstd_table_named_as_plain_text_is_told_its_name(tmp_path):
    """A zip archive (as Windows' "send to compressed folder" makes) or zstd data named .csv: the name to give
    it, as for gzip, not "bytes that are not UTF-8 text"; named .zip it is read."""
    import zipfile

    from gpuperf.datasets.tables import read_csv
    from gpuperf.errors import GpuperfError

    with zipfile.ZipFile(tmp_path / "t.csv", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("t.csv", "kernel,n,time_s\nk,1,0.5\n")
    with pytest.raises(GpuperfError, match=r"t\.csv: zip-compressed data under a name without \.zip: name it "
                                           r"t\.csv\.zip \(read compressed\), or decompress it$"):
        read_csv(tmp_path / "t.csv")
    (tmp_path / "t.csv").rename(tmp_path / "t.csv.zip")
    assert read_csv(tmp_path / "t.csv.zip")["time_s"].tolist() == [0.5]
    (tmp_path / "z.csv").write_bytes(bytes.fromhex("28b52ffd") + b"\x00" * 8)  # a zstd frame's magic number
    with pytest.raises(GpuperfError, match=r"z\.csv: zstd-compressed data under a name without \.zst: name it "
                                           r"z\.csv\.zst"):
        read_csv(tmp_path / "z.csv")


def _written(path, text):
    import gzip

    if path.suffix == ".gz":
        with gzip.open(path, "wt") as handle:
            handle.write(text)
    else:
        path.write_text(text)
    return path


def test_the_library_writer_keeps_an_existing_file_unless_told_to_replace_it(tmp_path):
    from gpuperf.datasets import write_dataset_csv

    keep = tmp_path / "keep.csv"
    keep.write_text("precious\n")
    table = pd.DataFrame({"kernel": ["k"], "time_s": [1.0]})
    with pytest.raises(GpuperfError, match=r"keep.csv: already exists \(another run.s output\?\); a table is written to a new file: name another"):
        write_dataset_csv(table, keep)
    assert keep.read_text() == "precious\n"
    write_dataset_csv(table, keep, replace=True)
    assert pd.read_csv(keep).equals(table)


def test_the_library_writer_takes_categorical_columns(tmp_path):
    """A one-GPU table read from Parquet with a categorical gpu column: writing it raised TypeError
    ('Categorical ... does not support operation any'), so predict-table wrote nothing."""
    from gpuperf.datasets import write_dataset_csv

    table = pd.DataFrame({"gpu": pd.Categorical(["H100", "H100"]), "time_s": [1e-3, 2e-3],
                          "times_s": [(1e-3, 1.1e-3), (2e-3, 2.1e-3)]})
    write_dataset_csv(table, tmp_path / "one.csv")
    written = pd.read_csv(tmp_path / "one.csv")
    assert written["gpu"].tolist() == ["H100", "H100"] and json.loads(written["times_s"][1]) == [2e-3, 2.1e-3]


def test_a_model_name_taken_as_one_of_several_boards_is_noted(tmp_path, capsys):
    from gpuperf.hardware.specs import other_boards_note

    assert other_boards_note("A100") == ("note: 'A100' is taken as the A100 PCIe 40GB; gpuperf also describes the "
                                         "A100 SXM4 80GB: name the board if it ran on another")
    assert "also describes the H100 PCIe" in other_boards_note("nvidia h100")
    for named in ("A100 PCIe 40GB", "NVIDIA A100-SXM4-80GB", "K40", "Tesla K40", "RTX 4090", "H100 SXM5 80GB",
                  "H200 SXM 141GB", "Tesla K40c"):  # a board's own name, or more of it
        assert other_boards_note(named) is None, named
    assert other_boards_note("V100") == ("note: 'V100' is taken as the Tesla V100 PCIe 32GB; gpuperf also describes "
                                         "the Tesla V100 SXM2 16GB, Tesla V100 SXM2 32GB: name the board if it ran on "
                                         "another")
    # a model name taken as a part of the board (one GCD)
    assert "taken as the Instinct MI250X GCD" in other_boards_note("MI250X")
    assert "taken as the Quadro K5200" in other_boards_note("Quadro")  # an alias that is no part of the name
    assert main(["import", "nvprof", str(DATA / "nvprof_summary.csv"), "--gpu", "P100",
                 "--out", str(tmp_path / "p.csv")]) == 0
    assert "note: 'P100' is taken as the Tesla P100 PCIe 12GB; gpuperf also describes the Tesla P100 SXM2" in (
        capsys.readouterr().err)


def test_a_table_named_as_an_archive_it_is_not_is_one_error_naming_the_file(tmp_path, capsys):
    """A CSV named .xz, .zip or .tar, a .zst without its package, or a zip of two tables: tracebacks."""
    import zipfile

    from gpuperf.datasets.tables import read_csv

    text = "kernel,gpu,n,time_s\nk,H100,1,0.5\n"
    cases = {"fake.csv.xz": "cannot be read as a .xz file", "fake.csv.zip": "cannot be read as a .zip file",
             "fake.csv.tar": r"cannot be read as a .tar file \(file could not be opened successfully\)$"}
    for name, message in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(GpuperfError, match=rf"{tmp_path / name}: {message}"):
            read_csv(tmp_path / name)
    with zipfile.ZipFile(tmp_path / "two.csv.zip", "w") as archive:
        archive.writestr("a.csv", text)
        archive.writestr("b.csv", text)
    with pytest.raises(GpuperfError, match=r"two.csv.zip: multiple entries in the archive \(a folder counts as one\); an "
                                           "archive must hold one table"):
        read_csv(tmp_path / "two.csv.zip")
    assert main(["fit", str(tmp_path / "fake.csv.xz"), "--model", "lr", "--out", str(tmp_path / "m.json")]) == 2
    assert "fake.csv.xz: cannot be read" in capsys.readouterr().err and not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("suffix, mode, long_suffix", [(".tgz", "w:gz", ".tar.gz"), (".txz", "w:xz", ".tar.xz")])
def test_a_table_named_as_a_tar_archive_by_its_short_suffix_is_one_error_saying_what_to_name_it(
        tmp_path, capsys, suffix, mode, long_suffix):
    """pandas infers no compression from .tgz: the archive's compressed bytes were read as the table's text."""
    import tarfile

    from gpuperf.datasets.tables import read_csv

    (tmp_path / "t.csv").write_text("kernel,gpu,n,time_s\nk,H100,1,0.5\n")
    with tarfile.open(tmp_path / f"t{suffix}", mode) as packed:
        packed.add(tmp_path / "t.csv", arcname="t.csv")
    with pytest.raises(GpuperfError, match=rf"t{suffix}: a tar archive named {suffix}, not read as one: name it "
                                           rf"t{re.escape(long_suffix)} if it holds one table and nothing else, or "
                                           rf"extract it \(tar -xf t{suffix}\)"):
        read_csv(tmp_path / f"t{suffix}")
    for command in (["fit", "--model", "lr", "--out", str(tmp_path / "m.json")], ["explore"],
                    ["evaluate", "--model", "lr", "--protocol", "leave-one-gpu-out"]):
        assert main([command[0], str(tmp_path / f"t{suffix}"), *command[1:]]) == 2
        err = capsys.readouterr().err
        assert f"t{suffix}: a tar archive named {suffix}" in err and "UTF-8" not in err
    assert not (tmp_path / "m.json").exists()
    (tmp_path / f"t{suffix}").rename(tmp_path / f"t{long_suffix}")
    assert read_csv(tmp_path / f"t{long_suffix}").equals(read_csv(tmp_path / "t.csv"))


@pytest.mark.parametrize("raised", [MemoryError(), "Error tokenizing data. C error: out of memory"])
def test_a_table_too_large_for_memory_is_one_error_naming_it(tmp_path, monkeypatch, raised):
    """pandas' C parser out of memory was taken for a bad table and the file read again whole to diagnose it."""
    import pandas as pd

    from gpuperf.datasets import tables

    path = tmp_path / "huge.csv.gz"
    pd.DataFrame({"a": [1], "time_s": [1.0]}).to_csv(path, index=False)

    def out_of_memory(*args, **kwargs):
        raise raised if isinstance(raised, BaseException) else pd.errors.ParserError(raised)

    monkeypatch.setattr(tables.pd, "read_csv", out_of_memory)
    monkeypatch.setattr(tables, "_refuse_profiler_output", lambda path: pytest.fail("the file was read again"))
    with pytest.raises(GpuperfError, match="huge.csv.gz: too large once decompressed to read into this machine's memory"):
        tables.read_csv(path)


def test_import_json_names_the_file_rows_and_notes(tmp_path, capsys):
    cache = json.loads((DATA / "kernel_tuner_vector_add.json").read_text())
    cache["device_name"] = ""
    first = next(iter(cache["cache"]))
    cache["cache"][first]["time"] = 0
    source = tmp_path / "cache.json"
    source.write_text(json.dumps(cache))
    out = tmp_path / "imported.csv"
    assert main(["import", "kernel-tuner", str(source), "--out", str(out), "--gpu", "A100", "--json"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["out"] == str(out) and summary["format"] == "kernel-tuner"
    assert summary["rows"] == len(pd.read_csv(out)) == 7 and summary["gpus"] == ["A100 PCIe 40GB"]
    assert summary["failed"] == 2
    assert any("a time of 0 ms" in note for note in summary["notes"])  # the importer's note
    assert any("taken as the A100 PCIe 40GB" in note for note in summary["notes"])  # the command's own
    assert not any(note.startswith("note: ") for note in summary["notes"])
    assert all(f"note: {note}" in captured.err for note in summary["notes"])  # still on stderr


def _cells(path: Path) -> pd.DataFrame:
    """The CSV at ``path`` as the text of its cells (an empty cell as "")."""
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def _same_numbers(path: Path, frame: pd.DataFrame) -> None:
    """Every numeric column of ``frame`` read back from the CSV at ``path`` as the same numbers."""
    import numpy as np

    read = pd.read_csv(path)
    for column in frame.select_dtypes("number").columns:
        assert np.array_equal(read[column].to_numpy(dtype=float), frame[column].to_numpy(dtype=float),
                              equal_nan=True), column


def test_an_nvprof_import_writes_counts_whole_and_measured_values_as_read(tmp_path, capsys):
    """The launch geometry, registers, shared memory and ids nvprof gives as 16, 25, 2048 and 116 were written
    16.0, 25.0, 2048.0 and 116.0; a metric's average (100.0, 32694613.0) is written as read."""
    out = tmp_path / "trace.csv"
    args = ["import", "nvprof", str(DATA / "nvprof_gpu_trace.csv"), "--metrics", str(DATA / "nvprof_metrics.csv")]
    assert main([*args, "--out", str(out)]) == 0
    cells = _cells(out)
    assert cells["grid.x"].tolist() == ["16", "32", "64", "4096"] and cells["block.x"].tolist() == ["16"] * 3 + ["256"]
    counts = ["registers.per.thread", "static.smem", "dynamic.smem", "correlation_id", "invocations"]
    assert cells.loc[0, counts].tolist() == ["25", "2048", "0", "116", "3"]
    measured = ["start_s", "achieved_occupancy", "gld_efficiency", "dram_utilization", "inst_executed"]
    assert cells.loc[0, measured].tolist() == ["0.254931205", "0.94722", "100.0", "1.0", "32694613.0"]
    _same_numbers(out, import_nvprof(DATA / "nvprof_gpu_trace.csv", metrics=DATA / "nvprof_metrics.csv"))


def test_counts_missing_from_some_rows_are_written_whole_with_empty_cells(tmp_path, capsys):
    """A trace and a summary imported together: the summary's rows have no geometry and the trace's no
    calls, which made both float columns (grid.x 16.0, calls 3.0)."""
    out = tmp_path / "both.csv"
    assert main(["import", "nvprof", str(DATA / "nvprof_gpu_trace.csv"), str(DATA / "nvprof_summary.csv"),
                 "--gpu", "Tesla K40", "--out", str(out)]) == 0
    cells = _cells(out)
    assert cells["grid.x"].tolist() == ["16", "32", "64", "4096", "", ""]
    assert cells["calls"].tolist() == ["", "", "", "", "3", "1"]
    assert cells["time_s_min"].tolist()[4:] == ["0.000118272", "4.864e-06"]
    read = pd.read_csv(out)
    assert read["grid.x"].tolist()[:4] == [16, 32, 64, 4096] and read["grid.x"][4:].isna().all()


@pytest.mark.parametrize(
    ("profile", "gpu", "counts", "measured"),
    [
        ("ncu_raw.csv", [], {"grid.x": "32", "ID": "0", "Process ID": "31337", "launch__grid_size": "1024",
                             "launch__block_size": "256", "launch__registers_per_thread": "38",
                             "launch__shared_mem_per_block_static": "2048"},
         {"dram__bytes_read.sum": "2103300.0", "sm__throughput.avg.pct_of_peak_sustained_elapsed": "71.82",
          "smsp__inst_executed.sum": "1344512.0"}),
        ("ncu_details.csv", ["--gpu", "RTX A4000"],
         {"grid.x": "4096", "ID": "0", "Process ID": "40211", "Launch Statistics: Block Size": "256",
          "Registers Per Thread": "16"},
         {"DRAM Frequency": "2620000000.0", "Memory Throughput": "1351270000000.0"}),
    ],
)
def test_an_ncu_import_writes_counts_whole_and_measured_values_as_read(tmp_path, capsys, profile, gpu, counts,
                                                                       measured):
    """Nsight Compute's grid, ids and launch statistics were written 32.0, 0.0, 1024.0; its measured metrics
    (a sum, a rate, a percentage) are written as read."""
    out = tmp_path / "ncu.csv"
    assert main(["import", "ncu", str(DATA / profile), *gpu, "--out", str(out)]) == 0
    first = _cells(out).iloc[0]
    assert {column: first[column] for column in counts} == counts
    assert {column: first[column] for column in measured} == measured
    _same_numbers(out, import_ncu(DATA / profile, gpu=gpu[1] if gpu else None))


def test_kernel_tuner_parameters_missing_from_some_rows_are_written_whole(tmp_path, capsys):
    """Caches tuning other parameters imported together: a parameter one cache lacks was written 1.0,
    2.0 in the other's rows, which Kernel Tuner and the variant labels spell 1, 2."""
    cache = json.loads((DATA / "kernel_tuner_vector_add.json").read_text())
    cache["tune_params_keys"] = ["block_size_x", "unroll"]
    cache["tune_params"]["unroll"] = cache["tune_params"].pop("tile_size")
    cache["cache"] = {key: {("unroll" if name == "tile_size" else name): value for name, value in entry.items()}
                      for key, entry in cache["cache"].items()}
    other = tmp_path / "unrolled.json"
    other.write_text(json.dumps(cache))
    out = tmp_path / "both.csv"
    assert main(["import", "kernel-tuner", str(DATA / "kernel_tuner_vector_add.json"), str(other), "--out",
                 str(out)]) == 0
    cells = _cells(out)
    assert cells["tile_size"].tolist() == ["1", "2"] * 4 + [""] * 8
    assert cells["unroll"].tolist() == [""] * 8 + ["1", "2"] * 4
    assert cells["variant"][9] == "block_size_x=32,unroll=2" and cells["block_size_x"][9] == "32"
    floats = json.loads((DATA / "kernel_tuner_vector_add.json").read_text())  # a cache's floats stay as it gives them
    floats["tune_params"]["tile_size"] = [1.0, 2.0]
    entries = [{**entry, "tile_size": float(entry["tile_size"])} for entry in floats["cache"].values()]
    floats["cache"] = {f"{entry['block_size_x']},{entry['tile_size']}": entry for entry in entries}
    given = tmp_path / "floats.json"
    given.write_text(json.dumps(floats))
    assert main(["import", "kernel-tuner", str(given), "--out", str(tmp_path / "floats.csv")]) == 0
    assert _cells(tmp_path / "floats.csv")["tile_size"].tolist() == ["1.0", "2.0"] * 4
