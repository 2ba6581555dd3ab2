"""One part of a split dataset (search or held-out) and the scoring of a model file on it, as a run
scores it: the task's own live half lists the samples, prepares the inputs and makes the records,
its scorer makes the metrics, the run's delegate and runtime invoke. No run directory: this is what
``quant.max_drop`` evaluates each candidate variant with (:mod:`evalharness.transforms.repair`), and
the layer search of pruning and clustering (:mod:`evalharness.transforms.weight_search`).
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from evalharness.core.errors import DataError
from evalharness.core.schema import FrozenDict
from evalharness.data.sample_image import SampleImage
from evalharness.report.presenters import headline
from evalharness.settings.groups import ModelSchema, RunSettings
from evalharness.tasks.comparison import PairedRecords
from evalharness.tasks.definition import comparer
from evalharness.tasks.live import live_task
from evalharness.tasks.metrics import defined_value

if TYPE_CHECKING:  # for the types only: the runtime loads when a candidate is scored
    from evalharness.runtime.contract import Model


# the real-valued outputs kept per model for the output SNR: those of the part's first images, up to
# this many bytes (every image of a classifier's search part; ~36 of a 640 YOLO-seg's, 7 MB each)
OUTPUTS_KEPT = 256 << 20


@dataclass
class Evaluation:
    """One model scored on one part: its records, its headline metric, its real-valued outputs
    (kept when asked, for the output error against the float model), speed, size and coverage."""

    metric: float
    metrics: dict[str, Any]
    records: list[dict[str, Any]]
    p50_ms: float | None
    coverage: dict[str, Any]
    bytes: int
    outputs: np.ndarray | None = field(default=None, repr=False)


class Part:
    """The samples of one part, and the models evaluated on them (inputs prepared once per input
    spec: the float model's and every integer-input variant's), scored on the metric the repair
    bounds (``metric``: :func:`evalharness.settings.quant_rules.repair_metric`'s name, chosen once
    per repair or search by its caller; None: the part is read for its images alone, a dataset
    calibration) with the task's ``search_scoring`` settings (no extras a search never reads)."""

    def __init__(
        self,
        settings: RunSettings,
        model: ModelSchema,
        split: Mapping[str, Any],
        part: str,
        metric: str | None,
    ) -> None:
        self.settings, self.part, self._metric = settings, part, metric
        definition = settings.definition
        task = FrozenDict({**settings.task, **dict(definition.abilities.search_scoring)})
        self.task = live_task(definition, task, model, settings.dataset, {**split, "part": part})
        compare = comparer(definition)
        assert compare is not None  # check_quant: a repair needs the task's paired comparison
        self.compare = compare  # one per part: what it scored of the float model's records is kept
        self._inputs: dict[str, list[Any]] = {}
        self.evaluations = 0

    def __len__(self) -> int:
        return len(self.task.samples)

    @property
    def metric(self) -> str:
        """The metric the part's evaluations are scored on (a part made for its images has none)."""
        assert self._metric is not None, "a part read for its images alone scores no model"
        return self._metric

    def images(self) -> list[SampleImage]:
        """The part's images, by id through the dataset's reader (a folder's files, a container's
        members alike), for a calibration drawn from the dataset."""
        return self.task.sample_images()

    def ids(self) -> list[str]:
        return [self.task.sample_id(s) for s in self.task.samples]

    def paired(self, base: Evaluation, other: Evaluation) -> PairedRecords:
        """The metric of ``other`` minus ``base`` with the paired interval ``report diff`` computes."""
        fresh = self.task.evaluator.new_scorer()  # the task's ground truth (COCO's annotations)
        return self.compare.paired_records(base.records, other.records, self.metric, fresh)

    def evaluate(self, path: str, keep_outputs: bool = False) -> Evaluation:
        import os

        from evalharness.runtime import load_model

        settings, task = self.settings, self.task
        model = load_model(path, settings.delegate_plan, settings.runtime.name, settings.runner)
        task.bind(model.inputs, model.outputs)
        key = json.dumps(task.cache_key(), sort_keys=True, default=str) if task.cacheable else None
        inputs = self._inputs.get(key) if key else None
        if inputs is None:
            inputs = [task.prepare(s) for s in task.samples]
            if key:
                self._inputs[key] = inputs
        outputs, times = _invoke_all(model, inputs)
        records, real, kept = [], [], 0
        for sample, outs in zip(task.samples, outputs, strict=True):
            records.append(task.evaluator.update(sample, outs))
            if keep_outputs and kept < OUTPUTS_KEPT:  # the first images' (the same for every model)
                pairs = zip(model.outputs, outs, strict=True)
                values = [np.asarray(i.dequantize(o), np.float32).ravel() for i, o in pairs]
                real.append(np.concatenate(values))
                kept += real[-1].nbytes
        metrics = task.evaluator.compute()
        self.evaluations += 1
        cov = model.coverage
        value = defined_value(settings.definition.metrics, metrics, self.metric)
        if value is None:  # pycocotools' -1: nothing scored
            raise DataError(
                f"{self.metric} of {path} on the {self.part.replace('_', '-')} part ({len(self)} images) "
                f"is {metrics.get(self.metric)}: those images hold nothing it scores (no annotation of its "
                "kind); use more images (task.num_images) or set another quant.metric"
            )
        return Evaluation(
            metric=float(value),
            metrics=headline(settings.definition, metrics),
            records=records,
            p50_ms=statistics.median(times) if times else None,
            coverage={"ops_delegated": cov.ops_delegated, "ops_total": cov.ops_total},
            bytes=os.path.getsize(path),
            outputs=np.stack(real) if keep_outputs else None,
        )


def _invoke_all(model: Model, inputs: list[Any]) -> tuple[list[list[np.ndarray]], list[float]]:
    """Outputs per input and invoke times (ms; one warm-up invoke first, not timed)."""
    if model.batch_size:
        done = model.run_batch(inputs)
        return [o for o, _ in done], [t for _, t in done if t is not None]
    model.set_inputs(inputs[0])
    model.invoke()
    outputs, times = [], []
    for x in inputs:
        model.set_inputs(x)
        started = time.perf_counter()
        model.invoke()
        times.append((time.perf_counter() - started) * 1e3)
        outputs.append([np.array(o, copy=True) for o in model.get_outputs()])
    return outputs, times


def snr_db(reference: np.ndarray, other: np.ndarray) -> float:
    """Pooled SNR of ``other`` against ``reference`` (dB; inf when equal, -inf when not finite)."""
    if not np.all(np.isfinite(other)):
        return -math.inf
    noise = float(np.sum((reference.astype(np.float64) - other) ** 2))
    signal = float(np.sum(reference.astype(np.float64) ** 2))
    if noise == 0:
        return math.inf
    return -math.inf if signal == 0 else 10 * math.log10(signal / noise)
