"""Tuning for real: the ask/tell search, and a variant space tuned on the local OpenCL device."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuperf.cli import main
from gpuperf.datasets.bundled import data_dir
from gpuperf.decisions.exploration import make_explorer
from gpuperf.decisions.explorers import run_search
from gpuperf.decisions.space import Space, read_space
from gpuperf.decisions.tune import GuidedSearch, candidate_configurations, training_spaces, tune_space
from gpuperf.errors import GpuperfError
from gpuperf.kernels.space import InvalidVariant, VariantSpace, get_space

SIZES = {"n": 128, "m": 128}


def grid(optimum: tuple[int, int], scale: float = 1.0) -> Space:
    xs, ys = np.meshgrid(np.arange(1, 13), np.arange(1, 13), indexing="ij")
    configs = pd.DataFrame({"x": xs.ravel(), "y": ys.ravel()})
    times = scale * (1.0 + 0.05 * ((configs["x"] - optimum[0]) ** 2 + (configs["y"] - optimum[1]) ** 2))
    times[(configs["x"] == 3).to_numpy()] = np.nan  # a column of failures
    return Space(["x", "y"], configs, times.to_numpy(dtype=float), "grid")


@pytest.mark.parametrize("with_train", [False, True])
def test_ask_tell_picks_what_the_simulation_picks(with_train):
    target = grid((9, 4))
    train = [grid((8, 4), 2.0), grid((2, 11), 0.5)] if with_train else []
    simulated = run_search(make_explorer(target, train, None, True, seed=3), target.times, 25, stop_at=None)
    search = GuidedSearch(target.configs, ["x", "y"], train, seed=3)
    asked = []
    for _ in range(25):
        index = search.ask()
        asked.append(index)
        search.tell(index, None if np.isnan(target.times[index]) else target.times[index])
    assert asked == simulated
    ran = [i for i in asked if np.isfinite(target.times[i])]
    assert search.best() == min(ran, key=lambda i: target.times[i])


def test_repeated_configurations_are_refused_and_a_missing_time_is_a_failure():
    """A table listing a configuration twice made the search ask for one already measured; pd.NA, how a
    nullable table holds a missing time, was refused as 'time <NA> must be positive'."""
    configs = grid((9, 4)).configs
    with pytest.raises(GpuperfError, match=r"configuration 144 \(.*\) appears twice in the configurations"):
        GuidedSearch(pd.concat([configs, configs.iloc[[5]]], ignore_index=True), ["x", "y"])
    search = GuidedSearch(configs, ["x", "y"], seed=1)
    index = search.ask()
    search.tell(index, pd.NA)
    assert np.isnan(search.times[index]) and search.best() is None


@pytest.mark.parametrize("with_train", [False, True])
def test_ask_never_names_a_configuration_told_before_it_was_asked(with_train):
    """Results measured outside the search (a default configuration, an earlier run) may be told
    first; the search then never asks for them again."""
    target = grid((9, 4))
    train = [grid((8, 4), 2.0), grid((2, 11), 0.5)] if with_train else []
    picks = run_search(make_explorer(target, train, None, True, seed=3), target.times, 6, stop_at=None)
    search = GuidedSearch(target.configs, ["x", "y"], train, seed=3)
    for index in picks[1:4]:  # what the search would ask second to fourth, told before it asks anything
        search.tell(index, None if np.isnan(target.times[index]) else target.times[index])
    for _ in range(20):
        index = search.ask()
        assert index not in search.measured
        search.tell(index, None if np.isnan(target.times[index]) else target.times[index])


def test_guided_search_takes_training_tables_as_well_as_spaces(tmp_path):
    """A table of several GPUs (a DataFrame or a file) counts as one space per GPU, as in explore."""
    target = grid((9, 4))
    train = [grid((8, 4), 2.0), grid((2, 11), 0.5)]
    rows = pd.concat([space.configs.assign(time_s=space.times, gpu=gpu,
                                           status=np.where(np.isnan(space.times), "run_failed", "ok"))
                      for space, gpu in zip(train, ("A", "B"))])
    rows.to_csv(tmp_path / "others.csv", index=False)
    asked = {}
    for label, given in (("spaces", train), ("frame", [rows]), ("file", [tmp_path / "others.csv"]),
                         ("one path", str(tmp_path / "others.csv"))):
        search = GuidedSearch(target.configs, ["x", "y"], given, seed=3)
        asked[label] = []
        for _ in range(6):
            index = search.ask()
            asked[label].append(index)
            search.tell(index, None if np.isnan(target.times[index]) else target.times[index])
    assert asked["frame"] == asked["file"] == asked["one path"] == asked["spaces"]
    with pytest.raises(GpuperfError, match="train: int is not a Space, a table or a path to one"):
        GuidedSearch(target.configs, ["x", "y"], [3])


def test_guided_search_takes_a_bundled_table_of_several_kernels_by_name():
    """The README's 'bundled names' failed: another kernel's space sharing no configuration was an
    error. Now, as explore's --train: with kernel=, only that kernel's rows train; without, spaces
    sharing no configuration are left out; each with a note."""
    from gpuperf.datasets import load_dataset
    from gpuperf.errors import GpuperfNote

    params = ["local_x", "local_y", "outputs_y", "prefetch", "unroll"]
    h200 = load_dataset("stencil_spaces_h200")
    configs = h200.loc[h200["kernel"].eq("srad1"), params].reset_index(drop=True)
    with pytest.warns(GpuperfNote, match="only its rows of srad1"):
        own = GuidedSearch(configs, params, "stencil_spaces_h100", kernel="srad1", seed=0)
    with pytest.warns(GpuperfNote, match="only its rows of srad1"):
        trained = training_spaces(load_dataset("stencil_spaces_h100"), params, own.space)
    assert [s.where for s in trained] == ["table (srad1)"]
    with pytest.warns(GpuperfNote, match="share no configuration with search and are left out"):
        every = GuidedSearch(configs, params, "stencil_spaces_h100", seed=0)
    with pytest.warns(GpuperfNote, match="share no configuration"):
        kept = {s.where for s in training_spaces("stencil_spaces_h100", params, every.space)}
    assert "stencil_spaces_h100 (srad1)" in kept and "stencil_spaces_h100 (hotspot2d)" not in kept
    assert own.ask() in range(len(configs)) and every.ask() in range(len(configs))


SPACES_WITH_ODD_NAMES = """
import loopy as lp
import numpy as np
from gpuperf.kernels.space import VariantSpace


def _make(config):
    program = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = 2*a[i]", [lp.GlobalArg("a,b", np.float32, shape="n"), "..."],
                             assumptions="n >= 256 and n mod 256 = 0", name="scal", lang_version=(2018, 2))
    return lp.split_iname(program, "i", config["local_x"], outer_tag="g.0", inner_tag="l.0")


def with_none():
    return VariantSpace(name="scal", parameters={"local_x": [32, 64], "mode": [None, "fast"]},
                        defaults={"local_x": 32, "mode": None}, check=lambda c: None, make=_make)


def named_time():
    return VariantSpace(name="scal", parameters={"local_x": [32, 64], "time": [1, 2]},
                        defaults={"local_x": 32, "time": 1}, check=lambda c: None, make=_make)


def named_like_a_size():
    return VariantSpace(name="scal", parameters={"local_x": [32, 64], "n": [1, 2]},
                        defaults={"local_x": 32, "n": 1}, check=lambda c: None, make=_make)
