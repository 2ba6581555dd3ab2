"""``evalharness report SUBCOMMAND``: reports on run directories (``-h``: each subcommand's usage).

A run is its output directory, its metrics.json, or ``mlflow:<run_id>`` (a tracked run, downloaded
from ``MLFLOW_TRACKING_URI`` or the default store beside outputs/; a parent run is a sweep). Exit
status: 0 fine; 1 a ``--fail-if`` rule was violated (diff) or the stored metrics were not reproduced
(rescore); 2 usage error or runs that cannot be compared (one ``error:`` line on stderr). The rule
grammar is in :mod:`.gate`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Mapping
from typing import Any

from evalharness.core.atomic_io import atomic_write_bytes, atomic_write_text
from evalharness.core.boundary import ArgumentParser, guarded
from evalharness.core.documents import DiffDocument
from evalharness.core.errors import EvalHarnessError
from evalharness.core.escape import terminal
from evalharness.core.markdown import render_markdown
from evalharness.core.numbers import stable_json
from evalharness.core.tables import render_text
from evalharness.report import cache_states
from evalharness.report.commands import export, gate, index, merge, rescore, sweep
from evalharness.report.commands.diff import build_diff
from evalharness.report.formats import add_format
from evalharness.report.outputs import check_output_dir, check_output_file
from evalharness.report.presenters import paired_of
from evalharness.report.runs import ALLOW_FLAGS, Comparability, ReportError, comparability, definition_of
from evalharness.report.summary import results_lines
from evalharness.report.tracking import mlflow_store
from evalharness.report.views import diff_view, pr_comment
from evalharness.report.views.op_profile_table import run_sections as op_profile_sections
from evalharness.rundir.document import run_dir_of
from evalharness.rundir.metrics_file import parse_document
from evalharness.rundir.reader import Run, load_run
from evalharness.tasks.definition import view_of

EXIT_OK, EXIT_REGRESSION = 0, 1
# mlflow:<run_id> copies, removed when the command ends
_downloads: list[tempfile.TemporaryDirectory[str]] = []


def local(spec: str) -> str:
    """A run (or sweep) as a directory: ``mlflow:<run_id>`` is downloaded into a temporary one."""
    if not mlflow_store.is_source(spec):
        return spec
    if not _downloads:
        _downloads.append(tempfile.TemporaryDirectory(prefix="evalharness-mlflow-"))
    return mlflow_store.download(spec, _downloads[0].name)


def _emit(text: str | bytes, output: str | None, runs: list[Run]) -> None:
    """A report's text on stdout, or written atomically to ``output``, never over what ``runs`` are
    made of (:mod:`evalharness.report.outputs`)."""
    if not output:
        assert isinstance(text, str)  # a binary format (export.BINARY) is refused without -o
        sys.stdout.write(text)
        return
    check_output_file(output, runs)
    if isinstance(text, bytes):
        atomic_write_bytes(output, text)
    else:
        atomic_write_text(output, text)
    print(f"wrote {output}", file=sys.stderr)


def _render(doc: Mapping[str, Any], fmt: str, title: str, sections: list[Any]) -> str:
    if fmt == "json":
        return stable_json(doc)
    if fmt == "markdown":
        return render_markdown(title, sections)
    return render_text(title, sections)


def cmd_diff(args: argparse.Namespace) -> int:
    rules = [gate.parse_rule(r) for r in args.fail_if]
    a, b = load_run(local(args.run_a), "A"), load_run(local(args.run_b), "B")
    if args.figures:
        _check_figures_dir(args.figures, [a, b])
    comp = comparability(a, b, by_content=True)
    allowed = _allowed(args, comp.kinds)
    comp.accept(allowed)
    if comp.refused:
        raise ReportError("runs are not comparable: " + "; ".join(comp.refused))
    if not comp.acknowledged:
        for warning in comp.warnings:
            print(terminal(f"warning: {warning}"), file=sys.stderr)
        if rules and comp.warnings:
            flags = " ".join(dict.fromkeys(ALLOW_FLAGS[k] for k in comp.kinds if k not in allowed))
            raise ReportError(
                "refusing to gate runs whose "
                + " and ".join(w.split(":")[0] for w in comp.warnings)
                + f"; pass {flags} if that is the experiment"
            )
    _check_cache_states(comp, rules, args.allow_cache_mismatch)
    doc = build_diff(a, b, comp, args.alpha, args.iou, args.min_score, args.margin)
    if rules:
        doc["gates"] = gate.evaluate(rules, doc)
    if args.format == "html":
        text = diff_view.render_html(doc, args.max_rows)
    elif args.format == "markdown":
        text = pr_comment.render_diff(doc, diff_view.sections(doc, args.max_rows))
    else:
        text = _render(doc, args.format, diff_view.title(doc), diff_view.sections(doc, args.max_rows))
    _emit(text, args.output, [a, b])
    if args.figures:
        _write_figures(doc, args.figures)
    failed = [g for g in doc.get("gates", []) if g["failed"]]
    for g in failed:
        print(f"regression: {g['rule']}: {g['detail']}", file=sys.stderr)
    return EXIT_REGRESSION if failed else EXIT_OK


def _allowed(args: argparse.Namespace, kinds: list[str]) -> set[str]:
    """The kinds of difference the flags accept. --allow-different-preprocessing once covered a
    different label set too: still taken so, with a one-line note naming the flag of its own."""
    allowed = {kind for kind, flag in ALLOW_FLAGS.items() if getattr(args, _dest(flag))}
    if "preprocessing" in allowed and "labels" in kinds and "labels" not in allowed:
        print(
            "note: the label sets differ and --allow-different-preprocessing is taken for "
            "--allow-different-labels as before; pass --allow-different-labels for that",
            file=sys.stderr,
        )
        allowed.add("labels")
    return allowed


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def _check_figures_dir(directory: str, runs: list[Run]) -> None:
    """Refused before any work: figures are never written inside a run directory, nor onto what the
    runs read (:func:`evalharness.report.outputs.check_output_dir`)."""
    run_dir = run_dir_of(os.path.join(directory, "figure.svg"))
    if run_dir is not None:
        raise ReportError(
            f"--figures {directory} lies in the run directory {run_dir}; give a directory outside it"
        )
    check_output_dir(directory, runs, "--figures")


def _write_figures(doc: DiffDocument, directory: str) -> None:
    """The task's figures of the diff as SVG + PNG files."""
    definition = definition_of(doc)
    paired = paired_of(definition, doc)
    _write_specs(view_of(definition).figures(paired) if paired else [], directory)


