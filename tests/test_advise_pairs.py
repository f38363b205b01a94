"""Training pairs: only the optimization differs between before and after, speedup = before / after."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuperf.datasets import load_dataset
from gpuperf.decisions.optimizations import PairSpec, load_entry
from gpuperf.datasets.schema import texts_by_value
from gpuperf.decisions.pairs import GPU_TARGET, number_text, build_spec_pairs
from gpuperf.errors import GpuperfError

ENTRY = '''
name = "{name}"
title = "t"
description = "d"
when_it_helps = "w"
[example]
before = "b"
after = "a"
[apply]
kind = "loopy"
summary = "s"
[[pairs]]
{pairs}
'''


def entry(tmp_path: Path, pairs: str, name: str = "trick"):
    path = tmp_path / f"{name}.toml"
    path.write_text(ENTRY.format(name=name, pairs=pairs))
    return load_entry(path)


def synthetic(tmp_path: Path) -> Path:
    """Two configurations (a=1, a=2) x flag 0/1 at n=64 and 128 on one GPU; a=2,flag=1 missing at
    n=128; a=1,flag=0,n=64 measured three times."""
    rows = []
    times = {(64, 1, 0): [4.0, 6.0, 5.0], (64, 1, 1): [2.0], (64, 2, 0): [3.0], (64, 2, 1): [6.0],
             (128, 1, 0): [8.0], (128, 1, 1): [2.0], (128, 2, 0): [9.0]}
    for (n, a, flag), values in times.items():
        for t in values:
            rows.append({"kernel": "k", "variant": f"a={a},flag={flag}", "gpu": "Tesla K40", "device": "Tesla K40c",
                         "source": "test", "n": n, "a": a, "flag": flag, "time_s": t, "status": "ok",
                         "threads": float(n * n), "work_group_size": 64.0 * a, "flops_per_thread": 2.0})
    rows.append({**rows[-1], "a": 2, "flag": 1, "time_s": float("nan"), "status": "run_failed"})
    path = tmp_path / "synthetic.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


FLAG_PAIRS = '''dataset = "{path}"
kernel = "k"
parameter = "flag"
before = 0
after = 1
features = "columns"
configuration = ["n", "a", "flag"]
inputs = [{inputs}]'''


def test_flag_pairs_match_everything_but_the_flag(tmp_path):
    path = synthetic(tmp_path)
    spec = entry(tmp_path, FLAG_PAIRS.format(path=path, inputs='"n"')).pairs[0]
    pairs = build_spec_pairs(spec, "trick").sort_values(["input", "configuration"]).reset_index(drop=True)
    # (n=64, a=1): median of 4, 6, 5 = 5 -> 2; (n=64, a=2): 3 -> 6; (n=128, a=1): 8 -> 2; (n=128, a=2) has no after
    assert list(pairs["input"]) == ["n=128", "n=64", "n=64"]
    assert list(pairs["configuration"]) == ["n=128,a=1", "n=64,a=1", "n=64,a=2"]
    assert list(pairs["time_before_s"]) == [8.0, 5.0, 3.0]
    assert list(pairs["time_after_s"]) == [2.0, 2.0, 6.0]
    assert np.allclose(pairs["speedup"], [4.0, 2.5, 0.5])
    assert set(pairs["change"]) == {"flag: 0 -> 1"}
    assert list(pairs["work_group_size"]) == [64.0, 64.0, 128.0]  # the before kernel's features
    assert set(pairs["target"]) == {GPU_TARGET} and pairs["gpu_sms"].notna().all()
    assert list(pairs["family"]) == ["k"] * 3


def test_an_input_column_or_a_gpu_or_device_column_the_dataset_lacks_is_an_error_naming_the_field(tmp_path):
    from gpuperf.errors import GpuperfError

    path = synthetic(tmp_path)
    with pytest.raises(GpuperfError, match=r"trick.toml: pairs\[0\]\.inputs: the dataset has no column 'q'"):
        build_spec_pairs(entry(tmp_path, FLAG_PAIRS.format(path=path, inputs='"n", "q"')).pairs[0], "trick")
    for column in ("gpu", "device"):
        lacking = tmp_path / f"no_{column}.csv"
        pd.read_csv(path).drop(columns=column).to_csv(lacking, index=False)
        with pytest.raises(GpuperfError, match=rf"pairs\[0\]\.dataset: {lacking} has no column '{column}'"):
            build_spec_pairs(entry(tmp_path, FLAG_PAIRS.format(path=lacking, inputs='"n", "a"')).pairs[0], "trick")


def _doubling_a_from(tmp_path: Path, before: int) -> PairSpec:
    """The pairs entry of the synthetic table's kernel k: a doubled from ``before``, labelled by n, a and flag."""
    path = synthetic(tmp_path)
    return entry(tmp_path, f'''dataset = "{path}"
kernel = "k"
parameter = "a"
before = {before}
factor = 2
features = "columns"
configuration = ["n", "a", "flag"]''').pairs[0]


