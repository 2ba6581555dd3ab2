"""Is a latency measurement one to trust? One judgement for every measurement the tool makes.

As MLPerf's loadgen marks a run valid or not, a measurement is valid when its timed invokes reach a
minimum duration and count, the coefficient of variation of its block means (consecutive invokes
grouped into blocks of about ``block_secs``) stays under a bound, and no CPU cooling device was
throttling at its start or end (where the platform exposes its thermal state; the record says when
it does not). ``evalharness compare`` judges each candidate with it; every run judges its own
invoke latencies with it (``latency_ms.validity`` in ``metrics.json``), and ``report diff`` says when a
speed-up comes from a measurement that is not valid. Pure functions of the measured numbers and of
thermal snapshots read elsewhere (``runtime/thermal.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from evalharness.core.documents import JSONMap

THROTTLING = ("processor", "cpufreq", "cpu")  # cooling device types that slow the CPU down


class RuleRecord(TypedDict):
    """A :class:`Rule` as the record holds it."""

    min_secs: float
    min_invokes: int
    max_cv: float
    block_secs: float


@dataclass(frozen=True)
class Rule:
    """What a valid measurement needs."""

    min_secs: float = 1.0  # timed invoke time, at least
    min_invokes: int = 20  # timed invokes, at least
    max_cv: float = 0.25  # of the block means, at most
    block_secs: float = 0.1  # a block's target duration, where the blocks are made from a sequence

    def record(self) -> RuleRecord:
        """The rule as a verdict records it (its fields, in order)."""
        return {
            "min_secs": self.min_secs,
            "min_invokes": self.min_invokes,
            "max_cv": self.max_cv,
            "block_secs": self.block_secs,
        }


class Verdict(TypedDict):
    """The verdict on one measurement (:func:`verdict`): ``valid`` and the ``problems`` that make it not."""

    timed_secs: float
    invokes: int
    cv: float | None  # None: not measured, or the record has no block times (``cv_checked`` False)
    cv_checked: bool
    valid: bool
    problems: list[str]
    rule: RuleRecord


class Judgement(Verdict):
    """:func:`judge`'s verdict: with the blocks it judged and what its duration counts."""

    blocks: int
    duration_basis: str  # "summed invoke time" | "wall-clock"


def snapshot(entries: Mapping[str, str], source: str) -> dict[str, Any]:
    """A thermal snapshot from ``{relative path: text}`` under a ``/sys/class/thermal``-like folder
    (``thermal_zoneN/type``, ``.../temp`` in m°C, ``cooling_deviceN/type``, ``cur_state``,
    ``max_state``): temperatures (°C by zone type) and cooling devices' states, or
    ``exposed: False`` when there are none."""
    zones, cooling = {}, {}
    for name in sorted({p.split("/")[0] for p in entries}):
        kind = entries.get(f"{name}/type")
        if kind is None:
            continue
        if name.startswith("thermal_zone"):
            temp = entries.get(f"{name}/temp")
            if temp is not None and temp.lstrip("-").isdigit():
                zones[f"{kind} ({name})"] = int(temp) / 1000
        elif name.startswith("cooling_device"):
            state, top = entries.get(f"{name}/cur_state"), entries.get(f"{name}/max_state")
            if state is not None and state.isdigit():
                most = int(top) if top and top.isdigit() else None
                cooling[f"{kind} ({name})"] = {"state": int(state), "max": most}
    return {"source": source, "exposed": bool(zones or cooling), "zones_c": zones, "cooling": cooling}


def throttled(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """CPU cooling devices active at the start or the end of the measurement."""
    found = []
    for snap in (before, after):
        for name, dev in snap.get("cooling", {}).items():
            if dev["state"] > 0 and name.lower().startswith(THROTTLING) and name not in found:
                found.append(name)
    return found


def blocks_of(samples_ms: Sequence[float], block_secs: float) -> list[float]:
    """Means of consecutive invokes grouped until a group's summed time reaches ``block_secs`` (a
    last group shorter than half a block joins the one before it)."""
    groups: list[list[float]] = [[]]
    filled = 0.0  # the last group's summed time
    for value in samples_ms:
        if filled >= block_secs * 1e3:
            groups.append([])
            filled = 0.0
        groups[-1].append(value)
        filled += value
    if len(groups) > 1 and filled < block_secs * 500:
        tail = groups.pop()
        groups[-1] += tail
    return [float(np.mean(g)) for g in groups if g]


def judge(
    blocks: Sequence[float],
    samples_ms: Sequence[float],
    rule: Rule,
    hot: Sequence[str] = (),
    secs: float | None = None,
) -> Judgement:
    """The verdict on one measurement from its invokes and their block means. ``secs``: its
    duration where it is not the summed invoke time (a run's loop: the wall-clock its own stopping
    rule counts)."""
    means = np.asarray(blocks, dtype=np.float64)
    cv = float(means.std(ddof=1) / means.mean()) if means.size > 1 and means.mean() > 0 else None
    duration = float(sum(samples_ms)) / 1e3 if secs is None else secs
    found = verdict(duration, len(samples_ms), cv, rule, hot)
    basis = "summed invoke time" if secs is None else "wall-clock"
    return {**found, "blocks": int(means.size), "duration_basis": basis}


def verdict(
    secs: float, invokes: int, cv: float | None, rule: Rule, hot: Sequence[str] = (), cv_measured: bool = True
) -> Verdict:
    """The verdict from the figures: ``valid`` and the ``problems`` that make it not.
    ``cv_measured`` False: the measurement has no block times (a device tool's summary), so the CV
    bound is not checked and the record says so."""
    problems = []
    if secs < rule.min_secs:
        problems.append(f"measured {secs:.2f} s < min_secs {rule.min_secs:g}")
    if invokes < rule.min_invokes:
        problems.append(f"{invokes} invokes < min_invokes {rule.min_invokes}")
    if cv_measured and cv is None:
        problems.append("block CV not measurable (fewer than 2 blocks)")
    elif cv_measured and cv is not None and cv > rule.max_cv:
        problems.append(f"block CV {round(cv, 3)} > max_cv {rule.max_cv:g}")
    if hot:
        problems.append(f"throttled ({', '.join(hot)})")
    return {
        "timed_secs": secs,
        "invokes": invokes,
        "cv": cv if cv_measured else None,
        "cv_checked": cv_measured,
        "valid": not problems,
        "problems": problems,
        "rule": rule.record(),
    }


def compact(validity: JSONMap | None) -> JSONMap | None:
    """A run's ``latency_ms.validity`` without its thermal snapshots (what a comparison carries)."""
    if not validity:
        return None
    thermal = validity.get("thermal") or {}
    keep = {k: v for k, v in validity.items() if k != "thermal"}
    return keep | {"thermal_exposed": thermal.get("exposed"), "throttled": thermal.get("throttled") or []}


def comparison_notes(found: dict[str, Any]) -> list[str]:
    """One line per side whose latency is not a valid measurement (``{"a": ..., "b": ...}`` of
    :func:`compact`); nothing when both are valid or a side predates the record."""
    return [
        f"{side.upper()}'s latency is not a valid measurement ({'; '.join(v['problems'])}): its speed-up "
        "is not to be trusted"
        for side, v in sorted(found.items())
        if v and not v.get("valid")
    ]
