"""The one place that asks Hydra about the job being run: is it part of a multirun, the
multirun's launcher (for the thread budget), the job's own command-line overrides (for the settings'
provenance), and what ``auto`` means for settings that follow the run mode."""

from __future__ import annotations

from typing import Any, cast

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import OmegaConf


def is_multirun() -> bool:
    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def multirun_launcher() -> dict[str, Any] | None:
    """The multirun's ``hydra.launcher`` config (None for a single run), for the thread budget."""
    if is_multirun():
        return cast(dict[str, Any], OmegaConf.to_container(HydraConfig.get().launcher, resolve=False))
    return None


def job_overrides() -> list[str]:
    """This job's command-line overrides (a multirun job's own values), for settings' provenance."""
    return list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []


def use_cache(setting: str) -> bool:
    if str(setting).lower() == "auto":
        return is_multirun()
    return str(setting).lower() == "true"
