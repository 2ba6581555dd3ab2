"""Per-op times from LiteRT's own profiler: ``libLiteRt.so``'s C API, reached through ctypes.

Why ctypes: the wheel's Python ``CompiledModel`` passes neither the runtime option
``enable_profiling`` nor its handle through, and its ``Interpreter`` cannot take a profiler; but the
library it ships exports the C API that both are built on. This module builds a compiled model of
the run's file with that option set, on the run's hardware (CPU with the run's kernel mode and
threads, or the GPU), feeds it the run's prepared sample from host memory, and reads one invoke's
events at a time.

What the events are (LiteRT ``ProfiledEventData``): a builtin kernel's invoke carries the original
node index (``OPERATOR_INVOKE_EVENT``); a delegate that profiles its own operators (XNNPACK does)
reports each of them with its index inside the delegate partition
(``DELEGATE_PROFILED_OPERATOR_INVOKE_EVENT``), named by its own kernel ("Convolution (NHWC, QU8)
IGEMM"). A partition's operators are mapped to the original nodes it replaced, in order, when their
counts agree; otherwise the rows keep the kernel's name and no node index, and the record says so.

Anything this path cannot do (a backend without host LiteRT, an accelerator whose profiler is not
implemented: the WebGPU accelerator answers ``UNIMPLEMENTED: Profile is not implemented``) raises
:class:`ProfilerUnavailable` with the reason, and the caller falls back to sub-model timing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from evalharness.runtime.litert_capi import CPU, GPU, ProfiledModel, ProfilerUnavailable

if TYPE_CHECKING:  # for the type only
    from evalharness.runtime.delegates import DelegatePlan

OpRow = dict[str, Any]  # one op event: kernel, ms, and node or (partition, position)


class RuntimeProfile(TypedDict):
    """What the runtime's profiler measured over the profiled invokes (see :func:`runtime_profile`)."""

    hardware: str  # CPU | GPU
    walls_ms: list[float]
    cpu_ms: list[float]
    invoke_events_ms: list[float] | None
    runtime_ms: list[float] | None
    per_invoke: list[list[OpRow]]
    nodes_mapped: bool


__all__ = ["SOURCE", "ProfilerUnavailable", "map_to_nodes", "op_events", "plan_options", "runtime_profile"]

SOURCE = (
    "LiteRT runtime profiler (libLiteRt.so C API: LiteRtCompiledModelGetProfiler, LiteRtGetProfilerEvents)"
)
_OPERATOR, _DELEGATE_INTERNAL, _DELEGATE_PROFILED = 1 << 1, 1 << 2, 1 << 3  # LiteRtProfilerEventType
_INVOKE = 1  # DEFAULT events; the interpreter's own "Invoke" is one of them
# the plan's op resolver -> the CPU accelerator's kernel_mode (litert_cpu_options "kernel_mode").
# Not builtin_ref: the compiled model's "reference" mode ran the optimized builtin kernels' speed,
# several times faster than the Interpreter's reference kernels, so it would time other code.
_KERNEL_MODE = {"auto": "delegate", "builtin_without_default_delegates": "builtin"}


def plan_options(plan: DelegatePlan) -> tuple[int, str]:
    """The hardware and the options payload that reproduce the run's plan; refuses the rest."""
    if plan.backend in ("interpreter", "compiled_cpu") and plan.external_path is None:
        mode = _KERNEL_MODE.get(plan.op_resolver)
        if mode is None:
            raise ProfilerUnavailable(
                f"op resolver {plan.op_resolver!r}: no CompiledModel kernel mode runs the same kernels"
            )
        return CPU, f'kernel_mode = "{mode}"\nnum_threads = {int(plan.num_threads)}\n'
    if plan.backend == "compiled_gpu":
        return GPU, ""
    raise ProfilerUnavailable(f"delegate={plan.name} does not run on this host's LiteRT CompiledModel")


