"""A task's defaults are declared once, in conf/task/<name>.yaml (tasks/defaults.py): the settings
schema takes them from there, and no definition module writes one again (a schema field's own
default, or ``settings.get(KEY, VALUE)``), so conf and code cannot drift apart."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from evalharness.tasks.defaults import conf_task, from_conf, setting
from evalharness.tasks.discovery import definition_for

BUILT_IN = ["imagenet", "coco", "inference_diff", "benchmark"]
TASKS_DIR = Path(__file__).resolve().parents[3] / "evalharness" / "tasks"


@pytest.mark.parametrize("name", BUILT_IN)
def test_the_schema_defaults_are_conf_s(name: str) -> None:
    schema = definition_for(name).schema
    conf = conf_task(name)
    assert set(conf) == {f.name for f in dataclasses.fields(schema)}, "every field's default in conf"
    made = schema(**{})  # every field from its default
    assert {key: getattr(made, key) for key in conf} == dict(conf)


def _literal(node: ast.AST | None) -> bool:
    """A written value; ``None``, ``{}`` and ``[]`` are the shape of a missing part, not a default."""
    if isinstance(node, ast.Constant):
        return node.value is not None
    if isinstance(node, (ast.Dict, ast.List, ast.Tuple)):
        return bool(node.keys if isinstance(node, ast.Dict) else node.elts)
    return isinstance(node, (ast.UnaryOp, ast.Lambda))


def _written_again(path: Path, keys: set[str]) -> list[str]:
    """Where ``path`` declares a default of a conf key itself: a class-level ``KEY: T = VALUE`` or
    ``field(default=VALUE)``, or a ``.get("KEY", VALUE)``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    value = item.value
                    if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "field":
                        value = next((k.value for k in value.keywords if k.arg.startswith("default")), None)
                    if item.target.id in keys and _literal(value):
                        found.append(f"{path.name}:{item.lineno} {node.name}.{item.target.id}")
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "get" and len(node.args) == 2:
            key = node.args[0]
            if isinstance(key, ast.Constant) and key.value in keys and _literal(node.args[1]):
                found.append(f"{path.name}:{node.lineno} .get({key.value!r}, ...)")
    return found


@pytest.mark.parametrize("name", BUILT_IN)
def test_no_task_module_declares_a_default_conf_declares(name: str) -> None:
    keys = set(conf_task(name)) - {"name"}
    found = [hit for path in sorted((TASKS_DIR / name).glob("*.py")) for hit in _written_again(path, keys)]
    assert not found, f"defaults of conf/task/{name}.yaml written again: {found}"


def test_a_schema_that_writes_a_conf_default_again_is_refused() -> None:
    with pytest.raises(TypeError, match="give it once"):

        @dataclasses.dataclass
        @from_conf("imagenet")
        class Twice:
            top_k: int = 10

    with pytest.raises(TypeError, match="give it once"):

        @dataclasses.dataclass
        @from_conf("imagenet")
        class TwiceInAField:
            top_k: int = dataclasses.field(default=10)


def test_a_run_recorded_before_a_setting_existed_reads_as_it_was_made() -> None:
    from evalharness.tasks.coco.definition import RECORDED_BEFORE

    old: dict[str, object] = {"name": "coco", "num_images": 0}  # recorded before analysis and tide
    assert setting(old, "coco", "analysis", RECORDED_BEFORE) is False  # today's default: True
    assert setting(old, "coco", "tide", RECORDED_BEFORE) is True  # today's default: False
    assert setting(old, "coco", "bootstrap_resamples", RECORDED_BEFORE) == 1000  # conf's
    assert setting({**old, "tide": False}, "coco", "tide", RECORDED_BEFORE) is False
