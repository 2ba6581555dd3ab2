"""Compose -> validate -> an immutable :class:`RunSettings`: the one description of what a run will do.

Each group's YAML is checked against a dataclass with :func:`evalharness.core.schema.check`: the core
groups' schemas are here; the task's comes from its definition (:mod:`evalharness.tasks.discovery`), the
delegate's and the runner's from the runtime (``runtime/delegates.py``, ``runtime/runners.py``).
So a typo'd key, a wrong type or a missing mandatory value (``???``) is one ``ConfigError`` line
naming the key, before any file is read. Defaults live in ``conf/``; the dataclasses only say what
may be there. Derived values (the thread budget, a quantized variant) make a new plan
(:meth:`RunSettings.replace`); nothing edits a validated value in place.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from evalharness.core.errors import ConfigError
from evalharness.core.schema import (
    FrozenDict,
    bounds,
    check,
    check_extended,
    field_names,
    freeze,
    one_line,
    thaw,
)
from evalharness.data.preprocess import PreprocessSpec
from evalharness.loop.engine import LoopSettings
from evalharness.loop.shape import given_workers
from evalharness.report.tracking import check_tracking
from evalharness.run.model_settings import check_model_file, infer_model_settings
from evalharness.run.parallel import check as check_parallel
from evalharness.run.parallel import parse as parse_parallel
from evalharness.run.renamed_keys import renamed_in_group
from evalharness.run.thread_budget import Limit, check_count, machine_limit, thread_budget
from evalharness.run.variants import check_quant
from evalharness.runtime import DelegatePlan, check_runner, plan_delegate
from evalharness.tasks.discovery import listed, task_definitions


@dataclass
class ModelSchema:
    """What every task reads of a model; a task adds its own fields (``model_schema`` of its
    definition, e.g. COCO's ``class_map``)."""

    name: str = "???"
    path: str = "???"
    labels: str = "???"
    preprocess: PreprocessSpec = field(default_factory=PreprocessSpec)
    # how to read the outputs as answers (detectors: {name: ssd_postprocess | yolo, ...parameters});
    # a model's own property, read by every task that decodes (coco, inference_diff, explain)
    decoder: Any = None
    from_file: bool = False  # conf/model/file.yaml: fill unset settings from the file (model_settings)


@dataclass
class ShardSchema:  # evalharness.data.shard: which part of the sample list this run scores
    index: int = 0
    count: int = 1
    scheme: str = "interleaved"  # interleaved | contiguous


@dataclass
class DatasetSchema:
    """What every dataset has; a task adds the fields it reads (``dataset_schema`` of its definition:
    ImageNet's ground truth and class lists, COCO's annotations)."""

    name: str = "???"
    root: str = "???"
    shard: ShardSchema = field(default_factory=ShardSchema)


@dataclass
class RuntimeSchema:
    name: str = "litert"


@dataclass
class SearchSchema:  # the dataset split of quant.max_drop / quant/calibration=dataset (data/shard.py Split)
    fraction: float = 0.5  # share of the images the variant is searched (and may be calibrated) on
    scheme: str = field(default="interleaved", metadata=bounds(choices=("interleaved", "contiguous")))


@dataclass
class QuantSchema:  # conf/quant: a post-training-quantized variant of the float model (run/variants.py)
    name: str = "none"
    recipe: Any = None  # ai-edge-quantizer recipe (runtime/quantize.py RECIPES) or a JSON file; null: float
    io_dtype: Any = None  # integer recipes: the I/O type they make (int8 | int16)
    integer_input: Any = None  # model.preprocess.integer_input for a variant with integer inputs
    calibration: Any = None  # {name, source: roots | dataset, roots: [folders], num_images}; calibrated only
    # accuracy-aware repair (run/repair.py): the most the headline metric may drop, absolute or relative
    max_drop: float | None = field(default=None, metadata=bounds(0, 1))
    max_drop_relative: float | None = field(default=None, metadata=bounds(0, 1))
    search: SearchSchema = field(default_factory=SearchSchema)


@dataclass
class PathsSchema:
    models_dir: str = "models"
    data_dir: str = "data"
    cache_dir: str = "~/.cache/evalharness"


SCHEMAS = {
    "model": ModelSchema,
    "dataset": DatasetSchema,
    "runtime": RuntimeSchema,
    "loop": LoopSettings,
    "paths": PathsSchema,
    "quant": QuantSchema,
}


@dataclass(frozen=True)
class RunSettings:
    """Everything a run will do, validated and frozen (FrozenDict groups)."""

    task: FrozenDict
    model: FrozenDict
    dataset: FrozenDict
    runtime: FrozenDict
    loop: LoopSettings
    delegate_plan: DelegatePlan  # how the configured delegate loads here (runtime.delegates)
    paths: FrozenDict
    resolved: FrozenDict  # the whole config after derived values (recorded in metrics.json, run_state)
    definition: Any  # the task's TaskDefinition instance (scorer, abilities, summary lines)
    reference_plan: DelegatePlan | None = None  # the delegate of a task's reference pass (inference_diff)
    quant: FrozenDict = field(default_factory=lambda: freeze({"name": "none", "recipe": None}))
    runner: FrozenDict = field(default_factory=lambda: freeze({"name": "host"}))
    thread_budget: FrozenDict = field(default_factory=FrozenDict)
    # setting -> where its value came from: command line | model file | preset
    model_sources: FrozenDict = field(default_factory=FrozenDict)
    tracking: FrozenDict = field(default_factory=lambda: freeze({"name": "none"}))  # report/callback.py logs

    def replace(self, **changes) -> RunSettings:
        """A new plan with ``changes`` (group values are frozen on the way in)."""
        frozen = {
            k: v if isinstance(v, LoopSettings | DelegatePlan) else freeze(v) for k, v in changes.items()
        }
        return dataclasses.replace(self, **frozen)

    def config(self) -> dict:
        """The resolved config as plain JSON values, for the run files."""
        return thaw(self.resolved)


def loop_settings(node: FrozenDict, overrides: list[str]) -> LoopSettings:
    """The loop group as settings; ``loop.workers`` on the command line chooses the loop shape."""
    values = thaw(node)
    values["shape"] = given_workers(str(values["shape"]).lower(), values["workers"], overrides)
    return LoopSettings(**values)


TASK_EXTENDED = ("model", "dataset")  # core groups a task adds its own fields to


def task_fields(group: str) -> set[str]:
    """The fields some task adds to the core group ``group`` (``model`` or ``dataset``)."""
    definitions = task_definitions()
    schemas = (getattr(definitions.get(task), f"{group}_schema") for task in definitions.names())
    return {name for schema in schemas if schema is not None for name in field_names(schema)}


def check_group(group: str, node: dict, definition: type | None = None) -> FrozenDict:
    """One core group (already resolved) checked against its schema, plus the fields the task
    ``definition`` declares for it; fields other tasks declare pass through unchecked."""
    where = f"config group '{group}'"
    if group not in TASK_EXTENDED:
        return check(SCHEMAS[group], node, where)
    own = getattr(definition, f"{group}_schema", None)
    return check_extended(SCHEMAS[group], own, task_fields(group), node, where)


def check_task_needs(definition, dataset: FrozenDict, plan: DelegatePlan, command_line: bool) -> None:
    """What the task needs of the other groups: samples to shard, a compile cache to empty."""
    from evalharness.run.start_up import check as check_start_up

    if not definition.abilities.reads_dataset and dataset["shard"]["count"] > 1:
        raise ConfigError(
            f"task={definition.name} reads no dataset samples, so dataset.shard.count>1 cannot split it; "
            f"shard {' or '.join(listed(lambda d: d.abilities.mergeable))} runs"
        )
    check_start_up(definition.rules().start_up, plan, command_line)


def check_op_profile(wanted: bool, batch_size: int, runner: str, parallel: str) -> None:
    """The op profile cuts sub-models and runs them on this host, one sample at a time, in the
    run's own process (a merge of shard runs rescores their records and keeps no profile)."""
    if wanted and str(parallel).lower() != "off":
        raise ConfigError(
            f"loop.op_profile with loop.parallel={parallel}: the merged run would keep no profile; "
            "profile with loop.parallel=off (the per-op times do not depend on the split)"
        )
    if wanted and batch_size > 1:
        raise ConfigError(
            f"loop.op_profile times one sample per invoke: use loop.batch_size=1, not {batch_size}"
        )
    if wanted and runner != "host":
        raise ConfigError(
            f"loop.op_profile runs sub-models on this host: use runner=host, not runner={runner}"
        )


def check_counts(limit: Limit, threads: int, loop: LoopSettings, reference: dict | None) -> None:
    """The thread and process counts beside ``delegate.num_threads`` against the machine's bound
    (run/thread_budget.py): the preparing threads, both together, the parallel split, the reference
    delegate's threads."""
    check_count(f"loop.workers={loop.workers}", loop.workers, limit)
    both = (limit.cores if threads == -1 else threads) + loop.workers  # -1: the runtime takes every core
    check_count(f"delegate.num_threads={threads} with loop.workers={loop.workers}", both, limit)
    asked = parse_parallel(loop.parallel)
    if asked != "off":
        p, t = (limit.cores, 1) if asked == "auto" else asked  # auto splits the cores: P x T = cores
        check_count(f"loop.parallel={loop.parallel}", p * t, limit)
    if reference and str(reference.get("num_threads", 1)).lstrip("-").isdigit():
        wanted = int(reference["num_threads"])
        check_count(f"task.reference_delegate.num_threads={wanted}", max(wanted, 1), limit)


def validate(
    cfg: DictConfig,
    launcher: dict | None = None,
    overrides: list[str] | None = None,
    command_line: bool = False,
) -> RunSettings:
    """The one check of a composed config: every group against its schema (a task's own fields
    included), the thread budget applied, the delegate and a task's reference delegate planned
    (unavailable -> error now), what the task needs of the rest checked. Nothing that can refuse a
    run is left for later. ``launcher``: a multirun's ``hydra.launcher`` config (None: single run);
    ``overrides``: the job's command-line overrides (what the user set wins over the model file);
    ``command_line``: the config came from ``python -m evalharness`` (child passes can repeat it)."""
    groups_expected = (*SCHEMAS, "task", "delegate", "runner", "tracking")
    missing = [g for g in groups_expected if g not in cfg and g != "tracking"]
    if missing:
        raise ConfigError(f"config is missing group(s): {', '.join(missing)}")
    unknown = sorted(set(cfg) - set(groups_expected) - {"hydra"})
    if unknown:
        raise ConfigError(
            f"config: unknown top-level key(s) {', '.join(unknown)}; the groups are "
            f"{', '.join(sorted(groups_expected))} (e.g. loop.{unknown[0]}=...)"
        )
    try:  # resolve against the whole config: groups interpolate ${paths.*} and ${bundled:...}
        resolved = OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as exc:
        raise ConfigError(f"config: {one_line(exc)}") from None
    model, sources = infer_model_settings(
        dict(resolved["model"]), list(overrides or []), resolved["paths"]["cache_dir"]
    )
    resolved = {**resolved, "model": model}
    for group, node in resolved.items():  # a renamed key in a config file: refused with its new name
        if isinstance(node, dict) and (old := renamed_in_group(group, node)):
            raise ConfigError(old)
    definition_class = task_definitions().get(resolved["task"].get("name"))
    groups = {g: check_group(g, resolved[g], definition_class) for g in SCHEMAS}
    task = check(definition_class.schema, resolved["task"], "config group 'task'")
    tracking = check_tracking(resolved.get("tracking"))
    delegate = dict(resolved["delegate"])
    if "???" in delegate.values():
        missing = [k for k, v in delegate.items() if v == "???"]
        raise ConfigError(f"config group 'delegate': missing value(s) for {', '.join(missing)}")
    limit = machine_limit()
    threads, budget = thread_budget(delegate.get("num_threads", 1), launcher, limit)
    delegate["num_threads"] = threads
    resolved = {**resolved, "delegate": delegate}
    runner = check_runner(resolved["runner"], definition_class.abilities.latency_only)
    cache_dir = groups["paths"]["cache_dir"]
    plan = plan_delegate(delegate, runner=runner["name"], variant_dir=cache_dir)
    definition = definition_class(task)
    rules = definition.rules()  # refuses settings whose fields disagree
    check_task_needs(definition, groups["dataset"], plan, command_line)
    loop = loop_settings(groups["loop"], overrides or [])
    check_counts(limit, threads, loop, rules.reference_delegate)
    check_op_profile(
        loop.op_profile or rules.op_profile, loop.batch_size, runner["name"], loop.parallel
    )
    accelerator = plan.offloads and not plan.expects_xnnpack  # XNNPACK offloads onto the CPU's cores
    check_parallel(loop.parallel, definition, groups["dataset"]["shard"]["count"], command_line, accelerator)
    check_quant(groups["quant"], definition, groups["dataset"])
    if not groups["model"].get("from_file"):  # a file given alone was checked before it was read
        check_model_file(groups["model"]["path"])
    reference = rules.reference_delegate
    return RunSettings(
        task=task,
        model=groups["model"],
        dataset=groups["dataset"],
        runtime=groups["runtime"],
        loop=loop,
        delegate_plan=plan,
        paths=groups["paths"],
        resolved=freeze(resolved),
        definition=definition,
        reference_plan=plan_delegate(reference, variant_dir=cache_dir) if reference else None,
        quant=groups["quant"],
        runner=runner,
        thread_budget=freeze(budget),
        model_sources=freeze(sources),
        tracking=tracking,
    )
