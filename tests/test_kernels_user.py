"""A user's own kernel from ``file.py:function``: size parameters, data scalars, reserved names and load errors."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import loopy as lp
import numpy as np
import pytest

from gpuperf.errors import GpuperfError
from gpuperf.features.table import extract_features
from gpuperf.kernels.kernel import Kernel
from gpuperf.kernels.loader import load_user_kernel
from gpuperf.measure import TimingSettings, VerifyFailed, measure

FAST = TimingSettings(warmup=1, min_repeats=3, min_time_s=0.001, max_repeats=20)

KERNELS = '''
import loopy as lp
import numpy as np
from gpuperf.kernels.kernel import Kernel

LANG = lp.version.LOOPY_USE_LANGUAGE_VERSION_2018_2


def _saxpy(dtype=np.float32):
    program = lp.make_kernel(
        "{[i]: 0<=i<n}", "y[i] = alpha*x[i] + y[i]",
        [lp.ValueArg("alpha", dtype), lp.GlobalArg("x,y", dtype, shape="n"), lp.ValueArg("n", np.int32)],
        assumptions="n>=128 and n mod 128 = 0", name="saxpy", lang_version=LANG)
    return lp.split_iname(program, "i", 128, outer_tag="g.0", inner_tag="l.0")


def saxpy():
    return _saxpy()


def saxpy_checked():
    return Kernel("saxpy_checked", _saxpy(np.float64), ("n",),
                  reference=lambda x, s: {"y": x["alpha"] * x["x"] + x["y"]}, rtol=1e-12)


def saxpy_wrong_reference():
    return Kernel("saxpy_wrong_reference", _saxpy(np.float64), ("n",),
                  reference=lambda x, s: {"y": 2.0 * x["x"] + x["y"]}, rtol=1e-12)


def strided():
    program = lp.make_kernel(
        "{[i]: 0<=i<n}", "b[i] = a[i*stride]",
        [lp.GlobalArg("a", np.float32, shape="n*stride"), lp.GlobalArg("b", np.float32, shape="n"),
         lp.ValueArg("stride", np.int32), "..."],
        assumptions="n>=64 and n mod 64 = 0", name="strided", lang_version=LANG)
    return lp.split_iname(program, "i", 64, outer_tag="g.0", inner_tag="l.0")


def _table_scale():
    program = lp.make_kernel(
        "{[i]: 0<=i<n}", "b[i] = a[i] * c[i % 16]",
        [lp.GlobalArg("a,b", np.float32, shape="n"), lp.ConstantArg("c", np.float32, shape=(16,)), lp.ValueArg("n", np.int32)],
        assumptions="n>=128 and n mod 128 = 0", name="table_scale", lang_version=LANG)
    return lp.split_iname(program, "i", 128, outer_tag="g.0", inner_tag="l.0")


def table_scale():
    return Kernel("table_scale", _table_scale(), ("n",),
                  reference=lambda x, s: {"b": x["a"] * np.tile(x["c"], s["n"] // 16)})


def table_scale_wrong_reference():
    return Kernel("table_scale_wrong_reference", _table_scale(), ("n",),
                  reference=lambda x, s: {"b": x["a"] * x["c"][0]})


def not_a_kernel():
    return 42


def raises():
    raise RuntimeError("no such tile size")


def tiled(tile, *more, scale=2, **options):
    raise RuntimeError("never called")
'''


@pytest.fixture(scope="module")
def kernel_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("user") / "kernels.py"
    path.write_text(KERNELS)
    return path


def test_float_value_arguments_are_data_and_integer_ones_are_sizes(kernel_file: Path) -> None:
    saxpy = load_user_kernel(f"{kernel_file}:saxpy")
    assert saxpy.params == ("n",)
    assert [arg.name for arg in saxpy.scalar_args] == ["alpha"]
    strided = load_user_kernel(f"{kernel_file}:strided")
    assert set(strided.params) == {"n", "stride"} and strided.scalar_args == ()


def test_data_scalars_are_drawn_like_the_arrays_and_refused_as_sizes(kernel_file: Path) -> None:
    saxpy = load_user_kernel(f"{kernel_file}:saxpy")
    inputs = saxpy.make_inputs({"n": 256}, seed=3)
    assert isinstance(inputs["alpha"], np.float32) and 0.5 <= inputs["alpha"] <= 1.5
    assert inputs["alpha"] != saxpy.make_inputs({"n": 256}, seed=4)["alpha"]
    with pytest.raises(GpuperfError, match="'alpha' is a data argument of kernel 'saxpy', not a size parameter"):
        saxpy.resolve_sizes({"n": 256, "alpha": 2})


def test_an_index_array_reaching_past_the_array_it_indexes_is_refused_before_drawing() -> None:
    """out[idx[i]] with idx drawn from 1..64 (integer_range) and out of 8 elements: measure wrote past
    out's end and pocl aborted the process ('corrupted size vs. prev_size'), with no gpuperf message."""
    from gpuperf.kernels.kernel import kernel_from_program

    program = lp.make_kernel("{[i]: 0<=i<n}", "out[idx[i]] = a[i]",
                             [lp.GlobalArg("a", np.float32, shape="n"), lp.GlobalArg("idx", np.int32, shape="n"),
                              lp.GlobalArg("out", np.float32, shape="m"), lp.ValueArg("m", np.int32), "..."],
                             name="scatter", lang_version=(2018, 2))
    scatter = kernel_from_program(program, "scatter", "a user's scatter")
    with pytest.raises(GpuperfError, match=r"kernel scatter: array idx indexes axis 0 of out \(extent 8 at these "
                                           r"sizes\), but its inputs are drawn from 1 to 64 \(integer_range\).* "
                                           r"integer_range=\(0, 7\)"):
        scatter.make_inputs({"n": 128, "m": 8})
    assert set(scatter.make_inputs({"n": 128, "m": 65})) == {"a", "idx"}  # 1..64 fits 65 elements
    ranged = Kernel(name="scatter", program=program, params=("n", "m"), integer_range=(0, 7))
    assert ranged.make_inputs({"n": 128, "m": 8})["idx"].max() <= 7


def _indexing(name: str, body: str, domains: str | list[str] = "{[i]: 0<=i<n}", **arrays: str) -> Kernel:
    """A kernel of ``body`` with float arrays src, a, out, int32 arrays idx, rowptr, col (their shapes
    in ``arrays``, n elements by default) and size parameters n, m."""
    from gpuperf.kernels.kernel import kernel_from_program

    shapes = {"src": "m", "a": "n", "out": "n", "idx": "n", **arrays}
    args = [lp.GlobalArg(array, np.int32 if array in ("idx", "rowptr", "col") else np.float32, shape=shape,
                         for_atomic=array == "out" and "atomic" in body) for array, shape in shapes.items()]
    program = lp.make_kernel(domains, body, [*args, lp.ValueArg("n, m", np.int32)], name=name,
                             lang_version=(2018, 2))
    return kernel_from_program(program, name, "an indexing kernel")


def test_an_index_array_read_into_a_temporary_is_checked_as_its_index() -> None:
    """<> t = idx[i]; src[t] (and out[t] = ...) escaped the range check, and pocl's heap was corrupted."""
    gather = _indexing("gather", "<> t = idx[i]\nout[i] = src[t]")
    scatter = _indexing("scatter", "<> t = idx[i]\nout[t] = a[i] {atomic}", out="m")
    further = _indexing("further", "<> t = idx[i]\n<> u = t\nout[i] = src[u]")
    for kernel, indexed in ((gather, "src"), (scatter, "out"), (further, "src")):
        with pytest.raises(GpuperfError, match=rf"kernel {kernel.name}: array idx indexes axis 0 of {indexed} \(extent "
                                               r"16 at these sizes\), .* integer_range=\(0, 15\), or sizes"):
            kernel.make_inputs({"n": 64, "m": 16})
        assert kernel.make_inputs({"n": 64, "m": 65})["idx"].max() <= 64


