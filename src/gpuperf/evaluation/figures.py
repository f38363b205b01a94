"""matplotlib for gpuperf's plots, imported with one clear error when ``MPLBACKEND`` names no backend.

gpuperf draws on :class:`Figure` objects and saves PNGs, so it needs no backend of its own; but
matplotlib refuses to import at all when the environment variable names one it lacks.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from gpuperf.errors import GpuperfError

try:
    import matplotlib
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure as _MatplotlibFigure
    from matplotlib.text import Text
except ValueError as error:  # matplotlib's own message lists the backends it has
    raise GpuperfError(
        f"the environment variable MPLBACKEND={os.environ.get('MPLBACKEND', '')!r} names no matplotlib backend: "
        f"unset it (gpuperf's plots need none) or name one ({error})") from error

__all__ = ["Axes", "Figure", "matplotlib"]


# What matplotlib's own tick formatters write as mathtext (a log axis's $\mathdefault{10^{-3}}$): the only
# text of a plot drawn as mathtext.
FORMATTER_MATH = re.compile(r"\$.*\\mathdefault\{.*\$", re.DOTALL)


class Figure(_MatplotlibFigure):
    """A matplotlib Figure that shows the texts gpuperf puts in it (titles, legends, labels, tick labels:
    kernel and GPU names read from a table) as they are: a name holding dollar signs (``$x$``, ``a$\\b$``)
    is no mathtext, which would set it in italics or fail to draw the plot at all."""

    def _plain(self, step: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        for axes in self.axes:  # tick labels made now, holding what they will show
            axes.xaxis.get_ticklabels(which="both")
            axes.yaxis.get_ticklabels(which="both")
        for text in self.findobj(Text):
            text.set_parse_math(FORMATTER_MATH.fullmatch(text.get_text()) is not None)
        return step(*args, **kwargs)

    def draw(self, renderer: Any) -> Any:
        return self._plain(super().draw, renderer)

    def tight_layout(self, *args: Any, **kwargs: Any) -> Any:
        return self._plain(super().tight_layout, *args, **kwargs)

    def get_tightbbox(self, *args: Any, **kwargs: Any) -> Any:
        return self._plain(super().get_tightbbox, *args, **kwargs)
