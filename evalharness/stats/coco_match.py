"""pycocotools' per-image matching (``COCOeval.evaluateImg``) with the same result, faster.

``evaluate()`` spends most of a COCO scoring in ``evaluateImg``: for every image, category and area
range, a greedy match of the detections (by score) to the ground truth at each IoU threshold, in
Python loops that read numpy scalars one at a time. :class:`MatchingCOCOeval` runs the same loops,
in the same order, with the same comparisons, over Python lists (the IoUs read out once per call),
and returns the same dictionary (the same keys, values and dtypes), so ``accumulate()`` and
everything read from ``evalImgs`` give the same numbers bit for bit
(``tests/unit/stats/test_coco_match.py`` compares them on random cases with crowds, ties and area
ranges; the e2e tests compare whole runs with pycocotools').
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pycocotools.cocoeval import COCOeval

NOTHING: list[Any] = []  # pycocotools' "no IoUs" / "no annotations", one shared list (never changed)


class MatchingCOCOeval(COCOeval):  # type: ignore[misc]  # pycocotools ships no types
    """COCOeval with :meth:`evaluateImg` read from lists (see the module docstring)."""

    def computeIoU(self, imgId: Any, catId: Any) -> Any:  # noqa: N802, N803  # pycocotools' names
        # pycocotools' own, except for an image without ground truth or detections of the category
        # (most of images x categories): its [] without reading _gts / _dts, defaultdicts that would
        # keep an empty list for every pair read (~20 MiB per 1,000 images of COCO's 80 classes)
        if self.params.useCats and (imgId, catId) not in self._gts and (imgId, catId) not in self._dts:
            return NOTHING
        return super().computeIoU(imgId, catId)

    def evaluateImg(self, imgId: Any, catId: Any, aRng: Any, maxDet: int) -> dict[str, Any] | None:  # noqa: N802, N803  # pycocotools' names
        p = self.params
        if p.useCats:  # read without adding the pair to the defaultdicts (see computeIoU)
            gt = self._gts.get((imgId, catId), NOTHING)
            dt = self._dts.get((imgId, catId), NOTHING)
        else:
            gt = [g for c in p.catIds for g in self._gts[imgId, c]]
            dt = [d for c in p.catIds for d in self._dts[imgId, c]]
        if len(gt) == 0 and len(dt) == 0:
            return None
        low, high = aRng
        for g in gt:  # the same marks pycocotools leaves on the ground truth
            g["_ignore"] = 1 if g["ignore"] or (g["area"] < low or g["area"] > high) else 0
        # ignored ground truth last, detections by descending score: stable sorts, as mergesort
        gtind = sorted(range(len(gt)), key=lambda i: gt[i]["_ignore"])
        gt = [gt[i] for i in gtind]
        dtind = sorted(range(len(dt)), key=lambda i: -dt[i]["score"])[:maxDet]
        dt = [dt[i] for i in dtind]
        computed = self.ious[imgId, catId]
        ious = computed[:, np.asarray(gtind, dtype=np.int64)] if len(computed) > 0 else computed
        n_thr, n_gt, n_dt = len(p.iouThrs), len(gt), len(dt)
        gt_ignore = [g["_ignore"] for g in gt]
        gt_ids = [g["id"] for g in gt]
        dt_ids = [d["id"] for d in dt]
        dtm = [[0.0] * n_dt for _ in range(n_thr)]
        gtm = [[0.0] * n_gt for _ in range(n_thr)]
        dt_ig = [[0.0] * n_dt for _ in range(n_thr)]
        if len(ious) != 0:
            rows = ious.tolist()
            best = ious.max(axis=1).tolist()  # a detection overlapping nothing this much matches nothing
            crowd = [bool(int(g["iscrowd"])) for g in gt]
            for tind, t in enumerate(p.iouThrs.tolist()):
                matched, dt_row, ig_row = gtm[tind], dtm[tind], dt_ig[tind]
                start = min(t, 1 - 1e-10)
                for dind in range(n_dt):
                    if best[dind] < start:
                        continue
                    row = rows[dind]
                    iou, m = start, -1
                    for gind in range(n_gt):
                        if matched[gind] > 0 and not crowd[gind]:
                            continue
                        if m > -1 and gt_ignore[m] == 0 and gt_ignore[gind] == 1:
                            break
                        if row[gind] < iou:
                            continue
                        iou, m = row[gind], gind
                    if m == -1:
                        continue
                    ig_row[dind] = gt_ignore[m]
                    dt_row[dind] = gt_ids[m]
                    matched[m] = dt_ids[dind]
        dt_matches = np.array(dtm, dtype=np.float64).reshape(n_thr, n_dt)
        outside = np.array([d["area"] < low or d["area"] > high for d in dt]).reshape((1, n_dt))
        dt_ignore = np.array(dt_ig, dtype=np.float64).reshape(n_thr, n_dt)
        dt_ignore = np.logical_or(dt_ignore, np.logical_and(dt_matches == 0, np.repeat(outside, n_thr, 0)))
        return {
            "image_id": imgId,
            "category_id": catId,
            "aRng": aRng,
            "maxDet": maxDet,
            "dtIds": dt_ids,
            "gtIds": gt_ids,
            "dtMatches": dt_matches,
            "gtMatches": np.array(gtm, dtype=np.float64).reshape(n_thr, n_gt),
            "dtScores": [d["score"] for d in dt],
            "gtIgnore": np.array(gt_ignore),
            "dtIgnore": dt_ignore,
        }
