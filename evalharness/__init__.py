"""evalharness: does a .tflite model keep its accuracy, and how fast is it, on a delegate?

POSIX only (pyproject's classifiers): a run directory's claim is an ``fcntl`` lock and peak memory
comes from ``resource``; on Windows the package refuses in one line at import, rather than failing
later with a traceback about a missing module.
"""

import sys

__version__ = "0.1.0"  # the one place (pyproject.toml reads it: dynamic version)

if sys.platform == "win32":  # pragma: no cover - refused before anything else is imported
    sys.stderr.write("error: evalharness runs on POSIX systems only (Linux, macOS): on Windows use WSL\n")
    raise SystemExit(2)
