"""Evaluating many count expressions of the size parameters, once or for many parameter sets.

``Evaluator(exprs, params)`` interprets the expressions for the first parameter sets (sharing
subexpressions: count expressions reuse the same iteration counts) and compiles them into one
Python function from the third on, which then costs microseconds per parameter set.
"""

from __future__ import annotations

import keyword
import operator
from collections.abc import Sequence
from typing import Any

import pymbolic.primitives as prim
from pymbolic.mapper.stringifier import PREC_POWER, StringifyMapper
from pymbolic.mapper.substitutor import substitute

_COMPARE = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_RESERVED = {"min", "max", "abs", "int", "float", "math", "True", "False", "None"}


def evaluate(expr: Any, values: dict[str, int], memo: dict[int, tuple[Any, Any]]) -> Any:  # noqa: C901, PLR0911
    """The value of a count expression; ``memo`` (by node identity) shares repeated subexpressions."""
    if isinstance(expr, (int, float)):
        return expr
    found = memo.get(id(expr))
    if found is not None and found[0] is expr:
        return found[1]
    if isinstance(expr, prim.Variable):
        result = values[expr.name]
    elif isinstance(expr, prim.Sum):
        result = sum(evaluate(c, values, memo) for c in expr.children)
    elif isinstance(expr, prim.Product):
        result = 1
        for child in expr.children:
            result = result * evaluate(child, values, memo)
    elif isinstance(expr, prim.FloorDiv):
        result = evaluate(expr.numerator, values, memo) // evaluate(expr.denominator, values, memo)
    elif isinstance(expr, prim.Remainder):
        result = evaluate(expr.numerator, values, memo) % evaluate(expr.denominator, values, memo)
    elif isinstance(expr, prim.Quotient):
        result = evaluate(expr.numerator, values, memo) / evaluate(expr.denominator, values, memo)
    elif isinstance(expr, prim.Power):
        result = evaluate(expr.base, values, memo) ** evaluate(expr.exponent, values, memo)
    elif isinstance(expr, prim.Max):
        result = max(evaluate(c, values, memo) for c in expr.children)
    elif isinstance(expr, prim.Min):
        result = min(evaluate(c, values, memo) for c in expr.children)
    elif isinstance(expr, prim.If):
        chosen = expr.then if evaluate(expr.condition, values, memo) else expr.else_
        result = evaluate(chosen, values, memo)
    elif isinstance(expr, prim.Comparison):
        result = _COMPARE[expr.operator](evaluate(expr.left, values, memo), evaluate(expr.right, values, memo))
    elif isinstance(expr, prim.LogicalAnd):
        result = all(evaluate(c, values, memo) for c in expr.children)
    elif isinstance(expr, prim.LogicalOr):
        result = any(evaluate(c, values, memo) for c in expr.children)
    elif isinstance(expr, prim.LogicalNot):
        result = not evaluate(expr.child, values, memo)
    else:
        raise TypeError(f"cannot evaluate {type(expr).__name__} in a count expression")
    memo[id(expr)] = (expr, result)
    return result


class _PythonSource(StringifyMapper):
    """pymbolic's text, but a power's base that is itself a power in parentheses: pymbolic writes
    Power(Power(n, 2), 3) as ``n**2**3``, which Python reads as n**(2**3)."""

    def map_power(self, expr, enclosing_prec, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201
        return self.parenthesize_if_needed(
            self.format("%s**%s", self.rec(expr.base, PREC_POWER + 1, *args, **kwargs),
                        self.rec(expr.exponent, PREC_POWER, *args, **kwargs)),
            enclosing_prec, PREC_POWER)


def compile_expressions(exprs: Sequence[Any], params: Sequence[str]):  # noqa: ANN201
    """One Python function ``f(*params) -> tuple`` computing every expression."""
    safe = all(p.isidentifier() and not keyword.iskeyword(p) and p not in _RESERVED for p in params)
    names = list(params) if safe else [f"_p{i}" for i in range(len(params))]
    if not safe:
        exprs = [substitute(e, {p: prim.Variable(n) for p, n in zip(params, names)}) for e in exprs]
    source_of = _PythonSource()
    body = ", ".join(source_of(e) if not isinstance(e, (int, float)) else repr(e) for e in exprs)
    source = f"def _counts({', '.join(names)}):\n    return ({body}{',' if len(exprs) == 1 else ''})\n"
    namespace: dict[str, Any] = {}
    exec(compile(source, "<gpuperf counts>", "exec"), namespace)  # noqa: S102 - source generated here
    return namespace["_counts"]


class Evaluator:
    """Evaluates a fixed list of expressions: interpreted twice, compiled from the third call."""

    INTERPRETED_CALLS = 2

    def __init__(self, exprs: Sequence[Any], params: Sequence[str]) -> None:
        self.exprs = list(exprs)
        self.params = tuple(params)
        self._compiled = None
        self._calls = 0

    def __call__(self, values: dict[str, int]) -> tuple:
        self._calls += 1
        if self._calls <= self.INTERPRETED_CALLS:
            memo: dict[int, tuple[Any, Any]] = {}
            return tuple(evaluate(e, values, memo) for e in self.exprs)
        if self._compiled is None:
            self._compiled = compile_expressions(self.exprs, self.params)
        return self._compiled(*(values[p] for p in self.params))
