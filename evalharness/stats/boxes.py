"""Detection runs compared box by box and class by class.

AP summarises thousands of boxes in one number; when a delegate changes it, the question is which
boxes moved. Per image and category, A's detections (highest score first) are matched greedily to
the unmatched B detection of highest IoU, kept when IoU >= ``iou``. Unmatched boxes and the IoU of
matched ones show whether B lost, gained or shifted detections.
"""

from __future__ import annotations

from collections import defaultdict

from evalharness.core.numbers import delta
from evalharness.stats.paired import pair_by_id


def iou_xywh(a: list[float], b: list[float]) -> float:
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    iw = min(ax + aw, bx + bw) - max(ax, bx)
    ih = min(ay + ah, by + bh) - max(ay, by)
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    union = aw * ah + bw * bh - inter
    return inter / union if union > 0 else 0.0


def match_detections(dets_a: list, dets_b: list, iou: float = 0.5) -> tuple[list[tuple], int, int]:
    """Greedy same-category matching of ``[category_id, score, x, y, w, h]`` rows.

    Returns ((A row, B row, IoU) pairs, unmatched A count, unmatched B count). A's rows go in
    descending score (stable), each taking the free B row of its category with the highest IoU
    (first on ties).
    """
    free_b: dict = defaultdict(list)
    for row in dets_b:
        free_b[row[0]].append(row)
    pairs = []
    for row in sorted(dets_a, key=lambda r: -r[1]):
        candidates = free_b[row[0]]
        best, best_iou = None, iou
        for index, other in enumerate(candidates):
            value = iou_xywh(row[2:6], other[2:6])
            if value >= best_iou and (best is None or value > best_iou):
                best, best_iou = index, value
        if best is not None:
            pairs.append((row, candidates.pop(best), best_iou))
    return pairs, len(dets_a) - len(pairs), len(dets_b) - len(pairs)


def detection_diff(
    preds_a: list[dict], preds_b: list[dict], iou: float = 0.5, min_score: float = 0.0
) -> dict:
    """Per-image matched/unmatched counts, mean IoU and score shift of matched detections."""
    pairs, only_a, only_b = pair_by_id(preds_a, preds_b)
    images, ious, score_shift = [], [], []
    totals = {"a": 0, "b": 0, "matched": 0, "only_a": 0, "only_b": 0}
    for a, b in pairs:
        da = [d for d in a.get("detections", []) if d[1] >= min_score]
        db = [d for d in b.get("detections", []) if d[1] >= min_score]
        matched, lost, gained = match_detections(da, db, iou)
        image_ious = [m[2] for m in matched]
        ious += image_ious
        score_shift += [abs(m[1][1] - m[0][1]) for m in matched]
        row = {
            "id": a["id"],
            "a": len(da),
            "b": len(db),
            "matched": len(matched),
            "only_a": lost,
            "only_b": gained,
            "mean_iou": _mean(image_ious),
        }
        for key in totals:
            totals[key] += row[key]
        images.append(row)
    changed = [r for r in images if r["only_a"] or r["only_b"]]
    changed.sort(key=lambda r: (-(r["only_a"] + r["only_b"]), r["id"]))
    return {
        "paired_images": len(pairs),
        "only_in_a": only_a,
        "only_in_b": only_b,
        "iou_threshold": iou,
        "min_score": min_score,
        "detections": totals,
        "unmatched": totals["only_a"] + totals["only_b"],
        "images_changed": len(changed),
        "mean_iou": _mean(ious),
        "mean_abs_score_delta": _mean(score_shift),
        "changed_images": changed,
    }


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def per_class_deltas(per_class_a: dict, per_class_b: dict) -> list[dict]:
    """AP and AP50 per category, largest |ΔAP| first; categories with AP in neither run left out."""
    rows = []
    for cat in set(per_class_a) | set(per_class_b):
        ca, cb = per_class_a.get(cat) or {}, per_class_b.get(cat) or {}
        if ca.get("AP") is None and cb.get("AP") is None:
            continue
        rows.append(
            {
                "category_id": int(cat),
                "name": ca.get("name") or cb.get("name"),
                "a": ca.get("AP"),
                "b": cb.get("AP"),
                "delta": delta(ca.get("AP"), cb.get("AP")),
                "a_AP50": ca.get("AP50"),
                "b_AP50": cb.get("AP50"),
                "num_gt": ca.get("num_gt", cb.get("num_gt")),
            }
        )
    rows.sort(key=lambda r: (r["delta"] is None, -abs(r["delta"] or 0.0), r["category_id"]))
    return rows
