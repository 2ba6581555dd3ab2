"""loop.batch_size: B samples per invoke on real models, predictions equal to one per invoke.

Which shared models take a batch: MobileNet-EdgeTPU (dynamic batch in its shape signature) and
EfficientNet-Lite0 (fixed batch 1, resizable: no fixed-shape RESHAPE); the MobileNet v1/v2 and SSD
files refuse (XNNPACK cannot reshape their fixed RESHAPE), with exit 2 naming loop.batch_size.
"""

from __future__ import annotations

import json

import pytest
from conftest import VAL50, run_cli, run_inprocess

COMMON = [*VAL50, "loop.progress=false", "loop.tensor_cache=false"]


def _predictions(run_dir) -> list[dict]:
    rows = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if k != "latency_ms"} for row in rows]


@pytest.mark.parametrize(
    ("model", "how"),
    [
        ("mobilenet_edgetpu_224_1.0_uint8", "dynamic batch to 8"),
        ("efficientnet_lite0_fp32", "fixed batch 1 resized to 8"),
    ],
)
def test_batch_of_8_predicts_as_one_per_invoke(model, how, tmp_path):
    """50 images in batches of 8: the last batch holds 2 and 6 padding samples whose outputs are
    dropped; every prediction, score and metric equals the batch-1 run's (measured: identical)."""
    one = run_inprocess([*COMMON, f"model={model}"], tmp_path / "b1")
    eight = run_inprocess([*COMMON, f"model={model}", "loop.batch_size=8"], tmp_path / "b8")
    assert eight["throughput"]["batch"] == {"size": 8, "how": how, "padded": 6}
    assert one["throughput"]["batch"] == {"size": 1, "how": "one sample per invoke", "padded": 0}
    assert (
        _predictions(tmp_path / "b8") == _predictions(tmp_path / "b1")
        and len(_predictions(tmp_path / "b8")) == 50
    )
    assert eight["metrics"] == one["metrics"]
    latency = eight["latency_ms"]
    assert latency["inference"]["count"] == 50 and "divided by 8" in latency["timed_region"]
    shares = [json.loads(line)["latency_ms"] for line in (tmp_path / "b8" / "predictions.jsonl").open()]
    assert len(set(shares[:8])) == 1 and len(set(shares)) <= 7  # one share per batch, 7 batches
    assert eight["output_checks"]["samples"] == 50 and not eight["output_checks"]["failed"]


def test_model_that_cannot_batch_is_one_error_line(tmp_path):
    proc = run_cli(
        [
            *COMMON,
            "model=mobilenet_v2_1.0_224_quant",
            "loop.batch_size=8",
            f"hydra.run.dir={tmp_path / 'run'}",
        ],
        cwd=tmp_path,
    )
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and len(errors) == 1, proc.stderr
    assert errors[0].startswith("error: loop.batch_size=8: ")
    assert "does not run 8 samples per invoke" in errors[0]
    assert "use loop.batch_size=1" in errors[0] and "Traceback" not in proc.stderr


def test_batch_one_more_than_the_images(tmp_path):
    """A batch larger than the dataset: one padded invoke, every image scored once."""
    doc = run_inprocess([*COMMON, "model=efficientnet_lite0_fp32", "loop.batch_size=64"], tmp_path)
    assert doc["throughput"]["batch"]["padded"] == 14 and doc["metrics"]["num_scored"] == 50
