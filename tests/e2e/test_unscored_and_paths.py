"""Files a dataset root holds but a run does not score are counted by reason; output and cache
paths that are files where directories belong are one error line, exit 2 (the issue's examples)."""

from __future__ import annotations

import json
import shutil

from conftest import run_cli

from evalharness.core.paths import BUNDLED_DIR


def _errors(proc) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith("error:")]


def test_files_not_scored_are_counted_by_reason(tmp_path):
    root = tmp_path / "images"
    shutil.copytree(BUNDLED_DIR / "images", root)
    (root / ".DS_Store").write_bytes(b"x")
    (root / "notes.txt").write_text("not an image")
    (root / "thumbs").mkdir()
    shutil.copy(root / "cat.png", root / "cat.webp")  # WebP is read (same name stem, other format)
    csv = tmp_path / "labels.csv"
    csv.write_text((BUNDLED_DIR / "labels.csv").read_text() + 'cat.webp,"tabby, tabby cat"\n')
    args = [f"dataset.root={root}", f"dataset.ground_truth={csv}", f"hydra.run.dir={tmp_path / 'run'}"]
    proc = run_cli(args, tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert doc["provenance"]["dataset"]["unscored"] == {
        "extension .txt not read": 1,
        "hidden": 1,
        "subdirectory": 1,
    }
    assert doc["metrics"]["num_scored"] == 6
    # notes.txt is counted, but a text file beside the images is not warned about on every run
    (warning,) = [line for line in (proc.stdout + proc.stderr).splitlines() if "file(s) under" in line]
    assert "2 file(s) under" in warning and ".txt" not in warning


def test_run_dir_under_a_file_is_one_error_line(tmp_path):
    (tmp_path / "afile").write_text("")
    proc = run_cli([f"hydra.run.dir={tmp_path / 'afile' / 'run'}"], tmp_path)
    assert proc.returncode == 2 and len(_errors(proc)) == 1 and "Traceback" not in proc.stderr
    assert "afile" in _errors(proc)[0] and "Not a directory" in _errors(proc)[0]


def test_cache_dir_that_is_a_file_is_one_error_line(tmp_path):
    (tmp_path / "cache").write_text("")
    args = [f"paths.cache_dir={tmp_path / 'cache'}", "loop.tensor_cache=true"]
    args.append(f"hydra.run.dir={tmp_path / 'run'}")
    proc = run_cli(args, tmp_path)
    assert proc.returncode == 2 and len(_errors(proc)) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "cache" in _errors(proc)[0]
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["status"] == "failed"
