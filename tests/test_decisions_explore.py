"""Exploring variant spaces: metrics, random baseline, explorers, Kernel Tuner baseline, bad input."""

from __future__ import annotations

import itertools
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuperf.decisions.exploration import explore, make_explorer, plain_transfer_order
from gpuperf.decisions.explorers import COVER, OnlineSearch, TransferGuided, run_search
from gpuperf.decisions.search_metrics import (
    best_found_curve,
    evals_to,
    normalised_performance,
    random_evals_quantile,
    random_expected_curve,
    random_expected_evals,
    simulate_random,
)
from gpuperf.decisions.space import (
    Space,
    _campaigns_share_a_gpu,
    configuration_keys,
    gpu_named,
    key_text,
    parameter_features,
    read_space,
    select_rows,
    space_from_frame,
    transfer_matrix,
)
from gpuperf.decisions.surrogates import Surrogate
from gpuperf.errors import GpuperfError, GpuperfNote


def grid_space(optimum: tuple[int, int], where: str = "synthetic", scale: float = 1.0, curvature: float = 0.05) -> Space:
    """A 16 x 16 grid whose time grows smoothly away from ``optimum``."""
    xs, ys = np.meshgrid(np.arange(1, 17), np.arange(1, 17), indexing="ij")
    configs = pd.DataFrame({"x": xs.ravel(), "y": ys.ravel()})
    times = scale * (1.0 + curvature * ((configs["x"] - optimum[0]) ** 2 + (configs["y"] - optimum[1]) ** 2))
    return Space(["x", "y"], configs, times.to_numpy(dtype=float), where)


# -- configuration keys --------------------------------------------------------------------------


def test_configuration_keys_are_each_values_key_text():
    """Keys are worked out once per distinct value of a typed column, value by value in an object
    column (16, 16.0, "16.0"; True, 1; None and NaN), missing values included."""
    index = range(100, 110)
    configs = pd.DataFrame({
        "a": pd.Series([16, 16.0, np.int64(16), "16.0", True, "true", 1, None, np.nan, " x "], dtype=object, index=index),
        "b": [1.5, np.nan, 2.0, 3.0, 1e20, 2.5, np.nan, -0.0, 7.0, 8.0],
        "c": pd.Series(["a", None, "b", "a", None, "c", "a", "a", "a", "a"], index=index),
        "d": pd.array([1, None, 2, 3, 1, 1, 1, 1, 1, 1], dtype="Int64"),
    }, index=index)
    keys = configuration_keys(configs, ["a", "b", "c", "d"])
    expected = [",".join(key_text(configs[p].loc[i]) for p in "abcd") for i in index]
    assert keys.tolist() == expected
    assert list(keys.index) == list(index)
    assert keys.tolist()[:3] == ["16,1.5,a,1", "16,nan,nan,<NA>", "16,2,b,2"]
    assert keys.tolist()[7:9] == ["None,0,a,1", "nan,7,a,1"]


def test_a_truth_value_has_one_key_however_a_table_spells_it():
    """A CSV written by Python holds True (pandas keeps the text where a column mixes it with numbers), a
    Kernel Tuner cache true, a table 1: one setting, as key_text promises, whatever the letter case."""
    assert key_text(True) == key_text("True") == key_text("true") == key_text("TRUE") == key_text(1) == "1"
    assert key_text(False) == key_text("False") == key_text(" false ") == key_text(0) == "0"


