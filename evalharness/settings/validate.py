"""Compose -> validate -> an immutable :class:`RunSettings`: the one description of what a run will do.

Each group's YAML is built into a frozen instance of its dataclass with
:func:`evalharness.core.schema.build` and read by attribute (``settings.model.path``): the core
groups' schemas are in :mod:`evalharness.settings.groups` (a group a task adds fields to is an
instance of the core schema extended by the task's ``model_schema``/``dataset_schema``,
:func:`evalharness.core.schema.extended`); the task's schema comes from its definition
(:mod:`evalharness.tasks.discovery`), the delegate's and the runner's from the runtime
(``runtime/delegates.py``, ``runtime/runners.py``). So a typo'd key, a wrong type or a missing
mandatory value (``???``) is one ``ConfigError`` line naming the key, before any file is read.
Defaults live in ``conf/``; the dataclasses only say what may be there. Derived values (the thread
budget, a model variant: :mod:`evalharness.transforms`) make a new plan
(:meth:`RunSettings.replace`); nothing edits a validated value in place.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from evalharness.core.errors import ConfigError
from evalharness.core.paths import check_example_folders, check_path_variables
from evalharness.core.schema import build, build_extended, check, field_names, freeze, one_line
from evalharness.loop.engine import LoopSettings
from evalharness.loop.lanes import BATCHED
from evalharness.loop.shape import given_workers
from evalharness.report.tracking.mapping import check_tracking
from evalharness.runtime import DelegatePlan, check_runner, plan_delegate
from evalharness.runtime.source_formats import refuse_for_source
from evalharness.settings.child_processes import check_parallel, check_start_up, parse_parallel
from evalharness.settings.dataset_name import dataset_named
from evalharness.settings.groups import (
    SCHEMAS,
    DatasetSchema,
    ModelSchema,
    PathsSchema,
    QuantSchema,
    RunSettings,
)
from evalharness.settings.model_settings import check_model_file, infer_model_settings
from evalharness.settings.quant_rules import check_quant
from evalharness.settings.renamed_keys import renamed_in_group
from evalharness.settings.thread_budget import Limit, check_count, machine_limit, thread_budget
from evalharness.tasks.definition import times_invokes
from evalharness.tasks.discovery import listed, task_definitions

if TYPE_CHECKING:
    from evalharness.tasks.definition import TaskDefinition


def loop_settings(
    loop: LoopSettings, overrides: list[str], budget: Mapping[str, Any] | None = None
) -> LoopSettings:
    """The loop group as settings; ``loop.workers`` on the command line chooses the loop shape;
    ``loop.lanes=auto`` becomes this process's share of the cores (``budget``: the thread budget's
    record) over ``delegate.num_threads``."""
    shape = given_workers(str(loop.shape).lower(), loop.workers, overrides)
    text = str(loop.lanes).strip().lower()
    if text == "auto" and budget is not None:
        share, threads = budget.get("cores_per_worker") or budget["cores"], budget["num_threads"]
        text = str(max(share // threads, 1) if threads >= 1 else 1)
    elif text != "auto" and not (text.isdigit() and int(text) >= 1):
        raise ConfigError(f"loop.lanes={loop.lanes!r}: use auto or the most instances side by side (1: one)")
    if shape == "lanes" and text == "1":
        raise ConfigError(
            "loop.shape=lanes: loop.lanes=1 (or this process's share of the cores over "
            "delegate.num_threads) allows one instance; use loop.shape=auto"
        )
    return dataclasses.replace(loop, shape=shape, lanes=text)


TASK_EXTENDED = ("model", "dataset")  # core groups a task adds its own fields to


def task_fields(group: str) -> set[str]:
    """The fields some task adds to the core group ``group`` (``model`` or ``dataset``)."""
    definitions = task_definitions()
    schemas = (getattr(definitions.get(task), f"{group}_schema") for task in definitions.names())
    return {name for schema in schemas if schema is not None for name in field_names(schema)}


def check_group(group: str, node: Mapping[str, Any], definition: type | None = None) -> Any:
    """One core group (already resolved) built as its schema, plus the fields the task
    ``definition`` declares for it; fields only other tasks declare are left out unchecked."""
    where = f"config group '{group}'"
    if group not in TASK_EXTENDED:
        return build(SCHEMAS[group], node, where)
    own = getattr(definition, f"{group}_schema", None)
    return build_extended(SCHEMAS[group], own, task_fields(group), node, where)


def check_task_needs(
    definition: TaskDefinition, dataset: DatasetSchema, plan: DelegatePlan, command_line: bool
) -> None:
    """What the task needs of the other groups: samples to shard, a compile cache to empty."""
    if not definition.abilities.reads_dataset and dataset.shard.count > 1:
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


def check_lanes(loop: LoopSettings, plan: DelegatePlan, runner: str, times_invokes: bool) -> None:
    """``loop.shape=lanes`` refused before anything runs where no second instance could run beside
    the first (the loop checks the loaded model once more: a source model's own runtime)."""
    if loop.shape != "lanes":
        return
    why = None
    if times_invokes:
        why = "the task's figures are invoke latencies (task=benchmark, inference_diff): one instance, alone"
    elif runner != "host":
        why = f"runner={runner} invokes on its device"
    elif plan.backend != "interpreter" or plan.external_path:
        why = f"delegate={plan.name} runs on its own device or library (lanes need the CPU interpreter)"
    elif loop.batch_size != 1:
        why = BATCHED
    if why:
        raise ConfigError(f"loop.shape=lanes: {why}; use loop.shape=auto")


def check_counts(limit: Limit, threads: int, loop: LoopSettings, reference: Mapping[str, Any] | None) -> None:
    """The thread and process counts beside ``delegate.num_threads`` against the machine's bound
    (settings/thread_budget.py): the preparing threads, both together, the parallel split, the reference
    delegate's threads."""
    check_count(f"loop.workers={loop.workers}", loop.workers, limit)
    both = (limit.cores if threads == -1 else threads) + loop.workers  # -1: the runtime takes every core
    check_count(f"delegate.num_threads={threads} with loop.workers={loop.workers}", both, limit)
    asked = parse_parallel(loop.parallel)
    if asked != "off":
        p, t = (limit.cores, 1) if isinstance(asked, str) else asked  # auto splits the cores: P x T = cores
        check_count(f"loop.parallel={loop.parallel}", p * t, limit)
    if reference and str(reference.get("num_threads", 1)).lstrip("-").isdigit():
        wanted = int(reference["num_threads"])
        check_count(f"task.reference_delegate.num_threads={wanted}", max(wanted, 1), limit)


def validate(
    cfg: DictConfig,
    launcher: Mapping[str, Any] | None = None,
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
        resolved = cast("dict[str, Any]", OmegaConf.to_container(cfg, resolve=True))  # a DictConfig's
    except OmegaConfBaseException as exc:
        raise ConfigError(f"config: {one_line(exc)}") from None
    check_example_folders(resolved["paths"], resolved["model"], resolved["dataset"])
    inferred, sources = infer_model_settings(
        dict(resolved["model"]), list(overrides or []), resolved["paths"]["cache_dir"]
    )
    dataset_node = dataset_named(dict(resolved["dataset"]), list(overrides or []))
    resolved = {**resolved, "model": inferred, "dataset": dataset_node}
    for group, node in resolved.items():  # a renamed key in a config file: refused with its new name
        if isinstance(node, dict) and (old := renamed_in_group(group, node)):
            raise ConfigError(old)
    definition_class = task_definitions().get(resolved["task"].get("name"))
    groups = {g: check_group(g, resolved[g], definition_class) for g in SCHEMAS}
    check_path_variables(groups["paths"])
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
    model: ModelSchema = groups["model"]
    dataset: DatasetSchema = groups["dataset"]
    paths: PathsSchema = groups["paths"]
    quant: QuantSchema = groups["quant"]
    cache_dir = paths.cache_dir
    plan = plan_delegate(delegate, runner=runner.name, variant_dir=cache_dir)
    definition = definition_class(task)
    rules = definition.rules()  # refuses settings whose fields disagree
    check_task_needs(definition, dataset, plan, command_line)
    loop = loop_settings(groups["loop"], overrides or [], budget)
    check_counts(limit, threads, loop, rules.reference_delegate)
    check_op_profile(loop.op_profile or rules.op_profile, loop.batch_size, runner.name, loop.parallel)
    accelerator = plan.offloads and not plan.expects_xnnpack  # XNNPACK offloads onto the CPU's cores
    check_parallel(loop.parallel, definition, dataset.shard.count, command_line, accelerator)
    check_lanes(loop, plan, runner.name, times_invokes(definition))
    check_quant(quant, definition, dataset, model)
    reference = rules.reference_delegate
    reference_plan = (
        plan_delegate(reference, variant_dir=cache_dir, key="task.reference_delegate") if reference else None
    )
    refuse_for_source(
        model.path, plan, runner=runner.name, runtime=groups["runtime"].name, quant=quant.name,
        op_profile=loop.op_profile or rules.op_profile, reference=reference_plan,
    )  # fmt: skip
    if not model.from_file:  # a file given alone was checked before it was read
        check_model_file(model.path)
    return RunSettings(
        task=task,
        model=model,
        dataset=dataset,
        runtime=groups["runtime"],
        loop=loop,
        delegate_plan=plan,
        paths=paths,
        resolved=freeze(resolved),
        definition=definition,
        reference_plan=reference_plan,
        quant=quant,
        runner=runner,
        thread_budget=freeze(budget),
        model_sources=freeze(sources),
        tracking=tracking,
    )


def validate_job(job: list[str], what: str) -> RunSettings:
    """One job's overrides composed and validated as its run will be (``what`` names it in the error)."""
    from hydra import compose, initialize_config_dir

    from evalharness.core.boundary import describe
    from evalharness.core.paths import CONF_DIR

    job = [a for a in job if not a.startswith("hydra.")]
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose(config_name="config", overrides=job)
        return validate(cfg, None, job, command_line=True)
    except Exception as exc:
        raise ConfigError(f"{what}: {describe(exc)}") from None