def test_factor_pairs(tmp_path):
    pairs = build_spec_pairs(_doubling_a_from(tmp_path, 1), "trick")
    assert sorted(pairs["configuration"]) == ["n=128,flag=0", "n=64,flag=0", "n=64,flag=1"]
    assert np.allclose(sorted(pairs["speedup"]), sorted([8.0 / 9.0, 5.0 / 3.0, 2.0 / 6.0]))


def test_kernel_pairs_from_matvec(tmp_path):
    spec = entry(tmp_path, '''dataset = "matvec_bsp"
kernel = "MMGU"
after_kernel = "MMGC"
features = "amaris_matvec"
family = "matmul"''').pairs[0]
    pairs = build_spec_pairs(spec, "coalescing")
    table = load_dataset("matvec_bsp").set_index(["kernel", "gpu", "n"])["time_s"]
    assert len(pairs) == 4 * 32 and pairs["gpu"].nunique() == 4
    n = pairs["configuration"].str.removeprefix("n=").astype(int)
    before = [table[("MMGU", g, k)] for g, k in zip(pairs["gpu"], n)]
    after = [table[("MMGC", g, k)] for g, k in zip(pairs["gpu"], n)]
    assert np.array_equal(pairs["time_before_s"], before) and np.array_equal(pairs["time_after_s"], after)
    assert np.allclose(pairs["speedup"], np.array(before) / np.array(after))
    assert (pairs["speedup"] > 1).all()  # coalescing always helped in these measurements
    assert (pairs["cache_lines_per_warp_access"] > 3).all()  # the uncoalesced kernel's static feature
    assert (pairs["input"] == pairs["configuration"]).all()


def test_generated_pocl_pairs_have_provenance():
    from gpuperf.datasets.bundled import data_dir
    from gpuperf.decisions.optimizations import load_optimizations

    provenance = json.loads((data_dir() / "advise_pairs_pocl.provenance.json").read_text())
    assert provenance["device"] and provenance["gpuperf_version"] and provenance["measured_from"]
    prefetch = [s for s in load_optimizations()["local_memory_prefetch"].pairs if s.dataset.endswith(".csv.gz")][0]
    pairs = build_spec_pairs(prefetch, "local_memory_prefetch")
    measured = pd.read_csv(data_dir() / prefetch.dataset)
    assert provenance["points"] == len(measured)
    assert set(pairs["target"]) == {"device:" + provenance["device"]}
    assert pairs["configuration"].str.contains("prefetch").sum() == 0
    for row in pairs.head(20).itertuples():
        config = dict(part.split("=") for part in row.configuration.split(","))
        same = measured[(measured["kernel"] == row.kernel)
                        & np.logical_and.reduce([measured[k] == int(v) for k, v in config.items()])]
        assert sorted(same["prefetch"]) == [0, 1]
        by_flag = same.set_index("prefetch")["time_s"]
        assert row.time_before_s == by_flag[0] and row.time_after_s == by_flag[1]
        # timed interleaved: the speedup is the median per-cycle ratio, not the ratio of the medians
        cycles = same.set_index("prefetch")["cycle_times_s"].map(lambda t: [float(x) for x in t.split(";")])
        assert len(cycles[0]) == provenance["provenance"]["timing"]["cycles"] > 1
        assert row.speedup == pytest.approx(float(np.median(np.divide(cycles[0], cycles[1]))))


