"""Interleaved timing: cycle order, per-cycle medians, paired ratios, failures, campaigns on pocl."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import loopy as lp
import numpy as np
import pandas as pd
import pytest

from gpuperf.decisions.pairs import paired_speedups
from gpuperf.errors import GpuperfError
from gpuperf.kernels.kernel import Kernel
from gpuperf.measure import TimingSettings, VerifyFailed, campaign_status, load_campaign, run_campaign, store_table
from gpuperf.measure.campaign import Campaign
from gpuperf.measure.devices import open_device
from gpuperf.measure.interleave import Variant, _cycles, measure_interleaved, paired_ratio
from gpuperf.measure.store import Store

LANG = lp.version.LOOPY_USE_LANGUAGE_VERSION_2018_2


def _scripted(name: str, times: list[float], log: list[str]) -> SimpleNamespace:
    """A prepared variant whose launches take ``times`` in order; each call is logged under ``name``."""
    queue = iter(times)

    def run_many(count: int) -> list[float]:
        log.append(name)
        return [next(queue) for _ in range(count)]

    return SimpleNamespace(launch=SimpleNamespace(run_many=run_many))


def test_every_cycle_times_every_variant_once_and_keeps_its_round_median() -> None:
    log: list[str] = []
    # variant a runs at 1, 2, 3 s per launch in its three cycles; b at 10, 20, 30 s
    prepared = {0: _scripted("a", [1, 1, 1, 2, 2, 2, 3, 3, 3], log),
                1: _scripted("b", [10, 10, 10, 20, 20, 20, 30, 30, 30], log)}
    rounds = _cycles(prepared, TimingSettings(warmup=0, min_repeats=3, min_time_s=0, cycles=3), seed=1)
    assert [sorted(log[i:i + 2]) for i in range(0, 6, 2)] == [["a", "b"]] * 3  # interleaved, not a then b
    assert rounds[0].medians == [1, 2, 3] and rounds[1].medians == [10, 20, 30]
    assert rounds[0].launches == 9 and rounds[0].kernel_s == pytest.approx(18)
    assert rounds[1].fastest == 10


def test_a_launch_failing_in_a_later_cycle_stops_that_variant_only() -> None:
    log: list[str] = []
    prepared = {0: _scripted("a", [1.0] * 9, log), 1: _scripted("b", [2.0] * 3, log)}  # b fails in cycle 2
    rounds = _cycles(prepared, TimingSettings(warmup=0, min_repeats=3, min_time_s=0, cycles=3), seed=0)
    assert rounds[0].medians == [1.0, 1.0, 1.0]
    assert isinstance(rounds[1], StopIteration) and log.count("b") == 2  # not tried again in cycle 3


def test_paired_ratio_cancels_drift_that_the_ratio_of_medians_keeps() -> None:
    a = [1.0, 2.0, 4.0, 4.0, 4.0]  # the machine slows down while both are timed
    b = [2.0, 4.0, 8.0, 8.0, 8.0]
    assert paired_ratio(a, b) == pytest.approx(0.5)
    assert paired_ratio([1.0, 1.0, 5.0], [2.0, 2.0, 2.0]) == pytest.approx(0.5)  # one disturbed cycle
    with pytest.raises(ValueError, match="equal"):
        paired_ratio([1.0, 2.0], [1.0])


def test_paired_speedups_fall_back_to_the_time_ratio_without_matching_cycles() -> None:
    before = pd.Series(["2;4;8", "", "1;2"])
    after = pd.Series(["1;2;4", "1;1;1", "1;1;1"])
    fallback = pd.Series([9.0, 3.0, 7.0])
    assert paired_speedups(before, after, fallback).tolist() == [2.0, 3.0, 7.0]
    with pytest.raises(GpuperfError, match="pairs.csv: cycle_times_s"):
        paired_speedups(pd.Series(["1;x"]), pd.Series(["1;1"]), pd.Series([1.0]), "pairs.csv")


def _axpy(reference) -> Kernel:
    program = lp.make_kernel("{[i]: 0<=i<n}", "c[i] = 2*a[i] + b[i]",
                             [lp.GlobalArg("a,b,c", np.float32, shape="n"), "..."],
                             assumptions="n>=64 and n mod 64 = 0", name="axpy", lang_version=LANG)
    program = lp.split_iname(program, "i", 64, outer_tag="g.0", inner_tag="l.0")
    return Kernel("axpy", program, ("n",), reference=reference)


@pytest.mark.opencl
def test_a_variant_that_fails_verification_fails_alone() -> None:
    device = open_device("opencl:0")
    good = device.compile(_axpy(lambda x, s: {"c": 2 * x["a"] + x["b"]}))
    wrong = device.compile(_axpy(lambda x, s: {"c": x["a"] - x["b"]}))
    settings = TimingSettings(warmup=1, min_repeats=3, min_time_s=0, cycles=4)
    first, second = measure_interleaved([Variant(good, {"n": 4096}), Variant(wrong, {"n": 4096})], device, settings)
    assert isinstance(second, VerifyFailed)
    assert first.verified and len(first.samples) == 4 and first.repeats == 12
    assert first.time_s == pytest.approx(np.median(first.samples))
    assert first.provenance["timing"]["cycles"] == 4


CAMPAIGN = """
name = "pair"
[timing]
warmup = 1
min_repeats = 5
min_time_s = 0
cycles = 3
[[kernels]]
kernel = "stencil2d[local_x=16,local_y=4,outputs_y=1,prefetch=0,unroll=1]"
sizes = [{n = 64, m = 64}, {n = 128, m = 128}]
[[kernels]]
kernel = "stencil2d[local_x=32,local_y=4,outputs_y=2,prefetch=0,unroll=2]"
sizes = [{n = 64, m = 64}, {n = 128, m = 128}]
"""


@pytest.mark.opencl
def test_interleaved_campaign_stores_per_cycle_samples_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "pair.toml"
    path.write_text(CAMPAIGN)
    campaign = load_campaign(path)
    report = run_campaign(campaign, tmp_path / "s.db", progress=False)
    assert report.measured == 4 and not report.failed
    with Store(tmp_path / "s.db", create=False) as store:
        rows = store.rows("pair")
    # three round medians of five launches each (timed one after the other it would be five samples)
    assert len(rows) == 4 and all(len(r["samples"]) == 3 and r["repeats"] == 15 and r["verified"] for r in rows)
    assert all(r["time_s"] == pytest.approx(np.median(r["samples"])) for r in rows)
    assert run_campaign(campaign, tmp_path / "s.db", progress=False).measured == 0  # nothing taken twice
    table = store_table(tmp_path / "s.db", campaign="pair", features=False, cycle_times=True)
    cycles = table["cycle_times_s"].str.split(";").map(lambda parts: [float(p) for p in parts])
    assert cycles.map(len).eq(3).all()
    assert (cycles.map(np.median) == table["time_s"]).all()
    assert "cycle_times_s" not in store_table(tmp_path / "s.db", campaign="pair", features=False).columns


def test_cycles_must_be_positive() -> None:
    with pytest.raises(GpuperfError, match=r"timing.cycles: must be at least 1"):
        TimingSettings.from_mapping({"cycles": 0}, "f.toml: timing")


@pytest.mark.opencl
def test_interleave_campaign_times_every_kernel_and_size_in_one_group(tmp_path: Path) -> None:
    from gpuperf.measure.campaign import interleaved_groups

    path = tmp_path / "all.toml"
    path.write_text('interleave = "campaign"\n' + CAMPAIGN.replace('name = "pair"', 'name = "all"'))
    campaign = load_campaign(path)
    points = campaign.points("opencl:0:0")
    assert [len(g) for g in interleaved_groups(points, campaign.interleave)] == [4]
    assert [len(g) for g in interleaved_groups(points)] == [2, 2]  # per kernel name and size
    assert run_campaign(campaign, tmp_path / "s.db", progress=False).measured == 4
    with Store(tmp_path / "s.db", create=False) as store:
        assert all(len(r["samples"]) == 3 for r in store.rows("all"))


# The stencil's buffers, a (n+2 x m+2) and out (n x m) float32: 33,808 bytes at n = m = 64, 133,136 at 128.
# CAMPAIGN's points in file order: 64, 128 of the first variant, then 64, 128 of the second.
SMALL, LARGE = (66 * 66 + 64 * 64) * 4, (130 * 130 + 128 * 128) * 4


def _group_sizes(monkeypatch) -> list[int]:
    """The number of points of every interleaved group run_campaign times, in order."""
    import gpuperf.measure.campaign as campaign_module

    sizes: list[int] = []
    real = campaign_module.measure_interleaved

    def counted(variants, *args, **kwargs):
        sizes.append(len(variants))
        return real(variants, *args, **kwargs)

    monkeypatch.setattr(campaign_module, "measure_interleaved", counted)
    return sizes


@pytest.mark.opencl
def test_a_campaign_too_large_for_the_device_is_timed_in_interleaved_groups_that_fit(tmp_path: Path,
                                                                                     monkeypatch) -> None:
    from gpuperf.errors import GpuperfNote
    from gpuperf.kernels.catalog import get_kernel

    assert get_kernel("stencil2d[local_x=16,local_y=4,outputs_y=1,prefetch=0,unroll=1]").buffer_bytes(
        {"n": 64, "m": 64}) == SMALL
    path = tmp_path / "all.toml"
    path.write_text('interleave = "campaign"\n' + CAMPAIGN.replace('name = "pair"', 'name = "all"'))
    sizes = _group_sizes(monkeypatch)
    # 2 x (SMALL + LARGE) = 333,888 bytes in all; 200,000 hold SMALL + LARGE (166,944) but not a third point
    with pytest.warns(GpuperfNote) as notes:
        report = run_campaign(load_campaign(path), tmp_path / "s.db", progress=False, memory_limit=200_000)
    assert sizes == [2, 2] and report.groups == 2 and report.groups_cut == 1
    assert report.measured == 4 and not report.failed
    (note,) = [str(n.message) for n in notes if issubclass(n.category, GpuperfNote)]
    assert note.startswith(f'{path}: the whole campaign (interleave = "campaign") would hold 0.3 MiB of buffers '
                           "on opencl:0:0 at once, more than the 0.2 MiB one interleaved group may use (of its ")
    assert note.endswith("timed in 2 interleaved groups of 2, 2 points, in file order; points of different "
                         "groups do not share cycles")
    with Store(tmp_path / "s.db", create=False) as store:
        assert all(len(r["samples"]) == 3 and r["repeats"] == 15 for r in store.rows("all"))


@pytest.mark.opencl
def test_a_kernel_scope_group_is_cut_and_a_point_too_large_alone_is_timed_alone(tmp_path: Path,
                                                                                monkeypatch) -> None:
    """The limit by default: 80 % of the device's global memory (here 125,000 bytes: 100,000)."""
    import gpuperf.measure.campaign as campaign_module

    opened = campaign_module.open_device("opencl:0")
    monkeypatch.setattr(opened, "memory_bytes", 125_000)  # the device is opened once per process: put back
    monkeypatch.setattr(campaign_module, "open_device", lambda name: opened)
    path = tmp_path / "pair.toml"
    path.write_text(CAMPAIGN)  # per kernel and size: 2 x SMALL, then 2 x LARGE, each above the limit
    sizes = _group_sizes(monkeypatch)
    with pytest.warns(UserWarning, match=r"stencil2d's 2 variants at n=128,m=128 would hold 0\.3 MiB .* more than the "
                      r"0\.1 MiB one interleaved group may use \(of its 0\.1 MiB\): timed in 2 interleaved groups "
                      r"of 1, 1 points.*; 2 point\(s\) need more than that by themselves"):
        report = run_campaign(load_campaign(path), tmp_path / "s.db", progress=False)
    assert sizes == [2, 1, 1] and report.groups == 3 and report.groups_cut == 1 and report.measured == 4


