"""The readers of classification ground truth, one per format users really have: ILSVRC val.txt,
the devkit's meta.mat, an image folder of class folders, label lines, csv. Each returns label text
(see :mod:`evalharness.data.ground_truth`) and names the line or file of any problem."""

from __future__ import annotations

import csv
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from evalharness.core.errors import DataError
from evalharness.data.ground_truth import (
    FORMATS,
    ILSVRC2012_CLASSES,
    GroundTruthRequest,
    Label,
    LabeledSample,
    _add,
    _attach,
    _by_index,
    _by_wnid,
    _class_list,
    _found,
    _is_int,
    _lines,
    _require,
    _root,
    _sample,
    _with_occurrence,
    _wnid_labels,
    bare_index,
)
from evalharness.data.label_alignment import BACKGROUND_LINES
from evalharness.data.labels import WNID, read_label_file
from evalharness.data.listing import list_entries, list_images, not_read, refuse, suffix
from evalharness.data.samples import SampleList


@FORMATS.register("val_txt")
def _read_val_txt(req: GroundTruthRequest) -> Sequence[LabeledSample]:
    """ILSVRC2012 val.txt: "ILSVRC2012_val_00000001.JPEG 65", index in sorted-synset order."""
    gt = _require(req.ground_truth, "ground_truth", "ground-truth format 'val_txt'")
    source, classes = _class_list(req, "ground-truth format 'val_txt'")
    if len(classes) != ILSVRC2012_CLASSES:
        # A 1001-line model label file ("background" first) would silently shift every label.
        raise DataError(
            f"class list {source} has {len(classes)} lines but val.txt indexes the "
            f"{ILSVRC2012_CLASSES} ILSVRC2012 classes; pass the 1000 class names in "
            "sorted-synset order (line i = class index i), not the model's label file"
        )
    table: dict[str, Label] = {}
    for _, where, tokens in _lines(gt):
        if len(tokens) != 2 or not _is_int(tokens[1]):
            raise DataError(
                f"{where}: expected '<image file> <class index>', got {' '.join(tokens)!r}; "
                "pass an ILSVRC2012 val.txt or choose another dataset.format"
            )
        _add(table, tokens[0], _by_index(classes, source, tokens[1], where), where)
    return _attach(req, table)


@FORMATS.register("devkit")
def _read_devkit(req: GroundTruthRequest) -> Sequence[LabeledSample]:
    """Devkit ground truth: line i = ILSVRC2012_ID of ILSVRC2012_val_%08d (ids mapped via meta.mat)."""
    gt = _require(req.ground_truth, "ground_truth", "ground-truth format 'devkit'")
    by_id = _devkit_classes(req, _require(req.devkit_meta, "devkit_meta", "ground-truth format 'devkit'"))
    table: dict[str, Label] = {}
    for i, where, tokens in _lines(gt, skip_blank=False):
        if len(tokens) != 1 or not _is_int(tokens[0]) or int(tokens[0]) not in by_id:
            raise DataError(
                f"{where}: expected one ILSVRC2012_ID (1..1000) of {req.devkit_meta}, got "
                f"{' '.join(tokens)!r}; pass the devkit's ILSVRC2012_validation_ground_truth.txt"
            )
        table[f"ILSVRC2012_val_{i:08d}"] = by_id[int(tokens[0])]
    return _attach(req, table, name_of=lambda key: Path(key).stem)


def _devkit_classes(req: GroundTruthRequest, meta: Path) -> dict[int, Label]:
    """ILSVRC2012_ID -> label of the leaf synsets (ids 1..1000) of the devkit's meta.mat.

    Occurrence counts in sorted-WNID order (the class-index order of models' label files), not in
    ILSVRC2012_ID order, so each "crane" matches the model's crane of the same synset.
    """
    try:
        from scipy.io import loadmat
    except ImportError:
        raise DataError(f"reading devkit meta {meta} needs scipy; pip install evalharness[devkit]") from None
    try:
        synsets = np.atleast_1d(loadmat(str(meta), squeeze_me=True)["synsets"])
        rows = [
            (int(i), str(w), str(t))
            for i, w, t in zip(synsets["ILSVRC2012_ID"], synsets["WNID"], synsets["words"], strict=True)
        ]
    except Exception as exc:  # any failure of the foreign parser means "not a devkit meta.mat"
        reason = (str(exc).splitlines() or [""])[0]
        raise DataError(
            f"{meta} is not an ILSVRC2012 devkit meta.mat ({type(exc).__name__}: {reason}); "
            "pass the devkit's data/meta.mat"
        ) from None
    leaves = sorted((wnid, ident, text) for ident, wnid, text in rows if 1 <= ident <= ILSVRC2012_CLASSES)
    texts = [text for _, _, text in leaves]
    req.classes.fill(meta, texts)
    labels = _with_occurrence(texts)
    return {ident: label for (_, ident, _), label in zip(leaves, labels, strict=True)}


