"""Evaluation reports: Markdown and HTML pages with tables and PNG plots, and metrics as JSON.

``write_report(folder, title, evaluations, ...)`` writes ``report.md``, ``report.html``,
``metrics.json`` and one PNG per plot: predicted vs measured on log axes (a panel per held-out group)
and MAPE per kernel and held-out group for every evaluation, plus a feature-ranking bar chart and a
clustering dendrogram when given. Every table's text comes from :func:`formatted`.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import shlex
import sys
import tempfile
import textwrap
import warnings
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.cluster.hierarchy import dendrogram

from gpuperf.evaluation.figures import Axes, Figure, matplotlib, missing_glyphs_note
from gpuperf.evaluation.protocols import Evaluation, natural_key
from gpuperf.errors import GpuperfError, GpuperfNote
from gpuperf.files import UnwritableFile, written_whole


def save_figure(fig: Figure, path: Path, **options) -> None:
    """``fig`` as a PNG at ``path``, written whole (a killed or failed save leaves the file there as it was)."""
    with written_whole(path, through_links=False) as temporary:
        fig.savefig(temporary, format="png", **options)
    note = missing_glyphs_note(fig, Path(path).name)
    if note:
        warnings.warn(GpuperfNote(note), stacklevel=2)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower() or "plot"


def _distinct_slugs(names: Sequence[str]) -> dict[str, str]:
    """A file-name slug per name, numbered where two names make the same one (``rf+gpu``, ``rf-gpu``)."""
    slugs: dict[str, str] = {}
    for name in names:
        slug = base = _slug(name)
        number = 1
        while slug in slugs.values():
            number += 1
            slug = f"{base}_{number}"
        slugs[name] = slug
    return slugs


def _cell(value, digits: int, style: str = "auto") -> str:
    """A table cell: ``style`` is ``whole`` (integers), ``scientific`` (``1.23e-05``) or ``auto``
    (fixed decimals, significant digits where those would hide a small value)."""
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return ""
        if style == "whole" and abs(value) < 1e15:
            return str(int(value))
        if style == "scientific":
            return f"{value:.{digits - 1}e}" if value != 0 else "0"
        if abs(value) >= 1e4:  # 30035.4 as 3.00e+04, not 3e+04 (which reads as one significant digit)
            return f"{value:#.{digits}g}"
        return f"{value:#.{digits}g}" if _small(value, digits) else f"{value:.{digits}f}"
    return str(value)


def _small(value: float, digits: int) -> bool:
    """Whether fixed decimals would print ``value`` as zero (0.000): it needs significant digits."""
    return value != 0 and abs(value) < 10.0 ** (1 - digits)


COUNT_COLUMNS = ("n", "rows", "kernels", "gpus", "choices", "spaces", "repeats")
TIME_COLUMN = re.compile(r"(^|_)time($|_)|_(s|ms|us|ns)$|^(s|ms|us|ns)_per_")  # us_per_call too


def _style(column: pd.Series, digits: int, time: bool = False) -> str:
    """How a column's numbers print: see :func:`_cell`. A time column (``time``, or named as one)
    some of whose values need the exponent is printed with it throughout, so its times line up."""
    if _whole(column):
        return "whole"
    if column.dtype.kind == "f" and (time or TIME_COLUMN.search(str(column.name))):
        size = column[np.isfinite(column)].abs()
        if ((size >= 1e4) | ((size > 0) & (size < 10.0 ** (1 - digits)))).any():  # see _small
            return "scientific"
    return "auto"


def _whole(column: pd.Series) -> bool:
    """Whether a float column holds whole numbers only (counts, sizes): printed as integers. A
    column of zeros and ones only is a metric that happened to be exact (a speedup of 1, an
    overlap of 0) unless it is named as a count."""
    if column.dtype.kind != "f":
        return False
    finite = column[np.isfinite(column)]
    if len(finite) == 0 or not bool((finite == np.round(finite)).all()):
        return False
    return str(column.name) in COUNT_COLUMNS or not set(finite.unique()) <= {0.0, 1.0}


def formatted(frame: pd.DataFrame, digits: int = 3, time_columns: Collection[str] = ()) -> pd.DataFrame:
    """``frame`` with every cell as the text a report shows (same index and columns): the one
    formatter of report tables. Floats are rounded to ``digits``; a time column keeps one notation
    (see :func:`_style`); ``time_columns`` names time columns whose names do not say so (``llvm``)."""
    shown = frame.astype(object)
    for i in range(frame.shape[1]):  # by position: column names may repeat
        column = frame.iloc[:, i]
        style = _style(column, digits, str(column.name) in time_columns)
        shown.iloc[:, i] = [_cell(v, digits, style) for v in column]
    return shown


def text_table(frame: pd.DataFrame, digits: int = 3, time_columns: Collection[str] = ()) -> str:
    """``frame`` as plain text for a terminal (index included), formatted as the reports format it."""
    with pd.option_context("display.width", 250, "display.max_columns", 40, "display.max_colwidth", 40):
        return formatted(frame, digits, time_columns).to_string()


def markdown_table(frame: pd.DataFrame, digits: int = 3, time_columns: Collection[str] = ()) -> str:
    """A GitHub-style Markdown table of ``frame`` (index included), cells as :func:`formatted` writes
    them: float columns of whole numbers as integers, time columns in one notation each."""
    flat = formatted(_with_index(frame), digits, time_columns)
    header = [markdown_text(str(c)) for c in flat.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in flat.itertuples(index=False):
        lines.append("| " + " | ".join(markdown_text(cell) for cell in row) + " |")
    return "\n".join(lines)


# Markdown's marks a table cell may hold (a kernel named void gemm<float>(float*, ...)): escaped with a
# backslash, so the page shows the text as the HTML page does. An underscore inside a word marks nothing.
MARKDOWN_MARKS = re.compile(r"[\\`*\[\]<>|~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def markdown_text(text: str) -> str:
    """``text`` as one Markdown table cell showing it as it is: on one line, Markdown's marks escaped."""
    return MARKDOWN_MARKS.sub(lambda m: "\\" + m[0], _one_line(text))


