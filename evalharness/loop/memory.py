"""The process's memory as the loop records it: resident set size now and at its peak."""

from __future__ import annotations

import resource
import sys


def current_rss_mb() -> float:
    """Resident set size now (Linux /proc; 0.0 where unavailable)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize() / 2**20
    except (OSError, IndexError, ValueError):
        return 0.0


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far.

    Linux: ``VmHWM`` of /proc/self/status, the peak of this process image. Not ``ru_maxrss``: Linux
    carries the parent's RSS over fork + exec into it, so a run started by a 400 MB process would
    report 400 MB. Elsewhere ``ru_maxrss`` (KiB on Linux/BSD, bytes on macOS).
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, IndexError, ValueError):
        pass
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss / 2**20 if sys.platform == "darwin" else maxrss / 1024
