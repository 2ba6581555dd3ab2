"""Run directories the end-to-end tests share: made once per test session, whichever xdist worker
asks first, and read by every test that asks for the same overrides.

A real run costs seconds to minutes; several modules ask for the same one (MobileNet v2 on val50,
reference and CPU; SSD on COCO val25). :class:`RunStore` keys each run by its overrides, makes it
under a file lock in the directory all workers of the session share, and hands the same path to
every later request, in this worker or another. Tests read these directories; a test that changes
a run copies it first (``shutil.copytree``), as the threat-model suites check.

:class:`Runs` is what a module's ``runs`` fixture returns (see :func:`conftest.runs_fixture`):
named variants of one common set of overrides.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

Make = Callable[[list[str], Path], object]


def session_dir(factory: pytest.TempPathFactory) -> Path:
    """The folder every worker of this test session sees: an xdist worker's base temp is
    ``<session base>/popen-gwN``, so its parent; without xdist, the session's own base temp."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class RunStore:
    """Folders made once per session across xdist workers, keyed by name (:meth:`once`) or by a
    run's overrides (:meth:`run`)."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self.root = session_dir(factory) / "shared"
        self.root.mkdir(exist_ok=True)

    def once(self, name: str, make: Callable[[Path], object]) -> Path:
        """``root/name``, filled by ``make(path)`` the first time any worker asks for it. A ``make``
        that raises leaves nothing behind, so the next request tries again (and fails the same way)."""
        path, done = self.root / name, self.root / f"{name}.done"
        if done.exists():
            return path
        with _locked(self.root / f"{name}.lock"):
            if not done.exists():
                shutil.rmtree(path, ignore_errors=True)
                try:
                    make(path)
                except BaseException:
                    shutil.rmtree(path, ignore_errors=True)
                    raise
                done.touch()
        return path

    def run(self, overrides: list[str], make: Make, key: str = "") -> Path:
        """The run directory of ``make(overrides, run_dir)``, made once per session: its folder is
        named by a digest of the overrides (and ``key``: what else the run depends on)."""
        digest = hashlib.sha256(json.dumps([key, *overrides]).encode()).hexdigest()[:16]

        def make_in(folder: Path) -> None:
            folder.mkdir()
            make(overrides, folder / "run")

        return self.once(f"run-{digest}", make_in) / "run"


class Runs(Mapping[str, Path]):
    """A module's run directories: ``runs[name]`` is ``common`` + ``variants[name]``, and
    ``runs(name, *overrides)`` names a variant where a test first needs it. Each is made once per
    session (:class:`RunStore`), when first asked for."""

    def __init__(self, store: RunStore, common: list[str], variants: Mapping[str, list[str]] | None,
                 make: Make, key: str = "") -> None:  # fmt: skip
        self._store, self._common, self._make, self._key = store, common, make, key
        self._variants: dict[str, list[str]] = dict(variants or {})

    def __call__(self, name: str, *overrides: str) -> Path:
        known = self._variants.setdefault(name, list(overrides))
        assert not overrides or known == list(overrides), f"run {name!r} asked for with other overrides"
        return self[name]

    def __getitem__(self, name: str) -> Path:
        return self._store.run([*self._common, *self._variants[name]], self._make, self._key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._variants)

    def __len__(self) -> int:
        return len(self._variants)


def fake_run_dir(
    run_dir: Path,
    doc: Mapping[str, object] | None = None,
    predictions: list[Mapping[str, object]] | None = None,
    files: Mapping[str, str] | None = None,
) -> Path:
    """A run directory written by hand, for tests that need a run's files without running one (or
    a copied run's files changed): ``metrics.json`` from ``doc``, ``predictions.jsonl`` from
    ``predictions`` (one JSON record a line), and ``files``' other files by relative path
    (``{".hydra/overrides.yaml": ...}``)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    if doc is not None:
        (run_dir / "metrics.json").write_text(json.dumps(doc))
    if predictions is not None:
        (run_dir / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in predictions))
    for name, text in (files or {}).items():
        (run_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / name).write_text(text)
    return run_dir


def edit_document(run_dir: Path, **changes: object) -> dict:
    """A run's metrics.json with top-level ``changes`` written over it (``status="partial"``: as an
    interruption leaves it); returns the document written."""
    doc = {**json.loads((run_dir / "metrics.json").read_text()), **changes}
    fake_run_dir(run_dir, doc)
    return doc
