"""``--format md`` (diff and sweep as a pull-request comment) and ``report export`` on real runs:
MobileNet v2 quant on val50 and SSD MobileNet v1 on COCO val25, reference kernels vs the CPU path."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import shutil

import pytest
from conftest import ASSETS, MODELS, VAL50, runs_fixture
from shared_runs import fake_run_dir
from test_report_classification import FLIPPED, MODEL, report

from evalharness.core.escape import md_text
from evalharness.report.commands.export import METRIC_PREFIX
from evalharness.report.presenters import headline as presented_headline
from evalharness.report.runs import definition_of
from evalharness.rundir.reader import load_run

COCO = [f"paths.models_dir={MODELS}", f"paths.data_dir={ASSETS}", "task=coco", "dataset=coco_val25"]
DELIMITER = re.compile(r"^\|(\s*:?-+:?\s*\|)+$")
UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


val50 = runs_fixture([*VAL50, MODEL], {d: [f"delegate={d}"] for d in ("reference", "cpu")})
coco = runs_fixture(COCO, {d: [f"delegate={d}"] for d in ("reference", "cpu")})


def rendered_tables(text: str) -> list[list[int]]:
    """The tables a real CommonMark + GFM-tables renderer (markdown-it-py) finds: per table, the
    cell count of each row. A broken table renders as a paragraph and is simply not found."""
    from markdown_it import MarkdownIt

    tables, row = [], None
    for token in MarkdownIt("commonmark").enable("table").parse(text):
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            row = 0
        elif token.type in ("th_open", "td_open"):
            row += 1
        elif token.type == "tr_close":
            tables[-1].append(row)
    return tables


def check_markdown(text: str) -> dict[str, str]:
    """Structure GitHub needs: tables whose rows all have the header's cell count and no raw ``|``
    in a cell, after a blank line, each one rendered as a table by markdown-it-py; balanced
    ``<details>`` blocks with a summary and a blank line before their Markdown. Returns
    {summary: body} of the blocks."""
    tables = rendered_tables(text)
    found = sum(1 for a, b in zip(text.splitlines(), text.splitlines()[1:], strict=False)
                if a.startswith("|") and DELIMITER.match(b))  # fmt: skip
    assert len(tables) == found and all(len(set(t)) == 1 for t in tables), tables
    lines = text.splitlines()
    assert text.endswith("\n") and lines[0].strip() and lines[1] == ""
    i, depth, blocks, current = 0, 0, {}, None
    while i < len(lines):
        line = lines[i]
        if line == "<details>":
            depth += 1
            assert depth == 1, "nested details"
            summary = re.fullmatch(r"<summary>(.+)</summary>", lines[i + 1])
            assert summary and lines[i + 2] == "", lines[i : i + 3]
            current = summary[1]
            blocks[current] = ""
            i += 3
            continue
        if line == "</details>":
            depth -= 1
            assert depth == 0 and lines[i - 1] == ""
            current = None
        elif current is not None:
            blocks[current] += line + "\n"
        if line.startswith("|"):
            assert lines[i - 1] == "" and DELIMITER.match(lines[i + 1]), lines[i - 1 : i + 2]
            width = len(UNESCAPED_PIPE.findall(line))
            assert len(UNESCAPED_PIPE.findall(lines[i + 1])) == width
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                row = lines[i]
                assert row.endswith("|") and len(UNESCAPED_PIPE.findall(row)) == width, row
                if current is not None:
                    blocks[current] += row + "\n"
                i += 1
            continue
        i += 1
    assert depth == 0
    return blocks


def cells(text: str, first: str) -> list[str]:
    """The cells of the first table row whose first cell is ``first``."""
    row = next(line for line in text.splitlines() if line.startswith(f"| {first} |"))
    return [c.strip() for c in UNESCAPED_PIPE.split(row)[1:-1]]


def diff_json(capsys, a, b) -> dict:
    return json.loads(report(capsys, "diff", a, b, "--format", "json")[1])


def test_classification_diff_md_gate_line_first_and_changes_folded(val50, capsys):
    a, b = val50["reference"], val50["cpu"]
    doc = diff_json(capsys, a, b)
    code, md, err = report(
        capsys, "diff", a, b, "--format", "md", "--fail-if", "top1<-0.005", "--fail-if", "top1_ci_high<-0.005"
    )
    assert code == 1 and err.startswith("regression: top1<-0.005")
    first = md.splitlines()[0]
    assert first.startswith("**Gate: FAILED** (1 of 2 rules) — `top1<-0.005`: top1 0.76 -&gt; 0.74")
    assert first.endswith(f"**Verdict:** {md_text(doc['verdict'])}")
    blocks = check_markdown(md)
    low, high = doc["classification"]["delta_top1_interval"]  # the diff's own interval, as shown
    assert cells(md, "top1") == ["top1", "0.7600", "0.7400", "-0.0200", f"[{low:+.4f}, {high:+.4f}]", "—"]
    changes = blocks["Top-1 changes (2)"]
    assert all(image in changes for image in FLIPPED) and "A right -&gt; B wrong" in changes
    assert "ILSVRC2012_val" not in md.split("<details>")[0]  # the per-image list is folded
    assert "| top1_ci_high&lt;-0.005 |" in md and md.count("**FAIL**") == 1

    code, md, _ = report(capsys, "diff", a, b, "--format", "md", "--fail-if", "top1_ci_high<-0.005")
    assert code == 0 and md.startswith("**Gate: passed** (1 rule) · **Verdict:** B is not significantly")
    check_markdown(md)
    code, md, _ = report(capsys, "diff", a, b, "--format", "md")
    assert code == 0 and md.splitlines()[0] == f"**Verdict:** {md_text(doc['verdict'])}" and "Gate" not in md
    check_markdown(md)


def test_coco_diff_md_shows_the_paired_bootstrap_of_the_diff(coco, capsys):
    a, b = coco["reference"], coco["cpu"]
    boot = diff_json(capsys, a, b)["detection"]["paired_bootstrap"]
    code, md, _ = report(
        capsys, "diff", a, b, "--format", "md", "--fail-if", "AP<-0.01", "--max-rows", "5", "--min-score", "0"
    )  # every box compared: the 8 images with any changed box
    assert code == 1 and md.startswith("**Gate: FAILED** (1 of 1 rule) — `AP<-0.01`: AP 0.267")
    blocks = check_markdown(md)
    for name in ("AP", "AP50", "AP75"):
        low, high = boot[name]["interval"]
        row = cells(md, name)
        assert row[4] == f"[{low:+.4f}, {high:+.4f}]" and row[5] == format(boot[name]["p"], ".3g")
    per_class = next(body for summary, body in blocks.items() if summary.startswith("Per-class AP"))
    rows = [r for r in per_class.splitlines() if r.startswith("| ") and not r.startswith("| class |")]
    assert len([r for r in rows if "(" in r]) == 5
    assert "more (all of them in --format json)" in per_class
    assert any(s.startswith("Images with changed boxes (8)") for s in blocks)


def test_sweep_md_is_a_comment_on_stdout(val50, tmp_path, capsys):
    sweep = tmp_path / "multirun"
    for n, delegate in enumerate(("cpu", "reference")):
        job = sweep / str(n)
        shutil.copytree(val50[delegate], job)
        fake_run_dir(job, files={".hydra/overrides.yaml": f"- delegate={delegate}\n- {MODEL}\n"})
    code, md, err = report(capsys, "sweep", sweep, "--format", "md", "--baseline", "delegate=cpu")
    assert code == 0 and "wrote" not in md and f"wrote {sweep / 'sweep.md'}" in err
    assert md.splitlines()[0] == "**Sweep: 2 jobs, 2 complete**"
    blocks = check_markdown(md)
    cpu = load_run(str(val50["cpu"]), "A").metrics
    low, high = cpu["intervals"]["top1"]
    assert cells(md, "cpu")[:3] == ["cpu", "complete", f"{cpu['top1']:.4f} [{low:.4f}, {high:.4f}]"]
    assert "Runs (2 rows)" in blocks and any("agreement" in s for s in blocks)


def expected_cell(value) -> str:
    return "" if value is None else value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def pandas_value(value):
    """A cell as plain Python: pandas gives arrays (of arrays) for lists, NaN for a null number."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, list):
        return [pandas_value(v) for v in value]
    return None if isinstance(value, float) and math.isnan(value) else value


