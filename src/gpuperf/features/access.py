"""Cache lines and sectors per warp-wide global access, by the LIFT stencil paper's method.

For each global access the element index of warp lanes 0..31 relative to lane 0 is
``sum(stride[a] * lid[a])``, where lanes walk local axis 0 first, then 1, then 2, within the
work-group's local sizes (a work-group smaller than 32 fills only part of a warp; the warps of
a group such as 24 x 4 or 48 differ in their lane patterns, and the lines are averaged over the
group's warps). Times the element size and divided by the line size (128 bytes for L1 cache
lines, 32 bytes for sectors), the number of distinct values is the number of lines the warp touches.
The strides come from the index expressions (loopy's ``lid_strides``) evaluated at the sizes.

Alignment. Buffers are assumed to start on a line boundary (cudaMalloc and OpenCL buffers are
aligned to at least 256 bytes), and an array at its loopy ``offset`` into its buffer. Where the whole index is affine in the inames and size
parameters, the byte offsets modulo the line size that lane 0 can start at follow from the
index's constant part and the values of the other inames (work-group ids, sequential loops, the
other warps' first lanes): the lines are averaged over those distinct offsets, each counted once.
Where that offset is not known (loopy's statistics path, an index whose non-lane part is not
affine, an array offset given at run time) the warp's lowest address is assumed to start a line.

Masked lanes. Where the domain switches some work-items off for an access (a prefetch's fetch
loop, whose last pass over a tile runs on a few lanes; ``gpuperf.features.lanes``), only the lanes
that make it count: each pass is analysed with its own lanes and its own values of the tied loops,
a warp with no such lane makes no request, and the figures are averaged over the requests.

An access whose index is not affine in the local ids, or depends on data (``a[idx[i]]``), is
listed as not analysable and left out of the averages; it is never guessed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from gpuperf.features.counts import Evaluated, EvaluatedAccess
from gpuperf.features.lanes import WARP_SIZE, LaneMask, local_ids

LINE_BYTES = 128
SECTOR_BYTES = 32


@dataclass(frozen=True)
class AccessLines:
    """Lines and sectors one warp touches for one global access (None where not analysable)."""

    variable: str
    direction: str
    instruction: str
    count: float  # accesses per launch (work-items, loopy's box count)
    lines: float | None  # per warp request
    sectors: float | None  # per warp request
    analysable: bool
    alignment: str  # "known", "averaged", "assumed" (lane 0 on a line boundary) or "" if not analysable
    reason: str | None
    requests: float  # warp requests per launch: warps with at least one lane making the access, in the passes made
    fewest_sectors: float | None = None  # the fewest sectors the same distinct bytes fit in, per warp request


@dataclass(frozen=True)
class WarpAccessSummary:
    accesses: tuple[AccessLines, ...]
    cache_lines_per_warp_access: float
    sectors_per_warp_access: float
    analysable_fraction: float
    max_cache_lines_per_warp_access: float = math.nan  # the largest of the accesses' average lines
    max_sectors_over_fewest: float = math.nan  # the largest of the accesses' sectors over their fewest


def warp_patterns(lid_strides: tuple[tuple[int, int], ...], local: tuple[int, int, int],
                  active: bytes | None = None) -> dict[tuple[int, ...], list[int]]:
    """The work-group's warps grouped by lane pattern: each pattern (its active lanes' element
    offsets relative to its first active lane) with the element offset of each such warp's first
    active lane relative to the group's first work-item. Groups of power-of-two sizes such as 16 x 4
    have one pattern; one of 48 work-items has two (32 lanes, then 16); one of 24 x 4 has three.
    ``active`` (a byte per work-item, None: all) switches lanes off; a warp with none is left out."""
    group = local[0] * local[1] * local[2]
    ids = local_ids(local)
    strides = dict(lid_strides)
    offsets = sum((strides.get(axis, 0) * ids[axis] for axis in range(3)), np.zeros(group, dtype=np.int64))
    on = np.ones(group, dtype=bool) if active is None else np.frombuffer(active, dtype=np.uint8).astype(bool)
    patterns: dict[tuple[int, ...], list[int]] = {}
    for first in range(0, group, WARP_SIZE):
        warp = offsets[first:first + WARP_SIZE][on[first:first + WARP_SIZE]]
        if len(warp):
            patterns.setdefault(tuple(int(x) for x in warp - warp[0]), []).append(int(warp[0]))
    return patterns


def lane0_offsets(
    warp_firsts: list[int],
    itemsize: int,
    line: int,
    offset: int,
    outer: tuple[tuple[int, int, int], ...],
) -> list[int]:
    """The byte offsets modulo ``line`` lane 0 of a warp can start at: the index's constant part,
    plus every value of each other iname times its stride, plus the warp's first-lane offset
    (one of ``warp_firsts``, the element offsets of the warps sharing a lane pattern)."""
    start = offset + sum(stride * first for stride, first, _ in outer)
    reachable = {(start * itemsize) % line}
    for stride, _, count in outer:
        step = (stride * itemsize) % line
        if step == 0:
            continue
        steps = min(count, line // math.gcd(step, line))
        reachable = {(r + k * step) % line for r in reachable for k in range(steps)}
    warps = {(w * itemsize) % line for w in warp_firsts}
    return sorted({(r + w) % line for r in reachable for w in warps})


@lru_cache(maxsize=65536)
def lines_touched(
    lid_strides: tuple[tuple[int, int], ...],
    local: tuple[int, int, int],
    itemsize: int,
    line: int,
    offset: int | None,
    outer: tuple[tuple[int, int, int], ...] | None,
    active: bytes | None = None,
    lane_bytes: int | None = None,
) -> tuple[float, int, int]:
    """(distinct ``line``-byte lines a warp touches, averaged over the group's warps with an
    ``active`` lane and, for each lane pattern, over its first lane's possible offsets; the most such
    offsets of any pattern; the number of such warps). Unknown ``offset``/``outer``: every warp's
    lowest address on a line boundary (lane 0's, unless the lanes step downwards). Each lane moves ``lane_bytes`` (a vector's; default ``itemsize``),
    which may span several lines."""
    patterns = warp_patterns(lid_strides, local, active)
    if not patterns:
        return 0.0, 0, 0
    total = 0.0
    starts_seen = 0
    for pattern, firsts in patterns.items():
        byte_offsets = np.asarray(pattern, dtype=np.int64) * itemsize
        if offset is None or outer is None:
            starts = np.array([-int(byte_offsets.min()) % line], dtype=np.int64)
        else:
            starts = np.asarray(lane0_offsets(firsts, itemsize, line, offset, outer), dtype=np.int64)
        first = np.floor_divide(starts[:, None] + byte_offsets[None, :], line)
        last = np.floor_divide(starts[:, None] + byte_offsets[None, :] + (lane_bytes or itemsize) - 1, line)
        touched = np.concatenate([np.minimum(first + k, last) for k in range(int((last - first).max()) + 1)], axis=1)
        touched.sort(axis=1)
        distinct = 1 + np.count_nonzero(np.diff(touched, axis=1), axis=1)
        total += len(firsts) * float(distinct.mean())
        starts_seen = max(starts_seen, len(starts))
    warps = sum(len(firsts) for firsts in patterns.values())
    return total / warps, starts_seen, warps


@lru_cache(maxsize=65536)
def fewest_lines(lid_strides: tuple[tuple[int, int], ...], local: tuple[int, int, int], lane_bytes: int,
                 line: int, active: bytes | None = None) -> float:
    """The fewest ``line``-byte lines the distinct addresses of a warp's active lanes fit in, each
    lane moving ``lane_bytes``, averaged over the group's warps with an active lane as
    :func:`lines_touched` is: what a coalesced access of the same width touches (4 lines or 16
    sectors for 32 float4 lanes, 1 line or 4 sectors for 32 lanes reading one float)."""
    patterns = warp_patterns(lid_strides, local, active)
    warps = sum(len(firsts) for firsts in patterns.values())
    if not warps:
        return 0.0
    total = sum(len(firsts) * math.ceil(len(set(pattern)) * lane_bytes / line) for pattern, firsts in patterns.items())
    return total / warps


def access_lines(access: EvaluatedAccess, local: tuple[int, int, int]) -> AccessLines:
    """The LIFT lines and sectors of one evaluated global access."""
    record = access.record
    reason = record.problem
    if reason is None and any(s is None for s in access.lid_strides.values()):
        reason = "index not affine in the local ids"
    if reason is None and any(float(s) != int(s) for s in access.lid_strides.values()):  # type: ignore[arg-type]
        reason = "a local-id stride is not a whole number of elements"
    group = local[0] * local[1] * local[2]
    # a float4 access: one request for its four elements; loops bounded by one another (j <= k): their passes
    accesses = access.lane_accesses * access.share / record.vector  # every lane below one group too
    requests = accesses * math.ceil(group / WARP_SIZE) / group
    if access.lanes is not None:
        requests = accesses / access.lanes.box * access.lanes.warps
    named = {"variable": record.variable, "direction": record.direction, "instruction": record.instruction,
             "count": access.count, "requests": requests}
    if reason is not None:
        return AccessLines(**named, lines=None, sectors=None, analysable=False, alignment="", reason=reason)
    strides = tuple(sorted((axis, int(s)) for axis, s in access.lid_strides.items()))  # type: ignore[arg-type]
    known = access.offset is not None and access.outer is not None
    offset = int(access.offset) if known else None  # type: ignore[arg-type]
    outer = tuple((int(a), int(b), int(c)) for a, b, c in access.outer) if known else None  # type: ignore[union-attr]
    if access.lanes is None:
        lane = record.itemsize * record.padded_vector
        lines, starts, _ = lines_touched(strides, local, record.itemsize, LINE_BYTES, offset, outer, None, lane)
        sectors, _, _ = lines_touched(strides, local, record.itemsize, SECTOR_BYTES, offset, outer, None, lane)
        fewest = fewest_lines(strides, local, lane, SECTOR_BYTES)
    else:
        lines, sectors, starts, fewest = masked_lines(access.lanes, record.itemsize, strides, local, offset, outer,
                                                      record.padded_vector)
    alignment = "assumed" if not known else ("known" if starts == 1 else "averaged")
    return AccessLines(**named, lines=lines, sectors=sectors, analysable=True, alignment=alignment, reason=None,
                       fewest_sectors=fewest)


def masked_lines(
    mask: LaneMask,
    itemsize: int,
    strides: tuple[tuple[int, int], ...],
    local: tuple[int, int, int],
    offset: int | None,
    outer: tuple[tuple[int, int, int], ...] | None,
    vector: int = 1,
) -> tuple[float, float, int, float]:
    """(lines and sectors per request, the most lane-0 offsets averaged over, the fewest sectors per
    request) of an access whose lanes are masked, each lane moving ``vector`` elements: each pass
    (chunk) with its lanes and its tied loops' values."""
    lines = sectors = fewest = 0.0
    warps = starts = 0
    for values, active in mask.chunks:
        fixed = outer
        if outer is not None:
            chosen = list(outer)
            for position, value in zip(mask.positions, values):
                if position >= 0:
                    chosen[position] = (outer[position][0], value, 1)
            fixed = tuple(chosen)
        lane = itemsize * vector
        chunk_lines, chunk_starts, chunk_warps = lines_touched(strides, local, itemsize, LINE_BYTES, offset, fixed, active,
                                                               lane)
        chunk_sectors, _, _ = lines_touched(strides, local, itemsize, SECTOR_BYTES, offset, fixed, active, lane)
        lines += chunk_warps * chunk_lines
        sectors += chunk_warps * chunk_sectors
        fewest += chunk_warps * fewest_lines(strides, local, lane, SECTOR_BYTES, active)
        warps += chunk_warps
        starts = max(starts, chunk_starts)
    if not warps:
        return 0.0, 0.0, starts, 0.0
    return lines / warps, sectors / warps, starts, fewest / warps


