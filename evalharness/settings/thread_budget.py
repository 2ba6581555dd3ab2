"""Thread budget: several evaluation processes on one machine must not oversubscribe its cores.

Two processes each running XNNPACK on all cores fight for them, and the latency figures of both
are silently wrong. ``delegate.num_threads=auto`` gives each process its share of the cores this
process may run on (``os.sched_getaffinity``: a SLURM or cgroup allocation counts, not the host):

- a single run, or a multirun on Hydra's basic (sequential) launcher: all cores;
- ``hydra/launcher=joblib``: ``cores // n_jobs`` (``n_jobs`` < 0 counts as joblib does:
  ``cores + 1 + n_jobs``);
- ``submitit_local`` / ``submitit_slurm``: ``hydra.launcher.cpus_per_task`` (the scheduler's share);
- ``ray``: ``hydra.launcher.ray.remote.num_cpus``.

An explicit ``num_threads`` is kept, but when workers × threads exceeds the cores a warning says so
and metrics.json records ``oversubscribed: true``. Either way ``provenance.thread_budget`` records
cores, workers, the threads used and where they came from. The presets keep ``num_threads: 1`` (the
TFLite evaluation tools' default), so a single run's figures do not depend on the machine's size.

Every thread or process count a run asks for is also bounded by what the machine grants
(:func:`machine_limit`): at most ``OVERSUBSCRIBE`` threads per core this process may run on, and no
more than the cgroup's pids limit leaves (``pids.max - pids.current``, cgroup v2 or v1, every
ancestor's) nor ``RLIMIT_NPROC``. Above it a run would fail part-way (a thread that cannot start,
then a crash inside the runtime), so validation refuses it, naming the key, the value and the bound
(:func:`check_count`); the bound is recorded in ``provenance.thread_budget.bound``.
"""

from __future__ import annotations

import logging
import os
import resource
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from evalharness.core.cores import available_cores
from evalharness.core.errors import ConfigError

log = logging.getLogger("evalharness")
AUTO = "auto"
OVERSUBSCRIBE = 8  # threads per core: above 1 a warning (oversubscribed), above this refused
CGROUP_ROOT = "/sys/fs/cgroup"
PROC_CGROUP = "/proc/self/cgroup"


