"""An optimization entry's applies_when judged with some features unknown: Kleene's three-valued logic,
and the same answer as pandas' eval wherever every feature is known."""

from __future__ import annotations

import ast
import math

import numpy as np
import pandas as pd
import pytest

from gpuperf.decisions.condition_logic import verdict
from gpuperf.decisions.optimizations import load_optimizations


@pytest.mark.parametrize("condition, values, expected", [
    ("a > 1 and b == 0", {"b": 2048.0}, False),  # the known side is false: false whatever a is
    ("a > 1 and b == 0", {"b": 0.0}, None),
    ("a > 1 and b == 0", {"a": 2.0, "b": 0.0}, True),
    ("a > 1 or b == 0", {"b": 0.0}, True),  # the known side is true: true whatever a is
    ("a > 1 or b == 0", {"b": 1.0}, None),
    ("a > 1 or b == 0", {"a": 0.0, "b": 1.0}, False),
    ("not a > 1", {"a": math.nan}, None),
    ("a + b > 1", {"a": 5.0}, None),  # arithmetic on an unknown is unknown
    ("a > 1 & b == 0", {"b": 3.0}, False),  # & binds as 'and' does, as pandas reads it
    ("a > 1 | b == 0", {"b": 0.0}, True),
    ("1 < a < 3", {"a": 2.0}, True),
    ("a / b > 1", {"a": 1.0, "b": 0.0}, True),  # 1/0 is inf, as in pandas, not an error
])
def test_a_condition_is_settled_by_its_known_side_or_left_unknown(condition, values, expected):
    assert verdict(condition, values) is expected


def test_with_every_feature_known_the_verdict_is_pandas_eval():
    conditions = [entry.applies_when for entry in load_optimizations().values() if entry.applies_when]
    conditions += ["a > 1 & b == 0 | c < 2", "not (a >= b) and c % 2 == 1", "-a < b ** 2 or ~(c > 3)",
                   "a // 2 != b - c * 3"]
    rng = np.random.default_rng(0)
    for condition in conditions:
        names = sorted({node.id for node in ast.walk(ast.parse(condition.replace("&", "and").replace("|", "or")))
                        if isinstance(node, ast.Name)})
        for _ in range(50):
            values = {name: float(rng.choice([0.0, 1.0, 2.0, 3.0, 4096.0, rng.uniform(-5, 5)])) for name in names}
            assert verdict(condition, values) is bool(pd.DataFrame([values]).eval(condition).iloc[0]), (condition, values)


@pytest.mark.parametrize(("condition", "expected"), [
    ("1 < a < b", False),       # the known link 1 < 0 is false: the chain is, whatever b is
    ("b < a < -1", False),      # the same with the known link last
    ("-1 < a < b", None),       # the known link holds; the other is unknown
    ("-1 < a < 2 < 3", True),   # every link known and true
])
def test_a_chained_comparison_is_settled_by_a_known_false_link(condition, expected):
    """A chain with one unknown value was unknown even when a known link was false (Kleene logic,
    as for ``1 < a and a < b``)."""
    assert verdict(condition, {"a": 0.0}) is expected
    spelled_out = " and ".join(
        f"{left} {op} {right}" for left, op, right in zip(condition.split()[0::2], condition.split()[1::2],
                                                          condition.split()[2::2]))
    assert verdict(spelled_out, {"a": 0.0}) is expected


def test_derived_ratios_of_a_frame_without_static_columns_are_missing():
    """add_derived raised AttributeError ('float' object has no attribute 'where') without load and store columns."""
    from gpuperf.decisions.advice_features import add_derived

    derived = add_derived(pd.DataFrame({"threads": [1.0, 2.0]}))
    assert derived["arithmetic_intensity"].isna().all() and derived["local_per_global_access"].isna().all()
    assert derived["threads"].tolist() == [1.0, 2.0]
