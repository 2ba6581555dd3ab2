"""TIDE's error breakdown of a detection run, computed by ``tidecv`` (Bolya et al., ECCV 2020), the
reference implementation.

AP says how much was lost, TIDE says to what: each false positive and missed object is assigned one
error type (classification, localisation, both, duplicate, background, missed), and each type's
dAP is the AP50 gained when the errors of that type alone are fixed. Fixes interact, so the six
do not sum to 100 − AP; the two "special" figures (all false positives / all false negatives fixed)
bound them.

``tidecv`` is an optional dependency (``pip install 'evalharness[analysis]'``: it pulls OpenCV,
pandas and seaborn for its own plots). Without it, or when it fails, the record says so and why:
never a silent absence. The detections and ground truth are handed to it in memory in the form
its own COCO loaders build (a crowd box is an ignore region of its class; images without
annotations still count, their detections are background errors), boxes only. Its AP50 is its own,
not pycocotools': both are recorded, never mixed. The two differ mostly on a subset of images:
tidecv averages every class with a detection or a ground-truth box, so a class detected but absent
from these images counts as AP 0 (``ap.py``: ``get_ap`` returns 0 without ground truth, ``get_mAP``
averages every non-empty class), where pycocotools leaves such a class out. The record says how many
classes that is and TIDE's AP50 over the classes with ground truth, so the cause is printed beside
the figure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypedDict

POS_THRESHOLD = 0.5  # IoU of a true positive (TIDE's default; the COCO AP50 threshold)
BACKGROUND_THRESHOLD = 0.1  # IoU below which a false positive is background (TIDE's default)
MAX_DETS = 100  # detections per image TIDE keeps (its COCO setting)
MAIN = ("Cls", "Loc", "Both", "Dupe", "Bkg", "Miss")
SPECIAL = ("FalsePos", "FalseNeg")
NAMES = {
    "Cls": "classification",
    "Loc": "localisation",
    "Both": "both (cls + loc)",
    "Dupe": "duplicate",
    "Bkg": "background",
    "Miss": "missed",
    "FalsePos": "all false positives",
    "FalseNeg": "all false negatives",
}
INSTALL_HINT = "pip install 'evalharness[analysis]'"


class TideBreakdown(TypedDict):
    """``metrics.analysis.tide`` of a detection run: the same keys with TIDE (``available``) or
    without it (every figure None, ``reason`` saying why)."""

    available: bool
    reason: str | None
    package: str | None
    pos_threshold: float
    background_threshold: float
    max_dets: int
    AP50: float | None
    classes_averaged: int | None
    classes_without_truth: int | None
    AP50_classes_with_truth: float | None
    dAP: dict[str, float | None]  # by MAIN
    special_dAP: dict[str, float | None]  # by SPECIAL
    counts: dict[str, int | None]  # by MAIN


class ErrorsPerImage(TypedDict, total=False):
    """TIDE's error counts per image (``{image_id: {type: n}}``), or why there are none."""

    available: bool
    reason: str  # when not available
    per_image: dict[int, dict[str, int]]


# one detection as TIDE takes it: image id, category, score, box [x, y, w, h] or None, COCO RLE or None
Detection = tuple[int, int, float, Any, Any]


def box_detections(blocks: Any) -> Callable[[], Iterable[Detection]]:
    """The detections of ``blocks()`` ((image_id, (n, 6) array of category, score, x, y, w, h) per
    image) as TIDE's box mode takes them."""

    def rows() -> Iterator[Detection]:
        for image_id, block in blocks():
            for cat, score, x, y, w, h in block.tolist():
                yield image_id, int(cat), score, [x, y, w, h], None

    return rows


def mask_detections(results: list[dict[str, Any]]) -> Callable[[], Iterable[Detection]]:
    """COCO ``segm`` results (``segmentation`` a compressed RLE) as TIDE's mask mode takes them."""
    return lambda: ((r["image_id"], r["category_id"], r["score"], None, r["segmentation"]) for r in results)


