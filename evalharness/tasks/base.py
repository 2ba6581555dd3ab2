"""The contract between the run loop and a task.

Like detectron2's evaluators: ``reset / update / compute``. A task lists its samples, turns one
sample into input tensors, and scores outputs; it never sees which runtime or delegate ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from evalharness.data.manifest import dataset_identity
from evalharness.data.preprocess import preprocessing_provenance
from evalharness.runtime.tensors import TensorInfo


class Evaluator(Protocol):
    def reset(self) -> None: ...

    def update(self, sample: Any, outputs: list[np.ndarray]) -> dict:
        """Score one sample; return its prediction record (one JSON line in predictions.jsonl)."""

    def compute(self) -> dict:
        """Metrics over every sample updated so far (also valid for a partial run)."""

    # Optional, for tasks with can_resume: restore(record) re-counts a record of an earlier session.


class Task(Protocol):
    name: str
    can_resume: bool  # True when evaluator.restore(record) rebuilds state from predictions.jsonl
    samples: Sequence[Any]
    evaluator: Evaluator

    def bind(self, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> None:
        """Check the model fits the task (clear error before the loop) and prepare preprocessing."""

    def sample_id(self, sample: Any) -> str:
        """Stable identity of a sample (e.g. the image path relative to the dataset root)."""

    def prepare(self, sample: Any) -> list[np.ndarray]:
        """Decode and preprocess one sample into the model's input tensors."""

    def provenance(self) -> dict:
        """Dataset and preprocessing description for metrics.json."""

    def summary_lines(self, doc: dict) -> list[str]:
        """Human-readable result lines from the metrics.json document, as the seed tool prints them."""


def image_cache_key(task) -> dict:
    """Tensor-cache key of a file-image task: its images (manifest) and its preprocessing recipe,
    including the bound input spec (shape, dtype, quantisation) the tensors were made for."""
    return {
        "task": task.name,
        "manifest": dataset_identity([(s.key, s.path) for s in task.samples])["manifest_sha256"],
        "preprocessing": preprocessing_provenance(task.spec, task.input),
    }
