"""Static features of small kernels against counts worked out by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import pytest

from gpuperf.features.table import extract_features
from gpuperf.kernels import get_kernel

KERNELS = Path(__file__).parent / "data" / "feature_kernels.py"


def features(name: str) -> dict:
    return extract_features(get_kernel(f"{KERNELS}:{name}"), {"n": 4096})


def test_an_index_read_in_a_stores_subscript_is_a_load():
    counted = features("scatter")
    assert counted["global_loads_per_thread"] == 2 and counted["global_stores_per_thread"] == 1


def test_every_work_item_that_reaches_a_guard_evaluates_it():
    assert features("partial_lane")["ifs_per_thread"] == 1
    inside = features("partial_lane_in_loop")
    assert inside["ifs_per_thread"] == 8 and inside["loop_iterations_per_thread"] == 8


@pytest.mark.parametrize("name", ["guarded_sibling_loops", "guarded_reduction", "guarded_bound_in_loop"])
def test_a_guard_around_whole_sequential_loops_counts_once_per_work_item(name):
    import loopy as lp

    kernel = get_kernel(f"{KERNELS}:{name}")
    assert lp.generate_code_v2(kernel.program).device_code().count("if (") == 1  # the guard, around it all
    counted = extract_features(kernel, {"n": 4000})  # 4000 work-items of 4096 launched
    assert counted["ifs_per_thread"] == 1  # not once per loop iteration


@pytest.mark.parametrize("seed", ["0", "2"])
def test_loop_iterations_do_not_depend_on_the_hash_seed(seed):
    code = ("import json, sys; from gpuperf.features.table import extract_features; from gpuperf.kernels import get_kernel;"
            "print(json.dumps(extract_features(get_kernel(sys.argv[1] + ':partial_lane_in_loop'), {'n': 4096})"
            "['loop_iterations_per_thread']))")
    out = subprocess.run([sys.executable, "-c", code, str(KERNELS)], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": seed})
    assert json.loads(out.stdout) == 8


def test_the_innermost_loop_is_found_by_nesting_not_by_name():
    from gpuperf.models.properties import kernel_properties

    lines = [kernel_properties(get_kernel(f"{KERNELS}:{name}"), {"n": 256}, ["loop_lines"])["loop_lines"]
             for name in ("row_sums_r_c", "row_sums_a_b")]
    assert lines == [256 * 64 * 64 * 4 / 64] * 2  # the inner loop walks consecutive floats: 16 to a line


def test_an_integer_argument_the_domains_never_name_is_a_size_too():
    counted = extract_features(get_kernel(f"{KERNELS}:runtime_stride"), {"n": 4096, "s": 2})
    # a: 32 floats 8 bytes apart, 2 lines and 8 sectors; out: 1 line and 4 sectors
    assert counted["cache_lines_per_warp_access"] == 1.5 and counted["sectors_per_warp_access"] == 6


def _lines_by_enumeration(width: int, height: int, n: int, m: int, line: int) -> float:
    """Distinct lines per warp for b[j, i] = a[j, i], every warp of every work-group enumerated."""
    per_warp = []
    for gy in range(m // height):
        for gx in range(n // width):
            items = np.arange(width * height)  # linear id: local axis 0 first
            i, j = gx * width + items % width, gy * height + items // width
            addresses = (j * n + i) * 4
            per_warp += [len(np.unique(addresses[w:w + 32] // line)) for w in range(0, len(items), 32)]
    return float(np.mean(per_warp))


@pytest.mark.parametrize(("name", "width", "height", "n", "m"), [
    ("copy_48", 48, 1, 192, 1),     # two warps a group: 32 lanes, then 16
    ("copy_24x4", 24, 4, 96, 8),    # three lane patterns, each spanning two rows
    ("copy_24x2", 24, 2, 96, 8),    # a warp over two rows, then 16 lanes of one
    ("copy_20x4", 20, 4, 160, 8),   # group starts at eight offsets into a line
])
def test_warps_of_groups_not_dividing_32_are_counted_each_with_its_own_lanes(name, width, height, n, m):
    counted = extract_features(get_kernel(f"{KERNELS}:{name}"), {"n": n, "m": m})
    assert counted["cache_lines_per_warp_access"] == pytest.approx(_lines_by_enumeration(width, height, n, m, 128))
    assert counted["sectors_per_warp_access"] == pytest.approx(_lines_by_enumeration(width, height, n, m, 32))


def test_a_group_of_48_has_a_full_and_a_half_warp():
    # groups start 192 bytes apart: lane 0 of the full warp at 0 or 64 bytes into a line (1 or 2 lines),
    # the 16-lane warp's 64 bytes in one line; 4 and 2 sectors
    counted = extract_features(get_kernel(f"{KERNELS}:copy_48"), {"n": 192, "m": 1})
    assert counted["cache_lines_per_warp_access"] == 1.25 and counted["sectors_per_warp_access"] == 3


def test_an_index_nonlinear_only_outside_the_lanes_keeps_its_lane_pattern():
    from gpuperf.features.access import warp_accesses

    found = {a.variable: a for a in warp_accesses(get_kernel(f"{KERNELS}:squares_offset"), {"n": 4096}).accesses}
    # a[k*k + i]: 32 consecutive floats, lane 0 taken to start a line (its offset k*k is not affine)
    assert found["a"].analysable and found["a"].alignment == "assumed"
    assert (found["a"].lines, found["a"].sectors) == (1, 4)
    assert found["out"].alignment == "known" and found["out"].lines == 1
    counted = features("squares_offset")
    assert counted["analysable_access_fraction"] == 1 and counted["cache_lines_per_warp_access"] == 1


def test_an_index_nonlinear_in_the_lanes_is_not_analysable():
    from gpuperf.features.access import warp_accesses

    found = {a.variable: a for a in warp_accesses(get_kernel(f"{KERNELS}:lane_squared"), {"n": 4096}).accesses}
    assert not found["a"].analysable and "not affine" in found["a"].reason
    assert features("lane_squared")["analysable_access_fraction"] == 0.5


def test_a_warp_revisiting_lines_counts_each_once():
    """Lanes 0..31 at x stride 1 and y stride 32 of an 8 x 4 block: 8 distinct 128-byte lines."""
    from gpuperf.features.access import lines_touched
    lines_touched.cache_clear()
    assert lines_touched(((0, 32), (1, 1)), (8, 4, 1), 4, 128, None, None) == (8.0, 1, 1)


def test_a_constant_offset_shifts_the_lines_a_warp_spans():
    """a[i + 1] spans bytes 4..131: two 128-byte lines, five 32-byte sectors."""
    from gpuperf.features.access import lines_touched
    lines_touched.cache_clear()
    assert lines_touched(((0, 1),), (256, 1, 1), 4, 128, 1, ()) == (2.0, 1, 8)
    assert lines_touched(((0, 1),), (256, 1, 1), 4, 32, 1, ()) == (5.0, 1, 8)


def test_warp_access_summary_weights_accesses_by_their_warp_requests():
    """Groups of 64: a (stride 1: 1 line, 4 sectors) made by lanes 0..31 only, one warp request per
    group; b (stride 2: 2 lines, 8 sectors) by all 64, two. Both counted 6400 times: weighted by
    requests (100 and 200) the averages are 1.67 lines and 6.67 sectors; by count, 1.5 and 6."""
    from gpuperf.features.access import warp_access_summary
    from gpuperf.features.lanes import LaneMask

    half = LaneMask(positions=(), chunks=(((), bytes([1] * 32 + [0] * 32)),), box=64)

    def acc(var, stride, count, lanes=None):
        return NS(record=NS(space="global", problem=None, variable=var, direction="load", instruction="", itemsize=4,
                            lanes=lanes, vector=1, padded_vector=1),
                  count=count, lane_accesses=count, lid_strides={0: stride}, offset=None, outer=None, lanes=lanes,
                  share=1.0)
    s = warp_access_summary(NS(local=(64, 1, 1), accesses=[acc("a", 1, 6400, half), acc("b", 2, 6400)]))
    assert [a.requests for a in s.accesses] == [100, 200]
    assert s.cache_lines_per_warp_access == pytest.approx((100 * 1 + 200 * 2) / 300)
    assert s.sectors_per_warp_access == pytest.approx((100 * 4 + 200 * 8) / 300)
    assert s.max_sectors_over_fewest == 2  # b: 8 sectors for 32 floats, which fit in 4


def test_a_fetch_pass_counts_only_the_lanes_it_runs_on():
    """Each group of 16 fetches its 18-float tile: a pass over all 16 lanes (64 bytes from a 64-byte
    boundary: 2 sectors, 1 line), then one over lanes 0 and 1 (8 bytes: 1 sector, 1 line). One warp
    request each, 2 per group of 16 work-items; counting all 16 lanes in the second pass would give
    it 2 sectors."""
    from gpuperf.features.access import warp_accesses

    found = {a.variable: a for a in warp_accesses(get_kernel(f"{KERNELS}:tile_fetch"), {"n": 4096}).accesses}
    assert (found["a"].sectors, found["a"].lines, found["a"].requests) == (1.5, 1.0, 2 * 4096 / 16)
    assert (found["out"].sectors, found["out"].requests) == (2.0, 4096 / 16)
    counted = features("tile_fetch")
    assert counted["sectors_per_warp_access"] == pytest.approx((1.5 * 512 + 2 * 256) / 768)
    # 18 loads (and local stores) per group of 16; loopy's box count, kept in global_loads, gives 2 each
    assert counted["global_loads_per_thread"] == counted["local_stores_per_thread"] == 18 / 16
    assert counted["global_loads"] == 2 * 4096 and counted["local_loads_per_thread"] == 3


def test_a_fetch_pass_whose_extent_depends_on_the_sizes_still_counts_only_its_lanes():
    """Without n known to divide 16, the fetch's passes are ``min`` expressions of n; at n = 4096 they
    are the same two (16 lanes, then 2) as tile_fetch's: 18 loads per group of 16. At n = 10 the one
    group's tile is 12 floats, one pass: the box count (every lane of the pass, the 4 past the array's
    end too, as every lane of the group stores out[i]) is kept."""
    at_4096 = features("tile_fetch_any_n")
    assert at_4096["global_loads_per_thread"] == at_4096["local_stores_per_thread"] == 18 / 16
    assert at_4096["sectors_per_warp_access"] == pytest.approx(features("tile_fetch")["sectors_per_warp_access"])
    at_10 = extract_features(get_kernel(f"{KERNELS}:tile_fetch_any_n"), {"n": 10})
    assert at_10["global_loads_per_thread"] == at_10["local_stores_per_thread"] == 16 / 16 and at_10["threads"] == 16
    assert at_10["global_stores_per_thread"] == 1 and at_10["global_loads"] == 12  # the total: loopy's box


def _lanes_by_size(name: str, sizes: dict[str, int]) -> dict:
    return extract_features(get_kernel(f"{KERNELS}:{name}"), sizes)


def _sectors(first: int, last: int) -> int:
    """32-byte sectors of the floats first..last (from a 128-byte line's start) one warp touches."""
    return last // 8 - first // 8 + 1


@pytest.mark.parametrize("m", [4, 16])
def test_lanes_a_size_bounded_loop_switches_off_are_left_out(m):
    """wavefront: in pass k of m, lanes 0..k load (each pass from a line's start); the size-free
    constraints leave k unbounded, and every lane of every pass was counted (8 loads per thread at
    m = 16 where the lanes make 4.25, 4 sectors per request where they touch 1.5)."""
    counted = _lanes_by_size("wavefront", {"n": 1, "m": m})
    active = [min(k + 1, 32) for k in range(m)]
    assert counted["global_loads_per_thread"] == sum(active) / 32  # 4.25 at m = 16
    assert counted["sectors_per_warp_access"] == pytest.approx(np.mean([_sectors(0, a - 1) for a in active]))


@pytest.mark.parametrize("m", [8, 31, 32])
def test_a_size_bounded_loop_shorter_than_the_mask_keeps_its_lanes(m):
    """lu_columns: in pass k of m, lanes k..31 load (floats k..31 of a line). The size-free mask holds
    32 passes; at m < 32 loopy's box differs and every lane of every pass was counted (31 loads per
    thread at m = 31 where the lanes make 16.47, 4 sectors per request where they touch 2.55)."""
    counted = _lanes_by_size("lu_columns", {"n": 1, "m": m})
    passes = range(min(m, 32))
    assert counted["global_loads_per_thread"] == sum(32 - k for k in passes) / 32  # 527 / 32 at m = 31
    assert counted["sectors_per_warp_access"] == pytest.approx(np.mean([_sectors(k, 31) for k in passes]))


@pytest.mark.parametrize("n", [64, 128])
def test_rows_of_a_triangle_bounded_by_a_size_count_their_lanes(n):
    """triangle_rows: group g of n loads row g's first min(g + 1, 64) floats, one request per warp with
    a lane on; every lane of every group was counted (1 load per thread where they make 0.508 at n = 64)."""
    counted = _lanes_by_size("triangle_rows", {"n": n})
    active = [min(g + 1, 64) for g in range(n)]
    warps = [(0, min(a, 32) - 1) for a in active] + [(0, a - 33) for a in active if a > 32]
    assert counted["global_loads_per_thread"] == sum(active) / (64 * n)  # 0.5078125 at n = 64
    assert counted["sectors_per_warp_access"] == pytest.approx(np.mean([_sectors(*w) for w in warps]))


@pytest.mark.parametrize("n", [64, 256])
def test_a_triangle_over_a_split_parallel_index_counts_its_lanes(n):
    """triangle_sums_split: work-item i = 64*g + x loads a[i, j] for j <= i, i + 1 loads; the tie
    j <= x + 64*g bounds g only through the problem's edge (64*g + x < n), so the mask is built with
    g within the grid's n / 64 groups. Every lane of the box was counted (n loads per thread where the
    mean is (n + 1) / 2); a warp request's lines are its active lanes (rows n floats apart)."""
    counted = _lanes_by_size("triangle_sums_split", {"n": n})
    assert counted["global_loads_per_thread"] == (n + 1) / 2  # 128.5 at n = 256
    active = [min(i + 32 - j, 32) for j in range(n) for i in range(0, n, 32) if i + 31 >= j]
    lines = sum(active) + n // 32  # the loads' warp requests, then the stores' (out[i]: one line each)
    assert counted["cache_lines_per_warp_access"] == pytest.approx(lines / (len(active) + n // 32))


@pytest.mark.parametrize("name", ["partial_lane", "partial_lane_uniform"])
def test_an_access_on_16_of_256_lanes_is_one_warp_request_per_group(name):
    """At n = 4096, 16 groups of 256 work-items; the part runs on lanes 0..15 of each: warp 0 alone
    makes its load, whether counted per work-item (a[i_outer*256 + j]) or per sub-group (c[i_outer])."""
    from gpuperf.features.access import warp_accesses

    found = warp_accesses(get_kernel(f"{KERNELS}:{name}"), {"n": 4096}).accesses
    part = {a.direction: a.requests for a in found if a.instruction == "part"}
    assert part == {"load": 16, "store": 16}
    assert [a.requests for a in found if a.instruction == "full"] == [4096 / 32] * 2
    assert features(name)["global_loads_per_thread"] == 1 + 16 * 16 / 4096  # every lane once, 16 in 256 twice


def test_too_many_combinations_of_tied_loops_give_no_mask():
    """Two local axes each tied to its own loop of 128 values: 16,384 passes would each be analysed;
    above MAX_CHUNKS the access keeps every lane instead."""
    import loopy as lp

    from gpuperf.features.domains import Domains
    from gpuperf.features.lanes import MAX_CHUNKS, lane_mask

    domain = "{[g,j,k,a,b]: 0<=g<n and 0<=j<%d and 0<=a<32 and a<=j and 0<=k<%d and 0<=b<8 and b<=k}"
    masks = []
    for extent in (16, 128):
        program = lp.make_kernel(domain % (extent, extent), "out[g, a, b] = out[g, a, b] + x[g, j, k]",
                                 [lp.GlobalArg("x", np.float32, shape=("n", extent, extent)),
                                  lp.GlobalArg("out", np.float32, shape=("n", 32, 8)), lp.ValueArg("n", np.int32)],
                                 lang_version=(2018, 2), name="tied")
        program = lp.tag_inames(program, {"g": "g.0", "a": "l.0", "b": "l.1"})
        masks.append(lane_mask(Domains(program.default_entrypoint), frozenset("gjkab"), ["g", "j", "k"]))
    assert len(masks[0].chunks) == 16 * 16 <= MAX_CHUNKS and masks[1] is None


def test_a_warp_stepping_downwards_with_an_unknown_offset_is_aligned_as_one_stepping_upwards():
    """32 lanes reading 32 consecutive floats in either direction, offset unknown: the warp's lowest
    address is taken on a line boundary, so both directions span one 128-byte line and four sectors
    (taking lane 0, the highest address when the lanes step downwards, gave 2 lines and 5 sectors)."""
    from gpuperf.features.access import lines_touched
    lines_touched.cache_clear()
    for stride in (1, -1):
        assert lines_touched(((0, stride),), (32, 1, 1), 4, 128, None, None) == (1.0, 1, 1)
        assert lines_touched(((0, stride),), (32, 1, 1), 4, 32, None, None) == (4.0, 1, 1)


@pytest.mark.parametrize(("offset", "sizes", "expected"), [
    (0, {}, (1.0, 4.0, "known")),
    (3, {}, (2.0, 5.0, "known")),  # bytes 12..139 of the buffer: two lines, five sectors
    ("off", {"off": 3}, (2.0, 5.0, "known")),  # an offset that is a size parameter, given
])
def test_an_arrays_own_offset_shifts_the_lines_a_warp_spans(offset, sizes, expected):
    """a[32 g + x] of an array starting ``offset`` floats into its buffer (loopy adds the offset to
    the index): 32 lanes read 32 consecutive floats from there."""
    import loopy as lp

    from gpuperf.features.access import warp_accesses
    from gpuperf.kernels.kernel import kernel_from_program

    program = lp.make_kernel(("[off] -> " if sizes else "") + "{[g,x]: 0<=g<4 and 0<=x<32}", "out[g*32 + x] = a[x + 32*g]",
                             [lp.GlobalArg("a", np.float32, shape=(1000,), offset=offset),
                              lp.GlobalArg("out", np.float32, shape=(128,)), *([lp.ValueArg("off", np.int32)] if sizes else [])],
                             name="shifted", lang_version=lp.version.LOOPY_USE_LANGUAGE_VERSION_2018_2)
    program = lp.tag_inames(program, {"g": "g.0", "x": "l.0"})
    found = {a.variable: a for a in warp_accesses(kernel_from_program(program, "shifted", "test"), sizes).accesses}
    assert (found["a"].lines, found["a"].sectors, found["a"].alignment) == expected


@pytest.mark.parametrize("offset", ["auto", "aoff"])  # aoff: an argument the kernel never declares, no size
def test_an_offset_given_at_run_time_leaves_the_alignment_assumed(offset):
    import loopy as lp

    from gpuperf.features.access import warp_accesses
    from gpuperf.kernels.kernel import kernel_from_program

    program = lp.make_kernel("{[g,x]: 0<=g<4 and 0<=x<32}", "out[g*32 + x] = a[x + 32*g]",
                             [lp.GlobalArg("a", np.float32, shape=(1000,), offset=lp.auto if offset == "auto" else offset),
                              lp.GlobalArg("out", np.float32, shape=(128,))],
                             name="shifted", lang_version=lp.version.LOOPY_USE_LANGUAGE_VERSION_2018_2)
    program = lp.tag_inames(program, {"g": "g.0", "x": "l.0"})
    found = {a.variable: a for a in warp_accesses(kernel_from_program(program, "shifted", "test"), {}).accesses}
    assert found["a"].alignment == "assumed" and (found["a"].lines, found["a"].sectors) == (1.0, 4.0)


def test_a_local_iname_starting_above_zero_shifts_lane_0():
    """Blocks of 40 floats (160 bytes); lanes 0..7 read elements 2..9, bytes 8..39 of the block: two
    32-byte sectors. Lane 0 starts 8, 40, 72 or 104 bytes into a 128-byte line (one line, or two from
    104): 1.25 lines. Taking lane 0 at element 0 would give one sector and one line."""
    from gpuperf.features.access import warp_accesses

    found = {a.variable: a for a in warp_accesses(get_kernel(f"{KERNELS}:lanes_from_two"), {"n": 8}).accesses}
    assert (found["a"].sectors, found["a"].lines) == (2.0, 1.25)


def test_a_reversed_index_is_still_unit_stride():
    """b[i] = a[n - 1 - i]: neighbouring work-items read neighbouring floats, downwards (stride -1):
    coalesced, so the load counts as stride 1 (n = 128 loads), as does the store."""
    import loopy as lp

    from gpuperf.features.counts import symbolic_counts
    from gpuperf.kernels.kernel import kernel_from_program

    program = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = a[n - 1 - i]",
                             [lp.GlobalArg("a,b", np.float32, shape="n"), lp.ValueArg("n", np.int32)],
                             assumptions="n>=64 and n mod 64 = 0", name="reverse",
                             lang_version=lp.version.LOOPY_USE_LANGUAGE_VERSION_2018_2)
    program = lp.split_iname(program, "i", 64, outer_tag="g.0", inner_tag="l.0")
    named = symbolic_counts(kernel_from_program(program, "reverse", "test")).values({"n": 128}).named()
    assert named["global_loads_f32_stride1"] == 128 and named["global_stores_f32_stride1"] == 128
    assert "global_loads_f32_stride_gt1" not in named


def test_dtype_names_keep_signedness_and_bits():
    from gpuperf.features.counts import dtype_name

    assert [dtype_name(t) for t in (np.uint8, np.int32, np.uint64, np.float16, np.complex64, np.bool_)] == [
        "u8", "i32", "u64", "f16", "c64", "b8"]


def test_an_access_with_two_possible_lane_0_offsets_averages_its_lines():
    """32 lanes of unit-stride floats cover 128 bytes. An outer iname of stride 16 floats (64 bytes)
    taking 2 values puts lane 0 at byte 0 or 64 of a 128-byte line: 1 line or 2, 1.5 on average, and
    the alignment is averaged, not known. Sectors (32 bytes): 4 from either start."""
    from gpuperf.features.access import access_lines
    from gpuperf.features.counts import AccessRecord, EvaluatedAccess

    record = AccessRecord("global", "load", "a", "f32", 4, 1, ((0, 1),))
    access = EvaluatedAccess(record, 1.0, {0: 1}, 0, [(16, 0, 2)])
    lines = access_lines(access, (32, 1, 1))
    assert (lines.lines, lines.sectors, lines.alignment) == (1.5, 4.0, "averaged")
    one_start = access_lines(EvaluatedAccess(record, 1.0, {0: 1}, 0, [(32, 0, 2)]), (32, 1, 1))
    assert (one_start.lines, one_start.alignment) == (1.0, "known")  # 32 floats = one whole line


def test_a_loop_bound_read_from_memory_is_named_as_data_not_asked_for_as_a_size():
    from gpuperf.errors import GpuperfError

    with pytest.raises(GpuperfError, match=r"kernel 'data_bound': loop bounds depend on data \(ln, computed in the "
                                           r"kernel\); gpuperf counts loops whose bounds are size parameters"):
        features("data_bound")


def test_a_guard_counts_in_the_groups_beyond_its_own_loops_too():
    """At n = 4096: 32 groups of 256 work-items (8192). The guard of b (i < n, 16 groups of its
    own) and that of c (lid < 128) are both evaluated by all 8192 work-items: 2 per work-item."""
    counted = features("two_group_counts")
    assert counted["threads"] == 8192 and counted["work_groups"] == 32
    assert counted["ifs_per_thread"] == 2


def test_one_scattered_load_among_coalesced_ones_shows_in_the_most_lines_not_the_average():
    """15 coalesced requests (1 line each), the store (1) and s[32 i] (32 lines): an average of
    48 / 17 = 2.82 lines, under the coalescing rule's 3, and a most of 32, over it."""
    from gpuperf.decisions.advice_features import kernel_features
    from gpuperf.decisions.advisor import _condition_holds
    from gpuperf.decisions.optimizations import load_optimizations

    counted = features("one_scattered_load")
    assert counted["cache_lines_per_warp_access"] == pytest.approx(48 / 17)
    assert counted["max_cache_lines_per_warp_access"] == 32
    coalescing = load_optimizations()["coalescing"]
    assert _condition_holds(coalescing, kernel_features(get_kernel(f"{KERNELS}:one_scattered_load"), {"n": 4096}))
    assert not _condition_holds(coalescing, kernel_features(get_kernel("vector_copy"), {"n": 4096}))
    assert features("scatter")["max_cache_lines_per_warp_access"] == 1  # a and idx; the store's index unknown
    # features without the most (a profile's, or a caller's own): the average stands for it
    assert not _condition_holds(coalescing, {"cache_lines_per_warp_access": 1.0, "threads": 4096.0})
    assert _condition_holds(coalescing, {"cache_lines_per_warp_access": 4.0, "threads": 4096.0})


def test_a_float4_access_is_one_contiguous_access_per_work_item_not_four_strided_ones():
    vector, scalar = features("float4_copy"), features("unrolled_fours")
    assert "float4" in lp_code("float4_copy")
    assert (vector["global_loads_per_thread"], vector["global_stores_per_thread"]) == (1, 1)
    assert vector["loop_iterations_per_thread"] == 0  # a vector instruction, no loop
    assert vector["global_loads_f32_stride1"] == vector["global_loads"] == 4 * 4096  # loopy's element count
    assert (scalar["global_loads_per_thread"], scalar["loop_iterations_per_thread"]) == (4, 4)
    assert scalar["global_loads_f32_stride_gt1"] == 4 * 4096
    for counted in (vector, scalar):  # 32 lanes x 16 bytes: 4 lines, 16 sectors, either way
        assert (counted["cache_lines_per_warp_access"], counted["sectors_per_warp_access"]) == (4, 16)
        assert counted["global_bytes"] == 2 * 16 * 4096


def test_a_wide_access_or_a_narrow_work_group_is_coalesced_for_the_coalescing_rule():
    """32 float4 lanes touch 4 lines, 16 sectors, as many as their 512 bytes need: the coalescing entry
    applied (its rule was 'more than 3 lines') and the advisor predicted 3.9x from coalescing a float4
    copy; an 8-wide group's 4 rows of 32 bytes touch 4 lines but only the 4 sectors 128 bytes need."""
    from gpuperf.decisions.advice_features import kernel_features
    from gpuperf.decisions.advisor import _condition_holds
    from gpuperf.decisions.optimizations import load_optimizations

    coalescing = load_optimizations()["coalescing"]
    for name, lines, sectors in (("float4_copy", 4, 16), ("float3_copy", 4, 16), ("float16_copy", 16, 64)):
        counted = features(name)
        assert (counted["max_cache_lines_per_warp_access"], counted["sectors_per_warp_access"]) == (lines, sectors)
        assert counted["max_sectors_over_fewest"] == 1
        assert not _condition_holds(coalescing, kernel_features(get_kernel(f"{KERNELS}:{name}"), {"n": 4096}))
    narrow = extract_features(get_kernel(f"{KERNELS}:narrow_rows"), {"n": 1024})
    assert (narrow["cache_lines_per_warp_access"], narrow["sectors_per_warp_access"]) == (4, 4)
    assert narrow["max_sectors_over_fewest"] == 1
    strided = features("unrolled_fours")  # a[4 i + j], one float a lane: 16 sectors for 128 bytes
    assert strided["max_sectors_over_fewest"] == 4
    scattered = features("one_scattered_load")  # s[32 i]: 32 sectors for 128 bytes
    assert scattered["max_sectors_over_fewest"] == 8
    assert _condition_holds(coalescing, kernel_features(get_kernel(f"{KERNELS}:one_scattered_load"), {"n": 4096}))
    # features without it (a profile's): its sectors per request over the 4 of 32 floats, else the most lines
    assert _condition_holds(coalescing, {"sectors_per_warp_access": 32.0, "max_cache_lines_per_warp_access": 1.0})
    assert not _condition_holds(coalescing, {"sectors_per_warp_access": 8.0, "max_cache_lines_per_warp_access": 8.0})
    assert _condition_holds(coalescing, {"max_cache_lines_per_warp_access": 8.0})
    assert not _condition_holds(coalescing, {"max_cache_lines_per_warp_access": 2.0})


def test_the_count_model_prices_a_float4_store_as_contiguous():
    from gpuperf.models.properties import kernel_properties

    names = ["global_store_bytes_stride1", "global_store_bytes_strided", "item_loads", "item_strided_loads"]
    vector = kernel_properties(get_kernel(f"{KERNELS}:float4_copy"), {"n": 4096}, names)
    assert vector == {"global_store_bytes_stride1": 16 * 4096, "global_store_bytes_strided": 0,
                      "item_loads": 1, "item_strided_loads": 0}


def lp_code(name: str) -> str:
    import loopy as lp

    return lp.generate_code_v2(get_kernel(f"{KERNELS}:{name}").program).device_code()


def test_an_atomic_update_is_counted_apart_from_a_plain_read_modify_write():
    """acc[i] = acc[i] + a[i] {atomic} had every feature of the same line without {atomic}."""
    atomic, plain = features("atomic_sum"), features("plain_add")
    assert atomic["atomic_updates_per_thread"] == 1 and plain["atomic_updates_per_thread"] == 0
    for counted in (atomic, plain):  # loads and stores as loopy counts them, either way
        assert (counted["global_loads_per_thread"], counted["global_stores_per_thread"]) == (2, 1)


def test_a_float3_is_contiguous_and_a_vec_loop_loopy_unrolls_is_scalar_accesses_and_a_loop():
    """float3s (stored 16 bytes apart) were classed strided; an instruction loopy cannot vectorise
    (a plain array indexed by the vec iname) counted one load but four stores, and no loop."""
    three = features("float3_copy")
    assert (three["global_loads_per_thread"], three["global_stores_per_thread"]) == (1, 1)
    assert three["global_loads_f32_stride1"] == three["global_loads"]
    unrolled = features("float4_into_plain")
    assert "float4" not in lp_code("float4_into_plain").split("{", 1)[1]  # loopy's own code: no vector access
    assert (unrolled["global_loads_per_thread"], unrolled["global_stores_per_thread"]) == (4, 4)
    assert unrolled["loop_iterations_per_thread"] == 4
    called = features("float4_sqrt")  # loopy's check: function calls are not vectorised either
    assert "float4" not in lp_code("float4_sqrt").split("{", 1)[1]
    assert (called["global_loads_per_thread"], called["loop_iterations_per_thread"]) == (4, 4)


def test_an_atomic_initialisation_counts_as_loopys_statistics_count_it():
    """The fast path counted {atomic} updates only, loopy's statistics every atomic store."""
    from gpuperf.features.counts import symbolic_counts

    kernel = get_kernel(f"{KERNELS}:atomic_set_then_add")
    fast = extract_features(kernel, {"n": 4096})
    assert symbolic_counts(kernel).method == "fast" and fast["atomic_updates_per_thread"] == 2


def test_loopys_statistics_say_they_count_a_float4_access_element_by_element():
    """The fallback path counts a float4 access as four strided ones; it now says so."""
    from gpuperf.features.counts import symbolic_counts

    said = "element by element"
    vector = get_kernel(f"{KERNELS}:float4_copy")
    assert any(said in note for note in symbolic_counts(vector, method="loopy", disk_cache=False).notes)
    assert not any(said in note for note in symbolic_counts(vector, method="fast", disk_cache=False).notes)
    plain = get_kernel(f"{KERNELS}:unrolled_fours")
    assert not any(said in note for note in symbolic_counts(plain, method="loopy", disk_cache=False).notes)


def test_a_load_in_an_instructions_predicate_counts():
    """if a[i] > 0: out[i] = 1 read nothing, by the counts (loopy's statistics skip predicates)."""
    counted = features("predicated_store")
    assert (counted["global_loads_per_thread"], counted["global_stores_per_thread"]) == (1, 1)
    assert counted["global_load_bytes"] == 4 * 4096 and counted["ifs_per_thread"] == 1
    selected = features("selected_store")  # the if-expression spelling read a all along
    assert selected["global_load_bytes"] >= counted["global_load_bytes"]


def test_a_3d_work_group_numbers_its_lanes_x_fastest_then_y_then_z():
    from gpuperf.features.access import lines_touched
    from gpuperf.features.lanes import local_ids

    x, y, z = local_ids((4, 2, 4))
    assert z.tolist() == [0] * 8 + [1] * 8 + [2] * 8 + [3] * 8 and y.tolist()[:8] == [0] * 4 + [1] * 4
    # a[lid2 * 1024 + lid1 * 32 + lid0] in floats: one 128-byte line per (lid1, lid2), 2 x 4 = 8 lines.
    assert lines_touched(((0, 1), (1, 32), (2, 1024)), (4, 2, 4), 4, 128, None, None)[0] == 8


def test_fewest_lines_counts_distinct_addresses_and_no_access_counts_zero():
    from gpuperf.features.access import fewest_lines, warp_access_summary

    assert fewest_lines(((0, 0),), (32, 1, 1), 4, 32) == 1  # 32 lanes reading one float: one sector
    summary = warp_access_summary(NS(accesses=(), local=(32, 1, 1)))
    assert (summary.cache_lines_per_warp_access, summary.sectors_per_warp_access) == (0, 0)


@pytest.mark.parametrize(("stride", "stride_class"), [(4, "stride1"), (6, "stride_gt1"), (8, "stride_gt1"), (0, "stride0")])
def test_a_vector_access_strides_in_whole_vectors(stride, stride_class):
    from gpuperf.features.counts import AccessRecord, EvaluatedAccess

    record = AccessRecord("global", "load", "a", "f32", 4, 1, ((0, stride),), vector=4)  # float4 along lid(0)
    assert EvaluatedAccess(record, 1.0, {0: stride}, None, None).stride_class == stride_class


def test_a_work_group_size_given_by_a_size_parameter_is_refused_by_name():
    """A loop over n tagged l.0 crashed `gpuperf features` (TypeError: int() of a Variable)."""
    import loopy as lp

    from gpuperf.errors import GpuperfError
    from gpuperf.kernels.kernel import kernel_from_program

    program = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = a[i]",
                             [lp.GlobalArg("a,b", np.float32, "n"), lp.ValueArg("n", np.int32)],
                             name="whole_group", lang_version=(2018, 2))
    kernel = kernel_from_program(lp.tag_inames(program, {"i": "l.0"}), "whole_group", "")
    with pytest.raises(GpuperfError, match=r"kernel 'whole_group': its work-group size along local axis 0 is n, an "
                                           r"expression of the sizes; gpuperf needs constant work-group sizes"):
        extract_features(kernel, {"n": 256})


def test_an_index_read_into_a_temporary_is_counted_as_the_same_index_read_in_place():
    """``<> t = idx[i]; out[i] = src[t]`` crashed `gpuperf features` (KeyError 't': the offset kept the
    temporary); its load of src is now nonaffine, as src[idx[i]] is."""
    import loopy as lp

    from gpuperf.kernels.kernel import kernel_from_program

    args = [lp.GlobalArg("src,out", np.float32, "n"), lp.GlobalArg("idx", np.int32, "n"), lp.ValueArg("n", np.int32)]
    counted = []
    for name, code in (("in_place", "out[i] = src[idx[i]]"), ("through_t", "<> t = idx[i]\nout[i] = src[t]")):
        program = lp.make_kernel("{[i]: 0<=i<n}", code, args, name=name, lang_version=(2018, 2))
        program = lp.split_iname(program, "i", 32, outer_tag="g.0", inner_tag="l.0")
        counted.append(extract_features(kernel_from_program(program, name, ""), {"n": 4096}))
    assert counted[1]["global_loads"] == counted[0]["global_loads"] == 8192
    classes = [{k: v for k, v in c.items() if "_stride" in k or "nonaffine" in k} for c in counted]
    assert classes[1] == classes[0] and "global_loads_f32_stride0" not in classes[1]


def test_sequential_loops_bounded_by_one_another_count_their_passes():
    """sequential_triangle: k < 4 and j <= k make 10 passes, each a load of a per work-item; loopy's
    box (4 x 4) counted 16."""
    counted = extract_features(get_kernel(f"{KERNELS}:sequential_triangle"))
    assert (counted["global_loads_per_thread"], counted["global_stores_per_thread"]) == (10, 1)
    assert counted["global_loads"] == 16 * 64  # the totals stay loopy's box count


@pytest.mark.parametrize("m", [1, 4, 7, 100, 300])
def test_size_bounded_sequential_loops_bounded_by_one_another_count_their_passes(m):
    """sequential_triangle_m: k < m and j <= k make m(m+1)/2 passes (5050 at m = 100, where the box is
    10,000; 45,150 at m = 300, a box of 90,000 points but 300 over its longest loop)."""
    counted = _lanes_by_size("sequential_triangle_m", {"m": m})
    assert counted["global_loads_per_thread"] == m * (m + 1) / 2


@pytest.mark.parametrize(("m", "expected"), [(65_536, 65_536 * 65_537 / 2), (65_537, 65_537**2)])
def test_sequential_loops_past_65536_over_their_longest_loop_count_loopys_box(m, expected):
    """sequential_triangle_m: the passes are counted while the box over its longest loop (m) is at most
    65,536; past that, the box of m x m."""
    assert _lanes_by_size("sequential_triangle_m", {"m": m})["global_loads_per_thread"] == expected


@pytest.mark.parametrize("m", [4, 40])
def test_sequential_triangle_and_switched_off_lanes_both_leave_out_their_share(m):
    """wavefront_triangle: pass k on lanes x <= k, each summing over j <= i < 4 (10 of loopy's 16)."""
    counted = _lanes_by_size("wavefront_triangle", {"n": 1, "m": m})
    active = sum(min(k + 1, 32) for k in range(m))
    assert counted["global_loads_per_thread"] == 10 * active / 32  # 245 at m = 40
    assert counted["global_stores_per_thread"] == active / 32


def test_warp_requests_count_the_passes_of_sequential_loops_bounded_by_one_another():
    """sequential_triangle_and_column: a's 10 passes per work-item are 20 warp requests of 1 line (4
    sectors), not loopy's box of 32; b, out and out2 make 2 each of 32 lines (32 sectors), 1 (4) and 1 (4)."""
    from gpuperf.features.access import warp_accesses

    kernel = get_kernel(f"{KERNELS}:sequential_triangle_and_column")
    found = {a.variable: a for a in warp_accesses(kernel, {}).accesses}
    assert {name: (a.requests, a.lines, a.sectors) for name, a in found.items()} == {
        "a": (20, 1, 4), "b": (2, 32, 32), "out": (2, 1, 4), "out2": (2, 1, 4)}
    counted = extract_features(kernel, {})
    assert counted["global_loads_per_thread"] == 11
    assert counted["cache_lines_per_warp_access"] == pytest.approx((20 * 1 + 2 * 32 + 2 + 2) / 26)  # 3.385
    assert counted["sectors_per_warp_access"] == pytest.approx((20 * 4 + 2 * 32 + 8 + 8) / 26)  # 6.154


def _inline_kernel(domain: str, instruction: str, args: list, name: str, **kwargs):
    """A one-instruction kernel on ``domain`` with g on groups and x or l on lanes."""
    import loopy as lp

    from gpuperf.kernels.kernel import kernel_from_program

    program = lp.make_kernel(domain, instruction, args, lang_version=(2018, 2), name=name, **kwargs)
    return kernel_from_program(lp.tag_inames(program, {"g": "g.0", "x" if "x" in domain else "l": "l.0"}), name, "test")


def test_lanes_the_problems_edge_switches_off_still_count():
    """edge_wave at n = 40, m = 40: 2 groups of 32 lanes, pass k on lanes x <= k; the edge 32 g + x < n
    switches off lanes 8..31 of group 1 but is left out (docs/features.md): each group makes
    sum(min(k + 1, 32) for k < 40) = 784 loads, 24.5 per work-item (16.81 with the edge)."""
    import loopy as lp

    kernel = _inline_kernel("{[g,x,k]: 0<=g and 0<=x<32 and 32*g + x < n and 0<=k<m and x<=k}",
                            "out[k*n + 32*g + x] = a[k*n + 32*g + x]",
                            [lp.GlobalArg("a,out", np.float32, shape=("n*m",)), lp.ValueArg("n,m", np.int32)],
                            "edge_wave", assumptions="n>=1 and m>=1")
    assert extract_features(kernel, {"n": 40, "m": 40})["global_loads_per_thread"] == pytest.approx(784 / 32)


@pytest.mark.parametrize(("m", "expected"), [
    (4, 10 * 6),  # k < 4, j <= k: 10 of 16; i < 3, h <= i: 6 of 9
    (70_000, 70_000**2 * 6),  # the first triangle's box over its longest loop is past 65,536: its box, m x m
])
def test_each_triangle_of_sequential_loops_scales_by_its_own_share(m, expected):
    """two_triangles_m: two independent triangles of sequential loops, k < m with j <= k and i < 3 with
    h <= i; each scales loopy's box (m x m x 9 loads per work-item) by its own share."""
    import loopy as lp

    kernel = _inline_kernel("{[g,l,k,j,i,h]: 0<=l<32 and 0<=g<2 and 0<=k<m and 0<=j<=k and 0<=i<3 and 0<=h<=i}",
                            "out[32*g + l] = sum((k, j, i, h), a[32*g + l + j + h])",
                            [lp.GlobalArg("a", np.float32, shape=("m+70",)), lp.GlobalArg("out", np.float32, shape=(64,)),
                             lp.ValueArg("m", np.int32)], "two_triangles_m")
    assert extract_features(kernel, {"m": m})["global_loads_per_thread"] == pytest.approx(expected)


@pytest.mark.parametrize(("m", "p", "passes"), [(9, 4, 5), (5, 5, 0), (3, 5, 0)])
def test_a_loop_empty_at_the_sizes_counts_no_pass(m, p, passes):
    """window_sum: k runs p..m-1, m - p passes of one load and one add; at m <= p none (the loop's
    extent m - p is negative there: never a negative count), while the store after it stays one."""
    counted = _lanes_by_size("window_sum", {"n": 32, "m": m, "p": p})
    assert counted["global_loads_per_thread"] == counted["loop_iterations_per_thread"] == passes
    assert counted["flops"] == 32 * passes and counted["global_loads"] == 32 * passes
    assert counted["global_stores_per_thread"] == 1 and counted["global_bytes"] == 4 * 32 * (passes + 1)
    assert counted["sectors_per_warp_access"] == pytest.approx((passes * 1 + 4) / (passes + 1))


@pytest.mark.parametrize("m", [32, 64])
def test_a_loop_over_the_whole_grid_beside_a_shorter_one_needs_no_guard(m):
    """sibling_group_loops at n = 64: loopy's grid is n's 2 groups (the assumptions say m <= n), its
    code guards c's loop alone, and every work-item of the grid evaluates that one guard."""
    import loopy as lp

    kernel = get_kernel(f"{KERNELS}:sibling_group_loops")
    assert lp.generate_code_v2(kernel.program).device_code().count("if (") == 1
    counted = extract_features(kernel, {"n": 64, "m": m})
    assert counted["ifs_per_thread"] == 1 and counted["threads"] == 64 and counted["work_groups"] == 2
    assert counted["global_loads_per_thread"] == (64 + m) / 64


@pytest.mark.parametrize("n", [1, 100, 255, 256, 300])
def test_below_one_work_group_the_lanes_past_the_problems_edge_still_count(n):
    """copy_any_n at n = 100: one group of 256 work-items, 100 of them copying. The lanes the
    edge switches off counted in the groups past the first (n = 300: 512 lanes, 1 load each) but not in
    the first (n = 100: 100 / 256 = 0.39 loads per thread), while the per-warp features counted all 8 warps."""
    counted = extract_features(get_kernel(f"{KERNELS}:copy_any_n"), {"n": n})
    assert counted["global_loads_per_thread"] == counted["global_stores_per_thread"] == 1.0
    assert counted["sectors_per_warp_access"] == 4.0
    assert counted["global_loads"] == (n if n <= 256 else 256 * -(-n // 256))  # the total: loopy's box


def test_below_one_work_group_a_rows_loop_counts_every_lane_as_its_flops_do():
    """row_sums_any_n at n = 5, m = 7 (groups of 32): 7 adds, 7 loads and 7 loop passes per work-item, every
    lane of the group counted in each; loop_iterations_per_thread and the loads were 5 x 7 / 32 = 1.09."""
    counted = extract_features(get_kernel(f"{KERNELS}:row_sums_any_n"), {"n": 5, "m": 7})
    assert counted["flops_per_thread"] == counted["loop_iterations_per_thread"] == 7.0
    assert counted["global_loads_per_thread"] == 7.0 and counted["global_stores_per_thread"] == 1.0
    assert counted["flops"] == 32 * 7 and counted["global_loads"] == 5 * 7  # totals: loopy's counts


@pytest.mark.parametrize("n", [31, 32, 33, 40, 64])
def test_a_triangle_over_a_split_index_keeps_its_mask_where_n_is_no_multiple_of_the_group(n):
    """triangle_sums_any_n: lane i < n makes i + 1 loads, a lane past the edge (i >= n, in the last
    group) runs j over j's box 0..n-1 as far as j <= i allows. The mask was dropped where n is no
    multiple of 32 (the tie reaches j = 31 at n = 31, past j's box): 31, 16.5, 33, 40, 32.5 loads per
    thread, where the lanes make 16.47, 16.5, 24.75, 27.81, 32.5."""
    counted = _lanes_by_size("triangle_sums_any_n", {"n": n})
    lanes = 32 * -(-n // 32)
    assert counted["global_loads_per_thread"] == pytest.approx(sum(min(i + 1, n) for i in range(lanes)) / lanes)
    assert counted["global_stores_per_thread"] == 1.0
