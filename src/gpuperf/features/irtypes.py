"""Data types of a raw (unpreprocessed) loopy kernel's expressions, as loopy's type inference gives.

``KernelTypes`` is loopy's ``TypeReader`` with three additions: each node's type is remembered
(so a walk over an expression tree is linear), size parameters of unknown type take the index
type, and calls of not yet specialized float math functions (``exp``, ``sqrt``, ``fmin``, ...)
return their arguments' type. Anything else it cannot type raises ``NeedsPreprocessing``.
"""

from __future__ import annotations

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.diagnostic import LoopyError, TypeInferenceFailure
from loopy.type_inference import TypeReader
from loopy.types import LoopyType, NumpyType

from gpuperf.features.domains import NeedsPreprocessing

FLOAT_FUNCTIONS = frozenset(
    "exp exp2 exp10 expm1 log log2 log10 log1p sqrt rsqrt cbrt sin cos tan asin acos atan atan2 sinh cosh "
    "tanh erf erfc pow fmin fmax fabs floor ceil fmod hypot".split()
)


def math_function(expr: prim.Call, callables) -> str | None:  # noqa: ANN001
    """The name of the float math function a call makes (resolved or not yet), or None."""
    name = getattr(expr.function, "name", None)
    callable_ = callables.get(name)
    if callable_ is not None:
        name = getattr(callable_, "name", None)
    return name if name in FLOAT_FUNCTIONS else None


class KernelTypes(TypeReader):
    """loopy's TypeReader for one kernel, remembering each node's type (see the module docstring)."""

    def __init__(self, kernel: lp.LoopKernel, callables) -> None:  # noqa: ANN001
        super().__init__(kernel, callables)
        self._memo: dict[int, tuple] = {}
        self._variables: dict[str, list] = {}

    def rec(self, expr, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201 - loopy's mapper signature
        if args or kwargs:
            return super().rec(expr, *args, **kwargs)
        found = self._memo.get(id(expr))
        if found is None or found[0] is not expr:
            found = (expr, super().rec(expr))
            self._memo[id(expr)] = found
        return found[1]

    def map_variable(self, expr):  # noqa: ANN001, ANN201
        if expr.name not in self._variables:
            arg = self.kernel.arg_dict.get(expr.name)
            if isinstance(arg, lp.ValueArg) and arg.dtype is None and expr.name in self.kernel.all_params():
                self._variables[expr.name] = [self.kernel.index_dtype]
            else:
                self._variables[expr.name] = super().map_variable(expr)
        return self._variables[expr.name]

    def combine(self, values):  # noqa: ANN001, ANN201
        """loopy's combine, without its per-pair NumPy array arithmetic."""
        dtypes = [dtype for dtype_set in values for dtype in dtype_set]
        if not dtypes:
            return []
        if all(dtype == dtypes[0] for dtype in dtypes[1:]):
            return [dtypes[0]]
        if not all(isinstance(d, NumpyType) and d.dtype.fields is None for d in dtypes):
            return super().combine(values)
        numpy_dtypes = [d.dtype for d in dtypes]
        result = numpy_dtypes.pop()
        while numpy_dtypes:
            other = numpy_dtypes.pop()
            if {result, other} == {np.dtype(np.int32), np.dtype(np.float32)}:
                result = np.dtype(np.float32)  # loopy's rule (NumPy would say float64)
            else:
                result = np.promote_types(result, other)
        return [NumpyType(result)]

    def map_call(self, expr, return_tuple=False):  # noqa: ANN001, ANN201, FBT002
        """Calls of not yet specialized math functions return their float arguments' type."""
        found = super().map_call(expr, return_tuple=return_tuple)
        if found or return_tuple or math_function(expr, self.callables) is None:
            return found
        combined = self.combine([self.rec(p) for p in expr.parameters])
        if len(combined) == 1 and combined[0].numpy_dtype.kind == "f":
            return combined
        return []

    def dtype(self, expr) -> LoopyType:  # noqa: ANN001
        """The expression's type (NeedsPreprocessing if only loopy's type inference can tell)."""
        try:
            found = self.rec(expr)
        except (TypeInferenceFailure, LoopyError, AssertionError, KeyError) as exc:
            raise NeedsPreprocessing(f"type of {expr} unknown: {exc}") from None
        if len(found) != 1:
            raise NeedsPreprocessing(f"type of {expr} unknown")
        return found[0]
