"""Interleaved timing: a group of points (a kernel's variants at one size, or a whole campaign with
``interleave = "campaign"``) timed in alternating rounds.

On a shared machine a kernel's speed drifts by up to 2x over seconds (other tenants, memory state),
while each round's samples agree within a few percent. Timing variant A now and variant B a minute
later then measures the machine as much as the variants. Interleaving times every variant of a
group once per cycle, in a shuffled order, for ``settings.cycles`` cycles; a variant's samples are
its per-cycle round medians, in cycle order, so the ratio of two variants can be taken cycle by
cycle (``paired_ratio``) under the same machine state.

Per variant: ``time_s`` is the median over cycles of the round medians, ``time_s_iqr`` their
interquartile range, ``time_s_min`` the fastest launch, ``repeats`` all launches timed.

A group can resume: given each variant's rounds of earlier cycles (``done``), it times only the
cycles each variant lacks, and reports every finished cycle's new rounds (``on_cycle``) so that a
caller can keep them. Each cycle's order is drawn from (seed, cycle), so it does not depend on
where a run resumed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpuperf.measure.devices import Compiled, Device, device_lost
from gpuperf.measure.timing import (
    Measurement, Prepared, SharedInputs, Timing, TimingSettings, measurement, one_round, prepare, summarize,
)


@dataclass(frozen=True)
class Variant:
    """One member of an interleaved group: a built kernel, its sizes and whether to verify it."""

    compiled: Compiled
    sizes: Mapping[str, Any]
    verify: bool = True


Round = dict[str, float]  # one variant's round: median, launches, kernel_s, wall_s, fastest
OnCycle = Callable[[int, dict[int, Round]], None]


def measure_interleaved(variants: Sequence[Variant], device: Device, settings: TimingSettings,
                        seed: int = 0, on_round: Callable[[], None] = lambda: None,
                        done: Mapping[int, Sequence[Round]] | None = None,
                        on_cycle: OnCycle = lambda cycle, rounds: None) -> list[Measurement | Exception]:
    """Time ``variants`` in ``settings.cycles`` interleaved cycles; per variant its Measurement, or the
    exception that stopped it (RunFailed, VerifyFailed) while the others go on; a failure that left
    the device unusable (:func:`~gpuperf.measure.devices.device_lost`) stops the group and is raised
    with ``variant_index``, the rounds of finished cycles already passed to ``on_cycle``. ``on_round`` is
    called after each variant's round (for a progress bar: variants x cycles calls at most).
    ``done`` maps a variant's index to its rounds of cycles already timed; ``on_cycle(cycle,
    rounds)`` receives each cycle's new rounds by variant index when the cycle ends."""
    results: list[Measurement | Exception | None] = [None] * len(variants)
    prepared: dict[int, Prepared] = {}
    warmed_s: dict[int, float] = {}  # each variant's warm-up launches, part of what its timing cost
    shared = SharedInputs()  # a space's variants at one size share their inputs and reference outputs
    try:
        for index, variant in enumerate(variants):
            try:
                prepared[index] = prepare(variant.compiled, variant.sizes, variant.verify, seed, shared)
                if settings.warmup:
                    warmed_s[index] = float(sum(prepared[index].launch.run_many(settings.warmup)))
            except Exception as exc:  # noqa: BLE001 - recorded for this variant, the group goes on
                failed = prepared.pop(index, None)
                if failed is not None:
                    failed.launch.close()
                _stop_if_device_lost(exc, index)
                results[index] = exc
        for index, rounds in _cycles(prepared, settings, seed, on_round, done, on_cycle).items():
            if isinstance(rounds, Exception):
                results[index] = rounds
                continue
            median, _, iqr = summarize(rounds.medians)
            spread = iqr / median if median > 0 else 0.0
            timing = Timing(tuple(rounds.medians), median, rounds.fastest, iqr, 0, spread <= settings.iqr_limit,
                            rounds.wall_s, rounds.kernel_s + warmed_s.get(index, 0.0), rounds.launches)
            results[index] = measurement(variants[index].compiled, device, prepared[index], timing, settings)
    finally:
        for ready in prepared.values():
            ready.launch.close()
    return [r if r is not None else RuntimeError("not measured") for r in results]


@dataclass
class _Rounds:
    """One variant's rounds so far."""

    medians: list[float] = field(default_factory=list)
    launches: int = 0
    kernel_s: float = 0.0
    wall_s: float = 0.0
    fastest: float = float("inf")

    def add(self, taken: Round) -> None:
        self.medians.append(float(taken["median"]))
        self.launches += int(taken["launches"])
        self.kernel_s += float(taken["kernel_s"])
        self.wall_s += float(taken["wall_s"])
        self.fastest = min(self.fastest, float(taken["fastest"]))


def _cycles(prepared: Mapping[int, Prepared], settings: TimingSettings, seed: int,
            on_round: Callable[[], None] = lambda: None, done: Mapping[int, Sequence[Round]] | None = None,
            on_cycle: OnCycle = lambda cycle, rounds: None) -> dict[int, _Rounds | Exception]:
    """Every variant's rounds, each cycle timing each variant that lacks it once in an order drawn
    from (seed, cycle); a variant whose launch fails is dropped from later cycles with its exception."""
    rounds: dict[int, _Rounds | Exception] = {}
    for index in prepared:
        rounds[index] = _Rounds()
        for taken in (done or {}).get(index, ())[:settings.cycles]:
            rounds[index].add(taken)
    first = min((len(r.medians) for r in rounds.values() if isinstance(r, _Rounds)), default=settings.cycles)
    for cycle in range(first, settings.cycles):
        new: dict[int, Round] = {}
        for index in np.random.default_rng([seed, cycle]).permutation(list(prepared)).tolist():
            taken = rounds[index]
            if isinstance(taken, Exception) or len(taken.medians) > cycle:
                continue
            try:
                samples, wall = one_round(prepared[index].launch.run_many, settings)
            except Exception as exc:  # noqa: BLE001 - this variant stops, the others go on
                _stop_if_device_lost(exc, index)
                rounds[index] = exc
                continue
            new[index] = {"median": float(np.median(samples)), "launches": len(samples),
                          "kernel_s": float(sum(samples)), "wall_s": float(wall), "fastest": float(min(samples))}
            taken.add(new[index])
            on_round()
        if new:
            on_cycle(cycle, new)
    return rounds


def _stop_if_device_lost(exc: Exception, index: int) -> None:
    """Re-raise a failure that left the device unusable (every later variant would fail too),
    naming the variant that caused it (``exc.variant_index``)."""
    if device_lost(exc):
        exc.variant_index = index  # type: ignore[attr-defined]
        raise exc


def paired_ratio(first: Sequence[float], second: Sequence[float]) -> float:
    """Median over cycles of ``first[c] / second[c]``: the ratio of two interleaved variants' times."""
    a, b = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    if a.shape != b.shape or a.size == 0:
        raise ValueError(f"paired_ratio needs cycle times of equal, non-zero length, not {a.size} and {b.size}")
    return float(np.median(a / b))