DETECTION = [f"detections.{n}" for n in ("category_id", "score", "x", "y", "w", "h")]


def exported_rows(which: str, records: list[dict]) -> list[dict]:
    """The rows an export holds: a classifier's records as they are, a detector's one per detection
    (an image without any keeps one row, its detection columns null)."""
    if which != "coco":
        return records
    return [
        {**{k: v for k, v in r.items() if k != "detections"}, **dict(zip(DETECTION, d, strict=True))}
        for r in records
        for d in (r["detections"] or [[None] * len(DETECTION)])
    ]


@pytest.mark.parametrize("which", ["val50", "coco"])
def test_export_reads_back_as_the_runs_predictions(which, request, tmp_path, capsys):
    run_dir = request.getfixturevalue(which)["cpu"]
    run = load_run(str(run_dir), "RUN")
    records, headline = run.predictions, presented_headline(definition_of(run), run.metrics)
    assert records and all(not isinstance(v, dict) for r in records for v in r.values())
    records = exported_rows(which, records)
    assert which != "coco" or len(records) > len(run.predictions)  # several detections an image

    code, _, err = report(capsys, "export", run_dir, "--format", "csv", "-o", tmp_path / "run.csv")
    assert code == 0 and err == f"wrote {tmp_path / 'run.csv'}\n"
    rows = list(csv.DictReader(io.StringIO((tmp_path / "run.csv").read_text(encoding="utf-8"))))
    assert [r["id"] for r in rows] == [r["id"] for r in records]
    for row, record in zip(rows, records, strict=True):
        assert {k: v for k, v in row.items() if not k.startswith(METRIC_PREFIX)} == {
            k: expected_cell(v) for k, v in record.items()
        }
        assert all(json.loads(row[k]) == v for k, v in record.items() if not isinstance(v, str | None))
        metrics = {k.removeprefix(METRIC_PREFIX): v for k, v in row.items() if k.startswith(METRIC_PREFIX)}
        assert {k: json.loads(v) for k, v in metrics.items()} == headline

    code, out, _ = report(capsys, "export", run_dir, "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["rows"] == records and doc["metrics"] == headline
    assert doc["run"]["task"] == run.task and doc["columns"] == list(rows[0])[: len(doc["columns"])]

    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    code, _, err = report(capsys, "export", run_dir, "--format", "parquet", "-o", tmp_path / "run.parquet")
    assert code == 0, err
    frame = pd.read_parquet(tmp_path / "run.parquet")
    assert list(frame.columns) == list(rows[0])
    for row, record in zip(frame.to_dict("records"), records, strict=True):
        plain = {k: pandas_value(v) for k, v in row.items()}  # pandas: a null in a number column is NaN
        assert {k: plain[k] for k in record} == record
        metrics = {k.removeprefix(METRIC_PREFIX): v for k, v in plain.items() if k.startswith(METRIC_PREFIX)}
        assert metrics == headline
    code, _, err = report(capsys, "export", run_dir, "--format", "parquet")
    assert code == 2 and err.count("error:") == 1 and "give -o FILE.parquet" in err


def test_export_never_overwrites_a_run_file(val50, tmp_path, capsys):
    run_dir = val50["cpu"]
    before = (run_dir / "metrics.json").read_bytes()
    for target in (run_dir / "metrics.json", run_dir / "predictions.jsonl"):
        code, out, err = report(capsys, "export", run_dir, "-o", target)
        assert code == 2 and out == "" and len(err.splitlines()) == 1
        assert err.startswith(f"error: -o {target}: refusing to overwrite") and str(run_dir) in err
    assert (run_dir / "metrics.json").read_bytes() == before
    outside = tmp_path / "export.json"
    for _ in range(2):  # a file outside any run directory is replaced, atomically
        assert report(capsys, "export", run_dir, "--format", "json", "-o", outside)[0] == 0
    assert json.loads(outside.read_text())["rows"]
    code, _, err = report(capsys, "export", tmp_path / "nothing")
    assert code == 2 and err.startswith("error: run RUN: no metrics.json at") and len(err.splitlines()) == 1
