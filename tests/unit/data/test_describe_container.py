"""``inspect`` on each container: the format, the count, the class names and first ids as the run's
own reader lists them, and the run's command line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pack_containers import tiny_items, write_parquet, write_tfrecord, write_webdataset  # noqa: E402

from evalharness.data.describe import describe_dataset  # noqa: E402
from evalharness.inspect.dataset_view import is_dataset_path  # noqa: E402

ITEMS = tiny_items()


@pytest.mark.parametrize("kind", ["parquet", "webdataset", "tfrecord"])
def test_each_container_is_described_by_its_reader(tmp_path, kind):
    if kind == "parquet":
        pytest.importorskip("pyarrow", reason="the test writes the parquet with pyarrow")
        root = write_parquet(ITEMS, tmp_path / "p", shards=2, group=1)
    elif kind == "webdataset":
        root = write_webdataset(ITEMS, tmp_path / "w", shards=2)  # a brace pattern, as users give it
    else:
        root = write_tfrecord(ITEMS, tmp_path / "t", shards=2)
    view = describe_dataset(root)
    assert (view.format, view.samples, view.details["shards"]) == (kind, 4, 2)
    assert view.first_ids[0].startswith("img0") and view.ground_truth == f"the labels in the {kind} shards"
    assert f"dataset.root={root} dataset.format={kind}" in view.run
    assert is_dataset_path(str(root))  # inspect reads it as a dataset, not a model
    if kind != "webdataset":  # the container's own names (parquet metadata, TFDS label.labels.txt)
        assert view.classes == 4 and view.class_names[0] == "tench, Tinca tinca"
    else:  # no class list: the indices, and the run is told to give one
        assert view.class_names[:2] == ["class index 0", "class index 1"]
        assert "dataset.class_names=<the class list>" in view.run


def test_a_container_of_images_without_labels_is_described_as_a_detection_runs_images(tmp_path):
    """What a COCO run reads its images from (the instances JSON beside them): listed alone, the
    reason there are no class labels said, the run's command line a detection run's."""
    import io
    import tarfile

    (tmp_path / "w").mkdir()
    with tarfile.open(tmp_path / "w" / "val-0000.tar", "w") as tar:
        for name, data, _ in ITEMS:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    view = describe_dataset(str(tmp_path / "w"))
    assert (view.format, view.samples, view.classes) == ("webdataset", 4, 0)
    assert "no .cls or .json label" in view.details["no_class_labels"]
    assert view.run.startswith("task=coco dataset.annotations=<instances JSON>")
