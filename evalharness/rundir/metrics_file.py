"""``metrics.json`` as one typed, versioned document: what readers of a run get instead of string keys.

:func:`parse_document` turns a read-back file (already checked as untrusted JSON by
:func:`evalharness.rundir.reader.load_run`) into a :class:`Document` of frozen blocks: ``metrics``
(the figures the task's definition declares, read by their declared meta, plus the counts, intervals
and error analysis every task records), ``latency``, ``memory``, ``throughput``, ``predictions`` and
``provenance`` (:mod:`evalharness.rundir.provenance_record`). Parsing is tolerant, as the readers were: a
missing or mistyped key is None, ``{}`` or ``()``. A document of an older schema version is first
brought to the current layout by :func:`migrate` (each version's step says what it fills in), so no
reader branches on the version; the version the file was written with stays in ``schema_version``.

Every block keeps the JSON object it was parsed from (``raw``). Writing goes the same way round:
:mod:`evalharness.rundir.document` builds a run's (or a failure's) JSON in its fixed key order, the
typed document is parsed from it (what the run's summary lines are made from) and
``RunWriter.write_metrics`` writes :meth:`Document.to_json`: the bytes of metrics.json are the
builder's, as before, and nothing is written that a reader could not parse back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evalharness.rundir.json_fields import (
    JSONMap,
    flag,
    integer,
    items,
    mapping,
    number,
    optional_mapping,
    strings,
    text,
)
from evalharness.rundir.provenance_record import Provenance

SCHEMA_VERSION = 4


@dataclass(frozen=True)
class NmsTies:
    """``metrics.nms_ties`` (task=coco, a decoder that runs NMS itself): on how many images NMS kept
    one of two overlapping detections of exactly equal score, and how many such suppressions; the
    other order of equal scores would have kept the other one (decoders/nms.py)."""

    images: int = 0
    suppressions: int = 0

    @classmethod
    def parse(cls, raw: JSONMap | None) -> NmsTies | None:
        if raw is None:
            return None
        return cls(integer(raw, "images") or 0, integer(raw, "suppressions") or 0)


@dataclass(frozen=True)
class Metrics:
    """``metrics``: the task's figures (``values``, keyed as its definition declares them) and the
    fields every task records beside them."""

    values: JSONMap = field(default_factory=dict)
    num_images: int | None = None
    num_scored: int | None = None
    num_skipped: int | None = None
    intervals: JSONMap = field(default_factory=dict)  # schema 2
    analysis: JSONMap | None = None  # schema 4: the error analysis; None: not recorded
    failed_checks: tuple[str, ...] = ()
    op_profile: JSONMap | None = None  # loop.op_profile: the per-op timings; None: not profiled
    nms_ties: NmsTies | None = None  # equal scores that decided NMS; None: no NMS of the harness ran

    @classmethod
    def parse(cls, raw: JSONMap) -> Metrics:
        return cls(
            raw,
            integer(raw, "num_images"),
            integer(raw, "num_scored"),
            integer(raw, "num_skipped"),
            mapping(raw, "intervals"),
            optional_mapping(raw, "analysis"),
            strings(raw, "failed_checks"),
            optional_mapping(raw, "op_profile"),
            NmsTies.parse(optional_mapping(raw, "nms_ties")),
        )

    def part(self, key: str) -> JSONMap:
        """An object among the task's figures (COCO's ``per_class``), ``{}`` when not recorded: what
        the task's own definition and view read, by the names they declare."""
        return mapping(self.values, key)

    def analysis_part(self, key: str) -> JSONMap:
        """An object of the error analysis (COCO's ``f1``, ``tide``), ``{}`` when not recorded."""
        return mapping(self.analysis or {}, key)

    def interval_part(self, key: str) -> JSONMap:
        """Intervals kept per output or class under one name (``avg_error``), ``{}`` when none."""
        return mapping(self.intervals, key)