def _write_specs(specs: list[dict[str, Any]], directory: str) -> None:
    from evalharness.report.views import analysis_view, plots

    paths = analysis_view.write_files(specs, directory)
    if specs and not paths:
        print(f"warning: no figures written: {plots.MISSING_NOTE}", file=sys.stderr)
    for path in paths:
        print(f"wrote {path}", file=sys.stderr)


def _check_cache_states(comp: Comparability, rules: list[Any], allowed: bool) -> None:
    """Warn on a cache-state mismatch; refuse gating init/first-inference on it unless allowed."""
    if comp.cache is None:
        return
    print(terminal(f"warning: {comp.cache}"), file=sys.stderr)
    names = cache_states.gated_on_cache([c.name for r in rules for c in (r, *r.also)])
    if names and not allowed:
        raise ReportError(
            f"refusing to gate {', '.join(names)}: {comp.cache}; pass {cache_states.ALLOW_FLAG} "
            "if comparing a cold with a warm start is the experiment"
        )


def cmd_analysis(args: argparse.Namespace) -> int:
    """One run's error analysis: tables (text, markdown) or one HTML page with its figures."""
    from evalharness.report.views import analysis_view, html

    run = load_run(local(args.run), "RUN")
    if args.figures:
        _check_figures_dir(args.figures, [run])
    profile = run.document.metrics.op_profile
    try:
        sections, specs = view_of(definition_of(run)).run_analysis(run, args.max_rows)
    except EvalHarnessError:
        if not profile:  # nothing else to show: the task's own "records no analysis" stands
            raise
        sections, specs = [], []
    if profile:
        sections = [*sections, *op_profile_sections(profile, args.max_rows)]
    title = f"evalharness analysis: {run.provenance.model.name} @ {run.provenance.delegate.name} ({run.dir})"
    if args.format == "html":
        text = html.page(title, sections, analysis_view.blocks(specs))
    else:
        text = _render({}, args.format, title, sections)
    _emit(text, args.output, [run])
    if args.figures:
        _write_specs(specs, args.figures)
    return EXIT_OK


