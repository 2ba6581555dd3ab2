"""Calibration images are checked disjoint from the evaluation set through the dataset's reader: in a
container, by each sample id's file name and the sha256 listed with each member, exactly as a folder
is checked by file name and bytes (tiny parquet shards packed here, nothing quantized)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pack_containers import tiny_items, tiny_png, write_parquet  # noqa: E402

from evalharness.core.errors import DataError  # noqa: E402
from evalharness.data.dataset_reader import ReadRequest, reader_for  # noqa: E402
from evalharness.settings.groups import CalibrationSchema  # noqa: E402
from evalharness.transforms.calibration import calibration_record, dataset_members  # noqa: E402

pytest.importorskip("pyarrow", reason="packing the parquet needs pyarrow")
ITEMS = tiny_items()


def _packed(tmp_path: Path) -> tuple[str, list]:
    root = str(write_parquet(ITEMS, tmp_path / "parquet"))
    reader, _ = reader_for("auto", ReadRequest(root))
    return root, [(s.key, s.member) for s in reader.samples()]


def _roots(tmp_path: Path, files: dict[str, bytes]) -> CalibrationSchema:
    folder = tmp_path / "calibration"
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return CalibrationSchema(name="mine", source="roots", roots=(str(folder),))


@pytest.mark.parametrize(
    "files",
    [
        {"other.png": ITEMS[2][1], "fresh.png": tiny_png(250)},  # an eval member's bytes, another name
        {"img1.png": tiny_png(251)},  # an eval member's name, other bytes
    ],
)
def test_a_calibration_image_in_the_container_is_refused(tmp_path, files):
    root, members = _packed(tmp_path)
    cal = _roots(tmp_path, files)
    with pytest.raises(DataError, match=r"also in the evaluation set \(.*parquet:.*must be disjoint"):
        calibration_record(cal, True, root, None, lambda: members)


def test_disjoint_calibration_passes_and_records_the_members_checked(tmp_path):
    root, members = _packed(tmp_path)
    record, images = calibration_record(
        _roots(tmp_path, {"fresh.png": tiny_png(250)}), True, root, None, lambda: members
    )
    assert len(images) == 1 and record["eval_set"]["count"] == len(ITEMS)
    assert record["eval_set"]["manifest_kind"] == "sample id + sha256"
    # the same check, the folder way: the container root holds no image file, so nothing was compared
    blind, _ = calibration_record(_roots(tmp_path / "b", {"other.png": ITEMS[2][1]}), True, root)
    assert blind["eval_set"]["count"] == 0


def test_the_members_are_asked_of_the_task_only_for_a_container(tmp_path):
    root, members = _packed(tmp_path)
    asked = []

    from evalharness.tasks.definition import Abilities  # noqa: PLC0415

    def settings(where: str, fmt: str, labelled: bool = True) -> SimpleNamespace:
        task = SimpleNamespace(listed_members=lambda: asked.append(where) or members)
        definition = SimpleNamespace(abilities=Abilities(container_labels=labelled))
        dataset = SimpleNamespace(root=where, format=fmt)
        return SimpleNamespace(dataset=dataset, live_task=lambda: task, definition=definition)

    assert dataset_members(settings(root, "auto"))() == members
    assert dataset_members(settings(str(tmp_path), "auto"))() == ()  # a folder is listed as a folder
    assert dataset_members(settings(root, "folder"))() == ()
    assert asked == [root]
    # COCO's dataset.format names its ground truth (the JSON beside the container): the root decides
    assert dataset_members(settings(root, "coco", labelled=False))() == members
    assert dataset_members(settings(str(tmp_path), "coco", labelled=False))() == ()
