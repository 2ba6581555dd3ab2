"""quant=prune / cluster / cluster+int8 on EfficientNet-Lite0 over a few val50 images: the guide's table
(size on disk, gzip, paired Δ interval) and the weights read back after quantization."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalharness.report.commands.sweep import write_report
from tests.conftest import MODELS, VAL50, run_cli

pytest.importorskip("ai_edge_quantizer")


def test_prune_cluster_table_on_lite0(tmp_path):
    out = tmp_path / "sweep"
    args = ["-m", *VAL50, "model=efficientnet_lite0", "quant=none,prune,cluster+int8", "task.num_images=3"]
    r = run_cli([*args, f"hydra.sweep.dir={out}"], tmp_path)  # the session's cache (tests/conftest.py)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert "internal error" not in r.stderr and r.stderr.count("error:") <= 1
    rows = {row["quant"]: row for row in write_report(str(out))["rows"]}
    assert all(row["status"] == "complete" for row in rows.values())
    none, prune, cluster = rows["none"], rows["prune"], rows["cluster+int8"]
    assert prune["size_MB"] == none["size_MB"]  # pruned in place: the same bytes on disk
    assert prune["gzip_MB"] < 0.75 * none["gzip_MB"] and cluster["gzip_MB"] < 0.2 * none["gzip_MB"]
    assert prune["weight_sparsity"] > 0.3 and prune["d_interval_low"] <= prune["d_top1_vs_float"]
    md = (out / "sweep.md").read_text()
    assert "gzip MB" in md and "paired Δ interval" in md and "post-training" in md
    docs = {}
    for path in out.glob("*/metrics.json"):
        doc = json.loads(path.read_text())
        docs[doc["provenance"]["model"]["quant"]["name"]] = doc["provenance"]["model"]
    weights = docs["cluster+int8"]["quant"]["weights"]
    assert all(t["unique"] <= 16 for t in weights["tensors"])
    after = weights["after_quantization"]
    assert after["held"] and after["checked"] == len(weights["tensors"]) and after["unique_max"] <= 16
    edited = docs["prune"]["quant"]["weights"]
    whys = {t["why"] for t in edited["left_dense"]}
    assert "the classifier, the last weight tensor (keep_last)" in whys  # the stem conv: small
    assert all(t["sparsity"] == pytest.approx(0.5, abs=1e-3) for t in edited["tensors"])


def test_layer_search_holds_the_drop_on_held_out_images(tmp_path):
    """quant.max_drop with quant=prune: the scan lists every qualifying layer with its Δ, the search
    keeps the layers whose edit holds the drop, the held-out check is recorded."""
    run_dir = tmp_path / "run"
    args = [*VAL50, "model=efficientnet_lite0", "quant=prune", "task.num_images=6", "quant.max_drop=0.5"]
    args += [
        "quant.weights.min_elements=200000",
        f"hydra.run.dir={run_dir}",
    ]
    r = run_cli(args, tmp_path)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert "weight tensors edited within top1 drop <= 0.5" in r.stdout
    weights = json.loads((run_dir / "metrics.json").read_text())["provenance"]["model"]["quant"]["weights"]
    search = weights["search"]
    assert search["layers"] and all(
        set(row) >= {"name", "op", "delta", "interval"} for row in search["layers"]
    )
    assert search["split"]["search"] == 3 and search["held_out"]["images"] == 3
    assert search["status"] == "found" and {t["op_index"] for t in weights["tensors"]} == set(
        search["chosen"]
    )
    assert search["held_out"]["holds"] == (search["held_out"]["drop"] <= 0.5)


def test_the_guides_size_targets_on_lite0():
    """The issue's size acceptance on EfficientNet-Lite0 float, by the weight arithmetic alone (no run):
    prune 50 % keeps the file's size and, with the classifier pruned too (keep_last=false: Lite0's
    classifier holds 28 % of its weights), gzips to <= 0.65 x; with the default (classifier dense, as
    the toolkit's guide advises) to about 0.69 x; cluster 16 to <= 0.35 x with <= 16 values a tensor."""
    import gzip

    from evalharness.runtime.model_size import GZIP_LEVEL
    from evalharness.runtime.weight_edit import edit_model
    from evalharness.settings.groups import WeightsSchema

    path = str(MODELS / "efficientnet_lite0_fp32.tflite")
    raw = Path(path).read_bytes()
    base = len(gzip.compress(raw, GZIP_LEVEL))  # the guide's: zipfile.ZIP_DEFLATED, zlib's default level

    def ratio(settings: WeightsSchema) -> tuple[float, bytes, dict]:
        edited, record = edit_model(path, settings)
        assert len(edited) == len(raw)  # the same bytes on disk
        return len(gzip.compress(edited, GZIP_LEVEL)) / base, edited, record

    pruned_all, _, _ = ratio(WeightsSchema(method="prune", sparsity=0.5, keep_last=False))
    pruned_default, _, _ = ratio(WeightsSchema(method="prune", sparsity=0.5))
    clustered, _, record = ratio(WeightsSchema(method="cluster", clusters=16, keep_last=False))  # its preset
    assert pruned_all <= 0.65 < pruned_default < 0.75
    assert clustered <= 0.35 and all(t["unique"] <= 16 for t in record["tensors"])
