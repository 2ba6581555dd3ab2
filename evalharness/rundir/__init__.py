"""The run directory: its files and atomic writes (``files``), who may claim or resume it (``state``),
the one builder of metrics.json (``document``), the typed metrics.json every reader gets
(``metrics_file``, ``provenance_record``; parsed tolerantly by ``json_fields``, an older schema
version migrated) and the one reader of a finished run (``reader``).

May import: core.
"""
