"""compare --chain on COCO: AP per step, ΔAP against the previous step with report diff's paired
bootstrap interval, and the classes whose AP moved most. Lean: SSD MobileNet v1 on coco_val5, the
CPU (XNNPACK) against LiteRT's reference kernels (same int8 model, another arithmetic)."""

from __future__ import annotations

import json

from conftest import ASSETS, MODELS, run_cli

SSD = MODELS / "ssd_mobilenet_v1_coco_quant_postprocess.tflite"


def test_a_coco_chain_gives_ap_delta_interval_and_per_class_delta(tmp_path):
    out = tmp_path / "chain"
    args = ["--chain", "delegate=cpu,reference", "task=coco", "dataset=coco_val5", f"paths.data_dir={ASSETS}"]
    done = run_cli(["compare", *args, f"model.path={SSD}", "--out", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "error:" not in done.stderr
    start, step = json.loads((out / "chain.json").read_text())["rows"]
    assert start["metric"] == step["metric"] == "AP" and start["value"] > 0.1 and step["value"] > 0.1
    low, high = step["delta_interval"]
    assert low <= step["delta"] <= high  # report diff's paired image bootstrap of ΔAP
    assert step["inputs"]["identical"] == 5
    moved = step["moved_most"]
    assert moved and all(r["delta"] for r in moved)
    assert [abs(r["delta"]) for r in moved] == sorted((abs(r["delta"]) for r in moved), reverse=True)
    assert f"step 1: per-class ΔAP, most moved: {moved[0]['name']} {moved[0]['delta']:+.4f}" in done.stdout
