"""Typed validation of the composed Hydra config.

Each group's YAML is merged onto a dataclass schema here, so a typo'd key, a wrong type or a
missing mandatory value (``???``) becomes one ``ConfigError`` line naming the key, before any file
is read. Defaults live in ``conf/``; the dataclasses only say what may be there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from evalharness.data.preprocess import PreprocessSpec
from evalharness.errors import ConfigError
from evalharness.loop import LoopSettings
from evalharness.runtime import DelegatePlan, check_runner, plan_delegate


@dataclass
class ImageNetTaskSchema:
    name: str = "imagenet"
    top_k: int = 10
    num_images: int = 0


@dataclass
class CocoTaskSchema:
    name: str = "coco"
    num_images: int = 0
    backend: str = "pycocotools"  # pycocotools | faster_coco_eval
    tflite_tool_ap: bool = True  # also report AP as TFLite's coco_object_detection tool defines it


@dataclass
class InferenceDiffTaskSchema:
    name: str = "inference_diff"
    num_runs: int = 50
    seed: int = 0
    min_cosine: float = 0.95
    zero_tol: float = 1e-6
    fail_on_check: bool = True
    reference_delegate: Any = None  # a delegate config (dict); default {name: reference, num_threads: 1}


@dataclass
class BenchmarkTaskSchema:
    name: str = "benchmark"
    num_runs: int = 50
    min_secs: float = 1.0
    max_runs: int = 100000
    seed: int = 0


TASK_SCHEMAS = {
    "imagenet": ImageNetTaskSchema,
    "coco": CocoTaskSchema,
    "inference_diff": InferenceDiffTaskSchema,
    "benchmark": BenchmarkTaskSchema,
}


@dataclass
class PreprocessSchema:
    crop: str = PreprocessSpec.crop
    crop_fraction: float = PreprocessSpec.crop_fraction
    crop_padding: int = PreprocessSpec.crop_padding
    resize: str = PreprocessSpec.resize
    channel_order: str = PreprocessSpec.channel_order
    mean: list[float] = field(default_factory=lambda: list(PreprocessSpec.mean))
    std: list[float] = field(default_factory=lambda: list(PreprocessSpec.std))
    integer_input: str = PreprocessSpec.integer_input
    letterbox: bool = PreprocessSpec.letterbox
    pad_value: float = PreprocessSpec.pad_value


@dataclass
class ModelSchema:
    name: str = "???"
    path: str = "???"
    labels: str = "???"
    preprocess: PreprocessSchema = field(default_factory=PreprocessSchema)
    decoder: Any = None  # detectors: {name: ssd_postprocess | yolo, ...decoder parameters}
    class_map: str = "coco91"  # detectors: coco91 | coco80 | labels (model class -> COCO category id)


@dataclass
class ShardSchema:  # evalharness.data.shard: which part of the sample list this run scores
    index: int = 0
    count: int = 1
    scheme: str = "interleaved"  # interleaved | contiguous


@dataclass
class DatasetSchema:
    name: str = "???"
    root: str = "???"
    ground_truth: Any = None
    format: str = "auto"
    class_names: Any = None
    synset_words: Any = None
    devkit_meta: Any = None
    annotations: Any = None  # COCO instances JSON (task=coco)
    shard: ShardSchema = field(default_factory=ShardSchema)


@dataclass
class RuntimeSchema:
    name: str = "litert"


@dataclass
class LoopSchema:
    warmup_runs: int = 1
    strict: bool = True
    progress: bool = True
    resume: bool = False
    overwrite: bool = False
    workers: int = 1
    prefetch: int = 4
    cache: str = "auto"


@dataclass
class QuantSchema:  # conf/quant: a post-training-quantized variant of the float model (evalharness/quant.py)
    name: str = "none"
    recipe: Any = None  # ai-edge-quantizer recipe (evalharness/runtime/quantize.py RECIPES); null = float
    io_dtype: Any = None  # integer recipes: the I/O type they make (int8 | int16)
    integer_input: Any = None  # model.preprocess.integer_input for a variant with integer inputs
    calibration: Any = None  # {name, roots: [folders], num_images}; calibrated recipes only


@dataclass
class PathsSchema:
    models_dir: str = "models"
    data_dir: str = "data"
    cache_dir: str = "~/.cache/evalharness"


SCHEMAS = {
    "model": ModelSchema,
    "dataset": DatasetSchema,
    "runtime": RuntimeSchema,
    "loop": LoopSchema,
    "paths": PathsSchema,
    "quant": QuantSchema,
}


@dataclass(frozen=True)
class RunConfig:
    task: dict
    model: dict
    dataset: dict
    runtime: dict
    loop: LoopSettings
    plan: DelegatePlan
    paths: dict
    resolved: dict  # the whole config, resolved once (recorded in metrics.json and run_state.json)
    quant: dict = field(default_factory=lambda: {"name": "none", "recipe": None})
    runner: dict = field(default_factory=lambda: {"name": "host"})


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def check_group(group: str, node: dict) -> dict:
    """Merge one (already resolved) group onto its schema; returns a plain dict."""
    return _check(SCHEMAS[group], group, node)


def _check(schema: type, group: str, node: dict) -> dict:
    try:
        merged = OmegaConf.merge(OmegaConf.structured(schema), node)
        container = OmegaConf.to_container(merged, resolve=True, throw_on_missing=True)
    except OmegaConfBaseException as exc:
        raise ConfigError(f"config group '{group}': {_one_line(exc)}") from None
    return container


def validate(cfg: DictConfig) -> RunConfig:
    """Check every group of a composed config and plan the delegate (unavailable -> error now)."""
    missing = [g for g in (*SCHEMAS, "task", "delegate", "runner") if g not in cfg]
    if missing:
        raise ConfigError(f"config is missing group(s): {', '.join(missing)}")
    try:  # resolve against the whole config: groups interpolate ${paths.*} and ${bundled:...}
        resolved = OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as exc:
        raise ConfigError(f"config: {_one_line(exc)}") from None
    groups = {g: check_group(g, resolved[g]) for g in SCHEMAS}
    if str(groups["loop"]["cache"]).lower() not in ("auto", "true", "false"):
        raise ConfigError(
            f"loop.cache={groups['loop']['cache']!r}: use true, false or auto (on in multiruns)"
        )
    task_name = resolved["task"].get("name")
    if task_name not in TASK_SCHEMAS:
        from evalharness.tasks import load_tasks

        load_tasks().get(task_name)  # raises with the list of valid task names
        raise ConfigError(f"task {task_name!r} has no config schema")
    groups["task"] = _check(TASK_SCHEMAS[task_name], "task", resolved["task"])
    if "???" in resolved["delegate"].values():
        missing = [k for k, v in resolved["delegate"].items() if v == "???"]
        raise ConfigError(f"config group 'delegate': missing value(s) for {', '.join(missing)}")
    groups["runner"] = check_runner(resolved["runner"], latency_only_task=task_name == "benchmark")
    plan = plan_delegate(resolved["delegate"], runner=groups["runner"]["name"])
    return RunConfig(
        task=groups["task"],
        model=groups["model"],
        dataset=groups["dataset"],
        runtime=groups["runtime"],
        loop=LoopSettings(**groups["loop"]),
        plan=plan,
        paths=groups["paths"],
        resolved=resolved,
        quant=groups["quant"],
        runner=groups["runner"],
    )
