"""gpuperf: predict how fast a GPU kernel will run, and decide with the prediction."""

from pathlib import Path as _Path


def _source_tree_version(package: _Path = _Path(__file__).resolve().parent) -> str | None:
    """The version in the ``pyproject.toml`` of gpuperf's source tree ``package`` is in (``ROOT/src/gpuperf``
    beside ``ROOT/pyproject.toml``, whose project is gpuperf); None outside one, such as a wheel installed
    into a folder of another project, whose own pyproject names another version."""
    import tomllib

    if package.parent.name != "src":
        return None
    try:
        project = tomllib.loads((package.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        return str(project["version"]) if project["name"] == "gpuperf" else None
    except (OSError, KeyError, TypeError, ValueError):  # ValueError: TOML's, or text that is not UTF-8
        return None


def _installed_root() -> _Path | None:
    """The folder gpuperf was installed from, where the installer recorded a local one (an editable
    install of a checkout); None otherwise."""
    import json
    from importlib.metadata import PackageNotFoundError, distribution
    from urllib.parse import urlparse
    from urllib.request import url2pathname

    try:
        recorded = json.loads(distribution("gpuperf").read_text("direct_url.json") or "{}")
    except (PackageNotFoundError, ValueError):
        return None
    url = urlparse(str(recorded.get("url", "")))
    return _Path(url2pathname(url.path)).resolve() if url.scheme == "file" else None


def _version() -> str:
    """The installed distribution's version where this code is what was installed; a source tree's
    own version marked ``+source`` where it is run without installing it (e.g. from ``PYTHONPATH``,
    beside another installed gpuperf, or beside an editable install of another checkout),
    ``0.0.0+source`` where neither says."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("gpuperf")
    except PackageNotFoundError:
        installed = None
    tree = _source_tree_version()
    if tree is None:
        return installed or "0.0.0+source"
    root = _installed_root()
    if tree == installed and (root is None or root == _Path(__file__).resolve().parents[2]):
        return installed
    return tree + "+source"


__version__: str  # not set here: worked out by __getattr__ when first asked for


def __getattr__(name: str) -> str:
    """``__version__``, worked out when first asked for: reading the installed metadata takes a third of a
    second, in which a Ctrl-C at a command's start would show Python's traceback, not gpuperf's line."""
    if name == "__version__":
        global __version__
        __version__ = _version()
        return __version__
    raise AttributeError(f"module 'gpuperf' has no attribute {name!r}")


from gpuperf.errors import GpuperfError  # noqa: E402 - after the version's functions, which do not need it

__all__ = ["GpuperfError", "__version__"]
