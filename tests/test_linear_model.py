"""The linear count model: fitting, sign bounds, scikit-learn behaviour and kernel properties."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from gpuperf.errors import GpuperfError
from gpuperf.kernels import get_kernel
from gpuperf.models import properties as props
from gpuperf.models.linear import LinearCountModel
from gpuperf.models.properties import (
    PROPERTY_SETS,
    check_property_names,
    describe_property,
    kernel_properties,
    property_signs,
)

COSTS = ["launches", "f32_ops", "global_load_bytes", "barriers"]


def synthetic(rows: int = 30, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "launches": np.ones(rows),
        "f32_ops": rng.uniform(1e3, 1e7, rows),
        "global_load_bytes": rng.uniform(1e4, 1e8, rows),
        "barriers": rng.integers(0, 100, rows).astype(float),
        "unrelated": rng.normal(size=rows),
    })
    return frame, np.array([5e-6, 2e-11, 4e-11, 1e-8])


@pytest.mark.parametrize("relative", [True, False])
def test_fit_recovers_known_weights_exactly(relative: bool) -> None:
    frame, weights = synthetic()
    times = frame[COSTS].to_numpy() @ weights
    model = LinearCountModel(properties=COSTS, relative=relative).fit(frame, times)
    np.testing.assert_allclose(model.coef_, weights, rtol=1e-8)
    np.testing.assert_allclose(model.predict(frame), times, rtol=1e-8)
    assert list(model.weights_) == COSTS


def test_relative_fit_minimises_relative_error_and_plain_fit_absolute_error() -> None:
    # One property, times that no single weight fits: the two fits have known closed forms.
    x = np.array([1.0, 10.0, 100.0, 1000.0])
    y = np.array([3.0e-6, 1.0e-5, 2.0e-4, 1.0e-3])
    frame = pd.DataFrame({"f32_ops": x})
    relative = LinearCountModel(properties=["f32_ops"]).fit(frame, y)
    plain = LinearCountModel(properties=["f32_ops"], relative=False).fit(frame, y)
    assert relative.coef_[0] == pytest.approx(np.sum(x / y) / np.sum((x / y) ** 2), rel=1e-10)
    assert plain.coef_[0] == pytest.approx(np.sum(x * y) / np.sum(x * x), rel=1e-10)
    # The relative fit serves the short first row better; the plain fit is ruled by the long rows.
    rel_error = lambda m: np.sum((m.predict(frame) / y - 1) ** 2)  # noqa: E731
    abs_error = lambda m: np.sum((m.predict(frame) - y) ** 2)  # noqa: E731
    assert rel_error(relative) < rel_error(plain)
    assert abs_error(plain) < abs_error(relative)
    assert abs(relative.predict(frame)[0] / y[0] - 1) < abs(plain.predict(frame)[0] / y[0] - 1)


def test_sign_bounds_keep_costs_non_negative_and_overlap_non_positive() -> None:
    frame, _ = synthetic(seed=1)
    frame["overlap_bytes"] = np.minimum(frame["global_load_bytes"], frame["f32_ops"])
    names = [*COSTS, "overlap_bytes"]
    # Times made with a negative cost weight and a positive overlap weight: both on the wrong side.
    wrong = np.array([5e-6, -2e-11, 4e-11, 1e-8, 3e-11])
    times = frame[names].to_numpy() @ wrong
    times = times - times.min() + 1e-6  # keep every time positive
    bounded = LinearCountModel(properties=names).fit(frame, times)
    signs = property_signs(names)
    assert signs == [1, 1, 1, 1, -1]
    for weight, sign in zip(bounded.coef_, signs):
        assert weight * sign >= 0
    assert bounded.weights_["f32_ops"] == 0  # held at its bound
    # Unbounded, the same data give back the wrong-signed weights (the shift went into launches).
    free = LinearCountModel(properties=names, bounds="none").fit(frame, times)
    np.testing.assert_allclose(free.coef_[1:], wrong[1:], rtol=1e-6)


def test_negative_overlap_weight_is_recovered_within_its_bound() -> None:
    frame, weights = synthetic(seed=2)
    frame["overlap_bytes"] = np.minimum(frame["global_load_bytes"], np.random.default_rng(9).uniform(1e4, 1e8, 30))
    names = [*COSTS, "overlap_bytes"]
    true = np.append(weights, -1e-11)
    model = LinearCountModel(properties=names).fit(frame, frame[names].to_numpy() @ true)
    np.testing.assert_allclose(model.coef_, true, rtol=1e-7)


def test_scikit_learn_clone_params_and_pipeline() -> None:
    frame, weights = synthetic(seed=3)
    times = frame[COSTS].to_numpy() @ weights
    model = LinearCountModel(properties=COSTS, bounds="none")
    assert model.get_params() == {"properties": COSTS, "property_set": "gpu", "relative": True, "bounds": "none"}
    copy = clone(model).set_params(relative=False)
    assert copy.relative is False and model.relative is True and not hasattr(copy, "coef_")
    pipeline = Pipeline([("identity", FunctionTransformer(validate=False)), ("model", model)]).fit(frame, times)
    np.testing.assert_allclose(pipeline.predict(frame), times, rtol=1e-8)
    contributions = pipeline.named_steps["model"].contributions(frame)
    np.testing.assert_allclose(contributions.sum(axis=1), times, rtol=1e-8)


def test_default_properties_come_from_the_property_set() -> None:
    assert LinearCountModel(property_set="cpu")._names() == PROPERTY_SETS["cpu"]
    with pytest.raises(GpuperfError, match="unknown property set 'cpuu'; did you mean cpu"):
        LinearCountModel(property_set="cpuu").fit(pd.DataFrame({"launches": [1.0]}), [1.0])


def test_bad_inputs_name_the_problem() -> None:
    frame, weights = synthetic()
    times = frame[COSTS].to_numpy() @ weights
    with pytest.raises(GpuperfError, match="missing property column.*barriers"):
        LinearCountModel(properties=COSTS).fit(frame.drop(columns="barriers"), times)
    with pytest.raises(GpuperfError, match="times must be finite and positive"):
        LinearCountModel(properties=COSTS).fit(frame, -times)
    with pytest.raises(GpuperfError, match="expected 4 property columns"):
        LinearCountModel(properties=COSTS).fit(frame.to_numpy(), times)
    with pytest.raises(GpuperfError, match="unknown property 'flops32'"):
        LinearCountModel(properties=["flops32"]).fit(frame, times)
    with pytest.raises(GpuperfError, match="bounds must be one of"):
        LinearCountModel(properties=COSTS, bounds="positive").fit(frame, times)
    for weights in (-np.ones(len(times)), np.ones(3), np.zeros(len(times))):
        with pytest.raises(GpuperfError, match="sample_weight must be 30 finite, non-negative weights"):
            LinearCountModel(properties=COSTS).fit(frame, times, sample_weight=weights)


def test_a_refit_on_an_array_forgets_the_earlier_fits_column_names() -> None:
    frame, weights = synthetic()
    times = frame[COSTS].to_numpy() @ weights
    model = LinearCountModel(properties=COSTS).fit(frame, times)
    assert list(model.feature_names_in_) == COSTS
    assert not hasattr(model.fit(frame[COSTS].to_numpy(), times), "feature_names_in_")


# -- properties of real kernels ------------------------------------------------------------------
def test_memory_properties_of_a_vector_copy() -> None:
    values = kernel_properties(get_kernel("vector_copy"), {"n": 1024})
    assert values["work_items"] == 1024 and values["work_groups"] == 4 and values["launches"] == 1
    assert values["footprint_load_bytes"] == 4096 and values["footprint_write_only_bytes"] == 4096
    assert values["global_load_bytes_stride1"] == 4096 and values["global_store_bytes_stride1"] == 4096
    assert values["vector_accesses"] == 2048 and values["gather_lines"] == 0 and values["overlap_bytes"] == 4096
    assert values["footprint_beyond_1MiB"] == 0
    big = kernel_properties(get_kernel("vector_copy"), {"n": 1 << 20}, ["footprint_beyond_1MiB"])
    assert big == {"footprint_beyond_1MiB": 8 * (1 << 20) - (1 << 20)}


def test_gathers_count_the_cache_lines_they_touch() -> None:
    transposed = kernel_properties(get_kernel("transpose"), {"n": 64, "m": 128})
    assert transposed["gather_lines"] == 64 * 128  # each store lands n floats away: one line each
    assert transposed["global_store_bytes_strided"] == 4 * 64 * 128
    pairs = kernel_properties(get_kernel("sum_filled_stride2"), {"n": 1024})
    assert pairs["gather_lines"] == pytest.approx(2 * 1024 * 8 / 64)  # stride 2 floats: 8 of 64 bytes


def test_row_segments_count_a_run_per_work_group_row_where_its_rows_lie_apart() -> None:
    flat = kernel_properties(get_kernel("vector_copy"), {"n": 1024}, ["row_segments"])
    assert flat == {"row_segments": 2 * 4}  # a load and a store, each one 256-float run per work-group
    rows = kernel_properties(get_kernel("copy_2d"), {"n": 32, "m": 64}, ["row_segments"])
    assert rows == {"row_segments": 2 * 8 * 16}  # each of a 16x16 group's 16 rows lies m floats from the next
    side_by_side = kernel_properties(get_kernel("element_local_diff"), {"nelements": 256}, ["row_segments"])
    assert side_by_side == {"row_segments": 16 + 16}  # D's fetch and du's store: a group's rows follow one another
    transposed = kernel_properties(get_kernel("transpose"), {"n": 64, "m": 128}, ["row_segments", "gather_lines"])
    assert transposed == {"row_segments": 32 * 16, "gather_lines": 64 * 128}  # the strided store is a gather
    float4s = kernel_properties(get_kernel(f"{Path(__file__).parent / 'data' / 'feature_kernels.py'}:float4_copy"),
                                {"n": 4096}, ["row_segments"])
    assert float4s == {"row_segments": 2 * 16}  # one float4 request a work-item: still one run per work-group


def test_the_intel_cpu_set_is_the_cpu_set_and_row_segments() -> None:
    assert PROPERTY_SETS["intel_cpu"] == (*PROPERTY_SETS["cpu"], "row_segments")
    assert "row_segments" not in PROPERTY_SETS["cpu"]


def test_function_calls_make_a_kernel_scalar() -> None:
    root = kernel_properties(get_kernel("sqrt_2d"), {"n": 16, "m": 16})
    assert root["f32_functions"] == 4 * 256 and root["vector_accesses"] == 0
    assert root["scalar_accesses"] == 5 * 256 and root["scalar_flops"] == root["f32_ops"] > 0
    poly = kernel_properties(get_kernel("poly_2d_f32"), {"n": 16, "m": 16})
    assert poly["scalar_flops"] == 0 and poly["vector_f32_ops"] == poly["f32_ops"] == 17 * 256
    assert poly["f32_special"] == 0


def test_barriers_scale_with_work_groups_and_work_items() -> None:
    values = kernel_properties(get_kernel("local_reverse_2d"), {"n": 32, "m": 64})
    assert values["barriers"] == 8 and values["barrier_work_items"] == 32 * 64
    assert values["local_accesses"] == 2 * 32 * 64
    copy = kernel_properties(get_kernel("local_copy_2d"), {"n": 32, "m": 64})  # each item reads its own store
    assert copy["barriers"] == 0 and copy["local_accesses"] == 2 * 32 * 64


def test_catalog_descriptions_claim_a_barrier_only_where_the_kernel_has_one() -> None:
    from gpuperf.kernels.catalog import entries

    for entry in entries():
        if "local" not in entry.name:
            continue
        barriers = kernel_properties(get_kernel(entry.name), dict.fromkeys(entry.params, 32))["barriers"]
        if "no barrier" in entry.description:
            assert barriers == 0, entry.name
        elif "barrier" in entry.description:
            assert barriers > 0, entry.name


def test_property_names_are_checked() -> None:
    assert describe_property("footprint_beyond_512KiB").sign == 1
    assert check_property_names(["launches", "footprint_beyond_2MiB"]) == ("launches", "footprint_beyond_2MiB")
    with pytest.raises(GpuperfError, match="model.json: unknown property 'launch'; did you mean launches"):
        check_property_names(["launch"], where="model.json")
    with pytest.raises(GpuperfError, match="listed twice"):
        check_property_names(["launches", "launches"])
    for names in PROPERTY_SETS.values():
        check_property_names(names)


def test_a_kernel_without_a_count_for_a_property_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = props.symbolic_counts
    monkeypatch.setattr(props, "symbolic_counts", lambda k: dataclasses.replace(real(k), loop_iterations=None))
    with pytest.raises(GpuperfError, match="kernel 'matmul_naive'.*no value for property loop_iterations"):
        kernel_properties(get_kernel("matmul_naive"), None, ["launches", "loop_iterations"])
    assert kernel_properties(get_kernel("matmul_naive"), None, ["launches"]) == {"launches": 1.0}


def test_loop_lines_follow_the_step_along_the_innermost_loop() -> None:
    down = kernel_properties(get_kernel("column_sum"), {"n": 256, "m": 512}, ["loop_lines", "loop_iterations"])
    along = kernel_properties(get_kernel("row_sum"), {"n": 256, "m": 512}, ["loop_lines", "loop_iterations"])
    assert down["loop_iterations"] == along["loop_iterations"] == 256 * 512
    assert down["loop_lines"] == 256 * 512  # each step moves a row: a new line every time
    assert along["loop_lines"] == 256 * 512 * 4 / 64  # unit steps: 16 floats per line
    naive = kernel_properties(get_kernel("matmul_naive"), {"n": 16, "m": 32, "k": 16}, ["loop_lines"])
    assert naive["loop_lines"] == 16 * 32 * 16 * (1 + 4 / 64)  # b walks down a column, a along a row
    assert kernel_properties(get_kernel("stencil2d"), {"n": 16, "m": 16}, ["loop_lines"]) == {"loop_lines": 0}


def test_overlap_weight_is_held_at_its_bound_of_zero():
    """Times generated with a positive overlap weight: the sign bound keeps it at 0."""
    from gpuperf.models.linear import LinearCountModel
    rng = np.random.default_rng(0)
    n = 30
    frame = pd.DataFrame({"launches": np.ones(n), "f32_ops": rng.uniform(1e3, 1e7, n),
                          "global_load_bytes": rng.uniform(1e4, 1e8, n)})
    frame["overlap_bytes"] = np.minimum(frame["global_load_bytes"], rng.uniform(1e4, 1e8, n))
    names = ["launches", "f32_ops", "global_load_bytes", "overlap_bytes"]
    times = frame[names].to_numpy() @ np.array([5e-6, 2e-11, 4e-11, 3e-11])
    assert LinearCountModel(properties=names).fit(frame, times).weights_["overlap_bytes"] == 0


def test_sample_weight_counts_like_repeating_a_row():
    """Least squares on relative error with one property: c = sum(w r) / sum(w r^2), r = x / y."""
    from gpuperf.models.linear import LinearCountModel
    x = np.array([1.0, 10.0, 100.0, 1000.0]); y = np.array([3.0e-6, 1.0e-5, 2.0e-4, 1.0e-3])
    w = np.array([2.0, 1.0, 1.0, 1.0])
    m = LinearCountModel(properties=["f32_ops"]).fit(pd.DataFrame({"f32_ops": x}), y, sample_weight=w)
    r = x / y
    assert m.coef_[0] == pytest.approx(np.sum(w * r) / np.sum(w * r * r), rel=1e-10)


def test_overlap_is_the_smaller_of_load_and_store_bytes():
    """vector_fill loads nothing; add_four_vectors loads 4 x 4096 bytes and stores 4096."""
    from gpuperf.kernels import get_kernel
    from gpuperf.models.properties import kernel_properties
    assert kernel_properties(get_kernel("vector_fill"), {"n": 1024})["overlap_bytes"] == 0
    assert kernel_properties(get_kernel("add_four_vectors"), {"n": 1024})["overlap_bytes"] == 4096


def test_a_zero_time_is_refused_by_the_relative_fit() -> None:
    """The relative fit divides each row by its time: a time of exactly 0 s cannot be fitted."""
    frame, weights = synthetic()
    times = frame[COSTS].to_numpy() @ weights
    times[3] = 0.0
    with pytest.raises(GpuperfError, match="times must be finite and positive"):
        LinearCountModel(properties=COSTS).fit(frame, times)
    assert LinearCountModel(properties=COSTS, relative=False).fit(frame, times).coef_.shape == (4,)


def _program_kernel(instructions: str, args: list, name: str):
    """A 1-D loopy kernel over i < n in work-groups of 64 (g.0 x l.0), wrapped as a gpuperf Kernel."""
    import loopy as lp

    from gpuperf.kernels.kernel import kernel_from_program

    program = lp.make_kernel("{[i]: 0<=i<n}", instructions, [*args, lp.ValueArg("n", np.int32)],
                             assumptions="n>=64 and n mod 64 = 0", name=name,
                             lang_version=lp.version.LOOPY_USE_LANGUAGE_VERSION_2018_2)
    return kernel_from_program(lp.split_iname(program, "i", 64, outer_tag="g.0", inner_tag="l.0"), name, "test")


def test_scalar_divisions_count_float64_ones_too() -> None:
    """out[i] = sqrt(a[i]) / b[i] in f64: a function call makes the kernel scalar, so its 128 f64
    divisions (one per work-item, n = 128) are scalar_div; nothing is vectorised."""
    import loopy as lp

    kernel = _program_kernel("out[i] = sqrt(a[i]) / b[i]", [lp.GlobalArg("a,b,out", np.float64, shape="n")],
                             "sqrt_div_f64")
    values = kernel_properties(kernel, {"n": 128})
    assert values["f64_div"] == 128 and values["f64_functions"] == 128 and values["f32_div"] == 0
    assert values["scalar_div"] == 128 and values["vector_f64_ops"] == 0
    assert values["scalar_accesses"] == 3 * 128  # two loads and a store per work-item


def test_complex64_operations_count_as_float32() -> None:
    """complex64 is a pair of float32s: its 128 multiplies (n = 128) are f32 operations."""
    import loopy as lp

    kernel = _program_kernel("out[i] = a[i] * b[i]", [lp.GlobalArg("a,b,out", np.complex64, shape="n")], "cmul")
    values = kernel_properties(kernel, {"n": 128})
    assert values["f32_ops"] == 128 and values["f64_ops"] == 0
    assert values["global_load_bytes"] == 2 * 128 * 8  # two 8-byte complex64 loads per work-item


def test_a_store_uniform_along_local_axis_0_is_strided_not_coalesced() -> None:
    """With no local axis every work-group is one work-item: out[i] does not move along local axis
    0 (stride 0). A uniform load is a broadcast (stride0 class); a uniform store has no such class
    and is counted with the strided ones: 64 stores x 4 bytes = 256 bytes."""
    import loopy as lp

    from gpuperf.kernels.kernel import kernel_from_program

    program = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = a[i]",
                             [lp.GlobalArg("a,out", np.float32, shape="n"), lp.ValueArg("n", np.int32)],
                             assumptions="n>=1", name="one_item_groups",
                             lang_version=lp.version.LOOPY_USE_LANGUAGE_VERSION_2018_2)
    kernel = kernel_from_program(lp.tag_inames(program, "i:g.0"), "one_item_groups", "test")
    values = kernel_properties(kernel, {"n": 64})
    assert values["global_load_bytes_stride0"] == 256 and values["global_load_bytes_stride1"] == 0
    assert values["global_store_bytes_strided"] == 256 and values["global_store_bytes_stride1"] == 0


def test_an_array_read_and_written_is_not_write_only() -> None:
    """scale_add_stride1: y = 2x + y reads x and y and writes y, n = 1024 floats each. Footprint:
    x and y read (2 x 4096 bytes), y also written but already counted; nothing is write-only."""
    values = kernel_properties(get_kernel("scale_add_stride1"), {"n": 1024})
    assert values["footprint_load_bytes"] == 8192 and values["footprint_store_bytes"] == 4096
    assert values["footprint_write_only_bytes"] == 0
    assert values["footprint_bytes"] == 8192


def test_no_property_or_a_repeated_property_column_is_an_error():
    frame = pd.DataFrame({"launches": [1.0, 1.0, 1.0], "work_items": [1e3, 2e3, 4e3]})
    with pytest.raises(GpuperfError, match="properties names none"):
        LinearCountModel(properties=[]).fit(frame, [1.0, 2.0, 3.0])
    twice = pd.concat([frame, frame[["work_items"]]], axis=1)
    with pytest.raises(GpuperfError, match=r"property column\(s\) work_items appear more than once"):
        LinearCountModel(properties=["launches", "work_items"]).fit(twice, [1.0, 2.0, 3.0])


def test_properties_given_as_one_text_is_named_not_read_letter_by_letter():
    """properties="launches" was iterated letter by letter: "unknown property 'l'"."""
    frame = pd.DataFrame({"launches": [1.0, 2.0]})
    with pytest.raises(GpuperfError, match=r"properties is a list of property names, not one text \('launches'\); "
                       r"write properties=\['launches'\]"):
        LinearCountModel(properties="launches").fit(frame, [1e-6, 2e-6])
    assert LinearCountModel(properties=["launches"]).fit(frame, [1e-6, 2e-6]).coef_[0] == pytest.approx(1e-6)


def test_text_or_missing_property_values_are_named_by_column_and_row() -> None:
    frame, weights = synthetic()
    times = frame[COSTS].to_numpy() @ weights
    model = LinearCountModel(properties=COSTS).fit(frame, times)
    with pytest.raises(GpuperfError, match=r"property column launches holds values that are not numbers "
                                           r"\('abc' in row 0\)"):
        model.predict(frame.assign(launches="abc"))
    labelled = frame.set_axis(range(10, 10 + len(frame)))  # rows named by the frame's own labels
    with pytest.raises(GpuperfError, match=r"\('x' in row 13\)"):
        model.predict(labelled.assign(launches=["x" if i == 13 else "1" for i in labelled.index]))
    with pytest.raises(GpuperfError, match="barriers is nan in row 14"):
        model.predict(labelled.assign(barriers=[np.nan if i == 14 else 1.0 for i in labelled.index]))
    with pytest.raises(GpuperfError, match="property column f32_ops holds values that are not numbers"):
        LinearCountModel(properties=COSTS).fit(frame.assign(f32_ops="x"), times)
    with pytest.raises(GpuperfError, match="property values must be numbers"):
        model.predict(np.array([["a", 1, 2, 3]], dtype=object))
    with pytest.raises(GpuperfError, match="barriers is nan in row 4"):
        model.predict(frame.assign(barriers=[np.nan if i == 4 else 1.0 for i in range(len(frame))]))
    assert model.predict(frame.assign(launches="1"))[0] == pytest.approx(model.predict(frame)[0])
    repeated = frame.set_axis([3] * len(frame))  # one label for every row: the value, and where it is
    with pytest.raises(GpuperfError, match=r"\('x' in row 3 \(position 5 of \d+\)\)$"):
        model.predict(repeated.assign(launches=["x" if i == 4 else "1" for i in range(len(frame))]))
    with pytest.raises(GpuperfError, match=r"barriers is nan in row 3 \(position 2 of \d+\)$"):
        model.predict(repeated.assign(barriers=[np.nan if i == 1 else 1.0 for i in range(len(frame))]))


def test_relative_must_be_a_truth_value() -> None:
    frame, weights = synthetic()
    with pytest.raises(GpuperfError, match="relative must be True or False, not 'no'"):
        LinearCountModel(properties=COSTS, relative="no").fit(frame, frame[COSTS].to_numpy() @ weights)


def test_an_array_given_to_a_model_fitted_on_named_columns_is_warned_about() -> None:
    frame, weights = synthetic()
    times = frame[COSTS].to_numpy() @ weights
    model = LinearCountModel(properties=COSTS).fit(frame, times)
    with pytest.warns(UserWarning, match="X does not have valid feature names.*launches, f32_ops"):
        model.predict(frame[COSTS[::-1]].to_numpy())
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        model.contributions(frame[COSTS].to_numpy())
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.predict(frame[COSTS[::-1]])
        LinearCountModel(properties=COSTS).fit(frame[COSTS].to_numpy(), times).predict(frame[COSTS].to_numpy())


def test_the_loop_stride_cache_lets_a_dropped_kernel_go() -> None:
    """The per-program cache holds the program weakly: once the kernel is dropped, so is its entry."""
    import gc
    import weakref

    import loopy as lp

    from gpuperf.models.loop_strides import LoopStrides

    kernel = _program_kernel("out[i] = 2 * a[i]", [lp.GlobalArg("a,out", np.float32, shape="n")], "twice")
    program = weakref.ref(kernel.program)
    kernel_properties(kernel, {"n": 128}, ["loop_lines"])
    assert id(kernel.program) in LoopStrides._cache
    del kernel
    gc.collect()
    assert program() is None


def test_a_constant_arrays_loads_cost_loop_lines_as_a_global_arrays() -> None:
    from test_features_kernels import weighted

    found = [kernel_properties(weighted(table), {"n": 4096}, ["loop_lines"]) for table in ("constant", "global")]
    assert found[0] == found[1] and found[0]["loop_lines"] > 0


def test_contributions_sum_to_the_prediction_with_a_negative_overlap_weight():
    X = pd.DataFrame({"global_load_bytes": [1e6, 2e6, 4e6], "overlap_bytes": [5e5, 2e6, 1e6]})
    y = X["global_load_bytes"] * 1e-9 - X["overlap_bytes"] * 2e-10
    model = LinearCountModel(properties=["global_load_bytes", "overlap_bytes"]).fit(X, y)
    assert model.weights_["overlap_bytes"] < 0
    np.testing.assert_allclose(model.contributions(X).sum(axis=1), model.predict(X), rtol=1e-12)


def test_a_positive_overlap_weight_is_outside_its_sign_bound():
    """min(loads, stores) counts time saved by overlap: its weight is never positive."""
    model = LinearCountModel(properties=["overlap_bytes"])
    model.coef_, model.property_names_ = np.array([1e-9]), ["overlap_bytes"]
    with pytest.raises(GpuperfError, match="the weight of overlap_bytes is outside its sign bound"):
        model.check_fitted_values()
    model.coef_ = np.array([-1e-9])
    model.check_fitted_values()


def test_a_negative_count_is_refused_naming_the_property_and_row() -> None:
    """Counts standardised in a Pipeline (or a slip) went in below zero: the model fitted and priced
    rows at negative times without a word."""
    X, weights = synthetic()
    y = X[COSTS].to_numpy() @ weights
    model = LinearCountModel(properties=COSTS).fit(X, y)
    column = COSTS[1]
    bad = X.copy()
    bad.loc[bad.index[3], column] = -5.0
    with pytest.raises(GpuperfError, match=rf"cannot be negative; {column} is -5.0 in row {bad.index[3]}"):
        model.predict(bad)
    with pytest.raises(GpuperfError, match="cannot be negative"):
        LinearCountModel(properties=COSTS).fit(bad, y)


def test_weights_stay_inside_their_sign_bounds_so_the_saved_model_loads(tmp_path):
    """bvls can end a hair outside a bound (work_groups at -7.85e-18 here): the weight is clipped, so the
    fitted model never prices a launch below zero and its saved file loads again."""
    from gpuperf.models.persistence import load_model, save_model
    X = pd.DataFrame({"overlap_bytes": [0.0, 1.0, 0.0], "launches": [3.0, 1.0, 0.0], "work_groups": [7.0, 0.0, 1.0]})
    model = LinearCountModel(properties=list(X.columns)).fit(X, np.ones(3))
    assert model.coef_[list(X.columns).index("work_groups")] >= 0
    assert (model.predict(X) >= 0).all()
    save_model(model, tmp_path / "m.json")
    np.testing.assert_array_equal(load_model(tmp_path / "m.json").predict(X), model.predict(X))