def test_an_index_plus_a_constant_is_checked_with_the_range_shifted() -> None:
    """src[idx[i] + 1] was checked as src[idx[i]]: 1..64 passed for 65 elements, and read the 66th."""
    plus = _indexing("plus", "out[i] = src[idx[i] + 1]")
    with pytest.raises(GpuperfError, match=r"kernel plus: array idx plus 1 indexes axis 0 of src \(extent 65 at these "
                                           r"sizes\), but its inputs are drawn from 1 to 64 \(integer_range\): they "
                                           r"would reach past its end; .*integer_range=\(0, 63\)"):
        plus.make_inputs({"n": 64, "m": 65})
    assert "idx" in plus.make_inputs({"n": 64, "m": 66})
    minus = _indexing("minus", "<> t = idx[i] - 2\nout[i] = src[t]")  # 1 - 2 is before src's start
    with pytest.raises(GpuperfError, match=r"array idx minus 2 indexes .* reach before its start; .*integer_range=\(2, "):
        minus.make_inputs({"n": 64, "m": 1000})
    far = _indexing("far", "out[idx[i] + 100000] = a[i] {atomic}", out="m")
    with pytest.raises(GpuperfError, match=r"array idx plus 100000 indexes axis 0 of out .*past its end; sizes where out "
                                           r"is longer$"):
        far.make_inputs({"n": 64, "m": 1000})


def test_index_values_no_range_bounds_are_refused_unless_the_kernel_draws_its_own_inputs() -> None:
    """CSR's loop bounds read from rowptr, or idx[i] * 1000 as an index: measured, they ran past the arrays."""
    spmv = _indexing("spmv", """
        for i
            <> jstart = rowptr[i]
            <> jend = rowptr[i + 1]
            out[i] = sum(j, a[j] * src[col[j]])
        end
        """, ["{[i]: 0<=i<n}", "{[j]: jstart<=j<jend}"], rowptr="n + 1", col="n")
    with pytest.raises(GpuperfError, match=r"^kernel spmv: the bounds of loop j are read from array rowptr, so gpuperf "
                                           r"cannot tell .* give the kernel inputs of its own \(a Kernel subclass whose "
                                           r"make_inputs draws valid ones\) to measure it$"):
        spmv.make_inputs({"n": 64, "m": 1000})
    scaled = _indexing("scaled", "<> t = idx[i] * 1000\nout[i] = src[t]")
    with pytest.raises(GpuperfError, match=r"^kernel scaled: a value read from array idx indexes axis 0 of src through an "
                                           r"expression other than idx\[...\] plus a constant"):
        scaled.make_inputs({"n": 64, "m": 1000})
    data = _indexing("data", "<> t = idx[i] * 1000\nout[i] = a[i] * t").index_uses  # a value, not an index
    assert not data.shifted and not data.unbounded

    class OwnInputs(Kernel):
        def make_inputs(self, sizes=None, seed=0):
            return {"idx": np.zeros(64, np.int32), "src": np.ones(1000, np.float32)}

    own = OwnInputs(name="own", program=scaled.program, params=("n", "m"))
    assert own.make_inputs({"n": 64, "m": 1000})["idx"].max() == 0


def test_a_program_of_several_entry_points_is_one_error_naming_them() -> None:
    """lp.merge of two kernels: loopy's 'TranslationUnit has multiple possible entrypoints' came as a traceback."""
    from gpuperf.kernels.kernel import kernel_from_program

    first = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = 2*a[i]", [lp.GlobalArg("a,b", np.float32, shape="n"), "..."],
                           name="first", lang_version=(2018, 2))
    second = lp.make_kernel("{[i]: 0<=i<n}", "c[i] = 3*a[i]", [lp.GlobalArg("a,c", np.float32, shape="n"), "..."],
                            name="second", lang_version=(2018, 2))
    merged = lp.merge([first, second])
    for make in (lambda: kernel_from_program(merged, "both", "two kernels"), lambda: Kernel(name="both", program=merged, params=("n",))):
        with pytest.raises(GpuperfError, match=r"kernel both: the program has 2 entry points \(first, second\); .* "
                                               r"program.with_entrypoints\('NAME'\)"):
            make()
    assert kernel_from_program(merged.with_entrypoints("second"), "second", "one").params == ("n",)


def test_a_kernel_calling_another_is_refused_for_that_reason_alone() -> None:
    """A program calling another loopy kernel: the error led with loopy's TypeError from its statistics,
    the limitation to act on only in parentheses after it."""
    from gpuperf.features.counts import symbolic_counts
    from gpuperf.kernels.kernel import kernel_from_program

    child = lp.make_function("{[j]: 0<=j<4}", "y[j] = 2*x[j]", [lp.GlobalArg("x,y", np.float32, shape=(4,))],
                             name="twice", lang_version=(2018, 2))
    parent = lp.make_kernel("{[i,j]: 0<=i<n and 0<=j<4}", "[j]: b[i, j] = twice([j]: a[i, j])",
                            [lp.GlobalArg("a,b", np.float32, shape="n,4"), "..."], name="calls", lang_version=(2018, 2))
    program = lp.merge([lp.split_iname(parent, "i", 32, outer_tag="g.0", inner_tag="l.0"), child])
    kernel = kernel_from_program(program, "calls", "a kernel calling another")
    for method in ("auto", "fast", "loopy"):
        with pytest.raises(GpuperfError) as error:
            symbolic_counts(kernel, method, disk_cache=False)
        assert str(error.value) == ("kernel 'calls': programs that call other loopy kernels (here twice) are not "
                                    "supported by the static features (features, predict, advise); measure runs them")


def test_features_for_a_gpu_stand_without_registers_where_the_cuda_code_cannot_be_made() -> None:
    """loopy has no CUDA name for complex64: features --gpu H100 lost every static feature to that error."""
    from gpuperf.errors import GpuperfNote
    from gpuperf.kernels.kernel import kernel_from_program

    program = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = 2*a[i]", [lp.GlobalArg("a,b", np.complex64, shape="n"), "..."],
                             name="cscale", lang_version=(2018, 2))
    kernel = kernel_from_program(lp.split_iname(program, "i", 32, outer_tag="g.0", inner_tag="l.0"), "cscale", "")
    with pytest.warns(GpuperfNote, match=r"kernel 'cscale': loopy cannot generate its cuda code .*complex64.*; "
                                         r"registers and occupancy left empty \(NaN\)"):
        features = extract_features(kernel, {"n": 1024}, gpu="H100")
    assert features["global_loads_per_thread"] == 1.0 and np.isnan(features["occupancy"])


def test_a_padding_in_an_extent_may_be_zero_and_every_extent_must_be_positive() -> None:
    """shape n + pad refused pad=0 ('must be a positive integer'), though every extent is then positive."""
    from gpuperf.kernels.kernel import kernel_from_program

    program = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = a[i + pad]",
                             [lp.GlobalArg("a", np.float32, shape="n+pad"), lp.GlobalArg("b", np.float32, shape="n"),
                              lp.ValueArg("pad", np.int32), "..."], name="shifted", lang_version=(2018, 2))
    shifted = kernel_from_program(program, "shifted", "a user's shifted copy")
    assert shifted.resolve_sizes({"n": 64, "pad": 0}) == {"n": 64, "pad": 0}
    with pytest.raises(GpuperfError, match=r"size parameter pad=-1 must be 0 or more \(it is part of an array's extent"):
        shifted.resolve_sizes({"n": 64, "pad": -1})
    with pytest.raises(GpuperfError, match=r"size parameter n=0 must be a positive integer"):
        shifted.resolve_sizes({"n": 0, "pad": 3})
    shrunk = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = a[i]", [lp.GlobalArg("a", np.float32, shape="n"),
                            lp.GlobalArg("b", np.float32, shape="n-cut"), lp.ValueArg("cut", np.int32), "..."],
                            name="shrunk", lang_version=(2018, 2))
    with pytest.raises(GpuperfError, match=r"array b of kernel shrunk: extent .*cut is 0 at these sizes; an array.s extents must be positive"):
        kernel_from_program(shrunk, "shrunk", "").resolve_sizes({"n": 8, "cut": 8})


def test_features_need_only_the_sizes(kernel_file: Path) -> None:
    features = extract_features(load_user_kernel(f"{kernel_file}:saxpy"), {"n": 4096})
    assert features["global_size_0"] == 4096
    assert features["global_loads_per_thread"] == 2 and features["global_stores_per_thread"] == 1


@pytest.mark.opencl
def test_a_data_scalar_reaches_the_device(kernel_file: Path) -> None:
    result = measure(load_user_kernel(f"{kernel_file}:saxpy_checked"), {"n": 1024}, settings=FAST)
    assert result.verified and result.max_rel_error < 1e-12
    with pytest.raises(VerifyFailed):
        measure(load_user_kernel(f"{kernel_file}:saxpy_wrong_reference"), {"n": 1024}, settings=FAST)


@pytest.mark.opencl
def test_a_constant_array_reaches_the_device_and_is_verified(kernel_file: Path) -> None:
    kernel = load_user_kernel(f"{kernel_file}:table_scale")
    assert [arg.name for arg in kernel.array_args] == ["a", "b", "c"]
    result = measure(kernel, {"n": 1024}, settings=FAST)
    assert result.verified and result.max_rel_error == 0
    with pytest.raises(VerifyFailed):
        measure(load_user_kernel(f"{kernel_file}:table_scale_wrong_reference"), {"n": 1024}, settings=FAST)