@FORMATS.register("imagefolder")
def _read_imagefolder(req: GroundTruthRequest) -> Sequence[LabeledSample]:
    """root/<class dir>/<image>; dirs named by WordNet id (mapped via synset_words) or by label text."""
    dirs = _class_dirs(req)
    if dirs and all(WNID.fullmatch(d.name) for d in dirs):
        source, wnids = _wnid_labels(req, f"imagefolder {req.root} (class dirs are WordNet ids)")
        labels = {d.name: _by_wnid(wnids, source, d.name, f"class dir {d}") for d in dirs}
    else:
        labels = {d.name: (d.name, None, None) for d in dirs}
    root = _root(req)
    samples = SampleList.of(  # streamed into columns: no list of every sample
        (_sample(root, f"{d.name}/{name}", labels[d.name]) for d in dirs
         for name in list_images(d, req.extensions, req.unscored)),
        root,
    )  # fmt: skip
    return _found(
        req, samples, " class dirs (imagefolder wants root/<class>/<image>; else set dataset.ground_truth)"
    )


def _class_dirs(req: GroundTruthRequest) -> list[Path]:
    """The class dirs of an imagefolder root, sorted.

    Errors: an entry that does not resolve (symlink loop, broken symlink), a dir linking back to the
    root or above it (a loop, not a class), and images lying in the root beside class dirs (they
    would have no label).
    """
    root = req.root.resolve()
    dirs, loose = [], []
    for name, mode in list_entries(req.root, req.unscored):
        p = req.root / name
        if isinstance(mode, str):
            raise refuse(p, mode)
        if not stat.S_ISDIR(mode) and suffix(name) not in req.extensions:
            req.unscored[not_read(name)] += 1
        if stat.S_ISDIR(mode):
            target = p.resolve()
            if target == root or target in root.parents:
                raise refuse(p, f"links back to {target} (a symlink loop), not to a class dir")
            dirs.append(p)
        elif suffix(name) in req.extensions:
            loose.append(name)
    if dirs and loose:
        raise DataError(
            f"{len(loose)} image(s) lie directly in imagefolder root {req.root} with no class dir "
            f"(first: {loose[0]}); move them into root/<class>/ or remove them"
        )
    return dirs


@FORMATS.register("label_lines")
def _read_label_lines(req: GroundTruthRequest) -> Sequence[LabeledSample]:
    """TFLite eval tool: line i = label text of the i-th image of root in sorted file-name order."""
    gt = _require(req.ground_truth, "ground_truth", "ground-truth format 'label_lines'")
    texts = read_label_file(gt, "ground-truth file")
    images = _found(req, list_images(req.root, req.extensions, req.unscored))
    if len(texts) != len(images):
        raise DataError(
            f"ground-truth file {gt} has {len(texts)} lines but {req.root} has {len(images)} "
            "images; label_lines needs one line per image in sorted file-name order"
        )
    root = _root(req)
    return SampleList.of(
        (_sample(root, name, (text, None, None)) for name, text in zip(images, texts, strict=True)), root
    )


