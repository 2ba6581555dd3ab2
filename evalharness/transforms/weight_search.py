"""Which layers tolerate pruning or clustering: ``quant.weights.scan`` and ``quant.max_drop`` with
``quant=prune`` / ``quant=cluster``.

The dataset is split as for a quantization repair (``quant.search``, :class:`evalharness.data.shard.Split`):
everything below is measured on the search part, and the run reports on the held-out rest.

1. **Scan**: every weight tensor that qualifies (:func:`evalharness.runtime.weight_edit.select`) is
   edited alone and the model scored on the search part against the float model: the headline's
   change with the paired interval ``report diff`` computes (the task's ``paired_records``).
2. **Most layers within the drop** (``quant.max_drop`` / ``max_drop_relative``, the repair's
   targets, :func:`evalharness.transforms.repair.allowed_drop`): the tensors ranked by their scan score
   (least harm first, execution order on ties), the largest k whose first k tensors edited together
   hold the drop on the search part (a binary search, which assumes more edits never hurt less).
3. **Held out**: the chosen set (``quant.weights.only``, which a later run can be given back) is built
   and cached as any edited variant, and scored with the float model on the held-out part: the
   drop there, and whether it holds, are recorded (``provenance.model.quant.weights.search``).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from typing import TYPE_CHECKING, Any, TypedDict

from evalharness.settings.groups import ModelSchema, RunSettings
from evalharness.settings.quant_rules import repair_metric, repair_requested, split_of
from evalharness.tasks.comparison import RepairMetric
from evalharness.transforms.repair import allowed_drop, holds, target_text
from evalharness.transforms.repair_eval import Evaluation, Part
from evalharness.transforms.variant import Request, Variant


class PairedScore(TypedDict):
    """A candidate's metric on a part of the dataset and its paired change against the float model."""

    metric: float
    delta: float | None
    interval: list[float] | None


class FrontierStep(PairedScore):
    """``weights.search.frontier[]``: the top k layers edited together and whether the drop held."""

    k: int
    holds: bool


class HeldOutCheck(PairedScore):
    """``weights.search.held_out``: the chosen variant against the float model on the held-out part."""

    float: float
    drop: float
    holds: bool
    images: int


if TYPE_CHECKING:  # the runtime's weight reader is imported when a search runs
    from evalharness.runtime.weights import WeightDescription

    class LayerScore(WeightDescription, PairedScore):
        """``weights.search.layers[]``: one weight tensor edited alone, scored on the search part."""


def _paired(part: Part, base: Evaluation, ev: Evaluation) -> PairedScore:
    paired = part.paired(base, ev)
    return {"metric": ev.metric, "delta": paired["delta"], "interval": paired["interval"]}


