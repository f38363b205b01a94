"""Launch-geometry policies on hand-worked cases, the learned model and the block-shape evaluation."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from gpuperf.decisions.geometry import (
    DeviceDescriptor,
    KernelDescriptor,
    choose_geometry,
    device_descriptor,
    max_occupancy_threads,
)
from gpuperf.decisions.geometry_eval import choices, summarise
from gpuperf.decisions.geometry_model import ChoiceTable, GeometryModel
from gpuperf.errors import GpuperfError, GpuperfNote
from gpuperf.features.occupancy import occupancy
from test_hardware_specs import RTX_4070  # a user's own GPU entry


def test_libomptarget_rule():
    # 3200 default teams of 128 threads; fewer iterations lower the threads.
    assert choose_geometry("V100", 128, policy="libomptarget").as_dict()["threads"] == 32
    assert choose_geometry("V100", 128, policy="libomptarget").blocks == 4
    assert choose_geometry("V100", 129, policy="libomptarget").blocks == 5
    mid = choose_geometry("V100", 200_000, policy="libomptarget")  # ceil(200000 / 3200) = 63 -> 64 threads
    assert (mid.threads, mid.blocks) == (64, 3125)
    long = choose_geometry("V100", 10_000_000, policy="libomptarget")  # blocks reused: capped at 3200
    assert (long.threads, long.blocks) == (128, 3200)


def test_llvm_default():
    chosen = choose_geometry("V100", 1000, policy="llvm")
    assert (chosen.threads, chosen.blocks, chosen.policy) == (128, 8, "llvm")
    # LLVM's AMDGPU default work-group size is 256 (OMPGridValues.h), wave64 and wave32 alike
    for amd in ("MI250X", "W7800"):
        chosen = choose_geometry(amd, 1000, policy="llvm")
        assert (chosen.threads, chosen.blocks) == (256, 4)


@pytest.mark.parametrize("policy", ["llvm", "heuristic", "occupancy", "libomptarget"])
def test_no_policy_launches_more_blocks_than_a_grid_holds(policy):
    assert choose_geometry("H100", 2**40, policy=policy).blocks <= 2**31 - 1  # CUDA's gridDim.x limit
    amd = choose_geometry("MI250X", 2**40, policy=policy if policy != "libomptarget" else "llvm")
    assert amd.blocks * amd.threads <= 2**32 - 1  # HIP's work-items per grid


def test_a_grid_capped_at_its_limit_is_noted():
    from gpuperf.errors import GpuperfNote

    with pytest.warns(GpuperfNote, match=r"llvm: 8589934592 blocks of 128 threads exceed the largest grid of H100 SXM "
                                         r"\(2147483647 blocks\); capped there, each thread runs up to 5 iterations"):
        assert choose_geometry("H100", 2**40, policy="llvm").blocks == 2**31 - 1


def test_heuristic_classes_on_v100():
    device = device_descriptor("V100")  # 80 SMs, 2048 threads and 32 blocks per SM
    assert device.sms == 80 and device.preferred_threads_per_block == 64
    short = choose_geometry("V100", 50)
    assert (short.threads, short.blocks, short.loop_class) == (1, 50, "short")
    ideal = choose_geometry("V100", 10_000)
    assert (ideal.threads, ideal.blocks, ideal.loop_class) == (64, 157, "ideal")
    # 32 blocks of 64 threads fit per SM: 2560 resident blocks.
    long = choose_geometry("V100", 1_000_000)
    assert (long.threads, long.blocks, long.loop_class) == (64, 2560, "long")
    # 128 registers: 4096 per warp, 16 warps per SM, 8 blocks of 2 warps.
    heavy = choose_geometry("V100", 1_000_000, registers=128)
    assert (heavy.blocks, heavy.loop_class) == (640, "long")
    assert choose_geometry("V100", 100_000, registers=128).loop_class == "long"  # 1563 blocks > 640
    fits = choose_geometry("V100", 40_000, registers=128)  # 625 blocks <= 640
    assert (fits.blocks, fits.loop_class) == (625, "ideal")


def test_occupancy_policy_matches_a_brute_force_search():
    device = device_descriptor("V100")
    # 40 registers: 48 warps per SM at most; 1024-thread blocks reach only 32, 768 reach 48.
    assert max_occupancy_threads(device, 40, 0) == 768
    chosen = choose_geometry("V100", 100_000, registers=40, policy="occupancy")
    assert (chosen.threads, chosen.blocks) == (768, 131)
    spec = device.spec
    for registers, shared in [(32, 0), (72, 0), (24, 20_000), (128, 4_096)]:
        warps = {}
        for threads in range(32, 1025, 32):
            try:
                warps[threads] = occupancy(spec, threads, registers, shared).active_warps_per_sm
            except GpuperfError:  # more registers than one block may have
                continue
        best = max(t for t, w in warps.items() if w == max(warps.values()))
        assert max_occupancy_threads(device, registers, shared) == best


def test_bad_geometry_input():
    with pytest.raises(GpuperfError, match="trip count 0"):
        choose_geometry("V100", 0)
    with pytest.raises(GpuperfError, match="unknown launch-geometry policy 'heuristc'; did you mean heuristic"):
        choose_geometry("V100", 10, policy="heuristc")
    with pytest.raises(GpuperfError, match=r"^unknown launch-geometry policy 'None'; known: heuristic, libomptarget, "
                       r"llvm, model, occupancy$"):
        choose_geometry("V100", 10, policy=None)  # was a TypeError from difflib
    with pytest.raises(GpuperfError, match="unknown GPU"):
        choose_geometry("no such gpu", 10)
    with pytest.raises(GpuperfError, match=r"^registers per thread -5 must not be negative$"):
        choose_geometry("H100", 1000, -5)
    with pytest.raises(GpuperfError, match=r"^shared memory per block -5 bytes must not be negative$"):
        choose_geometry("H100", 1000, 32, -5)
    assert KernelDescriptor(5).registers == 32


@pytest.mark.parametrize("policy", ["heuristic", "llvm", "libomptarget", "occupancy"])
def test_every_policy_refuses_a_kernel_no_block_can_run_even_for_short_loops(policy):
    assert choose_geometry("H100", 10, policy=policy).blocks >= 1
    with pytest.raises(GpuperfError, match="(shared memory per block 10000000 bytes is outside|no block size fits)"):
        choose_geometry("H100", 10, shared_memory_bytes=10_000_000, policy=policy)
    with pytest.raises(GpuperfError, match="(registers per thread 200 is outside 0..63|no block size fits on GTX 680)"):
        choose_geometry("GTX 680", 5, registers=200, policy=policy)


def test_whole_numbers_only():
    assert choose_geometry("H100", 1000.0, np.int64(32)).blocks == choose_geometry("H100", 1000, 32).blocks
    for bad in (1.9, "abc", float("nan"), True):
        with pytest.raises(GpuperfError, match=f"trip count must be a whole number, not {bad!r}"):
            choose_geometry("H100", bad)
    with pytest.raises(GpuperfError, match="threads per block must be a whole number, not 256.9"):
        occupancy(device_descriptor("H100").spec, 256.9, 32)


def test_model_policy_only_picks_blocks_the_registers_allow():
    model = GeometryModel(trees=20).fit([synthetic_choice_table(1024)])
    device = device_descriptor("H100")
    assert model.choose_threads(device, KernelDescriptor(2**20)) == 1024
    assert model.choose_threads(device, KernelDescriptor(2**20, registers=255)) <= 65536 // (256 * 32) * 32
    # Beyond the GPU's limits, the error every other policy gives (it said "no block size fits")
    with pytest.raises(GpuperfError, match="shared memory per block 300000 bytes is outside"):
        model.choose_threads(device, KernelDescriptor(2**20, shared_memory_bytes=300_000))
    with pytest.raises(GpuperfError, match="registers per thread 256 is outside 0..255"):
        model.choose_threads(device, KernelDescriptor(2**20, registers=256))


def test_model_policy_picks_whole_wavefronts_on_a_gpu_of_64_wide_ones():
    """The model's best block of 288 threads (4.5 wavefronts) was picked on an MI300X."""
    model = GeometryModel(trees=20).fit([synthetic_choice_table(288)])
    for gpu in ("MI300X", "MI50"):
        chosen = model.choose_threads(device_descriptor(gpu), KernelDescriptor(2**20))
        assert chosen % 64 == 0 and chosen in (256, 320), (gpu, chosen)
    assert model.choose_threads(device_descriptor("V100"), KernelDescriptor(2**20)) == 288  # warps of 32


