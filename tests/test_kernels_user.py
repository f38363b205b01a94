"""A user's own kernel from ``file.py:function``: size parameters, data scalars, and load errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuperf.errors import GpuperfError
from gpuperf.features.table import extract_features
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


def not_a_kernel():
    return 42


def raises():
    raise RuntimeError("no such tile size")
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


def test_features_need_only_the_sizes(kernel_file: Path) -> None:
    features = extract_features(load_user_kernel(f"{kernel_file}:saxpy"), {"n": 4096})
    assert features["global_size_0"] == 4096
    assert features["global_loads_per_thread"] == 2 and features["global_stores_per_thread"] == 1


def test_a_data_scalar_reaches_the_device(kernel_file: Path) -> None:
    result = measure(load_user_kernel(f"{kernel_file}:saxpy_checked"), {"n": 1024}, settings=FAST)
    assert result.verified and result.max_rel_error < 1e-12
    with pytest.raises(VerifyFailed):
        measure(load_user_kernel(f"{kernel_file}:saxpy_wrong_reference"), {"n": 1024}, settings=FAST)


@pytest.mark.parametrize(("spec", "message"), [
    ("{file}", "name the function too"),
    ("{file}:missing", "does not define a function 'missing'; it defines"),
    ("{file}:not_a_kernel", "returned int; expected a loopy TranslationUnit or gpuperf Kernel"),
    ("{file}:raises", r"raises\(\) raised RuntimeError: no such tile size"),
    ("/no/such/file.py:f", "kernel file '/no/such/file.py' does not exist"),
])
def test_load_errors_name_the_file_and_function(kernel_file: Path, spec: str, message: str) -> None:
    with pytest.raises(GpuperfError, match=message):
        load_user_kernel(spec.format(file=kernel_file))


def test_a_file_that_fails_to_import_says_why(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("def f(:\n")
    with pytest.raises(GpuperfError, match="broken.py' failed to import: SyntaxError"):
        load_user_kernel(f"{path}:f")


def test_a_kernel_file_imports_modules_beside_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "shapes.py").write_text("TILE = 64\n")
    (tmp_path / "tiled.py").write_text(KERNELS + "\n\nfrom shapes import TILE\n\n\ndef tiled():\n"
                                       "    assert TILE == 64\n    return _saxpy()\n")
    monkeypatch.chdir("/")
    assert load_user_kernel(f"{tmp_path / 'tiled.py'}:tiled").params == ("n",)
    assert str(tmp_path) not in __import__("sys").path


def test_a_kernel_whose_params_miss_a_loop_bound_says_so(kernel_file: Path) -> None:
    from gpuperf.kernels.kernel import Kernel

    saxpy = load_user_kernel(f"{kernel_file}:saxpy")
    unlisted = Kernel("unlisted", saxpy.program, ())
    with pytest.raises(GpuperfError, match=r"loop domains use n, which its size parameters \(none\) do not list"):
        unlisted.resolve_sizes({})
    with pytest.raises(GpuperfError, match="add n to the Kernel's params"):
        measure(unlisted, {}, settings=FAST)
