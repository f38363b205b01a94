"""The LIFT stencils and their variant spaces: NumPy agreement on pocl, space sizes, specs, codegen."""

from __future__ import annotations

import warnings
import zlib

import loopy as lp
import numpy as np
import pytest
from scipy import ndimage

from gpuperf.errors import GpuperfError
from gpuperf.kernels.catalog import get_kernel, kernel_names
from gpuperf.kernels.space import (
    InvalidVariant,
    VariantSpace,
    get_space,
    space_names,
    variant_from_spec,
)
from gpuperf.kernels.stencils import STENCILS

NAMES = list(STENCILS)


@pytest.fixture(scope="module")
def opencl():
    cl = pytest.importorskip("pyopencl")
    context = cl.create_some_context(interactive=False)
    return context, cl.CommandQueue(context)


def run(kernel, inputs, opencl) -> dict[str, np.ndarray]:
    context, queue = opencl
    _, outputs = kernel.program.executor(context)(queue, **inputs)
    return dict(zip(kernel.outputs, outputs))


def edge_padded_inputs(name: str, sizes: dict[str, int], seed: int = 3) -> dict[str, np.ndarray]:
    """Random interiors whose halos repeat the edge, as LIFT's Pad(clamp) fills them."""
    stencil = STENCILS[name]
    rng = np.random.default_rng(seed)
    shape = (sizes["n"], sizes["m"])
    inputs = {
        a: np.pad(rng.uniform(0.5, 1.5, shape), stencil.radius, mode="edge").astype(np.float32)
        for a in stencil.padded_inputs
    }
    inputs.update({a: rng.uniform(0.5, 1.5, shape).astype(np.float32) for a in stencil.plain_inputs})
    return inputs


def assert_matches_reference(kernel, inputs, sizes, opencl) -> dict[str, np.ndarray]:
    got = run(kernel, inputs, opencl)
    expected = kernel.expected_outputs(inputs, sizes)
    assert set(got) == set(expected)
    for out, value in expected.items():
        assert got[out].shape == (sizes["n"], sizes["m"])
        np.testing.assert_allclose(got[out], value, rtol=kernel.rtol, atol=1e-6, err_msg=kernel.key)
    return got


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.opencl
def test_base_kernel_matches_numpy_with_clamped_boundary(name, opencl):
    kernel = get_kernel(name)
    sizes = {"n": 32, "m": 48}
    inputs = edge_padded_inputs(name, sizes)
    got = assert_matches_reference(kernel, inputs, sizes, opencl)
    weights = STENCILS[name].weights
    if weights:  # an independent check of the clamp-to-edge result, edges and corners included
        r = STENCILS[name].radius
        table = np.zeros((2 * r + 1, 2 * r + 1))
        for (di, dj), w in weights.items():
            table[di + r, dj + r] = w
        interior = inputs["a"][r:-r, r:-r].astype(np.float64)
        clamped = ndimage.correlate(interior, table, mode="nearest")
        np.testing.assert_allclose(got["out"], clamped, rtol=1e-5)


@pytest.mark.opencl
def test_base_kernel_reads_the_halo_it_is_given(opencl):
    """Arbitrary halo values (not a copy of the edge) reach the edge outputs."""
    kernel = get_kernel("stencil2d")
    sizes = {"n": 16, "m": 16}
    inputs = kernel.make_inputs(sizes, seed=5)
    inputs["a"][0, :] = 100.0  # north halo row
    got = assert_matches_reference(kernel, inputs, sizes, opencl)
    assert np.all(got["out"][0] > 10) and np.all(got["out"][1:] < 10)


def sampled_configs(name: str) -> list[dict]:
    """Two valid configurations per space, picked by a seed from the name: one prefetched and
    unrolled, one without prefetch with a per-item loop that is not fully unrolled."""
    space = get_space(name)
    valid = [c for c in space.configurations() if space.check(c) is None]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    prefetched = [c for c in valid if c["prefetch"] and c["unroll"] > 1]
    looped = [c for c in valid if not c["prefetch"] and c["outputs_y"] > c["unroll"]]
    return [prefetched[rng.integers(len(prefetched))], looped[rng.integers(len(looped))]]


SAMPLED = [(name, config) for name in NAMES for config in sampled_configs(name)]


@pytest.mark.parametrize("name,config", SAMPLED, ids=[get_space(n).key(c) for n, c in SAMPLED])
@pytest.mark.opencl
def test_variant_matches_numpy(name, config, opencl):
    kernel = get_space(name).build(config)
    assert kernel.variant == config
    tile_y = config["local_y"] * config["outputs_y"]
    sizes = {"n": max(32, 2 * tile_y), "m": max(32, 2 * config["local_x"])}
    assert kernel.launch(sizes)[1] == (config["local_x"], config["local_y"], 1)
    assert_matches_reference(kernel, kernel.make_inputs(sizes, seed=11), sizes, opencl)


