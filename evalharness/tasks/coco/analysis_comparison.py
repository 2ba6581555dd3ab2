"""What ``report diff`` records of two detection runs' error analyses (``detection.analysis``,
made by :func:`evalharness.tasks.coco.analysis.compare`), as types: the diff document holds it as
plain JSON, these name its keys for the code that builds and reads it."""

from __future__ import annotations

from typing import Any, TypedDict


class F1Shift(TypedDict):
    """Both runs' F1-optimal thresholds (``metrics.analysis.f1``) and B's minus A's."""

    a: dict[str, Any]
    b: dict[str, Any]
    threshold_shift: float | None


class ConfusionChanges(TypedDict):
    """Both confusion matrices at A's F1-optimal threshold, the changed off-diagonal pairs first."""

    score_threshold: float | None
    iou: float
    background: int
    changes: list[dict[str, Any]]
    a: list[list[int]]  # [truth, predicted, count] cells
    b: list[list[int]]


class _Recorded(TypedDict):
    recorded: dict[str, bool]  # "a", "b": whether the run recorded its analysis


class AnalysisComparison(_Recorded, total=False):
    """A diff's ``detection.analysis``: the rest only where both runs recorded their analysis."""

    tide: list[dict[str, Any]]
    tide_reason: list[str | None]
    tide_segm: list[dict[str, Any]]  # a seg pair's TIDE by mask IoU, where both runs recorded it
    tide_segm_reason: list[str | None]
    f1: F1Shift
    confusion: ConfusionChanges
    pr_curves: dict[str, Any]  # "a", "b": each run's all-class PR curves
    class_curves: list[dict[str, Any]]
