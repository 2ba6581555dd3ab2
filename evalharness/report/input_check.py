"""Were the two runs fed the same inputs? ``report diff``'s answer, image by image, from the hashes
every prediction record carries (``loop/input_identity.py``).

Two hashes per record: ``input_sha256`` (the exact tensors fed) and ``input_float_sha256`` (their real
values in NHWC float32, so an NCHW model and an NHWC one, or a float and an integer input, compare),
made by the method its ``input_hash`` names (``core/input_hash.py``). Runs whose records were hashed
by different methods are not compared hash to hash: the answer says so and which methods.
The answer is "inputs identical on N/N images", or the first image whose input differs and how: the
input shape, layout and dtype of each run, the preprocessing settings that differ, and, where both
inputs can be rebuilt from the image file exactly as recorded (the rebuilt tensor's hash must equal
the record's: never a guessed number), the largest absolute difference of their values. Runs written
before the hashes existed say "not recorded".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from evalharness.core.errors import EvalHarnessError
from evalharness.core.input_hash import FIELD, METHOD, method_of, methods_differ
from evalharness.core.numbers import fmt
from evalharness.data.rebuilt_input import (
    EXACT,
    FLOAT,
    ImageAbsent,
    InputNotRebuilt,
    rebuilt_input,
    run_recipe,
)
from evalharness.data.run_images import recorded_images
from evalharness.rundir.reader import Run

_REBUILD_ERRORS = (EvalHarnessError, OSError, ValueError, TypeError, KeyError)


def compare_inputs(a: Run, b: Run) -> dict[str, Any]:
    """The ``inputs`` block of a diff document (docs/output-files.md)."""
    ra, rb = _by_id(a), _by_id(b)
    paired = [k for k in ra if k in rb]
    recorded = [k for k in paired if ra[k].get(FLOAT) and rb[k].get(FLOAT)]
    if not paired or len(recorded) < len(paired):
        missing = [r.label for r, recs in ((a, ra), (b, rb)) if not any(x.get(FLOAT) for x in recs.values())]
        runs = (
            f"runs {' and '.join(missing)} predate"
            if len(missing) > 1
            else f"run {''.join(missing)} predates"
        )
        why = f"{runs} input hashes" if missing else "some records lack them"
        return {"recorded": False, "paired": len(paired), "summary": f"inputs: not recorded ({why})"}
    other_method = methods_differ((a.label, [ra[k] for k in paired]), (b.label, [rb[k] for k in paired]))
    if other_method:
        return {
            "recorded": True,
            "comparable": False,
            "paired": len(paired),
            "summary": f"inputs: not comparable by hash: {other_method}; rerun the older run to compare them",
        }
    same = [k for k in paired if ra[k][FLOAT] == rb[k][FLOAT]]
    exact = sum(ra[k].get(EXACT) == rb[k].get(EXACT) for k in paired)
    block: dict[str, Any] = {
        "recorded": True,
        "paired": len(paired),
        "identical": len(same),
        "bit_identical": exact,
    }
    if len(same) == len(paired):
        tail = (
            ""
            if exact == len(paired)
            else f"; the tensors fed differ in form only ({_form(a, b) or 'layout or dtype'})"
        )
        block["summary"] = f"inputs identical on {len(same)}/{len(paired)} images (real values, NHWC){tail}"
        return block
    first = next(k for k in paired if ra[k][FLOAT] != rb[k][FLOAT])
    how = _how(a, b, first, ra[first], rb[first])
    block["first_differing"] = {"id": first, "how": how}
    block["summary"] = (
        f"inputs differ on {len(paired) - len(same)}/{len(paired)} images; first: {first} ({how})"
    )
    return block


def _by_id(run: Run) -> dict[str, Mapping[str, Any]]:
    return {str(r.get("id")): r for r in run.predictions}


def _input(run: Run) -> dict[str, Any]:
    return dict(run.provenance.model_input)


def _shape(run: Run) -> list[Any]:
    i = _input(run)
    return [i.get("height"), i.get("width"), i.get("channels")]


def _form(a: Run, b: Run) -> str:
    """What differs in the inputs' form: shape (NHWC), layout, dtype."""
    ia, ib = _input(a), _input(b)
    parts = []
    if _shape(a) != _shape(b):
        parts.append(f"shape (NHWC) {_shape(a)} vs {_shape(b)}")
    for key in ("layout", "dtype"):
        if ia.get(key) != ib.get(key):
            parts.append(f"{key} {fmt(ia.get(key))} vs {fmt(ib.get(key))}")
    return ", ".join(parts)


