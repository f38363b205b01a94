"""Small loopy kernels whose static features are worked out by hand in tests/test_features_hand_counts.py."""

import loopy as lp
import numpy as np

ASSUME = "n mod 256 = 0 and n>=256"


def scatter():
    """out[idx[i]] = a[i]: two global loads (a, idx) and one store per work-item."""
    k = lp.make_kernel("{[i]: 0<=i<n}", "out[idx[i]] = a[i]",
                       [lp.GlobalArg("a", np.float32, shape=("n",)), lp.GlobalArg("idx", np.int32, shape=("n",)),
                        lp.GlobalArg("out", np.float32, shape=("n",)), lp.ValueArg("n", np.int32)],
                       assumptions=ASSUME, lang_version=(2018, 2), name="scatter")
    return lp.split_iname(k, "i", 256, outer_tag="g.0", inner_tag="l.0")


def _partial_lane(part_load: str, name: str):
    """out[i] = a[i] over groups of 256, and a part on lanes 0..15 of each group loading ``part_load``."""
    k = lp.make_kernel("{[i,j]: 0<=i<n and 0<=j<16}",
                       f"""
                       out[i] = a[i] {{id=full}}
                       head[i_outer*16 + j] = {part_load} {{id=part}}
                       """,
                       [lp.GlobalArg("a,c", np.float32, shape=("n",)), lp.GlobalArg("out", np.float32, shape=("n",)),
                        lp.GlobalArg("head", np.float32, shape=("n//16",)), lp.ValueArg("n", np.int32)],
                       assumptions=ASSUME, lang_version=(2018, 2), name=name)
    k = lp.split_iname(k, "i", 256, outer_tag="g.0", inner_tag="l.0")
    k = lp.add_inames_to_insn(k, "i_outer", "id:part")
    return lp.tag_inames(k, {"j": "l.0"})


def partial_lane():
    """A second l.0 index over 16 of 256 lanes: every work-item evaluates one guard."""
    return _partial_lane("a[i_outer*256 + j]", "partial_lane")


def partial_lane_uniform():
    """As partial_lane, the part's load the same for every lane (c[i_outer], counted per sub-group)."""
    return _partial_lane("c[i_outer]", "partial_lane_uniform")


def partial_lane_in_loop():
    """The same inside an 8-trip sequential loop: 8 loop iterations and 8 guards per work-item."""
    k = lp.make_kernel("{[i,j,k]: 0<=i<n and 0<=j<16 and 0<=k<8}",
                       """
                       for k
                         out[k*n + i] = a[k*n + i] {id=full}
                         head[k*n + i_outer*16 + j] = a[k*n + i_outer*256 + j] {id=part}
                       end
                       """,
                       [lp.GlobalArg("a", np.float32, shape=("8*n",)), lp.GlobalArg("out", np.float32, shape=("8*n",)),
                        lp.GlobalArg("head", np.float32, shape=("8*n",)), lp.ValueArg("n", np.int32)],
                       assumptions=ASSUME, lang_version=(2018, 2), name="partial_lane_in_loop")
    k = lp.split_iname(k, "i", 256, outer_tag="g.0", inner_tag="l.0")
    k = lp.add_inames_to_insn(k, "i_outer", "id:part")
    return lp.tag_inames(k, {"j": "l.0"})


def _row_sums(outer: str, inner: str, name: str):
    """out[i] = the sum of a row-major 64 x 64 slab, loop over rows outside, over columns inside."""
    k = lp.make_kernel(f"{{[i, {outer}, {inner}]: 0<=i<n and 0<={outer}<64 and 0<={inner}<64}}",
                       f"out[i] = sum(({outer}, {inner}), a[i, {outer}, {inner}])",
                       [lp.GlobalArg("a", np.float32, shape=("n", 64, 64)), lp.GlobalArg("out", np.float32, shape=("n",)),
                        lp.ValueArg("n", np.int32)], assumptions=ASSUME, name=name, lang_version=(2018, 2))
    k = lp.split_iname(k, "i", 256, outer_tag="g.0", inner_tag="l.0")
    return lp.prioritize_loops(k, f"{outer},{inner}")


def row_sums_r_c():
    return _row_sums("r", "c", "row_sums_r_c")


