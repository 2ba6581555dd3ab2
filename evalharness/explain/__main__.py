"""``python -m evalharness.explain RUN_A RUN_B [--out DIR] [--max-changed N] [--controls N] [--bundle DIR]``.

Writes ``explain.json``, ``explain.txt``, ``explain.html`` and ``model_explorer.json`` into
``--out`` (default: ``explain_<A>_vs_<B>`` beside run B's directory, where ``report diff`` looks for
it); the runs themselves are never touched and an existing explanation is never overwritten.
``--bundle DIR``: also a repro bundle (the smallest sub-model that still changes the answer, its
inputs, both sides' outputs, the environment); ``--replay DIR`` runs a bundle again (exit 0: every
output equal bit for bit, 1: not reproduced).
Exit 0 done; 2 user error (runs not comparable, no shared graph, missing model), one ``error:`` line.
"""

from __future__ import annotations

import argparse
import os
import sys

from evalharness.core.atomic_io import atomic_write_text
from evalharness.core.boundary import ArgumentParser, guarded
from evalharness.core.errors import EvalHarnessError
from evalharness.core.numbers import stable_json
from evalharness.core.tables import render_text
from evalharness.explain.conversion import explain_conversion, is_conversion
from evalharness.explain.conversion_view import conversion_sections
from evalharness.explain.explainer import explain
from evalharness.explain.explorer import explanation_data, write_all
from evalharness.explain.render import model_explorer, render_html, sections, summary
from evalharness.report.outputs import check_output_dir
from evalharness.report.views.explain_location import HTML_FILE, explain_dir
from evalharness.rundir.reader import Run, load_run


def main(argv: list[str] | None = None) -> int:
    return guarded(lambda: _main(argv))


def _main(argv: list[str] | None) -> int:
    parser = ArgumentParser(prog="evalharness explain", description=__doc__.splitlines()[0])
    parser.add_argument("run_a", nargs="?", help="reference run directory (A)")
    parser.add_argument("run_b", nargs="?", help="run whose changed answers to explain (B)")
    parser.add_argument("--out", help="output folder (default: explain_<A>_vs_<B> beside B)")
    parser.add_argument("--max-changed", type=int, default=10, help="changed images to explain (default 10)")
    parser.add_argument("--controls", type=int, help="unchanged images to compare with (default: as many)")
    parser.add_argument("--bundle", help="also write a repro bundle (sub-model, tensors, environment) here")
    parser.add_argument("--replay", help="run a repro bundle again and compare its outputs bit for bit")
    args = parser.parse_args(argv)
    if args.replay:
        if args.run_a or args.run_b or args.bundle:
            raise EvalHarnessError("--replay DIR takes no runs and no --bundle")
        from evalharness.explain.replay import replay

        return replay(args.replay)
    if not (args.run_a and args.run_b):
        raise EvalHarnessError("give two run directories (RUN_A RUN_B), or --replay DIR")
    a, b = load_run(args.run_a, "A"), load_run(args.run_b, "B")
    out = args.out or explain_dir(a.dir, b.dir)
    check_output_dir(out, [a, b])
    if args.bundle:
        check_output_dir(args.bundle, [a, b])
        if os.path.exists(os.path.join(args.bundle, "bundle.json")):
            raise EvalHarnessError(f"{args.bundle}/bundle.json exists; remove it or give another --bundle")
    if os.path.exists(os.path.join(out, "explain.json")):
        raise EvalHarnessError(f"{out}/explain.json exists; remove it or pass --out DIR")
    if args.max_changed < 1 or (args.controls is not None and args.controls < 0):
        raise EvalHarnessError("--max-changed must be >= 1 and --controls >= 0")
    if is_conversion(a, b):
        return _conversion(a, b, out, args)
    doc = explain(a, b, args.max_changed, args.controls, args.bundle)
    text = render_text("evalharness explain: why did the answer change?", sections(doc))
    atomic_write_text(os.path.join(out, "explain.json"), stable_json(doc))
    atomic_write_text(os.path.join(out, "explain.txt"), text)
    atomic_write_text(os.path.join(out, HTML_FILE), render_html(doc))
    atomic_write_text(os.path.join(out, "model_explorer.json"), stable_json(model_explorer(doc)))
    write_all(os.path.join(out, "model_explorer"), explanation_data(doc, doc["graph"]))
    print(summary(doc))
    print(f"explain: {out}/explain.json (.txt, .html, model_explorer.json, model_explorer/)")
    if doc.get("bundle"):
        made = doc["bundle"]
        print(
            f"bundle: {made['dir']}: {made['ops']['bundle']} of {made['ops']['model']} ops, "
            f"{made['images']} changed image(s); replay: {made['replay']}"
        )
    return 0


def _conversion(a: Run, b: Run, out: str, args: argparse.Namespace) -> int:
    """A source model's run against its .tflite's: explain.json and explain.txt (no bundle, no HTML)."""
    if args.bundle:
        raise EvalHarnessError("--bundle: a repro bundle cuts .tflite sub-models; give two .tflite runs")
    doc = explain_conversion(a, b, args.max_changed, args.controls)
    text = render_text("evalharness explain: across a conversion", conversion_sections(doc))
    atomic_write_text(os.path.join(out, "explain.json"), stable_json(doc))
    atomic_write_text(os.path.join(out, "explain.txt"), text)
    sys.stdout.write(text)
    print(f"explain: {out}/explain.json (.txt)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
