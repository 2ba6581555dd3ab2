"""A tracker bounded in wall time, whatever its backend does inside.

MLflow's SQL engine retries a store it cannot open for ~100 s; a server may never answer. Each
logging step (a run, a multirun's parent opened or closed) runs in a daemon thread, waited for at
most ``tracking.timeout_s``; when the time is up the thread is abandoned and told to stop at its
next backend call (``cancelled``), and the step fails with one line. A thread, not a child process:
the step needs the run's files only, nothing of the live run, and an abandoned daemon thread
neither delays the process's exit nor writes to the run directory (the caller records the failure).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

from evalharness.core.errors import EvalHarnessError

T = TypeVar("T")


class TrackingFailed(EvalHarnessError):
    """A tracker that did not take a run: timed out, or its backend's own error in one line."""


def bounded(call: Callable[[], T], timeout_s: float, cancelled: threading.Event) -> T:
    """``call()`` in a daemon thread, waited for at most ``timeout_s``; then ``cancelled`` is set
    (the backend's calls check it, so the abandoned thread stops at its next one) and
    :class:`TrackingFailed` says so. A backend's own error comes back as one line."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = exc

    worker = threading.Thread(target=work, name="evalharness-tracking", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        cancelled.set()
        raise TrackingFailed(f"timed out after {timeout_s:g} s (tracking.timeout_s)")
    error = box.get("error")
    if isinstance(error, EvalHarnessError):
        raise error
    if error is not None:
        text = " ".join(str(error).split())[:200]
        raise TrackingFailed(f"{type(error).__name__}: {text}" if text else type(error).__name__) from None
    return cast(T, box.get("value"))
