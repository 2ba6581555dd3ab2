"""TFLite's ``benchmark_model``: our delegate config -> its registrar flags, and its log -> numbers.

Pure Python (no adb, no runtime import), so every line format is unit-tested on verbatim samples.
``benchmark_model`` only WARNs about flags it does not know and skips a delegate it cannot create;
:func:`check_log` turns both into errors, so a device run never silently measures the CPU.
"""

from __future__ import annotations

import math
import re
from typing import TypedDict

from evalharness.core.errors import DelegateUnavailableError, EvalHarnessError
from evalharness.runtime.contract import Coverage, DeviceLatency, DeviceMemory
from evalharness.runtime.delegates import DELEGATES, DelegatePlan, OnDevice, kind_of

_UNCONSUMED = re.compile(r"Unconsumed cmdline flags:\s*(.*\S)")
_APPLIED = re.compile(
    r"Explicitly applied (\S+) delegate, and the model graph will be (completely|partially) executed"
    r"(?: by the delegate)?(?: w/ (\d+) delegate kernels)?"
)
_NOT_APPLIED = re.compile(
    r"Though (\S+) delegate is explicitly applied, the model graph will not be executed"
)
_ACCELERATORS = re.compile(r"NNAPI accelerators available: \[(.*)\]")
# Three historical forms: "Replacing N node(s)", "Replacing N out of M node(s) ... partitions.", and
# the same ending "partitions for the whole graph." / "partitions for subgraph K."
_REPLACING = re.compile(
    r"Replacing (\d+)(?: out of (\d+))? node\(s\) with delegate \(([^)]*)\) node, yielding (\d+) partitions"
)
_NUM = r"(-?nan|-?inf|[-+\d.eE]+)"
_TIMINGS_NEW = re.compile(
    rf"Inference timings in us: Init: {_NUM}, First inference: {_NUM}, Warmup \(avg\): {_NUM}, "
    rf"Inference \(avg\): {_NUM}"
)
_TIMINGS_OLD = re.compile(
    rf"Average inference timings in us: Warmup: {_NUM}, Init: {_NUM}, (?:Inference|no stats): {_NUM}"
)
_STAT = re.compile(r"\bcount=(\d+)((?: \w+=[^\s(]+)*)(\(all same\))?")
_MEM_DELTA = re.compile(
    rf"Memory footprint delta from the start of the tool \(MB\): init={_NUM} overall={_NUM}"
)
_MEM_PEAK = re.compile(rf"Overall peak memory footprint \(MB\) via periodic monitoring: {_NUM}")


def on_device(plan: DelegatePlan) -> OnDevice:
    """How benchmark_model runs the plan's delegate (declared beside the delegate's kind)."""
    found = kind_of(plan).on_device
    if found is None:
        valid = [n for n in DELEGATES.names() if DELEGATES.get(n).on_device is not None]
        raise DelegateUnavailableError(
            f"delegate={plan.name} does not run on an Android phone through benchmark_model "
            f"(runner=adb); valid there: {', '.join(valid)}"
        )
    return found


def device_flags(plan: DelegatePlan) -> list[str]:
    """benchmark_model registrar flags for the plan (1:1 with our delegate config names)."""
    out = [f"--num_threads={plan.num_threads}"]
    if plan.require_full_delegation:
        out.append("--require_full_delegation=true")
    return out + on_device(plan).flags(plan.flags)


def _number(text: str) -> float | None:
    value = float(text)
    return None if math.isnan(value) else value


def _ms(us: float | None) -> float | None:
    return None if us is None else us / 1e3


def parse_stat(line: str) -> dict[str, float | None] | None:
    """A ``count=... first=... curr=... min=... max=... avg=... std=... [p5= median= p95=]`` line
    (or its ``count=N curr=X(all same)`` / ``count=0`` forms) -> stats in ms, our summary keys."""
    m = _STAT.search(line)
    if not m:
        return None
    count = int(m.group(1))
    fields = {k: float(v) / 1e3 for k, v in (kv.split("=", 1) for kv in m.group(2).split())}
    if count == 0:
        return {"count": 0}
    if "avg" not in fields:  # every run took the same time: only curr is printed
        curr = fields["curr"]
        fields.update(first=curr, min=curr, max=curr, avg=curr, std=0.0, median=curr)
    stats: dict[str, float | None] = {"count": count, "mean": fields["avg"], "std": fields["std"]}
    stats["min"] = fields["min"]
    stats["max"] = fields["max"]
    stats.update({"first": fields.get("first"), "last": fields["curr"]})
    for ours, theirs in (("p5", "p5"), ("p50", "median"), ("p95", "p95")):
        if theirs in fields:
            stats[ours] = fields[theirs]
    return stats


def parse_latency(log: str) -> DeviceLatency:
    """The run's latency_ms block (ms) from both line generations of benchmark_model's summary."""
    stats = [s for s in map(parse_stat, log.splitlines()) if s is not None]
    block: DeviceLatency = {
        "init": None,
        "first_inference": None,
        "warmup": {"count": 0},
        "inference": {"count": 0},
    }
    if stats:
        block["inference"] = stats[-1]
        block["warmup"] = stats[0] if len(stats) > 1 else {"count": 0}
    if m := _TIMINGS_NEW.search(log):
        init, first, _, _ = (_number(g) for g in m.groups())
        block["init"], block["first_inference"] = _ms(init), _ms(first) if first else None
    elif m := _TIMINGS_OLD.search(log):
        block["init"] = _ms(_number(m.group(2)))
        if block["inference"]["count"] == 0 and _number(m.group(3)) is not None:
            block["inference"] = {"count": None, "mean": _ms(_number(m.group(3)))}
    else:
        raise EvalHarnessError("benchmark_model printed no 'Inference timings in us' summary line")
    if block["first_inference"] is None and block["warmup"].get("first") is not None:
        block["first_inference"] = block["warmup"]["first"]
    return block


