"""TFLite's ``benchmark_model``: our delegate config -> its registrar flags, and its log -> numbers.

Pure Python (no adb, no runtime import), so every line format is unit-tested on verbatim samples.
``benchmark_model`` only WARNs about flags it does not know and skips a delegate it cannot create;
:func:`check_log` turns both into errors, so a device run never silently measures the CPU.
"""

from __future__ import annotations

import math
import re

from evalharness.errors import ConfigError, DelegateUnavailableError, EvalHarnessError
from evalharness.runtime.contract import Coverage
from evalharness.runtime.delegates import DelegatePlan

# delegate name -> (name benchmark_model prints in "Explicitly applied X delegate", Replacing-line tag)
APPLIED_AS = {
    "xnnpack": ("XNNPACK", "xnnpack"),
    "gpu": ("GPU", "gpu"),
    "nnapi": ("NNAPI", "nnapi"),
    "hexagon": ("Hexagon", "hexagon"),
    "external": ("External", ""),
}
ON_DEVICE = ("cpu", "reference", *APPLIED_AS)
NNAPI_PREFERENCES = ("", "fast_single_answer", "sustained_speed", "low_power", "undefined")
NNAPI_PRIORITIES = ("", "default", "low", "medium", "high")
GPU_BACKENDS = ("", "cl", "gl")
SERIALIZABLE = ("gpu", "nnapi")  # delegates that honour --delegate_serialize_dir/_token

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


