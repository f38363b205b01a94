"""GPU descriptors: loading, lookup by any spelling, agreement with the bundled data."""

from __future__ import annotations

import json
import math
import os
import re

import pandas as pd
import pytest

from gpuperf.datasets.bundled import data_dir
from gpuperf.errors import GpuperfError
from gpuperf.hardware import canonical_gpu_name, get_gpu, gpus
from gpuperf.hardware.specs import _spec_from_entry, gpu_suggestion

DATA = data_dir()  # the bundled tables: data/ in a checkout, the package's copy in an sdist
GPU_COLUMNS = ("gpu", "device_name", "model", "GPUs", "device")
# Schoonhoven et al.'s pnpoly rows carry the host's machine type, not a GPU, as device_name (their
# `gpu` column names the GPU).
NOT_GPUS = {"x86_64"}


def bundled_gpu_names() -> set[str]:
    names: set[str] = set()
    for path in sorted(DATA.glob("*.csv.gz")):
        header = pd.read_csv(path, nrows=0).columns
        columns = [c for c in GPU_COLUMNS if c in header]
        if path.name == "gpuperfpredict_published_predictions.csv.gz":
            columns = ["GPUs"]  # its `model` column names regression models, not GPUs
        if columns:
            table = pd.read_csv(path, usecols=columns, dtype=str)
            for column in columns:
                names.update(table[column].dropna().unique())
    return {n for n in names - NOT_GPUS if not _is_local_cpu_device(n)}


def _is_local_cpu_device(name: str) -> bool:
    """gpuperf's own measurements: pocl's CPU device (its device string and its pocl device name) and
    the device string of a CUDA GPU (``cuda:0``; its ``gpu`` column names the GPU)."""
    return name.startswith(("opencl:", "pthread-", "cpu-", "cuda:"))


def test_every_gpu_named_in_the_bundled_data_resolves():
    names = bundled_gpu_names()
    assert {"Tesla-K40", "RTX_3090", "NVIDIA A100-PCIE-40GB", "Tesla K40c", "mi50", "H100 SXM"} <= names
    unresolved = sorted(n for n in names if canonical_gpu_name(n) is None)
    assert unresolved == []


def _leading_number(text: str) -> float:
    return float(re.match(r"[\d.]+", str(text).strip())[0])


def test_descriptors_agree_with_the_amaris_hardware_table():
    table = pd.read_csv(DATA / "gpuperfpredict_gpu_specs.csv.gz", dtype=str)
    assert len(table) == 9
    for row in table.itertuples():
        spec = get_gpu(row.model)
        cores, sms = (int(v) for v in row.cores_per_sm.split("/"))
        assert (spec.cores, spec.sms) == (cores, sms), row.model
        assert spec.compute_capability == f"{_leading_number(row.cc):.1f}", row.model
        assert spec.memory_gb == _leading_number(row.memory), row.model
        assert spec.memory_bandwidth_gbs == pytest.approx(_leading_number(row.bandwidth), abs=0.05), row.model
        assert spec.l2_bytes == round(_leading_number(row.l2) * 2**20), row.model
        assert _leading_number(row.clock) in (spec.base_clock_mhz, spec.boost_clock_mhz), row.model


def test_lookup_ignores_case_dashes_underscores_and_spaces():
    k40 = get_gpu("Tesla K40")
    assert get_gpu("tesla_k40") is k40
    assert get_gpu("TESLA-K40") is k40
    assert get_gpu("Tesla K40c") is k40  # the actively cooled K40: same board, an alias
    assert get_gpu("rtx_3090").name == "RTX 3090"
    assert get_gpu("NVIDIA A100-PCIE-40GB") is get_gpu("A100")
    assert get_gpu("A6000_original") is get_gpu("NVIDIA RTX A6000")
    assert get_gpu("Pascal-P100") is not get_gpu("P100")  # SXM2 16 GB vs PCIe 12 GB boards


def test_unknown_gpu_names_the_nearest_known_ones():
    with pytest.raises(GpuperfError, match=r"unknown GPU 'Tesla K45'; did you mean .*Tesla K40"):
        get_gpu("Tesla K45")
    with pytest.raises(GpuperfError, match="unknown GPU 'zzz'; known: GTX 680"):
        get_gpu("zzz")


def test_canonical_name_is_none_for_unknown_or_missing_values():
    assert canonical_gpu_name("RTX_Titan") == "Titan RTX"
    assert canonical_gpu_name("TITAN_RTX") == "Titan RTX"
    assert canonical_gpu_name("x86_64") is None
    assert canonical_gpu_name(float("nan")) is None
    assert canonical_gpu_name(None) is None


def test_spellings_are_unique_across_gpus():
    seen: dict[str, str] = {}
    for spec in gpus():
        for spelling in (spec.name, *spec.aliases):
            key = re.sub(r"[-_\s]", "", spelling).lower()
            assert seen.setdefault(key, spec.name) == spec.name, spelling


def test_required_gpus_and_fields_are_present():
    names = {spec.name for spec in gpus()}
    assert {"A100 PCIe 40GB", "H100 SXM", "H200", "Tesla K40", "Instinct MI250X GCD"} <= names
    for spec in gpus():
        assert spec.source, spec.name
        assert spec.vendor in ("NVIDIA", "AMD")
        if spec.vendor == "NVIDIA":
            assert spec.cc_version is not None and spec.warp_size == 32
            assert None not in (spec.registers_per_sm, spec.max_threads_per_sm, spec.max_blocks_per_sm)
        else:
            assert spec.compute_capability.startswith("gfx") and spec.warp_size in (32, 64)
        json.dumps(spec.as_dict())


