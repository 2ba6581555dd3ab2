"""Which split of a dataset a run reads: the one place every container reader takes its shards from.

A dataset as it is downloaded holds its splits side by side (a Hugging Face snapshot's ``data/``
holds ``train-*``, ``validation-*`` and ``test-*`` shards; a TFDS folder ``imagenet2012-train.tfrecord-*``
beside ``imagenet2012-validation.tfrecord-*``). Reading every shard scores training images as
validation ones: a wrong number with nothing said. So a split is part of a dataset's identity:
``dataset.split`` (``auto``: the validation split, however the format names it) picks the shards by
the format's own convention, and the split read, the splits found and the shard list are recorded.

The split a shard says it is, first found:

- a Hugging Face snapshot's README ``configs: data_files`` (one config, or its ``default``);
- Hugging Face parquet names ``{split}-XXXXX-of-XXXXX.parquet``;
- TFDS names ``{name}-{split}.tfrecord-XXXXX-of-XXXXX`` (the splits of ``dataset_info.json`` first);
- otherwise a split word among the name's parts (webdataset's ``imagenet1k-validation-0000.tar``,
  ``val-0000.tar``);
- shards in ``train/``, ``val/``, ... subfolders of the root: the folder's name.

A root holding one split reads it; several: the validation split (said as an assumption); a root
where the split cannot be told is one error naming the splits found and ``dataset.split``.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from evalharness.core.documents import Assumed
from evalharness.core.errors import DataError
from evalharness.core.untrusted import parse_yaml, read_json, read_text
from evalharness.data.shard_names import container_of, pattern_files

AUTO = "auto"
VALIDATION = ("validation", "val", "valid", "val2017")  # what auto reads, as each format names it
_WORD = re.compile(r"(train|training|validation|val|valid|test|testing|dev|eval|minival)(\d{4})?", re.I)
_HF = re.compile(r"(?P<split>[\w.]+?)-\d{5}-of-\d{5}(?:-[0-9a-f]+)?\.parquet", re.I)
_TFDS = re.compile(r".+-(?P<split>[^-.]+)\.tfrecords?(?:-\d+-of-\d+)?", re.I)
_PARTS = re.compile(r"[-_.]")
README_LIMIT = 1 << 20  # a dataset card's front matter is small; a larger README is not read whole


class DatasetSplitRecord(TypedDict):
    """``provenance.dataset.dataset_split``: the split read, the splits the root holds, why this one,
    and the shards read (relative to the root): a change of any is another dataset."""

    name: str | None  # None: the shard names tell no split
    found: list[str]
    chosen: str
    shards: list[str]


@dataclass(frozen=True)
class SplitChoice:
    """The shards a run reads and the split they are."""

    root: str
    split: str | None
    found: tuple[str | None, ...]  # every split the root holds (None: shards that name none)
    files: tuple[str, ...]  # absolute, in the order the root lists them
    how: str  # why this split: dataset.split=..., the only split, the validation split of several

    def record(self) -> DatasetSplitRecord:
        base = self.root if os.path.isdir(self.root) else None
        shards = [os.path.relpath(f, base) if base else os.path.basename(f) for f in self.files]
        return {"name": self.split, "found": described(self.found), "chosen": self.how, "shards": shards}

    def assumption(self) -> Assumed | None:
        """What to print and record when auto read one split of several (None otherwise)."""
        return split_assumption(self.root, self.split, self.found, self.how)


def split_assumption(where: str, split: str | None, found: Sequence[str | None], how: str) -> Assumed | None:
    """The assumption said when ``dataset.split=auto`` picked ``split`` among several (else None)."""
    if len(found) < 2 or how.startswith("dataset.split="):
        return None
    others = sorted(s for s in found if s is not None and s != split)
    return {
        "what": "dataset.split",
        "assumed": str(split),
        "why": f"{where} holds the splits {', '.join(described(found))}; auto reads the validation split",
        "fix": f"dataset.split={'|'.join(others)}",
    }


def described(found: Sequence[str | None]) -> list[str]:
    """The splits found, named (shards that name none said as such), sorted."""
    named = sorted(s for s in found if s is not None)
    return named + (["(shards naming no split)"] if None in found else [])


def choose(found: Sequence[str | None], requested: str, where: str) -> tuple[str | None, str]:
    """(the split to read, why) among ``found``, for ``dataset.split=requested``; one error naming
    the splits found and the key to set where the split cannot be told."""
    named = sorted(s for s in found if s is not None)
    listing = ", ".join(described(found))
    choices = "|".join(named) or "auto"
    if requested != AUTO:
        if requested in found:
            return requested, f"dataset.split={requested}"
        if not named:
            raise DataError(
                f"dataset.split={requested}, but the shards of {where} name no split; set dataset.split=auto"
            )
        raise DataError(
            f"dataset.split={requested}: {where} holds no such split (splits found: {listing}); "
            f"set dataset.split={choices}"
        )
    if len(found) == 1:
        return found[0], "the only split" if found[0] is not None else "no split in the shard names"
    defaults = [s for s in named if s.lower() in VALIDATION]
    if len(defaults) == 1:
        return defaults[0], f"the validation split of {len(found)}"
    which = "none of them is" if not defaults else "more than one of them is"
    raise DataError(
        f"{where} holds several splits ({listing}) and {which} the validation split; "
        f"set dataset.split={choices}"
    )


def is_split_name(name: str) -> bool:
    """Whether ``name`` is a split's name (``train``, ``val``, ``validation``, ``val2017``, ...)."""
    return _WORD.fullmatch(name) is not None


