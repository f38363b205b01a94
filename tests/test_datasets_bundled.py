"""The bundled tables: loadable by name, in the dataset shape, values as published (units aside)."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuperf.datasets import BUNDLED, check_dataset, dataset_summary, load_dataset
from gpuperf.datasets.bundled import data_dir
from gpuperf.datasets.schema import KEY_COLUMNS, OK, shift_decimal
from gpuperf.errors import GpuperfError
from gpuperf.hardware.specs import canonical_gpu_name

TIMED = [name for name in BUNDLED if name != "amaris_gpu_specs"]


@functools.lru_cache(maxsize=None)
def _read_raw(name: str) -> pd.DataFrame:
    return pd.read_csv(data_dir() / BUNDLED[name].file, low_memory=False)


def raw_file(name: str) -> pd.DataFrame:
    """The file as pandas reads it, independently of gpuperf's loader."""
    return _read_raw(name).copy()


@pytest.mark.parametrize("name", TIMED)
def test_every_timed_table_is_in_the_dataset_shape(name):
    frame = load_dataset(name)
    assert len(frame) == len(raw_file(name))
    assert list(frame.columns[: len(KEY_COLUMNS)]) == list(KEY_COLUMNS)
    assert (frame["source"] == name).all()
    ok = frame["status"] == OK
    assert ok.any()
    assert (frame.loc[ok, "time_s"] > 0).all()
    assert frame.loc[~ok, "time_s"].isna().all()
    check_dataset(frame, name)


@pytest.mark.parametrize("name", [name for name, info in BUNDLED.items() if not name.endswith("_pocl")])
def test_every_gpu_has_its_canonical_descriptor_name(name):  # the _pocl tables ran on a CPU device
    gpus = load_dataset(name)["gpu"].unique()
    assert [g for g in gpus if canonical_gpu_name(g) != g] == []


@pytest.mark.parametrize(
    ("name", "published", "divisor"),
    [
        ("schoonhoven_spaces", "time_mean_ms", 1e3),
        ("benchmark_hub_spaces", "time_ms", 1e3),
        ("benchmark_hub_ktt_resources", "duration_us", 1e6),
        ("k40c_traces", "duration_ns", 1e9),
        ("rodinia_nvprof", "time_s", 1.0),
        ("rodinia_published_predictions", "TestDuration", 1.0),
    ],
)
def test_times_are_the_published_times_in_seconds(name, published, divisor):
    frame, raw = load_dataset(name), raw_file(name)
    np.testing.assert_allclose(frame["time_s"], raw[published] / divisor, rtol=1e-15)


def test_the_published_decimal_is_kept_exactly():
    frame, raw = load_dataset("schoonhoven_spaces"), raw_file("schoonhoven_spaces")
    # 188.959 ms is exactly the float 0.188959, not 188.959 * 0.001.
    expected = [float(f"{v!r}e-3") for v in raw["time_mean_ms"].head(1000)]
    assert frame["time_s"].head(1000).tolist() == expected


@pytest.mark.parametrize("exponent", [-9, -6, -3, 0, 3])
def test_shift_decimal_moves_the_decimal_point_in_the_text(exponent):
    values = [3.87533, 188.959, 0.1, -0.0, 0.0, -2.5, 123.0, 1e-05, 4.2e-07, 1e16, 1.7976931348623157e308,
              5e-324, 2.2250738585072014e-308, float("nan"), float("inf"), float("-inf")]
    values += np.random.default_rng(0).lognormal(0.0, 8.0, 2000).tolist()
    def by_text(value: float) -> float:  # the float of the text with its exponent moved
        if exponent == 0 or not np.isfinite(value):
            return value
        mantissa, _, own = repr(value).partition("e")
        return float(f"{mantissa}e{int(own or 0) + exponent}")

    assert [repr(shift_decimal(v, exponent)) for v in values] == [repr(by_text(v)) for v in values]


