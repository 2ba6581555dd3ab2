"""How one task's results read where the generic presenters (:mod:`evalharness.report.presenters`,
which work from the declared metrics alone) say too little: a :class:`TaskView` per task, named by
its definition (``TaskDefinition.view``), never part of it.

Every hook's default is "nothing of my own": the generic summary lines pass through, no verdict of
its own (the generic one stands), no extra diff sections, figures or thumbnails. A task overrides
only what really differs (ImageNet's per-class tables, COCO's analysis, inference_diff's per-output
table).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, TypedDict

import numpy as np

from evalharness.core.errors import EvalHarnessError
from evalharness.core.tables import Section
from evalharness.rundir.metrics_file import Document
from evalharness.rundir.reader import Run


class Shapes(TypedDict):
    """What a diff thumbnail draws on its image, in the image's pixels, each item of run ``a`` or
    ``b`` (the report gives each run its colour): masks (boolean, height x width), line segments
    (x0, y0, x1, y1) and points (x, y)."""

    masks: list[tuple[str, np.ndarray]]
    lines: list[tuple[str, tuple[float, float, float, float]]]
    points: list[tuple[str, tuple[float, float]]]


class TaskView:
    thumbnails: ClassVar[tuple[str, str] | None] = None  # (diff section key, heading) of changed samples
    # (diff section key, comparison field of rows with ``name`` and ``delta``, title): an HTML bar chart
    delta_figure: ClassVar[tuple[str, str, str] | None] = None

    def __init__(self, definition: Any) -> None:  # its TaskDefinition (which imports this module)
        self.definition = definition
        self.settings = definition.settings

    def summary_lines(self, doc: Document, lines: list[str]) -> list[str]:
        """The ``results.txt`` lines (and what the run prints) of a metrics.json document, given
        the generic ones made from the declared metrics: kept, extended or replaced."""
        return lines

    def verdict(self, diff: Mapping[str, Any]) -> str | None:
        """One line a reader can act on, where the task's own story beats the generic one; None:
        the generic verdict (the headline metric's change, else speed)."""
        return None

    def diff_sections(self, comparison: dict[str, Any], max_rows: int) -> list[Section]:
        """Tables of the paired comparison after the generic metric rows of ``report diff``."""
        return []

    def figures(self, comparison: dict[str, Any]) -> list[dict[str, Any]]:
        """Plots of the comparison for the HTML report and ``report diff --figures``: dicts with
        ``after`` (section key), ``kind`` (curves | bars | matrix: see
        :mod:`evalharness.report.views.analysis_view`), ``name`` (file stem), ``title`` and the data."""
        return []

    def run_analysis(self, run: Run, max_rows: int) -> tuple[list[Section], list[dict[str, Any]]]:
        """One run's ``metrics.analysis`` as (sections, figure specs as :meth:`figures` makes them)
        for ``report analysis``; a task without one says so."""
        raise EvalHarnessError(f"task {self.definition.name} records no per-run analysis")

    def thumbnail_place(self, comparison: dict[str, Any]) -> tuple[str, str] | None:
        """(diff section key, heading) of the changed samples' thumbnails in this comparison:
        :attr:`thumbnails`, unless what changed is judged by more than one measure (COCO's boxes, or
        a seg pair's masks)."""
        return self.thumbnails

    def changed_samples(self, comparison: dict[str, Any]) -> list[tuple[str, str]]:
        """(sample id, caption) of the samples whose answer changed, for thumbnails."""
        return []

    def thumbnail_shapes(
        self, comparison: dict[str, Any], record_a: Mapping[str, Any], record_b: Mapping[str, Any]
    ) -> Shapes | None:
        """What to draw on a changed sample's thumbnail from the two runs' records of it; None: the
        image alone."""
        return None

    def moved_most(self, comparison: dict[str, Any], n: int) -> tuple[list[dict[str, Any]], str | None]:
        """What moved most between two runs beyond the headline metric, for a chain step: (at most
        ``n`` rows for its JSON, one line for its table); ([], None): nothing of the task's own."""
        return [], None
