"""The one reader contract of classification datasets, whatever holds them: a folder of image files
with a label list, or a container (Hugging Face parquet, webdataset tar shards, TFDS TFRecords).

A reader lists samples (stable ids, label texts, where each image's encoded bytes lie), opens one
sample's bytes, and names the files a run reads (their stat is checked again when the run resumes).
Readers are plug-ins of one registry (:data:`READERS`), picked by ``dataset.format``: a container's
name, or a ground-truth format of a folder (``val_txt``, ``csv``, ...), or ``auto``, which detects a
container from ``dataset.root`` where that is unambiguous (and says so) and is a folder otherwise.

Why one contract: the run loop, the tensor cache, the manifest and resume see samples only, so a
container is one module here and nothing above changes. A container's samples carry a
:class:`Member` (shard, offset, length, sha256 of the bytes): workers read the bytes by offset from
the shard themselves (nothing is unpacked to disk) and check them against the digest taken when the
shard was listed, so a shard changed since is an error, never a wrong answer.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import ClassVar, TypedDict

from evalharness.core.documents import Assumed
from evalharness.core.errors import ConfigError, DataError
from evalharness.core.registry import Registry
from evalharness.data.ground_truth import DEFAULT_EXTENSIONS, FORMATS, ClassList, LabeledSample, Member
from evalharness.data.sample_image import SampleImage, file_image
from evalharness.data.shard_names import BRACE, container_of, expand_braces
from evalharness.data.splits import AUTO, DatasetSplitRecord, SplitChoice, folder_groups

FOLDER = "folder"  # the reader of a folder of image files; every other reader is a container's


@dataclass(frozen=True)
class ReadRequest:
    """What a reader is given: the dataset's root (a folder, a shard file, a directory of shards or
    a brace pattern) and the dataset's own files (for a folder's ground truth; class lists)."""

    root: str
    ground_truth: str | None = None
    class_names: str | None = None
    synset_words: str | None = None
    devkit_meta: str | None = None
    ground_truth_format: str = "auto"
    extensions: tuple[str, ...] = DEFAULT_EXTENSIONS
    unscored: Counter[str] = field(default_factory=Counter)
    index_dir: str | None = None  # where container shard indexes are kept (data/shard_index.py)
    split: str = AUTO  # dataset.split: which split of a container root is read (data/splits.py)
    classes: ClassList = field(default_factory=ClassList)  # filled with the class list a folder used
    # False: the images alone are read (a detection run's ground truth lies beside them, an instances
    # JSON): a container's labels are neither needed nor read, so a member without one is no error
    labelled: bool = True


class ContainerIndex(TypedDict):
    """``provenance.dataset.index``: where a container's shard indexes lie and how many were used."""

    dir: str | None
    shards_from_index: int
    rebuilt: list[str]  # kept indexes not used, and why


class ContainerProvenance(TypedDict, total=False):
    """What ``provenance.dataset`` says of the container read (empty for a folder of files)."""

    container: str
    shards: int
    read_order: str
    class_names_source: str | None
    index: ContainerIndex
    crc32c: str  # tfrecord: which CRC-32C checked the records
    dataset_split: DatasetSplitRecord  # the split read, the splits found, the shards (data/splits.py)
    labels_read: bool  # False: the images alone were read (ReadRequest.labelled); absent: True


class DatasetReader:
    """The contract: ``samples()`` (sorted by key, labelled), ``open(sample)`` (its encoded bytes)
    and ``files()`` (what the run reads). ``names_source``: where the class names came from."""

    name: ClassVar[str]
    names_source: str | None = None
    chosen: SplitChoice | None = None  # a container's split and shards, once listed (data/splits.py)

    def __init__(self, request: ReadRequest) -> None:
        self.request = request
        # dataset options given but not read (a container's own labels win), said as an assumption
        self.unread: tuple[str, ...] = ()

    def assumption(self) -> Assumed | None:
        """What to print and record when dataset files were given and not read (else None)."""
        given = [k for k in self.unread if getattr(self.request, k) is not None]
        if not given:
            return None
        return {
            "what": ", ".join(f"dataset.{k}" for k in given),
            "assumed": "not read",
            "why": f"the {self.name} shards hold their own labels"
            + (" and class names" if "class_names" in self.unread else ""),
            "fix": " ".join(f"dataset.{k}=null" for k in given),
        }

    def samples(self) -> Sequence[LabeledSample]:
        """Every sample, sorted by key: the built-in readers give a :class:`SampleList` (columns, each
        sample made when read: :mod:`evalharness.data.samples`), which the task keeps as it is."""
        raise NotImplementedError

    def read_plan(self, samples: Sequence[LabeledSample]) -> Sequence[LabeledSample]:
        """The order to read this run's ``samples`` in (the loop's order); a container reader may
        also prepare for exactly these reads. A folder: as given (sorted ids)."""
        return samples

    def open(self, sample: LabeledSample) -> bytes:
        """The encoded image of ``sample``: a container's member is the bytes it was listed with —
        its shard unchanged since (one stat: any write changes the state, see
        :func:`~evalharness.core.derived.file_state`), else its sha256 checked against the digest."""
        member = sample.member
        if member is None:
            with open(sample.path, "rb") as f:
                return f.read()
        try:
            data = self.read_member(member)
        except DataError:  # damage found in a shard written to since: say that, not "damaged"
            if self.unchanged_since_listed(member.shard):
                raise
            raise DataError(
                f"{member.where}: the shard changed since it was listed (changed while the run ran?); "
                "rerun on an unchanged copy"
            ) from None
        if self.unchanged_since_listed(member.shard):  # stat'ed after the read: no write since listing
            return data
        if hashlib.sha256(data).digest() != member.digest:
            raise DataError(
                f"{member.where}: bytes differ from when the shard was listed (changed while the "
                "run ran?); rerun on an unchanged copy"
            )
        return data

    def unchanged_since_listed(self, shard: str) -> bool:
        """Whether ``shard``'s file state equals the one it had when it was listed (so every member
        read from it is the bytes hashed then, no second sha256 needed); a folder has no shards."""
        return False

    def read_member(self, member: Member) -> bytes:
        """The bytes at ``member`` (containers read by offset; a parquet reader decodes its page)."""
        with open(member.shard, "rb") as f:
            f.seek(member.offset)
            data = f.read(member.length)
        if len(data) != member.length:
            raise DataError(f"{member.where}: shard is shorter than when it was listed; rerun")
        return data

    def image(self, sample: LabeledSample) -> SampleImage:
        """``sample`` as the steps beside a run read it (calibration, a repair's search part): its
        id's file name and its bytes by :meth:`open` (a folder's file refused as a run refuses it)."""
        if sample.member is None:
            return file_image(sample.path, sample.key)
        return SampleImage(posixpath.basename(sample.key), sample.member.where, partial(self.open, sample))

    @staticmethod
    def shard_of(sample: LabeledSample) -> str | None:
        """The shard file a sample is read from (None: its own file): ``dataset.shard.scheme=files``."""
        return None if sample.member is None else sample.member.shard

    def files(self, samples: Sequence[LabeledSample]) -> Iterator[str]:
        """The files the samples are read from (each shard once), streamed, in order."""
        seen: set[str] = set()
        for s in samples:
            if s.member is None:
                yield s.path
            elif s.member.shard not in seen:
                seen.add(s.member.shard)
                yield s.member.shard

    def provenance(self) -> ContainerProvenance:
        """What metrics.json records of the container (nothing for a folder: its record is as it was)."""
        return {}


