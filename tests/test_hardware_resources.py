"""Compiler resources from NVRTC: registers, shared memory, spills; the on-disk cache."""

from __future__ import annotations

import json

import loopy as lp
import numpy as np
import pytest

from gpuperf.errors import GpuperfError
from gpuperf.features import resources as res
from gpuperf.features.resources import (
    arch_for_gpu,
    compile_resources,
    compile_source_resources,
    normalize_arch,
    supported_archs,
)
from gpuperf.hardware import get_gpu
from gpuperf.kernels import get_kernel
from gpuperf.kernels.kernel import Kernel

LANG = lp.version.LOOPY_USE_LANGUAGE_VERSION_2018_2

SHARED_SOURCE = """
extern "C" __global__ void reverse_tile(const double *a, double *b)
{
  __shared__ double tile[100];
  tile[threadIdx.x] = a[blockIdx.x * 100 + threadIdx.x];
  __syncthreads();
  b[blockIdx.x * 100 + threadIdx.x] = tile[99 - threadIdx.x];
}
"""

# 64 live values per thread, but __launch_bounds__(1024, 2) caps registers at 65536 / 2048 = 32.
HUNGRY_SOURCE = """
extern "C" __global__ void __launch_bounds__(1024, 2) hungry(const float *a, float *b)
{
  float acc[64];
  #pragma unroll
  for (int k = 0; k < 64; ++k) acc[k] = a[threadIdx.x * 64 + k];
  #pragma unroll
  for (int r = 0; r < 8; ++r)
    #pragma unroll
    for (int k = 0; k < 64; ++k) acc[k] = acc[k] * acc[(k + r + 1) % 64] + 1.0f;
  float s = 0;
  #pragma unroll
  for (int k = 0; k < 64; ++k) s += acc[k] * k;
  b[threadIdx.x] = s;
}
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPERF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(res, "_memory_cache", {})


def local_prefetch_kernel() -> Kernel:
    """b = 2 a through a 256-float shared-memory buffer per work-group."""
    program = lp.make_kernel(
        "{[i]: 0<=i<n}", "b[i] = 2*a[i]", assumptions="n>=256 and n mod 256 = 0", name="scale_local", lang_version=LANG
    )
    program = lp.add_dtypes(program, {"a,b": np.float32})
    program = lp.split_iname(program, "i", 256, outer_tag="g.0", inner_tag="l.0")
    program = lp.add_prefetch(program, "a", ["i_inner"], default_tag="l.auto")
    return Kernel(name="scale_local", program=program, params=("n",))


def test_vector_copy_uses_a_few_registers_and_nothing_else():
    used = compile_resources(get_kernel("vector_copy"), "sm_90")
    assert 1 <= used.registers <= 32
    assert (used.shared_memory_bytes, used.spill_bytes, used.arch, used.function) == (0, 0, "sm_90", "vector_copy")


def test_loopy_local_temporary_is_counted_as_shared_memory():
    used = compile_resources(local_prefetch_kernel(), "sm_80")
    assert used.shared_memory_bytes == 256 * 4


def test_a_constant_array_compiles_for_cuda_as_a_read_only_global_one():
    """An lp.ConstantArg (OpenCL's __constant table) was declared ``__constant__ float *`` in the CUDA
    code, which NVRTC refuses ("attribute __constant__ does not apply here"): its CUDA code now passes it
    as ``float const *__restrict__``, as CUDA measurement launches it, while OpenCL keeps __constant."""
    from gpuperf.measure.cuda import cuda_code

    program = lp.make_kernel(
        "{[i]: 0<=i<n}", "b[i] = a[i] * c[i % 16]",
        [lp.GlobalArg("a,b", np.float32, shape="n"), lp.ConstantArg("c", np.float32, shape=(16,)),
         lp.ValueArg("n", np.int32)], assumptions="n>=128 and n mod 128 = 0", name="table_scale", lang_version=LANG)
    kernel = Kernel("table_scale", lp.split_iname(program, "i", 128, outer_tag="g.0", inner_tag="l.0"), ("n",))
    assert "float const *__restrict__ c," in kernel.device_code("cuda")
    assert "__constant float *__restrict__ c," in kernel.device_code("opencl")
    used = compile_resources(kernel, "sm_90")
    assert 1 <= used.registers <= 32 and used.function == "table_scale"
    assert [arg.name for arg in cuda_code(kernel)[1][0].args if arg.is_pointer] == ["a", "b", "c"]


def test_raw_source_shared_memory_and_spills():
    assert compile_source_resources(SHARED_SOURCE, "reverse_tile", "sm_86").shared_memory_bytes == 100 * 8
    hungry = compile_source_resources(HUNGRY_SOURCE, "hungry", "sm_90")
    assert hungry.registers <= 32
    assert hungry.spill_store_bytes > 0 and hungry.spill_load_bytes > 0
    assert hungry.spill_bytes == hungry.spill_store_bytes + hungry.spill_load_bytes
    assert hungry.stack_frame_bytes > 0


def test_unnamed_kernel_is_found_when_the_source_has_one():
    assert compile_source_resources(SHARED_SOURCE).function == "reverse_tile"
    with pytest.raises(GpuperfError, match="name the kernel, by its name or its mangled name; the source's kernels: "):
        compile_source_resources("__global__ void f() {}\n__global__ void g() {}")


def test_mangled_cxx_kernels_are_looked_up_by_name():
    used = compile_source_resources("__global__ void f(float *x) { x[0] = 1; }\n__global__ void g() {}", "f")
    assert used.function == "_Z1fPf"


def test_compile_error_names_the_kernel_and_the_first_error():
    with pytest.raises(GpuperfError, match=r"kernel 'broken' does not compile for sm_90: .*error: identifier \"y\" is undefined"):
        compile_source_resources('extern "C" __global__ void broken(float *x) { x[0] = y; }', "broken")
    with pytest.raises(GpuperfError, match="the CUDA source has no kernel named 'absent'"):
        compile_source_resources(SHARED_SOURCE, "absent")


def test_architectures_from_sm_75_to_the_newest_nvrtc_supports():
    archs = supported_archs()
    assert archs[0] == "sm_75" and {"sm_80", "sm_86", "sm_90"} <= set(archs)
    kernel = get_kernel("vector_copy")
    for arch in archs:
        assert compile_resources(kernel, arch).registers > 0, arch


def test_architecture_spellings_and_refusals():
    assert normalize_arch("9.0") == normalize_arch("90") == normalize_arch("SM_90") == "sm_90"
    with pytest.raises(GpuperfError, match=r"architecture 'sm_70' is not one NVRTC .* compiles for; use one of sm_75"):
        normalize_arch("sm_70")
    assert arch_for_gpu(get_gpu("A100")) == "sm_80"
    with pytest.raises(GpuperfError, match=r"GPU 'Tesla V100 PCIe 32GB' is sm_70, which NVRTC .* does not compile for \(it covers sm_75"):
        arch_for_gpu(get_gpu("V100"))
    with pytest.raises(GpuperfError, match="NVIDIA GPUs only"):
        arch_for_gpu(get_gpu("MI250X"))


def test_results_are_cached_on_disk_by_source_and_arch(tmp_path, monkeypatch):
    first = compile_source_resources(SHARED_SOURCE, "reverse_tile", "sm_80")
    files = list((tmp_path / "cache" / "resources").glob("*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["shared_memory_bytes"] == 800

    def no_compiler(*args):
        raise AssertionError("compiled although cached")

    monkeypatch.setattr(res, "_compile", no_compiler)
    monkeypatch.setattr(res, "_memory_cache", {})
    assert compile_source_resources(SHARED_SOURCE, "reverse_tile", "sm_80") == first
    with pytest.raises(AssertionError, match="compiled although cached"):
        compile_source_resources(SHARED_SOURCE, "reverse_tile", "sm_86")


PTXAS_LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'g' for 'sm_75'
ptxas info    : Function properties for g
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, 40 bytes smem, 356 bytes cmem[0]
ptxas info    : Compiling entry function 'f' for 'sm_75'
ptxas info    : Function properties for f
ptxas         .     24 bytes stack frame, 8 bytes spill stores, 16 bytes spill loads
ptxas info    : Used 12 registers, 372 bytes cmem[0]"""


def test_ptxas_log_is_read_per_entry_function():
    """f: 12 registers, no smem (its 372 bytes are constant memory), stack 24, spill stores 8, loads 16;
    g's 40 bytes of smem belong to g alone."""
    f = res._parse_log((PTXAS_LOG, "f"), "f", "sm_75", "kernel 'f'")
    assert (f.registers, f.shared_memory_bytes) == (12, 0)
    assert (f.stack_frame_bytes, f.spill_store_bytes, f.spill_load_bytes, f.spill_bytes) == (24, 8, 16, 24)
    g = res._parse_log((PTXAS_LOG, "g"), "g", "sm_75", "kernel 'g'")
    assert (g.registers, g.shared_memory_bytes, g.spill_bytes, g.function) == (10, 40, 0, "g")


def test_the_first_compiler_error_is_found_whatever_its_case():
    log = "kernel.cu(3): warning: unused variable\nkernel.cu(4): Error: expected a ';'\nmore"
    assert res._first_error(log) == "kernel.cu(4): Error: expected a ';'"
    assert res._first_error("just a note") == "just a note"


def test_the_first_compiler_error_carries_no_nul_from_the_log():
    """NVRTC ends its log with a NUL byte: it reached the error message, and grep took the output for binary."""
    assert res._first_error("kernel.cu(4): error: expected a ';'\0") == "kernel.cu(4): error: expected a ';'"
    assert res._first_error("\0") == "(no compiler output)"


OVERLOADS = """__global__ void scale(float *y, float a, int n) { int i = threadIdx.x; if (i < n) y[i] *= a; }
__global__ void scale(double *y, double a, int n) { int i = threadIdx.x; if (i < n) y[i] *= a; }
"""


def test_overloaded_kernels_are_named_by_signature_or_by_the_mangled_names_listed():
    """The names listed when none was given were refused, and an overloaded name was said not to exist."""
    with pytest.raises(GpuperfError, match="the source's kernels: _Z5scalePddi, _Z5scalePffi"):
        compile_source_resources(OVERLOADS)
    assert compile_source_resources(OVERLOADS, "_Z5scalePffi").function == "_Z5scalePffi"
    assert compile_source_resources(OVERLOADS, "(void(*)(float*, float, int))scale").function == "_Z5scalePffi"
    with pytest.raises(GpuperfError, match=r"several kernels of the CUDA source are named 'scale' \(overloads\)"):
        compile_source_resources(OVERLOADS, "scale")
    with pytest.raises(GpuperfError, match="no kernel named '_Z5scalePfff'; its kernels: _Z5scalePddi, _Z5scalePffi"):
        compile_source_resources(OVERLOADS, "_Z5scalePfff")
