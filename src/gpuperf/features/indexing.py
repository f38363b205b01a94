"""Array index expressions as strides per iname, and temporaries' address spaces.

``index_pattern`` flattens an array reference's index with the array's strides and splits it
into the strides of the local ids (loopy's ``lid_strides``, as ``_get_lid_and_gid_strides``
computes them), the strides of every other iname and the constant part; ``address_spaces``
decides automatic address spaces as loopy's preprocessing does.
"""

from __future__ import annotations

from dataclasses import dataclass

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.diagnostic import ExpressionNotAffineError, LoopyError
from loopy.kernel.array import FixedStrideArrayDimTag
from loopy.kernel.data import AddressSpace
from loopy.symbolic import get_dependencies, simplify_using_aff

from gpuperf.features.domains import Domains, Expr, NeedsPreprocessing, product, size_params, total


class NotAffine(Exception):
    """An index expression that is not affine in the inames."""


@dataclass(frozen=True)
class IndexPattern:
    """A flattened index: local-id strides (None where not affine), the constant part and the
    (iname, stride) of every other iname, in elements; ``problem`` says why lanes cannot be known."""

    lid_strides: tuple[tuple[int, Expr | None], ...]
    offset: Expr | None
    outer_strides: tuple[tuple[str, Expr], ...] | None
    problem: str | None


SCALAR = IndexPattern(lid_strides=(), offset=0, outer_strides=(), problem=None)

_VARIABLES: dict[int, tuple] = {}


def variables(expr) -> frozenset[str]:  # noqa: ANN001
    """Names of the variables (and arrays) an expression refers to (remembered per node)."""
    if isinstance(expr, prim.Variable):
        return frozenset([expr.name])
    if isinstance(expr, (int, float, complex, np.generic)):
        return frozenset()
    found = _VARIABLES.get(id(expr))
    if found is None or found[0] is not expr:
        if len(_VARIABLES) > 100_000:
            _VARIABLES.clear()
        found = (expr, frozenset(_variables(expr)))
        _VARIABLES[id(expr)] = found
    return found[1]


def _variables(expr) -> set[str]:  # noqa: ANN001
    if isinstance(expr, prim.Subscript):
        return variables(expr.aggregate) | set().union(*(variables(i) for i in expr.index_tuple))
    if isinstance(expr, (prim.Sum, prim.Product, prim.Min, prim.Max)):
        return set().union(*(variables(c) for c in expr.children))
    if isinstance(expr, prim.QuotientBase):
        return variables(expr.numerator) | variables(expr.denominator)
    if isinstance(expr, prim.Power):
        return variables(expr.base) | variables(expr.exponent)
    return set(get_dependencies(expr))


def affine_coefficients(expr, inames: frozenset[str]) -> dict:  # noqa: ANN001
    """``{iname: coefficient, 1: constant}`` of an expression affine in ``inames``."""
    if isinstance(expr, (int, np.integer)):
        return {1: int(expr)} if expr else {}
    if isinstance(expr, prim.Variable):
        return {expr.name: 1} if expr.name in inames else {1: expr}
    if isinstance(expr, prim.Sum):
        result: dict = {}
        for child in expr.children:
            for key, value in affine_coefficients(child, inames).items():
                result[key] = total([result.get(key, 0), value])
        return result
    if isinstance(expr, prim.Product):
        varying = [c for c in expr.children if variables(c) & inames]
        if len(varying) == 1:
            factor = product([c for c in expr.children if c is not varying[0]])
            return {k: product([factor, v]) for k, v in affine_coefficients(varying[0], inames).items()}
    if not variables(expr) & inames:
        return {1: expr}
    raise NotAffine(str(expr))


def coefficients(kernel: lp.LoopKernel, expr, inames: frozenset[str]) -> dict | None:  # noqa: ANN001
    """Coefficients of ``expr`` per iname (key 1: the rest), or None if not affine even after
    loopy's simplification (which removes e.g. divisions by split factors)."""
    try:
        return affine_coefficients(expr, inames)
    except NotAffine:
        pass
    try:
        return affine_coefficients(simplify_using_aff(kernel, expr), inames)
    except (NotAffine, LoopyError, ExpressionNotAffineError):
        return None


