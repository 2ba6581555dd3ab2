"""The typed config groups: each core group's schema (a frozen dataclass) and :class:`RunSettings`,
the validated plan made of their instances.

Apart from :mod:`evalharness.settings.validate` (which builds them) so that every reader of a plan can
name its type (``settings: RunSettings``) without importing the validation and what it imports.
A value is read by attribute (``settings.model.path``); a group a task adds fields to is an
instance of the core schema extended by the task's ``model_schema``/``dataset_schema``
(:func:`evalharness.core.schema.extended`), so core readers see the core fields and the task's own
code its own. ``tests/unit/architecture/test_typed_settings.py`` refuses a read by key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from evalharness.core.documents import JSONMap
from evalharness.core.schema import FrozenDict, bounds, freeze, thaw
from evalharness.data.preprocess import PreprocessSpec
from evalharness.loop.engine import LoopSettings
from evalharness.report.tracking.mapping import NoTracking
from evalharness.runtime import DelegatePlan
from evalharness.runtime.runners import HostSettings, RunnerSettings

if TYPE_CHECKING:  # for the type only: a live half is imported when a job runs
    from evalharness.tasks.live import Task


@dataclass(frozen=True)
class ModelSchema:
    """What every task reads of a model; a task adds its own fields (``model_schema`` of its
    definition, e.g. COCO's ``class_map``)."""

    name: str = "???"
    path: str = "???"
    labels: str = "???"
    preprocess: PreprocessSpec = field(default_factory=PreprocessSpec)
    # how to read the outputs as answers (detectors: {name: ssd_postprocess | yolo, ...parameters});
    # a model's own property, read by every task that decodes (coco, inference_diff, explain)
    decoder: dict[str, Any] | None = None
    from_file: bool = False  # conf/model/file.yaml: fill unset settings from the file (model_settings)


@dataclass(frozen=True)
class ShardSchema:  # evalharness.data.shard: which part of the sample list this run scores
    index: int = 0
    count: int = 1
    scheme: str = "interleaved"  # interleaved | contiguous | files (whole shard files of a container)


@dataclass(frozen=True)
class DatasetSchema:
    """What every dataset has; a task adds the fields it reads (``dataset_schema`` of its definition:
    ImageNet's ground truth and class lists, COCO's annotations)."""

    name: str = "???"
    root: str = "???"
    # which split of a root holding several is read (data/splits.py): auto = the validation split
    # (validation, val, valid, val2017, as the format names it), or the only split there is
    split: str = "auto"
    shard: ShardSchema = field(default_factory=ShardSchema)


@dataclass(frozen=True)
class RuntimeSchema:
    name: str = "litert"


@dataclass(frozen=True)
class SearchSchema:  # the dataset split of quant.max_drop / quant/calibration=dataset (data/shard.py Split)
    fraction: float = 0.5  # share of the images the variant is searched (and may be calibrated) on
    scheme: str = field(default="interleaved", metadata=bounds(choices=("interleaved", "contiguous")))


@dataclass(frozen=True)
class WeightsSchema:  # quant.weights: pruning or clustering of the float weights, before any quantization
    method: str = field(default="none", metadata=bounds(choices=("none", "prune", "cluster")))
    sparsity: float = field(default=0.5, metadata=bounds(0, 1))  # prune: share of weights set to zero
    scope: str = field(default="per_tensor", metadata=bounds(choices=("per_tensor", "global")))
    structure: str = field(default="unstructured", metadata=bounds(choices=("unstructured", "2:4")))
    clusters: int = field(default=16, metadata=bounds(2, 65536))  # cluster: centroids per tensor/channel
    init: str = field(default="linear", metadata=bounds(choices=("linear", "kmeans++")))
    per_channel: bool = False  # cluster: centroids per output channel
    min_elements: int = field(default=1024, metadata=bounds(0))  # smaller weight tensors stay dense
    keep_first: bool = True  # the first convolution stays dense
    keep_last: bool = True  # the classifier (last weight tensor) stays dense
    seed: int = 0  # k-means++ draws
    # op indices whose weights are edited (of those that qualify); null: all
    only: tuple[int, ...] | None = None
    scan: bool = False  # sensitivity scan: each tensor edited alone, scored on quant.search's part


@dataclass(frozen=True)
class CalibrationSchema:  # conf/quant/calibration: the images that calibrate a variant (transforms/)
    name: str = "bundled"
    # roots: the folders below; dataset: the dataset's search part (a split); auto: one of the two,
    # chosen against the dataset's size (transforms/calibration_choice.py)
    source: str = field(default="roots", metadata=bounds(choices=("roots", "dataset", "auto")))
    roots: tuple[str, ...] = ()
    num_images: int = field(default=0, metadata=bounds(0))  # 0: all of them (auto: the slice's most)
    min_dataset_images: int = field(default=100, metadata=bounds(0))  # auto: fewer, the roots instead
    max_fraction: float = field(default=0.25, metadata=bounds(0, 1))  # auto: the slice's largest share


@dataclass(frozen=True)
class QuantSchema:  # conf/quant: a variant of the float model (transforms/)
    name: str = "none"
    recipe: Any = None  # ai-edge-quantizer recipe (runtime/quantize.py RECIPES) or a JSON file; null: float
    io_dtype: str | None = None  # integer recipes: the I/O type they make (int8 | int16)
    integer_input: str | None = None  # model.preprocess.integer_input for a variant with integer inputs
    calibration: CalibrationSchema | None = None  # calibrated recipes only
    # accuracy-aware repair (transforms/repair.py): the most the headline metric may drop, absolute
    # or relative
    max_drop: float | None = field(default=None, metadata=bounds(0, 1))
    max_drop_relative: float | None = field(default=None, metadata=bounds(0, 1))
    # the metric they bound (settings/quant_rules.repair_metric); null: the task's, or the model's head's
    metric: str | None = None
    search: SearchSchema = field(default_factory=SearchSchema)
    weights: WeightsSchema = field(default_factory=WeightsSchema)  # runtime/weight_edit.py


@dataclass(frozen=True)
class PathsSchema:
    models_dir: str = "models"
    data_dir: str = "data"
    cache_dir: str = "~/.cache/evalharness"


SCHEMAS: dict[str, type] = {
    "model": ModelSchema,
    "dataset": DatasetSchema,
    "runtime": RuntimeSchema,
    "loop": LoopSettings,
    "paths": PathsSchema,
    "quant": QuantSchema,
}


@dataclass(frozen=True)
class RunSettings:
    """Everything a run will do, validated and frozen: each core group an instance of its schema,
    read by attribute (``settings.model.path``; ``tests/unit/architecture/test_typed_settings.py``
    refuses a read by key). ``task`` is the task's own checked values (FrozenDict); ``runner`` an instance
    of the runner's settings schema (``runtime/runners.py``)."""

    task: FrozenDict
    model: ModelSchema  # with the task's model_schema fields (core.schema.extended)
    dataset: DatasetSchema  # with the task's dataset_schema fields
    runtime: RuntimeSchema
    loop: LoopSettings
    delegate_plan: DelegatePlan  # how the configured delegate loads here (runtime.delegates)
    paths: PathsSchema
    resolved: FrozenDict  # the whole config after derived values (recorded in metrics.json, run_state)
    definition: Any  # the task's TaskDefinition instance (scorer, abilities, summary lines)
    reference_plan: DelegatePlan | None = None  # the delegate of a task's reference pass (inference_diff)
    quant: QuantSchema = field(default_factory=QuantSchema)
    runner: RunnerSettings = field(default_factory=HostSettings)
    thread_budget: FrozenDict = field(default_factory=FrozenDict)
    # setting -> where its value came from: command line | model file | preset
    model_sources: FrozenDict = field(default_factory=FrozenDict)
    tracking: Any = field(default_factory=NoTracking)  # a TRACKERS entry (report/tracking/mapping.py)
    # derived, not configured: the dataset split a repair or dataset calibration implies, with the
    # part this run lists (data/shard.py Split); None: the whole list
    split: FrozenDict | None = None

    def replace(self, **changes: Any) -> RunSettings:
        """A new plan with ``changes`` (typed groups as given, plain values frozen on the way in)."""
        frozen: dict[str, Any] = {
            k: v if dataclasses.is_dataclass(v) or v is None else freeze(v) for k, v in changes.items()
        }
        return dataclasses.replace(self, **frozen)

    def live_task(self, model: ModelSchema | None = None, split: Mapping[str, Any] | None = None) -> Task:
        """The task's live half for this plan (typed, or plain values for a plug-in that reads them
        by key: :func:`evalharness.tasks.live.live_task`): ``model`` a candidate variant's settings
        (its path and preprocessing) instead of the plan's, ``split`` instead of the plan's."""
        from evalharness.tasks.live import live_task

        split = self.split if split is None else split
        return live_task(self.definition, self.task, model or self.model, self.dataset, split)

    def config(self) -> JSONMap:
        """The resolved config as plain JSON values, for the run files."""
        return cast(JSONMap, thaw(self.resolved))
