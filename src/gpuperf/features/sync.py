"""Barriers and kernel launches per work-item, as ``lp.get_synchronization_map`` counts them.

Where barriers go is decided by loopy's scheduler. Scheduling takes tens of milliseconds, so the
barrier *sites* (each barrier's kind and the sequential loops around it) are computed once per
kernel structure: the instructions with every integer blanked, their dependencies, iname tags and
temporaries. Variants that differ only in split factors or sizes share a structure; the count of
each site is then the product of its loops' trip counts for the variant at hand.
"""

from __future__ import annotations

import loopy as lp
from loopy.kernel.data import AddressSpace
from loopy.kernel.instruction import BarrierInstruction
from loopy.schedule import Barrier, CallKernel, EnterLoop, LeaveLoop

from gpuperf.features.domains import Domains, Expr, NeedsPreprocessing, total

Site = tuple[str, frozenset[str]]
_SITES: dict[tuple[str, ...], tuple[Site, ...]] = {}


def may_synchronize(kernel: lp.LoopKernel, spaces: dict[str, AddressSpace]) -> bool:
    """Whether loopy could place a barrier: local or global temporaries, or explicit barriers."""
    if any(isinstance(i, BarrierInstruction) for i in kernel.instructions):
        return True
    return any(space in (AddressSpace.LOCAL, AddressSpace.GLOBAL) for space in spaces.values())


def structure_key(kernel: lp.LoopKernel, spaces: dict[str, AddressSpace]) -> tuple[str, ...]:
    """What the scheduler's barrier placement depends on, with every integer blanked."""
    from gpuperf.features.fastcount import blank_numbers

    shared = {name for name, space in spaces.items() if space in (AddressSpace.LOCAL, AddressSpace.GLOBAL)}
    parts = [kernel.name, repr(sorted(kernel.loop_priority, key=repr))]
    parts += [f"{name}:{sorted(map(str, iname.tags))}" for name, iname in sorted(kernel.inames.items())]
    parts += [f"{t.name}:{spaces[t.name]}:{len(t.shape or ())}" for t in kernel.temporary_variables.values()]
    for insn in sorted(kernel.instructions, key=lambda i: i.id):
        names = insn.dependency_names() | frozenset(insn.assignee_var_names())
        # the text (indices) only matters where shared temporaries are touched
        text = blank_numbers(str(insn)) if names & shared else ""
        parts.append(
            f"{type(insn).__name__}{getattr(insn, 'synchronization_kind', '')}|{insn.id}|{sorted(insn.within_inames)}|{sorted(insn.depends_on)}"
            f"|{sorted(map(repr, insn.no_sync_with))}|{sorted(names)}|{text}"
        )
    return tuple(parts)


def barrier_sites(program: lp.TranslationUnit, preprocessed: bool) -> tuple[Site, ...]:
    """(kind, enclosing sequential loop inames) of every barrier and kernel launch loopy schedules."""
    processed = program if preprocessed else lp.preprocess_program(program)
    kernel = lp.get_one_linearized_kernel(processed.default_entrypoint, processed.callables_table)
    loops: list[str] = []
    sites: list[Site] = []
    for item in kernel.linearization:
        if isinstance(item, EnterLoop) and item.iname:
            loops.append(item.iname)
        elif isinstance(item, LeaveLoop) and item.iname:
            loops.pop()
        elif isinstance(item, Barrier):
            sites.append((f"barrier_{item.synchronization_kind}", frozenset(loops)))
        elif isinstance(item, CallKernel):
            sites.append(("kernel_launch", frozenset(loops)))
    return tuple(sites)


def sync_counts(
    program: lp.TranslationUnit,
    kernel: lp.LoopKernel,
    domains: Domains,
    preprocessed: bool,
    spaces: dict[str, AddressSpace],
) -> dict[str, Expr]:
    """Synchronizations per work-item by kind (``barrier_local``, ``barrier_global``, ``kernel_launch``)."""
    if not may_synchronize(kernel, spaces):
        return {"kernel_launch": 1}
    key = structure_key(kernel, spaces)
    if key not in _SITES:
        if len(_SITES) > 10_000:
            _SITES.clear()
        _SITES[key] = barrier_sites(program, preprocessed)
    counts: dict[str, Expr] = {}
    for kind, loops in _SITES[key]:
        if not loops <= set(domains.components):
            raise NeedsPreprocessing("the schedule loops over inames the raw kernel does not have")
        counts[kind] = total([counts.get(kind, 0), domains.count(loops)])
    return counts