def _evaluate(gt: dict[str, Any], detections: Callable[[], Iterable[Detection]], image_ids: list[int],
              mode: str = "box") -> Any:  # fmt: skip
    """(tidecv module, TIDE, its run) on these images, or a dict saying why there is none. ``mode``:
    ``box``, or ``mask`` (each annotation's ``segmentation`` made an RLE as tidecv's COCO loader
    makes it, a crowd region an ignore region of its mask)."""
    try:
        import tidecv
        from tidecv import TIDE
        from tidecv.data import Data
        from tidecv.functions import toRLE
    except ImportError as exc:
        return {"available": False, "reason": f"tidecv is not installed ({exc}); {INSTALL_HINT}"}
    chosen = set(image_ids)
    truth, preds = Data("ground truth", max_dets=MAX_DETS), Data("detections", max_dets=MAX_DETS)
    for category in gt["categories"]:
        truth.add_class(category["id"], category["name"])
    sizes = {}
    for image in gt["images"]:
        if image["id"] in chosen:
            truth.add_image(image["id"], image.get("file_name"))
            sizes[image["id"]] = (image.get("width"), image.get("height"))
    for ann in gt["annotations"]:
        if ann["image_id"] not in chosen:
            continue
        mask = toRLE(ann["segmentation"], *sizes[ann["image_id"]]) if mode == "mask" else None
        add = truth.add_ignore_region if ann.get("iscrowd") else truth.add_ground_truth
        add(ann["image_id"], ann["category_id"], list(ann["bbox"]), mask)
    for image_id, cat, score, box, mask in detections():
        if image_id in chosen:
            preds.add_detection(image_id, cat, score, box, mask)
    import matplotlib  # a dependency of tidecv

    # TIDE() styles matplotlib globally for its own plots (seaborn whitegrid, dpi 150): restored on
    # exit, or every later figure of the process (a sweep's report, say) would change with it
    with matplotlib.rc_context():
        tide = TIDE(pos_threshold=POS_THRESHOLD, background_threshold=BACKGROUND_THRESHOLD,
                    mode=TIDE.MASK if mode == "mask" else TIDE.BOX)  # fmt: skip
    try:
        return tidecv, tide, tide.evaluate(truth, preds, name="run")
    except FAILURES as exc:
        return {"available": False, "reason": f"tidecv failed on these detections: {exc!r}"}


FAILURES = (ArithmeticError, ValueError, IndexError, KeyError, RuntimeError)


def tide_breakdown(gt: dict[str, Any], blocks: Any, image_ids: list[int]) -> TideBreakdown:
    """dAP per error type (AP fractions, 0..1 like every AP of a run) and counts, or
    ``{"available": False, "reason": ...}``. ``blocks()``: (image_id, (n, 6) array of category,
    score, x, y, w, h) per image."""
    return breakdown(gt, box_detections(blocks), image_ids, "box")


def breakdown(
    gt: dict[str, Any], detections: Callable[[], Iterable[Detection]], image_ids: list[int], mode: str
) -> TideBreakdown:
    """:func:`tide_breakdown` of ``detections()`` in TIDE's ``mode`` (``box`` or ``mask``: a seg
    model's masks against the annotations' outlines, the same error types by mask IoU)."""
    evaluated = _evaluate(gt, detections, image_ids, mode)
    if isinstance(evaluated, dict):
        return absent(evaluated["reason"])
    tidecv, tide, run = evaluated
    try:
        main, special = tide.get_main_errors()["run"], tide.get_special_errors()["run"]
        counts = {error.short_name: n for error, n in run.count_errors().items()}
        classes = [obj for obj in run.ap_data.objs.values() if not obj.is_empty()]
        with_truth = [obj.get_ap() for obj in classes if obj.num_gt_positives > 0]
    except FAILURES as exc:
        return absent(f"tidecv failed on these detections: {exc!r}")
    return {
        "available": True,
        "reason": None,
        "package": f"tidecv {getattr(tidecv, '__version__', None) or _version()}",
        "pos_threshold": POS_THRESHOLD,
        "background_threshold": BACKGROUND_THRESHOLD,
        "max_dets": MAX_DETS,
        "AP50": run.ap / 100,
        "classes_averaged": len(classes),
        "classes_without_truth": len(classes) - len(with_truth),  # detected, absent: AP 0 in AP50
        "AP50_classes_with_truth": sum(with_truth) / len(with_truth) / 100 if with_truth else None,
        "dAP": {name: main[name] / 100 for name in MAIN},
        "special_dAP": {name: special[name] / 100 for name in SPECIAL},
        "counts": {name: counts.get(name, 0) for name in MAIN},
    }


def tide_in_background(
    gt: dict[str, Any], blocks: Any, image_ids: list[int], masks: list[dict[str, Any]] | None = None
) -> BackgroundTide:
    """Start :func:`tide_breakdown` in a child process and return what waits for it (called: the
    boxes' breakdown; ``.masks()``: the breakdown of ``masks``, COCO ``segm`` results, when given,
    made after the boxes' in the same child).

    tidecv is pure Python and single-threaded, as is pycocotools' scoring: run one beside the
    other and the breakdown costs the time its child takes to start, not its whole pass (on the
    cores the invoke loop has just left idle). Spawned, not forked: a fresh interpreter inherits none
    of the runtime's threads. A worker that dies is recorded as TIDE's absence, with why."""
    return BackgroundTide(gt, blocks, image_ids, masks)