def test_peak_f32_is_fma_rate_at_the_boost_clock():
    for spec in gpus():
        expected = 2 * spec.cores * spec.boost_clock_mhz / 1000
        assert spec.peak_f32_gflops == pytest.approx(expected, rel=1e-3), spec.name
        if spec.peak_f64_gflops is not None:
            assert spec.peak_f64_gflops <= spec.peak_f32_gflops, spec.name


# CUDA C++ Programming Guide, "Technical Specifications per Compute Capability":
# (max blocks per SM, max threads per SM, shared memory per SM in KiB, max registers per thread).
CUDA_GUIDE_LIMITS = {
    "3.0": (16, 2048, 48, 63),
    "3.5": (16, 2048, 48, 255),
    "5.2": (32, 2048, 96, 255),
    "6.0": (32, 2048, 64, 255),
    "6.1": (32, 2048, 96, 255),
    "7.0": (32, 2048, 96, 255),
    "7.5": (16, 1024, 64, 255),
    "8.0": (32, 2048, 164, 255),
    "8.6": (16, 1536, 100, 255),
    "8.9": (24, 1536, 100, 255),
    "9.0": (32, 2048, 228, 255),
    "10.0": (32, 2048, 228, 255),
    "12.0": (24, 1536, 100, 255),
}


def test_nvidia_limits_follow_the_cuda_programming_guide():
    for spec in gpus():
        if spec.vendor != "NVIDIA":
            continue
        blocks, threads, smem_kib, registers = CUDA_GUIDE_LIMITS[spec.compute_capability]
        assert spec.max_blocks_per_sm == blocks, spec.name
        assert spec.max_threads_per_sm == threads, spec.name
        assert spec.shared_memory_per_sm_bytes == smem_kib * 1024, spec.name
        assert spec.max_registers_per_thread == registers, spec.name
        assert spec.registers_per_sm == 65536 and spec.max_threads_per_block == 1024


def test_as_features_are_prefixed_numbers_with_nan_for_unknowns():
    a100 = get_gpu("A100").as_features()
    assert a100["gpu_sms"] == 108.0
    assert a100["gpu_compute_capability"] == 8.0
    assert a100["gpu_cores"] == 6912.0
    assert a100["gpu_flops_per_byte"] == pytest.approx(19491.8 / 1555.0)
    assert all(key.startswith("gpu_") and isinstance(v, float) for key, v in a100.items())
    w7800 = get_gpu("W7800").as_features()
    assert set(w7800) == set(a100)
    assert math.isnan(w7800["gpu_compute_capability"]) and math.isnan(w7800["gpu_base_clock_mhz"])
    assert w7800["gpu_max_blocks_per_sm"] == 32.0  # per CU: its wavefront slots
    assert w7800["gpu_warp_size"] == 32.0


def test_loader_rejects_bad_entries_naming_the_gpu_and_field():
    good = {"name": "X", "vendor": "AMD", "architecture": "a", "compute_capability": "gfx1", "sms": 1,
            "cores_per_sm": 64, "boost_clock_mhz": 1000, "memory_bandwidth_gbs": 100.0, "memory_gb": 1,
            "l2_bytes": 1048576, "shared_memory_per_sm_bytes": 65536, "max_shared_memory_per_block_bytes": 49152,
            "max_threads_per_block": 1, "warp_size": 64, "peak_f32_gflops": 128.0}
    assert _spec_from_entry(good, {}).name == "X"
    with pytest.raises(GpuperfError, match=r"GPU 'X' has unknown field colour"):
        _spec_from_entry({**good, "colour": "red"}, {})
    with pytest.raises(GpuperfError, match=r"GPU 'X' lacks field sms"):
        _spec_from_entry({k: v for k, v in good.items() if k != "sms"}, {})
    with pytest.raises(GpuperfError, match=r"GPU 'X' field memory_gb=-1 must be a positive number"):
        _spec_from_entry({**good, "memory_gb": -1}, {})
    with pytest.raises(GpuperfError, match=r"lacks field registers_per_sm"):
        _spec_from_entry({**good, "vendor": "NVIDIA", "compute_capability": "9.9"}, {})
    # a compute capability gpuperf has no limits for is named as the reason, with those it has
    limits = {"9.0": {"registers_per_sm": 65536}, "10.0": {"registers_per_sm": 65536}, "8.6": {"registers_per_sm": 65536}}
    with pytest.raises(GpuperfError, match=r"lacks field .*max_registers_per_thread.* \(gpuperf has no limits for "
                                           r"compute capability 12\.0, which would give them: it knows 8\.6, 9\.0, "
                                           r"10\.0; give them in the GPU's entry\)"):
        _spec_from_entry({**good, "vendor": "NVIDIA", "compute_capability": "12.0"}, limits)
    # no hint where limits would not give the missing field, nor for an AMD GPU
    for entry in ({k: v for k, v in good.items() if k != "sms"},
                  {**{k: v for k, v in good.items() if k != "sms"}, "vendor": "NVIDIA", "compute_capability": "12.0",
                   "registers_per_sm": 1, "max_registers_per_thread": 1, "max_threads_per_sm": 1, "max_blocks_per_sm": 1}):
        with pytest.raises(GpuperfError, match=r"lacks field sms$"):
            _spec_from_entry(entry, limits)