@pytest.mark.parametrize(("spec", "message"), [
    ("{file}", "name the function too"),
    ("{file}:missing", "does not define a function 'missing'; it defines"),
    ("{file}:not_a_kernel", "returned int; expected a loopy TranslationUnit or gpuperf Kernel"),
    ("{file}:raises", r"raises\(\) raised RuntimeError: no such tile size"),
    ("{file}:tiled", r"tiled\(\) takes tile without a default, but gpuperf calls a kernel function with no arguments: "
                     r"give tile a default, or name a function that calls it with values \(def my_tiled\(\): return "
                     r"tiled\(tile=\.\.\.\)\)"),
    ("/no/such/file.py:f", "kernel file '/no/such/file.py' does not exist"),
])
def test_load_errors_name_the_file_and_function(kernel_file: Path, spec: str, message: str) -> None:
    with pytest.raises(GpuperfError, match=message):
        load_user_kernel(spec.format(file=kernel_file))


def test_every_parameter_without_a_default_is_named_and_star_arguments_are_not(tmp_path: Path) -> None:
    path = tmp_path / "two.py"
    path.write_text("def two(a, *args, b, c=1, **kwargs):\n    raise AssertionError('called')\n")
    with pytest.raises(GpuperfError, match=r"two\(\) takes a, b without a default.*give a, b a default, or name a "
                                           r"function that calls it with values \(def my_two\(\): return "
                                           r"two\(a=\.\.\., b=\.\.\.\)\)$"):
        load_user_kernel(f"{path}:two")


