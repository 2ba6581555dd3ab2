"""Making a variant of a model is one room's work (``transforms/``), behind one contract; ``run/``
orchestrates and stays small. Variants are made from the typed settings with
``dataclasses.replace``, never by thawing settings into a dict, editing it and building it again."""

from __future__ import annotations

import ast

from test_layout import GRAPH, PACKAGE

RUN_MODULES_AT_MOST = 20
# what run/ may import of transforms/: the plan that makes a plan's variant, and the contract
TRANSFORMS_PUBLIC = {
    "evalharness.transforms",
    "evalharness.transforms.plan",
    "evalharness.transforms.variant",
}
# the runtime's primitives of a transform: the quantizer's calls and the flatbuffer-level weight edits
PRIMITIVES = {"evalharness.runtime.quantize", "evalharness.runtime.weight_edit"}
# a quant recipe name is checked with the quantizer's own list while settings are validated
PRIMITIVE_READERS = {"evalharness.settings.quant_rules"}


def test_run_keeps_orchestration_only():
    modules = sorted(p.name for p in (PACKAGE / "run").glob("*.py"))
    assert len(modules) <= RUN_MODULES_AT_MOST, modules


def test_run_reaches_transforms_only_through_their_contract():
    offenders = sorted(
        f"{name} imports {target}"
        for name, targets in GRAPH.edges.items()
        if name.startswith("evalharness.run")
        for target in targets
        if target.startswith("evalharness.transforms") and target not in TRANSFORMS_PUBLIC
    )
    assert offenders == []


def test_only_transforms_call_the_runtime_primitives_of_a_transform():
    """Outside ``runtime/``, the quantizer and the weight edits are called from ``transforms/`` only:
    what decides, searches, caches or records a variant lives there, not in ``run/`` or elsewhere."""
    offenders = sorted(
        f"{name} imports {target}"
        for name, targets in GRAPH.edges.items()
        if not name.startswith(("evalharness.runtime", "evalharness.transforms"))
        and name not in PRIMITIVE_READERS
        for target in targets & PRIMITIVES
    )
    assert offenders == []


def _thaw_calls(source: str) -> list[int]:
    return sorted(
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and (
            isinstance(node.func, ast.Name)
            and node.func.id == "thaw"
            or isinstance(node.func, ast.Attribute)
            and node.func.attr == "thaw"
        )
    )


def test_the_scan_finds_thaw_calls():
    assert _thaw_calls("from x import thaw\nm = thaw(settings.model)\nn = schema.thaw(q)\n") == [2, 3]
    assert _thaw_calls("thawed = settings.model\n") == []


def test_run_and_transforms_never_thaw_settings():
    """A variant is ``dataclasses.replace`` of the frozen model settings or plan (``RunSettings.replace``)."""
    offenders = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for room in ("run", "transforms")
        for path in sorted((PACKAGE / room).rglob("*.py"))
        for line in _thaw_calls(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
