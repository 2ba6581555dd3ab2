"""``report index DIR``: one static page listing every run under DIR, filterable, with a "compare these
two" action that opens the same diff ``report diff A B --format html`` writes.

A static file cannot run a diff, so the diffs are rendered beforehand: every pair of comparable runs
(same task, images and ground truth: what ``report diff`` would not refuse), up to ``max_pairs``,
sibling runs of one sweep and the newest first, into ``index_diffs/`` beside the page; a pair whose
file is newer than both runs' metrics.json is kept, so refreshing the index (the multirun callback
does, see :mod:`.callback`) renders only new pairs. A pair beyond the limit shows the exact
``evalharness report diff`` command that writes its file, after which the page's link opens it. The
page works offline: its small script is inline (filtering, choosing two runs), nothing is fetched.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from typing import Any

from evalharness.core.atomic_io import atomic_write_text
from evalharness.core.bars import progress
from evalharness.core.boundary import describe
from evalharness.core.errors import EvalHarnessError
from evalharness.core.escape import html_text
from evalharness.report.presenters import headline
from evalharness.report.runs import ReportError, comparability, definition_of, whole_list
from evalharness.report.tracking.mapping import DEFAULT_ARTIFACTS
from evalharness.report.views.html import CSS
from evalharness.rundir.document import failed_before_results, run_dir_of
from evalharness.rundir.files import METRICS_FILE
from evalharness.rundir.reader import Run, load_run

INDEX_FILE = "index.html"
DIFFS_DIR = "index_diffs"
MAX_PAIRS = 50
SKIPPED = (DIFFS_DIR, DEFAULT_ARTIFACTS)  # the index's own diffs; MLflow's copies of tracked runs
COLUMNS = ("run", "task", "model", "delegate", "quant", "status", "headline", "date")


def find_runs(root: str) -> list[Run]:
    """Every run directory under ``root`` (a folder with metrics.json), in path order; a run's own
    folders are not searched further, and an unreadable run is listed as such rather than dropped."""
    if not os.path.isdir(root):
        raise ReportError(f"{root} is not a directory; give the folder holding your runs, e.g. outputs/")
    runs = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED and not d.startswith("."))
        if METRICS_FILE in files:
            dirs[:] = []
            rel = os.path.relpath(folder, root)
            try:
                runs.append(load_run(folder, rel))
            except EvalHarnessError as exc:
                doc = {"status": "unreadable", "error": describe(exc)}
                runs.append(Run(rel, os.path.abspath(folder), doc))
    return runs


def run_id(run: Run) -> str:
    return hashlib.sha1(run.label.encode("utf-8")).hexdigest()[:12]


def _headline(run: Run) -> str:
    if run.status in ("failed", "unreadable") or not run.task:
        return run.document.error or ""
    try:
        metrics = headline(definition_of(run), run.metrics)
    except EvalHarnessError as exc:
        return describe(exc)
    name = next(iter(metrics), None)
    return f"{name} {metrics[name]:.4f}" if name is not None and metrics[name] is not None else ""


def group_key(run: Run) -> str | None:
    """Runs with the same key can be diffed (the identity ``report.runs.comparability`` refuses on):
    the list a run's images were cut from, so a run on a held-out part groups with one on the whole
    list (``report diff`` compares the two on the images both scored)."""
    if run.status in ("failed", "unreadable") or not run.task:
        return None
    count, manifest, _ = whole_list(run)
    identity = (run.task, manifest, count, run.provenance.dataset.ground_truth_sha256)
    return "|".join(map(str, identity))


def _configured(run: Run, group: str) -> object:
    """The ``name`` of a config group as the run was configured (a failed run ran no model)."""
    return run.provenance.config.group(group).get("name")


def row(run: Run, groups: dict[str, str]) -> dict[str, Any]:
    prov = run.provenance
    return {
        "id": run_id(run),
        "run": run.label,
        "task": run.task or "",
        "model": prov.model.name or _configured(run, "model") or "",
        "delegate": prov.delegate.name or _configured(run, "delegate") or "",
        "quant": prov.model.quant.name or _configured(run, "quant") or "",
        "status": run.status,
        "headline": _headline(run),
        "date": (run.document.started_at or run.document.finished_at or "")[:19].replace("T", " "),
        "group": groups.get(group_key(run) or "", ""),
    }


def pairs(runs: list[Run]) -> list[tuple[Run, Run]]:
    """Comparable pairs (A before B in path order), siblings of one sweep first, then the newest."""
    found = [
        (a, b)
        for a, b in itertools.combinations(runs, 2)
        if group_key(a) is not None and group_key(a) == group_key(b)
    ]

    found.sort(key=lambda p: max(r.document.started_at or "" for r in p), reverse=True)
    found.sort(key=lambda p: os.path.dirname(p[0].dir) != os.path.dirname(p[1].dir))  # stable: newest first
    return found


def _fresh(path: str, a: Run, b: Run) -> bool:
    if not os.path.isfile(path):
        return False
    made = os.path.getmtime(path)
    return all(made >= os.path.getmtime(os.path.join(r.dir, METRICS_FILE)) for r in (a, b))


def render_pair(a: Run, b: Run, path: str) -> str | None:
    """``report diff A B --format html`` of the pair into ``path``; None when rendered, else why not."""
    from evalharness.report.commands.diff import build_diff
    from evalharness.report.views.diff_view import render_html

    a, b = load_run(a.dir, "A"), load_run(b.dir, "B")  # the labels report diff gives them
    comp = comparability(a, b)
    if comp.refused:
        return "; ".join(comp.refused)
    try:
        atomic_write_text(path, render_html(build_diff(a, b, comp)))
    except EvalHarnessError as exc:
        return describe(exc)
    return None


def write_index(
    root: str, output: str | None = None, max_pairs: int = MAX_PAIRS, failed: bool = False
) -> dict[str, Any]:
    """Write the index page (default ``<root>/index.html``) and its pre-rendered diffs. Records of
    runs that failed before any result (a refused config: nothing to look at, and the next run into
    the directory replaces them) are left out, and counted on the page, unless ``failed``."""
    output = output or os.path.join(root, INDEX_FILE)
    if (inside := run_dir_of(output)) is not None:
        raise ReportError(f"-o {output}: inside the run directory {inside}; write the index outside any run")
    runs = find_runs(root)
    if not runs:
        raise ReportError(f"no runs (folders with {METRICS_FILE}) under {root}")
    left_out = 0 if failed else sum(failed_before_results(r.dir, r.document) for r in runs)
    runs = runs if failed else [r for r in runs if not failed_before_results(r.dir, r.document)]
    keys = list(dict.fromkeys(k for r in runs if (k := group_key(r))))
    groups = {k: chr(ord("A") + i) if i < 26 else str(i) for i, k in enumerate(keys)}
    here = os.path.dirname(os.path.abspath(output))
    diffs = os.path.join(here, DIFFS_DIR)
    rendered, problems = {}, {}
    chosen = pairs(runs)[:max_pairs]
    with progress(len(chosen), "report index", "diff", bool(chosen)) as bar:  # a diff each: seconds
        for a, b in chosen:
            name = f"{run_id(a)}__{run_id(b)}.html"
            path = os.path.join(diffs, name)
            why = None if _fresh(path, a, b) else render_pair(a, b, path)
            if why is None:
                rendered[f"{run_id(a)}|{run_id(b)}"] = f"{DIFFS_DIR}/{name}"
            else:
                problems[f"{run_id(a)}|{run_id(b)}"] = why
            bar.update(1)
    rows = [row(r, groups) for r in runs]
    links = {r["id"]: os.path.relpath(run.dir, here) for r, run in zip(rows, runs, strict=True)}
    atomic_write_text(output, page(root, rows, links, rendered, problems, diffs, left_out))
    return {"path": output, "runs": len(rows), "diffs": rendered, "problems": problems, "left_out": left_out}


def page(
    root: str,
    rows: list[dict[str, Any]],
    links: dict[str, Any],
    rendered: dict[str, Any],
    problems: dict[str, Any],
    diffs: str,
    left_out: int = 0,
) -> str:
    head = "".join(f"<th>{html_text(c)}</th>" for c in ("", *COLUMNS, "group", "files"))
    body = []
    for r in rows:
        href = html_text(links[r["id"]])
        files = f'<a href="{href}/metrics.json">metrics.json</a> <a href="{href}/results.txt">results.txt</a>'
        cells = "".join(f"<td>{html_text(str(r[c]))}</td>" for c in COLUMNS)
        body.append(
            f'<tr data-id="{r["id"]}" data-group="{html_text(r["group"])}" data-run="{html_text(r["run"])}">'
            f'<td><input type="checkbox" aria-label="choose {html_text(r["run"])}"></td>{cells}'
            f"<td>{html_text(r['group'])}</td><td>{files}</td></tr>"
        )
    statuses = sorted({r["status"] for r in rows})
    options = "".join(f'<option value="{html_text(s)}">{html_text(s)}</option>' for s in statuses)
    data = json.dumps({"diffs": rendered, "dir": diffs}).replace("</", "<\\/")
    title = f"evalharness runs: {os.path.abspath(root)}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html_text(title)}</title><style>{CSS} tr.hidden {{ display: none; }}"
        " code { background: #f4f4f4; padding: .2em; }</style></head>\n"
        f"<body><h1>{html_text(title)}</h1>\n"
        f'<p class="note">{len(rows)} runs. Runs in the same group (same task, images and ground truth) '
        "can be compared: tick two, A first."
        + (
            f" {left_out} record(s) of runs that failed before any result left out (--failed lists them)."
            if left_out
            else ""
        )
        + "</p>\n"
        '<p><input id="filter" placeholder="filter: any text" size="40"> '
        f'<select id="status"><option value="">any status</option>{options}</select></p>\n'
        '<p id="compare" class="note">Tick two runs to compare them.</p>\n'
        f'<section id="runs"><table><thead><tr>{head}</tr></thead><tbody>\n'
        + "\n".join(body)
        + f"\n</tbody></table></section>\n<script>const INDEX = {data};\n{SCRIPT}</script>\n</body></html>\n"
    )


SCRIPT = """
const rows = Array.from(document.querySelectorAll('#runs tbody tr'));
const chosen = [];
function filter() {
  const text = document.getElementById('filter').value.toLowerCase();
  const status = document.getElementById('status').value;
  for (const r of rows) {
    const cells = r.children;
    const ok = r.textContent.toLowerCase().includes(text) && (!status || cells[6].textContent === status);
    r.classList.toggle('hidden', !ok);
  }
}
function esc(s) { const d = document.createElement('span'); d.textContent = s; return d.innerHTML; }
function compare() {
  const out = document.getElementById('compare');
  if (chosen.length !== 2) { out.textContent = 'Tick two runs to compare them.'; return; }
  const [a, b] = chosen;
  if (!a.dataset.group || a.dataset.group !== b.dataset.group) {
    out.textContent = 'These two runs cannot be compared (another task, other images or ground truth).';
    return;
  }
  const file = INDEX.diffs[a.dataset.id + '|' + b.dataset.id];
  const other = INDEX.diffs[b.dataset.id + '|' + a.dataset.id];
  const name = a.dataset.id + '__' + b.dataset.id + '.html';
  const cmd = 'evalharness report diff ' + a.dataset.run + ' ' + b.dataset.run +
    ' --format html -o ' + INDEX.dir + '/' + name;
  let html = 'A = ' + esc(a.dataset.run) + ', B = ' + esc(b.dataset.run) + ': ';
  if (file) html += '<a id="compare-link" href="' + file + '">open their diff</a>';
  else html += 'not rendered yet' + (other ? ' (<a href="' + other + '">B against A is</a>)' : '') +
    '; run <code>' + esc(cmd) + '</code> (paths relative to the indexed folder), then ' +
    '<a id="compare-link" href="' + 'index_diffs/' + name + '">open it</a>';
  out.innerHTML = html;
}
for (const r of rows) {
  r.querySelector('input').addEventListener('change', (e) => {
    if (e.target.checked) chosen.push(r); else chosen.splice(chosen.indexOf(r), 1);
    if (chosen.length > 2) chosen.shift().querySelector('input').checked = false;
    compare();
  });
}
// index.html#compare=ID_A,ID_B ticks that pair on load: a link to one comparison
for (const id of (new URLSearchParams(location.hash.slice(1)).get('compare') || '').split(',')) {
  const r = rows.find((x) => x.dataset.id === id);
  if (r) { r.querySelector('input').checked = true; chosen.push(r); }
}
compare();
document.getElementById('filter').addEventListener('input', filter);
document.getElementById('status').addEventListener('change', filter);
"""
