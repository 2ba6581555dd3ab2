"""ILSVRC-2012 top-1..K accuracy, with the preprocessing of TFLite's imagenet evaluation tool.

Ground truth is scored the way it is given. Class indices (val.txt, the devkit, a csv's class_index)
are scored by index when the dataset's class list lines up with the model's labels by count and
order (``data.label_alignment``; a background first line is an offset of 1), whatever the spelling of
the names, which are then only shown; what was decided is printed in the summary and recorded.
Ground truth by name, or indices whose class list does not line up, is matched by label text
(``data.labels``). Bare class indices (a csv's class_index, no names) are scored by index with the
offset detected from the model's label file or given (``dataset.label_offset``), printed and
recorded, never applied silently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from evalharness.core.checksum import optional_sha256
from evalharness.core.documents import Assumed, JSONMap
from evalharness.core.errors import ModelMismatchError
from evalharness.core.ranking import stable_topk
from evalharness.core.tensors import TensorInfo, require_real
from evalharness.data.dataset_reader import FOLDER, READERS, ReadRequest, reader_for
from evalharness.data.ground_truth import INDEX_LABEL, ClassList, LabeledSample, Member
from evalharness.data.label_alignment import BACKGROUND_LINES, align
from evalharness.data.labels import LabelMatcher, label_set, read_label_file
from evalharness.data.listing import own_files_scored, warn_unscored
from evalharness.data.manifest import sample_entry, truth_hash
from evalharness.data.preprocess import (
    InputSpec,
    fitted_spec,
    image_input_spec,
    preprocess_bytes,
    preprocess_file,
    preprocessing_provenance,
)
from evalharness.data.sample_image import SampleImage
from evalharness.data.samples import first_of_each_label, samples_of
from evalharness.data.shard import listed, select_samples, sharded_identity
from evalharness.decoders.base import detector_decoder
from evalharness.tasks.imagenet.definition import ImageNetSettings, TopKScorer
from evalharness.tasks.live import RecordEvaluator, Task, bound_input, checked_spec, image_cache_key, shard_of

if TYPE_CHECKING:  # for the types only
    from evalharness.tasks.live import ImageCacheKey


def classification_output(outputs: list[TensorInfo], model_path: str) -> TensorInfo:
    """The single score vector of a classifier: shape [1, N], [N] or [1, 1, 1, N]."""
    if len(outputs) != 1:
        shapes = [list(o.shape) for o in outputs]
        raise ModelMismatchError(
            f"{model_path}: {len(outputs)} outputs {shapes}; a classifier has one score vector "
            f"{_detector_hint(outputs)}"
        )
    out = outputs[0]
    require_real(outputs, model_path, "a classifier's scores are real numbers")
    if out.shape[-1] < 2 or int(np.prod(out.shape)) != out.shape[-1]:
        hint = f" {_detector_hint(outputs)}" if detector_decoder(outputs) else ""
        raise ModelMismatchError(
            f"{model_path}: output shape {list(out.shape)} is not one score vector [1, N]{hint}"
        )
    return out


def _detector_hint(outputs: list[TensorInfo]) -> str:
    """The one hint a detector run as a classifier gets: task=coco, and the decoder its outputs fit."""
    decoder = detector_decoder(outputs)
    return "(is this a detector? use task=coco" + (f" model.decoder.name={decoder})" if decoder else ")")


GroundTruth = tuple[str, int | None, int | None]  # (label text, occurrence, class index) of a sample


def ground_truth(sample: LabeledSample) -> GroundTruth:
    """What a sample's model output index depends on (:meth:`ImageNetTask._truth_index`)."""
    return sample.label, sample.occurrence, sample.index


class TopKEvaluator(RecordEvaluator):
    """Top-1..K of each image; ranks raw scores with a stable sort (ties go to the lower index)."""

    def __init__(
        self, top_k: int, output: TensorInfo, truth: dict[GroundTruth, int], labels: list[str]
    ) -> None:
        self.top_k, self.output, self.truth, self.labels = top_k, output, truth, labels
        super().__init__(lambda: TopKScorer(top_k))

    def record(self, sample: LabeledSample, outputs: list[np.ndarray]) -> dict[str, Any]:
        raw = outputs[0].reshape(-1)
        top = stable_topk(raw, self.top_k)
        truth = self.truth[ground_truth(sample)]
        ranked = top.tolist()  # Python ints: the labels, the rank and the line without numpy scalars
        labels = self.labels
        return {
            "id": sample.key,
            # a bare class index is named by the model's own label of the output it maps to
            "label": labels[truth] if sample.label == INDEX_LABEL else sample.label,
            "label_index": truth,
            "topk": ranked,
            "topk_labels": [labels[i] for i in ranked],
            "scores": np.asarray(self.output.dequantize(raw[top]), dtype=np.float64).tolist(),
            "rank": ranked.index(truth) if truth in ranked else None,
        }