def warp_access_summary(evaluated: Evaluated) -> WarpAccessSummary:
    """Per-access lines and sectors, their averages over the warp requests of every access, the
    most lines any one access touches per warp request, and the largest ratio of an access's 32-byte
    sectors to the fewest its bytes fit in (1: coalesced, whatever the element's width or the group's).

    The averages and the most are 0 when the kernel has no global access and NaN when none is analysable
    (the ratio: 1 and NaN).
    """
    results = tuple(
        access_lines(access, evaluated.local)
        for access in evaluated.accesses
        if access.record.space == "global" and access.count > 0
    )
    weight = sum(r.requests for r in results if r.analysable)
    everything = sum(r.requests for r in results)
    if not results:
        return WarpAccessSummary(results, 0.0, 0.0, 1.0, 0.0, 1.0)
    if weight == 0:
        return WarpAccessSummary(results, math.nan, math.nan, 0.0, math.nan, math.nan)
    lines = sum(r.requests * r.lines for r in results if r.analysable) / weight  # type: ignore[operator]
    sectors = sum(r.requests * r.sectors for r in results if r.analysable) / weight  # type: ignore[operator]
    made = [r for r in results if r.analysable and r.requests > 0]
    most = max(r.lines for r in made)  # type: ignore[type-var]
    over_fewest = max(r.sectors / r.fewest_sectors if r.fewest_sectors else 1.0 for r in made)  # type: ignore[operator]
    return WarpAccessSummary(results, lines, sectors, weight / everything, float(most), float(over_fewest))


def sectors_per_request(summary: WarpAccessSummary, direction: str) -> float:
    """Sectors per warp request of the analysable global accesses in ``direction`` ("load" or
    "store"), over their requests: what Nsight Compute's L1TEX sectors over requests measure (NaN
    where there is no such access)."""
    accesses = [a for a in summary.accesses if a.direction == direction and a.analysable]
    requests = sum(a.requests for a in accesses)
    return sum(a.requests * a.sectors for a in accesses) / requests if requests else math.nan  # type: ignore[operator]


def warp_accesses(kernel, sizes=None) -> WarpAccessSummary:  # noqa: ANN001
    """Per-access lines and sectors of a gpuperf Kernel at ``sizes`` (defaults fill gaps)."""
    from gpuperf.features.counts import symbolic_counts

    return warp_access_summary(symbolic_counts(kernel).values(kernel.resolve_sizes(sizes)))
