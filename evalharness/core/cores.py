"""The cores this process may run on, the one count every room sizes its threads by."""

from __future__ import annotations

import os


def available_cores() -> int:
    """``os.sched_getaffinity``'s count (a SLURM or cgroup allocation counts, not the host's cores);
    ``os.cpu_count()`` where the platform has no affinity (not Linux)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