READERS: Registry[type[DatasetReader]] = Registry(
    "dataset format",
    base=DatasetReader,
    lazy={
        FOLDER: "evalharness.data.folder_reader:FolderReader",
        "parquet": "evalharness.data.parquet.parquet_reader:ParquetReader",
        "webdataset": "evalharness.data.webdataset_reader:WebDatasetReader",
        "tfrecord": "evalharness.data.tfrecord_reader:TFRecordReader",
    },
)


def container_names() -> list[str]:
    """Every container a reader is registered for (built-in or a plug-in's), from :data:`READERS`:
    the one list every part asks, so a reader added as a plug-in is seen everywhere."""
    return [name for name in READERS.names() if name != FOLDER]


def detect(root: str) -> tuple[str, str | None]:
    """(container, why) for ``dataset.format=auto``: a container when ``root`` names shard files
    (or is a directory holding one container's shards, directly or as a snapshot's ``data/`` or
    split subfolders, and no images), else ``folder`` (why None: nothing to say, as before
    containers existed)."""
    if os.path.isdir(root):
        names = [n for n in os.listdir(root) if not n.startswith(".")]
        files = [f for group in folder_groups(root, None).values() for f in group]
        kinds = {kind for kind in (container_of(os.path.basename(f)) for f in files) if kind is not None}
        if len(kinds) == 1 and not any(n.lower().endswith(DEFAULT_EXTENSIONS) for n in names):
            kind = kinds.pop()
            return kind, f"dataset.root {root} holds {kind} shards and no image files"
        return "folder", None
    first = expand_braces(root)[0] if BRACE.search(root) else root
    named = container_of(first)
    if named is None:
        return "folder", None
    return named, f"dataset.root {root} names {named} shard file(s)"


def reads_container(fmt: str, root: str) -> bool:
    """Whether ``dataset.format`` (``auto``: as :func:`detect` finds ``root``) reads a container."""
    if fmt in READERS:
        return fmt != FOLDER
    return fmt == "auto" and detect(root)[0] != FOLDER


def reader_for(fmt: str, request: ReadRequest) -> tuple[DatasetReader, Assumed | None]:
    """The reader ``dataset.format`` picks, and the assumption to print and record when ``auto``
    detected a container (None otherwise)."""
    note: Assumed | None
    if fmt in READERS:  # the folder's reader or a container's
        kind, note = fmt, None
    elif fmt == "auto":
        kind, why = detect(request.root)
        note = (
            None
            if why is None
            else {
                "what": "dataset.format",
                "assumed": kind,
                "why": why,
                "fix": f"dataset.format={'|'.join([*container_names(), FOLDER])}",
            }
        )
    else:
        FORMATS.get(fmt)  # a ground-truth format of a folder; an unknown name is one error line
        kind, note = "folder", None
        found, why = detect(request.root)
        if found != "folder":
            raise ConfigError(
                f"dataset.format={fmt} reads a folder's ground truth, but {why}; "
                f"set dataset.format={found} (or auto)"
            )
    if kind == "folder" and request.split != AUTO:  # never read as if the split were chosen
        raise ConfigError(
            f"dataset.split={request.split}: {request.root} is read as one folder of images, with no "
            "splits; point dataset.root at that split's folder and set dataset.split=auto"
        )
    return READERS.get(kind)(request), note
