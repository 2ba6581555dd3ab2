"""``metrics.json`` ``provenance`` as typed blocks: what ran (model, runtime, delegate), on what
(dataset, labels, preprocessing, host) and how (thread budget, config, overrides, assumptions).

Each block keeps the JSON object it was read from (``raw``): the maps whose keys belong to the run
(the config, delegate flags, preprocessing, labels, host facts) are compared field by field and
shown whole, and what a user names by a dotted path (a sweep column) is looked up in it by
:mod:`evalharness.rundir`. Every field the code reads by name is an attribute here, parsed
tolerantly (:mod:`evalharness.rundir.json_fields`): a missing or mistyped field reads as not recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalharness.rundir.json_fields import (
    JSONMap,
    counts,
    dig,
    integer,
    mapping,
    number,
    objects,
    optional_mapping,
    strings,
    text,
)


@dataclass(frozen=True)
class CalibrationChoice:
    """``calibration.choice``: why ``quant/calibration=auto`` took a slice of the dataset or the
    bundled set (run/calibration_choice.py)."""

    chosen: str | None = None  # dataset | bundled
    min_dataset_images: int | None = None
    reason: str | None = None
    risk: str | None = None

    @classmethod
    def parse(cls, raw: JSONMap) -> CalibrationChoice:
        least = integer(raw, "min_dataset_images")
        return cls(text(raw, "chosen"), least, text(raw, "reason"), text(raw, "risk"))


@dataclass(frozen=True)
class Calibration:
    """``provenance.model.quant.calibration``: the images a quantized variant was calibrated on."""

    source: str | None = None  # dataset: a slice of the run's own list, not scored
    name: str | None = None
    count: int | None = None
    manifest_sha256: str | None = None  # of the calibration ids
    choice: CalibrationChoice = field(default_factory=CalibrationChoice)
    raw: JSONMap = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: JSONMap) -> Calibration:
        choice = CalibrationChoice.parse(mapping(raw, "choice"))
        return cls(
            text(raw, "source"),
            text(raw, "name"),
            integer(raw, "count"),
            text(raw, "manifest_sha256"),
            choice,
            raw,
        )


@dataclass(frozen=True)
class QuantRecord:
    """``provenance.model.quant``: the variant made (``name`` none for the model as given)."""

    name: str | None = None
    calibration: Calibration | None = None  # None: nothing was calibrated
    repair: JSONMap | None = None  # quant.max_drop: the held-out verdict of a repair
    raw: JSONMap = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: JSONMap) -> QuantRecord:
        cal = mapping(raw, "calibration")
        return cls(
            text(raw, "name"), Calibration.parse(cal) if cal else None, optional_mapping(raw, "repair"), raw
        )


@dataclass(frozen=True)
class ModelRecord:
    """``provenance.model``: the file that ran, its inputs and the variant made of it."""

    name: str | None = None
    path: str | None = None
    sha256: str | None = None
    bytes: int | None = None
    inputs: tuple[JSONMap, ...] = ()
    quant: QuantRecord = field(default_factory=QuantRecord)
    raw: JSONMap = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: JSONMap) -> ModelRecord:
        return cls(
            text(raw, "name"),
            text(raw, "path"),
            text(raw, "sha256"),
            integer(raw, "bytes"),
            objects(raw, "inputs"),
            QuantRecord.parse(mapping(raw, "quant")),
            raw,
        )


@dataclass(frozen=True)
class RuntimeRecord:
    """``provenance.runtime``: the interpreter package and its release."""

    name: str | None = None
    package: str | None = None
    version: str | None = None

    @classmethod
    def parse(cls, raw: JSONMap) -> RuntimeRecord:
        return cls(text(raw, "name"), text(raw, "package"), text(raw, "version"))


@dataclass(frozen=True)
class Coverage:
    """``provenance.delegate.coverage``: how much of the graph the delegate took, on what device."""

    ops_total: int | None = None
    ops_delegated: int | None = None
    partitions: int | None = None
    fraction: float | None = None
    ops_on_cpu_by_type: Mapping[str, int] | None = None
    source: str | None = None
    device: JSONMap = field(default_factory=dict)
    raw: JSONMap = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: JSONMap) -> Coverage:
        return cls(
            integer(raw, "ops_total"),
            integer(raw, "ops_delegated"),
            integer(raw, "partitions"),
            number(raw, "fraction"),
            counts(raw, "ops_on_cpu_by_type"),
            text(raw, "source"),
            mapping(raw, "device"),
            raw,
        )


@dataclass(frozen=True)
class DelegateRecord:
    """``provenance.delegate``: the delegate that ran, its flags, library, coverage and compile caches."""

    name: str | None = None
    flags: JSONMap = field(default_factory=dict)
    library: JSONMap | None = None  # an external delegate's library: path, sha256, options
    coverage: Coverage = field(default_factory=Coverage)
    cache: tuple[JSONMap, ...] | None = None  # schema 3: one entry per compile cache; None: not recorded
    raw: JSONMap = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: JSONMap) -> DelegateRecord:
        cache = raw.get("cache")
        return cls(
            text(raw, "name"),
            mapping(raw, "flags"),
            optional_mapping(raw, "library"),
            Coverage.parse(mapping(raw, "coverage")),
            tuple(c for c in cache if isinstance(c, dict)) if isinstance(cache, list) else None,
            raw,
        )

    @property
    def library_sha256(self) -> str | None:
        return text(self.library or {}, "sha256")


@dataclass(frozen=True)
class ShardRecord:
    """``provenance.dataset.shard``: which interleaved part of the list a shard scored."""

    index: int | None = None
    count: int | None = None
    full_count: int | None = None
    raw: JSONMap = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: JSONMap) -> ShardRecord:
        return cls(integer(raw, "index"), integer(raw, "count"), integer(raw, "full_count"), raw)


@dataclass(frozen=True)
class SplitRecord:
    """``provenance.dataset.split``: a run on the held-out part of a list (``whole``: that list)."""

    part: str | None = None
    whole: DatasetRecord | None = None  # None: a split recorded before ``whole`` was
    raw: JSONMap = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: JSONMap) -> SplitRecord:
        whole = mapping(raw, "whole")
        return cls(text(raw, "part"), DatasetRecord.parse(whole) if whole else None, raw)


@dataclass(frozen=True)
class DatasetRecord:
    """``provenance.dataset``: the images scored (manifest hash), their ground truth, shard and split."""

    name: str | None = None
    format: str | None = None
    root: str | None = None
    count: int | None = None
    manifest_sha256: str | None = None
    manifest_kind: str | None = None
    ground_truth: str | None = None
    ground_truth_sha256: str | None = None
    truth_sha256: str | None = None
    container: str | None = None
    shard: ShardRecord | None = None
    split: SplitRecord | None = None
    index_dir: str | None = None  # a container read through its index: where the index lies
    # the split of the dataset's root that was read (``dataset_split.name``; None: no split named)
    dataset_split: str | None = None
    # False: a container read for its images alone (the ground truth beside it: an instances JSON)
    labels_read: bool = True
    raw: JSONMap = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: JSONMap) -> DatasetRecord:
        shard, split = optional_mapping(raw, "shard"), optional_mapping(raw, "split")
        return cls(
            text(raw, "name"),
            text(raw, "format"),
            text(raw, "root"),
            integer(raw, "count"),
            text(raw, "manifest_sha256"),
            text(raw, "manifest_kind"),
            text(raw, "ground_truth"),
            text(raw, "ground_truth_sha256"),
            text(raw, "truth_sha256"),
            text(raw, "container"),
            None if shard is None else ShardRecord.parse(shard),
            None if split is None or not split else SplitRecord.parse(split),
            text(mapping(raw, "index"), "dir"),
            text(mapping(raw, "dataset_split"), "name"),
            raw.get("labels_read") is not False,
            raw,
        )

    @property
    def held_out(self) -> bool:
        """The run scored the held-out part of a split (its variant was calibrated on the rest)."""
        return self.split is not None and self.split.part == "held_out"


@dataclass(frozen=True)
class LabelsRecord:
    """``provenance.labels``: the label file and the label set's identity (its names in order)."""

    path: str | None = None
    sha256: str | None = None
    names_sha256: str | None = None
    count: int | None = None
    raw: JSONMap = field(default_factory=dict, repr=False)
    class_map: str | None = None  # a task's built-in map of classes (COCO's coco80): a name, no file

    @classmethod
    def parse(cls, raw: JSONMap) -> LabelsRecord:
        names = text(raw, "names_sha256")
        return cls(
            text(raw, "path"), text(raw, "sha256"), names, integer(raw, "count"), raw, text(raw, "class_map")
        )


