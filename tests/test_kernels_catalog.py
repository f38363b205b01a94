"""The catalog's measurement and test kernels: correct on the OpenCL CPU device, CUDA code, pinned facts."""

from __future__ import annotations

import re
from collections.abc import Iterator

import loopy as lp
import numpy as np
import pyopencl as cl
import pytest
from pymbolic import evaluate

from gpuperf.kernels import get_kernel, kernel_names
from gpuperf.kernels.catalog import entries
from gpuperf.kernels.kernel import Kernel

CATALOG = kernel_names("measurement") + kernel_names("test")
ARITH = [name for name in kernel_names("measurement") if name.startswith("arith_")]


@pytest.fixture(scope="module")
def queue() -> Iterator[cl.CommandQueue]:
    """A queue whose context is held until the module's tests end: some OpenCL runtimes (Intel's CPU runtime)
    do not count a queue as holding its context, so ``queue.context`` fails once the context is released."""
    context = cl.create_some_context(interactive=False)
    yield cl.CommandQueue(context)


def run_on_device(kernel: Kernel, queue: cl.CommandQueue, inputs: dict[str, np.ndarray], sizes: dict[str, int]):
    """Run the kernel through loopy's executor; size parameters are passed where they are arguments."""
    values = {arg.name: sizes[arg.name] for arg in kernel.entry.args if isinstance(arg, lp.ValueArg)}
    program = lp.set_options(kernel.program, return_dict=True)
    _, outputs = program.executor(queue.context)(queue, out_host=True, **inputs, **values)
    return outputs


def test_catalog_lists_every_kernel_once_in_its_category() -> None:
    assert kernel_names("measurement")[:2] == ["vector_copy", "add_four_vectors"]
    expected_measurement = {
        "vector_copy", "add_four_vectors", "vector_fill", "scale_add_stride1", "scale_add_stride2",
        "sum_filled_stride2", "sum_filled_stride3", "matmul_naive", "matmul_tiled_prefetch",
        "transpose", "transpose_prefetch", "empty",
    } | {f"arith_f{bits}_{op}" for bits in (32, 64) for op in ("add", "mul", "div", "exp", "sqrt")}
    expected_test = {"finite_difference_5pt", "skinny_matmul", "nbody", "convolution_2d", "element_local_diff"}
    # the paper's list; calibration kernels for other device classes may add more measurement kernels
    assert expected_measurement <= set(kernel_names("measurement"))
    assert set(kernel_names("test")) == expected_test
    assert len(CATALOG) == len(set(CATALOG))


def test_each_entry_lists_the_size_parameters_and_defaults_of_the_kernel_it_builds() -> None:
    for entry in entries():  # the stencils' too
        kernel = get_kernel(entry.name)
        assert (kernel.params, dict(kernel.default_sizes)) == (entry.params, dict(entry.default_sizes)), entry.name


