"""A detection run's images in a container: read for the images alone by the classification readers'
contract, paired with the instances JSON by file name, so the samples, their bytes and their
manifest equal those of the same images in a folder; a plug-in ground-truth layout is detected
through the registry as the built-in ones are."""

from __future__ import annotations

import io
import json
import sys
import tarfile
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pack_containers import example, record, tiny_png  # noqa: E402

from evalharness.core.errors import DataError  # noqa: E402
from evalharness.data.dataset_reader import ReadRequest, reader_for  # noqa: E402
from evalharness.data.manifest import samples_identity  # noqa: E402
from evalharness.data.run_images import ContainerImages  # noqa: E402
from evalharness.tasks.coco import ground_truth_readers as truth_readers  # noqa: E402
from evalharness.tasks.coco.images import (  # noqa: E402
    container_of_images,
    container_samples,
    folder_samples,
    sample_entry,
    sample_image,
)

SIZES = {"b.png": (5, 3), "a.png": (4, 3), "c.png": (6, 2)}  # c.png: in the container, not annotated
ANNOTATED = ("a.png", "b.png")


def _instances(folder: Path) -> Path:
    images = [
        {"id": i + 1, "file_name": n, "width": SIZES[n][0], "height": SIZES[n][1]}
        for i, n in enumerate(ANNOTATED)
    ]
    box = {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 2, 2], "area": 4, "iscrowd": 0}
    doc = {"images": images, "annotations": [box], "categories": [{"id": 1, "name": "person"}]}
    path = folder / "instances.json"
    path.write_text(json.dumps(doc))
    return path


def _pixels(name: str) -> bytes:
    return tiny_png(40 * sorted(SIZES).index(name), SIZES[name])


def _webdataset(folder: Path, inside: str = "") -> Path:
    """``val-0000.tar`` of images alone, as a detection dataset's shards hold them: no ``.cls``; a
    per-image ``.json`` of its own (not a class label) beside each."""
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(folder / "val-0000.tar", "w", format=tarfile.USTAR_FORMAT) as tar:
        for name in SIZES:
            stem = name.split(".")[0]
            for member, payload in (
                (f"{inside}{name}", _pixels(name)),
                (f"{inside}{stem}.json", b'{"boxes": []}'),
            ):
                info = tarfile.TarInfo(member)
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
    return folder


