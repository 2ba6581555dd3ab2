"""explain.txt across a conversion, from a document alone: where it diverges, and a source that is
compared at its outputs only (a .pt2: CI has no torch, so this is its only check there)."""

from __future__ import annotations

import math

from evalharness.core.tables import render_text
from evalharness.explain.conversion_view import conversion_sections


def _stats(snr: float) -> dict:
    return {"snr_db": snr, "max_abs": 0.5, "mean_abs": 0.1, "cosine": 1.0, "nonfinite": 0}


def _doc(fmt: str, ops: list[dict], diverges: dict | None, not_traced: str | None) -> dict:
    return {
        "source": {"format": fmt},
        "images": {"changed": ["a.jpg"], "controls": ["b.jpg"], "changed_in_all": 1},
        "mapping": {"tflite_ops": 3, "source_ops": None if not_traced else 5, "mapped": len(ops),
                    "by_name": len(ops), "by_position": 0, "unmapped": [], "not_traced": not_traced},
        "ops": ops,
        "diverges_at": diverges,
        "enters_at": diverges and {**diverges, "drop_db": 100.0},
        "outputs": [{"id": "a.jpg", "group": "changed", "caption": "A right -> B wrong", "snr_db": 3.0,
                     "max_abs": 2.0, "source_top1": 1, "tflite_top1": 2}],
    }  # fmt: skip


def test_the_divergence_is_named_and_shown_from_there():
    snrs = [130.0, 8.0, math.inf]
    ops = [{"op": i, "type": "CONV_2D", "node": "Conv", "how": "name", "tensor": f"t{i}",
            "changed": _stats(snr), "controls": _stats(snr)} for i, snr in enumerate(snrs)]  # fmt: skip
    diverged = {"op": 1, "type": "CONV_2D", "node": "Conv", "group": "changed", "snr_db": 8.0, "max_abs": 4.5}
    text = render_text("t", conversion_sections(_doc("ONNX", ops, diverged, None)))
    assert (
        "mapped 3/3 .tflite ops to ONNX tensors (3 by name, 0 by position; source graph: 5 ONNX nodes)"
        in text
    )
    assert "diverges (first op below 40 dB): op 1 CONV_2D (ONNX Conv): SNR 8.0 dB" in text
    assert "∞ (equal)" in text and "A right -> B wrong" in text


def test_a_source_without_traced_tensors_is_compared_at_the_outputs_only():
    why = "intermediate tensors of a PyTorch exported program are not traced"
    text = render_text("t", conversion_sections(_doc("PyTorch", [], None, why)))
    assert f"{why}: compared at the outputs only (below)" in text
    assert "diverges" not in text and "Outputs (1 of 1 changed images, 1 controls)" in text
