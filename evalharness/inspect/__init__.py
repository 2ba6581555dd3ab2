"""``evalharness inspect MODEL``: what a ``.tflite`` file is, what evalharness would make of it, and
what each delegate on this host really takes (:mod:`evalharness.inspect.facts`).

May import: core, rundir, data, stats, decoders, runtime, tasks, loop, report, settings, transforms, run, explain."""  # noqa: E501
