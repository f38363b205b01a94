"""Kernel definitions, spaces, sizes and user kernel files: behaviour that mutation testing of
``gpuperf.kernels`` showed untested. Each test is small (no device run unless noted) and names the
value it expects, worked out by hand."""

from __future__ import annotations

import re

import loopy as lp
import numpy as np
import pytest

from gpuperf.errors import GpuperfError, GpuperfNote
from gpuperf.kernels.catalog import get_kernel
from gpuperf.kernels.space import VariantSpace, get_space, sized_variants


def _twice(config):
    """b = 2a over n in work-groups of ``local_x``; the program assumes n is a multiple of it."""
    program = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = 2*a[i]", [lp.GlobalArg("a,b", np.float32, shape="n"), "..."],
                             assumptions=f"n >= 1 and n mod {config['local_x']} = 0", name="twice",
                             lang_version=(2018, 2))
    return lp.split_iname(program, "i", config["local_x"], outer_tag="g.0", inner_tag="l.0")


def _twice_space() -> VariantSpace:
    return VariantSpace(name="twice", parameters={"local_x": [16, 32, 64]}, defaults={"local_x": 16},
                        check=lambda c: None, make=_twice)


# -- catalog lookup ---------------------------------------------------------------------------------
def test_a_python_file_named_without_its_function_is_told_to_name_it(tmp_path) -> None:
    """``kernels.py`` alone is a user's file missing ``:function``, not an unknown catalog kernel."""
    path = tmp_path / "kernels.py"
    path.write_text("def saxpy():\n    return None\n")
    with pytest.raises(GpuperfError, match=r"name the function too, as .*kernels\.py:function"):
        get_kernel(str(path))


# -- variant spaces ---------------------------------------------------------------------------------
def test_building_a_variant_refuses_an_unknown_parameter_and_a_value_not_in_the_space() -> None:
    space = get_space("stencil2d")
    with pytest.raises(GpuperfError, match=r"has no parameter tile; its parameters: local_x, local_y"):
        space.build({"tile": 4})
    with pytest.raises(GpuperfError, match=r"local_x=3 is not one of 4, 8, 16, 32, 64, 128"):
        space.build({"local_x": 3})


def test_sized_variants_builds_at_most_limit_variants_in_space_order() -> None:
    """At n=64 all three work-group widths divide n; a limit of 2 keeps 16 and 32 only."""
    built = sized_variants(_twice_space(), {"n": 64}, limit=2)
    assert [config["local_x"] for config, _ in built] == [16, 32]


def test_sized_variants_notes_how_many_variants_the_sizes_leave_out() -> None:
    """n=32 is no multiple of 64: that one variant of three is left out, with a note saying so."""
    with pytest.warns(GpuperfNote, match=r"twice: 1 of 3 variants left out at n=32; the first: "
                                         r"sizes outside its assumptions: kernel 'twice\[local_x=64\]': sizes n=32 violate"):
        built = sized_variants(_twice_space(), {"n": 32})
    assert [config["local_x"] for config, _ in built] == [16, 32]


def test_a_spec_parameter_with_no_value_is_not_param_value() -> None:
    from gpuperf.kernels.space import parse_spec

    assert parse_spec(" stencil2d[ local_x = 32 ,unroll=2] ") == ("stencil2d", {"local_x": "32", "unroll": "2"})
    with pytest.raises(GpuperfError, match=r"'local_x=' is not param=value"):
        parse_spec("stencil2d[local_x=]")


BOOL_SPACE = '''
import loopy as lp
import numpy as np

from gpuperf.kernels.space import VariantSpace


def _make(config):
    return lp.make_kernel("{[i]: 0<=i<n}", "b[i] = 2*a[i]", [lp.GlobalArg("a,b", np.float32, shape="n"), "..."],
                          name="flagged", lang_version=(2018, 2))


def space():
    return VariantSpace(name="flagged", parameters={"flag": [False, True]}, defaults={"flag": False},
                        check=lambda c: None, make=_make)
'''


def test_a_bool_parameter_is_named_by_its_own_spelling_not_by_a_number(tmp_path) -> None:
    """``f=1`` names 1.0 where a parameter holds numbers, but True is no number: flag=1 is refused."""
    (tmp_path / "flags.py").write_text(BOOL_SPACE)
    spec = f"{tmp_path / 'flags.py'}:space"
    assert get_kernel(f"{spec}[flag=True]").variant == {"flag": True}
    with pytest.raises(GpuperfError, match=r"flag=1 is not one of False, True"):
        get_kernel(f"{spec}[flag=1]")


