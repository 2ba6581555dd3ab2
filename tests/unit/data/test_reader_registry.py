"""The list of containers is the reader registry's: a reader registered as a plug-in is a container
everywhere a part asks (format detection's advice, the ImageNet task's request, ``loop.parallel``'s
one listing, ``inspect``), and the images beside a run (calibration) are read by id through it."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pack_containers import tiny_items, write_webdataset  # noqa: E402

from evalharness.data.container import ContainerReader, Listed, member  # noqa: E402
from evalharness.data.dataset_reader import READERS, ReadRequest, container_names, reader_for  # noqa: E402
from evalharness.data.ground_truth import Member  # noqa: E402

ITEMS = tiny_items(3)


class ToyReader(ContainerReader):
    """One shard file of lines ``id<TAB>class index<TAB>the image's bytes in hex``."""

    name = "toy"

    def list_shard(self, shard: str) -> Iterator[Listed]:
        offset = 0
        with open(shard, "rb") as f:
            for line in f:
                key, index, data = line.rstrip(b"\n").split(b"\t")
                start = offset + len(key) + len(index) + 2
                found = member(shard, key.decode(), start, bytes.fromhex(data.decode()))
                yield key.decode(), int(index), found
                offset += len(line)

    def read_member(self, found: Member) -> bytes:
        with open(found.shard, "rb") as f:
            f.seek(found.offset)
            return bytes.fromhex(f.read(2 * found.length).decode())


def _toy_shard(path: Path) -> Path:
    path.write_text("".join(f"{name}\t{label}\t{data.hex()}\n" for name, data, label in ITEMS))
    return path


def test_a_reader_registered_as_a_plugin_is_listed_and_read_as_a_container(tmp_path, monkeypatch):
    assert {"parquet", "webdataset", "tfrecord"} <= set(container_names())
    assert "folder" not in container_names() and "toy" not in container_names()
    monkeypatch.setitem(READERS._items, "toy", ToyReader)
    assert "toy" in container_names()
    shard = _toy_shard(tmp_path / "val.toy")
    reader, note = reader_for("toy", ReadRequest(str(shard)))
    assert isinstance(reader, ToyReader) and note is None
    samples = reader.samples()
    assert [(s.key, s.index) for s in samples] == [(name, label) for name, _, label in ITEMS]
    # what calibration takes: each image by id, through the reader, checked against its digest
    images = [reader.image(s) for s in samples]
    assert [(i.name, i.read()) for i in images] == [(name, data) for name, data, _ in ITEMS]
    assert images[0].where == f"{shard}:{ITEMS[0][0]}"
    # the ImageNet task asks no folder ground-truth format of it
    from evalharness.tasks.imagenet.live import read_request

    fields = dict.fromkeys(("ground_truth", "class_names", "synset_words", "devkit_meta", "index_dir"))
    dataset = SimpleNamespace(format="toy", root=str(shard), split="auto", **fields)
    assert read_request(dataset, Counter()).ground_truth_format == "auto"
    # dataset.format=auto's advice names every registered container
    tars = write_webdataset(ITEMS, tmp_path / "wds")
    _, detected = reader_for("auto", ReadRequest(tars))
    assert detected is not None and "|toy|" in detected["fix"] and detected["fix"].endswith("|folder")