def row_sums_a_b():
    return _row_sums("a0", "b0", "row_sums_a_b")


def runtime_stride():
    """out[i] = a[s*i], the stride s an integer argument the domains never name."""
    k = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = a[s*i]",
                       [lp.GlobalArg("a", np.float32, shape=("s*n",)), lp.GlobalArg("out", np.float32, shape=("n",)),
                        lp.ValueArg("n", np.int32), lp.ValueArg("s", np.int32)],
                       assumptions=ASSUME, lang_version=(2018, 2), name="runtime_stride")
    return lp.split_iname(k, "i", 256, outer_tag="g.0", inner_tag="l.0")


def copy_groups_of(width: int, height: int = 1):
    """b[i] = a[i] in work-groups of width x height work-items (n a multiple of the group)."""
    k = lp.make_kernel("{[i, j]: 0<=i<n and 0<=j<m}", "b[j, i] = a[j, i]",
                       [lp.GlobalArg("a,b", np.float32, shape="m, n"), "..."], lang_version=(2018, 2), name="copy_groups")
    k = lp.split_iname(k, "i", width, outer_tag="g.0", inner_tag="l.0")
    return lp.split_iname(k, "j", height, outer_tag="g.1", inner_tag="l.1")


def copy_48():
    return copy_groups_of(48)


def copy_24x4():
    return copy_groups_of(24, 4)


def copy_24x2():
    return copy_groups_of(24, 2)


def copy_20x4():
    return copy_groups_of(20, 4)


def squares_offset():
    """out[k, i] = a[k*k + i] over k < 4: the lanes read consecutive floats from a nonlinear start."""
    k = lp.make_kernel("{[i, k]: 0<=i<n and 0<=k<4}", "out[k, i] = a[k*k + i]",
                       [lp.GlobalArg("a", np.float32, shape=("n + 9",)), lp.GlobalArg("out", np.float32, shape=("4, n")),
                        "..."], assumptions=ASSUME, lang_version=(2018, 2), name="squares_offset")
    return lp.split_iname(k, "i", 256, outer_tag="g.0", inner_tag="l.0")


def lane_squared():
    """out[i] = a[i*i]: the lanes themselves are nonlinear, so not analysable."""
    k = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = a[i*i]",
                       [lp.GlobalArg("a", np.float32, shape=("n*n",)), lp.GlobalArg("out", np.float32, shape=("n",)),
                        "..."], assumptions=ASSUME, lang_version=(2018, 2), name="lane_squared")
    return lp.split_iname(k, "i", 256, outer_tag="g.0", inner_tag="l.0")


def data_bound():
    """Each work-item sums the first lens[i] entries of a: the loop bound is read from memory."""
    knl = lp.make_kernel(["{[i]: 0<=i<n}", "[ln] -> {[j]: 0<=j<ln}"],
                         "for i\n <int32> ln = lens[i]\n b[i] = sum(j, a[j])\nend",
                         [lp.GlobalArg("a", np.float32, shape="n"), lp.GlobalArg("lens", np.int32, shape="n"),
                          lp.GlobalArg("b", np.float32, shape="n"), lp.ValueArg("n", np.int32)],
                         assumptions=ASSUME, lang_version=(2018, 2), name="data_bound")
    return lp.split_iname(knl, "i", 256, outer_tag="g.0", inner_tag="l.0")


def two_group_counts():
    """b over i in work-groups of 256, c over i2 in groups of 128: the launch has n/128 groups of
    256 work-items, and both hoisted guards are evaluated by every work-item of every group."""
    knl = lp.make_kernel("{[i,i2]: 0<=i,i2<n}", "b[i] = 2.0f*a[i]\nc[i2] = 3.0f*a[i2]",
                         [lp.GlobalArg("a,b,c", np.float32, shape="n"), lp.ValueArg("n", np.int32)],
                         assumptions=ASSUME, lang_version=(2018, 2), name="two_group_counts")
    knl = lp.split_iname(knl, "i", 256, outer_tag="g.0", inner_tag="l.0")
    return lp.split_iname(knl, "i2", 128, outer_tag="g.0", inner_tag="l.0")


