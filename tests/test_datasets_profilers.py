"""nvprof and Nsight Compute CSVs in the dataset shape, and one clear error for each malformed copy."""

from __future__ import annotations

import re
import warnings

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuperf.datasets import import_file, import_ncu, import_nvprof, load_dataset
from gpuperf.datasets.bundled import data_dir
from gpuperf.datasets.ncu import scale
from gpuperf.datasets.profiler_csv import contradicts, kernel_short_name, parameter_signature
from gpuperf.errors import GpuperfError, GpuperfNote

DATA = Path(__file__).parent / "data"
TRACE, METRICS, NCU = DATA / "nvprof_gpu_trace.csv", DATA / "nvprof_metrics.csv", DATA / "ncu_raw.csv"
DETAILS, SUMMARY = DATA / "ncu_details.csv", DATA / "nvprof_summary.csv"
METRIC_TRACE = DATA / "nvprof_metric_trace.csv"


def edited(tmp_path: Path, source: Path, old: str, new: str, count: int = 1) -> Path:
    text = source.read_text()
    assert old in text
    path = tmp_path / source.name
    path.write_text(text.replace(old, new, count))
    return path


def test_nvprof_trace_keeps_kernel_launches_with_their_durations():
    frame = import_nvprof(TRACE)
    assert frame["kernel"].tolist() == ["matMul_sharedmem"] * 3 + ["dotProd<float>"]  # copies and sets left out
    assert frame["time_s"].tolist() == [118.272e-6, 880.417e-6, 6919.904e-6, 4.864e-6]  # Duration in us
    assert frame["grid.x"].tolist() == [16, 32, 64, 4096]
    assert frame["static.smem"].tolist() == [2048, 2048, 2048, 1024]  # KB -> bytes
    assert set(frame["gpu"]) == {"Tesla K40"} and set(frame["device"]) == {"Tesla K40c (0)"}
    assert (frame["status"] == "ok").all()


def test_nvprof_trace_duration_unit_comes_from_the_units_row(tmp_path):
    path = edited(tmp_path, TRACE, "\nms,us,", "\nms,ms,")
    frame = import_nvprof(path)
    np.testing.assert_allclose(frame["time_s"], import_nvprof(TRACE)["time_s"] * 1e3, rtol=1e-15)


def test_nvprof_summary_gives_each_kernel_its_average():
    with pytest.raises(GpuperfError, match="the profile names no GPU .*--gpu"):
        import_nvprof(DATA / "nvprof_summary.csv")
    frame = import_nvprof(DATA / "nvprof_summary.csv", gpu="K40")
    assert (frame["gpu"] == "Tesla K40").all()
    assert frame["kernel"].tolist() == ["matMul_sharedmem", "dotProd<float>"]  # no copies, no API calls
    assert frame["time_s"].tolist() == [2639.531e-6, 4.864e-6]
    assert frame["time_s_min"].tolist() == [118.272e-6, 4.864e-6]
    assert frame["calls"].tolist() == [3, 1]  # launches averaged, not repetitions of one benchmark
    assert "repeats" not in frame.columns


def test_an_nvprof_summarys_call_count_is_no_default_feature():
    from gpuperf.evaluation.feature_columns import default_features

    frame = import_nvprof(SUMMARY, gpu="K40").assign(flop_count_sp=[10.0, 20.0])
    assert default_features(frame) == ["flop_count_sp"]


def test_a_gpu_given_for_a_profile_that_names_another_is_refused():
    with pytest.raises(GpuperfError, match="the profile names its GPU, .*--gpu H100 contradicts it"):
        import_nvprof(TRACE, gpu="H100")
    with pytest.raises(GpuperfError, match="line 9: the profile names its GPU, NVIDIA RTX A4000; --gpu H100"):
        import_ncu(DATA / "ncu_raw.csv", gpu="H100")
    assert (import_ncu(DATA / "ncu_raw.csv", gpu="A4000")["gpu"] == "RTX A4000").all()  # a shorter name of it
    assert (import_nvprof(TRACE, gpu="K40")["gpu"] == "Tesla K40").all()


@pytest.mark.parametrize(
    ("device", "given", "contradiction"),
    [
        ("GeForce GTX 1080 Ti (0)", "GTX 1080", True),  # the Ti is another GPU
        ("NVIDIA GeForce RTX 3090 Ti (0)", "RTX 3090", True),
        ("NVIDIA A100-SXM4-80GB", "A10", True),  # a prefix of a word is not the word
        ("Tesla K40c (0)", "0", True),  # the device index is not a name
        ("NVIDIA A100-SXM4-80GB", "A100", False),  # only board words follow
        ("NVIDIA H100 80GB HBM3", "H100", False),
        ("GeForce GTX 1080 Ti (0)", "GTX 1080 Ti", False),
        ("Tesla K40c (0)", "K40", False),  # the same descriptor
    ],
)
def test_a_gpu_given_contradicts_a_device_unless_it_names_the_same_model(device, given, contradiction):
    assert contradicts(device, given) is contradiction


def test_nvprof_metrics_join_the_trace_or_stand_alone():
    joined = import_nvprof(TRACE, metrics=METRICS)
    assert len(joined) == 4
    assert joined["achieved_occupancy"].tolist() == [0.947220] * 3 + [0.823450]
    assert joined["gld_efficiency"].tolist() == [100.0] * 4  # "100.000000%"
    assert joined["dram_read_throughput"].tolist() == [9.8507] * 3 + [146.98]  # GB/s
    assert joined["dram_utilization"].tolist() == [1, 1, 1, 5]  # "Low (1)", "Mid (5)"
    alone = import_nvprof(METRICS)
    assert alone["kernel"].tolist() == ["matMul_sharedmem", "dotProd<float>"]
    assert set(alone["status"]) == {"untimed"} and alone["time_s"].isna().all()
    assert alone["inst_executed"].tolist() == [32694613, 69632]


def test_nvprof_table_in_the_bundled_rodinia_format():
    frame = import_nvprof(data_dir() / "gpuperfpredict_rodinia_nvprof.csv.gz")
    bundled = load_dataset("rodinia_nvprof")
    pd.testing.assert_frame_equal(frame.drop(columns="source"), bundled.drop(columns="source"))


def test_ncu_raw_page_with_units_and_thousands_separators():
    frame = import_ncu(NCU)
    assert frame["kernel"].tolist() == ["matmul_tiled<16>"] * 3 + ["vector_add"]
    assert frame["time_s"].tolist() == [62.27e-6, 447.94e-6, 3437.06e-6, 27.65e-6]  # usecond, "3,437.06"
    assert frame["launch__grid_size"].tolist() == [1024, 4096, 16384, 4096]
    assert frame["smsp__inst_executed.sum"].tolist() == [1344512, 10747904, 85983232, 98304]
    assert frame["dram__bytes_read.sum"].tolist() == [2103300, 8397570, 33591230, 8388610]  # Kbyte -> byte
    assert frame["grid.x"].tolist() == [32, 64, 128, 4096] and frame["block.y"].tolist() == [16, 16, 16, 1]
    assert set(frame["gpu"]) == {"RTX A4000"}
    assert frame.attrs["units"]["dram__bytes_read.sum"] == "byte"


@pytest.mark.parametrize("bad", ["62,27", "6,22,7", "62,2700", ",627", "0,125"])
def test_a_comma_that_is_no_thousands_separator_is_refused_not_dropped(tmp_path, bad):
    """A decimal comma (62,27 us from a German locale) read as 6227 us made times 100x too long."""
    path = edited(tmp_path, NCU, '"62.27"', f'"{bad}"')
    with pytest.raises(GpuperfError, match=rf"line 9: gpu__time_duration.sum='{bad}' is not a number"):
        import_ncu(path)


def test_bytes_that_are_not_utf8_are_replaced_with_a_note_naming_their_line(tmp_path):

    path = tmp_path / "latin1.csv"
    path.write_bytes(TRACE.read_bytes().replace(b"matMul", b"m\xe4tMul", 1))
    line = TRACE.read_bytes().split(b"matMul", 1)[0].count(b"\n") + 1
    with pytest.warns(GpuperfNote, match=rf"latin1.csv: line {line}: bytes that are not UTF-8 text, read as"):
        frame = import_nvprof(path)
    assert "m\ufffdtMul_sharedmem" in set(frame["kernel"])


@pytest.mark.parametrize(("reader", "source", "message"), [
    ("nvprof", "ncu_raw.csv", "an Nsight Compute (ncu --csv) file, not nvprof's: gpuperf import ncu reads it"),
    ("nvprof", "ncu_details.csv", "an Nsight Compute (ncu --csv) file, not nvprof's: gpuperf import ncu reads it"),
    ("ncu", "nvprof_gpu_trace.csv", "an nvprof file, not Nsight Compute's: gpuperf import nvprof reads it"),
    ("ncu", "nvprof_metrics.csv", "an nvprof file, not Nsight Compute's: gpuperf import nvprof reads it"),
])
def test_the_other_profilers_file_names_the_importer_that_reads_it(reader, source, message):
    """Before: 'not a readable CSV table (Error tokenizing data ...)' and the like."""
    with pytest.raises(GpuperfError, match=re.escape(message)):
        import_file(reader, DATA / source)


@pytest.mark.parametrize("prefix", ["==27954==", "========"])  # a profile read back with nvprof -i names no process
def test_an_nvprof_warning_in_the_file_is_passed_on(tmp_path, prefix):
    path = tmp_path / "warned.csv"
    warning = f"{prefix} Warning: 3 records have invalid timestamps due to insufficient device buffer space."
    path.write_text(TRACE.read_text() + warning + "\n")
    line = len(TRACE.read_text().splitlines()) + 1
    with pytest.warns(GpuperfNote, match=rf"warned.csv: line {line}: nvprof warned: 3 records have invalid timestamps"):
        assert len(import_nvprof(path)) == len(import_nvprof(TRACE))


def test_an_ncu_error_in_the_file_is_passed_on(tmp_path):
    """ncu that fails on a kernel profiles no more: its table holds only the launches before. Before, its
    ==ERROR== lines went unsaid and the short profile was imported as if whole."""
    lines = NCU.read_text().splitlines()
    failed = ['==PROF== Profiling "matmul_tiled" - 4: 0%....50%.... - 9 passes',
              '==ERROR== Failed to profile "matmul_tiled" in process 31337',
              "==PROF== Trying to shutdown target application",
              "==ERROR== The application returned an error code (9)."]
    path = tmp_path / "failed.csv"
    path.write_text("\n".join(lines[:5] + failed + lines[5:]) + "\n")
    with pytest.warns(GpuperfNote) as notes:
        assert len(import_ncu(path)) == len(import_ncu(NCU))
    said = [str(note.message) for note in notes if isinstance(note.message, GpuperfNote)]
    assert any(text.endswith('failed.csv: line 7: Nsight Compute reported an error: Failed to profile "matmul_tiled" '
                             "in process 31337") for text in said)
    assert any("failed.csv: line 9: Nsight Compute reported an error: The application" in text for text in said)
    path.write_text("\n".join(lines[:1] + ["==WARNING== Backing up device memory in system memory."] + lines[1:]) + "\n")
    with pytest.warns(GpuperfNote, match=r"line 2: Nsight Compute warned: Backing up device memory"):
        import_ncu(path)
    nvprof = tmp_path / "nvprof_error.csv"
    nvprof.write_text(TRACE.read_text() + "==27954== Error: Internal profiling error 4277:1.\n")
    with pytest.warns(GpuperfNote, match=r"line \d+: nvprof reported an error: Internal profiling error 4277:1\."):
        import_nvprof(nvprof)


def test_ncu_time_unit_comes_from_the_units_row(tmp_path):
    path = edited(tmp_path, NCU, '"Kbyte","usecond"', '"Kbyte","msecond"')
    np.testing.assert_allclose(import_ncu(path)["time_s"], import_ncu(NCU)["time_s"] * 1e3, rtol=1e-15)