def test_h200_pairs_are_gpu_pairs_from_the_same_variants_as_pocl():
    """The H200 campaign measured the pocl campaign's variants; its pairs are GPU pairs (the H200's
    descriptor joins them), and on it coarsening and prefetching go the other way from pocl."""
    from gpuperf.datasets.bundled import data_dir
    from gpuperf.decisions.optimizations import load_optimizations

    provenance = json.loads((data_dir() / "advise_pairs_h200.provenance.json").read_text())
    measured = pd.read_csv(data_dir() / "advise_pairs_h200.csv.gz")
    assert provenance["device"] == "NVIDIA H200" and provenance["points"] == len(measured) == provenance["ok"]
    pocl = pd.read_csv(data_dir() / "advise_pairs_pocl.csv.gz")
    variants = ["kernel", "local_x", "local_y", "outputs_y", "prefetch", "unroll"]
    assert set(map(tuple, measured[variants].to_numpy())) == set(map(tuple, pocl[variants].to_numpy()))
    medians = {}
    for name in ("thread_coarsening", "local_memory_prefetch"):
        by_dataset = {spec.dataset: spec for spec in load_optimizations()[name].pairs}
        h200 = build_spec_pairs(by_dataset["advise_pairs_h200.csv.gz"], name)
        assert set(h200["target"]) == {GPU_TARGET} and h200["gpu_sms"].eq(132).all()
        assert sorted(h200["input"].unique()) == ["n=1024,m=1024", "n=2048,m=2048", "n=4096,m=4096"]
        on_pocl = build_spec_pairs(by_dataset["advise_pairs_pocl.csv.gz"], name)
        medians[name] = h200["speedup"].median(), on_pocl["speedup"].median()
    assert medians["thread_coarsening"][0] > 1.3 and medians["thread_coarsening"][1] < 1
    assert 0.7 < medians["local_memory_prefetch"][0] < 1 and medians["local_memory_prefetch"][1] < 0.5


def test_unknown_kernel_names_the_pair_table(tmp_path):
    from gpuperf.errors import GpuperfError

    spec = entry(tmp_path, '''dataset = "matvec_bsp"
kernel = "MMGX"
after_kernel = "MMGC"
features = "amaris_matvec"''').pairs[0]
    with pytest.raises(GpuperfError, match=r"pairs\[0\]\.kernel: unknown kernel 'MMGX'"):
        build_spec_pairs(spec, "trick")


def test_a_pair_table_that_matches_no_measured_pair_is_an_error_naming_it(tmp_path):
    from gpuperf.errors import GpuperfError

    spec = _doubling_a_from(tmp_path, 2)  # a = 2 is measured, a = 4 is not
    with pytest.raises(GpuperfError, match=r"pairs\[0\]: no measured before/after pair in .* matches it"):
        build_spec_pairs(spec, "trick")


def _flag_rows(tmp_path: Path, points: list[tuple[int, float, str, str | None]]) -> Path:
    """A one-GPU table of kernel k at n=64: one row per (flag, time_s, status, cycle_times_s)."""
    rows = [{"kernel": "k", "variant": f"flag={flag}", "gpu": "Tesla K40", "device": "Tesla K40c", "source": "test",
             "n": 64, "flag": flag, "time_s": t, "status": status, "threads": 4096.0, "work_group_size": 64.0,
             "flops_per_thread": 2.0, **({"cycle_times_s": cycles} if cycles is not None else {})}
            for flag, t, status, cycles in points]
    path = tmp_path / "flags.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _flag_spec(tmp_path: Path, path: Path, before: str = "0", after: str = "1"):
    return entry(tmp_path, f'''dataset = "{path}"
kernel = "k"
parameter = "flag"
before = {before}
after = {after}
features = "columns"
configuration = ["n", "flag"]''').pairs[0]


def test_repeated_points_are_reduced_to_their_median_and_failed_rows_left_out(tmp_path):
    """flag=0 measured 4, 5 and 9 s: median 5 (the mean would be 6). flag=1: 2 s ok, and a
    verify_failed row that still carries a time (0.5 s), which is no measurement of the point.
    One pair: 5 -> 2, speedup 2.5."""
    path = _flag_rows(tmp_path, [(0, 4.0, "ok", None), (0, 5.0, "ok", None), (0, 9.0, "ok", None),
                                 (1, 2.0, "ok", None), (1, 0.5, "verify_failed", None)])
    pairs = build_spec_pairs(_flag_spec(tmp_path, path), "trick")
    assert list(pairs["time_before_s"]) == [5.0] and list(pairs["time_after_s"]) == [2.0]
    assert list(pairs["speedup"]) == [2.5]


def test_a_configuration_never_pairs_with_itself(tmp_path):
    """before = after = [0, 1]: the pairs are 0 -> 1 (5/2 = 2.5) and 1 -> 0 (2/5 = 0.4); 0 -> 0 and
    1 -> 1 change nothing and are left out."""
    path = _flag_rows(tmp_path, [(0, 5.0, "ok", None), (1, 2.0, "ok", None)])
    pairs = build_spec_pairs(_flag_spec(tmp_path, path, "[0, 1]", "[0, 1]"), "trick")
    by_change = dict(zip(pairs["change"], pairs["speedup"]))
    assert by_change == {"flag: 0 -> 1": 2.5, "flag: 1 -> 0": 0.4}