def test_catalog_lists_the_stencils():
    assert kernel_names("stencil") == NAMES
    assert space_names() == NAMES
    kernel = get_kernel("hotspot2d")
    assert kernel.category == "stencil" and kernel.params == ("n", "m")
    assert kernel.launch({"n": 64, "m": 32}) == ((32, 64, 1), (16, 16, 1))
    shapes = {a.name: kernel.array_shape(a, {"n": 64, "m": 32}) for a in kernel.array_args}
    assert shapes == {"temp": (66, 34), "power": (64, 32), "out": (64, 32)}


@pytest.mark.parametrize("name", NAMES)
def test_space_has_hundreds_of_valid_variants_that_build(name):
    space = get_space(name)
    configs = list(space.configurations())
    assert len(configs) == np.prod([len(v) for v in space.parameters.values()])
    valid = [c for c in configs if space.check(c) is None]
    assert len(valid) >= 300
    assert any(c["prefetch"] for c in valid) and any(c["unroll"] > 1 for c in valid)
    for config in valid[::157]:  # a spread of them builds with loopy
        kernel = space.build(config)
        assert kernel.variant == config
        assert kernel.key == f"{name}[" + ",".join(f"{k}={config[k]}" for k in sorted(config)) + "]"


def test_variants_and_skipped_are_deterministic_and_partition_the_space():
    space = get_space("stencil2d")
    first = space.variants(limit=12)
    assert len(first) == 12
    assert [k.key for k in first] == [k.key for k in space.variants(limit=12)]
    skipped = space.skipped(limit=8)
    assert len(skipped) == 8
    valid_keys = {k.key for k in first}
    for config, reason in skipped:
        assert reason and space.key(config) not in valid_keys
        with pytest.raises(InvalidVariant) as caught:
            space.build(config)
        assert caught.value.reason == reason


@pytest.mark.parametrize(
    "name,config,reason",
    [
        ("stencil2d", {"local_x": 128, "local_y": 16}, "2048 work-items exceeds 1024"),
        ("jacobi2d_5pt", {"outputs_y": 2, "unroll": 4}, "unroll factor 4 exceeds the 2 outputs"),
        ("srad2", {"local_x": 128, "local_y": 8, "outputs_y": 8, "prefetch": 1}, "KiB of local memory, over 48"),
    ],
)
def test_invalid_configs_are_skipped_with_a_reason(name, config, reason):
    space = get_space(name)
    with pytest.raises(InvalidVariant, match=reason):
        space.build(config)
    assert reason in space.check(space.complete(config))


def test_a_loopy_failure_becomes_a_skip_reason():
    def failing(config):
        raise lp.LoopyError("cannot schedule\nmore detail")

    space = VariantSpace("broken", {"x": [1, 2]}, {"x": 1}, lambda c: None, failing)
    assert space.variants() == []
    assert [r for _, r in space.skipped()] == ["loopy could not build it (LoopyError: cannot schedule)"] * 2
    with pytest.raises(InvalidVariant, match="cannot schedule"):
        space.build({"x": 2})


def test_get_kernel_round_trips_a_variant_spec():
    spec = "stencil2d[local_x=32,local_y=4,outputs_y=2,prefetch=1,unroll=2]"
    kernel = get_kernel(spec)
    assert kernel.key == spec
    assert kernel.variant == {"local_x": 32, "local_y": 4, "outputs_y": 2, "prefetch": 1, "unroll": 2}
    assert variant_from_spec(kernel.key).key == spec
    partial = get_kernel("jacobi2d_9pt[ local_x=64 ]")
    assert partial.key == "jacobi2d_9pt[local_x=64,local_y=16,outputs_y=1,prefetch=0,unroll=1]"


@pytest.mark.parametrize(
    "spec,message",
    [
        ("stencil2d[tile=4]", "no parameter tile"),
        ("stencil2d[local_x=3]", "local_x=3 is not one of 4, 8"),
        ("stencl2d[local_x=4]", "did you mean stencil2d"),
        ("stencil2d[local_x]", "not param=value"),
    ],
)
def test_bad_variant_specs_name_the_fault(spec, message):
    with pytest.raises(GpuperfError, match=message) as caught:
        variant_from_spec(spec)
    assert not isinstance(caught.value, InvalidVariant)


def test_cuda_code_for_a_prefetched_unrolled_variant():
    kernel = get_space("gaussian_5x5").build(
        {"local_x": 32, "local_y": 8, "outputs_y": 4, "prefetch": 1, "unroll": 4}
    )
    code = kernel.device_code("cuda")
    assert "__launch_bounds__(256)" in code
    assert "__shared__ float a_tile[36 * 36]" in code  # (8 * 4 + 4) rows x (32 + 4) columns
    assert "__syncthreads()" in code
    assert "for (int i_seq" not in code  # the per-item loop is unrolled


