"""Shared fixtures: real assets from ../shared/assets and an in-process way to run the app."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from evalharness.core.paths import CONF_DIR, bundled, model_stem, quant_tag

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO.parent / "shared" / "assets"
MODELS = ASSETS / "models"
EXPECTED = json.loads((ASSETS / "expected.json").read_text()) if ASSETS.is_dir() else {}
CLASSIFIERS = [
    "mobilenet_v1_0.25_128_quant",
    "mobilenet_v2_1.0_224_quant",
    "tf2_mobilenet_v2_1.0_224_ptq",
    "mobilenet_edgetpu_224_1.0_uint8",
]
VAL50 = [f"paths.models_dir={MODELS}", f"paths.data_dir={ASSETS}", "dataset=imagenet_val50"]


def lite0_on_val50(images: int) -> list[str]:
    """EfficientNet-Lite0 in any source format on val50's first ``images``: its own preprocessing and
    the bundled ILSVRC labels (an ONNX or .pt2 file carries no label file)."""
    return [
        f"paths.data_dir={ASSETS}",
        "dataset=imagenet_val50",
        f"task.num_images={images}",
        f"model.labels={bundled('imagenet_classes.txt')}",
        "model/preprocess=efficientnet",
    ]

OmegaConf.register_new_resolver("bundled", bundled, replace=True)
OmegaConf.register_new_resolver("model_stem", model_stem, replace=True)
OmegaConf.register_new_resolver("quant_tag", quant_tag, replace=True)
# Multiruns turn the tensor cache on: keep the tests' cache out of the user's home.
os.environ.setdefault("EVALHARNESS_CACHE", tempfile.mkdtemp(prefix="evalharness-test-cache-"))


def pytest_collection_modifyitems(config, items):
    """End-to-end tests need the real models and images; unit tests run without them."""
    e2e = REPO / "tests" / "e2e"
    if not ASSETS.is_dir() and any(e2e in Path(str(item.path)).parents for item in items):
        pytest.exit(f"shared test assets not found at {ASSETS} (tests/unit runs without them)", returncode=3)


def one_coco_image(directory: Path, image_id: int) -> tuple[Path, list[dict], list[dict]]:
    """val25's annotations cut to one image (crowd boxes dropped): (json path, annotations,
    categories sorted by id), for detectors whose outputs are that image's ground truth."""
    gt = json.loads((ASSETS / "coco/instances_val25.json").read_text())
    gt["images"] = [i for i in gt["images"] if i["id"] == image_id]
    gt["annotations"] = [a for a in gt["annotations"] if a["image_id"] == image_id and not a["iscrowd"]]
    path = directory / "instances.json"
    path.write_text(json.dumps(gt))
    return path, gt["annotations"], sorted(gt["categories"], key=lambda c: c["id"])


def compose_config(overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=["loop.progress=false", *overrides])


def run_inprocess(overrides: list[str], run_dir: Path) -> dict:
    """Compose + run like ``python -m evalharness`` does, without a subprocess."""
    from evalharness.__main__ import run

    return run(compose_config(overrides), str(run_dir))


def run_cli(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m evalharness ARGS`` in a subprocess (exit codes, stderr, Hydra run dirs)."""
    return subprocess.run(
        [sys.executable, "-m", "evalharness", *args, "loop.progress=false"],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="session")
def val50_runs(tmp_path_factory) -> dict:
    """(model, delegate) -> metrics.json document + predictions, computed once per session."""
    cache: dict = {}

    def get(model: str, delegate: str = "cpu") -> tuple[dict, list[dict]]:
        if (model, delegate) not in cache:
            run_dir = tmp_path_factory.mktemp(f"{model}-{delegate}")
            doc = run_inprocess([*VAL50, f"model={model}", f"delegate={delegate}"], run_dir)
            preds = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
            cache[model, delegate] = (doc, preds)
        return cache[model, delegate]

    return get


def task_lines(run_dir: Path) -> list[str]:
    """A run's results.txt without the summary block that heads it (run/summary.py): the task's
    own lines, as TFLite's tools print them."""
    lines = (Path(run_dir) / "results.txt").read_text().splitlines()
    if lines and lines[0].startswith("== summary"):
        lines = lines[lines.index("") + 1 :]
    return lines


@pytest.fixture(scope="session")
def sample_run(tmp_path_factory) -> Path:
    """One complete run of the bundled sample, made once per session: the run directory that tests
    copy or read (never change: the threat-model suites check its files stay byte-identical)."""
    out = tmp_path_factory.mktemp("sample_run") / "run"
    command = [sys.executable, "-m", "evalharness", "loop.progress=false", f"hydra.run.dir={out}"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out