# Each test file's kernels as ncu --print-kernel-base mangled and nvprof --demangling off name them
MANGLED = {"void matmul_tiled<16>(const float *, const float *, float *, int)": "_Z12matmul_tiledILi16EEvPKfS1_Pfi",
           "vector_add(const float *, const float *, float *, int)": "_Z10vector_addPKfS0_Pfi",
           "saxpy(int, float, float *, float *)": "_Z5saxpyifPfS_",
           "matMul_sharedmem(float*, float*, float*, int)": "_Z16matMul_sharedmemPfS_S_i",
           "void dotProd<float>(float const *, float const *, float*, int)": "_Z7dotProdIfEvPKT_S2_PS0_i"}


def mangled_copy(tmp_path: Path, source: Path) -> Path:
    """``source`` with each kernel named by its mangled symbol."""
    text = source.read_text()
    for name, symbol in MANGLED.items():
        text = text.replace(f'"{name}', f'"{symbol}')
    assert text != source.read_text()
    path = tmp_path / f"mangled_{source.name}"
    path.write_text(text)
    return path


NAMES = ["kernel", "variant", "gpu", "time_s"]


@pytest.mark.parametrize(("reader", "source", "gpu"), [("ncu", NCU, None), ("ncu", DETAILS, "A100"),
                                                     ("nvprof", TRACE, None), ("nvprof", SUMMARY, "K40c"),
                                                     ("nvprof", METRICS, None)])
def test_kernels_named_by_their_mangled_symbols_import_as_their_demangled_names(tmp_path, reader, source, gpu):
    """ncu --print-kernel-base mangled (or nvprof --demangling off) names a kernel _Z12matmul_tiledILi16EEvPKfS1_Pfi:
    it was kept as written, with a note, and matched no demangled import of the same launches."""
    path = mangled_copy(tmp_path, source)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GpuperfNote)  # demangled: no note
        frame = import_file(reader, path, gpu=gpu)
    expected = import_file(reader, source, gpu=gpu)
    columns = [c for c in NAMES if c in expected.columns]
    pd.testing.assert_frame_equal(frame[columns], expected[columns])
    written = frame["kernel_full_name"].str.replace(r" \[\d+\]$", "", regex=True)
    assert set(written) <= set(MANGLED.values())  # the full name as the profile wrote it


def test_a_mangled_template_kernel_is_its_demangled_name_and_variant(tmp_path):
    """nvprof's reduce_k<unsigned int=256>, Nsight's reduce_k<(unsigned int)256> and the symbol's reduce_k<256u>
    (demangled) are one kernel."""
    spellings = ["void reduce_k<unsigned int=256>(float const *, float*, unsigned int)",
                 "void reduce_k<(unsigned int)256>(const float *, float *, unsigned int)", "_Z8reduce_kILj256EEvPKfPfj"]
    frames = [import_nvprof(edited(tmp_path, TRACE, "matMul_sharedmem(float*, float*, float*, int)", spelling, count=3))
              for spelling in spellings]
    for frame in frames:
        assert frame["kernel"].tolist()[:3] == ["reduce_k<256>"] * 3
        assert frame["variant"].tolist()[:3] == ["(const float*, float*, unsigned int)"] * 3


def test_an_unmangled_kernel_name_is_kept_as_written(tmp_path):
    """An extern "C" kernel (no C++ symbol) and a name like one (_Zoom) are no mangled names: kept as they are."""
    for name in ("matmul", "_Zoom", "_Z_kernel"):
        path = edited(tmp_path, NCU, '"void matmul_tiled<16>(const float *, const float *, float *, int)"', f'"{name}"',
                      count=3)
        with warnings.catch_warnings():
            warnings.simplefilter("error", GpuperfNote)
            frame = import_ncu(path)
        assert (frame["kernel"] == name).sum() == 3 and (frame["kernel_full_name"] == name).sum() == 3
        assert set(frame.loc[frame["kernel"] == name, "variant"]) == {""}


@pytest.mark.parametrize("symbol", ["_Z10matMul_kPfS_S_i", "_Z99x", "_Z3fooPfS0_"])
def test_a_mangled_name_that_does_not_demangle_is_kept_with_a_note(tmp_path, symbol):
    """_Z10matMul_kPfS_S_i counts 10 letters in an 8-letter name: no demangler reads it. It is kept as
    written, with the note naming it, and the import goes on."""
    trace = edited(tmp_path, TRACE, "matMul_sharedmem(float*, float*, float*, int) [116]", f"{symbol} [116]")
    with pytest.warns(GpuperfNote, match=rf"1 kernel\(s\) named by mangled C\+\+ symbols that do not demangle "
                                         rf"\(first: {symbol}: not a valid C\+\+ symbol\), kept as written"):
        frame = import_nvprof(trace)
    assert frame["kernel"].iloc[0] == symbol and frame["variant"].iloc[0] == ""
    assert frame["kernel"].tolist()[1:] == import_nvprof(TRACE)["kernel"].tolist()[1:]


def test_without_a_cxx_runtime_a_mangled_name_is_kept_with_a_note_saying_why(tmp_path, monkeypatch):
    """Where cxxfilt finds no C++ runtime (libstdc++, libc++), every demangling raises its LibraryNotFound."""
    import cxxfilt

    from gpuperf.datasets import profiler_csv

    def missing(symbol: str) -> str:
        raise cxxfilt.LibraryNotFound("Cannot find any of libraries: ('stdc++', 'c++')")

    monkeypatch.setattr(cxxfilt, "demangle", missing)
    profiler_csv._demangling.cache_clear()
    try:
        with pytest.warns(GpuperfNote, match=r"first: _Z12matmul_tiledILi16EEvPKfS1_Pfi: no C\+\+ demangler on this "
                                             r"machine \(Cannot find any of libraries"):
            frame = import_ncu(mangled_copy(tmp_path, NCU))
    finally:
        profiler_csv._demangling.cache_clear()
    assert "_Z12matmul_tiledILi16EEvPKfS1_Pfi" in set(frame["kernel"])


def test_each_distinct_mangled_name_is_demangled_once(tmp_path, monkeypatch):
    import cxxfilt

    from gpuperf.datasets import profiler_csv

    asked: list[str] = []
    demangle = cxxfilt.demangle
    monkeypatch.setattr(cxxfilt, "demangle", lambda symbol: asked.append(symbol) or demangle(symbol))
    profiler_csv._demangling.cache_clear()
    lines = TRACE.read_text().splitlines()
    launch = next(line for line in lines if "dotProd" in line)
    path = tmp_path / "many.csv"
    path.write_text("\n".join(lines + [launch] * 200) + "\n")
    try:
        frame = import_nvprof(mangled_copy(tmp_path, path))
    finally:
        profiler_csv._demangling.cache_clear()
    assert (frame["kernel"] == "dotProd<float>").sum() == 201
    assert sorted(asked) == sorted(["_Z16matMul_sharedmemPfS_S_i", "_Z7dotProdIfEvPKT_S2_PS0_i"])


@pytest.mark.parametrize(("trace_mangled", "metrics_mangled"), [(True, False), (False, True), (True, True)])
def test_nvprof_metrics_join_a_trace_whatever_names_each_gives(tmp_path, trace_mangled, metrics_mangled):
    """A trace taken with --demangling off and metrics taken without it (or the other way) name each kernel
    by its symbol in one file and its demangled name in the other: they join on the kernel."""
    trace = mangled_copy(tmp_path, TRACE) if trace_mangled else TRACE
    metrics = mangled_copy(tmp_path, METRICS) if metrics_mangled else METRICS
    joined = import_nvprof(trace, metrics=metrics)
    expected = import_nvprof(TRACE, metrics=METRICS)
    columns = ["kernel", "variant", "achieved_occupancy", "inst_executed"]
    pd.testing.assert_frame_equal(joined[columns], expected[columns])


@pytest.mark.parametrize("suffix, mode", [(".tar.gz", "w:gz"), (".tar", "w"), (".tgz", "w:gz"),
                                          (".txz", "w:xz")])
def test_a_tar_archive_of_profiles_is_one_error_saying_to_extract_it(tmp_path, capsys, suffix, mode):
    """A folder of ncu CSVs packed as .tar.gz (as the bundled *_ncu.tar.gz) was read as one CSV: a note that
    line 1 ('././@PaxHeader...' or the member's name) is no CSV row, then an error on a line of NUL bytes."""
    import tarfile

    from gpuperf.cli import main

    archive = tmp_path / f"profiles{suffix}"
    with tarfile.open(archive, mode) as packed:
        packed.add(NCU, arcname="ncu_0.csv")
        packed.add(TRACE, arcname="trace.csv")
    for reader in (import_ncu, import_nvprof):
        with pytest.raises(GpuperfError, match=rf"profiles{re.escape(suffix)}: a tar archive of files, not one "
                                               r"profiler CSV; extract it \(tar -xf"):
            reader(archive)
    assert main(["import", "ncu", str(archive), "--out", str(tmp_path / "t.csv")]) == 2
    err = capsys.readouterr().err
    assert "extract it" in err and "is no CSV row" not in err and not (tmp_path / "t.csv").exists()


def test_a_compressed_profile_under_a_plain_name_is_one_error_naming_the_suffix_to_give_it(tmp_path):
    """gzip data saved as profile.csv (gzip -c profile.csv > out.csv) was decoded as text: a note of bytes that
    are not UTF-8, then "no header row with column(s) Kernel Name", as a table under such a name is not."""
    import bz2
    import gzip

    for source, reader in ((NCU, import_ncu), (TRACE, import_nvprof)):
        for compress, kind, suffix in ((gzip.compress, "gzip", ".gz"), (bz2.compress, "bzip2", ".bz2")):
            path = tmp_path / source.name
            path.write_bytes(compress(source.read_bytes()))
            with pytest.raises(GpuperfError, match=rf"{source.name}: {kind}-compressed data under a name without "
                                                   rf"{re.escape(suffix)}: name it {source.name}{re.escape(suffix)}"):
                reader(path)
            named = path.rename(tmp_path / f"{source.name}{suffix}")
            assert len(reader(named)) > 0  # read by its suffix
            named.unlink()


def test_a_zip_of_profiles_is_one_error_saying_to_extract_it_and_a_zip_of_one_is_read(tmp_path, capsys):
    """A .zip of profiler CSVs was read as one CSV of its compressed bytes: a note on bytes that are not UTF-8,
    then 'no header row'; a zip of one CSV, which a table given as .zip may be, too."""
    import zipfile

    from gpuperf.cli import main

    with zipfile.ZipFile(tmp_path / "profiles.zip", "w", zipfile.ZIP_DEFLATED) as packed:
        packed.write(NCU, arcname="ncu_0.csv")
        packed.write(TRACE, arcname="trace.csv")
    for reader in (import_ncu, import_nvprof):
        with pytest.raises(GpuperfError, match=r"profiles.zip: a zip archive of files, not one profiler CSV; extract "
                                               r"it \(unzip profiles.zip\) and import its CSV files together"):
            reader(tmp_path / "profiles.zip")
    assert main(["import", "nvprof", str(tmp_path / "profiles.zip"), "--out", str(tmp_path / "t.csv")]) == 2
    err = capsys.readouterr().err
    assert "unzip profiles.zip" in err and "not UTF-8" not in err and not (tmp_path / "t.csv").exists()
    for profile, reader in ((NCU, import_ncu), (TRACE, import_nvprof)):
        with zipfile.ZipFile(tmp_path / "one.zip", "w", zipfile.ZIP_DEFLATED) as packed:
            packed.write(profile, arcname=profile.name)
        zipped, plain = reader(tmp_path / "one.zip"), reader(profile)
        assert set(zipped["source"]) == {str(tmp_path / "one.zip")}
        pd.testing.assert_frame_equal(zipped.drop(columns="source"), plain.drop(columns="source"))
    (tmp_path / "one.zip").rename(tmp_path / "one.csv")  # zip data under a plain name: the name that reads it
    with pytest.raises(GpuperfError, match=r"one\.csv: zip-compressed data under a name without \.zip: name it "
                                           r"one\.csv\.zip \(read compressed\)"):
        import_nvprof(tmp_path / "one.csv")


def test_import_by_format_name_suggests_the_nearest():
    assert len(import_file("ncu", NCU)) == 4
    with pytest.raises(GpuperfError, match="unknown import format 'nvprf'; did you mean nvprof"):
        import_file("nvprf", TRACE)


