"""Iteration counts and launch geometry read from a loopy kernel's integer-set domain.

Counts follow ``loopy.statistics.count`` without Barvinok: the points of the domain projected onto
some inames are estimated by the product of each iname's extent (``max - min + 1``, divided by a
simple stride). The extents are piecewise affine in the size parameters and become pymbolic
expressions, so one kernel's counts can be evaluated at any sizes.

isl is slow next to the rest of feature extraction, so the domain is split into *components*:
groups of inames tied together by constraints. A component's extents and guards depend only on its
constraints and the kernel's assumptions, so they are computed once per distinct component text
and shared by every kernel (e.g. every variant of a space) that has the same component.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from functools import cached_property

import islpy as isl
import loopy as lp
import numpy as np
from loopy.diagnostic import StaticValueFindingError
from loopy.isl_helpers import get_simple_strides, static_max_of_pw_aff
from loopy.kernel.data import AutoLocalInameTagBase, GroupInameTag, LocalInameTag, VectorizeTag
from loopy.symbolic import aff_to_expr, pw_aff_to_expr
from pymbolic.primitives import ExpressionNode, Max, Product, Quotient, Sum

Expr = ExpressionNode | int

SET = isl.dim_type.set


class NeedsPreprocessing(Exception):
    """The raw kernel holds something only loopy's preprocessing resolves (auto tags, types, ...)."""


class Unsupported(Exception):
    """The fast path does not cover this kernel; loopy's statistics must count it."""


def product(factors: list[Expr]) -> Expr:
    """The product of ``factors``, integer factors folded into one."""
    number = 1
    kept: list[Expr] = []
    for factor in factors:
        if isinstance(factor, int):
            number *= factor
        else:
            kept.append(factor)
    if number == 0:
        return 0
    if number != 1:
        kept.insert(0, number)
    if not kept:
        return 1
    return kept[0] if len(kept) == 1 else Product(tuple(kept))


def total(terms: list[Expr]) -> Expr:
    """The sum of ``terms``, integer terms folded into one."""
    number = 0
    kept: list[Expr] = []
    for term in terms:
        if isinstance(term, int):
            number += term
        else:
            kept.append(term)
    if number:
        kept.append(number)
    if not kept:
        return 0
    return kept[0] if len(kept) == 1 else Sum(tuple(kept))


# -- components of a domain -----------------------------------------------------------------------
_BASIC_SET = re.compile(r"^\s*(?:\[(?P<params>[^\]]*)\]\s*->\s*)?\{\s*\[(?P<dims>[^\]]*)\]\s*(?::(?P<body>.*))?\}\s*$")
_NAME = re.compile(r"[A-Za-z_]\w*")


