"""What the error analysis (``task.analysis``) adds to COCO scoring, as a ratio (not a unit test).

    python benchmarks/bench_analysis.py [--images 5000] [--per-image 128] [--min-score 0.01]

A replicated val25 set (the SSD model's low-threshold detections, ``ssd_low_threshold.py``: the
volume of a real mAP run) is scored once as a run with ``analysis=false`` scores it (pycocotools,
no bootstrap), then the analysis is timed part by part: keeping pycocotools' per-image matching and
recall array, the per-class table, PR curves, F1 threshold, confusion matrix and TIDE (tidecv).
Printed: each part's seconds and ``analysis / scoring``, the figure the issue's target is set on.
Replicating one set keeps every copy's errors alike; a real 5,000-image set has more variety, not
more work per box.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO.parent / "shared" / "assets"
sys.path.insert(0, str(Path(__file__).resolve().parent))


def timed(label: str, timings: dict, fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    timings[label] = time.perf_counter() - start
    return out


def main() -> None:
    from evalharness.stats import detection_analysis as da
    from evalharness.stats.coco_eval import evaluate_bbox
    from evalharness.stats.tide import tide_breakdown, tide_in_background

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--per-image", type=int, default=128)
    ap.add_argument("--min-score", type=float, default=0.01)
    ap.add_argument(
        "--repeats", type=int, default=2, help="alternate plain / kept scorings, keep the fastest"
    )
    args = ap.parse_args()
    from ssd_low_threshold import replicated_val25

    gt, results, _, _ = replicated_val25(ASSETS, args.images, args.min_score, args.per_image)
    per_image = defaultdict(list)
    for d in results:
        per_image[d["image_id"]].append([d["category_id"], d["score"], *d["bbox"]])
    arrays = {k: np.asarray(v, dtype=np.float64) for k, v in per_image.items()}
    blocks = lambda: iter(arrays.items())  # noqa: E731
    ids = sorted(im["id"] for im in gt["images"])
    t: dict[str, float] = {}
    plain, kept = [], []  # alternated, fastest kept: a shared machine's load hits both alike
    for _ in range(args.repeats):
        timed("scoring", t, evaluate_bbox, gt, results, "pycocotools", ids)
        plain.append(t["scoring"])
        scored = timed("kept", t, lambda: evaluate_bbox(gt, results, "pycocotools", ids, analysis=True))
        kept.append(t.pop("kept"))
    t["scoring"] = min(plain)
    acc = scored["accumulated"]
    f1 = timed("F1 threshold", t, da.f1_threshold, acc["matching"])
    timed(
        "per-class table",
        t,
        da.per_class_table,
        scored["per_class"],
        acc["recall"],
        acc["cat_ids"],
        acc["matching"],
    )
    timed("PR curves", t, da.pr_curves, acc["precision"])
    timed("confusion matrix", t, da.confusion, gt, blocks, ids, f1["score_threshold"])
    tide = timed("TIDE (tidecv)", t, tide_breakdown, gt, blocks, ids)
    t["matching kept"] = max(min(kept) - t["scoring"], 0.0)
    analysis = sum(v for k, v in t.items() if k != "scoring")
    without_tide = analysis - t["TIDE (tidecv)"]
    # as a run does it (task.tide=true): TIDE in a child process while the kept scoring runs
    start = time.perf_counter()
    finish = tide_in_background(gt, blocks, ids)
    evaluate_bbox(gt, results, "pycocotools", ids, analysis=True)
    beside = finish()
    added = max(time.perf_counter() - start - min(kept), 0.0)
    assert beside["dAP"] == tide["dAP"], "the child process's TIDE differs from the in-process one"
    print(
        f"{len(ids)} images, {len(results)} detections ({len(results) / len(ids):.0f}/image), "
        f"AP {scored['stats']['AP']:.4f}"
    )
    for name, seconds in t.items():
        print(f"  {name:<18} {seconds:8.2f} s")
    print(
        f"TIDE available: {tide['available']}; F1-optimal threshold {f1['score_threshold']:.4g} "
        f"(F1 {f1['f1']:.4f})"
    )
    print(f"scorings (plain, with the matching kept): {plain}, {kept} s")
    print(f"analysis / scoring = {analysis:.2f} s / {t['scoring']:.2f} s = {analysis / t['scoring']:.3f}")
    print(f"(scoring + analysis) / scoring = {(t['scoring'] + analysis) / t['scoring']:.3f}")
    print(
        f"with TIDE beside the scoring (task.tide=true, as a run does it: {added:.2f} s added): "
        f"(scoring + analysis) / scoring = {1 + (without_tide + added) / t['scoring']:.3f}"
    )
    print(
        "without TIDE (task.tide=false): (scoring + analysis) / scoring = "
        f"{1 + without_tide / t['scoring']:.3f}"
    )


if __name__ == "__main__":
    main()