@dataclass(frozen=True)
class HostRecord:
    """``provenance.host``: the machine that ran the loop."""

    hostname: str | None = None
    cpu: str | None = None
    cpu_features: tuple[str, ...] = ()
    raw: JSONMap = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: JSONMap) -> HostRecord:
        return cls(text(raw, "hostname"), text(raw, "cpu"), strings(raw, "cpu_features"), raw)


@dataclass(frozen=True)
class Assumption:
    """One of ``provenance.assumptions``: what the run took for granted, why, and the setting that
    fixes it."""

    what: Any = None
    assumed: Any = None
    why: Any = None
    fix: Any = None

    @classmethod
    def parse(cls, raw: JSONMap) -> Assumption:
        return cls(raw.get("what"), raw.get("assumed"), raw.get("why"), raw.get("fix"))


@dataclass(frozen=True)
class RunConfig:
    """``provenance.config``: the fully resolved config, by group (its keys are the run's)."""

    raw: JSONMap = field(default_factory=dict)

    def group(self, name: str) -> JSONMap:
        """The ``name`` config group (``task``, ``delegate``, ``model``, ...), ``{}`` when absent."""
        return mapping(self.raw, name)

    def section(self, name: str, key: str) -> JSONMap:
        """The object ``key`` of the ``name`` group (``model.decoder``), ``{}`` when absent."""
        return mapping(self.group(name), key)


