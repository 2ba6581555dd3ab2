"""``report merge``: join the shard runs of one evaluation into the run an unsharded job would write.

Nothing is averaged. The per-sample records of every shard are put back in dataset order (the
task's ``abilities.sample_key``: ImageNet's image key, COCO's image id) and the task's own scorer
recomputes the metrics from them (COCO re-scores the union of detections with the run's backend and
the same annotation file). So the merged ``metrics`` block equals an unsharded run's exactly, and the
merged metrics.json is built by the same builder as a live run's (:mod:`evalharness.rundir.document`).

Latency is pooled from the per-invoke samples every prediction line carries (``latency_ms``, one
timed invoke per image), so the merged ``latency_ms.inference`` is the statistics of the union of
all processes' invokes. ``init``/``first_inference`` happen once per process: the merged file gives
their mean and lists every process's figures under ``latency_ms.per_process``; ``warmup`` is pooled
exactly for count/mean/std/min/max (its percentiles need samples that are not stored).

Refused, with the reason: a shard given twice or missing, a sample in two shards, a run that is not
complete, or shards that differ in task, model (sha256), delegate (name, flags, resolver, library),
runtime, preprocessing, labels, ground truth, task settings or the list they were cut from.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from evalharness.core.documents import RunDocument
from evalharness.report.outputs import check_output_dir
from evalharness.report.runs import ReportError, definition_of, malformed
from evalharness.report.summary import results_lines
from evalharness.rundir.document import has_document, holds_run, run_document, write_run
from evalharness.rundir.files import RESULTS_FILE, RunWriter
from evalharness.rundir.metrics_file import parse_document
from evalharness.rundir.provenance_record import ShardRecord
from evalharness.rundir.reader import Run, load_run
from evalharness.rundir.state import hold
from evalharness.stats.latency import summarize
from evalharness.tasks.discovery import and_list, listed
from evalharness.tasks.metrics import result_problems

# provenance fields every shard of one evaluation must share
SAME = (
    "model.sha256",
    "delegate.name",
    "delegate.flags",
    "delegate.op_resolver",
    "delegate.library.sha256",
    "runtime.name",
    "runtime.version",
    "preprocessing",
    "labels.sha256",
    "labels.class_map",
    "decoder.name",
    "dataset.ground_truth_sha256",
    "dataset.shard.count",
    "dataset.shard.scheme",
    "dataset.shard.full_count",
    "dataset.shard.full_manifest_sha256",
    "config.task",
    "config.model.decoder",
)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_shards(runs: list[Run]) -> list[Run]:
    """The runs sorted by shard index, or ReportError naming why they do not form one evaluation."""
    problems = []
    for run in runs:
        if run.status != "complete":
            problems.append(
                f"run {run.dir} is {run.status} ({run.document.stop_reason or run.document.error}): "
                "finish it first (loop.resume=true)"
            )
        elif not definition_of(run).abilities.mergeable:
            mergeable = and_list(listed(lambda d: d.abilities.mergeable))
            problems.append(f"run {run.dir} is a {run.task} run; merge joins {mergeable}")
        elif not (run.provenance.dataset.shard and run.provenance.dataset.shard.raw):
            problems.append(f"run {run.dir} records no dataset.shard (made before sharding existed)")
    if problems:
        raise ReportError("cannot merge: " + "; ".join(problems))
    first = runs[0]
    for run in runs[1:]:
        if run.task != first.task:
            problems.append(f"task differs: {first.task} vs {run.task} ({run.dir})")
        for key in SAME:
            a, b = first.provenance.named(key), run.provenance.named(key)
            if a != b:
                problems.append(f"{key} differs: {_short(a)} ({first.dir}) vs {_short(b)} ({run.dir})")
    if problems:
        raise ReportError("cannot merge shards of different evaluations: " + "; ".join(problems))
    count = _shard(first).count or 0
    seen = Counter(_shard(run).index for run in runs)
    twice = sorted((i for i, n in seen.items() if n > 1), key=lambda i: -1 if i is None else i)
    missing = sorted(set(range(count)) - set(seen))
    if twice:
        problems.append(f"overlapping shards: index {', '.join(map(str, twice))} given more than once")
    if missing:
        problems.append(f"missing shard(s) {', '.join(map(str, missing))} of {count}")
    total = sum(run.provenance.dataset.count or 0 for run in runs)
    full = _shard(first).full_count
    if not problems and total != full:
        problems.append(f"the shards hold {total} samples, the list they were cut from {full}")
    if problems:
        raise ReportError("cannot merge: " + "; ".join(problems))
    return sorted(runs, key=lambda r: _shard(r).index or 0)


def _shard(run: Run) -> ShardRecord:
    """The shard record of a run :func:`check_shards` accepted (it has one)."""
    return run.provenance.dataset.shard or ShardRecord()


def merged_predictions(runs: list[Run]) -> list[dict[str, Any]]:
    """Every shard's records in dataset order; a sample scored twice is refused."""
    key = definition_of(runs[0]).abilities.sample_key
    assert key is not None  # check_shards took only mergeable tasks, which name their sample key
    records = [rec for run in runs for rec in run.predictions]
    dupes = [k for k, n in Counter(rec[key] for rec in records).items() if n > 1]
    if dupes:
        raise ReportError(f"cannot merge: sample {dupes[0]!r} was scored by more than one shard (overlap)")
    return sorted(records, key=lambda rec: rec[key])


