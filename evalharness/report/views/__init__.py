"""The report views and renderers: tables of a diff, an analysis, the quantization table, the
pull-request comment, the HTML page and its figures, the per-op profile table. Pure: documents in,
sections or bytes out; escaping through :mod:`evalharness.core.escape`."""