@pytest.mark.opencl
def test_a_cut_campaign_killed_in_its_second_group_keeps_the_first_and_resumes_at_the_next_cycle(
        tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "all.toml"
    path.write_text('interleave = "campaign"\n' + CAMPAIGN.replace('name = "pair"', 'name = "all"'))
    campaign = load_campaign(path)
    rounds = RoundCounter(monkeypatch, kill_at=6 + 5)  # the first group's 6 rounds, then the second's third cycle
    with pytest.raises(Killed), pytest.warns(UserWarning):
        run_campaign(campaign, tmp_path / "s.db", progress=False, memory_limit=200_000)
    with Store(tmp_path / "s.db", create=False) as store:
        first = {(r["kernel"], r["sizes"]["n"]): r["samples"] for r in store.rows("all")}
        kept = store.db.execute("SELECT cycle FROM rounds ORDER BY kernel, sizes, cycle").fetchall()
    assert sorted(n for _, n in first) == [64, 128] and [c for (c,) in kept] == [0, 1, 0, 1]
    rounds.restart()
    sizes = _group_sizes(monkeypatch)
    report = run_campaign(campaign, tmp_path / "s.db", progress=False, memory_limit=200_000)
    assert sizes == [2] and rounds.calls == 2  # the second group, cut the same way, times its last cycle only
    assert report.already_stored == 2 and report.measured == 2
    with Store(tmp_path / "s.db", create=False) as store:
        rows = {(r["kernel"], r["sizes"]["n"]): r["samples"] for r in store.rows("all")}
    assert len(rows) == 4 and all(rows[key] == samples for key, samples in first.items())  # nothing lost
    assert all(len(samples) == 3 for samples in rows.values())


def test_split_to_fit_cuts_in_order_and_cuts_the_rest_of_a_group_the_same_way() -> None:
    from gpuperf.measure.campaign import group_memory_limit, split_to_fit

    def point(size: int) -> SimpleNamespace:
        return SimpleNamespace(size=size, sizes={}, entry=SimpleNamespace(
            kernel=SimpleNamespace(buffer_bytes=lambda sizes: size)))

    points = [point(s) for s in (4, 5, 2, 12, 3, 3, 4, 10)]
    parts = split_to_fit(points, 10)
    assert [[p.size for p in part] for part in parts] == [[4, 5], [2], [12], [3, 3, 4], [10]]
    assert split_to_fit(points[3:], 10) == parts[2:]  # what a resumed run finds still to measure
    assert group_memory_limit(SimpleNamespace(memory_bytes=1000)) == 800


def test_an_unknown_interleave_scope_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('interleave = "everything"\n' + CAMPAIGN)
    with pytest.raises(GpuperfError, match=r"bad\.toml: interleave: expected one of kernel, campaign"):
        load_campaign(path)


class Killed(BaseException):
    """As a kill would: no ``except Exception`` catches it."""


class RoundCounter:
    """Counts interleaved rounds and kills the run at round ``kill_at`` (None: never)."""

    def __init__(self, monkeypatch, kill_at: int | None) -> None:
        from gpuperf.measure import interleave

        self.calls, self.kill_at, self._real = 0, kill_at, interleave.one_round
        monkeypatch.setattr(interleave, "one_round", self)

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls == self.kill_at:
            raise Killed
        return self._real(*args, **kwargs)

    def restart(self) -> None:
        """The next run: counted from zero, not killed."""
        self.calls, self.kill_at = 0, None


def _killed_in_third_cycle(tmp_path: Path, monkeypatch) -> tuple[Campaign, RoundCounter]:
    """CAMPAIGN (two groups, one per size, of two variants, three cycles each) from tmp_path/pair.toml, run
    into tmp_path/s.db and killed in its first group's third cycle; the counter, to restart, with it."""
    path = tmp_path / "pair.toml"
    path.write_text(CAMPAIGN)
    campaign = load_campaign(path)
    rounds = RoundCounter(monkeypatch, kill_at=5)
    with pytest.raises(Killed):
        run_campaign(campaign, tmp_path / "s.db", progress=False)
    return campaign, rounds


@pytest.mark.opencl
def test_an_interleaved_group_killed_mid_way_resumes_at_its_next_cycle(tmp_path: Path, monkeypatch) -> None:
    campaign, rounds = _killed_in_third_cycle(tmp_path, monkeypatch)
    with Store(tmp_path / "s.db", create=False) as store:
        assert store.rows("pair") == []  # the group was not finished
        kept = store.db.execute("SELECT kernel, cycle, round FROM rounds ORDER BY kernel, cycle").fetchall()
    assert [cycle for _, cycle, _ in kept] == [0, 1, 0, 1]  # both variants' first two cycles were kept
    kept_kernel_s = sum(json.loads(text)["kernel_s"] for _, _, text in kept)
    status = {row["campaign"]: row for row in campaign_status(tmp_path / "s.db")}["pair"]
    assert (status["done"], status["remaining"], status["partly_cycled"]) == (0, 4, 2)  # before: no word of them
    rounds.restart()
    report = run_campaign(campaign, tmp_path / "s.db", progress=False)
    assert report.measured == 4 and rounds.calls == 2 + 6  # the first group's last cycle, the second's three
    assert {row["campaign"]: row for row in campaign_status(tmp_path / "s.db")}["pair"]["partly_cycled"] == 0
    with Store(tmp_path / "s.db", create=False) as store:
        rows = {(r["kernel"], r["sizes"]["n"]): r for r in store.rows("pair")}
        assert store.db.execute("SELECT COUNT(*) FROM rounds").fetchone()[0] == 0  # replaced by the points
    for kernel, cycle, text in kept:  # the first group (n = 64) resumed with the kept rounds as its first cycles
        assert rows[(kernel, 64)]["samples"][cycle] == pytest.approx(json.loads(text)["median"])
    assert all(len(r["samples"]) == 3 and r["repeats"] == 15 for r in rows.values())
    # The report counts this run's kernel time only: it counted the stopped run's reused rounds too
    assert report.kernel_s == pytest.approx(sum(r["kernel_total_s"] for r in rows.values()) - kept_kernel_s)


@pytest.mark.opencl
def test_rounds_timed_another_way_are_not_reused(tmp_path: Path, monkeypatch) -> None:
    _, rounds = _killed_in_third_cycle(tmp_path, monkeypatch)
    path = tmp_path / "pair.toml"
    path.write_text(CAMPAIGN.replace("min_repeats = 5", "min_repeats = 6"))  # edited before the rerun
    rounds.restart()
    run_campaign(load_campaign(path), tmp_path / "s.db", progress=False)
    assert rounds.calls == 6 + 6  # both groups timed from their first cycle
    with Store(tmp_path / "s.db", create=False) as store:
        assert all(r["repeats"] == 18 for r in store.rows("pair"))


# -- cycles, resuming and the group's summary, on scripted launches ---------------------------------


def _round(median: float) -> dict[str, float]:
    return {"median": median, "launches": 1, "kernel_s": median, "wall_s": median, "fastest": median}


SETTINGS3 = TimingSettings(warmup=0, min_repeats=3, min_time_s=0, cycles=3)


def test_each_cycle_draws_its_order_from_the_seed_and_the_cycle() -> None:
    log: list[str] = []
    prepared = {i: _scripted(name, [1.0] * 12, log) for i, name in enumerate("abcd")}
    _cycles(prepared, SETTINGS3, seed=7)
    expected = [["abcd"[i] for i in np.random.default_rng([7, cycle]).permutation([0, 1, 2, 3])] for cycle in range(3)]
    assert [log[4 * c:4 * c + 4] for c in range(3)] == expected
    assert len({tuple(order) for order in expected}) > 1  # the orders differ from cycle to cycle


def test_a_resumed_group_times_only_the_cycles_each_variant_lacks() -> None:
    """a has 1 of 3 cycles done, b all 3 (and a 4th beyond the setting, ignored): only a is timed,
    in cycles 1 and 2; each cycle's new rounds go to on_cycle."""
    log: list[str] = []
    prepared = {0: _scripted("a", [2.0] * 6, log), 1: _scripted("b", [], log)}
    done = {0: [_round(1.0)], 1: [_round(5.0), _round(6.0), _round(7.0), _round(8.0)]}
    cycles = []
    rounds = _cycles(prepared, SETTINGS3, seed=0, done=done, on_cycle=lambda c, new: cycles.append((c, sorted(new))))
    assert log == ["a", "a"] and cycles == [(1, [0]), (2, [0])]
    assert rounds[0].medians == [1.0, 2.0, 2.0] and rounds[1].medians == [5.0, 6.0, 7.0]


def test_a_variant_keeps_its_fastest_launch_of_all_cycles() -> None:
    """Rounds 3, 1, 2 | 6, 5, 4 | 9, 8, 7: round medians 2, 5, 8, the fastest launch 1."""
    rounds = _cycles({0: _scripted("a", [3.0, 1.0, 2.0, 6.0, 5.0, 4.0, 9.0, 8.0, 7.0], [])}, SETTINGS3, seed=0)
    assert rounds[0].medians == [2.0, 5.0, 8.0] and rounds[0].fastest == 1.0


def test_a_cycle_that_times_nothing_is_not_reported() -> None:
    """The only variant fails in cycle 1 (no more launch times): cycle 0 alone is reported."""
    reported: list[tuple[int, list[int]]] = []
    rounds = _cycles({0: _scripted("a", [3.0, 1.0, 2.0], [])}, SETTINGS3, seed=0,
                     on_cycle=lambda c, new: reported.append((c, sorted(new))))
    assert isinstance(rounds[0], StopIteration) and reported == [(0, [0])]


def test_a_launch_that_loses_the_device_stops_the_group_naming_the_variant() -> None:
    from gpuperf.measure.devices import DeviceLost

    def lost(count: int) -> list[float]:
        raise DeviceLost("cudaErrorIllegalAddress")

    prepared = {0: _scripted("a", [1.0] * 9, []), 1: SimpleNamespace(launch=SimpleNamespace(run_many=lost))}
    with pytest.raises(DeviceLost) as raised:
        _cycles(prepared, SETTINGS3, seed=0)
    assert raised.value.variant_index == 1


def test_paired_ratio_is_the_median_of_the_per_cycle_ratios() -> None:
    """Ratios 0.25, 2, 2: median 2 (the ratio of the medians would be 2 / 2 = 1)."""
    assert paired_ratio([1.0, 2.0, 4.0], [4.0, 1.0, 2.0]) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="non-zero length"):
        paired_ratio([], [])