def test_other_columns_are_copied_unaltered():
    frame, raw = load_dataset("rodinia_nvprof"), raw_file("rodinia_nvprof")
    for column in ("elapsed_cycles_sm", "achieved_occupancy", "l2_throughput_.reads.", "input.size.1", "app"):
        assert frame[column].equals(raw[column]), column
    hub, hub_raw = load_dataset("benchmark_hub_spaces"), raw_file("benchmark_hub_spaces")
    assert hub["hub_folder"].equals(hub_raw["source"])
    assert hub["repeats"].equals(hub_raw["n_times"])
    np.testing.assert_allclose(hub["compile_time_s"], hub_raw["compile_time_ms"] / 1e3, rtol=1e-15)


def test_failed_configurations_keep_their_status():
    hub, hub_raw = load_dataset("benchmark_hub_spaces"), raw_file("benchmark_hub_spaces")
    assert hub["status"].value_counts().to_dict() == hub_raw["status"].value_counts().to_dict()
    ktt, ktt_raw = load_dataset("benchmark_hub_ktt_resources"), raw_file("benchmark_hub_ktt_resources")
    assert set(ktt["status"]) == {OK, "ComputationFailed"}
    assert (ktt["status"] == OK).sum() == (ktt_raw["status"] == "Ok").sum()


def test_tuning_variants_label_their_parameters():
    frame = load_dataset("schoonhoven_spaces")
    gemm = frame[frame["kernel"] == "GEMM"].iloc[0]
    label = dict(pair.split("=") for pair in gemm["variant"].split(","))
    assert set(label) == {"MWG", "NWG", "KWG", "MDIMC", "NDIMC", "MDIMA", "NDIMB", "KWI", "VWM", "VWN",
                          "STRM", "STRN", "SA", "SB", "PRECISION"}
    assert all(float(value) == gemm[name] for name, value in label.items())
    assert not frame.duplicated(["kernel", "variant", "gpu"]).any()
    hub = load_dataset("benchmark_hub_spaces")
    assert not hub.duplicated(["kernel", "variant", "gpu_label"]).any()


def test_published_gpu_labels_map_to_descriptors():
    frame = load_dataset("rodinia_nvprof")
    pairs = set(zip(frame["device"], frame["gpu"]))
    assert ("Quadro", "Quadro K5200") in pairs and ("TitanX", "GTX Titan X") in pairs
    pnpoly = load_dataset("schoonhoven_spaces").query("kernel == 'pnpoly'")
    assert set(pnpoly["device"]) == {"x86_64"}  # recorded as published
    assert "Tesla K20" in set(pnpoly["gpu"])


def test_gpu_specs_are_parsed_from_the_published_strings():
    specs = load_dataset("amaris_gpu_specs").set_index("gpu_label")
    raw = raw_file("amaris_gpu_specs").set_index("model")
    assert raw.loc["Tesla-K40", "cores_per_sm"] == "2880/15"
    assert specs.loc["Tesla-K40", ["cores", "sms", "clock_mhz", "bandwidth_gb_s"]].tolist() == [2880, 15, 745, 276.5]
    assert len(specs) == len(raw)


def test_loads_are_cached_and_return_copies(monkeypatch):
    import gpuperf.datasets.bundled as bundled

    first = load_dataset("matvec_bsp")
    monkeypatch.setattr(bundled, "read_csv", lambda path: pytest.fail(f"{path} read again"))
    assert load_dataset("matvec_bsp").equals(first)  # from the cache: the file is not read again
    first.loc[0, "time_s"] = -1.0
    assert load_dataset("matvec_bsp").loc[0, "time_s"] > 0


def test_raw_is_the_file_as_published():
    assert load_dataset("k40c_traces", raw=True).equals(raw_file("k40c_traces"))


def test_unknown_name_suggests_the_nearest():
    with pytest.raises(GpuperfError, match="schoonhoven_spaces"):
        load_dataset("schoonhoven_space")


