"""The seams hold: no import cycles, the layers import one way, no task named outside its plug-in."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from evalharness.scoring import task_definitions

PACKAGE = Path(__file__).resolve().parents[1] / "evalharness"


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in PACKAGE.rglob("*.py")}


def imports(name: str) -> set[str]:
    """evalharness modules ``name`` imports anywhere in its file (top level or inside functions)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - node.level + 1], base]).strip(".")
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in MODULES and t != name}
    return found


GRAPH = {name: imports(name) for name in MODULES}


def test_no_import_cycles():
    """Tarjan's strongly connected components over every import, lazy ones included."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for name in sorted(MODULES):
        if name not in index:
            visit(name)
    assert cycles == []


@pytest.mark.parametrize(
    "layer, forbidden",
    [
        ("evalharness.data", ("evalharness.report", "evalharness.tasks", "evalharness.job")),
        ("evalharness.runtime", ("evalharness.report", "evalharness.tasks", "evalharness.scoring")),
        ("evalharness.report", ("evalharness.runtime", "evalharness.tasks", "evalharness.job")),
        ("evalharness.scoring", ("evalharness.runtime", "evalharness.tasks", "evalharness.report")),
        ("evalharness.rundir", ("evalharness.report", "evalharness.tasks", "evalharness.runtime")),
    ],
)
def test_layers_import_one_way(layer, forbidden):
    offenders = sorted(
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        if name == layer or name.startswith(layer + ".")
        for target in targets
        if target.startswith(forbidden)
    )
    assert offenders == []


def _own_modules(task: str) -> set[str]:
    return {f"evalharness.scoring.{task}", f"evalharness.tasks.{task}"}


def test_no_task_name_compared_as_a_string_outside_its_plugin():
    """A task's name appears as a string only in its own definition and live modules (docstrings and
    messages may mention it; a bare ``"coco"`` constant is how a switch on the task name looks)."""
    names = set(task_definitions().names())
    offenders = []
    for module, path in MODULES.items():
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
            if (
                isinstance(node, ast.Constant)
                and node.value in names
                and id(node) not in docstrings
                and module not in _own_modules(node.value)
            ):
                offenders.append(f"{module}:{node.lineno} {node.value!r}")
    assert offenders == []
