"""Model Explorer node data of an explanation: one file per quantity, every node named by its id.

Model Explorer's TFLite adapter makes one graph per subgraph (id: the subgraph's name) and names each
op's node by the op's index in execution order; node data keyed by those ids lands on exactly those
nodes (keys by output tensor name, as ``model_explorer.json`` has them, can be ambiguous when names
repeat or are empty). Each file is Model Explorer's ``ModelNodeData`` (``{graph id: {"results": {node
id: {"value": ...}}, "gradient" | "thresholds": [...]}}``), one value per node, which it loads beside
the model (``model_explorer --node_data_paths``):

- ``local_snr.json``, ``accumulated_snr.json``: SNR of B against A in dB on the changed images
  (controls when none changed; identical tensors capped at +120, NaN outputs at -120);
- ``own_share.json``: the share of the op's accumulated error its own kernel makes (0..1);
- ``flips.json``: the changed answers an op brings back alone (its output taken from A);
- ``culprit_rank.json``: the culprit's round (1 first), 0 for every other op.

A repair writes one more in the same form, ``repair/model_explorer_float_ops.json``
(:mod:`evalharness.report.views.repair_view`): 1 for an op kept in float, 0 for one the variant quantizes.
"""

from __future__ import annotations

import math
import os
from typing import Any

from evalharness.core.atomic_io import atomic_write_text
from evalharness.core.numbers import stable_json
from evalharness.report.views.node_data import node_data

SNR_CAP = 120.0
LOW_IS_BAD: list[dict[str, Any]] = [
    {"stop": 0, "bgColor": "#d62728"},
    {"stop": 0.5, "bgColor": "#fdae61"},
    {"stop": 1, "bgColor": "#f7f7f7"},
]
HIGH_IS_BAD = list(reversed([{"stop": 1 - g["stop"], "bgColor": g["bgColor"]} for g in LOW_IS_BAD]))


def _snr(value: Any) -> float:
    if value is None:
        return SNR_CAP
    if not math.isfinite(value):
        return math.copysign(SNR_CAP, value)
    return round(min(max(float(value), -SNR_CAP), SNR_CAP), 3)


def explanation_data(doc: dict[str, Any], graph: str) -> dict[str, dict[str, Any]]:
    """File name -> node data of an explanation document (explain.json)."""
    ops = doc["ops"]
    changed = any(i["group"] == "changed" and i["reproduced"] for i in doc["images"])
    group = "changed" if changed else "controls"
    b = doc.get("bisection") or {}
    alone = {c["op"]: len(c["restores"]) for c in b.get("alone") or []}
    rank = {c["op"]: c["round"] for c in b.get("culprits") or [] if "round" in c}
    own = {}
    for r in ops:
        split = (r.get(group) or {}).get("split")
        own[r["index"]] = split["own"] if split else 0.0
    return {
        "local_snr.json": node_data(
            graph, {r["index"]: _snr(r[group]["local"]["snr_db"]) for r in ops}, LOW_IS_BAD, "local SNR dB"
        ),
        "accumulated_snr.json": node_data(
            graph,
            {r["index"]: _snr(r[group]["accumulated"]["snr_db"]) for r in ops},
            LOW_IS_BAD,
            "accumulated SNR dB",
        ),
        "own_share.json": node_data(graph, own, HIGH_IS_BAD, "own share of the error"),
        "flips.json": node_data(
            graph, {r["index"]: alone.get(r["index"], 0) for r in ops}, HIGH_IS_BAD, "answers restored alone"
        ),
        "culprit_rank.json": node_data(
            graph, {r["index"]: rank.get(r["index"], 0) for r in ops}, HIGH_IS_BAD, "culprit round"
        ),
    }


def write_all(folder: str, files: dict[str, dict[str, Any]]) -> None:
    os.makedirs(folder, exist_ok=True)
    for name, data in files.items():
        atomic_write_text(os.path.join(folder, name), stable_json(data))
