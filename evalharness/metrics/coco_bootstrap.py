"""Image-level bootstrap of COCO AP without re-running COCOeval: the matching is kept, only the
accumulation is redone with resampling weights.

``COCOeval.evaluate()`` matches detections to ground truth image by image and category by category
(``evalImgs``); that is the expensive part and it does not depend on which images a resample draws.
A resample that draws image i w times is, for ``accumulate()``, image i's detections and ground
truth counted w times. So :class:`Matching` keeps, once, every detection's score, image and
matched/ignored flags per IoU threshold (area=all, maxDets=100: what AP, AP50, AP75 and per-class
AP use) in pycocotools' accumulate order, and :meth:`Matching.resampled` recomputes the precision
at the 101 recall thresholds with integer weights.

Two facts make that cheap: pycocotools' interpolated precision at recall r is the largest raw
precision among the points whose recall is >= r, and that largest value is always reached at a
true positive; so only true-positive points are visited, with the false positives before each one
counted by cumulative sums. Exactness: pycocotools on the resampled images laid out copy after copy
(image i's w copies adjacent, in image order) sorts by score stably, so an image's detections of one
class that share a score come out as the whole group repeated w times (a, b, a, b), not each one w
times (a, a, b, b); the two orders give different intermediate precision points when the group
mixes a match and a miss. Such groups (common with quantized scores) are laid out tiled for the
largest weight drawn, each tile counted when its copy is drawn; every other detection carries its
image's weight. ``tests/test_stats_coco.py`` checks the result against pycocotools run on the
duplicated images, to 1e-9.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

AREA_ALL = 0  # index of area range "all" in pycocotools' evalImgs
AP50, AP75 = 0, 5  # IoU threshold indices of 0.50 and 0.75 in 0.50:0.05:0.95
EPS = np.spacing(1)  # pycocotools' guard in tp / (tp + fp + eps)


@dataclass
class Matching:
    """Per-detection matching in accumulate order, one block per category (see module docstring)."""

    cat_ids: list[int]
    img_ids: list[int]
    rec_thrs: np.ndarray  # (R,)
    det_img: np.ndarray  # (D,) image index of each detection, categories concatenated
    det_score: np.ndarray  # (D,)
    det_cat: np.ndarray  # (D,) category index
    matched: np.ndarray  # (T, D) bool
    ignored: np.ndarray  # (T, D) bool
    gt_count: np.ndarray  # (K, N) non-ignored ground truth per category and image

    @classmethod
    def from_evaluator(cls, evaluator) -> Matching:
        """From a COCOeval after ``evaluate()`` (params.imgIds sorted, as evaluate() leaves them)."""
        p = evaluator.params
        cat_ids, img_ids = list(p.catIds), list(p.imgIds)
        n_img, n_area = len(img_ids), len(p.areaRng)
        max_det = p.maxDets[-1]
        n_thr = len(p.iouThrs)
        gt_count = np.zeros((len(cat_ids), n_img), dtype=np.int64)
        blocks = []  # (img, cat, scores, matched, ignored) per category, sorted as accumulate sorts
        for k in range(len(cat_ids)):
            base = k * n_area * n_img + AREA_ALL * n_img
            scores, images, matched, ignored = [], [], [], []
            for i in range(n_img):
                e = evaluator.evalImgs[base + i]
                if e is None:
                    continue
                gt_count[k, i] = int(np.count_nonzero(np.asarray(e["gtIgnore"]) == 0))
                s = np.asarray(e["dtScores"][:max_det], dtype=np.float64)
                scores.append(s)
                images.append(np.full(s.size, i, dtype=np.int64))
                matched.append(np.asarray(e["dtMatches"])[:, :max_det].reshape(n_thr, s.size) != 0)
                ignored.append(np.asarray(e["dtIgnore"])[:, :max_det].reshape(n_thr, s.size).astype(bool))
            if not scores:
                continue
            s = np.concatenate(scores)
            order = np.argsort(-s, kind="mergesort")
            img = np.concatenate(images)[order]
            blocks.append(
                (img, np.full(img.size, k), np.concatenate(matched, 1)[:, order],
                 np.concatenate(ignored, 1)[:, order], s[order])
            )  # fmt: skip
        empty_flags = np.zeros((n_thr, 0), dtype=bool)
        return cls(
            cat_ids=cat_ids,
            img_ids=img_ids,
            rec_thrs=np.asarray(p.recThrs, dtype=np.float64),
            det_img=np.concatenate([b[0] for b in blocks]) if blocks else np.zeros(0, np.int64),
            det_cat=np.concatenate([b[1] for b in blocks]) if blocks else np.zeros(0, np.int64),
            det_score=np.concatenate([b[4] for b in blocks]) if blocks else np.zeros(0),
            matched=np.concatenate([b[2] for b in blocks], 1) if blocks else empty_flags,
            ignored=np.concatenate([b[3] for b in blocks], 1) if blocks else empty_flags,
            gt_count=gt_count,
        )

    def resampled(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        """AP, AP50, AP75 (each (B,)) and per-class AP (B, K) for (B, N) image weights.

        NaN where pycocotools would give -1 (no non-ignored ground truth in the resample).
        """
        weights = np.asarray(weights, dtype=np.float64)
        n_thr, n_cat, n_rec = self.matched.shape[0], len(self.cat_ids), self.rec_thrs.size
        layout, copy = self._layout(int(weights.max(initial=1)))
        img, cat = self.det_img[layout], self.det_cat[layout]
        matched, ignored = self.matched[:, layout], self.ignored[:, layout]
        plan = [_threshold_plan(cat, matched[t], ignored[t], n_cat) for t in range(n_thr)]
        tiled = copy >= 0
        out = {name: np.empty(len(weights)) for name in ("AP", "AP50", "AP75")}
        out["per_class"] = np.empty((len(weights), n_cat))
        q = np.empty((n_thr, n_cat, n_rec))
        for b, w in enumerate(weights):
            npig = self.gt_count @ w  # (K,)
            w_det = w[img]
            w_det[tiled] = copy[tiled] < w_det[tiled]
            total = np.cumsum(w_det)
            for t, tp in enumerate(plan):
                q[t] = self._precision(tp, w_det, total, npig, n_cat, n_rec)
            valid = npig > 0  # pycocotools' -1: no ground truth of the class in this resample
            chosen = q[:, valid]
            out["AP"][b] = chosen.mean() if chosen.size else np.nan
            out["AP50"][b] = chosen[AP50].mean() if chosen.size else np.nan
            out["AP75"][b] = chosen[AP75].mean() if chosen.size else np.nan
            out["per_class"][b] = np.where(valid, q.mean(axis=(0, 2)), np.nan)
        return out

    def _layout(self, copies: int) -> tuple[np.ndarray, np.ndarray]:
        """(detection index, copy number or -1) of each entry: groups of one image's same-class
        same-score detections repeated ``copies`` times as whole groups, every other detection once."""
        same = (
            (self.det_img[1:] == self.det_img[:-1])
            & (self.det_cat[1:] == self.det_cat[:-1])
            & (self.det_score[1:] == self.det_score[:-1])
        )
        group_starts = np.flatnonzero(np.diff(np.concatenate(([0], same.astype(np.int8)))) == 1)
        n = self.det_img.size
        if copies <= 1 or group_starts.size == 0:
            return np.arange(n), np.full(n, -1)
        group_ends = np.flatnonzero(np.diff(np.concatenate((same.astype(np.int8), [0]))) == -1) + 2
        pieces, numbers, previous = [], [], 0
        for start, end in zip(group_starts, group_ends, strict=True):
            pieces += [np.arange(previous, start), np.tile(np.arange(start, end), copies)]
            numbers += [np.full(start - previous, -1), np.repeat(np.arange(copies), end - start)]
            previous = end
        pieces.append(np.arange(previous, n))
        numbers.append(np.full(n - previous, -1))
        return np.concatenate(pieces), np.concatenate(numbers)

    def _precision(self, tp: dict, w_det, total, npig, n_cat: int, n_rec: int) -> np.ndarray:
        """pycocotools' interpolated precision (K, R) at one IoU threshold for one resample."""
        q = np.zeros((n_cat, n_rec))
        pos = tp["pos"]
        if pos.size == 0:
            return q
        w_tp = w_det[pos]
        tp_cum = np.cumsum(w_tp)
        tp_sum = tp_cum - (tp_cum[tp["first_tp"]] - w_tp[tp["first_tp"]])
        before_start = np.where(tp["start"] > 0, total[tp["start"] - 1], 0.0)
        seen = total[pos] - before_start
        ign_cum = np.concatenate(([0.0], np.cumsum(w_det[tp["ign"]])))
        seen -= ign_cum[tp["ign_before"]] - ign_cum[tp["ign_cat_start"]]
        fp_sum = seen - tp_sum
        cat = tp["cat"]
        keep = w_tp > 0  # a point of a detection not drawn is not a point of the resample
        with np.errstate(divide="ignore", invalid="ignore"):
            rc = tp_sum / npig[cat]
        pr = tp_sum / (fp_sum + tp_sum + EPS)
        pr, rc, cat = pr[keep], rc[keep], cat[keep]
        if pr.size == 0:
            return q
        # interpolated precision: max of pr over the later points of the same category
        offset = 2.0 * (n_cat - cat)
        env = np.maximum.accumulate((pr + offset)[::-1])[::-1] - offset
        reached = np.searchsorted(self.rec_thrs, rc, "right")  # thresholds each point's recall reaches
        key = reached + (n_rec + 1) * cat
        ends = np.searchsorted(cat, np.arange(n_cat), "right")
        wanted = np.arange(1, n_rec + 1)[None, :] + (n_rec + 1) * np.arange(n_cat)[:, None]
        idx = np.searchsorted(key, wanted.ravel(), "left").reshape(n_cat, n_rec)
        hit = idx < ends[:, None]
        q[hit] = env[idx[hit]]
        return q


def _threshold_plan(det_cat, matched, ignored, n_cat: int) -> dict:
    """What does not depend on the weights at IoU threshold t: true-positive positions, the
    ignored detections before each, and where each category's block starts."""
    tp_mask = matched & ~ignored
    pos = np.flatnonzero(tp_mask)
    ign = np.flatnonzero(ignored)
    cat = det_cat[pos]
    starts = np.searchsorted(det_cat, np.arange(n_cat), "left")
    first_tp = np.searchsorted(pos, starts, "left")  # index in pos of each category's first tp
    return {
        "pos": pos,
        "cat": cat,
        "ign": ign,
        "ign_before": np.searchsorted(ign, pos, "right"),  # ignored dets at or before each tp
        "ign_cat_start": np.searchsorted(ign, starts[cat], "left"),
        "start": starts[cat],
        "first_tp": first_tp[cat],
    }


