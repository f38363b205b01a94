"""gpuperf: predict how fast a GPU kernel will run, and decide with the prediction."""

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def _source_tree_version() -> str | None:
    """The version in the ``pyproject.toml`` of the source tree this module is in; None outside one."""
    import tomllib

    try:
        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        return str(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"])
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError):
        return None


def _version() -> str:
    """The installed distribution's version where this code is what was installed; a source tree's
    own version marked ``+source`` where it is run without installing it (e.g. from ``PYTHONPATH``,
    beside another installed gpuperf), ``0.0.0+source`` where neither says."""
    try:
        installed = version("gpuperf")
    except PackageNotFoundError:
        installed = None
    tree = _source_tree_version()
    if tree is None or tree == installed:
        return installed or "0.0.0+source"
    return tree + "+source"


__version__ = _version()

from gpuperf.errors import GpuperfError  # noqa: E402 - after the version, which it does not need

__all__ = ["GpuperfError", "__version__"]