@pytest.mark.parametrize(
    ("source", "old", "new", "message"),
    [
        (TRACE, '"Start","Duration",', '"Start","Time",', r"line 4: the header lacks column\(s\) Duration"),
        (TRACE, "254.931205,118.272000,", "254.931205,fast,", r"line 8: Duration='fast' is not a number"),
        (TRACE, "\nms,us,", "\nms,weeks,", r"line 5: Duration unit: unknown time unit 'weeks'"),
        (TRACE, ',"Tesla K40c (0)","1","7","matMul_sharedmem(float*, float*, float*, int) [132]",132',
         ',"Tesla K40c (0)","1"', r"line 12: 17 cells, the header has 20"),
        (SUMMARY, '3,2639.531000,118.272000,6919.904000,', "3,2639.531000,", r"line 6: 6 cells, the header has 8"),
        (SUMMARY, '"Time","Calls","Avg"', '"Time","Count","Avg"', r"line 4: the header lacks column\(s\) Calls"),
        (METRICS, "Mid (5),Mid (5),Mid (5)", "Mid (5),Mid (5),lots", r"line 15: dram_utilization='lots' is not a number"),
        (NCU, '"gpu__time_duration.sum",', '"gpu__time_active.sum",', r"missing column\(s\) 'gpu__time_duration.sum'"),
        (NCU, '"8,397.57","447.94"', '"8,397.57","n/a"', r"line 10: gpu__time_duration.sum gives no time \('n/a'\)"),
        (NCU, '"16,384","38"', '"16,384","many"', r"line 11: launch__registers_per_thread='many' is not a number"),
        (NCU, '"Kbyte","usecond"', '"Kbyte","cycle"', r"gpu__time_duration.sum has unit 'cycle', not a time unit"),
    ],
)
def test_malformed_copies_name_the_file_and_line(tmp_path, source, old, new, message):
    path = edited(tmp_path, source, old, new)
    importer = import_ncu if source == NCU else import_nvprof
    with pytest.raises(GpuperfError, match=message) as caught:
        importer(path)
    assert str(path) in str(caught.value)


def test_a_ncu_file_without_its_units_row_is_refused(tmp_path):
    lines = NCU.read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    path = tmp_path / "no_units.csv"
    path.write_text("\n".join(lines[: header + 1] + lines[header + 2 :]))
    with pytest.raises(GpuperfError, match=f"no_units.csv: line {header + 2}: no units row"):
        import_ncu(path)


def test_an_ncu_summary_table_is_refused_naming_the_export_to_use(tmp_path):
    path = tmp_path / "summary.csv"
    path.write_text('"Kernel Name","Metric Name","Metric Unit","Average"\n'
                    '"saxpy","gpu__time_active.avg","nsecond","643,000.00"\n')
    with pytest.raises(GpuperfError, match=r"summary.csv: line 1: an ncu --print-summary table .* ncu --csv --page raw"):
        import_ncu(path)


@pytest.mark.parametrize("importer", [import_nvprof, import_ncu])
def test_a_profilers_text_output_is_refused_asking_for_csv(tmp_path, importer):
    """nvprof without --csv: spaced columns, kernel signatures with commas further down."""
    path = tmp_path / "native.profile"
    path.write_text("==19128== Profiling application: ./native.o 1 0.01\n==19128== Metric result:\n"
                    "Invocations   Metric Name   Metric Description   Min   Max   Avg\n"
                    'Device "GeForce GTX 1070 (0)"\n    Kernel: getError(int, int, float*)\n'
                    "          1   branch_efficiency   Branch Efficiency   100.00%   100.00%   100.00%\n")
    with pytest.raises(GpuperfError, match=r"native.profile: line 3: 'Invocations .*' is no CSV row: the profiler's "
                                           r"text output, or the application's own output .* Profile again with --csv"):
        importer(path)


@pytest.mark.parametrize(("importer", "name"), [(import_nvprof, "nvprof_gpu_trace.csv"), (import_ncu, "ncu_raw.csv")])
def test_the_applications_own_output_above_the_table_is_skipped_with_a_note(tmp_path, importer, name):
    """``ncu --csv ./app > out.csv`` captures the application's line 'Max error: 0.000000' after the
    profiler's first message: the table below is read as without it (it was refused as text output)."""
    lines = (DATA / name).read_text().splitlines()
    path = tmp_path / name
    path.write_text("\n".join([lines[0], "Max error: 0.000000", *lines[1:]]) + "\n")
    with pytest.warns(GpuperfNote, match=rf"{name}: line 2: 'Max error: 0.000000' is no CSV row \(the application's "
                                         r"own output\?\): lines above the table's header are skipped"):
        frame = importer(path)
    pd.testing.assert_frame_equal(frame.drop(columns="source"), importer(DATA / name).drop(columns="source"))


@pytest.mark.parametrize("importer", [import_nvprof, import_ncu])
def test_a_profile_of_no_kernel_says_nothing_was_profiled(tmp_path, importer):
    path = tmp_path / "none.csv"
    path.write_text("==PROF== Connected to process 1 (/bin/true)\n==PROF== Disconnected from process 1\n"
                    "==WARNING== No kernels were profiled.\n")
    with pytest.raises(GpuperfError, match=r"none.csv: only the profiler's messages, no table: nothing was profiled\? "
                                           r"\(the profiler said: '==WARNING== No kernels were profiled.'\)"):
        importer(path, gpu="H100")


@pytest.mark.parametrize("source, old, new, line, column", [
    (TRACE, '"Grid Y"', '"Grid X"', 4, "Grid X"),
    (NCU, '"dram__bytes_read.sum"', '"gpu__time_duration.sum"', 7, "gpu__time_duration.sum"),
    (DETAILS, '"Stream"', '"Context"', 5, "Context"),
    (METRICS, '"Metric Description"', '"Metric Name"', 6, "Metric Name"),
])
def test_a_header_naming_a_column_twice_is_refused(tmp_path, source, old, new, line, column):
    """Before, the row's cells went by name, so one of the two columns' values was silently lost."""
    path = edited(tmp_path, source, old, new)
    importer = import_ncu if source in (NCU, DETAILS) else import_nvprof
    with pytest.raises(GpuperfError, match=rf"line {line}: the header names column '{column}' more than once"):
        importer(path, gpu="K40" if importer is import_nvprof else "H100")


def test_ncu_details_refuse_a_launch_id_of_another_process(tmp_path):
    """Two profiles pasted into one file reuse launch IDs; the second's rows were merged into the first's."""
    text = DETAILS.read_text()
    rows = [line for line in text.splitlines() if line.startswith('"0","40211"')]
    other = [row.replace('"40211"', '"41300"', 1) for row in rows]
    path = tmp_path / "two.csv"
    path.write_text(text + "\n".join(other) + "\n")
    with pytest.raises(GpuperfError, match=r"two.csv: line \d+: launch ID 0 again with Process ID '41300' \(line 6: "
                                           r"'40211'\); one profile per file"):
        import_ncu(path, gpu="H100")


def test_ncu_details_refuse_a_metric_repeated_with_another_value(tmp_path):
    text = DETAILS.read_text()
    duration = next(line for line in text.splitlines() if line.startswith('"0"') and '"Duration"' in line)
    path = tmp_path / "again.csv"
    path.write_text(text + duration.replace('"12.42"', '"9.99"') + "\n")
    with pytest.raises(GpuperfError, match=r"again.csv: line \d+: launch 0 has GPU Speed Of Light Throughput: Duration "
                                           r"again, now 9.99 usecond \(line \d+: 12.42 usecond\)"):
        import_ncu(path, gpu="H100")


def test_nvprof_metrics_refuse_a_kernel_metric_repeated_with_another_value(tmp_path):
    text = METRICS.read_text()
    row = next(line for line in text.splitlines() if '"achieved_occupancy"' in line and "matMul" in line)
    path = tmp_path / "again.csv"
    path.write_text(text + row.replace("0.947220", "0.5") + "\n")
    with pytest.raises(GpuperfError, match=r"again.csv: line \d+: achieved_occupancy of matMul_sharedmem.* again, "
                                           r"now 0.5 \(above: 0.94722\); one profile per file"):
        import_nvprof(path, gpu="K40")


@pytest.mark.parametrize(("edit", "message"), [
    (("16,16,1,16,16,1", "16.5,16,1,16,16,1"), r"line 8: Grid X='16.5' is not a whole number of at least 1"),
    (("16,16,1,16,16,1", "16,16,1,-16,16,1"), r"line 8: Block X='-16' is not a whole number of at least 1"),
    (("16,16,1,16,16,1", "inf,16,1,16,16,1"), r"line 8: Grid X='inf' is not a whole number of at least 1"),
    (("16,16,1,16,16,1", "16,16,1,4096,16,1"), r"line 8: a block of 65536 threads \(Block X 4096 x Block Y 16 x "
                                                r"Block Z 1\); no GPU runs blocks of more than 1024"),
])
def test_nvprof_trace_refuses_a_launch_geometry_no_gpu_runs(tmp_path, edit, message):
    """A fractional, negative, infinite or oversized grid or block size was imported as it stood."""
    path = edited(tmp_path, TRACE, *edit)
    with pytest.raises(GpuperfError, match=message):
        import_nvprof(path)


@pytest.mark.parametrize(("source", "old", "new", "message"), [
    (NCU, '"256","1,024"', '"256","9,999"',
     r"line 9: launch__grid_size 9,999 contradicts Grid Size \(32, 32, 1\) \(1024 blocks\); one of them is damaged"),
    (NCU, '"256","1,024"', '"128","1,024"',
     r"line 9: launch__block_size 128 contradicts Block Size \(16, 16, 1\) \(256 threads\)"),
    (DETAILS, '"Launch Statistics","Block Size","","256"', '"Launch Statistics","Block Size","","512"',
     r"line 9: Launch Statistics: Block Size 512 contradicts Block Size \(256, 1, 1\) \(256 threads\)"),
])
def test_ncu_refuses_a_whole_count_contradicting_the_launch_size(tmp_path, source, old, new, message):
    """A launch__grid_size of 9999 beside a Grid Size of (32, 32, 1) was imported as it stood."""
    with pytest.raises(GpuperfError, match=message):
        import_ncu(edited(tmp_path, source, old, new), gpu="H100" if source == DETAILS else None)


def test_ncu_names_the_unit_that_scaled_a_count_contradicting_the_launch_size(tmp_path):
    """A units row giving launch__block_size in Kthread made 256 read as 256,000, and the error said
    '256 contradicts ... (256 threads)': it names the unit and its line now."""
    path = edited(tmp_path, NCU, '"usecond","",""', '"usecond","Kthread",""')
    with pytest.raises(GpuperfError, match=r"line 9: launch__block_size 256 Kthread \(line 8's unit\) contradicts "
                                           r"Block Size \(16, 16, 1\) \(256 threads\)"):
        import_ncu(path)


@pytest.mark.parametrize(("source", "edits", "message"), [
    (NCU, [('"(16, 16, 1)","(32, 32, 1)","0","8.6","NVIDIA RTX A4000","2,103.30","62.27","256"',
            '"(64, 32, 1)","(32, 32, 1)","0","8.6","NVIDIA RTX A4000","2,103.30","62.27","2,048"')],
     r"line 9: a block of 2048 threads \(Block Size \(64, 32, 1\)\); no GPU runs blocks of more than 1024"),
    (NCU, [('"Block Size","Grid Size"', '"Block Shape","Grid Size"'), ('"62.27","256"', '"62.27","2,048"')],
     r"line 9: a block of 2048 threads \(launch__block_size 2,048\)"),
    (DETAILS, [('"(256, 1, 1)","(4,096, 1, 1)"', '"(2,048, 1, 1)","(4,096, 1, 1)"'),
               ('"Launch Statistics","Block Size","","256"', '"Launch Statistics","Block Size","","2,048"')],
     r"line 6: a block of 2048 threads \(Block Size \(2,048, 1, 1\)\)"),
])
def test_ncu_refuses_a_block_no_gpu_runs(tmp_path, source, edits, message):
    """A block of more than 1024 threads was imported, and only advise --profile refused it."""
    text = source.read_text()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / source.name
    path.write_text(text)
    with pytest.raises(GpuperfError, match=message):
        import_ncu(path, gpu="H100" if source == DETAILS else None)


