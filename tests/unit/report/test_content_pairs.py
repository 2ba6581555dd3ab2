"""Runs of the same images under other ids pair by content (every record's input hash, one for one,
ground truth pair by pair through the class list); anything less stays refused (no assets: run
documents and records are written here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from shared_runs import fake_run_dir

from evalharness.core.input_hash import FIELD, LEGACY, METHOD
from evalharness.report.commands.diff import build_diff
from evalharness.report.runs import comparability, definition_of
from evalharness.rundir.reader import Run

STEMS = ["x3", "x1", "x2", "x0"]


def _run(
    tmp_path: Path, label: str, ext: str, truth: dict[str, int], inputs: dict[str, str] | None = None
) -> Run:
    """An ImageNet run on ``<stem>.<ext>``: right on every image; the input hash is the stem's (the
    same image) unless ``inputs`` says otherwise."""
    records = [
        {"id": f"{s}.{ext}", "label": s, "label_index": truth[s], "topk": [truth[s], 9],
         "input_float_sha256": (inputs or {}).get(s, f"h-{s}"), "input_sha256": f"h-{s}"}
        for s in sorted(STEMS)
    ]  # fmt: skip
    fake_run_dir(tmp_path / label, predictions=records)
    dataset = {"name": label, "manifest_kind": "relative path + sha256", "count": len(STEMS)}
    dataset |= {"manifest_sha256": label * 64, "truth_sha256": label * 64}
    provenance = {
        "config": {"task": {"name": "imagenet", "top_k": 2, "num_images": 0}},
        "labels": {"path": "labels.txt", "sha256": "l" * 64, "names_sha256": "n" * 64},
        "model": {"name": "m", "bytes": 1000},
        "dataset": dataset,
    }
    latency = {"inference": {"mean": 1.0, "p50": 1.0}}
    doc = {"task": "imagenet", "status": "complete", "latency_ms": latency, "provenance": provenance}
    run = Run(label, str(tmp_path / label), doc)  # type: ignore[arg-type]
    doc["metrics"] = definition_of(run).scorer().add_all(run.predictions).result()
    return run


TRUTH = {"x0": 1, "x1": 2, "x2": 3, "x3": 4}


def test_the_same_inputs_under_other_ids_pair_by_content(tmp_path):
    a, b = _run(tmp_path, "A", "JPEG", TRUTH), _run(tmp_path, "B", "jpg", TRUTH)
    assert comparability(a, b).refused  # without by_content (sweep, explain): refused as before
    comp = comparability(a, b, by_content=True)
    assert comp.refused == []
    assert comp.notes[0].startswith("the same 4 images, ids differ: x0.JPEG ↔ x0.jpg (paired by content")
    doc = build_diff(a, b, comp)
    assert doc["inputs"]["summary"] == "inputs identical on 4/4 images (real values, NHWC)"
    assert doc["classification"]["paired_images"] == 4
    assert doc["comparability"]["by_content"] == {
        "paired": 4,
        "ids_differ": 4,
        "example": ["x0.JPEG", "x0.jpg"],
    }


@pytest.mark.parametrize(
    ("truth", "inputs", "why"),
    [
        (TRUTH, {"x2": "other"}, "the inputs differ"),
        ({**TRUTH, "x1": 7}, None, "the same input has another ground truth: 'x1.JPEG' ↔ 'x1.jpg'"),
    ],
)
def test_other_images_or_other_truth_stay_refused(tmp_path, truth, inputs, why):
    a, b = _run(tmp_path, "A", "JPEG", TRUTH), _run(tmp_path, "B", "jpg", truth, inputs)
    comp = comparability(a, b, by_content=True)
    assert comp.refused[0].startswith("dataset differs") and comp.by_content is None
    assert comp.refused[-1].startswith(f"not the same images by content either: {why}")


def test_runs_without_input_hashes_stay_refused(tmp_path):
    a, b = _run(tmp_path, "A", "JPEG", TRUTH), _run(tmp_path, "B", "jpg", TRUTH)
    for record in b.predictions:
        del record["input_float_sha256"]
    why = comparability(a, b, by_content=True).refused[-1]
    assert why.endswith("not every record holds its id and input hash")


def test_runs_hashed_by_two_methods_stay_refused(tmp_path):
    """A run recorded before the current input hash cannot pair with one after by content: equal
    inputs hash differently under two methods, and the refusal says so."""
    a, b = _run(tmp_path, "A", "JPEG", TRUTH), _run(tmp_path, "B", "jpg", TRUTH)
    for record in b.predictions:
        record[FIELD] = METHOD
    why = comparability(a, b, by_content=True).refused[-1]
    assert f"made by different methods (run A's {LEGACY}, run B's {METHOD})" in why