def _one_line(text: str) -> str:
    """``text`` with line breaks as spaces: a cell holding one (a GPU named ``gpu\\nC``) would end its row."""
    return re.sub(r"\r\n|[\r\n]", " ", text)


def html_table(frame: pd.DataFrame, digits: int = 3, time_columns: Collection[str] = ()) -> str:
    """``frame`` as an HTML table formatted as :func:`markdown_table` formats it."""
    shown = formatted(_with_index(frame), digits, time_columns)
    return shown.rename_axis(columns=None).to_html(index=False, border=0, na_rep="")


# Link targets a note may make live: a relative path (no scheme, no //host) or an http(s) address; a
# note can quote a file name, and [x](javascript:...) there must stay text.
SAFE_LINK = re.compile(r"(?!//)[\w./#-]+|https?://[^\s)]+")


def note_html(note: str) -> str:
    """A note as HTML: escaped, with Markdown links ``[text](page.md)`` to relative paths or http(s)
    addresses as links (to the HTML page for ``.md``) and code spans (a command line) as code."""
    escaped = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(note))

    def link(m: re.Match) -> str:
        if not SAFE_LINK.fullmatch(m[2] + (m[3] or "")):
            return m[0]
        return f'<a href="{m[2]}{".html" if m[3] else ""}">{m[1]}</a>'

    return re.sub(r"\[([^\]]+)\]\(([^)\s]+?)(\.md)?\)", link, escaped)


METRIC_GLOSSARY = (
    "Metrics: mape = mean |measured - predicted| / measured (a fraction: 0.1 is 10 %); median_ape its median; "
    "gmre = exp(mean |ln(predicted / measured)|) - 1 (blank where a prediction is not a positive time); "
    "within_20pct = share of predictions within 0.8-1.2x of the measured time; spearman and kendall (tau-b) = "
    "rank correlation of predicted and measured (blank with fewer "
    "than 2 rows or one predicted or measured time for every row); top5_overlap "
    "= share of the 5 fastest measured rows among the 5 fastest predicted (rows tied across the 5th place share it; "
    "blank with 5 rows or fewer). \"Overall\" error figures (n, mape, median_ape, within_20pct, gmre) pool every "
    "held-out row, so groups with many rows weigh most; overall spearman, kendall and top5_overlap are the mean "
    "of the held-out groups' values (over the groups where they are defined), so they score the order within "
    "each group, not the differences between groups."
)


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if not math.isfinite(float(value)) else float(value)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    return value


def frame_records(frame: pd.DataFrame) -> list[dict]:
    """A table as JSON-ready records (index included, NaN and inf as null)."""
    return [_jsonable(dict(row)) for row in _with_index(frame).to_dict(orient="records")]


