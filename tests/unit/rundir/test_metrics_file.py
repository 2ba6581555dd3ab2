"""The typed metrics.json (rundir/metrics_file.py): every field a reader uses is an attribute, an edited
or older file reads as "not recorded" where it lacks a field, and the JSON is kept as read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalharness.rundir.document import SCHEMA_VERSION, failure_document, run_document
from evalharness.rundir.metrics_file import Document, migrate, parse_document
from evalharness.rundir.reader import Run, load_run

FIXTURES = Path(__file__).parents[2] / "fixtures" / "runs_schema1"

PROVENANCE = {
    "model": {"name": "m", "path": "/m.tflite", "sha256": "s" * 64, "bytes": 1000,
              "inputs": [{"name": "x", "dtype": "uint8"}],
              "quant": {"name": "int8", "calibration": {"source": "dataset"}}},
    "runtime": {"name": "litert", "package": "ai-edge-litert", "version": "2.3.0"},
    "delegate": {"name": "gpu", "flags": {"num_threads": 1}, "library": {"sha256": "l" * 64},
                 "coverage": {"ops_total": 31, "ops_delegated": 29, "partitions": 2, "fraction": 0.9,
                              "ops_on_cpu_by_type": {"SOFTMAX": 1, "ODD": "x"},
                              "device": {"adapter": "llvmpipe"}},
                 "cache": []},
    "dataset": {"name": "d", "count": 5, "manifest_sha256": "a" * 64,
                "shard": {"index": 1, "count": 2, "full_count": 10},
                "split": {"part": "held_out", "whole": {"count": 8}}, "index": {"dir": "/idx"}},
    "labels": {"path": "/l.txt", "sha256": "b" * 64, "names_sha256": "c" * 64, "count": 3,
               "class_map": "coco80"},
    "preprocessing": {"input": {"dtype": "float32"}},
    "host": {"hostname": "h", "cpu": "c", "cpu_features": ["avx"]},
    "thread_budget": {"loop": {"shape": "pipelined"}},
    "evalharness": {"version": "0.1.0"},
    "config": {"task": {"name": "imagenet", "top_k": 5}},
    "overrides": ["delegate=gpu"],
    "assumptions": [{"what": "w", "assumed": 1, "why": "y", "fix": "f"}],
}  # fmt: skip


def _document() -> dict:
    doc = run_document(
        task="imagenet", status="complete", stop_reason=None, started_at="t0", finished_at="t1",
        metrics={"top1": 0.5, "num_images": 5, "num_scored": 5, "num_skipped": 0,
                 "intervals": {"top1": [0.1, 0.9]}, "analysis": {"per_class": []}},
        latency_ms={"init": 28, "inference": {"count": 5, "mean": 0.87, "p50": 0.86},
                    "validity": {"valid": False, "problems": ["short"]}},
        memory_mb={"peak_rss": 72}, throughput={"images_per_s": 93.0, "per_image_ms": {"preprocess": 1.5}},
        skipped=[], first_output_repeatable=True, resumed_samples=0, predictions_count=5, artifacts=[],
        provenance=PROVENANCE,
    )  # fmt: skip
    return json.loads(json.dumps(doc))


def test_every_block_reads_as_attributes():
    doc = parse_document(_document())
    assert (doc.schema_version, doc.task, doc.status, doc.has_metrics) == (
        SCHEMA_VERSION,
        "imagenet",
        "complete",
        True,
    )
    assert (
        doc.metrics.values["top1"] == 0.5
        and doc.metrics.num_scored == 5
        and doc.metrics.analysis == {"per_class": []}
    )
    assert (
        doc.latency.inference.p50 == 0.86
        and doc.latency.valid is False
        and doc.latency.problems == ("short",)
    )
    assert doc.memory.peak_rss == 72 and isinstance(doc.memory.peak_rss, int)  # a number stays as written
    assert doc.throughput.stage_ms("preprocess") == 1.5 and doc.predictions.count == 5
    prov = doc.provenance
    calibration = prov.model.quant.calibration
    assert (prov.model.name, prov.model.quant.name) == ("m", "int8")
    assert calibration is not None and calibration.source == "dataset" and calibration.count is None
    assert prov.delegate.coverage.ops_on_cpu_by_type == {"SOFTMAX": 1}  # an edited entry left out
    assert prov.delegate.library_sha256 == "l" * 64 and prov.delegate.cache == ()
    assert prov.dataset.shard is not None and prov.dataset.shard.full_count == 10
    split = prov.dataset.split
    assert split is not None and split.whole is not None and split.whole.count == 8
    assert prov.dataset.index_dir == "/idx" and prov.labels.names_sha256 == "c" * 64
    assert prov.labels.class_map == "coco80"
    assert (
        prov.host.cpu_features == ("avx",)
        and prov.loop_shape == "pipelined"
        and prov.input_dtype == "float32"
    )
    assert prov.config.group("task") == {"name": "imagenet", "top_k": 5} and prov.overrides == (
        "delegate=gpu",
    )
    assert prov.assumptions[0].fix == "f" and prov.evalharness_version == "0.1.0"
    assert prov.named("delegate.flags.num_threads") == 1 and prov.named("no.such") is None


def test_the_json_is_kept_as_read():
    raw = _document()
    assert parse_document(raw).to_json() == raw


@pytest.mark.parametrize(
    "raw",
    [{}, {"status": 3, "metrics": None, "provenance": []}, {"metrics": [], "latency_ms": {"inference": "x"}},
     {"provenance": {"model": "m", "dataset": {"count": "5", "shard": 1}, "delegate": {"coverage": None}}}],
)  # fmt: skip
def test_an_edited_file_reads_as_not_recorded(raw):
    doc = parse_document(raw)
    assert doc.status == "unknown" and doc.schema_version == 1 and not doc.has_metrics
    assert doc.provenance.model.name is None and doc.provenance.dataset.count is None
    assert doc.provenance.dataset.shard is None and doc.latency.inference.count is None


def test_a_failure_record_has_no_metrics():
    doc = parse_document(
        json.loads(json.dumps(failure_document("boom", {"task": {"name": "coco"}}, ["x=1"])))
    )
    assert (doc.status, doc.error, doc.has_metrics) == ("failed", "boom", False)
    assert doc.provenance.overrides == ("x=1",) and doc.provenance.config.group("task") == {"name": "coco"}


def test_an_older_version_is_migrated_not_rewritten():
    old = {"task": "imagenet", "status": "complete", "metrics": {"top1": 1.0}}
    assert migrate(old)["schema_version"] == 1 and "schema_version" not in old
    doc = parse_document(old)
    assert doc.schema_version == 1 and doc.metrics.intervals == {} and doc.output_checks is None
    assert doc.metrics.analysis is None and doc.provenance.delegate.cache is None
    assert doc.to_json() == old


def test_the_schema_1_fixtures_read():
    runs = [load_run(str(p.parent), p.parent.name) for p in sorted(FIXTURES.rglob("metrics.json"))]
    assert runs and all(isinstance(run.document, Document) for run in runs)
    assert all(run.document.schema_version == 1 and run.provenance.model.name for run in runs)


def test_a_view_with_other_metrics_keeps_the_run():
    run = Run("A", "/runs/a", {"status": "complete", "metrics": {"top1": 1.0}})
    view = run.with_metrics({"top1": 0.5})
    assert view.metrics == {"top1": 0.5} and run.metrics == {"top1": 1.0}


def test_a_merged_run_names_its_shards():
    doc = parse_document(
        {"merged": {"shards": 2, "processes": 2, "hosts": ["a"], "host_count": 1, "runs": ["x", "y"]}}
    )
    assert doc.merged is not None and (doc.merged.shards, doc.merged.hosts, doc.merged.runs) == (
        2,
        ("a",),
        ("x", "y"),
    )
    assert parse_document({}).merged is None


def test_the_typed_document_follows_a_replaced_block():
    doc: dict = {"status": "complete", "metrics": {"top1": 1.0}}
    run = Run("A", "/runs/a", doc)
    first = run.document
    assert run.document is first  # parsed once
    doc["metrics"] = {"top1": 0.5}
    assert run.metrics == {"top1": 0.5} and run.document is not first
