"""ILSVRC-style top-1..K classification: its config, its metrics, records -> top-K accuracy.

A record (one predictions.jsonl line) holds the image ``id``, the true output index
``label_index``, the ranked output indices ``topk`` (and their labels and scores). Accuracy is
recounted from ``topk`` and ``label_index`` alone, so the live run, ``rescore`` and ``merge`` give the
same numbers bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalharness.core.documents import JSONMap
from evalharness.core.errors import EvalHarnessError
from evalharness.core.schema import bounds
from evalharness.rundir.reader import Run
from evalharness.stats.classification_analysis import PerClassCounter
from evalharness.stats.intervals import CONFIDENCE, wilson
from evalharness.tasks.defaults import from_conf
from evalharness.tasks.definition import Abilities, Scorer, TaskDefinition, register
from evalharness.tasks.imagenet.comparison import ClassificationComparison
from evalharness.tasks.imagenet.view import ImageNetView
from evalharness.tasks.metrics import Metric


@dataclass
class ImageNetDataset:
    """The dataset fields classification reads (see :mod:`evalharness.data.ground_truth`)."""

    ground_truth: str | None = None  # val.txt | csv | label lines; none for imagefolder / devkit
    # a folder's ground-truth format (auto | folder | val_txt | devkit | imagefolder | label_lines | csv)
    # or a container (parquet | webdataset | tfrecord; auto detects one from dataset.root: dataset_reader)
    format: str = "auto"
    class_names: str | None = None  # class list in the ground truth's index order (val.txt)
    synset_words: str | None = None  # wnid -> text (imagefolder of wnid folders)
    devkit_meta: str | None = None  # the ILSVRC devkit's data/meta.mat
    # a csv's class_index without a class list is scored by index: model output = index + offset;
    # auto: 1 when the model's label file starts with a background line, else 0 (printed, recorded)
    label_offset: str = field(default="auto", metadata=bounds(choices=("auto", "0", "1")))
    # the manifest of a folder's images: size (fast) | content (sha256 of every image, as a container's
    # always is: a folder run that report diff can recognise as the same images as a container run)
    manifest: str = field(default="size", metadata=bounds(choices=("size", "content")))
    # where the index of each container shard is kept between runs (the presets: under
    # paths.cache_dir); null: every run lists (reads and hashes) every shard
    index_dir: str | None = None


@dataclass
@from_conf("imagenet")  # the defaults: conf/task/imagenet.yaml
class ImageNetSettings:
    name: str
    top_k: int = field(metadata=bounds(1, 1000))  # report Top-1..Top-k
    num_images: int  # first N images in sorted file-name order; 0 = all


class TopKScorer(Scorer):
    """Top-1..K hits from each record's ``topk`` and ``label_index``."""

    def __init__(self, top_k: int) -> None:
        self.top_k = top_k
        self.hits = [0] * top_k
        self.count = 0
        self.per_class = PerClassCounter()

    def add(self, record: Mapping[str, Any]) -> None:
        self.per_class.add(record)
        top = record["topk"][: self.top_k]
        if record["label_index"] in top:
            for rank in range(top.index(record["label_index"]), self.top_k):
                self.hits[rank] += 1
        self.count += 1

    def result(self) -> JSONMap:
        n, k = self.count, self.top_k
        metrics: dict[str, Any] = {f"top{i + 1}": (float(self.hits[i]) / n if n else 0.0) for i in range(k)}
        metrics["correct"] = {f"top{i + 1}": self.hits[i] for i in range(k)}
        metrics["num_scored"] = n
        metrics["intervals"] = {
            "method": "wilson",
            "confidence": CONFIDENCE,
            **{f"top{i + 1}": wilson(self.hits[i], n) for i in range(k)},
        }
        metrics["analysis"] = self.per_class.result()
        return metrics


@register
class ImageNetDefinition(TaskDefinition):
    name = "imagenet"
    schema = ImageNetSettings
    dataset_schema = ImageNetDataset
    live = "evalharness.tasks.imagenet.live:ImageNetTask"
    listing_order = 0
    abilities = Abilities(sample_key="id", can_resume=True, rescorable=True, repair_metric="top1")
    # ``Top-k Accuracy: x`` for k = 1..K, as TFLite's imagenet tool prints them; the interval line
    # shows top-1 and top-5 (the rest are in metrics.intervals)
    metrics = (
        Metric(
            "top{k}",
            label="Top-{k} Accuracy",
            title="top-{k}",
            fraction=True,
            interval=True,
            interval_how="{method}, {num_scored} images",
            interval_method="Wilson score interval of a proportion",
            headline=True,
            sweep=True,
            pick=("top1", "top5"),
        ),
    )
    comparison = ClassificationComparison
    view = ImageNetView

    def scorer(self, ground_truth: Any = None, top_k: int | None = None) -> TopKScorer:
        return TopKScorer(top_k or int(self.settings["top_k"]))

    def rescorer(
        self,
        runs: list[Run],
        records: list[dict[str, Any]],
        top_k: int | None = None,
        backend: str | None = None,
    ) -> Scorer:
        """K = what every record stores (the live run's K), or ``--top-k`` below it."""
        if backend is not None:
            raise EvalHarnessError(f"--backend applies to detection runs, not to task {self.name}")
        stored = min((len(r["topk"]) for r in records), default=0)
        k = stored if top_k is None else top_k
        if not 1 <= k <= stored:
            raise EvalHarnessError(f"--top-k {k}: the predictions store top-{stored}; give 1..{stored}")
        return self.scorer(top_k=k)