def _folder(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in ANNOTATED:
        (folder / name).write_bytes(_pixels(name))
    return folder


def _dataset(root: Path) -> SimpleNamespace:
    return SimpleNamespace(root=str(root), split="auto", index_dir=None, annotations=None, format="auto")


def test_a_webdataset_of_images_alone_pairs_with_the_instances_json_as_a_folder_does(tmp_path):
    annotations_path = _instances(tmp_path)
    annotations = json.loads(annotations_path.read_text())
    unscored: Counter[str] = Counter()
    found = container_of_images(_dataset(_webdataset(tmp_path / "wds", inside="val2017/")), unscored)
    assert found is not None
    reader, said = found
    assert said is not None and said["assumed"].startswith("the webdataset members")
    samples, listed = container_samples(annotations, reader, str(annotations_path), unscored)
    assert [(s.key, s.image_id, s.width) for s in samples] == [("a.png", 1, 4), ("b.png", 2, 5)]
    assert len(listed) == 3 and unscored["image not in the annotations"] == 1
    assert reader.provenance()["labels_read"] is False
    # the same ids, bytes and content manifest as the folder of the same images
    files = folder_samples(annotations, str(_folder(tmp_path / "images")), str(annotations_path), None)
    assert [sample_image(reader, s).read() for s in samples] == [sample_image(None, s).read() for s in files]
    assert [sample_image(reader, s).name for s in samples] == list(ANNOTATED)
    assert samples_identity(samples, sample_entry) == samples_identity(files, sample_entry, content=True)
    # a finished run's images opened again by its ids (explain, thumbnails), proven by its manifest
    images = ContainerImages("webdataset", str(tmp_path / "wds"), labelled=False)
    manifest = samples_identity(samples, sample_entry)["manifest_sha256"]
    assert images.absent("a.png") is None and images.proves(ANNOTATED, manifest)
    assert images.image("b.png").read() == _pixels("b.png")


def test_labelled_readers_still_ask_for_labels_and_keep_their_own_index(tmp_path):
    root = _webdataset(tmp_path / "wds")
    with pytest.raises(DataError, match="label None is not a class index"):
        reader_for("auto", ReadRequest(str(root)))[0].samples()
    index = tmp_path / "index"
    unlabelled = reader_for("auto", ReadRequest(str(root), index_dir=str(index), labelled=False))[0]
    assert len(unlabelled.samples()) == 3
    assert [p.name.split("-")[:2] for p in index.iterdir()] == [["webdataset", "images"]]


def test_an_annotated_image_the_container_lacks_is_an_error(tmp_path):
    annotations = json.loads(_instances(tmp_path).read_text())
    annotations["images"].append({"id": 9, "file_name": "z.png", "width": 1, "height": 1})
    found = container_of_images(_dataset(_webdataset(tmp_path / "wds")), Counter())
    assert found is not None
    with pytest.raises(DataError, match=r"1 image\(s\) listed in x.json are not in the webdataset shards"):
        container_samples(annotations, found[0], "x.json", Counter())


def test_a_parquet_without_a_label_column_is_read_for_its_images(tmp_path):
    pa, pq = pytest.importorskip("pyarrow"), pytest.importorskip("pyarrow.parquet")
    folder = tmp_path / "pq"
    folder.mkdir()
    rows = [{"bytes": _pixels(n), "path": n} for n in SIZES]
    table = pa.table({"image_id": [1, 2, 3], "image": rows})  # detection-datasets' columns, no label
    pq.write_table(table, folder / "validation-00000-of-00001.parquet")
    with pytest.raises(DataError, match="no integer label column"):
        reader_for("parquet", ReadRequest(str(folder)))[0].samples()
    reader = reader_for("parquet", ReadRequest(str(folder), labelled=False))[0]
    annotations = json.loads(_instances(tmp_path).read_text())
    samples, _ = container_samples(annotations, reader, "x.json", Counter())
    assert [sample_image(reader, s).read() for s in samples] == [_pixels(n) for n in ANNOTATED]


def test_tfds_records_without_a_label_are_read_for_their_images(tmp_path):
    """TFDS's coco/2017 records: ``image``, ``image/filename`` and objects, no class ``label``."""
    folder = tmp_path / "tfds"
    folder.mkdir()
    with open(folder / "coco-validation.tfrecord-00000-of-00001", "wb") as f:
        for name in SIZES:
            f.write(record(example({"image": _pixels(name), "image/filename": name.encode()})))
    with pytest.raises(DataError, match="no label feature"):
        reader_for("auto", ReadRequest(str(folder)))[0].samples()
    reader = reader_for("auto", ReadRequest(str(folder), labelled=False))[0]
    annotations = json.loads(_instances(tmp_path).read_text())
    samples, listed = container_samples(annotations, reader, "x.json", Counter())
    assert [s.key for s in listed] == sorted(SIZES)
    assert [sample_image(reader, s).read() for s in samples] == [_pixels(n) for n in ANNOTATED]


class ToyLayout(truth_readers.DetectionTruthReader):
    name = "toy"

    @classmethod
    def detects(cls, root: str) -> str | None:
        return f"{root} holds toy.txt" if (Path(root) / "toy.txt").is_file() else None


def test_a_plugin_layout_is_detected_through_the_registry(tmp_path, monkeypatch):
    from evalharness.core.errors import ConfigError  # noqa: PLC0415
    from evalharness.core.schema import check_bounds  # noqa: PLC0415
    from evalharness.tasks.coco.definition import CocoDataset  # noqa: PLC0415

    with pytest.raises(ConfigError, match="format='toy': use one of auto, coco, yolo"):
        check_bounds(CocoDataset, {"format": "toy"}, "config group 'dataset'")
    monkeypatch.setitem(truth_readers.DETECTION_TRUTH._items, "toy", ToyLayout)
    check_bounds(CocoDataset, {"format": "toy"}, "config group 'dataset'")  # dataset.format=toy: its bound
    dataset = _dataset(tmp_path)
    assert truth_readers.detected_layout(dataset) == ("coco", None)
    (tmp_path / "toy.txt").write_text("")
    assert truth_readers.detected_layout(dataset) == ("toy", f"{tmp_path} holds toy.txt")
    given = SimpleNamespace(**{**vars(dataset), "annotations": "instances.json"})
    assert truth_readers.detected_layout(given) == ("coco", None)  # a JSON given is read


def test_the_coco_task_reads_the_validation_shards_and_says_which(tmp_path):
    """A container root holding a training split beside the validation one: the run reads the
    validation shards (said, as for a classification run), its images alone, recorded so."""
    from conftest import compose_config  # noqa: PLC0415

    from evalharness.settings.validate import validate  # noqa: PLC0415

    root = _webdataset(tmp_path / "wds")  # val-0000.tar
    train = root / "train-0000.tar"
    with tarfile.open(train, "w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo("a.png")  # the same name in the training split: never read
        info.size = len(_pixels("c.png"))
        tar.addfile(info, io.BytesIO(_pixels("c.png")))
    overrides = ["task=coco", f"dataset.root={root}", f"dataset.annotations={_instances(tmp_path)}"]
    task = validate(compose_config(overrides)).live_task()
    assert [s.key for s in task.samples] == list(ANNOTATED)
    assert [image.read() for image in task.sample_images()] == [_pixels(n) for n in ANNOTATED]
    assert [key for key, _ in task.listed_members()] == sorted(SIZES)
    said = {a["what"]: a["assumed"] for a in task.source.assumptions}
    assert said["dataset.split"] == "val" and said["images"].startswith("the webdataset members")
    dataset = task.provenance()["dataset"]
    assert dataset["labels_read"] is False and dataset["dataset_split"]["name"] == "val"
    assert list(task.sample_files()) == [str(root / "val-0000.tar")]


def test_a_run_id_with_a_folder_is_found_again_as_the_run_found_it(tmp_path):
    """An annotated file name with a folder (``val2017/a.png``) whose member is ``a.png``: the run
    finds it by its file name (container_samples), and so do explain and the thumbnails afterwards."""
    images = ContainerImages("webdataset", str(_webdataset(tmp_path / "wds")), labelled=False)
    assert images.absent("val2017/a.png") is None
    assert images.image("val2017/b.png").read() == _pixels("b.png")
    assert images.absent("val2017/d.png") is not None  # a name no member has stays absent
