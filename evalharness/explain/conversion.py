"""Explain across a conversion: a source model's run (ONNX, ``.pt2``) against its ``.tflite``'s run.

``explain`` between two ``.tflite`` runs traces one graph on two paths. A conversion changes the
graph itself, so here each ``.tflite`` op's output is mapped to the ONNX tensor it stands for
(:mod:`evalharness.explain.conversion_map`: by name, then by position within a kind; how many ops
were mapped is said), both graphs are run on the same images (the changed ones of the task's paired
comparison, and as many unchanged controls) with each run's own recorded preprocessing, and every
mapped pair is compared in real values (an NCHW source tensor transposed to the ``.tflite``'s NHWC):
SNR, max |diff|. The first mapped op whose SNR falls below :data:`DIVERGED_DB` is where the
conversion diverges; the op whose SNR drops most is where the error enters. A ``.pt2`` keeps no
tensor names a ``.tflite`` shares, so for it (and always, in addition) the outputs are compared image
by image, with each side's top-1.
"""

from __future__ import annotations

import tempfile
from typing import Any

import numpy as np

from evalharness.explain.conversion_map import TargetOp, map_ops
from evalharness.explain.explainer import pick_images
from evalharness.explain.sides import ExplainError, checked_model_path, input_tensors, open_side, run_path
from evalharness.explain.trace import Dequantizer, error_stats, full_trace
from evalharness.report.runs import comparability
from evalharness.rundir.reader import Run
from evalharness.runtime import load_model
from evalharness.runtime.source_formats import source_format

NOT_TRACED = "intermediate tensors of {} are not traced (its names do not survive conversion)"
DIVERGED_DB = 40.0  # float conversions stay far above (about 100 dB); a broken op falls far below


def is_conversion(a: Run, b: Run) -> bool:
    """Whether one of the runs ran a source model (ONNX, ``.pt2``): explain across a conversion."""
    return any(source_format(str(r.provenance.model.path or "")) is not None for r in (a, b))


def explain_conversion(a: Run, b: Run, max_changed: int = 10, controls: int | None = None) -> dict[str, Any]:
    """The explanation document of a source run against its ``.tflite`` run (either order)."""
    formats = [source_format(str(r.provenance.model.path or "")) for r in (a, b)]
    if (formats[0] is None) == (formats[1] is None):
        raise ExplainError(
            "explain across a conversion needs one source model (ONNX, .pt2) run and one .tflite run; "
            "two source runs: compare them with report diff"
        )
    c = comparability(a, b)
    if c.refused:
        raise ExplainError("runs are not comparable: " + "; ".join(c.refused))
    source, target = (a, b) if formats[0] else (b, a)
    fmt = formats[0] or formats[1]
    assert fmt is not None
    changed, control, total, captions = pick_images(a, b, max_changed, controls)
    ids = changed + control
    with tempfile.TemporaryDirectory(prefix="evalharness-explain-") as work:
        side = open_side(target, "tflite", work)
        deq = Dequantizer()
        acts = full_trace(side, input_tensors(target, ids), deq)
        feeds = input_tensors(source, ids)
        plan, runtime, runner = run_path(source)
        model = load_model(checked_model_path(source), plan, runtime, runner)
        outputs = []
        for x in feeds:
            model.set_inputs([x])
            model.invoke()
            outputs.append(model.get_outputs())
    graph = side.graph
    targets = [TargetOp(op.index, op.type, graph.tensor_name(op.outputs[0]), graph.fused_activation(op.index))
               for op in graph.ops]  # fmt: skip
    if fmt.name == "ONNX":
        from evalharness.runtime.onnx_trace import onnx_nodes, onnx_trace

        nodes = onnx_nodes(str(source.provenance.model.path))
        mapped, unmapped = map_ops(targets, nodes)
        traced = onnx_trace(str(source.provenance.model.path), feeds, [str(m["tensor"]) for m in mapped])
        source_ops = len(nodes)
    else:
        mapped, unmapped, traced, source_ops = [], [], [], None
    groups = {"changed": list(range(len(changed))), "controls": list(range(len(changed), len(ids)))}
    rows = _rows(graph, mapped, unmapped, acts, traced, groups, deq)
    return {
        "kind": "conversion",
        "source": {
            "run": source.label,
            "dir": source.dir,
            "path": source.provenance.model.path,
            "format": fmt.name,
        },
        "target": {"run": target.label, "dir": target.dir, "path": target.provenance.model.path},
        "images": {"changed": changed, "controls": control, "changed_in_all": total},
        "mapping": {
            "tflite_ops": len(graph.ops),
            "source_ops": source_ops,
            "mapped": len(rows),
            "by_name": sum(r["how"] == "name" for r in rows),
            "by_position": sum(r["how"] == "position" for r in rows),
            "unmapped": unmapped,
            "not_traced": None if source_ops is not None else NOT_TRACED.format(fmt.noun),
        },
        "ops": rows,
        "diverges_at": _diverges(rows, groups),
        "enters_at": _largest_drop(rows, groups),
        "outputs": _outputs(ids, captions, changed, acts, outputs, graph.outputs, deq),
    }