def index_pattern(kernel: lp.LoopKernel, domains: Domains, array, index: tuple) -> IndexPattern:  # noqa: ANN001
    """The pattern of ``array[index]`` (loopy's lid strides, plus the offset and other strides)."""
    inames = frozenset(kernel.all_inames())
    dim_tags = array.dim_tags if array.dim_tags is not None else (None,) * len(index)
    deps = set().union(*(variables(i) for i in index))
    local_inames = {i: domains.hw_axes[i][1] for i in deps & inames if domains.is_local(i)}
    strides: dict[str, Expr] = {}
    offset: Expr = 0
    for axis_index, tag in zip(index, dim_tags):
        if isinstance(tag, FixedStrideArrayDimTag):
            if tag.stride is lp.auto:
                raise NeedsPreprocessing(f"array {array.name} has automatic strides")
            stride = tag.stride
        elif tag is None:
            stride = 1
        else:
            continue
        collected = coefficients(kernel, axis_index, inames)
        if collected is None:
            return lanes_only_pattern(kernel, domains, array, index, local_inames)
        for name, coefficient in collected.items():
            term = product([stride, coefficient])
            if name == 1:
                offset = total([offset, term])
            else:
                strides[name] = total([strides.get(name, 0), term])
    lid_strides: dict[int, Expr] = {}
    lanes = {i: axis for i, axis in local_inames.items() if domains.extents.get(i) != 1}
    for iname, axis in local_inames.items():
        # a local iname with one value is a constant to loopy (simplify_using_aff): stride 0
        lid_strides[axis] = total([lid_strides.get(axis, 0), strides.get(iname, 0) if iname in lanes else 0])
        if iname in lanes:  # loopy's local iname is the local id plus the iname's first value
            offset = total([offset, product([strides.get(iname, 0), domains.first(iname)])])
    outer = tuple(sorted((i, c) for i, c in strides.items() if i not in lanes))
    base = getattr(array, "offset", 0) or 0  # the array's own start in its buffer (loopy adds it to the index)
    run_time_base = base is lp.auto or (isinstance(base, str) and base not in size_params(kernel))
    if not run_time_base:
        offset = total([offset, prim.Variable(base) if isinstance(base, str) else base])
    data = (variables(offset) | set().union(*(variables(c) for c in strides.values()))) - size_params(kernel)
    if data:  # a value read from memory (a temporary) may differ from lane to lane: no stride or offset is known
        axes = {domains.hw_axes[i][1] for i in inames if domains.is_local(i)}
        unknown = tuple((axis, None) for axis in sorted(axes))
        return IndexPattern(unknown, None, None, f"index depends on data ({', '.join(sorted(data))})")
    if run_time_base:  # an offset passed at run time (lp.auto, or an argument that is no size): alignment assumed
        return IndexPattern(tuple(sorted(lid_strides.items())), None, None, None)
    return IndexPattern(tuple(sorted(lid_strides.items())), offset, outer, None)


def lanes_only_pattern(kernel: lp.LoopKernel, domains: Domains, array, index: tuple,  # noqa: ANN001
                       local_inames: dict[str, int]) -> IndexPattern:
    """The pattern of an index that is not affine in every iname but is in the local ids, its other
    terms functions of sequential inames and sizes only (``a[k*k + lid]``): lid strides known,
    lane 0's alignment not (``offset`` None: lane 0 assumed to start a line)."""
    unknown = IndexPattern(tuple(sorted((axis, None) for axis in set(local_inames.values()))), None, None,
                           "index not affine in the inames (indirect or nonlinear)")
    lanes = {i: axis for i, axis in local_inames.items() if domains.extents.get(i) != 1}
    known = frozenset(kernel.all_inames()) | size_params(kernel)
    dim_tags = array.dim_tags if array.dim_tags is not None else (None,) * len(index)
    lid_strides: dict[int, Expr] = {axis: 0 for axis in set(local_inames.values())}
    for axis_index, tag in zip(index, dim_tags):
        if isinstance(tag, FixedStrideArrayDimTag):
            stride = tag.stride
        elif tag is None:
            stride = 1
        else:
            continue
        collected = coefficients(kernel, axis_index, frozenset(lanes))
        if collected is None or not variables(axis_index) <= known:
            return unknown
        for name, coefficient in collected.items():
            if name == 1:
                continue
            if variables(coefficient) - size_params(kernel):
                return unknown
            lid_strides[lanes[name]] = total([lid_strides[lanes[name]], product([stride, coefficient])])
    return IndexPattern(tuple(sorted(lid_strides.items())), None, None, None)


def address_spaces(kernel: lp.LoopKernel, domains: Domains) -> dict[str, AddressSpace]:
    """Every temporary's address space, deciding automatic ones as loopy's preprocessing does
    (``find_temporary_address_space``): local if every writer indexes it by all its local
    parallel inames, global likewise for group inames, else private."""
    writers = kernel.writer_map()
    result: dict[str, AddressSpace] = {}
    for temporary in kernel.temporary_variables.values():
        if temporary.address_space is not lp.auto:
            result[temporary.name] = temporary.address_space
            continue
        if temporary.base_storage is not None or not writers.get(temporary.name):
            raise NeedsPreprocessing(f"address space of temporary {temporary.name}")
        desired = set()
        for insn_id in writers[temporary.name]:
            insn = kernel.id_to_insn[insn_id]
            indexed: set[str] = set()
            for name, deps in zip(insn.assignee_var_names(), insn.assignee_subscript_deps()):
                if name == temporary.name:
                    indexed |= deps & domains.hw_axes.keys()
            space = AddressSpace.PRIVATE
            for kind, candidate in (("l", AddressSpace.LOCAL), ("g", AddressSpace.GLOBAL)):
                computed = {i for i in insn.within_inames if domains.hw_axes.get(i, ("", 0))[0] == kind}
                if computed and computed == {i for i in indexed if domains.hw_axes[i][0] == kind}:
                    space = max(space, candidate)
            desired.add(space)
        if len(desired) != 1:
            raise NeedsPreprocessing(f"writers disagree on the address space of {temporary.name}")
        result[temporary.name] = desired.pop()
    return result