def parse_memory(log: str) -> DeviceMemory:
    """benchmark_model's memory lines (MB): deltas from the tool's start and the periodic peak."""
    mem: DeviceMemory = {"note": "benchmark_model on the device (its own, approximate, figures)"}
    if m := _MEM_DELTA.search(log):
        mem["init_delta"], mem["overall_delta"] = _number(m.group(1)), _number(m.group(2))
    if m := _MEM_PEAK.search(log):
        mem["peak"] = _number(m.group(1))
    return mem


class ReplacingLine(TypedDict):
    """One "Replacing N out of M node(s) with delegate (TAG) node, yielding P partitions" line."""

    nodes: int
    of: int | None
    delegate: str
    partitions: int


class DelegationLog(TypedDict):
    """What benchmark_model said about delegation (None where it said nothing)."""

    applied: tuple[str, str] | None  # ("XNNPACK", "completely" | "partially") of "Explicitly applied"
    not_applied: str | None
    kernels: int | None
    replacing: list[ReplacingLine]
    accelerators: list[str] | None  # NNAPI's available accelerators


def parse_delegation(log: str) -> DelegationLog:
    """What benchmark_model said about delegation: applied lines, Replacing lines, accelerators."""
    info: DelegationLog = {
        "applied": None,
        "not_applied": None,
        "kernels": None,
        "replacing": [],
        "accelerators": None,
    }
    if m := _APPLIED.search(log):
        info["applied"] = (m.group(1), m.group(2))
        info["kernels"] = int(m.group(3)) if m.group(3) else (1 if m.group(2) == "completely" else None)
    if m := _NOT_APPLIED.search(log):
        info["not_applied"] = m.group(1)
    if m := _ACCELERATORS.search(log):
        info["accelerators"] = [a.strip() for a in m.group(1).split(",") if a.strip()]
    for m in _REPLACING.finditer(log):
        info["replacing"].append(
            {
                "nodes": int(m.group(1)),
                "of": int(m.group(2)) if m.group(2) else None,
                "delegate": m.group(3),
                "partitions": int(m.group(4)),
            }
        )
    return info


def check_log(log: str, plan: DelegatePlan) -> DelegationLog:
    """Raise on anything benchmark_model would only warn about; return parse_delegation's dict."""
    if m := _UNCONSUMED.search(log):
        raise DelegateUnavailableError(
            f"benchmark_model ignored flag(s) {m.group(1)} (Unconsumed cmdline flags): this binary does "
            "not know them; use a newer benchmark_model or drop the setting (runner.delegate_serialize=false)"
        )
    info = parse_delegation(log)
    wanted = plan.flags.get("nnapi_accelerator_name")
    if wanted and info["accelerators"] is not None and wanted not in info["accelerators"]:
        raise DelegateUnavailableError(
            f"NNAPI accelerator {wanted!r} is not on this device; "
            f"available: {', '.join(info['accelerators'])}"
        )
    label = on_device(plan).applied_as
    if not label:
        return info
    if info["not_applied"]:
        raise DelegateUnavailableError(
            f"delegate={plan.name}: benchmark_model applied the {label} delegate but it took no node of the "
            "model (everything would run on the CPU)"
        )
    if not info["applied"] or info["applied"][0].lower() != label.lower():
        hint = next(
            (ln.strip() for ln in log.splitlines() if re.search(r"fail|error|unsupported", ln, re.I)), ""
        )
        raise DelegateUnavailableError(
            f"delegate={plan.name}: benchmark_model did not apply the {label} delegate"
            + (f" ({hint})" if hint else " (no 'Explicitly applied' line)")
        )
    return info


def coverage(info: DelegationLog, plan: DelegatePlan, ops_total: int) -> Coverage:
    """The delegation coverage from the Replacing line of the requested delegate."""
    tag = on_device(plan).replacing_tag
    if tag is None:
        lines = []
    else:
        lines = [
            r
            for r in info["replacing"]
            if (tag in r["delegate"].lower() if tag else "xnnpack" not in r["delegate"].lower())
        ]
    delegated: int | None = lines[0]["nodes"] if lines else 0
    if lines and lines[0]["of"] is not None and lines[0]["of"] != ops_total:
        delegated = None  # the device's graph disagrees with the host's count: unknown, not a guess
    partitions = lines[0]["partitions"] if lines else (info["kernels"] or 0)
    if not lines and info["applied"]:
        delegated = ops_total if info["applied"][1] == "completely" else None
    return Coverage(
        ops_total=ops_total,
        ops_delegated=delegated,
        partitions=partitions,
        fully_accelerated=delegated == ops_total,
        ops_on_cpu_by_type={} if delegated == ops_total else None,
        unsupported_ops=[],
        adapter=plan.flags.get("nnapi_accelerator_name") or None,
        software_renderer=None,
        source="benchmark_model's own 'Explicitly applied' and 'Replacing N out of M node(s)' lines",
        extra={
            "applied": info["applied"] and " ".join(info["applied"]),
            "nnapi_accelerators": info["accelerators"],
        },
    )