def _flag(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def device_flags(plan: DelegatePlan) -> list[str]:
    """benchmark_model registrar flags for the plan (1:1 with our delegate config names)."""
    f = plan.flags
    out = [f"--num_threads={plan.num_threads}"]
    if plan.require_full_delegation:
        out.append("--require_full_delegation=true")
    if plan.name == "reference":
        if f.get("op_resolver") not in ("auto", "builtin_without_default_delegates"):
            raise ConfigError(
                f"delegate=reference op_resolver={f.get('op_resolver')!r} is host-only; on the device "
                "the reference is builtin kernels without XNNPACK (op_resolver=auto)"
            )
        out.append("--use_xnnpack=false")
    elif plan.name == "xnnpack":
        out += ["--use_xnnpack=true", f"--xnnpack_force_fp16={_flag(f['xnnpack_force_fp16'])}"]
    elif plan.name == "gpu":
        _one_of("gpu_backend", f["gpu_backend"], GPU_BACKENDS)
        out += [
            "--use_gpu=true",
            f"--gpu_precision_loss_allowed={_flag(f['gpu_precision_loss_allowed'])}",
            f"--gpu_experimental_enable_quant={_flag(f['gpu_experimental_enable_quant'])}",
        ]
        out += [f"--gpu_backend={f['gpu_backend']}"] if f["gpu_backend"] else []
    elif plan.name == "nnapi":
        _one_of("nnapi_execution_preference", f["nnapi_execution_preference"], NNAPI_PREFERENCES)
        _one_of("nnapi_execution_priority", f["nnapi_execution_priority"], NNAPI_PRIORITIES)
        out += ["--use_nnapi=true"]
        for key in ("nnapi_accelerator_name", "nnapi_execution_preference", "nnapi_execution_priority"):
            out += [f"--{key}={f[key]}"] if f[key] else []
        out += [
            f"--disable_nnapi_cpu={_flag(f['disable_nnapi_cpu'])}",
            f"--nnapi_allow_fp16={_flag(f['nnapi_allow_fp16'])}",
        ]
        if f["max_delegated_partitions"]:
            out.append(f"--max_delegated_partitions={f['max_delegated_partitions']}")
    elif plan.name == "hexagon":
        out += ["--use_hexagon=true", f"--hexagon_lib_path={f['hexagon_lib_path']}"]
    elif plan.name == "external":
        path = f["external_delegate_path"]
        if not path.startswith("/"):
            raise ConfigError(
                "delegate=external with runner=adb: external_delegate_path must be the library's path "
                f"ON THE PHONE (absolute, e.g. /data/local/tmp/libdelegate.so), not {path!r}"
            )
        out.append(f"--external_delegate_path={path}")
        if f["external_delegate_options"]:
            out.append(f"--external_delegate_options={f['external_delegate_options']}")
    return out


def _one_of(key: str, value: str, valid: tuple[str, ...]) -> None:
    if value not in valid:
        raise ConfigError(
            f"delegate.{key}={value!r} is not a benchmark_model value; "
            f"valid: {', '.join(v for v in valid if v)}"
        )


def _number(text: str) -> float | None:
    value = float(text)
    return None if math.isnan(value) else value


def parse_stat(line: str) -> dict | None:
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
    stats = {"count": count, "mean": fields["avg"], "std": fields["std"], "min": fields["min"]}
    stats["max"] = fields["max"]
    stats.update({"first": fields.get("first"), "last": fields["curr"]})
    for ours, theirs in (("p5", "p5"), ("p50", "median"), ("p95", "p95")):
        if theirs in fields:
            stats[ours] = fields[theirs]
    return stats


def parse_latency(log: str) -> dict:
    """The run's latency_ms block (ms) from both line generations of benchmark_model's summary."""
    stats = [s for s in map(parse_stat, log.splitlines()) if s is not None]
    block: dict = {"init": None, "first_inference": None, "warmup": {"count": 0}, "inference": {"count": 0}}
    if stats:
        block["inference"] = stats[-1]
        block["warmup"] = stats[0] if len(stats) > 1 else {"count": 0}
    if m := _TIMINGS_NEW.search(log):
        init, first, _, _ = (_number(g) for g in m.groups())
        block["init"], block["first_inference"] = init / 1e3, first / 1e3 if first else None
    elif m := _TIMINGS_OLD.search(log):
        block["init"] = _number(m.group(2)) / 1e3
        if block["inference"]["count"] == 0 and _number(m.group(3)) is not None:
            block["inference"] = {"count": None, "mean": _number(m.group(3)) / 1e3}
    else:
        raise EvalHarnessError("benchmark_model printed no 'Inference timings in us' summary line")
    if block["first_inference"] is None and block["warmup"].get("first") is not None:
        block["first_inference"] = block["warmup"]["first"]
    return block


def parse_memory(log: str) -> dict:
    """benchmark_model's memory lines (MB): deltas from the tool's start and the periodic peak."""
    mem: dict = {"note": "benchmark_model on the device (its own, approximate, figures)"}
    if m := _MEM_DELTA.search(log):
        mem["init_delta"], mem["overall_delta"] = _number(m.group(1)), _number(m.group(2))
    if m := _MEM_PEAK.search(log):
        mem["peak"] = _number(m.group(1))
    return mem


def parse_delegation(log: str) -> dict:
    """What benchmark_model said about delegation: applied lines, Replacing lines, accelerators."""
    info: dict = {
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


def check_log(log: str, plan: DelegatePlan) -> dict:
    """Raise on anything benchmark_model would only warn about; return parse_delegation's dict."""
    if m := _UNCONSUMED.search(log):
        raise DelegateUnavailableError(
            f"benchmark_model ignored flag(s) {m.group(1)} (Unconsumed cmdline flags): this binary does "
            "not know them; use a newer benchmark_model or drop the setting (runner.delegate_serialize=false)"
        )
    info = parse_delegation(log)
    wanted = plan.flags.get("nnapi_accelerator_name")
    if (
        plan.name == "nnapi"
        and wanted
        and info["accelerators"] is not None
        and wanted not in info["accelerators"]
    ):
        raise DelegateUnavailableError(
            f"NNAPI accelerator {wanted!r} is not on this device; "
            f"available: {', '.join(info['accelerators'])}"
        )
    if plan.name not in APPLIED_AS:
        return info
    label = APPLIED_AS[plan.name][0]
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


def coverage(info: dict, plan: DelegatePlan, ops_total: int) -> Coverage:
    """The delegation coverage from the Replacing line of the requested delegate."""
    tag = APPLIED_AS.get(plan.name, ("", "xnnpack"))[1]
    if plan.name == "reference":
        lines = []
    else:
        lines = [
            r
            for r in info["replacing"]
            if (tag in r["delegate"].lower() if tag else "xnnpack" not in r["delegate"].lower())
        ]
    delegated = lines[0]["nodes"] if lines else 0
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