def _simple_strides(domain: isl.BasicSet) -> dict:
    """loopy's :func:`get_simple_strides` of ``domain``, keyed by (dim type, position). loopy calls
    ``get_basic_sets`` on the BasicSet its ``convexify`` returns, which islpy deprecates (implicit
    conversion to a Set, "will stop working in 2026"): loopy's own call, whatever the domain, so its
    DeprecationWarning is silenced here and nowhere else."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"islpy(\.|$)",
                                message=r"BasicSet\.foreach_basic_set with implicit conversion")
        return get_simple_strides(domain, key_by="index")


@dataclass
class Component:
    """Inames tied together by constraints, as an isl set under the kernel's assumptions."""

    names: tuple[str, ...]
    domain: isl.BasicSet
    guards: dict[frozenset[str], bool] = field(default_factory=dict)
    edge_free: dict[tuple[str, frozenset[str]], Expr] = field(default_factory=dict)  # lane_extent's answers

    @cached_property
    def index(self) -> dict[str, int]:
        return {name: pos for name, (_, pos) in self.domain.get_var_dict(SET).items()}

    @cached_property
    def bounds(self) -> dict[str, tuple[isl.PwAff, isl.PwAff]]:
        as_set = self.domain.to_set()
        return {name: (as_set.dim_min(pos), as_set.dim_max(pos)) for name, pos in self.index.items()}

    @cached_property
    def extents(self) -> dict[str, Expr]:
        strides = _simple_strides(self.domain)
        result: dict[str, Expr] = {}
        for name, (low, high) in self.bounds.items():
            stride = strides.get((SET, self.index[name])) or 1
            size = high.sub(low).add_constant_val(isl.Val.int_from_si(high.get_ctx(), stride))
            length = pw_aff_to_expr(size.coalesce())
            if not isinstance(length, int):  # a loop empty at some sizes (p <= k < m at m <= p) runs no pass
                length = Max((0, length))
            result[name] = length if stride == 1 else length // stride
        return result

    def lane_extent(self, name: str, local: frozenset[str]) -> Expr:
        """``name``'s extent without the constraints that tie one of the ``local`` inames to a size
        parameter (the problem's edge), as an expression of the sizes."""
        key = (name, local & set(self.index))
        if key not in self.edge_free:
            basic = self.domain.remove_divs()
            params = basic.dim(isl.dim_type.param)
            kept = isl.BasicSet.universe(basic.space)
            for constraint in basic.get_constraints():
                edge = constraint.involves_dims(isl.dim_type.param, 0, params) and any(
                    constraint.involves_dims(SET, self.index[n], 1) for n in local if n in self.index)
                if not edge:
                    kept = kept.add_constraint(constraint)
            as_set, pos = kept.to_set(), self.index[name]
            if not as_set.project_out_except([name], [SET]).is_bounded():  # bounded by a size alone (i < n)
                self.edge_free[key] = self.extents[name]
                return self.edge_free[key]
            size = as_set.dim_max(pos).sub(as_set.dim_min(pos)).add_constant_val(isl.Val.one(self.domain.get_ctx()))
            length = pw_aff_to_expr(size.coalesce())
            self.edge_free[key] = length if isinstance(length, int) else Max((0, length))
        return self.edge_free[key]

    @cached_property
    def firsts(self) -> dict[str, Expr]:
        """iname -> its smallest value."""
        return {name: pw_aff_to_expr(low.coalesce()) for name, (low, _) in self.bounds.items()}

    def needs_guard(self, parallel: frozenset[str]) -> bool:
        """Whether the component projected onto ``parallel`` is smaller than its bounding box."""
        if parallel not in self.guards:
            projected = self.domain.to_set().project_out_except(sorted(parallel), [SET])
            box = isl.Set.universe(projected.space)
            local_space = isl.LocalSpace.from_space(projected.space)
            for name, (_, pos) in projected.get_var_dict(SET).items():
                low, high = self.bounds[name]
                variable = isl.PwAff.from_aff(isl.Aff.var_on_domain(local_space, SET, pos))
                box = box & variable.ge_set(_lift(low, projected)) & variable.le_set(_lift(high, projected))
            self.guards[parallel] = not box.is_subset(projected)
        return self.guards[parallel]


def _lift(param_aff: isl.PwAff, domain: isl.Set) -> isl.PwAff:
    """A parameter-only PwAff lifted onto ``domain``'s set space."""
    lifted = param_aff.align_params(domain.space).insert_dims(isl.dim_type.in_, 0, domain.dim(SET))
    for pos in range(domain.dim(SET)):
        lifted = lifted.set_dim_id(isl.dim_type.in_, pos, domain.get_dim_id(SET, pos))
    return lifted


_COMPONENTS: dict[tuple[str, ...], Component] = {}
MAX_CACHED_COMPONENTS = 20_000


def _with_assumptions(domain: isl.Set | isl.BasicSet, assumptions: isl.BasicSet) -> isl.Set:
    context = assumptions.align_params(domain.space)
    return domain.intersect_params(context.params() if context.dim(SET) else context)


def _component(text_key: tuple[str, ...], build: str | isl.BasicSet | isl.Set, assumptions: isl.BasicSet) -> Component:
    if text_key not in _COMPONENTS:
        if len(_COMPONENTS) > MAX_CACHED_COMPONENTS:
            _COMPONENTS.clear()
        domain = isl.BasicSet(build) if isinstance(build, str) else build
        domain = domain.to_set() if isinstance(domain, isl.BasicSet) else domain
        bounded = _with_assumptions(domain, assumptions).coalesce()
        if bounded.n_basic_set() != 1:
            raise Unsupported("a domain component is a union of several basic sets")
        basic = bounded.get_basic_sets()[0]
        names = tuple(basic.get_var_dict(SET))
        _COMPONENTS[text_key] = Component(names=names, domain=basic)
    return _COMPONENTS[text_key]


