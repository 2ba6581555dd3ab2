"""The documents evalharness writes and reads, as types: ``metrics.json``, a predictions record and
the ``report diff`` document.

They are JSON on disk and plain dicts in memory (a ``TypedDict`` is a dict at run time: nothing
written changes); typing them lets the type checker hold the builder (``rundir/document.py``) and
``report diff`` to the same keys, which docs/output-files.md lists.
One module on the lowest floor, so that every room can name them. The blocks whose keys belong to a
task or a plug-in (``metrics``, ``provenance``, a diff's paired comparison) stay ``JSONMap``: their
shape is the task definition's, not this file's.

A metrics.json read back from a file is what the file holds, not what these types say (an older
schema version, a hand-edited file): readers get it as the typed, tolerantly parsed
:class:`evalharness.rundir.metrics_file.Document`, never as one of these dicts.
"""

from __future__ import annotations

from typing import Any, TypedDict

JSONMap = dict[str, Any]  # a JSON object whose keys this module does not fix


class Assumed(TypedDict):
    """One thing the tool assumed, printed once (``Assumed:``) and recorded: the key, the value
    assumed, why, and the setting that says otherwise."""

    what: str
    assumed: str | int  # an index (dataset.label_offset) is recorded as the number it is
    why: str
    fix: str


class PredictionsFile(TypedDict):
    """metrics.json ``predictions``: where the per-sample records are and how many were written."""

    path: str
    format: str  # "jsonl"
    count: int


class _RunDocumentKeys(TypedDict):
    schema_version: int
    task: str
    status: str  # complete | partial | invalid | failed
    stop_reason: str | None
    started_at: str
    finished_at: str
    metrics: JSONMap
    latency_ms: JSONMap
    memory_mb: JSONMap
    skipped: list[Any]
    first_output_repeatable: bool | None
    resumed_samples: int
    throughput: JSONMap
    predictions: PredictionsFile
    artifacts: list[str]
    output_checks: JSONMap | None
    provenance: JSONMap


class RunDocument(_RunDocumentKeys, total=False):
    """metrics.json of a run that produced results (``rundir.document.run_document`` builds it)."""

    reference: JSONMap  # a reference pass's delegate and latency (tasks with a reference pass)
    merged: JSONMap  # report merge: the shards pooled into this run


class _Kept(TypedDict, total=False):
    stop_reason: str  # an interrupted job: where it stopped
    predictions: JSONMap  # an interrupted job: what it kept


class FailureDocument(_Kept):
    """metrics.json of a job that failed (or was interrupted) before producing results: its error,
    no metrics; an interrupted one names what it kept (``stop_reason``, ``predictions``)."""

    schema_version: int
    status: str  # "failed" | "interrupted"
    error: str
    metrics: None
    finished_at: str
    provenance: JSONMap  # config and overrides only


class _RecordKeys(TypedDict):
    id: str  # the sample's key in dataset order (report merge and diff pair records by it)


class PredictionRecord(_RecordKeys, total=False):
    """One line of predictions.jsonl: the fields every task's record has."""

    latency_ms: float  # that sample's timed invoke, added by the loop (absent while batched)


class ClassificationRecord(PredictionRecord, total=False):
    """task=imagenet: the top-K of the model's output and where the true label ranks in it."""

    label: str
    label_index: int
    topk: list[int]  # output indices (label-file lines)
    topk_labels: list[str]
    scores: list[float]  # dequantised values of ``topk``
    rank: int | None  # position of the true label in ``topk``; None when not in the top K


class DetectionRecord(PredictionRecord, total=False):
    """task=coco: detections in original pixels, mapped to COCO categories."""

    image_id: int
    detections: list[list[float]]  # [category_id, score, x, y, w, h]
    unmapped: int  # detections of classes the class map has no category for
    # suppressions by a kept box of exactly the suppressed box's score (decoders/nms.py: the other
    # order of equal scores would keep the other box); absent when the model ran its own NMS
    nms_ties: int


class OutputError(TypedDict):
    """task=inference_diff: one output's error against the reference delegate's output, one run."""

    avg: float  # mean |test - reference| over the finite entries (NaN: none finite)
    max: float
    p99: float
    nonfinite: int  # NaN or Inf entries of the test output
    cosine: float
    test_abs_max: float
    ref_abs_max: float


class OutputErrorRecord(PredictionRecord, total=False):
    """task=inference_diff: per output, the error against the reference delegate's output."""

    outputs: list[OutputError]
    decoded: JSONMap  # the decoded answers compared (classifier or detector), when asked


class DiffRow(TypedDict, total=False):
    """One row of a diff section: a quantity of run A and run B and how it changed."""

    name: str
    a: Any
    b: Any
    delta: float | None
    delta_pct: float | None
    speedup: float | None  # latency rows only


class RunSummary(TypedDict):
    """Who each side of a diff is: the run's identity for the report's heading. ``name``: the side
    named by what differs from the other (report/run_names.py), for every header that names it."""

    name: str
    label: str
    dir: str
    status: str
    task: str | None
    model: Any
    model_sha256: Any
    delegate: Any
    runtime: str
    dataset: Any
    dataset_root: Any
    num_scored: Any
    ops_on_cpu_by_type: Any
    cpu: Any


class _DiffKeys(TypedDict):
    a: RunSummary
    b: RunSummary
    task: str | None
    comparability: JSONMap
    metrics: list[DiffRow]
    latency: list[DiffRow]
    model: list[DiffRow]
    alpha: float
    equivalence_margin: float
    latency_speedup: JSONMap | None
    latency_validity: JSONMap


class DiffDocument(_DiffKeys, total=False):
    """Everything ``report diff`` knows about two runs (``report.diff.build_diff``). The task's paired
    comparison also lies in it, under the key its definition's ``comparison`` names (a plug-in names
    its own, so that key is not listed here)."""

    op_profile: JSONMap
    inputs: JSONMap  # were the runs fed the same inputs (report/input_check.py: summary, first_differing)
    verdict: str
    gates: list[JSONMap]  # the --fail-if rules and how each held (report diff --fail-if)
    paired_on: JSONMap  # a held-out part: the images both runs scored, those left out and why