def test_counts_are_exact_for_tiled_variants():
    kernel = get_space("jacobi2d_5pt").build({"local_x": 32, "local_y": 4, "outputs_y": 4, "unroll": 2})
    sizes = {"n": 64, "m": 96}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ops = lp.get_op_map(kernel.program, subgroup_size=32, count_redundant_work=True)
        mem = lp.get_mem_access_map(kernel.program, subgroup_size=32, count_redundant_work=True)
    assert not [w for w in caught if "overestimated" in str(w.message)]
    muls = ops.filter_by(dtype=[np.float32], name=["mul"]).eval_and_sum(sizes)
    assert muls * 32 == 5 * 64 * 96  # per sub-group counts; five weighted terms per output
    loads = mem.filter_by(mtype=["global"], direction=["load"]).eval_and_sum(sizes)
    assert loads == 5 * 64 * 96


def test_stencil2d_reference_weights_each_neighbour_as_lift_does():
    """A single 1 at padded cell (1, 6) of a 16 x 16 problem (radius 1): output (i, j) reads padded
    (i + 1 + di, j + 1 + dj), so (1, 6) is the north neighbour (di = -1) of output (1, 5): weight 0.1;
    the centre of (0, 5): 0.5; the west neighbour (dj = -1) of (0, 6): 0.05; the east one of (0, 4):
    0.2. Nothing reads it as a south neighbour (that output row would be -1)."""
    sizes = {"n": 16, "m": 16}
    padded = np.zeros((18, 18), dtype=np.float32)
    padded[1, 6] = 1.0
    out = STENCILS["stencil2d"].reference({"a": padded}, sizes)["out"]
    expected = np.zeros((16, 16), dtype=np.float32)
    expected[1, 5], expected[0, 5], expected[0, 6], expected[0, 4] = 0.1, 0.5, 0.05, 0.2
    np.testing.assert_allclose(out, expected, atol=1e-7)


def test_the_footprint_of_an_output_block_spans_every_offset_it_reads():
    """stencil2d reads rows and columns -1..+1: a 16 x 8 block reads 18 x 10 cells; srad2's c is read
    at (0, 0), (1, 0) and (0, 1): one more row and column."""
    assert STENCILS["stencil2d"].footprint("a", 16, 8) == (18, 10)
    assert STENCILS["srad2"].footprint("c", 16, 8) == (17, 9)


def test_prefetch_tiles_may_fill_local_memory_exactly():
    """A stencil reading a at (0, 0) and (0, 32): a 64 x 128 tile (local_x 64, 16 rows x 8 outputs)
    prefetches 128 x (64 + 32) floats = 48 KiB, exactly the limit: allowed; reading (0, 33) needs
    128 x 97 x 4 bytes, over it."""
    from gpuperf.kernels.space import check_stencil_config
    from gpuperf.kernels.stencils import Stencil

    def wide(reach):
        return Stencil("wide", "test", reach, ("a",),
                       lambda at: f"out[i, j] = {at('a', 0, 0)} + {at('a', 0, reach)}", lambda x, s: {})

    config = {"local_x": 64, "local_y": 16, "outputs_y": 8, "prefetch": 1, "unroll": 1}
    assert check_stencil_config(wide(32), config) is None
    assert "prefetch tiles need 48.5 KiB" in check_stencil_config(wide(33), config)


def test_a_parameter_given_twice_is_refused():
    with pytest.raises(GpuperfError, match="parameter local_x is given twice"):
        variant_from_spec("stencil2d[local_x=16,local_x=32]")


@pytest.mark.parametrize("name", NAMES)
def test_unroll_is_count_neutral_siblings_differ_only_in_index_arithmetic(name):
    """rank computes the features and count properties once for variants that differ only in the
    stencil spaces' count-neutral parameter (unroll), leaving out the index-arithmetic columns: a change
    that made unrolling visible to another column must take it out of ``count_neutral``."""
    from gpuperf.features.table import extract_features
    from gpuperf.kernels.space import index_arithmetic
    from gpuperf.models.properties import kernel_properties

    space, sizes = get_space(name), {"n": 256, "m": 256}
    assert space.count_neutral == ("unroll",)
    for prefetch in (0, 1):
        base = {"local_x": 16, "local_y": 4, "outputs_y": 8, "prefetch": prefetch}
        rows = [{**extract_features(kernel, sizes), **kernel_properties(kernel, sizes)}
                for kernel in (space.build({**base, "unroll": u}) for u in space.parameters["unroll"])]
        differing = {key for row in rows[1:] for key in row if row[key] != rows[0][key]}
        assert differing and all(index_arithmetic(key) for key in differing)  # the split adds integer ops


def test_unroll_siblings_share_a_row_only_where_the_caller_reads_no_index_arithmetic():
    from gpuperf.kernels.space import shared_static_rows, sized_variants

    space = get_space("jacobi2d_5pt")
    built = sized_variants(space, {"n": 256, "m": 256}, limit=20)
    made = []

    def row(kernel):
        made.append(kernel)
        return {"flops": 1.0, "int_ops": float(kernel.variant["unroll"])}

    shared = shared_static_rows(space, built, row, ["flops"])
    assert len(made) == 8 and shared == [{"flops": 1.0}] * 20  # 8 sets of unroll siblings among the first 20
    made.clear()
    each = shared_static_rows(space, built, row, ["flops", "int_ops"])
    assert len(made) == 20 and [r["int_ops"] for r in each] == [c["unroll"] for c, _ in built]
