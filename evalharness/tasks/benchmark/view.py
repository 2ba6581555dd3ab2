"""benchmark_model's results.txt: model size, its timing and memory lines, the cold/warm start-ups."""

from __future__ import annotations

from typing import Any

from evalharness.rundir.metrics_file import Document
from evalharness.tasks.view import TaskView


def cache_lines(passes: dict[str, Any] | None) -> list[str]:
    """The cold/warm lines of results.txt (nothing when the caches were taken as found)."""
    if not passes:
        return []
    lines = [
        f"{state.capitalize()} start ({p['run_dir']}), in us: Init: {p['init'] * 1e3:.0f}, "
        f"First inference: {p['first_inference'] * 1e3:.0f}, Inference (avg): {p['inference_mean'] * 1e3:.1f}"
        for state in ("cold", "warm")
        if (p := passes[state])
    ]
    if r := passes["reduction_pct"]:
        lines.append(
            f"Cold -> warm reduction: init {r['init']:.1f} %, first inference {r['first_inference']:.1f} %"
        )
    return lines


class BenchmarkView(TaskView):
    def summary_lines(self, doc: Document, lines: list[str]) -> list[str]:
        lat, mem, inference = doc.latency, doc.memory, doc.latency.inference
        mean, low, high = _us(inference.mean), _us(inference.min), _us(inference.max)
        warmup_us = (doc.latency.warmup.mean or 0.0) * 1e3
        return [
            f"Model size: {_recorded(doc.provenance.model.bytes) / 2**20:.3f} MB",
            f"Inference timings in us: Init: {_us(lat.init):.0f}, "
            f"First inference: {_us(lat.first_inference):.0f}, Warmup (avg): {warmup_us:.0f}, "
            f"Inference (avg): {mean:.1f}",
            f"count={inference.count} min={low:.0f} max={high:.0f} "
            f"avg={mean:.1f} std={_us(inference.std):.0f} p50={_us(inference.p50):.0f} "
            f"p90={_us(inference.p90):.0f} p99={_us(inference.p99):.0f}",
            f"Memory footprint delta from the start of the tool (MB): init={_recorded(mem.init_delta):.3f} "
            f"overall={_recorded(mem.overall_delta):.3f}",
            f"Peak RSS (MB): {_recorded(mem.peak_rss):.3f}",
            *cache_lines(doc.metrics.values.get("compile_cache")),
        ]


def _recorded(value: float | None) -> float:
    """A figure benchmark_model's lines need: a document without it is not a benchmark run's."""
    if value is None:
        raise TypeError("a benchmark figure is not recorded")
    return value


def _us(ms: float | None) -> float:
    return _recorded(ms) * 1e3