"""


@pytest.mark.opencl
def test_a_parameter_value_none_is_a_setting_the_search_tunes_records_and_resumes(tmp_path, capsys):
    """GuidedSearch, tune and Kernel Tuner's strategy crashed ('<' between str and float) on a
    parameter taking the value None; tune --out wrote it as an empty cell its resume refused."""
    for configs in (pd.DataFrame({"unroll": [None, 1, 2, None, 1, 2], "bs": [16, 16, 16, 32, 32, 32]}),
                    pd.DataFrame({"mode": [None, "fast", None, "fast"], "bs": [16, 16, 32, 32]})):
        search = GuidedSearch(configs, list(configs.columns), seed=0)
        for _ in range(len(configs)):
            index = search.ask()
            search.tell(index, 1.0 + index)
        assert sorted(search.measured) == list(range(len(configs)))
    (tmp_path / "odd.py").write_text(SPACES_WITH_ODD_NAMES)
    out = tmp_path / "trials.csv"
    args = ["tune", f"{tmp_path / 'odd.py'}:with_none", "-p", "n=256", "--out", str(out)]
    assert main([*args, "--budget", "3"]) == 0
    assert main([*args, "--budget", "4", "--resume"]) == 0
    written = pd.read_csv(out, keep_default_na=False)
    assert sorted(zip(written["local_x"], written["mode"])) == [(32, "None"), (32, "fast"), (64, "None"),
                                                                (64, "fast")]
    assert "│ None" in capsys.readouterr().out
    with pytest.raises(GpuperfError, match="parameter 'n' has the name of a size parameter"):
        tune_space(f"{tmp_path / 'odd.py'}:named_like_a_size", {"n": 256}, budget=1)
    with pytest.raises(GpuperfError, match="parameter 'time' has the name of a column of the trials' table or --json"):
        tune_space(f"{tmp_path / 'odd.py'}:named_time", {"n": 256}, budget=1)


def test_tell_refuses_repeats_and_bad_times():
    search = GuidedSearch(grid((5, 5)).configs, ["x", "y"])
    first = search.ask()
    search.tell(first, 2.0)
    with pytest.raises(GpuperfError, match="already measured"):
        search.tell(first, 1.0)
    with pytest.raises(GpuperfError, match="must be positive"):
        search.tell(search.ask(), -1.0)
    with pytest.raises(GpuperfError, match="no column"):
        GuidedSearch(grid((5, 5)).configs, ["x", "z"])
    for index in (-1, 144, "2", True, [2]):
        with pytest.raises(GpuperfError, match="not a label of the 144 configurations"):
            search.tell(index, 1.0)
    for time in ("fast", float("inf")):
        with pytest.raises(GpuperfError, match="must be positive"):
            search.tell(search.ask(), time)
    assert search.measured == [first] and search.best() == first  # refused calls changed nothing


def test_a_start_order_or_seed_the_search_cannot_use_is_refused_when_the_search_is_built():
    configs = grid((5, 5)).configs  # 144 configurations
    for start, message in (([100, 200], "start: 200 is not a label of the 144 configurations"),
                           ([-1], "start: -1 is not a label"), (["1"], "start: '1' is not a label"),
                           ([1, 1], "start: configuration 1 is named more than once")):
        with pytest.raises(GpuperfError, match=message):
            GuidedSearch(configs, ["x", "y"], start=start)
    for seed in ("x", -1, 1.5):
        with pytest.raises(GpuperfError, match=r"seed .*: a whole number, 0 or more"):
            GuidedSearch(configs, ["x", "y"], seed=seed)
    search = GuidedSearch(configs, ["x", "y"], start=np.array([7, 3]), initial=2)
    first = search.ask()
    search.tell(first, 1.0)
    assert [first, search.ask()] == [7, 3]


def test_candidates_are_the_configurations_the_cheap_check_accepts():
    space = get_space("jacobi2d_5pt")
    candidates = candidate_configurations("jacobi2d_5pt")
    total = len(list(space.configurations()))
    assert 0 < len(candidates) < total and list(candidates.columns) == list(space.parameters)
    assert all(space.check(row) is None for row in candidates.to_dict("records"))


@pytest.mark.opencl
def test_tune_measures_distinct_variants_and_a_broken_one_fails_alone(monkeypatch):
    built = VariantSpace.build
    calls = []

    def first_is_broken(self, config):  # the first build is the default variant's size check
        calls.append(config)
        if len(calls) == 2:
            raise InvalidVariant("broken on purpose", self.key(config))
        return built(self, config)

    monkeypatch.setattr(VariantSpace, "build", first_is_broken)
    seen = []
    result = tune_space("jacobi2d_5pt", SIZES, budget=3, on_trial=lambda so_far: seen.append(len(so_far.trials)))
    assert seen == [1, 2, 3] and result.method == "online (gp)"
    statuses = [t.status for t in result.trials]
    assert statuses == ["invalid_variant", "ok", "ok"] and "broken on purpose" in result.trials[0].detail
    configs = [tuple(t.config.values()) for t in result.trials]
    assert len(set(configs)) == 3
    assert all(t.time_s > 0 for t in result.trials[1:])
    assert result.best() is min(result.trials[1:], key=lambda t: t.time_s)
    table = result.table()
    assert list(table["status"]) == statuses and table["gpu"].nunique() == 1
    assert result.gpu is not None  # the device's name as its measurements record it


@pytest.mark.opencl
def test_tuning_stops_when_a_trial_leaves_the_device_unusable(monkeypatch):
    """After a sticky CUDA error every later trial would fail: the run stops with the trials so far
    handed to on_trial (so tune --out keeps them)."""
    from gpuperf.measure.devices import DeviceLost
    from gpuperf.measure.opencl import OpenCLLaunch

    run_many = OpenCLLaunch.run_many
    launches = []

    def second_trial_faults(self, count):
        if self.compiled.kernel not in launches:
            launches.append(self.compiled.kernel)
        if len(launches) == 2:
            raise DeviceLost("kernel failed to run: CUDARuntimeError: cudaErrorIllegalAddress")
        return run_many(self, count)

    monkeypatch.setattr(OpenCLLaunch, "run_many", second_trial_faults)
    seen = []
    with pytest.raises(GpuperfError, match=r"trial 2 .* failed: kernel failed to run: .*cudaErrorIllegalAddress\. "
                                           r"After this error the device fails every later call"):
        tune_space("jacobi2d_5pt", SIZES, budget=4, on_trial=lambda so_far: seen.append(
            [t.status for t in so_far.trials]))
    assert seen == [["ok"], ["ok", "run_failed"]]


@pytest.mark.opencl
def test_tune_command_saves_trials_that_train_the_next_run(tmp_path, capsys):
    out = tmp_path / "trials.csv"
    argv = ["tune", "jacobi2d_5pt", "-p", "n=128", "-p", "m=128", "--budget", "2", "--out", str(out), "--json",
            "--start", "random"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["evaluated"] == 2 and first["method"] == "online (gp)"
    assert first["best_time"] == min(t["time"] for t in first["trials"] if t["time"] is not None)
    assert first["time_column"] == "time_s"
    saved = read_space(out, list(get_space("jacobi2d_5pt").parameters))
    assert len(saved) == 2 and saved.gpu
    labelled = read_space(out)  # the variant labels name the parameters: no --params needed
    assert sorted(labelled.params) == sorted(saved.params) and labelled.keys().tolist() == saved.keys().tolist()
    assert pd.read_csv(out)[["n", "m"]].drop_duplicates().values.tolist() == [[128, 128]]
    again = ["tune", "jacobi2d_5pt", "-p", "n=128", "-p", "m=128", "--budget", "1", "--train", str(out), "--json"]
    assert main(again) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["method"] == "transfer-guided (et)"
    best = {k: v for k, v in first["best"].items()}
    assert {k: second["trials"][0][k] for k in best} == best  # the other run's best is tried first
    assert main(["tune", "jacobi2d_5pt", "--budget", "1", "--out", str(tmp_path / "absent" / "t.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err
    before = out.read_text()
    assert main(argv) == 2  # the first run's trials are kept
    assert "trials.csv: the file exists; gpuperf does not overwrite files" in capsys.readouterr().err
    assert out.read_text() == before
    assert main(["tune", "jacobi2d_5ptt", "--budget", "1"]) == 2
    assert "jacobi2d_5pt" in capsys.readouterr().err
    assert main([*again, "--start", "random"]) == 2
    assert "--start picks the first variants without --train" in capsys.readouterr().err
    assert main(["tune", "jacobi2d_5pt", "--budget", "1", "--start", "best"]) == 2
    assert "unknown start 'best'" in capsys.readouterr().err


@pytest.mark.opencl
def test_without_other_gpus_the_first_picks_follow_a_ranking():
    from gpuperf.decisions.tune import RANKED_PICKS

    candidates = candidate_configurations("jacobi2d_5pt")
    ranking = candidates.iloc[::-1].head(50)  # any order: the last candidates first
    result = tune_space("jacobi2d_5pt", SIZES, budget=RANKED_PICKS + 1, ranking=ranking)
    first = [tuple(t.config.values()) for t in result.trials[:RANKED_PICKS]]
    assert first == [tuple(row) for row in ranking.head(RANKED_PICKS).itertuples(index=False)]
    assert tuple(result.trials[RANKED_PICKS].config.values()) not in first
    assert tuple(result.trials[RANKED_PICKS].config.values()) != tuple(ranking.iloc[RANKED_PICKS])  # the model's pick
    assert result.method == f"online (gp), first {RANKED_PICKS} picks ranked by other kernels"


def test_the_ranking_by_other_kernels_never_sees_the_kernels_own_rows(monkeypatch):
    from gpuperf.decisions import cross_kernel
    from gpuperf.decisions.tune import rank_by_other_kernels

    seen = {}
    monkeypatch.setattr(cross_kernel, "rank_space", lambda space, sizes, table, **options: seen.setdefault("t", table))
    table = pd.DataFrame({"kernel": ["jacobi2d_5pt", "srad1", "gradient"], "time_s": [1.0, 2.0, 3.0]})
    rank_by_other_kernels("jacobi2d_5pt", SIZES, table)
    assert list(seen["t"]["kernel"]) == ["srad1", "gradient"]
    with pytest.raises(GpuperfError, match="no measured variants of other kernels"):
        rank_by_other_kernels("jacobi2d_5pt", SIZES, table.head(1), "own.csv")


@pytest.mark.opencl
def test_a_variant_whose_assumptions_the_sizes_break_fails_alone(monkeypatch):
    from gpuperf.decisions import tune
    from gpuperf.kernels.space import check_variant_sizes

    space = get_space("jacobi2d_5pt")
    wide = space.build({"local_x": 128, "local_y": 8, "outputs_y": 8})  # needs m a multiple of 128
    with pytest.raises(InvalidVariant, match="sizes outside its assumptions"):
        check_variant_sizes(wide, {"n": 64, "m": 64})
    check_variant_sizes(wide, {"n": 64, "m": 128})
    wide_first = candidate_configurations("jacobi2d_5pt")
    wide_first = pd.concat([wide_first[(wide_first["local_x"] == 128) & (wide_first["local_y"] == 8)
                                       & (wide_first["outputs_y"] == 8)].head(1), wide_first.head(40)])
    monkeypatch.setattr(tune, "candidate_configurations", lambda name: wide_first.reset_index(drop=True))
    monkeypatch.setattr(tune, "GuidedSearch", lambda configs, *args, **options: _InOrder(len(configs)))
    result = tune_space("jacobi2d_5pt", {"n": 64, "m": 64}, budget=2)
    assert [t.status for t in result.trials] == ["invalid_variant", "ok"]
    with pytest.raises(GpuperfError, match="opencl:7:7"):
        tune_space("jacobi2d_5pt", {"n": 64, "m": 64}, device="opencl:7:7", budget=1)



@pytest.mark.opencl
def test_tune_ranks_and_measures_the_variants_valid_at_sizes_its_default_refuses(tiled_space, capsys):
    # the default variant (local_x=64) assumes n is a multiple of 64: at n=32 only the others run
    assert main(["tune", tiled_space, "-p", "n=32", "--budget", "3", "--no-progress", "--json"]) == 0
    tuned = json.loads(capsys.readouterr().out)
    assert "ranked by other kernels" in tuned["method"]
    statuses = {t["local_x"]: t["status"] for t in tuned["trials"]}
    assert statuses == {16: "ok", 32: "ok", 64: "invalid_variant"}
    assert main(["tune", tiled_space, "-p", "n=8", "--budget", "1", "--no-progress"]) == 2
    assert "no valid variant of twice at these sizes (n=8): all 3 skipped" in capsys.readouterr().err
    with pytest.raises(GpuperfError, match="has no size parameter m"):
        tune_space(tiled_space, {"n": 32, "m": 4}, budget=1)

class _InOrder:
    """A search that asks for the configurations in table order."""

    def __init__(self, size: int):
        self.size, self.measured, self.explorer = size, [], None

    def __len__(self) -> int:
        return self.size

    def ask(self) -> int:
        return len(self.measured)

    def tell(self, index: int, time) -> None:
        self.measured.append(index)


@pytest.mark.parametrize("with_train", [False, True])
def test_kernel_tuner_runs_the_guided_strategy_as_gpuperf_simulates_it(tmp_path, with_train):
    from gpuperf.decisions.kernel_tuner_baseline import strategy_order, write_space_cache
    from gpuperf.decisions.kernel_tuner_strategy import GuidedStrategy

    # Irregular times (no exact ties), with few digits, so the cache replays them exactly.
    rng = np.random.default_rng(5)
    irregular = [grid(optimum, scale) for optimum, scale in (((9, 4), 1.0), ((8, 4), 2.0), ((2, 11), 0.5))]
    for space in irregular:
        space.times = np.round(space.times * np.exp(0.1 * rng.normal(size=len(space))), 6)
    target = irregular[0].without_failures()  # Kernel Tuner's simulation never visits a cached failure
    others = irregular[1:] if with_train else []
    cache = write_space_cache(target, tmp_path / "target.json")
    order = strategy_order(cache, target, GuidedStrategy(train=others, seed=2), budget=15)
    simulated = run_search(make_explorer(target, others, None, True, seed=2), target.times, 15, stop_at=None)
    assert order == simulated
    if with_train:  # the same tables as cache files: the same portfolio (later picks may differ in
        # the last digit of a time: a cache holds milliseconds, read back as seconds)
        caches = [str(write_space_cache(o, tmp_path / f"other{i}.json", device_name=f"other gpu {i}"))  # not the
                  for i, o in enumerate(others)]  # target's "gpu": a cache of its own GPU and kernel is left out
        from_caches = strategy_order(cache, target, GuidedStrategy(train=caches, seed=2), budget=15)
        assert from_caches[:2] == simulated[:2] and len(set(from_caches)) == 15
        # One table of both GPUs, as a DataFrame or a single path, trains it as the list does.
        table = pd.concat([o.configs.assign(time_s=o.times, gpu=gpu, status=np.where(np.isnan(o.times), "failed", "ok"))
                           for o, gpu in zip(others, ("A", "B"))])
        table.to_csv(tmp_path / "others.csv", index=False)
        named = [dataclasses.replace(o, gpu=gpu) for o, gpu in zip(others, ("A", "B"))]  # as the table names them
        expected = run_search(make_explorer(target, named, None, True, seed=2), target.times, 15, stop_at=None)
        for given in (table, str(tmp_path / "others.csv")):
            assert strategy_order(cache, target, GuidedStrategy(train=given, seed=2), budget=15) == expected
        one = strategy_order(cache, target, GuidedStrategy(train=others[0], seed=2), budget=15)
        assert one == run_search(make_explorer(target, others[:1], None, True, seed=2), target.times, 15, stop_at=None)


def test_the_guided_strategy_searches_on_the_gpu_the_caches_name_as_explore_does(tmp_path, capsys):
    """Simulation mode names the cache's GPU, so the training GPUs alike to it weigh more as in
    explore: Kernel Tuner evaluates the order explore picks on the same caches."""
    from gpuperf.decisions.kernel_tuner_baseline import strategy_order, write_space_cache
    from gpuperf.decisions.kernel_tuner_strategy import GuidedStrategy

    rng = np.random.default_rng(7)
    spaces = [grid(optimum, scale) for optimum, scale in (((9, 4), 1.0), ((2, 11), 0.5), ((9, 5), 2.0), ((5, 2), 0.7))]
    for space in spaces:
        space.times = np.round(space.times * np.exp(0.1 * rng.normal(size=len(space))), 6)
    target = spaces[0].without_failures()  # Kernel Tuner's simulation never visits a cached failure
    names = ("A100", "RTX 3090", "A4000", "V100")
    caches = [str(write_space_cache(s, tmp_path / f"c{i}.json", device_name=gpu))
              for i, (s, gpu) in enumerate(zip([target, *spaces[1:]], names))]
    assert main(["explore", caches[0], *[a for c in caches[1:] for a in ("--train", c)], "--budget", "8",
                 "--seed", "2", "--json", "--no-progress"]) == 0
    picked = [(e["x"], e["y"]) for e in json.loads(capsys.readouterr().out)["order"]]  # up to the best
    order = strategy_order(caches[0], target, GuidedStrategy(train=caches[1:], seed=2), budget=8)
    assert [tuple(int(v) for v in target.configs.iloc[i]) for i in order[:len(picked)]] == picked
    unnamed = strategy_order(caches[0], target, GuidedStrategy(train=caches[1:], seed=2, gpu="other"), budget=8)
    assert unnamed != order  # the GPU named matters here


def test_the_guided_strategy_leaves_out_the_training_rows_of_the_tuned_gpu_as_explore_does(tmp_path, capsys):
    """A training table holding the tuned GPU's own kernel (another run of it) trained the strategy
    though its docstring and explore leave those rows out: Kernel Tuner picked another order than
    explore on the same cache; now both match the order without those rows."""
    from gpuperf.decisions.kernel_tuner_baseline import strategy_order, write_space_cache
    from gpuperf.decisions.kernel_tuner_strategy import GuidedStrategy

    rng = np.random.default_rng(11)
    spaces = [grid(optimum, scale) for optimum, scale in (((9, 4), 1.0), ((2, 11), 0.5), ((10, 2), 2.0))]
    for space in spaces:
        space.times = np.round(space.times * np.exp(0.1 * rng.normal(size=len(space))), 6)
    target = spaces[0].without_failures()
    cache = write_space_cache(target, tmp_path / "target.json", kernel_name="k", device_name="RTX 3090")
    own = dataclasses.replace(target, times=np.round(target.times * np.exp(0.2 * rng.normal(size=len(target))), 6))
    parts = [s.configs.assign(time_s=s.times, gpu=gpu, kernel="k") for s, gpu in
             ((own, "RTX 3090"), (spaces[1], "A100"), (spaces[2], "V100"))]
    table = pd.concat(parts, ignore_index=True).dropna(subset=["time_s"])
    table.to_csv(tmp_path / "all.csv", index=False)
    table[table["gpu"] != "RTX 3090"].to_csv(tmp_path / "others.csv", index=False)
    order = strategy_order(cache, target, GuidedStrategy(train=str(tmp_path / "all.csv"), seed=2), budget=10)
    assert order == strategy_order(cache, target, GuidedStrategy(train=str(tmp_path / "others.csv"), seed=2), budget=10)
    assert main(["explore", str(cache), "--train", str(tmp_path / "all.csv"), "--budget", "10", "--seed", "2",
                 "--json", "--no-progress"]) == 0
    picked = [(e["x"], e["y"]) for e in json.loads(capsys.readouterr().out)["order"]]
    assert [tuple(int(v) for v in target.configs.iloc[i]) for i in order[:len(picked)]] == picked


@pytest.mark.opencl
def test_kernel_tuner_tunes_an_opencl_kernel_with_the_guided_strategy():
    import warnings

    import kernel_tuner

    from gpuperf.decisions.kernel_tuner_strategy import GuidedStrategy

    source = """
    __kernel void vector_add(__global float *c, __global const float *a, __global const float *b, int n) {
        int i = get_global_id(0) * TILE;
        for (int k = 0; k < TILE; k++) if (i + k < n) c[i + k] = a[i + k] + b[i + k];
    }"""
    n = 1 << 16
    a, b = np.random.default_rng(0).random((2, n), dtype=np.float32)
    tune_params = {"block_size_x": [16, 32, 64, 128], "TILE": [1, 2, 4]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, _ = kernel_tuner.tune_kernel(
            "vector_add", source, n, [np.zeros_like(a), a, b, np.int32(n)], tune_params, lang="OpenCL",
            grid_div_x=["block_size_x", "TILE"], answer=[a + b, None, None, None], iterations=3, quiet=True,
            strategy=GuidedStrategy(seed=1), strategy_options={"max_fevals": 5})
    configs = {(r["block_size_x"], r["TILE"]) for r in results}
    assert len(results) == len(configs) == 5
    assert all(isinstance(r["time"], float) and r["time"] > 0 for r in results)


@pytest.mark.opencl
def test_the_guided_strategy_passes_a_none_setting_back_to_kernel_tuner_as_none():
    import warnings

    import kernel_tuner

    from gpuperf.decisions.kernel_tuner_strategy import GuidedStrategy

    source = """
    __kernel void copy(__global float *b, __global const float *a, int n) {
        int i = get_global_id(0);
        if (i < n) b[i] = a[i];
    }"""
    n = 1 << 12
    a = np.random.default_rng(0).random(n, dtype=np.float32)
    tune_params = {"block_size_x": [16, 32], "hint": [None, 4]}  # pandas would make None NaN beside 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, _ = kernel_tuner.tune_kernel(
            "copy", source, n, [np.zeros_like(a), a, np.int32(n)], tune_params, lang="OpenCL", iterations=3,
            quiet=True, strategy=GuidedStrategy(seed=1), strategy_options={"max_fevals": 4})
    assert sorted((r["block_size_x"], str(r["hint"])) for r in results) == [
        (16, "4"), (16, "None"), (32, "4"), (32, "None")]


@pytest.mark.opencl
def test_tune_report_shows_trials_and_the_best_so_far(tmp_path, capsys):
    argv = ["tune", "jacobi2d_5pt", "-p", "n=128", "-p", "m=128", "--budget", "3", "--start", "random",
            "--report", str(tmp_path / "report"), "--json"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    metrics = json.loads((tmp_path / "report" / "metrics.json").read_text())
    tuning = metrics["metrics"]["tuning"]
    assert tuning["trials"] == 3 and tuning["best_time_s"] == summary["best_time"]
    assert tuning["default_time_s"] > 0
    text = (tmp_path / "report" / "report.md").read_text()
    assert "Trials in order" in text and "tuning_curve.png" in text and (tmp_path / "report" / "tuning_curve.png").stat().st_size > 0
    capsys.readouterr()  # another command's report over it would replace the trials, their only record
    table = data_dir() / "geometry_sweep_h100.csv.gz"
    assert main(["geometry-sweep", "--table", str(table), "--report", str(tmp_path / "report")]) == 2
    assert "holds a tuning report (gpuperf tune), whose trials may be their only record" in capsys.readouterr().err
    assert (tmp_path / "report" / "report.md").read_text() == text


@pytest.mark.opencl
def test_a_report_that_cannot_be_written_shows_the_results_first(tmp_path, capsys, monkeypatch):
    """tune without --out on a full disk: the report was the only place the trials went, and its error
    came before they were printed, so every measured trial was lost (the same for geometry-sweep)."""
    import gpuperf.decisions.reports as reports
    from gpuperf.files import UnwritableFile

    def full_disk(folder, *args, **kwargs):
        raise UnwritableFile(f"{folder}/tuning_curve.png: cannot be written (No space left on device)")

    monkeypatch.setattr(reports, "tuning_report", full_disk)
    monkeypatch.setattr(reports, "sweep_report", full_disk)
    argv = ["tune", "jacobi2d_5pt", "-p", "n=128", "-p", "m=128", "--budget", "2", "--start", "random",
            "--report", str(tmp_path / "report"), "--json"]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert len(json.loads(captured.out)["trials"]) == 2
    assert "tuning_curve.png: cannot be written (No space left on device); the trials are printed above" in captured.err
    table = data_dir() / "geometry_sweep_h100.csv.gz"
    assert main(["geometry-sweep", "--table", str(table), "--report", str(tmp_path / "sweep")]) == 2
    captured = capsys.readouterr()
    assert "each policy's pick, threads x blocks" in captured.out
    assert "cannot be written (No space left on device); the policies' picks are printed above" in captured.err


@pytest.mark.opencl
def test_tune_space_trains_on_a_table_given_as_a_data_frame():
    """A DataFrame is a training table as a path is (its truth value is never asked)."""
    from gpuperf.datasets import load_dataset

    others = load_dataset("stencil_spaces_pocl").query("kernel == 'jacobi2d_9pt'")
    result = tune_space("jacobi2d_5pt", SIZES, budget=1, train=others)
    assert result.method == "transfer-guided (et)" and len(result.trials) == 1


def test_ask_after_every_configuration_is_measured_is_an_error_and_a_zero_time_is_refused():
    configs = pd.DataFrame({"x": [1, 2]}, index=[10, 20])  # any index: its labels name the configurations
    search = GuidedSearch(configs, ["x"])
    with pytest.raises(GpuperfError, match="time 0.0 must be positive"):
        search.tell(10, 0.0)
    first = search.ask()
    search.tell(first, 2.0)
    second = search.ask()
    search.tell(second, 1.0)
    assert sorted([first, second]) == [10, 20] and search.best() == second
    with pytest.raises(GpuperfError, match="every configuration has been measured"):
        search.ask()


@pytest.mark.opencl
def test_tune_refuses_a_budget_below_one_and_stops_when_the_space_runs_out(tiled_space):
    with pytest.raises(GpuperfError, match="budget 0 must be at least 1 evaluation"):
        tune_space(tiled_space, {"n": 64}, budget=0)
    result = tune_space(tiled_space, {"n": 64}, budget=10)
    assert len(result.trials) == len(candidate_configurations(tiled_space)) == 3


def test_a_tuning_table_names_the_gpu_its_measurements_record():
    from gpuperf.decisions.tune import Trial, TuneResult

    result = TuneResult("s", {"n": 1}, "cuda:0", "online (gp)", [Trial({"x": 1}, 1e-3, "ok")], gpu="RTX 3090")
    assert result.table()[["kernel", "device", "gpu", "x"]].values.tolist() == [["s", "cuda:0", "RTX 3090", 1]]
    result.gpu = None  # no name known: the device stands for it
    assert result.table()["gpu"].tolist() == ["cuda:0"]
    assert result.table()[["variant", "n"]].values.tolist() == [["x=1", 1]]
    assert TuneResult("s", {"n": 1}, "cuda:0", "online (gp)").table().empty


@pytest.mark.opencl
def test_a_ranking_is_no_start_when_other_gpus_guide_the_search(tmp_path):
    """With training tables the transfer-guided search picks from the start; a ranking is unused
    and the method says so."""
    candidates = candidate_configurations("jacobi2d_5pt")
    train = candidates.head(4).assign(time_s=[4e-3, 3e-3, 2e-3, 1e-3], gpu="RTX 3090", kernel="jacobi2d_5pt")
    result = tune_space("jacobi2d_5pt", SIZES, budget=1, train=train, ranking=candidates.iloc[::-1].head(5))
    assert result.method == "transfer-guided (et)"
    assert tuple(result.trials[0].config.values()) == tuple(candidates.iloc[3])  # the other GPU's best


class _Options(dict):
    """Kernel Tuner's tuning options: a dict with attributes."""

    __getattr__ = dict.get