def _with_index(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its index as leading column(s) (an unnamed one as ``name``), unless the index
    is only row numbers (unnamed integers, as after filtering rows)."""
    index = frame.index
    if not isinstance(index, pd.MultiIndex) and index.name is None and pd.api.types.is_integer_dtype(index):
        return frame
    named = index.names if isinstance(index, pd.MultiIndex) else [index.name or "name"]
    return frame.rename_axis([n if n is not None else f"level_{i}" for i, n in enumerate(named)]).reset_index()


def _plot_title(context: str, name: str) -> str:
    """The report's title with the evaluation's name, unless the title already holds it; a name opening
    with the title's words ("linear count model on H100" in "Linear count model (Stevens & Klöckner)")
    adds only the rest ("Linear count model (Stevens & Klöckner) on H100")."""
    head = context.split(" (")[0]
    if head and name.lower().startswith(head.lower()) and name[len(head):len(head) + 1] in ("", " ", ","):
        return context + name[len(head):]
    return context if name in context else ", ".join(filter(None, (context, name)))


LEGEND_ENTRIES_PER_INCH = 5  # the scatter's legend at fontsize 7: more entries run into further columns
MAX_POINTS_PER_KERNEL = 2000  # larger groups are subsampled in the scatter so that they hide no other
MAX_PANELS = 12  # more held-out groups: the smallest share the last panel


def scatter_panels(data: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The scatter's panels: one per held-out group (``fold``) in name order; beyond
    :data:`MAX_PANELS` groups, the smallest share one last panel named for how many they are."""
    folds = data["fold"].astype(str)
    parts = {name: data[folds == name] for name in sorted(folds.unique(), key=natural_key)}
    if len(parts) <= MAX_PANELS:
        return list(parts.items())
    kept = sorted(sorted(parts, key=lambda name: -len(parts[name]))[:MAX_PANELS - 1], key=natural_key)
    rest = [name for name in parts if name not in kept]
    return [(name, parts[name]) for name in kept] + [
        (f"{len(rest)} other groups", pd.concat([parts[name] for name in rest]))]


def _colour_key(evaluation: Evaluation) -> str:
    """What colours the scatter's points: the kernel, or the GPU where each panel is one kernel."""
    data = evaluation.predictions
    if "kernel" in data.columns and evaluation.group != ("kernel",):
        return "kernel"
    return "gpu" if "gpu" in data.columns else "kernel" if "kernel" in data.columns else "fold"


def plot_predicted_vs_measured(evaluation: Evaluation, path: Path, context: str = "") -> Path:
    """Predicted against measured time on log axes, one panel per held-out group (its MAPE in the
    panel's title) on shared axes, coloured by kernel (by GPU where kernels are held out; a colour
    per label in name order, so every plot of one evaluation agrees), with y = x and the 0.8-1.2x
    band. Predictions that are not positive times sit on the bottom edge as grey triangles; the
    largest groups are subsampled, each step said in the title."""
    data = evaluation.predictions
    colour_by = _colour_key(evaluation)
    colours = kernel_styles(sorted(data[colour_by].astype(str).unique()))
    plottable = (data["predicted"] > 0) & np.isfinite(data["predicted"])
    shown = data[plottable]
    low = min(data["measured"].min(), shown["predicted"].min() if len(shown) else np.inf)
    high = max(data["measured"].max(), shown["predicted"].max() if len(shown) else -np.inf)
    panels = scatter_panels(data)
    rows = math.ceil(len(panels) / 4)
    columns = math.ceil(len(panels) / rows)  # at most 4 a row, rows as full as they can be
    fig = Figure(figsize=(1.0 + 3.1 * columns, 0.9 + 3.0 * rows))
    axes = fig.subplots(rows, columns, sharex=True, sharey=True, squeeze=False).ravel()
    drawn, thinned = 0, False
    for ax, (name, part) in zip(axes, panels):
        points, sampled = _scatter_panel(ax, name, part, colour_by, colours, (low, high), name in evaluation.in_sample)
        drawn, thinned = drawn + points, thinned or sampled
    for index in range(len(panels), len(axes)):  # an empty slot: the panel above shows the x axis
        axes[index].set_visible(False)
        axes[index - columns].xaxis.set_tick_params(labelbottom=True)
    plotted = f"{drawn} of {len(data)} predictions drawn" if drawn < len(data) else f"{len(data)} predictions"
    if thinned:
        plotted += f" (at most {MAX_POINTS_PER_KERNEL} per {colour_by} and panel)"
    if not plottable.all():
        plotted += f", {int((~plottable).sum())} of them no positive time: triangles on the bottom edge"
    panels_are = "one panel per held-out group" + (
        f"; in-sample, the rows the model was fitted on: {', '.join(evaluation.in_sample)}" if evaluation.in_sample
        else "")
    fig.suptitle(f"predicted vs measured: {_plot_title(context, evaluation.name)}, {panels_are}\n{plotted}",
                 fontsize=9, wrap=True)
    fig.supxlabel("measured time (s)", fontsize=9)
    fig.supylabel("predicted time (s)", fontsize=9)
    fig.tight_layout()
    handles, names = _scatter_legend(colours, not plottable.all())
    per_column = max(8, int(fig.get_figheight() * LEGEND_ENTRIES_PER_INCH))  # as tall as the panels at most
    fig.legend(handles, names, title=colour_by, fontsize=7, title_fontsize=7, loc="upper left",
               bbox_to_anchor=(1.0, 0.95), ncols=math.ceil(len(names) / per_column))  # beside: no point hidden
    save_figure(fig, path, dpi=110, bbox_inches="tight")
    return path


def _scatter_panel(ax: Axes, name: str, part: pd.DataFrame, colour_by: str,
                   colours: Mapping[str, tuple[tuple, str]], limits: tuple[float, float], in_sample: bool = False) -> tuple[int, bool]:
    """One group's points on ``ax`` (a held-out group, or ``in_sample``: rows the model was fitted
    on, titled by their name alone); how many points it drew, and whether any colour's were subsampled."""
    band = np.array(limits)
    ax.fill_between(band, band * 0.8, band * 1.2, color="0.85", linewidth=0)
    ax.plot(band, band, color="black", linewidth=0.8)
    usable = (part["predicted"] > 0) & np.isfinite(part["predicted"])
    thinned, drawn = False, 0
    groups = sorted(part[usable].groupby(part[usable][colour_by].astype(str)), key=lambda item: -len(item[1]))
    for label, points in groups:  # the largest first, so that they hide no other
        if len(points) > MAX_POINTS_PER_KERNEL:
            points, thinned = points.sample(MAX_POINTS_PER_KERNEL, random_state=0), True
        colour, marker = colours[label]
        ax.scatter(points["measured"], points["predicted"], s=7, alpha=0.5, color=colour, marker=marker, linewidths=0)
        drawn += len(points)
    hidden = part[~usable]
    drawn += len(hidden)
    if len(hidden):
        ax.scatter(hidden["measured"], np.full(len(hidden), limits[0]), marker="v", s=10, color="0.4")
    finite = part[np.isfinite(part["predicted"])]
    error = float((np.abs(finite["measured"] - finite["predicted"]) / finite["measured"]).mean()) \
        if len(finite) else math.nan
    ax.set(xscale="log", yscale="log")
    group = name if in_sample else f"held out: {name}"
    ax.set_title(f"{group}\nMAPE {_metric_text(error)}, {len(part)} rows", fontsize=8)
    ax.tick_params(labelsize=7)
    return drawn, thinned


def _scatter_legend(colours: Mapping[str, tuple[tuple, str]], hidden: bool) -> tuple[list, list[str]]:
    """Legend entries: the references, each colour's label, and the edge markers when drawn."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Patch(color="0.85"), Line2D([], [], color="black", linewidth=0.8)]
    names = ["within 0.8-1.2x", "y = x (exact)"]
    for label, (colour, marker) in colours.items():
        handles.append(Line2D([], [], linestyle="", marker=marker, markersize=5, color=colour))
        names.append(label)
    if hidden:
        handles.append(Line2D([], [], linestyle="", marker="v", markersize=5, color="0.4"))
        names.append("not a positive time, at the bottom edge")
    return handles, names


MARKERS = ("o", "s", "^", "D", "P", "X", "*")  # not "v": it marks predictions that are no time


def kernel_styles(labels: Sequence[str]) -> dict[str, tuple[tuple, str]]:
    """A (colour, marker) per label, no two alike: tab10's colours (tab20's pairs differ only in
    lightness, so two kernels would read as one), each round of them with the next marker; beyond
    70 labels the pairs repeat."""
    palette = matplotlib.colormaps["tab10"]
    return {label: (palette(i % palette.N), MARKERS[(i // palette.N) % len(MARKERS)]) for i, label in enumerate(labels)}


MAX_HEATMAP_COLUMNS = 24  # more held-out groups than this run down the rows instead
MAX_ANNOTATED_CELLS = 600  # beyond this the cells carry colour only


def _mape_cells(evaluation: Evaluation) -> tuple[str, pd.DataFrame]:
    """The heat map's MAPE per kernel (rows) and held-out group or, with kernels held out, GPU (columns)."""
    across = "gpu" if evaluation.group == ("kernel",) and "gpu" in evaluation.predictions.columns else "fold"
    cells = evaluation.metrics_by(["kernel", across])["mape"].unstack(across)
    return across, cells[sorted(cells.columns, key=natural_key)]


