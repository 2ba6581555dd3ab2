"""Sweep reports of real multiruns: written by the Hydra callback, reproduced by ``report sweep``."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
import textwrap

import pytest
from conftest import VAL50, run_cli
from test_report_classification import report

MODELS = "model=mobilenet_v1_0.25_128_quant,mobilenet_v2_1.0_224_quant"
CALLBACK = "hydra/callbacks=sweep_report"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--enable-logging=stderr",
]


def multirun(tmp_path, *overrides: str):
    sweep_dir = tmp_path / "multirun"
    proc = run_cli(["-m", *VAL50, *overrides, CALLBACK, f"hydra.sweep.dir={sweep_dir}"], cwd=tmp_path)
    return proc, sweep_dir


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """2 models x 2 delegates on 10 images, with the sweep-report callback enabled."""
    proc, sweep_dir = multirun(
        tmp_path_factory.mktemp("sweep"), MODELS, "delegate=cpu,reference", "task.num_images=10"
    )
    assert proc.returncode == 0, proc.stderr
    return proc, sweep_dir


def rows(path) -> list[dict]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def test_callback_writes_the_sweep_table(sweep):
    proc, sweep_dir = sweep
    assert f"sweep report: {sweep_dir / 'sweep.md'}" in proc.stdout
    table = rows(sweep_dir / "sweep.csv")
    assert [(r["model"], r["delegate"]) for r in table] == [
        ("mobilenet_v1_0.25_128_quant", "cpu"),
        ("mobilenet_v1_0.25_128_quant", "reference"),
        ("mobilenet_v2_1.0_224_quant", "cpu"),
        ("mobilenet_v2_1.0_224_quant", "reference"),
    ]
    assert list(table[0])[:4] == ["run", "model", "delegate", "status"]  # only parameters that vary
    assert {r["status"] for r in table} == {"complete"} and {r["num_scored"] for r in table} == {"10"}
    assert float(table[0]["size_MB"]) == 0.525598 and float(table[1]["coverage"]) == 0
    assert all(0 <= float(r["top1"]) <= 1 and float(r["latency_p50_ms"]) > 0 for r in table)
    assert "| mobilenet_v2_1.0_224_quant | reference | complete |" in (sweep_dir / "sweep.md").read_text()
    # the callback refreshed the run index (the sweep dir's own: it lies outside outputs/)
    assert f"run index: {sweep_dir / 'index.html'}" in proc.stdout
    assert (sweep_dir / "index.html").read_text().count('<tr data-id="') == 4
    # report export's per-run columns too, by the same names
    assert [c for c in table[0] if c.startswith("metric.")] == [f"metric.top{k}" for k in range(1, 11)]
    assert all(r["metric.top1"] == r["top1"] for r in table)


def test_report_sweep_reproduces_the_callback_files(sweep, capsys, tmp_path):
    _, sweep_dir = sweep
    code, out, _ = report(capsys, "sweep", sweep_dir, "--out", tmp_path)
    assert code == 0 and f"wrote {tmp_path / 'sweep.csv'}" in out
    for name in ("sweep.csv", "sweep.md", "sweep.html"):
        assert (tmp_path / name).read_text() == (sweep_dir / name).read_text(), name


def test_baseline_adds_change_columns(sweep, capsys, tmp_path):
    _, sweep_dir = sweep
    code, _, _ = report(capsys, "sweep", sweep_dir, "--out", tmp_path, "--baseline", "delegate=cpu")
    assert code == 0
    table = rows(tmp_path / "sweep.csv")
    cpu, ref = table[2], table[3]
    # a run is never compared with itself: the baseline rows have no change and no speed-up
    assert (cpu["d_top1"], cpu["speedup_p50"], cpu["d_latency_p50_pct"]) == ("", "", "")
    assert float(ref["d_top1"]) == pytest.approx(float(ref["top1"]) - float(cpu["top1"]))
    assert float(ref["speedup_p50"]) == pytest.approx(
        float(cpu["latency_p50_ms"]) / float(ref["latency_p50_ms"])
    )
    # The change's interval is the paired one of `report diff` on the same pair, never the
    # difference of the two runs' own interval bounds.
    code, out, _ = report(capsys, "diff", sweep_dir / cpu["run"], sweep_dir / ref["run"], "--format", "json")
    paired = json.loads(out)["classification"]
    assert code == 0 and [float(ref["d_top1_ci_low"]), float(ref["d_top1_ci_high"])] == pytest.approx(
        paired["delta_top1_interval"], abs=1e-9
    )
    assert float(ref["d_top1_ci_low"]) <= float(ref["d_top1"]) <= float(ref["d_top1_ci_high"])
    # the jobs ran one after another: the speed-up is marked sequential, with no interval
    assert cpu["d_top1_ci_low"] == "" and "speedup_p50_ci_low" not in ref
    assert "measured sequentially" in (tmp_path / "sweep.md").read_text()
    md_args = ("--out", tmp_path / "md", "--format", "md", "--baseline", "delegate=cpu")
    code, md, _ = report(capsys, "sweep", sweep_dir, *md_args)
    assert code == 0 and f"{float(ref['d_top1']):+.4f} [{float(ref['d_top1_ci_low']):+.4f}, " in md
    code, _, err = report(capsys, "sweep", sweep_dir, "--out", tmp_path, "--baseline", "delegate=xnnpack")
    assert code == 2 and "no job of this sweep has these values" in err
    code, _, err = report(capsys, "sweep", sweep_dir, "--out", tmp_path, "--baseline", "runtime=litert")
    assert code == 2 and "not a parameter that varies" in err


def test_failed_jobs_are_listed_not_dropped(tmp_path):
    proc, sweep_dir = multirun(
        tmp_path, "model=mobilenet_v1_0.25_128_quant", "delegate=cpu,nnapi", "task.num_images=5"
    )
    assert proc.returncode == 1  # the multirun reports its failed job; the callback still writes the table
    cpu, nnapi = rows(sweep_dir / "sweep.csv")
    assert (cpu["delegate"], cpu["status"], cpu["error"]) == ("cpu", "complete", "")
    assert (nnapi["delegate"], nnapi["status"], nnapi["top1"]) == ("nnapi", "failed", "")
    assert nnapi["error"].startswith("NNAPI is Android-only")
    assert "1 not complete" in (sweep_dir / "sweep.md").read_text()


def dump_dom(page, tmp_path, fragment: str = "") -> str:
    """The DOM headless Chromium builds from ``page`` (+ a ``#fragment``); fails on a crash or a script
    error."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium is not on PATH (apt-get install -y chromium): HTML not rendered")
    profile = f"--user-data-dir={tmp_path / 'chromium'}"
    proc = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, profile, "--dump-dom", page.as_uri() + fragment],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Uncaught" not in proc.stderr
    return proc.stdout


