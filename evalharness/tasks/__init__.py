"""Tasks: one folder per task, its definition and its live half side by side.

``tasks/<task>/definition.py`` (config schema, abilities, the pure records -> metrics scorer, summary
lines, diff comparisons; never imports ``runtime/`` or a live half, so reports run anywhere) and
``tasks/<task>/live.py`` (samples, input preparation, outputs -> records). The contracts are
:mod:`evalharness.tasks.definition` and :mod:`evalharness.tasks.live`; discovery is
:mod:`evalharness.tasks.discovery`.

May import: core, rundir, data, stats, decoders, runtime. A definition never reaches ``runtime/`` or
a live half; a live half may."""