def test_summary_counts_from_the_files():
    summary = {row["name"]: row for row in dataset_summary()}
    assert set(summary) == set(BUNDLED)
    for name in TIMED:
        raw = raw_file(name)
        assert summary[name]["rows"] == len(raw)
        assert summary[name]["gpus"] == load_dataset(name)["gpu"].nunique()
    assert summary["schoonhoven_spaces"]["kernels"] == raw_file("schoonhoven_spaces")["kernel"].nunique()
    assert summary["benchmark_hub_spaces"]["license"] == "MIT"


def test_the_summary_is_cached_and_counted_again_when_a_table_or_the_version_changes(tmp_path, monkeypatch):
    """`gpuperf datasets` read and shaped every bundled table on each run (4 s): a table's counts are
    cached, and read again from the file where its bytes, the GPU descriptors or gpuperf's version
    changed, or the cache file is damaged; the summary is the same either way."""
    import shutil

    import gpuperf
    from gpuperf.datasets import bundled
    from gpuperf.hardware import specs

    name = "matvec_bsp"
    info = BUNDLED[name]
    (tmp_path / "data").mkdir()
    table = Path(shutil.copy(data_dir() / info.file, tmp_path / "data" / info.file))
    monkeypatch.setenv("GPUPERF_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("GPUPERF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(bundled, "BUNDLED", {name: info})
    read: list[str] = []
    real = bundled._bundled
    monkeypatch.setattr(bundled, "_bundled", lambda table_name, raw: read.append(table_name) or real(table_name, raw))

    first = dataset_summary()
    assert read == [name] and first[0]["rows"] == len(raw_file(name))
    assert dataset_summary() == first and read == [name]  # from the cache: no table read
    cached = next((tmp_path / "cache" / "datasets").glob("summary-*.json"))
    cached.write_text("{", encoding="utf-8")  # a damaged cache file: counted again, and rewritten
    assert dataset_summary() == first and read == [name] * 2
    cached.write_text('{"rows": "12", "gpu_names": []}', encoding="utf-8")  # JSON, but not the counts' form
    assert dataset_summary() == first and read == [name] * 3
    monkeypatch.setattr(gpuperf, "__version__", "99.0")
    assert dataset_summary() == first and read == [name] * 4
    every = specs.gpus()
    monkeypatch.setattr(specs, "gpus", lambda: every[:-1])  # other GPU descriptors (GPUPERF_GPUS) name GPUs anew
    assert dataset_summary() == first and read == [name] * 5
    pd.read_csv(table).head(7).to_csv(table, index=False)
    assert dataset_summary()[0]["rows"] == 7 and read == [name] * 6


def test_a_new_gpu_and_kernel_family_drop_in_without_code(tmp_path):
    raw = raw_file("schoonhoven_spaces").query("kernel == 'convolution'").head(50).copy()
    raw["gpu"], raw["device_name"] = "GTX_9090", "NVIDIA GeForce GTX 9090"
    family = raw.head(5).copy()
    family["kernel"] = "reduction"
    family = family.drop(columns=["block_size_y", "tile_size_y"]).assign(unroll=[1, 2, 4, 8, 16])
    path = tmp_path / "more_spaces.csv.gz"
    pd.concat([raw, family]).to_csv(path, index=False)
    frame = load_dataset(path)
    assert len(frame) == 55
    assert set(frame["gpu"]) == {"GTX_9090"}  # unknown GPU kept as given
    reduction = frame[frame["kernel"] == "reduction"]
    assert all("unroll=" in v for v in reduction["variant"])
    assert "unroll" in frame.attrs["parameters"]


def test_a_dataset_shaped_csv_loads_back(tmp_path):
    path = tmp_path / "mine.csv"
    load_dataset("matvec_bsp").to_csv(path, index=False)
    back = load_dataset(path)
    assert len(back) == 1596 and back["time_s"].equals(load_dataset("matvec_bsp")["time_s"])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.assign(time_mean_ms=t["time_mean_ms"].astype(object).where(t.index != 3, "fast")),
         r"line 5: time_mean_ms='fast' is not a number"),
        (lambda t: t.assign(time_mean_ms=t["time_mean_ms"].where(t.index != 2, -1.0)),
         r"line 4: time_mean_ms gives time -0.001 s, not a positive time"),
    ],
)
def test_a_malformed_copy_names_file_and_line(tmp_path, change, message):
    raw = raw_file("schoonhoven_spaces").head(10)
    path = tmp_path / "broken.csv"
    change(raw).to_csv(path, index=False)
    with pytest.raises(GpuperfError, match=message) as caught:
        load_dataset(path)
    assert str(path) in str(caught.value)