def synthetic_choice_table(best_threads: int, gpu: str = "V100") -> ChoiceTable:
    """Groups of 1-D block sizes whose time is lowest at ``best_threads``."""
    rows = []
    for group in range(6):
        for threads in range(32, 1025, 32):
            time = (1 + group) * (1 + 0.3 * abs(np.log2(threads / best_threads)))
            rows.append({"group": group, "bx": threads, "by": 1, "threads": threads,
                         "blocks": 2**20 / threads, "registers": np.nan, "smem": np.nan, "time": time})
    return ChoiceTable("synthetic", "k", "k", gpu, pd.DataFrame(rows))


def test_geometry_model_learns_the_best_block_size():
    model = GeometryModel(trees=20).fit([synthetic_choice_table(256), synthetic_choice_table(256, "K20")])
    device = device_descriptor("V100")
    assert model.choose_threads(device, KernelDescriptor(2**20)) == 256
    chosen = choose_geometry("V100", 2**20)  # the model policy itself needs the bundled data (benchmarks)
    assert chosen.policy == "heuristic"


def test_a_loop_far_above_the_models_launches_is_told_its_choice_is_a_guess():
    """geometry --policy model noted a loop below the launches it learned from, but not one far above them,
    where the forest extends its largest launches flat just as well."""
    model = GeometryModel(trees=5).fit([synthetic_choice_table(256)])
    with pytest.warns(GpuperfNote, match=r"at most 1,048,576 threads .* a loop of 1,000,000,000,000 iterations "
                                         r"lies above them, so its choice is a guess"):
        model.choose_threads(device_descriptor("V100"), KernelDescriptor(10**12))
    with warnings.catch_warnings():
        warnings.simplefilter("error", GpuperfNote)
        model.choose_threads(device_descriptor("V100"), KernelDescriptor(2**20))  # within: no note


