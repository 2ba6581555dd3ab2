"""The live half of a task plug-in: samples in, records out (the definition in
:mod:`evalharness.tasks.discovery` does the rest).

A task lists its samples, turns one sample into input tensors, and turns the model's outputs for it
into a *record* (its predictions.jsonl line) — detectron2's evaluators ``reset / process / evaluate``
split the same way; the task definition's pure scorer then turns records into metrics (``add /
result``, torchmetrics' ``update / compute``). The task never sees which runtime or delegate ran.
Optional abilities are methods with defaults here, never ``hasattr`` probes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cached_property
from typing import Any, ClassVar, TypedDict, cast

import numpy as np

from evalharness.core.documents import JSONMap
from evalharness.core.schema import build, thaw
from evalharness.core.tensors import TensorInfo
from evalharness.data.ground_truth import Member
from evalharness.data.manifest import samples_identity
from evalharness.data.preprocess import InputSpec, PreprocessSpec, preprocessing_provenance, validate_spec
from evalharness.data.sample_image import SampleImage, file_image
from evalharness.data.shard import Shard
from evalharness.tasks.definition import Scorer, TaskDefinition, times_invokes
from evalharness.tasks.discovery import definition_for, live_class


class RecordEvaluator:
    """``update`` makes a sample's record and hands it to the scorer; ``restore`` re-adds a record of
    an earlier session (resume); ``compute`` is the scorer's result. Subclasses define ``record``."""

    def __init__(self, make_scorer: Callable[[], Scorer]) -> None:
        self._make_scorer = make_scorer
        self.reset()

    def reset(self) -> None:
        self.scorer = self._make_scorer()

    def record(self, sample: Any, outputs: list[np.ndarray]) -> dict[str, Any]:
        raise NotImplementedError

    def update(self, sample: Any, outputs: list[np.ndarray]) -> dict[str, Any]:
        record = self.record(sample, outputs)
        self.scorer.add_checked(record)  # made here: the checks of a read-back record are not needed
        return record

    def restore(self, record: dict[str, Any]) -> None:
        self.scorer.add(record)

    def compute(self) -> JSONMap:
        return self.scorer.result()

    def new_scorer(self) -> Scorer:
        """A fresh scorer as this evaluator makes one, with what the task loaded beyond the records
        (COCO's annotations): for pairing two passes' records outside a run (a repair's candidates,
        the comparison's ``paired_records``)."""
        return self._make_scorer()