def test_compute_capability_feature_keeps_the_minor_version_as_its_tenths():
    """RTX 3090 is compute capability 8.6: major 8 plus minor 6 / 10 = 8.6 (not 8.06)."""
    assert get_gpu("RTX 3090").as_features()["gpu_compute_capability"] == pytest.approx(8.6)
    assert get_gpu("GTX 1080 Ti").as_features()["gpu_compute_capability"] == pytest.approx(6.1)


def test_a_zero_valued_numeric_field_is_refused():
    """Zero is not a positive number: a descriptor with 0 GB of memory is a typo."""
    good = {"name": "X", "vendor": "AMD", "architecture": "a", "compute_capability": "gfx1", "sms": 1,
            "cores_per_sm": 64, "boost_clock_mhz": 1000, "memory_bandwidth_gbs": 100.0, "memory_gb": 1,
            "l2_bytes": 1048576, "shared_memory_per_sm_bytes": 65536, "max_shared_memory_per_block_bytes": 49152,
            "max_threads_per_block": 1, "warp_size": 64, "peak_f32_gflops": 128.0}
    with pytest.raises(GpuperfError, match=r"GPU 'X' field memory_gb=0 must be a positive number"):
        _spec_from_entry({**good, "memory_gb": 0}, {})


def test_an_alias_shared_by_two_gpus_is_refused():
    from gpuperf.hardware.specs import _build_index

    good = {"vendor": "AMD", "architecture": "a", "compute_capability": "gfx1", "sms": 1,
            "cores_per_sm": 64, "boost_clock_mhz": 1000, "memory_bandwidth_gbs": 100.0, "memory_gb": 1,
            "l2_bytes": 1048576, "shared_memory_per_sm_bytes": 65536, "max_shared_memory_per_block_bytes": 49152,
            "max_threads_per_block": 1, "warp_size": 64, "peak_f32_gflops": 128.0}
    first = _spec_from_entry({**good, "name": "Card A", "aliases": ["Shared-Name"]}, {})
    second = _spec_from_entry({**good, "name": "Card B", "aliases": ["shared name"]}, {})  # same key: sharedname
    assert set(_build_index((first,))) == {"carda", "sharedname"}
    with pytest.raises(GpuperfError, match="'shared name' names both Card A and Card B"):
        _build_index((first, second))


def test_a_suggestion_names_at_most_three_gpus():
    """'Tesla K' is close to Tesla K40, K20 and the P100s: only the three nearest are named."""
    with pytest.raises(GpuperfError) as raised:
        get_gpu("Tesla K")
    suggested = re.search(r"did you mean (.*)\?", str(raised.value))[1].split(", ")
    assert len(suggested) == 3 and suggested[:2] == ["Tesla K40", "Tesla K20"]


def test_brand_words_before_a_known_name_are_dropped_and_an_alias_held_in_a_name_is_suggested_first():
    from gpuperf.hardware.specs import canonical_gpu_name

    for name, canonical in (("Instinct MI250X", "Instinct MI250X GCD"), ("Tesla V100", "Tesla V100 PCIe 32GB"),
                            ("NVIDIA Tesla K40c", "Tesla K40"), ("NVIDIA Tesla V100-PCIE-32GB", "Tesla V100 PCIe 32GB"),
                            ("AMD Instinct MI250X", "Instinct MI250X GCD"), ("Quadro K5200", "Quadro K5200")):
        assert canonical_gpu_name(name) == canonical
    assert canonical_gpu_name("NVIDIA") is None and canonical_gpu_name("NVIDIA Tesla") is None
    with pytest.raises(GpuperfError, match=r"unknown GPU 'NVIDIA A100X'; did you mean A100 "):
        get_gpu("NVIDIA A100X")  # the a100 alias it holds comes before names merely spelt alike


RTX_4070 = """
[[gpu]]
name = "RTX 4070"
aliases = ["NVIDIA GeForce RTX 4070"]
vendor = "NVIDIA"
architecture = "Ada Lovelace"
compute_capability = "8.9"
sms = 46
cores_per_sm = 128
boost_clock_mhz = 2475
memory_bandwidth_gbs = 504.2
memory_gb = 12
l2_bytes = 37748736
peak_f32_gflops = 29148.0
source = "a user's own entry"
"""


@pytest.fixture
def user_gpus(monkeypatch, tmp_path):
    """GPUPERF_GPUS set to what the test writes, with the descriptor caches cleared around it."""
    def use(*paths):  # the descriptors are read again whenever the variable or its files change
        monkeypatch.setenv("GPUPERF_GPUS", os.pathsep.join(map(str, paths)))

    yield use
    monkeypatch.delenv("GPUPERF_GPUS", raising=False)


def test_a_users_own_gpu_joins_the_descriptors_with_its_compute_capabilitys_limits(user_gpus, tmp_path, capsys):
    from gpuperf.cli import main

    folder = tmp_path / "gpus"
    folder.mkdir()
    (folder / "lab.toml").write_text(RTX_4070)
    user_gpus(folder)
    spec = get_gpu("NVIDIA GeForce RTX 4070")
    assert spec.name == "RTX 4070" and spec.registers_per_sm == get_gpu("L4").registers_per_sm  # limits of 8.9
    assert gpus()[-1] is spec and len(gpus()) == len({g.name for g in gpus()})
    assert main(["occupancy", "--gpu", "RTX 4070", "--threads", "256", "--registers", "32", "--json"]) == 0
    assert '"gpu": "RTX 4070"' in capsys.readouterr().out
    replaced = tmp_path / "l4.toml"  # an entry named like a bundled GPU replaces it
    replaced.write_text(RTX_4070.replace('name = "RTX 4070"', 'name = "L4"').replace(
        'aliases = ["NVIDIA GeForce RTX 4070"]', "").replace("sms = 46", "sms = 60"))
    user_gpus(folder, replaced)
    assert get_gpu("L4").sms == 60 and get_gpu("NVIDIA L4") is get_gpu("L4")  # the alias went with the old entry
    assert [g.name for g in gpus()].count("L4") == 1