def guarded_sibling_loops():
    """n need not fill the last group: one guard around the whole body, sequential loops and all
    (loopy hoists it out of every loop whose instructions all need it)."""
    k = lp.make_kernel("{[i,k,j1,j2]: 0<=i<n and 0<=k<3 and 0<=j1<5 and 0<=j2<7}",
                       """
                       <float32> s = 0  {id=s0}
                       for k
                         <float32> u = a[i]  {id=u, dep=s0}
                         for j1
                           s = s + u  {id=s1, dep=u}
                         end
                         for j2
                           s = s * u  {id=s2, dep=s1}
                         end
                       end
                       out[i] = s  {dep=s2}
                       """,
                       [lp.GlobalArg("a", np.float32, shape=("n",)), lp.GlobalArg("out", np.float32, shape=("n",)),
                        lp.ValueArg("n", np.int32)],
                       assumptions="n >= 1", lang_version=(2018, 2), name="guarded_sibling_loops")
    return lp.add_inames_for_unused_hw_axes(lp.split_iname(k, "i", 128, outer_tag="g.0", inner_tag="l.0"))


def guarded_reduction():
    """The same guard once per work-item for a reduction into a temporary (loopy preprocesses it)."""
    k = lp.make_kernel("{[i,k]: 0<=i<n and 0<=k<7}",
                       """
                       <> t = sum(k, a[k*n + i])
                       out[i] = t
                       """,
                       [lp.GlobalArg("a", np.float32, shape=("7*n",)), lp.GlobalArg("out", np.float32, shape=("n",)),
                        lp.ValueArg("n", np.int32)],
                       assumptions="n >= 1", lang_version=(2018, 2), name="guarded_reduction")
    return lp.split_iname(k, "i", 128, outer_tag="g.0", inner_tag="l.0")


def guarded_bound_in_loop():
    """A parallel bound that involves the sequential loop (i < n - k): loopy still puts the one guard
    outside the loop and folds the rest of the bound into the loop's limit."""
    k = lp.make_kernel("{[k,i]: 0<=k<4 and 0<=i<n-k}",
                       """
                       for k
                         out[k*n + i] = a[k*n + i] {id=x}
                       end
                       """,
                       [lp.GlobalArg("a", np.float32, shape=("4*n",)), lp.GlobalArg("out", np.float32, shape=("4*n",)),
                        lp.ValueArg("n", np.int32)],
                       assumptions="n >= 8", lang_version=(2018, 2), name="guarded_bound_in_loop")
    return lp.split_iname(k, "i", 128, outer_tag="g.0", inner_tag="l.0")


def tile_fetch():
    """out[i] = a[i] + a[i+1] + a[i+2], each group's 18-float tile of a prefetched into local
    memory by its 16 work-items: one fetch pass over all 16 lanes, a second over lanes 0 and 1."""
    k = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = a[i] + a[i+1] + a[i+2]",
                       [lp.GlobalArg("a", np.float32, shape=("n + 2",)), lp.GlobalArg("out", np.float32, shape=("n",)),
                        lp.ValueArg("n", np.int32)],
                       assumptions=ASSUME, lang_version=(2018, 2), name="tile_fetch")
    k = lp.split_iname(k, "i", 16, outer_tag="g.0", inner_tag="l.0")
    return lp.add_prefetch(k, "a", ["i_inner"], fetch_outer_inames="i_outer", default_tag="l.auto")


def tile_fetch_any_n():
    """tile_fetch without n known to divide the group: the fetch loop's two passes and the lanes of
    each are ``min`` expressions of n (a tile clipped at the array's end)."""
    k = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = a[i] + a[i+1] + a[i+2]",
                       [lp.GlobalArg("a", np.float32, shape=("n + 2",)), lp.GlobalArg("out", np.float32, shape=("n",)),
                        lp.ValueArg("n", np.int32)],
                       assumptions="n>=1", lang_version=(2018, 2), name="tile_fetch_any_n")
    k = lp.split_iname(k, "i", 16, outer_tag="g.0", inner_tag="l.0")
    return lp.add_prefetch(k, "a", ["i_inner"], fetch_outer_inames="i_outer", default_tag="l.auto")



