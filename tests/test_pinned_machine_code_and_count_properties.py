"""Hand-worked checks that mutation testing found no test pinning, for the machine code's global
loads and stores (``gpuperf.features.compiled``: counting hand-written SASS text, and the machine's
accesses per source access), the linear count model's properties and loop strides
(``gpuperf.models.properties``, ``gpuperf.models.loop_strides``), its calibration
(``gpuperf.models.linear_calibration``), the analytical models' column helpers
(``gpuperf.models._columns``) and the residual model on a reference time
(``gpuperf.models.reference``)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from gpuperf.errors import GpuperfError
from gpuperf.features import compiled
from gpuperf.features.compiled import CompiledMemory, count_instructions, machine_per_source

# -- machine code ------------------------------------------------------------------------------------
PREDICATED = """
        .section        .text.k,"ax",@progbits
        /*0000*/              @!P0 LDG.E R2, desc[UR4][R2.64] ;
        /*0010*/             @!UP1 STG.E desc[UR4][R8.64], R4 ;
        /*0020*/                   LDG R5, [R6] ;
        /*0030*/                   STG [R8], R5 ;
        /*0040*/                   LDGDEPBAR ;
        /*0050*/                   STGX R1 ;
        /*0060*/                   BRA `(.L_x_9) ;
        /*0070*/                   EXIT ;
"""


def test_negated_predicates_and_bare_opcodes_count_and_a_branch_out_of_the_function_is_no_loop():
    # Loads: '@!P0 LDG.E' and a bare 'LDG'; stores: '@!UP1 STG.E' and a bare 'STG'. LDGDEPBAR and
    # 'STGX' are other opcodes. The branch goes to a label this function does not have: no loop.
    machine = count_instructions(PREDICATED, "k", "sm_90")
    assert (machine.load_instructions, machine.store_instructions) == (2, 2)
    assert (machine.loops, machine.loads_in_loops, machine.stores_in_loops) == (0, 0, 0)
    assert machine.straight_line and machine.as_dict()["straight_line"] is True


def test_an_indented_label_still_marks_a_loop():
    sass = """
        .section        .text.k,"ax",@progbits
        /*0000*/                   MOV R1, c[0x0][0x28] ;
   .L_x_3:
        /*0010*/                   LDG.E R4, desc[UR4][R6.64] ;
        /*0020*/                   BRA `(.L_x_3) ;