def test_a_repeated_interleaved_point_falls_back_to_the_ratio_of_medians(tmp_path):
    """flag=0 measured twice (4 s, cycles 4;4;4 and 6 s, cycles 6;6;6): its cycles pair with nothing,
    so the speedup is median(4, 6) / 2 = 2.5, not the first row's per-cycle ratio 4/1 = 4."""
    path = _flag_rows(tmp_path, [(0, 4.0, "ok", "4;4;4"), (0, 6.0, "ok", "6;6;6"), (1, 2.0, "ok", "1;1;1")])
    pairs = build_spec_pairs(_flag_spec(tmp_path, path), "trick")
    assert list(pairs["speedup"]) == [2.5]


@pytest.mark.parametrize("values", [
    [16.0, 16.5, np.nan, 16.0, -0.0, 1e20],
    [4, 8, 4, 16],
    pd.array([1, None, 2, 1], dtype="Int64"),
    pd.Series(["a", None, "b", "a"], dtype="str"),
    pd.Series([True, 1, 1.0, "1", None, np.nan, 2.5], dtype=object),  # True == 1, but its text is "True"
])
def test_texts_by_value_are_each_valuesnumber_text(values):
    column = pd.Series(values, index=range(10, 10 + len(values)))
    pd.testing.assert_series_equal(texts_by_value(column, number_text), column.map(number_text))


def test_pair_cache_is_keyed_by_the_dataset_contents_not_its_folder(tmp_path, monkeypatch):
    """Two checkouts of gpuperf with the same data share cached pairs; edited data is a new key."""
    from gpuperf.decisions.optimizations import PairSpec
    from gpuperf.decisions.pairs import _cache_key

    spec = PairSpec(dataset="pairs.csv", kernels=("k",), features="static", family="f",
                    parameter="p", before=(0,), after=(1,))
    keys = []
    for folder, text in (("one", "a,b\n1,2\n"), ("two", "a,b\n1,2\n"), ("three", "a,b\n1,3\n")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "pairs.csv").write_text(text)
        monkeypatch.setenv("GPUPERF_DATA_DIR", str(tmp_path / folder))
        keys.append(_cache_key(spec, "trick"))
    assert keys[0] == keys[1]
    assert keys[2] != keys[0]


@pytest.mark.parametrize(("before_group", "after_group", "speedup"), [
    ("g1", "g1", 4.0),  # timed in the same cycles: the median per-cycle ratio of 1, 4 and 8
    ("g1", "g2", 2.0),  # different groups share no cycle: the ratio of the times, 4 / 2
    ("g1", None, 2.0),  # one stored before groups were recorded, one after: not timed together
    (None, None, 4.0),  # neither recorded (tables exported before): pairs as they always did
])
def test_interleaved_points_pair_cycle_by_cycle_only_within_one_cycle_group(tmp_path, before_group, after_group,
                                                                             speedup):
    path = _flag_rows(tmp_path, [(0, 4.0, "ok", "2;4;8"), (1, 2.0, "ok", "2;1;1")])
    table = pd.read_csv(path).assign(cycle_group=[before_group, after_group])
    table.to_csv(path, index=False)
    assert list(build_spec_pairs(_flag_spec(tmp_path, path), "trick")["speedup"]) == [speedup]


def test_increasing_keeps_only_pairs_from_a_smaller_to_a_larger_value(tmp_path):
    rows = [{"kernel": "k", "gpu": "Tesla K40", "device": "d", "n": 64, "a": a, "time_s": t, "status": "ok",
             "threads": 4096.0, "work_group_size": 64.0, "flops_per_thread": 2.0}
            for a, t in ((1, 8.0), (2, 4.0), (4, 5.0))]
    path = tmp_path / "sampled.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    table = (f'dataset = "{path}"\nkernel = "k"\nparameter = "a"\nbefore = [1, 2, 4]\nafter = [1, 2, 4]\n'
             'features = "columns"\nconfiguration = ["n", "a"]')
    both_ways = build_spec_pairs(entry(tmp_path, table).pairs[0], "trick")
    assert sorted(both_ways["change"]) == ["a: 1 -> 2", "a: 1 -> 4", "a: 2 -> 1", "a: 2 -> 4", "a: 4 -> 1", "a: 4 -> 2"]
    spec = entry(tmp_path, table + "\nincreasing = true").pairs[0]
    assert spec.increasing and spec.change == "a: 1/2/4 -> 1/2/4 (larger)"
    pairs = build_spec_pairs(spec, "trick").set_index("change")["speedup"]
    assert pairs.to_dict() == {"a: 1 -> 2": 2.0, "a: 1 -> 4": 1.6, "a: 2 -> 4": 0.8}


