"""No two modules share a name: ``op_profile`` in two rooms, or ``core`` inside ``explain/`` beside
the ``core/`` package, leaves a reader asking which one an import or a traceback means. A task's
``definition``/``live``/``view``/``comparison`` halves and package markers repeat by design."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "evalharness"
BY_DESIGN = {"__init__", "__main__", "definition", "live", "view", "comparison"}  # a task's halves


def test_no_two_modules_share_a_name():
    places = defaultdict(list)
    for path in PACKAGE.rglob("*.py"):
        if path.stem not in BY_DESIGN:
            places[path.stem].append(str(path.relative_to(PACKAGE)))
    rooms = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    for path in PACKAGE.rglob("*.py"):  # a module named like a room
        if path.stem in rooms and path.parent != PACKAGE:
            places[path.stem].append(str(path.relative_to(PACKAGE)))
    shared = {name: sorted(where) for name, where in places.items() if len(where) > 1}
    assert not shared, f"modules sharing a name: {shared}"
