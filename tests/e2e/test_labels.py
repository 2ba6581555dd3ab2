"""Label files, label-text matching and stable top-k, on the real ImageNet label files."""

from pathlib import Path

import numpy as np
import pytest

from evalharness.core.errors import DataError, ModelMismatchError
from evalharness.core.ranking import stable_topk
from evalharness.data.labels import LabelMatcher, read_label_file, read_synset_words

REPO = Path(__file__).resolve().parents[2]
ASSETS = REPO.parent / "shared" / "assets"
LABELS_1001 = ASSETS / "labels" / "imagenet_labels_1001.txt"
CLASS_NAMES = REPO / "datasets" / "sample" / "imagenet_classes.txt"
SYNSET_WORDS = ASSETS / "imagenet" / "synset_words.txt"


def one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_read_label_file_real_files():
    labels = read_label_file(LABELS_1001)
    assert len(labels) == 1001
    assert labels[0] == "background"
    assert labels[1] == "tench, Tinca tinca"
    assert len(read_label_file(CLASS_NAMES)) == 1000


def test_read_label_file_strips_only_line_ends(tmp_path):
    path = tmp_path / "labels.txt"
    path.write_bytes(b"\xef\xbb\xbftench, Tinca tinca  \r\n ???\r\n\r\ncrane\n\n\n")
    assert read_label_file(path) == ["tench, Tinca tinca", " ???", "", "crane"]


def test_read_label_file_missing_and_empty(tmp_path):
    with pytest.raises(DataError) as exc:
        read_label_file(tmp_path / "nope.txt")
    assert str(tmp_path / "nope.txt") in one_line(exc)
    (tmp_path / "empty.txt").write_text("\n \n")
    with pytest.raises(DataError, match="empty"):
        read_label_file(tmp_path / "empty.txt")


def test_read_synset_words_real_and_malformed(tmp_path):
    pairs = read_synset_words(SYNSET_WORDS)
    assert pairs[0] == ("n01440764", "tench, Tinca tinca")
    assert [text for _, text in pairs] == read_label_file(CLASS_NAMES)
    bad = tmp_path / "synset_words.txt"
    bad.write_text("n01440764 tench, Tinca tinca\ntench\n")
    with pytest.raises(DataError) as exc:
        read_synset_words(bad)
    assert f"{bad}:2" in one_line(exc)


def test_matcher_maps_by_text_and_occurrence():
    matcher = LabelMatcher.from_file(LABELS_1001)
    assert matcher.index("tench, Tinca tinca") == 1
    # ImageNet's two "crane" classes: the bird (n02012849) then the machine (n03126707)
    cranes = [matcher.index("crane", 0), matcher.index("crane", 1)]
    assert cranes == [135, 518]
    with pytest.raises(ModelMismatchError) as exc:
        matcher.index("crane", 2)
    assert str(LABELS_1001) in one_line(exc)


def test_matcher_unknown_label_names_it_and_the_file_with_a_hint():
    matcher = LabelMatcher.from_file(LABELS_1001)
    with pytest.raises(ModelMismatchError) as exc:
        matcher.index("tench Tinca tinca")
    msg = one_line(exc)
    assert "'tench Tinca tinca'" in msg
    assert str(LABELS_1001) in msg
    assert "closest: 'tench, Tinca tinca'" in msg


def test_check_output_size():
    matcher = LabelMatcher.from_file(LABELS_1001)
    matcher.check_output_size(1001)
    with pytest.raises(ModelMismatchError) as exc:
        matcher.check_output_size(1000)
    msg = one_line(exc)
    assert f"model output has 1000 classes but labels file {LABELS_1001} has 1001 lines" in msg
    assert "model.labels=" in msg


def test_stable_topk_ties_go_to_lower_index():
    scores = np.array([3, 7, 7, 1, 7, 3], dtype=np.int32)
    assert stable_topk(scores, 6).tolist() == [1, 2, 4, 0, 5, 3]
    assert stable_topk(scores, 2).tolist() == [1, 2]
    floats = np.array([0.5, 0.9, 0.5, 0.9], dtype=np.float32)
    assert stable_topk(floats, 4).tolist() == [1, 3, 0, 2]


def test_stable_topk_uint8_does_not_wrap():
    scores = np.array([0, 255, 3, 255, 0, 128], dtype=np.uint8)
    assert stable_topk(scores, 6).tolist() == [1, 3, 5, 2, 0, 4]
    assert scores.tolist() == [0, 255, 3, 255, 0, 128]  # input untouched
    big = np.array([2**64 - 1, 0, 2**63], dtype=np.uint64)
    assert stable_topk(big, 3).tolist() == [0, 2, 1]


def test_stable_topk_edges():
    scores = np.array([0.1, np.nan, 0.3])
    assert stable_topk(scores, 10).tolist() == [2, 0, 1]  # k > n: whole ranking, NaN last
    assert stable_topk(scores, 0).tolist() == []
    assert stable_topk(np.array([True, False, True]), 1).tolist() == [0]
    with pytest.raises(ValueError):
        stable_topk(np.zeros((2, 2)), 1)


def test_topk_hits_are_cumulative():
    from evalharness.tasks.imagenet.definition import TopKScorer  # the one top-K counter

    scorer = TopKScorer(3)
    for top, truth in zip([[5, 2, 9], [2, 5, 9], [1, 3, 4], [7, 7, 8]], [2, 2, 0, 8], strict=True):
        scorer.add({"topk": top, "label_index": truth})
    metrics = scorer.result()
    assert metrics["correct"] == {"top1": 1, "top2": 2, "top3": 3}
    assert metrics["top1"] == 0.25 and metrics["top3"] == 0.75