def test_a_users_gpu_field_beats_its_compute_capabilitys_limits_and_a_files_limits_beat_the_bundled(user_gpus,
                                                                                                   tmp_path):
    path = tmp_path / "own.toml"
    path.write_text(RTX_4070 + "max_threads_per_sm = 1024\n")  # 8.9's limits table says 1536
    user_gpus(path)
    assert get_gpu("RTX 4070").max_threads_per_sm == 1024 and get_gpu("L4").max_threads_per_sm == 1536
    path.write_text(RTX_4070 + '\n[limits."8.9"]\nmax_threads_per_sm = 1536\nmax_blocks_per_sm = 20\n'
                    "registers_per_sm = 65536\nshared_memory_per_sm_bytes = 102400\nmax_threads_per_block = 1024\n"
                    "max_registers_per_thread = 255\nwarp_size = 32\nmax_shared_memory_per_block_bytes = 101376\n")
    user_gpus(path)
    assert get_gpu("RTX 4070").max_blocks_per_sm == 20 and get_gpu("L4").max_blocks_per_sm == 24


def test_a_files_limits_table_of_one_field_keeps_the_bundled_fields_it_does_not_name(user_gpus, tmp_path):
    """[limits."8.9"] with only max_blocks_per_sm replaced gpuperf's whole 8.9 table, so the GPU
    was refused for lacking shared_memory_per_sm_bytes and the rest."""
    path = tmp_path / "own.toml"
    path.write_text(RTX_4070 + '\n[limits."8.9"]\nmax_blocks_per_sm = 16\n')
    user_gpus(path)
    spec, l4 = get_gpu("RTX 4070"), get_gpu("L4")
    assert spec.max_blocks_per_sm == 16 and l4.max_blocks_per_sm == 24
    assert (spec.registers_per_sm, spec.shared_memory_per_sm_bytes, spec.max_threads_per_sm) == (
        l4.registers_per_sm, l4.shared_memory_per_sm_bytes, l4.max_threads_per_sm)


def test_a_users_peak_in_the_wrong_unit_either_way_or_an_f64_peak_just_above_f32_is_refused(user_gpus, tmp_path):
    path = tmp_path / "own.toml"
    for edit, message in (("peak_f32_gflops = 29.148", r"peak_f32_gflops=29.148 is 0.001x the FMA rate"),
                          ("peak_f32_gflops = 29148.0\npeak_f64_gflops = 29500.0",
                           r"peak_f64_gflops=29500.0 is above peak_f32_gflops=29148.0")):
        path.write_text(RTX_4070.replace("peak_f32_gflops = 29148.0", edit))
        user_gpus(path)
        with pytest.raises(GpuperfError, match=message):
            get_gpu("RTX 4070")


def test_an_alias_the_users_own_entry_lists_gets_no_note_to_name_the_board(user_gpus, tmp_path):
    """'K80', the alias of a user's "Tesla K80 die", was noted as "taken as the Tesla K80 die: name the
    board if it ran on another": the user named it so."""
    from gpuperf.hardware.specs import other_boards_note

    path = tmp_path / "own.toml"
    path.write_text(RTX_4070.replace('name = "RTX 4070"', 'name = "Tesla K80 die"').replace(
        'aliases = ["NVIDIA GeForce RTX 4070"]', 'aliases = ["K80"]'))
    user_gpus(path)
    assert get_gpu("K80").name == "Tesla K80 die"
    assert other_boards_note("K80") is None and other_boards_note("NVIDIA K80") is None
    assert other_boards_note("V100").startswith("note: 'V100' is taken as the Tesla V100 PCIe 32GB")  # gpuperf's


def test_a_user_entry_named_in_another_spelling_replaces_the_bundled_gpu(user_gpus, tmp_path):
    path = tmp_path / "own.toml"
    path.write_text(RTX_4070.replace('name = "RTX 4070"', 'name = "l4"').replace(
        'aliases = ["NVIDIA GeForce RTX 4070"]', "").replace("sms = 46", "sms = 60"))
    user_gpus(path)
    assert get_gpu("L4").sms == 60 and [normalize for normalize in (g.name.lower() for g in gpus())].count("l4") == 1


B200 = """
[[gpu]]
name = "B200"
vendor = "NVIDIA"
architecture = "Blackwell"
compute_capability = "10.0"
sms = 148
cores_per_sm = 128
boost_clock_mhz = 1965
memory_bandwidth_gbs = 8000.0
memory_gb = 180
l2_bytes = 132120576
peak_f32_gflops = 74449.9
source = "a user's own entry"
"""