@dataclass(frozen=True)
class Provenance:
    """``metrics.json`` ``provenance``."""

    model: ModelRecord = field(default_factory=ModelRecord)
    runtime: RuntimeRecord = field(default_factory=RuntimeRecord)
    delegate: DelegateRecord = field(default_factory=DelegateRecord)
    dataset: DatasetRecord = field(default_factory=DatasetRecord)
    labels: LabelsRecord = field(default_factory=LabelsRecord)
    # the recipe, compared field by field (what was fed, derived from it and the input: ``fed``)
    preprocessing: JSONMap = field(default_factory=dict)
    host: HostRecord = field(default_factory=HostRecord)
    thread_budget: JSONMap = field(default_factory=dict)
    evalharness_version: str | None = None
    config: RunConfig = field(default_factory=RunConfig)
    overrides: tuple[str, ...] = ()
    assumptions: tuple[Assumption, ...] = ()
    raw: JSONMap = field(default_factory=dict, repr=False)
    # ``preprocessing.fed``: the input's dtype, arithmetic, values and their sources (none before it)
    fed: JSONMap = field(default_factory=dict)

    @classmethod
    def parse(cls, raw: JSONMap) -> Provenance:
        recipe = mapping(raw, "preprocessing")
        return cls(
            ModelRecord.parse(mapping(raw, "model")),
            RuntimeRecord.parse(mapping(raw, "runtime")),
            DelegateRecord.parse(mapping(raw, "delegate")),
            DatasetRecord.parse(mapping(raw, "dataset")),
            LabelsRecord.parse(mapping(raw, "labels")),
            {k: v for k, v in recipe.items() if k != "fed"},
            HostRecord.parse(mapping(raw, "host")),
            mapping(raw, "thread_budget"),
            text(mapping(raw, "evalharness"), "version"),
            RunConfig(mapping(raw, "config")),
            strings(raw, "overrides"),
            tuple(Assumption.parse(a) for a in objects(raw, "assumptions")),
            raw,
            mapping(recipe, "fed"),
        )

    def named(self, dotted: str) -> Any:
        """A field named by its dotted path (``delegate.flags``), None when not recorded: for lists of
        fields compared or shown by name (the fields a merge's shards must share, a sweep's size
        columns), never for a field the code reads itself (that is an attribute)."""
        return dig(self.raw, dotted)

    @property
    def model_input(self) -> JSONMap:
        """``preprocessing.input``: the model input tensor the recipe filled (size, dtype, scale)."""
        return mapping(self.preprocessing, "input")

    @property
    def input_dtype(self) -> str:
        """The model input tensor's type as the preprocessing recorded it ("" when not recorded)."""
        return str(self.model_input.get("dtype", ""))

    @property
    def loop_shape(self) -> str | None:
        """How the loop ran (``pipelined`` or serial; schema 3), from the thread budget."""
        return text(mapping(self.thread_budget, "loop"), "shape")

    @property
    def loop_lanes(self) -> int:
        """Instances of the model the loop ran side by side (``loop/lanes.py``; 1 before lanes)."""
        return integer(mapping(self.thread_budget, "loop"), "lanes") or 1