def _how(a: Run, b: Run, sample: str, rec_a: Mapping[str, Any], rec_b: Mapping[str, Any]) -> str:
    parts = [_form(a, b)] if _form(a, b) else []
    pa, pb = a.provenance.preprocessing, b.provenance.preprocessing
    changed = [k for k in sorted(set(pa) | set(pb)) if k != "input" and pa.get(k) != pb.get(k)]
    parts += [f"preprocess.{k} {fmt(pa.get(k))} vs {fmt(pb.get(k))}" for k in changed]
    if _shape(a) == _shape(b):  # the real NHWC values compare whatever the layouts and dtypes
        parts.append(_values(a, b, sample, rec_a, rec_b))
    return "; ".join(parts)


def _values(a: Run, b: Run, sample: str, rec_a: Mapping[str, Any], rec_b: Mapping[str, Any]) -> str:
    """max |A - B| of the sample's rebuilt inputs, when both rebuild to their recorded hashes."""
    ta, why_a = _rebuilt(a, sample, rec_a[FLOAT], method_of(rec_a))
    tb, why_b = _rebuilt(b, sample, rec_b[FLOAT], method_of(rec_b))
    if ta is None or tb is None:
        return f"values differ (max abs diff not shown: {why_a or why_b})"
    diff = float(np.max(np.abs(ta - tb)))
    return f"values: max abs diff {diff:.6g}" + _quantization_note(a, b, diff)


def _quantization_note(a: Run, b: Run, diff: float) -> str:
    """Where one input is an integer one (an int8 variant's) and the other float: how much of the
    difference its quantization explains: rounding (≤ half a step), else values clipped to the
    range the calibration gave the input, which the run should know about."""
    quantized = [_input(run) for run in (a, b) if "int" in str(_input(run).get("dtype", ""))]
    if len(quantized) != 1 or not quantized[0].get("scale"):
        return ""
    q = quantized[0]
    info = np.iinfo(np.dtype(str(q["dtype"])))
    scale, zero = float(q["scale"]), int(q.get("zero_point") or 0)
    lo, hi = (info.min - zero) * scale, (info.max - zero) * scale
    if diff <= scale / 2 + 1e-6:
        return f" (the {q['dtype']} input's rounding: half a step is {scale / 2:.6g})"
    return (
        f" (more than the {q['dtype']} input's rounding, half a step {scale / 2:.6g}: values clipped to "
        f"the calibrated input range [{lo:.4g}, {hi:.4g}])"
    )


def _rebuilt(
    run: Run, sample: str, recorded: str, method: str = METHOD
) -> tuple[np.ndarray | None, str | None]:
    """The sample's real NHWC input rebuilt as the run fed it (data/rebuilt_input.py: its image
    through the run's own lookup, its own recipe, a classifier's crop or a detector's whole image),
    if that reproduces the hash ``recorded`` by ``method`` (the record's own: a run made before the
    current one is checked by its own)."""
    try:
        recipe = run_recipe(run.provenance.preprocessing, run.provenance.model.inputs)
        record = {FLOAT: recorded, FIELD: method}
        rebuilt = rebuilt_input(recorded_images(run.provenance.dataset), sample, recipe, record)
        return recipe.real(rebuilt.tensor), None
    except ImageAbsent:
        return None, f"{sample!r} is not under run {run.label}'s dataset root"
    except InputNotRebuilt:
        return None, f"run {run.label}'s input does not rebuild to its recorded hash"
    except _REBUILD_ERRORS as exc:
        return None, f"run {run.label}'s input could not be rebuilt ({type(exc).__name__})"