def test_a_users_blackwell_gpu_gets_the_limits_and_occupancy_rules_of_compute_capability_10(user_gpus, tmp_path,
                                                                                           capsys):
    from gpuperf.cli import main

    path = tmp_path / "b200.toml"
    path.write_text(B200)
    user_gpus(path)
    spec = get_gpu("B200")
    assert (spec.max_threads_per_sm, spec.shared_memory_per_sm_bytes, spec.max_blocks_per_sm) == (2048, 233472, 32)
    # 227 KiB opt-in + 1 KiB reserved fill the 228 KiB SM: one block of 32 warps of 64.
    assert main(["occupancy", "--gpu", "B200", "--threads", "1024", "--registers", "32", "--smem", "232448",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["active_blocks_per_sm"], result["occupancy"], result["limiter"]) == (1, 0.5, "shared_memory")
    assert main(["features", "vector_copy", "-p", "n=4096", "--gpu", "B200", "--json"]) == 0  # NVRTC's sm_100
    features = json.loads(capsys.readouterr().out)
    assert features["registers_per_thread"] > 0 and 0 < features["occupancy"] <= 1


@pytest.mark.parametrize("content, message", [
    (None, "GPUPERF_GPUS: .*missing.toml: no such file or folder"),
    ("[gpu]\nname = 1\n", "lab.toml: no \\[\\[gpu\\]\\] entry"),
    (RTX_4070.replace("sms = 46", "sms = -4"), "lab.toml: GPU 'RTX 4070' field sms=-4 must be a positive number"),
    (RTX_4070.replace("boost_clock_mhz = 2475", "boost_clock_mhz = 2.475"),
     r"lab.toml: GPU 'RTX 4070' field peak_f32_gflops=29148.0 is 1e\+03x the FMA rate 2 x sms x cores_per_sm x "
     r"boost_clock_mhz / 1000 = 29.1456: is a clock in GHz"),
    (RTX_4070.replace("boost_clock_mhz = 2475", "boost_clock_mhz = 2.475").replace("peak_f32_gflops = 29148.0",
                                                                                   "peak_f32_gflops = 29.148"),
     r"lab.toml: GPU 'RTX 4070' field boost_clock_mhz=2.475 is below 100 MHz: is it in GHz \(MHz wanted\), and "
     r"peak_f32_gflops=29.148 in TFLOP/s"),  # the two slips cancel in the FMA-rate check
    (RTX_4070.replace("boost_clock_mhz = 2475", "boost_clock_mhz = 2475\nbase_clock_mhz = 2610"),
     "lab.toml: GPU 'RTX 4070' field base_clock_mhz=2610 is above boost_clock_mhz=2475"),
    (RTX_4070.replace("boost_clock_mhz = 2475", "boost_clock_mhz = 2475\nbase_clock_mhz = 1.92"),
     r"lab.toml: GPU 'RTX 4070' field base_clock_mhz=1.92 is below a quarter of boost_clock_mhz=2475: is it in GHz"),
    (RTX_4070.replace("memory_bandwidth_gbs = 504.2", "memory_bandwidth_gbs = 0.504"),
     r"lab.toml: GPU 'RTX 4070' field memory_bandwidth_gbs=0.504 is below 10 GB/s: is it in TB/s"),
    (RTX_4070.replace("l2_bytes = 37748736", "l2_bytes = 36"),
     r"lab.toml: GPU 'RTX 4070' field l2_bytes=36 is below 131072 bytes: is it in KiB or MiB"),
    (RTX_4070.replace("peak_f32_gflops = 29148.0", "peak_f32_gflops = 29148.0\npeak_f64_gflops = 455000.0"),
     r"lab.toml: GPU 'RTX 4070' field peak_f64_gflops=455000.0 is above peak_f32_gflops=29148.0"),
    (RTX_4070.replace('"RTX 4070"', '"H100"'), "lab.toml: GPU 'H100': name 'H100' is an alias of H100 SXM; name "
                                               "the entry 'H100 SXM' to replace it"),
    (RTX_4070.replace('"NVIDIA GeForce RTX 4070"', '"RTX 4090"'), "lab.toml: GPU 'RTX 4070': alias 'RTX 4090' "
                                                                  "already names RTX 4090"),
    (RTX_4070 + RTX_4070, "lab.toml: GPU 'RTX 4070' is described twice"),
    ("[[gpu]\n", "lab.toml: "),
    (RTX_4070.replace('aliases = ["NVIDIA GeForce RTX 4070"]', "aliases = [4070]"), "field aliases=\\[4070\\] must be"),
    (RTX_4070.replace('aliases = ["NVIDIA GeForce RTX 4070"]', 'aliases = "4070"'), "field aliases='4070' must be"),
    (RTX_4070.replace('name = "RTX 4070"', 'name = ""'), "field name='' must be a name"),
    (RTX_4070.replace('compute_capability = "8.9"', "compute_capability = 8.9"), "field compute_capability=8.9"),
    (RTX_4070.replace("sms = 46", "sms = nan"), "field sms=nan must be a positive number"),
    (RTX_4070.replace("sms = 46", "sms = inf"), "field sms=inf must be a positive number"),
    (RTX_4070.replace("sms = 46", "sms = 46.5"), "field sms=46.5 must be a whole number"),
    (b"\x89PNG\x00\xff\xfe", "lab.toml: not a TOML file of GPU descriptors \\(not UTF-8 text\\)"),
    # the file's structure: these raised TypeError or AttributeError tracebacks
    ("limits = 5\n" + RTX_4070, r"lab.toml: limits is a table of tables, one per compute capability"),
    (RTX_4070 + '[limits]\n"8.9" = 5\n', r"lab.toml: limits is a table of tables"),
    ("gpu = [1, 2]\n", r"lab.toml: gpu entry 1 is 1, not a table of fields"),
    ('gpu = ["T4"]\n', r"lab.toml: gpu entry 1 is 'T4', not a table of fields"),
    # units slipped or limits no GPU has: each was taken, and priced or occupied silently wrong
    (RTX_4070.replace("l2_bytes = 37748736", "l2_bytes = 65536"), r"field l2_bytes=65536 is below 131072 bytes"),
    (RTX_4070 + "shared_memory_per_sm_bytes = 100\nmax_shared_memory_per_block_bytes = 99\n",
     r"field shared_memory_per_sm_bytes=100 is below 16384, beyond any GPU: is it in KiB"),
    (RTX_4070 + "registers_per_sm = 256\n", r"field registers_per_sm=256 is below 8192, beyond any GPU: is it in KiB"),
    (RTX_4070.replace("memory_bandwidth_gbs = 504.2", "memory_bandwidth_gbs = 504200.0"),
     r"field memory_bandwidth_gbs=504200.0 is above 50000, beyond any GPU: is it in MB/s"),
    (RTX_4070.replace("memory_gb = 12", "memory_gb = 12288"), r"field memory_gb=12288 is above 4096.* in MiB"),
    (RTX_4070 + "warp_size = 64\n", r"field warp_size=64: every NVIDIA GPU's warp is 32 threads"),
    (RTX_4070.replace('compute_capability = "8.9"', 'compute_capability = "sm_89"'),
     r"field compute_capability='sm_89' is no CUDA compute capability: major.minor, as '8.9' \(write '8.9'\)"),
    (RTX_4070.replace('vendor = "NVIDIA"', 'vendor = "AMD"').replace('compute_capability = "8.9"',
                                                                 'compute_capability = "gfx90a:sramecc+"'),
     r"field compute_capability='gfx90a:sramecc\+' is no AMD target"),
    (RTX_4070 + "max_threads_per_sm = 1000\n", r"field max_threads_per_sm=1000 is not a whole number of 32-thread"),
    (RTX_4070 + "max_threads_per_block = 4096\n", r"field max_threads_per_block=4096 is above max_threads_per_sm=1536"),
    (RTX_4070 + "max_shared_memory_per_block_bytes = 200000\n",
     r"field max_shared_memory_per_block_bytes=200000 is above shared_memory_per_sm_bytes=102400"),
])
def test_a_users_gpu_file_with_a_mistake_is_one_error_naming_it(user_gpus, tmp_path, content, message):
    path = tmp_path / ("missing.toml" if content is None else "lab.toml")
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    user_gpus(path)
    with pytest.raises(GpuperfError, match=message):
        get_gpu("K20")


def test_a_users_gpus_in_two_files_or_an_empty_folder_are_refused(user_gpus, tmp_path):
    (tmp_path / "a.toml").write_text(RTX_4070)
    (tmp_path / "b.toml").write_text(RTX_4070.replace("sms = 46", "sms = 48"))
    user_gpus(tmp_path / "a.toml", tmp_path / "b.toml")
    with pytest.raises(GpuperfError, match=r"b.toml: GPU 'RTX 4070' is described twice \(also in .*a.toml\)"):
        gpus()
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "readme.txt").write_text("my GPUs")
    user_gpus(empty)
    with pytest.raises(GpuperfError, match="GPUPERF_GPUS: .*empty: a folder with no .toml file"):
        gpus()
    (empty / "lab.TOML").write_text(RTX_4070)
    user_gpus(empty)
    assert get_gpu("RTX 4070").sms == 46