def test_block_shape_evaluation_scores_each_policy():
    table = synthetic_choice_table(256)
    model = GeometryModel(trees=20).fit([table])
    picked = choices(table, model)
    assert len(picked) == 6
    assert (picked["llvm_threads"] == 128).all()
    assert (picked["heuristic_threads"] == 64).all()  # V100's preferred block
    assert (picked["occupancy_threads"] == 1024).all()  # full occupancy at 1024 and smaller: the largest
    assert (picked["best_threads"] == 256).all() and (picked["model_threads"] == 256).all()
    summary = summarise(picked)
    assert summary["llvm"]["speedup_vs_llvm"] == pytest.approx(1.0)
    assert summary["best"]["speedup_vs_llvm"] == pytest.approx(1.3)
    assert summary["heuristic"]["within_10pct"] == 0.0 and summary["model"]["within_10pct"] == 1.0


def test_amd_descriptors_count_cus_or_rdnas_work_group_processors():
    mi50 = device_descriptor("MI50")
    assert (mi50.sms, mi50.unit, mi50.max_threads_per_sm, mi50.max_blocks_per_sm) == (60, "CU", 2560, 40)
    assert mi50.preferred_threads_per_block == 64  # 2560 work-items over 40 slots: one wavefront
    w6600 = device_descriptor("W6600")  # 28 CUs in 14 work-group processors, as HIP counts them
    assert (w6600.sms, w6600.unit, w6600.max_threads_per_sm, w6600.max_blocks_per_sm) == (14, "WGP", 2048, 64)
    assert w6600.shared_memory_per_sm_bytes == 128 * 1024


def test_policies_on_amd_gpus():
    # MI50: 60 CUs, 64-work-item blocks; 32 VGPRs leave 8 of 10 wavefronts per SIMD: 32 blocks per
    # CU, 1920 resident in all
    assert choose_geometry("MI50", 60).as_dict() == {"threads": 1, "blocks": 60, "class": "short", "policy": "heuristic"}
    assert choose_geometry("MI50", 64 * 1920).as_dict()["class"] == "ideal"
    long = choose_geometry("MI50", 64 * 1921)
    assert (long.threads, long.blocks, long.loop_class) == (64, 1920, "long")
    assert choose_geometry("MI50", 64 * 2401, registers=24).blocks == 2400  # 10 wavefronts per SIMD
    # 128 VGPRs: 2 wavefronts per SIMD, 8 per CU
    assert choose_geometry("MI50", 10**7, registers=128).blocks == 60 * 8
    assert choose_geometry("W7800", 10**6, policy="occupancy").threads == 1024
    with pytest.raises(GpuperfError, match="libomptarget rule gpuperf follows is the NVIDIA plugin's"):
        choose_geometry("MI50", 10**6, policy="libomptarget")


def test_block_shape_evaluation_on_an_amd_gpu_leaves_out_libomptarget():
    picked = choices(synthetic_choice_table(256, "W6600"), None)
    assert "libomptarget" not in picked.columns and (picked["heuristic_threads"] == 32).all()
    assert set(summarise(picked)) == {"llvm", "heuristic", "occupancy", "best"}


def test_a_policy_is_summarised_over_the_choices_it_made():
    nvidia = choices(synthetic_choice_table(256), None)
    amd = choices(synthetic_choice_table(256, "W6600"), None)
    summary = summarise(pd.concat([nvidia, amd], ignore_index=True))
    assert summary["libomptarget"]["choices"] == len(nvidia) and summary["llvm"]["choices"] == len(nvidia) + len(amd)
    assert summary["libomptarget"]["within_10pct"] == summarise(nvidia)["libomptarget"]["within_10pct"]


def test_the_geometry_model_counts_rdnas_units_as_the_descriptor_does():
    from gpuperf.decisions.geometry_model import _gpu_sms

    assert _gpu_sms("W6600") == device_descriptor("W6600").sms == 14 and _gpu_sms("V100") == 80


