"""Deltas, ratios and stable number formatting shared by every report.

Reports are meant to be diffed (two CI runs, two sweeps), so JSON floats are rounded to 10
significant digits: enough to keep every stored figure, few enough that last-bit noise of a
recomputation does not show up as a change.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from evalharness.core.atomic_io import dumps

SIGNIFICANT = 10


def delta(a: float | None, b: float | None) -> float | None:
    """B - A, or None when either is missing."""
    return None if a is None or b is None else b - a


def relative_pct(a: float | None, b: float | None) -> float | None:
    """(B - A) / |A| in percent; ±inf when A is 0 and B is not, None when either is missing."""
    if a is None or b is None:
        return None
    if a == 0:
        return 0.0 if b == 0 else math.copysign(math.inf, b)
    return (b - a) / abs(a) * 100.0


def ratio(a: float | None, b: float | None) -> float | None:
    """A / B (a speed-up of B over A when both are latencies); None when undefined."""
    return None if a is None or not b else a / b


def stable(value: Any) -> Any:
    """``value`` with every float rounded to SIGNIFICANT digits (infinities as strings)."""
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return float(f"{value:.{SIGNIFICANT}g}")
    if isinstance(value, dict):
        return {str(k): stable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [stable(v) for v in value]
    return value


def stable_json(doc: Mapping[str, Any]) -> str:
    """Sorted keys, 2-space indent, rounded floats: two reports diff line by line."""
    return dumps(stable(doc))


def fmt(value: Any, spec: str = ".4f", missing: str = "n/a") -> str:
    """A table cell: numbers by ``spec``, None as ``missing``, anything else as text."""
    if value is None:
        return missing
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, int):  # counts and byte sizes stay exact
        return format(value, "+d" if spec.startswith("+") else "d")
    return format(value, spec)


def fmt_pct(value: float | None) -> str:
    return fmt(value, "+.1f") + ("%" if value is not None and math.isfinite(value) else "")