def test_the_advisors_cached_pairs_follow_a_replaced_descriptor(user_gpus, tmp_path):
    from gpuperf.decisions.pairs import _cache_key
    from gpuperf.decisions.optimizations import load_optimizations

    entry = next(e for e in load_optimizations().values() if e.pairs)
    spec = entry.pairs[0]
    before = _cache_key(spec, entry.name)
    replaced = tmp_path / "a6000.toml"
    replaced.write_text(RTX_4070.replace('name = "RTX 4070"', 'name = "RTX A6000"').replace(
        'aliases = ["NVIDIA GeForce RTX 4070"]', "").replace('"8.9"', '"8.6"'))
    user_gpus(replaced)
    assert _cache_key(spec, entry.name) != before



def test_two_users_gpus_sharing_an_alias_name_both_files_and_a_byte_order_mark_is_read(user_gpus, tmp_path):
    (tmp_path / "a.toml").write_text(RTX_4070.replace('"NVIDIA GeForce RTX 4070"', '"lab card"'))
    (tmp_path / "b.toml").write_text(RTX_4070.replace('name = "RTX 4070"', 'name = "RTX 4060"').replace(
        '"NVIDIA GeForce RTX 4070"', '"lab card"'))
    user_gpus(tmp_path / "a.toml", tmp_path / "b.toml")
    with pytest.raises(GpuperfError, match=r"b.toml: GPU 'RTX 4060': alias 'lab card' already names RTX 4070 "
                                           r"\(in .*a.toml\)"):
        gpus()
    (tmp_path / "bom.toml").write_text(RTX_4070, encoding="utf-8-sig")  # older Notepad's UTF-8
    user_gpus(tmp_path / "bom.toml")
    assert get_gpu("RTX 4070").sms == 46