def op_events(events: list[tuple[str, int, float, int]]) -> tuple[list[OpRow], float | None, float | None]:
    """The op events of one invoke as rows in run order (builtin: ``node``; delegate: ``partition``
    and ``position`` in it); the interpreter's own "Invoke" event (ms); and the runtime's whole time
    for the run: that event plus LiteRT's own steps around it (``LiteRT::Run[...]``: buffer
    registration and sync). None where the profiler reported no Invoke event."""
    rows: list[OpRow] = []
    partition, last, invoke, around = -1, None, None, 0.0
    for tag, kind, ms, meta in events:
        if kind == _INVOKE and tag == "Invoke" and invoke is None:
            invoke = ms
        elif kind == _INVOKE and tag.startswith("LiteRT::Run"):
            around += ms
        elif kind == _OPERATOR:
            rows.append({"kernel": tag, "ms": ms, "node": int(meta)})
            last = None
        elif kind in (_DELEGATE_PROFILED, _DELEGATE_INTERNAL):
            if last is None or meta <= last:
                partition += 1
            last = meta
            rows.append({"kernel": tag, "ms": ms, "partition": partition, "position": int(meta)})
    return rows, invoke, None if invoke is None else invoke + around


def map_to_nodes(rows: list[OpRow], n_ops: int, partitions: list[list[int]] | None = None) -> bool:
    """Give each delegate row the original node it ran; True when every row got one.

    With ``partitions`` (per delegate node in run order, the nodes it replaced: the interpreter's
    own graph tells), partition k's operators are its nodes in ascending order, the order a
    delegate visits them, wherever the counts agree. Without, the nodes no builtin kernel ran, in
    index order, kept only if the whole run then visits nodes in increasing order (true when each
    partition replaced consecutive nodes). Otherwise the delegate rows keep no node."""
    delegate_rows = [r for r in rows if "partition" in r]
    if partitions is not None:
        sizes = [sum(1 for r in delegate_rows if r["partition"] == k) for k in range(len(partitions))]
        if len(delegate_rows) == sum(sizes) and sizes == [len(m) for m in partitions]:
            nodes = iter(n for members in partitions for n in members)
            for r in delegate_rows:
                r["node"] = next(nodes)
            return True
    builtin = {r["node"] for r in rows if "node" in r}
    delegated = iter(i for i in range(n_ops) if i not in builtin)
    order = []
    for r in rows:
        if "partition" in r:
            r["node"] = next(delegated, None)
        order.append(r["node"])
    consistent = next(delegated, None) is None and None not in order
    consistent = consistent and all(a < b for a, b in zip(order, order[1:], strict=False))
    if not consistent:
        for r in delegate_rows:
            r.pop("node", None)
    return consistent


def runtime_profile(
    model_path: str,
    plan: DelegatePlan,
    inputs: dict[int, np.ndarray],
    n_ops: int,
    repeats: int,
    partitions: list[list[int]] | None = None,
) -> RuntimeProfile:
    """``repeats`` profiled invokes (after one unprofiled warm-up) of ``model_path`` under ``plan``.

    ``inputs``: the prepared sample by original tensor index. Returns the per-invoke wall times,
    the interpreter's Invoke event times, the runtime's own time of each run (None where it did not
    report it), and each invoke's op rows in run order, the same sequence every time (the first
    invoke's mapped to original nodes where possible). ``partitions``: see :func:`map_to_nodes`."""
    compiled = ProfiledModel(model_path, *plan_options(plan), inputs)
    try:
        compiled.invoke()
        walls, cpus, invokes, runtimes, per_invoke = [], [], [], [], []
        for _ in range(repeats):
            (wall, cpu), events = compiled.profile_one()
            rows, invoke, runtime = op_events(events)
            if not rows:
                raise ProfilerUnavailable("the runtime's profiler recorded no op event for this plan")
            walls.append(wall)
            cpus.append(cpu)
            invokes.append(invoke)
            runtimes.append(runtime)
            per_invoke.append(rows)
    finally:
        compiled.close()
    shapes = {tuple(r.get("node", r.get("partition")) for r in rows) for rows in per_invoke}
    if len(shapes) != 1:
        raise ProfilerUnavailable("the profiled invokes reported different op sequences")
    mapped = map_to_nodes(per_invoke[0], n_ops, partitions)  # the first invoke's rows name every row
    return {
        "hardware": "GPU" if plan.backend == "compiled_gpu" else "CPU",
        "walls_ms": walls,
        "cpu_ms": cpus,
        "invoke_events_ms": _every_one(invokes),
        "runtime_ms": _every_one(runtimes),
        "per_invoke": per_invoke,
        "nodes_mapped": mapped,
    }


def _every_one(values: list[float | None]) -> list[float] | None:
    """The figures when every invoke reported one, else None."""
    known = [v for v in values if v is not None]
    return known if len(known) == len(values) else None
