"""Cache lines per global access along the access's innermost sequential loop.

A CPU runs each work-item's sequential loops in order, so what a loop's accesses cost depends on
how far the address moves from one iteration to the next: a unit step stays in one cache line for
16 floats, a step of a row starts a new line every time. For each global access of a kernel this
module finds the sequential loops around it (inames not mapped to the launch grid, not unrolled,
with more than one trip at the given sizes; a load inside a reduction also runs in the reduction's
loops), takes the innermost one (reduction loops before the others, then the innermost in loopy's
generated code, then the inner part of a split), and returns ``min(|step| x item size, 64) / 64``
lines per access, 0 where the address does not move with that loop. Accesses outside sequential
loops are not counted here.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Mapping
from typing import Any

import loopy as lp
import pymbolic.primitives as prim
from loopy.kernel.array import FixedStrideArrayDimTag
from loopy.kernel.data import AutoLocalInameTagBase, GroupInameTag, LocalInameTag, UnrollTag
from loopy.schedule import EnterLoop, LeaveLoop, RunInstruction
from loopy.symbolic import CoefficientCollector, WalkMapper
from pymbolic import evaluate

from gpuperf.features.counts import AccessRecord
from gpuperf.features.domains import Domains
from gpuperf.kernels.kernel import Kernel

CACHE_LINE = 64  # bytes


class _Subscripts(WalkMapper):
    """Every subscript of one array in an expression."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.found: list[tuple[Any, ...]] = []

    def map_subscript(self, expr: prim.Subscript, *args: Any, **kwargs: Any) -> None:
        if getattr(expr.aggregate, "name", None) == self.name:
            self.found.append(expr.index_tuple)
        super().map_subscript(expr, *args, **kwargs)


