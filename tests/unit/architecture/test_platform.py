"""evalharness is POSIX only (fcntl, resource): on Windows the import itself refuses, in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_windows_is_refused_at_import_in_one_line():
    code = "import sys; sys.platform = 'win32'; import evalharness"
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("error:") == 1 and "Traceback" not in done.stderr
    assert "POSIX" in done.stderr and "WSL" in done.stderr