DATASET_FILES = ("ground_truth", "class_names", "synset_words", "devkit_meta")


def read_request(dataset: Any, unscored: Counter[str], classes: ClassList | None = None) -> ReadRequest:
    """What the dataset reader is given (``dataset``: the typed dataset group, ImageNet's fields);
    ``dataset.format`` names a folder's ground-truth format unless it names a container (or
    ``folder`` / ``auto``)."""
    fmt = dataset.format
    return ReadRequest(
        dataset.root,
        dataset.ground_truth,
        dataset.class_names,
        dataset.synset_words,
        dataset.devkit_meta,
        "auto" if fmt == "auto" or fmt in READERS else fmt,
        unscored=unscored,
        index_dir=dataset.index_dir,
        split=dataset.split,
        classes=ClassList() if classes is None else classes,
    )


class ImageNetTask(Task):
    name = "imagenet"
    cacheable = True
    typed_inputs = True

    def __init__(self, task: ImageNetSettings, model: Any, dataset: Any, split: Any = None) -> None:
        self.settings = task
        self.top_k = task.top_k
        self.model_path = model.path
        self.labels_path = model.labels
        self.configured = self.spec = checked_spec(model)  # bind fits it to each model's input
        self.dataset = dataset
        self.unscored: Counter[str] = Counter()
        self.assumptions: list[Assumed] = []
        self.classes = ClassList()  # the dataset's class list the reader used (index alignment)
        # one reader contract (data/dataset_reader.py): a folder and its ground truth, or a container
        self.reader, detected = reader_for(dataset.format, read_request(dataset, self.unscored, self.classes))
        if detected is not None:
            self.assumptions.append(detected)
        samples = samples_of(self.reader.samples())  # columns (data/samples.py): flat in the images
        # a container's whole listing (calibration is checked disjoint from it); a folder is listed again
        self.container_samples = samples if self.reader.name != FOLDER else []
        for said in (self.reader.assumption(), self.reader.chosen and self.reader.chosen.assumption()):
            if said:
                self.assumptions.append(said)
        own_files_scored(dataset.root, self.unscored, [getattr(dataset, k) for k in DATASET_FILES])
        warn_unscored(dataset.root, self.unscored)
        # As TFLite's tool: the first num_images in sorted file-name order; then this run's shard.
        self.shard = shard_of(dataset, split)
        self.by_key, self.full_samples = select_samples(
            samples, task.num_images, self.shard, dataset.root, self.reader.shard_of
        )
        # a container's: as stored, not by id; by_key (the same samples, by id) streams the hashes
        self.samples = self.reader.read_plan(self.by_key)
        # the list a split was cut from: its identity proves which images the other part holds
        self.listed = listed(samples, task.num_images) if self.shard.split else None
        # labels are read once the model's outputs are known (bind): a detector is told to use
        # task=coco before anything about its labels
        self.labels: list[str] = []
        self.truth: dict[GroundTruth, int] = {}
        self.input: InputSpec | None = None  # set by bind, with the evaluator
        self.scored_by = "name"

    def _index_offset(self, given: int | str) -> int | None:
        """The output index of class index 0 when the ground truth is by index and lines up with
        the model's labels (else None: matched by name, ``self.not_by_index`` says why)."""
        self.not_by_index = ""
        if not self.samples or any(s.index is None for s in first_of_each_label(self.samples)):
            return None
        if self.classes.names:
            aligned = align(self.classes.names, self.classes.count, self.labels, str(given))
            self.not_by_index = aligned.problem and f"{self.classes.source}: {aligned.problem}"
            if aligned.differing:  # same names everywhere: by index is by name, nothing assumed
                self.assumptions.append(
                    {
                        "what": "ground truth",
                        "assumed": f"scored by class index (output = class index + {aligned.offset})",
                        "why": aligned.note(self.classes.source, self.labels_path),
                        "fix": "model.labels=<labels in the class list's order> or dataset.label_offset=0|1",
                    }
                )
            return aligned.offset
        first = self.labels[0].strip()
        if str(given) != "auto":
            return int(given)
        offset = int(first.lower() in BACKGROUND_LINES)
        why = (
            f"line 1 of the model's labels is {first!r}: class index i is output i+1"
            if offset
            else f"line 1 of the model's labels is {first!r} (no background line): class index i is output i"
        )
        self.assumptions.append(
            {"what": "dataset.label_offset", "assumed": offset, "why": why, "fix": "dataset.label_offset=0|1"}
        )
        return offset

    def _truth_index(self, sample: LabeledSample) -> int:
        if self.offset is None:
            return self.matcher.index(sample.label, sample.occurrence)
        index = (sample.index or 0) + self.offset  # by index: every sample has one (_index_offset)
        if not 0 <= index < len(self.labels):
            raise ModelMismatchError(
                f"ground-truth class index {sample.index} ({sample.key}) + offset {self.offset} is "
                f"outside the model's {len(self.labels)} labels ({self.labels_path}); give the model's "
                "own label file (model.labels=...) or dataset.label_offset=0|1"
            )
        return index

    def bind(self, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> None:
        if len(inputs) != 1:
            raise ModelMismatchError(f"{self.model_path}: {len(inputs)} inputs; an image classifier has one")
        i = inputs[0]
        self.input = image_input_spec(i.shape, i.dtype, (i.scale, i.zero_point), self.model_path, self.spec)
        self.spec = fitted_spec(self.configured, self.input)  # integer_input=auto decided for this input
        out = classification_output(outputs, self.model_path)  # a detector is told task=coco first
        self.labels = read_label_file(self.labels_path)
        LabelMatcher(self.labels, self.labels_path).check_output_size(out.shape[-1])
        self.offset = self._index_offset(self.dataset.label_offset)
        self.scored_by = "name" if self.offset is None else "index"
        self.matcher = LabelMatcher(self.labels, self.labels_path, self.not_by_index)
        # Every ground-truth label must exist in the model's label file: fail before any image is read.
        # Keyed by the ground truth, not by the image: a thousand classes, not 50,000 ids.
        self.truth = {}
        for s in first_of_each_label(self.samples):
            self.truth[ground_truth(s)] = self._truth_index(s)
        self.evaluator = TopKEvaluator(min(self.top_k, out.shape[-1]), out, self.truth, self.labels)

    def cache_key(self) -> ImageCacheKey:
        return image_cache_key(self, sample_entry)

    def sample_sources(self) -> Iterator[str | Member]:
        return (sample_entry(s)[1] for s in self.samples)

    def sample_files(self) -> Iterator[str]:
        return self.reader.files(self.samples)

    def sample_images(self) -> list[SampleImage]:
        return [self.reader.image(s) for s in sorted(self.samples, key=lambda s: s.key)]

    def listed_members(self) -> list[tuple[str, Member]]:
        return [(s.key, s.member) for s in self.container_samples if s.member is not None]

    def sample_id(self, sample: LabeledSample) -> str:
        return sample.key

    def prepare(self, sample: LabeledSample) -> list[np.ndarray]:
        if sample.member is None:
            return [preprocess_file(sample.path, self.spec, bound_input(self))]
        data = self.reader.open(sample)
        return [preprocess_bytes(data, sample.member.where, self.spec, bound_input(self))]

    def _given(self, name: str) -> Any:
        """A dataset field as the run read it: None when the reader did not read it."""
        return None if name in self.reader.unread else getattr(self.dataset, name)

    def provenance(self) -> JSONMap:
        d = self._given
        return {
            "dataset": {
                "name": d("name"),
                "format": self.dataset.format,
                **self.reader.provenance(),
                "root": self.dataset.root,
                **sharded_identity(
                    self.by_key,
                    self.full_samples,
                    self.shard,
                    sample_entry,
                    self.listed,
                    d("manifest") == "content",
                ),
                "truth_sha256": truth_hash(self.by_key),
                "ground_truth": d("ground_truth"),
                "ground_truth_sha256": optional_sha256(d("ground_truth")),
                "class_names_sha256": optional_sha256(d("class_names")),
                "synset_words_sha256": optional_sha256(d("synset_words")),
                "devkit_meta_sha256": optional_sha256(d("devkit_meta")),
                "unscored": dict(sorted(self.unscored.items())),
                "scored_by": self.scored_by,  # index | name: how ground truth met the model's outputs
            },
            "labels": label_set(self.labels_path),
            "preprocessing": preprocessing_provenance(self.spec, self.input),
            "assumptions": self.assumptions,
        }
