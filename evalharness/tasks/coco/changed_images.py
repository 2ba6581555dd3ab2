"""The images whose detections changed between two runs, as ``report diff`` labels them: TIDE's error
types of B minus A on each (by box IoU, or by mask IoU for a seg pair's masks: tidecv's two modes),
and the caption a thumbnail or ``explain`` gives it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from evalharness.stats.tide import MAIN, Detection, box_detections, errors_per_image, mask_detections
from evalharness.tasks.coco.analysis import detection_blocks


def label_changed_images(
    rows: list[dict[str, Any]],
    ground_truth: dict[str, Any],
    preds_a: list[Any],
    preds_b: list[Any],
    kind: str = "bbox",
) -> str | None:
    """Give each changed image's row ``error_types``: TIDE's error counts of B minus A's on that
    image (e.g. ``{"Loc": 1, "Bkg": -1}``: a box that moved off its object), typed by tidecv on the
    changed images alone, by box IoU, or by mask IoU for ``kind`` ``segm`` (tidecv's mask mode);
    returns why not, when tidecv cannot (it has no keypoint mode)."""
    if kind not in TIDE_MODES:
        return f"not typed: tidecv has no {kind} mode"
    image_of = {r["id"]: r["image_id"] for r in preds_a}
    ids = [image_of[r["id"]] for r in rows]
    wanted, per_side = set(ids), []
    for preds in (preds_a, preds_b):
        found = errors_per_image(ground_truth, _detections(preds, wanted, kind), ids, TIDE_MODES[kind])
        if not found["available"]:
            return str(found["reason"])
        per_side.append(found["per_image"])
    for row, image_id in zip(rows, ids, strict=True):
        a, b = per_side[0][image_id], per_side[1][image_id]
        row["error_types"] = {t: b[t] - a[t] for t in MAIN if b[t] != a[t]}
    return None


TIDE_MODES = {"bbox": "box", "segm": "mask"}  # tidecv's modes by pycocotools' iouType


def _detections(records: list[Any], wanted: set[Any], kind: str) -> Callable[[], Iterable[Detection]]:
    """The ``wanted`` images' detections of ``records`` as TIDE takes them: boxes, or masks."""
    if kind == "bbox":
        return box_detections(detection_blocks(records, wanted))
    from evalharness.tasks.coco.shape_store import ShapeStore

    store = ShapeStore(keep_masks=True)
    for record in records:
        if record["image_id"] in wanted:
            store.add(record, checked=True)  # the comparison checked its runs' records first
    return mask_detections(store.results["segm"])


def error_text(row: dict[str, Any]) -> str:
    """``Loc +1, Bkg -1`` (B - A), ``same counts`` or ``n/a`` (not typed)."""
    if "error_types" not in row:
        return "n/a"
    return ", ".join(f"{t} {n:+d}" for t, n in row["error_types"].items()) or "same counts"


def changed_caption(row: dict[str, Any], things: str = "box(es)") -> str:
    """A changed image's caption (thumbnails, ``explain``): boxes (masks, poses) lost and new, and
    the error types."""
    return f"{row['only_a']} {things} only in A, {row['only_b']} only in B; errors B-A: {error_text(row)}"
