"""Which work-items of a group make an access, where the domain switches some of them off.

A fetch loop that loopy's ``add_prefetch`` spreads over the local ids (a 66-wide tile fetched by 64
work-items in two passes) runs its second pass on 2 of the 64 lanes: the domain ties the local
iname to the sequential one (``a_col_inner <= 65 - 64*a_col_outer``). Lanes the domain switches off
make no memory request, so the lines a warp touches, the number of warp requests and the accesses
each work-item makes follow from the lanes that remain. The symbolic counts keep loopy's box estimate
(every lane of every pass); the mask refines the per-warp analysis of ``gpuperf.features.access``
and the per-work-item loads and stores of ``gpuperf.features.table`` (``made_count``).

A mask is built from the constraints on the local inames of an access's loop nest that involve no
size parameter, where they do not fill the work-group's box: the local ids tied to a sequential
loop or a work-group index, tied to each other (a triangle), or shorter than the group along their
axis. Constraints with a size parameter are left out: they bound the problem (``lid(0) + 16*gid(0)
< n``, or a fetch's footprint at the array's end) and switch lanes off only in the groups at its
edge, where every lane still counts. Where such a bound also clips the tied inames' extents (a fetch
loop over ``min(2, ...)`` passes when the sizes are not known to divide the tile), the mask holds at
the sizes where the domain's box equals the mask's own (every pass, as at all but the smallest
sizes).

Where a size parameter bounds a loop that a local id is tied to (``0 <= k < m and x <= k``: lane
``x`` takes part in the passes ``k >= x``; row ``g`` of a triangle, ``x <= g < n``), the constraints
without one leave the tied inames unbounded, or the domain's box at the sizes differs from the
mask's own. Such an access keeps a :class:`LaneRecipe`, and the mask is built again at each set of
sizes it is evaluated at (:func:`mask_at_sizes`): the sizes fixed, the constraints with a size
parameter kept where they bound no local id (a loop's or a group index's bounds), still left out
where they do (the problem's edge), and each work-group index kept within the groups the grid
launches along its axis (row ``i = 64*gid(0) + lid(0)`` of a triangle ``j <= i < n``: only the
problem's edge bounds the group index the tie ``j <= lid(0) + 64*gid(0)`` holds), each sequential
iname within its box (the lanes past the edge of that triangle at n = 31 or 40 run ``j`` over its box,
0..n-1, as far as their tie allows). Where an iname's values there are still not its extent in the box,
past ``MAX_POINTS`` or past ``MAX_CHUNKS``, the access keeps loopy's box count.

Sequential loops bounded by one another (``0 <= j <= k < m``) run fewer passes than loopy's box
(m (m + 1) / 2 of m x m) on every lane. Where such loops of an access share a domain component with
none of its local inames (those are the mask's), a :class:`PassRecipe` keeps the component, and
:func:`pass_share` counts its points at given sizes (isl's ``count_val``, where the box over its
longest loop is at most ``MAX_POINTS``): the per-work-item loads and stores scale loopy's count by
points over box, then leave out the lanes the mask switches off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from itertools import product as cartesian
from typing import Any

import islpy as isl
import numpy as np

from gpuperf.features.domains import Domains, Expr, product
from gpuperf.features.expressions import evaluate

WARP_SIZE = 32
MAX_POINTS = 1 << 16  # larger tied domains are not enumerated (no mask)
MAX_CHUNKS = 1 << 10  # nor more combinations of tied values than this


@dataclass(frozen=True)
class LaneMask:
    """The work-items of a group that make an access, per combination of the tied inames' values.

    ``positions`` gives, for each non-local iname tied to the local ids, its index in the access's
    ``outer`` (-1 where the index does not use it); each chunk holds those inames' values and one
    byte per work-item of the group (1: it makes the access). ``box`` is how many work-item
    executions per group the access's count holds for one pass over the untied inames (loopy's box
    count: the tied inames' extents times the local inames' extents, or times the whole group for
    an access counted per sub-group), so the count divided by ``box`` is how often each chunk runs.
    ``box_at_sizes`` is that box as an expression of the sizes where the domain's extents depend on
    them (None: they do not); the mask holds at sizes where it evaluates to ``box``.
    """

    positions: tuple[int, ...]
    chunks: tuple[tuple[tuple[int, ...], bytes], ...]
    box: int
    box_at_sizes: Expr | None = None

    @property
    def items(self) -> int:
        """Work-item accesses over all chunks (one pass each)."""
        return sum(int(np.frombuffer(active, dtype=np.uint8).sum()) for _, active in self.chunks)

    @property
    def warps(self) -> int:
        """Warp requests over all chunks: warps of 32 work-items with at least one active."""
        return sum(int(np.frombuffer(active, dtype=np.uint8)[first:first + WARP_SIZE].any())
                   for _, active in self.chunks for first in range(0, len(active), WARP_SIZE))


def _points(component_set: isl.Set) -> list[tuple[int, ...]] | None:
    """The points of a bounded, parameter-free set (None if it has too many)."""
    found: list[tuple[int, ...]] = []
    dims = component_set.dim(isl.dim_type.set)

    def add(point: isl.Point) -> None:
        found.append(tuple(point.get_coordinate_val(isl.dim_type.set, pos).to_python() for pos in range(dims)))

    if not component_set.is_bounded() or component_set.count_val().to_python() > MAX_POINTS:
        return None
    component_set.foreach_point(add)
    return found


def local_ids(local: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each work-item's local id along axes 0, 1 and 2, work-items numbered axis 0 first."""
    items = np.arange(local[0] * local[1] * local[2])
    return items % local[0], (items // local[0]) % local[1], items // (local[0] * local[1])


def _size_free(basic: isl.BasicSet, names: list[str], local_names: list[str],
               sizes: dict[str, int] | None = None, ranges: dict[str, tuple[int, int]] | None = None) -> isl.Set:
    """``basic``'s constraints without a size parameter or an existential variable (the sizes'
    ``n mod 16 = 0``), on the inames of ``names`` they tie to ``local_names``. With ``sizes``, those
    sizes fixed and the constraints with a size parameter kept too where they bound no local iname,
    and each iname of ``ranges`` (a work-group index) kept within its (first, last) value there."""
    basic = basic.remove_divs()
    params = basic.dim(isl.dim_type.param)
    position = {name: pos for name, (_, pos) in basic.get_var_dict(isl.dim_type.set).items()}

    def kept_constraint(constraint: isl.Constraint) -> bool:
        if not constraint.involves_dims(isl.dim_type.param, 0, params):
            return True
        return sizes is not None and not any(constraint.involves_dims(isl.dim_type.set, position[n], 1)
                                             for n in local_names)

    kept = [c for c in basic.get_constraints() if kept_constraint(c)]
    tied = set(local_names)
    grown = True
    while grown:  # the inames reachable from the local ones through the kept constraints
        grown = False
        for constraint in kept:
            mentioned = {n for n in names if constraint.involves_dims(isl.dim_type.set, position[n], 1)}
            if mentioned & tied and not mentioned <= tied:
                tied |= mentioned
                grown = True
    free = isl.BasicSet.universe(basic.space)
    for constraint in kept:
        free = free.add_constraint(constraint)
    for name, (first, last) in (ranges or {}).items():
        if name in position:
            free = free.add_constraint(isl.Constraint.ineq_from_names(free.space, {name: 1, 1: -first}))
            free = free.add_constraint(isl.Constraint.ineq_from_names(free.space, {name: -1, 1: last}))
    return _projected(free, sorted(tied), sizes or {})


def _projected(basic: isl.BasicSet, inames: list[str], sizes: dict[str, int]) -> isl.Set:
    """``basic`` with the size parameters of ``sizes`` fixed, projected onto ``inames``, without parameters."""
    for name, (_, pos) in basic.get_var_dict(isl.dim_type.param).items():
        if name in sizes:
            basic = basic.fix_val(isl.dim_type.param, pos, sizes[name])
    projected = basic.to_set().project_out_except(inames, [isl.dim_type.set])
    return projected.project_out(isl.dim_type.param, 0, projected.dim(isl.dim_type.param))


@dataclass(frozen=True)
class _Tied:
    """One domain component's part in a mask: its local inames, its other inames, and for each value
    of those others the local ids (relative to each local iname's first value) the domain allows,
    and each iname's number of values there (its extent without the size constraints)."""

    local_inames: tuple[str, ...]
    others: tuple[str, ...]
    allowed: dict[tuple[int, ...], set[tuple[int, ...]]]
    spans: dict[str, int]


def _tied(domain: isl.BasicSet, names: list[str], local: dict[str, int],
          sizes: dict[str, int] | None, ranges: dict[str, tuple[int, int]] | None = None) -> _Tied | None:
    """The lanes one component's inames within the access's loops allow (None: too many points)."""
    free = _size_free(domain, names, [n for n in names if n in local], sizes, ranges)
    order = list(free.get_var_dict(isl.dim_type.set))
    points = _points(free)
    if not points:
        return None
    local_inames = tuple(n for n in order if n in local)
    others = tuple(n for n in order if n not in local)
    column = {n: order.index(n) for n in order}
    firsts = {n: min(p[column[n]] for p in points) for n in order}
    spans = {n: max(p[column[n]] for p in points) - firsts[n] + 1 for n in order}
    allowed: dict[tuple[int, ...], set[tuple[int, ...]]] = {}
    for point in points:
        lanes = tuple(point[column[n]] - firsts[n] for n in local_inames)
        allowed.setdefault(tuple(point[column[n]] for n in others), set()).add(lanes)
    return _Tied(local_inames, others, allowed, spans)


def _chunks(axes: dict[str, int], parts: list[_Tied],
            local: tuple[int, int, int]) -> list[tuple[tuple[int, ...], bytes]]:
    """Every combination of the components' tied values, with the work-items it leaves on."""
    ids = local_ids(local)
    lane_keys = [[tuple(int(v) for v in key) for key in zip(*(ids[axes[n]] for n in part.local_inames))]
                 for part in parts]
    chunks = []
    for combination in cartesian(*(sorted(part.allowed.items()) for part in parts)):
        active = np.ones(len(ids[0]), dtype=bool)
        values: tuple[int, ...] = ()
        for part, keys, (tied_values, lanes) in zip(parts, lane_keys, combination):
            values += tied_values
            if part.local_inames:
                active &= np.array([key in lanes for key in keys])
        chunks.append((values, active.astype(np.uint8).tobytes()))
    return chunks


@dataclass(frozen=True)
class LaneRecipe:
    """What an access's mask is built from: each domain component of its local inames (isl text)
    with its inames within the access's loops, the local inames' axes, the group, every such
    iname's extent (loopy's box, an expression of the sizes), the access's non-local index inames
    (``outer_inames`` of :func:`lane_mask`), whether it is counted per sub-group, and the first
    value of each work-group index and sequential iname among the inames (its values at given sizes:
    its box's, ``first <= gid < first + extent``)."""

    components: tuple[tuple[str, tuple[str, ...]], ...]
    axes: tuple[tuple[str, int], ...]
    local: tuple[int, int, int]
    extents: tuple[tuple[str, Expr], ...]
    outer_inames: tuple[str, ...] | None
    per_subgroup: bool
    params: tuple[str, ...]  # the size parameters the components depend on
    group_firsts: tuple[tuple[str, Expr], ...] = ()  # the work-group indices' and sequential inames' first values


def lane_recipe(domains: Domains, context: frozenset[str], outer_inames: list[str] | None,
                per_subgroup: bool = False) -> LaneRecipe | None:
    """What the mask of an access made within ``context`` is built from (None: no mask at any sizes)."""
    if not domains.is_split:  # a domain tree: no mask
        return None
    local_inames = sorted(i for i in context if domains.is_local(i))
    axes = [domains.hw_axes[i][1] for i in local_inames]
    if not local_inames or len(set(axes)) != len(axes):
        return None
    _, local = domains.grid
    components = list({id(domains.components[i]): domains.components[i] for i in local_inames}.values())
    if all(len(c.names) == 1 and domains.lane_extents[c.names[0]] == local[domains.hw_axes[c.names[0]][1]]
           for c in components):
        return None  # each local iname alone in its component, over the whole group: nothing to enumerate
    names = [tuple(n for n in c.names if n in context) for c in components]
    params = sorted({p for c in components for p in c.domain.get_var_dict(isl.dim_type.param)})
    group_firsts = tuple((n, domains.first(n)) for inames in names for n in inames if not domains.is_local(n))
    return LaneRecipe(components=tuple((str(c.domain), inames) for c, inames in zip(components, names)),
                      axes=tuple(zip(local_inames, axes)), local=tuple(local),  # type: ignore[arg-type]
                      extents=tuple((n, domains.lane_extents[n]) for inames in names for n in inames),
                      outer_inames=None if outer_inames is None else tuple(outer_inames),
                      per_subgroup=per_subgroup, params=tuple(params), group_firsts=group_firsts)


def _build(recipe: LaneRecipe, sizes: dict[str, int] | None) -> tuple[LaneMask | None, bool]:
    """The mask from ``recipe``, without the size constraints or at ``sizes``, and whether it is
    missing because a component's tied set is unbounded or too large to enumerate."""
    local = recipe.local
    axes = dict(recipe.axes)
    ranges = None if sizes is None else _group_ranges(recipe, sizes)
    parts = [_tied(isl.BasicSet(text), list(inames), axes, sizes, ranges) for text, inames in recipe.components]
    if any(part is None for part in parts):
        return None, True
    tied = [n for part in parts for n in part.others]  # type: ignore[union-attr]
    if math.prod(len(part.allowed) for part in parts) > MAX_CHUNKS:  # type: ignore[union-attr]
        return None, False
    group = math.prod(local)
    on_axis = {axis: name for name, axis in recipe.axes}
    extents: dict[str, Any] = dict(recipe.extents)
    if sizes is not None:
        memo: dict[int, tuple[Any, Any]] = {}
        extents = {n: int(evaluate(e, sizes, memo)) for n, e in extents.items()}
    spans = {n: span for part in parts for n, span in part.spans.items()}  # type: ignore[union-attr]
    if sizes is not None and any(spans[n] != extents[n] for n in spans):
        return None, False  # the box is clipped by a bound left out (a fetch's tile at the array's end)
    fixed = all(isinstance(extents[n], int) for n in tied + list(axes))

    def box_factors(extent: dict[str, Any]) -> list[Any]:
        """The box's factors from the inames' extents: the tied inames', then the work-items'."""
        items = [group] if recipe.per_subgroup else [extent[on_axis[axis]] if axis in on_axis else local[axis]
                                                     for axis in range(3)]
        return [extent[n] for n in tied] + items

    factors = box_factors(extents if fixed else spans)
    outer_box, item_box = math.prod(factors[:len(tied)]), math.prod(factors[len(tied):])
    chunks = _chunks(axes, parts, local)  # type: ignore[arg-type]
    if outer_box <= 0 or item_box <= 0:
        return None, False  # no pass at these sizes
    if len(chunks) == outer_box and item_box == group and all(all(mask) for _, mask in chunks):
        return None, False  # the box is full: every lane of every pass
    outer_inames = recipe.outer_inames
    positions = tuple(outer_inames.index(n) if outer_inames and n in outer_inames else -1 for n in tied)
    box_at_sizes = None if fixed else product(box_factors(extents))
    mask = LaneMask(positions=positions, chunks=tuple(chunks), box=outer_box * item_box, box_at_sizes=box_at_sizes)
    return mask, False


def _group_ranges(recipe: LaneRecipe, sizes: dict[str, int]) -> dict[str, tuple[int, int]]:
    """Each work-group index's and sequential iname's (first, last) value at ``sizes``: its box (for a
    group index, the groups the grid launches along its axis), which bounds it where only the problem's
    edge (a constraint with a local id) does: lane 31 of a triangle ``j <= i < n`` at n = 31 runs j over
    j's box, 0..30, not to 31."""
    memo: dict[int, tuple[Any, Any]] = {}
    extents = dict(recipe.extents)
    ranges: dict[str, tuple[int, int]] = {}
    for name, first in recipe.group_firsts:
        low = int(evaluate(first, sizes, memo))
        ranges[name] = (low, low + int(evaluate(extents[name], sizes, memo)) - 1)
    return ranges


def lane_masks(domains: Domains, context: frozenset[str], outer_inames: list[str] | None,
               per_subgroup: bool = False) -> tuple[LaneMask | None, LaneRecipe | None]:
    """The mask of an access made within ``context`` without its size constraints (as
    :func:`lane_mask`), and the recipe to build it at given sizes where that mask does not hold at
    all of them (its tied set unbounded or too large without the sizes, or its box depending on them)."""
    recipe = lane_recipe(domains, context, outer_inames, per_subgroup)
    if recipe is None:
        return None, None
    mask, unenumerated = _build(recipe, None)
    sized = unenumerated or (mask is not None and mask.box_at_sizes is not None)
    return mask, recipe if sized and recipe.params else None


def lane_mask(domains: Domains, context: frozenset[str], outer_inames: list[str] | None,
              per_subgroup: bool = False) -> LaneMask | None:
    """The mask of an access made within ``context`` (None: every lane of the group makes it).

    ``outer_inames`` are the non-local inames of the access's index in the order of its ``outer``
    (None where the index is not affine); ``per_subgroup``: the access is counted per sub-group, as
    loopy counts an index uniform across the lanes (``runs_per_group_item``)."""
    recipe = lane_recipe(domains, context, outer_inames, per_subgroup)
    return None if recipe is None else _build(recipe, None)[0]


def mask_at_sizes(recipe: LaneRecipe, sizes: dict[str, int]) -> LaneMask | None:
    """The mask ``recipe`` gives at ``sizes`` (None: every lane of the box, or too many to enumerate)."""
    return _mask_at(recipe, tuple((p, int(sizes[p])) for p in recipe.params if p in sizes))


@lru_cache(maxsize=4096)
def _mask_at(recipe: LaneRecipe, sizes: tuple[tuple[str, int], ...]) -> LaneMask | None:
    return _build(recipe, dict(sizes))[0]


def made_count(count: float, mask: LaneMask | None) -> float:
    """The accesses the work-items make, of an access loopy's box estimate counts ``count`` times."""
    return count if mask is None else count / mask.box * mask.items


@dataclass(frozen=True)
class PassRecipe:
    """The sequential loops of an access bounded by one another (``0 <= j <= k``), whose passes are
    fewer than loopy's box (the product of their extents): per domain component holding no local iname
    of the access, its isl text, the access's inames there and their extents (expressions of the sizes)."""

    components: tuple[tuple[str, tuple[str, ...], tuple[Expr, ...]], ...]
    params: tuple[str, ...]  # the size parameters the components depend on


def pass_recipe(domains: Domains, context: frozenset[str]) -> PassRecipe | None:
    """What the share of loopy's box an access made within ``context`` runs is counted from (None: it
    runs the whole box, or the domain is a tree). Components with a local iname are the lane mask's."""
    if not domains.is_split:
        return None
    found = {id(domains.components[i]): domains.components[i] for i in context if i in domains.components}
    parts = []
    for component in found.values():
        inames = tuple(n for n in component.names if n in context)
        if len(inames) < 2 or any(domains.is_local(n) for n in inames) or not component.needs_guard(frozenset(inames)):
            continue
        parts.append((str(component.domain), inames, tuple(domains.extents[n] for n in inames)))
    if not parts:
        return None
    params = sorted({p for text, _, _ in parts for p in isl.BasicSet(text).get_var_dict(isl.dim_type.param)})
    return PassRecipe(components=tuple(parts), params=tuple(params))


def pass_share(recipe: PassRecipe | None, sizes: dict[str, int]) -> float:
    """The share of loopy's box the access's sequential loops run at ``sizes`` (points over box; 1 where
    the box is empty, or its points would take more than ``MAX_POINTS`` scans to count)."""
    if recipe is None:
        return 1.0
    return _share_at(recipe, tuple((p, int(sizes[p])) for p in recipe.params if p in sizes))


@lru_cache(maxsize=4096)
def _share_at(recipe: PassRecipe, sizes: tuple[tuple[str, int], ...]) -> float:
    share = 1.0
    memo: dict[int, tuple[Any, Any]] = {}
    for text, inames, extent_exprs in recipe.components:
        extents = [int(evaluate(e, dict(sizes), memo)) for e in extent_exprs]
        box = math.prod(extents)
        if box <= 0 or box // max(extents) > MAX_POINTS:
            continue
        points = _points_at(isl.BasicSet(text), inames, dict(sizes))
        if points is not None and points <= box:
            share *= points / box
    return share


def _points_at(basic: isl.BasicSet, inames: tuple[str, ...], sizes: dict[str, int]) -> int | None:
    """The points of ``basic`` projected onto ``inames``, its size parameters fixed (None: unbounded)."""
    projected = _projected(basic, list(inames), sizes)
    return projected.count_val().to_python() if projected.is_bounded() else None
