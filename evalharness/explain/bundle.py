"""``explain … --bundle DIR``: the smallest sub-model that still makes B's answer differ from A's, with
everything needed to show it again, and ``--replay DIR`` that does.

The cut starts at the culprit: ops s..end of each side's model (``a.tflite``, ``b.tflite``; the same
bytes when A and B ran one model on two paths), fed A's tensors crossing into op s (made B's type
where B's differs). The reduce pass moves s later while A's sub-model still gives A's answer and
B's still another on at least one changed image, so ops that do not matter to the change are
dropped from the front; the graph's outputs stay (the answer is made there). The bundle holds the
input tensors, both sides' output tensors, the environment (runtime versions, both delegates'
settings, hashes of the runtime's and a delegate's libraries) and one replay command for people to
read; :mod:`evalharness.explain.replay` checks every hash, loads both sub-models on their recorded
paths, feeds the inputs, and exits 0 only if every output equals the recorded one bit for bit (1
when it does not).
"""

from __future__ import annotations

import os
import platform
import sys
from typing import Any

import numpy as np

from evalharness.core.atomic_io import atomic_write_bytes, atomic_write_text
from evalharness.core.checksum import sha256_file
from evalharness.core.numbers import stable_json
from evalharness.explain.sides import ExplainError, Side

BUNDLE = "bundle.json"


def _suffix(
    side: Side, start: int, feeds: list[dict[int, np.ndarray]]
) -> tuple[list[int], list[dict[int, np.ndarray]]]:
    """(the sub-model's input tensor indices, its outputs per feed) for ops start..end on ``side``."""
    graph = side.graph
    model = side.load(f"bundle{start}", lambda p: graph.write(p, start, len(graph.ops)))
    crossing = [info.index for info in model.inputs]
    return crossing, side.run_model(model, [{t: f[t] for t in crossing} for f in feeds])


def reproduces(ctx: Any, start: int, images: list[int]) -> list[int]:
    """Changed images on which ops start..end give A's answer on A's path and another on B's."""
    a_feeds = [ctx.a_acts[i] for i in images]
    b_feeds = [ctx.a_fed[i] for i in images]
    _, a_out = _suffix(ctx.side_a, start, a_feeds)
    _, b_out = _suffix(ctx.side_b, start, b_feeds)
    found = []
    for i, ao, bo in zip(images, a_out, b_out, strict=True):
        want = ctx.a_answers[i]
        if ctx.answers_a.same(want, ctx.answers_a.of({**ctx.a_acts[i], **ao})) and not ctx.answers_b.same(
            want, ctx.answers_b.of({**ctx.a_fed[i], **bo})
        ):
            found.append(i)
    return found


def reduce(ctx: Any, culprit: int, images: list[int]) -> tuple[int, list[int]]:
    """(first op of the smallest suffix that still reproduces the change, the images it does on)."""
    n = len(ctx.side_b.graph.ops)
    start, kept = culprit, reproduces(ctx, culprit, images)
    while not kept and start > 0:  # the culprit alone does not: take earlier ops in
        start -= 1
        kept = reproduces(ctx, start, images)
    if not kept:
        raise ExplainError("nothing to bundle: no cut of B's model changes an answer fed A's tensors")
    while start + 1 < n:
        later = reproduces(ctx, start + 1, kept)
        if not later:
            break
        start, kept = start + 1, later
    return start, kept


def write_bundle(folder: str, ctx: Any, culprit: int | None) -> dict[str, Any]:
    """Write the bundle of the reproduced changed images into ``folder``; returns its summary."""
    if not ctx.reproduced:
        raise ExplainError("nothing to bundle: no changed answer was reproduced")
    start, images = reduce(ctx, culprit if culprit is not None else 0, ctx.reproduced)
    n = len(ctx.side_b.graph.ops)
    os.makedirs(folder, exist_ok=True)
    sides, arrays = {}, {}
    for label, side, feeds in (("A", ctx.side_a, ctx.a_acts), ("B", ctx.side_b, ctx.a_fed)):
        path = os.path.join(folder, f"{label.lower()}.tflite")
        side.graph.write(path, start, n)
        crossing, outs = _suffix(side, start, [feeds[i] for i in images])
        for k, (i, out) in enumerate(zip(images, outs, strict=True)):
            for p, t in enumerate(crossing):
                arrays[f"{label}_img{k}_in{p}"] = feeds[i][t]
            for p, value in enumerate(out.values()):
                arrays[f"{label}_img{k}_out{p}"] = value
        run = side.run
        sides[label] = {
            "model": os.path.basename(path),
            "model_sha256": sha256_file(path),
            "source_model": run.provenance.model.path,
            "source_sha256": run.provenance.model.sha256,
            "delegate": run.provenance.config.group("delegate") or run.provenance.delegate.flags,
            "runner": run.provenance.config.group("runner") or {"name": "host"},
            "runtime": side.runtime,
            "op_resolver": side.plan.op_resolver,
            "libraries": _libraries(run.provenance.config.group("delegate"), side.plan.external_path),
        }
    buffer = _npz(arrays)
    atomic_write_bytes(os.path.join(folder, "tensors.npz"), buffer)
    ids = [ctx.ids[i] for i in images]
    label_a, label_b = ctx.answers_a.label, ctx.answers_b.label
    changed = [
        {"id": ctx.ids[i], "a": label_a(ctx.a_answers[i]), "b": label_b(ctx.b_answers[i])} for i in images
    ]
    doc = {
        "kind": "evalharness explain bundle",
        "ops": {"model": n, "bundle": n - start, "first": start, "culprit": culprit},
        "images": ids,
        "changed": changed,
        "sides": sides,
        "environment": environment(),
        "replay": f"python -m evalharness.explain --replay {os.path.abspath(folder)}",
    }
    atomic_write_text(os.path.join(folder, BUNDLE), stable_json(doc))
    return {
        "dir": os.path.abspath(folder),
        "ops": doc["ops"],
        "images": len(ids),
        "replay": doc["replay"],
    }


def _npz(arrays: dict[str, Any]) -> bytes:
    import io

    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def _libraries(delegate: dict[str, Any], loaded: str | None) -> list[dict[str, Any]]:
    """sha256 of the files a delegate's settings name and of the library its plan loads (an
    external delegate's, found on the library path too): the replay loads nothing else."""
    found = []
    for key, value in sorted(delegate.items()):
        if isinstance(value, str) and os.path.isfile(value):
            found.append({"setting": key, "path": value, "sha256": sha256_file(value)})
    recorded = {os.path.realpath(e["path"]) for e in found}
    if loaded and os.path.isfile(loaded) and os.path.realpath(loaded) not in recorded:
        found.append({"setting": "library", "path": loaded, "sha256": sha256_file(loaded)})
    return found


def environment() -> dict[str, Any]:
    """Versions of what ran both sides, and the hashes of the runtime's native libraries."""
    from importlib import metadata

    versions: dict[str, str | None] = {}
    for package in ("evalharness", "ai-edge-litert", "numpy", "ai-edge-quantizer", "tensorflow"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    native = []
    try:  # the installed files of the runtime's package (no import: only runtime/ imports it)
        files = metadata.files("ai-edge-litert") or []
    except metadata.PackageNotFoundError:
        files = []
    for f in sorted(files, key=str):
        if ".so" in f.name:
            native.append({"file": str(f), "sha256": sha256_file(str(f.locate()))})
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "packages": versions,
        "litert_native_libraries": native,
    }
