"""A run from composed config to run directory: settings validated once into a frozen plan, the
job (prepare, execute, record), Hydra access and launchers, thread budget, start-up passes, model
variants and provenance.

May import: core, rundir, data, stats, decoders, runtime, tasks, loop, report.
"""