def _group(monkeypatch, launches: dict[int, list[float]], log: list[str], warmup_fails: bool = False):
    """measure_interleaved's prepare and measurement replaced: each variant's launches are scripted,
    warm-up launches logged, closes counted; the result is each variant's Timing."""
    from gpuperf.measure import interleave
    from gpuperf.measure.devices import RunFailed

    closed: list[int] = []

    def prepare(compiled, sizes, verify, seed, shared=None):
        queue = iter(launches[compiled])

        def run_many(count):
            log.append(f"{compiled}x{count}")
            if warmup_fails and compiled == 1:
                raise RunFailed("out of resources")
            return [next(queue) for _ in range(count)]

        return SimpleNamespace(launch=SimpleNamespace(run_many=run_many, close=lambda: closed.append(compiled)))

    monkeypatch.setattr(interleave, "prepare", prepare)
    monkeypatch.setattr(interleave, "measurement", lambda compiled, device, prepared, timing, settings: timing)
    return closed


def test_a_group_is_steady_when_its_cycle_medians_spread_at_most_the_iqr_limit(monkeypatch) -> None:
    """Round medians 1, 2, 3 ms: interquartile range 1 ms over the median 2 ms is 0.5, the limit
    exactly: steady at limit 0.5, not at the default 0.1 (however small 1 ms is). Warm-up runs first."""
    launches = [1e-3] * 3 + [2e-3] * 3 + [3e-3] * 3
    for limit, steady in ((0.5, True), (0.1, False)):
        log: list[str] = []
        _group(monkeypatch, {0: launches}, log)
        settings = TimingSettings(warmup=0, min_repeats=3, min_time_s=0, cycles=3, iqr_limit=limit)
        (timing,) = measure_interleaved([Variant(0, {})], None, settings)
        assert timing.samples == (1e-3, 2e-3, 3e-3) and timing.stable is steady
    log = []
    _group(monkeypatch, {0: [1e-3] * 11}, log)
    measure_interleaved([Variant(0, {})], None, TimingSettings(warmup=2, min_repeats=3, min_time_s=0, cycles=3))
    assert log == ["0x2", "0x3", "0x3", "0x3"]


