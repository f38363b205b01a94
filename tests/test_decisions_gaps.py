"""Branches of the decisions package that other tests leave unrun: validation errors, fallbacks and
edge cases of spaces, explorations, guided tuning and launch geometry, each asserted by its outcome."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpuperf.decisions.geometry import DeviceDescriptor
from gpuperf.decisions.space import (
    Space,
    _sequence,
    configuration_keys,
    default_target,
    space_from_frame,
    training_spaces_from_frame,
    unparameterised_rows,
)
from gpuperf.errors import GpuperfError, GpuperfNote


def small_frame(**extra: object) -> pd.DataFrame:
    """Four configurations of one parameter b, timed in time_ms."""
    return pd.DataFrame({"b": [1, 2, 4, 8], "time_ms": [4.0, 2.0, 1.0, 3.0], **extra})


# -- spaces --------------------------------------------------------------------------------------


def test_tuning_cost_adds_compile_and_benchmark_seconds_and_is_none_without_them():
    frame = small_frame(compile_time_s=[1.0, 2.0, 3.0, 4.0], benchmark_time_s=[0.5, 0.25, 0.0, 1.0])
    assert space_from_frame(frame, ["b"], "time_ms", "t").tuning_cost().tolist() == [1.5, 2.25, 3.0, 5.0]
    only_compile = small_frame(compile_time_s=[1.0, 2.0, 3.0, 4.0])
    assert space_from_frame(only_compile, ["b"], "time_ms", "t").tuning_cost() is None


def test_a_tuple_text_that_is_no_literal_stays_as_written():
    assert _sequence("(1, 2)") == (1, 2)
    assert _sequence("[1, 2]") == (1, 2)
    assert _sequence("(1, x)") == "(1, x)"  # x is no literal: the text is the value
    assert _sequence("(1, 2") == "(1, 2"


def test_configuration_keys_without_parameters_are_empty_texts_on_the_same_rows():
    configs = pd.DataFrame({"b": [1, 2]}, index=[7, 9])
    keys = configuration_keys(configs, [])
    assert keys.tolist() == ["", ""] and keys.index.tolist() == [7, 9]


def test_a_space_needs_rows_and_parameters():
    with pytest.raises(GpuperfError, match=r"^t\.csv: the table has no rows$"):
        space_from_frame(small_frame().iloc[:0], ["b"], "time_ms", "t.csv")
    with pytest.raises(GpuperfError, match=r"^t\.csv: no parameters given \(--params P1,P2,\.\.\.\)$"):
        space_from_frame(small_frame(), [], "time_ms", "t.csv")


def test_an_empty_time_without_a_status_is_named_a_configuration_not_measured_yet():
    frame = pd.DataFrame({"b": [1, 2], "time_ms": [1.0, np.nan]})
    with pytest.raises(GpuperfError, match=r"^t\.csv: row 2: time_ms is empty \(a configuration not measured yet"):
        space_from_frame(frame, ["b"], "time_ms", "t.csv", status_column=None)


def test_unparameterised_rows_are_none_where_a_parameter_column_is_missing_or_every_row_lacks_them():
    frame = pd.DataFrame({"a": [1, None, 3], "b": [1, None, None]})
    assert unparameterised_rows(frame, ["a", "b"]).tolist() == [False, True, False]
    assert unparameterised_rows(frame, ["a", "c"]).tolist() == [False, False, False]
    assert unparameterised_rows(frame.iloc[1:2], ["a", "b"]).tolist() == [False]


def test_rows_without_the_parameters_are_left_out_with_a_note_saying_what_they_are():
    plain = pd.DataFrame({"b": [1, 2, None], "time_ms": [1.0, 2.0, 5.0]})
    with pytest.warns(GpuperfNote, match=r"left out 1 row .*the kernel measured as itself, not as a variant"):
        space = space_from_frame(plain, ["b"], "time_ms", "t.csv")
    assert space.times.tolist() == [1.0, 2.0]
    kernels = pd.DataFrame({"kernel": ["k", "k", "other", "third"], "b": [1, 2, None, None],
                            "time_ms": [1.0, 2.0, 5.0, 6.0]})
    with pytest.warns(GpuperfNote, match=r"left out 2 rows .*other kernels' rows \(other, third\); --kernel"):
        assert len(space_from_frame(kernels, ["b"], "time_ms", "t.csv")) == 2


def test_a_missing_parameter_value_in_a_table_of_several_kernels_says_to_pick_one():
    frame = pd.DataFrame({"kernel": ["k", "k", "j"], "b": [1, None, 2], "c": [1, 1, None],
                          "time_ms": [1.0, 2.0, 3.0]})
    with pytest.raises(GpuperfError, match=r"parameter b has no value \(the table holds 2 kernels, j, k: pick one "
                                           r"with --kernel\)$"):
        space_from_frame(frame, ["b", "c"], "time_ms", "t.csv")


def test_default_target_names_a_time_column_under_another_name_or_says_there_is_none():
    assert default_target(pd.DataFrame({"b": [1], "time_s": [1.0], "time": [2.0]}), "t") == "time_s"
    with pytest.raises(GpuperfError, match=r"runtime"):
        default_target(pd.DataFrame({"b": [1, 2], "runtime": [1.5, 2.5]}), "t.csv", ["b"])
    with pytest.raises(GpuperfError, match=r"^t\.csv: no time column \(time_ms, time_s, time\); name it with --target$"):
        default_target(pd.DataFrame({"b": [1, 2], "kernel": ["k", "k"]}), "t.csv", ["b"])


def test_a_training_table_without_a_time_column_says_to_rename_it():
    frame = pd.DataFrame({"b": [1, 2], "duration": [1.0, 2.0]})
    with pytest.raises(GpuperfError, match=r"^t\.csv: no time column \(time_us or one of time_ms, time_s, time\) in "
                                           r"this training table"):
        training_spaces_from_frame(frame, ["b"], "time_us", "t.csv")


def test_a_training_table_with_no_row_measured_yet_has_nothing_to_train_on():
    frame = pd.DataFrame({"b": [1, 2], "time_ms": [np.nan, np.nan]})
    with pytest.warns(GpuperfNote, match="left out 2 row"), \
            pytest.raises(GpuperfError, match=r"^t\.csv: no row is measured yet; nothing to train on$"):
        training_spaces_from_frame(frame, ["b"], "time_ms", "t.csv")


def test_a_training_table_whose_kernels_lack_the_parameters_is_an_error_naming_them():
    frame = pd.DataFrame({"kernel": ["j", "j", "k", "k"], "a": [1, 2, 1, 2], "time_ms": [1.0, 2.0, 3.0, 4.0]})
    with pytest.raises(GpuperfError, match=r"^t\.csv: no kernel in it has the parameters b \(and no others"):
        training_spaces_from_frame(frame, ["b"], "time_ms", "t.csv")


def test_a_training_table_whose_groups_repeat_configurations_names_the_repeated_row():
    frame = pd.DataFrame({"kernel": ["j"] * 4 + ["k"] * 4, "b": [1, 1, 2, 2] * 2, "layout": ["r", "c"] * 4,
                          "time_ms": np.arange(1.0, 9.0)})
    with pytest.raises(GpuperfError, match=r"^t\.csv \(j\): row 2: configuration 1 appears twice \(its rows differ "
                                           r"in layout"):
        training_spaces_from_frame(frame, ["b"], "time_ms", "t.csv")


# -- exploration -------------------------------------------------------------------------------


def line_space(times: list[float]) -> Space:
    """One parameter b numbered from 1, with the given times."""
    return Space(["b"], pd.DataFrame({"b": range(1, len(times) + 1)}), np.array(times, dtype=float), "line")


def test_make_explorer_refuses_a_search_that_cannot_run_without_refits():
    from gpuperf.decisions.exploration import make_explorer

    space = line_space([4.0, 2.0, 1.0, 3.0])
    with pytest.raises(GpuperfError, match=r"^a Gaussian process cannot be trained on whole tables; with --no-refit"):
        make_explorer(space, [line_space([1.0, 2.0, 3.0, 4.0])], model="gp", refit=False)
    with pytest.raises(GpuperfError, match=r"^without --train tables the exploration must refit as it measures"):
        make_explorer(space, (), model="et", refit=False)
    with pytest.raises(GpuperfError, match=r"model"):
        make_explorer(space, (), model="no-such-model")


def test_explore_refuses_a_budget_below_one_evaluation():
    from gpuperf.decisions.exploration import explore

    with pytest.raises(GpuperfError, match=r"^budget 0 must be at least 1 evaluation$"):
        explore(line_space([4.0, 2.0, 1.0, 3.0]), budget=0)


def test_explore_takes_one_training_space_as_a_list_of_one():
    from gpuperf.decisions.exploration import explore

    space = line_space([5.0, 4.0, 3.0, 2.0, 1.0, 6.0])
    other = Space(["b"], space.configs, np.array([6.0, 5.0, 4.0, 3.0, 2.0, 7.0]), "other", gpu="V100")
    alone, listed = explore(space, other, budget=6), explore(space, [other], budget=6)
    assert alone.order == listed.order and alone.method == listed.method
    assert alone.order[0] == 4  # the other GPU's fastest configuration first


def test_an_exploration_result_curve_is_the_best_found_so_far_in_its_order():
    from gpuperf.decisions.exploration import ExploreResult

    result = ExploreResult([2, 0, 1], np.array([0.5, 0.25, 1.0]), "test")
    assert result.curve().tolist() == [1.0, 1.0, 1.0]
    later = ExploreResult([1, 0, 2], np.array([0.5, 0.25, 1.0]), "test")
    assert later.curve().tolist() == [0.25, 0.5, 1.0] and later.evals(0.5) == 2


def test_run_search_refuses_an_explorer_that_picks_a_configuration_twice():
    from gpuperf.decisions.explorers import run_search

    class Stuck:
        def next(self, measured, times):
            return 0

    with pytest.raises(RuntimeError, match="explorer picked configuration 0 twice"):
        run_search(Stuck(), np.array([2.0, 1.0, 3.0]), budget=3)


def test_a_static_model_without_other_gpus_measured_ranks_by_the_surrogate_alone():
    """With no column of other GPUs' performance, the row median is NaN: the surrogate's prediction ranks."""
    from gpuperf.decisions.explorers import StaticModel, row_statistic

    assert np.isnan(row_statistic(np.nanmedian, np.empty((3, 0)))).all()
    features = np.arange(6, dtype=float)[:, None]
    model = StaticModel(features, np.empty((6, 0)), [features], [np.linspace(0.1, 1.0, 6)], "et", seed=0)
    assert model.next([], np.full(6, np.nan)) == 5  # trained: performance grows with the feature


# -- guided tuning -------------------------------------------------------------------------------


def test_guided_search_refuses_a_parameter_string_and_an_empty_configuration_table():
    from gpuperf.decisions.tune import GuidedSearch

    configs = pd.DataFrame({"bx": [1, 2], "by": [1, 1]})
    with pytest.raises(GpuperfError, match=r"^params lists column names, e.g. \['bx'\], not the string 'bx'$"):
        GuidedSearch(configs, "bx")
    with pytest.raises(GpuperfError, match=r"^no configurations to search$"):
        GuidedSearch(configs.iloc[:0], ["bx", "by"])


def test_guided_search_repr_shows_how_far_the_search_got():
    from gpuperf.decisions.tune import GuidedSearch

    search = GuidedSearch(pd.DataFrame({"b": [1, 2, 4, 8]}), ["b"])
    assert repr(search) == "GuidedSearch(4 configurations, 0 measured, best None)"
    search.tell(2, 0.5)
    search.tell(1, None)
    assert repr(search) == "GuidedSearch(4 configurations, 2 measured, best 2)"


def test_a_ranking_without_the_configurations_columns_is_refused():
    from gpuperf.decisions.tune import ranked_positions

    configs = pd.DataFrame({"bx": [1, 2, 4], "by": [1, 1, 2]})
    assert ranked_positions(configs, pd.DataFrame({"bx": [4, 9, 1], "by": [2, 1, 1]})) == [2, 0]
    with pytest.raises(GpuperfError, match=r"^the ranking has no column\(s\) by$"):
        ranked_positions(configs, pd.DataFrame({"bx": [4, 1]}))


def tuning_table(monkeypatch) -> pd.DataFrame:
    """Two trials of jacobi2d_5pt at n=m=128 as tune --out writes them, timed without a device."""
    from test_decisions_tune import SIZES, _hashed_times

    from gpuperf.decisions.tune import tune_space

    _hashed_times(monkeypatch)
    return tune_space("jacobi2d_5pt", SIZES, budget=2, seed=0).table()


@pytest.mark.opencl
def test_resuming_from_a_table_tune_did_not_write_names_the_missing_columns(monkeypatch):
    from gpuperf.decisions.tune import earlier_trials

    table = tuning_table(monkeypatch)
    with pytest.raises(GpuperfError, match=r"^trials\.csv: missing column\(s\) device, status: not a table tune --out"):
        earlier_trials(table.drop(columns=["device", "status"]), "trials.csv")


@pytest.mark.opencl
def test_resuming_refuses_a_failed_trial_with_a_time(monkeypatch):
    from gpuperf.decisions.tune import earlier_trials

    table = tuning_table(monkeypatch).astype(object)
    table.loc[1, "status"] = "compile_error"
    with pytest.raises(GpuperfError, match=r"^trials\.csv: row 2: status compile_error with time_s .*: a trial that "
                                           r"ran has a time, a failed one none$"):
        earlier_trials(table, "trials.csv")


@pytest.mark.parametrize("seed", [-1, "x", 1.5])
@pytest.mark.opencl
def test_resuming_refuses_a_recorded_seed_that_is_no_seed(monkeypatch, seed):
    from gpuperf.decisions.tune import earlier_trials

    table = tuning_table(monkeypatch).assign(tune_seed=seed)
    with pytest.raises(GpuperfError, match=r"^trials\.csv: tune_seed='.*' is no seed \(a whole number, 0 or more\)$"):
        earlier_trials(table, "trials.csv")


@pytest.mark.opencl
def test_resuming_a_run_whose_space_has_other_parameters_now_is_refused(monkeypatch):
    from gpuperf.decisions.tune import earlier_trials

    table = tuning_table(monkeypatch)
    table["variant"] = table["variant"].astype(str) + ",tile=2"
    with pytest.raises(GpuperfError, match=r"^trials\.csv: the space jacobi2d_5pt has other parameters than the run to "
                                           r"resume tuned \(no longer: tile\); resume with the space as it was"):
        earlier_trials(table, "trials.csv")


@pytest.mark.opencl
def test_resuming_a_run_of_an_unknown_space_names_the_table(monkeypatch):
    from gpuperf.decisions.tune import earlier_trials

    table = tuning_table(monkeypatch).assign(kernel="no_such_space")
    with pytest.raises(GpuperfError, match=r"^trials\.csv: .*no_such_space"):
        earlier_trials(table, "trials.csv")


# -- launch geometry -------------------------------------------------------------------------------


def toy_device() -> DeviceDescriptor:
    """A GPU without a descriptor: 4 SMs of 2048 threads, 32 blocks and 48 KiB of shared memory."""
    return DeviceDescriptor("toy", 4, 2048, 32, 65536, 49152, 1024, 32, 256)


def test_a_kernel_descriptor_refuses_negative_resources():
    from gpuperf.decisions.geometry import KernelDescriptor

    with pytest.raises(GpuperfError, match=r"^registers per thread -1 must not be negative$"):
        KernelDescriptor(100, registers=-1)
    with pytest.raises(GpuperfError, match=r"^shared memory per block -4 bytes must not be negative$"):
        KernelDescriptor(100, shared_memory_bytes=-4)


def test_shared_memory_limits_resident_blocks_on_a_device_without_a_descriptor():
    from gpuperf.decisions.geometry import resident_blocks_per_sm

    device = toy_device()
    assert resident_blocks_per_sm(device, 256, 0, 0) == 8  # 2048 threads / 256
    assert resident_blocks_per_sm(device, 256, 0, 16384) == 3  # 49152 bytes / 16384
    assert resident_blocks_per_sm(device, 256, 0, 49153) == 0
    assert resident_blocks_per_sm(device, 2048, 0, 0) == 0  # above 1024 threads per block


def test_a_block_that_fits_no_sm_is_an_error_not_an_empty_launch():
    from gpuperf.decisions.geometry import KernelDescriptor, heuristic, max_occupancy_threads

    device = toy_device()
    kernel = KernelDescriptor(10**6, registers=0, shared_memory_bytes=65536)
    with pytest.raises(GpuperfError, match=r"^a block of 256 threads does not fit on an SM of toy$"):
        heuristic(device, kernel)
    with pytest.raises(GpuperfError, match=r"^no block size fits on toy with 0 registers and 65536 bytes of shared"):
        max_occupancy_threads(device, 0, 65536)


def test_a_gpu_without_per_sm_limits_has_no_geometry_descriptor():
    import dataclasses

    from gpuperf.hardware.specs import get_gpu

    spec = dataclasses.replace(get_gpu("V100"), name="Mystery", registers_per_sm=None)
    with pytest.raises(GpuperfError, match=r"^GPU 'Mystery' lacks field registers_per_sm, which launch geometry needs"):
        DeviceDescriptor.from_spec(spec)


def test_a_gpu_the_occupancy_rules_do_not_know_uses_its_plain_limits_with_a_note():
    import dataclasses

    from gpuperf.decisions.geometry import resident_blocks_per_sm
    from gpuperf.hardware.specs import get_gpu

    v100 = get_gpu("V100")
    spec = dataclasses.replace(v100, name="Mystery", compute_capability="99.0")
    with pytest.warns(GpuperfNote, match=r"no occupancy rules for Mystery \(99\.0\): resident blocks follow"):
        device = DeviceDescriptor.from_spec(spec)
    assert (device.sms, device.max_threads_per_sm, device.max_blocks_per_sm) == (v100.sms, 2048, 32)
    assert device.preferred_threads_per_block == 64  # 2048 threads / 32 blocks
    assert resident_blocks_per_sm(device, 256, 0, 0) == 8
    assert resident_blocks_per_sm(device, 256, 0, 40000) == v100.shared_memory_per_sm_bytes // 40000


def test_a_users_space_named_like_a_catalog_kernel_in_a_campaign_export_is_a_training_space_of_its_own():
    """A campaign export names a user's space by its program's name only: a user's space whose program is called
    stencil2d and the catalog's stencil2d, measured on one device, were one group whose configurations repeat,
    and both were left out as another kernel's space. Its kernel_spec tells them apart."""
    frame = pd.DataFrame({"kernel": ["stencil2d"] * 4 + ["jacobi2d_5pt"] * 2, "b": [1, 2, 1, 2, 1, 2],
                          "kernel_spec": ["stencil2d[b=1]", "stencil2d[b=2]", "/home/me/us.py:mine[b=1]",
                                          "/home/me/us.py:mine[b=2]", "jacobi2d_5pt[b=1]", "jacobi2d_5pt[b=2]"],
                          "time_ms": [1.0, 2.0, 4.0, 3.0, 5.0, 6.0]})
    spaces = training_spaces_from_frame(frame, ["b"], "time_ms", "t.csv")
    assert [s.where for s in spaces] == ["t.csv (jacobi2d_5pt)", "t.csv (stencil2d)",
                                         "t.csv (stencil2d (/home/me/us.py:mine))"]


def test_explore_kernel_picks_one_of_two_kernels_of_one_name_in_a_campaign_export():
    """--kernel stencil2d picked both the catalog's stencil2d and a user's space of that name from a campaign
    export, whose configurations then repeated (an error telling to pick with --kernel). Its kernel_spec tells
    them apart: stencil2d is the catalog's, 'stencil2d (/home/me/us.py:mine)' the user's."""
    from gpuperf.decisions.space import select_rows

    frame = pd.DataFrame({"kernel": ["stencil2d"] * 4, "b": [1, 2, 1, 2], "time_ms": [1.0, 2.0, 4.0, 3.0],
                          "kernel_spec": ["stencil2d[b=1]", "stencil2d[b=2]", "/home/me/us.py:mine[b=1]",
                                          "/home/me/us.py:mine[b=2]"]})
    catalog, where = select_rows(frame, "e.csv", kernel="stencil2d")
    assert catalog["time_ms"].tolist() == [1.0, 2.0] and where == "e.csv (stencil2d)"
    users, where = select_rows(frame, "e.csv", kernel="stencil2d (/home/me/us.py:mine)")
    assert users["time_ms"].tolist() == [4.0, 3.0] and where == "e.csv (stencil2d (/home/me/us.py:mine))"
