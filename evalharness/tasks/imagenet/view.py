"""How classification results read beyond the generic presenters: the per-class lines of
results.txt, the paired top-1 verdict and tables of ``report diff``, ``report analysis``'s per-class
tables, captions of the images whose top-1 changed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalharness.core.errors import EvalHarnessError
from evalharness.core.numbers import fmt
from evalharness.core.tables import Section, more_rows
from evalharness.rundir.metrics_file import Document
from evalharness.rundir.reader import Run
from evalharness.stats.intervals import CONFIDENCE, fmt_interval
from evalharness.stats.paired import format_p, verdict
from evalharness.tasks.imagenet.comparison import ClassificationComparison
from evalharness.tasks.view import TaskView

CHANGE_TEXT = {
    "regression": "A right -> B wrong",
    "improvement": "A wrong -> B right",
    "changed": "both wrong, prediction changed",
}


def short(label: str | None) -> str:
    """The first synonym of an ImageNet label ("tabby, tabby cat" -> "tabby"): tables stay readable."""
    return "n/a" if label is None else label.split(",")[0]


class ImageNetView(TaskView):
    thumbnails = ("flips", "Thumbnails: top-1 changes")

    def summary_lines(self, doc: Document, lines: list[str]) -> list[str]:
        """The generic top-k lines, then the weakest classes and the commonest confusions."""
        return lines + _analysis_lines(doc.metrics.analysis)

    def verdict(self, diff: Mapping[str, Any]) -> str:
        key = ClassificationComparison.key
        return verdict(diff[key], diff["alpha"], diff.get("equivalence_margin", 0.01))

    def diff_sections(self, c: dict[str, Any], max_rows: int) -> list[Section]:
        stats = [
            ["paired images", fmt(c["paired_images"])],
            ["only in A / only in B", f"{c['only_in_a']} / {c['only_in_b']}"],
            ["top-1 agreement", fmt(c["top1_agreement"], ".4f")],
            ["mean top-5 overlap", fmt(c["top5_overlap"], ".4f")],
            *([["top-5 lists changed", fmt(len(c["top5_changes"]))]] if "top5_changes" in c else []),
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
            *_top5_sections(c, max_rows),
        ]

    def run_analysis(self, run: Run, max_rows: int) -> tuple[list[Section], list[dict[str, Any]]]:
        a = run.document.metrics.analysis
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

    def moved_most(self, c: dict[str, Any], n: int) -> tuple[list[dict[str, Any]], str | None]:
        return _moved_most(c, n)

    def changed_samples(self, c: dict[str, Any]) -> list[tuple[str, str]]:
        return [
            (
                ch["id"],
                f"{CHANGE_TEXT[ch['kind']]}; truth {short(ch['label'])}; A {short(ch['a_top1'])}; "
                f"B {short(ch['b_top1'])}",
            )
            for ch in c["top1_changes"]
        ]


def _top5_sections(c: dict[str, Any], max_rows: int) -> list[Section]:
    """The images whose top-5 list (order included) changed, largest score gap first (diffs since
    the list is recorded: ``top5_changes``)."""
    if "top5_changes" not in c:
        return []
    changes = c["top5_changes"]

    def names(ch: dict[str, Any], side: str) -> str:
        labels = ch[f"{side}_top5_labels"] or [str(i) for i in ch[f"{side}_top5"]]
        return ", ".join(short(label) for label in labels)

    rows = [
        [ch["id"], names(ch, "a"), names(ch, "b"), fmt(ch["max_score_gap"], ".4g", missing="—"),
         short(ch.get("gap_label") or str(ch["gap_class"])) if ch["gap_class"] is not None else "—"]
        for ch in changes[:max_rows]
    ]  # fmt: skip
    notes = [
        "top-5 in rank order; score gap: the largest |score A - score B| over the classes both records "
        "score (their recorded top-K), and the class it is on",
        *more_rows(len(changes), max_rows),
    ]
    return [
        Section(f"Top-5 changes ({len(changes)})", ["image", "A top-5", "B top-5", "largest score gap", "on"],
                rows, notes, key="top5"),
    ]  # fmt: skip


def _moved_most(c: dict[str, Any], n: int) -> tuple[list[dict[str, Any]], str | None]:
    """A chain step's top-5 changes: the images whose top-5 list changed, largest score gap first."""
    changes = c.get("top5_changes")
    if changes is None:
        return [], None
    if not changes:
        return [], "top-5 lists equal on every image"
    shown = ", ".join(
        f"{ch['id']} (gap {fmt(ch['max_score_gap'], '.3g', missing='—')})" for ch in changes[:n]
    )
    more = f" (+{len(changes) - n} more)" if len(changes) > n else ""
    return changes[:n], f"top-5 lists changed on {len(changes)} images: {shown}{more}"


def _analysis_lines(analysis: dict[str, Any] | None) -> list[str]:
    """results.txt: the weakest classes and the commonest confusions (runs since schema 4)."""
    if not analysis:
        return []
    worst = ", ".join(f"{short(r['label'])} {r['correct']}/{r['images']}" for r in analysis["per_class"][:5])
    confused = ", ".join(
        f"{short(r['truth'])} -> {short(r['predicted'])} {r['count']}" for r in analysis["confusions"][:5]
    )
    return [
        f"Per-class top-1, {analysis['classes_present']} classes present; lowest: {worst}",
        f"Commonest confusions (truth -> top-1): {confused or 'none'}",
    ]


def _analysis_sections(c: dict[str, Any], max_rows: int) -> list[Section]:
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
