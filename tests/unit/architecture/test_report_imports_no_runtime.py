"""The report package reads output files only: importing it must never load the runtime."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import evalharness.report

FORBIDDEN = ("ai_edge_litert", "tensorflow", "evalharness.runtime")
# a live half: evalharness.tasks.live (the contract) or evalharness.tasks.<task>.live
LIVE = '(m.startswith("evalharness.tasks.") and m.rsplit(".", 1)[-1] == "live")'


def test_importing_every_report_module_loads_no_runtime():
    found = pkgutil.walk_packages(evalharness.report.__path__, "evalharness.report.")
    modules = sorted(m.name for m in found)
    assert "evalharness.report.commands.entry" in modules
    assert "evalharness.report.commands.hydra_callbacks" in modules
    code = (
        f"import importlib, json, sys; [importlib.import_module(m) for m in {modules!r}]; "
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({FORBIDDEN!r}) or {LIVE})))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_report_cli_help_runs_without_the_runtime():
    code = (
        "import sys\nfrom evalharness.report.commands import entry as cli\n"
        "try:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
        "assert 'ai_edge_litert' not in sys.modules and 'evalharness.runtime' not in sys.modules"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "diff" in proc.stdout and "sweep" in proc.stdout and "rescore" in proc.stdout