def heatmap_caption(evaluation: Evaluation) -> str:
    """The heat map's caption: its cells' numbers where it prints them, else where the figures are."""
    if _mape_cells(evaluation)[1].size <= MAX_ANNOTATED_CELLS:
        numbers = "the colour is capped at 1, the numbers are not"
    else:
        numbers = (f"the colour is capped at 1; with more than {MAX_ANNOTATED_CELLS} cells, none carries its "
                   "number (the table above gives each held-out group's MAPE over its kernels)")
    fitted = f", and in-sample {', '.join(evaluation.in_sample)}" if evaluation.in_sample else ""
    return (f"MAPE (a fraction) per kernel and held-out group{fitted} (per GPU where kernels are held out; more than "
            f"{MAX_HEATMAP_COLUMNS} groups run down the rows); {numbers}; blank: no rows.")


LONGEST_TICK_LINE = 40  # characters: a 300-character kernel name on one line would squeeze the plot into a sliver


def tick_labels(names: Sequence[object]) -> list[str]:
    """``names`` as a plot's tick labels, whole: one longer than ``LONGEST_TICK_LINE`` characters runs
    over several lines of at most that many (a plot may be the only place a report names it)."""
    return [text if len(text) <= LONGEST_TICK_LINE else "\n".join(
        textwrap.wrap(text, LONGEST_TICK_LINE, break_long_words=True, break_on_hyphens=False, drop_whitespace=False))
            for text in map(str, names)]


def tick_lines(labels: Sequence[str]) -> int:
    """The most lines one of ``labels`` runs over."""
    return max((label.count("\n") + 1 for label in labels), default=1)