def test_a_tuple_parameter_has_one_key_however_a_table_spells_it(tmp_path, capsys):
    """Kernel Tuner keeps a tuple as a list ([2, 1]), its cache key spells it (2, 1), and gpuperf import
    wrote the CSV cell [2, 1]: the three never matched, so a cache could not train a CSV's space."""
    import json

    from gpuperf.cli import main

    assert key_text([2, 1]) == key_text((2, 1)) == key_text("(2, 1)") == key_text("[2, 1]") == key_text(
        (np.int64(2), 1.0)) == '"(2, 1)"'
    assert key_text("(2)") == "(2)" and key_text("[x") == "[x"  # no tuple: the text as it is

    def cache(gpu: str, slow: float) -> Path:
        entries = {}
        for x in (32, 64):
            for tile in ([1, 1], [2, 1]):
                time = slow * x / 32 * (1.5 if tile == [1, 1] else 1.0)
                entries[f"{x},({tile[0]}, {tile[1]})"] = {"block_size_x": x, "tile": tile, "time": time,
                                                          "times": [time] * 3}
        path = tmp_path / f"{gpu}.json"
        path.write_text(json.dumps({"device_name": gpu, "kernel_name": "k", "problem_size": [1024],
                                    "tune_params_keys": ["block_size_x", "tile"],
                                    "tune_params": {"block_size_x": [32, 64], "tile": [[1, 1], [2, 1]]},
                                    "objective": "time", "cache": entries}))
        return path

    space = tmp_path / "a100.csv"
    assert main(["import", "kernel-tuner", str(cache("NVIDIA A100-PCIE-40GB", 1.0)), "--out", str(space)]) == 0
    capsys.readouterr()
    assert main(["explore", str(space), "--params", "block_size_x,tile", "--train", str(cache("NVIDIA H100", 0.5)),
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["transfer_evals_to_90"] == 1 and result["evals_to_90"] == 1


def test_explore_shows_an_evaluated_failure_as_failed_not_as_an_empty_time(tmp_path, capsys):
    """A Kernel Tuner cache's RuntimeFailedConfig evaluated by the search showed an empty time_s cell in the
    first evaluations, as if its time were unknown; --json keeps it as null."""
    import json

    from gpuperf.cli import main

    entries = {}
    for x in (16, 32, 64, 128, 256, 512):
        time = "RuntimeFailedConfig" if x >= 128 else 1.0 + x / 64
        entries[str(x)] = {"block_size_x": x, "time": time, "compile_time": 300.0}
    cache = tmp_path / "a100.json"
    cache.write_text(json.dumps({"device_name": "NVIDIA A100-PCIE-40GB", "kernel_name": "k", "problem_size": [1024],
                                 "tune_params_keys": ["block_size_x"],
                                 "tune_params": {"block_size_x": [16, 32, 64, 128, 256, 512]},
                                 "objective": "time", "cache": entries}))
    assert main(["explore", str(cache), "--no-progress"]) == 0
    shown = capsys.readouterr().out
    failed_rows = [line for line in shown.splitlines() if any(f" {x} " in line for x in (128, 256, 512))]
    assert len(failed_rows) == 3 and all("failed" in line for line in failed_rows)
    assert main(["explore", str(cache), "--json"]) == 0
    order = json.loads(capsys.readouterr().out)["order"]
    assert [row["time"] is None for row in order] == [row["block_size_x"] >= 128 for row in order]


@pytest.mark.parametrize("name", ["rf", "et"])
def test_forest_surrogate_predicts_as_its_trees_do(name):
    """The per-tree predictions skip each tree's input check; they are the checked ones."""
    rng = np.random.default_rng(1)
    features = rng.lognormal(0.0, 3.0, (300, 6))[:, ::2]  # float64, not contiguous
    surrogate = Surrogate(name, seed=3).fit(features[:40], rng.random(40))
    per_tree = np.stack([tree.predict(features) for tree in surrogate._model.estimators_])
    mean, spread = surrogate.predict(features)
    assert np.array_equal(mean, per_tree.mean(axis=0)) and np.array_equal(spread, per_tree.std(axis=0))


# -- metrics ------------------------------------------------------------------------------------


def test_evals_to_on_a_hand_made_order():
    times = np.array([2.0, 1.25, 1.08, 1.0, np.nan])
    performance = normalised_performance(times)
    np.testing.assert_allclose(performance, [0.5, 0.8, 1 / 1.08, 1.0, 0.0])
    order = [4, 0, 1, 2, 3]  # failed first, then slower to faster
    assert evals_to(performance[order], 0.9) == 4  # 1/1.08 = 0.926
    assert evals_to(performance[order], 0.95) == 5
    assert evals_to(performance[order], 0.99) == 5
    assert evals_to(performance[[0, 1]], 0.9) is None
    np.testing.assert_allclose(best_found_curve(performance[order]), [0.0, 0.5, 0.8, 1 / 1.08, 1.0])


def test_random_expectation_matches_simulation():
    rng = np.random.default_rng(3)
    performance = normalised_performance(rng.uniform(1.0, 3.0, 60))
    good = int(np.sum(performance >= 0.9))
    expected = random_expected_evals(performance, 0.9)
    assert expected == pytest.approx(61 / (good + 1))
    simulated = simulate_random(performance, 0.9, seeds=3000)
    assert simulated.mean() == pytest.approx(expected, rel=0.06)
    assert random_evals_quantile(performance, 0.9, 0.5) == pytest.approx(np.median(simulated), abs=1)
    curve = random_expected_curve(performance, [1, 5, 20])
    draws = np.array([np.maximum.accumulate(performance[rng.permutation(60)])[[0, 4, 19]] for _ in range(3000)])
    np.testing.assert_allclose(curve, draws.mean(axis=0), rtol=0.02)
    assert curve[0] == pytest.approx(performance.mean())


def test_random_expectation_after_every_configuration_is_the_best():
    """Past N draws (a small space's panel on a larger one's horizon) random order has tried all."""
    np.testing.assert_allclose(random_expected_curve([0.2, 0.5, 1.0], [0, 3, 4, 5]), [0.0, 1.0, 1.0, 1.0])


# -- explorers ----------------------------------------------------------------------------------


def test_online_search_finds_the_best_of_a_smooth_space():
    space = grid_space((11, 5))
    features = parameter_features(space.configs, space.params)
    for model in ("gp", "et"):
        for seed in (0, 1):
            order = run_search(OnlineSearch(features, model, seed), space.times, budget=60)
            assert evals_to(space.performance[order], 1.0) is not None
            assert len(order) <= 40, model  # random order needs 128.5 on average
    assert random_expected_evals(space.performance, 1.0) == pytest.approx(257 / 2)


def test_transfer_guided_uses_other_gpus_and_recovers_when_they_mislead():
    similar = [grid_space((10, 5), "a", 2.0), grid_space((11, 6), "b", 0.5), grid_space((11, 4), "c", 3.0)]
    target = grid_space((11, 5), "target")
    result = explore(target, similar, budget=50, random_seeds=20)
    assert result.evals(0.9) <= 2
    assert result.evals(1.0) is not None

    misleading = [grid_space((2, 15), "a"), grid_space((3, 14), "b"), grid_space((2, 14), "c")]
    misled = explore(target, misleading, budget=80, random_seeds=20)
    transfer = plain_transfer_order(target, misleading)
    assert misled.evals(0.9) is not None
    assert misled.evals(0.9) < evals_to(target.performance[transfer], 0.9)
    assert misled.baselines["transfer_evals_to_90"] == evals_to(target.performance[transfer], 0.9)


def test_transfer_guided_portfolio_covers_the_most_uncovered_gpus_next():
    # Three GPUs agree on (4, 4). Two flat outliers peak near (13, 13), where the new GPU peaks
    # too; a steep one peaks at (2, 14), so the largest expected gain (the steep one's optimum)
    # would miss. The portfolio's second pick covers both flat outliers instead.
    others = [grid_space((4, 4), "a"), grid_space((4, 5), "b", 2.0), grid_space((5, 4), "c")]
    others += [grid_space((13, 13), "d1", curvature=0.002), grid_space((13, 12), "d2", 3.0, curvature=0.002)]
    others += [grid_space((2, 14), "e", 0.5)]
    target = grid_space((13, 13), "target", curvature=0.002)
    transfer = transfer_matrix(target, others)
    explorer = TransferGuided(parameter_features(target.configs, target.params), transfer, best_picks=0)
    order = run_search(explorer, target.times, budget=3)
    covers = transfer[order] >= COVER
    assert covers[0].tolist() == [True, True, True, False, False, False]  # the majority's optimum first
    assert covers[1].tolist() == [False, False, False, True, True, False]  # then both flat outliers
    assert evals_to(target.performance[order], 0.9) == 2
    assert explorer.transfer_improvement(order[:1], target.times).argmax() in np.flatnonzero(transfer[:, 5] >= COVER)
    plain = evals_to(target.performance[plain_transfer_order(target, others)], 0.9)
    assert plain > 20  # the mean over the others ranks the outliers' optimum far down


def test_transfer_guided_mixed_portfolio_tries_other_gpus_own_bests_after_the_first_pick():
    # The same GPUs; the two picks after the first are the own best configurations of the
    # heaviest other GPUs not measured yet, then the covering portfolio goes on (the steep outlier
    # "e" is covered by no earlier pick, so a later one covers it).
    others = [grid_space((4, 4), "a"), grid_space((4, 5), "b", 2.0), grid_space((5, 4), "c")]
    others += [grid_space((13, 13), "d1", curvature=0.002), grid_space((13, 12), "d2", 3.0, curvature=0.002)]
    others += [grid_space((2, 14), "e", 0.5)]
    target = grid_space((4, 4), "target")
    transfer = transfer_matrix(target, others)
    features = parameter_features(target.configs, target.params)
    explorer = TransferGuided(features, transfer)
    assert explorer.best_picks == 2
    order = run_search(explorer, target.times, budget=6, stop_at=None)
    own_best = set(explorer.own_best.tolist())
    assert all(transfer[b, j] == transfer[:, j].max() for j, b in enumerate(explorer.own_best))
    assert (transfer[order[0]] >= COVER).tolist() == [True, True, True, False, False, False]
    assert order[1] in own_best and order[2] in own_best and order[1] != order[2]
    assert explorer.own_best_steps(order) == 2 and explorer.own_best_steps(order[:1]) == 0
    assert (transfer[order] >= COVER).any(axis=0).all()  # every other GPU covered within the six picks


def test_transfer_guided_hands_over_to_the_model_once_every_gpu_is_covered():
    others = [grid_space((4, 4), "a"), grid_space((4, 5), "b")]
    target = grid_space((12, 12), "target")
    features = parameter_features(target.configs, target.params)
    explorer = TransferGuided(features, transfer_matrix(target, others), seed=3)
    times = np.full(len(target), np.nan)
    measured = [explorer.next([], times)]
    times[measured[0]] = target.times[measured[0]]
    assert explorer.portfolio_scores(measured, times) is None  # one pick covered both GPUs
    measured.append(explorer.next(measured, times))
    times[measured[1]] = target.times[measured[1]]
    improvement = explorer.model_improvement(measured, times)
    improvement[measured] = -np.inf
    assert improvement[explorer.next(measured, times)] == pytest.approx(improvement.max(), rel=1e-6)


def test_static_model_ranks_unmeasured_configurations_by_the_model():
    train = [grid_space((8, 8), "a"), grid_space((8, 9), "b")]
    # The target has configurations the others never measured (x up to 20).
    xs, ys = np.meshgrid(np.arange(1, 21), np.arange(1, 17), indexing="ij")
    configs = pd.DataFrame({"x": xs.ravel(), "y": ys.ravel()})
    times = 1.0 + 0.05 * ((configs["x"] - 8) ** 2 + (configs["y"] - 8) ** 2)
    target = Space(["x", "y"], configs, times.to_numpy(dtype=float), "target")
    result = explore(target, train, refit=False, budget=10, random_seeds=5)
    assert result.evals(0.95) <= 2
    assert result.order[0] in set(np.flatnonzero(target.performance >= 0.95))


def test_static_model_encodes_text_values_alike_in_every_table():
    effect = {"a": 1.0, "b": 4.0, "c": 1.5, "d": 3.0}
    space_rows = [(a, c) for a in (1, 2, 3, 4) for c in "bcd"]  # lacks "a": per-table codes would shift
    train_rows = [(a, c) for a in (5, 6, 7, 8) for c in "abcd"]
    target = Space(["A", "C"], pd.DataFrame(space_rows, columns=["A", "C"]),
                   np.array([effect[c] * (1 + 0.1 * a) for a, c in space_rows]), "space")
    train = Space(["A", "C"], pd.DataFrame(train_rows, columns=["A", "C"]),
                  np.array([2 * effect[c] * (1 + 0.1 * a) for a, c in train_rows]), "train")
    result = explore(target, [train], refit=False, budget=12, random_seeds=2)
    assert target.config(result.order[0])["C"] == "c"  # the fastest value the space has
    assert result.evals(0.9) == 1


def test_transfer_matrix_matches_configurations_by_value():
    target = Space(["a", "b"], pd.DataFrame({"a": [16, 32, 64], "b": ["x", "y", "x"]}), np.array([1.0, 2.0, 4.0]), "t")
    other = Space(["a", "b"], pd.DataFrame({"a": [64.0, 16.0], "b": ["x", "x"]}), np.array([2.0, np.nan]), "o")
    matrix = transfer_matrix(target, [other])
    np.testing.assert_array_equal(matrix[:, 0], [0.0, np.nan, 1.0])  # failed: 0; absent: NaN


def test_transfer_matrix_matches_values_whatever_type_a_table_gave_them():
    target = Space(["a", "b"], pd.DataFrame({"a": [16, 32], "b": [True, False]}), np.array([1.0, 2.0]), "t")
    other = Space(["a", "b"], pd.DataFrame({"a": ["16.0", " 32"], "b": [1, "false"]}), np.array([2.0, 1.0]), "o")
    np.testing.assert_array_equal(transfer_matrix(target, [other])[:, 0], [0.5, 1.0])
    elsewhere = Space(["a", "b"], pd.DataFrame({"a": ["auto"], "b": [1]}), np.array([1.0]), "e.csv")
    with pytest.raises(GpuperfError, match=r"e.csv: none of its 1 configurations is one of t's \(e.g. a, b = auto,1 there"):
        explore(target, [elsewhere], budget=2, random_seeds=2)


def test_a_gpu_whose_best_configurations_the_space_lacks_is_covered_by_its_best_there():
    target = grid_space((12, 12), "target")
    other = grid_space((4, 4), "a")
    # a configuration outside the space, far faster than any in it, on the other GPU
    configs = pd.concat([other.configs, pd.DataFrame({"x": [99], "y": [99]})], ignore_index=True)
    other = Space(["x", "y"], configs, np.append(other.times, 0.01), "a")
    features = parameter_features(target.configs, target.params)
    explorer = TransferGuided(features, transfer_matrix(target, [other]), seed=3)
    times = np.full(len(target), np.nan)
    first = explorer.next([], times)
    times[first] = target.times[first]
    assert target.config(first) == {"x": 4, "y": 4}  # the other GPU's best among the space's
    assert explorer.portfolio_scores([first], times) is None  # so it is covered: the model takes over


def test_kernel_tuner_strategies_run_on_the_space_through_simulation_mode():
    from gpuperf.decisions.kernel_tuner_baseline import strategy_orders

    space = grid_space((5, 5))
    space.times[3] = np.nan  # a failed configuration stays searchable
    orders = strategy_orders(space, ("random_sample", "genetic_algorithm"), budget=12, seeds=2)
    for strategy, runs in orders.items():
        for order in runs:
            assert len(order) == 12 and len(set(order)) == 12, strategy
            assert all(0 <= i < len(space) for i in order)
    assert orders["random_sample"][0] != orders["random_sample"][1]


# -- bad input ----------------------------------------------------------------------------------


def table() -> pd.DataFrame:
    rows = list(itertools.product([1, 2], [8, 16]))
    return pd.DataFrame({"p": [r[0] for r in rows], "q": [r[1] for r in rows], "time_ms": [1.0, 2.0, 3.0, 4.0]})


def test_empty_text_columns_are_read_as_empty_without_a_pandas_deprecation():
    """A space table whose status, gpu or gpu_label column is empty (float NaN) reads as one with empty
    cells: every row ok, the GPU named by --gpu; with no pandas warning that a later pandas turns into an error."""
    frame = table().assign(status=np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        warnings.simplefilter("error", FutureWarning)
        space = space_from_frame(frame, ["p", "q"], "time_ms", "t.csv")
        named, _ = gpu_named(frame.assign(gpu=np.nan), "V100")  # a Kernel Tuner 1.5 table: an empty gpu column
        picked, _ = select_rows(frame.assign(kernel="k", gpu=["V100", np.nan, "V100", np.nan]), "t.csv", gpu="V100")
        shared = _campaigns_share_a_gpu(frame.assign(kernel="k", gpu="V100", gpu_label=np.nan))
    assert not np.isnan(space.times).any() and space.best_time == 1.0
    assert (named["gpu"] == "V100").all() and len(picked) == 2 and not shared


def test_space_from_frame_reads_failures_and_rejects_bad_tables():
    frame = table().astype({"time_ms": object})
    frame.loc[1, "time_ms"] = "CompilationFailedConfig"
    space = space_from_frame(frame, ["p", "q"], "time_ms", "t.csv")
    assert np.isnan(space.times[1]) and space.best_time == 1.0

    with pytest.raises(GpuperfError, match=r"t\.csv: missing parameter column\(s\) r"):
        space_from_frame(table(), ["p", "r"], "time_ms", "t.csv")
    bad = table().astype({"time_ms": object})
    bad.loc[2, "time_ms"] = "fast"
    with pytest.raises(GpuperfError, match=r"t\.csv: row 3: time_ms='fast' is not a positive number"):
        space_from_frame(bad, ["p", "q"], "time_ms", "t.csv")
    with pytest.raises(GpuperfError, match=r"t\.csv: the table has no rows"):
        space_from_frame(table().iloc[:0], ["p", "q"], "time_ms", "t.csv")
    with pytest.raises(GpuperfError, match=r"t\.csv: row 5: configuration 2,16 appears twice"):
        space_from_frame(pd.concat([table(), table().iloc[[3]]]), ["p", "q"], "time_ms", "t.csv")
    with pytest.raises(GpuperfError, match=r"missing time column 'time_s'"):
        space_from_frame(table(), ["p", "q"], "time_s", "t.csv")
    for rate in ("GFLOP/s", "gflops", "bytes_per_second", "throughput", "GFLOPS/W", "speedup", "items_per_s"):
        with pytest.raises(GpuperfError, match=rf"--target {rate} looks like a rate \(higher is better\)"):
            space_from_frame(table().assign(**{rate: 1.0}), ["p", "q"], rate, "t.csv")


def test_a_bundled_space_subset_round_trips_through_a_kernel_tuner_cache(tmp_path):
    from gpuperf.decisions.bundled_spaces import subset, tuning_families
    from gpuperf.decisions.kernel_tuner_baseline import strategy_order, write_space_cache

    family = next(f for f in tuning_families() if f.name == "hub/convolution")
    space = subset(family.spaces["RTX 3090"], 150, seed=1)
    assert np.isnan(space.times).any()  # failed configurations are part of the space
    cache = write_space_cache(space, tmp_path / "space.json")
    visited = strategy_order(cache, space, "random_sample", budget=10_000)
    # Exactly the space's configurations, less the failed ones (Kernel Tuner never tries those).
    assert sorted(visited) == list(np.flatnonzero(np.isfinite(space.times)))
    assert len(space.without_failures()) == len(visited)


def test_a_cache_tuned_for_another_objective_says_what_is_searched(tmp_path):
    """A cache tuned for GFLOP/s was explored by its times without a word, where Kernel Tuner's strategy
    follows the objective."""
    import warnings

    from gpuperf.decisions.space import read_space
    from gpuperf.errors import GpuperfNote

    source = Path(__file__).parent / "data" / "kernel_tuner_vector_add.json"
    cache = tmp_path / "gflops.json"
    cache.write_text(source.read_text().replace('"objective": "time"', '"objective": "GFLOP/s"'))
    with pytest.warns(GpuperfNote, match=r"gflops.json: tuned for objective 'GFLOP/s'; searched by time \(time_s\)"):
        read_space(cache)
    listed = tmp_path / "listed.json"  # Kernel Tuner 1.x writes its objectives as a list
    listed.write_text(source.read_text().replace('"objective": "time"', '"objective": ["time"]'))
    with warnings.catch_warnings():
        warnings.simplefilter("error", GpuperfNote)
        read_space(source)  # tuned for time: nothing to say
        read_space(listed)
        read_space(cache, target="time_s")  # the target asked for
    cache.write_text(source.read_text().replace('"objective": "time"', '"objective": ["GFLOP/s"]'))
    with pytest.warns(GpuperfNote, match=r"gflops.json: tuned for objective 'GFLOP/s'; searched by time"):
        read_space(cache)


def test_a_training_space_where_every_configuration_failed_is_left_out_with_a_note(tmp_path):
    """One --train cache (or one GPU's rows of a table) whose every configuration failed aborted the whole
    run: 'every configuration failed'."""
    from gpuperf.decisions.space import read_training_spaces, training_spaces_from_frame
    from gpuperf.errors import GpuperfNote

    table = pd.DataFrame({"x": [1, 2, 1, 2], "gpu": ["A100", "A100", "H100", "H100"], "time_s": [1.0, 2.0, None, None],
                          "status": ["ok", "ok", "compile_failed", "timeout"]})
    with pytest.warns(GpuperfNote, match=r"t.csv \(H100\): every configuration failed; .*: left out of the training"):
        spaces = training_spaces_from_frame(table, ["x"], where="t.csv")
    assert [space.gpu for space in spaces] == ["A100"]
    source = Path(__file__).parent / "data" / "kernel_tuner_vector_add.json"
    failed = tmp_path / "failed.json"
    failed.write_text(re.sub(r'"time": [0-9.]+', '"time": "RuntimeFailedConfig"', source.read_text()))
    with pytest.warns(GpuperfNote, match=r"failed.json: every configuration failed"):
        assert read_training_spaces(failed, ["block_size_x", "tile_size"]) == []


def test_plain_transfers_order_breaks_ties_by_parameter_values_not_by_row_order():
    """Two configurations the other GPU rates alike took the order of the table's rows: the same space
    with its rows reversed gave another transfer_evals_to_90."""
    configs = pd.DataFrame({"p": [1, 1, 2, 2], "q": [0, 1, 0, 1]})
    other = Space(["p", "q"], configs, np.array([1.0, 1.0, 2.0, 2.0]), "other")  # q makes no difference there
    target = Space(["p", "q"], configs, np.array([5.0, 1.0, 6.0, 7.0]), "target")
    reversed_rows = Space(["p", "q"], configs.iloc[::-1].reset_index(drop=True), target.times[::-1].copy(), "reversed")
    order = plain_transfer_order(target, [other])
    again = plain_transfer_order(reversed_rows, [other])
    assert [target.config(i) for i in order] == [reversed_rows.config(i) for i in again]


def test_kernel_tuners_visits_map_back_to_a_space_of_boolean_and_float_parameters(tmp_path):
    """A bool parameter gave Kernel Tuner's visit the key '32,True' where the space's is '32,1': KeyError."""
    from gpuperf.decisions.kernel_tuner_baseline import strategy_order, write_space_cache
    from gpuperf.decisions.space import Space

    configs = pd.DataFrame({"x": [32, 32, 64, 64], "shared": [True, False, True, False], "alpha": [0.5, 1.0, 0.5, 1.0]})
    space = Space(["x", "shared", "alpha"], configs, np.array([4.0, 3.0, 2.0, 1.0]), "bools")
    visited = strategy_order(write_space_cache(space, tmp_path / "space.json"), space, "random_sample", budget=10)
    assert sorted(visited) == [0, 1, 2, 3]


def test_errors_number_rows_as_the_file_does(tmp_path):
    """A CSV's rows are named by editor line (header = line 1), a Parquet table's by row (1-based)."""
    from gpuperf.decisions.space import read_space

    bad = table()
    bad.loc[2, "time_ms"] = -1.0
    bad.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(GpuperfError, match=r"t\.csv: line 4: time_ms=-1(\.0)? is not"):
        read_space(tmp_path / "t.csv", ["p", "q"], "time_ms")
    bad.to_parquet(tmp_path / "t.parquet")
    with pytest.raises(GpuperfError, match=r"t\.parquet: row 3: time_ms=-1(\.0)? is not"):
        read_space(tmp_path / "t.parquet", ["p", "q"], "time_ms")


def test_a_parquet_table_written_from_a_filtered_frame_counts_its_own_rows(tmp_path):
    """pandas writes a frame's index into Parquet: rows of a filtered frame are still named by
    their row in the file, and a named index is a column again."""
    from gpuperf.datasets.tables import read_table_file
    from gpuperf.decisions.space import read_space

    bad = pd.DataFrame({"p": range(8), "q": 1, "time_ms": [1.0, 2, 3, 4, 5, -1, 7, 8]})
    bad.iloc[2:].to_parquet(tmp_path / "t.parquet")  # index labels 2 to 7: the -1 is the file's row 4
    with pytest.raises(GpuperfError, match=r"t\.parquet: row 4: time_ms=-1(\.0)? is not"):
        read_space(tmp_path / "t.parquet", ["p", "q"], "time_ms")
    table().set_index("p").to_parquet(tmp_path / "indexed.parquet")
    assert read_table_file(tmp_path / "indexed.parquet").columns.tolist() == table().columns.tolist()


def test_the_time_is_never_a_parameter_and_no_parameter_is_named_twice():
    with pytest.raises(GpuperfError, match="time_ms is both the time explored and a parameter"):
        space_from_frame(table(), ["p", "time_ms"], "time_ms", "t.csv")
    with pytest.raises(GpuperfError, match="time_s is a measured time, not a parameter"):
        space_from_frame(table().assign(time_s=1.0), ["p", "time_s"], "time_ms", "t.csv")
    with pytest.raises(GpuperfError, match="parameter p is named twice"):
        space_from_frame(table(), ["p", "q", "p"], "time_ms", "t.csv")


def test_a_csv_with_lines_that_are_no_row_numbers_rows_and_parquet_never_lines(tmp_path):
    from gpuperf.decisions.space import read_space

    bad = table()
    bad.loc[2, "time_ms"] = -1.0
    text = bad.to_csv(index=False).splitlines()
    (tmp_path / "blank.csv").write_text("\n".join([text[0], text[1], "", *text[2:]]) + "\n")  # a blank line 3
    with pytest.raises(GpuperfError, match=r"blank\.csv: row 3: time_ms=-1"):
        read_space(tmp_path / "blank.csv", ["p", "q"], "time_ms")
    bad.attrs["row_numbering"] = "line"  # as a frame read from a CSV carries it into Parquet metadata
    bad.to_parquet(tmp_path / "t.parquet")
    with pytest.raises(GpuperfError, match=r"t\.parquet: row 3: time_ms=-1"):
        read_space(tmp_path / "t.parquet", ["p", "q"], "time_ms")


def test_random_order_survival_and_quantile_on_two_configurations():
    """One good configuration of two: missed after 1 draw with probability 1/2, never after 2."""
    from gpuperf.decisions.search_metrics import random_evals_quantile, random_survival
    np.testing.assert_allclose(random_survival([1.0, 0.5], 0.9, [0, 1, 2]), [1.0, 0.5, 0.0])
    assert random_evals_quantile([1.0, 0.5], 0.9, 0.5) == 1


def test_random_order_within_a_budget_is_scored_as_a_search_is():
    """One good configuration of three: T is 1, 2 or 3 alike; with a budget of 1 a miss counts 2, so
    E[min(T, 2)] = 1/3 + 2 * 2/3 = 5/3, not (N + 1) / (m + 1) = 2; a budget covering the space gives 2.
    explore reports it beside the uncapped expectation, at its budget."""
    from gpuperf.decisions.search_metrics import random_expected_evals_within
    assert random_expected_evals_within([1.0, 0.5, 0.2], 0.9, 1) == pytest.approx(5 / 3)
    assert random_expected_evals_within([1.0, 0.5, 0.2], 0.9, 3) == pytest.approx(2.0)
    performance = normalised_performance(np.random.default_rng(3).uniform(1.0, 3.0, 60))
    capped = np.minimum(simulate_random(performance, 0.9, seeds=3000), 6)
    assert random_expected_evals_within(performance, 0.9, 5) == pytest.approx(capped.mean(), rel=0.03)
    assert random_expected_evals_within(performance, 0.9, 5) < random_expected_evals(performance, 0.9)
    with pytest.raises(GpuperfError, match="budget 0"):
        random_expected_evals_within(performance, 0.9, 0)
    for budget in (True, 5.0):  # a whole number of evaluations, not a flag or a float
        with pytest.raises(GpuperfError, match=f"budget {budget!r} must be a whole number"):
            random_expected_evals_within(performance, 0.9, budget)
    space = grid_space((11, 5))
    result = explore(space, [], budget=3)
    assert result.baselines["random_expected_evals_to_90_within_budget"] == pytest.approx(
        random_expected_evals_within(space.performance, 0.9, 3))
    assert result.baselines["random_expected_evals_to_90_within_budget"] <= 4


def test_random_order_within_a_huge_budget_is_exact_and_costs_no_more_than_the_space():
    """A "no limit" budget (2**63 - 1, or past 2**64) gives the uncapped expectation at once, not 0.0 from an
    empty arange, a MemoryError or minutes of summing zeros past the space's size; the seconds likewise."""
    from gpuperf.decisions.search_metrics import random_expected_cost_within, random_expected_evals_within
    performance, cost = [1.0, 0.5, 0.95, 0.2], [1.0, 2.0, 4.0, 8.0]
    failed = [0.5, 0.3, 0.0, 0.4]
    for budget in (4, 5, 10**9, 2**32, 2**63 - 1, 2**64 + 5):
        assert random_expected_evals_within(performance, 0.9, budget) == pytest.approx(
            random_expected_evals(performance, 0.9))
        assert random_expected_evals_within(failed, 0.9, budget) == pytest.approx(5.0)
        assert random_expected_cost_within(performance, cost, 0.9, budget) == pytest.approx(35 / 6)
        assert random_expected_cost_within(failed, cost, 0.9, budget) == pytest.approx(15.0)


def test_random_order_seconds_within_a_budget_are_the_cost_a_search_of_that_budget_would_pay():
    """Two good (costs 1, 4) and two bad (2, 8) of four, budget 2: a good first draw costs 2.5 on average
    (probability 1/2), else a bad one (5) and any second draw (10/3 on average), so 1.25 + 25/6 = 65/12, where
    random order run until it reaches 90 % pays 2.5 + 5 * 2/3 = 35/6. Every order of the space, cut at the budget
    and costed as a search's (cost_to), averages the same; so does a space nothing reaches."""
    from gpuperf.decisions.search_metrics import cost_to, random_expected_cost_within
    performance, cost = [1.0, 0.5, 0.95, 0.2], [1.0, 2.0, 4.0, 8.0]
    assert random_expected_cost_within(performance, cost, 0.9, 2) == pytest.approx(65 / 12)
    assert random_expected_cost_within(performance, cost, 0.9, 4) == pytest.approx(35 / 6)
    for space, budgets in ((performance, (1, 2, 3, 4, 6)), ([0.5, 0.3, 0.0, 0.4], (1, 3, 5))):
        for budget in budgets:
            every = [cost_to(space, cost, list(order)[:budget], 0.9) for order in itertools.permutations(range(4))]
            assert random_expected_cost_within(space, cost, 0.9, budget) == pytest.approx(np.mean(every))
    with pytest.raises(GpuperfError, match="budget 0"):
        random_expected_cost_within(performance, cost, 0.9, 0)
    with pytest.raises(GpuperfError, match="cost holds 3 values for 4 configurations"):
        random_expected_cost_within(performance, cost[:3], 0.9, 2)


def test_random_order_quantile_counts_a_space_nothing_reaches_as_one_past_its_end():
    """As random_expected_evals counts it: every configuration failed gives N + 1, never 0 draws;
    raw times and a quantile outside (0, 1] are refused as the sibling functions refuse them."""
    from gpuperf.decisions.search_metrics import normalised_performance, random_evals_quantile
    failed = normalised_performance([np.nan] * 3)
    assert random_evals_quantile(failed, 0.9, 0.9) == random_expected_evals(failed, 0.9) == 4
    assert random_evals_quantile([1.0, 0.5, 0.2], 0.9, 0.01) == 1
    with pytest.raises(GpuperfError):
        random_evals_quantile([1.0, 2.0, 3.0], 0.9, 0.5)
    with pytest.raises(GpuperfError, match="quantile"):
        random_evals_quantile([1.0, 0.5, 0.2], 0.9, 1.5)
    for q in (0, 0.0, True):  # no draw reaches a 0 quantile; True is a flag, not the quantile 1
        with pytest.raises(GpuperfError, match="above 0 and at most 1"):
            random_evals_quantile([1.0, 0.5, 0.2], 0.9, q)


def test_searches_are_judged_at_90_95_and_99_percent():
    space = grid_space((11, 5))
    result = explore(space, [], budget=40)
    for fraction, label in ((0.9, "90"), (0.95, "95"), (0.99, "99")):
        assert result.baselines[f"random_expected_evals_to_{label}"] == pytest.approx(
            random_expected_evals(space.performance, fraction))
    assert (result.baselines["random_expected_evals_to_90"] < result.baselines["random_expected_evals_to_95"]
            < result.baselines["random_expected_evals_to_99"])


def test_transfer_line_slope_is_clipped_to_one():
    from gpuperf.decisions.explorers import TransferGuided

    # One other GPU, normalised performance 1, 1/2, 1/4: logs 0, -ln2, -2 ln2. The new GPU's
    # -log(time) falls twice as fast (0, -2 ln2, -4 ln2): least-squares slope 2, clipped to 1, so the
    # line is logs + mean(values - logs) = logs - ln2. Unclipped, the line would be the values.
    explorer = TransferGuided(np.zeros((3, 1)), np.array([[1.0], [0.5], [0.25]]))
    values = np.array([0.0, -2.0, -4.0]) * math.log(2)
    times = np.exp(-values)
    line = explorer.transfer_line([0, 1, 2], times, values)
    assert line == pytest.approx(np.array([-1.0, -2.0, -3.0]) * math.log(2), abs=1e-12)


def test_plain_transfer_puts_configurations_no_gpu_measured_last():
    from gpuperf.decisions.explorers import PlainTransfer

    # Means over the other GPUs: 0.5, none (NaN), 1.0 -> best first, the unmeasured one last.
    order = PlainTransfer(np.array([[0.5, np.nan], [np.nan, np.nan], [1.0, np.nan]])).order
    assert order.tolist() == [2, 0, 1]


def test_gpu_weights_compare_performance_relative_to_each_gpus_best_measured():
    from gpuperf.decisions.explorers import TransferGuided

    # GPU A measured logs (0, -1), GPU B (-1, -2): the same shape, B shifted by its best lying
    # elsewhere (configuration 2). The new GPU measured -log(t) = (0, -1). Relative to each one's
    # best measured, all three read (0, -1): distance 0 for both, so the equal prior stays 1/2, 1/2.
    e = math.e
    explorer = TransferGuided(np.zeros((3, 1)), np.array([[1.0, 1 / e], [1 / e, 1 / e**2], [0.5, 1.0]]))
    weights = explorer.gpu_weights([0, 1], np.array([1.0, e, np.nan]))
    assert weights == pytest.approx([0.5, 0.5], abs=1e-9)


def test_gpu_weights_are_gaussian_in_the_mean_squared_distance():
    from gpuperf.decisions.explorers import TransferGuided

    # New GPU relative (0, -1); A relative (0, -1): distance 0; B relative (0, -1.2): distance
    # mean(0, 0.2**2) = 0.02. Weight ratio B/A = exp(-0.02 / (2 * 0.2**2)) = exp(-0.25).
    e = math.e
    explorer = TransferGuided(np.zeros((3, 1)), np.array([[1.0, 1.0], [1 / e, e**-1.2], [0.5, 0.5]]), sigma=0.2)
    weights = explorer.gpu_weights([0, 1], np.array([1.0, e, np.nan]))
    ratio = math.exp(-0.25)
    assert weights == pytest.approx([1 / (1 + ratio), ratio / (1 + ratio)], rel=1e-9)


def test_a_configuration_at_exactly_95_percent_covers_the_gpu():
    from gpuperf.decisions.explorers import TransferGuided

    # Best 1.0; 0.95 is within 5 % (0.95 >= 0.95 * 1.0, exact in floating point); 0.94 is not.
    explorer = TransferGuided(np.zeros((3, 1)), np.array([[1.0], [0.95], [0.94]]))
    assert explorer.covers[:, 0].tolist() == [True, True, False]
    assert explorer.portfolio_steps([1]) == 1


def several_kernels_and_gpus() -> pd.DataFrame:
    """Two kernels on three GPUs in one table, as the bundled tables hold them."""
    parts = []
    for kernel in ("gemm", "pnpoly"):
        for gpu, scale in (("Tesla V100 PCIe 32GB", 1.0), ("Tesla K20", 3.0), ("GTX 1080 Ti", 2.0)):
            part = table().assign(kernel=kernel, gpu=gpu, time_ms=table()["time_ms"] * scale)
            part["variant"] = "p=" + part["p"].astype(str) + ",q=" + part["q"].astype(str)
            parts.append(part)
    return pd.concat(parts, ignore_index=True)


def test_read_space_picks_one_kernel_and_gpu_and_reads_the_parameters_from_variant_labels(tmp_path):
    from gpuperf.decisions.space import read_space

    several_kernels_and_gpus().to_csv(tmp_path / "all.csv", index=False)
    space = read_space(tmp_path / "all.csv", kernel="PNPOLY", gpu="V100")
    assert space.params == ["p", "q"] and space.gpu == "Tesla V100 PCIe 32GB"
    assert space.where == f"{tmp_path / 'all.csv'} (pnpoly, Tesla V100 PCIe 32GB)"
    assert list(space.times) == [1.0, 2.0, 3.0, 4.0]  # the V100's times, not the K20's 3x
    assert read_space(tmp_path / "all.csv", ["p", "q"], kernel="gemm", gpu="k20").times.max() == 12.0


def test_read_space_names_what_it_cannot_pick(tmp_path):
    from gpuperf.decisions.space import read_space

    several_kernels_and_gpus().to_csv(tmp_path / "all.csv", index=False)
    with pytest.raises(GpuperfError, match=r"--gpu Tesla names 2 of its gpus \(Tesla K20, Tesla V100 PCIe 32GB\)"):
        read_space(tmp_path / "all.csv", kernel="gemm", gpu="Tesla")
    with pytest.raises(GpuperfError, match=r"unknown kernel in .*all\.csv 'pnpolyx'; did you mean pnpoly\?"):
        read_space(tmp_path / "all.csv", kernel="pnpolyx", gpu="K20")
    with pytest.raises(GpuperfError, match=r"names 3 GPUs .*explore and ask pick one with --gpu"):
        read_space(tmp_path / "all.csv", kernel="gemm")
    with pytest.raises(GpuperfError, match=r"no kernel column to pick --kernel gemm by"):
        table().to_csv(tmp_path / "one.csv", index=False)
        read_space(tmp_path / "one.csv", ["p", "q"], kernel="gemm")


def test_best_found_curve_pads_a_stopped_search_with_its_last_best():
    """Running best of 0.2, 0.5, 0.4 is 0.2, 0.5, 0.5; padded to 5 evaluations the search that
    stopped keeps 0.5; cut to 2 it is 0.2, 0.5."""
    assert best_found_curve([0.2, 0.5, 0.4], length=5).tolist() == [0.2, 0.5, 0.5, 0.5, 0.5]
    assert best_found_curve([0.2, 0.5, 0.4], length=2).tolist() == [0.2, 0.5]


def test_normalised_performance_treats_a_zero_or_negative_time_as_failed():
    """Only finite times above 0 count: the best is 2.0, so 2 -> 1, 4 -> 0.5; NaN, 0 and -1 give 0."""
    performance = normalised_performance([np.nan, 2.0, 4.0, 0.0, -1.0])
    assert performance.tolist() == [0.0, 1.0, 0.5, 0.0, 0.0]


def test_a_space_where_every_configuration_failed_has_performance_zero_everywhere():
    assert normalised_performance([np.nan, np.nan, -1.0]).tolist() == [0.0, 0.0, 0.0]


def test_a_configuration_exactly_at_the_fraction_reaches_it():
    """0.9 of the best counts as reaching 90 %, and the best itself (exactly 1.0) reaches 100 %."""
    performance = normalised_performance([2.0, 1.0 / 0.9, 1.0])  # 0.5, 0.9 (up to rounding), 1.0
    assert evals_to(performance, 0.9) == 2
    assert evals_to(performance, 1.0) == 3
    assert evals_to([0.5, 0.75, 1.0], 0.75) == 2
    # random order: two of three configurations reach 75 %, one reaches 100 %
    assert random_expected_evals([0.5, 0.75, 1.0], 0.75) == pytest.approx(4 / 3)
    assert random_expected_evals([0.5, 0.75, 1.0], 1.0) == pytest.approx(2.0)
    from gpuperf.decisions.search_metrics import random_survival
    # P(no hit after 1 draw) = 1/3 when 2 of 3 are good; P(missing the one best in 2 draws) = 1/3
    np.testing.assert_allclose(random_survival([0.5, 0.75, 1.0], 0.75, [1, 2]), [1 / 3, 0.0])
    np.testing.assert_allclose(random_survival([0.5, 0.75, 1.0], 1.0, [1, 2]), [2 / 3, 1 / 3])


def test_simulated_random_order_that_never_reaches_counts_one_more_than_the_space():
    """With no good configuration the expectation (N + 1) / (0 + 1) is N + 1: so is every simulated order."""
    performance = np.zeros(4)
    assert simulate_random(performance, 0.9, seeds=3).tolist() == [5, 5, 5]
    assert random_expected_evals(performance, 0.9) == pytest.approx(5.0)


def test_simulated_random_orders_use_consecutive_seeds_from_start_seed():
    performance = normalised_performance(np.arange(1.0, 41.0))  # one good configuration of 40
    seven = simulate_random(performance, 0.99, seeds=7)
    assert simulate_random(performance, 0.99, seeds=2, start_seed=5).tolist() == seven[5:].tolist()
    assert len(set(seven.tolist())) > 1  # the seeds give different orders


def test_space_from_frame_refuses_a_zero_time():
    """A time of 0 (row 2) is no measured time and no failure name: an error naming the row (time 0)."""
    zero = table().assign(time_ms=[1.0, 0.0, 3.0, 4.0])
    with pytest.raises(GpuperfError, match=r"t\.csv: row 2: time_ms=0 is not a positive number"):
        space_from_frame(zero, ["p", "q"], "time_ms", "t.csv")


def test_one_gpu_spelled_two_ways_is_one_gpu():
    """'K20' and 'Tesla K20' are both the descriptor 'Tesla K20': one GPU, not two; the space names
    the first spelling. Two different GPUs are still refused."""
    named = table().assign(gpu=["K20", "Tesla K20", "K20", "Tesla K20"])
    assert space_from_frame(named, ["p", "q"], "time_ms", "t.csv").gpu == "K20"
    with pytest.raises(GpuperfError, match=r"t\.csv: column gpu names 2 GPUs"):
        space_from_frame(named.assign(gpu=["K20", "RTX 3090", "K20", "K20"]), ["p", "q"], "time_ms", "t.csv")


def test_parameter_features_take_log2_only_of_all_positive_columns():
    """[1, 2, 4, 8] are all positive: log2 gives 0, 1, 2, 3. [0, 1, 2, 4] has a 0 (log2 would be
    -inf), so the whole column stays as it is."""
    configs = pd.DataFrame({"a": [1, 2, 4, 8], "b": [0, 1, 2, 4]})
    assert parameter_features(configs, ["a", "b"]).tolist() == [[0, 0], [1, 1], [2, 2], [3, 4]]


def test_default_target_prefers_time_ms_then_time_s():
    """The first of time_ms, time_s, time the table has: time_ms where a table has all three."""
    from gpuperf.decisions.space import default_target

    frame = pd.DataFrame({"time": [1.0], "time_s": [1e-3], "time_ms": [1.0]})
    assert default_target(frame, "t.csv") == "time_ms"
    assert default_target(frame.drop(columns="time_ms"), "t.csv") == "time_s"


def test_training_spaces_split_a_table_of_two_kernels():
    """Kernels a and b (two values of 'kernel') each tuned over p = 1, 2: two spaces, one per kernel,
    named by it, not one table whose configurations repeat."""
    from gpuperf.decisions.space import training_spaces_from_frame

    frame = pd.DataFrame({"kernel": ["a", "a", "b", "b"], "p": [1, 2, 1, 2], "time_ms": [1.0, 2.0, 3.0, 4.0]})
    spaces = training_spaces_from_frame(frame, ["p"], where="t.csv")
    assert [s.where for s in spaces] == ["t.csv (a)", "t.csv (b)"]
    assert [s.times.tolist() for s in spaces] == [[1.0, 2.0], [3.0, 4.0]]


def test_training_spaces_leave_out_a_kernel_tuned_over_more_parameters():
    """Kernel b repeats p = 1, 2 (it was tuned over r too): left out; only a's space remains."""
    from gpuperf.decisions.space import training_spaces_from_frame

    frame = pd.DataFrame({"kernel": ["a", "a", "b", "b", "b", "b"], "p": [1, 2, 1, 1, 2, 2],
                          "r": [0, 0, 0, 1, 0, 1], "time_ms": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    spaces = training_spaces_from_frame(frame, ["p"], where="t.csv")
    assert [s.where for s in spaces] == ["t.csv (a)"]


# -- explorer rules, worked by hand ---------------------------------------------------------------


def test_a_configuration_no_other_gpu_measured_has_the_floor_log_performance():
    """Absent entries take the row's mean over the GPUs that have it; a row none has takes
    log(FLOOR), as low as a failure, not 0 (the best there is)."""
    from gpuperf.decisions.explorers import FLOOR, _log_performance

    logs = _log_performance(np.array([[1.0, np.nan], [np.nan, np.nan], [0.0, 0.5]]))
    np.testing.assert_allclose(logs, [[0.0, 0.0], [math.log(FLOOR)] * 2, [math.log(FLOOR), math.log(0.5)]])


def test_a_failed_measurement_counts_half_a_log_unit_below_the_worst():
    """Times 1, e, failed: -log(time) 0, -1 and, for the failure, -1 - 0.5."""
    from gpuperf.decisions.explorers import _measured_values

    values = _measured_values([0, 1, 2], np.array([1.0, math.e, np.nan]))
    assert values == pytest.approx([0.0, -1.0, -1.5], abs=1e-12)
    assert _measured_values([0], np.array([np.nan])) is None


def test_plain_transfer_ranks_unmeasured_configurations_after_failed_ones():
    """A configuration every other GPU failed on (mean 0) still comes before one none measured."""
    from gpuperf.decisions.explorers import PlainTransfer

    assert PlainTransfer(np.array([[np.nan], [0.0], [0.5]])).order.tolist() == [2, 1, 0]


def test_gpu_weights_compare_shapes_whatever_the_new_gpus_time_unit():
    """The new GPU's times 2 and 2e (-log: -ln 2, -ln 2 - 1) read (0, -1) relative to its best, as
    GPU A's do, so A keeps distance 0; B reads (0, -1.2): ratio exp(-0.02 / (2 * 0.2**2))."""
    e = math.e
    explorer = TransferGuided(np.zeros((3, 1)), np.array([[1.0, 1.0], [1 / e, e**-1.2], [0.5, 0.5]]), sigma=0.2)
    weights = explorer.gpu_weights([0, 1], np.array([2.0, 2 * e, np.nan]))
    ratio = math.exp(-0.25)
    assert weights == pytest.approx([1 / (1 + ratio), ratio / (1 + ratio)], rel=1e-9)


def test_gpu_weights_keep_the_prior_when_every_gpu_agrees():
    """Both GPUs match the measured shape exactly (distance 0): the weights are the prior, 0.8 and 0.2."""
    e = math.e
    explorer = TransferGuided(np.zeros((3, 1)), np.array([[1.0, 1.0], [1 / e, 1 / e], [0.5, 0.5]]),
                              prior=np.array([0.8, 0.2]))
    assert explorer.gpu_weights([0, 1], np.array([1.0, e, np.nan])) == pytest.approx([0.8, 0.2], rel=1e-12)


def test_portfolio_counts_only_gpus_no_measured_configuration_covers():
    """Configuration 0 covers A and B and is measured; 1 covers A and B again, 2 covers only C:
    2 scores C's weight 1/3, 1 scores nothing, so 2 is next."""
    transfer = np.array([[1.0, 1.0, 0.5], [0.98, 0.97, 0.5], [0.5, 0.5, 1.0]])
    explorer = TransferGuided(np.zeros((3, 1)), transfer)
    times = np.array([1.0, np.nan, np.nan])
    assert explorer.next([], np.full(3, np.nan)) == 0
    assert explorer.portfolio_scores([0], times) == pytest.approx([0.0, 0.0, 1 / 3])
    assert explorer.next([0], times) == 2


def test_portfolio_ties_go_to_the_larger_transfer_expected_improvement():
    """Both 1 and 2 cover the one uncovered GPU C. Over the best measured (configuration 0: A 1,
    B 1, C 0.5), 1 gains (1 / 0.5 - 1) / 3 = 1/3 and 2 gains (0.96 / 0.5 - 1) / 3 = 0.92 / 3, so 1
    is next, though 2's mean over the GPUs (0.92 against 0.67) is the higher."""
    transfer = np.array([[1.0, 1.0, 0.5], [0.5, 0.5, 1.0], [0.9, 0.9, 0.96]])
    explorer = TransferGuided(np.zeros((3, 1)), transfer)
    times = np.array([1.0, np.nan, np.nan])
    assert explorer.next([], np.full(3, np.nan)) == 0
    assert explorer.transfer_improvement([0], times) == pytest.approx([0.0, 1 / 3, 0.92 / 3])
    assert explorer.next([0], times) == 1


def test_transfer_guided_slice_picks_try_an_untried_combination_of_flags_after_the_own_bests():
    """Configurations x = 0..3 with a flag 0/1; both other GPUs prefer flag 0 and each has its own
    best there, so the first pick and the other own best leave flag 1 untried: with ``slice_picks``
    the next pick is flag 1's best by the others' mean log performance (x = 2: 0.55 and 0.6); with
    ``slice_picks=0`` it is not."""
    features = np.array([[x, flag] for flag in (0, 1) for x in range(4)], dtype=float)
    transfer = np.array([[1.0, 0.9], [0.9, 1.0], [0.8, 0.8], [0.7, 0.7],
                         [0.5, 0.5], [0.6, 0.4], [0.55, 0.6], [0.4, 0.3]])
    times = 1.0 / transfer[:, 0]
    assert run_search(TransferGuided(features, transfer, slice_picks=0), times, budget=4, stop_at=None)[2] != 6
    explorer = TransferGuided(features, transfer)  # one slice pick by default
    assert sorted(set(explorer.slice_of.tolist())) == [0, 1]
    order = run_search(explorer, times, budget=4, stop_at=None)
    assert set(order[:2]) == {0, 1} and order[2] == 6
    assert explorer.slice_pick(order[:3], np.where(np.isin(np.arange(8), order[:3]), times, np.nan)) is None


def test_transfer_guided_slices_are_the_combinations_of_every_flag_and_end_after_the_picks_they_are_given():
    """Configurations 8 a + 4 b + x of flags a, b and x = 0..3: four slices. One other GPU, best
    (1.0) on slice (0, 0) and i / 16 on configuration i elsewhere: the untried slices' best is 15.
    The default picks are the first, 2 own bests and 1 slice pick: after 4 there is none."""
    features = np.array([[x, a, b] for a in (0, 1) for b in (0, 1) for x in range(4)], dtype=float)
    transfer = np.where(np.arange(16) < 4, 1.0, np.arange(16) / 16)[:, None]
    explorer = TransferGuided(features, transfer)
    assert explorer.slice_of.tolist() == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4
    times = np.where(np.arange(16) < 4, 1.0, np.nan)
    assert explorer.slice_pick([0, 1, 2], times) == 15
    assert explorer.slice_pick([0, 1, 2, 3], times) is None


def test_transfer_guided_slice_pick_follows_the_gpus_the_new_one_agrees_with():
    """Flag 0: A falls with x, B rises; the new GPU ran x = 0..2 as A does, so B weighs nothing and
    flag 1's pick is A's best there (4), not the equal-weight mean's (7: log(0.1 x 1.0) > log(0.9 x 0.05))."""
    features = np.array([[x, flag] for flag in (0, 1) for x in range(4)], dtype=float)
    transfer = np.array([[1.0, 0.2], [0.5, 0.3], [0.3, 0.5], [0.2, 1.0],
                         [0.9, 0.05], [0.3, 0.1], [0.2, 0.2], [0.1, 1.0]])
    explorer = TransferGuided(features, transfer)
    times = np.where(np.arange(8) < 3, 1.0 / transfer[:, 0], np.nan)
    assert explorer.slice_pick([0, 1, 2], times) == 4


def test_transfer_improvement_counts_only_gains_over_each_gpus_best_measured():
    """Measured configuration 0 (A 1.0, B 0.5). Configuration 1 (0.5, 1.0) gains 0 on A (a loss
    counts as none) and 1.0 / 0.5 - 1 = 1 on B: 1/2 with equal weights; 2 (0.8, 0.8) gains 0.6 on B: 0.3."""
    explorer = TransferGuided(np.zeros((3, 1)), np.array([[1.0, 0.5], [0.5, 1.0], [0.8, 0.8]]))
    improvement = explorer.transfer_improvement([0], np.array([1.0, np.nan, np.nan]))
    assert improvement == pytest.approx([0.0, 0.5, 0.3], abs=1e-12)


def test_transfer_line_keeps_slope_one_below_three_measurements():
    """Two measurements, values 0 and -ln2 / 2 where the other GPU reads 0 and -ln2: the slope
    stays 1 (a least-squares fit would give 1/2), the line is the logs shifted by the mean
    difference, ln2 / 4."""
    explorer = TransferGuided(np.zeros((3, 1)), np.array([[1.0], [0.5], [0.25]]))
    values = np.array([0.0, -0.5]) * math.log(2)
    line = explorer.transfer_line([0, 1], np.exp(-np.append(values, np.nan)), values)
    assert line == pytest.approx(np.array([0.25, -0.75, -1.75]) * math.log(2), abs=1e-12)


def test_transfer_line_fits_slope_and_intercept_together():
    """Three measurements, values 0, -ln2 / 2, -ln2 where the other GPU reads 0, -ln2, -2 ln2: the
    least-squares slope 1/2 and its own intercept (0) give the values back exactly."""
    explorer = TransferGuided(np.zeros((3, 1)), np.array([[1.0], [0.5], [0.25]]))
    values = np.array([0.0, -0.5, -1.0]) * math.log(2)
    line = explorer.transfer_line([0, 1, 2], np.exp(-values), values)
    assert line == pytest.approx(values, abs=1e-12)


def test_transfer_line_is_flat_when_the_new_gpu_runs_against_the_others():
    """Values rising (0, ln2 / 2, ln2) where the other GPU falls: the slope clips to 0 and the line
    is the mean value, ln2 / 2, everywhere."""
    explorer = TransferGuided(np.zeros((3, 1)), np.array([[1.0], [0.5], [0.25]]))
    values = np.array([0.0, 0.5, 1.0]) * math.log(2)
    line = explorer.transfer_line([0, 1, 2], np.exp(-values), values)
    assert line == pytest.approx(np.full(3, 0.5 * math.log(2)), abs=1e-12)


def test_every_period_th_model_step_is_a_transfer_step():
    """With period 3 the steps after the portfolio go model, model, transfer, model, model, transfer."""
    transfer = np.array([[1.0]] + [[0.5]] * 9)  # one GPU: the first pick covers it
    explorer = TransferGuided(np.zeros((10, 1)), transfer, period=3)
    steps = []

    def model(measured, times):
        steps.append("model")
        return np.arange(10.0)

    def gain(measured, times):
        steps.append("transfer")
        return np.arange(10.0)

    explorer.model_improvement, explorer.transfer_improvement = model, gain
    order = run_search(explorer, np.linspace(1.0, 2.0, 10), budget=7, stop_at=None)
    assert order[0] == 0 and len(order) == 7
    assert steps == ["model", "model", "transfer", "model", "model", "transfer"]


def test_the_surrogate_sees_the_parameters_each_gpus_log_performance_and_their_median():
    """Columns, each scaled to [0, 1]: the parameter (0, 1, 2 -> 0, 0.5, 1), GPU A's log
    performance (0, ln 0.5, ln 0.25 -> 1, 0.5, 0), GPU B's (ln 0.5, 0, ln 0.5 -> 0, 1, 0), and
    the median of the two (ln 0.5 / 2, ln 0.5 / 2, 1.5 ln 0.5 -> 1, 1, 0)."""
    transfer = np.array([[1.0, 0.5], [0.5, 1.0], [0.25, 0.5]])
    explorer = TransferGuided(np.array([[0.0], [1.0], [2.0]]), transfer)
    np.testing.assert_allclose(explorer.features, [[0, 1, 0, 1], [0.5, 0.5, 1, 1], [1, 0, 0, 0]], atol=1e-12)


def test_static_model_orders_by_the_others_median_then_by_the_model():
    """Medians 0.9 (configuration 0) and 0.2 (2) where measured; 1 none measured takes the
    model's 0.5 (the mean of its 5 nearest training values 0.3 ... 0.7)."""
    from gpuperf.decisions.explorers import StaticModel

    train_x = np.arange(10.0)[:, None]
    explorer = StaticModel(np.array([[1.0], [5.0], [9.0]]), np.array([[0.9], [np.nan], [0.2]]),
                           [train_x], [train_x[:, 0] / 10], model="knn")
    assert explorer.order.tolist() == [0, 1, 2]
    tied = StaticModel(np.array([[1.0], [5.0], [9.0]]), np.full((3, 1), 0.5), [train_x], [train_x[:, 0] / 10],
                       model="knn")
    assert tied.order.tolist() == [2, 1, 0]  # equal medians: the larger prediction first


def test_online_search_takes_only_the_first_initial_picks_of_a_given_order():
    """A start order from worst to best: after its first 2 picks the model takes over and finds
    the best of 30 far sooner than the order (which reaches it last)."""
    x = np.arange(30.0)
    times = 1.0 + (x - 29.0) ** 2 / 100
    search = OnlineSearch(x[:, None], "gp", seed=0, initial=2, start=list(range(30)))
    assert search.start.tolist() == [0, 1]
    order = run_search(search, times, budget=30)
    assert order[:2] == [0, 1] and order[-1] == 29 and len(order) <= 10


def test_online_gp_keeps_its_length_scales_within_their_bounds_and_starts_with_5_random_picks():
    """The online Gaussian process's length scales stay in [0.05, 20] by default (a handful of points
    fitted by maximum likelihood otherwise lands at 0.01 or 100); it starts with 5 random picks, extra
    trees with 10."""
    from gpuperf.decisions.surrogates import Surrogate
    x = np.stack([np.arange(40.0) % 8, np.arange(40.0) // 8], axis=1) / 7
    values = -(((x[:, 0] - 0.6) ** 2) + 1e-3 * x[:, 1])
    for bounds in ((0.05, 20.0), (0.3, 0.4)):
        surrogate = Surrogate("gp", 0, bounds).fit(x[:6], values[:6])
        lengths = surrogate._model.kernel_.k1.k2.length_scale
        assert np.all((lengths >= bounds[0] - 1e-9) & (lengths <= bounds[1] + 1e-9))
    assert len(OnlineSearch(x, "gp").start) == 5 and len(OnlineSearch(x, "et").start) == 10
    assert OnlineSearch(x, "gp").length_bounds == (0.05, 20.0)


@pytest.mark.filterwarnings("ignore:All-NaN slice")
def test_online_search_keeps_sampling_distinct_configurations_while_every_one_fails():
    search = OnlineSearch(np.arange(8.0)[:, None], "gp", seed=0, initial=2)
    order = run_search(search, np.full(8, np.nan), budget=6)
    assert len(order) == 6 and len(set(order)) == 6


def test_expected_improvement_follows_the_closed_form():
    """EI = (m - b) Phi(z) + s phi(z), z = (m - b) / s, best b = 0: one spread (1) above it,
    Phi(1) + phi(1) = 1.0833; at it (spread 2), 2 / sqrt(2 pi); one spread (2) below it,
    2 (phi(1) - Phi(-1)) = 0.1666."""
    from gpuperf.decisions.surrogates import expected_improvement

    ei = expected_improvement(np.array([1.0, 0.0, -2.0]), np.array([1.0, 2.0, 2.0]), 0.0)
    assert ei == pytest.approx([1.0833154705876864, 2 / math.sqrt(2 * math.pi), 2 * 0.0833154705876864], rel=1e-9)


def test_expected_improvement_where_only_some_configurations_have_a_spread():
    """A configuration with no spread gains max(m - b, 0); the mean itself is returned only when no
    configuration has any spread."""
    from gpuperf.decisions.surrogates import expected_improvement

    ei = expected_improvement(np.array([0.0, 1.0, 0.5]), np.array([0.0, 0.0, 1.0]), 0.5)
    assert ei == pytest.approx([0.0, 0.5, 1 / math.sqrt(2 * math.pi)], abs=1e-9)
    assert expected_improvement(np.array([0.0, 1.0]), np.zeros(2), 0.5).tolist() == [0.0, 1.0]


def test_knn_surrogate_averages_the_five_nearest_in_standardised_features():
    """Training points (100 i, i % 2), values i, i = 0 .. 9. Standardised (column spreads 287 and
    0.5), the five nearest to (0, 1) are 1, 3, 5, 0, 2: mean 2.2 (raw distances would give 0 .. 4,
    mean 2); the spread is theirs too."""
    i = np.arange(10.0)
    surrogate = Surrogate("knn").fit(np.column_stack([100 * i, i % 2]), i)
    mean, spread = surrogate.predict(np.array([[0.0, 1.0]]))
    assert mean == pytest.approx([2.2]) and spread == pytest.approx([np.std([1, 3, 5, 0, 2])])


@pytest.mark.parametrize("model", ["gp", "et"])
def test_online_search_picks_alike_in_any_time_unit(model):
    """Models see -log(time): times in seconds or in microseconds give the same search."""
    space = grid_space((11, 5))
    features = parameter_features(space.configs, space.params)
    seconds = run_search(OnlineSearch(features, model, 0, initial=5), space.times, budget=12, stop_at=None)
    micro = run_search(OnlineSearch(features, model, 0, initial=5), space.times * 1e6, budget=12, stop_at=None)
    assert seconds == micro


def _bumpy_space(optimum: tuple[int, int], where: str) -> Space:
    space = grid_space(optimum, where)
    x, y = space.configs["x"].to_numpy(), space.configs["y"].to_numpy()
    return Space(space.params, space.configs, space.times * (1 + 0.3 * np.sin(1.7 * x) * np.cos(y)), where)


def _listed_backwards(space: Space) -> Space:
    params = space.params[::-1]
    return Space(params, space.configs[params], space.times, space.where)


@pytest.mark.parametrize("model, with_train", [("et", True), ("rf", True), ("gbt", True), ("et", False)])
def test_a_search_picks_alike_whatever_order_the_parameters_are_listed_in(model, with_train):
    target = _bumpy_space((11, 5), "target")
    train = [_bumpy_space(optimum, name) for optimum, name in [((2, 15), "a"), ((3, 14), "b"), ((2, 14), "c")]]
    budget = 40 if with_train else 20
    listed = run_search(make_explorer(target, train if with_train else (), model), target.times, budget, stop_at=None)
    backwards = run_search(make_explorer(_listed_backwards(target), [_listed_backwards(t) for t in train] if with_train
                                         else (), model), target.times, budget, stop_at=None)
    assert listed == backwards


@pytest.mark.parametrize("model, with_train", [("gp", False), ("et", False), ("et", True), ("rf", True)])
def test_the_next_pick_depends_on_what_was_measured_not_on_the_order_it_came_in(model, with_train):
    """Results told in another order (a table replayed row by row, an ask/tell run that measured a
    default configuration first) lead to the same next pick."""
    target = _bumpy_space((11, 5), "target")
    target.times[target.configs["x"].to_numpy() == 3] = np.nan  # a column of failures
    train = [_bumpy_space(optimum, name) for optimum, name in [((2, 15), "a"), ((3, 14), "b"), ((12, 4), "c")]]
    explorer = make_explorer(target, train if with_train else (), model, True, seed=1)
    order = run_search(explorer, target.times, 24, stop_at=None)
    shuffle = np.random.default_rng(0)
    for count in range(11, 24):
        seen = np.where(np.isin(np.arange(len(target)), order[:count]), target.times, np.nan)
        picks = {explorer.next(list(shuffle.permutation(order[:count])), seen) for _ in range(3)}
        assert picks == {order[count]}


def a_campaign_at_two_sizes(gpu: str = "Tesla V100 PCIe 32GB") -> pd.DataFrame:
    """A campaign export's shape: a kernel measured as itself (no parameters) beside its variants,
    at two sizes (n = 64 and 128, the larger 4x slower)."""
    plain = pd.DataFrame({"kernel": ["k"], "variant": [np.nan], "gpu": [gpu], "n": [64], "p": [np.nan],
                          "q": [np.nan], "time_ms": [0.5]})
    variants = [table().assign(kernel="k", gpu=gpu, n=n, time_ms=table()["time_ms"] * (n / 64) ** 2)
                for n in (64, 128)]
    rows = pd.concat([plain, *variants], ignore_index=True)
    rows["variant"] = rows["variant"].where(rows["p"].isna(), "p=" + rows["p"].astype("Int64").astype(str) + ",q="
                                            + rows["q"].astype("Int64").astype(str))
    return rows


def test_a_size_is_picked_with_p_and_a_kernel_measured_as_itself_is_left_out_with_a_note(tmp_path):
    from gpuperf.decisions.space import read_space

    a_campaign_at_two_sizes().to_csv(tmp_path / "export.csv", index=False)
    with pytest.raises(GpuperfError, match=r"line 7: configuration 1,8 appears twice \(its rows differ in n: .*-p n="):
        read_space(tmp_path / "export.csv", kernel="k")
    with pytest.warns(GpuperfNote, match=r"left out 1 row with none of the parameters \(first: line 2"):
        space = read_space(tmp_path / "export.csv", kernel="k", sizes={"n": 64})
    assert space.params == ["p", "q"] and list(space.times) == [1.0, 2.0, 3.0, 4.0]
    larger = read_space(tmp_path / "export.csv", kernel="k", sizes={"n": "128.0"})  # matched by value
    assert list(larger.times) == [4.0, 8.0, 12.0, 16.0] and larger.where.endswith("export.csv (k, n=128.0)")
    with pytest.raises(GpuperfError, match=r"no row has n=32 \(it holds 64, 128\)"):
        read_space(tmp_path / "export.csv", kernel="k", sizes={"n": 32})
    with pytest.raises(GpuperfError, match=r"no column m to pick -p m=1 by"):
        read_space(tmp_path / "export.csv", kernel="k", sizes={"m": 1})
    partial = table().astype({"q": float})
    partial.loc[2, "q"] = np.nan  # a row with some of the parameters is still an error
    with pytest.raises(GpuperfError, match=r"row 3: parameter q has no value"):
        space_from_frame(partial, ["p", "q"], "time_ms", "t.csv")


def test_training_tables_count_one_space_per_size_and_only_the_same_size_is_the_spaces_own(tmp_path):
    from gpuperf.decisions.space import read_space, read_training_spaces, same_kernel_and_gpu

    rows = pd.concat([a_campaign_at_two_sizes(), a_campaign_at_two_sizes("Tesla K20")], ignore_index=True)
    rows.to_csv(tmp_path / "export.csv", index=False)
    with pytest.warns(GpuperfNote):
        space = read_space(tmp_path / "export.csv", kernel="k", gpu="V100", sizes={"n": 64})
        others = read_training_spaces(tmp_path / "export.csv", ["p", "q"], size_columns=["n"])
    assert sorted(o.where.split("(")[-1] for o in others) == ["Tesla K20, n=128)", "Tesla K20, n=64)",
                                                              "Tesla V100 PCIe 32GB, n=128)", "Tesla V100 PCIe 32GB, n=64)"]
    own = [o.where for o in others if same_kernel_and_gpu(space, o, ["n"])]
    assert own == [o.where for o in others if "V100" in o.where and "n=64)" in o.where]
    assert sum(same_kernel_and_gpu(space, o) for o in others) == 2  # without the size, both V100 sizes look alike


def test_a_training_table_of_several_gpus_notes_its_rows_with_none_of_the_parameters_once(tmp_path):
    """A campaign export measured on three GPUs, each with the kernel measured as itself: one note
    for the table with the total and the first of them, not one per GPU."""
    import warnings

    from gpuperf.decisions.space import read_training_spaces

    rows = pd.concat([a_campaign_at_two_sizes(gpu) for gpu in ("Tesla V100 PCIe 32GB", "Tesla K20", "GTX 970")],
                     ignore_index=True)
    rows.to_csv(tmp_path / "export.csv", index=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        others = read_training_spaces(tmp_path / "export.csv", ["p", "q"], size_columns=["n"])
    notes = [str(w.message) for w in caught if "none of the parameters" in str(w.message)]
    assert notes == [f"{tmp_path / 'export.csv'}: left out 3 rows with none of the parameters (first: line 2; "
                     "the kernel measured as itself, not as a variant)"]
    assert len(others) == 6 and all(len(o) == 4 for o in others)


# -- what a batch assumes of the picks not run yet (next_batch's "believer" rule) ---------------


def test_online_search_believes_one_before_anything_ran_then_the_geometric_mean_then_its_surrogate():
    """The time a batch assumes of a pick not run yet: before anything ran, 1 (the search sees only
    ratios of times); during the start picks, the geometric mean of the times measured (1 and 4:
    2); after them, the refitted surrogate's, which gives the measured times back where it has them."""
    x = np.arange(30.0)
    times = 1.0 + (x - 20.0) ** 2 / 100
    search = OnlineSearch(x[:, None], "gp", seed=0, initial=3)
    nothing = np.full(30, np.nan)
    assert search.believed_time([], nothing, 5) == 1.0
    two = nothing.copy()
    two[[4, 9]] = [1.0, 4.0]
    assert search.believed_time([9, 4], two, 5) == pytest.approx(2.0)
    two[[4, 9]] = [2.0, 8.0]  # the fastest is not 1: the mean is of times, not of ratios to the fastest
    assert search.believed_time([9, 4], two, 5) == pytest.approx(4.0)
    measured = [2, 10, 25]
    seen = np.where(np.isin(np.arange(30), measured), times, np.nan)
    assert [search.believed_time(measured, seen, i) for i in measured] == pytest.approx(times[measured], rel=1e-3)


def test_transfer_guided_believes_the_other_gpus_then_their_line_through_the_measurements_then_its_model():
    """Before anything ran the new GPU is believed to run as the other GPU does (in relative terms:
    its unit is unknown); after one measurement the other GPU's times are shifted onto it, so a GPU
    exactly 3 times slower is believed at its true times; from two measurements on, the refitted
    model's, which gives the measured times back where the shifted line alone does not."""
    other = grid_space((8, 4), "other", scale=2.0)
    slower = Space(other.params, other.configs, 3 * other.times, "slower")
    explorer = make_explorer(slower, [other], None, True)
    nothing = np.full(len(other), np.nan)
    ratio = explorer.believed_time([], nothing, 0) / explorer.believed_time([], nothing, 50)
    assert ratio == pytest.approx(other.times[0] / other.times[50])
    one = nothing.copy()
    one[10] = slower.times[10]
    assert [explorer.believed_time([10], one, i) for i in (0, 50, 200)] == pytest.approx(slower.times[[0, 50, 200]])

    x = other.configs["x"].to_numpy()
    bumpy = Space(other.params, other.configs, other.times * (1 + 0.3 * np.sin(x)), "bumpy")
    explorer = make_explorer(bumpy, [other], None, True)
    measured = [3, 40, 77, 100]
    seen = np.where(np.isin(np.arange(len(other)), measured), bumpy.times, np.nan)
    assert [explorer.believed_time(measured, seen, i) for i in measured] == pytest.approx(bumpy.times[measured])


def test_the_model_step_scores_the_expected_improvement_over_the_best_measured():
    """After the portfolio, a model step scores each configuration by the refitted model's expected
    improvement over the best time measured so far; below two measurements there is no model."""
    from gpuperf.decisions.surrogates import expected_improvement

    other = grid_space((8, 4), "other", scale=2.0)
    x = other.configs["x"].to_numpy()
    bumpy = Space(other.params, other.configs, other.times * (1 + 0.3 * np.sin(x)), "bumpy")
    explorer = make_explorer(bumpy, [other], None, True)
    measured = [3, 40, 77, 100]
    seen = np.where(np.isin(np.arange(len(other)), measured), bumpy.times, np.nan)
    mean, spread = explorer.model_prediction(measured, seen)
    best = 0.0  # the models see -log(time / the fastest measured time): the fastest is 0
    assert explorer.model_improvement(measured, seen) == pytest.approx(expected_improvement(mean, spread, best))
    assert explorer.model_prediction([3], np.where(np.arange(len(other)) == 3, bumpy.times, np.nan)) is None


def test_explore_leaves_the_space_itself_out_of_its_training_spaces():
    """explore() from Python learned from the very times it was scored on when the space was among
    the training spaces (its own GPU, or its times under another name), as the command line never
    did: now both are left out with a note, and the search is the one without them."""
    from dataclasses import replace

    target = replace(grid_space((11, 5), "target.csv"), gpu="Tesla K20")
    others = [replace(grid_space((2, 15), name), gpu=gpu) for name, gpu in (("a", "V100"), ("b", "P100"))]
    same_gpu = replace(target, where="k20.csv", times=target.times * 1.5)
    renamed = replace(target, where="cache.json", gpu=None)
    with pytest.warns(GpuperfNote) as notes:
        result = explore(target, [*others, same_gpu, renamed], budget=60, random_seeds=5)
    said = [str(note.message) for note in notes]
    assert any("k20.csv is the space's own kernel and GPU (Tesla K20); left out" in s for s in said)
    assert any("cache.json holds the space's own times" in s for s in said)
    assert result.order == explore(target, others, budget=60, random_seeds=5).order
    assert result.evals(0.9) > 1  # with its own times it would pick the best first
    with pytest.raises(GpuperfError, match="every table is the space's own kernel and GPU"):
        explore(target, [same_gpu], budget=10)


def test_training_spaces_split_by_gpu_label_only_where_two_campaigns_share_a_gpu():
    """Grouping by gpu_label dropped the rows without a label (a user's own GPU beside a hub export)
    and named every space by its label too; now a row without a label is a space of its own, and the
    label splits (and names) only a GPU that two campaigns measured."""
    from gpuperf.decisions.space import training_spaces_from_frame

    rows = [{"kernel": "k", "gpu": gpu, "gpu_label": label, "bx": bx, "time_s": bx * 1e-3}
            for gpu, label in (("A100 PCIe 40GB", "A100"), ("RTX A4000", "A4000"), ("Tesla V100", None))
            for bx in range(1, 6)]
    frame = pd.DataFrame(rows)
    names = [s.where for s in training_spaces_from_frame(frame, ["bx"], "time_s", "t.csv")]
    assert names == ["t.csv (A100 PCIe 40GB)", "t.csv (RTX A4000)", "t.csv (Tesla V100)"]
    second = frame[frame["gpu"] == "RTX A4000"].assign(gpu_label="a4000", time_s=lambda f: f["time_s"] * 2)
    names = [s.where for s in training_spaces_from_frame(pd.concat([frame, second]), ["bx"], "time_s", "t.csv")]
    assert names == ["t.csv (A100 PCIe 40GB, A100)", "t.csv (RTX A4000, A4000)", "t.csv (RTX A4000, a4000)",
                     "t.csv (Tesla V100)"]


@pytest.mark.parametrize("written", ["nan", "NA", "N/A"])
def test_a_training_tables_time_written_as_nan_is_refused_as_in_the_space(tmp_path, written):
    """pandas reads nan and NA as missing: the row passed for a configuration not measured yet."""
    from gpuperf.decisions.space import read_training_spaces

    path = tmp_path / "train.csv"
    path.write_text(f"block_size_x,tile,time_ms\n16,1,1.0\n16,2,{written}\n32,1,1.5\n32,2,0.7\n")
    with pytest.raises(GpuperfError, match=rf"train.csv: line 3: time_ms='{written}' is not a positive number"):
        read_training_spaces(path, ["block_size_x", "tile"])
    path.write_text("block_size_x,tile,time_ms\n16,1,1.0\n16,2,\n32,1,1.5\n32,2,0.7\n")  # empty: not run yet
    with pytest.warns(GpuperfNote, match="not measured yet"):
        assert len(read_training_spaces(path, ["block_size_x", "tile"])[0].performance) == 3


def test_the_summary_reports_each_fraction_and_the_best_time_the_search_found():
    from gpuperf.decisions.exploration import ExploreResult, result_summary

    space = Space(["x"], pd.DataFrame({"x": [1, 2, 3, 4]}), np.array([1 / 0.9, 1 / 0.96, 1.0, 2.0]), "toy")
    summary = result_summary(space, ExploreResult([0, 1, 2], space.performance, "search", budget=3))
    assert (summary["evals_to_90"], summary["evals_to_95"], summary["evals_to_99"]) == (1, 2, 3)
    stopped = result_summary(space, ExploreResult([3, 1], space.performance, "search", budget=2))
    assert stopped["best_time"] == 1.0 and stopped["best_found_time"] == pytest.approx(1 / 0.96)


def test_plain_transfer_ranks_by_the_mean_over_the_other_gpus():
    from gpuperf.decisions.explorers import PlainTransfer

    # Means 2/3 and 0.9 (medians 1 and 0.9): the steady configuration first.
    assert PlainTransfer(np.array([[1.0, 1.0, 0.0], [0.9, 0.9, 0.9]])).order.tolist() == [1, 0]


def test_random_order_baselines_are_the_mean_over_seeds_and_the_exact_quantiles():
    """One good configuration in 20: random order finds it within k evaluations with probability
    k / 20, so its 10th and 90th percentiles are 2 and 18 evaluations."""
    space = Space(["x"], pd.DataFrame({"x": np.arange(1, 21)}), np.r_[1.0, np.full(19, 3.0)], "toy20")
    result = explore(space, model="knn", budget=3)
    positions = [int(np.flatnonzero(np.random.default_rng(seed).permutation(20) == 0)[0]) + 1 for seed in range(100)]
    assert result.baselines["random_evals_to_90"] == pytest.approx(np.mean(positions))
    assert result.baselines["random_evals_to_90_p10"] == 2 and result.baselines["random_evals_to_90_p90"] == 18


def test_the_search_metrics_refuse_a_percentage_and_raw_times():
    """random_expected_evals([0.1, 0.5, 1.0], 90) said 4 evaluations for a space of 3; raw seconds
    (all below 0.9) were read as a space where nothing is good."""
    from gpuperf.decisions.search_metrics import evals_to, random_expected_evals

    for fraction in (90, 0, -0.5, "0.9"):
        with pytest.raises(GpuperfError, match="above 0 and at most 1"):
            random_expected_evals([0.1, 0.5, 1.0], fraction)
    with pytest.raises(GpuperfError, match="performance holds 2.5: give normalised performance"):
        evals_to([0.001, 2.5], 0.9)
    assert random_expected_evals([0.1, 0.5, 1.0], 0.9) == 2.0 and evals_to([0.1, 0.5, 1.0], 0.5) == 2


@pytest.mark.parametrize("with_train", [False, True])
def test_a_batch_fits_its_surrogate_once_per_pick_and_not_for_the_last_picks_belief(monkeypatch, with_train):
    """ask fitted the surrogate twice per pick (the pick, then the time believed of it, on the same
    data) and once more for the last pick, whose belief nothing uses: a batch of 3 took 6 fits."""
    from gpuperf.decisions import explorers
    from gpuperf.decisions.explorers import next_batch

    space = grid_space((8, 4), "here")
    train = [grid_space((8, 4), "other", scale=2.0)] if with_train else []
    options = {"hit_spread": 0} if with_train else None  # no hit picks, which fit nothing: every pick here is the model's
    explorer = make_explorer(space, train, None, True, 0, 2, options=options)
    fits = []
    original = explorers.Surrogate.fit
    monkeypatch.setattr(explorers.Surrogate, "fit", lambda self, X, y: fits.append(len(y)) or original(self, X, y))
    measured = [0, 7, 50]
    seen = np.where(np.isin(np.arange(len(space)), measured), space.times, np.nan)
    picks = next_batch(explorer, measured, seen, 3)
    assert len(set(picks)) == 3 and fits == [3, 4, 5]


def test_the_kept_fit_is_not_reused_for_the_same_rows_at_other_times():
    space = grid_space((8, 4), "here")
    measured = [0, 7, 50, 90]
    one = np.where(np.isin(np.arange(len(space)), measured), space.times, np.nan)
    other = np.where(np.isin(np.arange(len(space)), measured), space.times[::-1], np.nan)
    for train in ([], [grid_space((8, 4), "other", scale=2.0)]):
        explorer = make_explorer(space, train, None, True, 0, 2)
        explorer.next(measured, one)
        assert explorer.next(measured, other) == make_explorer(space, train, None, True, 0, 2).next(measured, other)


def two_gpus_table(repeat_on_p100: bool, extra: dict | None = None) -> pd.DataFrame:
    """Six configurations of (a, b) measured on a K20 and a P100, the P100's first row twice where asked."""
    configs = pd.DataFrame(list(itertools.product([1, 2, 4], ["x", "y"])), columns=["a", "b"])
    k20 = configs.assign(time_ms=[1.0, 2, 3, 4, 5, 6], gpu="K20")
    p100 = configs.assign(time_ms=[6.0, 5, 4, 3, 2, 1], gpu="P100", **(extra or {}))
    if repeat_on_p100:
        p100 = pd.concat([p100, p100.iloc[[0]].assign(time_ms=6.5)])
    return pd.concat([k20, p100], ignore_index=True)


def test_a_training_table_repeating_one_gpus_configuration_is_refused_not_trained_without_that_gpu(tmp_path):
    """A GPU whose rows repeated a configuration was taken for another kernel's space and silently left out."""
    from gpuperf.decisions.space import read_training_spaces

    two_gpus_table(repeat_on_p100=True).to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(GpuperfError, match=r"t\.csv \(Tesla P100[^)]*\): line 14: configuration 1,x appears twice"):
        read_training_spaces(tmp_path / "t.csv", ["a", "b"], "time_ms")
    two_gpus_table(repeat_on_p100=False).to_csv(tmp_path / "t.csv", index=False)
    assert len(read_training_spaces(tmp_path / "t.csv", ["a", "b"], "time_ms")) == 2


def test_a_training_group_tuned_over_more_parameters_is_left_out_with_a_note_naming_it(tmp_path):
    from gpuperf.decisions.space import read_training_spaces

    table = two_gpus_table(repeat_on_p100=True)
    table["c"] = np.where(table.index == len(table) - 1, 2, 1)  # the P100's repeat differs in c: another space
    table.to_csv(tmp_path / "t.csv", index=False)
    with pytest.warns(GpuperfNote, match=r"t\.csv: left out 1 group\(s\) whose configurations repeat.*: Tesla P100"):
        spaces = read_training_spaces(tmp_path / "t.csv", ["a", "b"], "time_ms")
    assert [space.gpu for space in spaces] == ["Tesla K20"]
    table.assign(a=np.where(table["gpu"] == "P100", np.nan, table["a"])).to_csv(tmp_path / "u.csv", index=False)
    with pytest.warns(GpuperfNote, match=r"u\.csv: left out 1 group\(s\) without the parameters a, b: Tesla P100"):
        assert len(read_training_spaces(tmp_path / "u.csv", ["a", "b"], "time_ms")) == 1


def test_a_repeat_in_a_training_table_whose_time_is_named_runtime_is_refused_not_left_out(tmp_path):
    """A target not spelt time* nor *_s differs between the repeated rows too: that is what was
    measured, not another parameter, so the repeat is an error as with time_ms."""
    from gpuperf.decisions.space import read_training_spaces

    two_gpus_table(repeat_on_p100=True).rename(columns={"time_ms": "runtime"}).to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(GpuperfError, match=r"t\.csv \(Tesla P100[^)]*\): line 14: configuration 1,x appears twice"):
        read_training_spaces(tmp_path / "t.csv", ["a", "b"], "runtime")


def test_the_note_on_training_groups_left_out_names_four_and_counts_the_rest():
    from gpuperf.decisions.space import training_spaces_from_frame

    kernels = ["a", "b", "c", "d", "e", "f", "g"]
    frame = pd.DataFrame({"kernel": np.repeat(kernels, 2), "p": [1, 2] + [np.nan] * 12, "q": [0, 0] + [1, 2] * 6,
                          "time_ms": np.arange(1.0, 15.0)})
    note = r"t\.csv: left out 6 group\(s\) without the parameters p: b; c; d; e; and 2 more$"
    with pytest.warns(GpuperfNote, match=note):
        spaces = training_spaces_from_frame(frame, ["p"], where="t.csv")
    assert [s.where for s in spaces] == ["t.csv (a)"]

def test_the_guided_search_is_the_same_whatever_order_the_training_spaces_come_in():
    """The other GPUs' columns entered the extra-trees features in the order of the --train file names, so
    the same tables renamed gave other predictions and other figures."""
    configs = pd.DataFrame(list(itertools.product(range(6), range(6), range(4))), columns=["x", "y", "z"])
    rng = np.random.default_rng(3)

    def measured(gpu: str | None, scale: float) -> Space:
        times = 1 + (configs["x"] - 5 * scale) ** 2 + scale * (configs["y"] - 2) ** 2 + configs["z"] * scale
        return Space(["x", "y", "z"], configs, (times * rng.uniform(0.8, 1.2, len(configs))).to_numpy(),
                     f"{gpu}.csv", gpu=gpu)

    space = measured("V100", 0.5)
    train = [measured("K20", 0.1), measured("P100", 0.9), measured("RTX 2070 Super", 0.3), measured(None, 0.7)]
    picked = list(np.random.default_rng(0).permutation(len(configs))[:15])
    first, second = (make_explorer(space, [train[i] for i in order]) for order in ([0, 1, 2, 3], [3, 2, 0, 1]))
    predicted = [explorer.model_prediction(picked, space.times)[0] for explorer in (first, second)]
    assert np.array_equal(*predicted)
    assert first.next(picked, space.times) == second.next(picked, space.times)


GUIDE_CONFIGS = pd.DataFrame(list(itertools.product(range(6), range(6), range(4))), columns=["x", "y", "z"])


def _guide(gpu: str | None, scale: float, where: str | None = None) -> Space:
    """A space over GUIDE_CONFIGS whose times follow ``scale``, measured on ``gpu``."""
    c = GUIDE_CONFIGS
    times = 1 + (c["x"] - 5 * scale) ** 2 + scale * (c["y"] - 2) ** 2 + c["z"] * scale + 0.01 * (np.arange(len(c)) % 7)
    return Space(["x", "y", "z"], c, times.to_numpy(), where or f"{gpu}.csv", gpu=gpu)


def _predictions_alike(space: Space, first: list[Space], second: list[Space]) -> None:
    picked = list(np.random.default_rng(0).permutation(len(space))[:15])
    explorers = [make_explorer(space, train) for train in (first, second)]
    predicted = [explorer.model_prediction(picked, space.times)[0] for explorer in explorers]
    assert np.array_equal(*predicted)
    assert explorers[0].next(picked, space.times) == explorers[1].next(picked, space.times)


def test_the_guided_search_is_the_same_whichever_way_a_training_gpu_is_spelt():
    """K20 sorts before P100 but Tesla K20 after it: ordered by the names as written, the same
    tables gave the extra-trees their columns in another order and other predictions."""
    space = _guide("V100", 0.5)
    short = [_guide("P100", 0.9), _guide("K20", 0.1)]
    full = [_guide("Tesla K20", 0.1, "K20.csv"), _guide("P100", 0.9)]
    _predictions_alike(space, short, full)


def test_the_guided_search_of_unnamed_gpus_goes_by_their_times_not_their_file_names():
    """Two tables of no named GPU, of one length: ordered by their times, so swapping their file
    names changes nothing."""
    space = _guide("V100", 0.5)
    slow, fast = _guide(None, 0.9), _guide(None, 0.1)
    assert slow.times.sum() > fast.times.sum()
    named = [Space(t.params, t.configs, t.times, where, gpu=None) for t, where in ((slow, "a.csv"), (fast, "b.csv"))]
    swapped = [Space(t.params, t.configs, t.times, where, gpu=None) for t, where in ((slow, "b.csv"), (fast, "a.csv"))]
    _predictions_alike(space, named, swapped)


def test_plain_transfers_order_is_the_same_whatever_order_the_training_spaces_come_in():
    """The means over the other GPUs were summed in the tables' order: 0.1 + 0.2 + 0.3 and
    0.3 + 0.2 + 0.1 differ in the last bit, so reversing the tables swapped two configurations."""
    configs = pd.DataFrame({"x": [0, 1, 2]})

    def measured(gpu: str, performance: list[float]) -> Space:
        return Space(["x"], configs, 1.0 / np.array(performance), f"{gpu}.csv", gpu=gpu)

    train = [measured("K20", [0.1, 0.3, 1.0]), measured("P100", [0.2, 0.2, 1.0]), measured("V100", [0.3, 0.1, 1.0])]
    space = measured("RTX 2070 Super", [1.0, 0.5, 0.1])
    assert plain_transfer_order(space, train) == plain_transfer_order(space, train[::-1])


def test_the_online_search_fits_every_surrogate_within_its_length_bounds(monkeypatch):
    """``length_bounds`` reach each refitted Gaussian process, not only the explorer's attribute."""
    from gpuperf.decisions import explorers

    bounds_seen = []

    def recording(model, seed, length_bounds=None):
        bounds_seen.append(length_bounds)
        return Surrogate(model, seed, length_bounds)

    monkeypatch.setattr(explorers, "Surrogate", recording)
    x = np.arange(12.0)
    run_search(OnlineSearch(x[:, None], "gp", initial=2, length_bounds=(0.3, 0.4)), 1.0 + (x - 7.0) ** 2, budget=5,
               stop_at=None)
    assert len(bounds_seen) == 3 and all(tuple(b) == (0.3, 0.4) for b in bounds_seen)


def test_make_explorer_passes_its_options_to_either_search():
    space = grid_space((8, 4), "here")
    online = make_explorer(space, [], options={"length_bounds": (0.3, 0.4)})
    assert isinstance(online, OnlineSearch) and online.length_bounds == (0.3, 0.4)
    guided = make_explorer(space, [grid_space((8, 4), "other", scale=2.0)], options={"best_picks": 0, "slice_picks": 3})
    assert isinstance(guided, TransferGuided) and (guided.best_picks, guided.slice_picks) == (0, 3)


def _three_own_bests(prior=None) -> TransferGuided:
    """Configuration 0 covers the three GPUs; 1, 2 and 3 are their own bests (means 0.67, 0.73, 0.7);
    a huge sigma keeps the weights at the prior."""
    transfer = np.array([[0.96, 0.96, 0.96], [1.0, 0.5, 0.5], [0.6, 1.0, 0.6], [0.55, 0.55, 1.0], [0.5, 0.5, 0.5]])
    return TransferGuided(np.zeros((5, 1)), transfer, prior=prior, sigma=1e6, slice_picks=0)


def test_own_best_picks_go_to_the_heaviest_gpus_first_and_ties_to_the_larger_mean():
    explorer = _three_own_bests(np.array([0.2, 0.5, 0.3]))
    assert explorer.own_best.tolist() == [1, 2, 3]
    order = run_search(explorer, np.array([1.0, 2.0, 3.0, 4.0, 5.0]), budget=3, stop_at=None)
    assert order == [0, 2, 3]  # GPU 1 (prior 0.5), then GPU 2 (0.3); GPU 0 (0.2) last
    tied = _three_own_bests()  # equal priors: the own best of the larger mean over the GPUs, 2 (0.73)
    assert tied.own_best_pick([0], np.array([1.0, np.nan, np.nan, np.nan, np.nan])) == 2


def test_a_gpus_own_best_among_tied_maxima_is_the_one_of_the_larger_mean():
    """GPU 0 peaks at 1 and at 3; 3 is faster on GPU 1 too."""
    transfer = np.array([[0.5, 0.5], [1.0, 0.2], [0.5, 1.0], [1.0, 0.6]])
    assert TransferGuided(np.zeros((4, 1)), transfer).own_best.tolist() == [3, 2]


def _with_an_unmeasured_gpu(period: int = 0) -> TransferGuided:
    """Configuration 0 covers GPUs 0 and 1 and is GPU 1's own best; 1 is GPU 0's. GPU 2 measured
    nothing: its "own best" is 3, the largest mean (0.99, measured on GPU 1 alone). No hit picks
    (3, GPU 1's 0.99, would be one after 0 and 1): the steps after the own bests are the model's."""
    transfer = np.full((10, 3), np.nan)
    transfer[:, :2] = 0.5
    transfer[0, :2], transfer[1, :2], transfer[3, 1] = [0.96, 1.0], [1.0, 0.5], 0.99
    transfer[3, 0] = np.nan
    return TransferGuided(np.zeros((10, 1)), transfer, period=period, hit_spread=0)


def test_own_best_picks_skip_a_gpu_that_measured_nothing():
    explorer = _with_an_unmeasured_gpu()
    assert explorer.own_best.tolist() == [1, 0, 3] and explorer.coverable.tolist() == [True, True, False]
    times = np.linspace(1.0, 2.0, 10)
    order = run_search(explorer, times, budget=2, stop_at=None)
    assert order == [0, 1] and explorer.own_best_pick(order, times) is None
    assert explorer.own_best_steps(order) == 1 and explorer.own_best_steps([0, 1, 3, 4]) == 1


def test_the_period_counts_model_steps_from_after_the_own_best_picks():
    """One own-best pick (1) after the covering first pick (0): the model steps start at the third
    pick and every third is a transfer step, whether or not a GPU measured nothing."""
    explorer = _with_an_unmeasured_gpu(period=3)
    steps = []

    def step(kind):
        def scores(measured, times):
            steps.append(kind)
            return np.arange(10.0)
        return scores

    explorer.model_improvement, explorer.transfer_improvement = step("model"), step("transfer")
    order = run_search(explorer, np.linspace(1.0, 2.0, 10), budget=8, stop_at=None)
    assert order[:2] == [0, 1]
    assert steps == ["model", "model", "transfer", "model", "model", "transfer"]


def test_a_cache_of_the_same_gpu_whose_size_is_spelled_as_a_list_is_the_spaces_own(tmp_path):
    """Kernel Tuner takes a problem_size of 100000 and [100000] for one size: a training cache of the
    space's own GPU and kernel spelling it [100000] was learnt from, its times leaking the answer."""
    import json

    from gpuperf.decisions.exploration import measured_elsewhere
    from gpuperf.decisions.space import read_space, read_training_spaces, same_kernel_and_gpu, size_text

    assert size_text("[100000]") == size_text(100000) == size_text((100000,)) == "100000"
    assert size_text("[64, 64]") == key_text((64, 64)) != size_text(64)

    def cache(name: str, size: object, slow: float) -> Path:
        entries = {f"{x}": {"block_size_x": x, "time": slow * (1 + abs(x - 128) / 64)} for x in (32, 64, 128, 256)}
        path = tmp_path / name
        path.write_text(json.dumps({"device_name": "NVIDIA A100-PCIE-40GB", "kernel_name": "k", "problem_size": size,
                                    "tune_params_keys": ["block_size_x"], "objective": "time", "cache": entries}))
        return path

    space = read_space(cache("a.json", 100000, 1.0))
    listed = read_training_spaces(cache("b.json", [100000], 1.02), ["block_size_x"])[0]
    other_size = read_training_spaces(cache("c.json", [200000], 1.02), ["block_size_x"])[0]
    assert same_kernel_and_gpu(space, listed) and not same_kernel_and_gpu(space, other_size)
    with pytest.warns(GpuperfNote, match="b.json is the space's own kernel and GPU"):
        assert measured_elsewhere(space, [listed, other_size]) == [other_size]


def test_a_repeated_configuration_is_named_as_the_cache_spells_it(tmp_path):
    """A training cache tuned over one parameter more than the space repeats each configuration: the
    error spelt it 32,1,\"\"\"a\"\"\" (True as 1, a quoted text quoted again) and blamed --params, which
    no one gave (the space's cache named the parameters)."""
    import json

    from gpuperf.decisions.space import read_training_spaces

    entries = {}
    for i, (bs, extra) in enumerate((bs, extra) for bs in (32, 64) for extra in (0, 1)):
        entries[f'{bs},0.5,True,"a",{extra}'] = {"bs": bs, "scale": 0.5, "flag": True, "mode": '"a"', "extra": extra,
                                                 "time": 1.0 + i}
    (tmp_path / "wide.json").write_text(json.dumps({
        "device_name": "NVIDIA Tesla T4", "kernel_name": "k", "problem_size": 1000, "objective": "time",
        "tune_params_keys": ["bs", "scale", "flag", "mode", "extra"], "cache": entries}))
    with pytest.raises(GpuperfError) as error:
        read_training_spaces(tmp_path / "wide.json", ["bs", "scale", "flag", "mode"])
    assert str(error.value).startswith(f'{tmp_path / "wide.json"}: entry 2: configuration 32,0.5,True,"a" appears '
                                       "twice (its rows differ in extra: a parameter not among those searched (named "
                                       "by --params, a cache's tune_params_keys or a table's variant labels)")


def test_two_spellings_of_one_value_name_the_entry_they_repeat(tmp_path):
    """Kernel Tuner tunes the texts "1" and "01" as two settings; gpuperf matches by value, so they are one,
    and the error named only "32,1 appears twice" at the entry keyed 32,01."""
    import json

    from gpuperf.decisions.space import read_space

    entries = {f"{bs},{unroll}": {"bs": bs, "unroll": unroll, "time": 1.0 + i}
               for i, (bs, unroll) in enumerate((bs, u) for bs in (32, 64) for u in ("1", "01"))}
    (tmp_path / "s.json").write_text(json.dumps({
        "device_name": "NVIDIA Tesla T4", "kernel_name": "k", "problem_size": 1000, "objective": "time",
        "tune_params_keys": ["bs", "unroll"], "cache": entries}))
    with pytest.raises(GpuperfError, match=r"s\.json: entry 2: configuration 32,01 appears twice \(as entry 1's 32,1: "
                                           r"configurations match by value, so 1, 01 and 1\.0 are one setting\)$"):
        read_space(tmp_path / "s.json")


def test_transfer_guided_hit_picks_go_back_to_gpus_a_pick_only_just_covered():
    """Other GPUs A and B (weight 0.4 each) and C (0.2). The first pick covers A and B at exactly 95 %, so the
    covering portfolio turns to C's best next; but a 95 % there is even odds of 95 % on a new GPU like A or B, and
    configuration 1 (A's best, B's 90 %) is the likelier hit: 0.4 * 0.5 * (0.85 + 0.14) against C's best (or B's),
    0.2 * 0.85."""
    transfer = np.array([[0.95, 0.95, 0.0], [1.0, 0.9, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    options = {"best_picks": 0, "slice_picks": 0, "prior": np.array([0.4, 0.4, 0.2])}
    times = np.array([1.0, np.nan, np.nan, np.nan])
    covering = TransferGuided(np.zeros((4, 1)), transfer, hit_spread=0, **options)
    assert covering.next([], np.full(4, np.nan)) == 0 and covering.hit_scores([0], times) is None
    assert covering.next([0], times) == 2
    explorer = TransferGuided(np.zeros((4, 1)), transfer, **options)
    assert explorer.next([], np.full(4, np.nan)) == 0
    assert explorer.hit_scores([0], times) == pytest.approx([0.0, 0.2 * (0.8475 + 0.1398), 0.2 * 0.8475, 0.2 * 0.8475],
                                                            abs=1e-3)  # the measured 0 scores nothing
    assert explorer.next([0], times) == 1


def test_transfer_guided_hit_picks_end_once_no_configuration_is_likely_a_hit():
    """One other GPU: its best (a hit with chance 0.85) leaves 0.15 of its weight, and its runner-up (0.97: a hit
    with chance 0.66) scores 0.15 * 0.66 = 0.1, so it is next; after both, 0.15 * 0.34 = 0.05 is left and the 0.91
    (chance 0.19) scores 0.01, below HIT_CHANCE: no more hit picks, the model takes over."""
    transfer = np.array([[1.0], [0.97], [0.5], [0.91]])
    explorer = TransferGuided(np.zeros((4, 1)), transfer, best_picks=0, slice_picks=0)
    assert explorer.next([], np.full(4, np.nan)) == 0
    assert explorer.hit_scores([0], np.array([1.0, np.nan, np.nan, np.nan])) == pytest.approx(
        [0.0, 0.1525 * 0.6615, 0.0, 0.1525 * 0.1948], abs=1e-3)
    assert explorer.next([0], np.array([1.0, np.nan, np.nan, np.nan])) == 1
    assert explorer.hit_scores([0, 1], np.array([1.0, 1.03, np.nan, np.nan])) is None


def test_transfer_guided_hit_picks_end_where_one_gpu_outweighs_every_configuration_but_its_best():
    """One other GPU whose every configuration but its best is at half of it: the best leaves 0.15 of its weight,
    but no other configuration is a likely hit, so the picks after it are the model's (no endless hit picks)."""
    transfer = np.array([[1.0]] + [[0.5]] * 5)
    explorer = TransferGuided(np.arange(6.0)[:, None], transfer, best_picks=0, slice_picks=0)
    assert explorer.hit_scores([0], np.array([1.0] + [np.nan] * 5)) is None


def test_size_columns_given_as_one_string_are_refused_not_read_letter_by_letter(tmp_path):
    from gpuperf.decisions.exploration import explore
    from gpuperf.decisions.space import read_space, read_training_spaces

    rows = pd.concat([a_campaign_at_two_sizes(), a_campaign_at_two_sizes("Tesla K20")], ignore_index=True)
    rows = rows.rename(columns={"n": "size"})
    rows.to_csv(tmp_path / "export.csv", index=False)
    message = r"size_columns lists column names, e\.g\. \['size'\], not the string 'size'"
    with pytest.raises(GpuperfError, match=message):
        read_training_spaces(tmp_path / "export.csv", ["p", "q"], size_columns="size")
    with pytest.warns(GpuperfNote):
        space = read_space(tmp_path / "export.csv", kernel="k", gpu="V100", sizes={"size": 64})
        others = read_training_spaces(tmp_path / "export.csv", ["p", "q"], size_columns=["size"])
    with pytest.raises(GpuperfError, match=message):
        explore(space, others, size_columns="size")


def test_a_search_checks_a_repeated_pick_without_comparing_it_with_every_earlier_pick(counting_int):
    """Plain transfer's order runs over the whole space until the best; run_search's check for a
    repeated pick searched a list, so a 100,000-configuration space with --train spent 90 s there.
    Counted in comparisons, not seconds: a list's check makes one per earlier pick."""
    class Backwards:
        def next(self, measured, times):
            return counting_int(len(times) - 1 - len(measured))

    times = np.linspace(1.0, 2.0, 2_000)
    order = run_search(Backwards(), times, budget=len(times))
    assert len(order) == len(times) and order[-1] == 0
    assert counting_int.comparisons < len(times)  # a list's check: about 2,000,000


def test_read_space_refuses_one_string_for_params_as_space_from_frame_does(tmp_path):
    """params="tile" would read as the parameters t, i, l and e ("parameter e is named twice")."""
    path = tmp_path / "space.csv"
    pd.DataFrame({"tile": [1, 2], "time_s": [1.0, 2.0]}).to_csv(path, index=False)
    with pytest.raises(GpuperfError, match=r"space\.csv: params lists column names, e\.g\. \['tile'\], not the string"):
        read_space(path, params="tile")
    assert read_space(path, params=["tile"]).params == ["tile"]
