"""Features of small loopy kernels against hand-computed truth (the kernels are shared with the
other feature tests): the LIFT paper's Listings 3 and 4, matrix multiply, transpose, gather."""

from __future__ import annotations

import math

import loopy as lp
import numpy as np
import pytest

from gpuperf.features import extract_features
from gpuperf.features.access import warp_accesses
from gpuperf.kernels.kernel import Kernel

LANG = lp.version.LOOPY_USE_LANGUAGE_VERSION_2018_2
F32 = np.float32
GROUP = 128


def as_kernel(program: lp.TranslationUnit, params: tuple[str, ...], sizes: dict[str, int]) -> Kernel:
    return Kernel(name=program.default_entrypoint.name, program=program, params=params, default_sizes=sizes)


def lift_listing3() -> Kernel:
    """LIFT Listing 3: each work-item loads 2 global values, stores their sum to local memory;
    after a barrier it reads a neighbour's local value and stores it globally.
    Per element: 2 global loads, 1 local store, 1 local load, 1 global store."""
    program = lp.make_kernel(
        "{[g, l]: 0 <= g < groups and 0 <= l < %d}" % GROUP,
        f"""
        tmp[l] = a[2*({GROUP}*g + l)] + a[2*({GROUP}*g + l) + 1]  {{id=fill}}
        out[{GROUP}*g + l] = tmp[{GROUP - 1} - l]  {{id=use, dep=fill}}
        """,
        [
            lp.GlobalArg("a", F32, shape=(f"{2 * GROUP}*groups",)),
            lp.GlobalArg("out", F32, shape=(f"{GROUP}*groups",)),
            lp.TemporaryVariable("tmp", F32, shape=(GROUP,), address_space=lp.AddressSpace.LOCAL),
            lp.ValueArg("groups", np.int32),
        ],
        assumptions="groups >= 1",
        name="lift_listing3",
        lang_version=LANG,
    )
    program = lp.tag_inames(program, {"g": "g.0", "l": "l.0"})
    return as_kernel(program, ("groups",), {"groups": 64})


def lift_listing4(split: int) -> Kernel:
    """LIFT Listing 4: each work-item reads ``split`` consecutive elements in a sequential loop,
    so consecutive work-items (lanes) are ``split`` elements apart."""
    program = lp.make_kernel(
        "{[i]: 0 <= i < n}",
        "out[i] = 2.0f * a[i]",
        assumptions=f"n >= {GROUP * split} and n mod {GROUP * split} = 0",
        name=f"lift_listing4_s{split}",
        lang_version=LANG,
    )
    program = lp.add_dtypes(program, {"a,out": F32})
    program = lp.split_iname(program, "i", split, outer_iname="item", inner_iname="k")
    program = lp.split_iname(program, "item", GROUP, outer_tag="g.0", inner_tag="l.0")
    return as_kernel(program, ("n",), {"n": GROUP * split * 16})


def matmul(n: int = 64) -> Kernel:
    """Naive matrix multiply, 16 x 16 work-groups: 2 n^3 flops."""
    program = lp.make_kernel(
        "{[i, j, k]: 0 <= i, j, k < n}",
        "c[i, j] = sum(k, a[i, k] * b[k, j])",
        assumptions="n >= 16 and n mod 16 = 0",
        name="matmul",
        lang_version=LANG,
    )
    program = lp.add_dtypes(program, {"a,b,c": F32})
    program = lp.split_iname(program, "i", 16, outer_tag="g.1", inner_tag="l.1")
    program = lp.split_iname(program, "j", 16, outer_tag="g.0", inner_tag="l.0")
    return as_kernel(program, ("n",), {"n": n})


def transpose() -> Kernel:
    """out[i, j] = a[j, i] with 32-wide work-groups along j: the read of ``a`` is strided."""
    program = lp.make_kernel(
        "{[i, j]: 0 <= i, j < n}",
        "out[i, j] = a[j, i]",
        assumptions="n >= 32 and n mod 32 = 0",
        name="transpose",
        lang_version=LANG,
    )
    program = lp.add_dtypes(program, {"a,out": F32})
    program = lp.split_iname(program, "j", 32, outer_tag="g.0", inner_tag="l.0")
    program = lp.split_iname(program, "i", 8, outer_tag="g.1", inner_tag="l.1")
    return as_kernel(program, ("n",), {"n": 1024})