@pytest.mark.parametrize(("pairs", "message"), [
    ('dataset = "matvec_bsp"\nkernel = "MMGU"\nafter_kernel = "MMGC"\nfeatures = "amaris_matvec"\nincreasing = true',
     "increasing: only with a parameter"),
    ('dataset = "d"\nkernel = "k"\nparameter = "a"\nbefore = 1\nafter = 2\nfeatures = "columns"\nincreasing = "yes"',
     "increasing: expected true or false"),
])
def test_increasing_is_checked(tmp_path, pairs, message):
    from gpuperf.errors import GpuperfError

    with pytest.raises(GpuperfError, match=message):
        entry(tmp_path, pairs)


def test_the_h100_stencil_variants_train_the_gpu_advisor():
    """Every pair of H100 stencil variants that differ in one parameter only, smaller to larger, is a
    GPU training pair of its optimization, its speedup the median per-cycle ratio (the 24 variants of
    a space were timed in the same cycles)."""
    from gpuperf.decisions.optimizations import load_optimizations
    from gpuperf.decisions.pairs import training_pairs

    entries = load_optimizations()
    names = ("larger_work_groups", "thread_coarsening", "unrolling", "local_memory_prefetch")
    pairs = training_pairs([entries[n] for n in names])
    h100 = pairs[pairs["dataset"].eq("stencil_spaces_h100")]
    assert h100.groupby("optimization").size().to_dict() == {
        "larger_work_groups": 30, "local_memory_prefetch": 1, "thread_coarsening": 11, "unrolling": 12}
    assert set(h100["target"]) == {GPU_TARGET} and set(h100["gpu"]) == {"H100 SXM"}
    assert (h100["gpu_sms"] == 132).all() and h100["family"].nunique() == 8
    table = load_dataset("stencil_spaces_h100")
    parameters = ["local_x", "local_y", "outputs_y", "prefetch", "unroll"]
    for row in h100.itertuples():
        parameter, values = row.change.split(": ")
        before, after = (int(v) for v in values.split(" -> "))
        assert after > before
        config = dict(part.split("=") for part in row.configuration.split(","))
        same = table[table["kernel"].eq(row.kernel)
                     & np.logical_and.reduce([table[p] == int(config[p]) for p in parameters if p != parameter])]
        times = same.set_index(parameter)["time_s"]
        assert (row.time_before_s, row.time_after_s) == (times[before], times[after])
        assert abs(np.log(row.speedup / (row.time_before_s / row.time_after_s))) < 0.05  # per-cycle vs medians
    medians = h100.groupby("optimization")["speedup"].median()
    assert medians["thread_coarsening"] > 1.5 and abs(medians["unrolling"] - 1) < 0.01  # what the H100 measured


def test_a_cached_pairs_file_of_other_columns_is_rebuilt(tmp_path, monkeypatch):
    """An empty table copied over a cached pairs file changed the advice, silently, on every run."""
    from gpuperf.decisions.pairs import _cache_key, cache_dir, spec_pairs

    monkeypatch.setenv("GPUPERF_CACHE_DIR", str(tmp_path / "cache"))
    path = _flag_rows(tmp_path, [(0, 4.0, "ok", "2;4;8"), (1, 2.0, "ok", "2;1;1")])
    spec = _flag_spec(tmp_path, path)
    built = spec_pairs(spec, "trick")
    cached = cache_dir() / f"{_cache_key(spec, 'trick')}.parquet"
    pd.DataFrame().to_parquet(cached, index=False)
    pd.testing.assert_frame_equal(spec_pairs(spec, "trick"), built)


def test_a_users_kernel_named_like_another_in_a_campaign_export_pairs_apart(tmp_path):
    """A campaign export names a user's kernel by its program's name only: a user's k and the catalog's k, timed at
    the same configurations, were one kernel, each point's two times reduced to their median, one pair of the
    two. Its kernel_spec tells them apart: the catalog's k pairs alone (4 -> 2), the user's under its own name."""
    path = _flag_rows(tmp_path, [(0, 4.0, "ok", None), (1, 2.0, "ok", None), (0, 10.0, "ok", None),
                                 (1, 40.0, "ok", None)])
    table = pd.read_csv(path).assign(kernel_spec=["k[flag=0]", "k[flag=1]", "/home/me/u.py:k[flag=0]",
                                                  "/home/me/u.py:k[flag=1]"])
    table.to_csv(path, index=False)
    assert list(build_spec_pairs(_flag_spec(tmp_path, path), "trick")["speedup"]) == [2.0]
    spec = entry(tmp_path, f'''dataset = "{path}"
kernel = "k (/home/me/u.py:k)"
parameter = "flag"
before = 0
after = 1
features = "columns"
configuration = ["n", "flag"]''').pairs[0]
    assert list(build_spec_pairs(spec, "trick")["speedup"]) == [0.25]


