"""Ground-truth readers on the real ILSVRC2012 val50 subset and small folders built from it."""

import csv
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from evalharness.core.errors import ConfigError, DataError
from evalharness.data.ground_truth import FORMATS, LabeledSample, detect_format, load_ground_truth
from evalharness.data.labels import LabelMatcher, read_label_file

REPO = Path(__file__).resolve().parents[2]
ASSETS = REPO.parent / "shared" / "assets"
VAL50 = ASSETS / "imagenet" / "val50"
VAL_TXT = ASSETS / "imagenet" / "val.txt"
SYNSET_WORDS = ASSETS / "imagenet" / "synset_words.txt"
LABELS_1001 = ASSETS / "labels" / "imagenet_labels_1001.txt"
CLASS_NAMES = REPO / "datasets" / "sample" / "imagenet_classes.txt"


def load(fmt, root, gt=None, class_names=None, synset_words=None, devkit_meta=None):
    opt = [None if p is None else str(p) for p in (gt, class_names, synset_words, devkit_meta)]
    return load_ground_truth(fmt, str(root), *opt)


def one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


@pytest.fixture(scope="module")
def csv_rows() -> list[dict[str, str]]:
    with (VAL50 / "labels.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def link_images(folder: Path, names: dict[str, str]) -> None:
    """folder/<new name> -> real val50 image, for each new name -> val50 file name."""
    for new, real in names.items():
        (folder / new).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(VAL50 / real, folder / new)


def pairs(samples: list[LabeledSample]) -> list[tuple[str, str]]:
    return [(s.key, s.label) for s in samples]


@pytest.mark.parametrize("option", ["class_names", "synset_words"])
def test_val_txt_matches_labels_csv(option, csv_rows):
    samples = load(
        "val_txt", VAL50, VAL_TXT, **{option: CLASS_NAMES if option == "class_names" else SYNSET_WORDS}
    )
    assert len(samples) == 50
    assert [s.key for s in samples] == sorted(r["filename"] for r in csv_rows)
    truth = {r["filename"]: r["class_name"] for r in csv_rows}
    assert all(s.label == truth[s.key] for s in samples)
    assert all(s.path == str(VAL50 / s.key) and Path(s.path).is_absolute() for s in samples)


def test_val50_labels_map_to_model_index_class_index_plus_one(csv_rows):
    samples = load("val_txt", VAL50, VAL_TXT, class_names=CLASS_NAMES)
    matcher = LabelMatcher.from_file(LABELS_1001)
    index = {r["filename"]: int(r["class_index"]) for r in csv_rows}
    assert [matcher.index(s.label, s.occurrence) for s in samples] == [index[s.key] + 1 for s in samples]


def test_csv_gives_the_same_samples(csv_rows):
    reference = pairs(load("val_txt", VAL50, VAL_TXT, class_names=CLASS_NAMES))
    assert pairs(load("csv", VAL50, VAL50 / "labels.csv")) == reference  # class_name column
    assert (
        pairs(load("csv", VAL50, VAL50 / "labels.csv", class_names=CLASS_NAMES)) == reference
    )  # class_index
    assert pairs(load("auto", VAL50, VAL50 / "labels.csv", synset_words=SYNSET_WORDS)) == reference


def test_csv_class_index_must_agree_with_class_name():
    # the model's 1001-line label file is not a class list: every index would be off by one
    with pytest.raises(DataError) as exc:
        load("csv", VAL50, VAL50 / "labels.csv", class_names=LABELS_1001)
    assert f"{VAL50 / 'labels.csv'}:2" in one_line(exc)


def test_csv_wnid_column(tmp_path):
    link_images(tmp_path, {"a.JPEG": "ILSVRC2012_val_00000347.JPEG"})
    (tmp_path / "gt.csv").write_text("filename,wnid\na.JPEG,n02951358\n")
    samples = load("csv", tmp_path, tmp_path / "gt.csv", synset_words=SYNSET_WORDS)
    assert pairs(samples) == [("a.JPEG", "canoe")]
    with pytest.raises(ConfigError, match="synset_words"):
        load("csv", tmp_path, tmp_path / "gt.csv")


def test_val_txt_rejects_model_label_file_as_class_list():
    with pytest.raises(DataError) as exc:
        load("val_txt", VAL50, VAL_TXT, class_names=LABELS_1001)
    assert "1001" in one_line(exc) and str(LABELS_1001) in one_line(exc)


def test_imagefolder_wnid_and_name_dirs(tmp_path):
    names = {
        "ILSVRC2012_val_00000347.JPEG": ("n02951358", "canoe"),
        "ILSVRC2012_val_00000355.JPEG": ("n02112137", "chow, chow chow"),
        "ILSVRC2012_val_00002828.JPEG": ("n03662601", "lifeboat"),
    }
    wnid_root, name_root = tmp_path / "wnid", tmp_path / "names"
    link_images(wnid_root, {f"{wnid}/{f}": f for f, (wnid, _) in names.items()})
    link_images(name_root, {f"{text}/{f.lower()}": f for f, (_, text) in names.items()})
    (wnid_root / "labels.csv").write_text("ignored: not in a class dir\n")

    by_wnid = load("imagefolder", wnid_root, synset_words=SYNSET_WORDS)
    assert pairs(by_wnid) == sorted((f"{w}/{f}", t) for f, (w, t) in names.items())
    by_name = load("auto", name_root)
    assert pairs(by_name) == sorted((f"{t}/{f.lower()}", t) for f, (_, t) in names.items())
    with pytest.raises(ConfigError) as exc:
        load("imagefolder", wnid_root)
    assert "dataset.synset_words" in one_line(exc) and str(wnid_root) in one_line(exc)


def test_label_lines(tmp_path):
    link_images(tmp_path, {"b.png": "ILSVRC2012_val_00000355.JPEG", "a.JPG": "ILSVRC2012_val_00000347.JPEG"})
    gt = tmp_path / "gt.txt"
    gt.write_text("canoe\nchow, chow chow\n")
    assert detect_format(str(gt)) == "label_lines"
    assert pairs(load("auto", tmp_path, gt)) == [("a.JPG", "canoe"), ("b.png", "chow, chow chow")]
    gt.write_text("canoe\n")
    with pytest.raises(DataError) as exc:
        load("label_lines", tmp_path, gt)
    assert f"ground-truth file {gt} has 1 lines but {tmp_path} has 2 images" in one_line(exc)


def test_crane_occurrence_maps_to_two_model_indices(tmp_path):
    classes = read_label_file(CLASS_NAMES)
    cranes = [i for i, text in enumerate(classes) if text == "crane"]
    assert len(cranes) == 2
    link_images(
        tmp_path,
        {"bird.JPEG": "ILSVRC2012_val_00000347.JPEG", "machine.JPEG": "ILSVRC2012_val_00000355.JPEG"},
    )
    (tmp_path / "val.txt").write_text(f"bird.JPEG {cranes[0]}\nmachine.JPEG {cranes[1]}\n")
    samples = load("auto", tmp_path, tmp_path / "val.txt", class_names=CLASS_NAMES)
    assert [(s.label, s.occurrence) for s in samples] == [("crane", 0), ("crane", 1)]
    matcher = LabelMatcher.from_file(LABELS_1001)
    model = [matcher.index(s.label, s.occurrence) for s in samples]
    assert model == [cranes[0] + 1, cranes[1] + 1]
    assert model[0] != model[1]


def write_fake_meta(path: Path) -> None:
    """A tiny devkit meta.mat: ILSVRC2012_IDs deliberately not in WNID order, plus a non-leaf."""
    savemat = pytest.importorskip("scipy.io").savemat
    rows = [
        (1, "n03126707", "crane", 0),
        (2, "n02012849", "crane", 0),
        (3, "n01440764", "tench, Tinca tinca", 0),
        (1001, "n00001740", "entity", 2),
    ]
    synsets = np.zeros(
        (len(rows), 1), dtype=[(f, "O") for f in ("ILSVRC2012_ID", "WNID", "words", "num_children")]
    )
    for i, row in enumerate(rows):
        synsets[i, 0] = row
    savemat(str(path), {"synsets": synsets})


def test_devkit_maps_ids_through_meta(tmp_path):
    meta = tmp_path / "meta.mat"
    write_fake_meta(meta)
    root = tmp_path / "val"
    link_images(root, {f"ILSVRC2012_val_{i:08d}.JPEG": "ILSVRC2012_val_00000347.JPEG" for i in (1, 2, 3)})
    gt = tmp_path / "ILSVRC2012_validation_ground_truth.txt"
    gt.write_text("1\n2\n3\n1\n")  # line 4: an image not in root
    assert detect_format(str(gt)) == "devkit"
    samples = load("auto", root, gt, devkit_meta=meta)
    assert [(s.label, s.occurrence) for s in samples] == [
        ("crane", 1),
        ("crane", 0),
        ("tench, Tinca tinca", 0),
    ]
    matcher = LabelMatcher.from_file(LABELS_1001)
    # ID 1 is the machine crane (n03126707, model index 518), ID 2 the bird (n02012849, 135)
    assert [matcher.index(s.label, s.occurrence) for s in samples] == [518, 135, 1]
    gt.write_text("1\n1001\n3\n")
    with pytest.raises(DataError) as exc:
        load("devkit", root, gt, devkit_meta=meta)
    assert f"{gt}:2" in one_line(exc)


def test_devkit_without_scipy_says_how_to_install(tmp_path, monkeypatch):
    link_images(tmp_path, {"ILSVRC2012_val_00000001.JPEG": "ILSVRC2012_val_00000347.JPEG"})
    (tmp_path / "gt.txt").write_text("1\n")
    (tmp_path / "meta.mat").write_bytes(b"")
    monkeypatch.setitem(sys.modules, "scipy.io", None)
    with pytest.raises(DataError) as exc:
        load("devkit", tmp_path, tmp_path / "gt.txt", devkit_meta=tmp_path / "meta.mat")
    assert "pip install evalharness[devkit]" in one_line(exc)


def test_missing_root_and_ground_truth(tmp_path):
    with pytest.raises(DataError) as exc:
        load("val_txt", tmp_path / "nope", VAL_TXT, class_names=CLASS_NAMES)
    assert str(tmp_path / "nope") in one_line(exc)
    with pytest.raises(DataError) as exc:
        load("val_txt", VAL50, tmp_path / "val.txt", class_names=CLASS_NAMES)
    assert str(tmp_path / "val.txt") in one_line(exc)
    with pytest.raises(DataError) as exc:
        load("val_txt", tmp_path, VAL_TXT, class_names=CLASS_NAMES)
    assert "no images" in one_line(exc) and str(tmp_path) in one_line(exc) and ".jpeg" in one_line(exc)


def test_malformed_val_txt_line(tmp_path):
    gt = tmp_path / "val.txt"
    gt.write_text("ILSVRC2012_val_00000347.JPEG 472\n\nILSVRC2012_val_00000355.JPEG chow\n")
    with pytest.raises(DataError) as exc:
        load("val_txt", VAL50, gt, class_names=CLASS_NAMES)
    assert f"{gt}:3" in one_line(exc)
    gt.write_text("ILSVRC2012_val_00000347.JPEG 1000\n")
    with pytest.raises(DataError) as exc:
        load("val_txt", VAL50, gt, class_names=CLASS_NAMES)
    assert f"{gt}:1" in one_line(exc) and "0..999" in one_line(exc)


def test_image_without_ground_truth_line(tmp_path):
    root = tmp_path / "val"
    link_images(root, {f: f for f in ("ILSVRC2012_val_00000347.JPEG", "ILSVRC2012_val_00000355.JPEG")})
    gt = tmp_path / "val.txt"
    gt.write_text("ILSVRC2012_val_00000355.JPEG 260\nILSVRC2012_val_00000001.JPEG 65\n")
    with pytest.raises(DataError) as exc:
        load("val_txt", root, gt, class_names=CLASS_NAMES)
    msg = one_line(exc)
    assert "1 of 2 images" in msg and "ILSVRC2012_val_00000347.JPEG" in msg and str(gt) in msg


def test_unknown_format_lists_valid_names():
    with pytest.raises(ConfigError) as exc:
        load("val-txt", VAL50, VAL_TXT)
    msg = one_line(exc)
    for name in ("auto", "csv", "devkit", "imagefolder", "label_lines", "val_txt"):
        assert name in msg
    assert FORMATS.names() == ["auto", "csv", "devkit", "imagefolder", "label_lines", "val_txt"]


def test_missing_class_list_names_the_options():
    with pytest.raises(ConfigError) as exc:
        load("val_txt", VAL50, VAL_TXT)
    assert "dataset.class_names" in one_line(exc) and "dataset.synset_words" in one_line(exc)
