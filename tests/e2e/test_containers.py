"""val50 packed into each container (Hugging Face parquet, webdataset tar shards, TFDS TFRecords)
scores exactly as the folder: every image's top-K list, every metric; ``report diff`` says the data
are the same images. One folder run (the smallest model) is shared by every comparison."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import VAL50, run_cli, run_inprocess
from pack_containers import val50_items, write_parquet, write_tfrecord, write_webdataset

pytest.importorskip("pyarrow", reason="the parquet reader needs pyarrow (the parquet extra)")

MODEL = "model=mobilenet_v1_0.25_128_quant"


@pytest.fixture(scope="module")
def packed(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("packed")
    items = val50_items()
    return {
        "parquet": str(write_parquet(items, root / "parquet", shards=2)),
        "webdataset": write_webdataset(items, root / "wds", shards=3),
        "tfrecord": str(write_tfrecord(items, root / "tfrecord", shards=2)),
    }


def _run(run_dir: Path, *overrides: str) -> tuple[dict, list[dict]]:
    doc = run_inprocess([*VAL50, MODEL, *overrides], run_dir)
    preds = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    return doc, preds


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> tuple[Path, dict, list[dict]]:
    run_dir = tmp_path_factory.mktemp("folder")
    return (run_dir, *_run(run_dir, "dataset.manifest=content"))


@pytest.mark.parametrize("kind", ["parquet", "webdataset", "tfrecord"])
def test_container_equals_folder_image_by_image(tmp_path, packed, folder, kind):
    folder_dir, folder_doc, folder_preds = folder
    doc, preds = _run(tmp_path / "run", f"dataset.root='{packed[kind]}'", "dataset.format=auto")
    assert doc["status"] == "complete"
    assert [(p["id"], p["topk"], p["label_index"]) for p in preds] == [
        (p["id"], p["topk"], p["label_index"]) for p in folder_preds
    ]
    assert doc["metrics"] == folder_doc["metrics"]
    mine, theirs = doc["provenance"]["dataset"], folder_doc["provenance"]["dataset"]
    assert mine["container"] == kind and mine["manifest_sha256"] == theirs["manifest_sha256"]
    assert mine["truth_sha256"] == theirs["truth_sha256"]
    assumed = {a["what"]: a["assumed"] for a in doc["provenance"]["assumptions"]}
    assert assumed["dataset.format"] == kind  # detected from dataset.root, said and recorded
    diff = subprocess.run(
        [sys.executable, "-m", "evalharness.report", "diff", str(folder_dir), str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert diff.returncode == 0, diff.stderr
    assert (
        f"the same images (sha256 of every image) and labels, read from a folder and a {kind}" in diff.stdout
    )
    assert "Traceback" not in diff.stderr
    if kind in ("webdataset", "parquet"):  # explain remakes B's inputs from its shards
        from evalharness.explain.__main__ import main as explain

        assert explain([str(folder_dir), str(tmp_path / "run"), "--out", str(tmp_path / "explain")]) == 0
        assert json.loads((tmp_path / "explain" / "explain.json").read_text())
        _html_thumbnails_from_members(tmp_path / "run", folder_dir, preds[0]["id"])


def _html_thumbnails_from_members(container_dir: Path, folder_dir: Path, changed: str) -> None:
    """The HTML diff with the container run as A shows a changed image from its shards' members
    (checked against the run's sha256); the runs agree, so one change is written into the document."""
    from evalharness.report.commands.diff import build_diff
    from evalharness.report.runs import comparability
    from evalharness.report.views.diff_view import render_html
    from evalharness.rundir.reader import load_run

    a, b = load_run(str(container_dir), "A"), load_run(str(folder_dir), "B")
    doc = build_diff(a, b, comparability(a, b))
    change = {"id": changed, "kind": "changed", "label": "x", "a_top1": "y", "b_top1": "z"}
    doc["classification"]["top1_changes"] = [change]  # type: ignore[typeddict-unknown-key]
    page = render_html(doc)
    assert page.count('<img src="data:image/jpeg;base64,') == 1 and f"{changed}: both wrong" in page


def test_whole_shard_files_split_and_merge(tmp_path, packed, folder):
    """dataset.shard.scheme=files: each shard run reads whole webdataset files; the merge equals
    the folder run."""
    _, folder_doc, _ = folder
    shard_dirs = []
    for i in range(2):
        shard_dirs.append(tmp_path / f"s{i}")
        doc, _ = _run(
            shard_dirs[-1],
            f"dataset.root='{packed['webdataset']}'",
            "dataset.format=webdataset",
            "dataset.shard.scheme=files",
            "dataset.shard.count=2",
            f"dataset.shard.index={i}",
        )
        assert doc["status"] == "complete"
    merged = tmp_path / "merged"
    command = [
        sys.executable,
        "-m",
        "evalharness.report",
        "merge",
        *map(str, shard_dirs),
        "--out",
        str(merged),
    ]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((merged / "metrics.json").read_text())
    assert doc["metrics"]["top1"] == folder_doc["metrics"]["top1"]
    assert doc["metrics"]["correct"] == folder_doc["metrics"]["correct"]


def test_undecodable_member_is_counted_unscored_by_shard_and_member(tmp_path):
    items = val50_items()[:3]
    items[1] = (items[1][0], b"not an image at all", items[1][2])
    pattern = write_webdataset(items, tmp_path / "wds", shards=1)
    doc, preds = _run(
        tmp_path / "run", f"dataset.root='{pattern}'", "dataset.format=auto", "loop.strict=false"
    )
    assert len(preds) == 2
    text = json.dumps(doc)
    assert f"val-0000.tar:{items[1][0]}: cannot decode image" in text


def test_truncated_shard_is_one_error_line(tmp_path):
    """A user error before any result: exit 2, one ``error:`` line naming the shard and the member."""
    pattern = write_webdataset(val50_items()[:3], tmp_path / "wds", shards=1)
    shard = tmp_path / "wds" / "val-0000.tar"
    shard.write_bytes(shard.read_bytes()[:3000])  # inside the first image's data
    proc = run_cli([*VAL50, MODEL, f"dataset.root='{pattern}'", "dataset.format=auto"], tmp_path)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2, proc.stderr
    assert [line for line in lines if line.startswith("error:")] == [
        f"error: {shard}:ILSVRC2012_val_00000347.JPEG: truncated (member of "
        f"{len(val50_items()[0][1])} bytes runs past the end of the shard); re-copy it"
    ]
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr


def test_resume_of_a_container_run_equals_the_whole_run(tmp_path, packed):
    """A run cut short (predictions kept, no metrics.json, as a kill leaves it) resumes to the same
    metrics; the shards' stat is part of the resume identity."""
    root = f"dataset.root='{packed['webdataset']}'"
    run_dir = tmp_path / "run"
    whole, _ = _run(run_dir, root, "dataset.format=auto")
    predictions = run_dir / "predictions.jsonl"
    predictions.write_text("".join(predictions.read_text().splitlines(keepends=True)[:20]))
    (run_dir / "metrics.json").unlink()
    doc, preds = _run(run_dir, root, "dataset.format=auto", "loop.resume=true")
    assert doc["status"] == "complete" and doc["resumed_samples"] == 20
    assert doc["metrics"] == whole["metrics"] and len(preds) == 50


def test_a_snapshot_root_scores_its_validation_split_only_and_names_it(tmp_path, capsys):
    """A Hugging Face snapshot root (data/ with train, validation and test shards): the run scores
    exactly the validation images, with the folder's answers, and says which split it read."""
    items = val50_items()[:7]
    val, train, test = items[:4], items[4:6], items[6:]
    for split, chunk in (("train", train), ("validation", val), ("test", test)):
        write_parquet(chunk, tmp_path / "snap" / "data", split=split)
    doc, preds = _run(tmp_path / "run", f"dataset.root={tmp_path / 'snap'}", "dataset.format=auto")
    assert doc["status"] == "complete"
    assert [p["id"] for p in preds] == sorted(name for name, _, _ in val)
    said = doc["provenance"]["dataset"]["dataset_split"]
    assert said["name"] == "validation" and said["found"] == ["test", "train", "validation"]
    out = capsys.readouterr().out
    assert "dataset=imagenet_val50 · split=validation" in out
    assert "Assumed:  dataset.split = validation (" in out and "else set dataset.split=test|train" in out


def test_the_same_images_as_parquet_and_webdataset_pair_by_content(tmp_path, capsys):
    """Parquet (``image.path`` X.JPEG, labels by the class-name list) and webdataset (X.jpg with an
    X.cls index, no names): the ids and the ground truth's form differ, every input hash is equal:
    ``report diff`` pairs them by content and says so (other images: tests/unit/report)."""
    from evalharness.report.commands.entry import main as report

    items = val50_items()[:6]
    write_parquet(items, tmp_path / "parquet")
    renamed = [(name.replace(".JPEG", ".jpg"), data, label) for name, data, label in items]
    pattern = write_webdataset(renamed, tmp_path / "wds")
    parquet, wds = tmp_path / "a", tmp_path / "b"
    _run(parquet, f"dataset.root={tmp_path / 'parquet'}", "dataset.format=auto")
    _run(wds, f"dataset.root='{pattern}'", "dataset.format=auto", "dataset.class_names=null")
    capsys.readouterr()
    assert report(["diff", str(parquet), str(wds), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["inputs"]["summary"].startswith("inputs identical on 6/6 images")
    first = sorted(name for name, _, _ in items)[0]
    note = f"the same 6 images, ids differ: {first} ↔ {first.replace('.JPEG', '.jpg')}"
    assert any(n.startswith(note) for n in doc["comparability"]["notes"])
    assert doc["classification"]["paired_images"] == 6


def test_a_root_whose_split_cannot_be_told_is_one_error_line(tmp_path):
    """Training and test shards and no validation split: exit 2, one ``error:`` line naming the
    splits found and the key to set, before any image is scored."""
    items = val50_items()[:2]
    write_webdataset(items[:1], tmp_path / "wds", prefix="imagenet1k-train")
    write_webdataset(items[1:], tmp_path / "wds", prefix="imagenet1k-test")
    proc = run_cli([*VAL50, MODEL, f"dataset.root={tmp_path / 'wds'}", "dataset.format=auto"], tmp_path)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert errors == [
        f"error: {tmp_path / 'wds'} holds several splits (test, train) and none of them is the validation "
        "split; set dataset.split=test|train"
    ]
