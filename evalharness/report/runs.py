"""Deciding whether two runs can be compared (runs are read by :mod:`evalharness.rundir.reader`)."""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from evalharness.core.boundary import debug
from evalharness.core.errors import EvalHarnessError
from evalharness.report.cache_states import cache_mismatch
from evalharness.report.content_pairs import ContentPairs, content_pairs
from evalharness.report.image_evidence import contradictions
from evalharness.rundir.metrics_file import Document
from evalharness.rundir.provenance_record import DatasetRecord, LabelsRecord
from evalharness.rundir.reader import Run, flatten
from evalharness.tasks.definition import TaskDefinition

# Input-tensor fields that belong to the model (float vs int8), not to the preprocessing recipe.
MODEL_INPUT_FIELDS = ("input.dtype", "input.scale", "input.zero_point")


def _model_input_fields(a: Run, b: Run) -> tuple[str, ...]:
    """The fields a preprocessing comparison leaves to the model: its input tensor's type, and how an
    integer input is filled (``integer_input``) when one of the two models takes floats, where that
    policy reads nothing (float vs int8 is the same image recipe)."""
    dtypes = {run.provenance.input_dtype for run in (a, b)}
    return MODEL_INPUT_FIELDS + (("integer_input",) if any(d.startswith("float") for d in dtypes) else ())


class ReportError(EvalHarnessError):
    """A report cannot be made (missing file, runs not comparable, bad rule): exit status 2."""


def field_differences(
    a: dict[str, Any] | None, b: dict[str, Any] | None, ignore: tuple[str, ...] = ()
) -> list[str]:
    """``key: A vs B`` for every differing leaf, in key order."""
    fa, fb = flatten(a or {}), flatten(b or {})
    keys = sorted((set(fa) | set(fb)) - set(ignore))
    return [f"{k} {fa.get(k)!r} vs {fb.get(k)!r}" for k in keys if fa.get(k) != fb.get(k)]


@dataclass
class Comparability:
    """Why two runs cannot be compared (``refused``) or should be compared with care (``warnings``).

    Refused (exit 2): a failed run, another task, other images (manifest hash, or records that
    contradict it: :mod:`evalharness.report.image_evidence`), another number of images, other
    ground truth: a per-image or metric diff would be meaningless. Not refused:
    ``subset``, a run on a split's held-out part of the very list the other scored (its recorded
    ``split.whole``): the two are compared on the images both scored
    (:mod:`evalharness.report.shared_images`). ``cache``: the
    compile caches were in different states (init figures do not compare; gates on them refuse).
    Warned: another preprocessing recipe or label set (a legitimate experiment, but easy to do by
    mistake); gating on such a pair needs the flag of each kind of difference (:data:`ALLOW_FLAGS`).
    Notes: facts worth knowing (another host, a partial run) that do not invalidate the comparison.
    """

    refused: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # the kind of each warning (a key of ALLOW_FLAGS)
    notes: list[str] = field(default_factory=list)
    acknowledged: bool = False
    cache: str | None = None  # compile caches in different states (report/cache_states.py)
    subset: str | None = None  # this run scores a held-out part of the other's list: pair on shared images
    by_content: ContentPairs | None = None  # the same images under other ids: B read under A's ids

    def as_dict(self) -> dict[str, Any]:
        return {
            "refused": self.refused,
            "warnings": self.warnings,
            "notes": self.notes,
            "acknowledged": self.acknowledged,
            "cache": self.cache,
            "subset": self.subset,
            **({"by_content": self.by_content.as_dict()} if self.by_content else {}),
        }

    def warn(self, kind: str, text: str) -> None:
        self.warnings.append(text)
        self.kinds.append(kind)

    def accept(self, allow: Collection[str]) -> None:
        """Acknowledged: every kind of difference found is one the user accepted."""
        self.acknowledged = bool(allow) and set(self.kinds) <= set(allow)


# One flag per kind of difference a gate may be told to accept (report diff --fail-if).
ALLOW_FLAGS = {"preprocessing": "--allow-different-preprocessing", "labels": "--allow-different-labels"}


