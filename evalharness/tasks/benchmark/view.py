"""benchmark_model's results.txt: model size, its timing and memory lines, the cold/warm start-ups."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
    def summary_lines(self, doc: Mapping[str, Any], lines: list[str]) -> list[str]:
        lat, mem = doc["latency_ms"], doc["memory_mb"]
        inf = {k: v * 1e3 for k, v in lat["inference"].items() if k != "count"}  # ms -> us
        warmup_us = lat["warmup"].get("mean", 0.0) * 1e3
        return [
            f"Model size: {doc['provenance']['model']['bytes'] / 2**20:.3f} MB",
            f"Inference timings in us: Init: {lat['init'] * 1e3:.0f}, "
            f"First inference: {lat['first_inference'] * 1e3:.0f}, Warmup (avg): {warmup_us:.0f}, "
            f"Inference (avg): {inf['mean']:.1f}",
            f"count={lat['inference']['count']} min={inf['min']:.0f} max={inf['max']:.0f} "
            f"avg={inf['mean']:.1f} std={inf['std']:.0f} p50={inf['p50']:.0f} p90={inf['p90']:.0f} "
            f"p99={inf['p99']:.0f}",
            f"Memory footprint delta from the start of the tool (MB): init={mem['init_delta']:.3f} "
            f"overall={mem['overall_delta']:.3f}",
            f"Peak RSS (MB): {mem['peak_rss']:.3f}",
            *cache_lines(doc["metrics"].get("compile_cache")),
        ]
