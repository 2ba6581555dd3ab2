"""The figures a task asks for (:meth:`TaskView.figures`), drawn for the HTML report and
written as SVG and PNG files a user can put on a slide (``report diff --figures DIR``).

A task hands over data, not drawings (definitions never import ``report/``): a ``curves`` spec is
named y series over x in [0, 1] (precision–recall), ``bars`` is grouped bars per label (an error
breakdown of A and B), ``matrix`` is sparse ``[row, column, count]`` cells per side (confusion
matrices). Every function returns None without matplotlib, as :mod:`evalharness.report.views.plots` does.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from evalharness.report.views import plots

COLOURS = ("#4c78a8", "#e45756", "#54a24b", "#9d755d")
MATRIX_CLASSES = 25  # the matrix shows the categories with the most counts; the rest are in the tables


def _curves(spec: dict[str, Any]) -> tuple[Any, Any]:
    """``panels``: (title, [(label, ys over x = 0..1 evenly)]) each, up to 3 per row."""
    panels = spec["panels"]
    cols = min(len(panels), 3)
    rows = -(-len(panels) // cols)
    matplotlib, fig = plots._sized_figure(3.4 * cols if cols > 1 else 5.5, (2.9 if cols > 1 else 4.0) * rows)
    if fig is None:
        return None, None
    for n, (title, series) in enumerate(panels):
        ax = fig.add_subplot(rows, cols, n + 1)
        for (label, ys), colour in zip(series, COLOURS, strict=False):
            xs = [i / (len(ys) - 1) for i in range(len(ys))] if len(ys) > 1 else [0.0]
            ax.plot(xs, ys, label=label, color=colour)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(spec["x"], fontsize=8)
        ax.set_ylabel(spec["y"], fontsize=8)
        if title:
            ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return matplotlib, fig


def _bars(spec: dict[str, Any]) -> tuple[Any, Any]:
    labels, series = spec["labels"], spec["series"]
    matplotlib, fig = plots._sized_figure(7.0, 0.6 + 0.45 * max(len(labels), 1))
    if fig is None:
        return None, None
    ax = fig.add_subplot()
    height = 0.8 / max(len(series), 1)
    for n, ((label, values), colour) in enumerate(zip(series, COLOURS, strict=False)):
        ys = [len(labels) - 1 - i + (len(series) - 1 - 2 * n) * height / 2 for i in range(len(labels))]
        ax.barh(ys, values, height=height, label=label, color=colour)
    ax.set_yticks([len(labels) - 1 - i for i in range(len(labels))], labels)
    ax.set_xlabel(spec["title"])
    ax.legend(fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    return matplotlib, fig


def _matrix(spec: dict[str, Any]) -> tuple[Any, Any]:
    import numpy as np

    sides = spec["sides"]
    totals: dict[int, int] = {}
    for _, cells in sides:
        for g, p, n in cells:
            for k in (g, p):
                totals[k] = totals.get(k, 0) + n
    keys = sorted(sorted(totals, key=lambda k: (-totals[k], k))[:MATRIX_CLASSES])
    index = {k: i for i, k in enumerate(keys)}
    matplotlib, fig = plots._sized_figure(5.0 * len(sides), 5.0)
    if fig is None:
        return None, None
    for s, (label, cells) in enumerate(sides):
        grid = np.zeros((len(keys), len(keys)))
        for g, p, n in cells:
            if g in index and p in index:
                grid[index[g], index[p]] = n
        ax = fig.add_subplot(1, len(sides), s + 1)
        ax.imshow(np.log1p(grid), cmap="Blues")
        ax.set_xticks(range(len(keys)), [str(k) for k in keys], rotation=90, fontsize=6)
        ax.set_yticks(range(len(keys)), [str(k) for k in keys], fontsize=6)
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("detected (0 = background)", fontsize=8)
        ax.set_ylabel("truth (0 = background)", fontsize=8)
    return matplotlib, fig


BUILDERS: dict[str, Callable[[dict[str, Any]], tuple[Any, Any]]] = {
    "curves": _curves,
    "bars": _bars,
    "matrix": _matrix,
    "class_deltas": lambda spec: plots.class_deltas_figure(spec["rows"]),
}


def svg(spec: dict[str, Any]) -> str | None:
    matplotlib, fig = BUILDERS[spec["kind"]](spec)
    return None if fig is None else plots._svg(matplotlib, fig, spec["name"])


def blocks(specs: list[dict[str, Any]]) -> dict[str, list[str]]:
    """HTML figure blocks by the section key they follow."""
    from evalharness.report.views import html

    out: dict[str, list[str]] = {}
    for spec in specs:
        if spec.get("html", True):  # False: the page draws it otherwise (a file only)
            out.setdefault(spec["after"], []).append(html.figure_html(spec["title"], svg(spec)))
    return out


def write_files(specs: list[dict[str, Any]], directory: str) -> list[str]:
    """Each figure as ``<name>.svg`` and ``<name>.png`` in ``directory`` (made if absent); the paths."""
    paths = []
    for spec in specs:
        matplotlib, fig = BUILDERS[spec["kind"]](spec)
        if fig is None:
            return []
        os.makedirs(directory, exist_ok=True)
        plots.controls_shown(fig)
        for ext in ("svg", "png"):
            path = os.path.join(directory, f"{spec['name']}.{ext}")
            with matplotlib.rc_context({"svg.hashsalt": "evalharness"}):
                fig.savefig(
                    path,
                    format=ext,
                    metadata={"Date": None} if ext == "svg" else None,
                    bbox_inches="tight",
                    dpi=150,
                )
            paths.append(path)
    return paths