def test_a_copy_without_its_time_column_is_refused(tmp_path):
    path = tmp_path / "no_time.csv"
    raw_file("benchmark_hub_ktt_resources").head(10).drop(columns=["duration_us"]).to_csv(path, index=False)
    with pytest.raises(GpuperfError, match="no_time.csv: columns match neither"):
        load_dataset(path)


def test_an_empty_copy_is_refused(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("")
    with pytest.raises(GpuperfError, match="empty.csv: empty file"):
        load_dataset(path)


def test_a_table_of_ones_own_loads_from_csv_or_parquet_with_kernel_and_time_alone(tmp_path):
    table = pd.DataFrame({"kernel": ["a", "a", "b"], "gpu": ["Tesla K40"] * 3, "n": [1, 2, 3],
                          "time_s": [1e-3, 2e-3, float("nan")], "status": ["ok", "ok", "failed"]})
    table.to_csv(tmp_path / "mine.csv", index=False)
    table.to_parquet(tmp_path / "mine.parquet")
    for path in (tmp_path / "mine.csv", tmp_path / "mine.parquet", str(tmp_path / "mine.parquet")):
        loaded = load_dataset(path)
        assert loaded["time_s"].iloc[:2].tolist() == [1e-3, 2e-3] and loaded["kernel"].tolist() == ["a", "a", "b"]
    table.assign(status=["OK", "OK", "OK"]).to_csv(tmp_path / "ok.csv", index=False)
    with pytest.raises(GpuperfError, match=r"ok\.csv: line 4: time_s=nan is not a positive number"):
        load_dataset(tmp_path / "ok.csv")  # a status of OK in any case is a measured row


@pytest.mark.parametrize(("tag", "gpu", "device_name"), [("h100", "H100 SXM", "NVIDIA H100 80GB HBM3"),
                                                         ("h200", "H200", "NVIDIA H200")])
def test_the_gpu_stencil_spaces_load_by_name_with_their_gpu_features(tag, gpu, device_name):
    """gpuperf's GPU measurements: 24 variants of each of the eight stencil spaces pocl measured
    64 of, on one H100 and one H200 at n = m = 4096, each space's variants in one interleaved campaign
    of 10 cycles (``time_s`` the median of the cycles' round medians), with registers and occupancy."""
    import json

    frame, raw = load_dataset(f"stencil_spaces_{tag}"), raw_file(f"stencil_spaces_{tag}")
    pocl = load_dataset("stencil_spaces_pocl")
    assert frame.groupby("kernel").size().to_dict() == {k: 24 for k in pocl["kernel"].unique()}
    assert set(frame["gpu"]) == {gpu} and set(frame["device"]) == {"cuda:0"}
    assert set(zip(frame["n"], frame["m"])) == {(4096, 4096)}
    assert (frame["status"] == OK).all() and frame["verified"].all()
    assert frame["time_s"].equals(raw["time_s"])
    cycles = frame["cycle_times_s"].str.split(";").map(lambda times: np.median([float(t) for t in times]))
    np.testing.assert_allclose(cycles, frame["time_s"], rtol=1e-12)
    assert frame.groupby("kernel")["cycle_group"].nunique().eq(1).all()  # a space's variants timed together
    assert frame["occupancy"].between(0, 1, inclusive="right").all()
    assert frame["registers_per_thread"].between(1, 255).all()
    assert {"registers_per_thread", "occupancy"} - set(pocl.columns) == {"registers_per_thread", "occupancy"}
    provenance = json.loads((data_dir() / f"stencil_spaces_{tag}.provenance.json").read_text())
    assert provenance["ok_points"] == len(frame) and provenance["device"] == device_name
    by_path = load_dataset(data_dir() / f"stencil_spaces_{tag}.csv.gz")  # its format recognised from its columns
    assert len(by_path) == 192 and by_path["time_s"].equals(frame["time_s"])


def test_the_h200_measured_the_h100s_variants_and_ranks_them_alike():
    """The same seeded draw on both GPUs (one GH100 die, the H200's memory faster): the variants'
    order agrees closely, and the H200 is faster on most of them."""
    from scipy.stats import spearmanr

    keys = ["kernel", "variant"]
    both = load_dataset("stencil_spaces_h100")[[*keys, "time_s"]].merge(
        load_dataset("stencil_spaces_h200")[[*keys, "time_s"]], on=keys, suffixes=("_h100", "_h200"))
    assert len(both) == 192
    for _, part in both.groupby("kernel"):
        assert spearmanr(part["time_s_h100"], part["time_s_h200"])[0] > 0.9
    assert (both["time_s_h200"] < both["time_s_h100"]).mean() > 0.75


def test_an_unknown_name_among_few_lists_them_all():
    from gpuperf.errors import unknown_name_error

    few = str(unknown_name_error("gpu in schoonhoven_spaces", "H100", ["GTX 1080 Ti", "A100", "TITAN RTX"]))
    assert few == ("unknown gpu in schoonhoven_spaces 'H100'; did you mean A100, GTX 1080 Ti? "
                   "(known: A100, GTX 1080 Ti, TITAN RTX)")
    many = str(unknown_name_error("kernel", "kernel_7", [f"kernel_{i}" for i in range(20)]))
    assert "did you mean" in many and "known:" not in many
    whole = str(unknown_name_error("gpu", "A10", ["A100", "A40"]))
    assert whole == "unknown gpu 'A10'; did you mean A100, A40?"
    # an empty name (Kernel Tuner 1.5's device name) is never suggested, and a list cut short says so
    assert str(unknown_name_error("gpu", "H100", ["", "A40"])) == "unknown gpu 'H100'; known: A40"
    assert str(unknown_name_error("block", 129, ["128", "256"])) == "unknown block '129'; did you mean 128? (known: 128, 256)"
    cut = str(unknown_name_error("kernel", "zzz", [f"k{i:02d}" for i in range(14)]))
    assert cut.endswith("known: k00, k01, k02, k03, k04, k05, k06, k07, k08, k09, k10, k11, ... (2 more)")


def test_gpu_names_a_kernel_tuner_cache_whose_device_name_is_empty(capsys):
    """Kernel Tuner 1.5 writes an empty device name: --gpu names the GPU, as for a table with no gpu
    column (it said "unknown gpu 'H100'; did you mean ?")."""
    from gpuperf.cli import main

    cache = Path(__file__).parent / "data" / "kernel_tuner_1_5_c_backend.json"
    assert main(["explore", str(cache), "--gpu", "H100", "--json", "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["evals_to_90"] >= 1
    assert main(["explore", "schoonhoven_spaces"]) == 2
    assert "names 7 GPUs (GTX 1080 Ti, GTX Titan X, Tesla K20, ... (4 more))" in capsys.readouterr().err


def test_picking_a_known_gpu_a_table_lacks_says_so_rather_than_suggesting_a_lookalike():
    """--gpu A100 on a table without an A100 suggested the GTX 1080 Ti by spelling."""
    from gpuperf.decisions.space import select_rows

    frame = pd.DataFrame({"gpu": ["GTX 1080 Ti", "Titan RTX"], "x": [1, 2]})
    with pytest.raises(GpuperfError, match=r"^t.csv: no rows of the A100 PCIe 40GB \(--gpu A100\); its GPUs: GTX 1080 "
                                           r"Ti, Titan RTX$"):
        select_rows(frame, "t.csv", gpu="A100")
    with pytest.raises(GpuperfError, match=r"unknown gpu in t.csv 'Foo'"):  # a name no descriptor knows
        select_rows(frame, "t.csv", gpu="Foo")


def test_picking_a_gpu_from_a_table_with_an_empty_gpu_cell_or_an_undescribed_gpu():
    from gpuperf.decisions.space import select_rows

    frame = pd.DataFrame({"gpu": ["Tesla K40", None, "A100_80GB"], "x": [1, 2, 3]})
    assert select_rows(frame, "t.csv", gpu="K40")[0]["x"].tolist() == [1]  # the empty cell: no traceback
    with pytest.raises(GpuperfError, match=r"unknown gpu in t.csv 'V100'"):  # A100_80GB may be anything: no claim
        select_rows(frame, "t.csv", gpu="V100")


def test_a_wheel_carries_every_file_of_the_data_folder():
    """An installed wheel held no data/ and every command on a bundled table failed: the package's
    bundled_data links to data/, and the package-data patterns cover each of its files."""
    import fnmatch
    import tomllib

    repository = Path(__file__).resolve().parents[1]
    packaged = repository / "src" / "gpuperf" / "bundled_data"  # in an unpacked sdist, the tables themselves
    if packaged.is_symlink():
        assert packaged.resolve() == (repository / "data").resolve()
    folder = packaged.resolve()
    setuptools = tomllib.loads((repository / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = setuptools["package-data"]["gpuperf"]
    for path in folder.iterdir():
        assert any(fnmatch.fnmatch(f"bundled_data/{path.name}", pattern) for pattern in patterns), path.name
    assert data_dir().resolve() == folder.resolve()


def test_a_data_folder_set_where_there_is_none_is_named_so(tmp_path, monkeypatch):
    from gpuperf.datasets import bundled

    load = bundled._load_bundled.__wrapped__  # past the tables already loaded and kept in memory
    monkeypatch.setattr(bundled, "_load_bundled", load)
    monkeypatch.setenv("GPUPERF_DATA_DIR", str(tmp_path / "absent"))
    with pytest.raises(GpuperfError, match=r"bundled dataset 'schoonhoven_spaces' is missing \(GPUPERF_DATA_DIR=.*absent: no such folder\)"):
        load_dataset("schoonhoven_spaces")
    monkeypatch.setenv("GPUPERF_DATA_DIR", str(tmp_path))
    with pytest.raises(GpuperfError, match=r"is missing \(GPUPERF_DATA_DIR=.*: no such file there\)"):
        load_dataset("schoonhoven_spaces")


def test_a_data_folder_set_or_a_table_edited_in_a_running_process_is_read_anew(monkeypatch, tmp_path):
    """Tables were kept by name alone: after GPUPERF_DATA_DIR changed (or a table was edited) a running
    process still served the first folder's rows, and the advisor cached pairs built from them under the
    new file's hash, for every later process."""
    import gzip
    import os

    from gpuperf.datasets.bundled import BUNDLED, data_dir

    name = "matvec_bsp"
    first = len(load_dataset(name))
    lines = gzip.decompress((data_dir() / BUNDLED[name].file).read_bytes()).decode().splitlines(keepends=True)
    folder = tmp_path / "data"
    folder.mkdir()
    copy = folder / BUNDLED[name].file
    copy.write_bytes(gzip.compress("".join(lines[:4]).encode()))
    monkeypatch.setenv("GPUPERF_DATA_DIR", str(folder))
    assert len(load_dataset(name)) == 3 < first
    copy.write_bytes(gzip.compress("".join(lines[:6]).encode()))
    stat = copy.stat()
    os.utime(copy, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert len(load_dataset(name)) == 5
    monkeypatch.delenv("GPUPERF_DATA_DIR")
    assert len(load_dataset(name)) == first


def test_rows_with_an_empty_gpu_cell_each_take_their_own_devices_gpu(tmp_path):
    """Unlabelled rows all took the first row's GPU, whatever their device name said."""
    table = tmp_path / "blank.csv"
    table.write_text("kernel,gpu,device_name,block_size_x,time_mean_ms,time_median_ms,time_std_ms,n_runs\n"
                     "gemm,,NVIDIA A100-PCIE-40GB,16,1.5,1.5,0.1,32\n"
                     "gemm,,NVIDIA GeForce RTX 2080 Ti,16,2.5,2.5,0.1,32\n"
                     "gemm,,NVIDIA A100-PCIE-40GB,32,1.2,1.2,0.1,32\n")
    assert load_dataset(str(table))["gpu"].tolist() == ["A100 PCIe 40GB", "RTX 2080 Ti", "A100 PCIe 40GB"]


def test_an_empty_status_is_not_ok_in_a_published_format_as_in_a_dataset(tmp_path):
    """A benchmark-hub-shaped table took an empty status as ok, while a dataset-shaped table (and
    is_ok) takes it as not ok: the same blank cell made a row measured in one layout only."""
    from gpuperf.datasets.schema import measured_rows

    table = tmp_path / "hub.csv"
    table.write_text("source,kernel,gpu,device_name,block_size_x,time_ms,time_std_ms,n_times,compile_time_ms,"
                     "benchmark_time_ms,status,problem_size\n"
                     "s,gemm,A100,NVIDIA A100-PCIE-40GB,16,1.5,0.1,32,1,1,ok,4\n"
                     "s,gemm,A100,NVIDIA A100-PCIE-40GB,32,1.2,0.1,32,1,1,,4\n"
                     "s,gemm,A100,NVIDIA A100-PCIE-40GB,64,1.9,0.1,32,1,1, OK ,4\n")
    frame = load_dataset(str(table))
    assert frame["status"].iloc[[0, 2]].tolist() == ["ok", "ok"] and pd.isna(frame["status"].iloc[1])
    assert measured_rows(frame, "hub.csv")["block_size_x"].tolist() == [16, 64]


@pytest.mark.parametrize("name", ["missing.csv.xz", "missing.CSV", "missing.csv.bz2", "Missing.PQ"])
def test_a_missing_table_file_of_any_readable_name_is_no_such_file(name, tmp_path, monkeypatch, capsys):
    """A missing .csv.xz (which read_table_file reads) or an upper-case .CSV was an unknown dataset,
    with a bundled table's name as the suggestion."""
    from gpuperf.cli import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(GpuperfError, match=rf"^{re.escape(name)}: no such file$"):
        load_dataset(name)
    assert main(["fit", name, "--model", "lr", "--out", "m.json"]) == 2
    assert capsys.readouterr().err.strip() == f"gpuperf: error: {name}: no such file"


def test_a_tilde_in_the_data_folder_is_the_home_folder(tmp_path, monkeypatch):
    """GPUPERF_DATA_DIR=~/d was read as a folder named ~ in the working folder, unlike GPUPERF_CACHE_DIR=~/c;
    with no home folder it is the same error naming the variable."""
    import pwd

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPUPERF_DATA_DIR", "~/d")
    assert data_dir() == tmp_path / "d"

    def no_entry(uid: int) -> None:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.delenv("HOME")
    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    with pytest.raises(GpuperfError, match="^GPUPERF_DATA_DIR=~/d: ~ names a home folder, but there is no home "
                                           "folder"):
        data_dir()


def test_gpu_names_of_rows_with_no_device_names_warn_of_no_pandas_deprecation():
    """A table's device column with no name at all (float NaN, as an empty CSV column reads) leaves each
    row's label to name its GPU, with no pandas warning that a later pandas turns into an error."""
    import warnings

    from gpuperf.datasets.tables import gpu_names

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        warnings.simplefilter("error", FutureWarning)
        named = gpu_names(pd.Series(["Tesla K20", np.nan]), pd.Series([np.nan, np.nan]))
    assert named.tolist() == ["Tesla K20", ""]