def split_components(kernel: lp.LoopKernel) -> list[Component] | None:
    """A one-domain kernel's domain as independent components (one component if its text is
    unusual); None for a kernel with a tree of domains."""
    assumptions = kernel.assumptions
    context = str(assumptions)
    if len(kernel.domains) != 1:
        return None
    if len(kernel.domains) == 1:
        text = str(kernel.domains[0])
        match = _BASIC_SET.match(text)
        body = (match.group("body") or "") if match else ""
        if match and not any(word in body for word in ("exists", " or ", "floor", "mod", "[")):
            params = match.group("params") or ""
            param_names = {p.strip() for p in params.split(",") if p.strip()}
            dims = [d.strip() for d in match.group("dims").split(",") if d.strip()]
            conjuncts = [c.strip() for c in body.split(" and ") if c.strip()]
            groups = _group(dims, conjuncts, param_names)
            return [
                _component(
                    (context, params, ",".join(names), *parts),
                    f"[{params}] -> {{ [{', '.join(names)}] : {' and '.join(parts)} }}",
                    assumptions,
                )
                for names, parts in groups
            ]
    domain = kernel.domains[0]
    return [_component((context, str(domain)), domain, assumptions)]


def projected_component(kernel: lp.LoopKernel, inames: frozenset[str]) -> Component:
    """The domain of ``inames`` (with the domains they nest in) projected onto them, as loopy's
    ``count_inames_domain`` and ``get_iname_bounds`` see it."""
    domain = kernel.get_inames_domain(inames)
    key = (str(kernel.assumptions), str(domain), *sorted(inames))
    if key not in _COMPONENTS:
        return _component(key, domain.project_out_except(sorted(inames), [SET]), kernel.assumptions)
    return _COMPONENTS[key]


def _group(dims: list[str], conjuncts: list[str], params: set[str]) -> list[tuple[tuple[str, ...], list[str]]]:
    """Union-find of ``dims`` over the conjuncts that mention several of them."""
    parent = {d: d for d in dims}

    def root(d: str) -> str:
        while parent[d] != d:
            parent[d] = parent[parent[d]]
            d = parent[d]
        return d

    mentions = []
    for conjunct in conjuncts:
        names = [n for n in _NAME.findall(conjunct) if n in parent]
        unknown = [n for n in _NAME.findall(conjunct) if n not in parent and n not in params]
        if unknown:
            raise Unsupported(f"cannot read the domain constraint '{conjunct}'")
        mentions.append(names)
        for other in names[1:]:
            parent[root(other)] = root(names[0])
    members: dict[str, list[str]] = {}
    for d in dims:
        members.setdefault(root(d), []).append(d)
    parts: dict[str, list[str]] = {r: [] for r in members}
    for conjunct, names in zip(conjuncts, mentions):
        for r in [root(names[0])] if names else list(parts):  # parameter-only constraints go everywhere
            parts[r].append(conjunct)
    return [(tuple(members[r]), parts[r]) for r in members]


