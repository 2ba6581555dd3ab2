"""What every container reader shares: its shard files, class names, labels and sample ids.

A container module says only how one shard is listed (:meth:`ContainerReader.list_shard`: sample id,
class index, :class:`Member`) and where the container keeps its class names; the rest is here, once:
ids unique across shards, indices checked against the names, samples sorted by id as a folder's are
(so ``task.num_images`` and shards take the same images whatever holds them).

Class names, first found: the container's own (parquet features metadata, TFDS ``label.labels.txt``),
else ``dataset.class_names`` / ``dataset.synset_words``, else none: the label is the bare class index,
scored by index like a csv's ``class_index`` (the output offset is detected and said).
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from collections.abc import Iterator, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

from evalharness.core.derived import file_state
from evalharness.core.errors import DataError
from evalharness.data.dataset_reader import ContainerIndex, ContainerProvenance, DatasetReader
from evalharness.data.ground_truth import (
    GroundTruthRequest,
    Label,
    LabeledSample,
    Member,
    _class_list,
    _with_occurrence,
    bare_index,
)
from evalharness.data.samples import SampleColumns, SampleList, samples_of
from evalharness.data.shard_index import indexed
from evalharness.data.splits import SplitChoice, select_shards

Listed = tuple[str, int, Member]  # (sample id, class index, where its encoded image lies)
NO_LABEL = -1  # the class index of a member listed for its image alone (ReadRequest.labelled False)


def member(shard: str, name: str, offset: int, data: bytes) -> Member:
    """The member holding ``data`` at ``offset`` of ``shard``, with its digest taken now."""
    return Member(shard, name, offset, len(data), hashlib.sha256(data).digest())


def class_index(value: Any, where: str) -> int:
    """A label value read from a container as a class index >= 0, or one error naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DataError(
            f"{where}: label {value!r} is not a class index >= 0 (an unlabelled test split?); "
            "evaluate a split with labels"
        )
    return value


def refuse_repeated_ids(samples: SampleList) -> None:
    """An id listed twice (in two shards, or twice in one) is an error naming both places. The
    samples are sorted by id, stably in listing order, so a repeat lies beside its first listing:
    no set of every id (megabytes at ILSVRC size) is built to find it."""
    for i, (key, following) in enumerate(pairwise(samples.keys())):
        if key == following:
            first, again = samples[i], samples[i + 1]
            where = again.member.where if again.member else again.path
            earlier = first.member.shard if first.member else first.root
            raise DataError(
                f"{where}: sample id {again.key!r} is also in {earlier}; each image must appear once "
                "in the dataset"
            )


