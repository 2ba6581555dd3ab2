"""How two runs of one task pair sample by sample: a :class:`Comparison` per task, named by its
definition (``TaskDefinition.comparison``) and bound to the definition's settings.

``report diff`` stores :meth:`Comparison.compare` under :attr:`Comparison.key`; a sweep's N×N matrix
and the quantization table read :meth:`Comparison.agreement`; ``--fail-if`` names the numbers
:meth:`Comparison.pairwise` gives; a quantization repair bounds the change
:meth:`Comparison.paired_records` measures. How any of it reads is the task's view's.
"""

from __future__ import annotations

from itertools import permutations
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict

from evalharness.core.documents import JSONMap
from evalharness.core.errors import ConfigError, EvalHarnessError
from evalharness.rundir.reader import Run

if TYPE_CHECKING:
    from collections.abc import Mapping

Records = list[dict[str, Any]]  # one pass's records, in sample order
PairQuantities = dict[str, float]  # the numbers of a pair ``--fail-if`` rules may name, by name


class _AgreementKeys(TypedDict):
    name: str  # e.g. "top-1 agreement"
    value: float | None  # the fraction of samples that agree
    p: float | None


class Agreement(_AgreementKeys, total=False):
    """:meth:`Comparison.agreement`: a cheap sample-by-sample agreement of two runs."""

    samples: int  # how many were paired
    # [low, high] of the paired interval of the headline metric's change b - a, or None (no pairs):
    # Any, since report/views/quant_table.py unpacks it after a truth test mypy does not narrow on
    interval: Any


class _PairedRecordsKeys(TypedDict):
    delta: float | None
    interval: list[float] | None
    method: str
    changed: int  # how many samples' answers differ


class PairedRecords(_PairedRecordsKeys, total=False):
    """:meth:`Comparison.paired_records`: the repair metric's change B − A with its paired interval."""

    paired: int
    mcnemar_p: float  # a proportion's (McNemar's test)
    p: float | None  # a bootstrap's two-sided p


class RepairMetric(TypedDict):
    """What ``quant.max_drop`` bounds (:meth:`Comparison.repair_metric`): the metric and why that one."""

    name: str
    source: str  # said once in the summary and recorded: the task's, the model's head, quant.metric


class Comparison:
    key: ClassVar[str]  # where the paired comparison sits in a ``report diff`` document
    # (value, p) column names of :meth:`agreement` in a quantization sweep's table and csv
    agreement_columns: ClassVar[tuple[str, str]] = ("agreement", "agreement_p")
    # the record fields holding a sample's ground truth as the model's outputs index it, so two runs
    # of the same images under other ids compare it pair by pair (report/content_pairs.py); ():
    # the task's records hold no ground truth, and such runs are not paired by content
    truth_fields: ClassVar[tuple[str, ...]] = ()
    # the metrics :meth:`paired_records` pairs, which ``quant.max_drop`` may bound (``quant.metric``)
    repair_metrics: ClassVar[tuple[str, ...]] = ()
    # the per-sample proportion (top-1) whose paired change stats/power.py's formula covers (McNemar):
    # what the images of a repair's held-out part or a gate's pairs can resolve; None: no formula,
    # the paired interval's width says it instead (an AP is not a mean of per-image values)
    proportion: ClassVar[str | None] = None

    def __init__(self, definition: Any) -> None:  # its TaskDefinition (which imports this module)
        self.definition = definition
        self.settings = definition.settings

    def compare(self, a: Run, b: Run, options: Mapping[str, Any]) -> JSONMap:
        """The paired comparison of two comparable runs (``options``: alpha, iou, min_score as
        ``report diff`` was given them; empty where only the agreement is wanted)."""
        raise NotImplementedError

    def agreement(self, a: Run, b: Run) -> Agreement | None:
        """Cheap sample-by-sample agreement of two runs on the same samples, for the sweep's N×N
        matrix and the quantization table: ``{"name": ..., "value": fraction, "p": p-value or None,
        "samples": how many were paired (optional), "interval": [low, high] of the headline metric's
        paired change b - a (optional; the quantization table's Δ interval)}``; None: the task has none."""
        return None

    def agreements(self, runs: list[Run]) -> dict[tuple[int, int], Agreement | None]:
        """:meth:`agreement` of every ordered pair ``(i, j)``, i != j, of ``runs`` (a sweep's N×N
        matrix). A task whose agreement reads each run into columns once overrides this, so the
        matrix costs one read per run and vector operations per pair."""
        pairs = permutations(enumerate(runs), 2)
        return {(i, j): self.agreement(a, b) for (i, a), (j, b) in pairs}

    def pairwise(self, comparison: JSONMap) -> PairQuantities:
        """The pair quantities ``--fail-if`` rules may name (numbers of the comparison)."""
        return {k: v for k, v in comparison.items() if isinstance(v, int | float) and not isinstance(v, bool)}

    def repair_metric(self, decoder: Mapping[str, Any] | None, asked: str | None) -> RepairMetric:
        """The metric ``quant.max_drop`` bounds for a model whose output decoder is ``decoder``
        (``model.decoder``; None: none): ``asked`` (``quant.metric``) when it is one
        :meth:`paired_records` pairs, else the task's ``repair_metric``. A task whose models differ in
        what they measure (COCO: boxes, masks, keypoints) chooses by the model."""
        default = self.definition.abilities.repair_metric
        if asked is None:
            return {"name": default, "source": "the task's repair metric"}
        return {"name": self.pairable(asked), "source": f"quant.metric={asked}"}

    def pairable(self, asked: str) -> str:
        """``asked`` if :meth:`paired_records` pairs it (else one error line naming those it pairs)."""
        if asked not in self.repair_metrics:
            raise ConfigError(
                f"quant.metric={asked}: task={self.definition.name} pairs only "
                f"{', '.join(self.repair_metrics)} sample by sample (what quant.max_drop can bound)"
            )
        return asked

    def paired_records(
        self, records_a: Records, records_b: Records, metric: str | None = None, scorer: Any = None
    ) -> PairedRecords:
        """``metric`` (one of :attr:`repair_metrics`; None: the task's ``repair_metric``) of B minus A
        with its paired interval, from two passes' records on the same samples, by the code
        ``report diff`` uses for two runs: ``{"delta", "interval", "method", "changed"}``
        (``changed``: how many samples' answers differ). ``scorer``: a fresh scorer of the live task
        (``RecordEvaluator.new_scorer``), with what scoring needs beyond the records (COCO's
        annotations)."""
        raise EvalHarnessError(f"task {self.definition.name} has no paired comparison of records")