def test_sweep_and_diff_html_render_in_headless_chromium(sweep, capsys, tmp_path):
    _, sweep_dir = sweep
    dom = dump_dom(sweep_dir / "sweep.html", tmp_path)
    runs_section = dom.split('<section id="sweep">')[1].split("</section>")[0]
    assert runs_section.count("<tr>") == 5  # header + 4 runs
    # the scatter and (since the per-image views) the latency distributions
    assert dom.count("<svg") == 2 and "top1 against latency p50" in dom
    jobs = sorted(p for p in sweep_dir.iterdir() if p.is_dir())
    target = tmp_path / "diff.html"
    code, _, _ = report(capsys, "diff", jobs[0], jobs[1], "--format", "html", "-o", target)
    assert code == 0
    dom = dump_dom(target, tmp_path)
    for key in ("runs", "metrics", "latency", "paired", "per_class", "confusion", "flips", "verdict"):
        assert f'<section id="{key}">' in dom
    assert dom.count("<svg") == 1 and "B is not significantly different from A" in dom


def test_report_commands_never_load_the_runtime(sweep, tmp_path):
    """diff, rescore and sweep on real runs, in a fresh interpreter: no LiteRT, TF or runtime module."""
    _, sweep_dir = sweep
    jobs = [str(p) for p in sorted(p for p in sweep_dir.iterdir() if p.is_dir())]
    code = textwrap.dedent(
        f"""
        import json, sys
        from evalharness.report.commands import entry as cli
        for argv in (
            ["diff", {jobs[0]!r}, {jobs[1]!r}, "--format", "html", "-o", {str(tmp_path / "d.html")!r}],
            ["rescore", {jobs[2]!r}],
            ["sweep", {str(sweep_dir)!r}, "--out", {str(tmp_path)!r}],
        ):
            assert cli.main(argv) == 0, argv
        roots = ("ai_edge_litert", "tensorflow", "evalharness.runtime")
        live = [m for m in sys.modules if m.startswith("evalharness.tasks.") and m.endswith(".live")]
        print(json.dumps(sorted([*live, *(m for m in sys.modules if m.startswith(roots))])))
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == []


def test_html_without_matplotlib_has_tables_and_says_how_to_get_plots(sweep, tmp_path):
    _, sweep_dir = sweep
    code = (
        "import sys; sys.modules['matplotlib'] = None  # import matplotlib now raises ImportError\n"
        "from evalharness.report.commands import entry as cli\n"
        f"sys.exit(cli.main(['sweep', {str(sweep_dir)!r}, '--out', {str(tmp_path)!r}]))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "sweep.html").read_text()
    assert "<svg" not in page and "plots need matplotlib: pip install 'evalharness[report]'" in page
    assert (tmp_path / "sweep.csv").read_text() == (sweep_dir / "sweep.csv").read_text()