def gather() -> Kernel:
    """out[i] = a[idx[i]]: the read of ``a`` is indirect."""
    program = lp.make_kernel(
        "{[i]: 0 <= i < n}",
        "out[i] = a[idx[i]]",
        [lp.GlobalArg("a", F32, shape=("n",)), lp.GlobalArg("idx", np.int32, shape=("n",)), lp.GlobalArg("out", F32, shape=("n",))],
        assumptions="n >= 128 and n mod 128 = 0",
        name="gather",
        lang_version=LANG,
    )
    program = lp.split_iname(program, "i", GROUP, outer_tag="g.0", inner_tag="l.0")
    return as_kernel(program, ("n",), {"n": 4096})


def weighted(table: str = "constant") -> Kernel:
    """out[i] = sum(j, a[i + j] * w[j]) with the weights ``w`` a __constant array (``table="constant"``,
    an lp.ConstantArg) or a global one (``"global"``): w[j] is the same element across the warp."""
    make = lp.ConstantArg if table == "constant" else lp.GlobalArg
    program = lp.make_kernel(
        "{[i, j]: 0 <= i < n and 0 <= j < 8}",
        "out[i] = sum(j, a[i + j] * w[j])",
        [lp.GlobalArg("a", F32, shape=("n + 8",)), make("w", F32, shape=(8,)), lp.GlobalArg("out", F32, shape=("n",)),
         lp.ValueArg("n", np.int32)],
        assumptions="n >= 128 and n mod 128 = 0",
        name="weighted",
        lang_version=LANG,
    )
    program = lp.split_iname(program, "i", GROUP, outer_tag="g.0", inner_tag="l.0")
    return as_kernel(program, ("n",), {"n": 4096})


def vector_add(divisible: bool = True, group: int = GROUP) -> Kernel:
    """c[i] = a[i] + b[i]; without a divisibility assumption loopy must guard the last group."""
    assumptions = f"n >= {group} and n mod {group} = 0" if divisible else "n >= 1"
    program = lp.make_kernel(
        "{[i]: 0 <= i < n}", "c[i] = a[i] + b[i]", assumptions=assumptions, name="vector_add", lang_version=LANG
    )
    program = lp.add_dtypes(program, {"a,b,c": F32})
    program = lp.split_iname(program, "i", group, outer_tag="g.0", inner_tag="l.0")
    return as_kernel(program, ("n",), {"n": group * 32})


# -- hand-computed truth --------------------------------------------------------------------------

def lines_by_variable(kernel: Kernel, sizes: dict[str, int] | None = None) -> dict[str, object]:
    return {(a.variable, a.direction): a for a in warp_accesses(kernel, sizes).accesses}


def test_lift_listing3_counts_match_the_paper():
    kernel = lift_listing3()
    elements = GROUP * 64
    features = extract_features(kernel)
    assert features["global_loads"] == 2 * elements
    assert features["local_stores"] == elements
    assert features["local_loads"] == elements
    assert features["global_stores"] == elements
    assert features["threads"] == elements
    assert features["global_loads_per_thread"] == 2
    assert features["local_stores_per_thread"] == features["local_loads_per_thread"] == 1
    assert features["global_stores_per_thread"] == 1
    assert features["barriers_per_thread"] == 1
    assert features["local_memory_bytes"] == GROUP * 4
    assert features["flops"] == elements  # one add per element
    assert features["global_bytes"] == 3 * elements * 4
    # loads 8 bytes apart: 2 lines, 8 sectors; stores 4 bytes apart: 1 line, 4 sectors
    assert features["cache_lines_per_warp_access"] == pytest.approx((2 * 2 + 1) / 3)
    assert features["sectors_per_warp_access"] == pytest.approx((2 * 8 + 4) / 3)


