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
edge, where every lane still counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product as cartesian

import islpy as isl
import numpy as np

from gpuperf.features.domains import Domains

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
    """

    positions: tuple[int, ...]
    chunks: tuple[tuple[tuple[int, ...], bytes], ...]
    box: int


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


def _size_free(basic: isl.BasicSet, names: list[str], local_names: list[str]) -> isl.Set | None:
    """``basic``'s constraints without a size parameter or an existential variable (the sizes'
    ``n mod 16 = 0``), on the inames of ``names`` they tie to ``local_names``."""
    basic = basic.remove_divs()
    params = basic.dim(isl.dim_type.param)
    kept = [c for c in basic.get_constraints() if not c.involves_dims(isl.dim_type.param, 0, params)]
    position = {name: pos for name, (_, pos) in basic.get_var_dict(isl.dim_type.set).items()}
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
    free_set = free.to_set().project_out_except(sorted(tied), [isl.dim_type.set])
    return free_set.project_out(isl.dim_type.param, 0, free_set.dim(isl.dim_type.param))


def lane_mask(domains: Domains, context: frozenset[str], outer_inames: list[str] | None,
              per_subgroup: bool = False) -> LaneMask | None:
    """The mask of an access made within ``context`` (None: every lane of the group makes it).

    ``outer_inames`` are the non-local inames of the access's index in the order of its ``outer``
    (None where the index is not affine); ``per_subgroup``: the access is counted per sub-group, as
    loopy counts an index uniform across the lanes (``runs_per_group_item``)."""
    if not domains.is_split:  # a domain tree: no mask
        return None
    local_inames = sorted(i for i in context if domains.is_local(i))
    if not local_inames:
        return None
    axes = [domains.hw_axes[i][1] for i in local_inames]
    if len(set(axes)) != len(axes):
        return None
    _, local = domains.grid
    components = {id(domains.components[i]): domains.components[i] for i in local_inames}.values()
    tied: list[str] = []  # non-local inames sharing a component with a local one, in component order
    per_component: list[tuple[list[str], list[str], dict[tuple[int, ...], set[tuple[int, ...]]]]] = []
    for component in components:
        names = [n for n in component.names if n in context]
        projected = _size_free(component.domain, names, [n for n in names if domains.is_local(n)])
        if projected is None:
            return None
        order = list(projected.get_var_dict(isl.dim_type.set))
        points = _points(projected)
        if points is None or not points:
            return None
        locals_here = [n for n in order if domains.is_local(n)]
        others = [n for n in order if not domains.is_local(n)]
        firsts = {n: min(p[order.index(n)] for p in points) for n in locals_here}
        allowed: dict[tuple[int, ...], set[tuple[int, ...]]] = {}
        for point in points:
            key = tuple(point[order.index(n)] for n in others)
            allowed.setdefault(key, set()).add(tuple(point[order.index(n)] - firsts[n] for n in locals_here))
        tied += others
        per_component.append((locals_here, others, allowed))
    extents = domains.extents
    boxed = [extents[n] for n in tied + local_inames]
    if not all(isinstance(e, int) for e in boxed):
        return None  # an extent that depends on the sizes: the box count has no fixed number of passes
    outer_box = int(np.prod([extents[n] for n in tied])) if tied else 1
    item_box = 1
    for axis in range(3):
        on_axis = [i for i in local_inames if domains.hw_axes[i][1] == axis]
        item_box *= extents[on_axis[0]] if on_axis else local[axis]
    group = local[0] * local[1] * local[2]
    items = np.arange(group)
    ids = (items % local[0], (items // local[0]) % local[1], items // (local[0] * local[1]))
    if np.prod([len(allowed) for _, _, allowed in per_component]) > MAX_CHUNKS:
        return None
    chunks = []
    for combination in cartesian(*(sorted(allowed.items()) for _, _, allowed in per_component)):
        active = np.ones(group, dtype=bool)
        values: tuple[int, ...] = ()
        for (locals_here, _, _), (key, lanes) in zip(per_component, combination):
            values += key
            if locals_here:
                lane_ids = list(zip(*(ids[domains.hw_axes[n][1]] for n in locals_here)))
                active &= np.fromiter((tuple(int(v) for v in t) in lanes for t in lane_ids), bool, count=group)
        chunks.append((values, active.astype(np.uint8).tobytes()))
    if len(chunks) == outer_box and item_box == group and all(all(mask) for _, mask in chunks):
        return None  # the box is full: every lane of every pass
    positions = tuple(outer_inames.index(n) if outer_inames and n in outer_inames else -1 for n in tied)
    return LaneMask(positions=positions, chunks=tuple(chunks), box=outer_box * (group if per_subgroup else item_box))


def made_count(count: float, mask: LaneMask | None) -> float:
    """The accesses the work-items make, of an access loopy's box estimate counts ``count`` times."""
    if mask is None:
        return count
    active = sum(np.frombuffer(lanes, dtype=np.uint8).sum() for _, lanes in mask.chunks)
    return count / mask.box * float(active)