class _Searchspace:
    tune_params = {"x": [1, 2, 3, 4]}
    list = [(3,), (1,), (4,), (2,)]


class _Recording:
    """A search asking in table order and recording what it is told."""

    def __init__(self, configs, params, train, model, seed, gpu=None, kernel=None):
        self.configs, self.told, self.gpu = configs, [], gpu

    def __len__(self):
        return len(self.configs)

    def ask(self):
        if len(self.told) >= len(self.configs):
            raise GpuperfError("every configuration was asked for")
        return len(self.told)

    def tell(self, index, time):
        self.told.append((int(self.configs["x"].iloc[index]), time))


def _fake_kernel_tuner(monkeypatch, costs):
    """Replace Kernel Tuner's cost function by one returning ``costs[x]`` (never stopping by itself)."""
    import kernel_tuner.strategies.common as common

    from gpuperf.decisions import kernel_tuner_strategy

    searches = []

    class Cost:
        def __init__(self, searchspace, tuning_options, runner):
            self.results = []

        def __call__(self, config, check_restrictions=True):
            self.results.append({"x": config[0]})
            return costs[config[0]]

    def recording(*args, **options):
        searches.append(_Recording(*args, **options))
        return searches[-1]

    monkeypatch.setattr(common, "CostFunc", Cost)
    monkeypatch.setattr(kernel_tuner_strategy, "GuidedSearch", recording)
    return searches