def test_the_geometry_command_does_not_import_the_learned_models():
    """A build script calls `gpuperf geometry` per loop: it must not pay for scikit-learn's import."""
    import subprocess
    import sys

    code = ("import sys; from gpuperf.cli import main; "
            "main(['geometry', '--gpu', 'H100', '--trip', '1000', '--json']); "
            "print(sorted(m for m in ('sklearn', 'pandas', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_libomptarget_threads_drop_to_fill_3200_teams():
    """204800 iterations over 3200 teams is 64 per team, already a power of two."""
    from gpuperf.decisions.geometry import choose_geometry
    g = choose_geometry("V100", 204_800, policy="libomptarget")
    assert (g.threads, g.blocks) == (64, 3200)


def test_loop_classes_at_their_boundaries_on_v100():
    """V100: 80 SMs, 16 resident blocks each; trip 10000 at 128 threads is 79 blocks, ideal."""
    from gpuperf.decisions.geometry import choose_geometry
    assert choose_geometry("V100", 80, policy="llvm").loop_class == "short"
    assert choose_geometry("V100", 81, policy="llvm").loop_class == "ideal"
    assert choose_geometry("V100", 10_000, policy="llvm").loop_class == "ideal"


def test_libomptarget_without_block_reuse_caps_at_65536_blocks():
    from gpuperf.decisions.geometry import KernelDescriptor, device_descriptor, libomptarget
    assert libomptarget(device_descriptor("V100"), KernelDescriptor(10**8), reuse_blocks=False).blocks == 65536


def test_resident_blocks_count_whole_warps():
    """48 threads take 2 warps (64 thread slots): 2048 / 64 = 32 blocks, not 2048 // 48 = 42."""
    from gpuperf.decisions.geometry import DeviceDescriptor, resident_blocks_per_sm
    toy = DeviceDescriptor("toy", 1, 2048, 64, 65536, 49152, 1024, 32, 64)
    assert resident_blocks_per_sm(toy, 48, 0, 0) == 32


def _shapes_table(shapes, gpu="V100", registers=np.nan, smem=None):
    """One choice group (0) of the given (bx, by, time) shapes over a 2^20-iteration launch."""
    rows = [{"group": 0, "bx": bx, "by": by, "threads": bx * by, "blocks": 2**20 / (bx * by),
             "registers": registers, "smem": np.nan if smem is None else smem[k], "time": time}
            for k, (bx, by, time) in enumerate(shapes)]
    return ChoiceTable("synthetic", "k", "k", gpu, pd.DataFrame(rows))


def test_a_group_with_a_single_shape_offers_no_choice():
    table = synthetic_choice_table(256)
    lonely = {"group": 99, "bx": 64, "by": 1, "threads": 64, "blocks": 2**14, "registers": np.nan,
              "smem": np.nan, "time": 0.5}
    table.frame = pd.concat([table.frame, pd.DataFrame([lonely])], ignore_index=True)
    picked = choices(table, None)
    assert len(picked) == 6 and 99 not in set(picked["group"])


def test_a_group_of_two_shapes_one_failed_offers_no_choice():
    """One shape measured and one failed: nothing to choose between, as with a single shape."""
    table = synthetic_choice_table(256)
    pair = [{"group": 99, "bx": bx, "by": 1, "threads": bx, "blocks": 2**14, "registers": np.nan, "smem": np.nan,
             "time": time} for bx, time in ((128, 0.5), (256, np.nan))]
    table.frame = pd.concat([table.frame, pd.DataFrame(pair)], ignore_index=True)
    picked = choices(table, None)
    assert len(picked) == 6 and 99 not in set(picked["group"])

def test_a_thread_count_tie_goes_to_the_widest_block():
    """LLVM's 128 threads: 128 x 1, 64 x 2 and 32 x 4 all have them; the widest in x is picked."""
    picked = choices(_shapes_table([(32, 4, 3.0), (64, 2, 2.0), (128, 1, 5.0), (256, 1, 1.0)]), None)
    assert picked["llvm"].iloc[0] == 5.0 and picked["llvm_threads"].iloc[0] == 128
    assert picked["best"].iloc[0] == 1.0


def test_occupancy_counts_a_partial_warp_as_a_whole_one():
    """V100, 32 registers: 112 threads are 4 warps (3.5 rounded up), 64 / 4 = 16 blocks, 64 resident
    warps; 96 threads are 3 warps, 64 // 3 = 21 blocks, 63 warps. The 112-thread block wins."""
    picked = choices(_shapes_table([(96, 1, 1.0), (112, 1, 2.0)]), None)
    assert picked["occupancy_threads"].iloc[0] == 112


def test_occupancy_uses_the_shared_memory_each_shape_recorded():
    """V100, 96 KiB per SM: 256 threads with 48 KiB each fit 2 blocks (16 warps); 128 threads with
    none fit 16 blocks (64 warps, the SM's limit). Without the shared memory both reach 64 warps and
    the larger block would win the tie."""
    table = _shapes_table([(128, 1, 2.0), (256, 1, 1.0)], registers=32.0, smem=[0.0, 48 * 1024.0])
    assert choices(table, None)["occupancy_threads"].iloc[0] == 128


def test_a_pick_exactly_10_percent_slower_than_the_best_is_within_10_percent():
    picked = pd.DataFrame({"group": [0, 1], "llvm": [1.1, 2.0], "llvm_threads": [128, 128],
                           "best": [1.0, 1.0], "best_threads": [256, 64]})
    summary = summarise(picked)
    assert summary["llvm"]["within_10pct"] == 0.5  # 1.1 <= 1.1 x 1.0; 2.0 is not
    assert summary["best"]["speedup_vs_llvm"] == pytest.approx(np.sqrt(1.1 * 2.0))


def test_convolution_blocks_divide_the_image_by_block_times_tile():
    """4096 x 4096 image: x covers 32 x 2 = 64 columns per block (64 blocks), y 8 x 4 = 32 rows (128
    blocks): 8192; a 48-wide block needs ceil(4096 / 48) = 86 columns of blocks."""
    from gpuperf.decisions.geometry_model import _convolution_blocks

    c = pd.DataFrame({"block_size_x": [32, 48], "tile_size_x": [2, 1], "block_size_y": [8, 16],
                      "tile_size_y": [4, 1]})
    np.testing.assert_array_equal(_convolution_blocks(c), [64 * 128, 86 * 256])


def test_choice_table_takes_the_median_of_repeated_shapes_and_drops_bad_times():
    """pnpoly over 2e7 points: block 128 measured 1, 2 and 6 s (median 2); block 256 measured 0 s
    (not a time) and 3 s; blocks = ceil(2e7 / block)."""
    from gpuperf.decisions.geometry_model import _choice_table

    rows = pd.DataFrame({"block_size_x": [128, 128, 128, 256, 256], "time_s": [1.0, 2.0, 6.0, 0.0, 3.0]})
    frame = _choice_table("t", "pnpoly", "V100", rows, ["block_size_x"]).frame
    assert list(frame["bx"]) == [128, 256] and list(frame["time"]) == [2.0, 3.0]
    assert list(frame["blocks"]) == [156250, 78125]


def test_model_features_are_log2_threads_blocks_blocks_per_sm_and_width():
    from gpuperf.decisions.geometry_model import model_features

    features = model_features([256], [160], 80.0, [64])
    np.testing.assert_allclose(features, [[8.0, np.log2(160), 1.0, 6.0, 80.0]])


def test_a_policys_cost_is_set_against_the_median_and_the_shortest_kernel_time():
    """10 us per call against kernels of 1, 2 and 5 ms (and a failed one, NaN, left out): 0.5 % of the
    median (2 ms) and 1 % of the shortest (1 ms)."""
    from gpuperf.decisions.geometry_cost import cost_table

    table = cost_table({"heuristic": 10.0}, np.array([1e-3, 2e-3, 5e-3, np.nan]))
    assert table.loc["heuristic", "us_per_call"] == 10.0
    assert table.loc["heuristic", "share_of_median_kernel"] == pytest.approx(5e-3)
    assert table.loc["heuristic", "share_of_shortest_kernel"] == pytest.approx(1e-2)


def test_every_policy_is_timed_per_call():
    """...and says nothing: a timed trip past the model's training range gave its note once per call, hundreds
    of notes in the demo's geometry report."""
    import warnings

    from gpuperf.decisions.geometry_cost import HEURISTIC, policy_costs
    from gpuperf.errors import GpuperfNote

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        costs = policy_costs(number=1200, repeat=2)  # six trips up to 10**8 for the model, most past its range
    assert not [w for w in caught if issubclass(w.category, GpuperfNote)]
    assert HEURISTIC in costs and "model (random forest over 32 block sizes)" in costs
    assert all(us > 0 for us in costs.values())
    assert costs[HEURISTIC] < costs["occupancy (new resources: 32 sizes tried)"]  # a rule vs 32 sizes computed


def test_the_occupancy_policy_names_the_limit_a_kernel_exceeds(capsys):
    from gpuperf.cli import main

    for argv, message in ((["--gpu", "GTX 680", "--registers", "64"], "registers per thread 64 is outside 0..63"),
                          (["--gpu", "H100", "--smem", "300000"], "shared memory per block 300000 bytes is outside")):
        assert main(["geometry", "--trip", "1000", "--policy", "occupancy", *argv]) == 2
        assert message in capsys.readouterr().err  # not "no block size fits"


def test_geometry_json_carries_its_notes_and_a_trip_no_loop_index_holds_is_refused(capsys):
    """The grid-cap note was on stderr only; --trip 1e20 was taken (sweep tables refuse 2**63 and more)."""
    import json

    from gpuperf.cli import main

    assert main(["geometry", "--gpu", "H100", "--trip", str(2**63 - 1), "--policy", "llvm", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["blocks"] == 2**31 - 1 and "exceed the largest grid of H100 SXM" in out["notes"][0]
    assert main(["geometry", "--gpu", "H100 SXM", "--trip", "1e6", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["notes"] == []
    assert main(["geometry", "--gpu", "H100", "--trip", "1e20"]) == 2
    assert "--trip: '1e20' is too large (at most 2**63 - 1)" in capsys.readouterr().err


def test_the_default_model_is_fitted_once_and_read_back_from_the_cache(tmp_path, monkeypatch):
    """geometry --policy model refitted the forest on every call (about 9 s); now the fitted forest is
    kept in gpuperf's cache and read back, and a damaged cache file is refitted."""
    from gpuperf.decisions import geometry_model

    monkeypatch.setenv("GPUPERF_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(geometry_model, "choice_tables", lambda: [synthetic_choice_table(256)])
    geometry_model._default_geometry_model.cache_clear()
    device, kernel = device_descriptor("H100"), KernelDescriptor(2**20)
    try:
        fitted = geometry_model.default_geometry_model().choose_threads(device, kernel)
        (saved,) = (tmp_path / "geometry").glob("model-*.skops")
        geometry_model._default_geometry_model.cache_clear()
        with monkeypatch.context() as patched:
            patched.setattr(GeometryModel, "fit", lambda self, tables: pytest.fail("refitted"))
            assert geometry_model.default_geometry_model().choose_threads(device, kernel) == fitted == 256
            # the range it learned from comes back too: a smaller loop is told its choice is a guess
            assert geometry_model.default_geometry_model().least_work_ == 2**20
            assert geometry_model.default_geometry_model().most_work_ == 2**20
            with pytest.warns(GpuperfNote, match=r"at least 1,048,576 threads .* a loop of 1,000 iterations lies below"):
                geometry_model.default_geometry_model().choose_threads(device, KernelDescriptor(1000))
        saved.write_bytes(b"damaged")
        geometry_model._default_geometry_model.cache_clear()
        assert geometry_model.default_geometry_model().choose_threads(device, kernel) == fitted
        assert saved.read_bytes() != b"damaged"  # refitted and saved again
    finally:
        geometry_model._default_geometry_model.cache_clear()


def test_a_default_model_cache_that_cannot_be_written_is_said_in_a_note(tmp_path, monkeypatch):
    """With its cache folder a file (one a sudo run left, say), the geometry model was refitted on every
    run without a word, where every other cache says once that it is not kept (docs/files.md)."""
    from gpuperf.decisions import geometry_model

    monkeypatch.setenv("GPUPERF_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(geometry_model, "choice_tables", lambda: [synthetic_choice_table(256)])
    (tmp_path / "geometry").write_text("not a folder")
    geometry_model._default_geometry_model.cache_clear()
    try:
        with pytest.warns(GpuperfNote, match=r"cache file .*geometry/model-.*: cannot be written "
                                             r"\(.*geometry is a file, not a folder\): it is not kept"):
            geometry_model.default_geometry_model()
    finally:
        geometry_model._default_geometry_model.cache_clear()


@pytest.mark.parametrize(("trip", "smem", "policy", "threads", "resident"), [
    (163840, 0, "llvm", 128, 80 * 16),           # V100: 80 SMs x 16 resident blocks of 128 threads
    (20480, 48 * 1024, "llvm", 128, 80 * 2),     # 48 KiB of shared memory a block: 2 blocks an SM
    (163840, 48 * 1024, "occupancy", 1024, 80 * 2),
])
def test_a_loop_is_ideal_up_to_one_wave_of_resident_blocks_at_the_policys_own_block_size(trip, smem, policy, threads, resident):
    at = choose_geometry("V100", trip, shared_memory_bytes=smem, policy=policy).as_dict()
    assert (at["threads"], at["blocks"], at["class"]) == (threads, resident, "ideal")
    over = choose_geometry("V100", trip + 1, shared_memory_bytes=smem, policy=policy).as_dict()
    assert (over["blocks"], over["class"]) == (resident + 1, "long")


def test_the_default_model_is_fitted_again_when_the_data_folder_changes(tmp_path, monkeypatch):
    """Kept in memory by its argument alone, the model a process fitted first stayed after
    GPUPERF_DATA_DIR named another folder of tables."""
    import shutil

    from gpuperf.datasets.bundled import BUNDLED, data_dir
    from gpuperf.decisions import geometry_model

    monkeypatch.setenv("GPUPERF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(geometry_model, "choice_tables", lambda: [synthetic_choice_table(256)])
    geometry_model._default_geometry_model.cache_clear()
    try:
        first = geometry_model.default_geometry_model()
        assert geometry_model.default_geometry_model() is first  # unchanged tables: kept
        copies = tmp_path / "data"
        copies.mkdir()
        for table in geometry_model.TABLES:
            shutil.copy(data_dir() / BUNDLED[table].file, copies)
        monkeypatch.setenv("GPUPERF_DATA_DIR", str(copies))
        assert geometry_model.default_geometry_model() is not first
    finally:
        geometry_model._default_geometry_model.cache_clear()


def test_a_link_where_the_default_model_is_cached_is_replaced_not_written_through(tmp_path, monkeypatch):
    """The geometry model's cache file was written through a symbolic link at its path, replacing the
    file the link pointed to (docs/files.md: a link is replaced, not written through)."""
    from gpuperf.decisions import geometry_model

    monkeypatch.setenv("GPUPERF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(geometry_model, "choice_tables", lambda: [synthetic_choice_table(256)])
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    path = geometry_model._cached_model_path(GeometryModel())
    path.parent.mkdir(parents=True)
    path.symlink_to(victim)
    geometry_model._default_geometry_model.cache_clear()
    try:
        assert geometry_model.default_geometry_model().choose_threads(device_descriptor("H100"),
                                                                      KernelDescriptor(2**20)) == 256
    finally:
        geometry_model._default_geometry_model.cache_clear()
    assert victim.read_text() == "precious\n"
    assert path.is_file() and not path.is_symlink()


def test_a_kernel_descriptor_takes_whole_numbers_only():
    assert KernelDescriptor(1000.0, 32.0).trip == 1000
    for trip in (2.5, "5"):
        with pytest.raises(GpuperfError, match="trip count must be a whole number"):
            KernelDescriptor(trip)
    with pytest.raises(GpuperfError, match="registers must be a whole number"):
        KernelDescriptor(100, registers=3.5)


def test_a_hand_built_device_never_gets_a_block_above_its_threads_per_block():
    tiny = DeviceDescriptor(name="tiny", sms=4, max_threads_per_sm=256, max_blocks_per_sm=8, registers_per_sm=8192,
                            shared_memory_per_sm_bytes=16384, max_threads_per_block=64, warp_size=32,
                            preferred_threads_per_block=32)
    with pytest.raises(GpuperfError, match="a block of 128 threads .* does not fit on an SM of tiny"):
        choose_geometry(tiny, 1000, 16, 0, "llvm")
    assert choose_geometry(tiny, 1000, 16, 0, "occupancy").threads == 64


def test_a_group_without_a_128_thread_shape_has_no_baseline_and_is_left_out():
    """A group of 64 and 256 threads: no shape stands in for LLVM's 128; summarise judges the other group only."""
    table = _shapes_table([(128, 1, 2.0), (256, 1, 1.0)])
    other = _shapes_table([(64, 1, 1.0), (256, 1, 4.0)]).frame.assign(group=1)
    table.frame = pd.concat([table.frame, other], ignore_index=True)
    with pytest.warns(GpuperfNote, match="groups judged 1 of 2: 1 have no block shape of exactly 128 threads"):
        picked = choices(table, None)
    assert picked["llvm"].isna().tolist() == [False, True]
    assert picked["llvm_failed"].tolist() == [False, False]  # no pick made is no failed pick
    summary = summarise(picked)
    assert {s["choices"] for s in summary.values()} == {1}
    assert summary["best"]["speedup_vs_llvm"] == pytest.approx(2.0)


def test_a_group_whose_128x1_shape_failed_has_no_baseline_rather_than_another_128_thread_shape():
    """LLVM's default is 128 x 1; where it failed, 64 x 2 (128 threads too, and ran) does not stand in for it."""
    rows = [{"group": group, "bx": bx, "by": by, "threads": bx * by, "blocks": 100, "registers": np.nan,
             "smem": np.nan, "time": time}
            for group, shapes in ((0, ((128, 1, 2.0), (64, 2, 3.0), (256, 1, 1.0))),
                                  (1, ((128, 1, np.nan), (64, 2, 3.0), (256, 1, 1.0))))
            for bx, by, time in shapes]
    with pytest.warns(GpuperfNote, match="groups judged 1 of 2: 1 have LLVM's 128-thread shape recorded as failed"):
        picked = choices(ChoiceTable("synthetic", "k", "k", "V100", pd.DataFrame(rows)), None)
    assert picked["llvm"].tolist()[0] == 2.0 and np.isnan(picked["llvm"].tolist()[1])
    assert summarise(picked)["best"]["choices"] == 1


def test_the_rules_trip_count_does_not_depend_on_which_large_shapes_were_measured():
    """GEMM-like groups (500 blocks whatever the shape): one lacks its 1024-thread shape, as a sampled table may.
    The trip is the 128-thread shape's 64,000 threads in both, so libomptarget picks alike (32 threads)."""
    rows = [{"group": group, "bx": t, "by": 1, "threads": t, "blocks": 500, "registers": np.nan, "smem": np.nan,
             "time": 1.0 + t / 1024} for group, shapes in ((0, (32, 64, 128, 256, 1024)), (1, (32, 64, 128, 256)))
            for t in shapes]
    picked = choices(ChoiceTable("synthetic", "k", "k", "V100", pd.DataFrame(rows)), None)
    assert picked["libomptarget_threads"].tolist() == [32, 32]


def test_a_policy_that_picks_a_failed_configuration_made_a_failed_pick():
    """V100, 32 registers: 1024 and 256 threads both fill an SM (64 warps), the larger wins the tie; the
    1024-thread configuration failed, so the occupancy policy's pick failed (it was its runner-up, 256)."""
    from gpuperf.decisions.geometry_model import _choice_table

    rows = pd.DataFrame({"block_size_x": [128, 256, 1024], "tile_size": 1, "status": ["ok", "ok", "RuntimeFailedConfig"],
                         "time_s": [2.0, 1.0, np.nan]})
    table = _choice_table("synthetic", "pnpoly", "V100", rows, ["block_size_x", "tile_size"])
    picked = choices(table, None)
    assert picked["occupancy_threads"].tolist() == [1024] and picked["occupancy_failed"].tolist() == [True]
    summary = summarise(picked)
    assert summary["occupancy"]["failed_picks"] == 1 and summary["occupancy"]["within_10pct"] == 0.0
    assert summary["best"]["speedup_vs_llvm"] == 2.0


def test_a_gpu_by_name_reads_the_descriptors_state_once_a_call(monkeypatch):
    """By name, choose_geometry stat'ed the user's GPU files twice a call (8 us against 1.7 us with a
    descriptor); each spelling of a GPU still gets the one descriptor kept for it."""
    from gpuperf.hardware import specs

    state = specs.descriptors_state
    calls = []
    monkeypatch.setattr(specs, "descriptors_state", lambda: calls.append(1) or state())
    for spelling in ("H100", "NVIDIA H100 80GB HBM3"):
        choose_geometry(spelling, 1000)  # a spelling not seen yet is looked up
        calls.clear()
        choose_geometry(spelling, 2000)
        assert len(calls) == 1
    assert device_descriptor("H100") is device_descriptor("NVIDIA H100 80GB HBM3") is device_descriptor("h100 sxm")


@pytest.mark.parametrize(("registers", "smem", "message"), [
    (-1, 0, r"registers per thread -1 must not be negative"),
    (0, -1, r"shared memory per block -1 bytes must not be negative"),
])
def test_minus_one_register_or_byte_is_refused_like_any_negative_value(registers, smem, message):
    with pytest.raises(GpuperfError, match=message):
        choose_geometry("H100", 1000, registers, smem)


def test_an_unknown_name_given_as_a_number_is_compared_as_written():
    from gpuperf.errors import unknown_name_error

    error = unknown_name_error("policy", 5, ["5x", "llvm"])
    assert isinstance(error, GpuperfError) and "unknown policy '5'" in str(error) and "5x" in str(error)


LAB_GPU = RTX_4070.replace('name = "RTX 4070"', 'name = "Lab 4070"')  # a user's own GPU file


def test_a_gpu_by_name_gets_its_edited_users_file_in_a_running_process(monkeypatch, tmp_path):
    path = tmp_path / "lab.toml"
    path.write_text(LAB_GPU)
    monkeypatch.setenv("GPUPERF_GPUS", str(path))
    assert device_descriptor("Lab 4070").sms == 46
    path.write_text(LAB_GPU.replace("sms = 46", "sms = 60") + "\n# edited\n")  # another size, whatever the clock
    assert device_descriptor("Lab 4070").sms == 60


def test_the_default_model_is_fitted_again_when_a_users_gpu_file_changes_a_gpus_sms(tmp_path, monkeypatch):
    """The forest learns each table GPU's SMs from its descriptor, but its cache file and the copy kept in
    memory were keyed by the tables alone: runs sharing one cache folder with another GPUPERF_GPUS got the
    forest the first run fitted (geometry --policy model --gpu "RTX 3090" picked 192 threads where a run
    on its own picked 512)."""
    from gpuperf.decisions import geometry_model

    path = tmp_path / "lab.toml"
    path.write_text(LAB_GPU)
    monkeypatch.setenv("GPUPERF_GPUS", str(path))
    monkeypatch.setenv("GPUPERF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(geometry_model, "choice_tables", lambda: [synthetic_choice_table(256, "Lab 4070")])
    geometry_model._default_geometry_model.cache_clear()
    try:
        first = geometry_model.default_geometry_model()
        assert geometry_model.default_geometry_model() is first  # unchanged descriptors: kept
        path.write_text(LAB_GPU.replace("sms = 46", "sms = 60") + "\n# edited\n")
        assert geometry_model.default_geometry_model() is not first  # refitted in this process
        assert len(list((tmp_path / "cache" / "geometry").glob("model-*.skops"))) == 2  # a file of its own
    finally:
        geometry_model._default_geometry_model.cache_clear()


def test_a_killed_saves_temporary_beside_the_default_model_is_removed_when_it_is_saved_again(tmp_path, monkeypatch):
    """Only caches written through write_cache_file removed the hour-old temporaries killed runs left; the
    geometry model, saved otherwise, kept every killed save's 28 MB in its cache folder for good."""
    import os
    import time

    from gpuperf.decisions import geometry_model

    monkeypatch.setenv("GPUPERF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(geometry_model, "choice_tables", lambda: [synthetic_choice_table(256)])
    path = geometry_model._cached_model_path(GeometryModel())
    path.parent.mkdir(parents=True)
    old, young = path.parent / f".{path.name}.killed.tmp", path.parent / f".{path.name}.writing.tmp"
    for left in (old, young):
        left.write_bytes(b"half a forest")
    os.utime(old, (time.time() - 3 * 3600,) * 2)
    geometry_model._default_geometry_model.cache_clear()
    try:
        geometry_model.default_geometry_model()
    finally:
        geometry_model._default_geometry_model.cache_clear()
    assert path.is_file() and not old.exists() and young.exists()  # one another run may still be writing is kept
