"""A label set is the class names in order: two label files with the same names (Ultralytics'
metadata of another date) are one set; other names or another order are another (issue 43)."""

from __future__ import annotations

from evalharness.data.labels import label_set
from evalharness.report.runs import comparability
from evalharness.rundir.reader import Run


def _run(label: str, labels: dict) -> Run:
    dataset = {"manifest_sha256": "m", "count": 2, "ground_truth_sha256": "g"}
    doc = {"status": "complete", "task": "coco", "provenance": {"dataset": dataset, "labels": labels}}
    return Run(label, f"/runs/{label}", doc)  # type: ignore[arg-type]


def test_same_names_in_other_files_are_one_label_set(tmp_path):
    (tmp_path / "a.txt").write_text("person\nbicycle\n")
    (tmp_path / "b.txt").write_text("person\nbicycle\n\n\n")  # another file, same names in order
    (tmp_path / "c.txt").write_text("bicycle\nperson\n")
    a, b, c = (label_set(str(tmp_path / f"{x}.txt")) for x in "abc")
    assert a["sha256"] != b["sha256"] and a["names_sha256"] == b["names_sha256"] and a["count"] == 2
    assert comparability(_run("a", a), _run("b", b)).warnings == []
    (warning,) = comparability(_run("a", a), _run("c", c)).warnings
    assert warning.startswith("label set differs: names_sha256")


def test_runs_without_names_sha256_compare_by_file():
    old = {"path": "/x/labels.txt", "sha256": "1"}
    new = {"path": "/y/labels.txt", "sha256": "2", "names_sha256": "n", "count": 2}
    (warning,) = comparability(_run("a", old), _run("b", new)).warnings
    assert warning == "label set differs: sha256 '1' vs '2'"
    same_file = {**new, "sha256": "1"}  # an old run and a new one of the same label file agree
    assert comparability(_run("a", old), _run("b", same_file)).warnings == []


def test_a_built_in_class_map_against_a_label_file_is_said_as_such_not_as_a_hash_of_none(tmp_path):
    """COCO's class_map=coco80 reads no file: its side is named by the map, never ``sha256 None``."""
    (tmp_path / "labels.txt").write_text("person\nbicycle\n")
    built_in = {"class_map": "coco80", **label_set(None), "categories": 80}
    from_file = {"class_map": "labels", **label_set(str(tmp_path / "labels.txt")), "categories": 80}
    (warning,) = comparability(_run("a", built_in), _run("b", from_file)).warnings
    assert "None" not in warning
    assert warning == (
        "label set differs: class_map 'coco80' vs 'labels'; label file none (the built-in class map coco80: "
        f"a name, no file hash) vs {tmp_path / 'labels.txt'} (sha256 {from_file['sha256'][:12]})"
    )
    (other,) = comparability(_run("a", built_in), _run("b", {**built_in, "class_map": "coco91"})).warnings
    assert other == "label set differs: class_map 'coco80' vs 'coco91'"


def test_no_label_file_has_no_names():
    assert label_set(None) == {"path": None, "sha256": None, "names_sha256": None, "count": None}
