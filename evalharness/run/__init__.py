"""A run from its validated plan (:mod:`evalharness.settings`) to run directory, orchestration only:
the job (prepare, execute, record), Hydra access, the parallel shards and start-up passes, the
run's identity, provenance and summary, ``compare`` and its chains. The model variant a plan asks
for is made by :mod:`evalharness.transforms` (entered through ``transforms.plan``).

May import: core, rundir, data, stats, decoders, runtime, tasks, loop, report, settings, transforms.
"""
