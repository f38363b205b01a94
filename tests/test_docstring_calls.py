"""The calls gpuperf's docstrings show (``name(args)``) name parameters their functions have."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re

import pytest

import gpuperf

SHOWN_CALL = re.compile(r"``([A-Za-z_][\w.]*)\(([^`]*)\)``")


def _modules() -> list:
    names = [info.name for info in pkgutil.walk_packages(gpuperf.__path__, "gpuperf.")
             if not info.name.endswith("__main__")]
    return [importlib.import_module(name) for name in names]


def _docstrings(module) -> list[tuple[str, str]]:
    found = [(module.__name__, module.__doc__ or "")]
    for name, value in vars(module).items():
        if (inspect.isfunction(value) or inspect.isclass(value)) and value.__module__ == module.__name__:
            found.append((f"{module.__name__}.{name}", value.__doc__ or ""))
    return found


def _resolved(module, dotted: str):
    value = module
    for part in dotted.split("."):
        value = getattr(value, part, None)
    return value if callable(value) else None


def _wrong_calls(module) -> list[str]:
    wrong = []
    for where, doc in _docstrings(module):
        for name, args in SHOWN_CALL.findall(doc):
            function = _resolved(module, name)
            try:
                call = ast.parse(f"f({args})", mode="eval").body
                signature = inspect.signature(function) if function is not None else None
            except (SyntaxError, TypeError, ValueError):
                continue
            if not isinstance(call, ast.Call):  # ``f(a) + g(b)``: two calls, read as one
                continue
            elided = any(isinstance(a, ast.Starred) or (isinstance(a, ast.Constant) and a.value is ...)
                         for a in call.args)  # f(*args), f(..., option=1): only the keywords are checked
            if signature is None:
                continue
            keywords = {k.arg: None for k in call.keywords if k.arg is not None}
            try:
                signature.bind_partial(*[None] * (0 if elided else len(call.args)), **keywords)
            except TypeError as error:
                wrong.append(f"{where}: {name}({args}): {error}")
    return wrong


@pytest.mark.filterwarnings("ignore")
def test_every_call_a_docstring_shows_binds_to_its_function():
    wrong = [line for module in _modules() for line in _wrong_calls(module)]
    assert wrong == []