@dataclass(frozen=True)
class LatencyStats:
    """One timed series of ``latency_ms`` (``inference``, ``warmup``)."""

    count: int | None = None
    mean: float | None = None
    std: float | None = None
    min: float | None = None
    max: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    raw: JSONMap = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: JSONMap) -> LatencyStats:
        mean, std, low, high = number(raw, "mean"), number(raw, "std"), number(raw, "min"), number(raw, "max")
        p50, p90, p99 = number(raw, "p50"), number(raw, "p90"), number(raw, "p99")
        return cls(integer(raw, "count"), mean, std, low, high, p50, p90, p99, raw)

    def figures(self, names: Iterable[str]) -> list[float | None]:
        """The statistics named (``mean``, ``p50``, ...), in that order: the columns of a table."""
        known = {"mean": self.mean, "std": self.std, "min": self.min, "max": self.max}
        known |= {"p50": self.p50, "p90": self.p90, "p99": self.p99}
        return [known[name] for name in names]


@dataclass(frozen=True)
class Latency:
    """``latency_ms``: load, first and warm-up invokes, the timed series and whether it is valid."""

    init: float | None = None
    first_inference: float | None = None
    warmup: LatencyStats = field(default_factory=LatencyStats)
    inference: LatencyStats = field(default_factory=LatencyStats)
    timed_region: str | None = None
    validity: JSONMap | None = None  # valid, problems, ...; None: not judged (an older run)
    raw: JSONMap = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: JSONMap) -> Latency:
        return cls(
            number(raw, "init"),
            number(raw, "first_inference"),
            LatencyStats.parse(mapping(raw, "warmup")),
            LatencyStats.parse(mapping(raw, "inference")),
            text(raw, "timed_region"),
            optional_mapping(raw, "validity"),
            raw,
        )

    def per_process(self) -> JSONMap:
        """What happens once per process (load, first invoke) and its series, as recorded (a missing
        one None): what a merge lists for each of its shards."""
        return {k: self.raw.get(k) for k in ("init", "first_inference", "warmup", "inference")}

    @property
    def valid(self) -> bool | None:
        """Whether the invoke latencies are a valid measurement; None when not judged."""
        return None if self.validity is None or "valid" not in self.validity else bool(self.validity["valid"])

    @property
    def block_cv(self) -> float | None:
        """The coefficient of variation of the ~0.1 s block means the validity was judged by."""
        return number(self.validity or {}, "cv")

    @property
    def problems(self) -> tuple[str, ...]:
        return strings(self.validity or {}, "problems")


@dataclass(frozen=True)
class Throughput:
    """``throughput``: the loop's wall time and rate, its workers, cache, resize path and stages."""

    loop_wall_s: float | None = None
    images_per_s: float | None = None
    workers: int | None = None
    cache: JSONMap | None = None
    resize: str | None = None
    batch: JSONMap | None = None
    per_image_ms: JSONMap = field(default_factory=dict)  # preprocess, invoke, postprocess
    raw: JSONMap = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: JSONMap) -> Throughput:
        return cls(
            number(raw, "loop_wall_s"),
            number(raw, "images_per_s"),
            integer(raw, "workers"),
            optional_mapping(raw, "cache"),
            text(raw, "resize"),
            optional_mapping(raw, "batch"),
            mapping(raw, "per_image_ms"),
            raw,
        )

    def stage_ms(self, stage: str) -> float | None:
        """Mean time per image of one loop stage (``preprocess``, ``invoke``, ``postprocess``)."""
        return number(self.per_image_ms, stage)


@dataclass(frozen=True)
class Memory:
    """``memory_mb``: RSS before the model load, the deltas at init and overall, the peak."""

    rss_before_load: float | None = None
    init_delta: float | None = None
    overall_delta: float | None = None
    peak_rss: float | None = None
    raw: JSONMap = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: JSONMap) -> Memory:
        before, init = number(raw, "rss_before_load"), number(raw, "init_delta")
        return cls(before, init, number(raw, "overall_delta"), number(raw, "peak_rss"), raw)


@dataclass(frozen=True)
class PredictionsFile:
    """``predictions``: where the per-sample records are and how many the run wrote."""

    path: str | None = None
    format: str | None = None
    count: int | None = None

    @classmethod
    def parse(cls, raw: JSONMap) -> PredictionsFile:
        return cls(text(raw, "path"), text(raw, "format"), integer(raw, "count"))


