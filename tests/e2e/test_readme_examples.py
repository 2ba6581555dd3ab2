"""The README's and the getting-started page's commands run as written on a fresh clone
(issue 43): each runnable block runs in a copy of the repository's files (tracked, or new and not
ignored: what a clone of this commit holds) with no ``../shared`` beside it, no ``models/`` or
``data/`` and no ``EVALHARNESS_MODELS``/``EVALHARNESS_DATA``, so an example can use only what ships
(the bundled sample); and as after the README's ``pip install -e .``: every installed package
outside the dependency closure of evalharness' own requirements (the extras') fails to import in
the example's processes, so an example needing an extra fails here (CI installs them all). A task
that needs a download says where it comes from; a preset's file asked for in a clone without it is
one ``error:`` line pointing at where it comes from."""

from __future__ import annotations

import importlib.metadata as metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from docs_examples import FRESH_CLONE_PAGES, REPO, Block, blocks, runnable_blocks
from packaging.requirements import Requirement

BLOCKS = runnable_blocks(FRESH_CLONE_PAGES)
README_TASKS = "## Five common tasks"


def _tracked_files() -> list[str]:
    """The files a clone of this checkout would hold (tracked, plus new files not ignored)."""
    git = shutil.which("git")
    if git is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout (or no git): cannot tell which files a clone holds")
    listed = subprocess.run(
        [git, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [f for f in listed.split("\0") if f and (REPO / f).is_file()]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """One copy of the clone's files; each example gets its own hard-linked copy of it."""
    clone = tmp_path_factory.mktemp("fresh") / "evalharness"
    for name in _tracked_files():
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, clone / name)
    assert not (clone.parent / "shared").exists() and not (clone / "models").exists()
    return clone


def _top_level(dist: metadata.Distribution) -> set[str]:
    """The importable top-level names a distribution installs."""
    if listed := dist.read_text("top_level.txt"):
        return set(listed.split())
    parts = [f.parts for f in dist.files or []]
    return {p[0] for p in parts if len(p) > 1 and not p[0].endswith((".dist-info", "..", "bin"))} | {
        p[0][:-3] for p in parts if len(p) == 1 and p[0].endswith(".py")
    }


def _extras_only() -> set[str]:
    """Top-level modules of the installed packages that ``pip install -e .`` would not install:
    everything outside the closure of evalharness' requirements without an extra."""

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    installed = {norm(d.metadata["Name"]): d for d in metadata.distributions()}
    if "evalharness" not in installed:
        pytest.skip("evalharness is not installed: a base install's packages cannot be told from the extras'")
    base, todo = set(), ["evalharness"]
    while todo:
        name = norm(todo.pop())
        if name in base or name not in installed:
            continue
        base.add(name)
        for line in installed[name].requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    kept = set().union(*(_top_level(installed[n]) for n in base))
    return set().union(*(_top_level(d) for n, d in installed.items() if n not in base)) - kept


SITECUSTOMIZE = """# by tests/e2e/test_readme_examples.py: the examples run as after `pip install -e .`
import importlib.abc
import sys

HIDDEN = frozenset({hidden})


class _BaseInstall(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}} (not in a base install)", name=name)
        return None


sys.meta_path.insert(0, _BaseInstall())
"""


@pytest.fixture(scope="module")
def base_install(tmp_path_factory) -> Path:
    """A folder whose sitecustomize.py hides the extras' packages from the examples' processes."""
    folder = tmp_path_factory.mktemp("base_install")
    hidden = sorted(_extras_only())
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE.format(hidden=json.dumps(hidden)))
    return folder


def _run(command: str, pristine: Path, tmp_path: Path, base_install: Path) -> subprocess.CompletedProcess:
    clone = tmp_path / "evalharness"
    shutil.copytree(pristine, clone, copy_function=os.link)
    bin_dir = str(Path(sys.executable).parent)  # `python` and `evalharness` of the running test
    env = {k: v for k, v in os.environ.items() if k not in ("EVALHARNESS_MODELS", "EVALHARNESS_DATA")}
    env.update(
        PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
        # the clone's package, conf/ and datasets/ (as `pip install -e .` there), and no extras
        PYTHONPATH=os.pathsep.join([str(clone), str(base_install)]),
        EVALHARNESS_CACHE=str(tmp_path / "cache"),
        TQDM_DISABLE="1",
    )
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", command],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _readme_task_blocks() -> list[Block]:
    readme = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(readme) if line.startswith(README_TASKS)) + 1
    end = next((i for i in range(start, len(readme)) if readme[i].startswith("## ")), len(readme))
    return [b for b in blocks(REPO / "README.md") if start < b.line <= end and b.is_command]


def test_each_readme_task_runs_or_names_its_download():
    """Every task block runs here, or says what it downloads and from where (a URL in the block)."""
    tasks = _readme_task_blocks()
    assert len(tasks) >= 5
    for block in tasks:
        if block.runnable:
            assert "../shared" not in block.text, block.where
        else:
            assert "download" in (block.marker or "") and "https://" in block.text, block.where


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_example_runs_on_a_fresh_clone(block, pristine, base_install, tmp_path):
    proc = _run(block.text, pristine, tmp_path, base_install)
    out = proc.stdout + proc.stderr
    assert proc.returncode == block.expected_exit, (
        f"{block.where}: exit {proc.returncode}, documented {block.expected_exit}\n{block.text}\n"
        f"--- stdout (tail)\n{proc.stdout[-3000:]}\n--- stderr (tail)\n{proc.stderr[-3000:]}"
    )
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == (1 if block.expected_exit == 2 else 0), f"{block.where}: {errors}"
    assert "Traceback" not in out and "internal error" not in out.lower()


def test_a_preset_without_its_file_says_where_it_comes_from(pristine, base_install, tmp_path):
    """A preset for the user's own model or data, in a clone without models/ or data/: one line
    naming the file, the folder and the page that says where the file comes from; exit 2."""
    proc = _run(
        "python -m evalharness model=mobilenet_v2_1.0_224_quant || echo rc=$?\n"
        "python -m evalharness task=coco dataset=coco_val5 || echo rc=$?\n",
        pristine,
        tmp_path,
        base_install,
    )
    assert proc.stdout.count("rc=2") == 2 and "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 2, proc.stderr
    model, data = errors
    assert "model.path=models/mobilenet_v2_1.0_224_quant.tflite" in model and "paths.models_dir" in model
    assert "dataset.root=data/coco/val5" in data and "datasets/prepare_coco.py" in data
    assert all("getting-started.md" in e for e in errors)


def test_the_examples_processes_lack_the_extras(pristine, base_install, tmp_path):
    """The base-install emulation holds: an extra's package (OpenVINO, the quantizer) is not
    importable where the examples run, a core dependency is."""
    proc = _run(
        "python -c 'import numpy, hydra, pycocotools, ai_edge_litert'\n"
        "! python -c 'import openvino' 2>/dev/null\n! python -c 'import ai_edge_quantizer' 2>/dev/null\n",
        pristine,
        tmp_path,
        base_install,
    )
    assert proc.returncode == 0, proc.stderr
