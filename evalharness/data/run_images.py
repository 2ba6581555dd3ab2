"""A finished run's images opened again by its sample ids, for whoever shows or feeds them
(``explain`` remakes the inputs, ``report diff --format html`` shows thumbnails): one lookup, a
:class:`~evalharness.data.sample_image.SampleImage` per id, whatever held the images.

A folder's id is a file under the recorded dataset root (:func:`~evalharness.core.paths.inside_root`:
an id from someone else's run directory never opens a file outside it). A container is listed again
through its reader (a kept shard index serves the listing when it still matches the shard), each
member is read by offset and checked against the digest it is listed with
(:meth:`DatasetReader.open`), and :meth:`ContainerImages.proves` checks the listing against the run's
recorded content manifest (``dataset.manifest_sha256``: sha256 over every image's id and sha256), so
bytes are shown as the run's only when they are the ones it read.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from typing import Protocol

from evalharness.core.paths import inside_root
from evalharness.data.dataset_reader import ReadRequest, reader_for
from evalharness.data.ground_truth import LabeledSample
from evalharness.data.manifest import manifest_hash, sample_entry
from evalharness.data.sample_image import SampleImage, file_image
from evalharness.data.splits import AUTO


class RunImages:
    """The contract: ``absent(id)`` (why the dataset holds no image for the id, or None) and
    ``image(id)`` (its name, where it lies and its bytes, asked once ``absent`` said None)."""

    def __init__(self, root: str | None) -> None:
        self.root = root

    def absent(self, sample_id: str) -> str | None:
        raise NotImplementedError

    def image(self, sample_id: str) -> SampleImage:
        raise NotImplementedError


class FolderImages(RunImages):
    """The image files the ids name under a folder's root."""

    def outside(self, sample_id: str) -> bool:
        """Whether ``sample_id`` names no path under the root (``../``, absolute, no root)."""
        return inside_root(self.root, sample_id) is None

    def absent(self, sample_id: str) -> str | None:
        path = inside_root(self.root, sample_id)
        if path is None:
            return f"sample id {sample_id!r} names no file under its dataset root {self.root}"
        if not os.path.isfile(path):
            return f"image {path} not found (provenance.dataset.root moved?)"
        return None

    def image(self, sample_id: str) -> SampleImage:
        path = inside_root(self.root, sample_id)
        assert path is not None, "asked after absent() said it is there"
        return file_image(path, sample_id)


class ContainerImages(RunImages):
    """The samples of ``container`` shards at ``root``, by sample id (a :class:`DataError` when the
    shards are gone, moved or unreadable). ``labelled`` False: the run read the images alone (its
    ground truth beside them), so they are listed again as it listed them; a run's id is then the
    file name its ground truth gives, found as the container's id or, once, as its file name."""

    def __init__(
        self,
        container: str,
        root: str,
        index_dir: str | None = None,
        split: str | None = None,
        labelled: bool = True,
    ) -> None:
        super().__init__(root)
        # the split the run read (provenance.dataset.dataset_split), so its shards are listed again
        request = ReadRequest(root, index_dir=index_dir, split=split or AUTO, labelled=labelled)
        self.reader, _ = reader_for(container, request)
        self.by_key = {s.key: s for s in self.reader.samples()}
        # ids the ground truth names: the containers' ids, else by the file name they end in, when unique
        self.by_name = {} if labelled else by_file_name(self.by_key.values())

    def _find(self, sample_id: str) -> LabeledSample | None:
        return find_listed(self.by_key, self.by_name, sample_id)

    def absent(self, sample_id: str) -> str | None:
        return None if self._find(sample_id) else f"{sample_id} is not in its container {self.root}"

    def proves(self, keys: Iterable[str], manifest_sha256: str | None) -> bool:
        """Whether the members listed now for ``keys`` (a run's scored ids) hash to the run's recorded
        content manifest: every image's sha256 as the run read it, so a member that verifies against
        its listed digest is the run's image."""
        keys = list(keys)
        found = {k: sample for k in keys if (sample := self._find(k)) is not None}
        if not manifest_sha256 or any(k not in found for k in keys):
            return False
        entries = ((k, sample_entry(found[k])[1]) for k in sorted(keys))  # k: the run's id
        return manifest_hash(entries, content=True, presorted=True) == manifest_sha256

    def image(self, sample_id: str) -> SampleImage:
        """Sample ``sample_id`` through the reader: its bytes read by offset and checked against its
        listed digest (a :class:`DataError` naming the member when they differ)."""
        found = self._find(sample_id)
        assert found is not None, "asked after absent() said it is there"
        return self.reader.image(found)


def by_file_name(samples: Iterable[LabeledSample]) -> dict[str, LabeledSample]:
    """Samples by the file name their id ends in, for names one sample alone has (a container's id
    may keep the folder its writer had: ``val2017/000000000139.jpg``)."""
    found: dict[str, LabeledSample] = {}
    twice: set[str] = set()
    for s in samples:
        name = posixpath.basename(s.key)
        if name in found:
            twice.add(name)
        found[name] = s
    return {name: s for name, s in found.items() if name not in twice}


def find_listed(
    by_key: dict[str, LabeledSample], by_name: dict[str, LabeledSample], sample_id: str
) -> LabeledSample | None:
    """A listed sample by the id a run gave it: the container's own id, else the file name that id
    ends in where one sample alone has it (:func:`by_file_name`): how a COCO run finds an annotated
    file name in a container, and so how its images are found again afterwards."""
    return by_key.get(sample_id) or by_name.get(posixpath.basename(sample_id))


def run_images(
    root: str | None,
    container: str | None,
    index_dir: str | None = None,
    split: str | None = None,
    labelled: bool = True,
) -> RunImages:
    """The images a run read, as its provenance names them: ``container`` (parquet, webdataset,
    TFRecord, a plug-in's) shards at ``root`` (``labelled`` False: read for the images alone), or
    the files under the folder ``root``."""
    if container:
        return ContainerImages(container, str(root), index_dir, split, labelled)
    return FolderImages(root)


class RecordedDataset(Protocol):
    """What a run's ``provenance.dataset`` record says of where its images lie (read only)."""

    @property
    def root(self) -> str | None: ...
    @property
    def container(self) -> str | None: ...
    @property
    def index_dir(self) -> str | None: ...
    @property
    def dataset_split(self) -> str | None: ...
    @property
    def labels_read(self) -> bool: ...


def recorded_images(dataset: RecordedDataset) -> RunImages:
    """:func:`run_images` of a run's recorded ``provenance.dataset``: every reader of a finished
    run's images (explain, the thumbnails, the diff's rebuilt inputs) opens them this one way."""
    split, labelled = dataset.dataset_split, dataset.labels_read
    return run_images(dataset.root, dataset.container, dataset.index_dir, split, labelled)