@pytest.mark.parametrize("use_cache", [True, False])
def test_a_bundled_pair_table_missing_from_the_data_folder_is_named_with_its_entry(tmp_path, monkeypatch, use_cache):
    """advise on a bundled entry whose table is absent said only 'schoonhoven_spaces.csv.gz: No such file or
    directory': the entry's field, the bundled name and GPUPERF_DATA_DIR are named, as load_dataset names them."""
    from gpuperf.decisions.optimizations import load_optimizations
    from gpuperf.decisions.pairs import spec_pairs

    spec = next(s for s in load_optimizations()["larger_work_groups"].pairs if s.dataset == "schoonhoven_spaces")
    monkeypatch.setenv("GPUPERF_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(GpuperfError, match=r"larger_work_groups\.toml.*\.dataset: .*schoonhoven_spaces\.csv\.gz: "
                       r"bundled dataset 'schoonhoven_spaces' is missing \(GPUPERF_DATA_DIR=.*: no such file there\)"):
        spec_pairs(spec, "larger_work_groups", use_cache=use_cache)


def test_a_feature_source_error_names_the_entrys_field(tmp_path):
    """A table of no static feature columns gave "feature source 'columns': ..." without the entry or field."""
    import re

    import pandas as pd

    from gpuperf.decisions.optimizations import load_entry
    from gpuperf.decisions.pairs import build_spec_pairs

    pd.DataFrame({"kernel": "k", "gpu": "pocl", "device": "opencl:0", "unroll": [1, 2], "n": 64,
                  "time_s": [2.0, 1.0], "status": "ok"}).to_csv(tmp_path / "mine.csv", index=False)
    path = tmp_path / "mine.toml"
    path.write_text(COLUMNS_ENTRY)
    (spec,) = load_entry(path).pairs
    with pytest.raises(GpuperfError, match=re.escape(f"{path}: pairs[0].features: ") + ".*mine.csv: feature source "
                       "'columns': the table has no static feature columns"):
        build_spec_pairs(spec, "mine")


COLUMNS_ENTRY = """
name = "mine"
title = "Mine"
description = "Mine."
when_it_helps = "Always."

[example]
before = "a"
after = "b"

[apply]
kind = "source"
summary = "do it"

[[pairs]]
dataset = "mine.csv"
kernel = "k"
parameter = "unroll"
before = 1
after = 2
features = "columns"
configuration = ["n", "unroll"]
"""


def test_a_columns_table_without_some_feature_columns_is_noted(tmp_path):
    """A table whose feature columns were misnamed (flops for flops_per_thread) trained with those features
    silently unknown (imputed)."""
    from gpuperf.decisions.advisor import advise
    from gpuperf.decisions.pairs import spec_pairs, unvalued_features_note
    from gpuperf.errors import GpuperfNote

    pd.DataFrame({"kernel": "k", "gpu": "pocl", "device": "opencl:0", "unroll": [1, 2, 1, 2], "n": [64, 64, 128, 128],
                  "time_s": [2.0, 1.0, 4.0, 2.5], "status": "ok", "threads": [64, 64, 128, 128],
                  "flops": 8.0}).to_csv(tmp_path / "mine.csv", index=False)
    path = tmp_path / "mine.toml"
    path.write_text(COLUMNS_ENTRY)
    entry = load_entry(path)
    note = unvalued_features_note(entry.pairs[0], spec_pairs(entry.pairs[0], "mine", use_cache=False))
    assert note.startswith(f"{path}: pairs[0].features: {tmp_path / 'mine.csv'} holds no value of work_groups, ")
    assert "flops_per_thread" in note and "threads," not in note
    with pytest.warns(GpuperfNote, match="holds no value of work_groups"):
        result = advise({"threads": 64.0}, "device:pocl", entries=[entry], use_cache=False)
    assert note in result.notes


def _unrolling_entry_with(tmp_path, old: str, new: str):
    """The bundled unrolling entry's first pairs table as an entry "mine" with ``old`` written as ``new``:
    its path and its pairs spec."""
    from gpuperf.decisions.optimizations import builtin_folder

    source = (builtin_folder() / "unrolling.toml").read_text()
    table = source[:source.index("# The same before/after")].replace('name = "unrolling"', 'name = "mine"')
    path = tmp_path / "mine.toml"
    path.write_text(table.replace(old, new))
    (spec,) = load_entry(path).pairs
    return path, spec


def test_an_input_left_out_of_the_configuration_is_an_error(tmp_path):
    """configuration without n and m (inputs = ["n", "m"]) took the three sizes' points as repeats of one
    point, their median its time, and labelled every pair with the first size: 48 pairs of mixed sizes."""
    import re

    path, spec = _unrolling_entry_with(tmp_path, 'configuration = ["n", "m", ', 'configuration = [')
    with pytest.raises(GpuperfError, match=re.escape(f"{path}: pairs[0].inputs: 'n' is an input but not a "
                                                     "configuration column (local_x, ")):
        build_spec_pairs(spec, "mine")


