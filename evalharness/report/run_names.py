"""Names that tell runs apart: each side of a comparison named by what differs between them.

``model @ delegate`` alone named a float model and its int8 variant both
``efficientnet_lite2_fp32 @ cpu``, and a run without a model name ``None @ cpu``. Here every name
starts with the model (its name, else its file's stem, else the run's folder) and the delegate, and
adds each aspect whose value differs between the runs compared: the variant (``float``, ``int8``,
...), the delegate's threads, the GPU's precision, the dataset. Runs that still read the same (a
repeated measurement) get the time each started, else their folder's name, so no two sides share a
name. The diff's headers, its pull-request comment
and its HTML page read :func:`side_names` through the diff document (``a.name``, ``b.name``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from evalharness.rundir.reader import Run


def _variant(run: Run) -> str | None:
    name = run.provenance.model.quant.name
    return "float" if name in (None, "none") else str(name)


def _threads(run: Run) -> str | None:
    threads = run.provenance.delegate.flags.get("num_threads")
    return None if threads is None else f"{threads} thread{'s' if threads != 1 else ''}"


def precision_text(run: Run) -> str | None:
    """The GPU's arithmetic a run chose (``fp16 allowed``, ``fp32``); None for another delegate."""
    allowed = run.provenance.delegate.flags.get("gpu_precision_loss_allowed")
    return None if allowed is None else ("fp16 allowed" if allowed else "fp32")


def _dataset(run: Run) -> str | None:
    name = run.provenance.dataset.name
    return None if name is None else f"on {name}"


# what may tell two runs apart, in the order a name reads them (the variant goes with the model)
ASPECTS: tuple[tuple[str, Callable[[Run], str | None]], ...] = (
    ("variant", _variant),
    ("threads", _threads),
    ("precision", precision_text),
    ("dataset", _dataset),
)


def model_name(run: Run) -> str:
    """The run's model: its recorded name, else its file's stem, else the run's folder."""
    model = run.provenance.model
    if model.name:
        return str(model.name)
    if model.path:
        return os.path.splitext(os.path.basename(str(model.path)))[0]
    return os.path.basename(os.path.normpath(run.dir)) or run.label


def side_names(runs: Sequence[Run]) -> list[str]:
    """One name per run, ``model (variant) @ delegate, what else differs``; when each started (else
    its folder) is added where two runs would still read the same."""
    models = [model_name(r) for r in runs]
    stems = [os.path.splitext(os.path.basename(str(r.provenance.model.path or "")))[0] for r in runs]
    if len(set(models)) == 1 and len(set(stems)) > 1 and all(stems):  # one name, other files
        models = stems
    differing = {
        aspect: values for aspect, read in ASPECTS if len(set(values := [read(r) for r in runs])) > 1
    }
    names = []
    for i, run in enumerate(runs):
        variant = differing.get("variant", [None] * len(runs))[i]
        name = f"{models[i]}{f' ({variant})' if variant else ''} @ {run.provenance.delegate.name or '?'}"
        extra = [str(values[i]) for aspect, values in differing.items() if aspect != "variant" and values[i]]
        names.append(", ".join([name, *extra]))
    if len(set(names)) < len(names):  # still alike (a repeated measurement): when each ran, else where
        started = [r.document.started_at for r in runs]
        if all(started) and len(set(started)) == len(started):  # its own record, in any copy (MLflow's)
            told = [f"started {when}" for when in started]
        else:
            told = [os.path.basename(os.path.normpath(r.dir)) or r.label for r in runs]
        names = [f"{n} [{t}]" for n, t in zip(names, told, strict=True)]
    return names
