"""Ground truth of classification datasets in the formats users really have.

Every reader returns label TEXT (plus ``occurrence`` for repeated texts such as ImageNet's two
"crane"s), and the class INDEX where the ground truth gives one (val.txt, devkit, a csv's
class_index) with the class list that names it (:class:`ClassList`). The task scores by index when
that list lines up with the model's labels (:mod:`evalharness.data.label_alignment`), else matches
the text with :class:`evalharness.data.labels.LabelMatcher`.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from evalharness.core.errors import ConfigError, DataError
from evalharness.core.fileguard import refuse_special_file
from evalharness.core.registry import Registry
from evalharness.core.untrusted import MAX_NUMBER_CHARS
from evalharness.data.labels import read_label_file, read_synset_words
from evalharness.data.listing import list_images
from evalharness.data.samples import Label as Label
from evalharness.data.samples import LabeledSample as LabeledSample
from evalharness.data.samples import Member as Member
from evalharness.data.samples import SampleColumns, SampleList, samples_of

# Every still-image format Pillow decodes (decode.py's rules apply to all; multi-frame files: frame 0).
DEFAULT_EXTENSIONS = (
    ".jpeg", ".jpg", ".jfif", ".png", ".bmp", ".dib", ".webp", ".tif", ".tiff", ".gif", ".ppm", ".pgm",
    ".pbm", ".pnm", ".tga",
)  # fmt: skip
ILSVRC2012_CLASSES = 1000


@dataclass
class ClassList:
    """The dataset's class list a reader used (filled in by the reader, like ``unscored``): class
    index -> name, the file it came from, and its length (None: only the classes a csv names)."""

    source: str = ""
    names: dict[int, str] = field(default_factory=dict)
    count: int | None = None

    def fill(self, source: Path | str, texts: list[str], complete: bool = True) -> None:
        self.source, self.names = str(source), dict(enumerate(texts))
        self.count = len(texts) if complete else None


@dataclass(frozen=True)
class GroundTruthRequest:
    """The options of :func:`load_ground_truth` as a reader gets them."""

    root: Path
    ground_truth: Path | None
    class_names: Path | None
    synset_words: Path | None
    devkit_meta: Path | None
    extensions: tuple[str, ...]  # lower case, with the dot
    unscored: Counter[str] = field(default_factory=Counter)  # files under root not taken, by reason
    classes: ClassList = field(default_factory=ClassList)  # the class list read, for the task


# The label "text" of a sample whose ground truth is a bare class index (a csv's class_index with no
# class list to name it): scored by ``index`` against the model's output index (plus the background
# offset the task detects or is given), never matched by text.
INDEX_LABEL = "\x00class_index"
_S = TypeVar("_S", bound=Sized)
Reader = Callable[[GroundTruthRequest], Sequence[LabeledSample]]
FORMATS: Registry[Reader] = Registry(
    "ground-truth format",  # the readers of evalharness.data.label_formats register themselves
    lazy=dict.fromkeys(
        ("val_txt", "devkit", "imagefolder", "label_lines", "csv"), "evalharness.data.label_formats"
    ),
)


def load_ground_truth(
    fmt: str,
    root: str,
    ground_truth: str | None,
    class_names: str | None,
    synset_words: str | None,
    devkit_meta: str | None,
    extensions: tuple[str, ...] = DEFAULT_EXTENSIONS,
    unscored: Counter[str] | None = None,
    classes: ClassList | None = None,
) -> SampleList:
    """The labeled images of ``root``, sorted by key, as columns (:mod:`evalharness.data.samples`);
    files not taken are counted into ``unscored`` by reason (hidden, extension not read,
    subdirectory); the class list read goes to ``classes``."""
    reader = FORMATS.get(fmt)
    root_path = Path(root)
    if not root_path.is_dir():
        problem = "is not a directory" if root_path.exists() else "not found"
        raise DataError(f"image root {root} {problem}; set dataset.root=<folder with the images>")
    if ground_truth is not None and not Path(ground_truth).is_file():
        problem = "is not a file" if Path(ground_truth).exists() else "not found"
        raise DataError(f"ground-truth file {ground_truth} {problem}; set dataset.ground_truth=<file>")
    exts = tuple(e.lower() if e.startswith(".") else f".{e.lower()}" for e in extensions)
    gt, names, synsets, meta = (
        None if p is None else Path(p) for p in (ground_truth, class_names, synset_words, devkit_meta)
    )
    counts = Counter() if unscored is None else unscored
    req = GroundTruthRequest(root_path, gt, names, synsets, meta, exts, counts, classes or ClassList())
    return samples_of(reader(req)).sorted_by_key()


def detect_format(ground_truth: str | None, extensions: tuple[str, ...] = DEFAULT_EXTENSIONS) -> str:
    """The format ``auto`` picks for this ground-truth file (public so a run can record it)."""
    if ground_truth is None:
        return "imagefolder"
    if ground_truth.lower().endswith(".csv"):
        return "csv"
    lines = [line.split() for line in read_label_file(ground_truth, "ground-truth file") if line.strip()]
    first, exts = lines[0], tuple(e.lower() for e in extensions)
    if len(first) == 2 and first[0].lower().endswith(exts) and _is_int(first[1]):
        return "val_txt"
    if all(len(tokens) == 1 and _is_int(tokens[0]) for tokens in lines):
        return "devkit"
    return "label_lines"


@FORMATS.register("auto")
def _read_auto(req: GroundTruthRequest) -> Sequence[LabeledSample]:
    gt = None if req.ground_truth is None else str(req.ground_truth)
    return FORMATS.get(detect_format(gt, req.extensions))(req)


# --- shared helpers ---------------------------------------------------------------------------


def _is_int(token: str) -> bool:
    """A whole number of a size a class index can have (int() of thousands of digits is refused)."""
    return len(token) <= MAX_NUMBER_CHARS and token.lstrip("+-").isdigit()


def _found(req: GroundTruthRequest, found: _S, layout: str = "") -> _S:
    if not found:
        raise DataError(
            f"no images ({', '.join(req.extensions)}) found in {req.root}{layout}; check dataset.root"
        )
    return found


def _sample(root: str, key: str, label: Label) -> LabeledSample:
    """``root``: the absolute root (one string for every sample); the label text is interned so that
    a ground truth read line by line holds each class name once."""
    return LabeledSample(root, key, sys.intern(label[0]), label[1], label[2])


def _root(req: GroundTruthRequest) -> str:
    return os.path.abspath(req.root)


def _attach(
    req: GroundTruthRequest, table: dict[str, Label], name_of: Callable[[str], str] = str
) -> SampleList:
    """Labels the images of root from ``table``, keyed by ``name_of(file name)``.

    The ground truth may cover more images than root holds (a 50-image subset of the 50,000-line
    val.txt); an image without an entry is an error, never silently dropped.
    """
    images = _found(req, list_images(req.root, req.extensions, req.unscored))
    missing = [key for key in images if name_of(key) not in table]
    if missing:
        raise DataError(
            f"{len(missing)} of {len(images)} images in {req.root} have no entry in ground-truth "
            f"file {req.ground_truth} (first: {missing[0]}); pass the ground truth of these "
            "images or remove them from the root"
        )
    columns = SampleColumns(_root(req))
    for key in images:
        text, occurrence, index = table[name_of(key)]
        columns.add(key, (sys.intern(text), occurrence, index))
    return SampleList(columns)


def _add(table: dict[str, Label], name: str, label: Label, where: str) -> None:
    if name in table:
        raise DataError(f"{where}: {name} is listed twice; keep one line per image")
    table[name] = label


def _lines(path: Path, skip_blank: bool = True) -> Iterator[tuple[int, str, list[str]]]:
    """(line number, ``file:line``, whitespace-split tokens) of each line."""
    for i, line in enumerate(read_label_file(path, "ground-truth file"), start=1):
        if line.strip() or not skip_blank:
            yield i, f"{path}:{i}", line.split()


def _require(value: Path | None, option: str, why: str) -> Path:
    if value is None:
        raise ConfigError(f"{why} needs dataset.{option}=<file>; set it")
    refuse_special_file(value, f"dataset.{option}")  # a FIFO would block the reader, not be "missing"
    if not value.is_file():
        raise DataError(f"dataset.{option} file not found: {value}; set dataset.{option}=<file>")
    return value


def _with_occurrence(texts: list[str]) -> list[Label]:
    """Labels each text with the number of earlier entries of the same text (the two "crane"s) and
    its position in the list (its class index)."""
    seen: Counter[str] = Counter()
    out: list[Label] = []
    for i, text in enumerate(texts):
        out.append((text, seen[text], i))
        seen[text] += 1
    return out


def _class_list(req: GroundTruthRequest, why: str) -> tuple[Path, list[Label]]:
    """Class index -> label from class_names (preferred) or synset_words, and that file."""
    if req.class_names is not None:
        path = _require(req.class_names, "class_names", why)
        texts = read_label_file(path, "class_names file")
    elif req.synset_words is not None:
        path = _require(req.synset_words, "synset_words", why)
        texts = [text for _, text in read_synset_words(path)]
    else:
        raise ConfigError(f"{why} needs dataset.class_names=<file> or dataset.synset_words=<file>; set one")
    req.classes.fill(path, texts)
    return path, _with_occurrence(texts)


def _wnid_labels(req: GroundTruthRequest, why: str) -> tuple[Path, dict[str, Label]]:
    path = _require(req.synset_words, "synset_words", why)
    pairs = read_synset_words(path)
    req.classes.fill(path, [t for _, t in pairs])
    return path, dict(zip([w for w, _ in pairs], _with_occurrence([t for _, t in pairs]), strict=True))


def _by_wnid(wnids: dict[str, Label], source: Path, wnid: str, where: str) -> Label:
    if wnid not in wnids:
        raise DataError(
            f"{where}: WordNet id {wnid!r} is not in {source}; pass the synset_words file "
            "that covers the dataset"
        )
    return wnids[wnid]


def bare_index(index: str, where: str) -> Label:
    """A class index with no class list: kept as the index itself (see :data:`INDEX_LABEL`)."""
    if not _is_int(index) or int(index) < 0:
        raise DataError(f"{where}: class index {index!r} is not a whole number >= 0; fix the row")
    return INDEX_LABEL, None, int(index)


def _by_index(classes: list[Label], source: Path, index: str, where: str) -> Label:
    if not _is_int(index) or not 0 <= int(index) < len(classes):
        raise DataError(
            f"{where}: class index {index!r} is not in 0..{len(classes) - 1} of class list "
            f"{source}; pass the class list this ground truth was written for"
        )
    return classes[int(index)]


# --- readers ----------------------------------------------------------------------------------
