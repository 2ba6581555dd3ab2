"""A container run's images opened again after the run, by its sample ids, for whoever shows or
feeds them (``explain`` remakes the inputs, ``report diff --format html`` shows thumbnails).

One mechanism: the container is listed again through its reader (a kept shard index serves the
listing when it still matches the shard), each member is read by offset and checked against the
digest it is listed with (:meth:`DatasetReader.open`), and :meth:`ContainerImages.proves` checks the
listing against the run's recorded content manifest (``dataset.manifest_sha256``: sha256 over every
image's id and sha256), so bytes are shown as the run's only when they are the ones it read.
"""

from __future__ import annotations

from collections.abc import Iterable

from evalharness.data.dataset_reader import ReadRequest, reader_for
from evalharness.data.manifest import manifest_hash, sample_entry
from evalharness.data.splits import AUTO


class ContainerImages:
    """The samples of ``container`` shards at ``root``, by sample id (a :class:`DataError` when the
    shards are gone, moved or unreadable)."""

    def __init__(
        self, container: str, root: str, index_dir: str | None = None, split: str | None = None
    ) -> None:
        self.root = root
        # the split the run read (provenance.dataset.dataset_split), so its shards are listed again
        request = ReadRequest(root, index_dir=index_dir, split=split or AUTO)
        self.reader, _ = reader_for(container, request)
        self.by_key = {s.key: s for s in self.reader.samples()}

    def missing(self, keys: Iterable[str]) -> list[str]:
        """The ids of ``keys`` the container does not hold (in the order given)."""
        return [k for k in keys if k not in self.by_key]

    def proves(self, keys: Iterable[str], manifest_sha256: str | None) -> bool:
        """Whether the members listed now for ``keys`` (a run's scored ids) hash to the run's recorded
        content manifest: every image's sha256 as the run read it, so a member that verifies against
        its listed digest is the run's image."""
        keys = list(keys)
        if not manifest_sha256 or self.missing(keys):
            return False
        entries = (sample_entry(self.by_key[k]) for k in sorted(keys))
        return manifest_hash(entries, content=True, presorted=True) == manifest_sha256

    def open(self, key: str) -> bytes:
        """The encoded image of sample ``key``, read by offset and checked against its listed digest
        (a :class:`DataError` naming the member when the bytes differ)."""
        return self.reader.open(self.by_key[key])
