"""Inline SVG plots for HTML reports, drawn with matplotlib when it is installed.

matplotlib is optional (``pip install 'evalharness[report]'``): every function returns None without
it and the report says so. Figures are built with ``matplotlib.figure.Figure`` (no pyplot, no global
backend switch) and saved with fixed ids and no date, so the same runs give the same SVG.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from typing import Any

from evalharness.core.escape import terminal

MISSING_NOTE = "plots need matplotlib: pip install 'evalharness[report]'"
DISTRIBUTION_NOTE = (
    "Drawn from every run's per-invoke samples (latency_ms of each predictions.jsonl line): box "
    "p25-p75 with the median, whiskers 1.5 IQR, outliers as points."
)
LATENCY_NOTE = (
    "Runs store latency summary statistics only (min, p50, p90, p99, max, mean), not per-image times: "
    "this plot draws those summaries (thin line min-max, thick bar p50-p90, band p90-p99, dot mean), "
    "not a histogram."
)


def _matplotlib() -> tuple[Any, Any] | None:
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError:
        return None
    return matplotlib, Figure


def _shown(made: Callable[[float, int | None], str]) -> Callable[[float, int | None], str]:
    """A tick formatter's function whose labels show their control characters (one per formatter)."""

    def shown(x: float, pos: int | None = None) -> str:
        return terminal(made(x, pos))

    return shown


def controls_shown(fig: Any) -> None:
    """Every text of the figure — titles, labels, legends, tick labels — with its control characters
    shown (:func:`evalharness.core.escape.terminal`): class and model names come from files, and a
    glyph matplotlib cannot draw is echoed raw in its warning on stderr (and is no valid SVG text)."""
    from matplotlib.text import Text
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):  # tick labels given as text are made when drawn
            formatter = axis.get_major_formatter()
            if isinstance(formatter, FixedFormatter):
                formatter.seq = [terminal(s) for s in formatter.seq]
            elif isinstance(formatter, FuncFormatter):  # set_yticks(ticks, labels)
                formatter.func = _shown(formatter.func)
    for text in fig.findobj(Text):
        text.set_text(terminal(text.get_text()))


def _svg(matplotlib: Any, fig: Any, prefix: str) -> str:
    """The figure as an inline ``<svg>`` whose element ids start with ``prefix``.

    Several SVGs share one HTML page, and matplotlib numbers ids per figure (``patch_1``, clip
    paths): prefixing keeps every id unique on the page.
    """
    controls_shown(fig)
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "evalharness", "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight")
    text = buf.getvalue()
    text = text[text.index("<svg") :]  # drop the XML prolog and DOCTYPE: the SVG goes inline
    ids = set(re.findall(r'\bid="([^"]+)"', text))
    return re.sub(
        r'(\bid="|#)([^"\s)]+)', lambda m: m[1] + (f"{prefix}-{m[2]}" if m[2] in ids else m[2]), text
    )


def _sized_figure(width: float, height: float) -> tuple[Any, Any]:
    """(matplotlib, a new Figure) or (None, None) without matplotlib."""
    mpl = _matplotlib()
    if mpl is None:
        return None, None
    matplotlib, Figure = mpl
    return matplotlib, Figure(figsize=(width, height))


def _figure(rows: int) -> tuple[Any, Any]:
    return _sized_figure(7.0, 0.6 + 0.45 * max(rows, 1))


def latency_summary(runs: list[tuple[str, dict[str, Any]]]) -> str | None:
    """``runs``: (label, latency_ms.inference dict) per run, drawn top to bottom."""
    matplotlib, fig = _figure(len(runs))
    if fig is None:
        return None
    ax = fig.add_subplot()
    for y, (_, s) in enumerate(reversed(runs)):
        if s.get("min") is None:
            continue
        ax.hlines(y, s["min"], s["max"], color="#555", linewidth=1)
        ax.barh(y, s["p90"] - s["p50"], left=s["p50"], height=0.5, color="#4c78a8")
        ax.barh(y, s["p99"] - s["p90"], left=s["p90"], height=0.5, color="#9ecae9")
        ax.plot([s["mean"]], [y], "o", color="#e45756", markersize=4)
    ax.set_yticks(range(len(runs)), [label for label, _ in reversed(runs)])
    ax.set_xlabel("invoke() latency, ms")
    ax.grid(axis="x", alpha=0.3)
    return _svg(matplotlib, fig, "latency")


def class_deltas(rows: list[dict[str, Any]], limit: int = 25) -> str | None:
    """Horizontal bars of per-class AP change (B - A), largest |delta| first; the paired interval as
    a whisker where the row has one (``paired.interval``)."""
    matplotlib, fig = class_deltas_figure(rows, limit)
    return None if fig is None else _svg(matplotlib, fig, "classes")


def class_deltas_figure(rows: list[dict[str, Any]], limit: int = 25) -> tuple[Any, Any]:
    """(matplotlib, the figure of :func:`class_deltas`), or (None, None) without matplotlib."""
    rows = [r for r in rows if r["delta"] is not None][:limit]
    matplotlib, fig = _figure(len(rows))
    if fig is None:
        return None, None
    ax = fig.add_subplot()
    labels = [r["name"] for r in reversed(rows)]
    values = [r["delta"] for r in reversed(rows)]
    ax.barh(range(len(rows)), values, color=["#54a24b" if v >= 0 else "#e45756" for v in values])
    for y, r in enumerate(reversed(rows)):
        interval = (r.get("paired") or {}).get("interval")
        if interval:  # a percentile interval need not contain the point: drawn as a line, not an error bar
            ax.hlines(y, interval[0], interval[1], color="#333", linewidth=0.8)
            ax.plot(interval, [y, y], "|", color="#333", markersize=5)
    ax.set_yticks(range(len(rows)), labels)
    ax.axvline(0, color="#333", linewidth=0.8)
    ax.set_xlabel("AP change, B - A")
    ax.grid(axis="x", alpha=0.3)
    return matplotlib, fig