def lanes_from_two():
    """out[i] = a[i] for 2 <= i < 10 in each group of 8 work-items, 40 floats apart: lane 0 reads
    element 2 of its group's block (local id 0 is i = 2)."""
    k = lp.make_kernel("{[g, i]: 0<=g<n and 2<=i<10}", "out[g*40 + i] = a[g*40 + i]",
                       [lp.GlobalArg("a,out", np.float32, shape=("n*40",)), lp.ValueArg("n", np.int32)],
                       lang_version=(2018, 2), name="lanes_from_two")
    return lp.tag_inames(k, {"g": "g.0", "i": "l.0"})


def one_scattered_load():
    """out[i] = sum over 15 rows of a[k, i] (coalesced, one line per warp request) + s[32 i] (32 lines:
    each lane 128 bytes from the next): 15 + 32 + 1 (the store) lines over 17 requests."""
    k = lp.make_kernel("{[i,k]: 0<=i<n and 0<=k<15}",
                       "out[i] = sum(k, a[k, i]) + s[32*i]",
                       [lp.GlobalArg("a", np.float32, shape=(15, "n")), lp.GlobalArg("s", np.float32, shape=("32*n",)),
                        lp.GlobalArg("out", np.float32, shape=("n",)), lp.ValueArg("n", np.int32)],
                       assumptions=ASSUME, lang_version=(2018, 2), name="one_scattered_load")
    return lp.split_iname(k, "i", 256, outer_tag="g.0", inner_tag="l.0")


def _by_vectors(name: str, tag: str, vector_arrays: str | None, width: int = 4,
                value: str = "2.0f * a[i, v]"):
    """b[i, v] = ``value`` over n rows of ``width`` floats, v tagged ``tag``; the arrays named in
    ``vector_arrays`` have their second axis tagged ``vec``."""
    k = lp.make_kernel(f"{{[i,v]: 0<=i<n and 0<=v<{width}}}", f"b[i, v] = {value}",
                       [lp.GlobalArg("a,b", np.float32, shape=("n", width)), lp.ValueArg("n", np.int32)],
                       assumptions=ASSUME, lang_version=(2018, 2), name=name)
    if vector_arrays is not None:
        k = lp.tag_array_axes(k, vector_arrays, "c,vec")
    k = lp.tag_inames(k, {"v": tag})
    return lp.split_iname(k, "i", 256, outer_tag="g.0", inner_tag="l.0")


def float4_copy():
    """One float4 load and one float4 store per work-item, side by side across the lanes."""
    return _by_vectors("float4_copy", "vec", "a,b")


def unrolled_fours():
    """The same four floats as four scalar loads and stores, each 16 bytes from the next lane's."""
    return _by_vectors("unrolled_fours", "unr", None)


def _accumulate(name: str, atomic: bool):
    """acc[i] = acc[i] + a[i], as an atomic update or a plain read-modify-write."""
    acc = lp.GlobalArg("acc", lp.types.to_loopy_type(np.float32, for_atomic=atomic), shape=("n",))
    k = lp.make_kernel("{[i]: 0<=i<n}", "acc[i] = acc[i] + a[i]" + (" {atomic}" if atomic else ""),
                       [acc, lp.GlobalArg("a", np.float32, shape=("n",)), lp.ValueArg("n", np.int32)],
                       assumptions=ASSUME, lang_version=(2018, 2), name=name)
    return lp.split_iname(k, "i", 256, outer_tag="g.0", inner_tag="l.0")


def atomic_sum():
    return _accumulate("atomic_sum", True)  # not atomic_add, an OpenCL C built-in function


def plain_add():
    return _accumulate("plain_add", False)


def float3_copy():
    """float3s side by side (stored as float4s: 16 bytes apart), one load and one store per work-item."""
    return _by_vectors("float3_copy", "vec", "a,b", width=3)


def float4_into_plain():
    """a's float4 written into a plain (n, 4) array: loopy cannot vectorise it and unrolls v."""
    return _by_vectors("float4_into_plain", "vec", "a")


def float4_sqrt():
    """sqrt of a float4 axis: a function call loopy does not vectorise, so it unrolls v."""
    return _by_vectors("float4_sqrt", "vec", "a,b", value="sqrt(a[i, v])")


