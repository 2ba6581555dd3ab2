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
image's weight. ``tests/e2e/test_stats_coco.py`` checks the result against pycocotools run on the
duplicated images, to 1e-9.

Speed: a category's AP at one IoU threshold is the mean of its interpolated precision at the 101
recall thresholds, and each true positive is the first point to reach a run of them, so the sum is
the run lengths times the precisions there: O(true positives) per resample and threshold, not
O(categories x 101) with a search per threshold; the resamples are rows of one array, a batch at a
time. The sums are taken in another order than pycocotools' mean over the (T, K, R) array, so a
resample's AP can differ from the per-threshold layout's in the last bit (1e-16). The detections
seen before a true positive are not a running sum over every detection (most are false positives,
read only there): the detections between two read positions are counted once as (image, tile copy)
pairs, and a resample adds its weights of the pairs (integers: exact in any order); the recall
thresholds reached are looked up, not searched (:mod:`evalharness.stats.coco_recall_reads`).
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from evalharness.core.cores import available_cores
from evalharness.stats.coco_recall_reads import ReachedTable

AREA_ALL = 0  # index of area range "all" in pycocotools' evalImgs
AP50, AP75 = 0, 5  # IoU threshold indices of 0.50 and 0.75 in 0.50:0.05:0.95
EPS = np.spacing(1)  # pycocotools' guard in tp / (tp + fp + eps)
_BATCH_VALUES = 1 << 21  # resamples x detections per batch of Matching.resampled() (16 MiB an array)
_WORKERS = 4  # threads of Matching.resampled(), at most one per core


