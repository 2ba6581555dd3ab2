"""pycocotools' per-image matching (``COCOeval.evaluateImg``) with the same result, faster.

``evaluate()`` spends most of a COCO scoring in ``evaluateImg``: for every image, category and area
range, a greedy match of the detections (by score) to the ground truth at each IoU threshold, in
Python loops that read numpy scalars one at a time. :class:`MatchingCOCOeval` runs the same loops,
in the same order, with the same comparisons, over Python lists (the IoUs read out once per call),
and returns the same dictionary (the same keys, values and dtypes), so ``accumulate()`` and
everything read from ``evalImgs`` give the same numbers bit for bit
(``tests/unit/stats/test_coco_match.py`` compares them on random cases with crowds, ties and area
ranges; the e2e tests compare whole runs with pycocotools').

The rest of ``evaluate()`` and ``accumulate()`` is pycocotools' own arithmetic with less Python
around it: the (image, category) pairs that hold nothing (most of them on COCO: 80 categories, a
few on an image) are set to pycocotools' ``[]`` / None without a call, and ``accumulate()``
gathers each category's matching once for every maxDets and takes the precision envelope on whole
arrays (a block of IoU-threshold rows at a time where a category has many detections). Its
``eval`` (precision, recall, scores) is pycocotools' bit for bit (tested the same way).
"""

from __future__ import annotations

import copy
import datetime
from typing import Any

import numpy as np
from pycocotools.cocoeval import COCOeval

NOTHING: list[Any] = []  # pycocotools' "no IoUs" / "no annotations", one shared list (never changed)
# accumulate()'s arithmetic on at most this many (threshold, detection) values at a time: a block of
# IoU-threshold rows (one row where a category has more detections). A whole (T, D) float array of
# a 2,500-image run's largest category (person, ~38,000 detections) is ~3 MiB, and accumulate held
# ~8 of them at once (cumulative sums, recall, precision, envelope, their temporaries): the spikes of
# the seg run's peak RSS. Below it (almost every category) one block: the whole arrays as before.
ROW_BLOCK_VALUES = 1 << 16