def test_a_spaces_sizes_are_checked_against_no_variants_assumptions() -> None:
    """The default variant (local_x=64) refuses n=32, which the local_x=16 and 32 variants take: the
    space's sizes are n=32 all the same; the default variant itself still refuses them."""
    space = VariantSpace(name="twice", parameters={"local_x": [16, 32, 64]}, defaults={"local_x": 64},
                         check=lambda c: None, make=_twice)
    assert space.resolve_sizes({"n": 32}) == {"n": 32}
    with pytest.raises(GpuperfError, match=r"violate its assumptions"):
        space.build({}).resolve_sizes({"n": 32})


# -- kernels made from a TranslationUnit ------------------------------------------------------------
def _program(instruction: str, args: list, domain: str = "{[i]: 0<=i<n}", name: str = "k"):
    return lp.make_kernel(domain, instruction, args, name=name, lang_version=(2018, 2))


def test_a_complex_value_argument_is_data_not_a_size() -> None:
    from gpuperf.kernels.kernel import kernel_from_program

    program = _program("b[i] = alpha*a[i]", [lp.GlobalArg("a,b", np.complex64, shape="n"),
                                             lp.ValueArg("alpha", np.complex64), lp.ValueArg("n", np.int32)])
    kernel = kernel_from_program(program, "cscale", "test")
    assert kernel.params == ("n",) and [a.name for a in kernel.scalar_args] == ["alpha"]
    assert kernel.make_inputs({"n": 4})["alpha"].dtype == np.complex64


def test_a_floating_point_value_argument_that_bounds_a_loop_is_a_size() -> None:
    from gpuperf.kernels.kernel import kernel_from_program

    program = _program("b[i] = a[i]", [lp.GlobalArg("a,b", np.float32, shape="n"), lp.ValueArg("n", np.float32)])
    kernel = kernel_from_program(program, "bounded", "test")
    assert kernel.params == ("n",) and kernel.scalar_args == ()


def test_params_given_as_one_string_are_refused() -> None:
    from gpuperf.kernels.kernel import Kernel

    program = _program("b[i, j] = a[i, j]", [lp.GlobalArg("a,b", np.float32, shape="n, m"), "..."],
                       domain="{[i, j]: 0<=i<n and 0<=j<m}")
    with pytest.raises(GpuperfError, match=r"params lists names, e.g. \('nm',\), not the string 'nm'"):
        Kernel("copy", program, "nm")


def test_a_size_may_be_the_largest_value_its_int32_argument_holds() -> None:
    from gpuperf.kernels.kernel import kernel_from_program

    program = _program("b[i] = a[i]", [lp.GlobalArg("a,b", np.float32, shape="n"), lp.ValueArg("n", np.int32)])
    kernel = kernel_from_program(program, "copy", "test")
    assert kernel.resolve_sizes({"n": 2**31 - 1}) == {"n": 2147483647}
    with pytest.raises(GpuperfError, match=r"n=2147483648 does not fit kernel copy's int32 argument \(-2147483648 to "
                                           r"2147483647\); declare it wider \(lp.ValueArg\('n', np.int64\)\)"):
        kernel.resolve_sizes({"n": 2**31})


def test_expected_outputs_of_a_kernel_without_a_reference_is_an_error() -> None:
    from gpuperf.kernels.kernel import kernel_from_program

    program = _program("b[i] = a[i]", [lp.GlobalArg("a,b", np.float32, shape="n"), lp.ValueArg("n", np.int32)])
    kernel = kernel_from_program(program, "copy", "test")
    with pytest.raises(GpuperfError, match=r"kernel 'copy' has no NumPy reference to check against"):
        kernel.expected_outputs(kernel.make_inputs({"n": 4}), {"n": 4})


def test_a_size_that_only_shapes_an_array_must_be_positive() -> None:
    """m bounds no loop but is a's second extent: m=0 would make an empty array."""
    from gpuperf.kernels.kernel import kernel_from_program

    program = _program("b[i] = a[i, 0]", [lp.GlobalArg("a", np.float32, shape="n, m"),
                                          lp.GlobalArg("b", np.float32, shape="n"), lp.ValueArg("n, m", np.int32)])
    kernel = kernel_from_program(program, "first_column", "test")
    assert kernel.resolve_sizes({"n": 4, "m": 3}) == {"n": 4, "m": 3}
    with pytest.raises(GpuperfError, match=r"size parameter m=0 must be a positive integer"):
        kernel.resolve_sizes({"n": 4, "m": 0})