def test_an_interleaved_points_minimum_is_its_fastest_launch_of_all_cycles(monkeypatch) -> None:
    """The round medians are the samples (3, 2, 4 ms); the minimum is the fastest single launch (1 ms)."""
    _group(monkeypatch, {0: [3e-3, 1e-3, 5e-3, 2e-3, 2e-3, 2e-3, 4e-3, 4e-3, 4e-3]}, [])
    settings = TimingSettings(warmup=0, min_repeats=3, min_time_s=0, cycles=3)
    (timing,) = measure_interleaved([Variant(0, {})], None, settings)
    assert timing.samples == (3e-3, 2e-3, 4e-3) and timing.median == 3e-3 and timing.minimum == 1e-3


def test_a_variant_whose_warm_up_fails_fails_alone_and_its_launch_is_closed(monkeypatch) -> None:
    from gpuperf.measure.devices import RunFailed

    log: list[str] = []
    closed = _group(monkeypatch, {0: [1e-3] * 8, 1: []}, log, warmup_fails=True)
    settings = TimingSettings(warmup=2, min_repeats=3, min_time_s=0, cycles=2)
    first, second = measure_interleaved([Variant(0, {}), Variant(1, {})], None, settings)
    assert first.samples == (1e-3, 1e-3) and isinstance(second, RunFailed)
    assert sorted(closed) == [0, 1]  # each launch closed once, the failed one included