def _aligned(value: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    """A source tensor in the ``.tflite``'s shape: as is, or NCHW transposed to NHWC; None: neither."""
    if value.shape == shape:
        return value
    if value.ndim == 4 and (value.shape[0], value.shape[2], value.shape[3], value.shape[1]) == shape:
        return np.transpose(value, (0, 2, 3, 1))
    return None


def _rows(
    graph: Any, mapped: Any, unmapped: Any, acts: Any, traced: Any, groups: Any, deq: Any
) -> list[dict[str, Any]]:
    """One row per mapped op with the errors of the ``.tflite`` tensor against the source's, per group;
    a pair whose shapes do not align moves to ``unmapped`` with the reason."""
    rows = []
    for m in mapped:
        op = graph.ops[int(m["op"])]
        t = op.outputs[0]
        shape = tuple(acts[0][t].shape)
        ref = [_aligned(traced[i][str(m["tensor"])], shape) for i in range(len(acts))]
        if any(r is None for r in ref):
            got = traced[0][str(m["tensor"])].shape
            unmapped.append({"op": op.index, "type": op.type, "why": f"shape {list(got)} vs {list(shape)}"})
            continue
        row = {
            "op": op.index,
            "type": op.type,
            "node": m["node"],
            "how": m["how"],
            "tensor": graph.tensor_name(t),
        }
        for group, images in groups.items():
            row[group] = error_stats([(ref[i].astype(np.float64), deq(t, acts[i][t])) for i in images])
        rows.append(row)
    unmapped.sort(key=lambda u: u["op"])
    return rows


def _group(groups: dict[str, list[int]]) -> str:
    return "changed" if groups["changed"] else "controls"


def _diverges(rows: list[dict[str, Any]], groups: dict[str, list[int]]) -> dict[str, Any] | None:
    g = _group(groups)
    return next(({**_brief(r, g)} for r in rows if (r[g]["snr_db"] or 0) < DIVERGED_DB), None)


def _largest_drop(rows: list[dict[str, Any]], groups: dict[str, list[int]]) -> dict[str, Any] | None:
    g, best, previous = _group(groups), None, None
    for r in rows:
        snr = min(r[g]["snr_db"] if r[g]["snr_db"] is not None else np.inf, 200.0)  # ∞: equal, capped
        if previous is not None and (best is None or previous - snr > best[0]):
            best = (previous - snr, r)
        previous = snr
    return None if best is None else {**_brief(best[1], g), "drop_db": best[0]}


def _brief(row: dict[str, Any], group: str) -> dict[str, Any]:
    return {"op": row["op"], "type": row["type"], "node": row["node"], "group": group,
            "snr_db": row[group]["snr_db"], "max_abs": row[group]["max_abs"]}  # fmt: skip


def _outputs(
    ids: Any, captions: Any, changed: Any, acts: Any, outputs: Any, graph_outputs: Any, deq: Any
) -> list[dict[str, Any]]:
    """Per image: the first output of both sides compared (SNR, max |diff|) and each side's top-1."""
    rows = []
    for i, sid in enumerate(ids):
        t = graph_outputs[0]
        ours = deq(t, acts[i][t])
        theirs = _aligned(np.asarray(outputs[i][0]), tuple(ours.shape))
        stats = error_stats([(theirs.astype(np.float64), ours)] if theirs is not None else [])
        rows.append({
            "id": sid, "group": "changed" if sid in changed else "control", "caption": captions.get(sid, ""),
            "snr_db": stats.get("snr_db"), "max_abs": stats.get("max_abs"),
            "source_top1": int(np.argmax(theirs)) if theirs is not None else None,
            "tflite_top1": int(np.argmax(ours)),
        })  # fmt: skip
    return rows
