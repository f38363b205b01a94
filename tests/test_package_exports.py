"""The packages' re-exported names: each resolves, and dir() (so tab completion) lists it."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = ("gpuperf.datasets", "gpuperf.decisions", "gpuperf.evaluation", "gpuperf.features",
            "gpuperf.hardware", "gpuperf.kernels", "gpuperf.measure", "gpuperf.models")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_resolves_and_is_listed_by_dir(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__
    listed = dir(module)
    for name in module.__all__:
        assert name in listed, f"{package}.{name} missing from dir()"
        assert getattr(module, name) is not None


@pytest.mark.parametrize("package", ("gpuperf.decisions", "gpuperf.evaluation", "gpuperf.features", "gpuperf.models"))
def test_an_unknown_name_is_an_attribute_error_naming_the_package(package: str) -> None:
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'no_such_name'"):
        module.no_such_name  # noqa: B018
    assert "no_such_name" not in dir(module)