RX_9070 = """
[[gpu]]
name = "RX 9070"
vendor = "AMD"
architecture = "RDNA 4"
compute_capability = "gfx1201"
sms = 56
cores_per_sm = 64
boost_clock_mhz = 2520
memory_bandwidth_gbs = 640.0
memory_gb = 16
l2_bytes = 8388608
peak_f32_gflops = 18063.4
registers_per_sm = 196608
max_registers_per_thread = 256
shared_memory_per_sm_bytes = 65536
max_shared_memory_per_block_bytes = 65536
max_threads_per_sm = 2048
max_threads_per_block = 1024
max_blocks_per_sm = 32
warp_size = 32
source = "a user's own entry"
"""


def test_geometry_for_a_users_gpu_of_a_target_without_occupancy_rules_follows_its_plain_limits(user_gpus, tmp_path):
    """Every policy, llvm's too, failed with 'AMD occupancy rules cover gfx906, ...' for a gfx1201 GPU."""
    from gpuperf.decisions.geometry import choose_geometry
    from gpuperf.errors import GpuperfNote

    path = tmp_path / "rx.toml"
    path.write_text(RX_9070)
    user_gpus(path)
    with pytest.warns(GpuperfNote, match=r"no occupancy rules for RX 9070 \(gfx1201\): resident blocks follow"):
        assert choose_geometry("RX 9070", 1_000_000, policy="llvm").threads == 256  # LLVM's AMDGPU default
    occupancy = choose_geometry("RX 9070", 1_000_000, policy="occupancy")  # the descriptor noted once, cached
    assert occupancy.threads == 1024  # 2048 threads and 32 blocks per CU: any whole-warp size up to 1024 fills it
    with pytest.raises(GpuperfError, match="the libomptarget rule .* RX 9070 is AMD"):
        choose_geometry("RX 9070", 1_000_000, policy="libomptarget")
    # its per-block limits hold as the rules' do: no geometry for a block that cannot launch
    for policy in ("llvm", "occupancy", "heuristic"):
        with pytest.raises(GpuperfError, match=r"registers per thread 300 is outside 0\.\.256 allowed on RX 9070"):
            choose_geometry("RX 9070", 1_000_000, registers=300, policy=policy)
    with pytest.raises(GpuperfError, match=r"shared memory per block 90000 bytes is outside 0\.\.65536 allowed"):
        choose_geometry("RX 9070", 1_000_000, shared_memory_bytes=90000, policy="occupancy")


def test_an_unknown_gpu_is_answered_with_the_board_sharing_its_model_number_and_how_to_describe_it():
    """'H100 NVL' was answered with a V100 and a P100 but not the H100 PCIe, and never said how to add a GPU."""
    with pytest.raises(GpuperfError) as raised:
        get_gpu("H100 NVL")
    assert "H100 PCIe" in re.search(r"did you mean (.*)\?", str(raised.value))[1]
    assert "GPUPERF_GPUS=my_gpus.toml" in str(raised.value)
    for unknown, unrelated in (("NVIDIA A40", "GTX 680"), ("Tesla V100-SXM2-16GB", "Tesla K40")):  # brand words
        assert unrelated not in gpu_suggestion(unknown), unknown  # are no shared model number


def test_gpuperf_gpus_set_or_its_file_edited_in_a_running_process_is_read_again(monkeypatch, tmp_path, capsys):
    """A notebook or service that sets GPUPERF_GPUS after its first gpuperf call (as the unknown-GPU
    error tells it to) got the same error again until it restarted; an edited file was not seen."""
    from gpuperf.cli import main
    from gpuperf.decisions.geometry import device_descriptor

    monkeypatch.delenv("GPUPERF_GPUS", raising=False)
    args = ["occupancy", "--gpu", "RTX 4070", "--threads", "256", "--registers", "32", "--json"]
    assert main(args) == 2 and "unknown GPU 'RTX 4070'" in capsys.readouterr().err
    path = tmp_path / "lab.toml"
    path.write_text(RTX_4070)
    monkeypatch.setenv("GPUPERF_GPUS", str(path))
    assert main(args) == 0 and '"gpu": "RTX 4070"' in capsys.readouterr().out
    assert get_gpu("RTX 4070").sms == 46 and device_descriptor("RTX 4070").sms == 46
    path.write_text(RTX_4070.replace("sms = 46", "sms = 60") + "\n# edited\n")  # another size, whatever the clock's grain
    assert get_gpu("RTX 4070").sms == 60 and device_descriptor("RTX 4070").sms == 60
    monkeypatch.delenv("GPUPERF_GPUS")
    with pytest.raises(GpuperfError, match="unknown GPU 'RTX 4070'"):
        get_gpu("RTX 4070")


def test_a_tegra_k1s_128_kib_l2_is_taken_as_it_is(user_gpus, tmp_path):
    """The Jetson TK1's real 128 KiB L2 was refused as a unit slip."""
    path = tmp_path / "tk1.toml"
    path.write_text(RTX_4070.replace("l2_bytes = 37748736", "l2_bytes = 131072"))
    user_gpus(path)
    assert get_gpu("RTX 4070").l2_bytes == 131072


def test_a_users_whole_number_fields_written_as_floats_are_counts(user_gpus, tmp_path):
    """sms = 46.0 was kept a float: geometry --policy occupancy died in range() with a TypeError, and
    geometry's JSON printed 64.0 threads and 2208.0 blocks."""
    from gpuperf.decisions.geometry import choose_geometry

    path = tmp_path / "lab.toml"
    path.write_text(RTX_4070.replace("sms = 46", "sms = 46.0") + "max_threads_per_block = 1024.0\nwarp_size = 32.0\n")
    user_gpus(path)
    spec = get_gpu("RTX 4070")
    assert type(spec.sms) is int and type(spec.max_threads_per_block) is int and type(spec.warp_size) is int
    geometry = choose_geometry("RTX 4070", 1_000_000, policy="occupancy")
    assert type(geometry.threads) is int and type(geometry.blocks) is int
    heuristic = choose_geometry("RTX 4070", 1_000_000)
    assert type(heuristic.threads) is int and type(heuristic.blocks) is int