def split_in_name(name: str, kind: str, known: Sequence[str] = ()) -> str | None:
    """The split a shard file's name says it is, by the container's convention (None: none)."""
    if kind == "tfrecord":
        for split in sorted(known, key=len, reverse=True):
            if f"-{split}.tfrecord" in name:
                return split
        tfds = _TFDS.fullmatch(name)
        if tfds:
            return tfds.group("split")
    if kind == "parquet":
        hf = _HF.fullmatch(name)
        if hf:
            return hf.group("split")
    words = [part for part in _PARTS.split(name) if _WORD.fullmatch(part)]
    return words[-1] if words else None


def _tfds_splits(folder: str) -> list[str]:
    """The split names a TFDS ``dataset_info.json`` beside the shards lists ([] without one)."""
    path = os.path.join(folder, "dataset_info.json")
    if not os.path.isfile(path):
        return []
    info = read_json(path, "TFDS dataset_info.json")
    splits = info.get("splits") if isinstance(info, dict) else None
    if not isinstance(splits, list):
        return []
    return [s["name"] for s in splits if isinstance(s, dict) and isinstance(s.get("name"), str)]


def by_name(files: Sequence[str], kind: str) -> dict[str | None, list[str]]:
    """``files`` grouped by the split each one's name says."""
    groups: dict[str | None, list[str]] = {}
    known: dict[str, list[str]] = {}
    for path in files:
        folder = os.path.dirname(os.path.abspath(path))
        if kind == "tfrecord" and folder not in known:
            known[folder] = _tfds_splits(folder)
        split = split_in_name(os.path.basename(path), kind, known.get(folder, ()))
        groups.setdefault(split, []).append(path)
    return groups


def _readme_groups(folder: str, kind: str) -> dict[str | None, list[str]] | None:
    """The splits a Hugging Face dataset card (README.md front matter ``configs: data_files``) names,
    for its one config (or the one marked default); None: no card, or it says nothing usable."""
    path = os.path.join(folder, "README.md")
    if not os.path.isfile(path) or os.path.getsize(path) > README_LIMIT:
        return None
    text = read_text(path, "dataset card README.md")
    end = text.find("\n---", 3)
    if not text.startswith("---") or end < 0:
        return None
    front = parse_yaml(text[3:end], f"{path} (front matter)", (dict, type(None)))
    configs = [c for c in (front or {}).get("configs") or [] if isinstance(c, dict)]
    if len(configs) > 1:
        configs = [c for c in configs if c.get("default") is True or c.get("config_name") == "default"]
    if len(configs) != 1:
        return None
    groups: dict[str | None, list[str]] = {}
    for split, patterns in _data_files(configs[0].get("data_files")).items():
        files = [f for p in patterns for f in glob.glob(os.path.join(folder, p), recursive=True)]
        inside = [f for f in files if _within(f, folder) and container_of(os.path.basename(f)) == kind]
        if inside:
            groups[split] = sorted(set(inside))
    return groups or None


def _data_files(value: Any) -> dict[str, list[str]]:
    """A card's ``data_files``: a list of {split, path}, a {split: path} map, or one path (train)."""
    if isinstance(value, str):
        value = {"train": value}
    if isinstance(value, dict):
        value = [{"split": k, "path": v} for k, v in value.items()]
    out: dict[str, list[str]] = {}
    for entry in value if isinstance(value, list) else []:
        split = entry.get("split", "train") if isinstance(entry, dict) else None
        paths = entry.get("path") if isinstance(entry, dict) else None
        paths = [paths] if isinstance(paths, str) else paths
        if isinstance(split, str) and isinstance(paths, list):
            out.setdefault(split, []).extend(p for p in paths if isinstance(p, str))
    return out


def _within(path: str, folder: str) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return real.startswith(base + os.sep)


def _holds(name: str, kind: str | None) -> bool:
    """Whether ``name`` is a shard of container ``kind`` (None: of any container)."""
    found = container_of(name)
    return found is not None and kind in (None, found)


def folder_groups(folder: str, kind: str | None) -> dict[str | None, list[str]]:
    """The shards of container ``kind`` (None: any) in ``folder`` by split: a dataset card's
    data_files, else the folder's own shards by name, else a snapshot's ``data/``, else split
    subfolders (``train/``, ``val/``, ...) each one split; {} where none is found."""
    if kind is not None:
        card = _readme_groups(folder, kind)
        if card:
            return card
    names = sorted(n for n in os.listdir(folder) if not n.startswith("."))
    own = [os.path.join(folder, n) for n in names if _holds(n, kind)]
    if own:
        return by_name(own, kind or "") if kind else {None: own}
    data = os.path.join(folder, "data")
    if os.path.isdir(data):
        return folder_groups(data, kind)
    groups: dict[str | None, list[str]] = {}
    for name in names:
        sub = os.path.join(folder, name)
        if _WORD.fullmatch(name) and os.path.isdir(sub):
            inside = sorted(n for n in os.listdir(sub) if not n.startswith("."))
            files = [os.path.join(sub, n) for n in inside if _holds(n, kind)]
            if files:
                groups[name] = files
    return groups


def select_shards(root: str, kind: str, requested: str = AUTO) -> SplitChoice:
    """The shard files of ``root`` a run of container ``kind`` reads (a folder, a snapshot root, a
    brace pattern, a glob or one file), and the split they are: every reader takes its shards here."""
    groups = folder_groups(root, kind) if os.path.isdir(root) else by_name(pattern_files(root), kind)
    if not groups:
        raise DataError(f"no {kind} shards found at {root}; set dataset.root=<shard file, folder or pattern>")
    split, how = choose(list(groups), requested, root)
    files = groups[split]
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        raise DataError(
            f"{kind} shard {missing[0]} not found ({len(missing)} of {len(files)} missing); "
            "check dataset.root"
        )
    return SplitChoice(root, split, tuple(groups), tuple(os.path.abspath(f) for f in files), how)
