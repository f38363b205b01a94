"""matplotlib for gpuperf's plots, imported with one clear error when ``MPLBACKEND`` names no backend.

gpuperf draws on :class:`~matplotlib.figure.Figure` objects and saves PNGs, so it needs no backend of
its own; but matplotlib refuses to import at all when the environment variable names one it lacks.
"""

from __future__ import annotations

import os

from gpuperf.errors import GpuperfError

try:
    import matplotlib
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
except ValueError as error:  # matplotlib's own message lists the backends it has
    raise GpuperfError(
        f"the environment variable MPLBACKEND={os.environ.get('MPLBACKEND', '')!r} names no matplotlib backend: "
        f"unset it (gpuperf's plots need none) or name one ({error})") from error

__all__ = ["Axes", "Figure", "matplotlib"]
