"""A split is part of a dataset's identity (data/splits.py): each layout as it is downloaded, built tiny
with a training split beside the validation one, reads exactly the validation images and names the
split; a root where the split cannot be told is one error naming the splits and ``dataset.split``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pack_containers import tiny_items, write_parquet, write_tfrecord, write_webdataset  # noqa: E402

from evalharness.core.errors import ConfigError, DataError  # noqa: E402
from evalharness.data.dataset_reader import ReadRequest, detect, reader_for  # noqa: E402
from evalharness.data.splits import choose, select_shards, split_in_name  # noqa: E402
from evalharness.data.yolo_layout import read_layout  # noqa: E402

ITEMS = tiny_items(6)
VAL, TRAIN, TEST = ITEMS[:3], ITEMS[3:5], ITEMS[5:]
VAL_IDS = [name for name, _, _ in VAL]


def _read(root, split: str = "auto"):
    reader, _ = reader_for("auto", ReadRequest(str(root), split=split))
    samples = reader.samples()
    return reader, [s.key for s in samples]


def _hf_snapshot(root: Path, test: bool) -> Path:
    pytest.importorskip("pyarrow")
    root.mkdir()
    (root / "README.md").write_text("# a dataset card without front matter\n")
    write_parquet(TRAIN, root / "data", split="train")
    write_parquet(VAL, root / "data", split="validation")
    if test:
        write_parquet(TEST, root / "data", split="test")
    return root


@pytest.mark.parametrize("test", [True, False])
def test_hf_snapshot_root_reads_the_validation_split_and_says_so(tmp_path, test):
    root = _hf_snapshot(tmp_path / "snap", test)
    assert detect(str(root))[0] == "parquet"  # the snapshot root itself, data/ inside
    reader, ids = _read(root)
    assert ids == VAL_IDS
    record = reader.provenance()["dataset_split"]
    found = ["test", "train", "validation"] if test else ["train", "validation"]
    assert record == {
        "name": "validation",
        "found": found,
        "chosen": f"the validation split of {len(found)}",
        "shards": ["data/validation-00000-of-00001.parquet"],
    }
    said = reader.chosen.assumption()
    assert said["what"] == "dataset.split" and said["assumed"] == "validation"
    assert ", ".join(found) in said["why"]


def test_a_split_is_chosen_by_dataset_split(tmp_path):
    root = _hf_snapshot(tmp_path / "snap", test=True)
    reader, ids = _read(root, "train")
    assert ids == [name for name, _, _ in TRAIN]
    assert reader.chosen.how == "dataset.split=train" and reader.chosen.assumption() is None


def test_hf_dataset_card_data_files_name_the_splits(tmp_path):
    pytest.importorskip("pyarrow")
    root = tmp_path / "snap"
    write_parquet(TRAIN, root / "files" / "a", split="part")
    write_parquet(VAL, root / "files" / "b", split="part")
    card = {"configs": [{"config_name": "default", "data_files": [
        {"split": "train", "path": "files/a/*.parquet"},
        {"split": "validation", "path": "files/b/*.parquet"},
    ]}]}  # fmt: skip
    (root / "README.md").write_text(f"---\n{yaml.safe_dump(card)}---\n# card\n")
    reader, _ = reader_for("parquet", ReadRequest(str(root)))  # shards two levels down: format named
    assert [s.key for s in reader.samples()] == VAL_IDS
    assert reader.chosen.found == ("train", "validation")


def test_tfds_folder_with_dataset_info_splits(tmp_path):
    folder = tmp_path / "imagenet2012" / "5.1.0"
    write_tfrecord(TRAIN, folder, split="train")
    write_tfrecord(VAL, folder, split="validation")
    info = {"name": "imagenet2012", "splits": [{"name": "train"}, {"name": "validation"}]}
    (folder / "dataset_info.json").write_text(json.dumps(info))
    reader, ids = _read(folder)
    assert ids == VAL_IDS
    assert reader.provenance()["dataset_split"]["shards"] == [
        "imagenet2012-validation.tfrecord-00000-of-00001"
    ]


def test_webdataset_folder_and_split_subfolders(tmp_path):
    write_webdataset(TRAIN, tmp_path / "wds", prefix="imagenet1k-train")
    write_webdataset(VAL, tmp_path / "wds", prefix="imagenet1k-validation")
    assert _read(tmp_path / "wds")[1] == VAL_IDS
    write_webdataset(TRAIN, tmp_path / "sub" / "train")
    write_webdataset(VAL, tmp_path / "sub" / "val")
    assert detect(str(tmp_path / "sub"))[0] == "webdataset"
    reader, ids = _read(tmp_path / "sub")
    assert ids == VAL_IDS and reader.chosen.split == "val"


def test_a_root_of_one_split_reads_it_and_names_it(tmp_path):
    pattern = write_webdataset(TRAIN, tmp_path / "w", prefix="train")
    reader, ids = _read(pattern)
    assert ids == [name for name, _, _ in TRAIN]
    assert reader.chosen.split == "train" and reader.chosen.how == "the only split"
    assert reader.chosen.assumption() is None


def test_no_split_in_the_names_reads_every_shard_as_before(tmp_path):
    reader, ids = _read(write_webdataset(ITEMS, tmp_path / "w", shards=2, prefix="shard"))
    assert len(ids) == len(ITEMS) and reader.chosen.split is None


AMBIGUOUS = (
    "holds several splits (test, train) and none of them is the validation split; "
    "set dataset.split=test|train"
)
UNKNOWN = (
    "dataset.split=dev: {root} holds no such split (splits found: train, validation); "
    "set dataset.split=train|validation"
)


@pytest.mark.parametrize(
    ("splits", "requested", "says"),
    [(("train", "test"), "auto", AMBIGUOUS), (("train", "validation"), "dev", UNKNOWN)],
)
def test_a_split_that_cannot_be_told_is_one_error(tmp_path, splits, requested, says):
    for i, split in enumerate(splits):
        write_webdataset(ITEMS[i : i + 1], tmp_path / "w", prefix=f"data-{split}")
    with pytest.raises(DataError) as info:
        _read(tmp_path / "w", requested)
    assert str(info.value).endswith(says.format(root=tmp_path / "w")) and "\n" not in str(info.value)


def test_a_split_asked_of_a_folder_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="dataset.split=train: .* no splits"):
        reader_for("auto", ReadRequest(str(tmp_path), split="train"))


def test_each_format_names_its_split():
    assert split_in_name("validation-00003-of-00064.parquet", "parquet") == "validation"
    assert split_in_name("train-00000-of-00001-5a1b2c3d.parquet", "parquet") == "train"
    assert split_in_name("imagenet2012-validation.tfrecord-00000-of-00064", "tfrecord") == "validation"
    assert split_in_name("ds-my-split.tfrecord-00000-of-00001", "tfrecord", ["my-split"]) == "my-split"
    assert split_in_name("imagenet1k-validation-0063.tar", "webdataset") == "validation"
    assert split_in_name("val-0000.tar", "webdataset") == "val"
    assert split_in_name("shard-0000.tar", "webdataset") is None
    assert choose(["val2017", "train2017"], "auto", "x") == ("val2017", "the validation split of 2")
    assert choose([None], "auto", "x") == (None, "no split in the shard names")


def test_a_missing_shard_of_the_split_is_one_error(tmp_path):
    with pytest.raises(DataError, match="not found"):
        select_shards(str(tmp_path / "val-{0000..0001}.tar"), "webdataset")


def _yolo(root: Path, splits: dict[str, int]) -> Path:
    for split, count in splits.items():
        (root / "images" / split).mkdir(parents=True)
        (root / "labels" / split).mkdir(parents=True)
        for i in range(count):
            Image.new("RGB", (8, 6)).save(root / "images" / split / f"{split}{i}.png")
            (root / "labels" / split / f"{split}{i}.txt").write_text("0 0.5 0.5 0.25 0.25\n")
    doc = {"path": ".", **{s: f"images/{s}" for s in splits}, "names": ["cat"]}
    (root / "data.yaml").write_text(yaml.safe_dump(doc))
    return root


def test_yolo_data_yaml_reads_val_of_train_and_val(tmp_path):
    root = _yolo(tmp_path, {"train": 2, "val": 1})
    layout = read_layout(root)
    assert layout.split == "val" and layout.images == (root / "images/val").resolve()
    assert layout.assumption()["fix"] == "dataset.split=train"
    assert read_layout(root, "train").images == (root / "images/train").resolve()
    with pytest.raises(DataError, match=r"splits found: train, val\); set dataset.split=train\|val"):
        read_layout(root, "test")


def test_yolo_train_and_test_only_is_one_error(tmp_path):
    root = _yolo(tmp_path, {"train": 1, "test": 1})
    with pytest.raises(DataError, match=r"\(test, train\) and none of them is the validation split"):
        read_layout(root)


def test_inspect_names_the_split_a_run_would_read(tmp_path):
    from evalharness.data.describe import describe_dataset

    view = describe_dataset(_hf_snapshot(tmp_path / "snap", test=True))
    assert view.samples == len(VAL)
    assert view.details["split"] == "validation (the validation split of 3; found: test, train, validation)"