@pytest.mark.parametrize("entry", [RTX_4070.replace('name = "RTX 4070"', 'name = "-"'),
                                   RTX_4070.replace('"NVIDIA GeForce RTX 4070"', '"_ _"')])
def test_a_users_gpu_spelt_with_nothing_lookup_keeps_is_refused(user_gpus, tmp_path, entry):
    """A name or alias of only '-', '_' and spaces was taken: an empty --gpu "$GPU" then named that GPU."""
    path = tmp_path / "lab.toml"
    path.write_text(entry)
    user_gpus(path)
    with pytest.raises(GpuperfError, match=r"lab.toml: GPU '.*' field (name|aliases) has '(-|_ _)', which is no name"):
        get_gpu("")


def test_geometry_for_a_users_gpu_without_per_cu_limits_names_its_file_and_the_fields(user_gpus, tmp_path):
    """'GPU ... lacks per-SM limits (threads, blocks, registers) in its descriptor' named neither the file nor
    the fields to add."""
    from gpuperf.decisions.geometry import choose_geometry

    path = tmp_path / "lab.toml"
    path.write_text(RX_9070.replace("max_threads_per_sm = 2048\n", "").replace("registers_per_sm = 196608\n", ""))
    user_gpus(path)
    with pytest.raises(GpuperfError, match=r"lab.toml: GPU 'RX 9070' lacks field max_threads_per_sm, "
                                           r"registers_per_sm, which launch geometry needs"):
        choose_geometry("RX 9070", 1000, policy="llvm")


def test_a_mistake_against_a_limit_the_entry_does_not_give_says_where_that_limit_came_from(user_gpus, tmp_path):
    """An entry's shared_memory_per_sm_bytes below 8.9's opt-in block maximum was refused naming
    max_shared_memory_per_block_bytes=101376, a field the user's file does not hold."""
    path = tmp_path / "lab.toml"
    path.write_text(RTX_4070 + "shared_memory_per_sm_bytes = 65536\n")
    user_gpus(path)
    with pytest.raises(GpuperfError, match=r"max_shared_memory_per_block_bytes=101376 is above shared_memory_per_sm_"
                                           r"bytes=65536: .* \(max_shared_memory_per_block_bytes from "
                                           r"\[limits\.\"8\.9\"\]; give it in the GPU's entry\)$"):
        get_gpu("RTX 4070")


def test_a_users_gpu_of_an_architecture_spelt_otherwise_is_alike_to_its_bundled_kin(user_gpus, tmp_path):
    """'ada lovelace' counted as another architecture than gpus.toml's 'Ada Lovelace': a distance of 1.02,
    not 0.2, from the RTX 4090, so explore and ask weighed its tables as those of an unrelated GPU."""
    from gpuperf.decisions.gpu_similarity import gpu_distance

    path = tmp_path / "lab.toml"
    path.write_text(RTX_4070.replace('architecture = "Ada Lovelace"', 'architecture = "ada-lovelace"'))
    user_gpus(path)
    assert get_gpu("RTX 4070").architecture == "ada-lovelace"
    spelt = gpu_distance("RTX 4070", "RTX 4090")
    (tmp_path / "as_bundled.toml").write_text(RTX_4070)
    user_gpus(tmp_path / "as_bundled.toml")
    assert get_gpu("RTX 4070").architecture == "Ada Lovelace"
    assert spelt == pytest.approx(gpu_distance("RTX 4070", "RTX 4090"))


def test_a_v100_sxm2_as_the_driver_names_it_is_described_apart_from_the_pcie_board(tmp_path, capsys):
    """'Tesla V100-SXM2-32GB' (a DGX's or a V100 cluster's device name, as Kernel Tuner caches and nvprof traces
    record it) named no descriptor: its rows joined no GPU features, and evaluate --gpu-features refused them."""
    from gpuperf.cli import main
    from gpuperf.hardware.specs import other_boards_note

    for memory in (16, 32):
        spec = get_gpu(f"Tesla V100-SXM2-{memory}GB")
        assert spec.name == f"Tesla V100 SXM2 {memory}GB" and spec.memory_gb == memory
        assert spec.boost_clock_mhz == 1530 and spec.peak_f32_gflops == 2 * spec.sms * spec.cores_per_sm * 1530 / 1000
    assert get_gpu("Tesla V100-SXM2-32GB") is not get_gpu("V100")  # the PCIe board, clocked lower
    assert "also describes the Tesla V100 SXM2 16GB, Tesla V100 SXM2 32GB" in other_boards_note("V100")
    trace = tmp_path / "trace.csv"
    trace.write_text('"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z","Device","Context",'
                     '"Stream","Name","Correlation_ID"\nms,us,,,,,,,,,,,\n'
                     '1.0,2.5,4096,1,1,256,1,1,"Tesla V100-SXM2-32GB (0)","1","7","scale(float*, int)",1\n')
    out = tmp_path / "t.csv"
    assert main(["import", "nvprof", str(trace), "--out", str(out)]) == 0
    assert "no GPU descriptor" not in capsys.readouterr().err
    assert pd.read_csv(out)["gpu"].tolist() == ["Tesla V100 SXM2 32GB"]
