"""The two sides of an explanation: each run's model, delegate path and exact input tensors.

A side is rebuilt from its run directory alone: ``provenance.model.path`` (checked against its
recorded sha256), the delegate config it ran with (``provenance.config.delegate``, planned again for
its runner, so an unavailable delegate is the same one-line error as in a run), and the input
tensors made again with the run's recorded preprocessing (``data.preprocess``), never an
approximation. Runs that cannot be paired this way are refused with the reason (exit 2).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalharness.core.checksum import sha256_file
from evalharness.core.errors import DataError, EvalHarnessError
from evalharness.data.rebuilt_input import InputNotRebuilt, rebuilt_input, run_recipe
from evalharness.data.run_images import recorded_images
from evalharness.report.runs import MODEL_INPUT_FIELDS, comparability, field_differences
from evalharness.rundir.reader import Run
from evalharness.runtime import DelegatePlan, Model, check_runner, load_model, plan_delegate
from evalharness.runtime.runners import RunnerSettings
from evalharness.runtime.subgraph import ModelGraph

# What may differ between the runs' preprocessing: how the model's own input takes the pixels.
INPUT_FIELDS = (*MODEL_INPUT_FIELDS, "integer_input")


class ExplainError(EvalHarnessError):
    """The runs cannot be explained (other images, no shared graph, unsupported outputs): exit 2."""


@dataclass
class Side:
    """One run's path: its graph, its delegate plan, and a cache of models loaded on that path."""

    label: str
    run: Run
    graph: ModelGraph
    plan: DelegatePlan
    runtime: str
    runner: RunnerSettings | None
    workdir: str
    compilations: int = 0
    _written: dict[str, Any] = field(default_factory=dict)

    def load(self, key: str, write: Callable[..., str]) -> Model:
        """Load the sub-model ``key`` (written once by ``write(path)``, which returns the path) on
        this side's path."""
        path: str | None = self._written.get(key)
        if path is None:
            path = write(os.path.join(self.workdir, f"{self.label}_{key}.tflite"))
            self._written[key] = path
        self.compilations += 1
        return load_model(path, self.plan, self.runtime, self.runner)

    def run_model(self, model: Model, feeds: list[dict[int, np.ndarray]]) -> list[dict[int, np.ndarray]]:
        """Invoke ``model`` once per feed (tensor index -> value); outputs by tensor index."""
        results = []
        for feed in feeds:
            model.set_inputs([feed[info.index] for info in model.inputs])
            model.invoke()
            results.append(
                {info.index: v for info, v in zip(model.outputs, model.get_outputs(), strict=True)}
            )
        return results


def open_side(run: Run, label: str, workdir: str) -> Side:
    path = checked_model_path(run)
    plan, runtime, runner = run_path(run)
    return Side(label, run, ModelGraph(path), plan, runtime, runner, workdir)


def checked_model_path(run: Run) -> str:
    """The run's model file, refused (exit 2) when missing or changed since the run (its sha256)."""
    path, recorded = run.provenance.model.path, run.provenance.model.sha256
    if not path or not os.path.isfile(path):
        raise ExplainError(f"run {run.label}: model file {path!r} (provenance.model.path) not found")
    if recorded and sha256_file(path) != recorded:
        raise ExplainError(
            f"run {run.label}: {path} changed since the run (sha256 differs from provenance.model.sha256); "
            "explain needs the model the run used"
        )
    return str(path)


def run_path(run: Run) -> tuple[DelegatePlan, str, RunnerSettings]:
    """(delegate plan, runtime, runner) the run ran with, planned again for its runner."""
    delegate = run.provenance.config.group("delegate") or run.provenance.delegate.flags
    if not delegate:
        raise ExplainError(f"run {run.label}: no delegate config recorded (provenance.config.delegate)")
    runner = check_runner(run.provenance.config.group("runner") or {"name": "host"}, latency_only_task=False)
    plan = plan_delegate(delegate, runner.name)
    return plan, run.provenance.runtime.name or "litert", runner


def check_pair(a: Run, b: Run, ga: ModelGraph, gb: ModelGraph) -> dict[int, int]:
    """A's activation tensor index -> B's, or refuse (exit 2) runs on other images or models without
    a shared graph. Tensors are matched by name, as ai-edge-quantizer's model validator matches a
    float model and its quantized variant; the ops must be the same ops in the same order, wired
    to the matched tensors, with the same shapes (dtypes may differ: float vs int8)."""
    c = comparability(a, b)
    if c.refused:
        raise ExplainError("runs are not comparable: " + "; ".join(c.refused))
    tensor_map = _match_tensors(ga, gb)
    if (
        tensor_map is None
        or len(ga.ops) != len(gb.ops)
        or any(
            x.type != y.type or [tensor_map.get(t, -2) for t in x.outputs] != list(y.outputs)
            for x, y in zip(ga.ops, gb.ops, strict=True)
        )
    ):
        raise ExplainError(
            f"{ga.path} and {gb.path} share no graph (other ops, tensor names or wiring); explain compares "
            "one graph on two paths (two delegates, a copy with other weights, a quantized variant)"
        )
    differing = [t for t, u in tensor_map.items() if ga.tensor_signature(t)[0] != gb.tensor_signature(u)[0]]
    if differing:
        raise ExplainError(
            f"{ga.path} and {gb.path}: {len(differing)} activation tensors differ in shape "
            f"(first: {ga.tensor_name(differing[0])!r}); explain needs tensors it can feed across"
        )
    recipe = field_differences(a.provenance.preprocessing, b.provenance.preprocessing, INPUT_FIELDS)
    if recipe:
        raise ExplainError(
            "the runs' preprocessing differs (" + "; ".join(recipe) + "); the answer would change "
            "before the first op: run both with the same model.preprocess"
        )
    return tensor_map


def _match_tensors(ga: ModelGraph, gb: ModelGraph) -> dict[int, int] | None:
    """Activations matched by name (by index where a name repeats); None if any has no match."""
    by_name: dict[str, list[int]] = {}
    for u in gb.activations():
        by_name.setdefault(gb.tensor_name(u), []).append(u)
    out = {}
    for t in ga.activations():
        found = by_name.get(ga.tensor_name(t), [])
        match = found[0] if len(found) == 1 else (t if t in found else None)
        if match is None:
            return None
        out[t] = match
    return out


def input_tensors(run: Run, ids: list[str]) -> list[np.ndarray]:
    """The exact input tensors the run fed for ``ids``, made again as the run made them and checked
    against the hashes its records carry (data/rebuilt_input.py); an input that does not verify is
    refused (exit 2), never traced."""
    try:
        recipe = run_recipe(run.provenance.preprocessing, run.provenance.model.inputs)
    except DataError:
        recipe = None
    if recipe is None or not run.provenance.dataset.root:
        raise ExplainError(f"run {run.label}: no preprocessing input or dataset root recorded")
    # one lookup whatever held them: a folder's files, a container's members checked by digest
    images = recorded_images(run.provenance.dataset)
    records = {str(r.get("id")): r for r in run.predictions}
    try:
        return [rebuilt_input(images, i, recipe, records.get(i)).tensor for i in ids]
    except InputNotRebuilt as exc:
        raise ExplainError(f"run {run.label}: {exc}") from exc