class ContainerReader(DatasetReader):
    """The shared half of a container reader; subclasses give :meth:`list_shard` and may give
    :meth:`own_names`."""

    shards: list[str]
    from_index: int  # shards listed from a kept index (data/shard_index.py)
    rebuilt: list[str]  # kept indexes not used, and why
    reordered = 0  # samples the read plan put in another order than their ids
    listed_states: dict[str, tuple[int, ...]]  # shard -> file state while listed (unchanged throughout)

    def list_shard(self, shard: str) -> Iterator[Listed]:
        """The shard's samples; with ``self.request.labelled`` False, its images alone (class index
        :data:`NO_LABEL`, no label read or required)."""
        raise NotImplementedError

    @property
    def index_name(self) -> str:
        """What a kept shard index is filed under: a listing of the images alone is not a labelled one."""
        return self.name if self.request.labelled else f"{self.name}-images"

    def own_names(self, shards: list[str]) -> tuple[list[str], str] | None:
        """The container's own class names and where they were read, or None."""
        return None

    def split_choice(self) -> SplitChoice:
        """The split of ``dataset.root`` this run reads and its shards (chosen once, kept)."""
        if self.chosen is None:
            self.chosen = select_shards(self.request.root, self.name, self.request.split)
        return self.chosen

    def samples(self) -> SampleList:
        self.shards = list(self.split_choice().files)
        classes = self._classes()
        out = SampleColumns(os.path.abspath(self.request.root))  # columns: nothing per image an object
        self.from_index, self.rebuilt, self.listed_states = 0, [], {}
        for shard in self.shards:
            before = file_state(shard)
            listing, kept = indexed(
                self.request.index_dir,
                self.index_name,
                shard,
                before,
                self.request.unscored,
                functools.partial(self.list_shard, shard),
                self.rebuilt,
            )
            self.from_index += kept
            for key, index, found in listing:
                label = self._label(classes, index, found) if self.request.labelled else UNLABELLED
                out.add(key, (sys.intern(label[0]), label[1], label[2]), found)
            if before is not None and file_state(shard) == before:  # not written while it was listed
                self.listed_states[shard] = before
        if not len(out):
            raise DataError(
                f"no images found in the {self.name} shards of {self.request.root}; check dataset.root"
            )
        ordered = SampleList(out).sorted_by_key()  # stable: a repeated id's first listing comes first
        refuse_repeated_ids(ordered)
        return ordered

    def unchanged_since_listed(self, shard: str) -> bool:
        listed = self.listed_states.get(shard)
        return listed is not None and file_state(shard) == listed

    def read_plan(self, samples: Sequence[LabeledSample]) -> Sequence[LabeledSample]:
        """The samples in the order they are stored (shard, then offset): a shuffled container
        (TFDS shuffles its records) is read front to back, not jumping between shards, and a parquet
        page is decoded once for all the images it holds. Sample ids, manifests and metrics do not
        depend on the order; predictions.jsonl follows it (``provenance.dataset.read_order``)."""
        rank = {shard: i for i, shard in enumerate(self.shards)}

        def stored(s: LabeledSample) -> tuple[int, int, int]:
            member = s.member
            return (
                (-1, 0, 0) if member is None else (rank.get(member.shard, -1), member.offset, member.length)
            )

        given = samples_of(samples)
        ordered = given.sorted_by(stored)
        self.reordered = sum(a != b for a, b in zip(ordered.positions, given.positions, strict=True))
        return ordered

    def _classes(self) -> list[Label] | None:
        self.unread = ("ground_truth", "devkit_meta")
        if not self.request.labelled:  # the images alone: no class names to find
            self.names_source = None
            return None
        own = self.own_names(self.shards)
        if own is not None:
            self.unread += ("class_names", "synset_words")
            self.names_source = own[1]
            return _with_occurrence(own[0])
        r = self.request
        if r.class_names is None and r.synset_words is None:
            self.names_source = "none (labels are class indices)"
            return None
        gt = GroundTruthRequest(Path(r.root), None, _path(r.class_names), _path(r.synset_words), None, ())
        path, classes = _class_list(gt, f"dataset.format={self.name}")
        self.names_source = str(path)
        return classes

    def _label(self, classes: list[Label] | None, index: int, found: Member) -> Label:
        if classes is None:
            return bare_index(str(index), found.where)
        if index >= len(classes):
            raise DataError(
                f"{found.where}: label {index} is outside the {len(classes)} class names "
                f"({self.names_source}); pass the class list this dataset was written with"
            )
        return classes[index]

    def provenance(self) -> ContainerProvenance:
        index: ContainerIndex = {
            "dir": self.request.index_dir,
            "shards_from_index": self.from_index,
            "rebuilt": self.rebuilt,
        }
        order = "stored order (shard, offset)"
        if self.reordered:
            order += f": {self.reordered} samples read in another order than their ids"
        said: ContainerProvenance = {
            "container": self.name,
            "shards": len(self.shards),
            "read_order": order,
            "class_names_source": self.names_source,
            "index": index,
            "dataset_split": self.split_choice().record(),
        }
        if not self.request.labelled:  # what a reader of the run lists again by (data/run_images.py)
            said["labels_read"] = False
        return said


UNLABELLED: Label = ("", None, None)  # the label of an image listed alone


def _path(value: str | None) -> Path | None:
    return None if value is None else Path(value)
