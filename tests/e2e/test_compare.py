"""``evalharness compare``: one table over real runs, whose Δ interval is ``report diff``'s, an
interleaved speed-up, and the exit-code contract (2: nothing ran; 1: a candidate did not complete)."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys

import cli_fork
import pytest
from conftest import ASSETS, MODELS

from evalharness.report.commands.entry import main as report_main
from evalharness.run.compare import main as compare_main

QUICK = ["--rounds", "4", "--min-invokes", "1", "--min-secs", "0", "--block-secs", "0.01"]
COMMON = [f"paths.models_dir={MODELS}", "loop.progress=false"]


def _cli(args: list[str], cwd) -> subprocess.CompletedProcess:
    return cli_fork.run([sys.executable, "-m", "evalharness", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)  # fmt: skip


def test_compare_table_uses_report_diffs_paired_interval(tmp_path, capsys):
    out = tmp_path / "cmp"
    done = _cli(["compare", "delegate=cpu,gpu", *COMMON, "--out", str(out), *QUICK], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Compare" in done.stdout and "cpu" in done.stdout and "gpu" in done.stdout
    doc = json.loads((out / "compare.json").read_text())
    base, gpu = doc["rows"]
    assert [base["status"], gpu["status"]] == ["complete", "complete"]
    assert gpu["speed_source"] == "interleaved" and gpu["speedup_interval"] is not None
    assert doc["interleaved"]["block_order"][:4] == [0, 1, 1, 0]
    runs = sorted(p for p in out.iterdir() if (p / "metrics.json").is_file())
    assert report_main(["diff", str(runs[0]), str(runs[1]), "--format", "json"]) == 0  # `report diff A B`
    paired = json.loads(capsys.readouterr().out)["classification"]["delta_top1_interval"]
    assert gpu["delta_interval"] == pytest.approx(paired, abs=0)
    shown = f"[{paired[0]:+.4f}, {paired[1]:+.4f}]"
    assert shown in done.stdout  # the table prints the same interval
    with open(out / "sweep.csv", newline="") as f:  # and the sweep files (report sweep --baseline)
        sweep_gpu = next(r for r in csv.DictReader(f) if r["delegate"] == "gpu")
    assert [float(sweep_gpu["d_top1_ci_low"]), float(sweep_gpu["d_top1_ci_high"])] == pytest.approx(paired)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["delegate=cpu"], "two or more candidates"),
        (["delegate=cpu,gpux"], "unknown delegate 'gpux'"),
        (["delegate=cpu,cpu"], "given twice"),
        (["delegate=cpu,gpu", "delegate.num_threads=1,2"], "one key"),
        (["delegate.num_threadz=1,2"], "num_threadz: unknown key"),
        (["delegate.num_threads=2,0"], "candidate delegate.num_threads=0"),
        (["delegat=cpu,gpu"], "candidate delegat=cpu"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(tmp_path, capsys, args, words):
    code = compare_main([*args, *COMMON, "--out", str(tmp_path / "cmp")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error:") and words in err[0], err
    assert not (tmp_path / "cmp").exists()  # nothing ran


def test_a_candidate_that_stops_is_a_row_and_exit_1(tmp_path):
    root = tmp_path / "images"
    root.mkdir()
    shutil.copy(ASSETS / "images" / "parrot.jpg", root / "a_parrot.jpg")
    (root / "b_empty.jpg").write_bytes(b"")
    (root / "gt.csv").write_text('filename,label\na_parrot.jpg,"macaw"\nb_empty.jpg,"macaw"\n')
    ground = [f"dataset.root={root}", f"dataset.ground_truth={root / 'gt.csv'}", "dataset.format=csv"]
    out = tmp_path / "cmp"
    args = ["compare", "loop.strict=false,true", *ground, *COMMON, "--out", str(out), "--no-interleave"]
    done = _cli(args, tmp_path)
    assert done.returncode == 1, done.stderr[-2000:]
    rows = json.loads((out / "compare.json").read_text())["rows"]
    assert [r["status"] for r in rows] == ["complete", "partial"]
    assert "partial" in done.stdout and "b_empty.jpg" in done.stdout


def test_compare_shows_its_candidates_progress_on_stderr(tmp_path):
    """The runs' own output goes to runs.log; a bar on stderr counts the candidates and names the one
    running (loop.progress, on by default); stdout keeps the table."""
    out = tmp_path / "cmp"
    args = ["compare", "delegate=cpu,reference", "task.num_images=2", "--out", str(out), "--no-interleave"]
    done = _cli([*args, f"paths.models_dir={MODELS}"], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "compare:" in done.stderr and "candidate" in done.stderr and "running delegate=cpu" in done.stderr
    assert "running delegate=" not in done.stdout and "Traceback" not in done.stderr
    quiet = _cli([*args, f"paths.models_dir={MODELS}", "loop.progress=false"], tmp_path)  # resumes: all done
    assert quiet.returncode == 0 and "compare:" not in quiet.stderr