def test_a_before_or_after_value_never_measured_is_an_error(tmp_path):
    """after = [2, 40] (a typo for 4) trained on the unroll 1 -> 2 pairs alone, unsaid."""
    import re

    path, spec = _unrolling_entry_with(tmp_path, "after = [2, 4]", "after = [2, 40]")
    with pytest.raises(GpuperfError, match=re.escape(f"{path}: pairs[0].after: unroll = 40 is measured for none "
                                                     "of its kernels in advise_pairs_pocl.csv.gz (measured: 1, 2, 4)")):
        build_spec_pairs(spec, "mine")


def test_a_parameter_column_with_text_beside_its_numbers_still_pairs(tmp_path):
    """A parameter column holding "auto" beside 1 and 2 was read as text, so before = 1 matched nothing:
    "no measured before/after pair matches it" for values the table measured."""
    spec = _doubling_a_from(tmp_path, 1)  # writes the table, then given a row of a = "auto"
    frame = pd.read_csv(spec.dataset)
    pd.concat([frame, frame.iloc[[0]].assign(a="auto")]).to_csv(spec.dataset, index=False)
    pairs = build_spec_pairs(spec, "trick")
    assert sorted(pairs["configuration"]) == ["n=128,flag=0", "n=64,flag=0", "n=64,flag=1"]


def test_an_amaris_table_without_its_size_column_names_the_field(tmp_path):
    """features = "amaris_matvec" on a table without n gave a KeyError traceback."""
    import re

    (tmp_path / "mat.csv").write_text("kernel,gpu,device,size,time_s,status\nMAU,Tesla K40,k40,64,2.0,ok\n"
                                      "MAC,Tesla K40,k40,64,1.0,ok\n")
    spec = entry(tmp_path, f'''dataset = "{tmp_path / 'mat.csv'}"
kernel = "MAU"
after_kernel = "MAC"
features = "amaris_matvec"
configuration = ["size"]''').pairs[0]
    with pytest.raises(GpuperfError, match=re.escape("pairs[0].features: ") + ".*mat.csv: feature source "
                       "'amaris_matvec': the table has no column 'n'"):
        build_spec_pairs(spec, "trick")


def test_a_pairs_table_timed_in_milliseconds_is_read_in_seconds(tmp_path):
    """A table with time_ms, which other commands take as time_s with a note, was refused as matching
    "neither the dataset shape nor a bundled table's format"."""
    from gpuperf.errors import GpuperfNote

    spec = _doubling_a_from(tmp_path, 1)
    seconds = build_spec_pairs(spec, "trick")
    frame = pd.read_csv(spec.dataset)
    frame.assign(time_ms=frame.pop("time_s") * 1000).to_csv(spec.dataset, index=False)
    with pytest.warns(GpuperfNote, match="the measured time is time_ms, taken as time_s in seconds"):
        milliseconds = build_spec_pairs(spec, "trick")
    assert np.allclose(milliseconds["speedup"], seconds["speedup"])
    assert np.allclose(milliseconds["time_before_s"], seconds["time_before_s"])


@pytest.mark.parametrize("cycles", ["0;0;0", "nan;nan;nan", "-1;-1;-1", "inf;1;1"])
def test_cycle_times_that_are_no_positive_times_are_an_error_naming_the_dataset(tmp_path, cycles):
    """An after point's cycles of 0 s gave an infinite speedup (NaN for NaN or negative cycles), which reached
    the models as a ValueError traceback."""
    from gpuperf.errors import GpuperfError

    path = _flag_rows(tmp_path, [(0, 4.0, "ok", "2;4;8"), (1, 2.0, "ok", cycles)])
    with pytest.raises(GpuperfError, match=rf"flags.csv\): cycle_times_s: expected ';'-separated positive times .*"
                                           rf"not '{cycles}'"):
        build_spec_pairs(_flag_spec(tmp_path, path), "trick")


@pytest.mark.parametrize("value", [np.inf, -np.inf])
def test_an_endless_feature_value_of_a_columns_table_is_an_error_naming_the_column(tmp_path, value):
    """flops_per_thread = inf in a hand-made table reached the models' imputer as a ValueError traceback."""
    from gpuperf.errors import GpuperfError

    path = _flag_rows(tmp_path, [(0, 4.0, "ok", None), (1, 2.0, "ok", None)])
    pd.read_csv(path).assign(flops_per_thread=[2.0, value]).to_csv(path, index=False)
    with pytest.raises(GpuperfError, match=r"pairs\[0\]\.features: .*flags.csv: feature source 'columns': "
                                           r"flops_per_thread holds -?inf \(kernel k\); a feature is a finite number"):
        build_spec_pairs(_flag_spec(tmp_path, path), "trick")


