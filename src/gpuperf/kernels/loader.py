"""Load a user's kernel, or variant space, from ``path/to/file.py:function``."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import inspect
import re
import sys
from contextlib import redirect_stdout
from pathlib import Path

import loopy as lp

from gpuperf.errors import GpuperfError, missing_file
from gpuperf.kernels.kernel import Kernel, kernel_from_program
from gpuperf.kernels.space import VariantSpace


def load_user_kernel(spec: str) -> Kernel:
    """Call ``function`` from ``file.py``; it returns a gpuperf Kernel or a loopy TranslationUnit (or a
    VariantSpace, which stands for its default variant).

    A bare TranslationUnit becomes a Kernel named after the function, with no NumPy reference, whose
    size parameters are the program's value arguments except floating-point ones that no loop
    bound names: those (saxpy's ``alpha``) are data, drawn at random like the input arrays.
    """
    result, path, function = call_user_function(spec)
    if isinstance(result, Kernel):
        return result
    if isinstance(result, VariantSpace):  # a space stands for its default variant, as a catalog space's name does
        return _checked_space(result, path, function).build({})
    if isinstance(result, lp.TranslationUnit):
        try:
            return kernel_from_program(result, function, f"user kernel from {path}")
        except GpuperfError as error:  # a reserved word as a name: say which file to fix
            raise GpuperfError(f"{path}:{function}(): {error}") from None
    raise GpuperfError(
        f"{path}:{function}() returned {type(result).__name__}; expected a loopy TranslationUnit or gpuperf Kernel"
    )


def load_user_space(spec: str) -> VariantSpace:
    """Call ``function`` from ``file.py``; it returns a gpuperf ``VariantSpace`` (parameters, defaults,
    a cheap ``check`` and a ``make`` that builds each configuration's Kernel)."""
    result, path, function = call_user_function(spec)
    if not isinstance(result, VariantSpace):
        raise GpuperfError(f"{path}:{function}() returned {type(result).__name__}; expected a gpuperf VariantSpace "
                           "(gpuperf.kernels.space.VariantSpace)")
    return _checked_space(result, path, function)


def _checked_space(space: VariantSpace, path: Path, function: str) -> VariantSpace:
    """``space`` knowing where it is defined, checked (its errors name the file and function)."""
    space = dataclasses.replace(space, origin=f"{path}:{function}")
    space.validate()
    return space


def resolved_user_spec(spec: str, base: Path | None = None) -> str:
    """A user's ``file.py:function`` spec with the file made absolute against ``base`` (default: the
    working folder), so the same file spelt two ways is one spec; other specs as they are."""
    if ".py" not in spec:
        return spec
    file_part, sep, function = spec.rpartition(":") if ".py:" in spec else (spec, "", "")
    file_path = Path(file_part)
    return f"{file_path if file_path.is_absolute() else ((base or Path.cwd()) / file_path).resolve()}{sep}{function}"


def user_file_key(spec: str) -> tuple[str, str, int, int] | None:
    """What a kernel or space loaded from a user's file is cached under: the spec as given, its file
    made absolute, and the file's modification time and size, so an edited file, or the same relative
    path in another working folder, is loaded anew; None for a spec that names no ``.py`` file."""
    if ".py" not in spec:
        return None
    resolved = resolved_user_spec(spec)
    file = resolved.rpartition(":")[0] if ".py:" in resolved else resolved
    try:
        stat = Path(file).stat()
    except OSError:  # no such file: loading it says so
        return spec, resolved, -1, -1
    return spec, resolved, stat.st_mtime_ns, stat.st_size


def call_user_function(spec: str) -> tuple[object, Path, str]:
    """(what ``function()`` of ``file.py`` returns, the file, the function's name) for ``file.py:function``;
    every failure is one clear error naming the file and the function."""
    path_text, _, function = spec.rpartition(":") if ":" in spec else (spec, "", "")
    path = Path(path_text)
    if not function:
        raise GpuperfError(f"'{spec}': name the function too, as {path}:function")
    if not path.is_file():
        raise missing_file(path, f"kernel file '{path}' does not exist")
    # A name of its own per file, registered before it runs as Python's import machinery does
    # (dataclasses and typing look the module up in sys.modules while the file executes).
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    name = f"gpuperf_user_{re.sub(r'[^0-9A-Za-z_]', '_', path.stem)}_{digest}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise GpuperfError(f"kernel file '{path}' is not a Python file")
    module = importlib.util.module_from_spec(module_spec)
    folder = path.resolve().parent
    _make_importable(folder)
    sys.modules[name] = module
    loaded = set(sys.modules)
    try:
        return _run_user_file(module, module_spec.loader, path, function)
    finally:  # what the file and its function imported beside it, packages too
        _forget_modules_beside(folder, set(sys.modules) - loaded)
        _behind_the_programs_own(folder)


def _run_user_file(module, loader, path: Path, function: str) -> tuple[object, Path, str]:
    """``module`` executed and ``function()`` of it called, each failure one error naming the file."""
    try:
        with redirect_stdout(sys.stderr):  # what a user's file prints is not gpuperf's output
            loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - any failure in user code is reported the same way
        del sys.modules[module.__name__]
        raise GpuperfError(f"kernel file '{path}' failed to import: {type(exc).__name__}: {exc}") from None
    builder = getattr(module, function, None)
    if builder is None or not callable(builder):
        defined = [n for n, v in vars(module).items() if inspect.isfunction(v) and v.__module__ == module.__name__]
        raise GpuperfError(
            f"kernel file '{path}' does not define a function '{function}'"
            + (f"; it defines {', '.join(defined)}" if defined else "")
        )
    _refuse_required_arguments(builder, path, function)
    try:
        with redirect_stdout(sys.stderr):
            return builder(), path, function
    except GpuperfError as error:  # e.g. a Kernel it makes refuses a name
        raise GpuperfError(f"{path}:{function}(): {error}") from None
    except Exception as exc:  # noqa: BLE001
        raise GpuperfError(f"{path}:{function}() raised {type(exc).__name__}: {exc}") from None


def _refuse_required_arguments(builder: object, path: Path, function: str) -> None:
    """An error when ``function`` has parameters without defaults: gpuperf calls it with no arguments."""
    try:
        parameters = inspect.signature(builder).parameters.values()  # type: ignore[arg-type]
    except (TypeError, ValueError):  # no signature Python can read: called as it is
        return
    required = [p.name for p in parameters
                if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if required:
        names = ", ".join(required)
        values = ", ".join(f"{name}=..." for name in required)
        raise GpuperfError(f"{path}:{function}() takes {names} without a default, but gpuperf calls a kernel "
                           f"function with no arguments: give {names} a default, or name a function that calls it "
                           f"with values (def my_{function}(): return {function}({values}))")


def _make_importable(folder: Path) -> None:
    """``folder`` first on ``sys.path`` while a user's file loads, as ``python file.py`` would have it:
    the file may import modules beside it."""
    if str(folder) in sys.path:
        sys.path.remove(str(folder))
    sys.path.insert(0, str(folder))


_KERNEL_FOLDERS: set[str] = set()  # the folders of the user files loaded so far


def _behind_the_programs_own(folder: Path) -> None:
    """``folder`` behind the program's own entries on ``sys.path`` once its file has loaded, ahead of
    the kernel folders loaded before it: the ``make`` or ``reference`` functions it returned may still
    import modules beside it when called (from the folder loaded last), and the program gpuperf runs in
    keeps its own modules (a ``utils.py`` beside a kernel file no longer shadows the program's ``utils``)."""
    if str(folder) in sys.path:
        sys.path.remove(str(folder))
    earlier = [index for index, entry in enumerate(sys.path) if entry in _KERNEL_FOLDERS]
    sys.path.insert(earlier[0] if earlier else len(sys.path), str(folder))
    _KERNEL_FOLDERS.add(str(folder))


def _forget_modules_beside(folder: Path, names: set[str]) -> None:
    """Drop from ``sys.modules`` the modules among ``names`` that come from ``folder``: a module file
    in it, or a package in it and its submodules. The user's file keeps the ones it imported, and a file
    in another folder importing a module of the same name (a helper.py of its own) gets its own."""
    beside = [name for name in names if _top_level_folder(name.partition(".")[0]) == folder]
    for name in beside:
        sys.modules.pop(name, None)


def _top_level_folder(top: str) -> Path | None:
    """The folder holding top-level module ``top``'s file, or its package's folder; None when unknown."""
    module = sys.modules.get(top)
    location = getattr(module, "__file__", None)
    if location:
        place = Path(location).resolve()
        return place.parent.parent if hasattr(module, "__path__") else place.parent
    paths = list(getattr(module, "__path__", []))  # a namespace package: its folders
    return Path(paths[0]).resolve().parent if paths else None
