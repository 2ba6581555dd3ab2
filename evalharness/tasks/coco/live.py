"""COCO bbox mAP: a detector's outputs -> COCO results -> pycocotools' 12 stats.

The model preset names an output decoder (``tasks.decoders``) and a class map; boxes come back
normalised to the model input and are mapped to original pixels through the preprocessing's own
inverse (stretch or letterbox). Results are ordered image by image in ascending image id, each
image's detections in model output order: pycocotools sorts scores with a stable sort, so this
order decides ties.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from evalharness.core.documents import Assumed, JSONMap
from evalharness.core.errors import ConfigError, DataError, ModelMismatchError
from evalharness.core.tensors import TensorInfo, require_real
from evalharness.data.annotation_table import drop_outlines
from evalharness.data.dataset_reader import DatasetReader
from evalharness.data.decode import decode_rgb_bytes
from evalharness.data.detection_input import detection_geometry, detection_input
from evalharness.data.ground_truth import LabeledSample, Member
from evalharness.data.labels import label_set
from evalharness.data.listing import warn_unscored
from evalharness.data.preprocess import (
    InputSpec,
    fitted_spec,
    image_input_spec,
    preprocessing_provenance,
)
from evalharness.data.sample_image import SampleImage
from evalharness.data.shard import listed, select_samples, sharded_identity
from evalharness.decoders.base import DECODERS, build_decoder
from evalharness.decoders.image_shapes import shape_fields
from evalharness.decoders.yolo_pose import YoloPoseDecoder
from evalharness.decoders.yolo_seg import YoloSegDecoder
from evalharness.stats.coco_shapes import (
    check_keypoint_count,
    check_keypoint_ground_truth,
    check_mask_ground_truth,
)
from evalharness.tasks.coco.definition import CocoSettings
from evalharness.tasks.coco.ground_truth_readers import DETECTION_TRUTH, DetectionTruth, detected_layout
from evalharness.tasks.coco.images import (
    CocoSample,
    container_of_images,
    container_samples,
    folder_samples,
    sample_entry,
    sample_image,
)
from evalharness.tasks.live import RecordEvaluator, Task, bound_input, checked_spec, image_cache_key, shard_of

if TYPE_CHECKING:  # for the types only
    from evalharness.tasks.live import FailedChecks, ImageCacheKey

CLASS_MAPS = ("coco91", "coco80", "labels")


def category_map(class_map: str, annotations: dict[str, Any], labels_path: str | None) -> Mapping[int, int]:
    """Model class index (0-based) -> COCO category id, for categories the annotations define.

    Classes that map to no annotated category (placeholder ids of 90-id label maps) are left out:
    their detections are counted as ``num_unmapped_detections``, never scored.
    """
    cats = sorted(int(c["id"]) for c in annotations["categories"])
    if class_map == "coco91":  # 90-id label maps with placeholders: category id = class + 1
        return {c - 1: c for c in cats if 1 <= c <= 90}
    if class_map == "coco80":  # 80 contiguous classes in ascending category-id order
        return dict(enumerate(cats))
    if class_map == "labels":  # model label file line i+1 (line 0 = background/???) by category name
        from evalharness.data.labels import read_label_file

        by_name = {c["name"]: int(c["id"]) for c in annotations["categories"]}
        if labels_path is None:
            raise ConfigError("model.class_map=labels reads the label file: set model.labels")
        lines = read_label_file(labels_path)
        return {i - 1: by_name[name] for i, name in enumerate(lines) if name in by_name}
    raise ConfigError(f"model.class_map={class_map!r}; valid: {', '.join(CLASS_MAPS)}")


CocoSource = DetectionTruth  # the ground truth a run scores (ground_truth_readers.py)


def coco_source(dataset: Any) -> CocoSource:
    """The ground truth ``dataset.format`` names, read by that layout's reader, or (auto) the one
    :func:`detected_layout` finds (said once); ``dataset``: the typed group (DatasetSchema extended
    with :class:`CocoDataset`)."""
    fmt = dataset.format or "auto"
    assumptions: list[Assumed] = []
    if fmt == "auto":
        fmt, why = detected_layout(dataset)
        if why is not None:
            fix = "dataset.format=coco dataset.annotations=<instances JSON>"
            assumptions.append({"what": "dataset.format", "assumed": fmt, "why": why, "fix": fix})
    return DETECTION_TRUTH.get(fmt)().read(dataset, assumptions)


class CocoEvaluator(RecordEvaluator):
    """One image's detections, mapped to COCO categories in original pixels, as its record."""

    def __init__(self, task: CocoTask) -> None:
        self.task = task
        super().__init__(lambda: task.definition.scorer(task.annotations))

    def record(self, sample: CocoSample, outputs: list[np.ndarray]) -> dict[str, Any]:
        t = self.task
        dets = t.decoder.decode(outputs)
        geometry = detection_geometry(sample.width, sample.height, t.spec, bound_input(t))
        boxes = geometry.to_original(dets.boxes)
        cats = [t.categories.get(int(cls)) for cls in dets.classes]
        keep = np.array([cat is not None for cat in cats], dtype=bool)
        t.class_counts.update(int(cls) for cls in dets.classes)
        xywh = np.concatenate([boxes[:, :2], boxes[:, 2:] - boxes[:, :2]], axis=1)[keep]
        kept_cats = [cat for cat in cats if cat is not None]
        scores = np.asarray(dets.scores)[keep]
        return {
            "id": sample.key,
            "image_id": sample.image_id,
            "detections": [
                [cat, score, *box]
                for cat, score, box in zip(kept_cats, scores.tolist(), xywh.tolist(), strict=True)
            ],
            "unmapped": len(cats) - len(kept_cats),
            # suppressions that equal scores decided (decoders/nms.py); absent: the model's own NMS
            **({} if dets.nms_ties is None else {"nms_ties": dets.nms_ties}),
            **shape_fields(dets, keep, boxes, geometry),
        }


