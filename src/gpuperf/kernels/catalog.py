"""The catalog of named kernels, and lookup of a name, a variant or a user's ``file.py:function``."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gpuperf.errors import GpuperfError, unknown_name_error
from gpuperf.kernels.kernel import Kernel, kernel_from_program, refuse_measurement_file, refuse_source_file

CATEGORIES = ("measurement", "test", "stencil")
_MODULES = ("gpuperf.kernels.measurement", "gpuperf.kernels.testsuite", "gpuperf.kernels.stencils", "gpuperf.kernels.calibration")


@dataclass(frozen=True)
class CatalogEntry:
    """A catalog kernel as listed (its size parameters and their defaults too) and its builder: listing
    the catalog needs no loopy program, which takes long to build."""

    name: str
    category: str
    description: str
    params: tuple[str, ...]
    default_sizes: Mapping[str, int]
    build: Callable[[], Kernel]


_ENTRIES: dict[str, CatalogEntry] = {}


def register(name: str, category: str, description: str, params: tuple[str, ...],
             default_sizes: Mapping[str, int]) -> Callable[[Callable[[], Kernel]], Callable[[], Kernel]]:
    """Decorator: add a builder ``() -> Kernel`` to the catalog under ``name``; the Kernel it builds
    has these ``params`` and ``default_sizes``."""
    if category not in CATEGORIES:
        raise ValueError(f"category must be one of {CATEGORIES}")

    def decorate(build: Callable[[], Kernel]) -> Callable[[], Kernel]:
        _ENTRIES[name] = CatalogEntry(name, category, description, params, default_sizes, build)
        return build

    return decorate


def _load_modules() -> None:
    for module in _MODULES:
        importlib.import_module(module)


def entries(category: str | None = None) -> list[CatalogEntry]:
    """Catalog entries in registration order, optionally of one category."""
    _load_modules()
    return [e for e in _ENTRIES.values() if category is None or e.category == category]


def kernel_names(category: str | None = None) -> list[str]:
    """The catalog's kernel names (of one ``category``: measurement, test or stencil)."""
    return [e.name for e in entries(category)]


_BUILT: dict[object, Kernel] = {}  # by name, or a user file's variant by its file's state (loader.user_file_key)


def get_kernel(spec: str) -> Kernel:
    """A kernel by catalog name, ``name[param=value,...]`` variant (of a catalog space or a user's,
    ``path/to/file.py:space[param=value,...]``), or ``path/to/file.py:function``."""
    from gpuperf.kernels.loader import user_file_key

    if not isinstance(spec, str) or not spec.strip():
        raise GpuperfError(f"get_kernel: a kernel name is needed (a catalog name, NAME[param=value,...] or "
                           f"path/to/file.py:function), not {spec!r}")
    key = user_file_key(spec) or spec
    if key in _BUILT:
        return _BUILT[key]
    is_variant = "[" in spec and spec.rstrip().endswith("]")
    if not is_variant:
        refuse_source_file(spec)
    if not is_variant and (".py:" in spec or spec.endswith(".py")):
        from gpuperf.kernels.loader import load_user_kernel

        return load_user_kernel(spec)
    if is_variant:
        from gpuperf.kernels.space import variant_from_spec

        kernel = variant_from_spec(spec)
    else:
        _load_modules()
        if spec not in _ENTRIES:
            refuse_measurement_file(spec, "kernel")
            raise unknown_name_error("kernel", spec, _ENTRIES)
        kernel = _ENTRIES[spec].build()
    _BUILT[key] = kernel
    return kernel


def as_kernel(kernel: object, where: str) -> Kernel:
    """``kernel`` as a Kernel, for the library functions that take a kernel (``where`` names the
    function): a Kernel itself, a name as :func:`get_kernel` takes, or a bare loopy TranslationUnit,
    made a Kernel as a ``file.py:function`` returning one is (named after its entry point, its integer
    value arguments its size parameters, no NumPy reference)."""
    if isinstance(kernel, Kernel):
        return kernel
    if isinstance(kernel, str):
        return get_kernel(kernel)
    import loopy as lp

    if isinstance(kernel, lp.TranslationUnit):
        name = ", ".join(sorted(kernel.entrypoints)) or "program"  # several: one_entrypoint names them
        return kernel_from_program(kernel, name, "user kernel (a loopy TranslationUnit)")
    raise GpuperfError(f"{where} needs a gpuperf Kernel, a loopy TranslationUnit or a kernel's name, "
                       f"got {type(kernel).__name__}")