def scatter(
    points: list[tuple[str, float, float]],
    xlabel: str,
    ylabel: str,
    intervals: dict[str, list[float]] | None = None,
    front: list[str] | None = None,
) -> str | None:
    """Labelled (label, x, y) points, e.g. accuracy against latency of every run of a sweep.

    ``intervals``: label -> [low, high] drawn as vertical error bars; ``front``: labels of the Pareto
    front, joined by a dashed line and drawn in another colour."""
    matplotlib, fig = _sized_figure(7.0, 4.5)
    if fig is None:
        return None
    ax = fig.add_subplot()
    xs = [p[1] for p in points]
    on_front = set(front or ())
    colours = ["#e45756" if p[0] in on_front else "#4c78a8" for p in points]
    for label, x, y in points:
        if intervals and intervals.get(label):
            low, high = intervals[label]
            ax.errorbar([x], [y], yerr=[[y - low], [high - y]], color="#888", capsize=3, linewidth=1)
    ax.scatter(xs, [p[2] for p in points], color=colours, zorder=3)
    if on_front:
        line = sorted((x, y) for label, x, y in points if label in on_front)
        ax.plot([p[0] for p in line], [p[1] for p in line], "--", color="#e45756", linewidth=1,
                label="Pareto front (faster and more accurate than no other run)")  # fmt: skip
        ax.legend(fontsize=7, loc="lower right")
    if min(xs) > 0 and max(xs) / min(xs) > 20:  # 1 ms CPU runs next to 500 ms fallbacks: log scale
        ax.set_xscale("log")
    _place_labels(ax, fig, points)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    return _svg(matplotlib, fig, "scatter")


LABEL_OFFSETS = ((4, 4), (4, -11), (-4, 4), (-4, -11), (4, 14), (4, -21), (-4, 14), (-4, -21))


def _place_labels(ax: Any, fig: Any, points: list[tuple[str, float, float]], fontsize: int = 7) -> None:
    """Each point's label at the first of :data:`LABEL_OFFSETS` where its box (estimated from the
    text length) overlaps no label placed before: runs of a sweep often sit close together, and
    labels drawn all up-right of their points printed over each other."""
    ax.autoscale_view()
    to_px = ax.transData.transform
    char_w, line_h = fontsize * 0.6 * fig.dpi / 72, fontsize * 1.2 * fig.dpi / 72
    taken: list[tuple[float, float, float, float]] = []
    for label, x, y in sorted(points, key=lambda p: (p[1], p[2])):
        px, py = to_px((x, y))
        width = char_w * len(label)
        for dx, dy in LABEL_OFFSETS:
            sx, sy = dx * fig.dpi / 72, dy * fig.dpi / 72
            left = px + sx if dx > 0 else px + sx - width
            box = (left, py + sy, left + width, py + sy + line_h)
            if not any(b[0] < box[2] and box[0] < b[2] and b[1] < box[3] and box[1] < b[3] for b in taken):
                break
        taken.append(box)
        ax.annotate(
            label, (x, y), textcoords="offset points", xytext=(dx, dy), fontsize=fontsize,
            ha="left" if dx > 0 else "right",
        )  # fmt: skip


def error_curve(series: dict[str, list[float | None]], ylabel: str, mark: int | None = None) -> str | None:
    """One line per series over op index (explain's SNR along the graph); ``mark``: the op to flag."""
    matplotlib, fig = _sized_figure(9.0, 3.5)
    if fig is None:
        return None
    ax = fig.add_subplot()
    colors = ("#e45756", "#4c78a8", "#54a24b", "#9d755d")
    for (label, values), color in zip(series.items(), colors, strict=False):
        ys = [float("nan") if v is None else v for v in values]
        ax.plot(range(len(values)), ys, label=label, color=color)
    if mark is not None:
        ax.axvline(mark, color="#333", linestyle="--", linewidth=1)
        ax.annotate(
            f"op {mark}",
            (mark, 0),
            xycoords=("data", "axes fraction"),
            xytext=(3, 3),
            textcoords="offset points",
            fontsize=8,
        )
    ax.set_xlabel("op (execution order)")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _svg(matplotlib, fig, "curve")


def latency_distributions(runs: list[tuple[str, list[float]]]) -> str | None:
    """Horizontal box plots of each run's per-invoke latencies, top to bottom."""
    matplotlib, fig = _figure(len(runs))
    if fig is None or not runs:
        return None
    ax = fig.add_subplot()
    ordered = list(reversed(runs))
    data = [values for _, values in ordered]
    style = {"widths": 0.5, "flierprops": {"markersize": 2}}
    try:  # matplotlib >= 3.10 names the direction; older ones only know vert
        ax.boxplot(data, orientation="horizontal", **style)
    except TypeError:
        ax.boxplot(data, vert=False, **style)
    ax.set_yticks(range(1, len(ordered) + 1), [label for label, _ in ordered])
    ax.set_xlabel("invoke() latency, ms")
    values = [v for _, vs in runs for v in vs]
    if min(values) > 0 and max(values) / min(values) > 20:
        ax.set_xscale("log")
    ax.grid(axis="x", alpha=0.3)
    return _svg(matplotlib, fig, "distributions")
