"""Defaults live in ``conf/``: where a schema also states a default (the task groups, ``loop``, the
runners), it must be the conf file's value, so the two can never tell different stories. A conf file
lists every field of its schema, and no field its schema lacks."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from evalharness.core.paths import CONF_DIR
from evalharness.loop.engine import LoopSettings
from evalharness.runtime import runners
from evalharness.tasks.discovery import task_definitions


def _defaults(schema: type) -> dict:
    out = {}
    for f in dataclasses.fields(schema):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
            out[f.name] = dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value
    return out


def _yaml(path: Path, key: str | None = None) -> dict:
    doc = yaml.safe_load(path.read_text())
    doc.pop("defaults", None)
    return doc[key] if key else doc


def _agree(schema: type, conf: dict) -> None:
    defaults = _defaults(schema)
    assert sorted(conf) == sorted(defaults), "conf and schema list different fields"
    differ = {k: (conf[k], defaults[k]) for k in conf if conf[k] != defaults[k]}
    assert differ == {}, "conf value != schema default"


@pytest.mark.parametrize("name", task_definitions().names())
def test_task_conf_and_schema_agree(name):
    path = CONF_DIR / "task" / f"{name}.yaml"
    text = path.read_text()
    _agree(task_definitions().get(name).schema, _yaml(path, "task" if "@package _global_" in text else None))


def test_loop_conf_and_schema_agree():
    _agree(LoopSettings, _yaml(CONF_DIR / "config.yaml", "loop"))


@pytest.mark.parametrize("name", runners().names())
def test_runner_conf_and_schema_agree(name):
    _agree(runners().get(name).settings, _yaml(CONF_DIR / "runner" / f"{name}.yaml"))


@pytest.mark.parametrize("old", ["loop.cache", "task.cache", "delegate.cache_dir"])
def test_a_renamed_key_is_refused_with_its_new_name(old):
    from evalharness.settings.overrides import parse
    from evalharness.settings.renamed_keys import RENAMED, renamed_in_group, renamed_override

    assert RENAMED[old] in renamed_override(parse(["model=x", f"+{old}=true"]))
    assert RENAMED[old] in renamed_override(parse([f"~{old}"])) and renamed_override(parse([f"++{old}=1"]))
    group, _, leaf = old.partition(".")
    assert RENAMED[old] in renamed_in_group(group, {leaf: True, "name": "x"})
    assert renamed_override(parse([f"{RENAMED[old]}=true"])) is None
