"""Runs written before the task plug-ins (tests/fixtures/runs_schema1) still rescore and merge."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ASSETS

from evalharness.core.paths import BUNDLED_DIR
from evalharness.report.commands import entry as cli

FIXTURE = Path(__file__).parents[1] / "fixtures" / "runs_schema1"


@pytest.fixture(scope="module")
def old(tmp_path_factory) -> Path:
    """The fixture runs with their recorded paths pointed at this checkout's files."""
    root = tmp_path_factory.mktemp("runs_schema1")
    shutil.copytree(FIXTURE, root, dirs_exist_ok=True)
    for path in root.rglob("*.json*"):
        text = path.read_text().replace("@BUNDLED@", str(BUNDLED_DIR)).replace("@ASSETS@", str(ASSETS))
        path.write_text(text.replace("@RUNS@", str(root)))
    return root


def _report(capsys, *args) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("task", ["imagenet", "coco"])
def test_old_run_rescores_exactly(old, capsys, task):
    code, out, err = _report(capsys, "rescore", old / task, "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["reproduced"] and doc["compared"] > 10, (err, doc["mismatches"])


@pytest.mark.parametrize("task", ["imagenet", "coco"])
def test_old_shards_merge_into_the_old_whole_run(old, capsys, tmp_path, task):
    code, _, err = _report(
        capsys, "merge", old / f"{task}_shard0", old / f"{task}_shard1", "--out", tmp_path / "m"
    )
    assert code == 0, err
    merged = json.loads((tmp_path / "m" / "metrics.json").read_text())
    whole = json.loads((old / task / "metrics.json").read_text())
    assert merged["metrics"] == whole["metrics"] and merged["schema_version"] == whole["schema_version"] == 1
    # the same lines; the TFLite tool's AP is now labelled as the secondary figure it is
    relabelled = (old / task / "results.txt").read_text()
    relabelled = relabelled.replace("TFLite-tool AP", "TFLite tool's AP, a secondary figure")
    assert (tmp_path / "m" / "results.txt").read_text() == relabelled


def test_old_runs_diff_says_inputs_not_recorded(old, capsys):
    """Runs from before the records' input hashes: report diff says so, never "identical"."""
    code, out, err = _report(capsys, "diff", old / "imagenet", old / "imagenet", "--format", "json")
    assert code == 0, err
    inputs = json.loads(out)["inputs"]
    assert inputs["recorded"] is False
    assert inputs["summary"] == "inputs: not recorded (runs A and B predate input hashes)"