# -- the kernel's counts --------------------------------------------------------------------------
class Domains:
    """Counts over a kernel's domain: per iname set, per hardware axis, per work-group."""

    def __init__(self, kernel: lp.LoopKernel) -> None:
        self.kernel = kernel
        self._counts: dict[tuple[frozenset[str], bool], Expr] = {}
        self._guards: dict[frozenset[str], bool] = {}  # parallel (or, for domain trees, all) inames

    @cached_property
    def hw_axes(self) -> dict[str, tuple[str, int]]:
        """iname -> ("g" | "l", axis) for inames mapped to the launch grid."""
        axes: dict[str, tuple[str, int]] = {}
        for iname, tags in self.kernel.inames.items():
            for tag in tags.tags:
                if isinstance(tag, AutoLocalInameTagBase):
                    raise NeedsPreprocessing(f"iname {iname} has an automatic local tag")
                if isinstance(tag, (GroupInameTag, LocalInameTag)):
                    axes[iname] = ("g" if isinstance(tag, GroupInameTag) else "l", tag.axis)
        return axes

    def is_local(self, iname: str) -> bool:
        return self.hw_axes.get(iname, ("", 0))[0] == "l"

    @cached_property
    def vector_inames(self) -> frozenset[str]:
        """Inames tagged ``vec``: the lanes of one vector instruction (float4), not a loop."""
        return frozenset(iname for iname, tags in self.kernel.inames.items()
                         if any(isinstance(tag, VectorizeTag) for tag in tags.tags))

    @cached_property
    def _split(self) -> list[Component] | None:
        return split_components(self.kernel)

    @property
    def is_split(self) -> bool:
        """Whether the kernel has one domain, split into components (not a tree of domains)."""
        return self._split is not None

    @cached_property
    def components(self) -> dict[str, Component]:
        """iname -> the component that bounds it."""
        if self._split is not None:
            return {name: c for c in self._split for name in c.names}
        return {i: projected_component(self.kernel, frozenset([i])) for i in self.kernel.all_inames()}

    @cached_property
    def extents(self) -> dict[str, Expr]:
        """iname -> number of values it takes (box estimate), as an expression of the sizes."""
        return {name: c.extents[name] for name, c in self.components.items()}

    @cached_property
    def lane_extents(self) -> dict[str, Expr]:
        """:attr:`extents` with the lanes the problem's edge switches off: a local iname's extent without
        the constraints that tie it to a size parameter (``lid(0) + 256*gid(0) < n``: 256 lanes at n = 100,
        below one group, where loopy's box has 100), as in the groups past the first. Other bounds keep
        theirs (a loop ``x <= k < m`` still leaves lanes ``x >= m`` out)."""
        local = frozenset(name for name in self.components if self.is_local(name))
        return {name: self.components[name].lane_extent(name, local) if name in local and not isinstance(extent, int)
                else extent for name, extent in self.extents.items()}

    def first(self, iname: str) -> Expr:
        """The smallest value ``iname`` takes."""
        return self.components[iname].firsts[iname]

    def count(self, inames: frozenset[str], lanes: bool = False) -> Expr:
        """Points of the domain projected onto ``inames`` (loopy's box estimate); with ``lanes``, its
        local inames over their whole work-group (:attr:`lane_extents`)."""
        if (inames, lanes) not in self._counts:
            missing = inames - set(self.components)
            if missing:
                raise Unsupported(f"inames {', '.join(sorted(missing))} are not in the domain")
            if self._split is not None or not inames:
                extents = self.lane_extents if lanes else self.extents
            else:
                extents = projected_component(self.kernel, inames).extents
                if lanes:  # a domain tree: the projection's local inames, the edge left out
                    local = frozenset(i for i in inames if self.is_local(i))
                    component = projected_component(self.kernel, inames)
                    extents = {i: component.lane_extent(i, local) if i in local and not isinstance(e, int) else e
                               for i, e in extents.items()}
            self._counts[inames, lanes] = product([extents[i] for i in sorted(inames)])
        return self._counts[inames, lanes]

    # -- launch grid --------------------------------------------------------------------------
    @cached_property
    def used_inames(self) -> frozenset[str]:
        used: set[str] = set()
        for insn in self.kernel.instructions:
            used |= insn.within_inames
        return frozenset(used)

    @cached_property
    def grid(self) -> tuple[tuple[Expr, ...], tuple[int, ...]]:
        """(work-groups per axis, work-items per group per axis), three axes each."""
        by_axis: dict[tuple[str, int], list[str]] = {}
        for iname in sorted(self.used_inames):
            if iname in self.hw_axes:
                by_axis.setdefault(self.hw_axes[iname], []).append(iname)
        groups: list[Expr] = [1, 1, 1]
        local: list[int] = [1, 1, 1]
        for (kind, axis), inames in by_axis.items():
            if axis > 2:
                raise Unsupported(f"hardware axis {axis} beyond the third")
            if kind == "l":
                local[axis] = self._local_extent(inames)
            else:
                extents = list(dict.fromkeys(self.extents[i] for i in self._widest(inames)))
                groups[axis] = extents[0] if len(extents) == 1 else Max(tuple(extents))
        return tuple(groups), tuple(local)

    def _widest(self, inames: list[str]) -> list[str]:
        """The group indices of one axis less those another's extent bounds under the kernel's
        assumptions (``m <= n``: loopy's grid is then n's groups, and n's loop needs no guard)."""
        sizes = {}
        for iname in inames:
            low, high = self.components[iname].bounds[iname]
            sizes[iname] = high.sub(low).add_constant_val(isl.Val.one(high.get_ctx()))
        kept: list[str] = []
        for iname in inames:
            if any(self._at_most(sizes[iname], sizes[other]) for other in kept):
                continue
            kept = [other for other in kept if not self._at_most(sizes[other], sizes[iname])] + [iname]
        return kept

    def _at_most(self, size: isl.PwAff, other: isl.PwAff) -> bool:
        """Whether ``size`` is at most ``other`` at every size the kernel's assumptions allow."""
        assumptions = self.kernel.assumptions
        context = (assumptions.params() if assumptions.dim(SET) else assumptions).to_set()
        for aff in (size, other):
            context = context.align_params(aff.get_space())
        size, other = size.align_params(context.get_space()), other.align_params(context.get_space())
        return context.is_subset(size.le_set(other))

    def _local_extent(self, inames: list[str]) -> int:
        values = [self.extents[i] for i in inames]
        if all(isinstance(v, int) for v in values):
            return max(values)
        return max(self._static_extent(iname) for iname in inames)

    def _static_extent(self, iname: str) -> int:
        """The largest number of values ``iname`` takes at any sizes the assumptions allow (a constant)."""
        low, high = self.components[iname].bounds[iname]
        size = high.sub(low).add_constant_val(isl.Val.one(high.get_ctx()))
        try:
            bound = aff_to_expr(static_max_of_pw_aff(size, constants_only=True, context=self.kernel.assumptions))
        except StaticValueFindingError:
            raise Unsupported(f"work-group size along {iname} is not a constant") from None
        return int(bound)

    @property
    def group_size(self) -> int:
        local = self.grid[1]
        return local[0] * local[1] * local[2]

    def unused_axes_factor(self, inames: frozenset[str], local_too: bool) -> Expr:
        """Grid extent along the axes ``inames`` do not use (loopy's count_redundant_work)."""
        used = {self.hw_axes[i] for i in inames if i in self.hw_axes}
        groups, local = self.grid
        factors: list[Expr] = [groups[a] for a in range(3) if ("g", a) not in used]
        if local_too:
            factors += [local[a] for a in range(3) if ("l", a) not in used]
        return product(factors)

    def runs_per_workitem(self, inames: frozenset[str], lanes: bool = False) -> Expr:
        """Executions of something inside ``inames``, counted once per work-item (loopy's box; with
        ``lanes``, every lane of the work-groups, as :attr:`lane_extents`)."""
        return product([self.count(inames, lanes), self.unused_axes_factor(inames, local_too=True)])

    def runs_per_group_item(self, inames: frozenset[str]) -> Expr:
        """Executions by every work-item of each work-group that runs ``inames``' outer part.

        loopy's SUBGROUP granularity counts ``count(non-local inames) x ceil(group / 32)``; this is
        the same count in work-items, ``count(non-local inames) x group size``.
        """
        outer = frozenset(i for i in inames if not self.is_local(i))
        return product([self.count(outer), self.unused_axes_factor(outer, local_too=False), self.group_size])

    def runs_per_launch_item(self, inames: frozenset[str]) -> Expr:
        """Executions of a guard hoisted to ``inames``' outer part by every work-item of every
        work-group of the launch: groups beyond the range of ``inames``' own group index (a loop
        over fewer groups than another's) evaluate it too, and find it false."""
        outer = frozenset(i for i in inames if not self.is_local(i))
        groups, _ = self.grid
        widen = [Quotient(groups[self.hw_axes[i][1]], self.extents[i]) for i in sorted(outer)
                 if self.hw_axes.get(i, ("", 0))[0] == "g" and groups[self.hw_axes[i][1]] != self.extents[i]]
        return product([self.runs_per_group_item(inames), *widen])

    # -- guards -------------------------------------------------------------------------------
    def needs_guard(self, inames: frozenset[str]) -> bool:
        """Whether code inside ``inames`` needs a conditional: the domain projected onto its
        parallel inames does not fill the launch grid's box (sequential loops take their bounds)."""
        parallel = frozenset(i for i in inames if i in self.hw_axes)
        if not parallel:
            return False
        key = parallel if self._split is not None else frozenset(inames)
        if key not in self._guards:
            if not all(self._covers_axis(i) for i in parallel):
                self._guards[key] = True
            elif self._split is None:
                self._guards[key] = projected_component(self.kernel, frozenset(inames)).needs_guard(parallel)
            else:
                components = {id(self.components[i]): self.components[i] for i in parallel}.values()
                self._guards[key] = any(c.needs_guard(parallel & set(c.names)) for c in components)
        return self._guards[key]

    def _covers_axis(self, iname: str) -> bool:
        kind, axis = self.hw_axes[iname]
        groups, local = self.grid
        return self.extents[iname] == (local[axis] if kind == "l" else groups[axis])


def size_params(kernel: lp.LoopKernel) -> frozenset[str]:
    """The kernel's size parameters: those its domains name, and integer scalar arguments (a stride
    passed at run time), which counts may depend on like any size."""
    integers = {arg.name for arg in kernel.args if isinstance(arg, lp.ValueArg) and arg.dtype is not None
                and np.dtype(arg.dtype.numpy_dtype).kind in "iu"}
    return frozenset(kernel.all_params()) | integers