def test_listing_the_catalog_builds_no_kernel(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    import dataclasses
    import json

    from gpuperf.cli import main
    from gpuperf.kernels import catalog

    def unbuildable() -> Kernel:
        raise AssertionError("gpuperf kernels built a kernel")

    listed = entries()
    monkeypatch.setattr(catalog, "_ENTRIES", {e.name: dataclasses.replace(e, build=unbuildable) for e in listed})
    assert main(["kernels", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert list(rows) == [e.name for e in listed]
    matmul = rows["matmul_naive"]
    assert (matmul["category"], matmul["params"], matmul["default_sizes"]) == (
        "measurement", ["n", "m", "k"], {"n": 64, "m": 128, "k": 32})
    assert rows["stencil2d"]["params"] == ["n", "m"] and rows["nbody"]["default_sizes"] == {"n": 512}
    assert main(["kernels", "--category", "test"]) == 0
    assert "gpuperf kernel catalog (5 kernels)" in capsys.readouterr().out


@pytest.mark.parametrize("name", CATALOG)
@pytest.mark.opencl
def test_kernel_matches_numpy_reference_on_opencl(name: str, queue: cl.CommandQueue) -> None:
    kernel = get_kernel(name)
    assert kernel.name == name and kernel.category in ("measurement", "test") and kernel.description
    description = {e.name: e.description for e in entries()}[name]
    assert kernel.description == description
    sizes = kernel.resolve_sizes()
    inputs = kernel.make_inputs(sizes, seed=1)
    expected = kernel.expected_outputs({key: value.copy() for key, value in inputs.items()}, sizes)
    outputs = run_on_device(kernel, queue, inputs, sizes)
    assert set(expected) == set(kernel.outputs)
    for array, want in expected.items():
        got = outputs[array]
        assert got.shape == want.shape and got.dtype == want.dtype
        # Absolute slack scaled to the output's magnitude: differences like the 5-point Laplacian cancel.
        scale = float(np.max(np.abs(want))) if want.size else 0.0
        np.testing.assert_allclose(got, want, rtol=kernel.rtol, atol=kernel.rtol * scale, err_msg=f"{name}: {array}")


@pytest.mark.parametrize("name", CATALOG)
def test_kernel_generates_cuda_code(name: str) -> None:
    code = get_kernel(name).device_code("cuda")
    assert 'extern "C" __global__ void __launch_bounds__' in code and f" {name}(" in code


def test_matmul_naive_launch_geometry() -> None:
    kernel = get_kernel("matmul_naive")
    assert kernel.launch() == ((128, 64, 1), (16, 16, 1))
    assert kernel.launch({"n": 256, "m": 512, "k": 16}) == ((512, 256, 1), (16, 16, 1))
    assert kernel.params == ("n", "m", "k")


def test_tiled_matmul_uses_local_memory_and_barriers() -> None:
    opencl = get_kernel("matmul_tiled_prefetch").device_code("opencl")
    assert "__local float a_fetch[16 * 16]" in opencl and "__local float b_fetch[16 * 16]" in opencl
    assert opencl.count("barrier(CLK_LOCAL_MEM_FENCE)") == 2
    assert "__local" not in get_kernel("matmul_naive").device_code("opencl")


def test_empty_kernel_launches_work_items_that_touch_no_memory() -> None:
    kernel = get_kernel("empty")
    assert kernel.outputs == () and kernel.array_args == ()
    assert kernel.launch({"n": 1024}) == ((1024, 1, 1), (256, 1, 1))
    body = kernel.device_code("opencl").split("{", 1)[1]
    assert re.sub(r"/\*.*?\*/", "", body).split() == [";", "}"]  # the body is one empty statement


def _per_work_item(count, sizes: dict[str, int], work_items: int, per_subgroup: bool) -> float:
    total = count.eval_with_dict(sizes)
    return total * 32 / work_items if per_subgroup else total / work_items


@pytest.mark.parametrize("name", ARITH)
def test_arith_kernel_counts_k_operations_of_its_kind(name: str) -> None:
    kernel = get_kernel(name)
    _, bits, op = name.split("_")
    dtype = np.float32 if bits == "f32" else np.float64
    sizes = {"n": 512, "k": 32}
    ops = lp.get_op_map(kernel.program, subgroup_size=32, count_redundant_work=True).filter_by(dtype=[dtype])
    counted = {key.name: _per_work_item(count, sizes, 512, per_subgroup=True) for key, count in ops.items()}
    counted = {kind: value for kind, value in counted.items() if value}
    assert counted == {op if op in ("add", "mul", "div") else f"func:{op}": 32}


def _global_lid0_strides(name: str, sizes: dict[str, int]) -> dict[tuple[str, str], int]:
    kernel = get_kernel(name)
    accesses = lp.get_mem_access_map(kernel.program, subgroup_size=32, count_redundant_work=True)
    return {
        (key.variable, key.direction): int(evaluate(key.lid_strides.get(0, 0), sizes))
        for key in accesses.filter_by(mtype=["global"]).keys()
    }


def test_transpose_prefetch_makes_both_global_accesses_unit_stride() -> None:
    sizes = {"n": 64, "m": 128}
    plain = _global_lid0_strides("transpose", sizes)
    staged = _global_lid0_strides("transpose_prefetch", sizes)
    assert sorted(plain.values()) == [1, 64]  # load a along its rows, store b down its columns (stride n)
    assert sorted(staged.values()) == [1, 1]


@pytest.mark.parametrize(
    ("name", "stride"), [("scale_add_stride1", 1), ("scale_add_stride2", 2), ("sum_filled_stride3", 3)]
)
def test_strided_kernels_access_global_memory_at_their_stride(name: str, stride: int) -> None:
    strides = _global_lid0_strides(name, {"n": 4096})
    loads = [value for (variable, direction), value in strides.items() if direction == "load"]
    assert loads and set(loads) == {stride}


@pytest.mark.parametrize("value", [True, 1.5, "many", 0])
def test_sizes_must_be_positive_whole_numbers(value) -> None:
    from gpuperf.errors import GpuperfError

    with pytest.raises(GpuperfError, match=f"size parameter n={value!r}"):
        get_kernel("vector_copy").resolve_sizes({"n": value})


def test_the_catalogs_language_version_is_loopys():
    """LANG is written out so that the kernel modules import without loopy; it is loopy's 2018.2 version."""
    import loopy as lp

    from gpuperf.kernels.kernel import LANG

    assert LANG == lp.version.LOOPY_USE_LANGUAGE_VERSION_2018_2


@pytest.mark.parametrize("spec", [None, "", "  ", 5])
def test_a_missing_kernel_name_is_an_error_saying_one_is_needed(spec) -> None:
    """get_kernel(None) ended in Python's TypeError, and get_kernel("") suggested catalog names."""
    from gpuperf.errors import GpuperfError

    with pytest.raises(GpuperfError, match=f"^get_kernel: a kernel name is needed .*, not {re.escape(repr(spec))}$"):
        get_kernel(spec)
