"""Settings are typed after validation and read by attribute: ``settings.model.path``, never
``settings.model["path"]`` or ``settings.model.get("path")``. A read by key of a validated group
cannot be checked by mypy and turns a misspelt key into a silent ``None``; so outside validation
(settings/validate.py builds the groups, core/schema.py is the mechanism) no such read may appear."""

from __future__ import annotations

import ast
import dataclasses
import typing
from pathlib import Path

from evalharness.settings.groups import SCHEMAS, RunSettings

PACKAGE = Path(__file__).resolve().parents[3] / "evalharness"
VALIDATION = {"settings/validate.py", "settings/groups.py", "core/schema.py"}
# names a validated plan goes by (the ``rp`` of older code, ``rc`` of tests included)
PLAN_NAMES = {"settings", "rp", "rc", "run_settings"}
# the typed groups of RunSettings (``task`` and ``runner`` are plug-ins' own checked values)
TYPED_GROUPS = {"model", "dataset", "runtime", "loop", "paths", "quant", "tracking"}


def _chain(node: ast.expr) -> list[str]:
    """``self.rp.model.preprocess`` -> ['self', 'rp', 'model', 'preprocess'] (empty if not a plain chain)."""
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.insert(0, node.attr)
        node = node.value
    return [node.id, *names] if isinstance(node, ast.Name) else []


def _reads_a_group(node: ast.expr) -> bool:
    chain = _chain(node)
    return any(a in PLAN_NAMES and b in TYPED_GROUPS for a, b in zip(chain, chain[1:], strict=False))


def reads_by_key(source: str) -> list[int]:
    """Lines of ``source`` that read a typed settings group (or a value inside one) by key."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Subscript)
            and _reads_a_group(node.value)
            or (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and _reads_a_group(node.func.value)
            )
        ):
            lines.append(node.lineno)
    return sorted(lines)


def test_the_scan_finds_reads_by_key():
    source = (
        "a = rp.model['path']\n"
        "b = settings.dataset.get('root') or {}\n"
        "c = self.rp.model.preprocess['mean']\n"
        "d = run_settings.quant.search['fraction']\n"
        "ok = settings.model.path, rp.task['top_k'], self.settings['top_k'], rp.thread_budget['x']\n"
    )
    assert reads_by_key(source) == [1, 2, 3, 4]


def test_no_settings_group_is_read_by_key_outside_validation():
    found = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if str(path.relative_to(PACKAGE)) not in VALIDATION
        for line in reads_by_key(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "read these settings by attribute (settings.<group>.<field>):\n" + "\n".join(found)


def test_every_typed_group_is_a_frozen_dataclass():
    hints = typing.get_type_hints(RunSettings)
    for group, schema in SCHEMAS.items():
        assert hints[group] is schema, group
        assert schema.__dataclass_params__.frozen, f"{schema.__name__} must be frozen"
        for f in dataclasses.fields(schema):
            kind = typing.get_type_hints(schema)[f.name]
            if dataclasses.is_dataclass(kind):  # nested groups (preprocess, shard, search) too
                assert kind.__dataclass_params__.frozen, f"{group}.{f.name}"


def test_a_validated_plan_is_typed_and_records_the_resolved_config():
    """The bundled defaults and a task that extends ``model`` and ``dataset`` (coco): typed groups,
    the task's own fields read by attribute, and the recorded config the resolved YAML as before."""
    import json

    from conftest import compose_config

    from evalharness.core.schema import thaw
    from evalharness.data.preprocess import PreprocessSpec
    from evalharness.settings.groups import DatasetSchema, ModelSchema
    from evalharness.settings.validate import validate

    settings = validate(compose_config([]))
    assert isinstance(settings.model, ModelSchema) and isinstance(settings.model.preprocess, PreprocessSpec)
    assert settings.dataset.shard.count == 1 and settings.quant.search.scheme == "interleaved"
    assert settings.config() == json.loads(json.dumps(thaw(settings.resolved)))  # plain JSON values
    detector = "model=ssd_mobilenet_v1_coco_quant_postprocess"  # bundled, like the sample model
    coco = validate(compose_config(["task=coco", detector, "dataset=coco_sample"]))
    assert isinstance(coco.model, ModelSchema) and isinstance(coco.dataset, DatasetSchema)
    assert coco.model.class_map in ("coco91", "coco80", "labels")
    assert coco.config()["model"]["path"] == coco.model.path