def test_the_examples_kernel_function_is_usable_on_the_command_line(capsys: pytest.CaptureFixture) -> None:
    """examples/user_kernel.py:moving_average took a work-group size with no default, so naming it on the
    command line raised TypeError from inside the call."""
    from gpuperf.cli import main

    example = Path(__file__).parent.parent / "examples" / "user_kernel.py"
    assert main(["features", f"{example}:moving_average", "-p", "n=4096", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["local_size_0"] == 256


def test_a_file_that_fails_to_import_says_why(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("def f(:\n")
    with pytest.raises(GpuperfError, match="broken.py' failed to import: SyntaxError"):
        load_user_kernel(f"{path}:f")


def test_a_kernel_file_may_define_dataclasses_with_postponed_annotations(tmp_path: Path) -> None:
    """dataclasses look the module up in sys.modules while the file runs, as an import would."""
    (tmp_path / "tiles.py").write_text("from __future__ import annotations\n" + KERNELS + "\n\n"
                                       "from dataclasses import dataclass\n\n\n@dataclass\nclass Tile:\n"
                                       "    width: int = 128\n\n\ndef tiled():\n    Tile()\n    return _saxpy()\n")
    assert load_user_kernel(f"{tmp_path / 'tiles.py'}:tiled").params == ("n",)


def test_a_kernel_file_imports_modules_beside_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "shapes.py").write_text("TILE = 64\n")
    (tmp_path / "tiled.py").write_text(KERNELS + "\n\nfrom shapes import TILE\n\n\ndef tiled():\n"
                                       "    assert TILE == 64\n    return _saxpy()\n")
    monkeypatch.chdir("/")
    monkeypatch.setattr("sys.path", list(__import__("sys").path))
    assert load_user_kernel(f"{tmp_path / 'tiled.py'}:tiled").params == ("n",)
    assert str(tmp_path) in __import__("sys").path  # so its functions may import beside it later too


def test_a_kernel_whose_params_miss_a_loop_bound_says_so(kernel_file: Path) -> None:
    from gpuperf.kernels.kernel import Kernel

    saxpy = load_user_kernel(f"{kernel_file}:saxpy")
    unlisted = Kernel("unlisted", saxpy.program, ())
    with pytest.raises(GpuperfError, match=r"loop domains use n, which its size parameters \(none\) do not list"):
        unlisted.resolve_sizes({})
    with pytest.raises(GpuperfError, match="add n to the Kernel's params"):
        measure(unlisted, {}, settings=FAST)


SPACE = '''
import loopy as lp
import numpy as np

from gpuperf.kernels.kernel import Kernel
from gpuperf.kernels.space import VariantSpace


def _scale(config):
    program = lp.make_kernel("{[i, j]: 0<=i<n and 0<=j<m}", "b[j, i] = 2*a[j, i]",
                             [lp.GlobalArg("a,b", np.float32, shape="m, n"), "..."],
                             assumptions="n mod 128 = 0 and m mod 16 = 0 and n >= 128 and m >= 16",
                             name="scale2d", lang_version=(2018, 2))
    program = lp.split_iname(program, "i", config["local_x"], outer_tag="g.0", inner_tag="l.0")
    program = lp.split_iname(program, "j", config["local_y"], outer_tag="g.1", inner_tag="l.1")
    return Kernel("scale2d", program, ("n", "m"), reference=lambda x, s: {"b": 2 * x["a"]},
                  default_sizes={"n": 256, "m": 64}).with_variant(program, **config)


def scale_space():
    return VariantSpace(name="scale2d", parameters={"local_x": [16, 32, 64, 128], "local_y": [1, 2, 4, 8, 16]},
                        defaults={"local_x": 32, "local_y": 4}, make=_scale,
                        check=lambda c: "work-group over 512" if c["local_x"] * c["local_y"] > 512 else None)


def not_a_space():
    return _scale({"local_x": 32, "local_y": 4})
'''


@pytest.fixture(scope="module")
def space_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("space") / "spaces.py"
    path.write_text(SPACE)
    return path


@pytest.mark.opencl
def test_a_users_variant_space_is_named_like_a_catalog_one(space_file: Path) -> None:
    from gpuperf.kernels.catalog import get_kernel
    from gpuperf.kernels.space import get_space

    space = get_space(f"{space_file}:scale_space")
    assert len(space.variants()) == 17 and [c for c, _ in space.skipped()] == [
        {"local_x": 64, "local_y": 16}, {"local_x": 128, "local_y": 8}, {"local_x": 128, "local_y": 16}]
    variant = get_kernel(f"{space_file}:scale_space[local_x=64,local_y=2]")
    assert variant.launch({"n": 1024, "m": 256})[1] == (64, 2, 1)
    assert measure(variant, {"n": 1024, "m": 256}, settings=FAST).verified
    with pytest.raises(GpuperfError, match=r"not_a_space\(\) returned Kernel; expected a gpuperf VariantSpace"):
        get_space(f"{space_file}:not_a_space")
    # the space's name alone is its default variant, as a catalog space's name is
    default = get_kernel(f"{space_file}:scale_space")
    assert default.key == get_kernel(f"{space_file}:scale_space[]").key and default.variant == space.defaults


@pytest.mark.opencl
def test_rank_and_tune_take_a_users_space(space_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import json

    from gpuperf.cli import main

    spec = f"{space_file}:scale_space"
    assert main(["rank", spec, "-p", "n=1024", "-p", "m=256", "--top", "5", "--json"]) == 0
    ranked = json.loads(capsys.readouterr().out)
    assert len(ranked["variants"]) == 17 and ranked["variants"][0]["variant"].startswith("scale2d[local_x=")
    predicted = [v["predicted_performance"] for v in ranked["variants"]]
    assert predicted == sorted(predicted, reverse=True)
    assert main(["tune", spec, "-p", "n=1024", "-p", "m=256", "--budget", "2", "--no-progress", "--json",
                 "--out", str(tmp_path / "trials.csv")]) == 0
    tuned = json.loads(capsys.readouterr().out)
    assert tuned["evaluated"] == 2 and set(tuned["best"]) == {"local_x", "local_y"}


@pytest.mark.opencl
def test_a_campaign_measures_a_users_space_and_exports_its_features(space_file: Path, tmp_path: Path) -> None:
    from gpuperf.measure import load_campaign, run_campaign, store_table

    campaign = tmp_path / "c.toml"
    campaign.write_text(f'name = "mine"\n[[spaces]]\nspace = "{space_file}:scale_space"\nlimit = 2\n'
                        'sizes = [{n = 256, m = 64}]\n[timing]\nwarmup = 1\nmin_repeats = 3\nmin_time_s = 0.001\n')
    run_campaign(load_campaign(campaign), tmp_path / "s.sqlite", progress=False)
    frame = store_table(tmp_path / "s.sqlite")
    assert list(frame["variant"]) == ["local_x=16,local_y=1", "local_x=16,local_y=2"]
    assert (frame["status"] == "ok").all() and (frame["global_bytes"] == 2 * 4 * 256 * 64).all()


@pytest.mark.opencl
def test_an_integer_argument_that_bounds_nothing_may_be_zero_or_negative(tmp_path: Path) -> None:
    path = tmp_path / "offset.py"
    path.write_text(KERNELS + '''

def add_offset():
    program = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = a[i] + k",
                             [lp.GlobalArg("a,b", np.int32, shape="n"), lp.ValueArg("n, k", np.int32)],
                             assumptions="n>=64 and n mod 64 = 0", name="add_offset", lang_version=LANG)
    program = lp.split_iname(program, "i", 64, outer_tag="g.0", inner_tag="l.0")
    return Kernel("add_offset", program, ("n", "k"), reference=lambda x, s: {"b": x["a"] + s["k"]})
''')
    kernel = load_user_kernel(f"{path}:add_offset")
    assert kernel.resolve_sizes({"n": 128, "k": -3}) == {"n": 128, "k": -3}
    assert measure(kernel, {"n": 128, "k": -3}, settings=FAST).verified
    with pytest.raises(GpuperfError, match=r"n=0 must be a positive integer \(it bounds a loop or sizes an array\)"):
        kernel.resolve_sizes({"n": 0, "k": 1})


def test_a_loop_bound_read_from_an_array_is_not_a_missing_size(tmp_path: Path) -> None:
    path = tmp_path / "csr.py"
    path.write_text(KERNELS + '''

def row_sums():
    program = lp.make_kernel(
        ["{[i]: 0<=i<n}", "{[j]: rs<=j<re}"],
        """
        <> rs = rowptr[i]
        <> re = rowptr[i + 1]
        out[i] = sum(j, values[j])
        """,
        [lp.GlobalArg("rowptr", np.int32, shape="n + 1"), lp.GlobalArg("values", np.float32, shape="nnz"),
         lp.GlobalArg("out", np.float32, shape="n"), lp.ValueArg("n, nnz", np.int32)],
        assumptions="n>=64 and n mod 64 = 0", name="row_sums", lang_version=LANG)
    return lp.split_iname(program, "i", 64, outer_tag="g.0", inner_tag="l.0")
''')
    kernel = load_user_kernel(f"{path}:row_sums")
    assert kernel.unlisted_bounds == () and kernel.resolve_sizes({"n": 128, "nnz": 512}) == {"n": 128, "nnz": 512}


def test_a_space_whose_make_records_no_configuration_still_names_each_variant(space_file: Path, tmp_path: Path) -> None:
    from gpuperf.kernels.space import get_space

    path = tmp_path / "plain_spaces.py"
    path.write_text(space_file.read_text().replace(".with_variant(program, **config)", ""))
    variants = get_space(f"{path}:scale_space").variants()
    assert len({v.key for v in variants}) == len(variants) == 17
    assert variants[0].variant == {"local_x": 16, "local_y": 1}


def test_a_campaigns_user_space_is_found_beside_the_campaign_file(space_file: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuperf.measure import load_campaign

    (tmp_path / "spaces.py").write_text(space_file.read_text())
    campaign = tmp_path / "c.toml"
    campaign.write_text('name = "mine"\n[[spaces]]\nspace = "spaces.py:scale_space"\nlimit = 2\nsizes = [{n = 256, m = 64}]\n')
    monkeypatch.chdir("/")
    entries = load_campaign(campaign).entries
    assert [e.spec for e in entries] == [f"{tmp_path / 'spaces.py'}:scale_space[local_x=16,local_y={y}]" for y in (1, 2)]


BAD_SPACES = '''
import loopy as lp
import numpy as np

from gpuperf.kernels.space import VariantSpace


def _program(config):
    program = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = 2*a[i]", [lp.GlobalArg("a,b", np.float32, shape="n"), "..."],
                             assumptions="n >= 128 and n mod 128 = 0", name="twice", lang_version=(2018, 2))
    return lp.split_iname(program, "i", config["local_x"], outer_tag="g.0", inner_tag="l.0")


def space(defaults=None, check=lambda c: None, make=_program, parameters=None, **extra):
    return VariantSpace(name="twice", parameters=parameters or {"local_x": [32, 64], "unroll": [1, 2]},
                        defaults={"local_x": 32, "unroll": 1} if defaults is None else defaults,
                        check=check, make=make, **extra)


def missing_default():
    return space(defaults={"local_x": 32})


def unknown_default():
    return space(defaults={"local_x": 32, "unroll": 1, "local_y": 4})


def default_not_a_value():
    return space(defaults={"local_x": 48, "unroll": 1})


def no_values():
    return space(parameters={"local_x": [32, 64], "unroll": []})


def count_neutral_unknown():
    return space(count_neutral=("unrol",))


def count_neutral_text():
    return space(count_neutral="unroll")


def check_raises():
    return space(check=lambda c: 1 // (c["local_x"] - 32))


def check_returns_int():
    return space(check=lambda c: c["unroll"])


def rejects_all():
    return space(check=lambda c: f"local_x {c['local_x']} is too wide")


def program_space():
    return space()


def make_returns_int():
    return space(make=lambda c: 3)


def make_typo():
    return space(make=lambda c: _program({"local_x": c["locl_x"]}))


def unchecked():
    return VariantSpace(name="twice", parameters={"local_x": [32, 64], "unroll": [1, 2]},
                        defaults={"local_x": 32, "unroll": 1}, make=_program)


def no_make():
    return VariantSpace(name="twice", parameters={"local_x": [32, 64]}, defaults={"local_x": 32})


def chatty():
    print("building the space")
    return space(check=lambda c: print("checking") or None, make=lambda c: print("making") or _program(c))
'''


@pytest.fixture(scope="module")
def bad_spaces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bad") / "bad_spaces.py"
    path.write_text(BAD_SPACES)
    return path


@pytest.mark.parametrize(("function", "message"), [
    ("missing_default", r"variant space 'twice' \(.*bad_spaces.py:missing_default\): defaults give no value for "
                        "parameter unroll"),
    ("unknown_default", "defaults name local_y, which is not a parameter; its parameters: local_x, unroll"),
    ("default_not_a_value", "defaults give local_x=48, which is not one of its values 32, 64"),
    ("no_values", "parameter unroll needs a non-empty list of values"),
    ("count_neutral_unknown", "count_neutral names unrol, which is not a parameter; its parameters: local_x, unroll"),
    ("count_neutral_text", r"count_neutral lists parameter names, e.g. \('unroll',\), not 'unroll'"),
])
def test_a_users_space_is_checked_when_it_is_loaded(bad_spaces: Path, function: str, message: str) -> None:
    from gpuperf.kernels.loader import load_user_space

    with pytest.raises(GpuperfError, match=message):
        load_user_space(f"{bad_spaces}:{function}")


@pytest.mark.parametrize(("function", "message"), [
    ("check_raises", r"variant space 'twice' \(.*bad_spaces.py:check_raises\): check raised ZeroDivisionError "
                     r"\(integer division or modulo by zero\) at .*bad_spaces.py:\d+ on twice\[local_x=32,unroll=1\]"),
    ("check_returns_int", r"check returned int on twice\[local_x=32,unroll=1\]; check must return None or a reason"),
    ("make_returns_int", "make returned int on twice.local_x=32,unroll=1.; expected a gpuperf Kernel or loopy"),
    # a fault of the user's own make (a typo) is theirs to fix, not a variant loopy cannot build
    ("make_typo", r"variant space 'twice' \(.*bad_spaces.py:make_typo\): make raised KeyError: 'locl_x' at "
                  r".*bad_spaces.py:\d+ on twice\[local_x=32,unroll=1\]"),
])
def test_a_broken_check_or_make_is_one_error_in_spaces_and_tune(bad_spaces: Path, function: str, message: str,
                                                                 capsys: pytest.CaptureFixture) -> None:
    from gpuperf.cli import main
    from gpuperf.decisions.tune import tune_space

    spec = f"{bad_spaces}:{function}"
    assert main(["spaces", spec]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpuperf: error: ") and len(err.strip().splitlines()) == 1
    assert re.search(message, err)
    with pytest.raises(GpuperfError, match=message):
        tune_space(spec, {"n": 256}, budget=1)


def test_a_users_space_without_a_check_takes_every_configuration_as_valid(bad_spaces: Path,
                                                                         capsys: pytest.CaptureFixture) -> None:
    from gpuperf.cli import main
    from gpuperf.kernels.loader import load_user_space

    space = load_user_space(f"{bad_spaces}:unchecked")
    assert [space.rejection(config) for config in space.configurations()] == [None] * 4
    assert [kernel.key for kernel in space.variants()] == [
        "twice[local_x=32,unroll=1]", "twice[local_x=32,unroll=2]", "twice[local_x=64,unroll=1]",
        "twice[local_x=64,unroll=2]"]
    assert main(["spaces", f"{bad_spaces}:unchecked", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert (listed["configurations"], listed["passing_check"], listed["skipped"]) == (4, 4, [])
    assert main(["spaces", f"{bad_spaces}:unchecked"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # a long temporary path wraps
    assert "unchecked: 4 configurations, each built (the space has no check)" in out and "passing" not in out


def test_spaces_lists_a_users_variants_by_the_names_that_name_them(bad_spaces: Path,
                                                                     capsys: pytest.CaptureFixture) -> None:
    """spaces listed a user's variants as twice[local_x=32,unroll=1], by the VariantSpace's own name, which
    names no kernel: features, measure and advise refused what the listing gave."""
    from gpuperf.cli import main
    from gpuperf.kernels import get_kernel

    spec = f"{bad_spaces}:unchecked"
    assert main(["spaces", spec, "--limit", "2", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["variants"]
    assert listed == [f"{spec}[local_x=32,unroll=1]", f"{spec}[local_x=32,unroll=2]"]
    assert [get_kernel(name).variant for name in listed] == [{"local_x": 32, "unroll": 1}, {"local_x": 32, "unroll": 2}]
    assert main(["spaces", "stencil2d", "--limit", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["variants"] == [
        "stencil2d[local_x=4,local_y=1,outputs_y=1,prefetch=0,unroll=1]"]


def test_a_space_built_positionally_keeps_its_check_and_make() -> None:
    from gpuperf.kernels.space import VariantSpace

    space = VariantSpace("twice", {"local_x": [32, 64]}, {"local_x": 32},
                         lambda c: "too wide" if c["local_x"] > 32 else None, lambda c: c)
    assert [space.rejection(config) for config in space.configurations()] == [None, "too wide"]
    assert space.make({"local_x": 32}) == {"local_x": 32}


def test_a_users_space_without_make_is_one_error_saying_it_needs_make(bad_spaces: Path,
                                                                     capsys: pytest.CaptureFixture) -> None:
    from gpuperf.cli import main

    assert main(["spaces", f"{bad_spaces}:no_make"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpuperf: error: ") and len(err.strip().splitlines()) == 1
    assert re.search(r"bad_spaces.py:no_make\(\): variant space 'twice' needs make: a function building", err)


def test_what_a_users_space_prints_goes_to_stderr_so_json_stays_json(bad_spaces: Path,
                                                                     capsys: pytest.CaptureFixture) -> None:
    from gpuperf.cli import main

    assert main(["rank", f"{bad_spaces}:chatty", "-p", "n=1024", "--json"]) == 0
    captured = capsys.readouterr()
    assert len(json.loads(captured.out)["variants"]) == 4
    assert "building the space" in captured.err and "making" in captured.err and "checking" in captured.err
    from gpuperf.kernels.catalog import get_kernel

    assert get_kernel(f"{bad_spaces}:chatty").variant == {"local_x": 32, "unroll": 1}  # its default variant
    assert capsys.readouterr().err.count("building the space") == 1  # the file's function ran once


@pytest.mark.opencl
def test_a_make_that_returns_a_translation_unit_builds_kernels(bad_spaces: Path) -> None:
    from gpuperf.kernels.space import get_space

    variants = get_space(f"{bad_spaces}:program_space").variants()
    assert [v.key for v in variants] == [f"twice[local_x={x},unroll={u}]" for x in (32, 64) for u in (1, 2)]
    assert variants[0].params == ("n",) and variants[0].launch({"n": 256})[1] == (32, 1, 1)
    assert measure(variants[1], {"n": 256}, settings=FAST).time_s > 0


def test_spaces_says_when_no_variant_is_valid(bad_spaces: Path, capsys: pytest.CaptureFixture) -> None:
    from gpuperf.cli import main

    assert main(["spaces", f"{bad_spaces}:rejects_all"]) == 0
    out = capsys.readouterr().out
    assert "rejects_all: no valid variant; every configuration is skipped" in out
    assert out.count("local_x 32 is too wide") == 2 and out.count("local_x 64 is too wide") == 2


def test_spaces_says_when_nothing_is_skipped(tiled_space, capsys):
    from gpuperf.cli import main

    assert main(["spaces", tiled_space]) == 0
    out = " ".join(capsys.readouterr().out.split())  # a long temporary path wraps the table's title
    assert "3 valid variants" in out and "no configuration is skipped" in out and "skipped" not in out.replace(
        "no configuration is skipped", "")


def _scale(name: str = "scale", source: str = "a", out: str = "out", index: str = "i",
           temporary: str = "t") -> lp.TranslationUnit:
    program = lp.make_kernel(
        f"{{[{index}]: 0<={index}<n}}", [f"<> {temporary} = 2*{source}[{index}]", f"{out}[{index}] = {temporary}"],
        name=name, lang_version=lp.version.LOOPY_USE_LANGUAGE_VERSION_2018_2)
    return lp.add_dtypes(program, {source: np.float32})


RESERVED = f'''
import loopy as lp
import numpy as np
from gpuperf.kernels.kernel import Kernel


{inspect.getsource(_scale)}

def double():
    return _scale(name="double")


def wrapped():
    return Kernel("wrapped", _scale(source="int"), ("n",))
'''


@pytest.fixture(scope="module")
def reserved_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("reserved") / "reserved.py"
    path.write_text(RESERVED)
    return path


@pytest.mark.parametrize(("names", "what", "word"), [
    ({"name": "double"}, "program name", "double"),
    ({"source": "int"}, "argument", "int"),
    ({"out": "restrict"}, "argument", "restrict"),
    ({"source": "global"}, "argument", "global"),
    ({"temporary": "kernel"}, "temporary", "kernel"),
    ({"index": "local"}, "loop index", "local"),
    ({"source": "threadIdx"}, "argument", "threadIdx"),  # CUDA's built-in variable
    ({"source": "class"}, "argument", "class"),  # CUDA C++'s keyword
    ({"source": "float4"}, "argument", "float4"),  # an OpenCL C vector type
])
def test_a_reserved_word_as_a_name_is_refused_when_the_kernel_is_made(names: dict, what: str, word: str) -> None:
    from gpuperf.kernels.kernel import Kernel, kernel_from_program

    program = _scale(**names)
    message = (f"kernel 'mine': {what} '{word}' is a reserved word of C, OpenCL C or CUDA, which its generated "
               "code cannot use as a name; rename it")
    with pytest.raises(GpuperfError, match=f"^{re.escape(message)}$"):
        Kernel("mine", program, ("n",))
    with pytest.raises(GpuperfError, match=f"^{re.escape(message)}$"):
        kernel_from_program(program, "mine", "")


@pytest.mark.parametrize("word", ["sin", "dot", "prefetch", "main", "barrier"])
def test_a_kernel_named_like_an_opencl_built_in_function_is_refused_but_an_argument_may_be(word: str) -> None:
    """A kernel named sin or prefetch failed only when run ('KeyError: sin', pocl renaming it _cl_prefetch)."""
    from gpuperf.kernels.kernel import Kernel

    message = (f"kernel 'mine': program name '{word}' is the name of an OpenCL C built-in function (or main), "
               "which its generated code cannot use as a name; rename it")
    with pytest.raises(GpuperfError, match=f"^{re.escape(message)}$"):
        Kernel("mine", _scale(name=word), ("n",))
    assert f"2.0f * {word}[i]" in Kernel("mine", _scale(source=word), ("n",)).device_code()  # an argument hides it


def test_a_kernel_loopy_cannot_lay_out_is_one_error_naming_it() -> None:
    """An unrolled loop of symbolic length made features --gpu and resources end in an isl traceback."""
    import loopy as lp
    import numpy as np

    from gpuperf.kernels.kernel import Kernel

    program = lp.make_kernel("{[i, j]: 0 <= i < n and 0 <= j < m}", "b[i] = b[i] + a[i, j]",
                             [lp.GlobalArg("a", np.float32, shape=("n", "m")), lp.GlobalArg("b", np.float32, shape="n"),
                              lp.ValueArg("n, m", np.int32)], name="unrolled", lang_version=(2018, 2))
    program = lp.tag_inames(lp.split_iname(program, "i", 128, outer_tag="g.0", inner_tag="l.0"), {"j": "unr"})
    kernel = Kernel("mine", program, ("n", "m"))
    with pytest.raises(GpuperfError, match=r"^kernel 'mine': loopy cannot generate its cuda code \(Error: "):
        kernel.device_code("cuda")


def test_names_that_contain_a_reserved_word_or_that_opencl_keeps_for_future_use_are_kept() -> None:
    from gpuperf.kernels.kernel import Kernel

    program = _scale(name="doubled", source="integer", out="kernels", index="int_i", temporary="complex")
    kernel = Kernel("double", program, ("n",))  # gpuperf's own label is not in the code
    assert "doubled(" in kernel.device_code() and "integer" in kernel.device_code("cuda")


@pytest.mark.parametrize(("function", "message"), [
    ("double", "double(): kernel 'double': program name 'double' is a reserved word"),
    ("wrapped", "wrapped(): kernel 'wrapped': argument 'int' is a reserved word"),
])
def test_a_user_file_with_a_reserved_name_is_refused_naming_the_file(reserved_file: Path, function: str,
                                                                     message: str) -> None:
    with pytest.raises(GpuperfError, match=f"^{re.escape(f'{reserved_file}:{message}')}.*; rename it$"):
        load_user_kernel(f"{reserved_file}:{function}")


PARTLY_RECORDED = '''
import loopy as lp
import numpy as np

from gpuperf.kernels.kernel import Kernel
from gpuperf.kernels.space import VariantSpace


def _make(config):
    program = lp.make_kernel("{[i]: 0<=i<n}", f"y[i] = {config['scale']}*x[i]",
                             [lp.GlobalArg("x,y", np.float32, shape="n"), "..."],
                             assumptions="n >= 64 and n mod 64 = 0", name="pk", lang_version=(2018, 2))
    program = lp.split_iname(program, "i", config["wg"], outer_tag="g.0", inner_tag="l.0")
    return Kernel("pk", program, ("n",), variant={"wg": config["wg"]})  # scale left unrecorded


def space():
    return VariantSpace(name="pk", parameters={"wg": [32, 64], "scale": [0.5, 1.0]},
                        defaults={"wg": 32, "scale": 1.0}, check=lambda c: None, make=_make)
'''


def test_a_variant_records_its_whole_configuration_and_a_whole_float_may_be_written_as_an_integer(tmp_path):
    """A user's make that records only wg would make scale=0.5 and scale=1.0 one variant; and a
    table writes 1.0 as 1, which names the variant all the same."""
    from gpuperf.kernels import get_kernel
    from gpuperf.kernels.space import get_space

    (tmp_path / "partial.py").write_text(PARTLY_RECORDED)
    spec = f"{tmp_path / 'partial.py'}:space"
    keys = [kernel.key for kernel in get_space(spec).variants()]
    assert len(set(keys)) == 4 and "pk[scale=0.5,wg=32]" in keys
    assert get_kernel(f"{spec}[wg=64,scale=1]").variant == {"wg": 64, "scale": 1.0}
    with pytest.raises(GpuperfError, match=r"scale=2 is not one of 0.5, 1.0"):
        get_kernel(f"{spec}[scale=2]")


HELPER_USER = '''
import loopy as lp
import numpy as np

from helper import WG


def kernel():
    program = lp.make_kernel("{[i]: 0<=i<n}", "y[i] = 2*x[i]", [lp.GlobalArg("x,y", np.float32, shape="n"), "..."],
                             assumptions="n >= 64 and n mod 64 = 0", name="by_helper", lang_version=(2018, 2))
    return lp.split_iname(program, "i", WG, outer_tag="g.0", inner_tag="l.0")
'''


def test_files_in_two_folders_each_import_their_own_helper_of_one_name(tmp_path):
    """a/helper.py sets WG = 32, b/helper.py WG = 64: each folder's kernel is split by its own."""
    from gpuperf.kernels import get_kernel

    for folder, width in (("a", 32), ("b", 64)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "helper.py").write_text(f"WG = {width}\n")
        (tmp_path / folder / "user.py").write_text(HELPER_USER)
    widths = [extract_features(get_kernel(f"{tmp_path / folder / 'user.py'}:kernel"), {"n": 256})["local_size_0"]
              for folder in ("a", "b", "a")]
    assert widths == [32, 64, 32]


@pytest.mark.parametrize("layout", ["package", "submodule", "imported_by_the_function"])
def test_files_in_two_folders_each_get_their_own_helper_package_or_one_their_function_imports(tmp_path, layout):
    """The folders' helpers as packages (helper/__init__.py, pkg/helper.py), or imported only when the
    function runs: the second folder got the first folder's WG."""
    from gpuperf.kernels import get_kernel

    source = {"package": HELPER_USER, "submodule": HELPER_USER.replace("from helper import", "from pkg.helper import"),
              "imported_by_the_function": HELPER_USER.replace("from helper import WG\n", "").replace(
                  "def kernel():\n", "def kernel():\n    from helper import WG\n")}[layout]
    module = {"package": "helper/__init__.py", "submodule": "pkg/helper.py",
              "imported_by_the_function": "helper.py"}[layout]
    for folder, width in (("a", 32), ("b", 64)):
        (tmp_path / folder / module).parent.mkdir(parents=True)
        (tmp_path / folder / module).write_text(f"WG = {width}\n")
        if layout == "submodule":
            (tmp_path / folder / "pkg" / "__init__.py").write_text("")
        (tmp_path / folder / "user.py").write_text(source)
    widths = [extract_features(get_kernel(f"{tmp_path / folder / 'user.py'}:kernel"), {"n": 256})["local_size_0"]
              for folder in ("a", "b", "a")]
    assert widths == [32, 64, 32]


@pytest.mark.parametrize("spec", ["k.cl", "kernels/k.cu:saxpy", "k.CUH", "src/k.cpp:f"])
def test_an_opencl_or_cuda_source_is_told_how_gpuperf_reads_kernels(spec: str) -> None:
    from gpuperf.cli import main
    from gpuperf.kernels.catalog import get_kernel

    with pytest.raises(GpuperfError, match=r"gpuperf reads kernels from Python files, as path/to/file.py:function"):
        get_kernel(spec)
    assert main(["features", spec, "-p", "n=1024"]) == 2


def test_spaces_counts_the_configurations_and_those_its_check_passes_beyond_the_limit(capsys):
    from gpuperf.cli import main

    assert main(["spaces", "srad1", "--limit", "2", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert len(listed["variants"]) == 2 and (listed["configurations"], listed["passing_check"]) == (1152, 660)
    assert main(["spaces", "srad1", "--limit", "2"]) == 0
    assert "srad1: 1152 configurations, 660 passing the space's check (492 rejected by it)" in capsys.readouterr().out


UNORDERED = '''
import loopy as lp
import numpy as np


def unordered():
    k = lp.make_kernel("{[i]: 0<=i<n}", """
        if i % 2 == 0
            b[i] = 2*a[i] {id=w1}
        else
            b[i] = a[i] {id=w2}
        end
        """, [lp.GlobalArg("a,b", np.float32, shape="n"), "..."], assumptions="n >= 128 and n mod 128 = 0",
        name="unordered", lang_version=(2018, 2))
    return lp.split_iname(k, "i", 128, outer_tag="g.0", inner_tag="l.0")
'''


def test_a_kernel_loopy_cannot_generate_code_for_is_one_error_not_a_traceback(tmp_path, capsys):
    """resources and features --gpu printed loopy's program dump and a 90-line traceback."""
    from gpuperf.cli import main

    (tmp_path / "bad.py").write_text(UNORDERED)
    for argv in (["resources", f"{tmp_path / 'bad.py'}:unordered", "-p", "n=4096", "--json"],
                 ["features", f"{tmp_path / 'bad.py'}:unordered", "-p", "n=4096", "--gpu", "H100", "--json"]):
        assert main(argv) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert ("gpuperf: error: kernel 'unordered': loopy cannot generate its cuda code (VariableAccessNotOrdered: "
                "No dependency relationship found between ") in captured.err  # 'w1' and 'w2', in either order
        assert "Traceback" not in captured.err


HALF = '''
import loopy as lp
import numpy as np


def scale_half():
    k = lp.make_kernel("{[i]: 0<=i<n}", "y[i] = 2*x[i]", [lp.GlobalArg("x,y", np.float16, shape="n"), "..."],
                       assumptions="n >= 64 and n mod 64 = 0", name="scale_half", lang_version=(2018, 2))
    return lp.split_iname(k, "i", 64, outer_tag="g.0", inner_tag="l.0")
'''


def test_a_data_type_loopys_cuda_code_cannot_name_is_one_error(tmp_path, capsys):
    """float16 made loopy's CUDA target raise ValueError('unable to map dtype'), shown as a traceback."""
    from gpuperf.cli import main

    (tmp_path / "half.py").write_text(HALF)
    said = "kernel 'scale_half': loopy cannot generate its cuda code (ValueError: unable to map dtype"
    assert main(["resources", f"{tmp_path / 'half.py'}:scale_half", "-p", "n=128"]) == 2
    err = capsys.readouterr().err
    assert f"gpuperf: error: {said}" in err and "Traceback" not in err
    # features keep the static ones, registers and occupancy empty with a note
    assert main(["features", f"{tmp_path / 'half.py'}:scale_half", "-p", "n=128", "--gpu", "H100"]) == 0
    err = capsys.readouterr().err
    assert f"note: {said}" in err and "registers and occupancy left empty (NaN)" in err and "Traceback" not in err


def test_a_source_file_named_as_a_variant_space_gets_the_source_files_message(tmp_path, capsys):
    """rank and spaces said "unknown variant space 'saxpy.cl:saxpy'; known: ..." where features said why."""
    from gpuperf.cli import main

    (tmp_path / "saxpy.cl").write_text("__kernel void saxpy(__global float *y) { y[get_global_id(0)] *= 2; }\n")
    for argv in (["rank", f"{tmp_path / 'saxpy.cl'}:saxpy", "-p", "n=1024"], ["spaces", f"{tmp_path / 'saxpy.cl'}"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "saxpy.cl: gpuperf reads kernels from Python files" in err and "unknown variant space" not in err


def test_a_file_of_measurements_named_as_a_kernel_or_space_names_the_commands_that_read_it(capsys):
    """advise trace.csv said "unknown kernel 'trace.csv'; did you mean transpose_prefetch?", and rank on a
    Kernel Tuner cache "unknown variant space 'cache.json'"."""
    from gpuperf.cli import main

    assert main(["advise", "trace.csv", "-p", "n=1024", "--gpu", "H100"]) == 2
    err = capsys.readouterr().err
    assert "trace.csv: a file of measurements" in err and "not a kernel" in err
    assert "gpuperf advise --profile trace.csv" in err and "did you mean" not in err
    for argv in (["rank", "cache.json", "-p", "n=1024"], ["tune", "runs/space.csv.gz", "-p", "n=1024"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        name = argv[1]
        assert f"{name}: a file of measurements" in err and "not a variant space" in err
        assert f"gpuperf explore {name}" in err and "unknown variant space" not in err
    assert main(["features", "jacobi2d_5pt.json", "-p", "n=64"]) == 2
    assert "not a kernel" in capsys.readouterr().err


def _int_kernel(instruction: str, reference, name: str = "ints") -> Kernel:
    arguments = [lp.GlobalArg("a,b", np.int32, shape="n"), lp.ValueArg("n", np.int32)]
    program = lp.make_kernel("{[i]: 0<=i<n}", instruction, arguments,
                             assumptions="n>=64 and n mod 64 = 0", name=name, lang_version=lp.version.LOOPY_USE_LANGUAGE_VERSION_2018_2)
    program = lp.split_iname(program, "i", 64, outer_tag="g.0", inner_tag="l.0")
    return Kernel(name, program, ("n",), reference=reference)


@pytest.mark.opencl
def test_integer_inputs_tell_integer_kernels_apart_and_integer_outputs_must_match_exactly():
    """Integer inputs were drawn from {0, 1} (a cube passed as the identity, a division by them failed), and
    integer outputs were compared with the relative tolerance (an element off by one passed)."""
    cube = _int_kernel("b[i] = a[i] * a[i] * a[i]", lambda x, s: {"b": x["a"].copy()}, "cube")
    inputs = cube.make_inputs({"n": 4096})["a"]
    assert inputs.min() == 1 and inputs.max() == 64 and len(np.unique(inputs)) == 64
    with pytest.raises(VerifyFailed, match=r"output 'b' holds integers, which must equal the reference's exactly"):
        measure(cube, {"n": 4096}, settings=FAST)
    divide = _int_kernel("b[i] = 100 // a[i]", lambda x, s: {"b": 100 // x["a"]}, "divide")
    assert measure(divide, {"n": 4096}, settings=FAST).verified
    off_by_one = _int_kernel("b[i] = a[i] + i + if(i == n - 1, 1, 0)",
                             lambda x, s: {"b": x["a"] + np.arange(s["n"], dtype=np.int32)}, "off_by_one")
    with pytest.raises(VerifyFailed, match=r"the kernel gives 1048\d+ at \(1048575,\), the reference 1048\d+ "
                                           r"\(1 such elements\)"):
        measure(off_by_one, {"n": 1048576}, settings=FAST)


@pytest.mark.opencl
def test_arguments_without_a_dtype_get_the_one_loopy_infers():
    """An output left for loopy to type crashed measure ('NoneType' object has no attribute 'numpy_dtype')."""
    program = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = b[i] + a[i]", name="accumulate", lang_version=lp.version.LOOPY_USE_LANGUAGE_VERSION_2018_2)
    program = lp.split_iname(lp.add_dtypes(program, {"a": np.float32}), "i", 64, outer_tag="g.0", inner_tag="l.0")
    kernel = Kernel("accumulate", program, ("n",), reference=lambda x, s: {"b": x["b"] + x["a"]})
    assert {arg.name: arg.dtype.numpy_dtype for arg in kernel.array_args} == {"a": np.float32, "b": np.float32}
    assert measure(kernel, {"n": 1024}, settings=FAST).verified
    untypable = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = a[i]", name="untypable", lang_version=lp.version.LOOPY_USE_LANGUAGE_VERSION_2018_2)
    with pytest.raises(GpuperfError, match=r"kernel 'untypable': argument\(s\) a, b have no dtype and loopy "
                                           r"cannot infer one .*lp.add_dtypes\(program, \{'a': np.float32"):
        Kernel("untypable", untypable, ("n",))


@pytest.mark.opencl
def test_complex_and_bool_kernels_are_told_apart_from_wrong_references():
    """Complex outputs were compared without their imaginary parts, complex inputs had none, and bool inputs
    were all True: a kernel that ignored its mask or conjugated its result verified."""
    lang = lp.version.LOOPY_USE_LANGUAGE_VERSION_2018_2
    program = lp.make_kernel("{[i]: 0<=i<n}", "c[i] = a[i] * b[i]",
                             [lp.GlobalArg("a,b,c", np.complex64, shape="n"), lp.ValueArg("n", np.int32)],
                             assumptions="n>=64 and n mod 64 = 0", name="cmul", lang_version=lang)
    program = lp.split_iname(program, "i", 64, outer_tag="g.0", inner_tag="l.0")
    right = Kernel("cmul", program, ("n",), reference=lambda x, s: {"c": x["a"] * x["b"]})
    inputs = right.make_inputs({"n": 1024})
    assert 0.5 <= inputs["a"].imag.min() and inputs["a"].imag.max() <= 1.5
    assert measure(right, {"n": 1024}, settings=FAST).verified
    conjugated = Kernel("cmul", program, ("n",), reference=lambda x, s: {"c": np.conj(x["a"] * x["b"])})
    with pytest.raises(VerifyFailed, match="output 'c' differs from the reference"):
        measure(conjugated, {"n": 1024}, settings=FAST)
    masked = lp.make_kernel("{[i]: 0<=i<n}", "y[i] = x[i] + 0*m[i]",
                            [lp.GlobalArg("x,y", np.float32, shape="n"), lp.GlobalArg("m", np.bool_, shape="n"),
                             lp.ValueArg("n", np.int32)],
                            assumptions="n>=64 and n mod 64 = 0", name="masked", lang_version=lang)
    masked = Kernel("masked", lp.split_iname(masked, "i", 64, outer_tag="g.0", inner_tag="l.0"), ("n",),
                    reference=lambda x, s: {"y": np.where(x["m"], x["x"], 0).astype(np.float32)})
    assert set(np.unique(masked.make_inputs({"n": 1024})["m"])) == {False, True}
    with pytest.raises(VerifyFailed):
        measure(masked, {"n": 1024}, settings=FAST)


def test_a_kernel_folder_no_longer_shadows_the_programs_own_modules_after_loading(tmp_path, monkeypatch):
    """A program calling gpuperf imports its own utils.py after loading a kernel file that has one
    beside it (before, the kernel's folder stayed first on sys.path: the program got the kernel's
    utils); a make() importing later still finds the folder loaded last."""
    import sys

    host, first, second = tmp_path / "host", tmp_path / "k1", tmp_path / "k2"
    for folder, tag in ((host, "host"), (first, "k1"), (second, "k2")):
        folder.mkdir()
        (folder / "utils.py").write_text(f"WHO = {tag!r}\n")
        (folder / "lateonly.py").write_text(f"WHO = {tag!r}\n") if folder != host else None
        (folder / "k.py").write_text(KERNELS + "\n\nimport utils\n\n\ndef kern():\n"
                                     f"    assert utils.WHO == {tag!r}, utils.WHO\n    return _saxpy()\n")
    monkeypatch.setattr("sys.path", [str(host), *sys.path])
    for name in ("utils", "lateonly"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    load_user_kernel(f"{first / 'k.py'}:kern")
    load_user_kernel(f"{second / 'k.py'}:kern")
    assert sys.path[0] == str(host)
    assert sys.path.index(str(second)) < sys.path.index(str(first))
    import utils

    assert utils.WHO == "host"
    import lateonly  # what a make() imports when called: from the folder loaded last

    assert lateonly.WHO == "k2"
    for name in ("utils", "lateonly"):  # this test's imports, not left for later tests
        sys.modules.pop(name, None)


def test_an_edited_space_file_and_the_same_relative_path_elsewhere_are_loaded_anew(tmp_path, monkeypatch):
    """A long-lived process (a notebook, a service) kept a user's space and its variants by the spec's
    text: an edited file still gave the old kernels, and `sp.py:scale_space` typed in another folder gave
    the first folder's file."""
    import os

    from gpuperf.kernels.catalog import get_kernel
    from gpuperf.kernels.space import get_space

    first, second = tmp_path / "a", tmp_path / "b"
    for folder, name in ((first, "scale2d"), (second, "other2d")):
        folder.mkdir()
        (folder / "sp.py").write_text(SPACE.replace('"scale2d"', f'"{name}"'))
    monkeypatch.chdir(first)
    assert get_kernel("sp.py:scale_space[local_x=64,local_y=2]").name == "scale2d"
    assert get_space("sp.py:scale_space").name == "scale2d"
    monkeypatch.chdir(second)
    assert get_kernel("sp.py:scale_space[local_x=64,local_y=2]").name == "other2d"
    assert get_space("sp.py:scale_space").name == "other2d"
    edited = second / "sp.py"
    edited.write_text(SPACE.replace('"scale2d"', '"edited2d"'))
    stat = edited.stat()
    os.utime(edited, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # a later time, whatever the clock's grain
    assert get_kernel("sp.py:scale_space[local_x=64,local_y=2]").name == "edited2d"
    assert get_space("sp.py:scale_space").name == "edited2d"
    unchanged = get_kernel("sp.py:scale_space[local_x=64,local_y=2]")
    assert get_kernel("sp.py:scale_space[local_x=64,local_y=2]") is unchanged  # an unchanged file: kept


def test_temporaries_listed_before_the_reads_they_copy_and_a_scaled_copy_are_followed() -> None:
    """The guard follows temporaries whatever order the instructions are written in, and a scaled
    index read through a temporary is no constant offset."""
    backwards = _indexing("backwards", "out[i] = src[u] {dep=mku}\n<> u = t {id=mku, dep=mkt}\n<> t = idx[i] {id=mkt}")
    with pytest.raises(GpuperfError, match=r"kernel backwards: array idx indexes axis 0 of src"):
        backwards.make_inputs({"n": 64, "m": 16})
    doubled = _indexing("doubled", "<> t = 2*idx[i]\nout[i] = src[t + 1]")
    with pytest.raises(GpuperfError, match=r"through an expression other than idx\[...\] plus a constant"):
        doubled.make_inputs({"n": 64, "m": 1000})


@pytest.mark.parametrize("spec", ["K.PY:vc", "kernels/k.Py:sp", "k.pY"])
def test_a_python_file_with_an_upper_case_suffix_is_told_to_end_in_lower_case_py(spec: str) -> None:
    """A file copied from a case-insensitive file system (K.PY) got "unknown kernel '...'; known: ..."."""
    from gpuperf.kernels.catalog import get_kernel
    from gpuperf.kernels.space import get_space

    for lookup in (get_kernel, get_space):
        with pytest.raises(GpuperfError, match=r"files whose name ends in '\.py' \(lower case\)"):
            lookup(spec)


@pytest.mark.opencl
def test_a_size_parameter_no_loop_bounds_gets_the_index_type_so_the_kernel_runs() -> None:
    """x shaped m (a gather's source) and an offset k added, declared by '...': features worked, but measure,
    resources and features --gpu failed with loopy's 'could not determine type of m'."""
    from gpuperf.kernels.kernel import kernel_from_program

    program = lp.make_kernel("{[i]: 0<=i<n}", "y[i] = x[idx[i]] + a[i] + k",
                             [lp.GlobalArg("idx", np.int32, shape="n"), lp.GlobalArg("x", np.float32, shape="m"),
                              lp.GlobalArg("a", np.float32, shape="n"), lp.GlobalArg("y", np.float32, shape="n"),
                              "..."], assumptions="n>=64 and n mod 64 = 0", name="gather", lang_version=(2018, 2))
    program = lp.split_iname(program, "i", 64, outer_tag="g.0", inner_tag="l.0")
    bare = kernel_from_program(program, "gather", "")
    assert bare.params == ("k", "m", "n")
    assert "int const k" in bare.device_code("cuda")
    assert all(bare.entry.arg_dict[name].dtype.numpy_dtype == np.int32 for name in ("k", "m"))
    kernel = Kernel("gather", program, ("n", "m", "k"),
                    reference=lambda x, s: {"y": x["x"][x["idx"]] + x["a"] + np.float32(s["k"])})
    assert measure(kernel, {"n": 128, "m": 100, "k": 3}, settings=FAST).verified


@pytest.mark.opencl
def test_a_loopy_program_is_taken_by_the_library_as_the_command_line_takes_it() -> None:
    """A notebook's lp.make_kernel result: extract_features refused it, feature_table and measure raised
    AttributeError ('TranslationUnit' object has no attribute 'resolve_sizes')."""
    from gpuperf.decisions import advise_kernel
    from gpuperf.features.table import feature_table
    from gpuperf.kernels.kernel import kernel_from_program

    program = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = a[i] + a[i]", [lp.GlobalArg("a,b", np.int8, shape="n"), "..."],
                             assumptions="n>=128 and n mod 128 = 0", name="i8double", lang_version=(2018, 2))
    program = lp.split_iname(program, "i", 128, outer_tag="g.0", inner_tag="l.0")
    expected = extract_features(kernel_from_program(program, "i8double", ""), {"n": 4096})
    assert extract_features(program, {"n": 4096}) == expected
    table = feature_table([program], [{"n": 4096}])
    assert table.loc[0, "kernel"] == "i8double" and table.loc[0, "global_bytes"] == expected["global_bytes"] == 12288
    assert feature_table(program, {"n": 4096}).shape[0] == 1
    assert measure(program, {"n": 256}, settings=FAST).time_s > 0
    for call, name in [(lambda: extract_features(42), "extract_features"), (lambda: measure(42), "measure"),
                       (lambda: feature_table([42], {"n": 1}), "feature_table"),
                       (lambda: advise_kernel(42), "advise_kernel")]:
        with pytest.raises(GpuperfError, match=rf"{name} needs a gpuperf Kernel, a loopy TranslationUnit or a kernel's "
                                               r"name, got int"):
            call()


def test_a_size_parameter_the_program_names_nowhere_is_refused() -> None:
    """params ('n', 'm') after lp.fix_parameters(m=8): -p m=512 was required, then silently changed nothing."""
    program = lp.make_kernel("{[i,j]: 0<=i<n and 0<=j<m}", "b[i] = sum(j, a[i, j])",
                             [lp.GlobalArg("a", np.float32, shape="n, m"), lp.GlobalArg("b", np.float32, shape="n"),
                              "..."], assumptions="n>=64 and n mod 64 = 0 and m>=1", name="rowsum",
                             lang_version=(2018, 2))
    program = lp.split_iname(lp.fix_parameters(program, m=8), "i", 64, outer_tag="g.0", inner_tag="l.0")
    kernel = Kernel("rowsum", program, ("n", "m"))
    with pytest.raises(GpuperfError, match=r"^kernel 'rowsum': its size parameters list m, which its program names "
                                           r"nowhere \(fixed by lp.fix_parameters, or misspelt\?\).*remove m from"):
        extract_features(kernel, {"n": 128, "m": 512})
    assert extract_features(Kernel("rowsum", program, ("n",)), {"n": 128})["global_loads_per_thread"] == 8
