"""Toy detection plug-in, live half: images listed in a CSV of target boxes, the model's decoded
top box as the prediction."""

from __future__ import annotations

import csv
import os

from toy_boxes import decoder  # noqa: F401 - registers the toy_peak decoder

from evalharness.data.preprocess import image_input_spec, preprocess_file, spec_from_config
from evalharness.data.shard import Shard, select_samples, sharded_identity
from evalharness.decoders.base import build_decoder
from evalharness.tasks.live import RecordEvaluator, Task


class _Evaluator(RecordEvaluator):
    def __init__(self, task) -> None:
        self.task = task
        super().__init__(task.definition.scorer)

    def record(self, sample, outputs) -> dict:
        key, _, target = sample
        found = self.task.decoder.decode(outputs)
        best = int(found.scores.argmax())
        box, score = found.boxes[best].tolist(), float(found.scores[best])
        return {"id": key, "target": target, "box": box, "score": score}


class ToyBoxesTask(Task):
    name = "toy_boxes"

    def __init__(self, task: dict, model: dict, dataset: dict) -> None:
        self.settings, self.model_path, self.root = task, model["path"], dataset["root"]
        self.spec = spec_from_config(model.get("preprocess"))
        self.decoder_config = dict(model["decoder"] or {"name": "toy_peak"})
        boxes = dataset["boxes"]
        with open(boxes, newline="") as f:
            corners = ("x1", "y1", "x2", "y2")
            rows = sorted((r["filename"], [float(r[k]) for k in corners]) for r in csv.DictReader(f))
        listed = [(name, os.path.join(self.root, name), box) for name, box in rows]
        self.shard = Shard.from_config(dataset)
        self.samples, self.full = select_samples(listed, task["num_images"], self.shard, boxes)

    def bind(self, inputs, outputs) -> None:
        i = inputs[0]
        self.input = image_input_spec(i.shape, i.dtype, (i.scale, i.zero_point), self.model_path, self.spec)
        config = dict(self.decoder_config)
        self.decoder = build_decoder(config.pop("name"), config)
        self.decoder.bind(outputs, (self.input.height, self.input.width), self.model_path)
        self.evaluator = _Evaluator(self)

    def sample_id(self, sample) -> str:
        return sample[0]

    def prepare(self, sample) -> list:
        return [preprocess_file(sample[1], self.spec, self.input)]

    def provenance(self) -> dict:
        identity = sharded_identity(self.samples, self.full, self.shard, lambda s: (s[0], s[1]))
        return {"dataset": {"name": "toy_boxes", "root": self.root, **identity}}
