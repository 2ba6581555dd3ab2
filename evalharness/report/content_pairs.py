"""Two runs of the same images under other ids, paired by content: the same 50 ILSVRC images as
Hugging Face parquet (``image.path`` = ``X.JPEG``, labels by name) and as webdataset (``X.jpg`` and
an ``X.cls`` class index) are one dataset whose ids differ, not two datasets.

The evidence is per image and checked here, never a claim in a file: every prediction record carries
the hash of the input the model was fed (``input_float_sha256``: its real values, NHWC; see
``loop/input_identity.py``), made by one method in both runs (``core/input_hash.py``: runs hashed by
two methods cannot pair, and the refusal says so). Both runs' records sorted by (input hash, ground
truth) and zipped must hold the same input hash in every pair: the same inputs, one for one. Ground
truth is compared pair by pair through the class list the model's outputs index (``truth_fields`` of
the task's comparison, ``label_index`` for a classifier: where a name and a class index both land),
so names in one run and indices in the other agree when they are the same classes. Anything less
(an input of one run that the other does not have, another count, a record without its hash, another
label set) leaves the runs refused as before. ``report diff`` then reads run B under run A's ids
(:func:`renamed`), and its own input check says "inputs identical on N/N".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalharness.core.documents import JSONMap
from evalharness.core.errors import EvalHarnessError
from evalharness.core.input_hash import methods_differ
from evalharness.data.rebuilt_input import FLOAT
from evalharness.rundir.reader import Run
from evalharness.tasks.definition import TaskDefinition, comparer


@dataclass(frozen=True)
class ContentPairs:
    """Run B's ids -> run A's, for the same inputs (``comparability.by_content`` of a diff)."""

    b_to_a: dict[str, str]
    example: tuple[str, str]  # (A's id, B's id) of the first pair whose ids differ

    def note(self) -> str:
        a, b = self.example
        return (
            f"the same {len(self.b_to_a)} images, ids differ: {a} ↔ {b} (paired by content: every "
            "image's input hash, one for one; ground truth compared pair by pair through the class list)"
        )

    def as_dict(self) -> JSONMap:
        changed = sum(a != b for b, a in self.b_to_a.items())
        return {"paired": len(self.b_to_a), "ids_differ": changed, "example": list(self.example)}


def _truth(record: Mapping[str, Any], fields: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(repr(record.get(f)) for f in fields)


def content_pairs(definition: TaskDefinition, a: Run, b: Run) -> tuple[ContentPairs | None, str]:
    """(the pairs, "") where runs A and B scored the same inputs under other ids with the same ground
    truth; else (None, why not)."""
    key = definition.abilities.sample_key
    compared = comparer(definition)
    fields = compared.truth_fields if compared is not None else ()
    if key is None or not fields:
        return None, f"a {a.task} run records no per-image ground truth to pair by"
    if (a.provenance.labels.names_sha256 or a.provenance.labels.sha256) != (
        b.provenance.labels.names_sha256 or b.provenance.labels.sha256
    ):
        return None, "the label sets differ, so the class lists do not line up"
    try:
        ra, rb = a.predictions, b.predictions
    except EvalHarnessError as exc:  # the refusal stands; why the records cannot pair is said
        return None, f"the records could not be read ({exc})"
    if len(ra) != len(rb) or not ra:
        return None, f"{len(ra)} and {len(rb)} records"
    if not all(isinstance(r.get(FLOAT), str) and isinstance(r.get(key), str) for r in (*ra, *rb)):
        return None, "not every record holds its id and input hash"
    other_method = methods_differ((a.label, ra), (b.label, rb))
    if other_method:
        return None, other_method
    pairs = list(
        zip(
            sorted(ra, key=lambda r: (r[FLOAT], _truth(r, fields))),
            sorted(rb, key=lambda r: (r[FLOAT], _truth(r, fields))),
            strict=True,
        )
    )
    odd = next(((x, y) for x, y in pairs if x[FLOAT] != y[FLOAT]), None)
    if odd is not None:
        return None, f"the inputs differ (run A's {odd[0].get(key)!r} has no equal in run B)"
    wrong = next(((x, y) for x, y in pairs if _truth(x, fields) != _truth(y, fields)), None)
    if wrong is not None:
        x, y = wrong
        said = ", ".join(f"{f} {x.get(f)!r} vs {y.get(f)!r}" for f in fields)
        return None, f"the same input has another ground truth: {x.get(key)!r} ↔ {y.get(key)!r} ({said})"
    differ = [(str(x[key]), str(y[key])) for x, y in pairs if x[key] != y[key]]
    if not differ:
        return None, "the ids are the same"
    return ContentPairs({str(y[key]): str(x[key]) for x, y in pairs}, min(differ)), ""


def renamed(run: Run, b_to_a: Mapping[str, str], key: str) -> Run:
    """``run`` read under the other run's ids (its records' ``key`` replaced; nothing else changes:
    its metrics are its own, over the same images)."""
    view = run.with_metrics(run.metrics)
    view.__dict__["predictions"] = [{**r, key: b_to_a[str(r[key])]} for r in run.predictions]
    return view
