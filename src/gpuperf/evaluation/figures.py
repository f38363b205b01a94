"""matplotlib for gpuperf's plots, imported with one clear error when ``MPLBACKEND`` names no backend.

gpuperf draws on :class:`Figure` objects and saves PNGs, so it needs no backend of its own; but
matplotlib refuses to import at all when the environment variable names one it lacks.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable
from typing import Any

from gpuperf.errors import GpuperfError, clipped

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
# matplotlib's warning for a character its font lacks: "Glyph 20013 (\N{CJK ...}) missing from font(s) DejaVu Sans."
MISSING_GLYPH = re.compile(r"Glyph (\d+) .*missing from font\(s\) (.+?)\.?$", re.DOTALL)


def missing_glyphs_note(figure: object, name: str) -> str | None:
    """The note for a plot ``name`` whose font lacked characters of its texts (a kernel named in
    Chinese, an emoji), which it shows as boxes; None where it drew every one."""
    missing = getattr(figure, "missing_glyphs", None)
    if not missing:
        return None
    characters = "".join(sorted(missing))
    fonts = ", ".join(sorted(set(missing.values())))
    return (f"{name}: the plot's font ({fonts}) has no glyph for {clipped(characters, 20)}: names holding "
            "them show these as boxes there; the report's pages show them as written")


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
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = step(*args, **kwargs)
        for warning in caught:  # matplotlib's own, one per character and drawing: gathered for one note
            missing = MISSING_GLYPH.search(str(warning.message))
            if missing:
                self.missing_glyphs[chr(int(missing.group(1)))] = missing.group(2)
            else:
                warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
        return result

    @property
    def missing_glyphs(self) -> dict[str, str]:
        """The characters of the figure's texts its font could not draw (shown as boxes), each with the
        font(s) matplotlib named."""
        return self.__dict__.setdefault("_missing_glyphs", {})

    def draw(self, renderer: Any) -> Any:
        return self._plain(super().draw, renderer)

    def tight_layout(self, *args: Any, **kwargs: Any) -> Any:
        return self._plain(super().tight_layout, *args, **kwargs)

    def get_tightbbox(self, *args: Any, **kwargs: Any) -> Any:
        return self._plain(super().get_tightbbox, *args, **kwargs)