@pytest.mark.parametrize(("split", "lines", "sectors"), [(1, 1, 4), (4, 4, 16), (8, 8, 32), (32, 32, 32), (64, 32, 32)])
def test_lift_listing4_lines_grow_with_the_split_factor(split, lines, sectors):
    kernel = lift_listing4(split)
    found = lines_by_variable(kernel)
    for key in (("a", "load"), ("out", "store")):
        assert found[key].lines == lines
        assert found[key].sectors == sectors
        assert found[key].alignment == "known" if split == 1 else found[key].analysable
    features = extract_features(kernel)
    assert features["cache_lines_per_warp_access"] == lines
    assert features["loop_iterations_per_thread"] == (split if split > 1 else 0)


@pytest.mark.parametrize("n", [32, 64])
def test_naive_matmul_does_2n3_flops(n):
    features = extract_features(matmul(n))
    assert features["flops"] == 2 * n**3
    assert features["ops_f32_add"] == features["ops_f32_mul"] == n**3
    assert features["global_loads_per_thread"] == 2 * n
    assert features["loop_iterations_per_thread"] == n
    assert features["global_size_0"] == features["global_size_1"] == n
    assert (features["local_size_0"], features["local_size_1"], features["local_size_2"]) == (16, 16, 1)


def test_transposed_read_touches_32_lines_per_warp():
    found = lines_by_variable(transpose())
    assert found[("a", "load")].lines == 32
    assert found[("a", "load")].sectors == 32
    assert found[("out", "store")].lines == 1
    assert found[("out", "store")].sectors == 4


def test_a_constant_arrays_loads_count_as_a_global_arrays():
    features = extract_features(weighted("constant"), {"n": 4096})
    assert features == extract_features(weighted("global"), {"n": 4096})
    assert features["global_loads_per_thread"] == 16  # 8 of a, 8 of w
    assert features["global_loads_f32_stride0"] == 8 * 4096 and features["analysable_access_fraction"] == 1
    w = lines_by_variable(weighted("constant"))[("w", "load")]
    assert w.lines == 1 and w.sectors == 1  # the warp reads one element


def test_indirect_read_is_listed_as_not_analysable():
    found = lines_by_variable(gather())
    indirect = found[("a", "load")]
    assert not indirect.analysable
    assert indirect.lines is None and "indirect" in indirect.reason
    assert found[("idx", "load")].analysable and found[("idx", "load")].lines == 1
    features = extract_features(gather())
    assert features["analysable_access_fraction"] == pytest.approx(2 / 3)
    assert features["cache_lines_per_warp_access"] == 1  # the analysable ones only
    assert features["global_loads_f32_nonaffine"] == 4096


def test_counts_scale_with_the_sizes():
    small, large = extract_features(vector_add(), {"n": 4096}), extract_features(vector_add(), {"n": 8192})
    assert large["global_loads"] == 2 * small["global_loads"] == 2 * 8192
    assert large["global_bytes"] == 2 * small["global_bytes"]
    assert large["global_loads_per_thread"] == small["global_loads_per_thread"] == 2
    listing = lift_listing3()
    one, three = extract_features(listing, {"groups": 8}), extract_features(listing, {"groups": 24})
    for name in ("global_loads", "local_stores", "local_loads", "global_stores", "flops", "threads"):
        assert three[name] == 3 * one[name]
    assert three["barriers_per_thread"] == one["barriers_per_thread"] == 1
    assert extract_features(matmul(), {"n": 128})["flops"] == 8 * extract_features(matmul(), {"n": 64})["flops"]


def test_bound_guards_count_as_ifs_exactly_where_loopy_generates_them():
    guarded, exact = vector_add(divisible=False), vector_add(divisible=True)
    assert "if (" in guarded.device_code() and "if (" not in exact.device_code()
    assert extract_features(guarded, {"n": 4000})["ifs_per_thread"] == 1
    assert extract_features(exact, {"n": 4096})["ifs_per_thread"] == 0


def test_small_work_groups_count_work_items_not_lanes():
    """loopy counts adds per sub-group; a 16-item group is half a sub-group, not 32 work-items."""
    features = extract_features(vector_add(group=16), {"n": 1024})
    assert features["work_group_size"] == 16
    assert features["flops"] == 1024
    assert features["global_loads"] == 2048


def test_per_thread_features_are_totals_over_threads():
    features = extract_features(matmul(32))
    assert features["flops_per_thread"] == features["flops"] / features["threads"]
    assert not math.isnan(features["ifs_per_thread"])
