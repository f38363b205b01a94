"""Every function and class a gpuperf package exports says what it is in its own docstring, so that
``help(gpuperf.decisions.Suggestion)`` tells more than its field list."""

from __future__ import annotations

import importlib
import inspect

import pytest

PACKAGES = ["gpuperf.datasets", "gpuperf.decisions", "gpuperf.evaluation", "gpuperf.features", "gpuperf.hardware",
            "gpuperf.kernels", "gpuperf.measure", "gpuperf.models"]


def _exported() -> list[tuple[str, object]]:
    found = []
    for package in PACKAGES:
        module = importlib.import_module(package)
        found += [(f"{package}.{name}", getattr(module, name)) for name in module.__all__]
    return [(name, value) for name, value in found if inspect.isfunction(value) or inspect.isclass(value)]


@pytest.mark.parametrize("name, value", _exported(), ids=[name for name, _ in _exported()])
def test_an_exported_name_has_its_own_docstring(name, value):
    doc = (value.__doc__ or "").strip()
    assert doc, f"{name} has no docstring"
    assert not doc.startswith(f"{value.__name__}("), f"{name} has only the docstring dataclass writes"
