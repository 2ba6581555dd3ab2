"""Two runs compared on the images both scored, when one scores a split's held-out part of the other's
list (``quant=int8`` calibrated on a slice of the dataset, a repair's search part left out).

Comparing the float run's headline on N images with the int8 run's on the N - k held-out ones would
subtract numbers measured on different images; refusing the pair would refuse the most common
comparison there is. So both runs are read *on the shared images*: their records cut to the
intersection and their metrics recomputed from those records by the task's own scorer (the path of
``report rescore``), never a metric of our own. Everything downstream (the diff's rows, its paired
interval, the gates, the quantization table) then reads these views as it reads any run. The run
directories are not changed.

What makes the pair: :func:`evalharness.report.runs.held_out_part` (by provenance: the held-out
part's recorded ``split.whole`` is the other run's list), then here, by the records: every image the
held-out run scored was scored by the other one, else the pair is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalharness.core.documents import JSONMap
from evalharness.report.commands.rescore import recompute
from evalharness.report.content_pairs import renamed
from evalharness.report.runs import Comparability, ReportError, definition_of, malformed
from evalharness.rundir.document import metrics_for_schema
from evalharness.rundir.reader import Run


@dataclass(frozen=True)
class PairedOn:
    """What a comparison on the shared images left out, and why: ``paired_on`` of a diff document."""

    count: int  # images both runs scored: every figure of the comparison is on these
    left_out: int  # images only the other run scored
    why: str

    def as_dict(self) -> JSONMap:
        return {"count": self.count, "left_out": self.left_out, "why": self.why}


def shared_note(paired_on: Mapping[str, Any]) -> str:
    """The one line a report says of a comparison on the shared images (``paired_on``)."""
    return f"compared on the {paired_on['count']} images both runs scored ({paired_on['why']})"


def on_shared_images(a: Run, b: Run, comp: Comparability) -> tuple[Run, Run, PairedOn | None]:
    """(A, B, None) for runs on the same list; for a held-out part (``comp.subset``) both runs read
    on the images both scored, and what was left out. Refused (exit 2) when the held-out run scored
    an image the other did not, or the task cannot recompute its metrics from records."""
    if comp.by_content is not None:  # the same images under other ids: B under A's ids
        key = definition_of(a).abilities.sample_key
        assert key is not None  # content pairs are made only for a task with a sample key
        return a, renamed(b, comp.by_content.b_to_a, key), None
    if comp.subset is None:
        return a, b, None
    held, other = (a, b) if comp.subset == a.label else (b, a)
    definition = definition_of(a)
    key = definition.abilities.sample_key
    if key is None or not definition.abilities.rescorable:
        raise ReportError(
            f"runs are not comparable: run {held.label} scores a held-out part of run {other.label}'s "
            f"images and a {a.task} run cannot be rescored on the images both scored"
        )
    with malformed(a, b):
        mine = [r[key] for r in held.predictions]
        theirs = {r[key] for r in other.predictions}
    outside = [i for i in mine if i not in theirs]
    if outside:
        raise ReportError(
            f"runs are not comparable: run {held.label} scored {len(outside)} image(s) run {other.label} "
            f"did not (first: {outside[0]!r}), so its images are no part of the other's"
        )
    shared = set(mine)
    if not shared:
        raise ReportError(f"runs are not comparable: run {held.label} scored no image")
    paired = PairedOn(len(shared), len(theirs) - len(shared), _why(held, other, len(theirs) - len(shared)))
    return restricted(a, shared, key), restricted(b, shared, key), paired


def _why(held: Run, other: Run, left_out: int) -> str:
    """Why images are left out: the split's other part built the held-out run's variant (and the
    held-out run may have stopped before its end: then the rest is said apart)."""
    dataset = held.provenance.dataset
    whole = (dataset.split.whole.count if dataset.split and dataset.split.whole else None) or 0
    built = whole - ((dataset.shard.full_count if dataset.shard else None) or dataset.count or 0)
    calibration = held.provenance.model.quant.calibration
    calibrated = calibration is not None and calibration.source == "dataset"
    verb = "calibrated" if calibrated else "calibrated or searched"
    text = f"{built} images {verb} run {held.label}'s variant"
    if built == left_out:
        return f"{text} and are left out"
    return f"{left_out} images left out: {text}, the rest run {held.label} did not score"


def restricted(run: Run, ids: set[Any], key: str) -> Run:
    """``run`` as it reads on the images ``ids``: its records cut to them, its metrics recomputed
    from those records by the task's scorer (only what the scorer makes: no stored figure of every
    image survives into the view)."""
    view = run.with_metrics(run.metrics)
    view.__dict__["predictions"] = [r for r in run.predictions if r[key] in ids]  # the cached property
    return view.with_metrics(metrics_for_schema(recompute(view), run.document.schema_version))