def test_guided_strategy_stops_at_max_fevals_or_when_the_space_is_searched(monkeypatch):
    from gpuperf.decisions.kernel_tuner_strategy import GuidedStrategy

    searches = _fake_kernel_tuner(monkeypatch, {1: 4.0, 2: 3.0, 3: 2.0, 4: 1.0})
    results = GuidedStrategy().tune(_Searchspace(), None, _Options(max_fevals=2, objective_higher_is_better=False))
    assert [r["x"] for r in results] == [1, 2]  # sorted by parameter value, not Kernel Tuner's listing
    assert searches[-1].told == [(1, 4.0), (2, 3.0)]
    results = GuidedStrategy().tune(_Searchspace(), None, _Options(max_fevals=10, objective_higher_is_better=False))
    assert [r["x"] for r in results] == [1, 2, 3, 4]
    results = GuidedStrategy().tune(_Searchspace(), None, _Options(objective_higher_is_better=False))
    assert [r["x"] for r in results] == [1, 2, 3, 4]


def test_guided_strategy_searches_a_higher_is_better_objective_as_its_inverse(monkeypatch):
    """Kernel Tuner negates GFLOP/s into its cost: -4 GFLOP/s is told as 1/4, the first objective followed."""
    import sys

    from gpuperf.decisions.kernel_tuner_strategy import GuidedStrategy

    costs = {1: [-4.0, 9.0], 2: [-0.5, 1.0], 3: [sys.float_info.max, 1.0], 4: [0.0, 1.0]}
    searches = _fake_kernel_tuner(monkeypatch, costs)
    GuidedStrategy().tune(_Searchspace(), None, _Options(objective_higher_is_better=[True, False]))
    assert searches[-1].told == [(1, 0.25), (2, 2.0), (3, None), (4, None)]


def test_kernel_tuner_costs_become_times_and_failures_none():
    import math
    import sys

    from gpuperf.decisions.kernel_tuner_strategy import _as_time

    assert _as_time(2.5, False) == 2.5
    assert _as_time(-8.0, True) == 0.125
    for failed in (sys.float_info.max, -sys.float_info.max, math.inf, math.nan, 0.0, -1.0):
        assert _as_time(failed, False) is None, failed
        assert _as_time(-failed, True) is None, failed


@pytest.mark.parametrize("with_train", [False, True])
def test_ask_batch_starts_with_ask_and_changes_nothing(with_train):
    target = grid((9, 4))
    train = [grid((8, 4), 2.0), grid((2, 11), 0.5)] if with_train else []
    search = GuidedSearch(target.configs, ["x", "y"], train, seed=3)
    for _ in range(4):
        index = search.ask()
        search.tell(index, None if np.isnan(target.times[index]) else target.times[index])
    measured, times = list(search.measured), search.times.copy()
    batch = search.ask_batch(5)
    assert batch[0] == search.ask() and len(set(batch)) == 5 and not set(batch) & set(measured)
    assert search.ask_batch(1) == [search.ask()]
    assert search.measured == measured and np.array_equal(search.times, times, equal_nan=True)
    with pytest.raises(GpuperfError, match="ask for at least 1"):
        search.ask_batch(0)


@pytest.mark.parametrize("with_train", [False, True])
def test_a_batched_search_of_one_is_the_sequential_search(with_train):
    from gpuperf.decisions.explorers import run_batched_search

    target = grid((9, 4))
    train = [grid((8, 4), 2.0), grid((2, 11), 0.5)] if with_train else []
    sequential = run_search(make_explorer(target, train, None, True, seed=3), target.times, 30)
    rounds = run_batched_search(make_explorer(target, train, None, True, seed=3), target.times, 30, 1)
    assert [picks[0] for picks in rounds] == sequential and all(len(picks) == 1 for picks in rounds)
    fours = run_batched_search(make_explorer(target, train, None, True, seed=3), target.times, 30, 4)
    flat = [i for picks in fours for i in picks]
    assert all(len(picks) == 4 for picks in fours[:-1]) and len(set(flat)) == len(flat) <= 30
    best = np.nanmin(target.times)
    assert np.nanmin(target.times[flat]) == best and best not in target.times[[i for p in fours[:-1] for i in p]]


@pytest.mark.parametrize("with_train", [False, True])
def test_a_batch_names_the_same_configurations_in_any_time_unit(with_train):
    """The picks after a batch's first assume the times the search expects of the ones before
    (from the times measured so far), never a fixed number: times told in seconds or in
    microseconds give the same batch."""
    target = grid((9, 4))
    train = [grid((8, 4), 2.0), grid((2, 11), 0.5)] if with_train else []
    batches = []
    for unit in (1.0, 1e-6):
        search = GuidedSearch(target.configs, ["x", "y"], train, seed=3)
        for _ in range(12):
            index = search.ask()
            search.tell(index, None if np.isnan(target.times[index]) else unit * target.times[index])
        batches.append(search.ask_batch(6))
    assert batches[0] == batches[1]


@pytest.mark.parametrize("with_train", [False, True])
def test_a_batch_depends_on_what_was_measured_not_on_the_order_it_was_told(with_train):
    target = grid((9, 4))
    train = [grid((8, 4), 2.0), grid((2, 11), 0.5)] if with_train else []
    picks = run_search(make_explorer(target, train, None, True, seed=3), target.times, 14, stop_at=None)
    batches = []
    for order in (picks, picks[::-1]):
        search = GuidedSearch(target.configs, ["x", "y"], train, seed=3)
        for index in order:
            search.tell(index, None if np.isnan(target.times[index]) else target.times[index])
        batches.append(search.ask_batch(5))
    assert batches[0] == batches[1]


def test_a_batched_search_without_a_stop_spends_its_budget_and_no_more_than_the_space():
    from gpuperf.decisions.explorers import run_batched_search

    target = grid((9, 4))
    rounds = run_batched_search(make_explorer(target, [], None, True, seed=3), target.times, 30, 4, stop_at=None)
    assert [len(picks) for picks in rounds] == [4] * 7 + [2]
    assert len({i for picks in rounds for i in picks}) == 30
    small = Space(["x"], pd.DataFrame({"x": range(1, 10)}), np.linspace(2.0, 1.0, 9), "small")
    rounds = run_batched_search(make_explorer(small, [], None, True, seed=3), small.times, 20, 4, stop_at=None)
    assert [len(picks) for picks in rounds] == [4, 4, 1]
    assert sorted(i for picks in rounds for i in picks) == list(range(9))


def test_ask_batch_after_every_configuration_is_measured_is_an_error():
    search = GuidedSearch(pd.DataFrame({"x": [1, 2]}), ["x"])
    assert sorted(search.ask_batch(5)) == [0, 1]  # fewer when fewer are left
    search.tell(0, 2.0)
    search.tell(1, 1.0)
    with pytest.raises(GpuperfError, match="every configuration has been measured"):
        search.ask_batch(1)


def test_guided_search_takes_one_training_table_as_a_path_object(tmp_path):
    """A pathlib.Path is one table, as a str is (not a list of its parts)."""
    from pathlib import Path

    target = grid((9, 4))
    other = grid((8, 4), 2.0)
    other.configs.assign(time_s=other.times, gpu="A", status=np.where(np.isnan(other.times), "run_failed", "ok")).to_csv(
        tmp_path / "other.csv", index=False)
    firsts = [GuidedSearch(target.configs, ["x", "y"], given, seed=3).ask()
              for given in (Path(tmp_path / "other.csv"), str(tmp_path / "other.csv"), [other])]
    assert firsts[0] == firsts[1] == firsts[2]


