"""What a task is, once its samples have run: a :class:`TaskDefinition` per task, registered by name.

A task plug-in is two modules. Its *definition* (a module of this package, or any module named in
``EVALHARNESS_PLUGINS`` / the ``evalharness.plugins`` entry-point group) declares the task's config
schema, its :class:`Abilities`, its metrics with their meta (:mod:`evalharness.tasks.metrics`) and
how they are scored: the pure records -> metrics :class:`Scorer` (the live run, ``report rescore``
and ``report merge`` all call it). What ``report diff`` pairs is its
:class:`~evalharness.tasks.comparison.Comparison`; how its results read where the generic
presenters say too little is its :class:`~evalharness.tasks.view.TaskView` — both named by the
definition, neither in it, so a definition stays a declaration (at most 15 members). Its *live*
half (named by ``TaskDefinition.live``, imported only by a run) lists samples, prepares inputs and
turns model outputs into records. Definitions import neither the runtime nor the live tasks, so the
reports run on a machine without the accelerator.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from evalharness.core.documents import JSONMap
from evalharness.core.errors import EvalHarnessError
from evalharness.core.registry import Registry
from evalharness.rundir.reader import Run
from evalharness.stats.validity import Rule
from evalharness.tasks.comparison import Comparison
from evalharness.tasks.metrics import Metric
from evalharness.tasks.view import TaskView

DEFINITIONS: Registry[type[TaskDefinition]] = Registry("task", package="evalharness.tasks")


def register(cls: type[TaskDefinition]) -> type[TaskDefinition]:
    """Class decorator: make ``cls`` the definition of the task ``cls.name``."""
    return DEFINITIONS.register(cls.name)(cls)


S = TypeVar("S", bound="Scorer")


class Scorer:
    """records -> metrics, one record at a time: ``add`` each record, then ``result``.

    Pure: the same records give the same metrics wherever they come from (the live loop, an earlier
    session of a resumed run, the predictions.jsonl of a finished run, the shards of a merge).
    """

    def add(self, record: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def add_checked(self, record: Mapping[str, Any]) -> None:
        """``add`` of a record known to be well formed (made by this process, or checked already),
        without the checks a record read back from a file gets: a scorer whose checks cost time
        (a seg record's masks) skips them here."""
        self.add(record)

    def result(self) -> JSONMap:
        """metrics.json ``metrics``: a block whose keys are the task's (its definition's metrics)."""
        raise NotImplementedError

    def add_all(self: S, records: Iterable[Mapping[str, Any]]) -> S:
        for record in records:
            self.add(record)
        return self


@dataclass(frozen=True)
class Abilities:
    """What a task can do, read by the run, the reports and explain, so no caller probes a task."""

    reads_dataset: bool = True  # samples come from dataset files (shardable, cacheable)
    sample_key: str | None = None  # record field that orders records in dataset order
    can_resume: bool = False  # an interrupted run continues from its predictions.jsonl
    rescorable: bool = False  # ``report rescore`` recomputes its metrics from its records
    writes_predictions: bool = True  # one predictions.jsonl line per sample
    latency_only: bool = False  # measures speed only (runners with their own timer refuse it)
    rescore_ignores: tuple[str, ...] = ()  # metrics that echo settings (not recomputed values)
    # the metric ``quant.max_drop`` bounds (higher is better), with the comparison's
    # ``paired_records``; None: the task's quantized variants cannot be repaired. A comparison may
    # choose another by the model (``Comparison.repair_metric``: COCO's mask or keypoint AP)
    repair_metric: str | None = None
    # task settings the parts of a repair or a layer search score each candidate with: the costly
    # extras a search never reads (COCO: intervals, analysis), as (key, value) pairs
    search_scoring: tuple[tuple[str, Any], ...] = ()
    # ``report export``: a record field holding a list of equal-length rows (a detector's boxes),
    # exported one row per element with these column names; None: one row per record
    export_rows: tuple[str, tuple[str, ...]] | None = None
    # a container's members carry the ground truth (a class label each); False: the images alone are
    # read from a container, the ground truth lies beside it (COCO's instances JSON)
    container_labels: bool = True

    @property
    def mergeable(self) -> bool:
        """Shards of a run can be joined: records in dataset order and a scorer over them."""
        return self.reads_dataset and self.sample_key is not None


@dataclass(frozen=True)
class Rules:
    """What a task's settings ask of the run, planned with the rest of the config."""

    # the delegate config of a reference pass the task runs first (the same inputs through a golden
    # path); None: no reference pass
    reference_delegate: Mapping[str, Any] | None = None
    # what makes the run's invoke latencies a valid measurement (``latency_ms.validity``); the
    # defaults are ``evalharness compare``'s
    latency: Rule = field(default_factory=Rule)
    # the task asks for the per-op profile itself (``loop.op_profile`` asks for it on any task)
    op_profile: bool = False
    # cold/warm start-ups measured again in child processes before the loop (cold | warm | both:
    # evalharness/run/start_up.py); ``as_found``: none, the caches are taken as found
    start_up: str = "as_found"
    # ``metrics.failed_checks`` fail a complete run (exit 1); False: they are recorded only
    fail_on_checks: bool = True


class TaskDefinition:
    """The declaration of one task: what it is, can do and measures, and how it scores. Defaults
    below; a task overrides what it has. How it reads and compares lives in its view and comparison
    (named here), so this class stays at most 15 members (tests/unit/tasks count them)."""

    name: ClassVar[str]
    schema: ClassVar[type]  # dataclass of the ``task`` config group (checked by evalharness.core.schema)
    # dataclasses of the fields this task adds to the ``dataset`` and ``model`` groups (beyond the
    # core's name/root/shard and name/path/labels/preprocess/decoder): every field a task reads is
    # declared by the task, so the core config knows no task
    dataset_schema: ClassVar[type | None] = None
    model_schema: ClassVar[type | None] = None
    live: ClassVar[str]  # "module:Class" of the live half (evalharness.tasks.live.Task subclass)
    listing_order: ClassVar[int] = 100  # where the task appears when tasks are listed
    abilities: ClassVar[Abilities] = Abilities()
    metrics: ClassVar[tuple[Metric, ...]] = ()  # its numbers with their meta, in display order
    comparison: ClassVar[type[Comparison] | None] = None  # how two runs pair (``report diff``)
    view: ClassVar[type[TaskView]] = TaskView  # how its results read beyond the generic presenters

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.settings = settings  # the run's ``task`` config group

    def scorer(self, ground_truth: Any = None) -> Scorer:
        """A fresh scorer for these settings; a task adds its own keyword overrides (e.g. top_k,
        backend) as ``report rescore`` offers them. ``ground_truth``: what the scorer needs beyond
        the records (a live run passes what it already loaded)."""
        raise NotImplementedError

    def rescorer(
        self,
        runs: list[Run],
        records: list[dict[str, Any]],
        top_k: int | None = None,
        backend: str | None = None,
    ) -> Scorer:
        """The scorer that recomputes the metrics of ``runs`` (one run: rescore; its shards: merge) from
        ``records``; ``top_k``/``backend``: what ``report rescore`` asks to change."""
        if top_k is not None or backend is not None:
            raise EvalHarnessError(f"--top-k/--backend do not apply to task {self.name}")
        return self.scorer()

    def artifacts(self, scorer: Scorer) -> Mapping[str, object]:
        """Extra run files made from the scored records (name -> JSON object or row iterator)."""
        return {}

    def rules(self) -> Rules:
        """What these settings ask of the run; refuses (ConfigError) settings whose fields disagree
        with each other (a field's own bounds are in the schema). Called with the config's checks."""
        return Rules()


def times_invokes(definition: TaskDefinition) -> bool:
    """Whether a run's figures are invoke latencies (``task=benchmark``; a task comparing a reference
    pass's latencies with its own): one instance of the model runs, alone — never lanes, which put
    another beside each invoke. Read by validation (``loop.shape=lanes`` refused before anything
    runs) and by the loop (``Task.side_by_side``)."""
    return definition.abilities.latency_only or bool(definition.rules().reference_delegate)


def failed_checks(definition: TaskDefinition, metrics: dict[str, Any]) -> list[str]:
    """Checks that fail a complete run (exit 1) although every sample was scored: the one place a
    run's failed checks are read, from its metrics (``metrics.failed_checks``, made by the scorer or
    by the live half's ``extra_metrics``), unless the task's rules record them only."""
    if not definition.rules().fail_on_checks:
        return []
    return list(metrics.get("failed_checks") or [])


def comparer(definition: TaskDefinition) -> Comparison | None:
    """The definition's comparison, bound to its settings; None: the task pairs no samples."""
    return definition.comparison(definition) if definition.comparison else None


def view_of(definition: TaskDefinition) -> TaskView:
    """The definition's view, bound to it."""
    return definition.view(definition)
