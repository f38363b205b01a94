"""Global loads and stores of the machine code (NVRTC cubin, nvdisasm SASS)."""

from __future__ import annotations

import pytest

from gpuperf.errors import GpuperfError
from gpuperf.features import compiled
from gpuperf.features.compiled import compiled_memory, compiled_source_memory, count_instructions
from gpuperf.features.counts import symbolic_counts
from gpuperf.kernels import get_kernel


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPERF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(compiled, "_memory_cache", {})


def source_loads_per_thread(spec: str, sizes: dict) -> float:
    kernel = get_kernel(spec)
    evaluated = symbolic_counts(kernel).values(kernel.resolve_sizes(sizes))
    return evaluated.named()["global_loads"] / evaluated.threads


def test_a_value_read_four_times_is_loaded_once():
    # div_2d reads a[i, j] in four places; an H200 made a quarter of the source's load requests.
    assert source_loads_per_thread("div_2d", {"n": 256, "m": 256}) == 4
    machine = compiled_memory(get_kernel("div_2d"))
    assert (machine.load_instructions, machine.store_instructions) == (1, 1)
    assert machine.straight_line and machine.loops == 0 and machine.function == "div_2d"


def test_unrolled_outputs_share_their_rows():
    # Four outputs of a 9-point stencil: 36 loads in the source, 24 in the machine code, which
    # loads a value two outputs share once (the H200's counters: 24 requests per warp).
    spec = "jacobi2d_9pt[local_x=16,local_y=2,outputs_y=4,prefetch=0,unroll=1]"
    assert source_loads_per_thread(spec, {"n": 4096, "m": 4096}) == 36
    machine = compiled_memory(get_kernel(spec))
    assert machine.load_instructions == 24 and machine.straight_line


def test_machine_loads_per_source_load():
    from gpuperf.features.compiled import machine_per_source

    kernel = get_kernel("div_2d")
    evaluated = symbolic_counts(kernel).values(kernel.resolve_sizes({"n": 256, "m": 256}))
    assert machine_per_source(kernel, evaluated) == (0.25, 1.0)
    kept = get_kernel("gaussian_5x5[local_x=64,local_y=2,outputs_y=4,prefetch=0,unroll=2]")
    assert machine_per_source(kept, symbolic_counts(kept).values(kept.resolve_sizes({"n": 256, "m": 256}))) is None


def test_a_loop_the_compiler_keeps_is_not_straight_line():
    machine = compiled_memory(get_kernel("gaussian_5x5[local_x=64,local_y=2,outputs_y=4,prefetch=0,unroll=2]"))
    assert machine.loops == 1 and not machine.straight_line
    assert machine.loads_in_loops == machine.load_instructions == 45


def test_raw_source_with_a_loop_over_a_size():
    source = """
    extern "C" __global__ void row_sums(const float *a, float *out, int n)
    {
      float total = 0.0f;
      for (int j = 0; j < n; ++j) total += a[blockIdx.x * n + j];
      out[blockIdx.x] = total;
    }
    """
    machine = compiled_source_memory(source, "row_sums")
    assert machine.loops >= 1 and machine.loads_in_loops >= 1 and machine.stores_in_loops == 0
    assert not machine.straight_line
    with pytest.raises(GpuperfError, match="has no kernel named 'column_sums'"):
        compiled_source_memory(source, "column_sums")


def test_a_cplusplus_kernel_is_found_by_its_name_and_a_compile_error_is_quoted():
    source = """
    template <int width> __global__ void gather(const float *a, float *out)
    {
      out[threadIdx.x] = a[threadIdx.x * width] + a[threadIdx.x * width];
    }
    template __global__ void gather<2>(const float *, float *);
    """
    machine = compiled_source_memory(source, "gather<2>")
    assert machine.function.startswith("_Z") and machine.load_instructions == 1 and machine.straight_line
    with pytest.raises(GpuperfError, match='does not compile for sm_90: .*identifier "zz" is undefined'):
        compiled_source_memory('extern "C" __global__ void k(float *a) { a[0] = zz; }', "k")


SASS = """
//--------------------- .text.k        --------------------------
        .section        .text.k,"ax",@progbits
k:
        /*0000*/                   LDG.E R2, desc[UR4][R2.64] ;
.L_x_0:
        /*0010*/              @P0  LDG.E.CONSTANT R4, desc[UR4][R6.64] ;
        /*0020*/                   STG.E desc[UR4][R8.64], R4 ;
        /*0030*/              @!P1 BRA `(.L_x_0) ;
        /*0040*/                   LDGSTS [R1], desc[UR4][R2.64] ;
        /*0050*/                   STG.E.64 desc[UR4][R8.64], R2 ;
        /*0060*/                   EXIT ;
.L_x_1:
        /*0070*/                   BRA `(.L_x_1);
"""


def test_counting_predicated_instructions_loops_and_the_trap_branch():
    machine = count_instructions(SASS, "k", "sm_90")
    # LDGSTS (an asynchronous copy into shared memory) is not a load into registers.
    assert (machine.load_instructions, machine.store_instructions) == (2, 2)
    assert (machine.loads_in_loops, machine.stores_in_loops, machine.loops) == (1, 1, 1)


def test_global_atomics_count_as_the_memory_accesses_they_make():
    """A histogram's REDG.E.ADD (sm_90) was counted as no store: store_instructions 0 and straight_line for a
    kernel updating global memory in its loop. ATOMS (shared memory) stays uncounted, as shared loads are."""
    sass = SASS.replace("LDGSTS [R1], desc[UR4][R2.64]", "REDG.E.ADD.STRONG.GPU desc[UR4][R2.64], R5") \
        .replace("@P0  LDG.E.CONSTANT R4, desc[UR4][R6.64]", "ATOMG.E.ADD.STRONG.GPU PT, R4, desc[UR4][R6.64], R5") \
        .replace("STG.E.64 desc[UR4][R8.64], R2", "ATOMS.ADD R4, [R2], R5")
    machine = count_instructions(sass, "k", "sm_90")
    # loads: LDG, ATOMG (in the loop); stores: ATOMG (in the loop), STG (in the loop), REDG
    assert (machine.load_instructions, machine.store_instructions) == (2, 3)
    assert (machine.loads_in_loops, machine.stores_in_loops) == (1, 2)


def test_cached_on_disk(monkeypatch):
    first = compiled_memory(get_kernel("sqrt_2d"))
    monkeypatch.setattr(compiled, "_memory_cache", {})
    monkeypatch.setattr(compiled, "disassemble", lambda *args: pytest.fail("disassembled again"))
    assert compiled_memory(get_kernel("sqrt_2d")) == first


def test_missing_nvdisasm_is_one_clear_error(monkeypatch):
    import nvidia

    monkeypatch.setattr(nvidia, "__path__", [])
    monkeypatch.setattr(compiled.shutil, "which", lambda name: None)
    with pytest.raises(GpuperfError, match="nvdisasm is unavailable"):
        compiled_memory(get_kernel("call_mix_2d"))


def test_resources_and_machine_code_take_one_compile(monkeypatch):
    from gpuperf.features import resources
    from gpuperf.features.resources import compile_resources

    compiles = []
    real = resources._compile_program
    monkeypatch.setattr(resources, "_programs", {})
    monkeypatch.setattr(resources, "_memory_cache", {})
    monkeypatch.setattr(resources, "_compile_program", lambda *args: compiles.append(args[1]) or real(*args))
    kernel = get_kernel("div_2d")
    assert compile_resources(kernel, "sm_90").registers > 0
    assert compiled_memory(kernel, "sm_90").load_instructions == 1
    assert compiles == ["div_2d"]