def test_a_data_value_argument_without_a_dtype_loopy_cannot_infer_is_named() -> None:
    from gpuperf.kernels.kernel import Kernel

    program = _program("b[i] = alpha*a[i]", [lp.GlobalArg("a,b", np.float32, shape="n"), "..."])
    with pytest.raises(GpuperfError, match=r"argument\(s\) alpha have no dtype and loopy cannot infer one"):
        Kernel("scale", program, ("n",))


SPACE_AS_KERNEL = '''
from gpuperf.kernels.space import VariantSpace


def space():
    return VariantSpace(name="halfdone", parameters={"local_x": [16, 32]}, defaults={},
                        check=lambda c: None, make=lambda c: None)
'''


def test_a_users_space_named_as_a_kernel_is_checked_naming_its_file(tmp_path) -> None:
    (tmp_path / "halfdone.py").write_text(SPACE_AS_KERNEL)
    with pytest.raises(GpuperfError, match=r"halfdone\.py:space\): defaults give no value for parameter local_x"):
        get_kernel(f"{tmp_path / 'halfdone.py'}:space")


# -- parallel loops ---------------------------------------------------------------------------------
def test_a_grid_stride_loop_takes_its_kernels_name_and_refuses_zero_blocks() -> None:
    from gpuperf.kernels.parallel_loops import grid_stride_loop

    kernel = grid_stride_loop("loop_saxpy", 32, 3)
    assert (kernel.name, kernel.variant) == ("loop_saxpy", {"threads": 32, "blocks": 3})
    assert kernel.launch({"n": 1000}) == ((96, 1, 1), (32, 1, 1))
    with pytest.raises(GpuperfError, match=r"at least one thread and one block, not 32 x 0"):
        grid_stride_loop("saxpy", 32, 0)


# -- stencil references (the OpenCL tests check each kernel against these) ---------------------------
SIXTEEN = {"n": 16, "m": 16}


@pytest.mark.parametrize("name", ["stencil2d", "jacobi2d_5pt", "jacobi2d_9pt", "gaussian_5x5"])
def test_a_weighted_stencil_keeps_a_constant_field(name: str) -> None:
    """Every weighted stencil's weights sum to 1 (means, a normalised binomial blur)."""
    from gpuperf.kernels.stencils import STENCILS

    stencil = STENCILS[name]
    padded = np.full((16 + 2 * stencil.radius,) * 2, 3.0, dtype=np.float32)
    np.testing.assert_allclose(stencil.reference({"a": padded}, SIXTEEN)["out"], 3.0, rtol=1e-6)


def test_gaussian_5x5_spreads_an_impulse_by_binomial_weights_over_256() -> None:
    """A 1 at padded (7, 7) is the centre input of output (5, 5) (radius 2); outputs 3..7 read it."""
    from gpuperf.kernels.stencils import STENCILS

    padded = np.zeros((20, 20), dtype=np.float32)
    padded[7, 7] = 1.0
    out = STENCILS["gaussian_5x5"].reference({"a": padded}, SIXTEEN)["out"]
    binomial = np.array([1, 4, 6, 4, 1])
    np.testing.assert_allclose(out[3:8, 3:8], np.outer(binomial, binomial) / 256, atol=1e-8)
    assert out[5, 5] == pytest.approx(36 / 256) and out.sum() == pytest.approx(1.0)


def test_srad2_moves_a_quarter_of_lambda_of_each_difference() -> None:
    """With c = 1, out = J + 0.25 * lambda (0.5) * (sum of the four differences): a lone 1 keeps
    1 - 0.125 * 4 = 0.5 and gives each 4-neighbour 0.125."""
    from gpuperf.kernels.stencils import STENCILS

    J = np.zeros((18, 18), dtype=np.float32)
    J[6, 6] = 1.0  # output (5, 5)
    out = STENCILS["srad2"].reference({"J": J, "c": np.ones((18, 18), np.float32)}, SIXTEEN)["out"]
    assert out[5, 5] == pytest.approx(0.5)
    assert [out[4, 5], out[6, 5], out[5, 4], out[5, 6]] == [pytest.approx(0.125)] * 4
    assert out[4, 4] == 0.0