@dataclass(frozen=True)
class Merged:
    """``merged``: the shards ``report merge`` pooled into this run."""

    shards: int | None = None
    processes: int | None = None
    hosts: tuple[str, ...] = ()
    host_count: int | None = None
    scheme: str | None = None
    runs: tuple[str, ...] = ()

    @classmethod
    def parse(cls, raw: JSONMap) -> Merged:
        shards, processes, count = (
            integer(raw, "shards"),
            integer(raw, "processes"),
            integer(raw, "host_count"),
        )
        return cls(shards, processes, strings(raw, "hosts"), count, text(raw, "scheme"), strings(raw, "runs"))


@dataclass(frozen=True)
class Document:
    """A run's ``metrics.json``: a finished run's, a failure's (``error``, no metrics) or an
    interruption's (``predictions`` says what was kept), of any schema version."""

    schema_version: int = 1
    task: str | None = None
    status: str = "unknown"
    stop_reason: str | None = None
    error: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    metrics: Metrics = field(default_factory=Metrics)
    has_metrics: bool = False  # False: a failure (metrics null) or a file without them
    latency: Latency = field(default_factory=Latency)
    memory: Memory = field(default_factory=Memory)
    throughput: Throughput = field(default_factory=Throughput)
    skipped: tuple[Any, ...] = ()
    first_output_repeatable: bool | None = None
    resumed_samples: int | None = None
    predictions: PredictionsFile = field(default_factory=PredictionsFile)
    artifacts: tuple[str, ...] = ()
    output_checks: JSONMap | None = None
    provenance: Provenance = field(default_factory=Provenance)
    reference: JSONMap | None = None  # a reference pass's delegate and latency
    merged: Merged | None = None  # report merge: the shards pooled into this run
    raw: JSONMap = field(default_factory=dict, repr=False)

    def to_json(self) -> JSONMap:
        """The document as metrics.json holds it (what it was built or read from)."""
        return self.raw


def migrate(raw: Mapping[str, Any]) -> JSONMap:
    """A read-back document in the current layout, whatever version wrote it (the file's own version
    kept in ``schema_version``; a file without one is version 1). Each step fills in, as "not
    recorded", what its version added, so a reader needs no version check:

    - 1 -> 2: ``metrics.intervals`` (none), ``output_checks`` (null);
    - 2 -> 3: ``provenance.delegate.cache`` stays absent (None: the caches' states are unknown);
    - 3 -> 4: ``metrics.analysis`` stays absent (None: the analysis was not recorded).

    Nothing is added to the JSON a reader compares (``Document.raw`` is the file as read)."""
    doc = dict(raw)
    version = doc.get("schema_version")
    doc["schema_version"] = version if isinstance(version, int) and not isinstance(version, bool) else 1
    if doc["schema_version"] < 2:
        doc.setdefault("output_checks", None)
    return doc


def parse_document(raw: Mapping[str, Any]) -> Document:
    """The typed document of a metrics.json object (tolerant: see :mod:`evalharness.rundir.json_fields`)."""
    doc = migrate(raw)
    metrics = doc.get("metrics")
    return Document(
        schema_version=doc["schema_version"],
        task=text(doc, "task"),
        status=text(doc, "status") or "unknown",
        stop_reason=text(doc, "stop_reason"),
        error=text(doc, "error"),
        started_at=text(doc, "started_at"),
        finished_at=text(doc, "finished_at"),
        metrics=Metrics.parse(metrics if isinstance(metrics, dict) else {}),
        has_metrics=isinstance(metrics, dict) and bool(metrics),
        latency=Latency.parse(mapping(doc, "latency_ms")),
        memory=Memory.parse(mapping(doc, "memory_mb")),
        throughput=Throughput.parse(mapping(doc, "throughput")),
        skipped=items(doc, "skipped"),
        first_output_repeatable=flag(doc, "first_output_repeatable"),
        resumed_samples=integer(doc, "resumed_samples"),
        predictions=PredictionsFile.parse(mapping(doc, "predictions")),
        artifacts=strings(doc, "artifacts"),
        output_checks=optional_mapping(doc, "output_checks"),
        provenance=Provenance.parse(mapping(doc, "provenance")),
        reference=optional_mapping(doc, "reference"),
        merged=None if (merged := optional_mapping(doc, "merged")) is None else Merged.parse(merged),
        raw=dict(raw),
    )
