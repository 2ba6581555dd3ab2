"""The one registry style: lazy ``module:object`` entries, a base-class check, did-you-mean, and a
plug-in whose module fails to import named as that plug-in."""

from __future__ import annotations

import sys
import types

import pytest

from evalharness.core.errors import ConfigError
from evalharness.core.registry import Registry


class Base:
    pass


class Good(Base):
    pass


@pytest.fixture
def module(monkeypatch):
    """A throw-away module ``fake_plugins`` holding Good and a non-Base object."""
    mod = types.ModuleType("fake_plugins")
    mod.Good, mod.bad = Good, object()
    monkeypatch.setitem(sys.modules, "fake_plugins", mod)
    return mod


def test_lazy_entries_are_named_before_they_are_imported(module):
    reg: Registry = Registry("widget", base=Base, plugins=False)
    reg.register_lazy("good", "fake_plugins:Good")
    assert reg.names() == ["good"] and "good" in reg
    assert reg.get("good") is Good


def test_a_typo_lists_the_valid_names_and_the_closest(module):
    reg: Registry = Registry("widget", base=Base, plugins=False)
    reg.register_lazy("good", "fake_plugins:Good")
    reg.register("other")(Good)
    want = r"unknown widget 'goood'; valid: good, other\. Did you mean 'good'\?"
    with pytest.raises(ConfigError, match=want):
        reg.get("goood")


def test_an_entry_that_is_not_of_the_base_class_is_refused(module):
    reg: Registry = Registry("widget", base=Base, plugins=False)
    reg.register_lazy("bad", "fake_plugins:bad")
    with pytest.raises(ConfigError, match=r"widget 'bad' is .*not a Base"):
        reg.get("bad")
    with pytest.raises(ConfigError, match="not a Base"):
        reg.register("direct")(object())


def test_a_plugin_module_that_fails_to_import_is_named():
    reg: Registry = Registry("widget", plugins=False)
    reg.register_lazy("missing", "no_such_module_anywhere:Thing")
    want = r"widget 'missing': module 'no_such_module_anywhere' cannot be imported"
    with pytest.raises(ConfigError, match=want):
        reg.get("missing")


def test_a_plugin_module_whose_own_code_fails_on_import_is_named(tmp_path, monkeypatch):
    (tmp_path / "broken_plugin.py").write_text("raise RuntimeError('its own bug')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg: Registry = Registry("widget", plugins=False)
    reg.register_lazy("broken", "broken_plugin:Thing")
    want = r"widget 'broken': module 'broken_plugin' failed on import \(RuntimeError: its own bug\)"
    with pytest.raises(ConfigError, match=want):
        reg.get("broken")


def test_a_module_that_does_not_register_the_name_is_an_error(module):
    reg: Registry = Registry("widget", plugins=False)
    reg.register_lazy("silent", "fake_plugins")  # a module that should register "silent" itself
    with pytest.raises(ConfigError, match="did not register it"):
        reg.get("silent")


def test_a_name_registered_twice_is_a_programming_error():
    reg: Registry = Registry("widget", plugins=False)
    reg.register("a")(Good)
    with pytest.raises(ValueError):
        reg.register("a")(Good)
    with pytest.raises(ValueError):
        reg.register_lazy("a", "x:y")


def test_one_discovery_path_imports_every_plugin_module_once(monkeypatch):
    """EVALHARNESS_PLUGINS and the evalharness.plugins entry points are the one path of every kind:
    a plug-in module is imported once, before any registry answers, and registers itself."""
    import evalharness.core.registry as registry

    class EntryPoint:
        name, value = "ep", "fake_installed_plugin"

    groups, imported = [], []

    def entry_points(group):
        groups.append(group)
        return [EntryPoint()]

    def fake_import(name, what):
        imported.append(name)
        if name == "fake_installed_plugin":
            reg.register("from_plugin")(Good)

    monkeypatch.setattr("importlib.metadata.entry_points", entry_points)
    monkeypatch.setattr(registry, "import_plugin", fake_import)
    monkeypatch.setattr(registry, "_discovered", False)
    monkeypatch.setenv("EVALHARNESS_PLUGINS", "fake_named_plugin, fake_installed_plugin")
    reg: Registry = Registry("widget", base=Base)
    assert reg.names() == ["from_plugin"] and reg.names() == ["from_plugin"]
    assert groups == ["evalharness.plugins"]
    assert imported == ["fake_named_plugin", "fake_installed_plugin"]


def test_builtin_folders_are_listed_by_the_registry():
    from evalharness.tasks.definition import DEFINITIONS

    assert {"benchmark", "coco", "imagenet", "inference_diff"} <= set(DEFINITIONS.names())