def test_nvprof_metrics_refuse_an_average_that_is_no_value(tmp_path):
    path = edited(tmp_path, METRICS, "0.892614,0.981541,0.947220", "0.892614,0.981541,1e400")
    with pytest.raises(GpuperfError, match=r"line 7: achieved_occupancy: Avg='1e400' is not a finite value"):
        import_nvprof(TRACE, metrics=path)


def test_an_nvprof_average_outside_its_min_and_max_is_missing_with_a_note(tmp_path):
    """nvprof itself prints such averages (a GTX 950's dram_read_throughput: Avg 2.86MB/s, Min 3.03MB/s):
    the file was refused whole; now that one value is left missing, named, and the rest is read."""
    path = edited(tmp_path, METRICS, "0.892614,0.981541,0.947220", "0.892614,0.981541,0.99")
    with pytest.warns(GpuperfNote, match=r"line 7: achieved_occupancy: Avg=0.99 lies outside its Min 0.892614 "
                                         r"and Max 0.981541: left missing"):
        frame = import_nvprof(TRACE, metrics=path)
    plain = import_nvprof(TRACE, metrics=METRICS)
    changed = frame["achieved_occupancy"].isna() & plain["achieved_occupancy"].notna()
    assert changed.tolist() == (frame["kernel"] == "matMul_sharedmem").tolist() and changed.sum() == 3  # its launches
    pd.testing.assert_frame_equal(frame.drop(columns=["achieved_occupancy", "source"]),
                                  plain.drop(columns=["achieved_occupancy", "source"]))


@pytest.mark.parametrize("low", ["<OVERFLOW>", "n/a"])
def test_an_nvprof_average_beside_a_bound_that_is_no_number_is_taken(tmp_path, low):
    path = edited(tmp_path, METRICS, "1343488,85983232,32694613", f"{low},85983232,32694613")
    assert import_nvprof(TRACE, metrics=path)["inst_executed"].notna().any()


@pytest.mark.parametrize("value", ["nan", "-3780", ""])
def test_nvprof_summary_names_the_line_and_column_of_a_bad_average(tmp_path, value):
    """Before, the error named the table's row 2 and the field time_s, not the file's line and column."""
    path = edited(tmp_path, SUMMARY, ',4.864000,4.864000,4.864000,"void', f',{value},4.864000,4.864000,"void')
    with pytest.raises(GpuperfError, match=rf"line 9: Avg gives no time \('{value}'\)"):
        import_nvprof(path, gpu="K40")


@pytest.mark.parametrize("importer", [import_nvprof, import_ncu])
def test_empty_and_truncated_files_are_refused(tmp_path, importer):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(GpuperfError, match="empty.csv: empty file"):
        importer(empty)
    source = TRACE if importer is import_nvprof else NCU
    text = source.read_text()
    cut = tmp_path / "cut.csv"
    cut.write_text(text[: len(text) - 60])
    with pytest.raises(GpuperfError, match=r"cut.csv: line \d+: \d+ cells, the header has \d+"):
        importer(cut)


def test_metrics_for_a_kernel_the_trace_lacks_are_refused(tmp_path):
    path = edited(tmp_path, METRICS, "void dotProd<float>", "void dotProduct<float>", count=5)
    with pytest.raises(GpuperfError, match="kernel 'dotProduct<float>' on 'Tesla K40c \\(0\\)' is not in the profile"):
        import_nvprof(TRACE, metrics=path)



def test_kernel_names_keep_namespaces_in_parentheses():
    assert kernel_short_name("void (anonymous namespace)::softmax<float, 10>(float*, int) [1030]") == (
        "(anonymous namespace)::softmax<float, 10>"
    )
    assert kernel_short_name("void foo<32>(float*, int) [116]") == "foo<32>"
    assert kernel_short_name("at::native::(anonymous namespace)::fill") == "at::native::(anonymous namespace)::fill"
    # its mangled symbol, as nvprof --demangling off writes it, names its namespace as the profilers do
    assert kernel_short_name("_ZN12_GLOBAL__N_17softmaxIfLi10EEEvPfi [1030]") == "(anonymous namespace)::softmax<float, 10>"


def test_nvprof_summary_joins_metrics_by_kernel_and_takes_their_device():
    frame = import_nvprof(SUMMARY, metrics=METRICS)
    assert set(frame["device"]) == {"Tesla K40c (0)"} and set(frame["gpu"]) == {"Tesla K40"}
    assert frame["achieved_occupancy"].notna().all()
    named = import_nvprof(SUMMARY, gpu="K40")
    assert set(named["gpu"]) == {"Tesla K40"} and set(named["device"]) == {"K40"}


def test_nvprof_summary_before_cuda_9_stops_at_the_api_calls_section(tmp_path):
    path = tmp_path / "cuda8.csv"
    path.write_text(
        "==22132== Profiling result:\n"
        '"Time(%)","Time","Calls","Avg","Min","Max","Name"\n%,us,,us,us,us,\n'
        '79.5,7918.593,3,2639.531,118.272,6919.904,"matMul_sharedmem(float*, float*, float*, int)"\n'
        "==22132== API calls:\n"
        '"Time(%)","Time","Calls","Avg","Min","Max","Name"\n%,ms,,ms,ms,ms,\n'
        '98.1,210.4,4,52.6,0.01,210.3,"cudaMalloc"\n'
    )
    frame = import_nvprof(path, gpu="Tesla K40")
    assert frame["kernel"].tolist() == ["matMul_sharedmem"] and frame["time_s"].tolist() == [2639.531e-6]


def test_nvprof_events_section_joins_like_metrics(tmp_path):
    path = tmp_path / "events.csv"
    path.write_text(
        "==1== Metric result:\n"
        '"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"\n'
        '"Tesla K40c (0)","void dotProd<float>(float const *, float const *, float*, int)",1,'
        '"achieved_occupancy","Achieved Occupancy",0.9,0.9,0.9\n'
        "==1== Event result:\n"
        '"Device","Kernel","Invocations","Event Name","Min","Max","Avg","Total"\n'
        '"Tesla K40c (0)","void dotProd<float>(float const *, float const *, float*, int)",1,'
        '"elapsed_cycles_sm",69632,69632,69632,69632\n'
    )
    frame = import_nvprof(TRACE, metrics=path).set_index("kernel")
    assert frame.loc["dotProd<float>", "elapsed_cycles_sm"] == 69632
    assert frame.loc["dotProd<float>", "achieved_occupancy"] == 0.9
    assert frame.loc["matMul_sharedmem", "elapsed_cycles_sm"].isna().all()


def test_ncu_details_page_one_row_per_launch_with_its_own_units():
    frame = import_ncu(DETAILS, gpu="H100")
    assert frame["time_s"].tolist() == [12.42e-6, 1.21e-3]  # usecond, then msecond
    assert frame["Memory Throughput"].tolist() == [1351.27e9, 2.66e12]  # Gbyte/second, Tbyte/second
    assert frame["DRAM Frequency"].tolist() == [2.62e9, 2.62e9]  # cycle/nsecond
    assert frame["Function Cache Configuration"].tolist() == ["CachePreferNone"] * 2
    assert frame["Launch Statistics: Block Size"].tolist() == [256, 256]
    assert frame["grid.x"].tolist() == [4096, 262144]
    assert set(frame["gpu"]) == {"H100 SXM"}
    assert frame.attrs["units"]["Memory Throughput"] == "byte/second"
    with pytest.raises(GpuperfError, match=r"ncu_details.csv: line 6: the profile names no GPU \(Device is the index '0'\)"):
        import_ncu(DETAILS)


def test_ncu_details_name_a_metrics_changed_unit_as_the_file_writes_it(tmp_path):
    """usecond then msecond is one time scaled; Gbyte/second then % is an error quoting both units as
    written and their lines (it quoted the base unit, 'byte/second', which the file never wrote)."""
    path = tmp_path / "changed.csv"
    path.write_text(DETAILS.read_text().replace('"Memory Throughput","Tbyte/second"', '"Memory Throughput","%"'))
    with pytest.raises(GpuperfError) as raised:
        import_ncu(path, gpu="H100")
    assert str(raised.value) == f"{path}: line 14: Memory Throughput in '%', above (line 8) in 'Gbyte/second'"


@pytest.mark.parametrize(
    ("unit", "value", "expected"),
    [("us", "211.94", 211.94e-6), ("nsecond", "5", 5e-9), ("s", "0.5", 0.5)],
)
def test_ncu_time_units_old_and_new(tmp_path, unit, value, expected):
    path = edited(tmp_path, NCU, '"Kbyte","usecond"', f'"Kbyte","{unit}"')
    path.write_text(path.read_text().replace('"2,103.30","62.27"', f'"2,103.30","{value}"'))
    assert import_ncu(path)["time_s"].iloc[0] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("unit", "base", "exponent"),
    [("Kbyte", "byte", 3), ("Tbyte/s", "byte/second", 12), ("Tbyte/second", "byte/second", 12),
     ("Kbyte/block", "byte/block", 3), ("cycle/usecond", "cycle/second", 6), ("cycle/nsecond", "cycle/second", 9),
     ("Ghz", "cycle/second", 9), ("Mhz", "cycle/second", 6), ("hz", "cycle/second", 0), ("%", "%", 0),
     ("register/thread", "register/thread", 0)],
)
def test_ncu_units_scale_to_base_units_whatever_the_spelling(unit, base, exponent):
    assert scale(unit) == (exponent, base)


def test_ncu_text_attributes_with_no_unit_stay_text(tmp_path):
    path = edited(tmp_path, NCU, '"register/thread"', '"register/thread"')
    text = path.read_text().replace('"device__attribute_display_name",', '"device__attribute_display_name","launch__func_cache_config",')
    text = text.replace('"","Kbyte"', '"","","Kbyte"').replace('"NVIDIA RTX A4000",', '"NVIDIA RTX A4000","CachePreferNone",')
    path.write_text(text)
    assert import_ncu(path)["launch__func_cache_config"].tolist() == ["CachePreferNone"] * 4


