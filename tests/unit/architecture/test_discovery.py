"""One discovery path for every plug-in kind: only the registry lists entry points or scans package
folders, and every kind is a :class:`~evalharness.core.registry.Registry` (no plain dict of names)."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "evalharness"
REGISTRY = PACKAGE / "core" / "registry.py"
DISCOVERY = re.compile(r"\bentry_points\s*\(|\biter_modules\s*\(|\bwalk_packages\s*\(|EVALHARNESS_PLUGINS\"")


def test_only_the_registry_discovers_plugins():
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{n}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != REGISTRY
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if DISCOVERY.search(line)
    ]
    assert not found, f"a second discovery path (only core/registry.py discovers plug-ins): {found}"
