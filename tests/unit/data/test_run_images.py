"""A finished run's images by id through one lookup (data/run_images.py): the same images in a folder
and in a parquet give the same bytes; what the dataset does not hold is said, never opened."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pack_containers import tiny_items, write_parquet  # noqa: E402

from evalharness.data.run_images import ContainerImages, FolderImages, run_images  # noqa: E402

ITEMS = tiny_items()


def test_a_folder_and_a_container_give_the_same_images_by_id(tmp_path):
    pytest.importorskip("pyarrow", reason="packing the parquet needs pyarrow")
    folder = tmp_path / "folder"
    folder.mkdir()
    for name, data, _ in ITEMS:
        (folder / name).write_bytes(data)
    packed = run_images(str(write_parquet(ITEMS, tmp_path / "parquet")), "parquet")
    files = run_images(str(folder), None)
    assert isinstance(packed, ContainerImages) and isinstance(files, FolderImages)
    for name, data, _ in ITEMS:
        assert packed.absent(name) is None and files.absent(name) is None
        mine, theirs = packed.image(name), files.image(name)
        assert mine.read() == theirs.read() == data and mine.name == theirs.name == name
        assert ".parquet:" in mine.where and theirs.where == str(folder / name)  # as the run names each
    assert packed.absent("gone.png") == f"gone.png is not in its container {packed.root}"
    assert (
        files.absent("gone.png") == f"image {folder / 'gone.png'} not found (provenance.dataset.root moved?)"
    )
    assert files.outside("../x.png") and "names no file under its dataset root" in str(
        files.absent("../x.png")
    )