def test_an_infinite_time_is_refused_and_a_unit_is_named_on_its_own_line(tmp_path):
    lines = (DATA / "nvprof_gpu_trace.csv").read_text().splitlines()
    lines[7] = lines[7].replace("118.272000", "inf", 1)
    (tmp_path / "inf.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(GpuperfError, match=r"inf.csv: line 8: Duration gives no time \('inf'\)"):
        import_nvprof(tmp_path / "inf.csv")
    lines = (DATA / "ncu_raw.csv").read_text().splitlines()
    lines[7] = lines[7].replace('"usecond"', '"parsec"')
    (tmp_path / "unit.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(GpuperfError, match="unit.csv: line 8: gpu__time_duration.sum has unit 'parsec'"):
        import_ncu(tmp_path / "unit.csv")


def test_kernel_short_name_drops_a_global_qualifier():
    """``__global__ foo(float*)``: the parameter list goes, then the leading ``__global__`` -> ``foo``."""
    assert kernel_short_name("__global__ foo(float*)") == "foo"
    assert kernel_short_name("void bar(int) [7]") == "bar"
    assert kernel_short_name("__global__ void baz(int)") == "baz"  # both prefixes, as CUDA source spells it


def test_a_missing_header_names_the_first_line_holding_most_wanted_columns():
    """Lines 1 and 2 (1-based) each hold one of the two wanted columns (Name); line 3 none. The
    nearest header is the first of the tied lines, line 1, and it lacks Duration."""
    from gpuperf.datasets.profiler_csv import find_header

    lines = ['"Start","Name"', '"Name","Stream"', '"x","y"']
    with pytest.raises(GpuperfError, match=r"f.csv: line 1: the header lacks column\(s\) Duration"):
        find_header(lines, ("Name", "Duration"), "f.csv")


def test_a_zero_duration_is_no_time():
    """0 us is not a measured time: refused at its line, naming the column and the text."""
    from gpuperf.datasets.profiler_csv import positive_time

    with pytest.raises(GpuperfError, match=r"f.csv: line 5: Duration gives no time \('0'\)"):
        positive_time("0", -6, "f.csv", 5, "Duration")
    assert positive_time("2.5", -6, "f.csv", 5, "Duration") == 2.5e-6


def test_ncu_details_metric_repeated_with_the_same_value_stays_one_column(tmp_path):
    """DRAM Frequency named again (another section) with the same value 2.62 in launch 0 is the same
    metric: no 'Section: DRAM Frequency' column (only a differing value gets one, as Block Size does)."""
    lines = DETAILS.read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if '"DRAM Frequency"' in line)
    again = lines[first].replace('"GPU Speed Of Light Throughput"', '"Memory Workload Analysis"')
    path = tmp_path / "details.csv"
    path.write_text("\n".join(lines[: first + 1] + [again] + lines[first + 1:]) + "\n")
    frame = import_ncu(path, gpu="H100")
    assert frame["DRAM Frequency"].tolist() == [2.62e9, 2.62e9]
    assert not [c for c in frame.columns if c.endswith(": DRAM Frequency")]


def test_ncu_details_metric_repeated_in_another_unit_gets_its_own_column(tmp_path):
    """ncu names Memory Throughput in one section in Gbyte/second and in another in %; on an idle launch
    both read the same text. Launch 0's 1,351.27 Gbyte/second named again in Memory Workload Analysis
    as 1,351.27 % is another metric: its own 'Section: Memory Throughput' column, 1351.27 unscaled."""
    lines = DETAILS.read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if '"Memory Throughput"' in line)
    again = (lines[first].replace('"GPU Speed Of Light Throughput"', '"Memory Workload Analysis"')
             .replace('"Gbyte/second"', '"%"'))
    path = tmp_path / "details.csv"
    path.write_text("\n".join(lines[: first + 1] + [again] + lines[first + 1:]) + "\n")
    frame = import_ncu(path, gpu="H100")
    assert frame["Memory Throughput"].tolist() == [1351.27e9, 2.66e12]
    assert frame["Memory Workload Analysis: Memory Throughput"].tolist()[0] == 1351.27
    assert frame.attrs["units"]["Memory Workload Analysis: Memory Throughput"] == "%"


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_a_compressed_profile_reads_as_the_plain_one(tmp_path, suffix):
    import bz2
    import gzip
    import lzma

    opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}[suffix]
    for name, reader in (("nvprof_gpu_trace.csv", import_nvprof), ("ncu_raw.csv", import_ncu)):
        packed = tmp_path / f"{name}{suffix}"
        with opener(packed, "wt") as handle:
            handle.write((DATA / name).read_text())
        plain, read = reader(DATA / name), reader(packed)
        pd.testing.assert_frame_equal(plain.drop(columns="source"), read.drop(columns="source"))
    broken = tmp_path / f"broken.csv{suffix}"
    broken.write_text("not compressed")
    with pytest.raises(GpuperfError, match=rf"broken.csv{suffix}: cannot be read as a \{suffix} file"):
        import_ncu(broken)



def test_a_gz_profile_with_damaged_data_is_one_error(tmp_path):
    """Flipped bytes inside a .gz stream raise zlib.error, which is not an OSError."""
    import gzip

    data = bytearray(gzip.compress((DATA / "ncu_raw.csv").read_bytes() * 20))
    for position in range(20, 60):
        data[position] ^= 0xFF
    damaged = tmp_path / "damaged.csv.gz"
    damaged.write_bytes(bytes(data))
    for reader in (import_ncu, import_nvprof):
        with pytest.raises(GpuperfError, match=r"damaged.csv.gz: cannot be read as a \.gz file"):
            reader(damaged)

NVPROF_TRACE_HEADER = (
    '"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z","Registers Per Thread",'
    '"Static SMem","Dynamic SMem","Device","Context","Stream","Name"\n'
    "ms,us,,,,,,,,B,B,,,,\n")


def test_overloaded_kernels_keep_their_own_metrics_and_are_told_apart_by_variant(tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_text(NVPROF_TRACE_HEADER
                     + '1.0,10.0,100,1,1,256,1,1,16,0,0,"Tesla V100-SXM2-16GB (0)","1","7","scale(float*, int) [10]"\n'
                     + '2.0,20.0,100,1,1,256,1,1,24,0,0,"Tesla V100-SXM2-16GB (0)","1","7","scale(double*, int) [11]"\n'
                     + '3.0,30.0,100,1,1,256,1,1,24,0,0,"Tesla V100-SXM2-16GB (0)","1","7","other(int) [12]"\n')
    metrics = tmp_path / "metrics.csv"
    metrics.write_text(
        '"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"\n'
        '"Tesla V100-SXM2-16GB (0)","scale(float*, int)",1,"flop_count_sp","FLOP SP",100,100,100\n'
        '"Tesla V100-SXM2-16GB (0)","scale(float*, int)",1,"flop_count_dp","FLOP DP",0,0,0\n'
        '"Tesla V100-SXM2-16GB (0)","scale(double*,  int)",1,"flop_count_sp","FLOP SP",0,0,0\n'
        '"Tesla V100-SXM2-16GB (0)","scale(double*,  int)",1,"flop_count_dp","FLOP DP",100,100,100\n')
    frame = import_nvprof(trace, metrics=metrics)
    assert frame["kernel"].tolist() == ["scale", "scale", "other"]
    assert frame["variant"].tolist() == ["(float*, int)", "(double*, int)", "(int)"]  # every C++ kernel has one
    assert frame["flop_count_sp"].tolist()[:2] == [100, 0] and frame["flop_count_dp"].tolist()[:2] == [0, 100]
    alone = import_nvprof(metrics)
    assert alone["variant"].tolist() == ["(float*, int)", "(double*, int)"]
    spaced = tmp_path / "spaced.csv"  # full names spelt otherwise than the trace's: joined by kernel and variant
    spaced.write_text(metrics.read_text().replace("scale(float*, int)", "scale(float *, int)"))
    joined = import_nvprof(trace, metrics=spaced)
    assert joined["flop_count_sp"].tolist()[:2] == [100, 0] and joined["flop_count_dp"].tolist()[:2] == [0, 100]
    mangled = tmp_path / "mangled.csv"  # a trace taken with --demangling off: symbols where the metrics have names
    mangled.write_text(trace.read_text().replace("scale(float*, int)", "_Z5scalePfi")
                       .replace("scale(double*, int)", "_Z5scalePdi").replace("other(int)", "_Z5otheri"))
    joined = import_nvprof(mangled, metrics=metrics)
    assert joined["flop_count_sp"].tolist()[:2] == [100, 0] and joined["flop_count_dp"].tolist()[:2] == [0, 100]
    unnamed = tmp_path / "unnamed.csv"  # no signature to tell the overloads apart by
    unnamed.write_text(trace.read_text().replace("scale(float*, int)", "scale").replace("scale(double*, int)", "scale"))
    with pytest.raises(GpuperfError, match="lacks their full names to tell them apart"):
        import_nvprof(unnamed, metrics=metrics)
    table = tmp_path / "table.csv"  # a table with short names only cannot tell the two apart
    table.write_text("kernel,gpu,duration_us\nscale,Tesla V100-SXM2-16GB (0),10\n")
    with pytest.raises(GpuperfError, match=r"kernels scale\(double\*, int\) and scale\(float\*, int\) on "
                                           r"'Tesla V100-SXM2-16GB \(0\)' share the name 'scale'"):
        import_nvprof(table, metrics=metrics)


NCU_RAW_HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
                  '"Grid Size","Device","CC","device__attribute_display_name","gpu__time_duration.sum"\n'
                  + '"",' * 12 + '"usecond"\n')


def test_one_cpp_kernel_has_one_variant_in_nvprof_and_ncu_whatever_else_each_file_holds(tmp_path):
    """nvprof spells a signature (float*, float const *, int), ncu (float *, const float *, int); the
    nvprof trace holds both overloads of axpy, the ncu profile one: the same launch, the same variant."""
    trace = tmp_path / "trace.csv"
    trace.write_text(NVPROF_TRACE_HEADER
                     + '1.0,50.0,64,1,1,256,1,1,25,0,0,"Tesla K40c (0)","1","7","axpy(float*, float const *, int) [14]"\n'
                     + '2.0,90.0,64,1,1,256,1,1,25,0,0,"Tesla K40c (0)","1","7","axpy(double*, double const *, int) [15]"\n'
                     + '3.0,10.0,64,1,1,256,1,1,25,0,0,"Tesla K40c (0)","1","7","void fill<int=4>(Tile<int=4> const&) [16]"\n')
    ncu = tmp_path / "ncu.csv"
    ncu.write_text(NCU_RAW_HEADER
                   + '"2","1","a","h","axpy(float *, const float *, int)","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0",'
                     '"NVIDIA H100 80GB HBM3","5"\n'
                   + '"3","1","a","h","void fill<4>(const Tile<4> &)","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0",'
                     '"NVIDIA H100 80GB HBM3","2"\n')
    nvprof_frame, ncu_frame = import_nvprof(trace), import_ncu(ncu)
    assert nvprof_frame["variant"].tolist() == ["(float*, const float*, int)", "(double*, const double*, int)",
                                                "(const Tile<4>&)"]
    assert ncu_frame["variant"].tolist() == ["(float*, const float*, int)", "(const Tile<4>&)"]
    assert ncu_frame["kernel_full_name"].iloc[0] == "axpy(float *, const float *, int)"  # as the profiler wrote it


@pytest.mark.parametrize(("nvprof", "ncu"), [
    ("(float* const*, int)", "(float *const *, int)"),
    ("(Pair<float const, int> const*)", "(const Pair<const float,int> *)"),
    ("(void (*)(int, float const*), Box<Box<int> >)", "(void(*)(int, const float *), Box<Box<int>>)"),
    ("(unsigned int const volatile*)", "(volatile const unsigned int*)"),
])
def test_a_parameter_list_has_one_spelling_whichever_profiler_wrote_it(nvprof, ncu):
    assert parameter_signature(nvprof) == parameter_signature(ncu)


@pytest.mark.parametrize(("nvprof", "nsight", "short"), [
    ("void reduce<float, unsigned int=256, bool=1>(float*, unsigned int) [12]",
     "void reduce<float, (unsigned int)256, (bool)1>(float *, unsigned int)", "reduce<float, 256, 1>"),
    ("ns::Outer<float const>::inner<Box<int> >(int)", "ns::Outer<const float>::inner<Box<int>>(int)",
     "ns::Outer<const float>::inner<Box<int>>"),
])
def test_a_templated_kernel_has_one_name_whichever_profiler_wrote_it(nvprof, nsight, short):
    assert kernel_short_name(nvprof) == kernel_short_name(nsight) == short


def test_a_kernel_without_a_parameter_list_keeps_an_empty_variant(tmp_path):
    ncu = tmp_path / "ncu.csv"  # OpenCL and extern "C" kernels are named without their parameters
    ncu.write_text(NCU_RAW_HEADER + '"0","1","a","h","stencil","1","7","(16, 16, 1)","(64, 64, 1)","0","9.0",'
                                    '"NVIDIA H100 80GB HBM3","5"\n')
    assert import_ncu(ncu)["variant"].tolist() == [""]


