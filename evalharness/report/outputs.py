"""Where a report, an export or an explanation may be written: never onto what a run is made of.

``-o FILE`` of ``report diff|rescore|export`` and the ``--out`` folders of ``report sweep|merge`` and
``explain`` all ask here first. Refused, each with the path and the fix: a file of a run directory
(``metrics.json``, ``predictions.jsonl``, ...), a file the runs read (the model, its labels, the
ground truth, the annotations, as their provenance records them) and anything under a run's dataset
root (a report there would become an image or a stray file of the next run's listing). A directory
given where a file belongs, too. Writes themselves are atomic (:mod:`evalharness.core.atomic_io`);
a full or read-only file system is the boundary's one line naming the path.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from evalharness.report.runs import ReportError
from evalharness.rundir.document import run_dir_of
from evalharness.rundir.reader import Run

# provenance.config groups whose absolute paths are a run's inputs (dataset.root is a folder)
_INPUT_GROUPS = ("model", "dataset")


def _inputs(runs: Iterable[Run]) -> tuple[set[str], set[str]]:
    """(input files, dataset roots) of ``runs``, as real paths."""
    files, roots = set(), set()
    for run in runs:
        for group in _INPUT_GROUPS:
            for key, value in run.provenance.config.group(group).items():
                if not (isinstance(value, str) and os.path.isabs(value)):
                    continue
                real = os.path.realpath(value)
                if key == "root":
                    roots.add(real)
                elif os.path.isfile(real):
                    files.add(real)
    return files, roots


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def check_output_file(output: str, runs: Iterable[Run] = (), flag: str = "-o") -> None:
    """Refuse ``output`` as a file to write (see the module docstring)."""
    if os.path.isdir(output):
        raise ReportError(
            f"{flag} {output} is a directory; give a file name, e.g. {os.path.join(output, 'report.txt')}"
        )
    run_dir = run_dir_of(output)
    if run_dir is not None and os.path.lexists(output):
        raise ReportError(
            f"{flag} {output}: refusing to overwrite a file of the run directory {run_dir}; "
            "give a new file name or a path outside it"
        )
    _refuse_inputs(os.path.realpath(output), output, runs, flag)


def check_output_dir(output: str, runs: Iterable[Run] = (), flag: str = "--out") -> None:
    """Refuse ``output`` as a folder to write reports into: a file, or inside a run's inputs."""
    if os.path.lexists(output) and not os.path.isdir(output):
        raise ReportError(f"{flag} {output} is a file; give a folder")
    _refuse_inputs(os.path.realpath(output), output, runs, flag)


def _refuse_inputs(real: str, output: str, runs: Iterable[Run], flag: str) -> None:
    files, roots = _inputs(runs)
    if real in files:
        raise ReportError(f"{flag} {output} is an input of the run (model, labels, truth); write elsewhere")
    root = next((r for r in sorted(roots) if _under(real, r)), None)
    if root is not None:
        raise ReportError(f"{flag} {output} lies in the dataset root {root} of the run; write elsewhere")
