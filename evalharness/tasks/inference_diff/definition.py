"""TFLite's Inference Diff: its config, records (per-run output errors) -> per-output error and checks.

A record holds one random-input run's comparison of every output with the reference pass: mean,
max and p99 absolute error, cosine similarity, non-finite count and both outputs' largest magnitude.
An average error hides the failures that matter, so named checks run per output: NaN/Inf in the
test output, a silent all-near-zero output where the reference is not, and a cosine similarity to
the reference below ``min_cosine``. A tripped check fails the run (``fail_on_check``).

Beside the raw errors, outputs a decoder understands are compared decoded
(:mod:`evalharness.stats.decoded`): a classifier's top-1/top-5 classes, a detector's boxes (IoU of
matched boxes, class agreement, boxes lost and new, score change) under ``metrics.decoded``; a model
no decoder understands says so there (``"no decoder: raw tensors only"``). The decoded comparison
informs for a classifier (its score vector's cosine check stays the judge). A detector's
post-processed outputs (boxes ordered by score, class ids) are judged decoded: there the raw
``low_cosine`` check is recorded but informational (``metrics.informational_checks``: a near-tied
box moving one place in the list reads as a huge raw error), and the decoded check fails the run
when fewer than ``min_decoded_agreement`` of the boxes stayed (same box, same class). NaN/Inf and
silent-zero checks stay on the raw tensors for every model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalharness.core.documents import JSONMap
from evalharness.core.schema import bounds
from evalharness.stats.decoded import DecodedScorer, DetectorSettings, failed_checks
from evalharness.stats.intervals import CONFIDENCE, z_value
from evalharness.tasks.defaults import from_conf, setting
from evalharness.tasks.definition import Abilities, Rules, Scorer, TaskDefinition, register
from evalharness.tasks.inference_diff.view import InferenceDiffView, OutputErrorsComparison


def mean_interval(values: np.ndarray, confidence: float = CONFIDENCE) -> list[float] | None:
    """Normal interval of a mean over independent runs: mean ± z·sd/√n (sd with n-1); None below 2."""
    if values.size < 2:
        return None
    half = z_value(confidence) * float(values.std(ddof=1)) / np.sqrt(values.size)
    return [float(values.mean()) - half, float(values.mean()) + half]


DECODED_IOU = 0.5  # a detector's boxes match at IoU >= this (COCO's AP50 threshold)


@dataclass
@from_conf("inference_diff")  # the defaults: conf/task/inference_diff.yaml
class InferenceDiffSettings:
    name: str
    num_runs: int = field(metadata=bounds(1))
    seed: int
    min_cosine: float  # above 1 every run trips the check (how tests force one)
    zero_tol: float = field(metadata=bounds(0.0))
    fail_on_check: bool
    # a detector's reference boxes compared decoded: those scored >= this (random inputs give a
    # detector a few confident boxes and many near-tied ones below ~0.15 that mean nothing)
    decoded_min_score: float
    # a detector: fewer boxes kept (same box and class) fails
    min_decoded_agreement: float = field(metadata=bounds(0.0, 1.0))
    # a delegate config: TFLite's builtin kernels on one thread, as the seed tool's reference
    reference_delegate: Any


class OutputErrorScorer(Scorer):
    """Per-output error statistics over the runs, and the named checks."""

    def __init__(
        self,
        output_names: list[str],
        min_cosine: float,
        zero_tol: float,
        decoded: DecodedScorer,
        min_decoded_agreement: float = field(default=0.9, metadata=bounds(0.0, 1.0)),
    ) -> None:
        self.names, self.min_cosine, self.zero_tol = list(output_names), min_cosine, zero_tol
        self.per_output: list[list[dict[str, Any]]] = [[] for _ in self.names]
        self.decoded, self.min_decoded_agreement = decoded, min_decoded_agreement

    def add(self, record: Mapping[str, Any]) -> None:
        for runs, stats in zip(self.per_output, record["outputs"], strict=True):
            runs.append(stats)
        if record.get("decoded") is not None:
            self.decoded.add(record["id"], record["decoded"])

    def result(self) -> JSONMap:
        outputs: list[dict[str, Any]] = []
        failed: list[str] = []
        informational: list[str] = []
        intervals: dict[str, Any] = {}
        judged_decoded = {"low_cosine"} if self.decoded.kind == "detector" else set()
        for name, runs in zip(self.names, self.per_output, strict=True):
            avg = np.array([r["avg"] for r in runs], dtype=np.float64)
            checks = {
                "nan_or_inf": sum(r["nonfinite"] for r in runs) > 0,
                "silent_zero": any(r["test_abs_max"] <= self.zero_tol < r["ref_abs_max"] for r in runs),
                "low_cosine": min((r["cosine"] for r in runs), default=1.0) < self.min_cosine,
            }
            for check in (c for c, hit in checks.items() if hit):
                (informational if check in judged_decoded else failed).append(f"{name}: {check}")
            intervals[name] = mean_interval(avg)
            outputs.append(
                {
                    "name": name,
                    "avg_error": float(avg.mean()) if avg.size else None,
                    "std_dev": float(avg.std()) if avg.size else None,
                    "max_abs_error": max((r["max"] for r in runs), default=None),
                    "p99_abs_error": max((r["p99"] for r in runs), default=None),
                    "nonfinite": sum(r["nonfinite"] for r in runs),
                    "min_cosine": min((r["cosine"] for r in runs), default=None),
                    "checks": checks,
                }
            )
        decoded = self.decoded.result()
        return {
            "num_scored": len(self.per_output[0]) if self.per_output else 0,
            "outputs": outputs,
            "failed_checks": failed + failed_checks(decoded, self.min_decoded_agreement),
            "informational_checks": informational,
            "decoded": decoded,
            "intervals": {"method": "normal", "confidence": CONFIDENCE, "avg_error": intervals},
        }


@register
class InferenceDiffDefinition(TaskDefinition):
    name = "inference_diff"
    schema = InferenceDiffSettings
    live = "evalharness.tasks.inference_diff.live:InferenceDiffTask"
    listing_order = 2
    abilities = Abilities(reads_dataset=False)  # seeded random inputs
    comparison = OutputErrorsComparison
    view = InferenceDiffView  # no headline accuracy: its lines give each output's error

    def rules(self) -> Rules:
        """A reference pass first; a tripped check fails the run unless ``fail_on_check`` is off."""
        s = self.settings
        return Rules(
            reference_delegate=dict(s["reference_delegate"]), fail_on_checks=bool(s["fail_on_check"])
        )

    def scorer(self, ground_truth: list[str] | None = None, decoded: str | None = None) -> OutputErrorScorer:
        """``ground_truth``: the model's output names (the live run knows them once bound);
        ``decoded``: how the outputs decode ('classifier', 'detector', None: no decoder)."""
        extra: DetectorSettings = (
            {
                "min_score": self.decoded_min_score(),
                "iou_threshold": DECODED_IOU,
                "match": "any class",
                "min_agreement": float(self._setting("min_decoded_agreement")),
            }
            if decoded == "detector"
            else {}
        )
        return OutputErrorScorer(
            ground_truth or [],
            float(self._setting("min_cosine")),
            float(self._setting("zero_tol")),
            DecodedScorer(decoded, extra),
            float(self._setting("min_decoded_agreement")),
        )

    def decoded_min_score(self) -> float:
        return float(self._setting("decoded_min_score"))

    def _setting(self, key: str) -> Any:
        return setting(self.settings, self.name, key)