def atomic_set_then_add():
    """acc[i] = 0 {atomic=init}, then acc[i] = acc[i] + a[i] {atomic}: two atomic stores per work-item."""
    acc = lp.GlobalArg("acc", lp.types.to_loopy_type(np.float32, for_atomic=True), shape=("n",))
    k = lp.make_kernel("{[i]: 0<=i<n}", """
                       acc[i] = 0 {id=init, atomic=init}
                       acc[i] = acc[i] + a[i] {id=add, dep=init, atomic}
                       """, [acc, lp.GlobalArg("a", np.float32, shape=("n",)), lp.ValueArg("n", np.int32)],
                       assumptions=ASSUME, lang_version=(2018, 2), name="atomic_set_then_add")
    return lp.split_iname(k, "i", 256, outer_tag="g.0", inner_tag="l.0")


def float16_copy():
    """float16s side by side: each lane moves 64 bytes, two sectors of its own."""
    return _by_vectors("float16_copy", "vec", "a,b", width=16)


def narrow_rows():
    """b[i, j] = a[i, j] in 8 x 16 work-groups, j (contiguous) on local axis 0: a warp reads 4 rows of
    8 floats, 32 bytes each, one sector each."""
    k = lp.make_kernel("{[i,j]: 0<=i,j<n}", "b[i, j] = a[i, j]",
                       [lp.GlobalArg("a,b", np.float32, shape=("n", "n")), lp.ValueArg("n", np.int32)],
                       assumptions=ASSUME, lang_version=(2018, 2), name="narrow_rows")
    k = lp.split_iname(k, "j", 8, outer_tag="g.0", inner_tag="l.0")
    return lp.split_iname(k, "i", 16, outer_tag="g.1", inner_tag="l.1")


def _one_dimensional(name: str, instructions: str, arrays: str, group: int = 256):
    """``instructions`` over i < n on float32 ``arrays``, i split into work-groups of ``group``."""
    k = lp.make_kernel("{[i]: 0<=i<n}", instructions,
                       [lp.GlobalArg(arrays, np.float32, shape=("n",)), lp.ValueArg("n", np.int32)],
                       assumptions=f"n mod {group} = 0 and n>={group}", lang_version=(2018, 2), name=name)
    return lp.split_iname(k, "i", group, outer_tag="g.0", inner_tag="l.0")


def squared_index_copy():
    """b[i*i mod n] = a[i*i mod n]: no access gpuperf can analyse, so no lines or sectors are known."""
    return _one_dimensional("squared_index_copy", "b[(i*i) % n] = a[(i*i) % n]", "a,b")


def predicated_store():
    """out[i] = 1 where a[i] > 0: a's only read is in the instruction's predicate."""
    return _one_dimensional("predicated_store", "if a[i] > 0\n  out[i] = 1.0f\nend", "a,out")


def selected_store():
    """The same test as an if-expression: out[i] = if(a[i] > 0, 1, out[i])."""
    return _one_dimensional("selected_store", "out[i] = if(a[i] > 0, 1.0f, out[i])", "a,out")


def wide_group_copy():
    """b[i] = a[i] in work-groups of 2048: more work-items than an NVIDIA block may have."""
    return _one_dimensional("wide_group_copy", "b[i] = a[i]", "a,b", group=2048)


def _lanes_by_size(name: str, domain: str, index: str, shape: str, params: str, assumptions: str):
    k = lp.make_kernel(domain, f"out[{index}] = a[{index}]",
                       [lp.GlobalArg("a,out", np.float32, shape=(shape,)), lp.ValueArg(params, np.int32)],
                       assumptions=assumptions, lang_version=(2018, 2), name=name)
    return lp.tag_inames(k, {"g": "g.0", "x": "l.0"})


def wavefront():
    """out = a over m passes k of 32 lanes, lane x taking part once k >= x (a loop whose length is a size)."""
    return _lanes_by_size("wavefront", "{[g,x,k]: 0<=g<n and 0<=x<32 and 0<=k<m and x<=k}", "g*32*m + k*32 + x",
                          "n*32*m", "n,m", "n>=1 and m>=1")


