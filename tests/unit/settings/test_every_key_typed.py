"""Every key typed: for every config key of every group option (each task, delegate, runner,
tracker, a calibrated and a weight-editing quant variant), a value of the wrong type is one
ConfigError (exit 2) naming the key with its group (``quant.weights.only``), never an internal
error later. Generated from the composed configs and the schemas that declare each key; each
config is composed once and the wrong value set in place, then validated in process (the command
line's ``KEY=VALUE`` reaches :func:`validate` as the same typed value).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any

import pytest
from conftest import compose_config
from omegaconf import OmegaConf

from evalharness.core.errors import ConfigError
from evalharness.report.tracking.mapping import TRACKERS
from evalharness.runtime import runners
from evalharness.runtime.delegates import DELEGATES
from evalharness.settings.groups import SCHEMAS
from evalharness.settings.validate import validate
from evalharness.tasks.discovery import task_definitions

# Composed configs that together select every option of each group once (composing costs ~0.3 s:
# options share a config). A key is tried in the first config that holds it; every key's type is
# checked before a config's own trouble (an unavailable delegate is found when it is planned, after).
CONTEXTS: dict[str, list[str]] = {
    "default": [],
    "coco": ["task=coco", "delegate=xnnpack", "tracking=mlflow", "quant=int8"],
    "benchmark": ["task=benchmark", "delegate=gpu", "quant=prune"],
    "inference_diff": ["task=inference_diff", "delegate=npu"],
    "external": ["delegate=external", "runner=adb", "runner.benchmark_binary=/bin/true"],
    "reference": ["delegate=reference"],
}
# Keys whose type is not one OmegaConf can declare, checked by their own code: the value a wrong
# type is tried with. model.decoder: a mapping (its decoder's own schema, decoders/base.py);
# quant.recipe: a name, a file or a list of op configs (settings/quant_rules.py).
FREE_FORM = {"model.decoder": 5, "quant.recipe": 5}


@functools.cache
def composed(context: str) -> Any:
    return compose_config(CONTEXTS[context])


def _group_schema(cfg: Any, group: str) -> type | None:
    definition = task_definitions().get(cfg.task.name)
    if group == "task":
        return definition.schema
    if group == "task.reference_delegate":  # a delegate config inside the task's
        return DELEGATES.get(cfg.task.reference_delegate.name).schema
    if group in ("model", "dataset"):
        own = getattr(definition, f"{group}_schema")
        return own if own is not None else SCHEMAS[group]
    if group == "delegate":
        return DELEGATES.get(cfg.delegate.name).schema
    if group == "runner":
        return runners().get(cfg.runner.name).settings
    if group == "tracking":
        return TRACKERS.get(cfg.tracking.name)
    return SCHEMAS.get(group)


def _field_type(schema: type, parts: list[str], core: type | None = None) -> Any:
    """The declared type of the dotted ``parts`` in ``schema`` (a task's schema falls back on the
    core group's); None when nothing declares it."""
    for kind in filter(None, (schema, core)):
        hints = typing.get_type_hints(kind)
        if parts[0] in hints:
            found = _optional(hints[parts[0]])
            if len(parts) == 1:
                return found
            return _field_type(found, parts[1:]) if dataclasses.is_dataclass(found) else None
    return None


def _optional(kind: Any) -> Any:
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    if typing.get_origin(kind) in (typing.Union, types.UnionType) and len(args) == 1:
        return args[0]
    return kind


def wrong_value(kind: Any) -> Any:
    """A value no field of type ``kind`` takes (as Hydra parses it from the command line)."""
    if kind is bool:
        return "maybe"
    if kind in (int, float):
        return "many"
    if kind is str:
        return [1, 2]
    if typing.get_origin(kind) in (tuple, list):
        return {"a": 1}
    if dataclasses.is_dataclass(kind):
        return "many"
    return None  # Any: untyped


def _leaves(node: Any, prefix: str = "") -> list[str]:
    keys = []
    for key in node:
        value = node[key] if not OmegaConf.is_missing(node, key) else None
        dotted = f"{prefix}{key}"
        if OmegaConf.is_dict(value) and dotted not in FREE_FORM:
            keys += _leaves(value, dotted + ".")
        else:
            keys.append(dotted)
    return keys


def _split(key: str) -> tuple[str, list[str]]:
    """(the group whose schema declares ``key``, the rest of its path)."""
    if key.startswith("task.reference_delegate."):
        return "task.reference_delegate", key.split(".")[2:]
    group, *parts = key.split(".")
    return group, parts


def declared(cfg: Any, key: str) -> Any:
    group, parts = _split(key)
    schema = _group_schema(cfg, group)
    core = SCHEMAS.get(group) if group in ("model", "dataset") else None
    return _field_type(schema, parts, core) if schema is not None and parts else None


def cases() -> list[tuple[str, str]]:
    """(context, key): each key once, in the first context whose schemas declare it (a dataset key
    only another task reads is left out of this task's check, as the config file says it)."""
    seen, found = set(), []
    for context in CONTEXTS:
        cfg = composed(context)
        for key in _leaves(cfg):
            if key.split(".")[0] == "hydra" or key in seen or key.endswith(".name"):
                continue  # a name picks the option (its own error: unknown option)
            if key in FREE_FORM or declared(cfg, key) is not None or not _declared_elsewhere(key):
                seen.add(key)
                found.append((context, key))
    return found


def _declared_elsewhere(key: str) -> bool:
    return any(declared(composed(c), key) is not None for c in CONTEXTS if key in _leaves(composed(c)))


CASES = cases()


def test_the_suite_covers_every_group():
    assert len(CASES) > 100
    assert {key.split(".")[0] for _, key in CASES} >= {"model", "dataset", "task", "delegate", "runner",
                                                      "loop", "quant", "paths", "tracking"}  # fmt: skip


@pytest.mark.parametrize(("context", "key"), CASES, ids=[f"{c}:{k}" for c, k in CASES])
def test_a_wrong_typed_value_is_one_error_naming_the_key(context, key):
    cfg = composed(context)
    value = FREE_FORM[key] if key in FREE_FORM else wrong_value(declared(cfg, key))
    assert value is not None, f"{key}: no type declared ({declared(cfg, key)})"
    cfg = cfg.copy()
    OmegaConf.set_struct(cfg, False)
    OmegaConf.update(cfg, key, value, merge=False)
    with pytest.raises(ConfigError) as err:
        validate(cfg, None, [f"{key}={value}"])
    message = str(err.value)
    assert key in message and "\n" not in message, message
    assert "internal error" not in message
