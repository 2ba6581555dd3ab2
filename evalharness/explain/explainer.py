"""Explain the changed answers of two runs: trace both paths, bisect, name the op.

The changed images come from the task's own paired comparison (``changed_samples``, the rows
``report diff`` lists); as many unchanged images (the first ones in dataset order) are controls, so
an op's error on the changed images can be read against its error where nothing changed. Both
sides are re-run from their run directories; a changed image whose change the re-run does not
reproduce is reported and left out of the bisection (a delegate that is not deterministic, or a
run made with other settings).
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from evalharness.core.bars import progress
from evalharness.explain.answers import Answers
from evalharness.explain.bisect import Bisection, saturated_ties
from evalharness.explain.rollup import first_nonfinite, op_types
from evalharness.explain.sides import ExplainError, Side, check_pair, input_tensors, open_side
from evalharness.explain.trace import (
    Dequantizer,
    full_trace,
    kernel_swap,
    local_outputs,
    op_errors,
    translate,
)
from evalharness.report.runs import definition_of
from evalharness.rundir.reader import Run
from evalharness.tasks.definition import comparer, view_of

DEFAULT_CONTROLS = 5  # unchanged images traced when no answer changed (the error curve only)
COMPARE_OPTIONS = {"alpha": 0.05, "iou": 0.5, "min_score": 0.0}


def pick_images(
    a: Run, b: Run, max_changed: int, controls: int | None
) -> tuple[list[str], list[str], int, dict[str, str]]:
    """(changed ids, control ids, changed in all, the task's caption of each changed image): up to
    ``max_changed`` changed images and as many unchanged ones (``controls`` of them when given, e.g.
    when nothing changed). The captions say what changed in the runs (for a detector: boxes lost and
    new, and the TIDE error types of B minus A)."""
    definition = definition_of(a)
    key = definition.abilities.sample_key
    if not key or not definition.abilities.writes_predictions:
        raise ExplainError(
            f"task {a.task!r} records no per-image answers; explain needs per-image predictions"
        )
    paired = comparer(definition)
    comparison = (paired.compare(a, b, COMPARE_OPTIONS) if paired else None) or {}
    captions = dict(view_of(definition).changed_samples(comparison))
    every = list(captions)
    changed = every[:max_changed]
    wanted = controls if controls is not None else (len(changed) or DEFAULT_CONTROLS)
    in_b = {r.get("id") for r in b.predictions}  # the paired comparisons' key: the file under the root
    unchanged = [r["id"] for r in a.predictions if r.get("id") in in_b and r["id"] not in set(changed)]
    return changed, unchanged[:wanted], len(every), captions


# explain's progress (core/bars.py): each step named while it runs; the bisection's per-op trials
# have a bar of their own (bisect.py)
STEPS = ("A's every tensor", "B's every tensor", "each op's local error", "bisection", "report")


def _step(bar: Any) -> None:
    bar.update(1)
    if bar.n < len(STEPS):
        bar.set_postfix_str(STEPS[int(bar.n)])


def explain(
    a: Run, b: Run, max_changed: int = 10, controls: int | None = None, bundle: str | None = None
) -> dict[str, Any]:
    """The explanation document (explain.json) of B's answers against A's; ``bundle``: also write
    the repro bundle there (:mod:`evalharness.explain.bundle`)."""
    started = time.perf_counter()
    changed, control, total, captions = pick_images(a, b, max_changed, controls)
    ids = changed + control
    with (
        tempfile.TemporaryDirectory(prefix="evalharness-explain-") as work,
        progress(len(STEPS), "explain", "step") as bar,
    ):
        bar.set_postfix_str(STEPS[0])
        side_a, side_b = open_side(a, "A", work), open_side(b, "B", work)
        tensor_map = check_pair(a, b, side_a.graph, side_b.graph)
        deq_a, deq_b = Dequantizer(), Dequantizer()
        a_acts = full_trace(side_a, input_tensors(a, ids), deq_a)
        _step(bar)
        b_acts = full_trace(side_b, input_tensors(b, ids), deq_b)
        _step(bar)
        a_fed = translate(a_acts, tensor_map, deq_a, deq_b)
        answers_a, answers_b = (
            Answers(side_a, deq_a, COMPARE_OPTIONS),
            Answers(side_b, deq_b, COMPARE_OPTIONS),
        )
        a_answers = [answers_a.of(v) for v in a_acts]
        b_answers = [answers_b.of(v) for v in b_acts]
        same = [answers_b.same(x, y) for x, y in zip(a_answers, b_answers, strict=True)]
        reproduced = [i for i in range(len(changed)) if not same[i]]
        groups = {"changed": reproduced, "controls": list(range(len(changed), len(ids)))}
        rows = op_errors(
            side_a.graph,
            tensor_map,
            a_acts,
            b_acts,
            local_outputs(side_b, a_fed, deq_b),
            groups,
            deq_a,
            deq_b,
        )
        _step(bar)
        swap = kernel_swap(side_a, tensor_map, deq_a, deq_b)
        bisect = _bisect(side_b, answers_b, a_fed, b_acts, reproduced, a_answers, ids, rows, swap)
        _step(bar)
        nonfinite = first_nonfinite(side_a.graph, tensor_map, a_acts, b_acts, ids, rows)
        made = None
        if bundle is not None:
            from types import SimpleNamespace

            from evalharness.explain.bundle import write_bundle

            ctx = SimpleNamespace(
                side_a=side_a, side_b=side_b, a_acts=a_acts, a_fed=a_fed, a_answers=a_answers,
                b_answers=b_answers, answers_a=answers_a, answers_b=answers_b, reproduced=reproduced, ids=ids,
            )  # fmt: skip
            first = ((bisect or {}).get("culprits") or [{}])[0].get("op")
            made = write_bundle(bundle, ctx, first)
        compilations = side_a.compilations + side_b.compilations
        decoded = [answers_b.compare(x, y) for x, y in zip(a_answers, b_answers, strict=True)]
    label = "top1" if answers_b.kind == "classifier" else "boxes"
    restored_split = set((bisect or {}).get("restored_at_split") or [])
    top_culprit = ((bisect or {}).get("culprits") or [{}])[0]
    images = [
        {
            "id": ids[i],
            "group": "changed" if i < len(changed) else "control",
            "change": captions.get(ids[i]),
            f"a_{label}": answers_a.label(a_answers[i]),
            f"b_{label}": answers_b.label(b_answers[i]),
            "reproduced": not same[i] if i < len(changed) else same[i],
            "decoded": _decoded_row(decoded[i], ids[i], i in reproduced, restored_split, top_culprit),
        }
        for i in range(len(ids))
    ]
    return {
        "kind": "evalharness explain",
        "runs": {side.label: _run_identity(side) for side in (side_a, side_b)},
        "answer": {
            "kind": answers_b.kind,
            "min_score": COMPARE_OPTIONS["min_score"],
            "iou": COMPARE_OPTIONS["iou"],
        },
        "images": images,
        "changed_total": total,
        "graph": side_a.graph.name,
        "ops": rows,
        "op_types": op_types(rows, (bisect or {}).get("culprits") or []),
        "first_nonfinite": nonfinite,
        "bisection": bisect,
        "bundle": made,
        "compilations": compilations,
        "seconds": round(time.perf_counter() - started, 2),
    }


def _decoded_row(
    d: dict[str, Any], image: str, changed: bool, restored_split: set[Any], top_culprit: dict[str, Any]
) -> dict[str, Any]:
    """B's decoded answer against A's (classifier: scores in real units; detector: matched boxes)
    and, for a reproduced change, whether the split point and the culprit op (each taken from A)
    give A's answer back."""
    if "ref_top1" in d:
        row = {
            "a_score": d["ref_score"],
            "b_score": d["test_top1_score"],
            "b_score_of_a_top1": d["test_score"],
            "top5_overlap": d["topk_overlap"],
        }
    else:
        row = {
            "matched": d["matched"],
            "lost": d["lost"],
            "new": d["new"],
            "min_iou": min(d["ious"], default=None),
            "mean_iou": sum(d["ious"]) / len(d["ious"]) if d["ious"] else None,
            "class_agreement": d["same_class"] / d["matched"] if d["matched"] else None,
            "max_abs_score_change": max((abs(v) for v in d["score_changes"]), default=None),
        }
    if changed:
        row["restored_at_split"] = image in restored_split
        row["restored_by_culprit"] = image in (top_culprit.get("restores") or [])
    return row


def _run_identity(side: Side) -> dict[str, Any]:
    run = side.run
    return {
        "dir": run.dir,
        "model": run.provenance.model.path,
        "sha256": run.provenance.model.sha256,
        "delegate": run.provenance.delegate.name,
        "op_resolver": side.plan.op_resolver,
        "runtime": side.runtime,
    }


def _bisect(
    side_b: Side,
    answers_b: Answers,
    a_acts: list[dict[int, np.ndarray]],
    b_acts: list[dict[int, np.ndarray]],
    reproduced: list[int],
    a_answers: list[Any],
    ids: list[str],
    rows: list[dict[str, Any]],
    swap: Callable[[int, list[dict[int, np.ndarray]]], list[dict[int, np.ndarray]]] | None,
) -> dict[str, Any] | None:
    if not reproduced:
        return None
    search = Bisection(side_b, answers_b, a_acts, b_acts, reproduced, a_answers, swap)
    k, restored = search.split_point()
    upto = len(rows) - 1 if k is None else k
    found = search.culprits(upto)

    def snr(j: int) -> float:  # ties: the op with the lowest local SNR on the changed images first
        value = rows[j]["changed"]["local"]["snr_db"]
        return -(math.inf if value is None else value)  # -inf (NaN outputs) ranks first

    found.sort(key=lambda item: (len(item[1]), snr(item[0])), reverse=True)
    ranked = search.rounds(upto, snr)
    explained = {i for c in ranked for i in c["restores"]}
    return {
        "changed": len(reproduced),
        "split_op": k,
        "restored_at_split": [ids[i] for i in restored],
        "trials": {str(t): n for t, n in sorted(search.trials.items())},
        "culprits": [
            {
                "op": c["op"],
                "round": n + 1,
                "restores": [ids[i] for i in c["restores"]],
                "restored_total": c["restored_total"],
                "restores_alone": [ids[i] for i in dict(found).get(c["op"], [])],
            }
            for n, c in enumerate(ranked)
        ],
        "alone": [{"op": j, "restores": [ids[i] for i in imgs]} for j, imgs in found],
        "unexplained": [ids[i] for i in reproduced if i not in explained],
        "output_saturated": [ids[i] for i in saturated_ties(side_b, b_acts, reproduced)]
        if answers_b.kind == "classifier"
        else [],
    }
