"""The run directory: its files and atomic writes (``files``), who may claim or resume it (``state``),
the one builder of metrics.json (``document``) and the one reader of a finished run (``reader``).

May import: core.
"""