def pooled_latency(runs: list[Run], preds: list[dict[str, Any]]) -> dict[str, Any]:
    """Inference statistics over the union of every process's per-invoke samples."""
    per_process = [
        {
            "shard": _shard(run).index,
            "host": run.provenance.host.hostname,
            **run.document.latency.per_process(),
        }
        for run in runs
    ]

    def mean_of(name: str) -> float | None:
        values = [p[name] for p in per_process if p[name] is not None]
        return sum(values) / len(values) if values else None

    return {
        "init": mean_of("init"),
        "first_inference": mean_of("first_inference"),
        "warmup": pooled_summary([p["warmup"] or {"count": 0} for p in per_process]),
        "inference": summarize([p["latency_ms"] for p in preds]),
        "timed_region": runs[0].document.latency.timed_region,
        "per_process": per_process,
        "pooling": "inference: statistics of all processes' per-invoke samples; init and first_inference: "
        "mean over processes; warmup: count/mean/std/min/max pooled exactly",
    }


def pooled_summary(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """count/mean/std(population)/min/max of the union of samples, from per-part summaries."""
    parts = [p for p in parts if p.get("count")]
    n = sum(p["count"] for p in parts)
    if not n:
        return {"count": 0}
    mean = sum(p["count"] * p["mean"] for p in parts) / n
    second = sum(p["count"] * (p["std"] ** 2 + p["mean"] ** 2) for p in parts) / n
    return {
        "count": n,
        "mean": mean,
        "std": max(second - mean**2, 0.0) ** 0.5,
        "min": min(p["min"] for p in parts),
        "max": max(p["max"] for p in parts),
    }


def _peak_rss(run: Run) -> float:
    peak = run.document.memory.peak_rss
    return 0.0 if peak is None else peak


def _all_or_none(values: Iterable[bool | None]) -> bool | None:
    values = list(values)
    return None if None in values else all(values)


def merge_runs(paths: list[str], out_dir: str, provenance: dict[str, Any] | None = None) -> RunDocument:
    """Merge the shard runs at ``paths`` into a run directory ``out_dir``; returns its metrics.json.
    ``provenance``: blocks added to the merged provenance (``loop.parallel``'s record)."""
    if len(paths) < 1:
        raise ReportError("merge needs the run directories of every shard")
    return merge_loaded([load_run(p, f"shard{i}") for i, p in enumerate(paths)], out_dir, provenance)


def merge_loaded(runs: list[Run], out_dir: str, provenance: dict[str, Any] | None = None) -> RunDocument:
    """Merge already loaded shard runs into ``out_dir`` (see :func:`merge_runs`)."""
    runs = check_shards(runs)
    check_output_dir(out_dir, runs)
    with hold(out_dir) as claimed:  # the claim of every writer (rundir/state.py)
        return _merge_into(runs, out_dir, provenance, claimed)


def _merge_into(
    runs: list[Run], out_dir: str, provenance: dict[str, Any] | None, claimed: bool
) -> RunDocument:
    """The merge under ``out_dir``'s lock; ``claimed``: the caller's own claim (``loop.parallel``)."""
    if has_document(out_dir) or (not claimed and holds_run(out_dir)):
        raise ReportError(f"{out_dir} already holds a run; choose another --out")
    definition = definition_of(runs[0])
    with malformed(*runs):
        preds = merged_predictions(runs)
        scorer = definition.rescorer(runs, preds).add_all(preds)
    metrics = {
        **scorer.result(),
        "num_images": _shard(runs[0]).full_count,
        "num_skipped": sum(run.document.metrics.num_skipped or 0 for run in runs),
    }
    problems = result_problems(definition.metrics, metrics)
    if problems:
        raise ReportError(f"the merged result is not a score: {'; '.join(problems)}")
    artifacts = definition.artifacts(scorer)
    doc = merged_document(runs, preds, metrics, sorted(artifacts))
    doc["provenance"].update(provenance or {})
    writer = RunWriter(out_dir)
    for rec in preds:
        writer.append(rec)
    writer.close()
    document = parse_document(doc)
    write_run(writer, document, results_lines(definition, document), artifacts)
    return doc


def merged_document(
    runs: list[Run], preds: list[dict[str, Any]], metrics: dict[str, Any], artifacts: list[str]
) -> RunDocument:
    first = runs[0]
    assert first.task is not None  # merge_loaded refused a run of no mergeable task
    shard = _shard(first).raw
    hosts = sorted({run.provenance.host.hostname for run in runs}, key=str)
    provenance = dict(first.provenance.raw)
    provenance["dataset"] = {
        **first.provenance.dataset.raw,
        "count": shard["full_count"],
        "manifest_sha256": shard["full_manifest_sha256"],
        "shard": {**shard, "index": None},
    }
    overrides = first.provenance.overrides
    provenance["overrides"] = [o for o in overrides if not o.startswith("dataset.shard.index=")]
    return run_document(
        task=first.task,
        status="complete",
        stop_reason=None,
        started_at=min(run.document.started_at or "" for run in runs),
        finished_at=max(run.document.finished_at or "" for run in runs),
        metrics=metrics,
        latency_ms=pooled_latency(runs, preds),
        memory_mb={"peak_rss": max(_peak_rss(r) for r in runs)},
        skipped=[s for run in runs for s in run.document.skipped],
        first_output_repeatable=_all_or_none(run.document.first_output_repeatable for run in runs),
        resumed_samples=sum(run.document.resumed_samples or 0 for run in runs),
        throughput={
            "images_per_s_per_process": [r.document.throughput.images_per_s for r in runs],
            "loop_wall_s_per_process": [r.document.throughput.loop_wall_s for r in runs],
        },
        predictions_count=len(preds),
        artifacts=artifacts,
        provenance=provenance,
        schema_version=min(run.document.schema_version for run in runs),  # old shards stay old
        merged={
            "shards": len(runs),
            "processes": len(runs),
            "hosts": hosts,
            "host_count": len(hosts),
            "scheme": shard["scheme"],
            "runs": [run.dir for run in runs],
            "results_file": RESULTS_FILE,
        },
    )
