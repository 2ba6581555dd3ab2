"""Label files and ground-truth-to-model label matching by TEXT.

Ground truth given by name (a folder, a csv's label column), or by index whose class list does not
line up with the model's labels (see :mod:`evalharness.data.label_alignment`), is matched to model
outputs by label text.
ImageNet has two distinct classes both called "crane"; the k-th one in the dataset's class list is
the k-th one in the model's label list, which is what ``occurrence`` carries.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

from evalharness.core.checksum import optional_sha256, sha256_lines
from evalharness.core.errors import ConfigError, DataError, ModelMismatchError
from evalharness.core.fileguard import refuse_special_file
from evalharness.core.paths import BUNDLED_DIR

_FIX_LABELS = "pass the label file that matches the model (model.labels=...)"
# model.labels=auto (the ``file`` model preset) left unresolved: the model file carries no labels
LABELS_AUTO = "auto"
NO_LABELS = (
    "model.labels: the model file carries no label file in its metadata; give model.labels=<text file, "
    "one class name per line, line i = output i> (an ImageNet classifier: the lists shipped with "
    "evalharness, {bundled}imagenet_classes.txt for 1000 outputs, {bundled}imagenet_labels_1001.txt "
    "for 1001 with background first)"
)
WNID = re.compile(r"n\d{8}")  # WordNet id of an ImageNet synset, e.g. n01440764


def read_label_file(path: str | Path, what: str = "label file") -> list[str]:
    """One label per line, line i = class i; trailing whitespace and trailing blank lines dropped.

    Inner blank lines are kept so that line numbers stay class indices.
    """
    if str(path) == LABELS_AUTO:
        raise ConfigError(NO_LABELS.format(bundled=os.path.join(BUNDLED_DIR, "")))
    refuse_special_file(path, what)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise DataError(f"{what} not found: {path}; check the path") from None
    except IsADirectoryError:
        raise DataError(f"{what} {path} is a directory; pass the file itself") from None
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{what} {path} is not UTF-8 text ({exc.reason} at byte {exc.start}); "
            "pass a text file with one label per line"
        ) from None
    lines = [line.rstrip() for line in text.split("\n")]  # not splitlines: \x0c etc. stay text
    while lines and not lines[-1]:
        lines.pop()
    if not lines:
        raise DataError(f"{what} {path} is empty; it needs one label per line")
    return lines


def read_synset_words(path: str | Path) -> list[tuple[str, str]]:
    """(WordNet id, label text) per line of a synset_words file ("n01440764 tench, Tinca tinca")."""
    pairs = []
    for i, line in enumerate(read_label_file(path, "synset_words file"), start=1):
        wnid, _, text = line.partition(" ")
        if not WNID.fullmatch(wnid) or not text.strip():
            raise DataError(
                f"{path}:{i}: expected 'n01440764 tench, Tinca tinca', got {line!r}; "
                "pass a synset_words file (WordNet id, space, label text)"
            )
        pairs.append((wnid, text.strip()))
    return pairs


class LabelSet(TypedDict):
    """``provenance.labels``: the label file and the identity of the names it holds."""

    path: str | None
    sha256: str | None
    names_sha256: str | None
    count: int | None


def label_set(path: str | None) -> LabelSet:
    """A run's label set for its provenance: the file (path, sha256) and the identity of the set,
    ``names_sha256`` over the class names in order, which is what ``report diff`` compares: two
    files holding the same names (Ultralytics' metadata with another date) are one label set."""
    names = None
    if path and os.path.isfile(path):
        with contextlib.suppress(DataError):  # not a text list (a detector's unread labels): file hash only
            names = read_label_file(path)
    return {
        "path": path,
        "sha256": optional_sha256(path),
        "names_sha256": None if names is None else sha256_lines(names),
        "count": None if names is None else len(names),
    }


class LabelMatcher:
    """Maps (ground-truth label text, occurrence) to the model's output index."""

    def __init__(self, model_labels: Sequence[str], labels_path: str | Path, not_by_index: str = "") -> None:
        """``not_by_index``: why an index ground truth could not be scored by index (said in errors)."""
        self.model_labels = list(model_labels)
        self.labels_path = str(labels_path)
        self.not_by_index = not_by_index
        self._positions: dict[str, list[int]] = {}
        for i, text in enumerate(self.model_labels):
            self._positions.setdefault(text, []).append(i)

    @classmethod
    def from_file(cls, labels_path: str | Path) -> LabelMatcher:
        return cls(read_label_file(labels_path), labels_path)

    def index(self, label: str, occurrence: int | None = None) -> int:
        """The output index of ``label``; ``occurrence`` None (a text with no class list to rank it)
        must name one line: a text the label file holds twice is refused, never the first taken."""
        positions = self._positions.get(label)
        if positions is None:
            close = difflib.get_close_matches(label, list(self._positions), n=1)
            hint = f" (closest: {close[0]!r})" if close else ""
            raise ModelMismatchError(
                f"ground-truth label {label!r} is not in labels file {self.labels_path}{hint}"
                + (
                    f" and the ground truth's classes do not line up with it by index ({self.not_by_index})"
                    if self.not_by_index
                    else ""
                )
                + f"; {_FIX_LABELS} or fix the dataset's class names"
            )
        if occurrence is None:
            if len(positions) > 1:
                lines = " and ".join(str(i + 1) for i in positions)
                raise ModelMismatchError(
                    f"ground-truth label {label!r} is on lines {lines} of labels file {self.labels_path}: "
                    "the text alone cannot tell them apart; "
                    + (
                        f"the ground truth's class indices do not line up with it ({self.not_by_index}): "
                        "give the class list they index (dataset.class_names or dataset.synset_words)"
                        if self.not_by_index
                        else "give the ground truth by class index (a csv class_index column, or a wnid "
                        "column with dataset.synset_words)"
                    )
                )
            return positions[0]
        if not 0 <= occurrence < len(positions):
            raise ModelMismatchError(
                f"ground-truth label {label!r} (occurrence {occurrence}) appears only {len(positions)} "
                f"time(s) in labels file {self.labels_path}; {_FIX_LABELS}"
            )
        return positions[occurrence]

    def check_output_size(self, num_outputs: int) -> None:
        if num_outputs != len(self.model_labels):
            raise ModelMismatchError(
                f"model output has {num_outputs} classes but labels file {self.labels_path} has "
                f"{len(self.model_labels)} lines; {_FIX_LABELS}"
            )
