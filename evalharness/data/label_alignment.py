"""Does a ground truth given by class index line up with the model's outputs by index?

A val.txt (or a devkit file, or a csv's class_index with a class list) says "class 65", not a name;
the class list beside it only names the classes. Models ship label files spelled their own way
(Google's EfficientNet-Lite says ``pay-phone`` where synset_words says ``pay-phone, pay-station``),
so matching by text refuses a model whose 1000 outputs are exactly the dataset's 1000 classes.
When the two lists agree by count (allowing a background first line) and by order, the ground truth
is scored by index and the names are only shown; what was decided is returned for the run to print
and record. Order is shown by the names that agree: at least half of the classes must agree at their
own position, and no class may agree only with another output (a shifted or re-sorted list).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# First lines of a model label file that name no class of the data ("background" and its spellings).
BACKGROUND_LINES = ("background", "__background__", "unused background", "???", "none")


def names_of(text: str) -> frozenset[str]:
    """The comma-separated names of a label ("pay-phone, pay-station"), case and ``_`` folded."""
    return frozenset(n for n in (part.strip().lower().replace("_", " ") for part in text.split(",")) if n)


@dataclass(frozen=True)
class Alignment:
    """The outcome of :func:`align`: ``offset`` when the lists line up, else ``problem`` says why."""

    offset: int | None
    problem: str = ""
    differing: tuple[tuple[int, str, str], ...] = ()  # (class index, dataset's text, model's text)
    count: int = 0  # classes checked

    def note(self, dataset_source: str, model_source: str) -> str:
        """One sentence for the summary: what lined up, and the spellings that differ."""
        n = len(self.differing)
        said = f"the {self.count} classes of {dataset_source} line up by index with the labels of "
        said += model_source
        said += " after its background line" if self.offset else ""
        if n:
            i, ours, theirs = self.differing[0]
            said += f"; {n} name(s) differ in spelling (first: class {i} {ours!r} vs {theirs!r})"
        return said + "; names are shown only"


def align(
    dataset_names: Mapping[int, str],
    count: int | None,
    model_labels: Sequence[str],
    given_offset: str = "auto",
) -> Alignment:
    """Whether class i of ``dataset_names`` is output i + offset of ``model_labels``.

    ``count``: the dataset's number of classes, None when only the classes its ground truth names
    are known (a csv's class_index beside a label column). ``given_offset`` is
    ``dataset.label_offset`` (auto | 0 | 1); auto takes 1 for a model list starting with a
    background line (one longer than the dataset's list, when its count is known).
    """
    n, m = len(dataset_names), len(model_labels)
    background = bool(model_labels) and model_labels[0].strip().lower() in BACKGROUND_LINES
    fits = count is None or m == count + 1
    offset = int(given_offset) if given_offset != "auto" else int(background and fits)
    if count is not None and count + offset != m:
        return Alignment(None, f"count: {count} classes against {m} model labels (offset {offset})")
    positions: dict[str, set[int]] = {}
    for j, text in enumerate(model_labels):
        for name in names_of(text):
            positions.setdefault(name, set()).add(j)
    differing, agreeing = [], 0
    for i, text in sorted(dataset_names.items()):
        if not 0 <= i + offset < m:
            return Alignment(None, f"count: class {i} + offset {offset} is outside the {m} model labels")
        at = set().union(*(positions.get(name, set()) for name in names_of(text)))
        if i + offset in at:
            agreeing += 1
            continue
        if at:
            j = min(at)
            return Alignment(
                None, f"order: class {i} {text!r} is output {j} {model_labels[j]!r}, not output {i + offset}"
            )
        differing.append((i, text, model_labels[i + offset]))
    if 2 * agreeing < n:
        return Alignment(None, f"names: only {agreeing} of {n} classes agree with the model's labels")
    return Alignment(offset, differing=tuple(differing), count=n if count is None else count)
