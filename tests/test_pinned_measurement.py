"""Measurement bookkeeping that mutation testing showed untested: the OpenCL event interval, the
bounds of a round and of a batch, batch sizing by the median, ``cycles`` in the resumed-settings
check, and the kernel-time / first-launch / wall-time / measured_at fields. Device times, clocks and
launches are faked, so every test is fast and deterministic."""

from __future__ import annotations

import re
import textwrap
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpuperf.errors import GpuperfError
from gpuperf.kernels.catalog import get_kernel
from gpuperf.measure import campaign as campaign_module
from gpuperf.measure import interleave, opencl, timing
from gpuperf.measure.interleave import Variant, measure_interleaved
from gpuperf.measure.store import Store
from gpuperf.measure.timing import (
    MAX_BATCH, Measurement, Prepared, TimingSettings, measurement, one_round, prepare, time_kernel,
)


class FakeClock:
    """``time.perf_counter`` that moves only when a test advances it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    """A fake clock for the timing module (one_round, prepare) and the campaign module (run_campaign)."""
    fake = FakeClock()
    monkeypatch.setattr(timing, "time", fake)
    monkeypatch.setattr(campaign_module, "time", fake)
    return fake


class Scripted:
    """A stand-in for ``Launch.run_many``: every launch takes ``device_s``; each call advances the
    clock by ``wall_per_call`` (the host's wait for the batch); the batch sizes asked for are kept."""

    def __init__(self, device_s, clock: FakeClock | None = None, wall_per_call: float = 0.0) -> None:
        self.device_s = device_s if callable(device_s) else (lambda index: device_s)
        self.clock, self.wall_per_call = clock, wall_per_call
        self.batches: list[int] = []
        self.launched = 0

    def __call__(self, count: int) -> list[float]:
        self.batches.append(count)
        times = [self.device_s(self.launched + i) for i in range(count)]
        self.launched += count
        if self.clock is not None:
            self.clock.now += self.wall_per_call
        return times


# -- 1. the OpenCL event interval ----------------------------------------------------------------------
class FakeEvent:
    """A PyOpenCL event's profiling counters, in nanoseconds."""

    def __init__(self, queued: int, submit: int, start: int, end: int) -> None:
        self.profile = SimpleNamespace(queued=queued, submit=submit, start=start, end=end)
        self.waited = False

    def wait(self) -> None:
        self.waited = True


def _launch(device_kernel_count: int, events: list[FakeEvent]) -> opencl.OpenCLLaunch:
    """An OpenCLLaunch without buffers whose enqueues return ``events`` in order."""
    launch = object.__new__(opencl.OpenCLLaunch)
    launch.compiled = SimpleNamespace(device_kernel_count=device_kernel_count, kernel=SimpleNamespace(key="k"),
                                      device=SimpleNamespace(context="context"))
    launch.queue = "queue"
    pending = iter(events)
    launch._enqueue = lambda wait_for=None: next(pending)
    return launch


def test_an_opencl_launch_is_timed_from_its_events_start_to_its_end_not_from_when_it_was_queued() -> None:
    """Launches enqueued back to back wait in the queue behind each other: the time from queued (or
    submitted) to end would count that wait. Only COMMAND_START to COMMAND_END is the kernel's."""
    events = [FakeEvent(queued=0, submit=1_000, start=50_000, end=52_500),       # 2.5 us
              FakeEvent(queued=100, submit=2_000, start=52_600, end=56_600),     # 4 us
              FakeEvent(queued=200, submit=3_000, start=56_700, end=57_700)]     # 1 us
    times = _launch(1, events).run_many(3)
    assert times == pytest.approx([2.5e-6, 4e-6, 1e-6], rel=1e-12)
    assert events[-1].waited  # the host waited for the last launch before reading the counters
    assert _launch(1, [FakeEvent(0, 10, 300, 800)]).run() == pytest.approx(5e-7, rel=1e-12)


def test_a_program_of_several_device_kernels_is_timed_from_its_markers_end_to_its_last_kernels_end(monkeypatch) -> None:
    """The gated span: the marker before a launch ends when the previous launch has, so the span from
    its end to the end of the launch's last kernel is that launch's time, queueing excluded."""
    markers = [FakeEvent(queued=0, submit=0, start=1_000, end=2_000),
               FakeEvent(queued=0, submit=0, start=9_000, end=10_000)]
    lasts = [FakeEvent(queued=0, submit=0, start=4_000, end=10_000),   # 8 us after its marker's end
             FakeEvent(queued=0, submit=0, start=12_000, end=13_000)]  # 3 us after its marker's end
    gate_status: list[object] = []
    marker_queue = iter(markers)
    fake_cl = SimpleNamespace(
        UserEvent=lambda context: SimpleNamespace(set_status=gate_status.append),
        enqueue_marker=lambda queue, wait_for=None: next(marker_queue),
        command_execution_status=SimpleNamespace(COMPLETE="complete"),
    )
    monkeypatch.setattr(opencl, "cl", fake_cl)
    times = _launch(2, lasts).run_many(2)
    assert times == pytest.approx([8e-6, 3e-6], rel=1e-12)
    assert gate_status == ["complete"] and lasts[-1].waited


# -- 2. the bounds of a round and of a batch --------------------------------------------------------
def test_a_round_stops_once_max_round_s_of_wall_time_has_passed(clock: FakeClock) -> None:
    """Each batch takes 2.5 s of wall time while the minimum time is never reached: after the first
    batch (2.5 s) the round goes on; after the second (5.0 s, max_round_s exactly) it stops, and its
    wall time is the clock's."""
    run = Scripted(1e-3, clock, wall_per_call=2.5)
    settings = TimingSettings(warmup=0, min_repeats=5, min_time_s=100.0, max_repeats=100_000, max_round_s=5.0)
    samples, wall = one_round(run, settings)
    assert len(run.batches) == 2 and len(samples) == sum(run.batches) == 5 + MAX_BATCH
    assert wall == 5.0
    # With a longer limit the same launches go on
    clock.now = 0.0
    longer = Scripted(1e-3, clock, wall_per_call=2.5)
    one_round(longer, TimingSettings(warmup=0, min_repeats=5, min_time_s=100.0, max_repeats=100_000,
                                     max_round_s=7.5))
    assert len(longer.batches) == 3


def test_a_batch_is_cut_to_what_is_left_of_max_round_s(clock: FakeClock) -> None:
    """Launches of 1/32 s (the host waits as long as the device runs) and a minimum time of 20 s: after
    the first 5 launches (0.15625 s) the next batch would be MAX_BATCH (8 s), running the round to
    8.16 s although max_round_s is 5 s; it takes the 155 launches that fill the 5 s instead."""
    device_s = 1 / 32
    batches = []

    def run(count: int) -> list[float]:
        batches.append(count)
        clock.now += count * device_s
        return [device_s] * count

    samples, wall = one_round(run, TimingSettings(warmup=0, min_repeats=5, min_time_s=20.0, max_repeats=1000,
                                                  max_round_s=5.0))
    assert batches == [5, 155] and len(samples) == 160
    assert wall == 5.0


def test_max_round_s_does_not_stop_a_round_before_min_repeats(clock: FakeClock) -> None:
    """Wall time past max_round_s at once (a slow first batch) still leaves min_repeats samples."""
    run = Scripted(1e-3, clock, wall_per_call=60.0)
    samples, wall = one_round(run, TimingSettings(warmup=0, min_repeats=5, min_time_s=100.0, max_repeats=1000,
                                                  max_round_s=5.0))
    assert run.batches == [5] and len(samples) == 5 and wall == 60.0


def test_a_batch_holds_at_most_max_batch_launches() -> None:
    """A timer that reads 0 (too coarse for the kernel) would ask for ~1e8 launches at once; batches
    are cut at MAX_BATCH (256), so the wall-time bound is checked between batches, and the last
    batch takes only what max_repeats leaves."""
    assert MAX_BATCH == 256
    run = Scripted(0.0)
    samples, _ = one_round(run, TimingSettings(warmup=0, min_repeats=5, min_time_s=0.1, max_repeats=600))
    assert run.batches == [5, 256, 256, 83] and len(samples) == 600


# -- 3. batch sizing from the median -----------------------------------------------------------------
def test_the_next_batch_is_sized_by_the_median_launch_not_the_mean_or_the_fastest() -> None:
    """First batch 1/128, 1/64, 1/64, 3/128 and one slow outlier of 15/16 s: 1 s summed, median 1/64,
    mean 0.2, fastest 1/128. min_time_s 1.5 still needs 0.5 s: 32 launches at the median (the mean
    would ask for 3, the fastest for 64, the slowest for 1); 32 launches of 1/64 s then reach it."""
    first = [1 / 128, 1 / 64, 15 / 16, 1 / 64, 3 / 128]
    run = Scripted(lambda index: first[index] if index < len(first) else 1 / 64)
    samples, _ = one_round(run, TimingSettings(warmup=0, min_repeats=5, min_time_s=1.5, max_repeats=1000))
    assert run.batches == [5, 32] and len(samples) == 37 and sum(samples) == 1.5


# -- 4. cycles in the resumed-settings check --------------------------------------------------------
CAMPAIGN = """
name = "resumed"
[[kernels]]
kernel = "vector_copy"
sizes = [{n = 4096}]
[timing]
warmup = 0
min_repeats = 3
min_time_s = 0
"""


def _stored_point(store_path: Path, settings: TimingSettings, campaign: str = "resumed") -> None:
    """One stored point of ``campaign`` timed with ``settings`` (as its provenance records them)."""
    with Store(store_path) as store:
        store.add({"campaign": campaign, "kernel": "vector_copy", "sizes": {"n": 4096}, "device": "fake:0",
                   "geometry": "4096x1x1/256x1x1", "kernel_name": "vector_copy", "variant": "",
                   "variant_params": {}, "kernel_spec": "vector_copy", "status": "ok", "time_s": 1e-3,
                   "samples": [1e-3], "provenance": {"timing": asdict(settings), "seed": 0}})


def _campaign(tmp_path: Path, cycles: int) -> campaign_module.Campaign:
    path = tmp_path / "resumed.toml"
    path.write_text(textwrap.dedent(CAMPAIGN) + f"cycles = {cycles}\n")
    return campaign_module.load_campaign(path)


@pytest.mark.parametrize(("stored", "here"), [(1, 3), (3, 1), (3, 4)])
def test_resuming_with_another_number_of_cycles_is_refused(tmp_path: Path, stored: int, here: int) -> None:
    """Points timed once each (cycles = 1: samples are launches) and points timed interleaved (cycles
    above 1: samples are round medians) are different measurements: a rerun with another ``cycles``
    is refused as any other [timing] change is, naming the setting."""
    campaign = _campaign(tmp_path, here)
    _stored_point(tmp_path / "s.db", TimingSettings(**{**asdict(campaign.settings), "cycles": stored}))
    with Store(tmp_path / "s.db") as store:
        with pytest.raises(GpuperfError, match=rf"campaign 'resumed' was timed there with other settings "
                                               rf"\(cycles {stored} there, {here} here\)"):
            campaign_module._check_same_timing(store, campaign, tmp_path / "s.db")
        campaign_module._check_same_timing(store, _campaign(tmp_path, stored), tmp_path / "s.db")  # the same: fine


def test_run_campaign_refuses_a_resume_with_other_cycles_before_measuring(tmp_path: Path, monkeypatch) -> None:
    """The same through run_campaign (on a fake device): refused before anything is compiled or stored."""
    compiled: list[object] = []
    device = SimpleNamespace(name="fake:0", memory_bytes=2**30, compile=compiled.append, provenance=dict)
    monkeypatch.setattr(campaign_module, "open_device", lambda name: device)
    campaign = _campaign(tmp_path, 3)
    _stored_point(tmp_path / "s.db", TimingSettings(**{**asdict(campaign.settings), "cycles": 1}))
    with pytest.raises(GpuperfError, match=r"cycles 1 there, 3 here"):
        campaign_module.run_campaign(campaign, tmp_path / "s.db", progress=False)
    assert compiled == []
    with Store(tmp_path / "s.db", create=False) as store:
        assert len(store.rows("resumed")) == 1


# -- 5. bookkeeping: kernel_total_s, first_launch_s, wall_s, measured_at -----------------------------
class FakeLaunch:
    """A bound kernel whose first launch takes ``host_s`` of wall time and ``device_s`` on the device."""

    def __init__(self, clock: FakeClock, host_s: float, device_s: float) -> None:
        self.clock, self.host_s, self.device_s = clock, host_s, device_s
        self.closed = False

    def run(self) -> float:
        self.clock.now += self.host_s
        return self.device_s

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(("host_s", "device_s", "first_launch_s"), [(0.5, 0.125, 0.375), (0.125, 0.5, 0.0)])
def test_first_launch_s_is_the_first_launchs_host_time_beyond_its_kernel_time(
        clock: FakeClock, host_s: float, device_s: float, first_launch_s: float) -> None:
    """What the first launch cost the host beyond the kernel itself (a driver's JIT): its wall time
    less its device time, never negative (a host timer coarser than the device's)."""
    launch = FakeLaunch(clock, host_s, device_s)
    compiled = SimpleNamespace(kernel=get_kernel("vector_copy"), bind=lambda sizes, inputs: launch)
    prepared = prepare(compiled, {"n": 4096}, verify=False)
    assert prepared.first_s == device_s and prepared.first_launch_s == first_launch_s
    assert not prepared.verified and not launch.closed


def test_a_measurements_kernel_total_counts_its_first_launch_warm_ups_and_every_round() -> None:
    """kernel_total_s: the device time of everything launched (first launch, warm-ups, each round
    taken, the re-measured ones too); first_launch_s and round_wall_s are the prepared point's and
    the kept round's."""
    noisy, steady = [1.0, 5.0, 1.0, 5.0, 1.0], [2.0] * 5
    script = [0.25, 0.25] + noisy + steady
    run = Scripted(lambda index: script[index])
    timed = time_kernel(run, TimingSettings(warmup=2, min_repeats=5, min_time_s=0, iqr_limit=0.1, max_retries=2))
    assert timed.kernel_total_s == 0.5 + 13.0 + 10.0
    prepared = Prepared(launch=None, sizes={"n": 4096}, global_size=(4096, 1, 1), local_size=(256, 1, 1),
                        first_s=0.125, first_launch_s=0.75, verified=True, max_rel_error=0.0)
    compiled = SimpleNamespace(kernel=SimpleNamespace(key="vector_copy"), compile_s=1.5, timer="kernel_event")
    device = SimpleNamespace(name="fake:0", provenance=lambda: {"device_name": "Fake"})
    record = measurement(compiled, device, prepared, timed, TimingSettings())
    assert record.kernel_total_s == 0.125 + 23.5
    assert record.first_launch_s == 0.75 and record.compile_s == 1.5
    assert record.round_wall_s == timed.round_wall_s and record.repeats == 5
    assert record.provenance["timer"] == "kernel_event" and record.provenance["device_name"] == "Fake"


def _interleaved_group(monkeypatch, clock: FakeClock, device_s: float, wall_per_call: float) -> dict[int, Scripted]:
    """measure_interleaved's prepare and measurement replaced: launches are Scripted on the fake clock."""
    runs: dict[int, Scripted] = {}

    def fake_prepare(compiled, sizes, verify, seed, shared=None):
        runs[compiled] = Scripted(device_s, clock, wall_per_call)
        return SimpleNamespace(launch=SimpleNamespace(run_many=runs[compiled], close=lambda: None))

    monkeypatch.setattr(interleave, "prepare", fake_prepare)
    monkeypatch.setattr(interleave, "measurement", lambda compiled, device, prepared, timing, settings: timing)
    return runs


def test_an_interleaved_points_rounds_keep_their_kernel_and_wall_times(monkeypatch, clock: FakeClock) -> None:
    """Each cycle's round keeps its launches, its kernel time (their sum) and its wall time; the
    point's Timing sums them over the cycles, a resumed group's reused rounds included."""
    _interleaved_group(monkeypatch, clock, device_s=1 / 1024, wall_per_call=0.5)
    settings = TimingSettings(warmup=0, min_repeats=2, min_time_s=0, cycles=3)
    cycles: dict[int, dict[int, dict[str, float]]] = {}
    (timed,) = measure_interleaved([Variant(0, {})], None, settings,
                                   on_cycle=lambda cycle, rounds: cycles.setdefault(cycle, rounds))
    assert sorted(cycles) == [0, 1, 2]
    for rounds in cycles.values():
        assert rounds[0] == {"median": 1 / 1024, "launches": 2, "kernel_s": 2 / 1024, "wall_s": 0.5,
                             "fastest": 1 / 1024}
    assert timed.launches == 6 and timed.kernel_total_s == 6 / 1024 and timed.round_wall_s == 1.5
    # Resumed after its first cycle: that cycle's stored round counts as it was stored
    _interleaved_group(monkeypatch, clock, device_s=1 / 1024, wall_per_call=0.5)
    done = {0: [{"median": 1 / 512, "launches": 4, "kernel_s": 4 / 512, "wall_s": 7.0, "fastest": 1 / 2048}]}
    (resumed,) = measure_interleaved([Variant(0, {})], None, settings, done=done)
    assert resumed.launches == 4 + 4 and resumed.kernel_total_s == 4 / 512 + 4 / 1024
    assert resumed.round_wall_s == 7.0 + 1.0 and resumed.minimum == 1 / 2048


def test_warm_up_launches_count_in_the_kernel_total_whether_timed_alone_or_interleaved(
        monkeypatch, clock: FakeClock) -> None:
    """Two warm-ups and three timed launches of 1/1024 s each: 5/1024 s alone; interleaved over
    two cycles, the warm-ups once and three launches per cycle: 8/1024 s."""
    _interleaved_group(monkeypatch, clock, device_s=1 / 1024, wall_per_call=0.0)
    alone = time_kernel(lambda count: [1 / 1024] * count, TimingSettings(warmup=2, min_repeats=3, min_time_s=0))
    assert alone.kernel_total_s == 5 / 1024
    settings = TimingSettings(warmup=2, min_repeats=3, min_time_s=0, cycles=2)
    (interleaved,) = measure_interleaved([Variant(0, {})], None, settings)
    assert interleaved.launches == 6 and interleaved.kernel_total_s == 8 / 1024


def _fake_measurement(index: int) -> Measurement:
    return Measurement(kernel="vector_copy", sizes={"n": 4096 * index}, device="fake:0", time_s=1e-3,
                       time_s_min=1e-3, time_s_iqr=0.0, repeats=5, retries=0, stable=True, verified=True,
                       max_rel_error=0.0, compile_s=0.0, first_launch_s=0.25 * index, kernel_total_s=0.5 * index,
                       round_wall_s=1.0, global_size=(4096 * index, 1, 1), local_size=(256, 1, 1),
                       samples=(1e-3,) * 5, provenance={"timer": "kernel_event", "timing": {}})


UTC_SECONDS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00")


def test_a_campaigns_report_and_rows_carry_kernel_first_launch_and_wall_times(
        tmp_path: Path, monkeypatch, clock: FakeClock) -> None:
    """On a fake device and clock: a build takes 0.5 s, each point 2 s. The report's wall time is the
    whole run's (0.5 + 2 x 2 s), its kernel and first-launch times the points' sums; each row keeps
    its point's, and is stamped with the UTC time it was stored."""
    taken: list[int] = []

    def compile_(kernel):
        clock.now += 0.5
        return SimpleNamespace(compile_s=0.5)

    def measure_compiled(compiled, device, sizes, verify, settings, seed, shared):
        clock.now += 2.0
        taken.append(sizes["n"] // 4096)
        return _fake_measurement(taken[-1])

    device = SimpleNamespace(name="fake:0", memory_bytes=2**30, compile=compile_, provenance=dict)
    monkeypatch.setattr(campaign_module, "open_device", lambda name: device)
    monkeypatch.setattr(campaign_module, "measure_compiled", measure_compiled)
    path = tmp_path / "c.toml"
    path.write_text('name = "c"\n[[kernels]]\nkernel = "vector_copy"\nsizes = [{n = 4096}, {n = 8192}]\n')
    before = datetime.now(timezone.utc).replace(microsecond=0)
    report = campaign_module.run_campaign(campaign_module.load_campaign(path), tmp_path / "s.db", progress=False)
    after = datetime.now(timezone.utc)
    assert taken == [1, 2] and report.measured == 2
    assert report.wall_s == 4.5 and report.compile_s == 0.5
    assert report.kernel_s == 0.5 + 1.0 and report.first_launch_s == 0.25 + 0.5
    with Store(tmp_path / "s.db", create=False) as store:
        rows = {r["sizes"]["n"] // 4096: r for r in store.rows("c")}
    for index, row in rows.items():
        assert row["kernel_total_s"] == 0.5 * index and row["first_launch_s"] == 0.25 * index
        assert UTC_SECONDS.fullmatch(row["measured_at"]), row["measured_at"]
        assert before <= datetime.fromisoformat(row["measured_at"]) <= after


def test_a_rows_own_measured_at_is_kept_and_a_missing_one_is_the_utc_time_it_was_stored(tmp_path: Path) -> None:
    row = {"campaign": "c", "kernel": "k", "device": "d", "geometry": "g", "kernel_name": "k", "variant": "",
           "variant_params": {}, "kernel_spec": "k", "status": "ok", "time_s": 1e-6}
    before = datetime.now(timezone.utc).replace(microsecond=0)
    with Store(tmp_path / "s.db") as store:
        store.add({**row, "sizes": {"n": 1}, "measured_at": "2021-02-03T04:05:06+00:00"})
        store.add({**row, "sizes": {"n": 2}})
        stamps = {r["sizes"]["n"]: r["measured_at"] for r in store.rows("c")}
    after = datetime.now(timezone.utc)
    assert stamps[1] == "2021-02-03T04:05:06+00:00"
    assert UTC_SECONDS.fullmatch(stamps[2]) and before <= datetime.fromisoformat(stamps[2]) <= after