def weight_search(
    settings: RunSettings, model: ModelSchema, chosen_metric: RepairMetric
) -> tuple[dict[str, Any], list[int] | None]:
    """(``provenance.model.quant.weights.search``, the op indices to edit; None: every one)."""
    from evalharness.runtime.weight_edit import edit_model, select
    from evalharness.runtime.weights import weight_tensors

    quant, source = settings.quant, model.path
    split, metric = split_of(quant), chosen_metric["name"]
    assert split is not None  # quant_rules.layer_search implies the split
    chosen, _ = select(weight_tensors(source)[1], quant.weights)
    with tempfile.TemporaryDirectory(prefix="evalharness-weights-") as work:
        part = Part(settings, model, split, "search", metric)
        base = part.evaluate(source)

        made = [0]
        seen: dict[tuple[int, ...], PairedScore] = {}  # the frontier's top 1 is a layer scanned alone

        def score(indices: list[int]) -> PairedScore:
            key = tuple(sorted(indices))
            if key not in seen:
                seen[key] = edited(indices)
            return seen[key]

        def edited(indices: list[int]) -> PairedScore:
            data, _ = edit_model(source, dataclasses.replace(quant.weights, only=tuple(indices)))
            made[0] += 1  # a new name per candidate: what loads a model may key on its path (as repair)
            path = os.path.join(work, f"candidate_{made[0]}.tflite")
            with open(path, "wb") as f:
                f.write(data)
            try:
                return _paired(part, base, part.evaluate(path))
            finally:
                os.remove(path)

        print(
            f"weights: quant={quant.name}: {len(chosen)} weight tensors, each edited alone "
            f"({quant.weights.method}), scored on the search part ({len(part)} images) by {metric} "
            f"({chosen_metric['source']})",
            flush=True,
        )
        layers: list[LayerScore] = [{**w.describe(), **score([w.op_index])} for w in chosen]
        found: dict[str, Any] = {
            "metric": metric,
            "metric_source": chosen_metric["source"],
            "split": {**split, "search": len(part)},
            "float_search": base.metric,
            "layers": layers,
        }
        if not repair_requested(quant):
            return found, None
        allowed = allowed_drop(quant, base.metric)
        ranked = sorted(layers, key=lambda r: -r["metric"])  # stable: execution order on ties
        low, high = 0, len(ranked)
        frontier: list[FrontierStep] = []
        while low < high:
            k = (low + high + 1) // 2
            scored = score([r["op_index"] for r in ranked[:k]])
            row: FrontierStep = {"k": k, **scored, "holds": holds(base.metric - scored["metric"], allowed)}
            frontier.append(row)
            low, high = (k, high) if row["holds"] else (low, k - 1)
    only = sorted(r["op_index"] for r in ranked[:low])
    found.update(target=target_text(quant, metric), allowed_drop=allowed, frontier=frontier, chosen=only)
    found["status"] = "found" if only else "cannot: no layer alone holds the drop; the float model runs"
    return found, only


def held_out_float(settings: RunSettings, model: ModelSchema, metric: str) -> tuple[Part, Evaluation]:
    """The held-out part and the float model (``model``) scored on it: before the search, so a part
    with nothing the metric scores (no keypoints among its images) is refused before it runs."""
    split = split_of(settings.quant)
    assert split is not None
    part = Part(settings, model, split, "held_out", metric)
    return part, part.evaluate(model.path)


def held_out(settings: RunSettings, part: Part, base: Evaluation, variant: str) -> HeldOutCheck:
    """The chosen variant against the float model (``base``) on the held-out part: drop and whether
    it holds."""
    row = _paired(part, base, part.evaluate(variant))
    drop = base.metric - row["metric"]
    allowed = allowed_drop(settings.quant, base.metric)
    return {**row, "float": base.metric, "drop": drop, "holds": holds(drop, allowed), "images": len(part)}


def searched_variant(request: Request) -> Variant:
    """The registered transform of ``layer_search``: the layers searched on the search part, the
    chosen ones edited (:func:`evalharness.transforms.quantized.quantize_model`), checked on the
    held-out part; no layer that holds the drop: the float model runs, and the record says so."""
    from evalharness.transforms.calibration import dataset_members
    from evalharness.transforms.quantized import quantize_model

    settings, quant, source = request.settings, request.quant, request.source
    chosen_metric = repair_metric(quant, settings.definition, source)  # once: both parts score it
    held_part = held_out_float(settings, source, chosen_metric["name"]) if repair_requested(quant) else None
    found, only = weight_search(settings, source, chosen_metric)
    if only is not None:
        quant = dataclasses.replace(quant, weights=dataclasses.replace(quant.weights, only=tuple(only)))
    if only == []:
        print(f"weights: {found['status']}", flush=True)
        return Variant(source, {"name": quant.name, "recipe": None, "weights": {"search": found}})
    variant = quantize_model(
        quant, source, settings.dataset.root, True, settings.paths.cache_dir, None, dataset_members(settings)
    )
    if only is not None:
        assert held_part is not None  # a drop to hold: only is then a list
        held = found["held_out"] = held_out(settings, *held_part, variant.path)
        print(
            f"weights: {len(only)} of {len(found['layers'])} weight tensors edited within {found['target']} "
            f"on the search part; held out ({held['images']} images): drop {held['drop']:+.4f}, "
            f"{'holds' if held['holds'] else 'does NOT hold'}",
            flush=True,
        )
    weights = {**variant.provenance["weights"], "search": found}
    return dataclasses.replace(variant, provenance={**variant.provenance, "weights": weights})
