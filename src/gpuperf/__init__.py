"""gpuperf: predict how fast a GPU kernel will run, and decide with the prediction."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("gpuperf")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

from gpuperf.errors import GpuperfError

__all__ = ["GpuperfError", "__version__"]
