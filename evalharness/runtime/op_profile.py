"""Per-op time and placement: the runtime's own profiler where it answers, else each op cut out as
its own model and timed on the run's delegate.

Source of truth, in order: LiteRT's profiler (``runtime/native_profile.py``: the C API of the
wheel's ``libLiteRt.so``, a compiled model of the run's file on the run's hardware and threads) for
the CPU kinds; sub-model timing where that profiler cannot answer (an accelerator without profiling,
e.g. WebGPU's "Profile is not implemented"; a phone; an external delegate). The record names its
source and, for sub-model timing, why the profiler was not used. Either way it checks itself: the
per-op times' sum against the invoke time, and the placements against the coverage record.

With sub-model timing, each op runs in a model holding only that op
(``runtime.subgraph.ModelGraph.write``), fed the real activations of one whole-graph run (every
activation exposed as an output), loaded through ``load_model`` with the run's own delegate plan:
the same backend, threads and delegate flags.
An op's time therefore includes one invoke's fixed overhead (and, on an accelerator, its output
readback), which the whole graph pays once: the sum runs above the invoke time by about
``ops × overhead``; the record gives that overhead, measured on the cheapest op.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from evalharness.runtime.native_profile import SOURCE as NATIVE_SOURCE
from evalharness.runtime.native_profile import ProfilerUnavailable, runtime_profile
from evalharness.runtime.subgraph import ModelGraph

if TYPE_CHECKING:  # for the types only
    from evalharness.runtime.contract import Model
    from evalharness.runtime.delegates import DelegatePlan

Row = dict[str, Any]  # one op's line of the record: what it is, where it ran, its time statistics
Loader = Callable[[str], "Model"]  # a model file -> loaded with the run's plan
WhyNot = Callable[[float, float, Row, list[Row]], str]  # (sum, ratio, invoke, ops) -> why the sum is off


class PlacementCheck(TypedDict):
    """Do the per-op placements count what the coverage record says the delegate took?"""

    ops_delegated_by_coverage: int | None
    ops_delegated_by_profile: int | None
    agree: bool | None


class _OpProfileKeys(TypedDict):
    source: str
    placement_source: str
    repeats: int
    invoke: Row
    sum_median_ms: float
    sum_mean_ms: float
    sum_over_invoke: float | None
    sum_basis: str
    sum_over_invoke_cpu: float | None
    adds_up: bool
    tolerance: float
    note: str | None
    placements: PlacementCheck
    by_type: dict[str, dict[str, Any]]
    by_backend: dict[str, dict[str, Any]]
    ops: list[Row]


class OpProfile(_OpProfileKeys, total=False):
    """metrics.json ``op_profile``: per op, roll-ups per type and backend, the sum check and the
    placement check (:func:`summarise`); the runtime's profiler adds whether it mapped the delegate's
    operators to graph nodes and a note where profiling changed the speed."""

    nodes_mapped: bool
    speed_note: str | None


SOURCE = "sub-model timing"
TOLERANCE = 0.10  # |sum / invoke - 1| the record accepts as "per-op times add up"
SAME_SPEED = 1.25  # profiled invoke / the run's invoke within [1/x, x]: the profile timed the run's speed


def _timed(
    model: Model, tensors: list[np.ndarray], repeats: int, cpu: list[float] | None = None
) -> list[float]:
    """``repeats`` invoke times (ms) after one untimed warm-up invoke; ``cpu`` gets the process's
    CPU time (ms, all its threads) of each timed invoke."""
    model.set_inputs(tensors)
    model.invoke()
    times = []
    for _ in range(repeats):
        used, start = time.process_time(), time.perf_counter()
        model.invoke()
        times.append((time.perf_counter() - start) * 1e3)
        if cpu is not None:
            cpu.append((time.process_time() - used) * 1e3)
    return times


def _stats(times: Sequence[float]) -> Row:
    a = np.asarray(times, dtype=np.float64)
    return {
        "mean_ms": float(a.mean()),
        "median_ms": float(np.median(a)),
        "min_ms": float(a.min()),
        "max_ms": float(a.max()),
        "std_ms": float(a.std()),
        "count": int(a.size),
    }


def _activations(
    graph: ModelGraph, load: Loader, inputs: list[np.ndarray], folder: str
) -> dict[int, np.ndarray]:
    """Every tensor of one whole-graph run, by its original index (the exposed model keeps them)."""
    model = load(graph.write_exposed(os.path.join(folder, "exposed.tflite")))
    model.set_inputs(inputs)
    model.invoke()
    values = {info.index: value for info, value in zip(model.inputs, inputs, strict=True)}
    values.update({info.index: value for info, value in zip(model.outputs, model.get_outputs(), strict=True)})
    return values


def _placement(model: Model) -> str | None:
    """What ran a one-op model, from its own coverage record (None: the backend does not say)."""
    delegated = model.coverage["ops_delegated"]
    if delegated is None:
        return None
    return model.placement[0] if delegated >= 1 else model.placement[1]


def profile_ops(
    model_path: str,
    load: Loader,
    whole: Model,
    inputs: list[np.ndarray],
    repeats: int = 20,
    folder: str | None = None,
    plan: DelegatePlan | None = None,
) -> OpProfile:
    """Per-op times and placements of ``model_path``.

    ``load(path) -> Model`` loads a file with the run's plan; ``whole`` is the run's loaded model,
    whose invoke time is measured before, between and after the ops (a shared machine's speed
    drifts within the minute a profile takes); ``inputs`` one prepared sample; ``plan`` the run's
    delegate plan (the runtime's profiler rebuilds the model with it)."""
    graph = ModelGraph(model_path)
    if plan is not None:
        try:
            return _from_runtime(graph, model_path, plan, whole, inputs, repeats)
        except ProfilerUnavailable as e:
            why = f"the runtime's profiler was not used: {e}"
        except Exception as e:  # an optional path: whatever breaks in it, the profile falls back and says so
            why = f"the runtime's profiler was not used: it failed ({type(e).__name__}: {e})"
    else:
        why = "the runtime's profiler was not asked (no delegate plan)"
    step = max(1, len(graph.ops) // repeats)  # whole invokes spread between the ops, too
    with tempfile.TemporaryDirectory(prefix="evalharness-opprof-", dir=folder) as tmp:
        acts = _activations(graph, load, inputs, tmp)
        whole_cpu: list[float] = []
        whole_times = _timed(whole, inputs, repeats, whole_cpu)
        ops: list[Row] = []
        for op in graph.ops:
            path = graph.write(
                os.path.join(tmp, f"op{op.index}.tflite"), op.index, op.index + 1, list(op.outputs)
            )
            model = load(path)
            tensors = [acts[info.index] for info in model.inputs]
            times = _timed(model, tensors, repeats)
            ops.append(
                {"index": op.index, "type": op.type, "name": op.name, "own_placement": _placement(model)}
                | _stats(times)
            )
            del model
            if op.index % step == step - 1:
                whole_times += _timed(whole, inputs, 1, whole_cpu)
        whole_times += _timed(whole, inputs, repeats, whole_cpu)
    graph_placements = whole.op_placements()
    for row in ops:
        row["backend"] = graph_placements[row["index"]] if graph_placements else row["own_placement"]
    invoke = _stats(whole_times) | {"cpu_median_ms": float(np.median(whole_cpu))}
    placements = check_placements(ops, whole.coverage.as_dict(), whole.placement[1])
    placement_source = "the loaded graph's delegate nodes" if graph_placements else "each op's own sub-model"
    return summarise(ops, invoke, placements, placement_source, repeats, f"{SOURCE} ({why})", _submodel_note)


def _from_runtime(
    graph: ModelGraph,
    model_path: str,
    plan: DelegatePlan,
    whole: Model,
    inputs: list[np.ndarray],
    repeats: int,
) -> OpProfile:
    """The record from the runtime's profiler; the run's own model is timed around it, so the record
    shows whether profiling changed the speed (``profiled_over_run_invoke``)."""
    run_times = _timed(whole, inputs, repeats)
    by_index = {info.index: value for info, value in zip(whole.inputs, inputs, strict=True)}
    got = runtime_profile(model_path, plan, by_index, len(graph.ops), repeats, whole.partition_nodes())
    run_times += _timed(whole, inputs, repeats)
    delegated, builtin = whole.placement
    ops: list[Row] = []
    for j, first in enumerate(got["per_invoke"][0]):
        node = first.get("node")
        op = graph.ops[node] if node is not None and node < len(graph.ops) else None
        ops.append(
            {
                "index": node,
                "type": op.type if op else first["kernel"],
                "name": op.name if op else f"partition {first.get('partition')} op {first.get('position')}",
                "kernel": first["kernel"],
                "backend": delegated if "partition" in first else builtin,
            }
            | _stats([rows[j]["ms"] for rows in got["per_invoke"]])
        )
    invoke = _stats(got["walls_ms"]) | {"cpu_median_ms": float(np.median(got["cpu_ms"]))}
    invoke["run_median_ms"] = float(np.median(run_times))
    invoke["profiled_over_run_invoke"] = (
        invoke["median_ms"] / invoke["run_median_ms"] if invoke["run_median_ms"] else None
    )
    placements = check_placements(ops, whole.coverage.as_dict(), builtin)
    source = f"{NATIVE_SOURCE}; {got['hardware']}"
    if not got["nodes_mapped"]:
        source += "; delegate operators not mapped to graph nodes (their count or order differs)"
    # each invoke's op events over the interpreter's own Invoke event of that invoke: the span the
    # run's invoke() times on the Interpreter. LiteRT's steps around it (buffer registration and
    # sync) and the wall-clock around the C call (which adds the calling thread's waits: the GIL, a
    # busy CPU) are kept beside it.
    sums = [sum(r["ms"] for r in rows) for rows in got["per_invoke"]]

    def over(times: list[float]) -> float:
        return float(np.median([s / t for s, t in zip(sums, times, strict=True)]))

    invoke["sum_over_wall"] = over(got["walls_ms"])
    basis, paired = "per invoke, wall-clock", invoke["sum_over_wall"]
    if got["runtime_ms"]:
        invoke["runtime_median_ms"] = float(np.median(got["runtime_ms"]))
        invoke["sum_over_runtime"] = over(got["runtime_ms"])
        basis, paired = "per invoke, LiteRT's run", invoke["sum_over_runtime"]
    if got["invoke_events_ms"]:
        invoke["event_median_ms"] = float(np.median(got["invoke_events_ms"]))
        basis, paired = "per invoke, the interpreter's Invoke", over(got["invoke_events_ms"])
    record = summarise(
        ops,
        invoke,
        placements,
        "the runtime's profile events",
        repeats,
        source,
        _runtime_note,
        (basis, paired),
    )
    record["nodes_mapped"] = got["nodes_mapped"]
    speed = invoke["profiled_over_run_invoke"]
    record["speed_note"] = None
    if speed is not None and not 1 / SAME_SPEED <= speed <= SAME_SPEED:
        record["speed_note"] = (
            f"the profiled compiled model's invoke took x{speed:.2f} the run's own "
            f"({invoke['median_ms']:.3f} vs {invoke['run_median_ms']:.3f} ms, medians, timed around the "
            "profile): same graph and placements, but the CompiledModel's CPU path runs its kernels at "
            "another speed here, so the per-op shares hold and the absolute times are not the run's"
        )
    return record


def _submodel_note(total: float, ratio: float, invoke: Row, ops: list[Row]) -> str:
    overhead = min((o["min_ms"] for o in ops), default=0.0)
    return (
        f"per-op medians sum to {total:.3f} ms vs {invoke['median_ms']:.3f} ms per whole invoke "
        f"(x{ratio:.2f}; the whole invoke ranged {invoke['min_ms']:.3f}..{invoke['max_ms']:.3f} ms "
        f"meanwhile): each op's sub-model pays one invoke's fixed cost and its own input and "
        f"output traffic (on an accelerator: upload and readback; at most {overhead:.3f} ms, the "
        f"cheapest op's time) that the whole graph pays once ({len(ops)} ops), and ops the "
        "delegate fuses or keeps on the device in the whole graph run alone; on a busy machine the "
        "whole invoke also waits for the CPU (it spans many scheduler slices, a one-op invoke few): "
        f"its process CPU time was {invoke['cpu_median_ms']:.3f} ms per invoke (median, all threads)"
    )


def _runtime_note(total: float, ratio: float, invoke: Row, ops: list[Row]) -> str:
    inner = invoke.get("event_median_ms")
    span = f"the interpreter's Invoke event ({inner:.3f} ms, median)" if inner is not None else "its time"
    return (
        f"an invoke's op events sum to x{ratio:.2f} of {span} (median over invokes; per-op medians "
        f"{total:.3f} ms): the events time the ops only; the rest is the interpreter's own work "
        "between them, and the profiler's, which weigh most on a small model or a busy machine"
    )


def summarise(
    ops: list[Row],
    invoke: Row,
    placements: PlacementCheck,
    placement_source: str,
    repeats: int,
    source: str,
    why_not: WhyNot,
    paired: tuple[str, float] | None = None,
) -> OpProfile:
    """The record: per op, roll-ups per type and backend, the sum check and the placement check.

    Medians, not means: on a shared machine a few slow invokes move a mean by more than the
    tolerance, and the sum check compares two such figures. ``paired``: where each invoke's op
    times are known together (the runtime's profiler), ``(sum_basis, ratio)``: the median over
    invokes of their sum over that same invoke's time, which a preemption landing in one op cannot
    tilt; it is then the sum check's figure."""
    total = sum(o["median_ms"] for o in ops)
    basis, ratio = paired or ("medians", total / invoke["median_ms"] if invoke["median_ms"] else None)
    adds_up = ratio is not None and abs(ratio - 1) <= TOLERANCE
    note = None if adds_up or ratio is None else why_not(total, ratio, invoke, ops)
    return {
        "source": source,
        "placement_source": placement_source,
        "repeats": repeats,
        "invoke": invoke,
        "sum_median_ms": total,
        "sum_mean_ms": sum(o["mean_ms"] for o in ops),
        "sum_over_invoke": ratio,
        "sum_basis": basis,
        # the sum against the whole invoke's process CPU time (all threads): with one thread the
        # work itself, which waiting for a busy machine's CPU does not inflate
        "sum_over_invoke_cpu": total / invoke["cpu_median_ms"] if invoke["cpu_median_ms"] else None,
        "adds_up": adds_up,
        "tolerance": TOLERANCE,
        "note": note,
        "placements": placements,
        "by_type": rollup(ops, "type", total),
        "by_backend": rollup(ops, "backend", total),
        "ops": ops,
    }


def rollup(ops: list[Row], key: str, total: float) -> dict[str, dict[str, Any]]:
    """Count, summed median time and share of the sum per value of ``key``, costliest first."""
    groups: dict[str, dict[str, Any]] = {}
    for op in ops:
        g = groups.setdefault(str(op[key]), {"count": 0, "ms": 0.0})
        g["count"] += 1
        g["ms"] += op["median_ms"]
    for g in groups.values():
        g["share"] = g["ms"] / total if total else None
    return dict(sorted(groups.items(), key=lambda kv: -kv[1]["ms"]))


def check_placements(ops: list[Row], coverage: Mapping[str, Any], fallback: str) -> PlacementCheck:
    """Do the per-op placements count what the coverage record says the delegate took?
    ``fallback``: the backend's name for "left on the CPU"."""
    delegated = coverage.get("ops_delegated")
    placed = None
    if ops and all(o["backend"] is not None for o in ops):
        placed = sum(1 for o in ops if o["backend"] != fallback)
    agree = None if delegated is None or placed is None else placed == delegated
    return {"ops_delegated_by_coverage": delegated, "ops_delegated_by_profile": placed, "agree": agree}
