"""An optimization entry's ``applies_when`` judged where some features are unknown: true, false, or
None when the unknown features decide it (Kleene's three-valued logic). ``a and b`` is false when
either side is false whatever the other is; ``a or b`` true when either side is true."""

from __future__ import annotations

import ast
import io
import math
import operator
import tokenize
from collections.abc import Mapping

import numpy as np

_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge}
_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
               ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}


def verdict(condition: str, values: Mapping[str, float]) -> bool | None:
    """Whether ``condition`` holds for ``values``; None when it turns on a missing or NaN value.

    ``&`` and ``|`` are ``and`` and ``or``, binding as loosely, as pandas' ``eval`` reads them.
    """
    with np.errstate(all="ignore"):
        answer = _value(ast.parse(_pandas_booleans(condition), mode="eval").body, values)
    return None if answer is None else bool(answer)


def _pandas_booleans(condition: str) -> str:
    """``condition`` with ``&`` and ``|`` spelt ``and`` and ``or``."""
    tokens = [(kind, {"&": " and ", "|": " or "}.get(text, text) if kind == tokenize.OP else text)
              for kind, text, *_ in tokenize.generate_tokens(io.StringIO(condition).readline)]
    return tokenize.untokenize(tokens)


def _value(node: ast.expr, values: Mapping[str, float]):
    """A number or truth value, or None where it depends on an unknown value."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        value = values.get(node.id, math.nan)
        return None if value is None or math.isnan(value) else np.float64(value)
    if isinstance(node, ast.BoolOp):
        parts = [_value(part, values) for part in node.values]
        decisive = isinstance(node.op, ast.Or)  # the value one known side settles the whole on
        if any(part is not None and bool(part) == decisive for part in parts):
            return decisive
        return None if any(part is None for part in parts) else not decisive
    if isinstance(node, ast.UnaryOp):
        operand = _value(node.operand, values)
        if operand is None:
            return None
        if isinstance(node.op, (ast.Not, ast.Invert)):
            return not operand
        return -operand if isinstance(node.op, ast.USub) else +operand
    if isinstance(node, ast.Compare):
        sides = [_value(side, values) for side in (node.left, *node.comparators)]
        links = [None if left is None or right is None else bool(_COMPARE[type(op)](left, right))
                 for op, left, right in zip(node.ops, sides, sides[1:])]
        if False in links:  # a chain is an "and" of its links: one known false link settles it
            return False
        return None if None in links else True
    if isinstance(node, ast.BinOp):
        left, right = _value(node.left, values), _value(node.right, values)
        if left is None or right is None:
            return None
        return _ARITHMETIC[type(node.op)](np.float64(left), np.float64(right))
    raise ValueError(f"applies_when: {ast.unparse(node)} is not a comparison, logic or arithmetic")
