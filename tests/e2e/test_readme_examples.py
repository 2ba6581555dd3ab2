"""The README's and the getting-started page's commands run as written on a fresh clone
(issue 43): each runnable block runs in a copy of the repository's files (tracked, or new and not
ignored: what a clone of this commit holds) with no ``../shared`` beside it, no ``models/`` or
``data/`` and no ``EVALHARNESS_MODELS``/``EVALHARNESS_DATA``, so an example can use only what ships
(the bundled sample). A task that needs a download says where it comes from; a preset's file asked
for in a clone without it is one ``error:`` line pointing at where it comes from."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from docs_examples import FRESH_CLONE_PAGES, REPO, Block, blocks, runnable_blocks

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


def _run(command: str, pristine: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    clone = tmp_path / "evalharness"
    shutil.copytree(pristine, clone, copy_function=os.link)
    bin_dir = str(Path(sys.executable).parent)  # `python` and `evalharness` of the running test
    env = {k: v for k, v in os.environ.items() if k not in ("EVALHARNESS_MODELS", "EVALHARNESS_DATA")}
    env.update(
        PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
        PYTHONPATH=str(clone),  # the clone's package, conf/ and datasets/ (as `pip install -e .` there)
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
def test_example_runs_on_a_fresh_clone(block, pristine, tmp_path):
    proc = _run(block.text, pristine, tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == block.expected_exit, (
        f"{block.where}: exit {proc.returncode}, documented {block.expected_exit}\n{block.text}\n"
        f"--- stdout (tail)\n{proc.stdout[-3000:]}\n--- stderr (tail)\n{proc.stderr[-3000:]}"
    )
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == (1 if block.expected_exit == 2 else 0), f"{block.where}: {errors}"
    assert "Traceback" not in out and "internal error" not in out.lower()


def test_a_preset_without_its_file_says_where_it_comes_from(pristine, tmp_path):
    """A preset for the user's own model or data, in a clone without models/ or data/: one line
    naming the file, the folder and the page that says where the file comes from; exit 2."""
    proc = _run(
        "python -m evalharness model=mobilenet_v2_1.0_224_quant || echo rc=$?\n"
        "python -m evalharness task=coco dataset=coco_val5 || echo rc=$?\n",
        pristine,
        tmp_path,
    )
    assert proc.stdout.count("rc=2") == 2 and "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 2, proc.stderr
    model, data = errors
    assert "model.path=models/mobilenet_v2_1.0_224_quant.tflite" in model and "paths.models_dir" in model
    assert "dataset.root=data/coco/val5" in data and "datasets/prepare_coco.py" in data
    assert all("getting-started.md" in e for e in errors)
