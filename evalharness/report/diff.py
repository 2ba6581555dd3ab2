"""Everything ``report diff`` knows about two runs, as one JSON-able dict.

The renderers (terminal, Markdown, HTML, JSON) and the gate all read this dict, so a number shown in
a table is the number a ``--fail-if`` rule tests. Rows named here (``top1``, ``AP50``,
``latency_p50``, ``size_bytes``, ``coverage``, ...) are the metric names of the gate grammar.
"""

from __future__ import annotations

from evalharness.metrics.coco import COCO_STAT_NAMES
from evalharness.report.boxes import detection_diff, per_class_deltas
from evalharness.report.numbers import delta, ratio, relative_pct
from evalharness.report.paired import classification_diff, verdict
from evalharness.report.runs import Comparability, Run, flatten

LATENCY_STATS = ("mean", "p50", "p90", "p99", "min", "max")
TFLITE_AP = "tflite_AP"


def metric_values(run: Run) -> dict[str, float]:
    """Headline metrics in display order: top1..topK, the 12 COCO stats (+ TFLite-tool AP), or, for
    other tasks (benchmark, inference_diff), every numeric leaf of ``metrics`` by dotted name."""
    m = run.metrics
    if run.task == "coco":
        values = {name: m.get(name) for name in COCO_STAT_NAMES if name in m}
        if isinstance(m.get("tflite_tool"), dict):
            values[TFLITE_AP] = m["tflite_tool"].get("AP")
        return values
    if run.task == "imagenet":
        tops = sorted((k for k in m if k.startswith("top") and k[3:].isdigit()), key=lambda k: int(k[3:]))
        return {k: m[k] for k in tops}
    return {k: v for k, v in flatten(m).items() if isinstance(v, int | float) and not isinstance(v, bool)}


def latency_values(run: Run) -> dict[str, float]:
    lat = run.doc.get("latency_ms") or {}
    inference = lat.get("inference") or {}
    values = {f"latency_{s}": inference.get(s) for s in LATENCY_STATS}
    values["latency_init"] = lat.get("init")
    values["latency_first_inference"] = lat.get("first_inference")
    return values


def model_values(run: Run) -> dict[str, float]:
    cov = run.prov("delegate.coverage") or {}
    return {
        "size_bytes": run.prov("model.bytes"),
        "coverage": cov.get("fraction"),
        "ops_delegated": cov.get("ops_delegated"),
        "partitions": cov.get("partitions"),
    }


def _rows(va: dict, vb: dict, speedup: bool = False) -> list[dict]:
    rows = []
    for name in [*va, *(k for k in vb if k not in va)]:
        a, b = va.get(name), vb.get(name)
        row = {"name": name, "a": a, "b": b, "delta": delta(a, b), "delta_pct": relative_pct(a, b)}
        if speedup:
            row["speedup"] = ratio(a, b)
        rows.append(row)
    return rows


def run_summary(run: Run) -> dict:
    return {
        "label": run.label,
        "dir": run.dir,
        "status": run.status,
        "task": run.task,
        "model": run.prov("model.name"),
        "model_sha256": run.prov("model.sha256"),
        "delegate": run.prov("delegate.name"),
        "runtime": f"{run.prov('runtime.name')} {run.prov('runtime.version')}",
        "dataset": run.prov("dataset.name"),
        "dataset_root": run.prov("dataset.root"),
        "num_scored": run.metrics.get("num_scored"),
        "ops_on_cpu_by_type": run.prov("delegate.coverage.ops_on_cpu_by_type"),
        "cpu": run.prov("host.cpu"),
    }


def build_diff(
    a: Run, b: Run, comp: Comparability, alpha: float = 0.05, iou: float = 0.5, min_score: float = 0.0
) -> dict:
    """The full comparison of two comparable runs (``comp.refused`` must be empty)."""
    doc = {
        "a": run_summary(a),
        "b": run_summary(b),
        "task": a.task,
        "comparability": comp.as_dict(),
        "metrics": _rows(metric_values(a), metric_values(b)),
        "latency": _rows(latency_values(a), latency_values(b), speedup=True),
        "model": _rows(model_values(a), model_values(b)),
    }
    if a.task == "coco":
        det = detection_diff(a.predictions, b.predictions, iou, min_score)
        det["per_class"] = per_class_deltas(
            a.metrics.get("per_class") or {}, b.metrics.get("per_class") or {}
        )
        doc["detection"] = det
        doc["verdict"] = _detection_verdict(doc)
    elif a.task == "imagenet":
        same_labels = a.prov("labels.sha256") == b.prov("labels.sha256")
        cls = classification_diff(a.predictions, b.predictions, same_labels)
        doc["classification"] = cls
        doc["verdict"] = verdict(cls, alpha)
    else:
        doc["verdict"] = _latency_verdict(doc)
    doc["alpha"] = alpha
    return doc


def _detection_verdict(doc: dict) -> str:
    ap = next((r for r in doc["metrics"] if r["name"] == "AP"), None)
    det = doc["detection"]
    boxes = det["detections"]
    where = (
        f"{det['unmatched']} of {boxes['a'] + boxes['b']} boxes unmatched on {det['images_changed']} images"
    )
    if ap is None or ap["delta"] is None:
        return f"no AP to compare; {where}"
    if ap["delta"] == 0 and det["unmatched"] == 0:
        return f"B detects the same boxes as A (AP {ap['a']:.4f}, mean IoU {_iou(det)})"
    return (
        f"B's AP differs from A's by {ap['delta']:+.4f} ({ap['a']:.4f} -> {ap['b']:.4f}); {where}, "
        f"mean IoU of matched boxes {_iou(det)} (no significance test for AP)"
    )


def _latency_verdict(doc: dict) -> str:
    """Tasks without per-image predictions to pair (benchmark, inference_diff): speed is the story."""
    p50 = next(r for r in doc["latency"] if r["name"] == "latency_p50")
    if p50["speedup"] is None:
        return f"no per-image comparison for task {doc['task']}; no latency to compare"
    return (
        f"B's invoke() p50 is {p50['b']:.3f} ms vs A's {p50['a']:.3f} ms (speed-up {p50['speedup']:.3f}); "
        f"no per-image comparison for task {doc['task']}"
    )


def _iou(det: dict) -> str:
    return "n/a" if det["mean_iou"] is None else f"{det['mean_iou']:.4f}"


def quantities(doc: dict) -> tuple[dict[str, dict], dict[str, float]]:
    """(per-run rows by name, pairwise values by name): what ``--fail-if`` rules can name."""
    rows = {r["name"]: r for section in ("metrics", "latency", "model") for r in doc[section]}
    pair = doc.get("classification") or doc.get("detection") or {}
    pairwise = {k: v for k, v in pair.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    pairwise.pop("iou_threshold", None)
    pairwise.pop("min_score", None)
    return rows, pairwise