def plot_error_heatmap(evaluation: Evaluation, path: Path, context: str = "") -> Path:
    """MAPE per kernel (rows) and held-out group (columns) as an annotated heat map; with kernels
    held out (a bare diagonal otherwise), per kernel and GPU. More than ``MAX_HEATMAP_COLUMNS``
    groups (sizes held out one by one) run down the rows, so the page stays readable."""
    across, cells = _mape_cells(evaluation)
    columns = "GPU (kernel held out)" if across == "gpu" else "held-out group" if not evaluation.in_sample else \
        f"group (held out, or in-sample: {', '.join(evaluation.in_sample)})"
    layout = f"kernel (rows) and {columns} (columns)"
    if cells.shape[1] > MAX_HEATMAP_COLUMNS and cells.shape[1] > cells.shape[0]:
        cells, layout = cells.T, f"{columns} (rows) and kernel (columns)"
    rows, columns_shown = tick_labels(cells.index), tick_labels(cells.columns)
    row_height = max(0.4, 0.13 * tick_lines(rows))  # inches: room for a long name's lines
    fig = Figure(figsize=(max(5.5, 1.6 + 0.9 * cells.shape[1]), 1.6 + 0.1 * tick_lines(columns_shown)
                          + row_height * cells.shape[0]))
    ax = fig.subplots()
    shown = np.clip(cells.to_numpy(dtype=float), 0, 1)
    image = ax.imshow(shown, cmap="Reds", vmin=0, vmax=1, aspect="auto")
    fig.colorbar(image, ax=ax, fraction=0.05, pad=0.02, label="MAPE (colour capped at 1)")
    ax.set_xticks(range(cells.shape[1]), columns_shown, rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(cells.shape[0]), rows, fontsize=7)
    if cells.size <= MAX_ANNOTATED_CELLS:
        for i in range(cells.shape[0]):
            for j in range(cells.shape[1]):
                value = cells.iat[i, j]
                if not pd.isna(value):
                    ax.text(j, i, f"{value:.3f}", ha="center", va="center", fontsize=6,
                            color="white" if value > 0.6 else "black")
    ax.set_title(f"MAPE (a fraction) per {layout}; blank: no rows\n"
                 f"{_plot_title(context, evaluation.name)}", fontsize=8, wrap=True)
    fig.tight_layout()
    save_figure(fig, path, dpi=110, bbox_inches="tight")
    return path


def plot_feature_ranking(ranking: pd.Series, path: Path, top: int = 25) -> Path:
    """Horizontal bars of the ``top`` highest-ranked features."""
    shown = ranking.sort_values(ascending=False).head(top)[::-1]
    labels = tick_labels(shown.index)
    bar = max(0.25, 0.1 * tick_lines(labels))  # inches: room for a long name's lines
    fig = Figure(figsize=(6, max(2.0, 0.6 + bar * len(shown))))  # room for the title and axis with few bars
    ax = fig.subplots()
    ax.barh(labels, shown.to_numpy(dtype=float))
    ax.set_xlabel(str(ranking.name or "score"))
    ax.set_title(f"Feature ranking: the {len(shown)} highest by {ranking.name or 'score'}", fontsize=9)
    ax.tick_params(axis="y", labelsize=6)
    fig.tight_layout()
    save_figure(fig, path, dpi=110, bbox_inches="tight")
    return path


def plot_dendrogram(linkage_matrix: np.ndarray, labels: Sequence[str], path: Path, k: int | None = None) -> Path:
    """The feature clustering tree (distance 1 - |Spearman r|), cut into ``k`` clusters if given."""
    fig = Figure(figsize=(9, 0.6 + 0.22 * len(labels)))
    ax = fig.subplots()
    threshold = None
    if k is not None and 1 < k <= len(labels) - 1:  # halfway between the merges that make k clusters
        threshold = float((linkage_matrix[-k, 2] + linkage_matrix[-k + 1, 2]) / 2)
    dendrogram(linkage_matrix, labels=list(labels), orientation="right", ax=ax, color_threshold=threshold,
               leaf_font_size=6)
    ax.set_xlabel("1 - |Spearman r|")
    if threshold is not None:  # a single-feature cluster is drawn in the colour above the cut: the line counts it
        ax.axvline(threshold, color="grey", linewidth=0.8, linestyle="--", label=f"cut: {k} clusters")
        ax.legend(fontsize=7, loc="lower right")
    cut = f", cut into {k} clusters (dashed line)" if threshold is not None else ""
    ax.set_title(f"Feature clustering: average linkage on 1 - |Spearman r|{cut}", fontsize=9)
    fig.tight_layout()
    save_figure(fig, path, dpi=110, bbox_inches="tight")
    return path


def scatter_caption(evaluation: Evaluation) -> str:
    """The scatter's caption, naming the panels of rows the model was fitted on where it has some."""
    rows = "the held-out rows" + (f" and, in-sample, the rows the model was fitted on ({', '.join(evaluation.in_sample)})"
                                  if evaluation.in_sample else "")
    return (f"Predicted against measured time of {rows} (a sample where a kernel has more than "
            f"{MAX_POINTS_PER_KERNEL} in a panel), both in seconds on log axes, one panel "
            "per group with its MAPE, coloured by kernel (by GPU where kernels are held out); the "
            "black line is y = x (a perfect prediction), the grey band 0.8-1.2x of it.")


def _checked_report_inputs(evaluations: object, tables: object, notes: object) -> list[str]:
    """The report's notes as a list (one text is one note, not one per character); an error where
    ``evaluations`` or ``tables`` is not a mapping of names to Evaluations or pandas tables."""
    for name, argument, kinds, example in (
            ("evaluations", evaluations, (Evaluation,), "{'leave-one-gpu-out': evaluation}"),
            ("tables", tables, (pd.DataFrame, pd.Series), "{'per kernel': frame}")):
        wanted = kinds[0].__name__
        if not isinstance(argument, Mapping):
            raise GpuperfError(f"write_report: {name} maps a name to each {wanted}, e.g. {example}, not a "
                               f"{type(argument).__name__}")
        wrong = next((key for key, value in argument.items() if not isinstance(value, kinds)), None)
        if wrong is not None:
            raise GpuperfError(f"write_report: {name}[{wrong!r}] is a {type(argument[wrong]).__name__}, not a {wanted}")
    return [notes] if isinstance(notes, str) else list(notes)


