"""Typed settings: the command line read with Hydra's grammar and prechecked before Hydra composes
(``cli``, ``overrides``, ``renamed_keys``, ``config_files``, ``launchers``), then the composed config
validated once into the frozen plan (``validate`` -> ``groups.RunSettings``): the settings a model
file carries, the dataset's name, the thread budget, the quant rules and the settings that repeat
the command line in child processes. Nothing here runs a model or writes a run directory.

May import: core, rundir, data, stats, decoders, runtime, tasks, loop, report.
"""