def cmd_sweep(args: argparse.Namespace) -> int:
    out = args.out
    if mlflow_store.is_source(args.multirun_dir) and not out:  # not into the temporary copy
        out = f"sweep_{args.multirun_dir[len(mlflow_store.SOURCE_PREFIX) :]}"
    report = sweep.write_report(local(args.multirun_dir), out, sweep.parse_baseline(args.baseline))
    if args.format == "markdown":  # stdout is the comment; the files written are said on stderr
        sys.stdout.write(pr_comment.render_sweep(report["columns"], report["rows"], report["sections"]))
    else:
        sys.stdout.write(report["text"])
    for path in report["paths"].values():
        print(f"wrote {path}", file=sys.stderr if args.format == "markdown" else sys.stdout)
    return EXIT_OK


def cmd_rescore(args: argparse.Namespace) -> int:
    run = load_run(local(args.run), "RUN")
    doc = rescore.rescore(run, args.top_k, args.backend)
    text = _render(doc, args.format, f"evalharness rescore: {run.name}", rescore.sections(doc))
    _emit(text, args.output, [run])
    return EXIT_OK if doc["reproduced"] else EXIT_REGRESSION


def cmd_merge(args: argparse.Namespace) -> int:
    doc = merge.merge_runs(args.runs, args.out)
    document = parse_document(doc)
    for line in results_lines(definition_of(document), document):
        print(terminal(line))
    info = document.merged
    assert info is not None  # a merge's document records its shards
    print(
        f"merged {info.shards} shards ({info.processes} processes on {info.host_count} host(s)): "
        f"{document.metrics.num_scored} samples -> {args.out}"
    )
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    if args.format in export.BINARY and not args.output:
        raise ReportError(f"--format {args.format} writes a binary file: give -o FILE.{args.format}")
    run = load_run(local(args.run), "RUN")
    _emit(export.render(run, args.format), args.output, [run])
    return EXIT_OK


