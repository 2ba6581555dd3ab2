"""One command line: ``evalharness report|explain|inspect …`` are subcommands of the run, ``--help`` is
a short screen of our own, and a key the chosen task/delegate/runner does not read is one ``error:``
line naming the closest key (not Hydra's "+" advice)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

PLUGINS = Path(__file__).parents[1] / "plugins"


def _python(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def test_report_diff_is_a_subcommand(tmp_path):
    for name, delegate in (("a", "cpu"), ("b", "reference")):
        proc = run_cli([f"hydra.run.dir={name}", f"delegate={delegate}"], cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    sub = _python(["evalharness", "report", "diff", "a", "b"], tmp_path)
    alone = _python(["evalharness.report", "diff", "a", "b"], tmp_path)
    assert sub.returncode == alone.returncode == 0, sub.stderr
    assert sub.stdout == alone.stdout and sub.stdout.startswith("evalharness diff: A = ")


def test_explain_and_inspect_are_subcommands(tmp_path):
    for name in ("explain", "inspect"):
        proc = _python(["evalharness", name, "-h"], tmp_path)
        assert proc.returncode == 0 and proc.stdout.startswith("usage:"), proc.stderr


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_lists_the_subcommands_and_the_groups(tmp_path, flag):
    proc = _python(["evalharness", flag], tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for name in ("report", "explain", "inspect"):
        assert any(line.split()[:1] == [name] for line in lines), proc.stdout
    groups = {line.split()[0]: line for line in lines if line.startswith("  ") and line.split()}
    for group in ("task", "model", "model/preprocess", "dataset", "delegate", "quant", "runner", "runtime"):
        assert group in groups, proc.stdout
    assert "imagenet*" in groups["task"] and "coco" in groups["task"] and "cpu*" in groups["delegate"]
    assert "--hydra-help" in proc.stdout and "Compose your configuration" not in proc.stdout


@pytest.mark.parametrize("override", ["task.num_image=5", "+task.num_image=5"])
def test_unknown_task_key_names_the_closest(tmp_path, override):
    line = _one_error_line(run_cli([override], cwd=tmp_path))
    assert line.startswith("error: task.num_image: unknown key")
    assert "num_images" in line and "top_k" in line and "Did you mean 'num_images'?" in line
    assert "+task" not in line
    assert not (tmp_path / "outputs").exists()


def test_unknown_nested_and_core_group_keys(tmp_path):
    line = _one_error_line(run_cli(["dataset.shard.idx=1"], cwd=tmp_path))
    assert line.startswith("error: dataset.shard.idx: unknown key") and "Did you mean 'index'?" in line
    line = _one_error_line(run_cli(["task=coco", "model.class_mapp=x"], cwd=tmp_path))
    assert "valid for model (task=coco)" in line and "Did you mean 'class_map'?" in line


def test_flag_of_another_delegate_gives_the_delegate_error(tmp_path):
    proc = run_cli(["delegate=cpu", "delegate.gpu_precision_loss_allowed=false"], cwd=tmp_path)  # README
    line = _one_error_line(proc)
    assert line.startswith("error: delegate=cpu does not read gpu_precision_loss_allowed; its flags: ")
    assert "num_threads" in line and "+delegate" not in line
    proc = run_cli(["delegate=gpu", "delegate.gpu_precison_loss_allowed=false"], cwd=tmp_path)
    line = _one_error_line(proc)
    assert "Did you mean 'gpu_precision_loss_allowed'?" in line


def test_plugin_task_keys_are_checked_too(tmp_path):
    env = {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(PLUGINS), os.environ.get("PYTHONPATH")])),
        "EVALHARNESS_PLUGINS": "toy_mse.definition",
    }
    base = [f"hydra.searchpath=[file://{PLUGINS / 'toy_mse' / 'conf'}]", "task=toy_mse"]
    line = _one_error_line(run_cli([*base, "task.num_image=1"], cwd=tmp_path, env=env))
    assert "valid for task=toy_mse" in line and "Did you mean 'num_images'?" in line
    line = _one_error_line(run_cli([*base, "dataset.target=x.csv"], cwd=tmp_path, env=env))
    assert "Did you mean 'targets'?" in line


def test_unknown_key_in_a_config_file_names_the_closest_too():
    from evalharness.core.errors import ConfigError
    from evalharness.core.schema import check
    from evalharness.tasks.discovery import task_definitions

    schema = task_definitions().get("imagenet").schema
    expected = r"unknown key\(s\) num_image; valid: .*Did you mean 'num_images'\?"
    with pytest.raises(ConfigError, match=expected):
        check(schema, {"name": "imagenet", "num_image": 5}, "config group 'task'")
