"""ILSVRC-style top-1..K classification: its config, records -> top-K accuracy, paired top-1 diff.

A record (one predictions.jsonl line) holds the image ``id``, the true output index
``label_index``, the ranked output indices ``topk`` (and their labels and scores). Accuracy is
recounted from ``topk`` and ``label_index`` alone, so the live run, ``rescore`` and ``merge`` give the
same numbers bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalharness.core.errors import EvalHarnessError
from evalharness.core.numbers import fmt
from evalharness.core.schema import bounds
from evalharness.core.tables import Section, more_rows
from evalharness.rundir.reader import Run
from evalharness.stats.classification_analysis import PerClassCounter, confusion_changes, per_class_changes
from evalharness.stats.intervals import CONFIDENCE, fmt_interval, interval_lines, wilson
from evalharness.stats.paired import classification_diff, format_p, verdict
from evalharness.tasks.definition import Scorer, TaskDefinition, register

CHANGE_TEXT = {
    "regression": "A right -> B wrong",
    "improvement": "A wrong -> B right",
    "changed": "both wrong, prediction changed",
}


@dataclass
class ImageNetDataset:
    """The dataset fields classification reads (see :mod:`evalharness.data.ground_truth`)."""

    ground_truth: Any = None  # val.txt | csv | label lines; none for imagefolder / devkit
    format: str = "auto"  # auto | val_txt | devkit | imagefolder | label_lines | csv
    class_names: Any = None  # class list in the ground truth's index order (val.txt)
    synset_words: Any = None  # wnid -> text (imagefolder of wnid folders)
    devkit_meta: Any = None  # the ILSVRC devkit's data/meta.mat
    # a csv's class_index without a class list is scored by index: model output = index + offset;
    # auto: 1 when the model's label file starts with a background line, else 0 (printed, recorded)
    label_offset: str = field(default="auto", metadata=bounds(choices=("auto", "0", "1")))


@dataclass
class ImageNetSettings:
    name: str = "imagenet"
    top_k: int = field(default=10, metadata=bounds(1, 1000))  # report Top-1..Top-k
    num_images: int = 0  # first N images in sorted file-name order; 0 = all


class TopKScorer(Scorer):
    """Top-1..K hits from each record's ``topk`` and ``label_index``."""

    def __init__(self, top_k: int) -> None:
        self.top_k = top_k
        self.hits = [0] * top_k
        self.count = 0
        self.per_class = PerClassCounter()

    def add(self, record: dict) -> None:
        self.per_class.add(record)
        top = record["topk"][: self.top_k]
        if record["label_index"] in top:
            for rank in range(top.index(record["label_index"]), self.top_k):
                self.hits[rank] += 1
        self.count += 1

    def result(self) -> dict:
        n, k = self.count, self.top_k
        metrics: dict[str, Any] = {f"top{i + 1}": (float(self.hits[i]) / n if n else 0.0) for i in range(k)}
        metrics["correct"] = {f"top{i + 1}": self.hits[i] for i in range(k)}
        metrics["num_scored"] = n
        metrics["intervals"] = {
            "method": "wilson",
            "confidence": CONFIDENCE,
            **{f"top{i + 1}": wilson(self.hits[i], n) for i in range(k)},
        }
        metrics["analysis"] = self.per_class.result()
        return metrics


def short(label: str | None) -> str:
    """The first synonym of an ImageNet label ("tabby, tabby cat" -> "tabby"): tables stay readable."""
    return "n/a" if label is None else label.split(",")[0]