# A report's section: heading, text under it, table (or None), and the images it shows with their captions.
Section = tuple[str, str, pd.DataFrame | pd.Series | None, list[tuple[Path, str]]]

PAGE_STYLE = ("body{font-family:sans-serif;max-width:72em;margin:auto}table{border-collapse:collapse;font-size:80%}"
              "td,th{padding:2px 6px;border-bottom:1px solid #ddd;text-align:right}img{max-width:100%}"
              "figure{margin:1em 0}figcaption{font-size:90%;color:#444}")


def write_report(
    folder: str | Path,
    title: str,
    evaluations: Mapping[str, Evaluation] = {},
    tables: Mapping[str, pd.DataFrame] = {},
    notes: Sequence[str] = (),
    feature_ranking: pd.Series | None = None,
    dendrogram_of: tuple[np.ndarray, Sequence[str], int | None] | None = None,
    metrics: Mapping | None = None,
    plot_evaluations: Sequence[str] | None = None,
    plots: Sequence[tuple[str, str, Path]] = (),
    time_columns: Collection[str] = (),
    json_tables: Mapping[str, pd.DataFrame] = {},
) -> dict[str, Path]:
    """Write the report files into ``folder`` and return their paths by name.

    ``tables`` are shown in order under their names; ``evaluations`` get a per-group metrics table
    (and plots, for those named in ``plot_evaluations``; all by default); ``dendrogram_of`` is
    (linkage matrix, leaf labels, clusters); ``metrics`` is added to ``metrics.json``; ``plots`` are
    (heading, text, PNG already written into ``folder``) sections shown after the tables;
    ``time_columns`` names the tables' time columns whose names do not say so, and columns printed as those
    are, in one notation each (see :func:`formatted`);
    ``json_tables``: by a table's name, the numbers ``metrics.json`` holds for a table the pages show as text.
    """
    notes = _checked_report_inputs(evaluations, tables, notes)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    earlier = linked_plots(folder / "report.md")
    _remove_abandoned_staging(folder)
    with tempfile.TemporaryDirectory(dir=folder, prefix=STAGING) as drawn_aside, \
            _named_in_the_report(Path(drawn_aside), folder):  # plots: in with the pages
        staging = Path(drawn_aside)
        plotted = list(evaluations) if plot_evaluations is None else list(plot_evaluations)
        sections = [*_table_sections(tables, plots), *_evaluation_sections(evaluations, plotted, staging, title),
                    *_feature_sections(feature_ranking, dendrogram_of, staging)]
        written = {image.stem: folder / image.name for _, _, _, images in sections for image, _ in images}
        provenance = written_by()
        notes = _page_notes(notes, bool(evaluations), provenance)
        texts = {"markdown": ("report.md", _markdown_page(title, notes, sections, time_columns)),
                 "html": ("report.html", _html_page(title, notes, sections, time_columns))}
        document = _metrics_document(title, evaluations, tables, json_tables, metrics, feature_ranking, provenance)
        texts["json"] = ("metrics.json", json.dumps(document, indent=1))
        written.update(_write_pages_aside(texts, staging, folder))
        _put_in_place(staging, folder)
        for stale in earlier - set(written.values()):  # no page links them any more
            stale.unlink(missing_ok=True)
        return written


def _table_sections(tables: Mapping[str, pd.DataFrame], plots: Sequence[tuple[str, str, Path]]) -> list[Section]:
    """The sections of the tables, in order under their names, then of the plots already drawn (the
    section's text says what the plot shows)."""
    return ([(name, "", table, []) for name, table in tables.items()]
            + [(heading, text, None, [(Path(image), "")]) for heading, text, image in plots])


def _evaluation_sections(evaluations: Mapping[str, Evaluation], plotted: Sequence[str], staging: Path,
                         title: str) -> list[Section]:
    """A section per evaluation: its overall figures, its per-group table where it predicted anything,
    and its plots (drawn into ``staging``) where it is among ``plotted``."""
    slugs = _distinct_slugs(list(evaluations))
    sections: list[Section] = []
    for name, evaluation in evaluations.items():
        predicted = not evaluation.held_out.empty  # an evaluation with nothing to predict says so
        images = _evaluation_plots(evaluation, staging, slugs[name], title) if name in plotted and predicted else []
        sections.append((f"Evaluation {name}", _evaluation_text(evaluation),
                         evaluation.per_group if predicted else None, images))
    return sections


def _evaluation_plots(evaluation: Evaluation, staging: Path, slug: str, title: str) -> list[tuple[Path, str]]:
    """The evaluation's scatter and, where its predictions name kernels, its heat map, with their captions."""
    images = [(plot_predicted_vs_measured(evaluation, staging / f"pred_vs_measured_{slug}.png", title),
               scatter_caption(evaluation))]
    if "kernel" in evaluation.predictions.columns:
        images.append((plot_error_heatmap(evaluation, staging / f"error_{slug}.png", title),
                       heatmap_caption(evaluation)))
    return images


