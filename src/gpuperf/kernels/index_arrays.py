"""What a kernel's integer (index) arrays' values index: which arrays an expression's value is read
from, through temporaries too, and how those values subscript the kernel's arrays or bound its loops
(:attr:`gpuperf.kernels.kernel.Kernel.index_uses`). Walks loopy's expressions: it imports loopy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import loopy as lp
import numpy as np
from loopy.symbolic import WalkMapper, get_dependencies
from pymbolic import evaluate
from pymbolic.primitives import ExpressionNode


@dataclass(frozen=True)
class IndexValues:
    """What an expression's value is made of, as far as integer (index) arrays go: ``shifted``, an
    element of one of them plus a constant ((array, offset) pairs: ``idx[i] + 1`` is ("idx", 1)), or
    ``opaque``, the arrays it is otherwise computed from (``2 * idx[i]``, ``idx[i] + j``)."""

    shifted: frozenset[tuple[str, int]] = frozenset()
    opaque: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.shifted or self.opaque)

    def __or__(self, other: IndexValues) -> IndexValues:
        return IndexValues(self.shifted | other.shifted, self.opaque | other.opaque)

    def blurred(self) -> IndexValues:
        """These values changed in a way no constant shift describes."""
        return IndexValues(opaque=self.opaque | {array for array, _ in self.shifted})


class _ValuesRead(WalkMapper):
    """The :class:`IndexValues` an expression is computed from, where no more precise form is known:
    the integer arrays it reads and the temporaries holding their values (not what only indexes
    another array: ``src[idx[i]]`` is ``src``'s value)."""

    def __init__(self, arrays: set[str], temporaries: Mapping[str, IndexValues]):
        super().__init__()
        self.arrays, self.temporaries, self.found = arrays, temporaries, IndexValues()

    def map_subscript(self, expr, *args, **kwargs):  # noqa: ANN001, ANN201 - pymbolic's mapper signature
        self.found |= _held(expr.aggregate.name, self.arrays, self.temporaries)

    def map_variable(self, expr, *args, **kwargs):  # noqa: ANN001, ANN201
        self.found |= self.temporaries.get(expr.name, IndexValues())


def _held(name: str, arrays: set[str], temporaries: Mapping[str, IndexValues]) -> IndexValues:
    """The values an element of array or temporary ``name`` holds."""
    return IndexValues(frozenset({(name, 0)})) if name in arrays else temporaries.get(name, IndexValues())


def _constant(expr: Any) -> int | None:
    """``expr``'s value where it is a whole number no variable changes (``-1``, ``2*3``)."""
    if get_dependencies(expr):
        return None
    try:
        value = evaluate(expr, {})
    except Exception:  # noqa: BLE001 - a call or anything else pymbolic cannot evaluate
        return None
    return int(value) if isinstance(value, (int, np.integer)) else None


def index_values(expr: Any, arrays: set[str], temporaries: Mapping[str, IndexValues]) -> IndexValues:
    """What ``expr`` is computed from among the integer ``arrays``' values (directly or through
    ``temporaries`` holding them): an element plus a constant where it is one, else opaque."""
    from pymbolic.primitives import Subscript, Sum, Variable

    if isinstance(expr, Subscript):
        return _held(expr.aggregate.name, arrays, temporaries)
    if isinstance(expr, Variable):
        return temporaries.get(expr.name, IndexValues())
    if isinstance(expr, Sum):
        parts = [index_values(child, arrays, temporaries) for child in expr.children]
        held = [part for part in parts if part]
        constants = [_constant(child) for child, part in zip(expr.children, parts) if not part]
        if len(held) == 1 and not held[0].opaque and None not in constants:
            shift = sum(constants)  # type: ignore[arg-type] - None is excluded above
            return IndexValues(frozenset((array, offset + shift) for array, offset in held[0].shifted))
        return IndexValues(opaque=frozenset().union(*(part.blurred().opaque for part in held)))
    if not isinstance(expr, ExpressionNode):
        return IndexValues()
    walked = _ValuesRead(arrays, temporaries)
    walked(expr)
    return walked.found.blurred()


def temporary_index_values(entry: lp.LoopKernel, arrays: set[str]) -> dict[str, IndexValues]:
    """For each temporary of ``entry``, the integer ``arrays``' values it may hold (``<> t = idx[i]``,
    and transitively ``<> u = t + 1``): every assignment to it counted."""
    held: dict[str, IndexValues] = {}
    for _ in range(len(entry.instructions) + 1):  # each round follows the values one assignment further
        before = dict(held)
        for instruction in entry.instructions:
            expression = getattr(instruction, "expression", None)
            if expression is None:
                continue
            values = index_values(expression, arrays, held)
            if len(getattr(instruction, "assignees", ())) > 1:
                values = values.blurred()
            for name in instruction.assignee_var_names():
                if name in entry.temporary_variables and values:
                    held[name] = held.get(name, IndexValues()) | values
        if held == before:
            break
    return held


@dataclass(frozen=True)
class IndexUses:
    """How a kernel's integer arrays' values index its arguments: ``shifted`` (index array, indexed
    array, axis, offset) for each use as an element plus a constant, which a range of inputs can
    bound; ``unbounded``, a reason for each use no range can (a loop bound, another expression)."""

    shifted: frozenset[tuple[str, str, int, int]]
    unbounded: tuple[str, ...]


class _IndexUses(WalkMapper):
    """The uses of integer arrays' values in the subscripts of ``indexed`` arrays."""

    def __init__(self, arrays: set[str], temporaries: Mapping[str, IndexValues], indexed: set[str]):
        super().__init__()
        self.arrays, self.temporaries, self.indexed = arrays, temporaries, indexed
        self.shifted: set[tuple[str, str, int, int]] = set()
        self.unbounded: dict[str, None] = {}

    def map_subscript(self, expr, *args, **kwargs):  # noqa: ANN001, ANN201 - pymbolic's mapper signature
        name = expr.aggregate.name
        if name in self.indexed:
            for axis, index in enumerate(expr.index_tuple):
                values = index_values(index, self.arrays, self.temporaries)
                self.shifted |= {(array, name, axis, offset) for array, offset in values.shifted}
                for array in sorted(values.opaque):
                    self.unbounded[f"a value read from array {array} indexes axis {axis} of {name} through an "
                                   f"expression other than {array}[...] plus a constant"] = None
        super().map_subscript(expr, *args, **kwargs)


def index_array_uses(entry: lp.LoopKernel, arrays: set[str], indexed: set[str] | None = None) -> IndexUses:
    """How the integer ``arrays`` (their elements, or temporaries holding them) index the ``indexed``
    arrays (default: every argument) of ``entry``, or bound its loops."""
    import islpy as isl

    temporaries = temporary_index_values(entry, arrays)
    mapper = _IndexUses(arrays, temporaries, {a.name for a in entry.args} if indexed is None else indexed)
    for instruction in entry.instructions:
        for expression in (getattr(instruction, "expression", None), *getattr(instruction, "assignees", ())):
            if expression is not None:
                mapper(expression)
    for domain in entry.domains:
        for bound in domain.get_var_names(isl.dim_type.param):
            source = temporaries.get(bound)
            if source:
                loops = ", ".join(domain.get_var_names(isl.dim_type.set))
                mapper.unbounded[f"the bounds of loop {loops} are read from array "
                                 f"{sorted({a for a, _ in source.shifted} | source.opaque)[0]}"] = None
    return IndexUses(frozenset(mapper.shifted), tuple(mapper.unbounded))