def launcher_share(launcher: Mapping[str, Any] | None, cores: int) -> tuple[str, int | None, int | None]:
    """(launcher name, concurrent workers on this machine, cores granted per worker), None = unknown."""
    if not launcher:
        return "none", 1, cores
    target = str(launcher.get("_target_", ""))
    name = target.rsplit(".", 1)[-1] or "unknown"
    if "joblib" in target:
        n_jobs = int(launcher.get("n_jobs") or 1)
        workers = n_jobs if n_jobs > 0 else max(cores + 1 + n_jobs, 1)
        return name, workers, max(cores // workers, 1)
    if "submitit" in target:
        cpus = launcher.get("cpus_per_task")
        return name, None, int(cpus) if cpus else None
    if "ray" in target:
        cpus = ((launcher.get("ray") or {}).get("remote") or {}).get("num_cpus")
        return name, None, int(cpus) if cpus else None
    if "BasicLauncher" in target:
        return name, 1, cores
    return name, None, None


class LimitRecord(TypedDict):
    """``provenance.thread_budget.bound``: the thread limit and what set it."""

    bound: int
    because: str
    cores: int
    pids_left: int | None
    nproc: int | None


@dataclass(frozen=True)
class Limit:
    """The most threads (or processes) this process may ask for at once, and what set it."""

    bound: int
    because: str  # the binding limit in words: "8 per core x 2 core(s)", "cgroup pids.max 512 - 500 in use"
    cores: int
    pids_left: int | None  # None: no cgroup pids limit found
    nproc: int | None  # None: RLIMIT_NPROC unlimited

    def record(self) -> LimitRecord:
        return {
            "bound": self.bound,
            "because": self.because,
            "cores": self.cores,
            "pids_left": self.pids_left,
            "nproc": self.nproc,
        }


def _read_int(path: str) -> int | None:
    """An integer file of the cgroup fs; None for ``max``, a missing or unreadable file."""
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            text = f.read(64).strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _cgroup_dirs(root: str, proc_cgroup: str) -> list[str]:
    """The pids controller's directories of this process, innermost first up to the root: cgroup
    v2 (``0::/path``) under ``root``, v1 (``N:...pids...:/path``) under ``root/pids``."""
    found = []
    try:
        with open(proc_cgroup, encoding="utf-8", errors="replace") as f:
            lines = f.read(65536).splitlines()
    except OSError:
        lines = []
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if controllers == "" or "pids" in controllers.split(","):
            found.append((os.path.join(root, "pids") if controllers else root, path.strip("/")))
    found += [(root, ""), (os.path.join(root, "pids"), "")]  # no /proc: the namespace's own root
    dirs: list[str] = []
    for base, path in found:
        parts = path.split("/") if path else []
        for depth in range(len(parts), -1, -1):
            d = os.path.join(base, *parts[:depth])
            if d not in dirs and os.path.isfile(os.path.join(d, "pids.max")):
                dirs.append(d)
    return dirs


def pids_left(root: str = CGROUP_ROOT, proc_cgroup: str = PROC_CGROUP) -> tuple[int, str] | None:
    """(tasks the cgroup still allows, the words), the tightest of this cgroup and its ancestors;
    None where no pids limit applies."""
    best = None
    for d in _cgroup_dirs(root, proc_cgroup):
        limit = _read_int(os.path.join(d, "pids.max"))
        if limit is None:
            continue
        used = _read_int(os.path.join(d, "pids.current")) or 0
        left = max(limit - used, 0)
        if best is None or left < best[0]:
            best = (left, f"cgroup pids.max {limit} - {used} in use ({d})")
    return best


def nproc_limit() -> int | None:
    """``RLIMIT_NPROC`` (processes and threads of this user), None when unlimited."""
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    except (AttributeError, ValueError, OSError):
        return None
    return None if soft == resource.RLIM_INFINITY or soft < 0 else int(soft)


def machine_limit() -> Limit:
    """The one bound on thread and process counts: cores x OVERSUBSCRIBE, the cgroup's pids left,
    RLIMIT_NPROC, whichever is lowest (at least 1)."""
    cores = available_cores()
    pids, nproc = pids_left(), nproc_limit()
    options = [(OVERSUBSCRIBE * cores, f"{OVERSUBSCRIBE} per core x {cores} core(s)")]
    if pids is not None:
        options.append(pids)
    if nproc is not None:
        options.append((nproc, f"RLIMIT_NPROC {nproc}"))
    bound, because = min(options, key=lambda o: o[0])
    return Limit(max(bound, 1), because, cores, pids[0] if pids else None, nproc)


def check_count(setting: str, count: int, limit: Limit) -> None:
    """``setting`` (``key=value``, as the user wrote it) asks for ``count`` threads or processes
    at once: refused above the bound."""
    if count > limit.bound:
        raise ConfigError(
            f"{setting}: {count} threads/processes at once is above this machine's bound of "
            f"{limit.bound} ({limit.because}); use at most {limit.bound}"
        )


def thread_budget(
    requested: int | str, launcher: Mapping[str, Any] | None, limit: Limit | None = None
) -> tuple[int, dict[str, Any]]:
    """(threads to use, the record for metrics.json) for ``delegate.num_threads=requested``.

    ``launcher``: the multirun's ``hydra.launcher`` config (None for a single run); ``limit``: the
    machine's bound (:func:`machine_limit` when not given). Nothing is edited: the caller puts the
    threads into a new plan.
    """
    limit = limit or machine_limit()
    cores = available_cores()
    name, workers, share = launcher_share(launcher, cores)
    if str(requested).lower() == AUTO:
        if share is None:
            raise ConfigError(
                f"delegate.num_threads=auto: the {name} launcher does not say how many cores a job gets; "
                "set hydra.launcher.cpus_per_task (submitit), hydra.launcher.ray.remote.num_cpus (ray) "
                "or a number for delegate.num_threads"
            )
        threads, source = share, f"auto: {cores} cores / {workers or '?'} worker(s)"
    else:
        try:
            threads, source = int(requested), "explicit"
        except (TypeError, ValueError):
            raise ConfigError(
                f"delegate.num_threads={requested!r}: use an integer (-1: the runtime decides) or auto"
            ) from None
    used = cores if threads == -1 else threads  # -1: the runtime picks, assume every core
    check_count(f"delegate.num_threads={requested}", used, limit)
    over = used > (share or cores) if workers is None else workers * used > cores
    if over:
        log.warning(
            "thread budget exceeded: %s worker(s) x %d threads on %d cores; latency figures will suffer "
            "(delegate.num_threads=auto shares the cores)",
            workers or "?",
            used,
            cores,
        )
    return threads, {
        "cores": cores,
        "launcher": name,
        "workers_per_host": workers,
        "cores_per_worker": share,
        "num_threads": threads,
        "source": source,
        "oversubscribed": over,
        "bound": limit.record(),
    }
