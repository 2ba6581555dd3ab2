"""webdataset tar shards (``timm/imagenet-1k-wds``: ``val-{0000..0063}.tar``), read in place.

Members are grouped by key (the member path up to the first dot of its name, as webdataset does):
one image (``.jpg``/``.jpeg``/``.png`` or any extension the folder reader decodes) and its label, a
``.cls`` member (the class index as text) or a ``.json`` one (an object with an integer ``label`` or
``cls``). The sample id is key + the image's extension, the original file name. Tar headers are
walked once per listing (the standard library's ``tarfile``, no extraction); each image's offset and
size in the shard are kept, and workers read those bytes themselves. Other members are counted as
not scored, by extension; a key with a label and no image, an image and no label, or two images is
an error naming the shard and the member, as are a key with two labels that differ (``.cls`` and
``.json``, or two of one) and a truncated shard. Read for the images alone (a detection run's
ground truth is an instances JSON beside the shards), label members are counted as not read.
"""

from __future__ import annotations

import hashlib
import os
import tarfile
from collections.abc import Iterator
from typing import Any

from evalharness.core.errors import DataError
from evalharness.core.untrusted import MAX_NUMBER_CHARS, parse_json
from evalharness.data.bounds import OverBudget, backed
from evalharness.data.container import NO_LABEL, ContainerReader, Listed, class_index
from evalharness.data.ground_truth import Member

MAX_LABEL_MEMBER = 1 << 16  # a .cls or .json label larger than 64 KiB is not a label


def split_key(name: str) -> tuple[str, str]:
    """(key, extension) of a member name: webdataset's key ends at the first dot of the file name."""
    folder, _, base = name.rpartition("/")
    stem, dot, ext = base.partition(".")
    return (f"{folder}/{stem}" if folder else stem), (ext if dot else "")


def _label(data: bytes, ext: str, where: str) -> int:
    if ext == "cls":
        text = data.decode("utf-8", "replace").strip()
        if len(text) > MAX_NUMBER_CHARS or not text.isdigit():
            raise DataError(f"{where}: .cls holds {text[:40]!r}, not a class index; fix the shard")
        return int(text)
    doc = parse_json(data, where, dict, fix="fix the shard")
    value = doc.get("label", doc.get("cls"))
    return class_index(value, where)


class WebDatasetReader(ContainerReader):
    name = "webdataset"

    def list_shard(self, shard: str) -> Iterator[Listed]:
        images: dict[str, tuple[str, Member]] = {}  # key -> (extension, member)
        labels: dict[str, tuple[int, str]] = {}  # key -> (class index, member where)
        extensions = {e.lstrip(".") for e in self.request.extensions}
        for info, read in _members(shard):
            key, ext = split_key(info.name)
            where = f"{shard}:{info.name}"
            if ext.lower() in extensions:
                if key in images:
                    raise DataError(f"{where}: second image for key {key!r}; keep one image a sample")
                try:  # read whole to hash: within the budget (the shard's size was checked)
                    backed(info.size, info.size, "the member")
                except OverBudget as exc:
                    raise DataError(f"{where}: {exc}; keep images under it") from None
                data = read(info.size)
                found = Member(shard, info.name, info.offset_data, info.size, hashlib.sha256(data).digest())
                images[key] = (ext, found)
            elif ext.lower() in ("cls", "json") and self.request.labelled:
                if info.size > MAX_LABEL_MEMBER:
                    raise DataError(f"{where}: {info.size} bytes is not a label; fix the shard")
                label = _label(read(info.size), ext.lower(), where)
                if key in labels and labels[key][0] != label:  # timm's .json repeats its .cls: fine
                    raise DataError(
                        f"{where}: a second label for key {key!r} ({label}; {labels[key][1]} says "
                        f"{labels[key][0]}); keep one .cls or .json label a sample"
                    )
                labels.setdefault(key, (label, where))
            else:
                self.request.unscored[f"member extension .{ext or '(none)'} not read"] += 1
        for key in sorted(labels.keys() - images.keys()):
            raise DataError(f"{labels[key][1]}: a label with no image member for key {key!r}; fix the shard")
        for key, (ext, found) in images.items():
            if key not in labels and self.request.labelled:
                raise DataError(f"{found.where}: no .cls or .json label for key {key!r}; fix the shard")
            sample_id = f"{key}.{ext}"
            # the member's own name where it is the id: one string a sample, not two
            index = labels[key][0] if self.request.labelled else NO_LABEL
            yield found.name if found.name == sample_id else sample_id, index, found


def _members(shard: str) -> Iterator[tuple[tarfile.TarInfo, Any]]:
    """The regular members of a tar shard with a reader of each one's bytes; a truncated or damaged
    shard is one error naming the shard and the last member read."""
    size, last = os.path.getsize(shard), "(start)"
    with open(shard, "rb") as f:
        try:
            with tarfile.open(fileobj=f, mode="r:") as tar:
                while (info := tar.next()) is not None:
                    # tarfile keeps every header it has read (TarFile.members, a few hundred bytes
                    # each): a 50,000-image dataset's worth at once, left in pieces across the heap
                    # between the members the listing keeps. A listing reads each header once.
                    tar.members.clear()  # type: ignore[attr-defined]  # (not in typeshed's stub)
                    last = info.name
                    if not info.isreg():
                        continue
                    if info.offset_data + info.size > size:
                        raise DataError(
                            f"{shard}:{info.name}: truncated (member of {info.size} bytes runs past "
                            "the end of the shard); re-copy it"
                        )

                    def read(n: int, at: int = info.offset_data) -> bytes:
                        f.seek(at)
                        return f.read(n)

                    yield info, read
        except (tarfile.TarError, EOFError, OSError) as exc:
            reason = (str(exc).splitlines() or [type(exc).__name__])[0][:160]
            raise DataError(
                f"{shard}: damaged or truncated tar after member {last} ({reason}); re-copy it"
            ) from None