class MatchingCOCOeval(COCOeval):  # type: ignore[misc]  # pycocotools ships no types
    """COCOeval with :meth:`evaluateImg` read from lists, :meth:`evaluate` visiting only the
    (image, category) pairs that hold something and :meth:`accumulate` on whole arrays (see the
    module docstring)."""

    def evaluate(self) -> None:
        """pycocotools' ``evaluate()``: the same ``ious`` and ``evalImgs``, but a pair of image and
        category with neither ground truth nor detections is not visited (pycocotools' IoU is
        ``[]`` there and its ``evaluateImg`` None, which are set directly): on COCO most of the
        images x categories x area ranges are such pairs, each a Python call that returns at once."""
        p = self.params
        if not p.useCats or p.useSegm is not None:  # pycocotools' own path for the rare settings
            super().evaluate()
            return
        p.imgIds = list(np.unique(p.imgIds))
        p.catIds = list(np.unique(p.catIds))
        p.maxDets = sorted(p.maxDets)
        self._prepare()
        held = set(self._gts).union(self._dts)  # (image id, category id) holding gt or detections
        compute = self.computeOks if p.iouType == "keypoints" else self.computeIoU
        self.ious = {
            (img, cat): compute(img, cat) if (img, cat) in held else []
            for img in p.imgIds
            for cat in p.catIds
        }
        evaluate, max_det = self.evaluateImg, p.maxDets[-1]
        self._matchings: dict[tuple[Any, ...], Any] = {}  # (image, category, maxDets, marks) -> match
        try:
            self.evalImgs = [
                evaluate(img, cat, area, max_det) if (img, cat) in held else None
                for cat in p.catIds
                for area in p.areaRng
                for img in p.imgIds
            ]
        finally:
            del self._matchings  # only for this evaluate(): an evaluateImg() called alone computes
        self._paramsEval = copy.deepcopy(p)

    def accumulate(self, p: Any = None) -> None:
        """pycocotools' ``accumulate()`` with the same ``eval`` bit for bit: per category and area
        range the images' matching is gathered once for every maxDets (pycocotools gathers it per
        maxDets), and the precision envelope (a running maximum from the right, exact in any form)
        and the reads at the recall thresholds are taken on whole arrays instead of Python loops
        over the detections."""
        if p is None:
            p = self.params
        p.catIds = p.catIds if p.useCats == 1 else [-1]
        n_thr, n_rec, n_cat, n_area, n_max = (
            len(p.iouThrs), len(p.recThrs), len(p.catIds), len(p.areaRng), len(p.maxDets)
        )  # fmt: skip
        # -1: an absent category (pycocotools' -np.ones, made without its temporary array of ones:
        # 7.4 MiB each for COCO, left resident in the heap once freed)
        precision = np.full((n_thr, n_rec, n_cat, n_area, n_max), -1.0)
        recall = np.full((n_thr, n_cat, n_area, n_max), -1.0)
        scores = np.full((n_thr, n_rec, n_cat, n_area, n_max), -1.0)
        done = self._paramsEval  # what evaluate() matched: p may select a part of it
        cats, areas = set(done.catIds if done.useCats else [-1]), set(map(tuple, done.areaRng))
        imgs, max_dets = set(done.imgIds), set(done.maxDets)
        k_list = [n for n, k in enumerate(p.catIds) if k in cats]
        m_list = [m for m in p.maxDets if m in max_dets]
        a_list = [n for n, a in enumerate(map(tuple, p.areaRng)) if a in areas]
        i_list = [n for n, i in enumerate(p.imgIds) if i in imgs]
        for k, k0 in enumerate(k_list):
            for a, a0 in enumerate(a_list):
                gathered = self._gathered(k0, a0, i_list)
                if gathered is None:
                    continue
                npig, detections = gathered
                for m, max_det in enumerate(m_list):
                    dt_scores, dtm, dt_ig = detections(max_det)
                    self.accumulated_at(
                        dt_scores, dtm, dt_ig, npig, p.recThrs, (precision, recall, scores), (k, a, m)
                    )
        self.eval = {
            "params": p,
            "counts": [n_thr, n_rec, n_cat, n_area, n_max],
            "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
            "precision": precision,
            "recall": recall,
            "scores": scores,
        }

    def _gathered(self, k0: int, a0: int, i_list: list[int]) -> tuple[Any, Any] | None:
        """(npig, maxDets -> (scores, dtMatches, dtIgnore) concatenated over the images) of one
        category and area range of what evaluate() matched, None where accumulate() skips it (no
        image holds anything, or no non-ignored ground truth)."""
        done = self._paramsEval
        n_img0, n_area0 = len(done.imgIds), len(done.areaRng)
        base = k0 * n_area0 * n_img0 + a0 * n_img0
        found = [self.evalImgs[base + i] for i in i_list]
        held = [e for e in found if e is not None]
        if not held:
            return None
        npig = np.count_nonzero(np.concatenate([e["gtIgnore"] for e in held]) == 0)
        if npig == 0:
            return None

        def detections(max_det: int) -> tuple[Any, Any, Any]:
            dt_scores = np.concatenate([e["dtScores"][0:max_det] for e in held])
            dtm = np.concatenate([e["dtMatches"][:, 0:max_det] for e in held], axis=1)
            dt_ig = np.concatenate([e["dtIgnore"][:, 0:max_det] for e in held], axis=1)
            return dt_scores, dtm, dt_ig

        return npig, detections

    @staticmethod
    def accumulated_at(
        dt_scores: Any,
        dtm: Any,
        dt_ig: Any,
        npig: Any,
        rec_thrs: Any,
        out: tuple[Any, ...],
        at: tuple[int, ...],
    ) -> None:
        """One category, area range and maxDets of :meth:`accumulate` from its detections
        concatenated over the images (scores, matches and ignore flags per IoU threshold, before
        the sort), pycocotools' arithmetic in its order (the same floating-point operations on the
        same values)."""
        precision, recall, scores = out
        k, a, m = at
        inds = np.argsort(-dt_scores, kind="mergesort")
        sorted_scores = dt_scores[inds]
        n_thr, nd = len(dtm), len(inds)
        if not nd:  # pycocotools' reads fail at once: zeros
            recall[:, k, a, m] = 0
            precision[:, :, k, a, m] = 0.0
            scores[:, :, k, a, m] = 0.0
            return
        # each threshold's row is its own cumulative sums, divisions, envelope and reads: a block of
        # rows at a time holds a block's float arrays, not (T, D) of each (the same bits either way)
        step = max(1, min(n_thr, ROW_BLOCK_VALUES // nd))
        for first in range(0, n_thr, step):
            rows = slice(first, first + step)
            matched, ignored = dtm[rows][:, inds], dt_ig[rows][:, inds]
            counted = np.logical_not(ignored)
            tp_sum = np.cumsum(np.logical_and(matched, counted), axis=1).astype(dtype=float)
            fp_sum = np.cumsum(np.logical_and(np.logical_not(matched), counted), axis=1).astype(dtype=float)
            del matched, ignored, counted
            rc = tp_sum / npig
            pr = tp_sum / (fp_sum + tp_sum + np.spacing(1))
            del tp_sum, fp_sum
            recall[rows, k, a, m] = rc[:, -1]
            envelope = np.maximum.accumulate(pr[:, ::-1], axis=1)[:, ::-1]
            del pr
            reads = np.stack([np.searchsorted(row, rec_thrs, side="left") for row in rc])  # (rows, R)
            inside = reads < nd  # past the last detection pycocotools' loop stops, leaving zeros
            clipped = np.minimum(reads, nd - 1)
            precision[rows, :, k, a, m] = np.where(inside, np.take_along_axis(envelope, clipped, axis=1), 0.0)
            scores[rows, :, k, a, m] = np.where(inside, sorted_scores[clipped], 0.0)

    def _greedy(
        self, ious: Any, gt: list[dict[str, Any]], gt_ignore: list[int], gt_ids: list[Any], dt_ids: list[Any]
    ) -> tuple[list[list[Any]], list[list[Any]], list[list[Any]]]:
        """pycocotools' greedy matching at each IoU threshold, ground truth in its sorted order:
        (dtMatches, gtMatches, dtIgnore before the area test) as lists per threshold."""
        n_thr, n_gt, n_dt = len(self.params.iouThrs), len(gt), len(dt_ids)
        dtm = [[0.0] * n_dt for _ in range(n_thr)]
        gtm = [[0.0] * n_gt for _ in range(n_thr)]
        dt_ig = [[0.0] * n_dt for _ in range(n_thr)]
        if len(ious) != 0:
            rows = ious.tolist()
            best = ious.max(axis=1).tolist()  # a detection overlapping nothing this much matches nothing
            crowd = [bool(int(g["iscrowd"])) for g in gt]
            for tind, t in enumerate(self.params.iouThrs.tolist()):
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
        return dtm, gtm, dt_ig

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
        marks = tuple(g["_ignore"] for g in gt)  # with the image and category: the whole matching
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
        # an area range that leaves the same ground truth ignored as another one gives the same match
        # (only the detections outside the range differ): "all" and the range of every object in it
        memo = getattr(self, "_matchings", None)
        key = (imgId, catId, maxDet, marks)
        if memo is not None and key in memo:
            dtm, gtm, dt_ig = memo[key]
        else:
            dtm, gtm, dt_ig = self._greedy(ious, gt, gt_ignore, gt_ids, dt_ids)
            if memo is not None:
                memo[key] = dtm, gtm, dt_ig
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
