"""The import graph of ``evalharness/``, read from the source (lazy imports included), and its
figures: rooms (top-level packages and loose modules), floors, arrows, arrows running back up.

``python tests/unit/architecture/import_graph.py [REPO]`` prints the figures (the closing notes of
architecture work quote them, before and after).
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path


class ImportGraph:
    def __init__(self, package: Path) -> None:
        self.package = package
        self.modules = {self._module(p): p for p in package.rglob("*.py")}
        self.edges = {name: self._imports(name) for name in self.modules}

    def _module(self, path: Path) -> str:
        parts = path.relative_to(self.package.parent).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    def _imports(self, name: str) -> set[str]:
        path = self.modules[name]
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
                named = (f"{base}.{a.name}" for a in node.names)
                targets = [t if t in self.modules else base for t in named]
            else:
                continue
            found |= {t for t in targets if t in self.modules and t != name}
        return found

    def reachable(self, name: str) -> set[str]:
        """Every module ``name`` imports, directly or through others."""
        seen, todo = set(), [name]
        while todo:
            for target in self.edges[todo.pop()]:
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        return seen

    def cycles(self) -> list[list[str]]:
        """Strongly connected components of more than one module (Tarjan)."""
        return [c for c in _components(self.edges) if len(c) > 1]

    @staticmethod
    def room(module: str) -> str:
        return ".".join(module.split(".")[:2])

    def arrows(self) -> set[tuple[str, str]]:
        """Room -> room imports (the package's own ``__init__`` is no room of its own)."""
        top = self.package.name
        return {
            (self.room(a), self.room(b))
            for a, targets in self.edges.items()
            for b in targets
            if self.room(a) != self.room(b) and self.room(b) != top
        }

    def figures(self) -> dict:
        arrows = self.arrows()
        rooms = {self.room(m) for m in self.modules}
        graph = {r: {b for a, b in arrows if a == r} for r in rooms}
        component = {r: tuple(c) for c in _components(graph) for r in c}
        back = sorted((a, b) for a, b in arrows if component[a] == component[b])

        @functools.lru_cache(None)
        def floor(c: tuple) -> int:
            below = {component[b] for r in c for b in graph[r] if component[b] != c}
            return 1 + max((floor(x) for x in below), default=0)

        return {
            "rooms": len(rooms),
            "floors": max(floor(component[r]) for r in rooms),
            "arrows": len(arrows),
            "back_up": back,
        }


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
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
            found.append(sorted(component))

    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    for name in sorted(graph):
        if name not in index:
            visit(name)
    return found


if __name__ == "__main__":
    repo = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[3])
    print(ImportGraph(repo / "evalharness").figures())
