"""Ground truth by class index is scored by index when the class list lines up with the model's
labels, however the names are spelled (issue 43: Lite0's ``pay-phone`` vs synset_words'
``pay-phone, pay-station``); a real mismatch is one ``error:`` line naming both files."""

from __future__ import annotations

from pathlib import Path

from conftest import ASSETS, MODELS, VAL50, run_cli, run_inprocess

from evalharness.rundir.files import parse_predictions

SYNSET_WORDS = ASSETS / "imagenet" / "synset_words.txt"
MODEL = MODELS / "mobilenet_v2_1.0_224_quant.tflite"  # 1001 embedded labels, background first
IMAGES = 4  # their classes: 472, 260, 300, 133
# (class index, new spelling): the classes of two of the images, and the pay-phone
RESPELLED = {472: "canoe boat", 260: "Chow-Chow dog", 707: "pay-phone"}


def _synset_words(tmp_path: Path, swap: bool = False) -> Path:
    lines = SYNSET_WORDS.read_text().splitlines()
    for i, text in RESPELLED.items():
        lines[i] = f"{lines[i].split()[0]} {text}"
    if swap:  # two classes in the wrong order: the list no longer lines up by index
        lines[0], lines[1] = lines[1], lines[0]
    path = tmp_path / "synset_words.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(tmp_path: Path, words: Path, name: str) -> dict:
    data = ["dataset.class_names=null", f"dataset.synset_words={words}", f"task.num_images={IMAGES}"]
    return run_inprocess([*VAL50, "model=file", f"model.path={MODEL}", *data], tmp_path / name)


def _answers(run_dir: Path) -> list[tuple]:
    records, _, _ = parse_predictions((run_dir / "predictions.jsonl").read_bytes())
    return [(r["id"], r["label_index"], r["topk"][:5]) for r in records]


def test_index_ground_truth_with_other_spellings_is_scored_by_index(tmp_path):
    respelled = _run(tmp_path, _synset_words(tmp_path), "respelled")
    same = _run(tmp_path, SYNSET_WORDS, "same")
    assert respelled["status"] == "complete" and respelled["metrics"]["top1"] == same["metrics"]["top1"]
    assert _answers(tmp_path / "respelled") == _answers(tmp_path / "same")
    assert respelled["provenance"]["dataset"]["scored_by"] == "index"
    (assumed,) = [a for a in respelled["provenance"]["assumptions"] if a["what"] == "ground truth"]
    # canoe and chow differ; pay-phone shares a name with 'pay-phone, pay-station'
    assert "output = class index + 1" in assumed["assumed"] and "2 name(s) differ" in assumed["why"]
    summary = (tmp_path / "respelled" / "results.txt").read_text()
    assert summary.count("Assumed:  ground truth = scored by class index") == 1
    # names are shown from the ground truth's list, the answer is the model's output
    records, _, _ = parse_predictions((tmp_path / "respelled" / "predictions.jsonl").read_bytes())
    assert records[0]["label"] == "canoe boat" and records[0]["label_index"] == 473
    # the same names everywhere: nothing to assume
    assert not [a for a in same["provenance"]["assumptions"] if a["what"] == "ground truth"]


def test_class_list_out_of_order_and_misspelled_is_one_error_naming_both_files(tmp_path):
    words = _synset_words(tmp_path, swap=True)
    data = ["dataset.class_names=null", f"dataset.synset_words={words}", f"task.num_images={IMAGES}"]
    proc = run_cli([*VAL50, f"model.path={MODEL}", *data], cwd=tmp_path)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and len(errors) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    (error,) = errors
    assert "'canoe boat'" in error and f"do not line up with it by index ({words}: order: class 0" in error
    assert "model.labels=" in error and "labels" in error
