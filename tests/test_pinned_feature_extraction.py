"""Pins the static per-work-item feature extraction (gpuperf.features walker, access, lanes,
indexing, expressions, sync, domains, fastcount) where mutation testing found behaviour no
other test held: if-expressions and predicates as branches, a predicate's arithmetic, float2
vectors, unsigned size arguments, the tied-loop chunk limit, the empty and the unanalysable
warp summaries, and the compiled count evaluator.

Every expected value is worked out by hand in a comment next to it.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from types import SimpleNamespace as NS

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
import pytest

from gpuperf.features.table import extract_features
from gpuperf.kernels import get_kernel
from gpuperf.kernels.kernel import kernel_from_program

DATA = Path(__file__).parent / "data"
KERNELS = DATA / "feature_kernels.py"
sys.path.insert(0, str(DATA))
import feature_kernels as fk  # noqa: E402  (the hand-count kernels, for their builders)


def features(name: str, sizes: dict | None = None) -> dict:
    return extract_features(get_kernel(f"{KERNELS}:{name}"), sizes or {"n": 4096})


def own(program, name: str, sizes: dict | None = None) -> dict:  # noqa: ANN001
    return extract_features(kernel_from_program(program, name, "test"), sizes or {"n": 4096})


# -- branches and ops ------------------------------------------------------------------------------
def test_an_if_expression_is_one_branch_per_work_item():
    # out[i] = if(a[i] > 0, 1, out[i]) over n = 4096 in full groups of 256: no bound guard, the
    # one if-expression evaluated once by each of the 4096 work-items
    assert features("selected_store")["ifs_per_thread"] == 1


def test_a_predicates_arithmetic_is_not_counted_but_its_load_is():
    # if a[i] * 2 > 1: out[i] = a[i] + 1. Counted: the f32 add of the body (1 per work-item, so
    # 1 flop); the predicate's f32 mul is not (as loopy's statistics). Loads: a in the predicate and
    # a in the body, 2 per work-item.
    program = fk._one_dimensional("predicate_arithmetic", "if a[i] * 2.0f > 1.0f\n  out[i] = a[i] + 1.0f\nend", "a,out")
    counted = own(program, "predicate_arithmetic")
    assert counted["flops_per_thread"] == 1 and counted["ops_f32_add"] == 4096
    assert "ops_f32_mul" not in counted
    assert counted["global_loads_per_thread"] == 2 and counted["ifs_per_thread"] == 1



def test_a_max_of_three_values_is_two_maxmin_ops():
    # out[i] = Max(a[i], b[i], c[i]) (a pymbolic Max node, as a program may build it): two
    # comparisons per work-item, 2 x 4096 f32 maxmin ops, which are flops
    i = prim.Variable("i")
    a, b, c, out = (prim.Variable(name) for name in ("a", "b", "c", "out"))
    program = lp.make_kernel("{[i]: 0<=i<n}", [lp.Assignment(out[i], prim.Max((a[i], b[i], c[i])), id="m")],
                             [lp.GlobalArg("a,b,c,out", np.float32, shape=("n",)), lp.ValueArg("n", np.int32)],
                             assumptions=fk.ASSUME, lang_version=(2018, 2), name="max_of_three")
    counted = own(lp.split_iname(program, "i", 256, outer_tag="g.0", inner_tag="l.0"), "max_of_three")
    assert counted["ops_f32_maxmin"] == 2 * 4096 and counted["flops_per_thread"] == 2

# -- vectors and sizes -----------------------------------------------------------------------------
def test_a_float2_access_is_one_contiguous_access_per_work_item():
    # b[i, v] = 2 a[i, v] with v < 2 tagged vec on a vec axis: one float2 (8 bytes) a lane, lanes 8
    # bytes apart: 32 lanes cover 256 bytes, 2 lines and 8 sectors; stride1 in whole vectors;
    # loopy's element count 2 x 4096 loads; no loop
    counted = own(fk._by_vectors("float2_copy", "vec", "a,b", width=2), "float2_copy")
    assert (counted["global_loads_per_thread"], counted["global_stores_per_thread"]) == (1, 1)
    assert counted["global_loads_f32_stride1"] == counted["global_loads"] == 2 * 4096
    assert (counted["cache_lines_per_warp_access"], counted["sectors_per_warp_access"]) == (2, 8)
    assert counted["loop_iterations_per_thread"] == 0


def test_an_unsigned_integer_argument_is_a_size_too():
    # out[i] = a[s*i] with s an uint32 argument; at s = 2 a warp's loads span 32 x 8 = 256 bytes:
    # 2 lines, 8 sectors; the store 1 line, 4 sectors: averages 1.5 lines and 6 sectors
    program = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = a[s*i]",
                             [lp.GlobalArg("a", np.float32, shape=("n*s",)), lp.GlobalArg("out", np.float32, shape=("n",)),
                              lp.ValueArg("n", np.int32), lp.ValueArg("s", np.uint32)],
                             assumptions=fk.ASSUME, lang_version=(2018, 2), name="unsigned_stride")
    program = lp.split_iname(program, "i", 256, outer_tag="g.0", inner_tag="l.0")
    from gpuperf.features.counts import symbolic_counts

    kernel = kernel_from_program(program, "unsigned_stride", "test")
    assert symbolic_counts(kernel).method == "fast" and "s" in symbolic_counts(kernel).params
    counted = extract_features(kernel, {"n": 4096, "s": 2})
    assert (counted["cache_lines_per_warp_access"], counted["sectors_per_warp_access"]) == (1.5, 6)


# -- lane masks ------------------------------------------------------------------------------------
def test_exactly_max_chunks_combinations_of_tied_loops_still_give_a_mask():
    # a <= j over j < 32 and b <= k over k < 32: 32 values of j times 32 of k = 1024 = MAX_CHUNKS
    # combinations, not more than the limit, so the mask is built (one chunk each)
    from gpuperf.features.domains import Domains
    from gpuperf.features.lanes import MAX_CHUNKS, lane_mask

    domain = "{[g,j,k,a,b]: 0<=g<n and 0<=j<32 and 0<=a<32 and a<=j and 0<=k<32 and 0<=b<8 and b<=k}"
    program = lp.make_kernel(domain, "out[g, a, b] = out[g, a, b] + x[g, j, k]",
                             [lp.GlobalArg("x", np.float32, shape=("n", 32, 32)),
                              lp.GlobalArg("out", np.float32, shape=("n", 32, 8)), lp.ValueArg("n", np.int32)],
                             lang_version=(2018, 2), name="tied")
    program = lp.tag_inames(program, {"g": "g.0", "a": "l.0", "b": "l.1"})
    mask = lane_mask(Domains(program.default_entrypoint), frozenset("gjkab"), ["g", "j", "k"])
    assert MAX_CHUNKS == 1024 and mask is not None and len(mask.chunks) == 32 * 32


# -- warp summaries --------------------------------------------------------------------------------
def test_a_kernel_without_global_accesses_has_every_access_analysable_and_coalesced():
    # no global access: averages and most 0, analysable fraction 1, sectors over fewest 1
    from gpuperf.features.access import warp_access_summary

    summary = warp_access_summary(NS(accesses=(), local=(32, 1, 1)))
    assert (summary.analysable_fraction, summary.max_cache_lines_per_warp_access, summary.max_sectors_over_fewest) == (
        1.0, 0.0, 1.0)


def test_a_kernel_with_no_analysable_access_has_nan_lines_and_fraction_0():
    # b[i*i mod n] = a[i*i mod n]: neither index is affine in the lanes, so there is nothing to average
    counted = features("squared_index_copy")
    assert counted["analysable_access_fraction"] == 0
    assert math.isnan(counted["cache_lines_per_warp_access"]) and math.isnan(counted["sectors_per_warp_access"])


# -- the count evaluator ---------------------------------------------------------------------------
def test_the_compiled_evaluator_gives_what_the_interpreter_gives():
    # n = 7, m = 5: (n - 10) // 4 = -3 // 4 = -1 (floored, not -0.75), 7 % 3 = 1, 7 / 4 = 1.75,
    # max 7, min 5, n > m so n (7),
    # m <= 5 is True; each call the same, interpreted (calls 1 and 2) or compiled (3 on)
    from gpuperf.features.expressions import Evaluator

    n, m = prim.Variable("n"), prim.Variable("m")
    exprs = [prim.FloorDiv(prim.Sum((n, -10)), 4), prim.Remainder(n, 3), prim.Quotient(n, 4), prim.Max((n, m)),
             prim.Min((n, m)), prim.If(prim.Comparison(n, ">", m), n, m), prim.Comparison(m, "<=", 5)]
    evaluator = Evaluator(exprs, ["n", "m"])
    expected = (-1, 1, 1.75, 7, 5, 7, True)
    assert [evaluator({"n": 7, "m": 5}) for _ in range(4)] == [expected] * 4


def test_the_evaluator_handles_one_expression_and_a_size_named_like_a_builtin():
    # one expression: still a one-tuple; a size called min must not hide the min function:
    # min(min=5, n=7) = 5, max(min=5, 3) = 5
    from gpuperf.features.expressions import Evaluator

    single = Evaluator([prim.Product((2, prim.Variable("n")))], ["n"])
    assert [single({"n": 3}) for _ in range(3)] == [(6,)] * 3
    low, n = prim.Variable("min"), prim.Variable("n")
    named = Evaluator([prim.Min((low, n)), prim.Max((low, 3))], ["min", "n"])
    assert [named({"min": 5, "n": 7}) for _ in range(3)] == [(5, 5)] * 3


# -- indexing and address spaces -------------------------------------------------------------------
def test_a_local_axis_of_extent_1_is_stride_0_and_the_warp_walks_the_next_axis():
    # b[i, j] = a[i, j] (32 floats a row), i split by 1 (i_inner on l.0, extent 1), j on l.1 (32):
    # loopy takes the one-valued i_inner as a constant, so the lid(0) stride is 0 (stride0, 32 x 4096
    # accesses); the warp's 32 lanes walk j, 32 consecutive floats: 1 line, 4 sectors
    program = lp.make_kernel("{[i,j]: 0<=i<n and 0<=j<32}", "b[i, j] = a[i, j]",
                             [lp.GlobalArg("a,b", np.float32, shape=("n", 32)), lp.ValueArg("n", np.int32)],
                             assumptions=fk.ASSUME, lang_version=(2018, 2), name="one_wide")
    program = lp.split_iname(program, "i", 1, outer_tag="g.0", inner_tag="l.0")
    counted = own(lp.tag_inames(program, {"j": "l.1"}), "one_wide")
    assert counted["global_loads_f32_stride0"] == counted["global_stores_f32_stride0"] == 32 * 4096
    assert (counted["cache_lines_per_warp_access"], counted["sectors_per_warp_access"]) == (1, 4)


def test_a_lane_stride_that_depends_on_a_loop_is_not_analysable():
    # a[k*k*n + k*i]: the lanes' stride is k, which changes with the loop: not analysable (never
    # guessed); out[i] is (1 line a warp request)
    from gpuperf.features.access import warp_accesses

    program = lp.make_kernel("{[i,k]: 0<=i<n and 0<=k<4}", "out[i] = sum(k, a[k*k*n + k*i])",
                             [lp.GlobalArg("a", np.float32, shape=("16*n",)), lp.GlobalArg("out", np.float32, shape=("n",)),
                              lp.ValueArg("n", np.int32)], assumptions=fk.ASSUME, lang_version=(2018, 2), name="k_times_i")
    program = lp.split_iname(program, "i", 256, outer_tag="g.0", inner_tag="l.0")
    found = {a.variable: a for a in warp_accesses(kernel_from_program(program, "k_times_i", "test"), {"n": 4096}).accesses}
    assert not found["a"].analysable and "not affine" in found["a"].reason
    assert found["out"].analysable and found["out"].lines == 1


def test_a_temporary_of_a_kernel_without_parallel_inames_is_private():
    # one work-item: t = 2 a[k] (a typed temporary of automatic address space); out[k] = t over
    # k < 4096. t is private (no parallel iname to be
    # local or global over), so the global traffic is a's 4096 loads and out's 4096 stores only
    program = lp.make_kernel("{[k]: 0<=k<n}", "t = 2.0f * a[k]\nout[k] = t",
                             [lp.GlobalArg("a,out", np.float32, shape=("n",)), lp.ValueArg("n", np.int32),
                              lp.TemporaryVariable("t", np.float32)],  # typed: its space decided by gpuperf
                             assumptions=fk.ASSUME, lang_version=(2018, 2), name="serial")
    counted = own(program, "serial")
    assert (counted["threads"], counted["global_loads"], counted["global_stores"]) == (1, 4096, 4096)
    assert counted["local_memory_bytes"] == 0


def test_an_instruction_in_a_vec_loop_that_does_not_use_it_makes_no_loop():
    # b[i, v] = 2 a[i, v] (float4s) and c[i] = 1 within v too: loopy's code stores c once, no loop
    # over v (VectorizabilityChecker: a scalar value into a scalar target is vectorisable)
    program = lp.make_kernel("{[i,v]: 0<=i<n and 0<=v<4}", "b[i, v] = 2.0f * a[i, v] {id=vec}\nc[i] = 1.0f {id=scal}",
                             [lp.GlobalArg("a,b", np.float32, shape=("n", 4)), lp.GlobalArg("c", np.float32, shape=("n",)),
                              lp.ValueArg("n", np.int32)],
                             assumptions=fk.ASSUME, lang_version=(2018, 2), name="vec_and_scalar")
    program = lp.add_inames_to_insn(lp.tag_array_axes(program, "a,b", "c,vec"), "v", "id:scal")
    program = lp.split_iname(lp.tag_inames(program, {"v": "vec"}), "i", 256, outer_tag="g.0", inner_tag="l.0")
    assert "for (" not in lp.generate_code_v2(program).device_code()
    assert own(program, "vec_and_scalar")["loop_iterations_per_thread"] == 0


# -- lines per warp --------------------------------------------------------------------------------
def test_a_warps_lanes_are_placed_from_its_own_first_lane():
    # 24 x 2 group, lid(0) stride 1, lid(1) stride 100 floats, lane 0 of the group at byte 0.
    # Warp 0 (items 0..31): row 0 bytes 0..95 (1 line, 3 sectors) and lanes 0..7 of row 1 at bytes
    # 400..431 (1 line, sectors 12 and 13): 2 lines, 5 sectors. Warp 1 (items 32..47): lanes 8..23 of
    # row 1, first at element 108 = byte 432 = 48 into a line: bytes 48..111 of it, 1 line, 3
    # sectors. Averages 1.5 lines, 4 sectors.
    from gpuperf.features.access import lines_touched

    lines_touched.cache_clear()
    assert lines_touched(((0, 1), (1, 100)), (24, 2, 1), 4, 128, 0, ()) == (1.5, 1, 2)
    assert lines_touched(((0, 1), (1, 100)), (24, 2, 1), 4, 32, 0, ()) == (4.0, 1, 2)


def test_alignment_is_averaged_when_any_lane_pattern_has_several_starts():
    # 48 x 2 group, lid(0) stride 1, lid(1) stride 50 floats, lane 0 at byte 0. Warps 0 and 2 share
    # a pattern (32 consecutive floats) but start at elements 0 and 16 + 50 = 66 (bytes 0 and 264 = 8
    # into a line): 1 line and 2, so that pattern is averaged over 2 starts. Warp 1 (the last pattern,
    # one start) covers elements 32..47 and 50..65: bytes 128..191 and 200..263 of the row, 2 lines.
    # Lines (1 + 2 + 2) / 3; alignment "averaged", not "known".
    from gpuperf.features.access import access_lines
    from gpuperf.features.counts import AccessRecord, EvaluatedAccess

    record = AccessRecord("global", "load", "a", "f32", 4, 1, ((0, 1), (1, 50)))
    lines = access_lines(EvaluatedAccess(record, 1.0, {0: 1, 1: 50}, 0, []), (48, 2, 1))
    assert (lines.lines, lines.alignment) == (pytest.approx(5 / 3), "averaged")


def _accesses(program, name: str) -> dict:  # noqa: ANN001
    from gpuperf.features.access import warp_accesses

    summary = warp_accesses(kernel_from_program(program, name, "test"), {"n": 4096})
    return {a.variable: a for a in summary.accesses}


def test_an_index_affine_only_after_loopys_simplification_is_analysable():
    # out[i] = a[i // 256] in groups of 256: after the split, (256 i_outer + i_inner) // 256 is
    # i_outer; every lane reads the same float: 1 line, 1 sector, and the load is stride0
    program = fk._one_dimensional("block_value", "out[i] = a[i // 256]", "a,out")
    found = _accesses(program, "block_value")
    assert found["a"].analysable and (found["a"].lines, found["a"].sectors) == (1, 1)
    assert own(program, "block_value")["global_loads_f32_stride0"] == 4096


def test_a_local_iname_of_one_value_above_zero_shifts_lane_0():
    # j in [1, 2) on l.1, i in groups of 32 on l.0: out[i] = a[i + j] reads a[32 g + 1 + lid(0)]:
    # bytes 4..131 past a 128-byte boundary, 2 lines and 5 sectors (without j's 1: 1 and 4)
    program = lp.make_kernel("{[i,j]: 0<=i<n and 1<=j<2}", "out[i] = a[i + j]",
                             [lp.GlobalArg("a", np.float32, shape=("n+1",)), lp.GlobalArg("out", np.float32, shape=("n",)),
                              lp.ValueArg("n", np.int32)], assumptions=fk.ASSUME, lang_version=(2018, 2), name="j_from_one")
    program = lp.tag_inames(lp.split_iname(program, "i", 32, outer_tag="g.0", inner_tag="l.0"), {"j": "l.1"})
    found = _accesses(program, "j_from_one")
    assert (found["a"].lines, found["a"].sectors, found["a"].alignment) == (2, 5, "known")


def test_a_lane_index_on_two_axes_of_a_nonlinear_index_adds_both_strides():
    # a[k*k + i, i] of an (n + 16) x n array: not affine in k, affine in the lanes with stride
    # n + 1 = 4097 floats, so each of the 32 lanes has its own line and sector (lane 0 assumed
    # to start a line)
    program = lp.make_kernel("{[i,k]: 0<=i<n and 0<=k<4}", "out[i] = sum(k, a[k*k + i, i])",
                             [lp.GlobalArg("a", np.float32, shape=("n+16", "n")),
                              lp.GlobalArg("out", np.float32, shape=("n",)),
                              lp.ValueArg("n", np.int32)], assumptions=fk.ASSUME, lang_version=(2018, 2), name="diagonal")
    found = _accesses(lp.split_iname(program, "i", 256, outer_tag="g.0", inner_tag="l.0"), "diagonal")
    assert (found["a"].lines, found["a"].sectors, found["a"].alignment) == (32, 32, "assumed")


def test_a_float4_access_is_one_warp_request_per_32_work_items():
    # float4_copy at n = 4096: loopy counts 4 x 4096 elements a direction, but each work-item makes
    # one float4 access: 4096 / 32 = 128 warp requests for the load and 128 for the store
    from gpuperf.features.access import warp_accesses

    found = warp_accesses(get_kernel(f"{KERNELS}:float4_copy"), {"n": 4096}).accesses
    assert sorted((a.direction, a.count, a.requests) for a in found) == [("load", 4 * 4096, 128), ("store", 4 * 4096, 128)]


def _summary_access(variable: str, direction: str, stride, count: float):  # noqa: ANN001, ANN202
    record = NS(space="global", problem=None, variable=variable, direction=direction, instruction="", itemsize=4,
                lanes=None, vector=1, padded_vector=1)
    return NS(record=record, count=count, lane_accesses=count, lid_strides={0: stride}, offset=None, outer=None,
              lanes=None, share=1.0)


def test_a_fractional_lane_stride_is_not_analysable():
    # a stride of half an element (an index like i/2 evaluated as a true quotient) has no lanes to
    # place: not analysable, and said why
    from gpuperf.features.access import access_lines

    lines = access_lines(_summary_access("a", "load", 0.5, 32.0), (32, 1, 1))
    assert not lines.analysable and "whole number" in lines.reason


def test_accesses_counted_zero_times_are_left_out_of_the_warp_summary():
    # an access whose count is 0 at these sizes makes no request: the summary is that of a kernel
    # without global accesses (0 lines, every access analysable), not NaN
    from gpuperf.features.access import warp_access_summary

    summary = warp_access_summary(NS(local=(32, 1, 1), accesses=[_summary_access("a", "load", 1, 0.0)]))
    assert summary.accesses == () and summary.analysable_fraction == 1
    assert (summary.cache_lines_per_warp_access, summary.sectors_per_warp_access) == (0, 0)


def test_sectors_per_request_keeps_loads_and_stores_apart():
    # groups of 32: the load at stride 1 (4 sectors a request), the store at stride 2 (8 sectors),
    # each 3200 times, 100 requests: loads 4 sectors a request, stores 8, no atomics: NaN
    from gpuperf.features.access import sectors_per_request, warp_access_summary

    summary = warp_access_summary(NS(local=(32, 1, 1), accesses=[_summary_access("a", "load", 1, 3200.0),
                                                                  _summary_access("b", "store", 2, 3200.0)]))
    assert sectors_per_request(summary, "load") == 4 and sectors_per_request(summary, "store") == 8
    assert math.isnan(sectors_per_request(summary, "atomic"))


def test_each_pass_of_a_tied_loop_is_placed_at_its_own_value():
    # groups of 32 lanes a; loop f < 2 tied to them (a + 40 f <= 47): pass f = 0 on all 32 lanes,
    # pass f = 1 on lanes 0..7. x[80 g + 40 f + a]: groups 320 bytes apart, lane 0 at 0 or 64 bytes
    # into a line; pass 0 moves 128 bytes (1 line from 0, 2 from 64: 1.5; 4 sectors), pass 1 32 bytes
    # from 160 more, 32 or 96 into a line (1 line, 1 sector). Averages 1.25 lines, 2.5 sectors;
    # 64 groups x 2 passes = 128 requests. Averaging each pass over both values of f too would give
    # pass 0 lane-0 offsets 0, 32, 64 and 96 bytes (1.75 lines): 1.375.
    program = lp.make_kernel("{[g,f,a]: 0<=g<n and 0<=f<2 and 0<=a<32 and a + 40*f <= 47}",
                             "out[g*80 + 40*f + a] = x[g*80 + 40*f + a]",
                             [lp.GlobalArg("x,out", np.float32, shape=("80*n",)), lp.ValueArg("n", np.int32)],
                             assumptions="n>=4", lang_version=(2018, 2), name="two_passes")
    program = lp.tag_inames(program, {"g": "g.0", "a": "l.0"})
    from gpuperf.features.access import warp_accesses

    found = warp_accesses(kernel_from_program(program, "two_passes", "test"), {"n": 64}).accesses
    assert [(a.variable, a.lines, a.sectors, a.requests) for a in found] == [("out", 1.25, 2.5, 128), ("x", 1.25, 2.5, 128)]


# -- memory spaces and synchronization -------------------------------------------------------------
def test_a_global_temporary_is_global_traffic():
    # t[i] = 2 a[i]; out[i] = t[i] with t a global temporary: per work-item a and t loaded, t and
    # out stored: 2 global loads and 2 global stores
    from loopy.kernel.data import AddressSpace

    program = lp.make_kernel("{[i]: 0<=i<n}", "t[i] = 2.0f * a[i] {id=w}\nout[i] = t[i] {dep=w}",
                             [lp.GlobalArg("a,out", np.float32, shape=("n",)), lp.ValueArg("n", np.int32),
                              lp.TemporaryVariable("t", np.float32, shape=("n",), address_space=AddressSpace.GLOBAL)],
                             assumptions=fk.ASSUME, lang_version=(2018, 2), name="global_temporary")
    counted = own(lp.split_iname(program, "i", 256, outer_tag="g.0", inner_tag="l.0"), "global_temporary")
    assert (counted["global_loads_per_thread"], counted["global_stores_per_thread"]) == (2, 2)


def test_explicit_barriers_count_once_each_and_once_per_trip_of_their_loop():
    # no local memory, two written local barriers: one before the loop (1) and one inside k < 4
    # (4): 5 per work-item, one kernel launch
    source = """
    out[i] = 2.0f * a[i] {id=w}
    ... lbarrier {id=b, dep=w}
    for k
      out2[k*n + i] = a[i] {id=r, dep=b}
      ... lbarrier {id=b2, dep=r}
    end
    """
    program = lp.make_kernel("{[i,k]: 0<=i<n and 0<=k<4}", source,
                             [lp.GlobalArg("a,out", np.float32, shape=("n",)),
                              lp.GlobalArg("out2", np.float32, shape=("4*n",)),
                              lp.ValueArg("n", np.int32)], assumptions=fk.ASSUME, lang_version=(2018, 2), name="barriers",
                             seq_dependencies=False)
    counted = own(lp.split_iname(program, "i", 256, outer_tag="g.0", inner_tag="l.0"), "barriers")
    assert (counted["barriers_local"], counted["barriers_global"], counted["kernel_launches"]) == (5, 0, 1)
    assert counted["barriers_per_thread"] == 5


# -- domains ---------------------------------------------------------------------------------------
def test_a_strided_loop_counts_its_values_not_its_span():
    # k in [0, 16) with k mod 2 = 0 takes 8 values: a[k n + i] loaded 8 times per work-item, 8 loop
    # iterations and 8 adds of the sum; counted on the fast path (the domain read whole)
    from gpuperf.features.counts import symbolic_counts

    program = lp.make_kernel("{[i,k]: 0<=i<n and 0<=k<16 and k mod 2 = 0}", "out[i] = sum(k, a[k*n + i])",
                             [lp.GlobalArg("a", np.float32, shape=("16*n",)), lp.GlobalArg("out", np.float32, shape=("n",)),
                              lp.ValueArg("n", np.int32)], assumptions=fk.ASSUME, lang_version=(2018, 2), name="even_k")
    kernel = kernel_from_program(lp.split_iname(program, "i", 256, outer_tag="g.0", inner_tag="l.0"), "even_k", "test")
    assert symbolic_counts(kernel).method == "fast"
    counted = extract_features(kernel, {"n": 4096})
    assert counted["global_loads_per_thread"] == counted["loop_iterations_per_thread"] == 8
    assert counted["flops_per_thread"] == 8


# -- loops, branches and local memory --------------------------------------------------------------
def test_a_loop_of_one_trip_is_no_loop():
    # sum over k in [0, 1): loopy's code sets k = 0 and runs the body once, without a loop
    program = lp.make_kernel("{[i,k]: 0<=i<n and 0<=k<1}", "out[i] = sum(k, a[k*n + i])",
                             [lp.GlobalArg("a,out", np.float32, shape=("n",)), lp.ValueArg("n", np.int32)],
                             assumptions=fk.ASSUME, lang_version=(2018, 2), name="one_trip")
    program = lp.split_iname(program, "i", 256, outer_tag="g.0", inner_tag="l.0")
    assert "for (" not in lp.generate_code_v2(program).device_code()
    counted = own(program, "one_trip")
    assert (counted["loop_iterations_per_thread"], counted["global_loads_per_thread"]) == (0, 1)


def test_two_if_expressions_in_one_instruction_are_two_branches():
    # if(a[i] > 0, 1, 2) + if(a[i] < 5, 3, 4): two selections per work-item, no guard
    program = fk._one_dimensional("two_selects", "out[i] = if(a[i] > 0, 1.0f, 2.0f) + if(a[i] < 5, 3.0f, 4.0f)", "a,out")
    assert own(program, "two_selects")["ifs_per_thread"] == 2


def test_a_local_float3_array_takes_a_float4s_room():
    # __local float3 t[256]: OpenCL stores a float3 in 16 bytes, 256 x 16 = 4096 bytes a group
    from loopy.kernel.data import AddressSpace

    source = "t[i_inner, v] = a[i, v] {id=w}\nb[i, v] = t[255 - i_inner, v] {dep=w}"
    program = lp.make_kernel("{[i,v]: 0<=i<n and 0<=v<3}", source,
                             [lp.GlobalArg("a,b", np.float32, shape=("n", 3)), lp.ValueArg("n", np.int32),
                              lp.TemporaryVariable("t", np.float32, shape=(256, 3), address_space=AddressSpace.LOCAL)],
                             assumptions=fk.ASSUME, lang_version=(2018, 2), name="local_float3", seq_dependencies=False)
    program = lp.split_iname(program, "i", 256, outer_tag="g.0", inner_tag="l.0")
    program = lp.tag_inames(lp.tag_array_axes(program, "a,b,t", "c,vec"), {"v": "vec"})
    assert "__local float3 t[256]" in lp.generate_code_v2(program).device_code()
    assert own(program, "local_float3")["local_memory_bytes"] == 4096


def test_a_tied_local_iname_starting_above_zero_masks_lanes_from_its_first_value():
    # a in [2, 34) on l.0 (lane = a - 2), f < 2 tied to it (a + 40 f <= 49): pass 0 on all 32
    # lanes, pass 1 on a = 2..9, lanes 0..7: 40 of the 32 work-items' accesses, 1.25 a work-item.
    # x[80 g + 40 f + a]: lane 0 at byte 320 g + 8, 8 or 72 into a line; pass 0's 128 bytes span 2
    # lines and 5 sectors either way; pass 1's 32 bytes start 40 or 104 into a line: 1 or 2 lines,
    # 2 sectors. Averages (2 + 1.5) / 2 = 1.75 lines, (5 + 2) / 2 = 3.5 sectors.
    program = lp.make_kernel("{[g,f,a]: 0<=g<n and 0<=f<2 and 2<=a<34 and a + 40*f <= 49}",
                             "out[g*80 + 40*f + a] = x[g*80 + 40*f + a]",
                             [lp.GlobalArg("x,out", np.float32, shape=("80*n",)), lp.ValueArg("n", np.int32)],
                             assumptions="n>=4", lang_version=(2018, 2), name="passes_from_two")
    counted = own(lp.tag_inames(program, {"g": "g.0", "a": "l.0"}), "passes_from_two", {"n": 64})
    assert (counted["global_loads_per_thread"], counted["global_stores_per_thread"]) == (1.25, 1.25)
    assert (counted["cache_lines_per_warp_access"], counted["sectors_per_warp_access"]) == (1.75, 3.5)


def test_a_tied_domain_of_more_than_max_points_gives_no_mask():
    # lanes a, b (32 x 32) tied to j < 80 by a + b <= j + 40: about 79,000 points (over
    # MAX_POINTS = 65,536) though only 80 combinations of j: not enumerated, every lane kept
    from gpuperf.features.domains import Domains
    from gpuperf.features.lanes import MAX_POINTS, lane_mask

    domain = "{[g,j,a,b]: 0<=g<n and 0<=j<80 and 0<=a<32 and 0<=b<32 and a + b <= j + 40}"
    program = lp.make_kernel(domain, "out[g, a, b] = out[g, a, b] + x[g, j]",
                             [lp.GlobalArg("x", np.float32, shape=("n", 80)),
                              lp.GlobalArg("out", np.float32, shape=("n", 32, 32)), lp.ValueArg("n", np.int32)],
                             lang_version=(2018, 2), name="many_points")
    program = lp.tag_inames(program, {"g": "g.0", "a": "l.0", "b": "l.1"})
    assert MAX_POINTS == 65536
    assert lane_mask(Domains(program.default_entrypoint), frozenset(["g", "j", "a", "b"]), ["g", "j"]) is None


def test_kernels_differing_only_in_a_shared_index_get_their_own_barriers():
    # t[lid] = a[i], then b[i] = t[lid]: each work-item reads back its own element, no barrier;
    # b[i] = t[255 - lid] reads another's: one local barrier. Counted one after the other (the
    # barrier sites are remembered per kernel structure), each keeps its own: 0, then 1
    from loopy.kernel.data import AddressSpace

    def build(read: str):  # noqa: ANN202
        program = lp.make_kernel("{[i]: 0<=i<n}", f"t[i_inner] = a[i] {{id=w}}\nb[i] = t[{read}] {{dep=w}}",
                                 [lp.GlobalArg("a,b", np.float32, shape=("n",)), lp.ValueArg("n", np.int32),
                                  lp.TemporaryVariable("t", np.float32, shape=(256,), address_space=AddressSpace.LOCAL)],
                                 assumptions=fk.ASSUME, lang_version=(2018, 2), name="shared", seq_dependencies=False)
        return lp.split_iname(program, "i", 256, outer_tag="g.0", inner_tag="l.0")

    assert [own(build(read), "shared")["barriers_local"] for read in ("i_inner", "255 - i_inner")] == [0, 1]


def test_the_launch_takes_the_most_groups_any_instruction_needs_whatever_the_inames_names():
    # b over i in groups of 128 (n/128 = 32 groups at n = 4096), c over i2 in groups of 256 (16):
    # the launch has the larger, 32 groups of 256 work-items, though i2_outer sorts first
    program = lp.make_kernel("{[i,i2]: 0<=i,i2<n}", "b[i] = 2.0f*a[i]\nc[i2] = 3.0f*a[i2]",
                             [lp.GlobalArg("a,b,c", np.float32, shape="n"), lp.ValueArg("n", np.int32)],
                             assumptions=fk.ASSUME, lang_version=(2018, 2), name="groups_by_name")
    program = lp.split_iname(program, "i", 128, outer_tag="g.0", inner_tag="l.0")
    counted = own(lp.split_iname(program, "i2", 256, outer_tag="g.0", inner_tag="l.0"), "groups_by_name")
    assert (counted["work_groups"], counted["threads"], counted["local_size_0"]) == (32, 8192, 256)


def test_a_loop_outside_the_local_ids_runs_on_every_work_item():
    # s[4 g + k] = 1 for k < 4 within the group index g only: every one of the group's 256
    # work-items runs the 4 iterations (loopy's redundant work), 4 per work-item, not 4 per group
    source = "out[256*g + l] = a[256*g + l] {id=x}\ns[4*g + k] = 1.0f {id=y, inames=g:k}"
    program = lp.make_kernel("{[g,l,k]: 0<=g<n and 0<=l<256 and 0<=k<4}", source,
                             [lp.GlobalArg("a,out", np.float32, shape=("256*n",)),
                              lp.GlobalArg("s", np.float32, shape=("4*n",)),
                              lp.ValueArg("n", np.int32)], assumptions="n>=1", lang_version=(2018, 2), name="group_loop",
                             seq_dependencies=False)
    counted = own(lp.tag_inames(program, {"g": "g.0", "l": "l.0"}), "group_loop", {"n": 16})
    assert counted["threads"] == 16 * 256 and counted["loop_iterations_per_thread"] == 4


def test_a_loop_nest_counts_its_busiest_instruction_whatever_the_inames_names():
    # partial_lane_in_loop with the 16-lane index named h (sorting before i_inner): the k loop
    # (8 trips) runs on all 256 work-items for the full copy, though the part runs on 16 lanes:
    # 8 iterations per work-item, not 8 x 16 / 256
    program = lp.make_kernel("{[i,h,k]: 0<=i<n and 0<=h<16 and 0<=k<8}",
                             """
                             for k
                               out[k*n + i] = a[k*n + i] {id=full}
                               head[k*n + i_outer*16 + h] = a[k*n + i_outer*256 + h] {id=part}
                             end
                             """,
                             [lp.GlobalArg("a,out,head", np.float32, shape=("8*n",)), lp.ValueArg("n", np.int32)],
                             assumptions=fk.ASSUME, lang_version=(2018, 2), name="part_named_h")
    program = lp.split_iname(program, "i", 256, outer_tag="g.0", inner_tag="l.0")
    program = lp.tag_inames(lp.add_inames_to_insn(program, "i_outer", "id:part"), {"h": "l.0"})
    assert own(program, "part_named_h")["loop_iterations_per_thread"] == 8


def test_local_arrays_sharing_a_storage_take_the_largest_ones_room():
    # t1 (256 floats) and t2 (128 floats) live in one storage buf: loopy declares
    # __local float buf[256], 1024 bytes a group (not 1024 + 512 + 1024)
    from loopy.kernel.data import AddressSpace

    source = """
    t1[i_inner] = a[i] {id=w1}
    b[i] = t1[255 - i_inner] {id=r1, dep=w1}
    t2[i_inner % 128] = a[i] {id=w2, dep=r1}
    c[i] = t2[127 - i_inner % 128] {id=r2, dep=w2}
    """
    program = lp.make_kernel("{[i]: 0<=i<n}", source,
                             [lp.GlobalArg("a,b,c", np.float32, shape=("n",)), lp.ValueArg("n", np.int32),
                              lp.TemporaryVariable("t1", np.float32, shape=(256,), address_space=AddressSpace.LOCAL,
                                                   base_storage="buf"),
                              lp.TemporaryVariable("t2", np.float32, shape=(128,), address_space=AddressSpace.LOCAL,
                                                   base_storage="buf")],
                             assumptions=fk.ASSUME, lang_version=(2018, 2), name="aliases", seq_dependencies=False)
    program = lp.split_iname(program, "i", 256, outer_tag="g.0", inner_tag="l.0")
    program = lp.allocate_temporaries_for_base_storage(program)
    assert "__local float buf[256]" in lp.generate_code_v2(program).device_code()
    assert own(program, "aliases")["local_memory_bytes"] == 1024


def test_a_program_of_two_entry_points_is_left_to_loopys_statistics():
    # two kernels merged into one program: the fast path does not pick one of them
    from gpuperf.features.domains import Unsupported
    from gpuperf.features.fastcount import fast_counts

    def build(name: str):  # noqa: ANN202
        program = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = 2.0f*a[i]",
                                 [lp.GlobalArg("a,b", np.float32, shape="n"), lp.ValueArg("n", np.int32)],
                                 lang_version=(2018, 2), name=name)
        return lp.split_iname(program, "i", 256, outer_tag="g.0", inner_tag="l.0")

    with pytest.raises(Unsupported, match="several entry points"):
        fast_counts(lp.merge([build("first"), build("second")]))


def test_a_power_of_a_power_keeps_its_value_once_compiled():
    """(n**2)**3 is n**6 on every call: the compiled form (from the third call on) once read the
    text n**2**3 as n**(2**3)."""
    from gpuperf.features.expressions import Evaluator
    n = prim.Variable("n")
    evaluator = Evaluator([prim.Power(prim.Power(n, 2), 3), prim.Power(n, prim.Power(2, 3))], ["n"])
    assert [evaluator({"n": 2}) for _ in range(4)] == [(64, 256)] * 4