# -- which cycles a point was timed in -----------------------------------------------------------------


def _cycle_groups(store_path: Path, campaign: str) -> dict[tuple[str, int], str]:
    """Each stored point's cycle group, by (kernel, n)."""
    with Store(store_path, create=False) as store:
        return {(r["kernel"], r["sizes"]["n"]): r["provenance"]["cycle_group"] for r in store.rows(campaign)}


@pytest.mark.opencl
def test_each_interleaved_group_records_its_own_cycle_group_and_export_gives_it(tmp_path: Path) -> None:
    path = tmp_path / "all.toml"
    path.write_text('interleave = "campaign"\n' + CAMPAIGN.replace('name = "pair"', 'name = "all"'))
    with pytest.warns(UserWarning):  # cut in file order: both sizes of the first variant, then of the second
        run_campaign(load_campaign(path), tmp_path / "s.db", progress=False, memory_limit=200_000)
    groups = _cycle_groups(tmp_path / "s.db", "all")
    first, second = sorted({kernel for kernel, _ in groups})
    assert groups[(first, 64)] == groups[(first, 128)] != groups[(second, 64)] == groups[(second, 128)]
    table = store_table(tmp_path / "s.db", campaign="all", features=False, cycle_times=True)
    assert dict(zip(zip(table["kernel_key"], table["n"]), table["cycle_group"])) == groups
    assert "cycle_group" not in store_table(tmp_path / "s.db", campaign="all", features=False).columns
    with pytest.warns(UserWarning):  # the same groups timed again by another run: other cycles
        run_campaign(load_campaign(path), tmp_path / "again.db", progress=False, memory_limit=200_000)
    assert not set(_cycle_groups(tmp_path / "again.db", "all").values()) & set(groups.values())