def cmd_index(args: argparse.Namespace) -> int:
    if args.max_pairs < 0:
        raise ReportError(f"--max-pairs {args.max_pairs}: give 0 (no diffs rendered) or more")
    done = index.write_index(args.dir, args.output, args.max_pairs, args.failed)
    left = done["left_out"]
    note = (
        f"; {left} record(s) of runs that failed before any result left out (--failed lists them)"
        if left
        else ""
    )
    print(f"wrote {done['path']}: {done['runs']} runs, {len(done['diffs'])} diffs ready to open{note}")
    return EXIT_OK


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="evalharness report",
        description=__doc__.split("\n\n")[1].replace(":mod:`.gate`", "docs/reports.md").replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="SUBCOMMAND")
    d = sub.add_parser("diff", help="compare run B against run A, image by image")
    d.add_argument("run_a", metavar="RUN_A", help="baseline run: run dir, metrics.json or mlflow:<run_id>")
    d.add_argument("run_b", metavar="RUN_B", help="candidate run: run dir, metrics.json or mlflow:<run_id>")
    add_format(d, ("text", "markdown", "json", "html"), "text",
               "markdown: a pull-request comment (gate and verdict first, long lists folded)")  # fmt: skip
    d.add_argument("-o", "--output", help="write the report here instead of stdout")
    d.add_argument("--fail-if", action="append", default=[], metavar="RULE", help="e.g. 'top1<-0.005'")
    d.add_argument(ALLOW_FLAGS["preprocessing"], action="store_true",
                   help="accept (and gate) runs whose preprocessing differs")  # fmt: skip
    d.add_argument(ALLOW_FLAGS["labels"], action="store_true",
                   help="accept (and gate) runs whose label sets (class names in order) differ")  # fmt: skip
    d.add_argument(cache_states.ALLOW_FLAG, action="store_true",
                   help="gate init/first-inference latency across different cache states")  # fmt: skip
    d.add_argument("--alpha", type=float, default=0.05, help="significance level of the paired tests")
    d.add_argument("--margin", type=float, default=0.01,
                   help="a change whose interval lies within +-margin is 'equivalent'")  # fmt: skip
    d.add_argument("--iou", type=float, default=0.5, help="IoU to match A's and B's boxes (detection)")
    d.add_argument(
        "--min-score",
        type=float,
        default=None,
        help="detectors: ignore boxes below this score (default: run A's F1-optimal threshold, else 0.5)",
    )
    d.add_argument("--max-rows", type=int, default=20, help="rows per per-image table (json: all)")
    d.add_argument("--figures", metavar="DIR", help="also write the figures as SVG and PNG files here")
    d.set_defaults(func=cmd_diff)
    s = sub.add_parser("sweep", help="tabulate a multirun: sweep.csv, sweep.md, sweep.html")
    s.add_argument("multirun_dir", metavar="MULTIRUN_DIR",
                   help="or mlflow:<parent run id> (--out default: ./sweep_<id>)")  # fmt: skip
    s.add_argument("--baseline", action="append", default=[], metavar="KEY=VALUE", help="e.g. delegate=cpu")
    s.add_argument("--out", help="directory for the report files (default: MULTIRUN_DIR)")
    add_format(s, ("text", "markdown"), "text",
               "what stdout gets: the terminal table, or a pull-request comment")  # fmt: skip
    s.set_defaults(func=cmd_sweep)
    an = sub.add_parser("analysis", help="one run's error analysis: per class, confusions, F1, TIDE, curves")
    an.add_argument("run", metavar="RUN", help="run directory or its metrics.json")
    add_format(an, ("text", "markdown", "html"), "text")
    an.add_argument("-o", "--output", help="write the report here instead of stdout")
    an.add_argument("--figures", metavar="DIR", help="also write the figures as SVG and PNG files here")
    an.add_argument("--max-rows", type=int, default=20, help="rows per table")
    an.set_defaults(func=cmd_analysis)
    r = sub.add_parser("rescore", help="recompute a run's metrics from its stored predictions")
    r.add_argument("run", metavar="RUN")
    r.add_argument("--top-k", type=int, help="rescore top-1..K (K <= the stored K)")
    r.add_argument("--backend", help="COCO metric backend (default: the run's)")
    add_format(r, ("text", "markdown", "json"), "text")
    r.add_argument("-o", "--output", help="write the report here instead of stdout")
    r.set_defaults(func=cmd_rescore)
    m = sub.add_parser("merge", help="join the shard runs of one evaluation into one run (exact metrics)")
    m.add_argument("runs", metavar="RUN", nargs="+", help="every shard's run directory or metrics.json")
    m.add_argument("--out", required=True, help="directory for the merged run")
    m.set_defaults(func=cmd_merge)
    e = sub.add_parser(
        "export",
        help="a run's predictions, one row per sample, with its headline metrics (csv, json, parquet)",
        description="One row per sample from the run's predictions. Nested objects become dotted "
        "columns (a.b); lists stay one cell: JSON arrays in json, JSON-encoded text in csv (empty cell = "
        "null). csv adds the headline metrics as metric.<name> columns (the same on every row); json is "
        '{"run", "metrics", "columns", "rows"}. Never overwrites a file inside a run directory.',
    )
    e.add_argument("run", metavar="RUN", help="run directory or its metrics.json")
    add_format(e, export.FORMATS, "csv",
               "csv: lists JSON-encoded in their cell; json: lists as arrays; parquet (pyarrow): "
               "typed columns, needs -o")  # fmt: skip
    e.add_argument("-o", "--output", metavar="FILE", help="write here (atomically) instead of stdout")
    e.set_defaults(func=cmd_export)
    index_help = "one HTML page of every run under DIR (filter; tick two comparable runs to open their diff)"
    i = sub.add_parser("index", help=index_help, description=index.__doc__.split("\n\n")[0])
    i.add_argument("dir", metavar="DIR", help="folder holding the runs, e.g. outputs/")
    i.add_argument("-o", "--output", metavar="FILE", help="the page (default: DIR/index.html)")
    i.add_argument("--max-pairs", type=int, default=index.MAX_PAIRS, help="diffs made beforehand (0: none)")
    i.add_argument(
        "--failed", action="store_true", help="also list records of runs that failed before any result"
    )
    i.set_defaults(func=cmd_index)
    p.epilog = _usages(sub)
    return p


def _usages(sub: argparse._SubParsersAction[Any]) -> str:
    """Every subcommand's usage line, from its own parser (nothing written by hand can drift)."""
    usages = [parser.format_usage().removeprefix("usage: ").rstrip() for parser in sub.choices.values()]
    return "subcommands and their options (SUBCOMMAND -h for each option's meaning):\n" + "\n".join(
        "  " + u.replace("\n", "\n  ") for u in usages
    )


def main(argv: list[str] | None = None) -> int:
    """``evalharness report ...``: the subcommand contract, ``main(argv) -> int``."""

    def body() -> int:
        try:
            args = parser().parse_args(argv)
            code: int = args.func(args)
            return code
        finally:
            while _downloads:
                _downloads.pop().cleanup()

    return guarded(body)


if __name__ == "__main__":
    sys.exit(main())
