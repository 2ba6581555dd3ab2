"""What explain adds up across ops: the first non-finite op (NaN mode), the roll-up per op type,
and the local-vs-inherited split of each op's error.

- **NaN mode**: a delegate's NaN or inf is not an answer to restore but a fault to locate: the first
  op whose output on B's path is not finite while A's is, and whether that op's own kernel makes it
  from A's finite inputs or inherits it.
- **Own vs inherited** (as ONNX Runtime's QDQ debugger splits it): per op and image group, the share
  of the accumulated error power (B's whole path against A) that the op's own kernel makes (its
  local error, B's op fed A's inputs, against the same reference): own = min(1, local noise /
  accumulated noise), inherited = 1 - own.
"""

from __future__ import annotations

import math
from typing import Any, TypedDict

import numpy as np


class OwnShare(TypedDict):
    own: float  # the share of the accumulated error the op's own kernel makes
    inherited: float  # the share it was fed


def own_share(local_snr: float | None, accumulated_snr: float | None) -> OwnShare | None:
    """``{"own", "inherited"}`` shares of an op's accumulated error (None when B's path is exact or
    either error is unknown or not finite)."""
    if local_snr is None or accumulated_snr is None or math.isinf(accumulated_snr):
        return None
    if math.isinf(local_snr):
        own = 0.0 if local_snr > 0 else 1.0
    else:
        own = min(1.0, 10 ** ((accumulated_snr - local_snr) / 10))
    return {"own": round(own, 4), "inherited": round(1 - own, 4)}


def first_nonfinite(
    graph: Any,
    tensor_map: dict[int, int],
    a_acts: list[dict[int, np.ndarray]],
    b_acts: list[dict[int, np.ndarray]],
    ids: list[Any],
    rows: list[Any],
) -> dict[str, Any] | None:
    """NaN mode: the first op (execution order) whose output on B's path is not finite on some image
    while A's is finite there, and whether its own kernel makes the non-finite values from A's
    finite inputs (its local error counts them) or it inherits them."""
    for op in graph.ops:
        bad = [
            i
            for i in range(len(ids))
            if any(
                not np.all(np.isfinite(b_acts[i][tensor_map[t]])) and np.all(np.isfinite(a_acts[i][t]))
                for t in op.outputs
                if t in tensor_map
            )
        ]
        if bad:
            row = rows[op.index]
            own = any((row[g]["local"]["nonfinite"] or 0) for g in ("changed", "controls"))
            images = [ids[i] for i in bad]
            return {"op": op.index, "type": op.type, "name": op.name, "images": images, "own": own}
    return None


def op_types(rows: list[dict[str, Any]], culprits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per op type: how many ops, culprits and answers they bring back, and the local SNR on the
    changed images (controls where none changed): the roll-up a delegate vendor reads first."""
    group = "changed" if any(r["changed"]["local"]["snr_db"] is not None for r in rows) else "controls"
    by: dict[str, dict[str, Any]] = {}
    for r in rows:
        t = by.setdefault(r["type"], {"type": r["type"], "ops": 0, "culprits": 0, "restores": 0, "snr": []})
        t["ops"] += 1
        snr = r[group]["local"]["snr_db"]
        if snr is not None:
            t["snr"].append(snr)
    for c in culprits:
        t = by[rows[c["op"]]["type"]]
        t["culprits"] += 1
        t["restores"] += len(c["restores"])
    out = []
    for t in by.values():
        values = sorted(t.pop("snr"))
        t["local_snr_min"] = values[0] if values else None
        t["local_snr_median"] = values[len(values) // 2] if values else None
        t["group"] = group
        out.append(t)

    def order(t: dict[str, Any]) -> tuple[Any, ...]:
        return (-t["restores"], math.inf if t["local_snr_min"] is None else t["local_snr_min"])

    return sorted(out, key=order)
