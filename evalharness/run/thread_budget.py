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
"""

from __future__ import annotations

import logging
import os

from evalharness.core.errors import ConfigError

log = logging.getLogger("evalharness")
AUTO = "auto"


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def launcher_share(launcher: dict | None, cores: int) -> tuple[str, int | None, int | None]:
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


def thread_budget(requested, launcher: dict | None) -> tuple[int, dict]:
    """(threads to use, the record for metrics.json) for ``delegate.num_threads=requested``.

    ``launcher``: the multirun's ``hydra.launcher`` config (None for a single run). Nothing is
    edited: the caller puts the threads into a new plan.
    """
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
    }
