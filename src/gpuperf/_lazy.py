"""Re-exports loaded on first use, so that importing one module of a package stays cheap."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` for ``package``: the first imports each name of
    ``exports`` (name -> submodule of ``package``) from its submodule when it is first asked for; the
    second lists those names beside the module's own, so that ``dir()`` and tab completion see them."""

    def __getattr__(name: str) -> Any:
        if name in exports:
            return getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        raise AttributeError(f"module '{package}' has no attribute '{name}'")

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__


class LazyModule:
    """A stand-in for the module ``name``, imported on the first use of one of its attributes: a
    module that names loopy (``lp = LazyModule("loopy")``) imports without paying for loopy's import
    until one of its functions runs (listing the kernel catalog builds no loopy program)."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self._name), attribute)

    def __repr__(self) -> str:
        return f"<module '{self._name}', imported on first use>"
