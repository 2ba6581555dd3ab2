"""Each room's ``__init__`` docstring says what lives there and what it may import, and that line is
the floors table of test_layout.py written out: it cannot drift from what the layout test holds."""

from __future__ import annotations

import ast
import re

import pytest
from test_layout import FLOOR, FLOORS, PACKAGE

NEVER_RUNTIME = {"stats", "report"}  # test_layout: these never reach runtime/ even through another module


def _may_import(room: str) -> list[str]:
    below = [r for rooms in FLOORS[: FLOOR[f"evalharness.{room}"]] for r in rooms]
    return [r for r in below if not (room in NEVER_RUNTIME and r == "runtime")]


@pytest.mark.parametrize("room", [r for rooms in FLOORS for r in rooms])
def test_each_room_says_what_lives_there_and_what_it_may_import(room):
    doc = ast.get_docstring(ast.parse((PACKAGE / room / "__init__.py").read_text(encoding="utf-8"))) or ""
    found = re.search(r"^May import: (.*?)\.(\s|$)", doc, re.M)
    assert found, f"{room}/__init__.py: no 'May import: ...' line in its docstring"
    said = found.group(1)
    expected = ", ".join(_may_import(room)) or "nothing else of evalharness"
    assert said == expected, f"{room}/__init__.py says it may import {said!r}; the floors say {expected!r}"
    assert len(doc.split("May import:")[0].split()) >= 8, f"{room}/__init__.py: say what lives there"


def test_every_package_ships():
    """pyproject lists its packages by hand (conf/ and datasets/ map into the package): a new or
    renamed package folder missing there is absent from a non-editable install."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 on
    project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())
    listed = set(project["tool"]["setuptools"]["packages"])
    found = {
        ".".join(path.parent.relative_to(PACKAGE.parent).parts)
        for path in PACKAGE.rglob("__init__.py")
        if "__pycache__" not in path.parts
    }
    assert found <= listed, f"packages missing from pyproject.toml: {sorted(found - listed)}"