def comparability(a: Run, b: Run, allow: Collection[str] = (), by_content: bool = False) -> Comparability:
    """``allow``: the kinds of difference (keys of :data:`ALLOW_FLAGS`) the user accepted.
    ``by_content``: runs whose ids differ are paired by their inputs' hashes where every image's is
    the other's (``report diff``: :mod:`evalharness.report.content_pairs`), not refused."""
    c = Comparability()
    for run in (a, b):
        if run.status == "failed":
            c.refused.append(f"run {run.label} failed: {run.document.error or 'no error recorded'}")
        elif run.status == "interrupted":  # before its metrics: loop.resume=true finishes it
            why = run.document.stop_reason
            c.refused.append(f"run {run.label} has no metrics: {why}; loop.resume=true finishes it")
    if c.refused:
        return c
    if a.task != b.task:
        c.refused.append(f"task differs: {a.task} vs {b.task}")
        return c
    da, db = a.provenance.dataset, b.provenance.dataset
    c.subset = held_out_part(a, b)
    if c.subset is None and da.manifest_sha256 != db.manifest_sha256:
        kinds = {da.manifest_kind, db.manifest_kind}
        hint = (
            "; one manifest hashes sizes, the other content: run the folder with dataset.manifest=content"
            if len(kinds) > 1 and (da.container or db.container)
            else ""
        )
        c.refused.append(
            f"dataset differs: manifest_sha256 {_short(da.manifest_sha256)} ({da.name}, "
            f"{da.count} images{_split_of(da)}) vs {_short(db.manifest_sha256)} ({db.name}, "
            f"{db.count} images{_split_of(db)}){hint}"
        )
    if c.subset is None and da.count != db.count:
        c.refused.append(f"sample count differs: {da.count} vs {db.count}")
    split = next((run for run in (a, b) if run.provenance.dataset.split), None)
    if split is not None and c.subset is None and da.manifest_sha256 != db.manifest_sha256:
        c.refused.append(  # why, and the fix
            f"run {split.label} scores only the held-out part of its dataset (its variant was calibrated or "
            "searched on the rest: provenance.dataset.split), and the other run did not score the list it "
            "was cut from (provenance.dataset.split.whole); to compare on every image, calibrate "
            "elsewhere: quant/calibration=bundled or quant.calibration.roots=[DIR]"
        )
    c.refused.extend(_truth_differs(da, db, by_content=c.subset is None))
    if c.subset is None and not c.refused:  # the documents claim the same images: the records must agree
        c.refused.extend(contradictions(a, b, _reads_dataset(a)))
    if by_content and c.refused and c.subset is None and split is None:
        pairs, why = content_pairs(definition_of(a), a, b)
        if pairs is None:
            c.refused.append(f"not the same images by content either: {why}")
        else:  # the same inputs one for one, the same ground truth pair by pair: B read under A's ids
            c.refused, c.by_content = [], pairs
            c.notes.append(pairs.note())
    containers = (da.container or "folder", db.container or "folder")
    if not c.refused and c.by_content is None and containers[0] != containers[1]:
        c.notes.append(
            f"the same images (sha256 of every image) and labels, read from a {containers[0]} and a "
            f"{containers[1]}"
        )
    pre = field_differences(a.provenance.preprocessing, b.provenance.preprocessing, _model_input_fields(a, b))
    if pre:
        c.warn("preprocessing", "preprocessing differs: " + "; ".join(pre))
    labels = _label_differences(a, b)
    if labels:
        c.warn("labels", "label set differs: " + "; ".join(labels))
    for run in (a, b):
        if run.status != "complete":
            c.notes.append(
                f"run {run.label} is {run.status} ({run.document.stop_reason}): "
                f"{run.document.metrics.num_scored} of {run.document.metrics.num_images} images scored; "
                "per-image statistics cover the images both runs scored"
            )
    c.accept(allow)
    c.cache = cache_mismatch(a, b)
    lanes = (a.provenance.loop_lanes, b.provenance.loop_lanes)
    if lanes[0] != lanes[1]:  # each invoke had other instances of the model beside it in one run
        c.notes.append(
            f"the loop ran {lanes[0]} (A) vs {lanes[1]} (B) instances of the model side by side "
            "(loop.shape): latency compares how the runs were loaded, not only delegates"
        )
    hosts = field_differences(a.provenance.host.raw, b.provenance.host.raw, ("hostname",))
    if hosts:
        c.notes.append("host differs (latency compares machines, not only delegates): " + "; ".join(hosts))
    return c


def _reads_dataset(run: Run) -> bool:
    """Whether the run's records are samples of a dataset list (a task whose definition is not here
    says so when the report reads it)."""
    try:
        abilities = definition_of(run).abilities
    except ReportError:
        return False
    return abilities.reads_dataset and abilities.writes_predictions


def _label_file_fields(a: Run, b: Run) -> tuple[str, ...]:
    """The label fields that name a file rather than the label set: the path always, and the file's
    sha256 when both runs record ``names_sha256`` (the class names in order are the set's identity);
    a run made before it was recorded compares by the file's sha256 alone, as then."""
    both = a.provenance.labels.names_sha256 is not None and b.provenance.labels.names_sha256 is not None
    return ("path", "sha256") if both else ("path", "names_sha256", "count")


