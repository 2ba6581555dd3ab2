"""The ``results.txt`` lines of a run, from its metrics block: one wording for a run and a merge.

Tasks write them at the end of a run; ``report merge`` writes them for the merged run from the
recomputed metrics, so both files read the same for the same numbers.
"""

from __future__ import annotations


def classification_lines(metrics: dict) -> list[str]:
    """``Top-k Accuracy: x`` for k = 1..K, as TFLite's imagenet tool prints them."""
    return [f"Top-{k} Accuracy: {metrics[f'top{k}']:g}" for k in range(1, len(metrics["correct"]) + 1)]


def coco_lines(metrics: dict) -> list[str]:
    """COCOeval.summarize()'s 12 lines, then the TFLite-tool AP when it was computed."""
    lines = list(metrics["summary"])
    if "tflite_tool" in metrics:
        ap = metrics["tflite_tool"]["AP"]
        lines.append(f"TFLite-tool AP (0.5:0.95, 101-point, no area ranges): {ap:.6f}")
    return lines


def summary_lines(task: str, metrics: dict) -> list[str]:
    """The lines for a run of ``task`` (imagenet | coco), e.g. for a merged run."""
    return coco_lines(metrics) if task == "coco" else classification_lines(metrics)
