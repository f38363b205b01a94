"""The fast IR path agrees with loopy's statistics (get_op_map, get_mem_access_map,
get_synchronization_map) on every catalog kernel, the test kernels and stencil variants."""

from __future__ import annotations

import warnings

import loopy as lp
import numpy as np
import pytest

from gpuperf.errors import GpuperfError
from gpuperf.features.counts import loopy_counts, symbolic_counts
from gpuperf.features.fastcount import fast_counts
from gpuperf.kernels.catalog import get_kernel, kernel_names
from gpuperf.kernels.space import get_space
from gpuperf.kernels.kernel import Kernel
from test_features_kernels import (LANG, as_kernel, gather, lift_listing3, lift_listing4, matmul, transpose, vector_add,
                                  weighted)

VARIANTS = [
    {"local_x": 32, "local_y": 4, "outputs_y": 2, "prefetch": 1, "unroll": 2},
    {"local_x": 8, "local_y": 8, "outputs_y": 4, "prefetch": 0, "unroll": 4},
    {"local_x": 64, "local_y": 2, "outputs_y": 8, "prefetch": 1, "unroll": 1},
]


def access_kinds(values) -> set[tuple]:
    """(space, direction, variable, stride class) of every access with a nonzero count."""
    return {(a.record.space, a.record.direction, a.record.variable, a.stride_class) for a in values.accesses if a.count}


def assert_agree(kernel, check_launch: bool = True) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast, slow = fast_counts(kernel.program), loopy_counts(kernel.program)
    base = kernel.resolve_sizes()
    for sizes in (base, {name: 2 * value for name, value in base.items()}):
        ours, theirs = fast.evaluate(sizes), slow.evaluate(sizes)
        assert ours == pytest.approx(theirs, rel=1e-12), kernel.key
        fast_values, slow_values = fast.values(sizes), slow.values(sizes)
        assert access_kinds(fast_values) == access_kinds(slow_values)
        assert fast_values.global_size == slow_values.global_size
        assert fast_values.local == slow_values.local
        if check_launch:
            assert (fast_values.global_size, fast_values.local) == kernel.launch(sizes)


@pytest.mark.parametrize("name", kernel_names())
def test_fast_path_agrees_with_loopy_on_the_catalog(name):
    assert_agree(get_kernel(name))


@pytest.mark.parametrize("build", [lift_listing3, lambda: lift_listing4(4), matmul, transpose,
                                   lambda: vector_add(divisible=False), lambda: vector_add(group=16), weighted])
def test_fast_path_agrees_with_loopy_on_test_kernels(build):
    assert_agree(build())


def unusual(name: str) -> Kernel:
    """Kernels exercising the fast path's corners (reductions, domain trees, ILP, conditionals)."""
    domains = {"nested_domain": ["{[i]: 0 <= i < n}", "{[j]: 0 <= j < i}"]}
    source = {
        "nested_domain": "out[i] = sum(j, a[j])",
        "max_reduction": "out[i] = max(j, a[16*i + j])",
        "parallel_reduction": "out[i] = sum(j, a[64*i + j])",
        "ilp": "<> t = a[i] * 2\nout[i] = t + b[i]",
        "predicated": "out[i] = a[i]  {if=i > 3}",
        "select_and_pow": "out[i] = if(a[i] > 0, a[i]**3, exp(a[i]) / b[i])",
    }[name]
    domain = domains.get(name, "{[i, j]: 0 <= i < n and 0 <= j < %d}" % (64 if "parallel" in name else 16))
    if "j" not in source:
        domain = "{[i]: 0 <= i < n}"
    program = lp.make_kernel(domain, source, assumptions="n >= 256 and n mod 64 = 0", name=name, lang_version=LANG)
    dtype = np.float64 if name == "select_and_pow" else np.float32
    program = lp.add_dtypes(program, {v: dtype for v in ("a", "b", "out") if v in source})
    if name == "parallel_reduction":
        program = lp.tag_inames(program, {"i": "g.0", "j": "l.0"})
    elif name == "ilp":
        program = lp.split_iname(program, "i", 256, outer_tag="g.0")
        program = lp.split_iname(program, "i_inner", 4, outer_tag="l.0", inner_tag="ilp")
    else:
        program = lp.split_iname(program, "i", 64, outer_tag="g.0", inner_tag="l.0")
    return as_kernel(program, ("n",), {"n": 1024})


@pytest.mark.parametrize(
    "name", ["nested_domain", "max_reduction", "parallel_reduction", "ilp", "predicated", "select_and_pow"]
)
def test_fast_path_agrees_with_loopy_on_unusual_kernels(name):
    # Kernel.launch reads the raw program, whose grid leaves out a parallel reduction's l.0 axis
    assert_agree(unusual(name), check_launch=name != "parallel_reduction")


def test_both_paths_count_a_constant_arrays_loads_as_global_ones():
    kernel = weighted("constant")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        counts = [fast_counts(kernel.program), loopy_counts(kernel.program)]
    for found in counts:
        loads = found.evaluate({"n": 4096})
        assert loads["global_loads_f32_stride0"] == 8 * 4096 and loads["global_loads"] == 16 * 4096, found.method


def test_indirect_access_counts_where_loopy_cannot():
    """loopy 2025.2's get_mem_access_map fails on a[idx[i]] (flatten(None) for its lid stride);
    the fast path counts it, classed non-affine as loopy means to."""
    kernel = gather()
    with pytest.raises(GpuperfError, match="loopy's statistics"):
        loopy_counts(kernel.program)
    counts = symbolic_counts(kernel).evaluate(kernel.resolve_sizes())
    assert counts["global_loads_f32_nonaffine"] == counts["global_loads_i32_stride1"] == 4096


@pytest.mark.parametrize("config", VARIANTS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_fast_path_agrees_with_loopy_on_stencil_variants(config):
    assert_agree(get_space("stencil2d").build(config))


def test_counts_are_cached_per_program_and_loopy_counts_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPERF_CACHE_DIR", str(tmp_path))
    kernel = lift_listing4(8)
    assert symbolic_counts(kernel) is symbolic_counts(kernel)
    assert symbolic_counts(kernel).method == "fast"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = symbolic_counts(kernel, method="loopy")
    files = list((tmp_path / "counts").glob("*.pkl"))
    assert len(files) == 1
    again = symbolic_counts(lift_listing4(8), method="loopy")  # a new program object: read from disk
    assert again is not first and again.method == "loopy"
    sizes = kernel.resolve_sizes()
    assert again.evaluate(sizes) == first.evaluate(sizes)


@pytest.mark.parametrize("damage", [b"", b"\x80\x09 a later pickle protocol", b"\x80\x05garbage" * 7])
def test_a_damaged_counts_cache_file_is_counted_again(tmp_path, monkeypatch, damage):
    monkeypatch.setenv("GPUPERF_CACHE_DIR", str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = symbolic_counts(lift_listing4(8), method="loopy")
        (cached,) = (tmp_path / "counts").glob("*.pkl")
        cached.write_bytes(damage)
        again = symbolic_counts(lift_listing4(8), method="loopy")  # a new program object: read from disk
    sizes = lift_listing4(8).resolve_sizes()
    assert again.evaluate(sizes) == first.evaluate(sizes)
    assert cached.read_bytes() != damage  # counted again and written whole