def _evaluation_text(evaluation: Evaluation) -> str:
    """The text under an evaluation's heading: its overall figures (or that it predicted nothing), the
    folds not pooled, and the rows left out or clipped."""
    if evaluation.held_out.empty:
        text = "No held-out row has a prediction."
    else:
        overall = ", ".join(f"{k} {_metric_text(v)}" for k, v in evaluation.overall.items())
        text = (f"Overall (error metrics pooled over {len(evaluation.held_out)} held-out rows, rank metrics the "
                f"mean over held-out groups): {overall}.")
    if evaluation.in_sample:
        text += f" Not pooled: {', '.join(evaluation.in_sample)}, whose rows the model was fitted on."
    if evaluation.skipped:
        text += (f" Rows left out for want of a prediction (no training rows of their kernel or of what the "
                 f"model is fitted by): {_held_out_counts(evaluation.skipped)}.")
    if evaluation.bounded:
        text += (f" Predictions the model clipped to its training times widened by its bound factor "
                 f"(a runaway extrapolation, capped): {_held_out_counts(evaluation.bounded)}.")
    return text


def _metric_text(value: float) -> str:
    """A metric as the pages and plot titles show it: three digits, or ``undefined``."""
    return _cell(value, 3) or "undefined"


def _held_out_counts(counts: Mapping[str, int]) -> str:
    """Row counts by held-out group as text: ``3 of held-out K20, 1 of held-out K40``."""
    return ", ".join(f"{count} of held-out {fold}" for fold, count in counts.items())


def _feature_sections(feature_ranking: pd.Series | None, dendrogram_of: tuple | None, staging: Path) -> list[Section]:
    """The feature ranking's and the feature clustering's sections, where given, their plots drawn into ``staging``."""
    sections: list[Section] = []
    if feature_ranking is not None:
        image = plot_feature_ranking(feature_ranking, staging / "feature_ranking.png")
        caption = f"The features ranked highest by {feature_ranking.name or 'score'} (at most 25)."
        sections.append(("Feature ranking", "", feature_ranking.to_frame(), [(image, caption)]))
    if dendrogram_of is not None:
        linkage_matrix, labels, k = dendrogram_of
        image = plot_dendrogram(linkage_matrix, labels, staging / "dendrogram.png", k)
        sections.append(("Feature clustering", "Distance 1 - |Spearman r|, average linkage.", None, [(image, "")]))
    return sections


def _page_notes(notes: list[str], glossary: bool, provenance: Mapping[str, str]) -> list[str]:
    """The notes under the pages' title: the caller's, the metric glossary where there are evaluations,
    and the gpuperf version and command line that wrote the report."""
    return [*notes, *([METRIC_GLOSSARY] if glossary else []),
            f"Written by gpuperf {provenance['gpuperf']}: `{provenance['command']}`."]


def _markdown_page(title: str, notes: Sequence[str], sections: Sequence[Section], time_columns: Collection[str]) -> str:
    """``report.md``: the title, the notes and each section (heading, text, table, images with captions)."""
    lines = [f"# {title}", "", *[f"{note}  " for note in notes], ""]
    for heading, text, table, images in sections:
        lines += [f"## {heading}", ""] + ([text, ""] if text else [])
        if table is not None:
            lines += [markdown_table(table, time_columns=time_columns), ""]
        for image, caption in images:
            lines += [f"![{image.stem}]({image.name})", ""] + ([f"*{caption}*", ""] if caption else [])
    return "\n".join(lines)


def _html_page(title: str, notes: Sequence[str], sections: Sequence[Section], time_columns: Collection[str]) -> str:
    """``report.html``: the Markdown page's title, notes and sections as one HTML page."""
    body = [f"<h1>{html.escape(title)}</h1>", *[f"<p>{note_html(note)}</p>" for note in notes]]
    for heading, text, table, images in sections:
        body += [f"<h2>{html.escape(heading)}</h2>"] + ([f"<p>{note_html(text)}</p>"] if text else [])
        if table is not None:
            body.append(html_table(table, time_columns=time_columns))
        body += [_html_image(image, caption) for image, caption in images]
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{PAGE_STYLE}</style></head><body>{''.join(body)}</body></html>")


def _html_image(image: Path, caption: str) -> str:
    """An image as HTML: a figure with its caption where it has one."""
    img = f'<img src="{html.escape(image.name)}" alt="{html.escape(image.stem)}">'
    return f"<figure>{img}<figcaption>{note_html(caption)}</figcaption></figure>" if caption else img


def _metrics_document(title: str, evaluations: Mapping[str, Evaluation], tables: Mapping[str, pd.DataFrame],
                      json_tables: Mapping[str, pd.DataFrame], metrics: Mapping | None,
                      feature_ranking: pd.Series | None, provenance: Mapping[str, str]) -> dict:
    """``metrics.json``: each evaluation's overall and per-group metrics, each table's records (the
    numbers of ``json_tables`` where given), the caller's metrics, the feature ranking and who wrote it."""
    return {
        "title": title,
        "evaluations": {
            name: {"overall": _jsonable(e.overall) if not e.held_out.empty else None,
                   "per_group": frame_records(e.per_group)}
            for name, e in evaluations.items()
        },
        "tables": {name: frame_records(json_tables.get(name, table)) for name, table in tables.items()},
        **({"metrics": _jsonable(dict(metrics))} if metrics else {}),
        **({"feature_ranking": _ranking_record(feature_ranking)} if feature_ranking is not None else {}),
        "written_by": provenance,
    }