def test_a_table_whose_rows_all_failed_says_so_not_that_the_parameter_has_no_values(tmp_path):
    """Every row verify_failed: the error said "the dataset has no values of 'flag' for these kernels", while
    the table holds flag 0 and 1 in every row."""
    from gpuperf.errors import GpuperfError

    path = _flag_rows(tmp_path, [(0, 4.0, "verify_failed", None), (1, 2.0, "compile_failed", None)])
    with pytest.raises(GpuperfError, match=r"pairs\[0\]\.dataset: .*flags.csv holds no measurement of k with "
                                           r"status ok and a positive time_s \(2 rows, status compile_failed, "
                                           r"verify_failed\)"):
        build_spec_pairs(_flag_spec(tmp_path, path), "trick")


def test_measured_rows_naming_no_gpu_are_an_error_not_pairs_left_out_unsaid(tmp_path):
    """Rows with an empty gpu cell paired, and their pairs were dropped without a word when each GPU's pairs
    were sampled: the advice said 2 training pairs of a table holding 3."""
    from gpuperf.errors import GpuperfError

    path = _flag_rows(tmp_path, [(0, 4.0, "ok", None), (1, 2.0, "ok", None)])
    table = pd.read_csv(path)
    pd.concat([table, table.assign(n=128, gpu=np.nan)]).to_csv(path, index=False)
    with pytest.raises(GpuperfError, match=r"pairs\[0\]\.dataset: .*flags.csv: 2 measured rows of its kernels "
                                           r"name no gpu"):
        build_spec_pairs(_flag_spec(tmp_path, path), "trick")


def test_a_gpu_spelt_two_ways_in_a_pairs_table_is_one_gpu(tmp_path):
    """Rows of the K40 as 'Tesla K40' and 'NVIDIA Tesla K40c' gave pairs of two GPUs: the pair transfer's
    calibration then took one GPU's measurement as a transfer to another, and max_pairs_per_gpu capped each
    spelling apart."""
    path = _flag_rows(tmp_path, [(0, 4.0, "ok", None), (1, 2.0, "ok", None)])
    table = pd.read_csv(path)
    pd.concat([table, table.assign(n=128, gpu="NVIDIA Tesla K40c")]).to_csv(path, index=False)
    pairs = build_spec_pairs(_flag_spec(tmp_path, path), "trick")
    assert len(pairs) == 2 and set(pairs["gpu"]) == {"Tesla K40"}


def test_one_measured_row_naming_no_gpu_is_said_as_one_row(tmp_path):
    """The error said "1 measured row(s) of its kernels name no gpu"."""
    from gpuperf.errors import GpuperfError

    path = _flag_rows(tmp_path, [(0, 4.0, "ok", None), (1, 2.0, "ok", None)])
    table = pd.read_csv(path)
    pd.concat([table, table.assign(n=128, gpu=np.nan).iloc[:1]]).to_csv(path, index=False)
    with pytest.raises(GpuperfError, match=r"flags.csv: 1 measured row of its kernels names no gpu \(a pair"):
        build_spec_pairs(_flag_spec(tmp_path, path), "trick")


def test_a_table_whose_one_row_failed_counts_it_as_one_row(tmp_path):
    """The error said "(1 rows, status verify_failed)"."""
    path = _flag_rows(tmp_path, [(0, 4.0, "verify_failed", None)])
    with pytest.raises(GpuperfError, match=r"a positive time_s \(1 row, status verify_failed\)"):
        build_spec_pairs(_flag_spec(tmp_path, path), "trick")


@pytest.mark.parametrize("blank", [" ", ""])
def test_measured_rows_whose_gpu_is_blank_are_an_error_too(tmp_path, blank):
    """A gpu cell of spaces (or a Parquet table's empty text) paired as a device named ' ', target 'device: '."""
    path = _flag_rows(tmp_path, [(0, 4.0, "ok", None), (1, 2.0, "ok", None)])
    table = pd.read_csv(path)
    parquet = path.with_suffix(".parquet")
    pd.concat([table, table.assign(n=128, gpu=blank)]).to_parquet(parquet, index=False)
    with pytest.raises(GpuperfError, match=r"flags.parquet: 2 measured rows of its kernels name no gpu"):
        build_spec_pairs(_flag_spec(tmp_path, parquet), "trick")