class Resamples(TypedDict):
    """:meth:`Matching.resampled`: AP, AP50, AP75 (each (B,)) and per-class AP (B, K), NaN for -1."""

    AP: np.ndarray
    AP50: np.ndarray
    AP75: np.ndarray
    per_class: np.ndarray


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
    def from_evaluator(cls, evaluator: Any, trim: bool = True) -> Matching:
        """From a COCOeval after ``evaluate()`` (params.imgIds sorted, as evaluate() leaves them): a
        :class:`~evalharness.stats.coco_chunks.ChunkedCOCOeval`'s reduced matching, or any other's
        ``evalImgs`` reduced alike.

        ``trim=False`` keeps every detection (the error analysis counts the false positives after a
        category's last true positive; the bootstrap never needs them)."""
        from evalharness.stats.coco_reduced import reduce_eval_imgs

        p = evaluator.params
        cat_ids, img_ids = list(p.catIds), list(p.imgIds)
        n_img, n_thr = len(img_ids), len(p.iouThrs)
        reduced = getattr(evaluator, "reduced", None)
        if reduced is None:
            reduced = reduce_eval_imgs(evaluator.evalImgs, len(cat_ids), len(p.areaRng), 0, n_thr)
        gt_count = np.zeros((len(cat_ids), n_img), dtype=np.int64)
        blocks = []  # (img, cat, matched, ignored, scores) per category, sorted as accumulate sorts
        for k in range(len(cat_ids)):
            block = reduced.get((k, AREA_ALL))
            if block is None:
                continue
            held, counts = block.ground_truth()
            gt_count[k, held] = counts
            s, images, matched, ignored = block.detections(None, p.maxDets[-1])
            order = np.argsort(-s, kind="mergesort")
            img = images[order].astype(np.int64)
            blocks.append((img, np.full(s.size, k), matched[:, order], ignored[:, order], s[order]))
        empty_flags = np.zeros((n_thr, 0), dtype=bool)
        whole = cls(
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
        return whole.trimmed() if trim else whole

    def _tie_groups(self) -> np.ndarray:
        """Group number of each detection: one image's same-class same-score neighbours share one."""
        same = (
            (self.det_img[1:] == self.det_img[:-1])
            & (self.det_cat[1:] == self.det_cat[:-1])
            & (self.det_score[1:] == self.det_score[:-1])
        )
        return np.cumsum(np.concatenate(([True], ~same))) - 1

    def trimmed(self) -> Matching:
        """Without the detections after each category's last true positive (at any IoU threshold)
        and its tie group: they only add points of lower precision at full recall, in every resample.
        With low score thresholds that is most detections."""
        tp_any = (self.matched & ~self.ignored).any(axis=0)
        if self.det_img.size == 0:
            return self
        group = self._tie_groups()
        last_group = np.full(len(self.cat_ids), -1)
        np.maximum.at(last_group, self.det_cat[tp_any], group[tp_any])
        keep = group <= last_group[self.det_cat]
        return dataclasses.replace(
            self,
            det_img=self.det_img[keep],
            det_cat=self.det_cat[keep],
            det_score=self.det_score[keep],
            matched=self.matched[:, keep],
            ignored=self.ignored[:, keep],
        )

    def resampled(self, weights: np.ndarray) -> Resamples:
        """AP, AP50, AP75 (each (B,)) and per-class AP (B, K) for (B, N) image weights.

        NaN where pycocotools would give -1 (no non-ignored ground truth in the resample). The
        resamples are taken a batch at a time, as rows of one array: the cost follows the true
        positives x resamples, not a Python loop per resample and threshold.
        """
        weights = np.asarray(weights, dtype=np.float64)
        n_thr, n_cat, n_rec = self.matched.shape[0], len(self.cat_ids), self.rec_thrs.size
        layout, copy = self._layout(weights.max(axis=0).astype(np.int64))
        img, cat = self.det_img[layout], self.det_cat[layout]
        matched, ignored = self.matched[:, layout], self.ignored[:, layout]
        plan = [_threshold_plan(cat, matched[t], ignored[t], n_cat) for t in range(n_thr)]
        running = _RunningTotals(plan, img, copy, len(self.img_ids))
        out: Resamples = {
            "AP": np.empty(len(weights)),
            "AP50": np.empty(len(weights)),
            "AP75": np.empty(len(weights)),
            "per_class": np.empty((len(weights), n_cat)),
        }
        counts = self.gt_count.T.astype(np.float64)  # (N, K)
        drawn = weights @ counts  # (resamples, K) non-ignored ground truth drawn; whole numbers
        table = ReachedTable(drawn, self.rec_thrs)
        workers = max(1, min(_WORKERS, available_cores()))
        batch = max(1, min(_BATCH_VALUES // (img.size + 1), -(-len(weights) // workers)))

        def one_batch(first: int) -> None:
            w = weights[first : first + batch]
            rows = np.arange(first, first + len(w))
            npig = drawn[first : first + len(w)]  # (rows, K): integers, exact in any order
            by_image = np.ascontiguousarray(w.T)  # (N, rows): a resample per column, as below
            totals = running.at_needed(by_image)
            read = table.reader(npig.T)  # the recall thresholds each count reaches, one lookup a batch
            # area[:, t, k]: the sum of category k's interpolated precision over the R recall thresholds
            area = np.stack(
                [self._areas(tp, running, t, by_image, totals, read) for t, tp in enumerate(plan)],
                axis=1,
            )
            valid = npig > 0  # pycocotools' -1: no ground truth of the class in this resample
            cells = valid.sum(axis=1) * n_rec  # (rows,) precision values averaged per threshold
            with np.errstate(divide="ignore", invalid="ignore"):
                kept = np.where(valid[:, None, :], area, 0.0)
                out["AP"][rows] = kept.sum(axis=(1, 2)) / (cells * n_thr)
                out["AP50"][rows] = kept[:, AP50].sum(axis=1) / cells
                out["AP75"][rows] = kept[:, AP75].sum(axis=1) / cells
            out["per_class"][rows] = np.where(valid, area.sum(axis=1) / (n_thr * n_rec), np.nan)

        # numpy leaves the GIL for each whole-array step: the batches share the cores the run's
        # loop has left idle; each writes its own rows
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(one_batch, range(0, len(weights), batch)))
        return out

    def _layout(self, copies: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(detection index, copy number or -1) of each entry: tie groups (see :meth:`_tie_groups`) of
        two or more that mix flags repeated as whole groups, as many times as their image's largest
        weight (``copies``, per image), every other detection once (carrying its image's weight)."""
        n = self.det_img.size
        if n == 0:  # no detection at all (e.g. none maps to an annotated category): nothing to lay out
            return np.arange(0), np.full(0, -1)
        group = self._tie_groups()
        starts = np.flatnonzero(np.diff(np.concatenate(([-1], group))))
        sizes = np.diff(np.concatenate((starts, [n])))
        # only groups whose members differ in a flag at some IoU threshold: for the others the
        # grouped order gives the same sequence of points as the tiled one
        code = self.matched.astype(np.int8) * 2 + self.ignored.astype(np.int8)  # (T, D)
        high, low = np.maximum.reduceat(code, starts, axis=1), np.minimum.reduceat(code, starts, axis=1)
        mixed = (high != low).any(axis=0)
        # as many copies as the group's image is ever drawn in these resamples
        reps = np.where((sizes > 1) & mixed, np.maximum(copies[self.det_img[starts]], 1), 1)
        if (reps == 1).all():
            return np.arange(n), np.full(n, -1)
        length = sizes * reps
        segment = np.repeat(np.arange(starts.size), length)
        offset = np.arange(length.sum()) - np.repeat(np.cumsum(length) - length, length)
        index = starts[segment] + offset % sizes[segment]
        copy = np.where(reps[segment] > 1, offset // sizes[segment], -1)
        return index, copy

    def _areas(
        self, tp: _ThresholdPlan, running: _RunningTotals, t: int, by_image: Any, totals: Any, reached_at: Any
    ) -> np.ndarray:
        """(rows, K): per resample (row) and category, the sum of pycocotools' interpolated
        precision at its R recall thresholds, at one IoU threshold ``t`` (its mean x R).

        Point j of a category (a true positive, in score order) is the first to reach the recall
        thresholds [reached before it, reached at it): pycocotools reads the interpolated precision
        there for each of them, so the sum is the run lengths times those precisions, without
        visiting the thresholds one by one."""
        rows, n_cat = by_image.shape[1], len(self.cat_ids)  # one resample per column
        pos = tp.pos
        if pos.size == 0:
            return np.zeros((rows, n_cat))
        w_tp = running.weights_of(pos, by_image)
        tp_cum = np.cumsum(w_tp, axis=0)
        tp_sum = tp_cum - (tp_cum - w_tp)[tp.first_tp]  # true positives of the category so far
        after, start = running.lookups[t]
        seen = totals[after] - totals[start]  # detections of the category so far
        if tp.ign.size:  # minus the ignored ones (matched to crowd boxes)
            ign_cum = np.zeros((tp.ign.size + 1, rows))
            np.cumsum(running.weights_of(tp.ign, by_image), axis=0, out=ign_cum[1:])
            seen -= ign_cum[tp.ign_before] - ign_cum[tp.ign_cat_start]
        with np.errstate(divide="ignore", invalid="ignore"):
            # a true positive of an image not drawn is no point of the resample: -1 never wins
            pr = np.where(w_tp > 0, tp_sum / (seen + EPS), -1.0)
        # interpolated precision: the max of pr over the later points of the same category (the
        # offsets keep categories apart in one running maximum)
        pr += tp.offset[:, None]
        env = np.maximum.accumulate(pr[::-1], axis=0)[::-1] - tp.offset[:, None]
        # recall thresholds reached so far (tp / npig; NaN where no truth is drawn: all reached)
        reached = reached_at(tp.cat, tp_sum)
        before = np.empty_like(reached)
        before[1:] = reached[:-1]
        before[tp.category_first] = 0
        runs = (reached - before) * np.maximum(env, 0.0)
        bins = (tp.cat[:, None] * rows + np.arange(rows)).ravel()
        sums: np.ndarray = np.bincount(bins, weights=runs.ravel(), minlength=rows * n_cat)
        area: np.ndarray = sums.reshape(n_cat, rows).T
        return area


class _RunningTotals:
    """Each resample's running total of the detections' weights at the positions the AP reads
    (after each true positive, where each category starts), without a running sum over every
    detection: the detections before each such position are counted as (image, tile copy) pairs
    with their multiplicity, so a resample's work follows the pairs, not the detections. All
    weights are integers, so the sums are exact in any order (the same bits as a running sum)."""

    def __init__(self, plan: list[_ThresholdPlan], img: np.ndarray, copy: np.ndarray, n_img: int) -> None:
        self.img, self.copy, self.n_img = img, copy, n_img
        self.tiled = np.flatnonzero(copy >= 0)
        needed = np.unique(np.concatenate([np.concatenate((tp.pos + 1, tp.start)) for tp in plan]))
        self.lookups = [
            (np.searchsorted(needed, tp.pos + 1), np.searchsorted(needed, tp.start)) for tp in plan
        ]
        self.copies = int(copy.max()) + 1 if copy.size else 0
        upto = int(needed[-1]) if needed.size else 0  # detections after the last position: never read
        # which feature (a resample's weight of an image, or whether it draws an image's copy c) and
        # which span between needed positions each detection adds to
        feature = np.where(copy[:upto] < 0, img[:upto], n_img * (copy[:upto] + 1) + img[:upto])
        span = np.searchsorted(needed, np.arange(upto), "right")
        n_features = n_img * (self.copies + 1)
        keys, self.multiplicity = np.unique(span * n_features + feature, return_counts=True)
        self.feature = keys % n_features
        self.reads = np.searchsorted(keys // n_features, np.arange(needed.size), "right")

    def weights_of(self, index: np.ndarray, by_image: np.ndarray) -> np.ndarray:
        """(len(index), rows): the entries' weights, a tiled copy 1 where its image is drawn more
        often than its copy number, 0 else."""
        weights: np.ndarray = by_image[self.img[index]]
        copies = self.copy[index]
        tiled = np.flatnonzero(copies >= 0)
        weights[tiled] = copies[tiled, None] < weights[tiled]
        return weights

    def at_needed(self, by_image: np.ndarray) -> np.ndarray:
        """(needed positions, rows): the weight of the entries before each needed position."""
        drawn = [by_image] + [by_image > c for c in range(self.copies)]
        features = np.concatenate(drawn, axis=0, dtype=np.float64)
        added = features[self.feature] * self.multiplicity[:, None]
        totals = np.zeros((added.shape[0] + 1, by_image.shape[1]))
        np.cumsum(added, axis=0, out=totals[1:])
        out: np.ndarray = totals[self.reads]
        return out


@dataclass(frozen=True)
class _ThresholdPlan:
    """What does not depend on the weights at one IoU threshold (:func:`_threshold_plan`)."""

    pos: np.ndarray  # true-positive positions
    cat: np.ndarray  # their categories
    ign: np.ndarray  # ignored detections' positions
    ign_before: np.ndarray  # ignored dets at or before each tp
    ign_cat_start: np.ndarray
    start: np.ndarray  # where each tp's category block starts
    first_tp: np.ndarray
    offset: np.ndarray
    category_first: np.ndarray  # positions in pos where a category's points begin


def _threshold_plan(det_cat: Any, matched: Any, ignored: Any, n_cat: int) -> _ThresholdPlan:
    """What does not depend on the weights at IoU threshold t: true-positive positions, the
    ignored detections before each, and where each category's block starts."""
    tp_mask = matched & ~ignored
    pos = np.flatnonzero(tp_mask)
    ign = np.flatnonzero(ignored)
    cat = det_cat[pos]
    starts = np.searchsorted(det_cat, np.arange(n_cat), "left")
    first_tp = np.searchsorted(pos, starts, "left")  # index in pos of each category's first tp
    return _ThresholdPlan(
        pos=pos,
        cat=cat,
        ign=ign,
        ign_before=np.searchsorted(ign, pos, "right"),  # ignored dets at or before each tp
        ign_cat_start=np.searchsorted(ign, starts[cat], "left"),
        start=starts[cat],
        first_tp=first_tp[cat],
        offset=3.0 * (n_cat - cat),
        category_first=np.flatnonzero(np.concatenate(([True], cat[1:] != cat[:-1]))),
    )