def _write_pages_aside(texts: Mapping[str, tuple[str, str]], staging: Path, folder: Path) -> dict[str, Path]:
    """Write each page (by key, its file name and text) into ``staging``; return the paths they will
    have in ``folder`` by key. A page that cannot be written is an error naming it in ``folder``."""
    written: dict[str, Path] = {}
    for key, (name, text) in texts.items():
        written[key] = folder / name
        try:
            (staging / name).write_text(text, encoding="utf-8")
        except OSError as error:
            raise _unwritable_report_file(written[key], error.strerror or str(error)) from None
    return written


def _put_in_place(staging: Path, folder: Path) -> None:
    """Move every file drawn and written into ``staging`` into ``folder`` (renames, which a full disk does
    not stop), after checking that no folder stands where one goes: an error or Ctrl-C before then leaves
    the earlier report's pages and plots, never half of one."""
    in_the_way = [folder / drawn.name for drawn in staging.iterdir() if (folder / drawn.name).is_dir()]
    if in_the_way:
        raise GpuperfError(f"{in_the_way[0]}: a folder where the report puts a file; the report is left as it was")
    for drawn in staging.iterdir():  # a link there is replaced, what it names left alone
        os.replace(drawn, folder / drawn.name)


def _unwritable_report_file(path: Path, reason: str) -> UnwritableFile:
    """The error for a report's file the system refused to write: named by its place in the report's folder."""
    return UnwritableFile(f"{path}: cannot be written ({reason}); the report is left as it was", path, reason)


@contextmanager
def _named_in_the_report(staging: Path, folder: Path) -> Iterator[None]:
    """A plot that cannot be drawn into ``staging`` (a full disk) named as the report's file in ``folder``,
    not by the staging folder, which is gone by the time the error is read."""
    try:
        yield
    except UnwritableFile as error:
        if error.path is None or error.path.parent != staging:
            raise
        raise _unwritable_report_file(folder / error.path.name, error.reason) from None


STAGING = ".report-"  # the folder a report's files are written in before they are put in place
# tempfile's names: the prefix and 8 characters of [a-z0-9_]; a folder of the user's named like it is not ours
STAGING_NAME = re.compile(re.escape(STAGING) + r"[a-z0-9_]{8}")
STAGED_SUFFIXES = (".png", ".md", ".html", ".json", ".tmp")  # a report's pages and plots, and plots half written


def _is_staging(path: Path) -> bool:
    """Whether ``path`` is a staging folder a report run left: named as gpuperf names them, a real folder,
    holding only plain files a report writes."""
    if not STAGING_NAME.fullmatch(path.name) or path.is_symlink() or not path.is_dir():
        return False
    return all(entry.is_file() and not entry.is_symlink() and entry.name.endswith(STAGED_SUFFIXES)
               for entry in path.iterdir())


def _remove_abandoned_staging(folder: Path) -> None:
    """Remove the staging folders runs killed while writing a report (SIGKILL, the OOM killer) left in
    ``folder``: every one where this process holds the folder's report lock (the command line's runs),
    else those an hour old (no report takes that long to write)."""
    import shutil
    import time

    from gpuperf.files import REPORT_LOCK, STALE_TEMPORARY_S, lock_holder

    ours = lock_holder(folder / REPORT_LOCK) == str(os.getpid())
    cutoff = time.time() - STALE_TEMPORARY_S
    for staging in folder.glob(f"{STAGING}*"):
        try:
            if _is_staging(staging) and (ours or staging.stat().st_mtime < cutoff):
                shutil.rmtree(staging)
        except OSError:  # another run removed it, or it cannot be: left as it is
            pass


def _ranking_record(ranking: pd.Series) -> dict:
    """The feature ranking as ``metrics.json`` holds it: the score's name and each feature's score, highest first."""
    ordered = ranking.sort_values(ascending=False)
    return {"score": str(ranking.name or "score"), "features": {str(k): _jsonable(v) for k, v in ordered.items()}}


def written_by() -> dict[str, str]:
    """The gpuperf version and the command line that wrote a report."""
    from gpuperf import __version__

    program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    if program == "__main__.py" and Path(sys.argv[0]).parent.name == "gpuperf":  # python -m gpuperf
        program = "python -m gpuperf"
    command = " ".join([program, shlex.join(sys.argv[1:])]) if sys.argv[1:] else program
    return {"gpuperf": __version__, "command": command}


LINKED_PLOT = re.compile(r"!\[[^\]]*\]\(([^)/\\]+\.png)\)")


def linked_plots(report: Path) -> set[Path]:
    """The plots an earlier gpuperf report (its ``report.md``, with a ``metrics.json`` saying gpuperf
    wrote it) links: the only files in its folder a new report may remove, where it writes no plot
    of the same name (a user's own files, and those a user's own report.md links, stay)."""
    try:
        text = report.read_text(encoding="utf-8")
        written = json.loads((report.parent / "metrics.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):  # not a metrics.json gpuperf wrote
        return set()
    if not (isinstance(written, dict) and "written_by" in written):
        return set()
    return {report.parent / name for name in LINKED_PLOT.findall(text)}