def test_tune_train_counts_one_space_per_size_named_with_p(tmp_path, monkeypatch):
    """An earlier run's trials at two sizes (n = 128 and 256) train tune -p n=128 as two spaces, as
    explore and ask count them, instead of failing on a configuration that appears twice."""
    from gpuperf.decisions import tune

    params = list(get_space("jacobi2d_5pt").parameters)
    configs = candidate_configurations("jacobi2d_5pt").head(4)[params]
    rows = pd.concat([configs.assign(kernel="jacobi2d_5pt", gpu="pthread", n=n, m=128, time_s=[1.0, 2.0, 3.0, 4.0])
                      for n in (128, 256)], ignore_index=True)
    rows.to_csv(tmp_path / "trials.csv", index=False)
    seen = {}

    def stop(space, sizes, device, budget, train, *args, **options):
        seen["train"] = train
        raise GpuperfError("stopped before measuring")

    monkeypatch.setattr(tune, "tune_space", stop)
    argv = ["tune", "jacobi2d_5pt", "-p", "n=128", "-p", "m=128", "--budget", "1", "--train",
            str(tmp_path / "trials.csv"), "--no-progress"]
    assert main(argv) == 2
    assert sorted(s.where.split("(")[-1] for s in seen["train"]) == ["n=128)", "n=256)"]
    assert all(len(s) == 4 for s in seen["train"])