@FORMATS.register("csv")
def _read_csv(req: GroundTruthRequest) -> Sequence[LabeledSample]:
    """Header with ``filename`` and one of class_name | label | class_index | wnid."""
    gt = _require(req.ground_truth, "ground_truth", "ground-truth format 'csv'")
    table: dict[str, Label] = {}
    try:
        with gt.open(encoding="utf-8-sig", newline="") as f:  # streamed: no list of every row
            rows = csv.reader(f)
            header = [h.strip() for h in next(rows, [])]
            if "filename" not in header or not {"class_name", "label", "class_index", "wnid"} & set(header):
                raise DataError(
                    f"{gt}:1: csv header {header} needs 'filename' and one of class_name, label, "
                    "class_index, wnid; fix the header"
                )
            label_of = _csv_labeler(req, gt, header)
            for line_no, values in enumerate(rows, start=2):
                where = f"{gt}:{line_no}"
                if not any(v.strip() for v in values):
                    continue
                if len(values) != len(header):
                    raise DataError(
                        f"{where}: {len(values)} fields but the header has {len(header)}; fix the row"
                    )
                row = {h: v.strip() for h, v in zip(header, values, strict=True)}
                _add(table, row["filename"], label_of(row, where), where)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"{gt} is not a readable UTF-8 csv ({exc}); fix or re-export the file") from None
    samples = _attach(req, table)
    # Unlike val.txt (all 50,000 val images for any subset), a csv names the images of its folder:
    # a row without its image is a lost image, not a bigger ground truth. Every image found its row
    # and a row names one file, so there is a row too many only where there are more rows than
    # images: the set of names (a few MB at ILSVRC size) is built only then, for the message.
    if len(table) > len(samples):
        listed = {s.key for s in samples}
        extra = [name for name in table if name not in listed]  # in file order
        raise DataError(
            f"{gt}:{_csv_line(gt, extra[0])}: {extra[0]} is not an image in {req.root} ({len(extra)} of "
            f"{len(table)} csv rows name no image there); restore the images or delete those rows"
        )
    return samples


def _csv_line(gt: Path, filename: str) -> int:
    """Line number of the row naming ``filename`` (looked up again only for an error message, so a
    large csv's line numbers are not kept in memory)."""
    with gt.open(encoding="utf-8-sig", newline="") as f:
        rows = csv.reader(f)
        column = [h.strip() for h in next(rows)].index("filename")
        return next(i for i, values in enumerate(rows, start=2) if values[column].strip() == filename)


def _csv_labeler(
    req: GroundTruthRequest, gt: Path, header: list[str]
) -> Callable[[dict[str, str], str], Label]:
    """Label of a csv row from the best column.

    class_index wins when a class list is given (it tells the two "crane"s apart); a text column
    next to it must then agree, which catches a class list shifted by a "background" line. With no
    class list, class_index is the ground truth and a text column beside it names those classes (the
    csv's own partial class list, checked against the model's labels by the task).
    """
    text_col = next((c for c in ("class_name", "label") if c in header), None)
    has_list = req.class_names is not None or req.synset_words is not None
    if "class_index" in header and not has_list and text_col is None and "wnid" not in header:
        return lambda row, where: bare_index(row["class_index"], where)
    if "class_index" in header and not has_list and text_col is not None:
        req.classes.fill(gt, [], complete=False)
        return lambda row, where: _named_index(req, row["class_index"], row[text_col], where)
    if "class_index" in header and has_list:
        source, classes = _class_list(req, f"csv ground truth {gt} with a class_index column")
        if text_col is None and classes and classes[0][0].strip().lower() in BACKGROUND_LINES:
            raise DataError(
                f"class list {source} starts with {classes[0][0]!r}: csv ground truth {gt} by class_index "
                "alone would count it as class 0 and shift every label of a 0-based csv by one; pass "
                "the class names without it, or add a label column (checked against the index)"
            )

        def by_index(row: dict[str, str], where: str) -> Label:
            label = _by_index(classes, source, row["class_index"], where)
            if text_col is not None and label[0] != row[text_col]:
                raise DataError(
                    f"{where}: class_index {row['class_index']} is {label[0]!r} in {source} "
                    f"but {text_col} is {row[text_col]!r}; pass the class list of this csv"
                )
            return label

        return by_index
    if text_col is not None:
        labels: dict[str, Label] = {}  # one label tuple per class, not one per row
        return lambda row, where: labels.setdefault(row[text_col], (row[text_col], None, None))
    source, wnids = _wnid_labels(req, f"csv ground truth {gt} with a wnid column")
    return lambda row, where: _by_wnid(wnids, source, row["wnid"], where)


def _named_index(req: GroundTruthRequest, index: str, text: str, where: str) -> Label:
    """A csv row's class_index with the name its text column gives; one name per index."""
    i = int(index) if bare_index(index, where) else 0  # bare_index refuses a bad index
    known = req.classes.names.setdefault(i, text)
    if known != text:
        raise DataError(
            f"{where}: class_index {i} is {text!r} here but {known!r} on an earlier row; give each "
            "class one name"
        )
    return text, None, i
