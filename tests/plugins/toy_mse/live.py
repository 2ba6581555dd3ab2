"""Toy task plug-in, live half: images listed in a CSV of targets, the model's top score as prediction."""

from __future__ import annotations

import csv
import os

from evalharness.data.preprocess import image_input_spec, preprocess_file, spec_from_config
from evalharness.data.shard import Shard, select_samples, sharded_identity
from evalharness.tasks.live import RecordEvaluator, Task


class _Evaluator(RecordEvaluator):
    def __init__(self, task) -> None:
        self.task = task
        super().__init__(task.definition.scorer)

    def record(self, sample, outputs) -> dict:
        key, _, target = sample
        top = float(self.task.output.dequantize(outputs[0]).max())
        return {"id": key, "target": target, "prediction": top}


class ToyMseTask(Task):
    name = "toy_mse"

    def __init__(self, task: dict, model: dict, dataset: dict) -> None:
        self.settings, self.model_path, self.root = task, model["path"], dataset["root"]
        self.spec = spec_from_config(model.get("preprocess"))
        targets = dataset["targets"]
        with open(targets, newline="") as f:
            rows = sorted((r["filename"], float(r["target"])) for r in csv.DictReader(f))
        listed = [(name, os.path.join(self.root, name), target) for name, target in rows]
        self.shard = Shard.from_config(dataset)
        self.samples, self.full = select_samples(listed, task["num_images"], self.shard, targets)

    def bind(self, inputs, outputs) -> None:
        i = inputs[0]
        self.input = image_input_spec(i.shape, i.dtype, (i.scale, i.zero_point), self.model_path, self.spec)
        self.output = outputs[0]
        self.evaluator = _Evaluator(self)

    def sample_id(self, sample) -> str:
        return sample[0]

    def prepare(self, sample) -> list:
        return [preprocess_file(sample[1], self.spec, self.input)]

    def provenance(self) -> dict:
        identity = sharded_identity(self.samples, self.full, self.shard, lambda s: (s[0], s[1]))
        return {"dataset": {"name": "toy", "root": self.root, **identity}}