@register
class ImageNetDefinition(TaskDefinition):
    name = "imagenet"
    schema = ImageNetSettings
    dataset_schema = ImageNetDataset
    live = "evalharness.tasks.imagenet.live:ImageNetTask"
    listing_order = 0
    sample_key = "id"
    can_resume = True
    rescorable = True
    comparison = "classification"
    sweep_metrics = ("top1", "top5")
    agreement_columns = ("top1_agreement", "mcnemar_p")
    thumbnails = ("flips", "Thumbnails: top-1 changes")
    repair_metric = "top1"

    def scorer(self, ground_truth=None, top_k: int | None = None) -> TopKScorer:
        return TopKScorer(top_k or int(self.settings["top_k"]))

    def rescorer(self, runs: list[Run], records: list[dict], top_k=None, backend=None) -> Scorer:
        """K = what every record stores (the live run's K), or ``--top-k`` below it."""
        if backend is not None:
            raise EvalHarnessError(f"--backend applies to detection runs, not to task {self.name}")
        stored = min((len(r["topk"]) for r in records), default=0)
        k = stored if top_k is None else top_k
        if not 1 <= k <= stored:
            raise EvalHarnessError(f"--top-k {k}: the predictions store top-{stored}; give 1..{stored}")
        return self.scorer(top_k=k)

    def summary_lines(self, doc: Mapping[str, Any]) -> list[str]:
        """``Top-k Accuracy: x`` for k = 1..K, as TFLite's imagenet tool prints them."""
        metrics = doc["metrics"]
        ks = range(1, len(metrics["correct"]) + 1)
        lines = [f"Top-{k} Accuracy: {metrics[f'top{k}']:g}" for k in ks]
        intervals = metrics.get("intervals") or {}
        how = f"{intervals.get('method')}, {metrics['num_scored']} images"
        shown = [k for k in ks if k in (1, 5)] or list(ks)[:1]  # the rest are in metrics.intervals
        lines += interval_lines(intervals, how, [(f"top-{k}", intervals.get(f"top{k}")) for k in shown])
        return lines + _analysis_lines(metrics.get("analysis"))

    def headline_accuracy(self, metrics: dict) -> tuple[str, float, list | None, str]:
        interval = (metrics.get("intervals") or {}).get("top1")
        return "top-1", metrics["top1"], interval, "Wilson score interval of a proportion"

    def headline(self, metrics: dict) -> dict[str, float]:
        tops = sorted(
            (k for k in metrics if k.startswith("top") and k[3:].isdigit()), key=lambda k: int(k[3:])
        )
        return {k: metrics[k] for k in tops}

    def fractions(self, metrics: dict) -> list[str]:
        return list(self.headline(metrics))

    def compare(self, a: Run, b: Run, options) -> dict:
        same_labels = a.prov("labels.sha256") == b.prov("labels.sha256")
        c = classification_diff(a.predictions, b.predictions, same_labels)
        if options.get("alpha") is not None:  # report diff (a sweep's agreement needs none of this)
            c["per_class"] = per_class_changes(a.predictions, b.predictions, options["alpha"])
            c["confusion_changes"] = confusion_changes(a.predictions, b.predictions)
        return c

    def paired_records(self, records_a: list[dict], records_b: list[dict]) -> dict:
        c = classification_diff(records_a, records_b, True)  # one label file: the same model's variants
        return {
            "delta": c["delta_top1"],
            "interval": c["delta_top1_interval"],
            "method": f"Newcombe paired {CONFIDENCE:.0%} (as report diff)",
            "changed": len(c["top1_changes"]),
            "paired": c["paired_images"],
            "mcnemar_p": c["mcnemar_p"],
        }

    def agreement(self, a: Run, b: Run) -> dict:
        c = self.compare(a, b, {})
        return {
            "name": "top-1 agreement",
            "value": c["top1_agreement"],
            "p": c["mcnemar_p"],
            "samples": c["paired_images"],
        }

    def verdict(self, diff: Mapping[str, Any]) -> str:
        return verdict(diff[self.comparison], diff["alpha"], diff.get("equivalence_margin", 0.01))

    def pairwise(self, comparison: dict) -> dict[str, float]:
        """As the base, plus ``top1_ci_low``/``top1_ci_high``: the paired interval of Δtop-1."""
        values = super().pairwise(comparison)
        if comparison.get("delta_top1_interval"):
            values["top1_ci_low"], values["top1_ci_high"] = comparison["delta_top1_interval"]
        return values

    def diff_sections(self, c: dict, max_rows: int) -> list[Section]:
        stats = [
            ["paired images", fmt(c["paired_images"])],
            ["only in A / only in B", f"{c['only_in_a']} / {c['only_in_b']}"],
            ["top-1 agreement", fmt(c["top1_agreement"], ".4f")],
            ["mean top-5 overlap", fmt(c["top5_overlap"], ".4f")],
            ["A right -> B wrong (regressions)", fmt(c["regressions"])],
            ["A wrong -> B right (improvements)", fmt(c["improvements"])],
            ["both wrong, top-1 changed", fmt(c["changed_both_wrong"])],
            ["McNemar exact p (two-sided)", format_p(c["mcnemar_p"])],
        ]
        if "delta_top1" in c:  # diffs made since the paired interval exists
            stats += [
                ["top-1 change B - A", fmt(c["delta_top1"], "+.4f")],
                [
                    f"{CONFIDENCE:.0%} paired interval (Newcombe)",
                    fmt_interval(c["delta_top1_interval"], "+.4f"),
                ],
                ["images for 80 % power at this change", fmt(c["images_needed"])],
            ]
        changes = c["top1_changes"]
        rows = [
            [ch["id"], short(ch["label"]), short(ch["a_top1"]), short(ch["b_top1"]), CHANGE_TEXT[ch["kind"]]]
            for ch in changes[:max_rows]
        ]
        notes = [
            "labels: first synonym only (full text in --format json)",
            *more_rows(len(changes), max_rows),
        ]
        return [
            Section("Paired top-1", ["", "value"], stats, key="paired"),
            *_analysis_sections(c, max_rows),
            Section(
                f"Top-1 changes ({len(changes)})",
                ["image", "label", "A top-1", "B top-1", "change"],
                rows,
                notes,
                key="flips",
            ),
        ]

    def run_analysis(self, run: Run, max_rows: int) -> tuple[list[Section], list[dict]]:
        a = run.metrics.get("analysis")
        if not a:
            raise EvalHarnessError(
                f"run {run.label} records no metrics.analysis (made before schema 4); rerun it"
            )
        rows = [[short(r["label"]), str(r["images"]), str(r["correct"]), fmt(r["top1"], ".3f"),
                 fmt_interval(r["interval"], ".3f")] for r in a["per_class"][:max_rows]]  # fmt: skip
        pairs = [
            [f"{short(r['truth'])} -> {short(r['predicted'])}", str(r["count"])] for r in a["confusions"]
        ]
        return [
            Section(f"Per-class top-1 ({a['classes_present']} classes present, lowest first)",
                    ["class", "images", "correct", "top-1", f"{CONFIDENCE:.0%} interval (Wilson)"], rows,
                    more_rows(len(a["per_class"]), max_rows), key="per_class"),
            Section("Commonest confusions", ["truth -> top-1", "count"], pairs,
                    [f"{a['confusions_total']} wrong top-1 answers in all"], key="confusion"),
        ], []  # fmt: skip

    def changed_samples(self, c: dict) -> list[tuple[str, str]]:
        return [
            (
                ch["id"],
                f"{CHANGE_TEXT[ch['kind']]}; truth {short(ch['label'])}; A {short(ch['a_top1'])}; "
                f"B {short(ch['b_top1'])}",
            )
            for ch in c["top1_changes"]
        ]


