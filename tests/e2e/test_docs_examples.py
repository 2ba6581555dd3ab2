"""Every command block the README and the docs mark ``<!-- runnable -->`` runs and exits as documented
(docs/writing-docs.md), so no example can rot: each block is one ``bash -e`` script in a fresh
directory holding ``models`` and ``data`` (the presets' default ``paths.models_dir`` and
``paths.data_dir``) linked to the shared assets. The README's and the getting-started page's blocks
run in a fresh clone instead (test_readme_examples.py), and only there: once is enough for CI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ASSETS, share_model_sizes
from docs_examples import FRESH_CLONE_PAGES, REPO, runnable_blocks

FRESH = {(b.text, b.expected_exit) for b in runnable_blocks(FRESH_CLONE_PAGES)}  # run there, not here
BLOCKS = [b for b in runnable_blocks() if (b.text, b.expected_exit) not in FRESH]


def test_there_are_runnable_examples():
    """The marker parser found the examples (a change of convention would otherwise pass silently)."""
    assert len(BLOCKS) >= 10 and any(b.path.name == "quantization.md" for b in BLOCKS)


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_runnable_example(block, tmp_path):
    (tmp_path / "models").symlink_to(ASSETS / "models")
    (tmp_path / "data").symlink_to(ASSETS)
    share_model_sizes(tmp_path / "cache")  # a fresh cache, but a model is sized once per session
    bin_dir = str(Path(sys.executable).parent)  # `python` and `evalharness` of the running test
    env = {
        **os.environ,
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        "EVALHARNESS_CACHE": str(tmp_path / "cache"),
        "EVALHARNESS_MODELS": str(tmp_path / "models"),
        "EVALHARNESS_DATA": str(tmp_path / "data"),
        "TQDM_DISABLE": "1",
    }
    proc = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.text],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == block.expected_exit, (
        f"{block.where}: exit {proc.returncode}, documented {block.expected_exit}\n{block.text}\n"
        f"--- stdout (tail)\n{proc.stdout[-3000:]}\n--- stderr (tail)\n{proc.stderr[-3000:]}"
    )
    if block.expected_exit == 2:  # a documented user error is one `error:` line, no traceback
        assert "Traceback" not in proc.stderr and "error:" in proc.stderr