class ReferencePass:
    """What the loop runs first when a task compares against a reference (inference_diff): the same
    samples with another delegate, recording outputs instead of scoring them."""

    name = "reference"
    side_by_side = False  # its latencies are compared with the test pass's
    delegate: Mapping[str, Any] | None  # the reference delegate config
    samples: Sequence[Any]
    evaluator: RecordEvaluator

    def bind(self, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> None: ...

    def sample_id(self, sample: Any) -> str:
        raise NotImplementedError

    def prepare(self, sample: Any) -> list[np.ndarray]:
        raise NotImplementedError


class Task:
    """Base class of live tasks. Subclasses set ``name``, ``settings`` (the task config group),
    ``samples`` and ``evaluator`` (after ``bind``), and implement the four methods below."""

    name: ClassVar[str]
    # How the constructor takes the run's settings (live_task below): True, typed:
    # ``(task, model, dataset, split=None)``, the task group an instance of the definition's schema,
    # model and dataset instances of the core schemas extended with the task's fields, all read by
    # attribute, ``split`` the dataset split (a dict) or None. False (a plug-in's default): plain
    # dicts ``(task, model, dataset)``, the split as ``dataset["split"]``.
    typed_inputs: ClassVar[bool] = False
    settings: Any  # the task group: its schema instance (typed_inputs) or a plain dict
    samples: Sequence[Any]
    evaluator: RecordEvaluator
    # Ability: one input tensor per sample from a dataset of images (files or container members,
    # ``sample_sources()``), identified by ``cache_key()`` (the tensor cache, data/tensor_cache.py,
    # may serve it); ``cache`` is that cache when one serves the run.
    cacheable: bool = False  # a class's answer; a task whose dataset decides it sets its own
    cache = None

    @property
    def side_by_side(self) -> bool:
        """Whether the loop may run instances of the model side by side (loop/lanes.py): not where
        the figures are invoke latencies, which another instance beside each invoke would change
        (the definition says: :func:`~evalharness.tasks.definition.times_invokes`)."""
        return not times_invokes(self.definition)

    @cached_property
    def definition(self) -> TaskDefinition:
        """The task's definition (scorer, summary lines, abilities) with this run's settings."""
        settings = self.settings
        return definition_for(self.name, thaw(settings) if dataclasses.is_dataclass(settings) else settings)

    def bind(self, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> None:
        """Check the model fits the task (clear error before the loop) and prepare preprocessing."""
        raise NotImplementedError

    def sample_id(self, sample: Any) -> str:
        """Stable identity of a sample (e.g. the image path relative to the dataset root)."""
        raise NotImplementedError

    def prepare(self, sample: Any) -> list[np.ndarray]:
        """Decode and preprocess one sample into the model's input tensors."""
        raise NotImplementedError

    def provenance(self) -> JSONMap:
        """Dataset and preprocessing description for metrics.json (``provenance``: the task's keys)."""
        raise NotImplementedError

    # Optional abilities ------------------------------------------------------------------------
    def cache_key(self) -> Mapping[str, Any]:
        """Identity of the prepared tensors, for ``cacheable`` tasks (called after ``bind``)."""
        raise NotImplementedError

    def sample_files(self) -> Iterable[str]:
        """The files the samples are read from (checked unchanged when a run resumes), streamed."""
        return ()

    def sample_sources(self) -> Iterable[str | Member]:
        """Where each sample's bytes lie, in sample order (what the tensor cache checks a tensor's
        source against): its own file by default (:meth:`sample_files`); a task whose reader holds
        samples inside containers gives each one's member (its digest taken when listed)."""
        return self.sample_files()

    def sample_images(self) -> list[SampleImage]:
        """The samples' encoded images in id order, read as the run reads them: what a calibration
        from the dataset takes (its slice, a repair's search part). By default one image file per
        sample (:meth:`sample_files`); a task whose reader holds samples inside containers gives
        them by id through that reader."""
        return [file_image(path) for path in self.sample_files()]

    def listed_members(self) -> Sequence[tuple[str, Member]]:
        """(id, member) of every sample the dataset's reader lists inside a container, before any
        selection: what calibration images are checked disjoint from (by the id's file name and
        the listed sha256). Empty for a task without a container: its folder is listed instead."""
        return ()

    def reference_pass(self) -> ReferencePass | None:
        """A pass over the same inputs with a reference delegate before the measured one, or None."""
        return None

    def extra_metrics(
        self, reference_ms: Sequence[float] | None, test_ms: Sequence[float]
    ) -> Mapping[str, Any]:
        """Metrics made from the loop's timing or from what this session saw rather than from records
        (inference_diff's latencies; a check that fails the run goes under ``failed_checks``, which
        the definition's :func:`~evalharness.tasks.definition.failed_checks` reads)."""
        return {}

    def artifacts(self) -> Mapping[str, object]:
        return self.definition.artifacts(self.evaluator.scorer)


def live_task(
    definition: TaskDefinition, task: Mapping[str, Any], model: Any, dataset: Any, split: Any = None
) -> Task:
    """The definition's live task for a run's checked settings: ``task`` the task group's checked
    values, ``model`` and ``dataset`` instances of their schemas extended with the task's fields,
    ``split`` the dataset split the run lists (None: the whole list).

    A live class with ``typed_inputs`` (every built-in task) gets them typed: the task
    group as an instance of the definition's ``schema``, ``model`` and ``dataset`` as given, ``split`` as a
    keyword. Any other (a plug-in that reads plain values by key) gets them through this one
    adapter: plain JSON dicts, the split inside ``dataset`` as ``dataset["split"]``."""
    cls = live_class(definition)
    if getattr(cls, "typed_inputs", False):
        own: Any = build(definition.schema, thaw(task), "config group 'task'")
        return cast(Task, cls(own, model, dataset, split=thaw(split)))
    plain = thaw(dataset)
    # ``dataset["split"]`` of a plain-dict plug-in is the held-out split, as it always was; the
    # typed ``dataset.split`` (which split of a container root: data/splits.py) is not theirs
    plain.pop("split", None)
    if split is not None:
        plain["split"] = thaw(split)
    return cast(Task, cls(thaw(task), thaw(model), plain))


def shard_of(dataset: Any, split: Mapping[str, Any] | None) -> Shard:
    """The run's shard of a typed ``dataset`` (its ``shard`` group) with the dataset ``split``."""
    return Shard.from_config({"shard": thaw(dataset.shard), "split": split})


def checked_spec(model: Any) -> PreprocessSpec:
    """A typed ``model``'s preprocessing, checked as ``spec_from_config`` checks a plain one."""
    spec: PreprocessSpec = model.preprocess
    validate_spec(spec)
    return spec


def bound_input(task: Any) -> InputSpec:
    """A file-image task's input spec, which ``bind`` sets (the loop binds before it prepares or
    scores a sample): asked for before that is a programming error, not a run's."""
    spec: InputSpec | None = getattr(task, "input", None)
    if spec is None:
        raise RuntimeError(f"{type(task).__name__}: a sample prepared or scored before bind()")
    return spec


# What the run loop runs (loop/engine.py): a task, or the reference pass it runs first.
Looped = Task | ReferencePass


def input_layout(task: Any) -> str | None:
    """``nhwc`` / ``nchw`` of a task's image input (its bound ``InputSpec``, ``task.input``), so the
    records' ``input_float_sha256`` compares two layouts (loop/input_identity.py); None: as fed."""
    return getattr(getattr(task, "input", None), "layout", None)


class ImageCacheKey(TypedDict):
    """The tensor-cache key of a file-image task (:func:`image_cache_key`)."""

    task: str
    manifest: str  # the images' manifest sha256
    preprocessing: dict[str, Any]  # the recipe and the bound input spec


class FailedChecks(TypedDict, total=False):
    """:meth:`Task.extra_metrics` of a task whose session can fail a check: ``failed_checks``, absent
    when none failed."""

    failed_checks: list[str]


def image_cache_key(
    task: Any, entry: Callable[[Any], tuple[str, str | Member]] = lambda s: (s.key, s.path)
) -> ImageCacheKey:
    """Tensor-cache key of an image task: its images (manifest; ``entry``: a sample's key and its
    file, or its container member) and its preprocessing recipe, including the bound input spec
    (shape, dtype, quantisation) the tensors were made for."""
    return {
        "task": task.name,
        "manifest": samples_identity(task.samples, entry)["manifest_sha256"],
        "preprocessing": preprocessing_provenance(task.spec, task.input),
    }