class LoopStrides:
    """Lines per access along the innermost sequential loop, for one kernel (cached per program,
    which it holds weakly: the entry leaves the cache when the program is dropped)."""

    _cache: dict[int, tuple[weakref.ref, LoopStrides]] = {}

    def __init__(self, kernel: Kernel) -> None:
        self._program = weakref.ref(kernel.program)
        self._preprocessed: lp.LoopKernel | None = None
        self._domains: dict[int, Domains] = {}
        self._loops: dict[str, list[str]] | None = None

    @classmethod
    def of(cls, kernel: Kernel) -> LoopStrides:
        program = kernel.program
        key = id(program)
        found = cls._cache.get(key)
        if found is not None and found[0]() is program:
            return found[1]
        strides = cls(kernel)
        cls._cache[key] = (weakref.ref(program, lambda _ref, k=key: cls._cache.pop(k, None)), strides)
        return strides

    def lines(self, record: AccessRecord, sizes: Mapping[str, int]) -> float | None:
        """Lines per access along the innermost sequential loop (0 outside loops; None if unknown)."""
        if not record.instruction:
            return None  # loopy's statistics path does not say which instruction an access is in
        entry = self._entry(record.instruction)
        insn = entry.id_to_insn.get(record.instruction)
        if insn is None:
            return None
        loop = self._innermost_loop(entry, insn, record.direction == "load", sizes)
        if loop is None:
            return 0.0
        array = entry.arg_dict.get(record.variable)
        if not isinstance(array, (lp.ArrayArg, lp.ConstantArg)):  # a __constant array is a global one too
            return 0.0
        expressions = insn.assignees if record.direction == "store" else (insn.expression,)
        collector = _Subscripts(record.variable)
        for expression in expressions:
            collector(expression)
        if not collector.found:
            return None
        steps = [self._step(array, index, loop, sizes) for index in collector.found]
        lines = [1.0 if step is None else min(abs(step) * record.itemsize, CACHE_LINE) / CACHE_LINE for step in steps]
        return sum(lines) / len(lines)

    # -- helpers ------------------------------------------------------------------------------
    @property
    def program(self) -> lp.TranslationUnit:
        program = self._program()
        if program is None:
            raise RuntimeError("LoopStrides: the kernel's program is gone")  # only reachable through the cache
        return program

    def _entry(self, instruction: str) -> lp.LoopKernel:
        """The raw kernel if it has the instruction, else the preprocessed one (whose instructions the
        counts of kernels with automatic local tags refer to)."""
        raw = self.program.default_entrypoint
        if instruction in raw.id_to_insn:
            return raw
        if self._preprocessed is None:
            self._preprocessed = lp.preprocess_program(self.program).default_entrypoint
        return self._preprocessed

    def _trips(self, entry: lp.LoopKernel, iname: str, sizes: Mapping[str, int]) -> float:
        domains = self._domains.setdefault(id(entry), Domains(entry))
        return float(evaluate(domains.count(frozenset([iname])), dict(sizes)))

    def _innermost_loop(self, entry: lp.LoopKernel, insn: Any, load: bool, sizes: Mapping[str, int]) -> str | None:
        reductions = set(insn.reduction_inames()) if load else set()
        context = set(insn.within_inames) | reductions
        loops = [i for i in sorted(context) if _sequential(entry, i) and self._trips(entry, i, sizes) > 1]
        if not loops:
            return None
        inner_reductions = [i for i in loops if i in reductions]
        candidates = inner_reductions or loops
        # Nesting as loopy generates the code; loops it does not show around the instruction:
        # inner part of a split after its outer part, then the name.
        nesting = self._nesting().get(insn.id, [])
        if reductions:  # loopy realizes a reduction as instructions of its own, named after this one
            realized = [v for k, v in self._nesting().items() if k.startswith(f"{insn.id}_")]
            nesting = max([nesting, *realized], key=len)
        return max(candidates, key=lambda i: (i in nesting, nesting.index(i) if i in nesting else 0,
                                              i.endswith("_inner"), not i.endswith("_outer"), i))

    def _nesting(self) -> dict[str, list[str]]:
        """Per instruction id, the sequential loops around it in loopy's generated code, outermost
        first (empty when the kernel cannot be linearized)."""
        if self._loops is None:
            self._loops = {}
            try:
                processed = lp.preprocess_program(self.program)
                linear = lp.get_one_linearized_kernel(processed.default_entrypoint, processed.callables_table)
            except Exception:  # noqa: BLE001 - no code order known: the name rules decide
                return self._loops
            open_loops: list[str] = []
            for item in linear.linearization:
                if isinstance(item, EnterLoop):
                    open_loops.append(item.iname)
                elif isinstance(item, LeaveLoop):
                    open_loops.pop()
                elif isinstance(item, RunInstruction):
                    self._loops[item.insn_id] = list(open_loops)
        return self._loops

    def _step(self, array: lp.ArrayArg | lp.ConstantArg, index: tuple[Any, ...], loop: str,
              sizes: Mapping[str, int]) -> float | None:
        """Elements the flattened index moves per iteration of ``loop`` (None if not affine)."""
        strides = _element_strides(array, sizes)
        if strides is None or len(strides) != len(index):
            return None
        step = 0.0
        for component, stride in zip(index, strides):
            try:
                coefficients = CoefficientCollector([loop])(component)
            except Exception:  # noqa: BLE001 - a non-affine index: its step is unknown
                return None
            coefficient = coefficients.get(prim.Variable(loop), 0)
            try:
                step += float(evaluate(coefficient, dict(sizes))) * stride
            except Exception:  # noqa: BLE001 - a coefficient that depends on data
                return None
        return step


def _sequential(entry: lp.LoopKernel, iname: str) -> bool:
    tags = entry.iname_tags(iname)
    return not any(isinstance(t, (UnrollTag, GroupInameTag, LocalInameTag, AutoLocalInameTagBase)) for t in tags)


def _element_strides(array: lp.ArrayArg | lp.ConstantArg, sizes: Mapping[str, int]) -> list[float] | None:
    """Strides of each axis in elements: the array's fixed strides, else C order from its shape."""
    tags = array.dim_tags
    if tags and all(isinstance(t, FixedStrideArrayDimTag) and t.stride is not lp.auto for t in tags):
        try:
            return [float(evaluate(t.stride, dict(sizes))) for t in tags]
        except Exception:  # noqa: BLE001
            return None
    if array.shape in (None, lp.auto):
        return None
    try:
        shape = [float(evaluate(s, dict(sizes))) for s in array.shape]
    except Exception:  # noqa: BLE001
        return None
    return [math.prod(shape[axis + 1:]) for axis in range(len(shape))]
