"""Every command that writes (report diff/rescore/export ``-o``, report sweep and explain ``--out``)
against every output target a user can get wrong: a file of a run directory, a file the run read
(model, labels, ground truth), a file or folder under the dataset root, a directory where a file
belongs, a full file system and a read-only one. Whatever the target: exit 2 with one ``error:``
line, no traceback, and every file of the runs and of their inputs byte-identical afterwards."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import run_inprocess

from evalharness.core.paths import BUNDLED_DIR
from evalharness.explain.__main__ import main as explain_main
from evalharness.report.commands import entry as report_cli

FILE_COMMANDS = {
    "diff": lambda w, t: ["diff", w["a"], w["b"], "-o", t],
    "rescore": lambda w, t: ["rescore", w["a"], "-o", t],
    "export": lambda w, t: ["export", w["a"], "-o", t],
}
DIR_COMMANDS = {
    "sweep": lambda w, t: ["report", "sweep", w["sweep"], "--out", t],
    "explain": lambda w, t: ["explain", w["a"], w["b"], "--out", t],
}
FILE_TARGETS = {
    "run metrics.json": lambda w: w["a"] / "metrics.json",
    "run predictions.jsonl": lambda w: w["a"] / "predictions.jsonl",
    "run results.txt": lambda w: w["b"] / "results.txt",
    "the model": lambda w: w["inputs"] / "model.tflite",
    "the labels": lambda w: w["inputs"] / "labels.txt",
    "the ground truth": lambda w: w["inputs"] / "labels.csv",
    "an image": lambda w: w["inputs"] / "images" / "cat.png",
    "a new file in the dataset root": lambda w: w["inputs"] / "images" / "report.txt",
    "a directory": lambda w: w["inputs"],
}
DIR_TARGETS = {
    "the dataset root": lambda w: w["inputs"] / "images",
    "a folder in the dataset root": lambda w: w["inputs"] / "images" / "reports",
    "the model file": lambda w: w["inputs"] / "model.tflite",
}


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict:
    """Two runs of the bundled sample, every input a copy of the test's own."""
    root = tmp_path_factory.mktemp("targets")
    inputs = root / "inputs"
    shutil.copytree(BUNDLED_DIR / "images", inputs / "images")
    shutil.copy(BUNDLED_DIR / "mobilenet_v1_0.25_128_quant.tflite", inputs / "model.tflite")
    shutil.copy(BUNDLED_DIR / "imagenet_labels_1001.txt", inputs / "labels.txt")
    shutil.copy(BUNDLED_DIR / "labels.csv", inputs / "labels.csv")
    overrides = [
        f"model.path={inputs / 'model.tflite'}",
        f"model.labels={inputs / 'labels.txt'}",
        f"dataset.root={inputs / 'images'}",
        f"dataset.ground_truth={inputs / 'labels.csv'}",
    ]
    w = {"inputs": inputs, "a": root / "sweep" / "0_a", "b": root / "sweep" / "1_b", "sweep": root / "sweep"}
    run_inprocess(overrides, w["a"])
    run_inprocess([*overrides, "delegate=reference"], w["b"])
    return w


def snapshot(w: dict) -> dict[str, bytes]:
    folders = (w["inputs"], w["a"], w["b"])
    return {str(p): p.read_bytes() for f in folders for p in sorted(Path(f).rglob("*")) if p.is_file()}


def run_command(argv: list, capsys) -> tuple[int, str]:
    argv = [str(a) for a in argv]
    if argv[0] == "explain":
        code = explain_main(argv[1:])
    else:
        code = report_cli.main(argv[1:] if argv[0] == "report" else argv)
    return code, capsys.readouterr().err


def assert_refused(code: int, err: str, target) -> None:
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(lines) == 1 and str(target) in lines[0], err
    assert "Traceback" not in err and "internal error" not in err, err


CASES = [("file", c, t) for c in FILE_COMMANDS for t in FILE_TARGETS]
CASES += [("folder", c, t) for c in DIR_COMMANDS for t in DIR_TARGETS]


@pytest.mark.parametrize("kind, command, target", CASES)
def test_wrong_output_targets(world, kind, command, target, capsys):
    commands, targets = (FILE_COMMANDS, FILE_TARGETS) if kind == "file" else (DIR_COMMANDS, DIR_TARGETS)
    before = snapshot(world)
    path = targets[target](world)
    assert_refused(*run_command(commands[command](world, path), capsys), path)
    assert snapshot(world) == before
    assert not any((world["inputs"] / "images" / n).exists() for n in ("report.txt", "reports"))


@pytest.fixture(params=["full", "read-only"])
def hostile_fs(request, tmp_path):
    """A tmpfs that is full, or mounted read-only (root only; skipped elsewhere, saying why)."""
    mount = tmp_path / "fs"
    mount.mkdir()
    options = "size=64k" if request.param == "full" else "ro,size=64k"
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip() or 'not root'})")
    if request.param == "full":
        subprocess.run(["dd", "if=/dev/zero", f"of={mount / 'filler'}", "bs=4k"], capture_output=True)
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


@pytest.mark.parametrize("command", FILE_COMMANDS)
def test_a_full_or_read_only_file_system(world, command, hostile_fs, capsys):
    before = snapshot(world)
    path = hostile_fs / "report.txt"
    code, err = run_command(FILE_COMMANDS[command](world, path), capsys)
    assert_refused(code, err, path)
    assert ("disk is full" in err) or ("read-only" in err), err
    assert snapshot(world) == before
