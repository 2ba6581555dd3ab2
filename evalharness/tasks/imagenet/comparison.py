"""Two classification runs paired image by image: top-1 flips, McNemar's test, Newcombe's paired
interval of Δtop-1 (and, for ``report diff``, per-class changes and changed confusions)."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import permutations
from typing import Any

from evalharness.core.documents import JSONMap
from evalharness.rundir.reader import Run
from evalharness.stats.agreement import AnswerColumns, Codes, answer_columns, top1_agreement
from evalharness.stats.classification_analysis import confusion_changes, per_class_changes
from evalharness.stats.intervals import CONFIDENCE
from evalharness.stats.paired import classification_diff
from evalharness.tasks.comparison import Agreement, Comparison, PairedRecords, PairQuantities, Records


class ClassificationComparison(Comparison):
    key = "classification"
    agreement_columns = ("top1_agreement", "mcnemar_p")
    truth_fields = ("label_index",)  # a name and a class index land on the same output index
    repair_metrics = ("top1",)
    proportion = "top1"

    def compare(self, a: Run, b: Run, options: Mapping[str, Any]) -> JSONMap:
        same_labels = a.provenance.labels.sha256 == b.provenance.labels.sha256
        c: JSONMap = {**classification_diff(a.predictions, b.predictions, same_labels)}
        if options.get("alpha") is not None:  # report diff (a sweep's agreement needs none of this)
            c["per_class"] = per_class_changes(a.predictions, b.predictions, options["alpha"])
            c["confusion_changes"] = confusion_changes(a.predictions, b.predictions)
        return c

    def paired_records(
        self, records_a: Records, records_b: Records, metric: str | None = None, scorer: Any = None
    ) -> PairedRecords:
        c = classification_diff(records_a, records_b, True)  # one label file: the same model's variants
        return {
            "delta": c["delta_top1"],
            "interval": c["delta_top1_interval"],
            "method": f"Newcombe paired {CONFIDENCE:.0%} (as report diff)",
            "changed": len(c["top1_changes"]),
            "paired": c["paired_images"],
            "mcnemar_p": c["mcnemar_p"],
        }

    def agreement(self, a: Run, b: Run) -> Agreement:
        codes: Codes = {}
        columns_a, columns_b = answer_columns(a.predictions, codes), answer_columns(b.predictions, codes)
        return self._agreement(a, b, columns_a, columns_b)

    def agreements(self, runs: list[Run]) -> dict[tuple[int, int], Agreement | None]:
        """Each run's records read into columns once; a pair is then a few vector operations."""
        codes: Codes = {}
        columns = [answer_columns(run.predictions, codes) for run in runs]
        return {
            (i, j): self._agreement(runs[i], runs[j], columns[i], columns[j])
            for i, j in permutations(range(len(runs)), 2)
        }

    @staticmethod
    def _agreement(a: Run, b: Run, columns_a: AnswerColumns, columns_b: AnswerColumns) -> Agreement:
        same_labels = a.provenance.labels.sha256 == b.provenance.labels.sha256
        c = top1_agreement(columns_a, columns_b, same_labels)
        return {
            "name": "top-1 agreement",
            "value": c["top1_agreement"],
            "p": c["mcnemar_p"],
            "samples": c["paired_images"],
            "interval": c["delta_top1_interval"],  # the paired interval of Δtop-1, as report diff
        }

    def pairwise(self, comparison: JSONMap) -> PairQuantities:
        """As the base, plus ``top1_ci_low``/``top1_ci_high``: the paired interval of Δtop-1."""
        values = super().pairwise(comparison)
        if comparison.get("delta_top1_interval"):
            values["top1_ci_low"], values["top1_ci_high"] = comparison["delta_top1_interval"]
        return values
