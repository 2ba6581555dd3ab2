"""``quant.max_drop``: the fewest ops kept in float that hold the headline metric within the drop.

Like NNCF's ``quantize_with_accuracy_control`` and Polygraphy's ``debug precision``, for a
``.tflite`` quantized by ai-edge-quantizer, on real data, with a paired test:

1. **Split**: the dataset (after ``task.num_images``) is split (``quant.search``, default every other
   image); the search below sees only the search part, the run reports on the held-out rest.
2. **Calibration first**: the float model, the variant as configured (its calibration set, size and
   source recorded) and, when that set is not the dataset's, the same recipe calibrated on the
   search part: the frontier's first rows say how much of the drop a better calibration alone
   recovers. The better of the two is the base of the search.
3. **Ranking by measured float fallback**: for every op the base quantizes, the base with that op
   alone kept in float (the quantizer's per-op ``no_quantize``), scored on the search part: the
   metric it gets back, then (ties: most ops restore no answer alone) the gain in SNR of its
   outputs against the float model's, in dB.
   Chosen over explain's per-op local error because it measures the action itself: keeping an op
   in float also moves the quantize/dequantize pair around it (the tensor between two int8 ops
   stays int8 whichever op is float), which a per-op local error does not see, and its effect is
   read at the model's output, where the answer is made. It costs one build (~0.15 s for
   EfficientNet-Lite0, calibration reused) and one pass over the search part per op.
4. **Fewest ops**: the smallest k whose top-k ops in float hold the drop (k = 1, 2, 4, ... until
   it holds, then a binary search below, which assumes more float never holds worse; and every
   ranked op in float: if even that fails, the answer is "cannot", exit 1 with the frontier), then
   each chosen op tried back in int8, lowest ranked first, and left there when the drop still holds.
5. **Held out**: the chosen recipe (the base recipe + one ``no_quantize`` entry per op) is written
   as the quantizer's JSON, the variant built from it exactly as ``quant.recipe=FILE`` builds it
   (calibrated with that recipe, cached), and evaluated with the float model on the held-out part:
   Δ with the paired interval ``report diff`` computes (the task's ``paired_records``).

The search's variants are built from one calibration per set (:class:`VariantBuilder`); the final
one is built again the ordinary way and its sha256 compared with the searched one (recorded).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from evalharness.core.atomic_io import no_nan
from evalharness.core.bars import progress
from evalharness.core.errors import DataError
from evalharness.data.preprocess import PreprocessSpec
from evalharness.data.sample_image import SampleImage
from evalharness.settings.groups import CalibrationSchema, ModelSchema, QuantSchema, RunSettings
from evalharness.settings.quant_rules import repair_metric, split_of
from evalharness.stats.power import interval_resolution, resolution, resolution_text
from evalharness.transforms.calibration import calibration_record, calibration_tensors
from evalharness.transforms.calibration_choice import as_bundled, is_auto
from evalharness.transforms.quantized import build_variant, integer_input
from evalharness.transforms.repair_eval import Evaluation, Part, snr_db
from evalharness.transforms.variant import Request, Variant

if TYPE_CHECKING:  # for the types only: the quantizer loads when a repair runs
    from evalharness.runtime.quantize import VariantBuilder

# what the held-out record keeps of the paired comparison (a proportion's McNemar p, a bootstrap's p)
HELD_OUT_PAIRED = ("delta", "interval", "method", "changed", "mcnemar_p", "p")
# quant/calibration=dataset (conf/quant/calibration/dataset.yaml): the search part, every image
DATASET_CALIBRATION = CalibrationSchema(name="dataset", source="dataset")


class Search:
    """Candidate variants of one float model, each scored once on the search part against the float
    model (memoized by calibration and the set of ops kept in float)."""

    def __init__(
        self,
        settings: RunSettings,
        quant: QuantSchema,
        model: ModelSchema,
        split: Mapping[str, Any],
        metric: str,
        work: str,
        bar: Any,
    ) -> None:
        from evalharness.runtime.quantize import quantized_ops, recipe_ops, refuse_quantized_source

        refuse_quantized_source(model.path)  # once, before any candidate (or the cached result) is made
        self.definition, self.work, self.quant, self.bar = settings.definition, work, quant, bar
        self.source = model.path
        self.part = Part(settings, model, split, "search", metric)
        self.float = self.part.evaluate(self.source, keep_outputs=True)
        bar.update(1)
        self.base = recipe_ops(quant.recipe)
        self.ops = {i: (kind, scope) for i, kind, scope in quantized_ops(self.source, self.base)}
        self.allowed = allowed_drop(quant, self.float.metric)
        self.builders: dict[str, VariantBuilder] = {}
        self.calibrations: dict[str, tuple[dict[str, Any] | None, list[SampleImage]]] = {}
        self.seen: dict[tuple[str, tuple[int, ...]], dict[str, Any]] = {}
        self.build_s = 0.0

    def add_calibration(
        self,
        label: str,
        cal: CalibrationSchema | None,
        float_preprocess: PreprocessSpec,
        dataset_root: str,
    ) -> None:
        from evalharness.runtime.quantize import VariantBuilder

        record: dict[str, Any] | None = None
        images: list[SampleImage] = []
        if cal is not None:
            record, images = calibration_record(
                cal, True, dataset_root, self.part.images(), self.part.task.listed_members
            )
        tensors = calibration_tensors(images, self.source, float_preprocess) if record else None
        started = time.perf_counter()
        self.builders[label] = VariantBuilder(self.source, self.base, tensors)
        self.build_s += time.perf_counter() - started
        self.calibrations[label] = (record, images)

    def recipe(self, ops: Iterable[int]) -> list[dict[str, Any]]:
        from evalharness.runtime.quantize import keep_float

        return keep_float(self.base, [self.ops[i][1] for i in sorted(ops)])

    def candidate(self, calibration: str, ops: Iterable[int]) -> dict[str, Any]:
        key = (calibration, tuple(sorted(ops)))
        if key in self.seen:
            return self.seen[key]
        started = time.perf_counter()
        data, _ = self.builders[calibration].build(self.recipe(ops))
        self.build_s += time.perf_counter() - started
        path = os.path.join(self.work, f"candidate_{len(self.seen)}.tflite")
        with open(path, "wb") as f:
            f.write(data)
        row = self.row(self.part.evaluate(path, keep_outputs=True), data)
        row.update(calibration=calibration, float_ops=list(key[1]))
        self.bar.update(1)  # the repair's progress: one model evaluation per step
        self.bar.set_postfix_str(f"{len(key[1])} op(s) in float: {calibration}, drop {row['drop']:+.4f}")
        os.remove(path)
        self.seen[key] = row
        return row

    def row(self, ev: Evaluation, data: bytes | None = None) -> dict[str, Any]:
        paired = self.part.paired(self.float, ev)
        assert self.float.outputs is not None and ev.outputs is not None  # evaluated with keep_outputs
        drop = self.float.metric - ev.metric
        return {
            "metric": ev.metric,
            "drop": drop,
            "holds": holds(drop, self.allowed),
            "delta": paired["delta"],
            "interval": paired["interval"],
            "changed": paired["changed"],
            "snr_db": snr_db(self.float.outputs, ev.outputs),
            "bytes": ev.bytes,
            "p50_ms": ev.p50_ms,
            "coverage": ev.coverage,
            "sha256": hashlib.sha256(data).hexdigest() if data is not None else None,
        }


def allowed_drop(quant: QuantSchema, float_metric: float) -> float:
    if quant.max_drop is not None:
        return float(quant.max_drop)
    relative = quant.max_drop_relative
    assert relative is not None  # a repair (quant_rules.repair_requested) sets one of the two
    return float(relative) * float_metric


def holds(drop: float, allowed: float) -> bool:
    """The drop is within the target (a float's last bit of rounding is not a miss)."""
    return drop <= allowed + 1e-12


def target_text(quant: QuantSchema, metric: str) -> str:
    if quant.max_drop is not None:
        return f"{metric} drop <= {quant.max_drop:g} (absolute)"
    return f"{metric} drop <= {quant.max_drop_relative:g} of the float model's (relative)"


def _better(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """``a`` is a better base than ``b``: holds, then higher metric, then higher output SNR."""
    return (a["holds"], a["metric"], a["snr_db"]) > (b["holds"], b["metric"], b["snr_db"])


def search(s: Search, calibrations: list[str]) -> dict[str, Any]:
    """The frontier, the ranking and the chosen float ops (see the module docstring)."""
    frontier = [{**s.row(s.float), "step": "float model", "calibration": None, "float_ops": None}]
    for label in calibrations:
        frontier.append({**s.candidate(label, ()), "step": f"calibration: {label}"})
    base = frontier[1]
    for row in frontier[2:]:
        base = row if _better(row, base) else base
    cal = base["calibration"]
    out = {"frontier": frontier, "calibration": cal, "ranking": [], "status": "met", "chosen": base}
    if base["holds"]:
        return out
    singles = [{**s.candidate(cal, (i,)), "op": i} for i in sorted(s.ops)]
    gain = [(row["metric"], row["snr_db"] - base["snr_db"], -row["op"], row) for row in singles]
    ranked = [row for *_, row in sorted(gain, key=lambda g: g[:3], reverse=True)]
    out["ranking"] = [
        {"op": r["op"], "type": s.ops[r["op"]][0], "snr_gain_db": r["snr_db"] - base["snr_db"], **_brief(r)}
        for r in ranked
    ]
    order = [r["op"] for r in ranked]

    def prefix(k: int) -> dict[str, Any]:
        row = s.candidate(cal, order[:k])
        return {**row, "step": f"top {k} ranked in float"}

    n, tried = len(order), {}
    k = 1
    while k < n:  # galloping: 1, 2, 4, ... ops in float until the drop holds, then every op
        tried[k] = prefix(k)
        if tried[k]["holds"]:
            break
        k *= 2
    tried[n] = prefix(n)
    if not tried[n]["holds"]:
        best = min([base, *tried.values()], key=lambda r: (r["drop"], len(r["float_ops"])))
        out.update(frontier=frontier + [tried[k] for k in sorted(tried)], status="cannot", chosen=best)
        return out
    hi = min(k for k, row in tried.items() if row["holds"])
    lo = max([0, *(k for k in tried if k < hi)])
    while hi - lo > 1:  # the smallest prefix that holds, between the last that failed and the first that held
        mid = (lo + hi) // 2
        tried[mid] = prefix(mid)
        lo, hi = (lo, mid) if tried[mid]["holds"] else (mid, hi)
    kept = list(order[:hi])
    for op in reversed(order[:hi]):  # lowest ranked first: back to int8 when the drop still holds
        trial = [o for o in kept if o != op]
        if trial and s.candidate(cal, trial)["holds"]:
            kept = trial
    chosen, kept = s.candidate(cal, kept), sorted(kept)
    rows = [tried[k] for k in sorted(tried)]
    rows = [{**r, "step": r["step"] + ": chosen"} if r["float_ops"] == kept else r for r in rows]
    if all(r["float_ops"] != kept for r in rows):
        rows.append({**chosen, "step": f"chosen: {len(kept)} of top {hi} kept after trying each back"})
    out.update(frontier=frontier + rows, chosen=chosen)
    return out


class Brief(TypedDict):
    """A repair candidate in short: its metric, drop from the float model and output SNR."""

    metric: float
    drop: float
    snr_db: float


def _brief(row: dict[str, Any]) -> Brief:
    return {"metric": row["metric"], "drop": row["drop"], "snr_db": row["snr_db"]}


def repair_variant(request: Request) -> Variant:
    """The registered transform of ``repair``: search the variant, build and cache the chosen one,
    score it on the held-out part; its provenance is ``provenance.model.quant`` (with ``repair``)."""
    from evalharness.report.views.repair_view import print_repair, write_recipe
    from evalharness.runtime.quantize import needs_calibration, quantizer_version
    from evalharness.runtime.subgraph import ModelGraph

    started, settings, quant, model = time.perf_counter(), request.settings, request.quant, request.source
    source = model.path
    if not os.path.isfile(source):
        raise DataError(f"quant: float model {source} not found; set model.path or paths.models_dir")
    split, definition = split_of(quant), settings.definition
    assert split is not None  # a repair splits the dataset (quant_rules.split_of)
    chosen_metric = repair_metric(quant, definition, model)
    metric = chosen_metric["name"]
    float_preprocess = model.preprocess
    # the float model's float input is unchanged; the variant's integer input as quant.integer_input
    task_model = dataclasses.replace(model, preprocess=integer_input(float_preprocess, quant))
    root = settings.dataset.root
    shown = settings.loop.progress
    with (
        tempfile.TemporaryDirectory(prefix="evalharness-repair-") as work,
        progress(None, "repair", "evaluation", shown) as bar,
    ):
        # what the verdict will rest on: listed first, so an empty part is refused before the search runs
        held = Part(settings, task_model, split, "held_out", metric)
        s = Search(settings, quant, task_model, split, metric, work, bar)
        held_float = held.evaluate(source)  # before the search: a part the metric cannot score is refused
        # a proportion (top-1): what the held-out images can resolve, by the power formula, before the
        # search; any other metric (an AP): judged from the paired interval measured there
        power = metric == held.compare.proportion
        resolved: Any = resolution(len(held), s.allowed) if power else None
        print(
            f"repair: quant={quant.name}, {target_text(quant, metric)} ({chosen_metric['source']}): "
            "searching on "
            f"{len(s.part)} images ({len(s.ops)} quantized ops: roughly {len(s.ops) + 4} model evaluations, "
            "each one variant built and scored)",
            flush=True,
        )
        if resolved is not None and not resolved["resolves"]:  # said before the search: a report, not a check
            what = f"a {metric} drop of {s.allowed:.4g} ({target_text(quant, metric)})"
            print(
                f"repair: the held-out part: {resolution_text(resolved, what)}; its verdict is reported, "
                "not checked (more images: task.num_images, or quant.search.fraction)",
                flush=True,
            )
        elif resolved is None:
            print(
                f"repair: the held-out part: {len(held)} paired images; {metric} has no power formula (not "
                f"a per-image proportion): its verdict is a check only if the paired interval measured there "
                f"is no wider than the drop of {s.allowed:.4g}",
                flush=True,
            )
        labels = []
        if needs_calibration(quant.recipe):
            configured = quant.calibration or DATASET_CALIBRATION
            if is_auto(configured):  # the dataset's search part is tried anyway: auto's fallback first
                configured = as_bundled(configured)
            labels.append(_label(configured))
            s.add_calibration(labels[0], configured, float_preprocess, root)
            if configured.source != "dataset":
                labels.append(_label(DATASET_CALIBRATION))
                s.add_calibration(labels[1], DATASET_CALIBRATION, float_preprocess, root)
        else:
            labels.append("none")
            s.add_calibration("none", None, float_preprocess, root)
        found = search(s, labels)
        chosen = found["chosen"]
        recipe = s.recipe(chosen["float_ops"])
        cal_record, cal_images = s.calibrations[found["calibration"]]
        cache_dir = settings.paths.cache_dir
        built = build_variant(source, recipe, cal_record, cal_images, float_preprocess, cache_dir)
        bar.set_postfix_str(f"the held-out part ({len(held)} images)")
        held_variant = held.evaluate(built.path)
        bar.update(2)
    paired = held.paired(held_float, held_variant)
    drop = held_float.metric - held_variant.metric
    if resolved is None:
        resolved = interval_resolution(len(held), s.allowed, paired["interval"])
    recipe_path = os.path.join(built.folder, "recipe.json")
    write_recipe(recipe_path, recipe)
    repair = {
        "status": found["status"],
        "metric": metric,
        "metric_source": chosen_metric["source"],
        "target": target_text(quant, metric),
        "allowed_drop": s.allowed,
        "split": {**split, "search": len(s.part), "held_out": len(held)},
        "float_search": s.float.metric,
        "frontier": found["frontier"],
        "ranking": found["ranking"],
        "chosen": {
            "float_ops": [{"op": i, "type": s.ops[i][0], "scope": s.ops[i][1]} for i in chosen["float_ops"]],
            "calibration": found["calibration"],
            "searched_sha256": chosen["sha256"],
            "rebuilt_sha256": built.provenance["variant_sha256"],
            "same_bytes": chosen["sha256"] == built.provenance["variant_sha256"],
        },
        "held_out": {
            "images": len(held),
            "float": held_float.metric,
            "variant": held_variant.metric,
            "drop": drop,
            "holds": holds(drop, allowed_drop(quant, held_float.metric)),
            **{k: v for k, v in paired.items() if k in HELD_OUT_PAIRED},
        },
        "resolution": resolved,
        "calibrations": {label: s.calibrations[label][0] for label in labels},
        "evaluations": {"search": s.part.evaluations, "held_out": held.evaluations},
        "build_s": round(s.build_s, 2),
        "wall_s": round(time.perf_counter() - started, 2),
        "quantizer": quantizer_version(),
        "graph": ModelGraph(source).name,
        "quantized_ops": sorted(s.ops),
        "recipe_file": recipe_path,
        "reuse": _reuse(quant, recipe_path, found["calibration"]),
    }
    record = {"name": quant.name, "recipe": quant.recipe, **built.provenance, "recipe_ops": recipe}
    record["repair"] = no_nan(repair, inf_as_text=True)  # inf SNR: identical outputs, -inf: NaN ones
    print_repair(record)
    return Variant(dataclasses.replace(task_model, path=built.path), record, built.key)


def _label(cal: CalibrationSchema) -> str:
    if cal.source == "dataset":
        return "dataset search part"
    return f"{cal.name or 'roots'} (quant.calibration.roots)"


def _reuse(quant: QuantSchema, recipe_path: str, chosen: str) -> list[str]:
    """The overrides that build this variant again (bit for bit) from the recipe file, beside the
    run's other settings (model, dataset, and the same quant.calibration unless it says otherwise)."""
    parts = [f"quant={quant.name}", f"quant.recipe={recipe_path}"]
    if chosen == _label(DATASET_CALIBRATION):
        configured = quant.calibration
        num = configured.num_images if configured is not None and configured.source == "dataset" else 0
        parts += [
            "quant/calibration=dataset",
            f"quant.calibration.num_images={num}",
            f"quant.search.fraction={quant.search.fraction:g}",
            f"quant.search.scheme={quant.search.scheme}",
        ]
    return parts