class BackgroundTide:
    """TIDE's breakdowns computed in one child process (see :func:`tide_in_background`)."""

    def __init__(
        self, gt: dict[str, Any], blocks: Any, image_ids: list[int], masks: list[dict[str, Any]] | None
    ) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        from evalharness.core.interrupts import adopt, ignore_interrupts

        chosen = set(image_ids)
        data = [(image_id, rows) for image_id, rows in blocks() if image_id in chosen]
        context = multiprocessing.get_context("spawn")
        self.pool = ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=ignore_interrupts)
        self.futures = {"box": self.pool.submit(_breakdown_of, gt, data, list(image_ids))}
        if masks is not None:
            self.futures["mask"] = self.pool.submit(_mask_breakdown_of, gt, masks, list(image_ids))
        self.workers = [p.pid for p in context.active_children() if p.pid is not None]  # started: pid set
        for pid in self.workers:  # ended with the run on a signal (core/interrupts.py)
            adopt(pid)

    def __call__(self) -> TideBreakdown:
        return self._wait("box")

    def masks(self) -> TideBreakdown | None:
        return self._wait("mask") if "mask" in self.futures else None

    def _wait(self, mode: str) -> TideBreakdown:
        from evalharness.core.interrupts import forget

        try:
            return self.futures[mode].result()
        except Exception as exc:  # noqa: BLE001 - the child's failure is the record's reason
            return absent(f"TIDE's worker process failed: {exc!r}")
        finally:
            if all(f.done() for f in self.futures.values()):
                self.pool.shutdown(wait=True)
                for pid in self.workers:
                    forget(pid)


def _breakdown_of(gt: dict[str, Any], data: list[Any], image_ids: list[int]) -> TideBreakdown:
    return tide_breakdown(gt, lambda: iter(data), image_ids)


def _mask_breakdown_of(
    gt: dict[str, Any], masks: list[dict[str, Any]], image_ids: list[int]
) -> TideBreakdown:
    return breakdown(gt, mask_detections(masks), image_ids, "mask")


def absent(reason: str) -> TideBreakdown:
    """The record of a run without TIDE: the same keys as with it (a run's keys are fixed by its
    schema version), every figure None, and why."""
    return {
        "available": False,
        "reason": reason,
        "package": None,
        "pos_threshold": POS_THRESHOLD,
        "background_threshold": BACKGROUND_THRESHOLD,
        "max_dets": MAX_DETS,
        "AP50": None,
        "classes_averaged": None,
        "classes_without_truth": None,
        "AP50_classes_with_truth": None,
        "dAP": dict.fromkeys(MAIN),
        "special_dAP": dict.fromkeys(SPECIAL),
        "counts": dict.fromkeys(MAIN),
    }


def errors_per_image(
    gt: dict[str, Any], detections: Callable[[], Iterable[Detection]], image_ids: list[int], mode: str = "box"
) -> ErrorsPerImage:
    """TIDE's error type counts per image ({image_id: {type: n}}), or ``{"available": False, ...}``,
    of ``detections()`` (:func:`box_detections`, or :func:`mask_detections` with ``mode`` ``mask``).
    TIDE types every error within its own image, so a subset of images gets the same labels as the
    whole set (only the dAP figures need every image)."""
    evaluated = _evaluate(gt, detections, image_ids, mode)
    if isinstance(evaluated, dict):
        return {"available": False, "reason": evaluated["reason"]}
    counts: dict[int, Any] = {image_id: dict.fromkeys(MAIN, 0) for image_id in image_ids}
    for error in evaluated[2].errors:
        owner = getattr(error, "pred", None) or error.gt
        counts[owner["image"]][error.short_name] += 1
    return {"available": True, "per_image": counts}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tidecv")
    except PackageNotFoundError:
        return "unknown version"


def tide_delta(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Per error type: A's and B's dAP and B − A (rows for every type; None where a side has none)."""
    rows = []
    for name in (*MAIN, *SPECIAL):
        key = "dAP" if name in MAIN else "special_dAP"
        va = (a or {}).get(key, {}).get(name) if (a or {}).get("available") else None
        vb = (b or {}).get(key, {}).get(name) if (b or {}).get("available") else None
        rows.append(
            {
                "type": name,
                "name": NAMES[name],
                "a": va,
                "b": vb,
                "delta": None if va is None or vb is None else vb - va,
            }
        )
    return rows


def tide_line(tide: dict[str, Any] | None, of: str = "") -> str:
    """One results.txt line: the dAP of each type in AP points, or why there is none (``of``:
    ``masks`` names a seg model's mask breakdown)."""
    name = f"TIDE ({of})" if of else "TIDE"
    if not tide:
        return f"{name}: not recorded (run made before the error analysis)"
    if not tide.get("available"):
        return f"{name}: not computed: {tide['reason']}"
    main = " ".join(f"{n} {100 * tide['dAP'][n]:.2f}" for n in MAIN)
    special = " ".join(f"{n} {100 * tide['special_dAP'][n]:.2f}" for n in SPECIAL)
    return (
        f"{name} dAP in AP50 points ({tide['package']}, IoU pos {tide['pos_threshold']:g} / background "
        f"{tide['background_threshold']:g}; its own AP50 {100 * tide['AP50']:.2f}): {main}; {special}"
    )
