"""The fast path to loopy's statistics: counts read straight from the kernel's IR.

loopy's ``get_op_map`` / ``get_mem_access_map`` / ``get_synchronization_map`` preprocess the
program, build an isl quasi-polynomial for every expression node and schedule the kernel; that
takes 0.03 s to seconds per kernel. This module applies the same counting rules (see
``loopy.statistics``: ``ExpressionOpCounter``, ``GlobalMemAccessCounter``,
``LocalMemAccessCounter``, ``count_insn_runs`` with ``count_redundant_work=True``) with plain
Python walks over the instructions and one box count per iname set (``gpuperf.features.domains``).
Barrier positions come from loopy's scheduler, once per kernel *structure* (instructions,
dependencies, tags and temporaries with numbers blanked), because variants that differ only in
split factors schedule alike. The test suite checks that both paths agree on the catalog.

Reductions of the raw (unpreprocessed) program are counted as loopy realizes sequential ones:
one accumulate operation per reduction iteration, and automatic address spaces of temporaries are
decided as loopy's preprocessing decides them. Kernels with automatic local tags, temporaries of
unknown type or shared storage, substitution rules, unresolved function calls or parallel
reductions are preprocessed by loopy first (tens of milliseconds); what the walk still cannot
read raises ``Unsupported`` and ``symbolic_counts`` falls back to loopy's statistics.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.diagnostic import LoopyError
from loopy.kernel.array import VectorArrayDimTag
from loopy.kernel.data import AddressSpace, ArrayArg, ConstantArg, TemporaryVariable
from loopy.kernel.function_interface import CallableKernel
from loopy.kernel.instruction import (
    Assignment,
    BarrierInstruction,
    CallInstruction,
    CInstruction,
    NoOpInstruction,
)

from gpuperf.errors import GpuperfError
from gpuperf.features.counts import AccessRecord, SymbolicCounts
from gpuperf.features.domains import Domains, Expr, NeedsPreprocessing, Unsupported, product, size_params, total
from gpuperf.features.lanes import lane_masks, pass_recipe
from gpuperf.features.walker import Walker

__all__ = ["Unsupported", "fast_counts", "structure_only"]


# -- the program ----------------------------------------------------------------------------------
def _entry(program: lp.TranslationUnit) -> lp.LoopKernel:
    if len(program.entrypoints) != 1:
        raise Unsupported("programs with several entry points")
    if sum(isinstance(c, CallableKernel) for c in program.callables_table.values()) != 1:
        raise Unsupported("programs that call other loopy kernels")
    return program.default_entrypoint


def _raw_needs_preprocessing(kernel: lp.LoopKernel) -> bool:
    if kernel.substitutions:
        return True
    for temporary in kernel.temporary_variables.values():
        if temporary.dtype in (None, lp.auto) or temporary.base_storage is not None:
            return True
    return any(isinstance(a, (ArrayArg, ConstantArg)) and a.dtype in (None, lp.auto) for a in kernel.args)


def fast_counts(program: lp.TranslationUnit) -> SymbolicCounts:
    """SymbolicCounts from the IR (raises Unsupported where only loopy's statistics can count)."""
    kernel = _entry(program)
    if not _raw_needs_preprocessing(kernel):
        try:
            return _count(program, kernel, preprocessed=False)
        except NeedsPreprocessing:
            pass
    try:
        processed = lp.preprocess_program(program)
    except LoopyError as exc:
        raise Unsupported(f"loopy cannot preprocess the kernel: {exc}") from None
    try:
        return _count(processed, _entry(processed), preprocessed=True)
    except NeedsPreprocessing as exc:
        raise Unsupported(str(exc)) from None


@dataclass(frozen=True)
class Structure:
    """What the kernel's IR says beyond loopy's statistics (geometry, branches, loops, memory)."""

    params: tuple[str, ...]
    groups: tuple[Expr, Expr, Expr]
    local: tuple[int, int, int]
    branches: Expr | None
    loop_iterations: Expr | None
    local_memory_bytes: Expr
    notes: tuple[str, ...] = ()
    loop_iterations_lanes: Expr | None = None  # as loop_iterations, every lane of the work-groups


def _count(program: lp.TranslationUnit, kernel: lp.LoopKernel, preprocessed: bool) -> SymbolicCounts:
    domains = Domains(kernel)
    walker = Walker(kernel, program.callables_table, domains)
    for insn in kernel.instructions:
        if isinstance(insn, (Assignment, CallInstruction)):
            walker.instruction(insn)
        elif not isinstance(insn, (BarrierInstruction, NoOpInstruction, CInstruction)):
            raise Unsupported(f"instruction type {type(insn).__name__}")
    ops: dict[tuple[str, str], Expr] = {}
    for context, counter in walker.ops.items():
        runs = domains.runs_per_group_item(context)
        for key, times in counter.items():
            ops[key] = total([ops.get(key, 0), product([times, runs])])
    grouped: dict[tuple, list] = {}
    for context, found in walker.accesses.items():
        for access, insn_id in found:
            grouped.setdefault((context, insn_id, access), [access, 0])[1] += 1
    accesses = []
    for (context, insn_id, _), (access, times) in grouped.items():
        if access.granularity == "workitem":
            runs, lane_runs = domains.runs_per_workitem(context), domains.runs_per_workitem(context, lanes=True)
        else:
            runs = lane_runs = domains.runs_per_group_item(context)
        pattern = access.pattern
        outer = outer_names = None
        if pattern.outer_strides is not None:
            outer_names = [i for i, _ in pattern.outer_strides]
            outer = tuple((stride, domains.first(i), domains.extents[i]) for i, stride in pattern.outer_strides)
        lanes, lane_recipe = lane_masks(domains, context, outer_names, access.granularity == "subgroup")
        accesses.append(
            AccessRecord(
                space=access.space,
                direction=access.direction,
                variable=access.variable,
                dtype=access.dtype,
                itemsize=access.itemsize,
                count=product([times, runs]),
                lane_count=None if lane_runs == runs else product([times, lane_runs]),
                lid_strides=pattern.lid_strides,
                offset=pattern.offset,
                outer=outer,
                problem=pattern.problem,
                instruction=insn_id,
                lanes=lanes,
                lane_recipe=lane_recipe,
                passes=pass_recipe(domains, context),
                vector=access.vector,
                atomic=access.atomic,
            )
        )
    structure = _structure(kernel, domains, walker)
    from gpuperf.features.sync import sync_counts

    return SymbolicCounts(
        params=structure.params,
        ops=ops,
        accesses=tuple(accesses),
        syncs=sync_counts(program, kernel, domains, preprocessed, walker.address_spaces),
        groups=structure.groups,
        local=structure.local,
        branches=structure.branches,
        loop_iterations=structure.loop_iterations,
        local_memory_bytes=structure.local_memory_bytes,
        method="fast",
        loop_iterations_lanes=structure.loop_iterations_lanes,
        notes=structure.notes,
        assumptions=str(kernel.assumptions),
    )


def _structure(kernel: lp.LoopKernel, domains: Domains, walker: Walker | None) -> Structure:
    groups, local = domains.grid
    contexts: set[frozenset[str]] = {frozenset(i.within_inames) for i in kernel.instructions}
    branches: list[Expr] = []
    if walker is not None:
        contexts |= set(walker.ops) | set(walker.accesses)
        for context, times in walker.conditionals.items():
            branches.append(product([times, domains.runs_per_workitem(context, lanes=True)]))
    # Every work-item of a group that reaches a guard evaluates it, not just those it lets through.
    branches += [domains.runs_per_launch_item(inames) for inames in sorted(_guard_contexts(kernel, domains), key=sorted)]
    return Structure(
        params=tuple(sorted(size_params(kernel))),
        groups=groups,  # type: ignore[arg-type]
        local=local,  # type: ignore[arg-type]
        branches=total(branches) if walker is not None else None,
        loop_iterations=_loop_iterations(contexts, domains, walker.unvectorised if walker is not None else set()),
        loop_iterations_lanes=_loop_iterations(contexts, domains, walker.unvectorised if walker is not None else set(),
                                               lanes=True),
        local_memory_bytes=_local_memory_bytes(kernel, walker.address_spaces if walker is not None else None),
    )


def _guard_contexts(kernel: lp.LoopKernel, domains: Domains) -> set[frozenset[str]]:
    """The loops each bound guard loopy emits sits in, one entry per distinct guard.

    A guard covers the parallel inames of the instructions it guards. loopy hoists it out of a
    sequential loop whose every instruction needs that same guard (one ``if`` around the loop; a
    bound the loop shares with the parallel inames becomes the loop's limit), but not out of a loop
    it shares with instructions it does not guard. Two guards with the same loops, apart in the
    loop body, count as one (the linearized order is not consulted)."""
    guards: list[tuple[frozenset[str], frozenset[str] | None]] = []
    for insn in kernel.instructions:
        if isinstance(insn, (Assignment, CallInstruction)):
            inames = frozenset(insn.within_inames)
            parallel = frozenset(i for i in inames if i in domains.hw_axes)
            guards.append((inames, parallel if domains.needs_guard(inames) else None))
    sharing: dict[str, set[frozenset[str] | None]] = {}
    for inames, guard in guards:
        for iname in inames - set(domains.hw_axes):
            sharing.setdefault(iname, set()).add(guard)
    return {guard | {i for i in inames - guard if sharing[i] != {guard}} for inames, guard in guards if guard is not None}


def _loop_iterations(contexts: set[frozenset[str]], domains: Domains,
                     unvectorised: set[frozenset[str]] = frozenset(), lanes: bool = False) -> Expr:
    """Executions of innermost sequential loop bodies, per launch in work-item units (a ``vec`` iname
    is no loop, except in ``unvectorised`` contexts, which loopy unrolls); with ``lanes``, every lane of
    the work-groups (:attr:`Domains.lane_extents`)."""
    nests: dict[frozenset[str], list[Expr]] = {}
    for context in sorted(contexts, key=sorted):  # a fixed order: the same answer in every process
        vector = domains.vector_inames if context not in unvectorised else frozenset()
        sequential = frozenset(i for i in context if i not in domains.hw_axes and i not in vector
                               and domains.extents.get(i) != 1)
        if sequential:
            runs = domains.runs_per_workitem(context, lanes)
            if runs not in nests.setdefault(sequential, []):
                nests[sequential].append(runs)
    # A nest whose body runs over fewer work-items in some instructions (a guarded second local
    # index) still runs its loop in the busiest ones: the largest count stands for the nest.
    innermost = [runs[0] if len(runs) == 1 else prim.Max(tuple(runs))
                 for nest, runs in nests.items() if not any(nest < other for other in nests)]
    return total(innermost)


def _local_memory_bytes(kernel: lp.LoopKernel, spaces: dict[str, AddressSpace] | None = None) -> Expr:
    """Bytes of local-memory temporaries per work-group (aliases of one storage counted once)."""
    sizes: dict[str, Expr] = {}
    for temporary in kernel.temporary_variables.values():
        space = (spaces or {}).get(temporary.name, temporary.address_space)
        if not isinstance(temporary, TemporaryVariable) or space != AddressSpace.LOCAL:
            continue
        shape = list(temporary.shape) if isinstance(temporary.shape, tuple) else []
        for axis, tag in enumerate(temporary.dim_tags or ()):
            if isinstance(tag, VectorArrayDimTag) and axis < len(shape) and shape[axis] == 3:
                shape[axis] = 4  # a float3 takes a float4's room
        nbytes = product([*shape, np.dtype(temporary.dtype.numpy_dtype).itemsize])
        storage = temporary.base_storage or temporary.name
        sizes[storage] = nbytes if storage not in sizes else prim.Max((sizes[storage], nbytes))
    return total(list(sizes.values()))


def structure_only(program: lp.TranslationUnit) -> Structure:
    """Geometry, branches, loops and local memory where possible (for loopy's statistics path)."""
    notes: list[str] = []
    for candidate in (program, None):
        try:
            if candidate is None:
                candidate = lp.preprocess_program(program)
            kernel = _entry(candidate)
            domains = Domains(kernel)
            walker = Walker(kernel, candidate.callables_table, domains)
            for insn in kernel.instructions:
                if isinstance(insn, (Assignment, CallInstruction)):
                    walker.instruction(insn)
            return _structure(kernel, domains, walker)
        except (NeedsPreprocessing, Unsupported, LoopyError) as exc:
            notes.append(str(exc))
    kernel = program.default_entrypoint
    groups, local = kernel.get_grid_size_upper_bounds_as_exprs(program.callables_table)
    groups = (tuple(groups) + (1, 1, 1))[:3]
    local = _constant_local_size(kernel, (tuple(local) + (1, 1, 1))[:3])
    return Structure(
        params=tuple(sorted(size_params(kernel))),
        groups=groups,  # type: ignore[arg-type]
        local=local,  # type: ignore[arg-type]
        branches=None,
        loop_iterations=None,
        local_memory_bytes=_local_memory_bytes(kernel),
        notes=("branches and loop iterations unknown: " + "; ".join(notes),),
    )


def _constant_local_size(kernel: lp.LoopKernel, local: tuple[Expr, ...]) -> tuple[int, int, int]:
    """``local`` as whole numbers; an error naming the kernel where a work-group size is an expression
    of the sizes (a loop over ``n`` tagged ``l.0``), which gpuperf's features cannot count with."""
    for axis, size in enumerate(local):
        if not isinstance(size, (int, np.integer)):
            raise GpuperfError(f"kernel '{kernel.name}': its work-group size along local axis {axis} is {size}, an "
                               "expression of the sizes; gpuperf needs constant work-group sizes (split the loop, "
                               "as lp.split_iname(program, iname, 64, inner_tag='l.0'))")
    return tuple(int(size) for size in local)  # type: ignore[return-value]


_NUMBER = re.compile(r"\d+")


def blank_numbers(text: str) -> str:
    """``text`` with every integer replaced by ``#`` (structure keys ignore split factors)."""
    return _NUMBER.sub("#", text)
