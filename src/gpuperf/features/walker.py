"""One pass over a loopy kernel's instructions collecting what loopy's statistics count.

For every *context* (the set of inames an expression runs within; a reduction adds its inames)
the walker records operations by (dtype, kind) as loopy's ``ExpressionOpCounter`` names them,
array references to global and local memory as ``GlobalMemAccessCounter`` and
``LocalMemAccessCounter`` see them (with the index pattern of ``gpuperf.features.indexing``; a
``__constant`` array, ``lp.ConstantArg``, which loopy's counter skips, counts as global), and
conditionals. How often each context runs comes from ``gpuperf.features.domains``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.kernel.array import VectorArrayDimTag
from loopy.kernel.data import AddressSpace, ArrayArg, ConstantArg
from loopy.kernel.function_interface import CallableKernel
from loopy.expression import UnvectorizableError, VectorizabilityChecker
from loopy.kernel.instruction import Assignment, AtomicInit, AtomicUpdate
from loopy.library.reduction import (
    MaxReductionOperation,
    MinReductionOperation,
    ProductReductionOperation,
    SumReductionOperation,
)
from loopy.symbolic import Reduction, TypeCast

from gpuperf.features.counts import dtype_name
from gpuperf.features.domains import Domains, NeedsPreprocessing, Unsupported
from gpuperf.features.indexing import SCALAR, IndexPattern, address_spaces, index_pattern
from gpuperf.features.irtypes import KernelTypes, math_function

REDUCTION_OPS = {
    SumReductionOperation: "add",
    ProductReductionOperation: "mul",
    MaxReductionOperation: "max",  # loopy realizes these as calls of max / min
    MinReductionOperation: "min",
}


@dataclass(frozen=True)
class Access:
    """One array reference found in an instruction (before counting)."""

    space: str  # "global" | "local"
    direction: str  # "load" | "store"
    variable: str
    dtype: str
    itemsize: int
    granularity: str  # "workitem" | "subgroup": how loopy counts it
    pattern: IndexPattern
    vector: int = 1  # elements one access moves: a float4 access of a ``vec`` axis by a ``vec`` iname, 4
    atomic: bool = False  # the target of an atomic update, read and written by the memory system


class Walker:
    """Collects op and access multiplicities per iname context from one kernel's instructions."""

    def __init__(self, kernel: lp.LoopKernel, callables, domains: Domains) -> None:
        self.kernel = kernel
        self.callables = callables
        self.domains = domains
        self.types = KernelTypes(kernel, callables)
        self.ops: dict[frozenset[str], Counter] = {}
        self.accesses: dict[frozenset[str], list[tuple[Access, str]]] = {}
        self.conditionals: dict[frozenset[str], int] = {}
        self.address_spaces = address_spaces(kernel, domains)
        self._patterns: dict[tuple, IndexPattern] = {}
        self._atomic: set[str] = set()  # the variables the current instruction updates atomically
        self._vectorised = True  # whether loopy vectorises the current instruction along its vec inames
        self.unvectorised: set[frozenset[str]] = set()  # contexts of instructions loopy unrolls, not vectorises

    # -- helpers ------------------------------------------------------------------------------
    def dtype(self, expr) -> str:  # noqa: ANN001
        return dtype_name(self.types.dtype(expr))

    def add_op(self, context: frozenset[str], dtype: str, name: str, times: int = 1) -> None:
        if times:
            self.ops.setdefault(context, Counter())[(dtype, name)] += times

    # -- instructions -------------------------------------------------------------------------
    def instruction(self, insn) -> None:  # noqa: ANN001
        context = frozenset(insn.within_inames)
        self._atomic = {a.var_name for a in getattr(insn, "atomicity", ()) if isinstance(a, (AtomicUpdate, AtomicInit))}
        vector = self.domains.vector_inames & context
        self._vectorised = all(self._vectorisable(insn, iname) for iname in vector)
        if not self._vectorised:  # loopy unrolls it: scalar accesses, and its vec iname a loop
            self.unvectorised.add(context)
        for assignee in insn.assignees:
            self.walk(assignee, context, "store", insn.id)
        self.walk(insn.expression, context, "load", insn.id)
        if insn.predicates:
            self.conditionals[context] = self.conditionals.get(context, 0) + 1
        counted_ops, self.ops = self.ops, {}  # a predicate's loads count, its index arithmetic does not (as loopy's)
        for predicate in insn.predicates:  # read to decide whether the instruction runs (loopy's statistics skip them)
            self.walk(predicate, context, "load", insn.id)
        self.ops = counted_ops

    def walk(self, expr, context: frozenset[str], direction: str, insn_id: str) -> None:  # noqa: ANN001, C901, PLR0912
        """Ops and accesses of ``expr`` executed once per point of ``context``."""
        if isinstance(expr, (int, float, complex, np.generic, prim.NaN)):
            return
        if isinstance(expr, prim.Variable):
            self.variable_access(expr, None, context, direction, insn_id)
        elif isinstance(expr, prim.Subscript):
            self.variable_access(expr.aggregate, expr, context, direction, insn_id)
            for index in expr.index_tuple:  # an index is read, even in the subscript a store writes to
                self.walk(index, context, "load", insn_id)
        elif isinstance(expr, prim.Sum):
            self.add_op(context, self.dtype(expr), "add", len(expr.children) - 1)
            self.walk_all(expr.children, context, direction, insn_id)
        elif isinstance(expr, prim.Product):
            kept = [c for c in expr.children if not prim.is_zero(c + 1)]
            self.add_op(context, self.dtype(expr), "mul", len(kept) - 1)
            self.walk_all(kept, context, direction, insn_id)
        elif isinstance(expr, prim.QuotientBase) and type(expr).__name__ != "FortranDivision":
            self.add_op(context, self.dtype(expr), "div")
            self.walk_all((expr.numerator, expr.denominator), context, direction, insn_id)
        elif isinstance(expr, prim.Power):
            self.add_op(context, self.dtype(expr), "pow")
            self.walk_all((expr.base, expr.exponent), context, direction, insn_id)
        elif isinstance(expr, (prim.LeftShift, prim.RightShift)):
            self.add_op(context, self.dtype(expr), "shift")
            self.walk_all((expr.shiftee, expr.shift), context, direction, insn_id)
        elif isinstance(expr, prim.BitwiseNot):
            self.add_op(context, self.dtype(expr), "bw")
            self.walk(expr.child, context, direction, insn_id)
        elif isinstance(expr, (prim.BitwiseOr, prim.BitwiseAnd, prim.BitwiseXor)):
            self.add_op(context, self.dtype(expr), "bw", len(expr.children) - 1)
            self.walk_all(expr.children, context, direction, insn_id)
        elif isinstance(expr, (prim.Min, prim.Max)):
            self.add_op(context, self.dtype(expr), "maxmin", len(expr.children) - 1)
            self.walk_all(expr.children, context, direction, insn_id)
        elif isinstance(expr, prim.Call):
            self.call(expr, context, direction, insn_id)
        elif isinstance(expr, TypeCast):
            self.walk(expr.child, context, direction, insn_id)
        elif isinstance(expr, prim.If):
            self.conditionals[context] = self.conditionals.get(context, 0) + 1
            self.walk_all((expr.condition, expr.then, expr.else_), context, direction, insn_id)
        elif isinstance(expr, prim.Comparison):
            self.walk_all((expr.left, expr.right), context, direction, insn_id)
        elif isinstance(expr, (prim.LogicalAnd, prim.LogicalOr)):
            self.walk_all(expr.children, context, direction, insn_id)
        elif isinstance(expr, prim.LogicalNot):
            self.walk(expr.child, context, direction, insn_id)
        elif isinstance(expr, Reduction):
            self.reduction(expr, context, direction, insn_id)
        else:
            raise NeedsPreprocessing(f"expression node {type(expr).__name__}")

    def walk_all(self, children, context: frozenset[str], direction: str, insn_id: str) -> None:  # noqa: ANN001
        for child in children:
            self.walk(child, context, direction, insn_id)

    def call(self, expr: prim.Call, context: frozenset[str], direction: str, insn_id: str) -> None:
        name = getattr(expr.function, "name", None)
        callable_ = self.callables.get(name) if name is not None else None
        if isinstance(callable_, CallableKernel):
            raise Unsupported("calls to other loopy kernels")
        if callable_ is None:
            name = math_function(expr, self.callables)
            if name is None:
                raise NeedsPreprocessing(f"call to unresolved function {expr.function}")
        else:
            name = callable_.name
        self.add_op(context, self.dtype(expr), name)
        self.walk_all(expr.parameters, context, direction, insn_id)

    def reduction(self, expr: Reduction, context: frozenset[str], direction: str, insn_id: str) -> None:
        operation = REDUCTION_OPS.get(type(expr.operation))
        if operation is None or expr.is_tuple_typed:
            raise NeedsPreprocessing(f"reduction {expr.operation}")
        if any(i in self.domains.hw_axes for i in expr.inames):
            raise NeedsPreprocessing("reduction over parallel inames")
        inner = context | frozenset(expr.inames)
        self.add_op(inner, self.dtype(expr), operation)
        self.walk(expr.expr, inner, direction, insn_id)

    def _vectorisable(self, insn, iname: str) -> bool:  # noqa: ANN001
        """Whether loopy vectorises ``insn`` along ``iname`` (``VectorizabilityChecker``, as its code
        generation asks: a vector right-hand side needs a vector target). Where it does not (the iname
        indexing a plain axis, a function call, a length other than the array's, ...) it unrolls."""
        extent = self.domains.extents.get(iname)
        if not isinstance(extent, int) or not isinstance(insn, Assignment):
            return False
        checker = VectorizabilityChecker(self.kernel, iname, extent)
        try:
            target, value = checker(insn.assignee), checker(insn.expression)
        except UnvectorizableError:
            return False
        return target or not value

    # -- memory accesses ----------------------------------------------------------------------
    def vector_width(self, array, index: tuple) -> int:  # noqa: ANN001
        """Elements one access moves: the extent of the ``vec`` iname that indexes the array's axis
        tagged ``vec`` (loopy makes one float4 access of ``a[i, v]``); 1 for any other access."""
        for tag, axis_index in zip(array.dim_tags or (), index):
            if isinstance(tag, VectorArrayDimTag) and isinstance(axis_index, prim.Variable):
                extent = self.domains.extents.get(axis_index.name)
                if axis_index.name in self.domains.vector_inames and isinstance(extent, int) and extent > 1:
                    return extent
        return 1

    def variable_access(self, aggregate, subscript, context, direction: str, insn_id: str) -> None:  # noqa: ANN001
        name = aggregate.name
        array = self.kernel.arg_dict.get(name)
        space = None
        if isinstance(array, (ArrayArg, ConstantArg)):  # a __constant array is global memory read through a cache
            space = "global"
        elif name in self.kernel.temporary_variables:
            array = self.kernel.temporary_variables[name]
            space = {AddressSpace.GLOBAL: "global", AddressSpace.LOCAL: "local"}.get(self.address_spaces[name])
        if space is None:
            return
        dtype = self.types.dtype(subscript if subscript is not None else aggregate)
        if subscript is None:
            pattern = SCALAR
        else:
            key = (name, subscript.index_tuple)
            if key not in self._patterns:
                self._patterns[key] = index_pattern(self.kernel, self.domains, array, subscript.index_tuple)
            pattern = self._patterns[key]
        stride0 = dict(pattern.lid_strides).get(0, 0)
        if space == "local":
            granularity = "subgroup"  # loopy counts local accesses per sub-group
        elif subscript is None or stride0 is None or stride0 != 0:
            granularity = "workitem"
        else:
            granularity = "subgroup"  # uniform across the sub-group: loopy counts it once per sub-group
        access = Access(
            space=space,
            direction=direction,
            variable=name,
            dtype=dtype_name(dtype),
            itemsize=np.dtype(dtype.numpy_dtype).itemsize,
            granularity=granularity,
            pattern=pattern,
            vector=1 if subscript is None or not self._vectorised else self.vector_width(array, subscript.index_tuple),
            atomic=name in self._atomic,
        )
        self.accesses.setdefault(context, []).append((access, insn_id))
