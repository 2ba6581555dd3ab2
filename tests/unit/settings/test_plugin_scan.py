"""Hydra imports every module under ``hydra_plugins`` to find its plug-ins, the launchers' included
(the Ray launcher's config alone is ~50 ms of start-up): a command's scan leaves out the launcher
plug-ins it does not choose, and scans as Hydra does wherever a launcher may be chosen elsewhere."""

from __future__ import annotations

import importlib.util
import pkgutil

import pytest

from evalharness.settings import launchers
from evalharness.settings.launchers import _launchers_needed, scan_plugins

JOBLIB, RAY = "hydra_plugins.hydra_joblib_launcher", "hydra_plugins.hydra_ray_launcher"


@pytest.mark.parametrize(
    "args, needed",
    [
        (["delegate=cpu"], frozenset()),
        (["-m", "hydra/launcher=basic", "delegate=cpu,gpu"], frozenset()),
        (["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"], {JOBLIB}),
        (["-m", "hydra/launcher=local_processes,ray_local"], {JOBLIB, RAY}),
        (["hydra/launcher=mine"], None),  # another plug-in's: any may be needed
        (["hydra/sweeper=optuna"], None),
        (["hydra.launcher._target_=hydra_plugins.x.Launcher"], None),
        (["hydra.searchpath=[file:///tmp/conf]"], None),
        (["--config-dir", "/tmp/conf"], None),  # a user's config may choose one
        (["--info", "plugins"], None),  # Hydra lists them all
        (["task.num_images=="], None),  # not Hydra's grammar: its error, as before
    ],
)
def test_the_launchers_a_command_line_needs(args, needed):
    assert _launchers_needed(args) == needed


def test_the_scan_leaves_out_the_launchers_not_chosen_and_scans_again_for_one_that_is(monkeypatch):
    if importlib.util.find_spec(JOBLIB) is None:
        pytest.skip("the joblib launcher plug-in is not installed")
    from hydra.core.plugins import Plugins
    from hydra.core.singleton import Singleton

    monkeypatch.setattr(Singleton, "_instances", {})  # this process's Hydra registry left as it was
    monkeypatch.setattr(launchers, "_left_out", frozenset())
    walk = pkgutil.walk_packages

    def found() -> set[str]:
        return {name.rsplit(".", 2)[0] for name in Plugins.instance().class_name_to_class}

    scan_plugins(["delegate=cpu"])
    assert pkgutil.walk_packages is walk
    assert JOBLIB not in found() and "hydra._internal.core_plugins" in found()
    scan_plugins(["-m", "hydra/launcher=joblib"])  # a second command in the same process needs it
    assert JOBLIB in found()
    plugins = Plugins.instance()
    scan_plugins(["delegate=cpu"])  # a registry that holds more than needed is kept
    assert Plugins.instance() is plugins