def _analysis_lines(analysis: dict | None) -> list[str]:
    """results.txt: the weakest classes and the commonest confusions (runs since schema 4)."""
    if not analysis:
        return []
    worst = ", ".join(
        f"{short(r['label'])} {r['correct']}/{r['images']}" for r in analysis["per_class"][:5]
    )
    confused = ", ".join(
        f"{short(r['truth'])} -> {short(r['predicted'])} {r['count']}" for r in analysis["confusions"][:5]
    )
    return [
        f"Per-class top-1, {analysis['classes_present']} classes present; lowest: {worst}",
        f"Commonest confusions (truth -> top-1): {confused or 'none'}",
    ]


def _analysis_sections(c: dict, max_rows: int) -> list[Section]:
    """Per-class paired changes (Holm-adjusted) and the confusion pairs that changed."""
    if "per_class" not in c:
        return []
    pc = c["per_class"]
    rows = [
        [short(r["label"]), str(r["images"]), fmt(r["a_top1"], ".3f"), fmt(r["b_top1"], ".3f"),
         fmt(r["delta"], "+.3f"), fmt_interval(r["interval"], "+.3f"), format_p(r["p"]),
         format_p(r["p_holm"])]
        for r in pc["changed"][:max_rows]
    ]  # fmt: skip
    significant = ", ".join(short(r["label"]) for r in pc["significant"]) or "none"
    notes = [
        f"per true class: Newcombe's {CONFIDENCE:.0%} paired interval and McNemar's exact p (as above); "
        f"p (Holm): adjusted over the {pc['classes_tested']} classes present (Holm-Bonferroni)",
        f"classes changed significantly at alpha={pc['alpha']:g} after the correction: {significant}",
        *more_rows(len(pc["changed"]), max_rows),
    ]
    changes = c["confusion_changes"]
    pairs = [
        [f"{short(r['truth'])} -> {short(r['predicted'])}", str(r["a"]), str(r["b"]), f"{r['delta']:+d}"]
        for r in changes[:max_rows]
    ]
    return [
        Section(f"Classes whose top-1 changed ({len(pc['changed'])})",
                ["class", "images", "A top-1", "B top-1", "delta", "paired interval", "p", "p (Holm)"],
                rows, notes, key="per_class"),
        Section(f"Confusion pairs that changed ({len(changes)})",
                ["truth -> top-1", "A", "B", "delta"], pairs,
                ["wrong top-1 answers counted per (true class, predicted class) on the paired images",
                 *more_rows(len(changes), max_rows)], key="confusion"),
    ]  # fmt: skip
