"""Invariants of a result, checked where it is made: a sample is scored once, a fraction is in
[0, 1] or the run says it is undefined, ground truth names each file once and holds something to
score. Each case is one a user can make by hand; none may end as a number with exit 0."""

from __future__ import annotations

import json

import pytest
from conftest import ASSETS, run_cli, run_inprocess, task_lines
from shared_runs import edit_document, fake_run_dir

from evalharness.core.errors import EvalHarnessError

COCO = ["task=coco", "dataset=coco_val5", f"paths.data_dir={ASSETS}"]
GT = ASSETS / "coco" / "instances_val5.json"


def coco_file(tmp_path, change) -> str:
    gt = json.loads(GT.read_text())
    change(gt)
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(gt))
    return str(path)


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.mark.parametrize(
    "case, change, expected",
    [
        ("no box", lambda gt: gt.update(annotations=[]), "holds no box to score against"),
        (
            "only crowd regions",
            lambda gt: [a.update(iscrowd=1) for a in gt["annotations"]],
            "holds no box to score against",
        ),
        (
            "two ids, one file",
            lambda gt: gt["images"].append({**gt["images"][0], "id": 999_999}),
            "name one file",
        ),
    ],
)
def test_coco_ground_truth_that_cannot_be_scored_is_refused(tmp_path, case, change, expected):
    annotations = coco_file(tmp_path, change)
    proc = run_cli([*COCO, f"dataset.annotations={annotations}"], cwd=tmp_path)
    assert proc.returncode == 2, case
    line = one_error_line(proc.stderr)
    assert expected in line and annotations in line


def test_an_undefined_ap_makes_the_run_invalid_not_a_score(tmp_path):
    """Boxes exist, but not on the image scored: pycocotools says -1; the run says undefined."""
    gt = json.loads(GT.read_text())
    last = max(i["id"] for i in gt["images"])
    annotations = coco_file(
        tmp_path, lambda g: g.update(annotations=[a for a in g["annotations"] if a["image_id"] == last])
    )
    run = tmp_path / "run"
    proc = run_cli([*COCO, f"dataset.annotations={annotations}", "task.num_images=1",
                    f"hydra.run.dir={run}"], cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1
    doc = json.loads((run / "metrics.json").read_text())
    assert doc["status"] == "invalid" and "AP -1.0, AP50 -1.0, AP75 -1.0: undefined" in doc["stop_reason"]
    assert task_lines(run)[0].startswith("INVALID: ")


def test_a_repeated_prediction_line_is_refused_on_resume(tmp_path):
    run_inprocess(["task.num_images=3"], tmp_path)
    edit_document(tmp_path, status="partial")
    lines = (tmp_path / "predictions.jsonl").read_text().splitlines(keepends=True)
    fake_run_dir(tmp_path, files={"predictions.jsonl": "".join([*lines, lines[0]])})
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    with pytest.raises(EvalHarnessError, match="record 4 is sample .* a second time"):
        run_inprocess(["task.num_images=3", "loop.resume=true"], tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before



def test_a_file_name_that_is_not_utf8_is_left_out_by_name(tmp_path):
    """No predictions line, manifest or report can name it: it is not scored, and the run says so."""
    folder = tmp_path / "data" / "tabby, tabby cat"
    folder.mkdir(parents=True)
    image = (ASSETS / "images").glob("*.jpg").__next__()
    (folder / "ok.jpg").write_bytes(image.read_bytes())
    with open(bytes(folder) + b"/\xffcat.jpg", "wb") as f:
        f.write(image.read_bytes())
    run = tmp_path / "run"
    proc = run_cli(["dataset=imagefolder", f"dataset.root={tmp_path / 'data'}", f"hydra.run.dir={run}"],
                   cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((run / "metrics.json").read_text())
    assert doc["metrics"]["num_scored"] == 1 and "file name not UTF-8" in proc.stdout + proc.stderr
    assert "\\\\xffcat.jpg" in json.dumps(doc["provenance"]["dataset"])


def test_file_names_with_newlines_tabs_or_250_characters_are_scored_and_read_back(tmp_path, capsys):
    from evalharness.report.commands import entry as cli

    folder = tmp_path / "data" / "tabby, tabby cat"
    folder.mkdir(parents=True)
    image = next((ASSETS / "images").glob("*.jpg")).read_bytes()
    names = ["new\nline.jpg", "tab\there.jpg", "x" * 250 + ".jpg"]
    for name in names:
        (folder / name).write_bytes(image)
    run = tmp_path / "run"
    run_inprocess(["dataset=imagefolder", f"dataset.root={tmp_path / 'data'}"], run)
    ids = [json.loads(line)["id"] for line in (run / "predictions.jsonl").read_text().splitlines()]
    assert sorted(ids) == sorted(f"tabby, tabby cat/{n}" for n in names)
    for argv in (["rescore", str(run)], ["export", str(run), "--format", "json"]):
        code = cli.main(argv)
        assert code == 0, capsys.readouterr().err
