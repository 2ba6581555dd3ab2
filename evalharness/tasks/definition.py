"""What a task is, once its samples have run: a :class:`TaskDefinition` per task, registered by name.

A task plug-in is two modules. Its *definition* (a module of this package, or any module named in
``EVALHARNESS_PLUGINS`` / the ``evalharness.plugins`` entry-point group) declares the task's config
schema, its abilities, and everything that works from a run directory alone: the pure
records -> metrics :class:`Scorer` (the live run, ``report rescore`` and ``report merge`` all call
it), the headline metrics and ``results.txt`` lines, and what ``report diff`` compares. Its *live*
half (named by ``TaskDefinition.live``, imported only by a run) lists samples, prepares inputs and
turns model outputs into records. Definitions import neither the runtime nor the live tasks, so the
reports run on a machine without the accelerator.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, TypeVar

from evalharness.core.errors import EvalHarnessError
from evalharness.core.registry import Registry
from evalharness.core.tables import Section
from evalharness.rundir.reader import Run, flatten
from evalharness.stats.validity import Rule

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

    def add(self, record: dict) -> None:
        raise NotImplementedError

    def result(self) -> dict:
        raise NotImplementedError

    def add_all(self: S, records: Iterable[dict]) -> S:
        for record in records:
            self.add(record)
        return self


class TaskDefinition:
    """The declaration of one task. Abilities are class attributes with the defaults below, so no
    caller probes a task with ``hasattr``; a task overrides what it has."""

    name: ClassVar[str]
    schema: ClassVar[type]  # dataclass of the ``task`` config group (checked by evalharness.core.schema)
    # dataclasses of the fields this task adds to the ``dataset`` and ``model`` groups (beyond the
    # core's name/root/shard and name/path/labels/preprocess/decoder): every field a task reads is
    # declared by the task, so the core config knows no task
    dataset_schema: ClassVar[type | None] = None
    model_schema: ClassVar[type | None] = None
    live: ClassVar[str]  # "module:Class" of the live half (evalharness.tasks.live.Task subclass)
    listing_order: ClassVar[int] = 100  # where the task appears when tasks are listed

    # Abilities
    reads_dataset: ClassVar[bool] = True  # samples come from dataset files (shardable, cacheable)
    sample_key: ClassVar[str | None] = None  # record field that orders records in dataset order
    can_resume: ClassVar[bool] = False  # an interrupted run continues from its predictions.jsonl
    rescorable: ClassVar[bool] = False  # ``report rescore`` recomputes its metrics from its records
    writes_predictions: ClassVar[bool] = True  # one predictions.jsonl line per sample
    latency_only: ClassVar[bool] = False  # measures speed only (runners with their own timer refuse it)
    comparison: ClassVar[str | None] = None  # key of the paired comparison in a ``report diff`` document
    sweep_metrics: ClassVar[tuple[str, ...]] = ()  # metric columns of a sweep table
    thumbnails: ClassVar[tuple[str, str] | None] = None  # (diff section key, heading) of changed samples
    # (diff section key, comparison field of rows with ``name`` and ``delta``, title): an HTML bar chart
    delta_figure: ClassVar[tuple[str, str, str] | None] = None
    # (value, p) column names of :meth:`agreement` in a quantization sweep's table and csv
    agreement_columns: ClassVar[tuple[str, str]] = ("agreement", "agreement_p")
    rescore_ignores: ClassVar[tuple[str, ...]] = ()  # metrics that echo settings (not recomputed values)
    # the headline metric ``quant.max_drop`` bounds (higher is better), with :meth:`paired_records`;
    # None: the task's quantized variants cannot be repaired
    repair_metric: ClassVar[str | None] = None

    @classmethod
    def mergeable(cls) -> bool:
        """Shards of a run can be joined: records in dataset order and a scorer over them."""
        return cls.reads_dataset and cls.sample_key is not None

    # Scoring -------------------------------------------------------------------------------------
    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.settings = settings  # the run's ``task`` config group

    def scorer(self, ground_truth: Any = None) -> Scorer:
        """A fresh scorer for these settings; a task adds its own keyword overrides (e.g. top_k,
        backend) as ``report rescore`` offers them. ``ground_truth``: what :meth:`load_ground_truth`
        returns (a live run passes what it already loaded)."""
        raise NotImplementedError

    def load_ground_truth(self, run: Run) -> Any:
        """What the scorer needs beyond the records, from the files the run recorded (checked unchanged)."""
        return None

    def rescorer(self, runs: list[Run], records: list[dict], top_k=None, backend=None) -> Scorer:
        """The scorer that recomputes the metrics of ``runs`` (one run: rescore; its shards: merge) from
        ``records``; ``top_k``/``backend``: what ``report rescore`` asks to change."""
        if top_k is not None or backend is not None:
            raise EvalHarnessError(f"--top-k/--backend do not apply to task {self.name}")
        return self.scorer(self.load_ground_truth(runs[0]))

    def artifacts(self, scorer: Scorer) -> dict[str, object]:
        """Extra run files made from the scored records (name -> JSON object or row iterator)."""
        return {}

    def fractions(self, metrics: dict) -> list[str]:
        """Headline metrics that are fractions: a value outside [0, 1] (COCO's −1) is undefined."""
        return []

    def result_problems(self, metrics: dict) -> list[str]:
        """Invariants of a result, checked where one is made (a run, a resume, a merge): never more
        samples scored than listed, and every fraction in [0, 1] — a value outside is undefined and
        the run ``invalid``, never a score."""
        problems = []
        scored, listed = metrics.get("num_scored"), metrics.get("num_images")
        if isinstance(scored, int) and isinstance(listed, int) and scored > listed:
            problems.append(f"{scored} samples scored of {listed} listed: a sample was counted twice")
        outside = [
            f"{name} {metrics[name]}"
            for name in self.fractions(metrics)
            if isinstance(metrics.get(name), int | float) and not 0 <= metrics[name] <= 1
        ]
        if outside:
            problems.append(f"{', '.join(outside)}: undefined, not in [0, 1]{self.undefined_hint}")
        return problems

    undefined_hint = ""

    def failed_checks(self, metrics: dict) -> list[str]:
        """Checks that fail a complete run (exit 1) although every sample was scored: the one place a
        run's failed checks are read, from its metrics (``metrics.failed_checks``, made by the scorer
        or by the live half's ``extra_metrics``)."""
        return list(metrics.get("failed_checks") or [])

    def check_settings(self) -> None:
        """Refuse settings whose fields disagree with each other (a field's own bounds are in the
        schema); called once, with the rest of the config's checks."""

    def reference_delegate(self) -> Mapping | None:
        """The delegate config of a reference pass the task runs first (the same inputs through a
        golden path), planned with the rest of the settings; None: no reference pass."""
        return None

    def latency_rule(self) -> Rule:
        """What makes the run's invoke latencies a valid measurement (``latency_ms.validity``);
        the defaults are ``evalharness compare``'s."""
        return Rule()

    def op_profile(self) -> bool:
        """The task asks for the per-op profile itself (task=benchmark task.op_profile=true);
        ``loop.op_profile`` asks for it on any task."""
        return False

    def start_up_passes(self) -> str:
        """Cold/warm start-ups the run measures again in child processes before its own loop
        (cold | warm | both: evalharness/run/start_up.py, figures in ``metrics.compile_cache``);
        ``as_found``: none, the caches are taken as found."""
        return "as_found"

    # Reading results -----------------------------------------------------------------------------
    def summary_lines(self, doc: Mapping[str, Any]) -> list[str]:
        """The ``results.txt`` lines (and what the run prints) from a metrics.json document."""
        return [f"{k}: {v:g}" for k, v in self.headline(doc.get("metrics") or {}).items()]

    def headline_accuracy(self, metrics: dict) -> tuple[str, float, list | None, str] | None:
        """The figure a run's summary leads with: (name, value, its interval or None, how that
        interval was made); None for a task that measures speed only."""
        values = {} if self.latency_only else self.headline(metrics)
        if not values:
            return None
        name, value = next(iter(values.items()))
        intervals = metrics.get("intervals") or {}
        return name, value, intervals.get(name), str(intervals.get("method") or "")

    def headline(self, metrics: dict) -> dict[str, float]:
        """Per-run metrics in display order, by the names ``--fail-if`` rules use."""
        return {
            k: v
            for k, v in flatten(metrics).items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }

    # Comparing two runs (report diff) ------------------------------------------------------------
    def compare(self, a: Run, b: Run, options: Mapping[str, Any]) -> dict | None:
        """The paired comparison of two comparable runs (stored under ``comparison``), or None."""
        return None

    def verdict(self, diff: Mapping[str, Any]) -> str:
        """One line a reader can act on. Default: speed is the story (no per-sample pairing)."""
        p50 = next(r for r in diff["latency"] if r["name"] == "latency_p50")
        if p50["speedup"] is None:
            return f"no per-image comparison for task {diff['task']}; no latency to compare"
        boot = ((diff.get("latency_speedup") or {}).get("stats") or {}).get("p50") or {}
        sure = ""
        if boot.get("interval"):
            low, high = boot["interval"]
            sure = f", 95% interval [{low:.3f}, {high:.3f}]" + (": noise" if boot["noise"] else "")
        return (
            f"B's invoke() p50 is {p50['b']:.3f} ms vs A's {p50['a']:.3f} ms (speed-up "
            f"{p50['speedup']:.3f}{sure}); no per-image comparison for task {diff['task']}"
        )

    def agreement(self, a: Run, b: Run) -> dict | None:
        """Cheap sample-by-sample agreement of two runs on the same samples, for the sweep's N×N
        matrix and the quantization table: ``{"name": ..., "value": fraction, "p": p-value or None,
        "samples": how many were paired (optional)}``; None: the task has none."""
        return None

    def pairwise(self, comparison: dict) -> dict[str, float]:
        """The pair quantities ``--fail-if`` rules may name (numbers of the comparison)."""
        return {k: v for k, v in comparison.items() if isinstance(v, int | float) and not isinstance(v, bool)}

    def diff_sections(self, comparison: dict, max_rows: int) -> list[Section]:
        return []

    def figures(self, comparison: dict) -> list[dict]:
        """Plots of the comparison for the HTML report and ``report diff --figures``: dicts with
        ``after`` (section key), ``kind`` (curves | bars | matrix: see
        :mod:`evalharness.report.views.analysis_view`), ``name`` (file stem), ``title`` and the data."""
        return []

    def run_analysis(self, run: Run, max_rows: int) -> tuple[list[Section], list[dict]]:
        """One run's ``metrics.analysis`` as (sections, figure specs as :meth:`figures` makes them)
        for ``report analysis``; a task without one says so."""
        raise EvalHarnessError(f"task {self.name} records no per-run analysis")

    def changed_samples(self, comparison: dict) -> list[tuple[str, str]]:
        """(sample id, caption) of the samples whose answer changed, for thumbnails."""
        return []

    def paired_records(self, records_a: list[dict], records_b: list[dict]) -> dict:
        """``repair_metric`` of B minus A with its paired interval, from two passes' records on the
        same samples, by the code ``report diff`` uses for two runs: ``{"delta", "interval",
        "method", "changed"}`` (``changed``: how many samples' answers differ)."""
        raise EvalHarnessError(f"task {self.name} has no paired comparison of records")
