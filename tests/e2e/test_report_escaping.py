"""Text from files is escaped for where it is shown, on real runs: label texts, image file names and
model names carrying HTML, backticks, pipes, ESC sequences and spreadsheet formulas go through the
run summary, ``report diff`` in every format, ``report sweep``, ``analysis``, ``rescore`` and
``report export --format csv``; ``--format md`` and ``--format markdown`` give the same bytes.

Lean: three bundled sample images under hostile names, the bundled MobileNet v1 0.25 against
MobileNet v2 (so top-1 answers, and the labels that name them, change)."""

from __future__ import annotations

import contextlib
import csv
import io
import re
import shutil
from html.parser import HTMLParser

import pytest
import yaml
from conftest import MODELS, REPO, run_inprocess
from shared_runs import fake_run_dir
from test_report_classification import report

from evalharness.core.escape import terminal

SAMPLE = REPO / "datasets" / "sample"
FILES = {  # sample image -> hostile file name (no "/": a file name cannot hold one)
    "cat.png": "<img src=x onerror=alert(1)>.png",
    "chelsea.png": "\x1b[2J<svg onload=alert(1)>.png",
    "coffee.png": "=cmd|' \\C calc'!A0 ```.png",
}
LABELS = {  # ground-truth label -> hostile label text (in the model's label file and the ground truth)
    "tabby, tabby cat": "<script>alert(1)</script>",
    "Egyptian cat": "+1 \x1b]0;title\x07 `` |",
    "espresso": "@SUM(1)",
}
NAMES = ("m<svg onload=alert(1)>`x\x1b[2J", "``` | \x1b]0;title\x07")
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # a control a terminal would obey
FORMULA = ("=", "+", "-", "@", "\t", "\r")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("hostile")
    images = tmp / "images"
    images.mkdir()
    truth = [["filename", "label"]]
    for name, label in list(csv.reader((SAMPLE / "labels.csv").open()))[1:4]:
        shutil.copy(SAMPLE / "images" / name, images / FILES[name])
        truth.append([FILES[name], LABELS[label]])
    with (tmp / "truth.csv").open("w", newline="") as f:
        csv.writer(f).writerows(truth)
    lines = (SAMPLE / "imagenet_labels_1001.txt").read_text().splitlines()
    (tmp / "labels.txt").write_text("\n".join(LABELS.get(line, line) for line in lines) + "\n")
    base = ["dataset=sample", f"dataset.root={images}", f"dataset.ground_truth={tmp / 'truth.csv'}",
            f"model.labels={tmp / 'labels.txt'}", f"paths.models_dir={MODELS}"]  # fmt: skip
    runs, printed = {}, {}
    for side, model, name in (
        ("a", "mobilenet_v1_0.25_128_quant", NAMES[0]),
        ("b", "mobilenet_v2_1.0_224_quant", NAMES[1]),
    ):
        runs[side] = tmp / side
        with contextlib.redirect_stdout(io.StringIO()) as out:
            run_inprocess([*base, f"model={model}", f"model.name='{name}'"], runs[side])
        printed[side] = out.getvalue()
    sweep = tmp / "multirun"
    for n, side in enumerate("ab"):
        shutil.copytree(runs[side], sweep / str(n))
        overrides = yaml.safe_dump([f"model.name={NAMES[n]}"])
        fake_run_dir(sweep / str(n), files={".hydra/overrides.yaml": overrides})
    return {**runs, "printed": printed, "sweep": sweep, "tmp": tmp}


class _Html(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attributes = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [name for name, _ in attrs]


def safe_markdown(text: str) -> None:
    """Rendered by markdown-it-py: no live tag or event handler came from a file's text."""
    from markdown_it import MarkdownIt

    parser = _Html()
    parser.feed(MarkdownIt("commonmark").enable("table").render(text))
    assert not {"script", "img", "svg", "a", "iframe"} & set(parser.tags), parser.tags
    assert not [a for a in parser.attributes if a.startswith("on")]
    assert not RAW.search(text)


def clean_exit(code: int, err: str, expected: int = 0) -> None:
    assert code == expected and err.count("error:") <= 1 and "Traceback" not in err
    assert "internal error" not in err and not RAW.search(err)


def test_run_summary_shows_controls_never_sends_them(hostile):
    for side in "ab":
        out = hostile["printed"][side]
        results = (hostile[side] / "results.txt").read_text()
        assert "== summary" in out and "\\x1b" in out and "\\x1b" in results
        assert not RAW.search(out) and not RAW.search(results)


def test_diff_in_every_format(hostile, capsys):
    runs = (hostile["a"], hostile["b"], "--allow-different-preprocessing")
    outputs = {}
    for fmt in ("text", "markdown", "md", "json", "html"):
        code, outputs[fmt], err = report(capsys, "diff", *runs, "--format", fmt)
        clean_exit(code, err)
    assert outputs["md"] == outputs["markdown"]
    assert "<script>alert(1)</script>" in outputs["json"]  # the document keeps the true text
    assert "\\x1b" in outputs["text"] and "&lt;script&gt;" in outputs["markdown"]
    assert not RAW.search(outputs["text"])
    safe_markdown(outputs["markdown"])
    for raw in ("<script>alert", "<img src=x", "<svg onload"):
        assert raw not in outputs["html"]


def test_sweep_files_and_stdout(hostile, capsys):
    outputs = {}
    for fmt in ("text", "markdown", "md"):
        code, outputs[fmt], err = report(capsys, "sweep", hostile["sweep"], "--format", fmt)
        clean_exit(code, err)
    assert outputs["md"] == outputs["markdown"] and not RAW.search(outputs["text"])
    safe_markdown(outputs["markdown"])
    safe_markdown((hostile["sweep"] / "sweep.md").read_text())
    rows = list(csv.reader(io.StringIO((hostile["sweep"] / "sweep.csv").read_text(), newline="")))
    names = [r[rows[0].index("model.name")] for r in rows[1:]]
    shown = [terminal(n) for n in NAMES]  # a CSV cell shows its controls too (it may be printed)
    assert sorted(names) == sorted("'" + n if n.startswith(FORMULA) else n for n in shown)


@pytest.mark.parametrize("command", ["analysis", "rescore"])
def test_one_run_reports_md_is_markdown(hostile, command, capsys):
    code, md, err = report(capsys, command, hostile["a"], "--format", "md")
    clean_exit(code, err)
    assert report(capsys, command, hostile["a"], "--format", "markdown")[1] == md
    safe_markdown(md)
    code, text, err = report(capsys, command, hostile["a"])
    clean_exit(code, err)
    assert not RAW.search(text)


def test_export_csv_has_no_formula_cell(hostile, capsys):
    code, out, err = report(capsys, "export", hostile["b"], "--format", "csv")
    clean_exit(code, err)
    rows = list(csv.DictReader(io.StringIO(out, newline="")))
    texts = [v for r in rows for k, v in r.items() if k in ("id", "label")]
    shown = [terminal(t) for t in [*FILES.values(), *LABELS.values()]]  # controls shown, as on a terminal
    assert sorted(texts) == sorted(["'" + t if t.startswith(FORMULA) else t for t in shown])
    assert not [t for t in texts if t.startswith(FORMULA)]