def lu_columns():
    """As wavefront with lane x taking part while k <= x (the columns left of an LU step's pivot)."""
    return _lanes_by_size("lu_columns", "{[g,x,k]: 0<=g<n and 0<=x<32 and 0<=k<m and k<=x}", "g*32*m + k*32 + x",
                          "n*32*m", "n,m", "n>=1 and m>=1")


def triangle_rows():
    """Group g copies row g of a lower-triangular n x 64 matrix: lanes x <= g."""
    return _lanes_by_size("triangle_rows", "{[g,x]: 0<=g<n and 0<=x<64 and x<=g}", "64*g + x", "64*n", "n", "n>=64")


def triangle_sums_split():
    """out[i] = sum over j <= i of a[i, j], row i on work-item i = 64*gid + lid: lane x of group g
    takes part in the passes j <= 64*g + x (the group index bounded only by the problem's edge)."""
    k = lp.make_kernel("{[i,j]: 0<=i<n and 0<=j<=i}", "out[i] = sum(j, a[i, j])",
                       [lp.GlobalArg("a", np.float32, shape=("n", "n")), lp.GlobalArg("out", np.float32, shape=("n",)),
                        lp.ValueArg("n", np.int32)],
                       assumptions="n>=64 and n mod 64 = 0", lang_version=(2018, 2), name="triangle_sums_split")
    return lp.split_iname(k, "i", 64, outer_tag="g.0", inner_tag="l.0")


def _sequential_triangle(name: str, domain: str, a_shape: str, params: list):
    """out[32*g + l] = sum over the triangle k, j <= k of a[32*g + l + j]: two groups of 32."""
    k = lp.make_kernel(domain, "out[32*g + l] = sum((k, j), a[32*g + l + j])",
                       [lp.GlobalArg("a", np.float32, shape=(a_shape,)), lp.GlobalArg("out", np.float32, shape=(64,)),
                        *params], lang_version=(2018, 2), name=name)
    return lp.tag_inames(k, {"g": "g.0", "l": "l.0"})


def sequential_triangle():
    """Two sequential loops bounded by one another (j <= k < 4): 10 loads of a per work-item, not 16."""
    return _sequential_triangle("sequential_triangle", "{[g,l,k,j]: 0<=l<32 and 0<=g<2 and 0<=k<4 and 0<=j<=k}",
                                "67", [])


def sequential_triangle_m():
    """As sequential_triangle with k < m: m(m+1)/2 loads of a per work-item, not m^2."""
    return _sequential_triangle("sequential_triangle_m",
                                "{[g,l,k,j]: 0<=l<32 and 0<=g<2 and 0<=k<m and 0<=j<=k}", "63 + m",
                                [lp.ValueArg("m", np.int32)])


def wavefront_triangle():
    """wavefront's pass k on lanes x <= k, each pass summing a over a triangle j <= i < 4 (10 loads)."""
    k = lp.make_kernel("{[g,x,k,i,j]: 0<=g<n and 0<=x<32 and 0<=k<m and x<=k and 0<=i<4 and 0<=j<=i}",
                       "out[g*32*m + k*32 + x] = sum((i, j), a[g*32*m + k*32 + x + j])",
                       [lp.GlobalArg("a", np.float32, shape=("n*32*m + 3",)),
                        lp.GlobalArg("out", np.float32, shape=("n*32*m",)), lp.ValueArg("n,m", np.int32)],
                       assumptions="n>=1 and m>=1", lang_version=(2018, 2), name="wavefront_triangle")
    return lp.tag_inames(k, {"g": "g.0", "x": "l.0"})


def sequential_triangle_and_column():
    """a[32*(2k + g) + l] over the triangle j <= k < 4 (10 passes of loopy's 16; every pass a warp's own
    128-byte line) and b[32*(32g + l)] once per work-item (32 lines a warp): two groups of 32."""
    k = lp.make_kernel("{[g,l,k,j]: 0<=g<2 and 0<=l<32 and 0<=k<4 and 0<=j<=k}",
                       ["out[32*g + l] = sum((k, j), a[32*(2*k + g) + l])", "out2[32*g + l] = b[32*(32*g + l)]"],
                       [lp.GlobalArg("a", np.float32, shape=(256,)), lp.GlobalArg("b", np.float32, shape=(2048,)),
                        lp.GlobalArg("out,out2", np.float32, shape=(64,))], lang_version=(2018, 2),
                       name="sequential_triangle_and_column")
    return lp.tag_inames(k, {"g": "g.0", "l": "l.0"})


