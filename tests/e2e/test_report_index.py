"""``report index``: a folder of 20 runs (two real runs, copied as a history of runs, one of them a
failed record) becomes one page that renders in headless Chromium, and its compare link opens the
very diff ``report diff A B --format html`` writes."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import run_inprocess
from shared_runs import fake_run_dir
from test_report_classification import report
from test_report_sweep import dump_dom

from evalharness.rundir.document import failure_document


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """outputs/ with 20 runs: copies of a real cpu and a real reference run (the bundled sample),
    each with its own date, the last one a failed record."""
    tmp = tmp_path_factory.mktemp("index")
    real = {}
    for delegate in ("cpu", "reference"):
        real[delegate] = tmp / "real" / delegate
        run_inprocess([f"delegate={delegate}"], real[delegate])
    root = tmp / "outputs"
    for i in range(20):
        delegate = ("cpu", "reference")[i % 2]
        model = "mobilenet_v1_0.25_128_quant"
        run_dir = root / "imagenet" / model / delegate / f"2026-11-{i + 1:02d}_10-00-00"
        shutil.copytree(real[delegate], run_dir)
        doc = json.loads((run_dir / "metrics.json").read_text())
        doc["started_at"] = f"2026-11-{i + 1:02d}T10:00:00+00:00"
        if i == 19:
            doc = failure_document("a failed job", doc["provenance"]["config"], [])
        fake_run_dir(run_dir, doc)
    return root


def test_index_lists_every_run_and_its_compare_link_is_report_diff(outputs, capsys, tmp_path):
    code, out, err = report(capsys, "index", outputs, "--max-pairs", "5")
    assert code == 0, err
    assert f"wrote {outputs / 'index.html'}: 20 runs, 5 diffs ready to open" in out
    assert "report index:" in err and "diff" in err  # its progress on stderr, a diff at a time
    page = (outputs / "index.html").read_text()
    data = json.loads(page.split("const INDEX = ")[1].split(";\n")[0])
    pair, link = next(iter(data["diffs"].items()))
    ids = pair.split("|")
    runs = {i: page.split(f'data-id="{i}" data-group="')[1].split('data-run="')[1].split('"')[0] for i in ids}
    dom = dump_dom(outputs / "index.html", tmp_path)
    assert dom.count('<tr data-id="') == 20 and ">failed<" in dom and "top1 0.6000" in dom
    ticked = dump_dom(outputs / "index.html", tmp_path, fragment=f"#compare={ids[0]},{ids[1]}")
    assert f'<a id="compare-link" href="{link}">open their diff</a>' in ticked
    target = tmp_path / "diff.html"
    code, _, err = report(capsys, "diff", outputs / runs[ids[0]], outputs / runs[ids[1]], "--format", "html",
                          "-o", target)  # fmt: skip
    assert code == 0, err
    assert (outputs / link).read_text() == target.read_text()


def test_refresh_keeps_fresh_diffs_and_refuses_a_run_dir(outputs, capsys):
    before = {p.name: p.stat().st_mtime_ns for p in (outputs / "index_diffs").iterdir()}
    code, _, _ = report(capsys, "index", outputs, "--max-pairs", "5")
    assert code == 0
    assert {p.name: p.stat().st_mtime_ns for p in (outputs / "index_diffs").iterdir()} == before
    run_dir = next(outputs.glob("imagenet/*/cpu/*"))
    code, _, err = report(capsys, "index", outputs, "-o", run_dir / "index.html")
    assert code == 2 and err.count("error:") == 1 and "inside the run directory" in err
    code, _, err = report(capsys, "index", outputs / "nowhere")
    assert code == 2 and "is not a directory" in err


def test_records_of_runs_that_failed_before_any_result_are_left_out_unless_asked(outputs, capsys, tmp_path):
    root = tmp_path / "outputs"
    real = next(p.parent for p in sorted(outputs.rglob("metrics.json")))
    shutil.copytree(real, root / "real")
    refused = root / "refused"  # a config error's record: no metrics, no predictions
    fake_run_dir(refused, failure_document("task.num_images=500: ...", {}, []))
    code, out, _ = report(capsys, "index", root, "--max-pairs", "0")
    assert code == 0 and "1 runs, 0 diffs ready to open; 1 record(s) of runs that failed before any" in out
    assert "--failed lists them" in (root / "index.html").read_text()
    code, out, _ = report(capsys, "index", root, "--max-pairs", "0", "--failed")
    assert code == 0 and out.strip().endswith("2 runs, 0 diffs ready to open")