def _label_differences(a: Run, b: Run) -> list[str]:
    """``key A vs B`` of the two label sets. A run with no label file (COCO's built-in class map
    coco80 or coco91 has a name, not a file hash) against one with a file: the file's fields cannot be
    compared, so what each side is is said instead of a hash of None."""
    la, lb = a.provenance.labels, b.provenance.labels
    if (la.sha256 is None) == (lb.sha256 is None):
        return field_differences(la.raw, lb.raw, _label_file_fields(a, b))
    files = field_differences(la.raw, lb.raw, ("path", "sha256", "names_sha256", "count"))
    return [*files, f"label file {_label_file(la)} vs {_label_file(lb)}"]


def _label_file(labels: LabelsRecord) -> str:
    if labels.sha256 is not None:
        return f"{labels.path} (sha256 {_short(labels.sha256)})"
    if labels.class_map is not None:
        return f"none (the built-in class map {labels.class_map}: a name, no file hash)"
    return "none"


def _truth_differs(da: DatasetRecord, db: DatasetRecord, by_content: bool = True) -> list[str]:
    """The ground truth compared by content (``truth_sha256``: every scored id's label) when both
    runs recorded it, so a val.txt and a container's label column of the same labels agree; else by
    the ground-truth file's hash, as runs made before containers were. ``by_content=False``: a held-out
    part against the whole list (their scored ids differ by design): the file's hash."""
    if by_content and da.truth_sha256 and db.truth_sha256:
        if da.truth_sha256 == db.truth_sha256:
            return []
        where = (da.ground_truth or da.root, db.ground_truth or db.root)
        return [
            f"ground truth differs: the labels of {where[0]} ({_short(da.truth_sha256)}) vs "
            f"{where[1]} ({_short(db.truth_sha256)})"
        ]
    if da.ground_truth_sha256 == db.ground_truth_sha256:
        return []
    return [
        f"ground truth differs: {da.ground_truth} ({_short(da.ground_truth_sha256)}) vs "
        f"{db.ground_truth} ({_short(db.ground_truth_sha256)})"
    ]


def _split_of(dataset: DatasetRecord) -> str:
    """``, split S`` where the run recorded the split of its dataset it read."""
    return f", split {dataset.dataset_split}" if dataset.dataset_split else ""


def _short(digest: str | None) -> str:
    return digest[:12] if digest else "none"


def whole_list(run: Run) -> tuple[object, object, str | None]:
    """The identity of the list a run's images were cut from: the list a split was cut from (its
    recorded ``split.whole``), else the run's own list; with the manifest's kind (sizes or content)."""
    dataset = run.provenance.dataset
    whole = (dataset.split.whole if dataset.split else None) or dataset  # a split made before: its own
    return whole.count, whole.manifest_sha256, dataset.manifest_kind


def held_out_part(a: Run, b: Run) -> str | None:
    """The label of the run that scores a split's held-out part of the very list the other run's
    images were cut from (same files by the manifest hash), so the two pair on the images both
    scored (:mod:`evalharness.report.shared_images`); None: the runs scored the same list, or lists
    no recorded identity relates."""
    if a.provenance.dataset.manifest_sha256 == b.provenance.dataset.manifest_sha256:
        return None
    split = [run for run in (a, b) if run.provenance.dataset.held_out]
    if len(split) != 1 or None in whole_list(a)[:2] or whole_list(a) != whole_list(b):
        return None
    return split[0].label


def definition_of(run: Run | Document | Mapping[str, Any]) -> TaskDefinition:
    """The task definition of a run, with the run's task settings; of a metrics.json document or a
    diff document, with the task's defaults.

    A run made with a plug-in task needs that plug-in importable here too; the error says how.
    """
    from evalharness.tasks.discovery import PLUGINS_ENV, task_definitions

    task = run.get("task") if isinstance(run, Mapping) else run.task
    settings = run.task_settings if isinstance(run, Run) else {}
    definitions = task_definitions()
    if task not in definitions:
        where = f"run {run.label}" if isinstance(run, Run) else "the runs"
        raise ReportError(
            f"{where}: task {task!r} has no definition here (known: {', '.join(definitions.names())}); "
            f"if it comes from a plug-in, make its module importable and name it in {PLUGINS_ENV}"
        )
    assert isinstance(task, str)  # a registered task name (checked just above)
    return definitions.get(task)(settings)


@contextlib.contextmanager
def malformed(*runs: Run) -> Iterator[None]:
    """Records or metrics that lack what their task's definition reads become one error line."""
    try:
        yield
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        if debug():
            raise
        names = " / ".join(f"run {run.label} ({run.dir})" for run in runs)
        raise ReportError(
            f"{names}: its files do not hold what a {runs[0].task} run records "
            f"({type(exc).__name__}: {' '.join(str(exc).split())[:80]}); was the run dir edited?"
        ) from None