def test_hotspot_holds_the_ambient_temperature_and_heats_by_its_rodinia_coefficients() -> None:
    """Rodinia's 512 x 512 chip: cell = 0.016 / 512, step / cap = 0.001 / (3e6 * cell^2) = 0.34133,
    1 / R_x = 2 * 100 * 0.0005 = 0.1, 1 / R_z = 100 * cell^2 / 0.0005 = 1 / 5120. At the ambient
    80 degrees with no power nothing moves; power 3 heats a cell by 1.024; a cell at 81 among cells
    at 80 cools by 0.34133 * (0.4 + 1/5120) and warms each neighbour by 0.034133."""
    from gpuperf.kernels.stencils import STENCILS

    reference = STENCILS["hotspot2d"].reference
    temp = np.full((18, 18), 80.0, dtype=np.float32)
    power = np.zeros((16, 16), dtype=np.float32)
    np.testing.assert_allclose(reference({"temp": temp, "power": power}, SIXTEEN)["out"], 80.0, rtol=1e-7)
    power[2, 3] = 3.0
    heated = reference({"temp": temp, "power": power}, SIXTEEN)["out"]
    assert heated[2, 3] == pytest.approx(81.024, abs=1e-4) and heated[2, 4] == 80.0
    temp[6, 6] = 81.0  # output (5, 5)
    out = reference({"temp": temp, "power": np.zeros((16, 16), np.float32)}, SIXTEEN)["out"]
    assert out[5, 5] == pytest.approx(81 - 0.341333 * (0.4 + 1 / 5120), abs=1e-4)
    assert out[4, 5] == pytest.approx(80.034133, abs=1e-4) and out[5, 6] == pytest.approx(80.034133, abs=1e-4)


def test_gradient_of_a_constant_field_adds_one_over_the_root_of_its_epsilon() -> None:
    """No differences: out = c + 1 / sqrt(1e-4) = c + 100."""
    from gpuperf.kernels.stencils import STENCILS

    padded = np.full((18, 18), 2.0, dtype=np.float32)
    np.testing.assert_allclose(STENCILS["gradient"].reference({"a": padded}, SIXTEEN)["out"], 102.0, rtol=1e-6)


def test_a_loop_of_the_degree_32_polynomial_sums_33_coefficients_at_one() -> None:
    """Horner's rule over 1/(k+1), k = 0..32: at x = 1 the harmonic number H_33 = 4.088798; at 0 the
    constant term 1. The loop's default size is 4096 iterations."""
    from gpuperf.kernels.parallel_loops import grid_stride_loop

    kernel = grid_stride_loop("polynomial", 32, 1)
    assert kernel.resolve_sizes() == {"n": 4096}
    x = np.array([1.0, 0.0], dtype=np.float32)
    got = kernel.expected_outputs({"x": x, "y": np.zeros(2, np.float32)}, {"n": 2})["y"]
    np.testing.assert_allclose(got, [4.088798, 1.0], rtol=1e-6)


# -- catalog kernels: references in closed form, and the sizes their assumptions take -----------------
def test_arith_references_follow_their_documented_updates() -> None:
    """k = 64 updates from v = w: add gives 65 w, mul w^65, div alternates w / w = 1, w / 1 = w and
    ends at w, exp(-v) converges to the omega constant 0.567143, sqrt to 1."""
    w = np.array([0.75, 1.25], dtype=np.float64)
    expected = {"add": 65 * w, "mul": w ** 65, "div": w, "exp": [0.5671433, 0.5671433], "sqrt": [1.0, 1.0]}
    for op, want in expected.items():
        kernel = get_kernel(f"arith_f64_{op}")
        got = kernel.reference({"a": w}, {"n": 2, "k": 64})["out"]
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=op)
        assert kernel.rtol == 1e-10  # f64 results are checked to 1e-10, f32 ones to 1e-4
    assert get_kernel("arith_f32_add").rtol == 1e-4


def test_arith_mul_draws_its_inputs_near_one() -> None:
    """w^k stays finite only for w near 1: mul's inputs come from [0.999, 1.001], the others' from [0.5, 1.5]."""
    a = get_kernel("arith_f32_mul").make_inputs({"n": 256, "k": 8})["a"]
    assert a.min() >= 0.999 and a.max() <= 1.001
    assert get_kernel("arith_f32_add").make_inputs({"n": 256, "k": 8})["a"].max() > 1.1


