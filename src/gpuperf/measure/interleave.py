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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpuperf.measure.devices import Compiled, Device
from gpuperf.measure.timing import (
    Measurement, Prepared, Timing, TimingSettings, measurement, one_round, prepare, summarize,
)


@dataclass(frozen=True)
class Variant:
    """One member of an interleaved group: a built kernel, its sizes and whether to verify it."""

    compiled: Compiled
    sizes: Mapping[str, Any]
    verify: bool = True


def measure_interleaved(variants: Sequence[Variant], device: Device, settings: TimingSettings,
                        seed: int = 0, on_round: Callable[[], None] = lambda: None) -> list[Measurement | Exception]:
    """Time ``variants`` in ``settings.cycles`` interleaved cycles; per variant its Measurement, or the
    exception that stopped it (RunFailed, VerifyFailed) while the others go on. ``on_round`` is
    called after each variant's round (for a progress bar: variants x cycles calls at most)."""
    results: list[Measurement | Exception | None] = [None] * len(variants)
    prepared: dict[int, Prepared] = {}
    try:
        for index, variant in enumerate(variants):
            try:
                prepared[index] = prepare(variant.compiled, variant.sizes, variant.verify, seed)
                if settings.warmup:
                    prepared[index].launch.run_many(settings.warmup)
            except Exception as exc:  # noqa: BLE001 - recorded for this variant, the group goes on
                failed = prepared.pop(index, None)
                if failed is not None:
                    failed.launch.close()
                results[index] = exc
        for index, rounds in _cycles(prepared, settings, seed, on_round).items():
            if isinstance(rounds, Exception):
                results[index] = rounds
                continue
            median, _, iqr = summarize(rounds.medians)
            spread = iqr / median if median > 0 else 0.0
            timing = Timing(tuple(rounds.medians), median, rounds.fastest, iqr, 0, spread <= settings.iqr_limit,
                            rounds.wall_s, rounds.kernel_s, rounds.launches)
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


def _cycles(prepared: Mapping[int, Prepared], settings: TimingSettings, seed: int,
            on_round: Callable[[], None] = lambda: None) -> dict[int, _Rounds | Exception]:
    """Every variant's rounds, each cycle timing each variant once in a freshly shuffled order; a
    variant whose launch fails is dropped from later cycles with its exception."""
    rng = np.random.default_rng(seed)
    rounds: dict[int, _Rounds | Exception] = {index: _Rounds() for index in prepared}
    for _ in range(settings.cycles):
        for index in rng.permutation(list(prepared)).tolist():
            taken = rounds[index]
            if isinstance(taken, Exception):
                continue
            try:
                samples, wall = one_round(prepared[index].launch.run_many, settings)
            except Exception as exc:  # noqa: BLE001 - this variant stops, the others go on
                rounds[index] = exc
                continue
            taken.medians.append(float(np.median(samples)))
            taken.launches += len(samples)
            taken.kernel_s += sum(samples)
            taken.wall_s += wall
            taken.fastest = min(taken.fastest, min(samples))
            on_round()
    return rounds


def paired_ratio(first: Sequence[float], second: Sequence[float]) -> float:
    """Median over cycles of ``first[c] / second[c]``: the ratio of two interleaved variants' times."""
    a, b = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    if a.shape != b.shape or a.size == 0:
        raise ValueError(f"paired_ratio needs cycle times of equal, non-zero length, not {a.size} and {b.size}")
    return float(np.median(a / b))