def window_sum():
    """out[i] = sum over p <= k < m of a[k], 32 work-items a group: m - p loads per work-item, none
    where the window is empty (m <= p)."""
    k = lp.make_kernel("{[i,k]: 0<=i<n and p<=k<m}", "out[i] = sum(k, a[k])",
                       [lp.GlobalArg("a,out", np.float32, shape=("n",)), lp.ValueArg("n,m,p", np.int32)],
                       assumptions="n mod 32 = 0 and n>=32", lang_version=(2018, 2), name="window_sum")
    return lp.split_iname(k, "i", 32, outer_tag="g.0", inner_tag="l.0")


def sibling_group_loops():
    """b[i] = 2 a[i] over n and c[k] = a[k] + 1 over m <= n, both 32 work-items a group on g.0: the grid
    is n's groups, so only c's loop needs a guard (m / 32 of the n / 32 groups)."""
    k = lp.make_kernel(["{[i]: 0<=i<n}", "{[k]: 0<=k<m}"], ["b[i] = 2*a[i]", "c[k] = a[k] + 1"],
                       [lp.GlobalArg("a,b", np.float32, shape=("n",)), lp.GlobalArg("c", np.float32, shape=("m",)),
                        lp.ValueArg("n,m", np.int32)],
                       assumptions="n mod 32 = 0 and n>=32 and m mod 32 = 0 and m>=32 and m<=n",
                       lang_version=(2018, 2), name="sibling_group_loops")
    k = lp.split_iname(k, "i", 32, outer_tag="g.0", inner_tag="l.0")
    return lp.split_iname(k, "k", 32, outer_tag="g.0", inner_tag="l.0")


def sum_past_the_array():
    """out[i] = sum over k < m of a[k], a of length n: out of bounds unless m <= n, which loopy cannot
    establish, so it refuses to generate the code at any sizes."""
    k = lp.make_kernel("{[i,k]: 0<=i<n and 0<=k<m}", "out[i] = sum(k, a[k])",
                       [lp.GlobalArg("a,out", np.float32, shape=("n",)), lp.ValueArg("n,m", np.int32)],
                       assumptions="n >= 1 and m >= 1", lang_version=(2018, 2), name="sum_past_the_array")
    return lp.split_iname(k, "i", 32, outer_tag="g.0", inner_tag="l.0")


def copy_any_n():
    """b[i] = a[i] over groups of 256 work-items, n not known to divide 256 (below one group at n < 256)."""
    k = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = a[i]",
                       [lp.GlobalArg("a,b", np.float32, shape=("n",)), lp.ValueArg("n", np.int32)],
                       lang_version=(2018, 2), name="copy_any_n")
    return lp.split_iname(k, "i", 256, outer_tag="g.0", inner_tag="l.0")


def row_sums_any_n():
    """out[i] = sum over j < m of a[i, j], rows i over groups of 32 work-items, n not known to divide 32."""
    k = lp.make_kernel("{[i,j]: 0<=i<n and 0<=j<m}", "out[i] = sum(j, a[i, j])",
                       [lp.GlobalArg("a", np.float32, shape=("n", "m")), lp.GlobalArg("out", np.float32, shape=("n",)),
                        lp.ValueArg("n,m", np.int32)], lang_version=(2018, 2), name="row_sums_any_n")
    return lp.split_iname(k, "i", 32, outer_tag="g.0", inner_tag="l.0")


def triangle_sums_any_n():
    """out[i] = sum over j <= i of a[j], row i on work-item i = 32*gid + lid, n not known to divide 32:
    the lanes past the problem's edge (i >= n) run j over j's box, 0..n-1, as far as j <= i allows."""
    k = lp.make_kernel("{[i,j]: 0<=i<n and 0<=j<=i}", "out[i] = sum(j, a[j])",
                       [lp.GlobalArg("a,out", np.float32, shape=("n",)), lp.ValueArg("n", np.int32)],
                       lang_version=(2018, 2), name="triangle_sums_any_n")
    return lp.split_iname(k, "i", 32, outer_tag="g.0", inner_tag="l.0")
