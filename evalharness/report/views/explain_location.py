"""Where an explanation of run B against run A lives by default (no runtime import: ``report diff``
reads it to link the explanation when one exists)."""

from __future__ import annotations

import os

HTML_FILE = "explain.html"


def explain_dir(dir_a: str, dir_b: str) -> str:
    """``explain_<A>_vs_<B>`` beside run B's directory: the runs themselves are never written."""
    a, b = (os.path.basename(os.path.abspath(d).rstrip(os.sep)) for d in (dir_a, dir_b))
    return os.path.join(os.path.dirname(os.path.abspath(dir_b)), f"explain_{a}_vs_{b}")
