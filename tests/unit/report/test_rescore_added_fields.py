"""A run recorded before a field was added inside one of its objects (TIDE's class counts) still
rescores as reproduced: the new field is listed as not recorded, never counted as a difference."""

from __future__ import annotations

from evalharness.report.commands import rescore
from evalharness.rundir.reader import Run

STORED = {"AP": 0.5, "num_scored": 4, "analysis": {"tide": {"AP50": 0.4}}}


def _run() -> Run:
    return Run("A", "/runs/a", {"status": "complete", "task": "coco", "schema_version": 4, "metrics": STORED})


def test_a_field_added_since_the_run_is_not_a_difference(monkeypatch):
    fresh = {**STORED, "analysis": {"tide": {"AP50": 0.4, "classes_averaged": 3}}}
    monkeypatch.setattr(rescore, "recompute", lambda run, top_k=None, backend=None: fresh)
    doc = rescore.rescore(_run())
    assert doc["reproduced"] and doc["not_recorded"] == ["analysis.tide.classes_averaged"]
    (verdict,) = [s for s in rescore.sections(doc) if s.key == "verdict"]
    assert "1 value(s) this version adds were not recorded" in verdict.notes[0]


def test_a_changed_value_is_still_a_difference(monkeypatch):
    fresh = {**STORED, "analysis": {"tide": {"AP50": 0.41}}}
    monkeypatch.setattr(rescore, "recompute", lambda run, top_k=None, backend=None: fresh)
    doc = rescore.rescore(_run())
    assert not doc["reproduced"] and [m["name"] for m in doc["mismatches"]] == ["analysis.tide.AP50"]
