"""gpuperf: predict how fast a GPU kernel will run, and decide with the prediction."""

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def _source_tree_version() -> str:
    """The version in the ``pyproject.toml`` of a source tree run without installing it (e.g. from
    ``PYTHONPATH``), marked ``+source``; ``0.0.0+source`` where there is none to read."""
    import tomllib

    try:
        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        return tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"] + "+source"
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError):
        return "0.0.0+source"


try:
    __version__ = version("gpuperf")
except PackageNotFoundError:
    __version__ = _source_tree_version()

from gpuperf.errors import GpuperfError  # noqa: E402 - after the version, which it does not need

__all__ = ["GpuperfError", "__version__"]