@pytest.mark.parametrize(("name", "sizes"), [
    ("vector_fill", {"n": 100}),                       # n mod 256 = 0
    ("matmul_naive", {"n": 16, "m": 16, "k": 24}),     # k mod 16 = 0
    ("arith_f32_add", {"n": 256, "k": 12}),            # k mod 8 = 0 (the unrolled updates)
    ("row_sum", {"n": 16, "m": 256}),                  # n, m multiples of 256
    ("nbody", {"n": 64}),                              # tiles of 128 bodies
])
def test_catalog_kernels_refuse_sizes_outside_their_assumptions(name: str, sizes: dict) -> None:
    from gpuperf.kernels.kernel import SizesViolateAssumptions

    with pytest.raises(SizesViolateAssumptions, match="violate its assumptions"):
        get_kernel(name).resolve_sizes(sizes)


def test_nbody_softens_by_eps_squared_0_01_in_groups_of_128() -> None:
    """128 unit masses at one point: phi = 128 / sqrt(0 + 0.01) = 1280 for each."""
    kernel = get_kernel("nbody")
    zeros = np.zeros(128, dtype=np.float32)
    inputs = {"x": zeros, "y": zeros, "z": zeros, "mass": np.ones(128, np.float32)}
    np.testing.assert_allclose(kernel.expected_outputs(inputs, {"n": 128})["phi"], 1280.0, rtol=1e-6)
    assert kernel.launch({"n": 512}) == ((512, 1, 1), (128, 1, 1))


def test_calibration_kernels_sum_their_documented_number_of_terms() -> None:
    """At a = 1: poly_2d is 1 + 1 then 8 Horner steps adding 1/2 .. 1/9, i.e. 1 + H_9 = 3.828968;
    div_2d sums (k+1)/(1+k) over 4 terms = 4; sqrt_2d sqrt(1) + sqrt(2) + sqrt(3) + sqrt(4) = 6.146264."""
    ones = {"a": np.ones((16, 16), dtype=np.float32)}
    for name, want in (("poly_2d_f32", 3.828968), ("div_2d", 4.0), ("sqrt_2d", 6.146264)):
        got = get_kernel(name).expected_outputs(ones, {"n": 16, "m": 16})["out"]
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=name)


def test_test_kernels_have_their_documented_shapes() -> None:
    """skinny_matmul: (n x 16)(16 x m); convolution_2d: a 5 x 5 filter over an (n+4) x (m+4) image."""
    sizes = {"n": 32, "m": 16}
    skinny = get_kernel("skinny_matmul")
    assert {a.name: skinny.array_shape(a, sizes) for a in skinny.array_args} == {
        "a": (32, 16), "b": (16, 16), "c": (32, 16)}
    convolution = get_kernel("convolution_2d")
    assert {a.name: convolution.array_shape(a, sizes) for a in convolution.array_args} == {
        "img": (36, 20), "f": (5, 5), "out": (32, 16)}


def test_a_huge_float_size_is_said_as_written_not_as_its_hundreds_of_digits():
    """A campaign's ``{n = 1e300}`` (TOML's float) was quoted as the 301 digits of int(1e300)."""
    kernel = get_kernel("vector_copy")
    for value, shown in ((1e300, "n=1e+300"), (np.float64(1e20), "n=1e+20"), (3e9, "n=3000000000.0"),
                         (3_000_000_000, "n=3000000000")):
        with pytest.raises(GpuperfError) as raised:
            kernel.resolve_sizes({"n": value})
        assert f"size parameter {shown} does not fit kernel vector_copy's int32 argument (-2147483648 to " \
               "2147483647)" in str(raised.value)
        assert len(str(raised.value)) < 200


@pytest.mark.parametrize(("value", "message"), [
    (2**53 + 1, None),  # whole, though no float holds it
    (2**63 + 1, "does not fit kernel loop_saxpy's int64 argument (-9223372036854775808 to 9223372036854775807)"),
    (float("inf"), "is not an integer"),
    (3.5, "must be a whole number"),
])
def test_a_size_past_2_to_the_53_is_whole_and_an_infinite_one_no_integer(value, message):
    from gpuperf.kernels.parallel_loops import grid_stride_loop

    kernel = grid_stride_loop("saxpy", 32, 1)
    if message is None:
        assert kernel.resolve_sizes({"n": value}) == {"n": value}
    else:
        with pytest.raises(GpuperfError, match=re.escape(message)):
            kernel.resolve_sizes({"n": value})


def test_a_space_named_by_its_file_alone_is_told_to_name_its_function(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("def space():\n    pass\n")
    with pytest.raises(GpuperfError, match=re.escape(f"name the function too, as {path}:function")):
        get_space(str(path))