@pytest.mark.opencl
def test_tune_can_start_from_a_linear_count_models_ranking(tmp_path, capsys):
    from gpuperf.datasets.bundled import data_dir
    from gpuperf.decisions.count_ranking import rank_space_by_counts
    from gpuperf.decisions.tune import RANKED_PICKS
    from gpuperf.models.linear_calibration import load_linear_model

    model = tmp_path / "h100.json"
    assert main(["calibrate", "--table", str(data_dir() / "linear_model_h100.csv.gz"), "--out", str(model)]) == 0
    capsys.readouterr()
    argv = ["tune", "jacobi2d_5pt", "-p", "n=128", "-p", "m=128", "--budget", str(RANKED_PICKS + 1), "--json"]
    assert main([*argv, "--start", "counts", "--count-model", str(model)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["method"] == f"online (gp), first {RANKED_PICKS} picks ranked by a linear count model"
    params = list(get_space("jacobi2d_5pt").parameters)
    ranked = rank_space_by_counts("jacobi2d_5pt", SIZES, load_linear_model(model)[0])
    picked = [tuple(t[p] for p in params) for t in result["trials"][:RANKED_PICKS]]
    assert picked == [tuple(row) for row in ranked[params].head(RANKED_PICKS).itertuples(index=False)]
    for extra, message in ((["--start", "counts"], "give both or neither"),
                           (["--count-model", str(model)], "give both or neither")):
        assert main([*argv, *extra]) == 2
        assert message in capsys.readouterr().err


@pytest.mark.opencl
def test_an_interrupted_tuning_run_resumes_from_its_out_file_measuring_nothing_twice(tmp_path, capsys, monkeypatch):
    out = tmp_path / "trials.csv"
    argv = ["tune", "jacobi2d_5pt", "-p", "n=128", "-p", "m=128", "--start", "random", "--out", str(out), "--json"]
    assert main([*argv, "--budget", "2"]) == 0  # as a run of 4 stopped after 2 trials leaves its file
    first = json.loads(capsys.readouterr().out)
    from gpuperf.measure import timing

    measured = []
    real_measure = timing.measure
    monkeypatch.setattr(timing, "measure", lambda kernel, *a, **k: measured.append(kernel.key) or real_measure(kernel, *a, **k))
    assert main([*argv, "--budget", "4", "--resume"]) == 0
    resumed = json.loads(capsys.readouterr().out)
    assert resumed["evaluated"] == 4 and len(measured) == 2  # the 2 recorded trials were not measured again
    assert resumed["trials"][:2] == first["trials"]
    configs = [tuple(t[p] for p in sorted(first["best"])) for t in resumed["trials"]]
    assert len(set(configs)) == 4
    table = pd.read_csv(out)
    assert len(table) == 4 and table["time_s"].tolist()[:2] == [t["time"] for t in first["trials"]]
    assert main([*argv, "--budget", "4", "--resume"]) == 0 and len(measured) == 2  # nothing left to measure
    capsys.readouterr()
    other = ["tune", "jacobi2d_5pt", "-p", "n=256", "-p", "m=128", "--start", "random", "--out", str(out), "--resume"]
    assert main(other) == 2
    assert f"{out}: the run to resume tuned sizes n=128, m=128, this one n=256, m=128" in (
        capsys.readouterr().err)
    assert main(["tune", "jacobi2d_5pt", "--resume"]) == 2
    assert "--resume goes on with the run whose trials --out holds: give --out" in capsys.readouterr().err
    assert len(pd.read_csv(out)) == 4  # refusals change nothing


@pytest.mark.opencl
def test_a_run_killed_before_its_first_trial_leaves_a_claim_that_resume_takes_as_empty(tmp_path, capsys):
    """SIGKILL before the first trial left an empty --out: a rerun was refused ('the file exists'), and
    --resume too ('empty file')."""
    out = tmp_path / "trials.csv"
    out.touch()  # the claim a killed run left
    argv = ["tune", "jacobi2d_5pt", "-p", "n=128", "-p", "m=128", "--start", "random", "--out", str(out), "--json"]
    assert main([*argv, "--budget", "2"]) == 2
    assert "the file exists (it is empty: a run killed before its first result left it claimed; remove it, or " \
           "--resume)" in capsys.readouterr().err
    assert main([*argv, "--budget", "2", "--resume"]) == 0
    assert json.loads(capsys.readouterr().out)["evaluated"] == 2 and len(pd.read_csv(out)) == 2
    empty = tmp_path / "empty.csv"  # a command that claims nothing and takes no --resume says no such thing
    empty.touch()
    assert main(["import", "nvprof", str(Path(__file__).parent / "data" / "nvprof_gpu_trace.csv"), "--out",
                 str(empty)]) == 2
    err = capsys.readouterr().err
    assert "the file exists; gpuperf does not overwrite files" in err and "--resume" not in err


@pytest.mark.opencl
def test_resume_on_an_out_file_not_there_yet_starts_a_new_run_with_a_note(tmp_path, capsys):
    """Ctrl-C before the first trial removes the claim: --resume then found no file ('no such file') where
    a killed run's empty claim resumed; now it starts anew, naming the file in a note."""
    out = tmp_path / "trials.csv"
    argv = ["tune", "jacobi2d_5pt", "-p", "n=128", "-p", "m=128", "--start", "random", "--out", str(out), "--json"]
    assert main([*argv, "--budget", "2", "--resume"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["evaluated"] == 2 and len(pd.read_csv(out)) == 2
    assert f"note: --resume: {out} does not exist yet" in captured.err


@pytest.mark.opencl
def test_a_resumed_tuning_run_picks_what_the_uninterrupted_run_picks_given_the_same_times(monkeypatch):
    """Each pick is a function of the seed and the times so far: a run of 14 trials stopped after
    5 and resumed from its written table makes the same 14 picks (times here depend only on the
    configuration, so the two runs see the same ones)."""
    import hashlib
    import io
    import types

    from gpuperf.decisions.tune import earlier_trials, tune_space
    from gpuperf.measure import timing

    def measure(kernel, sizes, **options):
        digest = int(hashlib.sha1(str(kernel.key).encode()).hexdigest()[:8], 16)
        return types.SimpleNamespace(time_s=1e-4 * (1 + digest % 1000), provenance={"device_name": "pocl"}, verified=True)

    monkeypatch.setattr(timing, "measure", measure)
    whole = tune_space("jacobi2d_5pt", SIZES, budget=14, seed=3)
    stopped = tune_space("jacobi2d_5pt", SIZES, budget=5, seed=3)
    written = io.StringIO()
    stopped.table().to_csv(written, index=False)
    written.seek(0)
    resumed = tune_space("jacobi2d_5pt", SIZES, budget=14, seed=3,
                         earlier=earlier_trials(pd.read_csv(written), "trials.csv"))
    assert [t.config for t in resumed.trials] == [t.config for t in whole.trials]
    assert len({tuple(t.config.values()) for t in whole.trials}) == 14
    other_seed = tune_space("jacobi2d_5pt", SIZES, budget=14, seed=4)
    assert [t.config for t in other_seed.trials] != [t.config for t in whole.trials]


def _hashed_times(monkeypatch) -> None:
    """Times that depend only on the configuration, measured without a device."""
    import hashlib
    import types

    from gpuperf.measure import timing

    def measure(kernel, sizes, **options):
        digest = int(hashlib.sha1(str(kernel.key).encode()).hexdigest()[:8], 16)
        return types.SimpleNamespace(time_s=1e-4 * (1 + digest % 1000), provenance={"device_name": "pocl"}, verified=True)

    monkeypatch.setattr(timing, "measure", measure)


@pytest.mark.parametrize("options, recorded, now", [
    ({"seed": 7}, "online (gp) with seed 0", "online (gp) with seed 7"),
    ({"model": "rf"}, "online (gp) with seed 0", "online (rf) with seed 0"),
])
@pytest.mark.opencl
def test_resuming_with_another_search_is_refused_naming_the_recorded_one(monkeypatch, options, recorded, now):
    """Before: another --seed or --model went on from the trials and labelled them with its method,
    though the resumed run no longer picks what the uninterrupted one would have."""
    from gpuperf.decisions.tune import earlier_trials

    _hashed_times(monkeypatch)
    table = tune_space("jacobi2d_5pt", SIZES, budget=2, seed=0).table()
    assert table[["tune_method", "tune_seed"]].drop_duplicates().values.tolist() == [["online (gp)", 0]]
    earlier = earlier_trials(table, "trials.csv")
    with pytest.raises(GpuperfError, match=re.escape(f"trials.csv: the run to resume searched by {recorded}, this "
                                                     f"one by {now}; resume it with its options")):
        tune_space("jacobi2d_5pt", SIZES, budget=3, earlier=earlier, **{"seed": 0, **options})
    resumed = tune_space("jacobi2d_5pt", SIZES, budget=3, seed=0, earlier=earlier)
    assert len(resumed.trials) == 3


@pytest.mark.opencl
def test_a_tuning_table_without_the_search_columns_still_resumes(monkeypatch):
    """Tables written before the method and seed were recorded resume under any search, as before."""
    from gpuperf.decisions.tune import earlier_trials

    _hashed_times(monkeypatch)
    table = tune_space("jacobi2d_5pt", SIZES, budget=2, seed=0).table().drop(columns=["tune_method", "tune_seed"])
    resumed = tune_space("jacobi2d_5pt", SIZES, budget=3, seed=5, earlier=earlier_trials(table, "trials.csv"))
    assert len(resumed.trials) == 3
    assert resumed.table()["tune_seed"].tolist() == [5, 5, 5]


@pytest.mark.opencl
def test_a_tuning_table_of_two_searches_or_a_row_without_its_search_is_refused(monkeypatch):
    from gpuperf.decisions.tune import earlier_trials

    _hashed_times(monkeypatch)
    table = tune_space("jacobi2d_5pt", SIZES, budget=2, seed=0).table()
    with pytest.raises(GpuperfError, match="trials.csv: 2 values of tune_seed; a tuning run's table has one"):
        earlier_trials(table.assign(tune_seed=[0, 1]), "trials.csv")
    with pytest.raises(GpuperfError, match=r"trials.csv: row 2: tune_method is empty \(a row cut short\?\)"):
        earlier_trials(table.assign(tune_method=["online (gp)", None]), "trials.csv")


@pytest.mark.opencl
def test_a_users_space_resumes_however_its_file_is_spelt(tmp_path, capsys, monkeypatch, tiled_space):
    """The table records the space's file as an absolute path: ./tiled.py and tiled.py are one space,
    and the run resumes from another working folder too."""
    assert tiled_space == f"{tmp_path / 'tiled.py'}:tiled"  # the fixture wrote tiled.py here
    monkeypatch.chdir(tmp_path)
    argv = ["-p", "n=4096", "--start", "random", "--out", "trials.csv", "--json"]
    assert main(["tune", "tiled.py:tiled", *argv, "--budget", "1"]) == 0
    capsys.readouterr()
    assert pd.read_csv("trials.csv")["kernel"].tolist() == [f"{tmp_path / 'tiled.py'}:tiled"]
    assert main(["tune", "./tiled.py:tiled", *argv, "--budget", "2", "--resume"]) == 0
    assert json.loads(capsys.readouterr().out)["evaluated"] == 2
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert main(["tune", "../tiled.py:tiled", "-p", "n=4096", "--start", "random", "--out", "../trials.csv",
                 "--budget", "3", "--resume", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["evaluated"] == 3
    # the project folder moved (or copied to another machine): the trials name the old path, which is gone
    moved = tmp_path.parent / f"{tmp_path.name}-moved"
    (tmp_path / "elsewhere").rmdir()
    tmp_path.rename(moved)
    monkeypatch.chdir(moved)
    assert main(["tune", "tiled.py:tiled", *argv, "--budget", "3", "--resume"]) == 0  # nothing more to measure
    assert json.loads(capsys.readouterr().out)["evaluated"] == 3
    (moved / "other.py").write_text((moved / "tiled.py").read_text())  # another file of the same function is another space
    assert main(["tune", "other.py:tiled", *argv, "--budget", "3", "--resume"]) == 2
    assert "the run to resume tuned space tiled.py:tiled, this one other.py:tiled" in capsys.readouterr().err
    moved.rename(tmp_path)  # for pytest's clean-up


@pytest.mark.parametrize("time, cut, message", [
    ("abc", False, "trials.csv: line 3: time_s='abc' is not a positive number"),
    ("-1", False, "trials.csv: line 3: time_s=-1.0 is not a positive number"),
    ("inf", False, "trials.csv: line 3: time_s=inf is not a positive number"),
    (None, True, "trials.csv: line 4: parameter local_x is empty (a row cut short?)"),
])
@pytest.mark.opencl
def test_resuming_names_the_line_of_a_bad_trial(tmp_path, monkeypatch, time, cut, message):
    """Before: a traceback for text, an internal configuration number for -1 and inf, and a row cut
    short taken for a configuration of NaNs."""
    import types

    from gpuperf.datasets.tables import read_csv
    from gpuperf.decisions.tune import earlier_trials
    from gpuperf.measure import timing

    monkeypatch.setattr(timing, "measure", lambda kernel, sizes, **options: types.SimpleNamespace(
        time_s=1e-4, provenance={"device_name": "pocl"}, verified=True))
    table = tune_space("jacobi2d_5pt", SIZES, budget=3, seed=0).table().astype(object)
    if time is not None:
        table.loc[1, "time_s"] = time
    path = tmp_path / "trials.csv"
    table.to_csv(path, index=False)
    if cut:  # the last row ends after its sizes, as a write cut short leaves it
        lines = path.read_text().splitlines()
        lines[-1] = lines[-1][:lines[-1].index(",128,128,") + len(",128,128")]
        path.write_text("\n".join(lines) + "\n")
    with pytest.raises(GpuperfError, match=re.escape(message)):
        earlier_trials(read_csv(path), "trials.csv")


@pytest.mark.opencl
def test_tune_names_the_sizes_it_took_from_the_defaults(tmp_path, monkeypatch, capsys):
    import types

    from gpuperf.measure import timing

    monkeypatch.setattr(timing, "measure", lambda kernel, sizes, **options: types.SimpleNamespace(
        time_s=1e-4, provenance={"device_name": "pocl"}, verified=True))
    assert main(["tune", "jacobi2d_5pt", "-p", "n=128", "--budget", "1", "--no-progress", "--json"]) == 0
    captured = capsys.readouterr()
    assert "note: jacobi2d_5pt: sizes not given take its defaults: m=4096" in captured.err
    assert json.loads(captured.out)["sizes"] == {"n": 128, "m": 4096}


def test_resuming_after_the_spaces_parameters_changed_says_which(tmp_path):
    """A user's space edited between the runs: a parameter added raised KeyError, one removed was
    read as a size."""
    from gpuperf.decisions.tune import earlier_trials

    row = {"kernel": "jacobi2d_5pt", "device": "opencl:0", "variant": "local_x=16,local_y=4,outputs_y=1,prefetch=0,"
           "unroll=1", "n": 128, "m": 128, "local_x": 16, "local_y": 4, "outputs_y": 1, "prefetch": 0, "unroll": 1,
           "time_s": 1e-4, "status": "ok"}
    assert len(earlier_trials(pd.DataFrame([row]), "trials.csv").trials) == 1
    removed = {**row, "variant": row["variant"] + ",bz=2", "bz": 2}
    with pytest.raises(GpuperfError, match=r"trials.csv: the space jacobi2d_5pt has other parameters than the run to "
                                           r"resume tuned \(no longer: bz\)"):
        earlier_trials(pd.DataFrame([removed]), "trials.csv")
    added = {key: value for key, value in row.items() if key != "unroll"}
    added["variant"] = "local_x=16,local_y=4,outputs_y=1,prefetch=0"
    with pytest.raises(GpuperfError, match=r"\(new: unroll\)"):
        earlier_trials(pd.DataFrame([added]), "trials.csv")
    # a label leaves out a parameter set to None, but its column says it was tuned
    unnamed = {**row, "variant": "local_x=16,local_y=4,outputs_y=1,prefetch=0"}
    assert len(earlier_trials(pd.DataFrame([unnamed]), "trials.csv").trials) == 1


@pytest.mark.parametrize("extra", [{"my_notes": "keep me"}, {"compile_s": 0.5}])
def test_resuming_names_a_column_that_is_neither_a_parameter_nor_a_size(extra):
    """Every other column was taken as a size: a text column raised ValueError from int(), and
    compile_s=0.5 became a size 0."""
    from gpuperf.decisions.tune import earlier_trials

    row = {"kernel": "jacobi2d_5pt", "device": "opencl:0", "n": 128, "m": 128, "local_x": 16, "local_y": 4,
           "outputs_y": 1, "prefetch": 0, "unroll": 1, "time_s": 1e-4, "status": "ok", **extra}
    (column, value), = extra.items()
    with pytest.raises(GpuperfError, match=rf"trials.csv: row 1: {column}={value} is no size \(a whole number\) and no "
                                           r"parameter of jacobi2d_5pt: a column tune --out does not write"):
        earlier_trials(pd.DataFrame([row]), "trials.csv")


@pytest.mark.opencl
def test_a_run_writing_an_out_file_keeps_a_second_run_resumed_or_not_away_from_it(tmp_path, capsys):
    """tune --resume (and geometry-sweep --resume) claimed nothing: started while the first run was
    measuring, it timed on the same device at the same moment and wrote its trials over the first's.
    Now any run writing --out holds OUT.lock: the second is refused, naming the holder, and the lock
    file goes when the run ends."""
    import subprocess
    import sys

    out = tmp_path / "trials.csv"
    argv = ["tune", "jacobi2d_5pt", "-p", "n=128", "-p", "m=128", "--start", "random", "--budget", "1",
            "--out", str(out)]
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from gpuperf.files import run_lock\n"
         f"with run_lock({str(out)!r}):\n    print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        out.write_text("kernel,variant,time_s\n")  # what the first run has written so far
        for extra in ([], ["--resume"]):
            assert main([*argv, *extra]) == 2
            assert f"--out {out}: another run (process {holder.pid}) is writing it" in capsys.readouterr().err
        sweep = ["geometry-sweep", "--device", "opencl:0", "--loops", "saxpy", "--trips", "1000", "--out", str(out)]
        assert main([*sweep, "--resume"]) == 2
        assert f"--out {out}: another run (process {holder.pid}) is writing it" in capsys.readouterr().err
        assert out.read_text() == "kernel,variant,time_s\n"
    finally:
        holder.communicate("")
    out.unlink()
    assert main(argv) == 0
    assert len(pd.read_csv(out)) == 1 and not (tmp_path / "trials.csv.lock").exists()


def test_a_lock_file_removed_between_opening_and_locking_it_is_opened_again(tmp_path, monkeypatch):
    """A run ending removes its OUT.lock; a second run that opened the file just before would lock the
    removed file while a third created and locked a new one: both would run. The second now sees its
    file gone and opens the lock again."""
    import os
    from pathlib import Path

    from gpuperf.files import run_lock

    target, lock = tmp_path / "t.csv", tmp_path / "t.csv.lock"
    real_open, opened = Path.open, []

    def opening(self, *args, **kwargs):
        handle = real_open(self, *args, **kwargs)
        opened.append(handle)
        if self == lock and len(opened) == 1:
            self.unlink()  # the run that held it ended just now, removing it
        return handle

    monkeypatch.setattr(Path, "open", opening)
    with run_lock(target, remove=True):
        assert len(opened) == 2 and lock.exists()
        assert os.fstat(opened[1].fileno()).st_ino == os.stat(lock).st_ino
    assert not lock.exists()


def _fake_measure(monkeypatch):
    import types

    from gpuperf.measure import timing

    monkeypatch.setattr(timing, "measure", lambda kernel, sizes, **options: types.SimpleNamespace(
        time_s=1e-4 * (1 + len(str(kernel.key)) % 7), provenance={"device_name": "pocl"}, verified=True))


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.assign(gpu="NVIDIA GeForce RTX 4090"),
     "trials.csv: the run to resume measured on NVIDIA GeForce RTX 4090, while opencl:0 is "),
    (lambda t: t.assign(n=[128, 256, 128]), "trials.csv: line 3: n=256, where line 2 has 128: a tuning run's trials "
                                           "are of one size"),
    (lambda t: pd.concat([t, t.iloc[[0]]], ignore_index=True), "trials.csv: line 5: configuration local_x="),
])
@pytest.mark.opencl
def test_resuming_refuses_trials_of_another_device_size_or_a_repeat_naming_the_line(tmp_path, monkeypatch, edit,
                                                                                   message):
    """Before: another machine's trials were taken and the new ones labelled with its GPU; a table
    of two sizes reported the other size's best time; a repeat named an internal index."""
    from gpuperf.datasets.tables import read_csv
    from gpuperf.decisions.tune import earlier_trials

    _fake_measure(monkeypatch)
    table = tune_space("jacobi2d_5pt", SIZES, budget=3, seed=0).table()
    path = tmp_path / "trials.csv"
    edit(table).to_csv(path, index=False)
    with pytest.raises(GpuperfError, match=re.escape(message)):
        tune_space("jacobi2d_5pt", SIZES, budget=5, seed=0, earlier=earlier_trials(read_csv(path), "trials.csv"))
    if "configuration" in message:
        with pytest.raises(GpuperfError, match=r"trials.csv: line 5: configuration local_x=.* repeats line 2; a run "
                                               r"measures each configuration once"):
            earlier_trials(read_csv(path), "trials.csv")


@pytest.mark.opencl
def test_a_run_resumes_on_another_spelling_of_its_device_and_notes_a_budget_already_spent(tmp_path, monkeypatch,
                                                                                          capsys):
    _fake_measure(monkeypatch)
    out = tmp_path / "trials.csv"
    argv = ["tune", "jacobi2d_5pt", "-p", "n=128", "-p", "m=128", "--start", "random", "--out", str(out), "--json"]
    assert main([*argv, "--budget", "2", "-d", "opencl:0"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["gpu"] == pd.read_csv(out)["gpu"].iloc[0] != "opencl:0"  # the device's name, not its spec
    assert main([*argv, "--budget", "3", "-d", "opencl:0:0", "--resume"]) == 0  # one device, two spellings
    assert json.loads(capsys.readouterr().out)["evaluated"] == 3
    assert main([*argv, "--budget", "2", "--resume"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["evaluated"] == 3
    assert f"note: {out} holds 3 trials already, --budget 2: nothing more is measured" in captured.err


@pytest.mark.opencl
def test_every_trial_failing_still_names_the_device_not_its_spec(monkeypatch):
    from gpuperf.measure import timing
    from gpuperf.measure.devices import RunFailed

    def fail(kernel, sizes, **options):
        raise RunFailed("boom")

    monkeypatch.setattr(timing, "measure", fail)
    result = tune_space("jacobi2d_5pt", SIZES, budget=2, seed=0)
    assert {t.status for t in result.trials} == {"run_failed"}
    assert result.gpu and result.gpu != "opencl:0" and set(result.table()["gpu"]) == {result.gpu}


@pytest.mark.opencl
def test_tune_train_takes_only_the_tuned_kernels_rows_from_a_table_of_several(tmp_path, monkeypatch, capsys):
    _fake_measure(monkeypatch)
    argv = ["tune", "jacobi2d_5pt", "-p", "n=4096", "-p", "m=4096", "--budget", "1", "--train", "stencil_spaces_h100",
            "--json", "--no-progress"]
    assert main(argv) == 0
    assert ("note: --train stencil_spaces_h100: only its rows of jacobi2d_5pt, the tuned space's own kernel "
            "(7 space(s) of other kernels left out)") in capsys.readouterr().err


@pytest.mark.parametrize("column, message", [
    ("gpu", "trials.csv: line 2: gpu is empty; every trial of a tuning run names it"),
    ("n", "trials.csv: line 2: size n is empty (a row cut short?)"),
])
@pytest.mark.opencl
def test_resuming_refuses_an_empty_gpu_or_size_cell_naming_the_line(tmp_path, monkeypatch, column, message):
    """An empty first gpu cell switched off the check against another machine's trials; an empty size
    read as a trial of another size."""
    from gpuperf.datasets.tables import read_csv
    from gpuperf.decisions.tune import earlier_trials

    _fake_measure(monkeypatch)
    table = tune_space("jacobi2d_5pt", SIZES, budget=3, seed=0).table().astype(object)
    table.loc[0, column] = None
    path = tmp_path / "trials.csv"
    table.to_csv(path, index=False)
    with pytest.raises(GpuperfError, match=re.escape(message)):
        earlier_trials(read_csv(path), "trials.csv")


def test_the_default_variants_time_is_its_own_trials_where_the_run_tried_it(monkeypatch):
    """The report compared the best with the default timed again: a best that was the default read
    "0.98x as fast as the default variant"."""
    from gpuperf.decisions import tune as tune_module
    from gpuperf.kernels.space import get_space

    defaults = get_space("jacobi2d_5pt").defaults
    trials = [tune_module.Trial({**defaults, "local_x": "other"}, 2.0, "ok"), tune_module.Trial(dict(defaults), 1.5, "ok")]
    monkeypatch.setattr("gpuperf.measure.timing.measure", lambda *args, **kwargs: pytest.fail("measured again"))
    assert tune_module.default_variant_time("jacobi2d_5pt", SIZES, trials=trials) == 1.5


def test_tune_and_geometry_sweep_refuse_an_out_name_promising_another_format(tmp_path, capsys):
    """tr.parquet was written as CSV text, which no reader (--resume included) could read back."""
    for argv in (["tune", "jacobi2d_5pt", "-p", "n=256", "-p", "m=256", "--budget", "1", "--start", "random"],
                 ["geometry-sweep", "--device", "opencl:0", "--loops", "saxpy", "--trips", "1000"]):
        out = tmp_path / "points.parquet"
        assert main([*argv, "--out", str(out), "--no-progress"]) == 2
        assert f"--out {out}: the table is written as CSV; name it .csv or .csv.gz" in capsys.readouterr().err
        assert not out.exists()


def test_the_trial_numbers_keep_out_of_a_parameter_named_hash():
    from gpuperf.cli.decisions_cli import numbered

    assert numbered([{"#": 30, "t": 1.0}, {"#": None, "t": None}], ["#"]) == [{"trial": 1, "#": 30, "t": 1.0},
                                                                             {"trial": 2, "#": "None", "t": None}]
    assert numbered([{"a": 1}]) == [{"#": 1, "a": 1}]
    assert numbered([{"#": 5, "trial": 7}]) == [{"trial_": 1, "#": 5, "trial": 7}]


@pytest.mark.parametrize("name", ["kernel", "gpu", "status"])
def test_a_table_parameter_named_like_a_grouping_or_status_column_is_refused(tmp_path, name):
    """A parameter 'kernel' split a --train table into one space per value, silently; 'status' read
    its values as failures."""
    from gpuperf.decisions.space import read_space, read_training_spaces

    table = pd.DataFrame({name: ["naive", "naive", "tiled", "tiled"], "bs": [16, 32, 16, 32], "time_ms": [5, 4, 3, 6]})
    table.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(GpuperfError, match=f"parameter '{name}' has the name of a column gpuperf reads"):
        read_training_spaces(tmp_path / "t.csv", [name, "bs"])
    if name == "status":  # a space is not split by kernel or GPU, but its status says what failed
        with pytest.raises(GpuperfError, match="parameter 'status' has the name of a column gpuperf reads"):
            read_space(tmp_path / "t.csv", [name, "bs"])


def test_a_space_with_a_parameter_named_problem_size_explores_as_before(tmp_path):
    from gpuperf.decisions.space import looks_like_rate, read_space

    table = pd.DataFrame({"problem_size": [1, 1, 2, 2], "bs": [16, 32, 16, 32], "time_s": [5, 4, 3, 6]})
    table.to_csv(tmp_path / "t.csv", index=False)
    assert len(read_space(tmp_path / "t.csv", ["problem_size", "bs"])) == 4
    assert not any(looks_like_rate(name) for name in ("time_upper_s", "wrapper_s", "ci_upper_s"))
    assert all(looks_like_rate(name) for name in ("items_per_s", "GFLOPS/W", "speedup"))


RATE_SPELLINGS = ("GFLOP_s", "TFLOP_s", "GB_s", "GBps", "gbps", "dram_gbps", "MB_sec", "bytes_s", "Mpixels_s", "GiB_s",
                  "GFLOP/s", "gflops", "items_per_s")
TIME_SPELLINGS = ("time_s", "time_ms", "time", "runtime_s", "median_s", "duration_us", "time_sec", "kernel_time_s",
                  "compile_time_s", "elapsed_ms", "time_ns", "t_s", "b_s", "steps_s", "bs", "bytes", "loops",
                  "warmup_loops_s", "stops_s")


def test_a_rate_spelt_without_a_slash_is_refused_as_target_and_a_time_is_not(tmp_path):
    """GFLOP_s, GB_s, GBps were minimised as if times (every figure then describing the slowest configuration)."""
    from gpuperf.decisions.space import looks_like_rate, read_space

    assert [name for name in RATE_SPELLINGS if not looks_like_rate(name)] == []
    assert [name for name in TIME_SPELLINGS if looks_like_rate(name)] == []
    pd.DataFrame({"bs": [16, 32], "GFLOP_s": [5.0, 7.0], "time_s": [2.0, 1.0]}).to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(GpuperfError, match="--target GFLOP_s looks like a rate"):
        read_space(tmp_path / "t.csv", ["bs"], "GFLOP_s")
    assert len(read_space(tmp_path / "t.csv", ["bs"], "time_s")) == 2


def test_a_rate_per_ms_or_by_its_abbreviation_is_refused_as_target(tmp_path):
    """explore --target TOPS (or GB_per_ms, items/ms) minimised the throughput: its best_time was the
    slowest configuration's."""
    from gpuperf.decisions.space import looks_like_rate, read_space

    rates = ("TOPS", "GOPS", "MIPS", "MLUPS", "GUPS", "fps", "items/ms", "GB_per_ms", "elements_per_us",
             "Mpixels per ns", "GB/msec")
    assert [name for name in rates if not looks_like_rate(name)] == []
    assert [name for name in ("ms_per_iter", "us_per_call", "int_ops", "loops", "groups", "setups", "time_us",
                              "ns", "time/ms", "t/us", "kernel time/ms", "time/s") if looks_like_rate(name)] == []
    pd.DataFrame({"bs": [16, 32], "TOPS": [5.0, 7.0], "time_s": [2.0, 1.0]}).to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(GpuperfError, match="--target TOPS looks like a rate"):
        read_space(tmp_path / "t.csv", ["bs"], "TOPS")


def test_a_statistic_of_the_time_over_its_unit_is_a_time_not_a_rate_per_ms(tmp_path):
    """--target median/ms (a time in ms, spelt as a quantity over its unit) was refused as a rate per ms once
    items/ms was, though explore searched it before."""
    from gpuperf.decisions.space import looks_like_rate, read_space

    assert [name for name in ("median/ms", "mean/us", "avg/ms", "min/ns", "best/ms", "wall/ms", "Median / ms")
            if looks_like_rate(name)] == []
    pd.DataFrame({"bs": [16, 32], "median/ms": [2.0, 1.0]}).to_csv(tmp_path / "t.csv", index=False)
    assert len(read_space(tmp_path / "t.csv", ["bs"], "median/ms")) == 2


def test_a_seed_near_the_largest_scikit_learn_takes_wraps_instead_of_failing_midway():
    """--seed 4294967295 passed seed + step to scikit-learn, which refuses seeds of 2**32 and more."""
    configs = grid((5, 5)).configs
    for model in ("et", "gp"):
        search = GuidedSearch(configs, ["x", "y"], model=model, seed=2**32 - 1, initial=2)
        for _ in range(4):
            index = search.ask()
            search.tell(index, 1.0 + index)
        assert len(search.measured) == 4


@pytest.mark.opencl
def test_a_resume_refused_names_the_line_and_says_nothing_of_the_budget_first(tmp_path, capsys):
    (tmp_path / "odd.py").write_text(SPACES_WITH_ODD_NAMES)
    out = tmp_path / "trials.csv"
    args = ["tune", f"{tmp_path / 'odd.py'}:with_none", "--out", str(out)]
    assert main([*args, "-p", "n=256", "--budget", "2"]) == 0
    capsys.readouterr()
    assert main([*args, "-p", "n=512", "--budget", "1", "--resume"]) == 2  # another size: refused, no budget note
    err = capsys.readouterr().err
    assert "the run to resume tuned sizes" in err and "trials already" not in err
    table = pd.read_csv(out, keep_default_na=False)
    table.loc[1, "local_x"] = 256  # not a value of the space
    table.to_csv(out, index=False)
    assert main([*args, "-p", "n=256", "--budget", "3", "--resume"]) == 2
    assert "line 3: the run to resume measured local_x=256" in capsys.readouterr().err


def test_a_guided_search_names_configurations_by_their_labels_in_the_frames_index():
    """A sorted or filtered frame keeps its labels: ask, tell, best and start take and give what
    configs.loc takes, so the configuration measured is the one the search meant. Trained on a GPU
    where 32 x 16 is fastest, the search asks for that configuration first, whatever its row."""
    from gpuperf.decisions import GuidedSearch

    grid = pd.DataFrame([(x, y) for x in (8, 16, 32, 64) for y in (8, 16, 32, 64)], columns=["tx", "ty"])
    times = {(x, y): 1e-3 * (1 + abs(x - 32) + abs(y - 16)) for x, y in grid.itertuples(index=False)}
    train = grid.assign(gpu="A100", time_s=[times[c] for c in grid.itertuples(index=False, name=None)])
    shuffled = grid.sort_values(["ty", "tx"])  # 32 x 16 is labelled 9, in row 6
    search = GuidedSearch(shuffled, ["tx", "ty"], train=train)
    first = search.ask()
    assert shuffled.loc[first].tolist() == [32, 16]
    search.tell(first, 1e-3)
    assert search.best() == first and search.measured == [first]
    named = GuidedSearch(grid.set_index(grid["tx"].astype(str) + "x" + grid["ty"].astype(str)), ["tx", "ty"],
                         start=["64x8", "8x64"])
    assert [named.ask() for _ in range(1)] == ["64x8"]
    with pytest.raises(GpuperfError, match="configuration: '9x9' is not a label of the 16 configurations"):
        named.tell("9x9", 1e-3)
    with pytest.raises(GpuperfError, match="holds the label 0 twice"):
        GuidedSearch(grid.set_index(pd.Index([0, 0, *range(2, 16)])), ["tx", "ty"])


def test_a_default_variant_that_fails_leaves_the_report_without_its_speedup(monkeypatch):
    """A default variant that could not be timed ended the run with its error: the report the run was
    for was never written."""
    from gpuperf.decisions import tune as tune_module
    from gpuperf.errors import GpuperfNote
    from gpuperf.kernels.space import get_space
    from gpuperf.measure.devices import VerifyFailed

    defaults = get_space("jacobi2d_5pt").defaults
    failed = [tune_module.Trial(dict(defaults), None, "verify_failed")]

    def fails(*args, **kwargs):
        raise VerifyFailed("output 'out' differs from the reference")

    monkeypatch.setattr("gpuperf.measure.timing.measure", fails)
    with pytest.warns(GpuperfNote, match="could not be timed: .*differs from the reference; the report has no speedup"):
        assert tune_module.default_variant_time("jacobi2d_5pt", SIZES, trials=failed) is None


def test_a_batch_and_the_start_speak_in_labels_and_a_bad_start_is_one_error():
    from gpuperf.decisions import GuidedSearch

    grid = pd.DataFrame({"x": range(6)}, index=[f"c{i}" for i in range(6)])
    search = GuidedSearch(grid, ["x"], seed=1)
    assert set(search.ask_batch(3)) <= set(grid.index)
    with pytest.raises(GpuperfError, match=r"start: \[1\] is not a label of the 6 configurations"):
        GuidedSearch(grid, ["x"], start=[[1]])
    offset = GuidedSearch(pd.DataFrame({"x": range(10)}, index=range(10, 20)), ["x"])
    with pytest.raises(GpuperfError, match=r"configuration: 0 is not a label of the 10 configurations \(see the"):
        offset.tell(0, 1.0)


def test_an_empty_trips_or_loops_is_refused_not_taken_for_the_defaults(capsys):
    from gpuperf.cli import main

    for option in ("--trips", "--loops"):
        assert main(["geometry-sweep", "--device", "opencl:0", option, " ", "--out", "e.csv"]) == 2
        assert f"{option} is empty; name at least one" in capsys.readouterr().err


def test_the_guided_strategy_keeps_the_tuned_gpus_kernel_at_another_problem_size(tmp_path):
    """Only the space Kernel Tuner tunes (its GPU, kernel and problem size) is left out of the training
    data, as explore's --train does: the same kernel on the same GPU at another size still trains it."""
    from gpuperf.decisions.kernel_tuner_strategy import GuidedStrategy
    from gpuperf.errors import GpuperfNote

    parts = [grid(optimum).configs.assign(time_s=grid(optimum).times, gpu=gpu, kernel="k", problem_size=size)
             for optimum, gpu, size in (((9, 4), "RTX 3090", 4096), ((8, 4), "RTX 3090", 8192), ((2, 11), "A100", 4096))]
    pd.concat(parts, ignore_index=True).dropna(subset=["time_s"]).to_csv(tmp_path / "all.csv", index=False)
    configs = grid((9, 4)).configs
    with pytest.warns(GpuperfNote, match="the space's own kernel and GPU"):
        kept = GuidedStrategy(train=str(tmp_path / "all.csv")).measured_elsewhere(configs, ["x", "y"], "RTX 3090", "k",
                                                                                  4096)
    assert sorted(("A100" in space.gpu, int(space.extra["problem_size"].iloc[0])) for space in kept) == [
        (False, 8192), (True, 4096)]  # the RTX 3090's other size, and the A100's


def test_start_initial_and_batch_counts_a_notebook_writes_loosely_are_read_or_refused_clearly():
    configs = pd.DataFrame({"x": [1, 2, 4, 8]}, index=["c1", "c2", "c4", "c8"])
    for start, message in (("c1", r"start lists configuration labels, e.g. \['c1'\], not 'c1'"),
                           (3, r"start lists configuration labels, e.g. \[3\], not 3")):
        with pytest.raises(GpuperfError, match=message):
            GuidedSearch(configs, ["x"], start=start)
    for initial, message in ((2.5, "initial must be a whole number, not 2.5"), (-1, "initial -1: .* 0 or more")):
        with pytest.raises(GpuperfError, match=message):
            GuidedSearch(configs, ["x"], initial=initial)
    assert GuidedSearch(configs, ["x"], initial=2.0).ask() == GuidedSearch(configs, ["x"], initial=2).ask()
    search = GuidedSearch(configs, ["x"])
    assert search.ask_batch(2.0) == search.ask_batch(2)
    for count in (2.5, "2", None):
        with pytest.raises(GpuperfError, match="a batch's count must be a whole number"):
            search.ask_batch(count)
    assert search.measured == []


def test_explore_takes_a_whole_number_budget_and_refuses_training_tables_that_are_not_spaces():
    from gpuperf.decisions.exploration import explore

    space = grid((4, 4))
    assert explore(space, budget=3.0).order == explore(space, budget=3).order
    with pytest.raises(GpuperfError, match="budget must be a whole number, not 2.5"):
        explore(space, budget=2.5)
    with pytest.raises(GpuperfError, match="explore: train holds a str, not a Space; read each table with "
                                           "gpuperf.decisions.read_space"):
        explore(space, train=["schoonhoven_spaces"])


def test_tell_refuses_a_boolean_for_a_time_instead_of_reading_it_as_one_second():
    search = GuidedSearch(grid((5, 5)).configs, ["x", "y"])
    label = search.ask()
    for flag in (True, np.True_):
        with pytest.raises(GpuperfError, match=rf"configuration {label}: time {flag!r} must be positive"):
            search.tell(label, flag)
    assert search.measured == []
    search.tell(label, "0.5")  # a time read from a text file as text is a time
    assert search.times[search.measured[0]] == 0.5


@pytest.mark.opencl
def test_tune_out_has_a_provenance_file_saying_how_and_when_the_trials_were_measured(tmp_path, capsys):
    out = tmp_path / "trials.csv"
    argv = ["tune", "jacobi2d_5pt", "-p", "n=128", "-p", "m=128", "--start", "random", "--out", str(out),
            "--no-progress", "--json"]
    assert main([*argv, "--budget", "1"]) == 0
    record = json.loads((tmp_path / "trials.provenance.json").read_text())
    assert record["file"] == "trials.csv" and record["rows"] == 1
    assert record["command"] == ("gpuperf tune jacobi2d_5pt -p n=128 -p m=128 --device opencl:0 --budget 1 --seed 0 "
                                 "--start random")
    assert record["device"] == record["provenance"]["device_name"] and record["provenance"]["timer"]
    assert record["measured_from"] <= record["measured_to"]
    assert main([*argv, "--budget", "2", "--resume"]) == 0  # a resumed run keeps when it began
    resumed = json.loads((tmp_path / "trials.provenance.json").read_text())
    assert resumed["rows"] == 2 and resumed["measured_from"] == record["measured_from"]


@pytest.mark.opencl
def test_tune_outs_provenance_names_the_tables_train_gave(tmp_path, monkeypatch):
    """The provenance's command said '--train ...': which tables trained the search was not recorded."""
    _fake_measure(monkeypatch)
    out = tmp_path / "trials.csv"
    assert main(["tune", "jacobi2d_5pt", "-p", "n=4096", "-p", "m=4096", "--budget", "1", "--train",
                 "stencil_spaces_h100", "--out", str(out), "--json", "--no-progress"]) == 0
    record = json.loads((tmp_path / "trials.provenance.json").read_text())
    assert record["command"] == ("gpuperf tune jacobi2d_5pt -p n=4096 -p m=4096 --device opencl:0 --budget 1 --seed 0 "
                                 "--train stencil_spaces_h100")