def test_unified_memory_rows_of_a_trace_are_not_kernels(tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_text(
        NVPROF_TRACE_HEADER.replace('"Stream","Name"', '"Stream","Unified Memory","Name"').replace(",,,,\n", ",,,,,\n")
        + '489.2,,,,,,,,,,,,,,"PC 0x46de3225","[Unified Memory CPU page faults]"\n'
        + '491.4,25.9,,,,,,,,,,"Tesla T4 (0)",,,"256.000000KB","[Unified Memory Memcpy HtoD]"\n'
        + '492.1,222.8,64,1,1,1024,1,1,16,0,0,"Tesla T4 (0)","1","7",,"vectorAdd(int const *, int*, int) [131]"\n'
        + '492.1,214.8,,,,,,,,,,"Tesla T4 (0)",,,"1","[Unified Memory GPU page faults]"\n'
        + '493.0,1.5,,,,,,,,,,"Tesla T4 (0)",,,,"[CUDA memcpy DtoH]"\n')
    frame = import_nvprof(trace)
    assert frame["kernel"].tolist() == ["vectorAdd"]
    assert frame["time_s"].tolist() == pytest.approx([222.8e-6])


NCU_DETAILS_HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
                      '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
NCU_LAUNCH = '"{id}","1","a.out","127.0.0.1","k1(float *)","1","7","(256, 1, 1)","(196, 1, 1)","0","8.0",'


def test_ncu_clock_rates_in_hz_units_scale_to_cycles_per_second(tmp_path):
    path = tmp_path / "details.csv"
    path.write_text("\n".join([
        NCU_DETAILS_HEADER,
        NCU_LAUNCH.format(id=0) + '"GPU Speed Of Light Throughput","SM Frequency","Ghz","1.41"',
        NCU_LAUNCH.format(id=0) + '"GPU Speed Of Light Throughput","Duration","us","2.40"',
        NCU_LAUNCH.format(id=1) + '"GPU Speed Of Light Throughput","SM Frequency","Mhz","885.00"',
        NCU_LAUNCH.format(id=1) + '"GPU Speed Of Light Throughput","Duration","ms","1.06"',
        NCU_LAUNCH.format(id=2) + '"GPU Speed Of Light Throughput","SM Frequency","cycle/nsecond","1.20"',
        NCU_LAUNCH.format(id=2) + '"GPU Speed Of Light Throughput","Duration","us","3.00"']) + "\n")
    frame = import_ncu(path, gpu="A100")
    assert frame["SM Frequency"].tolist() == pytest.approx([1.41e9, 885e6, 1.2e9])
    assert frame.attrs["units"]["SM Frequency"] == "cycle/second"


def test_ncu_rule_rows_are_no_metrics(tmp_path):
    path = tmp_path / "details.csv"
    header = NCU_DETAILS_HEADER + ',"Rule Name","Rule Type","Rule Description","Estimated Speedup Type","Estimated Speedup"'
    path.write_text("\n".join([
        header,
        NCU_LAUNCH.format(id=0) + '"GPU Speed Of Light Throughput","Duration","us","2.40","","","","",""',
        NCU_LAUNCH.format(id=0) + '"SpeedOfLight","","","","SOLBottleneck","OPT","Low throughput","global","50"']) + "\n")
    frame = import_ncu(path, gpu="A100")
    assert "" not in frame.columns and not any(str(c).startswith("Unnamed") for c in frame.columns)
    assert frame["time_s"].tolist() == pytest.approx([2.4e-6]) and frame["block.x"].tolist() == [256]


def test_an_older_ncu_details_page_keeps_block_and_grid_size_as_counts(tmp_path):
    path = tmp_path / "details.csv"
    launch = '"0","28439","cfd","127.0.0.1","cuda_compute_flux(int,int*,float*)","2020-May-29 12:02:46","1","7",'
    path.write_text("\n".join([
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream","Section Name",'
        '"Metric Name","Metric Unit","Metric Value"',
        launch + '"GPU Speed Of Light","Duration","nsecond","8992"',
        launch + '"Launch Statistics","Block Size","","192"',
        launch + '"Launch Statistics","Grid Size","","506"']) + "\n")
    frame = import_ncu(path, gpu="V100")
    assert frame["Block Size"].tolist() == [192] and frame["Grid Size"].tolist() == [506]
    assert "block.x" not in frame.columns  # counts, not the launch's shape
    assert frame["time_s"].tolist() == pytest.approx([8.992e-6])


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-be"])
def test_a_profile_saved_with_a_byte_order_mark_reads_as_the_plain_one(tmp_path, encoding):
    """Excel's "CSV UTF-8" starts with a UTF-8 byte-order mark, Windows PowerShell's > writes UTF-16:
    the first header name stays a name (the ncu ID is no feature, nvprof's Start stays start_s). UTF-16
    without a mark (.NET's Encoding.Unicode) was read as UTF-8, a table of NUL bytes."""
    for source, reader in ((TRACE, import_nvprof), (NCU, import_ncu), (METRICS, import_nvprof)):
        marked = tmp_path / f"{encoding}_{source.name}"
        marked.write_text(source.read_text(), encoding=encoding)
        pd.testing.assert_frame_equal(reader(source).drop(columns="source"), reader(marked).drop(columns="source"))
    for source, reader, log in ((TRACE, import_nvprof, "==27954== Profiling result:\n"),
                                (NCU, import_ncu, "==PROF== Disconnected from process 31337\n")):
        plain, marked = tmp_path / f"plain_{source.name}", tmp_path / f"header_first_{source.name}"
        plain.write_text(source.read_text().split(log)[1])
        marked.write_text(plain.read_text(), encoding=encoding)
        expected = reader(plain)
        assert {"ID", "start_s"} & set(expected.columns)
        pd.testing.assert_frame_equal(expected.drop(columns="source"), reader(marked).drop(columns="source"))


def test_an_nvprof_trace_lacking_its_name_column_says_so(tmp_path):
    """Log lines with commas above a trace header without Name: the error names the missing column."""
    text = TRACE.read_text().replace(',"Name"', "", 1)
    path = tmp_path / "trace.csv"
    path.write_text(text)
    with pytest.raises(GpuperfError, match=r"trace.csv: line 4: the header lacks column\(s\) Name"):
        import_nvprof(path)


def test_an_nvprof_csv_in_a_layout_not_read_names_its_header_and_the_layouts_read(tmp_path):
    # Launch rows without a Kernel column: the importer must not send the user back to itself.
    path = tmp_path / "launch_metrics.csv"
    path.write_text('==5210== Profiling application: ./matmul 256\n==5210== Metric result:\n'
                    '"Device","Context","Stream","Correlation_ID","achieved_occupancy"\n,,,,\n'
                    '"Tesla K40c (0)","1","7","116",0.491238\n')
    with pytest.raises(GpuperfError) as error:
        import_nvprof(path)
    message = str(error.value)
    assert message.startswith(f"{path}: an nvprof CSV in a layout gpuperf does not read (header: Device,Context,")
    assert "GPU trace (--print-gpu-trace: Duration, Name)" in message and "gpuperf import nvprof" not in message


def test_a_second_nvprof_summary_appended_to_the_file_is_refused(tmp_path):
    """Two profiles in one file were read as one, each kernel twice, its second header and units
    skipped as rows that are not GPU activities."""
    twice = tmp_path / "twice.csv"
    twice.write_text(SUMMARY.read_text() * 2)
    with pytest.raises(GpuperfError, match=r"twice.csv: line 15: the summary's header again, a second profile "
                                           r"appended; one profile per file"):
        import_nvprof(twice, gpu="K40")
    rows = SUMMARY.read_text().splitlines()
    again = tmp_path / "again.csv"
    again.write_text("\n".join([*rows[:10], rows[5]]) + "\n")
    with pytest.raises(GpuperfError, match=r"again.csv: line 11: kernel 'matMul_sharedmem\(float\*, float\*, float\*, "
                                           r"int\)' again \(first on line 6\)"):
        import_nvprof(again, gpu="K40")


def test_an_nvprof_api_trace_is_refused_naming_the_trace_to_take(tmp_path):
    """--print-api-trace lists host calls (Start, Duration, Name, Correlation_ID): it was "missing column(s)
    'Device'"."""
    path = tmp_path / "api.csv"
    path.write_text('==1== Profiling result:\n"Start","Duration","Name","Correlation_ID"\nus,us,,\n'
                    '0.000000,2.866000,"cuDeviceGetPCIBusId",1\n')
    with pytest.raises(GpuperfError, match=r"api.csv: line 2: nvprof's API trace \(--print-api-trace: host calls, no "
                                           r"kernel launches on a device\); profile with --print-gpu-trace"):
        import_nvprof(path)


@pytest.mark.parametrize(("source", "old", "statistic"), [
    (NCU, '"gpu__time_duration.sum"', "avg"), (NCU, '"gpu__time_duration.sum"', "min"),
    (DETAILS, '"Duration"', "avg"), (DETAILS, '"Duration"', "max")])
def test_an_ncu_time_collected_as_the_average_or_extreme_over_passes_is_the_time(tmp_path, source, old, statistic):
    """Scripts collect gpu__time_duration.avg (or .max, .min): one launch's statistics over its replay
    passes are its time as the sum is; such a profile was refused for lacking the sum."""
    path = edited(tmp_path, source, old, f'"gpu__time_duration.{statistic}"', count=-1)  # every launch's
    gpu = "H100" if source == DETAILS else None  # the raw page names its GPU
    pd.testing.assert_series_equal(import_ncu(path, gpu=gpu)["time_s"], import_ncu(source, gpu=gpu)["time_s"])


@pytest.mark.parametrize("source", [NCU, DETAILS])
def test_a_second_ncu_profile_appended_to_the_file_is_named_as_such(tmp_path, source):
    """Before: the raw page said the time 'gpu__time_duration.sum' is not a number, the details page
    that a launch has no metric."""
    text = source.read_text()
    twice = tmp_path / "twice.csv"
    twice.write_text(text + text)
    with pytest.raises(GpuperfError, match=r"twice.csv: line \d+: the header again, a second profile appended; one "
                                           r"profile per file"):
        import_ncu(twice, gpu="H100")


def _each_row(path: Path, edit) -> str:
    """The text of a bundled profile with each CSV row passed through ``edit`` (messages kept)."""
    import csv
    import io
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for line in path.read_text().splitlines():
        if line.startswith("=="):
            out.write(line + "\n")
        else:
            writer.writerow(edit(next(csv.reader([line]))))
    return out.getvalue()


def test_an_nvprof_summary_needs_only_avg_calls_and_name(tmp_path):
    path = tmp_path / "summary.csv"
    path.write_text(_each_row(SUMMARY, lambda row: row[:5] + row[7:]))  # no Min, Max
    frame = import_nvprof(path, gpu="K40")
    assert "time_s_min" not in frame.columns
    assert frame.loc[frame["kernel"] == "matMul_sharedmem", "time_s"].iloc[0] == pytest.approx(2639.531e-6)


@pytest.mark.parametrize("calls", ["n/a", "", "2.5", "0"])
def test_an_nvprof_summary_calls_cell_that_counts_nothing_is_named(tmp_path, calls):
    path = tmp_path / "summary.csv"
    path.write_text(SUMMARY.read_text().replace(",3,2639.531000,", f",{calls},2639.531000,"))
    with pytest.raises(GpuperfError, match=rf"summary.csv: line 6: Calls='{re.escape(calls)}' is not a count"):
        import_nvprof(path, gpu="K40")


def test_an_nvprof_unit_error_names_the_units_line(tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_text(TRACE.read_text().replace("\nms,us,", "\nks,us,"))
    with pytest.raises(GpuperfError, match="trace.csv: line 5: Start unit: unknown time unit 'ks'"):
        import_nvprof(trace)
    summary = tmp_path / "summary.csv"
    summary.write_text(SUMMARY.read_text().replace(",%,ms,,us,us,us,", ",%,ms,,us,ks,us,"))
    with pytest.raises(GpuperfError, match="summary.csv: line 5: Min unit: unknown time unit 'ks'"):
        import_nvprof(summary, gpu="K40")


def test_an_nvprof_trace_row_without_device_or_name_is_named(tmp_path):
    lines = TRACE.read_text().splitlines()
    line = next(i for i, text in enumerate(lines) if "matMul" in text)
    for cell, column in (('"Tesla K40c (0)"', "Device"), ('"matMul_sharedmem(float*, float*, float*, int) [116]"', "Name")):
        edited = list(lines)
        edited[line] = edited[line].replace(cell, '""')
        path = tmp_path / "trace.csv"
        path.write_text("\n".join(edited) + "\n")
        with pytest.raises(GpuperfError, match=rf"trace.csv: line {line + 1}: no {column} \(an empty cell\)"):
            import_nvprof(path, gpu="K40")


def test_the_applications_own_output_before_an_nvprof_trace_is_skipped(tmp_path):
    lines = TRACE.read_text().splitlines()
    path = tmp_path / "trace.csv"
    path.write_text("\n".join([lines[0], "Matrix sizes: 256, 512, 1024", "Result = PASS", *lines[1:]]) + "\n")
    assert import_nvprof(path).drop(columns="source").equals(import_nvprof(TRACE).drop(columns="source"))


def test_an_overflowed_nvprof_metric_is_missing_with_a_note(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text(METRICS.read_text().replace(",1343488,85983232,32694613", ",1343488,85983232,<OVERFLOW>"))
    with pytest.warns(UserWarning, match=r"metrics.csv: line \d+: inst_executed overflowed"):
        frame = import_nvprof(TRACE, metrics=path)
    assert frame.loc[frame["kernel"] == "matMul_sharedmem", "inst_executed"].isna().all()


def test_metrics_varying_over_launches_of_several_geometries_are_noted(tmp_path):
    """Every launch gets the metrics' average: per-thread counts taken from it are off."""
    with pytest.warns(UserWarning, match="matMul_sharedmem ran 3 launches of 3 geometries while its metrics vary "
                                         r"\(achieved_occupancy from 0.892614 to 0.981541\)"):
        import_nvprof(TRACE, metrics=METRICS)
    with pytest.warns(UserWarning, match="matMul_sharedmem ran 3 launches of 3 geometries"):  # by kernel and variant
        import_nvprof(mangled_copy(tmp_path, TRACE), metrics=METRICS)
    steady = tmp_path / "metrics.csv"  # every invocation the same: the average is each launch's value
    steady.write_text(_each_row(METRICS, lambda row: row if row[0] == "Device" else row[:5] + [row[7]] * 3))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import_nvprof(TRACE, metrics=steady)


def test_a_table_gpu_with_an_nvprof_device_index_is_the_gpu(tmp_path):
    path = tmp_path / "table.csv"
    path.write_text("kernel,gpu,duration_us\nk,Tesla K20 (0),10\nk,Tesla K20,12\n")
    assert set(import_nvprof(path)["gpu"]) == {"Tesla K20"}


@pytest.mark.parametrize(("edit", "message"), [
    (('"Duration","usecond","12.42"', '"Duration","usecond","0"'), r"line 7: Duration gives no time \('0'\)"),
    (('"Duration","usecond","12.42"', '"Duration","byte","12.42"'), r"line 7: Duration has unit 'byte', not a time"),
])
def test_a_details_page_time_error_names_the_files_duration_not_the_raw_metric(tmp_path, edit, message):
    """It named gpu__time_duration.sum, which the details page never shows."""
    path = edited(tmp_path, DATA / "ncu_details.csv", *edit)
    with pytest.raises(GpuperfError, match=message):
        import_ncu(path, gpu="H100")


def test_profiles_a_spreadsheet_saved_read_as_the_profilers_own(tmp_path):
    """A spreadsheet quotes the log lines that hold quotes ("==PROF== Profiling ""k""..."): the file was
    "no CSV row ... Profile again with --csv", though it was ncu --csv output."""
    import csv
    import io

    for name, reader in (("ncu_raw.csv", import_ncu), ("nvprof_gpu_trace.csv", import_nvprof)):
        text = (DATA / name).read_text()
        saved = io.StringIO()
        csv.writer(saved, lineterminator="\r\n").writerows(csv.reader(io.StringIO(text)))
        (tmp_path / name).write_text(saved.getvalue(), newline="")
        if name == "ncu_raw.csv":
            assert '"==PROF== Profiling ""matmul_tiled""' in saved.getvalue()  # quoted as a spreadsheet does
        pd.testing.assert_frame_equal(reader(tmp_path / name).drop(columns="source"),
                                      reader(DATA / name).drop(columns="source"))


def test_a_units_row_spelt_with_the_greek_mu_and_start_times_in_seconds(tmp_path):
    """Some locales print microseconds with the Greek letter mu (U+03BC), not the micro sign: the units
    row was "no units row below the header"."""
    greek = tmp_path / "greek.csv"
    greek.write_text(TRACE.read_text().replace("\nms,us,", "\nms,\u03bcs,", 1), encoding="utf-8")
    pd.testing.assert_frame_equal(import_nvprof(greek).drop(columns="source"),
                                  import_nvprof(TRACE).drop(columns="source"))
    frame = import_nvprof(TRACE).set_index("kernel")
    assert frame.loc["matMul_sharedmem", "start_s"].iloc[0] == 0.254931205  # ms in the file
    assert frame.loc["matMul_sharedmem", "time_s"].iloc[0] == 118.272e-6  # us in the file


def test_infinite_times_are_refused_by_row(tmp_path):
    from gpuperf.datasets.schema import measured_rows

    path = tmp_path / "inf.csv"
    path.write_text("kernel,gpu,time_s\nscale,V100,1e-3\nscale,V100,inf\n")
    with pytest.raises(GpuperfError, match=r"inf\.csv: line 3: time_s gives time inf s, not a positive time"):
        import_nvprof(path)
    frame = pd.DataFrame({"kernel": ["k", "k"], "time_s": [1e-3, np.inf], "status": ["ok", "ok"]})
    with pytest.raises(GpuperfError, match=r"t\.csv: row 2: time_s=inf is not a positive number"):
        measured_rows(frame, "t.csv")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("kernel,gpu,time_ms\nk1,GTX 980,1.5\nk2,GTX 980,-2\n", "line 3: time_ms gives time -0.002 s"),
        ("kernel,gpu,time_ms\nk1,GTX 980,1.5\nk2,GTX 980,inf\n", "line 3: time_ms gives time inf s"),
        # a blank line makes file lines and rows part ways: the row is named by its count
        ("kernel,gpu,time_ms\nk1,GTX 980,1.5\n\nk2,GTX 980,-2\n", "row 2: time_ms gives time -0.002 s"),
        ("kernel,gpu,time_ms\nk1,GTX 980,1.5\n\nk2,GTX 980,inf\n", "row 2: time_ms gives time inf s"),
    ],
)
def test_a_time_table_names_a_bad_time_by_one_numbering(tmp_path, text, where):
    path = tmp_path / "times.csv"
    path.write_text(text)
    with pytest.raises(GpuperfError, match=rf"^{re.escape(str(path))}: {where}, not a positive time$"):
        import_nvprof(path)


def test_an_nvprof_metrics_file_without_min_and_max_columns_is_read_from_its_averages(tmp_path):
    """A trimmed export (Max and Avg, no Min) says nothing about varying metrics: read, not a KeyError."""
    path = tmp_path / "metrics.csv"
    path.write_text('"Device","Kernel","Invocations","Metric Name","Metric Description","Max","Avg"\n'
                    '"Tesla K40c (0)","k(int)",3,"achieved_occupancy","Achieved Occupancy",0.98,0.94\n')
    frame = import_nvprof(path)
    assert frame["achieved_occupancy"].tolist() == [0.94]


@pytest.mark.parametrize(("name", "short"), [
    ("Less<float const>::operator<(int)", "Less<float const>::operator<"),  # brackets that do not pair: as written
    ("void Less::operator><float const>(int)", "Less::operator><const float>"),  # a '>' closing nothing
    ("void f<int const, Box<int> >(int)", "f<const int, Box<int>>"),  # the outer arguments respelled, not just the inner
    ("void f<-1, (int)-1>(int)", "f<-1, -1>"),  # Nsight's cast of a negative value goes too
])
def test_a_templated_kernels_arguments_are_respelled_only_between_brackets_that_pair(name, short):
    assert kernel_short_name(name) == short


def test_a_parameter_in_the_anonymous_namespace_keeps_it_and_has_one_spelling():
    nvprof, ncu = "((anonymous namespace)::Foo const *, int)", "(const (anonymous namespace)::Foo *, int)"
    assert parameter_signature(nvprof) == parameter_signature(ncu)
    assert "(anonymous namespace)::Foo*" in parameter_signature(nvprof)


@pytest.mark.parametrize(("parameters", "spelled"), [
    ("(float *const *, int)", "(float* const*, int)"),  # a space after a '*' before a qualifier
    ("(char const*, ...)", "(const char*, ...)"),  # a variadic parameter list's ellipsis is one token
])
def test_a_parameter_list_is_spelled_as_documented(parameters, spelled):
    assert parameter_signature(parameters) == spelled


def test_a_signature_keeps_what_follows_an_unclosed_bracket_and_spells_array_bounds_as_types():
    """A truncated signature keeps every token after its unclosed '<' (two truncations stay apart),
    and an array bound is spelled as a type is (spaces between names kept)."""
    assert parameter_signature("(Box<int, float)") != parameter_signature("(Box<int)")
    assert "float" in parameter_signature("(Box<int, float)")
    assert parameter_signature("(int (&)[sizeof (unsigned int)])") == "(int(&)[sizeof(unsigned int)])"


def test_respelling_leaves_tables_and_rows_without_a_full_name_as_they_are():
    from gpuperf.datasets.profiler_csv import respelled_profiled_names

    no_kernel = pd.DataFrame({"kernel_full_name": ["void matmul_tiled<int=16>(float*)"], "time_s": [1.0]})
    assert respelled_profiled_names(no_kernel).equals(no_kernel)
    unnamed = pd.DataFrame({"kernel": ["saxpy"], "kernel_full_name": [" "], "time_s": [1.0]})
    assert respelled_profiled_names(unnamed).equals(unnamed)  # no variant column added either
    mixed = pd.DataFrame({"kernel": ["old", "saxpy"], "variant": [None, "x"],
                          "kernel_full_name": ["void matmul_tiled<int=16>(float*)", "  "]})
    respelled = respelled_profiled_names(mixed)
    assert respelled.loc[1, "kernel"] == "saxpy" and respelled.loc[1, "variant"] == "x"
    assert respelled.loc[0, "kernel"] == "matmul_tiled<16>"


def test_an_earlier_import_of_a_mangled_name_is_read_under_its_demangled_kernel_and_variant():
    """fit, evaluate and predict-gpu respell an earlier version's import, which kept the symbol as the kernel."""
    from gpuperf.datasets.profiler_csv import respelled_profiled_names

    symbol = "_Z12matmul_tiledILi16EEvPKfS1_Pfi"
    earlier = pd.DataFrame({"kernel": [symbol], "variant": [""], "kernel_full_name": [symbol], "time_s": [1.0]})
    respelled = respelled_profiled_names(earlier)
    assert respelled.loc[0, "kernel"] == "matmul_tiled<16>"
    assert respelled.loc[0, "variant"] == "(const float*, const float*, float*, int)"
    assert respelled.loc[0, "kernel_full_name"] == symbol


def test_ncu_keeps_a_launch_whose_whole_count_is_empty(tmp_path):
    """An empty launch__grid_size cell (a metric ncu did not collect for that launch) contradicts nothing:
    the launch is imported with the count left empty, not refused as damaged."""
    frame = import_ncu(edited(tmp_path, NCU, '"256","1,024"', '"256",""'))
    assert frame["launch__grid_size"].isna().sum() == 1


def test_an_ncu_csv_without_its_log_lines_is_told_by_its_header(tmp_path):
    """A page a spreadsheet saved (header unquoted) and a --print-summary export (no ID column) have no
    ==PROF== lines; before, both were taken for nvprof's and got nvprof's errors ('not an nvprof CSV',
    'profile ... with Nsight Compute')."""
    import csv

    from gpuperf.decisions.profile import read_profile

    rows = [row for row in csv.reader(NCU.read_text().splitlines()) if row and not row[0].startswith("==")]
    named = rows[0].index("device__attribute_display_name")
    saved = tmp_path / "saved.csv"
    with saved.open("w", newline="") as handle:
        csv.writer(handle).writerows([row[:named] + row[named + 1:] for row in rows])
    assert saved.read_text().startswith("ID,Process ID,")
    with pytest.raises(GpuperfError, match=r"saved.csv: an Nsight Compute \(ncu --csv\) file, not nvprof's"):
        import_nvprof(saved)
    with pytest.raises(GpuperfError, match=r"saved.csv: line 3: the profile names no GPU \(Device is the index '0'\)"):
        read_profile(saved)
    assert read_profile(saved, gpu="A4000")["grid.x"] == 32
    summary = tmp_path / "summary.csv"
    summary.write_text(
        '"Process ID","Process Name","Host Name","Kernel Name","Block Size","Grid Size","Device","CC","Invocations",'
        '"Section Name","Metric Name","Metric Unit","Minimum","Maximum","Average"\n'
        '"109199","bench","127.0.0.1","saxpy(float, const float *, float *, unsigned long)","(256, 1, 1)",'
        '"(4096, 1, 1)","0","11.0","14","Occupancy","Achieved Occupancy","%","73.56","79.38","74.92"\n')
    with pytest.raises(GpuperfError, match=r"summary.csv: an Nsight Compute \(ncu --csv\) file, not nvprof's"):
        import_nvprof(summary)
    with pytest.raises(GpuperfError, match=r"summary.csv: line 1: an ncu --print-summary table"):
        read_profile(summary, gpu="H100")
    from gpuperf.datasets.tables import read_table_file

    with pytest.raises(GpuperfError, match=r"summary.csv: a profiler's own CSV .*: gpuperf import ncu "):
        read_table_file(summary)


def test_an_nvprof_trace_of_a_second_process_is_refused_by_name(tmp_path):
    """nvprof --profile-child-processes writes each process's trace, header and units row again; before,
    the second header was read as a launch: "line N: Duration='Duration' is not a number"."""
    rows = TRACE.read_text().splitlines()
    child = ["==27960== Profiling application: ./child", "==27960== Profiling result:", *rows[3:]]
    path = tmp_path / "children.csv"
    path.write_text("\n".join(rows + child) + "\n")
    with pytest.raises(GpuperfError, match=rf"children.csv: line {len(rows) + 3}: the trace's header again, a second "
                                           r"profile appended; one profile per file"):
        import_nvprof(path)


@pytest.mark.parametrize("output", ["Result = 42", "done, 3 items", '"quoted output of the application'])
def test_nvprof_metrics_with_the_applications_output_above_are_read(tmp_path, output):
    """nvprof --csv --metrics ... ./app > out.csv 2>&1 puts the application's output above the table; before,
    it was refused ("no header row ... above") right after a note, given twice, that said it was skipped."""
    rows = METRICS.read_text().splitlines()
    path = tmp_path / "captured.csv"
    path.write_text("\n".join([rows[0], output, *rows[1:]]) + "\n")
    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always")
        read = import_nvprof(path)
    pd.testing.assert_frame_equal(read.drop(columns="source"), import_nvprof(METRICS).drop(columns="source"))
    assert sum("is no CSV row" in str(note.message) for note in notes) <= 1
    joined = import_nvprof(TRACE, metrics=path)
    assert joined["achieved_occupancy"].tolist() == [0.947220] * 3 + [0.823450]


def test_nvprof_metric_trace_is_a_row_per_launch_untimed_with_its_metrics_scaled(tmp_path):
    """--print-gpu-trace --metrics/--events: kernels named as the trace names them, metrics as the averages are
    scaled (%, GB/s, levels), a description header spelt as the bundled Rodinia table spells it."""
    with pytest.warns(GpuperfNote, match=r"nvprof_metric_trace.csv: line 8: gld_inst_32bit overflowed"):
        frame = import_nvprof(METRIC_TRACE)
    trace = import_nvprof(TRACE)
    for column in ("kernel", "variant", "kernel_full_name", "device", "gpu", "correlation_id"):
        assert frame[column].tolist() == trace[column].tolist()
    assert set(frame["status"]) == {"untimed"} and frame["time_s"].isna().all()
    assert frame["achieved_occupancy"].tolist() == [0.892614, 0.967505, 0.981541, 0.823450]  # each launch's own
    assert frame["global_memory_load_efficiency"].tolist() == [100.0] * 4  # "100.000000%"
    assert frame["device_memory_write_throughput"].tolist() == [2.2164, 1.191, 0.60613, 3.3684]  # "606.130000MB/s"
    assert frame["device_memory_utilization"].tolist() == [1, 1, 1, 5]  # "Low (1)", "Mid (5)"
    assert frame["inst_executed"].tolist() == [1343488, 10757119, 85983232, 69632]  # an event
    assert frame["gld_inst_32bit"].isna().tolist() == [False, False, True, False]  # <OVERFLOW>
    assert "Achieved Occupancy" not in frame.columns


def metric_trace(tmp_path: Path, header: str, units: str, *rows: str) -> Path:
    path = tmp_path / "launches.csv"
    lines = ["==5210== Profiling application: ./matmul 256", "==5210== Profiling result:",
             '"Device","Context","Stream","Kernel","Correlation_ID",' + header, *([units] if units else []), *rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_metric_trace_units_row_scales_the_numbers_below_it(tmp_path):
    path = metric_trace(tmp_path, '"Floating Point Operations(Single Precision)","L2 Throughput (Reads)",'
                        '"Issue Slot Utilization"', ",,,,,,MB/s,%",
                        '"Tesla K40c (0)","1","7","matMul(float*, int)",116,1048576,512.5,48.8',
                        '"Tesla K40c (0)","1","7","matMul(float*, int)",121,2097152,1.25GB/s,<OVERFLOW>')
    with pytest.warns(GpuperfNote, match="line 6: Issue Slot Utilization overflowed"):
        frame = import_nvprof(path)
    assert frame["floating_point_operations.single_precision."].tolist() == [1048576, 2097152]  # as Rodinia names it
    assert frame["l2_throughput_.reads."].tolist() == [0.5125, 1.25]  # the units row's MB/s, a cell's own GB/s
    assert frame["issue_slot_utilization"].iloc[0] == 48.8 and frame["correlation_id"].tolist() == [116, 121]


@pytest.mark.parametrize(("units", "cell", "message"), [
    (",,,,,furlong/s", "512.5", r"launches.csv: line 4: L2 Throughput: unit 'furlong/s' is not one of %, B/s, KB/s"),
    ("", "512.5GB/z", r"launches.csv: line 4: L2 Throughput='512.5GB/z' is not a number"),
])
def test_a_metric_trace_unit_that_is_no_metrics_is_refused(tmp_path, units, cell, message):
    path = metric_trace(tmp_path, '"L2 Throughput"', units, f'"Tesla K40c (0)","1","7","matMul(float*, int)",116,{cell}')
    with pytest.raises(GpuperfError, match=message):
        import_nvprof(path)


def test_a_metric_trace_row_of_another_width_is_refused_naming_its_line(tmp_path):
    path = edited(tmp_path, METRIC_TRACE, ',132,0.967505,', ',132,')
    with pytest.raises(GpuperfError, match=r"nvprof_metric_trace.csv: line 7: 11 cells, the header has 12"):
        import_nvprof(path)


def test_a_metric_trace_joins_the_gpu_trace_launch_by_launch():
    with pytest.warns(GpuperfNote, match="overflowed"):
        joined = import_nvprof(TRACE, metrics=METRIC_TRACE)
    trace = import_nvprof(TRACE)
    pd.testing.assert_frame_equal(joined[trace.columns], trace)  # the times and geometry as they were
    assert joined["achieved_occupancy"].tolist() == [0.892614, 0.967505, 0.981541, 0.823450]
    assert joined["device_memory_read_throughput"].tolist() == [14.762, 9.5511, 5.2389, 146.98]


def test_a_metric_trace_naming_a_kernel_by_its_mangled_symbol_joins_the_demangled_trace(tmp_path):
    """nvprof --demangling off for the metrics only: the same launches, one kernel written two ways."""
    path = edited(tmp_path, METRIC_TRACE, '"matMul_sharedmem(float*, float*, float*, int)"',
                  '"_Z16matMul_sharedmemPfS_S_i"', count=3)
    with pytest.warns(GpuperfNote, match="overflowed"):
        joined = import_nvprof(TRACE, metrics=path)
    assert joined["achieved_occupancy"].tolist() == [0.892614, 0.967505, 0.981541, 0.823450]


def test_a_trace_launch_without_metrics_keeps_empty_metrics_with_a_note(tmp_path):
    path = tmp_path / "some.csv"  # nvprof --kernels, or a launch whose metrics were not taken
    path.write_text("\n".join(line for line in METRIC_TRACE.read_text().splitlines() if ",132," not in line) + "\n")
    with pytest.warns(GpuperfNote, match=r"no metrics for 1 of the 4 launches of .*nvprof_gpu_trace.csv \(first: "
                                         r"launch 132, matMul_sharedmem\)"):
        joined = import_nvprof(TRACE, metrics=path)
    assert joined["achieved_occupancy"].isna().tolist() == [False, True, False, False]
    assert joined["time_s"].notna().all()


@pytest.mark.parametrize(("old", "new", "message"), [
    (",153,", ",999,", r"launch 999 \(dotProd<float> on 'Tesla K40c \(0\)'\) is not in .*nvprof_gpu_trace.csv, "
                       r"the profile it joins \(1 of its 4 launches are not\)"),
    ('"matMul_sharedmem(float*, float*, float*, int)",132', '"matMul_global(float*, float*, float*, int)",132',
     r"launch 132 is matMul_global\(float\*, float\*, float\*, int\) on 'Tesla K40c \(0\)', but "
     r"matMul_sharedmem\(float\*, float\*, float\*, int\) on 'Tesla K40c \(0\)' in .*nvprof_gpu_trace.csv"),
])
def test_a_metric_trace_whose_launches_the_trace_did_not_run_is_refused(tmp_path, old, new, message):
    path = edited(tmp_path, METRIC_TRACE, old, new)
    with pytest.raises(GpuperfError, match=message):
        import_nvprof(TRACE, metrics=path)


def test_a_metric_trace_joins_only_where_both_files_have_correlation_ids(tmp_path):
    without = tmp_path / "no_ids.csv"  # the layout of nvprof versions before Correlation_ID
    text = METRIC_TRACE.read_text().replace('"Correlation_ID",', "")
    without.write_text(re.sub(r'(int\)"),\d+,', r"\1,", text))
    alone = import_nvprof(without)
    assert "correlation_id" not in alone.columns and alone["achieved_occupancy"].iloc[1] == 0.967505
    with pytest.raises(GpuperfError, match=r"no_ids.csv: per-launch metrics join a GPU trace launch by launch, by "
                                           r"Correlation_ID, and .*no_ids.csv has no Correlation_ID column"):
        import_nvprof(TRACE, metrics=without)
    with pytest.raises(GpuperfError, match=r"nvprof_metric_trace.csv: per-launch metrics join a GPU trace .* and "
                                           r".*nvprof_summary.csv has no Correlation_ID column"):
        import_nvprof(SUMMARY, metrics=METRIC_TRACE)


@pytest.mark.parametrize(("old", "new", "message"), [
    (",153,", ",146,", r"nvprof_metric_trace.csv: Correlation_ID 146 on two launches; one profile per file"),
    ('"Achieved Occupancy"', '"static.smem"', r"nvprof_metric_trace.csv: metric\(s\) static.smem are already columns"),
])
def test_a_metric_trace_that_cannot_join_launch_by_launch_is_refused(tmp_path, old, new, message):
    path = edited(tmp_path, METRIC_TRACE, old, new)
    with pytest.raises(GpuperfError, match=message):
        import_nvprof(TRACE, metrics=path)


def test_a_metric_trace_header_naming_no_metric_or_one_twice_is_refused(tmp_path):
    twice = metric_trace(tmp_path, '"Achieved Occupancy","achieved_occupancy"', "",
                         '"Tesla K40c (0)","1","7","matMul(float*, int)",116,0.5,0.5')
    with pytest.raises(GpuperfError, match=r"launches.csv: line 3: columns 'Achieved Occupancy' and "
                                           r"'achieved_occupancy' would both be 'achieved_occupancy'"):
        import_nvprof(twice)
    path = tmp_path / "bare.csv"
    path.write_text('"Device","Context","Stream","Kernel"\n"Tesla K40c (0)","1","7","matMul(float*, int)"\n')
    with pytest.raises(GpuperfError, match=r"bare.csv: line 1: no metric or event columns beside Device, Context"):
        import_nvprof(path)
