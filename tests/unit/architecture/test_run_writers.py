"""One claim for every writer, one interrupt policy for every child process: no path around either.

A run's files (predictions.jsonl, metrics.json, results.txt) are written only by rundir/'s writers
(``RunWriter``, ``write_run``, ``write_failure``), and those are called only from the places listed
here, each under the claim of rundir/state.py. A child process is started only through
core/interrupts.py (its own session, ended on a signal), or where listed with why.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "evalharness"
WRITERS = {"RunWriter", "write_run", "write_failure", "write_metrics"}
RUN_FILES = {"predictions.jsonl", "metrics.json", "results.txt", "run_state.json"}
# module -> under which claim it writes
CLAIMED = {
    "__main__.py": "a job's failure record: state.hold, only where no run is",
    "run/job.py": "state.claim before execute; the failure and interrupted records after",
    "run/execute.py": "called by run/job.py after state.claim",
    "run/record.py": "called by run/job.py and run/parallel.py under their claim",
    "run/parallel.py": "the loop.parallel parent's state.claim: a failed shard's or merge's record",
    "report/commands/merge.py": "state.hold (the loop.parallel parent's own claim when it merges its shards)",
}
STARTERS = {"Popen", "run", "call", "check_call", "check_output", "Process", "ProcessPoolExecutor",
            "fork", "spawnv", "system"}  # fmt: skip
OWN_STARTS = {
    "core/interrupts.py": "the policy itself",
    "runtime/android/adb.py": "adb commands: subprocess.run with a timeout, killed on KeyboardInterrupt",
    "stats/tide.py": "a spawn pool of one worker, adopted by the policy and blind to the terminal's Ctrl-C",
}


_PARSED: list = []


def _modules() -> list[tuple[str, ast.AST]]:
    if not _PARSED:  # parsed once for the three tests
        for path in sorted(PACKAGE.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            _PARSED.append((path.relative_to(PACKAGE).as_posix(), tree))
    return _PARSED


def _called(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.id if isinstance(func, ast.Name) else getattr(func, "attr", ""))
    return names


def test_only_the_claimed_writers_write_a_runs_files():
    found = {name for name, tree in _modules() if not name.startswith("rundir/") and _called(tree) & WRITERS}
    assert found == set(CLAIMED), f"new writer of a run directory (take rundir/state.py's claim): {found}"


def test_no_module_names_a_run_file_outside_rundir_to_write_it():
    """``open(... "metrics.json" ..., "w")`` around rundir/ would be a path around the claim."""
    for name, tree in _modules():
        if name.startswith("rundir/"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "open" and len(node.args) > 1:
                mode = node.args[1]
                text = ast.unparse(node.args[0])
                if isinstance(mode, ast.Constant) and set(str(mode.value)) & set("wax"):
                    assert not any(f in text for f in RUN_FILES), f"{name}: {ast.unparse(node)}"


def test_children_start_only_through_the_interrupt_policy():
    subprocess_like = {"subprocess", "multiprocessing", "os", "concurrent"}
    found = set()
    for name, tree in _modules():
        imports = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imports |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        if not imports & subprocess_like:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            owner = getattr(getattr(func, "value", None), "id", None)
            called = getattr(func, "id", None) or getattr(func, "attr", "")
            if called in STARTERS and (owner in subprocess_like or called == "ProcessPoolExecutor"):
                found.add(name)
    assert found == set(OWN_STARTS), f"start children with core/interrupts.start or run: {found}"
