"""``report rescore``: recompute a run's metrics from the predictions it stored.

A metrics.json is only as trustworthy as the path from predictions to numbers. Recomputing them from
``predictions.jsonl`` (classification: ``topk`` + ``label_index``) or ``coco_results.json`` + the
annotation file (COCO, through the same ``evaluate_bbox`` / ``tflite_tool_ap``) must give the stored
numbers bit for bit; any difference is listed. ``--top-k`` below the stored K rescores fewer ranks.
"""

from __future__ import annotations

from evalharness.data.manifest import sha256_file
from evalharness.report.runs import ReportError, Run, flatten
from evalharness.report.tables import Section

COCO_RESULTS = "coco_results.json"


def classification_metrics(preds: list[dict], top_k: int | None = None) -> dict:
    """top1..topK and correct counts from each image's ``topk`` indices and ``label_index``."""
    stored = min((len(p["topk"]) for p in preds), default=0)
    k = stored if top_k is None else top_k
    if not 1 <= k <= stored:
        raise ReportError(f"--top-k {k}: the predictions store top-{stored}; give 1..{stored}")
    hits = [0] * k
    for p in preds:
        top = p["topk"][:k]
        if p["label_index"] in top:
            for rank in range(top.index(p["label_index"]), k):
                hits[rank] += 1
    n = len(preds)
    metrics = {f"top{i + 1}": (float(hits[i]) / n if n else 0.0) for i in range(k)}
    metrics["correct"] = {f"top{i + 1}": hits[i] for i in range(k)}
    metrics["num_scored"] = n
    return metrics


def coco_metrics(run: Run, backend: str | None = None) -> dict:
    """The 12 stats, per-class AP and (when the run had it) TFLite-tool AP from coco_results.json."""
    image_ids = [p["image_id"] for p in run.predictions]
    return score_detections(
        run, run.artifact(COCO_RESULTS), image_ids, backend or run.metrics.get("backend", "pycocotools")
    )


def score_detections(run: Run, results: list[dict], image_ids: list[int], backend: str) -> dict:
    """Score COCO ``results`` on ``image_ids`` against the annotation file ``run`` recorded (checked
    unchanged by its sha256); TFLite-tool AP too when ``run`` reported it."""
    from evalharness.metrics import evaluate_bbox, load_annotations, tflite_tool_ap

    path = run.prov("dataset.ground_truth")
    if not path:
        raise ReportError(
            f"run {run.label}: provenance.dataset.ground_truth is empty; no annotations to score"
        )
    annotations = load_annotations(path)
    recorded = run.prov("dataset.ground_truth_sha256")
    if recorded and sha256_file(path) != recorded:
        raise ReportError(f"run {run.label}: {path} changed since the run (sha256 differs from provenance)")
    scored = evaluate_bbox(annotations, results, backend, image_ids)
    metrics = {
        **scored["stats"],
        "per_class": scored["per_class"],
        "summary": scored["summary"],
        "num_detections": scored["num_detections"],
        "num_scored": len(image_ids),
    }
    if "tflite_tool" in run.metrics:
        metrics["tflite_tool"] = tflite_tool_ap(annotations, results, image_ids=image_ids)
    return metrics


def rescore(run: Run, top_k: int | None = None, backend: str | None = None) -> dict:
    """Stored vs recomputed value of every recomputed field; ``reproduced`` when all are equal."""
    if run.status == "failed" or not run.metrics:
        raise ReportError(f"run {run.label} has no metrics to reproduce (status {run.status})")
    if run.task == "coco":
        recomputed = coco_metrics(run, backend)
    elif run.task == "imagenet":
        recomputed = classification_metrics(run.predictions, top_k)
    else:
        raise ReportError(
            f"run {run.label} is a {run.task} run; rescore recomputes imagenet and coco metrics"
        )
    stored, fresh = flatten(run.metrics), flatten(recomputed)
    rows = [
        {"name": k, "stored": stored.get(k), "recomputed": v, "equal": stored.get(k) == v}
        for k, v in fresh.items()
    ]
    return {
        "run": run.dir,
        "task": run.task,
        "compared": len(rows),
        "mismatches": [r for r in rows if not r["equal"]],
        "headline": [r for r in rows if "." not in r["name"] and not isinstance(r["recomputed"], list)],
        "reproduced": all(r["equal"] for r in rows),
    }


def sections(doc: dict) -> list[Section]:
    def cells(rows: list[dict]) -> list[list[str]]:
        return [
            [r["name"], repr(r["stored"]), repr(r["recomputed"]), "yes" if r["equal"] else "NO"] for r in rows
        ]

    headers = ["metric", "stored", "recomputed", "equal"]
    verdict = (
        f"reproduced: all {doc['compared']} recomputed values equal the stored ones"
        if doc["reproduced"]
        else f"NOT reproduced: {len(doc['mismatches'])} of {doc['compared']} values differ"
    )
    out = [Section("Headline metrics", headers, cells(doc["headline"]), key="headline")]
    if doc["mismatches"]:
        out.append(Section("Differences", headers, cells(doc["mismatches"]), key="mismatches"))
    out.append(Section("Verdict", notes=[verdict], key="verdict"))
    return out
