"""The README stays a first screen and the docs site stays whole (docs/writing-docs.md): the README
under 200 lines with the two commands CI runs verbatim, every command block marked runnable or not
(with the reason), every relative link resolving, and ``mkdocs build --strict`` clean."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import pytest
from docs_examples import REPO, all_blocks, doc_files

README = REPO / "README.md"
RUN_COMMAND = "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && python -m evalharness"
TEST_COMMAND = (
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[dev]' && ruff check . "
    "&& mypy && python -m pytest -q"
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def test_readme_is_a_first_screen():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < 200, f"README.md has {len(lines)} lines: move the detail into docs/"
    assert RUN_COMMAND in lines and TEST_COMMAND in lines  # each alone on its line, verbatim


def test_every_command_block_says_whether_it_runs():
    problems = [f"{b.where}: {p}" for b in all_blocks() if (p := b.problem())]
    assert problems == []
    assert sum(b.runnable for b in all_blocks()) >= 10


@pytest.mark.parametrize("path", [README, REPO / "CONTRIBUTING.md", REPO / "datasets" / "README.md"], ids=str)
def test_relative_links_resolve(path):
    """Links GitHub shows outside the site (mkdocs checks the site's own)."""
    missing = []
    for target in LINK.findall(path.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        if not (path.parent / target.split("#")[0]).exists():
            missing.append(target)
    assert missing == []


def test_docs_pages_are_all_in_the_site():
    built = {p.relative_to(REPO / "docs").as_posix() for p in doc_files() if "docs" in p.parts}
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    assert sorted(p for p in built if p not in nav) == []


def test_mkdocs_build_strict(tmp_path):
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        if os.environ.get("CI"):
            pytest.fail("mkdocs / mkdocs-material not installed: pip install -e '.[dev]' installs them")
        pytest.skip("mkdocs not installed (pip install -e '.[docs]')")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "WARNING" not in proc.stderr, proc.stderr[-4000:]
    assert (tmp_path / "site" / "index.html").is_file()


GROUP_CHOICE = re.compile(
    r"(?<![\w./+~-])(task|model|dataset|delegate|quant|runner|runtime|tracking|model/preprocess)=([\w.,-]+)"
)


def test_presets_named_in_command_blocks_exist():
    """``group=option`` in any command block, runnable or not, names an option of conf/<group>/ (a
    block that cannot run here still must not send a reader to a preset that does not exist)."""
    unknown = []
    for b in all_blocks():
        if not b.is_command or "hydra.searchpath" in b.text:  # a plug-in's own conf folder
            continue
        for group, options in GROUP_CHOICE.findall(b.text):
            for option in filter(None, options.split(",")):
                if not (REPO / "conf" / group / f"{option}.yaml").is_file():
                    unknown.append(f"{b.where}: {group}={option}")
    assert unknown == []