class CocoTask(Task):
    name = "coco"
    cacheable = True
    typed_inputs = True

    def __init__(self, task: CocoSettings, model: Any, dataset: Any, split: Any = None) -> None:
        self.settings = task
        self.model_path = model.path
        decoder_cfg = dict(model.decoder or {})
        if not decoder_cfg.get("name"):
            raise ConfigError(
                f"model {model.name!r} has no output decoder: task=coco needs a detector preset "
                f"(model.decoder.name={'|'.join(DECODERS.names())}); is this a classifier? use task=imagenet"
            )
        self.decoder = build_decoder(decoder_cfg.pop("name"), decoder_cfg)
        self.configured = self.spec = checked_spec(model)  # bind fits it to each model's input
        self.dataset = dataset
        self.source = coco_source(dataset)
        self.annotations = self.source.annotations
        if isinstance(self.decoder, YoloPoseDecoder):  # before any image: not a silent keypoint AP of 0
            check_keypoint_ground_truth(self.annotations, self.source.ground_truth)
        if isinstance(self.decoder, YoloSegDecoder):
            check_mask_ground_truth(self.annotations, self.source.ground_truth)
        else:  # its outlines are never read: not held for the whole run
            drop_outlines(self.annotations)
        self.unscored = self.source.unscored
        samples = self._samples(dataset)
        warn_unscored(self.source.root, self.unscored)
        self.shard = shard_of(dataset, split)
        self.samples, self.full_samples = select_samples(
            samples, task.num_images, self.shard, self.source.ground_truth, self._shard_file
        )
        # the list a split was cut from: its identity proves which images the other part holds
        self.listed = listed(samples, task.num_images) if self.shard.split else None
        self.class_map = model.class_map
        self.labels_path = model.labels
        self.categories = category_map(self.class_map, self.annotations, self.labels_path)
        self.input: InputSpec | None = None
        self.class_counts: Counter[int] = Counter()  # model class index -> detections this session

    def _samples(self, dataset: Any) -> list[CocoSample]:
        """The annotated images: files under a folder, or a container's members by file name
        (images.py), its reader kept to read them (``self.images``; None: files)."""
        container = container_of_images(dataset, self.unscored)
        self.images = None if container is None else container[0]
        self.listed_samples: Sequence[LabeledSample] = []
        if container is None:
            other, why = detected_layout(dataset, exclude=self.source.format)
            said = f"{dataset.root} is a {other.upper()} layout: score its own labels with dataset={other}"
            fix = said if why else None
            return folder_samples(self.annotations, self.source.root, self.source.ground_truth, fix)
        reader, images_said = container
        samples, self.listed_samples = container_samples(
            self.annotations, reader, self.source.ground_truth, self.unscored
        )
        split_said = reader.chosen and reader.chosen.assumption()  # its split, chosen as it listed
        self.source.assumptions.extend(a for a in (images_said, split_said) if a)
        return samples

    def _shard_file(self, sample: CocoSample) -> str | None:
        """The container shard a sample is read from (``dataset.shard.scheme=files``); None: its file."""
        return None if sample.stored is None else DatasetReader.shard_of(sample.stored)

    def bind(self, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> None:
        if len(inputs) != 1:
            raise ModelMismatchError(
                f"{self.model_path}: {len(inputs)} inputs; a detector here has one image input"
            )
        i = inputs[0]
        spec = image_input_spec(i.shape, i.dtype, (i.scale, i.zero_point), self.model_path, self.spec)
        self.input = spec
        self.spec = fitted_spec(self.configured, spec)  # integer_input=auto decided for this input
        require_real(outputs, self.model_path, "a detector's boxes and scores are real numbers")
        self.decoder.bind(outputs, (spec.height, spec.width), self.model_path)
        if isinstance(self.decoder, YoloPoseDecoder):
            check_keypoint_count(self.decoder.keypoint_count, self.model_path)
        self.evaluator = CocoEvaluator(self)

    def cache_key(self) -> ImageCacheKey:
        return image_cache_key(self, sample_entry)

    def sample_files(self) -> Iterator[str]:
        if self.images is not None:  # each shard file once
            return self.images.files([s.stored for s in self.samples if s.stored is not None])
        return (s.path for s in self.samples)

    def sample_sources(self) -> Iterator[str | Member]:
        return (s.source for s in self.samples)

    def sample_images(self) -> list[SampleImage]:
        return [sample_image(self.images, s) for s in self.samples]

    def listed_members(self) -> list[tuple[str, Member]]:
        return [(s.key, s.member) for s in self.listed_samples if s.member is not None]

    def extra_metrics(self, reference_ms: Sequence[float] | None, test_ms: Sequence[float]) -> FailedChecks:
        failed = self.unmapped_check()
        return {"failed_checks": failed} if failed else {}

    def unmapped_check(self) -> list[str]:
        """Most detections mapping to no annotated category means the class map is wrong (AP would be
        a silent near-zero): fail, naming ``model.class_map``, what the model produced and what the
        annotations use. Counted over this session's detections."""
        produced = sum(self.class_counts.values())
        unmapped = {c: n for c, n in self.class_counts.items() if c not in self.categories}
        limit = self.settings.max_unmapped_fraction
        if not produced or sum(unmapped.values()) / produced <= limit:
            return []
        top = ", ".join(str(c) for c, _ in sorted(unmapped.items(), key=lambda kv: -kv[1])[:8])
        ids = sorted(int(c["id"]) for c in self.annotations["categories"])
        return [
            f"{sum(unmapped.values())} of {produced} detections (over task.max_unmapped_fraction={limit:g}) "
            f"have a class that model.class_map={self.class_map} maps to no annotated category "
            f"(model classes {top}; annotation category ids {ids[0]}..{ids[-1]}); check model.class_map"
        ]

    def sample_id(self, sample: CocoSample) -> str:
        return sample.key

    def prepare(self, sample: CocoSample) -> list[np.ndarray]:
        image: str | np.ndarray = sample.path  # a container's member: its bytes through the reader
        if self.images is not None and sample.stored is not None:
            image = decode_rgb_bytes(self.images.open(sample.stored), sample.path)
        tensor, geometry = detection_input(image, self.spec, bound_input(self))
        if (geometry.orig_w, geometry.orig_h) != (sample.width, sample.height):
            raise DataError(
                f"{sample.path}: image is {geometry.orig_w}x{geometry.orig_h} but the annotations say "
                f"{sample.width}x{sample.height}; boxes would be mapped wrongly"
            )
        return [tensor]

    def provenance(self) -> JSONMap:
        return {
            "dataset": {
                "name": self.dataset.name,
                "format": self.source.format,
                **({} if self.images is None else self.images.provenance()),
                "root": self.source.root,
                **sharded_identity(
                    self.samples,
                    self.full_samples,
                    self.shard,
                    sample_entry,
                    self.listed,
                    self.dataset.manifest == "content",
                ),
                "ground_truth": self.source.ground_truth,
                "ground_truth_sha256": self.source.sha256,
                "unscored": dict(sorted(self.unscored.items())),
                **self.source.record,
            },
            "assumptions": self.source.assumptions,
            "labels": {
                "class_map": self.class_map,
                **label_set(self.labels_path),
                "categories": len(self.annotations["categories"]),
            },
            "preprocessing": preprocessing_provenance(self.spec, self.input),
            "decoder": {"name": type(self.decoder).__name__, "notes": self.decoder.notes},
        }
