"""Why did the answer change? Per-op traces and causal bisection between two runs' paths.

``python -m evalharness.explain RUN_A RUN_B``: see :mod:`evalharness.explain.explainer`. It loads
models, so it lives beside the runtime, not in ``report/`` (which never imports it).

May import: core, rundir, data, stats, decoders, runtime, tasks, loop, report, settings, transforms.
"""