@pytest.mark.opencl
def test_a_resumed_group_keeps_its_cycle_group(tmp_path: Path, monkeypatch) -> None:
    campaign, rounds = _killed_in_third_cycle(tmp_path, monkeypatch)
    with Store(tmp_path / "s.db", create=False) as store:
        kept = {json.loads(text)["cycle_group"] for (text,) in store.db.execute("SELECT round FROM rounds")}
    rounds.restart()
    run_campaign(campaign, tmp_path / "s.db", progress=False)
    groups = _cycle_groups(tmp_path / "s.db", "pair")
    (first, second) = sorted({kernel for kernel, _ in groups})
    assert len(kept) == 1 and groups[(first, 64)] == groups[(second, 64)] == kept.pop()  # the cycles it began
    assert groups[(first, 128)] == groups[(second, 128)] != groups[(first, 64)]


def test_a_store_written_before_cycle_groups_were_recorded_exports_an_empty_cycle_group(tmp_path: Path) -> None:
    row = {"campaign": "old", "kernel": "k", "sizes": {"n": 64}, "device": "opencl:0:0", "geometry": "64/64",
           "kernel_name": "k", "variant": "", "variant_params": {}, "kernel_spec": "k", "status": "ok",
           "time_s": 2.0, "samples": [1.0, 2.0, 3.0], "provenance": {"timing": {"cycles": 3}}}
    with Store(tmp_path / "old.db") as store:
        store.add(row)
    table = store_table(tmp_path / "old.db", features=False, cycle_times=True)
    assert table["cycle_times_s"].tolist() == ["1.0;2.0;3.0"] and table["cycle_group"].tolist() == [""]
