"""A csv with class_index beside a label column and no class list is given by index: the index is
kept with the csv's own names as a partial class list (issue 43: the ambiguity error of ImageNet's two
"crane"s asked for a class_index column the csv already had)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from evalharness.core.errors import DataError, ModelMismatchError
from evalharness.data.ground_truth import ClassList, load_ground_truth
from evalharness.data.label_alignment import align
from evalharness.data.labels import LabelMatcher, read_label_file

BUNDLED = Path(__file__).resolve().parents[3] / "datasets" / "sample"
LABELS_1001 = BUNDLED / "imagenet_labels_1001.txt"


def _folder(tmp_path: Path, rows: str) -> Path:
    for name in ("a.png", "b.png"):
        (tmp_path / name).write_bytes((BUNDLED / "images" / "chelsea.png").read_bytes())
    (tmp_path / "gt.csv").write_text("filename,class_index,label\n" + rows)
    return tmp_path / "gt.csv"


def _load(tmp_path: Path, gt: Path, classes: ClassList):
    root, truth = str(tmp_path), str(gt)
    return load_ground_truth("csv", root, truth, None, None, None, unscored=Counter(), classes=classes)


def test_the_two_cranes_by_index_line_up_with_the_models_labels(tmp_path):
    gt = _folder(tmp_path, "a.png,134,crane\nb.png,517,crane\n")
    classes = ClassList()
    samples = _load(tmp_path, gt, classes)
    assert [(s.label, s.index) for s in samples] == [("crane", 134), ("crane", 517)]
    assert classes.names == {134: "crane", 517: "crane"} and classes.count is None
    aligned = align(classes.names, classes.count, read_label_file(LABELS_1001))
    assert aligned.offset == 1  # background first: the cranes are outputs 135 and 518


def test_one_index_with_two_names_is_refused(tmp_path):
    gt = _folder(tmp_path, "a.png,134,crane\nb.png,134,heron\n")
    with pytest.raises(DataError, match="class_index 134 is 'heron' here but 'crane'"):
        _load(tmp_path, gt, ClassList())


def test_the_text_fallback_names_why_not_by_index():
    matcher = LabelMatcher(read_label_file(LABELS_1001), LABELS_1001, "order: class 3 'x' is output 9")
    with pytest.raises(ModelMismatchError, match="'crane' is on lines 136 and 519 of labels file") as exc:
        matcher.index("crane")
    assert exc.type is ModelMismatchError
    message = str(exc.value)
    assert "class_index" not in message.split("do not line up")[0]
    assert "do not line up with it (order: class 3" in message and "dataset.class_names" in message
