"""Cold or warm compile caches: init and first-inference figures compare only within one state.

Reads ``provenance.delegate.cache`` (schema 3; see ``runtime/compile_cache.py`` for the states). A run
recorded before schema 3 has no cache record: its state is unknown and nothing is claimed about it.
"""

from __future__ import annotations

from evalharness.rundir.reader import Run

# The figures a cache changes; gates on them refuse a pair recorded in different cache states.
CACHE_SENSITIVE = ("latency_init", "latency_first_inference")
ALLOW_FLAG = "--allow-cache-mismatch"


def cache_state(run: Run) -> str | None:
    """``"mesa_shader_cache=warm"`` (one per cache, sorted); ``"none"`` when the backend uses none
    (a cache recorded ``off`` is not used: the reference kernels and the Interpreter's XNNPACK both
    start without one); ``None`` when the run predates the record."""
    records = run.provenance.delegate.cache
    if records is None:
        return None
    states = sorted(f"{r['kind']}={r['state']}" for r in records if r["state"] != "off")
    return ", ".join(states) or "none"


def cache_mismatch(a: Run, b: Run) -> str | None:
    """The warning line when both runs recorded their caches and the states differ."""
    sa, sb = cache_state(a), cache_state(b)
    if sa is None or sb is None or sa == sb:
        return None
    return (
        f"cache state differs: {sa} (A) vs {sb} (B): latency_init and latency_first_inference "
        "compare compile caches, not delegates"
    )


def gated_on_cache(rule_names: list[str]) -> list[str]:
    """The rule metric names a cache mismatch makes meaningless."""
    return [n for n in rule_names if n.lower() in CACHE_SENSITIVE]


def sweep_note(runs: list[Run]) -> str | None:
    """A sweep table's warning when its jobs ran with different cache states."""
    states = {s for s in (cache_state(r) for r in runs) if s is not None}
    if len(states) < 2:
        return None
    return (
        "WARNING: jobs ran with different compile-cache states ("
        + "; ".join(sorted(states))
        + "): their init and first-inference figures do not compare"
    )
