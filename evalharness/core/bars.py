"""Progress on stderr, the one way every command that takes more than a few seconds shows it: the
run loop (images), ``compare`` (candidates), a repair (model evaluations), ``explain`` (its steps
and the ops it tries) and ``report index`` (the diffs it renders).

A tqdm bar on stderr that clears itself when done (``leave=False``), so stdout keeps only the
results and a finished command leaves no bar behind. Shown by default, as the run loop's is
(``loop.progress=true``); a command whose config has ``loop.progress`` follows it (``compare``, a
repair), and the report commands show theirs always (stderr is not their output).
"""

from __future__ import annotations

from typing import Any

from tqdm import tqdm


def progress(total: float | None, desc: str, unit: str = "step", shown: bool = True, **options: Any) -> Any:
    """A bar of ``total`` steps (None: a count and a rate, when the total is not known beforehand)."""
    return tqdm(total=total, desc=desc, unit=unit, disable=not shown, leave=False, **options)
