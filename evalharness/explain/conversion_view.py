"""How an explanation across a conversion reads (explain.txt): the op map and how many ops it
mapped, where the conversion diverges, the ops whose error grew most, the outputs image by image."""

from __future__ import annotations

import math
from typing import Any

from evalharness.core.numbers import fmt
from evalharness.core.tables import Section
from evalharness.explain.conversion import DIVERGED_DB

SHOWN = 12  # ops in the table (explain.json has every mapped op)
NAME = 48  # the tail of a tensor name shown (converters' names run to hundreds of characters)


def _snr(value: float | None) -> str:
    return (
        "∞ (equal)"
        if value is not None and math.isinf(value) and value > 0
        else fmt(value, ".1f", missing="—")
    )


def _where(found: dict[str, Any] | None, what: str) -> str:
    if found is None:
        return f"{what}: none"
    extra = f", {found['drop_db']:.1f} dB below the op before it" if "drop_db" in found else ""
    diff = fmt(found["max_abs"], ".3g", missing="—")
    return (
        f"{what}: op {found['op']} {found['type']} (ONNX {found['node']}): SNR {_snr(found['snr_db'])} dB, "
        f"max |diff| {diff} on the {found['group']} images{extra}"
    )


def conversion_sections(doc: dict[str, Any]) -> list[Section]:
    m, images = doc["mapping"], doc["images"]
    source_ops = f"{m['source_ops']} {doc['source']['format']} nodes" if m["source_ops"] else "not traced"
    notes = [
        f"mapped {m['mapped']}/{m['tflite_ops']} .tflite ops to {doc['source']['format']} tensors "
        f"({m['by_name']} by name, {m['by_position']} by position; source graph: {source_ops})",
        *(f"op {u['op']} {u['type']}: not mapped ({u['why']})" for u in m["unmapped"][:5]),
        *([f"... {len(m['unmapped']) - 5} more in explain.json"] if len(m["unmapped"]) > 5 else []),
    ]
    group = "changed" if images["changed"] else "controls"
    ops, diverged = doc["ops"], doc["diverges_at"]
    if diverged is not None:  # the ops from just before the divergence on, in graph order
        notes += [_where(diverged, f"diverges (first op below {DIVERGED_DB:.0f} dB)"),
                  _where(doc["enters_at"], "error enters most at")]  # fmt: skip
        start = max(0, next(i for i, r in enumerate(ops) if r["op"] == diverged["op"]) - 2)
        ops, shown = ops[start : start + SHOWN], "from the divergence on"
    elif m.get("not_traced"):
        notes.append(f"{m['not_traced']}: compared at the outputs only (below)")
        shown = "none traced"
    else:  # nothing diverged: the SHOWN ops with the lowest SNR, in graph order
        worst = sorted(ops, key=lambda r: r[group]["snr_db"] if r[group]["snr_db"] is not None else math.inf)
        lowest = f" (lowest: op {worst[0]['op']}, {_snr(worst[0][group]['snr_db'])} dB)" if worst else ""
        notes.append(f"diverges: no mapped op falls below {DIVERGED_DB:.0f} dB on the {group} images{lowest}")
        keep = {r["op"] for r in worst[:SHOWN]}
        ops, shown = [r for r in ops if r["op"] in keep], "of lowest SNR"
    rows = [[str(r["op"]), r["type"], r["node"], r["how"], _snr(r["changed"]["snr_db"]),
             _snr(r["controls"]["snr_db"]), fmt(r[group]["max_abs"], ".3g", missing="—"),
             "…" + r["tensor"][-NAME:]] for r in ops]  # fmt: skip
    table = Section(
        f"Conversion {doc['source']['format']} -> .tflite: {len(ops)} of {m['mapped']} mapped ops, {shown}",
        ["op", ".tflite", "source", "mapped by", "SNR changed dB", "SNR controls dB", "max |diff|", "tensor"],
        rows,
        notes,
        key="conversion",
    )
    outputs = [[o["id"], o["group"], _snr(o["snr_db"]), fmt(o["max_abs"], ".3g", missing="—"),
                fmt(o["source_top1"], "d", missing="—"), str(o["tflite_top1"]), o["caption"]]
               for o in doc["outputs"]]  # fmt: skip
    out = Section(
        f"Outputs ({len(images['changed'])} of {images['changed_in_all']} changed images, "
        f"{len(images['controls'])} controls)",
        ["image", "group", "SNR dB", "max |diff|", "source top-1", ".tflite top-1", "what changed"],
        outputs,
        ["the first output, source as reference (real values; NCHW transposed to NHWC)"],
        key="outputs",
    )
    return [table, out]
