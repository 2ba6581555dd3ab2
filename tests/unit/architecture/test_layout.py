"""The layout shows the design: rooms stacked one way, no cycles, small modules, no plug-in named
outside itself, and the halves that must run anywhere (task definitions, statistics, reports) never
reach the runtime or a live half."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from import_graph import ImportGraph

from evalharness.runtime.delegates import DELEGATES
from evalharness.tasks.discovery import task_definitions

PACKAGE = Path(__file__).resolve().parents[3] / "evalharness"
GRAPH = ImportGraph(PACKAGE)

# Rooms from the bottom up: a room imports only rooms on lower floors (the entry imports anything).
FLOORS = [
    ("core",),
    ("rundir", "data"),
    ("stats",),
    ("decoders", "runtime"),
    ("tasks",),
    ("loop", "report"),
    ("settings",),
    ("transforms",),
    ("run", "explain"),
    ("inspect",),
]
FLOOR = {f"evalharness.{room}": level for level, rooms in enumerate(FLOORS) for room in rooms}
ENTRY = "evalharness.__main__"
RUNS_ANYWHERE = re.compile(r"^evalharness\.(stats|report)(\.|$)|^evalharness\.tasks\.(\w+\.)?definition$|"
                           r"^evalharness\.tasks\.discovery$")  # fmt: skip
RUNTIME_OR_LIVE = re.compile(r"^evalharness\.runtime(\.|$)|^evalharness\.tasks\.(\w+\.)?live$")
VENDOR_PACKAGES = (
    "ai_edge_litert", "tensorflow", "openvino", "ai_edge_quantizer", "tflite_runtime",
    "onnxruntime", "onnx", "torch",
)  # fmt: skip


def test_no_import_cycles():
    assert GRAPH.cycles() == []


def test_every_room_has_a_floor():
    rooms = {GRAPH.room(m) for m in GRAPH.modules} - {"evalharness", ENTRY}
    assert sorted(rooms - set(FLOOR)) == []


def test_rooms_import_only_downwards():
    offenders = sorted(
        f"{a} (floor {FLOOR[a]}) imports {b} (floor {FLOOR[b]})"
        for a, b in GRAPH.arrows()
        if a != ENTRY and FLOOR[b] >= FLOOR[a]
    )
    assert offenders == []
    assert GRAPH.figures()["back_up"] == []


def test_at_most_three_modules_at_the_top():
    assert len(list(PACKAGE.glob("*.py"))) <= 3


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_over_400_lines(path):
    assert len(path.read_text().splitlines()) <= 400


def test_definitions_stats_and_reports_never_reach_the_runtime_or_a_live_half():
    offenders = sorted(
        f"{name} -> {target}"
        for name in GRAPH.modules
        if RUNS_ANYWHERE.match(name)
        for target in GRAPH.reachable(name)
        if RUNTIME_OR_LIVE.match(target)
    )
    assert offenders == []


def test_delegates_know_no_runner():
    """A delegate plans; where it runs is the runner's business (the runtime's cycles are the
    package's: :func:`test_no_import_cycles`)."""
    offenders = sorted(
        f"{name} -> {target}"
        for name in GRAPH.modules
        if name.startswith("evalharness.runtime.delegates")
        for target in GRAPH.reachable(name)
        if target.startswith(("evalharness.runtime.android", "evalharness.runtime.runners"))
    )
    assert offenders == []


def test_only_the_runtime_imports_vendor_packages():
    offenders = []
    for name, path in GRAPH.modules.items():
        if name.startswith("evalharness.runtime"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            roots = (
                [a.name for a in node.names] if isinstance(node, ast.Import)
                else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )  # fmt: skip
            offenders += [f"{name} imports {r}" for r in roots if r.split(".")[0] in VENDOR_PACKAGES]
    assert offenders == []


def _string_constants(path: Path):
    """String constants of a module, docstrings left out (messages may mention a plug-in)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node


def _is_a_name(node) -> bool:
    """``x.name`` or a variable called ``name``: what a switch on a plug-in's name compares."""
    return (isinstance(node, ast.Attribute) and node.attr == "name") or (
        isinstance(node, ast.Name) and node.id == "name"
    )


def _compared_or_listed(path: Path, names: set[str]) -> list[str]:
    """Where a plug-in name is switched on: a ``name`` compared with one (``plan.name == "gpu"``,
    ``name in ("cpu", "reference")``), or a literal collection made only of plug-in names
    (two or more: ``{"gpu": ..., "nnapi": ...}``)."""
    found = []

    def named(node) -> bool:
        return isinstance(node, ast.Constant) and node.value in names

    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if not any(_is_a_name(o) for o in operands):
                continue
            literal = (ast.Tuple, ast.List, ast.Set)
            parts = [p for o in operands for p in (o.elts if isinstance(o, literal) else [o]) if named(p)]
        elif isinstance(node, ast.Tuple | ast.List | ast.Set | ast.Dict):
            elements = node.keys if isinstance(node, ast.Dict) else node.elts
            parts = elements if len(elements) > 1 and all(named(e) for e in elements) else []
        else:
            continue
        found += [f"{part.lineno} {part.value!r}" for part in parts]
    return found


def test_no_task_name_outside_its_own_folder():
    names = set(task_definitions().names())
    offenders = [
        f"{module}:{node.lineno} {node.value!r}"
        for module, path in GRAPH.modules.items()
        for node in _string_constants(path)
        if node.value in names and not module.startswith(f"evalharness.tasks.{node.value}.")
    ]
    assert offenders == []


def test_no_delegate_name_switched_on_outside_the_delegates():
    """Delegates are asked what they can do (their plan's abilities), never compared by name."""
    names = set(DELEGATES.names())
    own = re.compile(r"^evalharness\.runtime\.delegates(\.|$)")
    offenders = [
        f"{module}:{where}"
        for module, path in GRAPH.modules.items()
        if not own.match(module)
        for where in _compared_or_listed(path, names)
    ]
    assert offenders == []