"""
    machine = count_instructions(sass, "k", "sm_90")
    assert (machine.loops, machine.loads_in_loops, machine.straight_line) == (1, 1, False)


def test_a_function_the_machine_code_lacks_is_named_with_those_it_has():
    with pytest.raises(GpuperfError, match=r"kernel 'other': the machine code has no function 'other' \(it has: k\)"):
        count_instructions(PREDICATED, "other", "sm_90", label="kernel 'other'")


def test_a_repeated_question_is_answered_from_memory(monkeypatch):
    # The second look-up of the same source, name and arch reads neither the disk cache nor nvdisasm.
    found = _machine(1, 1)
    asked = []
    monkeypatch.setattr(compiled, "_memory_cache", {})
    monkeypatch.setattr(compiled, "nvrtc_version", lambda: "nvrtc 1")
    monkeypatch.setattr(compiled, "nvdisasm_version", lambda: "nvdisasm 1")
    monkeypatch.setattr(compiled, "disk_cached", lambda *args: asked.append(args[1]) or found)
    assert compiled.compiled_source_memory("src", "k", "sm_90") is found
    assert compiled.compiled_source_memory("src", "k", "sm_90") is found
    assert len(asked) == 1


def _evaluated(threads: int, loads: float, stores: float) -> SimpleNamespace:
    return SimpleNamespace(threads=threads, named=lambda: {"global_loads": loads, "global_stores": stores})


def _machine(loads: int, stores: int, loads_in_loops: int = 0, stores_in_loops: int = 0) -> CompiledMemory:
    return CompiledMemory(loads, stores, loads_in_loops, stores_in_loops, int(bool(loads_in_loops or stores_in_loops)),
                          "sm_90", "k")


@pytest.mark.parametrize(("machine", "loads", "stores", "expected"), [
    # 3 load instructions over 24 loads / 4 threads = 6 per thread: 0.5; no store in the source: 1.0
    (_machine(3, 0), 24.0, 0.0, (0.5, 1.0)),
    # no load in the source: 1.0; 1 store instruction over 8 stores / 4 threads = 2 per thread: 0.5
    (_machine(0, 1), 0.0, 8.0, (1.0, 0.5)),
])
def test_machine_accesses_per_source_access_per_direction(monkeypatch, machine, loads, stores, expected):
    monkeypatch.setattr(compiled, "compiled_memory", lambda kernel, arch: machine)
    assert machine_per_source(None, _evaluated(4, loads, stores)) == pytest.approx(expected)


def test_a_store_in_a_loop_alone_leaves_the_ratio_unknown(monkeypatch):
    # One store of two in a loop: not straight-line, so its trip count would be needed.
    monkeypatch.setattr(compiled, "compiled_memory", lambda kernel, arch: _machine(1, 2, 0, 1))
    assert machine_per_source(None, _evaluated(4, 4.0, 8.0)) is None



def test_the_newest_cuda_major_versions_nvdisasm_is_taken(tmp_path, monkeypatch):
    # Two wheels' folders, cu9 and cu13: by number 13 is newest (as text, "cu9" would sort last).
    import nvidia

    for major in ("cu9", "cu13"):
        (tmp_path / major / "bin").mkdir(parents=True)
        (tmp_path / major / "bin" / "nvdisasm").write_text("")
    monkeypatch.setattr(nvidia, "__path__", [str(tmp_path)])
    assert compiled.nvdisasm_path() == str(tmp_path / "cu13" / "bin" / "nvdisasm")


def test_nvdisasm_version_is_the_last_line_it_prints(monkeypatch):
    import subprocess

    text = "nvdisasm: NVIDIA (R) CUDA disassembler\nCopyright (c) 2005-2025 NVIDIA Corporation\n" \
           "Cuda compilation tools, release 12.9, V12.9.86\n\n"
    monkeypatch.setattr(compiled, "_run_nvdisasm", lambda args, label: subprocess.CompletedProcess(args, 0, text, ""))
    compiled.nvdisasm_version.cache_clear()
    try:
        assert compiled.nvdisasm_version() == "Cuda compilation tools, release 12.9, V12.9.86"
    finally:
        compiled.nvdisasm_version.cache_clear()

# -- loop strides ------------------------------------------------------------------------------------
LOOP_KERNELS = '''
import loopy as lp
import numpy as np

ASSUME = "n mod 256 = 0 and n>=256"


def _kernel(domain, code, a_shape, name):
    k = lp.make_kernel(domain, code, [lp.GlobalArg("a", np.float32, shape=a_shape),
                                      lp.GlobalArg("out", np.float32, shape=("n",)), lp.ValueArg("n", np.int32)],
                       assumptions=ASSUME, lang_version=(2018, 2), name=name)
    return lp.split_iname(k, "i", 256, outer_tag="g.0", inner_tag="l.0")


def backward():
    return _kernel("{[i,j]: 0<=i<n and 0<=j<16}", "out[i] = sum(j, a[i, 15 - j])", ("n", 16), "backward")


def row_times_column():
    return _kernel("{[i,j]: 0<=i<n and 0<=j<n}", "out[i] = sum(j, a[i, j] * a[j, i])", ("n", "n"), "row_times_column")


def squares():
    return _kernel("{[i,j]: 0<=i<n and 0<=j<16}", "out[i] = sum(j, a[i, j*j])", ("n", 256), "squares")


def split_walk():
    k = _kernel("{[i,j]: 0<=i<n and 0<=j<16}", "out[i] = sum(j, a[i, j])", ("n", 16), "split_walk")
    return lp.split_iname(k, "j", 4)


def unrolled_walk():
    k = _kernel("{[i,j]: 0<=i<n and 0<=j<16}", "out[i] = sum(j, a[j, i])", (16, "n"), "unrolled_walk")
    return lp.tag_inames(k, {"j": "unr"})


def store_in_loop():
    k = lp.make_kernel("{[i,j,k]: 0<=i<n and 0<=j<4 and 0<=k<4}", "out[k, i] = sum(j, a[k, j, i])",
                       [lp.GlobalArg("a", np.float32, shape=(4, 4, "n")), lp.GlobalArg("out", np.float32, shape=(4, "n")),
                        lp.ValueArg("n", np.int32)], assumptions=ASSUME, lang_version=(2018, 2), name="store_in_loop")
    return lp.split_iname(k, "i", 256, outer_tag="g.0", inner_tag="l.0")


def half_square():
    k = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = a[i] * a[i]",
                       [lp.GlobalArg("a,out", np.float16, shape=("n",)), lp.ValueArg("n", np.int32)],
                       assumptions=ASSUME, lang_version=(2018, 2), name="half_square")
    return lp.split_iname(k, "i", 256, outer_tag="g.0", inner_tag="l.0")


def f64_call():
    k = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = sqrt(a[i]) * a[i] + 1.0",
                       [lp.GlobalArg("a,out", np.float64, shape=("n",)), lp.ValueArg("n", np.int32)],
                       assumptions=ASSUME, lang_version=(2018, 2), name="f64_call")
    return lp.split_iname(k, "i", 256, outer_tag="g.0", inner_tag="l.0")


def cube_root():
    k = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = cbrt(a[i])",
                       [lp.GlobalArg("a,out", np.float32, shape=("n",)), lp.ValueArg("n", np.int32)],
                       assumptions=ASSUME, lang_version=(2018, 2), name="cube_root")
    return lp.split_iname(k, "i", 256, outer_tag="g.0", inner_tag="l.0")


def one_trip():
    return _kernel("{[i,j]: 0<=i<n and 0<=j<1}", "out[i] = sum(j, a[j, i])", (1, "n"), "one_trip")
'''


@pytest.fixture(scope="module")
def loop_kernels(tmp_path_factory):
    path = tmp_path_factory.mktemp("loops") / "loop_kernels.py"
    path.write_text(LOOP_KERNELS)
    return path


def _loop_lines(path, name: str) -> float:
    from gpuperf.kernels import get_kernel
    from gpuperf.models.properties import kernel_properties

    return kernel_properties(get_kernel(f"{path}:{name}"), {"n": 256}, ["loop_lines"])["loop_lines"]


@pytest.mark.parametrize(("name", "lines"), [
    # a[i, 15 - j]: a step of -1 float, |-1| x 4 bytes / 64 = 1/16 line per load; 256 x 16 loads: 256
    # (the store of out[i] sits outside the loop: 0)
    ("backward", 256 * 16 / 16),
    # a[i, j] steps 1 float (1/16 line), a[j, i] steps a row of 256 floats (1 line): each of the 2 x 256 x 256
    # loads of a costs their mean, 17/32 line: 131072 x 17/32 = 69632 (the largest of the two would be 131072)
    ("row_times_column", 2 * 256 * 256 * 17 / 32),
    # a[i, j*j]: the step is not affine in j, so one line per load: 256 x 16
    ("squares", 256 * 16),
    # loads a[k, j, i] walk their reduction loop j a row of 256 floats at a time: 1 line each, 256 x 16;
    # the store out[k, i] runs in k alone (not in the reduction), also a row a step: 1 line each, 256 x 4
    ("store_in_loop", 256 * 16 + 256 * 4),
    # an unrolled loop is no sequential loop: no line (a[j, i] would step a row, one line per load)
    ("unrolled_walk", 0.0),
    # a loop of one trip moves nothing: no line (a[j, i] would step a row, one line per load, if it counted)
    ("one_trip", 0.0),
])
def test_loop_lines_of_backward_mixed_non_affine_and_single_trip_walks(loop_kernels, name, lines):
    assert _loop_lines(loop_kernels, name) == pytest.approx(lines)


@pytest.mark.parametrize(("code_order_known", "lines"), [(True, 256 * 16 / 4), (False, 256 * 16 / 16)])
def test_a_split_loops_innermost_part_is_the_generated_codes_else_the_inner_one(loop_kernels, monkeypatch,
                                                                                code_order_known, lines):
    # a[i, j] with j split by 4: j_inner steps 1 float (1/16 line), j_outer 4 floats (1/4 line). loopy's code
    # runs j_outer inside j_inner (no priority given), so j_outer's step counts: 256 x 16 loads x 1/4 = 1024.
    # Where no code order is known (a kernel loopy cannot linearize) the name rules pick the inner part:
    # 256 x 16 x 1/16 = 256.
    from gpuperf.models.loop_strides import LoopStrides

    if not code_order_known:
        monkeypatch.setattr(LoopStrides, "_nesting", lambda self: {})
    assert _loop_lines(loop_kernels, "split_walk") == pytest.approx(lines)


# -- the analytical models' columns ---------------------------------------------------------------------
def _launch(**columns) -> pd.DataFrame:
    base = {"threads": 1000.0, "instructions": 1000.0, "global_loads": 2.0, "global_stores": 2.0,
            "gpu_clock_hz": 1e9, "gpu_cores": 100.0}
    rows = max(len(np.atleast_1d(value)) for value in columns.values()) if columns else 1
    return pd.DataFrame({name: np.broadcast_to(value, rows) for name, value in (base | columns).items()})


def test_hit_rates_of_exactly_zero_and_one_are_fractions():
    from gpuperf.models.bsp import BspModel

    rows = _launch(h=[0.0, 1.0, 0.5])
    model = BspModel(l1_hit_rate="h", l2_hit_rate="h").fit(rows, [1e-3, 1e-3, 1e-3])
    assert np.isfinite(model.predict(rows)).all()


def test_the_first_row_of_several_with_text_is_named():
    # Rows 2 and 3 (1-based) hold text in 'instructions': the error names row 2 and its value.
    from gpuperf.models.bsp import BspModel

    rows = _launch(instructions=np.array([1000.0, "many", "lots"], dtype=object))
    with pytest.raises(GpuperfError, match=r"BspModel: row 2: instructions='many' is not a number"):
        BspModel().fit(rows, [1e-3, 1e-3, 1e-3])


def test_the_first_of_several_rows_outside_zero_to_one_is_named():
    from gpuperf.models.bsp import BspModel

    rows = _launch(h=[0.5, 2.0, 300.0])
    with pytest.raises(GpuperfError, match=r"BspModel: row 2: h=2.0 is not a fraction in \[0, 1\] \(2 such rows"):
        BspModel(l1_hit_rate="h").fit(rows, [1e-3, 1e-3, 1e-3])


# -- the linear count model's properties -----------------------------------------------------------------
def test_a_function_counted_zero_times_leaves_a_kernel_vectorised():
    # A sqrt counted 0 times at these sizes (say in a loop of no trips) is no call: the CPU vectorises.
    from gpuperf.models.properties import calls_functions

    assert not calls_functions(SimpleNamespace(ops={("f32", "add"): 10, ("f32", "sqrt"): 0}))
    assert calls_functions(SimpleNamespace(ops={("f32", "add"): 10, ("f32", "sqrt"): 1}))


def test_the_footprint_beyond_a_cache_in_kib_counts_1024_bytes_to_the_kib():
    # vector_copy at n = 65536 reads 4n = 262144 bytes and writes 262144 more (write-only): a footprint of
    # 524288 bytes, 262144 beyond 256 KiB = 262144 bytes (with 1000-byte KiB: 268288), none beyond 1 MiB.
    from gpuperf.kernels import get_kernel
    from gpuperf.models.properties import kernel_properties

    values = kernel_properties(get_kernel("vector_copy"), {"n": 65536},
                               ["footprint_bytes", "footprint_beyond_256KiB", "footprint_beyond_1MiB"])
    assert values == {"footprint_bytes": 524288.0, "footprint_beyond_256KiB": 262144.0, "footprint_beyond_1MiB": 0.0}


def test_half_precision_operations_count_as_float32(loop_kernels):
    # out[i] = a[i] * a[i] in float16 at n = 256: 256 multiplications, float32's (the narrow kind)
    from gpuperf.kernels import get_kernel
    from gpuperf.models.properties import kernel_properties

    values = kernel_properties(get_kernel(f"{loop_kernels}:half_square"), {"n": 256}, ["f32_ops", "f64_ops"])
    assert values == {"f32_ops": 256.0, "f64_ops": 0.0}


@pytest.mark.parametrize(("spec", "sizes", "expected"), [
    # 256 work-items x k = 8 dependent exps each: 2048 float32 transcendentals, which are special
    # operations too (8 per work-item); a kernel that calls functions runs scalar: no vector operations
    ("arith_f32_exp", {"n": 256, "k": 8},
     {"f32_transcendental": 2048.0, "f32_functions": 0.0, "f32_special": 2048.0, "item_special": 8.0,
      "vector_f32_ops": 0.0}),
    # 256 x 8 float64 sqrts: non-transcendental functions, special operations as well
    ("arith_f64_sqrt", {"n": 256, "k": 8},
     {"f64_functions": 2048.0, "f64_transcendental": 0.0, "f64_special": 2048.0, "item_special": 8.0}),
    # 128 x 256 = 32768 items, each 9 multiply-adds, 2 divisions and a sqrt (the catalog's description):
    # 294912 scalar operations (the kernel calls sqrt), 65536 scalar divisions, 3 special per item
    ("call_mix_2d", {"n": 128, "m": 256},
     {"scalar_flops": 294912.0, "scalar_div": 65536.0, "f32_special": 98304.0, "item_flops": 9.0,
      "item_special": 3.0, "vector_f32_ops": 0.0}),
])
def test_operation_properties_of_calling_kernels(spec, sizes, expected):
    from gpuperf.kernels import get_kernel
    from gpuperf.models.properties import kernel_properties

    assert kernel_properties(get_kernel(spec), sizes, list(expected)) == expected


def test_float64_work_per_item_and_a_scatters_lines():
    from pathlib import Path

    from gpuperf.kernels import get_kernel
    from gpuperf.models.properties import kernel_properties

    # arith_f64_mul: 256 items x k = 8 float64 multiplications, vectorised (no call): 8 per item
    assert kernel_properties(get_kernel("arith_f64_mul"), {"n": 256, "k": 8}, ["item_flops", "vector_f64_ops"]) == {
        "item_flops": 8.0, "vector_f64_ops": 2048.0}
    # scatter: out[idx[i]] = a[i] at n = 4096: the store's index is not affine, so one line per store: 4096
    kernels = Path(__file__).parent / "data" / "feature_kernels.py"
    assert kernel_properties(get_kernel(f"{kernels}:scatter"), {"n": 4096}, ["gather_lines"]) == {"gather_lines": 4096.0}


def test_a_zero_calibrated_lambda_is_refused():
    from gpuperf.models.bsp import BspModel

    model = BspModel().fit(_launch(), [1e-3])
    model.check_fitted_values()
    model.lambda_ = 0.0  # a file edited by hand: a time of zero for everything
    with pytest.raises(GpuperfError, match="BspModel: lambda_ is 0.0, not a positive number"):
        model.check_fitted_values()
    model.lambda_ = True  # JSON's true is no number, though Python's bool is an int
    with pytest.raises(GpuperfError, match="BspModel: lambda_ is True, not a positive number"):
        model.check_fitted_values()


def test_an_analytical_models_score_weighs_its_rows():
    # Bounds 0.1, 0.2 and 0.3 s (1, 2 and 3 x 1e12 flops at 1e4 GFLOP/s, no DRAM traffic) against times
    # 0.1, 0.2 and 0.5 s: with the third row weighted 0 the rest are exact, R^2 = 1; unweighted, the
    # residuals (0, 0, 0.2) against the mean 0.8 / 3: 1 - 0.04 / (0.78 / 9) = 1 - 36 / 78 = 7 / 13.
    from gpuperf.models.roofline import RooflineModel

    rows = pd.DataFrame({"flops": [1e12, 2e12, 3e12], "dram_bytes": 0.0, "gpu_peak_f32_gflops": 1e4,
                         "gpu_memory_bandwidth_gbs": 100.0})
    model = RooflineModel().fit(rows)
    assert model.score(rows, [0.1, 0.2, 0.5]) == pytest.approx(7 / 13)
    assert model.score(rows, [0.1, 0.2, 0.5], sample_weight=[1.0, 1.0, 0.0]) == pytest.approx(1.0)


def test_a_property_that_is_not_a_finite_number_is_an_error(monkeypatch):
    # Shapes that overflow (here: an infinite footprint) give no value, as a missing count does.
    import math

    from gpuperf.kernels import get_kernel
    from gpuperf.models import properties

    monkeypatch.setattr(properties, "_footprint_properties", lambda kernel, sizes: dict.fromkeys(
        ("footprint_bytes", "footprint_load_bytes", "footprint_store_bytes", "footprint_write_only_bytes"), math.inf))
    with pytest.raises(GpuperfError, match="kernel 'vector_copy': its static counts give no value for property "
                                           "footprint_load_bytes"):
        properties.kernel_properties(get_kernel("vector_copy"), {"n": 65536}, ["launches", "footprint_load_bytes"])


def test_a_calling_kernels_float64_arithmetic_is_scalar(loop_kernels):
    # out[i] = sqrt(a[i]) * a[i] + 1 in float64 at n = 256: a multiplication and an addition per item,
    # 512 scalar operations (the sqrt call keeps the CPU from vectorising), none vectorised
    from gpuperf.kernels import get_kernel
    from gpuperf.models.properties import kernel_properties

    values = kernel_properties(get_kernel(f"{loop_kernels}:f64_call"), {"n": 256},
                               ["scalar_flops", "vector_f64_ops", "f64_functions"])
    assert values == {"scalar_flops": 512.0, "vector_f64_ops": 0.0, "f64_functions": 256.0}


def test_a_properties_table_labels_sizes_and_counts_loads_and_stores():
    # matmul_naive at n = 16, m = 32, k = 16: 16 x 32 outputs, each 2 loads per step of k = 16: 16384 loads and
    # 512 stores, 16896 accesses; vector_copy at n = 65536: 65536 loads and 65536 stores.
    from gpuperf.kernels import get_kernel
    from gpuperf.models.properties import properties_table

    table = properties_table([(get_kernel("matmul_naive"), {"n": 16, "m": 32, "k": 16}),
                              (get_kernel("vector_copy"), {"n": 65536})], ["global_accesses"])
    assert table.to_dict("records") == [
        {"kernel": "matmul_naive", "sizes": "n=16,m=32,k=16", "global_accesses": 16896.0},
        {"kernel": "vector_copy", "sizes": "n=65536", "global_accesses": 131072.0}]


def test_a_cube_root_is_a_transcendental(loop_kernels):
    # out[i] = cbrt(a[i]) at n = 256: 256 float32 transcendental calls (cbrt is no plain function like sqrt)
    from gpuperf.kernels import get_kernel
    from gpuperf.models.properties import kernel_properties

    values = kernel_properties(get_kernel(f"{loop_kernels}:cube_root"), {"n": 256},
                               ["f32_transcendental", "f32_functions"])
    assert values == {"f32_transcendental": 256.0, "f32_functions": 0.0}


# -- the residual on a reference time, and calibration's arguments -----------------------------------------
def test_the_first_of_several_bad_reference_values_is_named():
    from sklearn.linear_model import LinearRegression

    from gpuperf.models.reference import REFERENCE_COLUMN, ReferenceResidual

    rows = pd.DataFrame({"x": [0.0, 0.5, 1.0], REFERENCE_COLUMN: [0.0, np.inf, np.nan]})
    with pytest.raises(GpuperfError, match=r"2 rows are not, the first at position 1: inf$"):
        ReferenceResidual(LinearRegression()).fit(rows, [1.0, 2.0, 4.0])


def test_an_unknown_statistic_is_refused_before_anything_is_measured(tmp_path):
    from gpuperf.models.linear_calibration import measure_plan

    with pytest.raises(GpuperfError, match="statistic must be one of min, median, not 'mean'"):
        measure_plan({"vector_copy": [{"n": 65536}]}, "opencl:0:0", tmp_path / "store.sqlite", "c", statistic="mean")
    assert not (tmp_path / "store.sqlite").exists()


@pytest.mark.parametrize(("statistic", "time"), [("min", 1.0), ("median", 3.0)])
def test_combining_measured_rows_skips_kernels_outside_the_plan(statistic, time):
    # Two passes of vector_copy at n = 65536: fastest launches 1 and 3 s (min: 1), medians 2 and 4 s (median
    # of the two: 3); a row of a kernel the plan lacks, one no catalog knows, is left out unread.
    from gpuperf.models.linear_calibration import combine_measured

    rows = [{"kernel_spec": "vector_copy", "sizes": {"n": 65536}, "time_s": 2.0, "time_s_min": 1.0},
            {"kernel_spec": "vector_copy", "sizes": {"n": 65536}, "time_s": 4.0, "time_s_min": 3.0},
            {"kernel_spec": "no_such_kernel", "sizes": {"n": 1}, "time_s": 1.0, "time_s_min": 1.0}]
    combined = combine_measured(rows, {"vector_copy": [{"n": 65536}]}, statistic)
    assert combined[["kernel", "sizes", "time_s", "passes"]].to_dict("records") == [
        {"kernel": "vector_copy", "sizes": "n=65536", "time_s": time, "passes": 2}]


def test_the_counts_cache_key_of_a_program_is_the_same_whatever_pythons_hash_seed():
    """loopy orders a program's size parameters (and the divisions of n mod 16 = 0) as a set iterates:
    matmul_naive had 4 keys over 6 seeds, so loopy's slow counts were found again only by chance."""
    import os
    import subprocess
    import sys

    code = ("from gpuperf.kernels import get_kernel; from gpuperf.features import counts; "
            "print([counts._disk_path(get_kernel(k).program, 'loopy').name for k in ('matmul_naive', 'stencil2d')])")
    keys = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in (1, 2, 3, 4)}
    assert len(keys) == 1
