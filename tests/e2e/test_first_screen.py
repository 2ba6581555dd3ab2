"""A newcomer's own data on the first try: a folder of images and a csv of class indices is scored by
index (the background offset detected and said), identical image by image to the preset run; a
detector under the classification task is told ``task=coco`` before anything about its labels."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import ASSETS, MODELS, VAL50, run_cli, run_inprocess

from evalharness.rundir.files import parse_predictions

VAL = ASSETS / "imagenet"
IMAGES = 6


def _own_folder(tmp_path: Path) -> Path:
    """``IMAGES`` val50 photos and a labels.csv beside them giving each one's class index."""
    truth = dict(line.split() for line in (VAL / "val.txt").read_text().splitlines() if line.strip())
    folder = tmp_path / "mine"
    folder.mkdir()
    names = sorted(p.name for p in (VAL / "val50").iterdir() if p.suffix == ".JPEG")[:IMAGES]
    for name in names:
        shutil.copy(VAL / "val50" / name, folder / name)
    rows = "".join(f"{name},{truth[name]}\n" for name in names)
    (folder / "labels.csv").write_text("filename,class_index\n" + rows)
    return folder


def _answers(run_dir: Path) -> dict[str, tuple]:
    records, _, _ = parse_predictions((run_dir / "predictions.jsonl").read_bytes())
    return {r["id"]: (r["label_index"], r["topk"][:5]) for r in records}


def test_own_folder_with_class_indices_matches_the_preset_run(tmp_path):
    folder = _own_folder(tmp_path)
    model = ["model=mobilenet_v2_1.0_224_quant", f"paths.models_dir={MODELS}"]
    data = ["dataset=imagefolder", f"dataset.root={folder}", f"dataset.ground_truth={folder / 'labels.csv'}"]
    own = run_inprocess([*model, *data], tmp_path / "own")
    preset = run_inprocess([*VAL50, *model, f"task.num_images={IMAGES}"], tmp_path / "preset")
    assert own["metrics"]["top1"] == preset["metrics"]["top1"]
    assert _answers(tmp_path / "own") == _answers(tmp_path / "preset")  # image by image
    # the 1001-line label file starts with "background": index i is output i+1, and the run says so
    (assumed,) = [a for a in own["provenance"]["assumptions"] if a["what"] == "dataset.label_offset"]
    assert assumed["assumed"] == 1 and "background" in assumed["why"]
    assert own["provenance"]["dataset"]["unscored"] == {}  # the csv beside the images is read, not left out
    summary = (tmp_path / "own" / "results.txt").read_text().splitlines()
    assert any(line.startswith("  Assumed:  dataset.label_offset = 1") for line in summary)
    # 6 invokes are no latency measurement: the record and the summary say so, the run is complete
    validity = own["latency_ms"]["validity"]
    assert not validity["valid"] and "6 invokes < min_invokes 20" in validity["problems"]
    (latency,) = [line for line in summary if line.startswith("  Latency:  not a valid measurement")]
    assert latency.endswith("task=benchmark measures latency") and own["status"] == "complete"


def test_detector_under_the_classification_task_is_told_task_coco(tmp_path):
    model = MODELS / "ssd_mobilenet_v1_coco_quant_postprocess.tflite"
    proc = run_cli([f"model.path={model}"], cwd=tmp_path)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and len(errors) == 1 and "use task=coco" in errors[0], proc.stderr


def test_quiet_run_keeps_native_output_in_the_run(tmp_path):
    """LiteRT's NPU path logs natively on every load: none of it reaches the terminal, all of it is
    in the run's native.log; -v lets it through as printed."""
    proc = run_cli(["delegate=npu", "task.num_images=2"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = Path(proc.stdout.splitlines()[-1].removeprefix("metrics: ")).parent
    native = ("INFO: [", "WARNING: [", "ERROR: [")
    shown = proc.stdout.splitlines() + proc.stderr.splitlines()
    assert not [line for line in shown if line.startswith(native)]
    assert any(line.startswith(native) for line in (run_dir / "native.log").read_text().splitlines())
    loud = run_cli(["-v", "delegate=npu", "task.num_images=2"], cwd=tmp_path)
    assert loud.returncode == 0 and any(line.startswith(native) for line in loud.stderr.splitlines())
