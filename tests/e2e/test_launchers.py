"""Hydra launcher plugins run shard sweeps in real processes; re-running a sweep skips finished jobs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import VAL50, run_cli
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from evalharness.core.errors import ConfigError
from evalharness.core.paths import CONF_DIR
from evalharness.report.commands import entry as cli
from evalharness.settings.thread_budget import launcher_share, thread_budget

JOBLIB = "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher"
SHARDS2 = [*VAL50, "dataset.shard.count=2", "dataset.shard.index=0,1"]


def _docs(sweep: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in sorted(sweep.glob("*/metrics.json"))}


def _merge_cli(runs: list[Path], out: Path) -> dict:
    code = cli.main(["merge", *map(str, runs), "--out", str(out)])
    assert code == 0
    return json.loads((out / "metrics.json").read_text())


def test_joblib_two_processes_two_shards_merge_to_the_single_run(tmp_path, val50_runs):
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    single, _ = val50_runs("mobilenet_v1_0.25_128_quant")
    sweep = tmp_path / "sweep"
    args = ["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", *SHARDS2, f"hydra.sweep.dir={sweep}"]
    proc = run_cli(args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    docs = _docs(sweep)
    shard_dirs = sorted(sweep / name for name in docs if not name.startswith("merged_"))
    assert len(shard_dirs) == 2
    workers = {docs[d.name]["provenance"]["thread_budget"]["workers_per_host"] for d in shard_dirs}
    assert workers == {2}  # each worker knew it shared the machine with one other
    merged = _merge_cli(shard_dirs, tmp_path / "merged")
    assert merged["metrics"] == single["metrics"]
    assert merged["merged"]["processes"] == 2
    # the sweep callback merged the same shards by itself
    auto = next(d for name, d in docs.items() if name.startswith("merged_"))
    assert auto["metrics"] == single["metrics"]

    # re-running the same multirun (same sweep dir) skips both complete jobs ...
    before = {name: d["finished_at"] for name, d in docs.items()}
    proc = run_cli(args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("skipped:") == 2
    assert {name: d["finished_at"] for name, d in _docs(sweep).items()} == before
    # ... and resumes a job cut off by a hard kill (metrics.json gone, half its predictions kept)
    victim = shard_dirs[1]
    lines = (victim / "predictions.jsonl").read_text().splitlines(keepends=True)
    (victim / "predictions.jsonl").write_text("".join(lines[:10]) + lines[10][:7])
    (victim / "metrics.json").unlink()
    proc = run_cli(args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("skipped:") == 1
    resumed = json.loads((victim / "metrics.json").read_text())
    assert resumed["status"] == "complete" and resumed["resumed_samples"] == 10
    assert resumed["metrics"] == docs[victim.name]["metrics"]


def test_submitit_local_runs_a_two_job_sweep(tmp_path, val50_runs):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    single, _ = val50_runs("mobilenet_v1_0.25_128_quant")
    sweep = tmp_path / "sweep"
    args = ["-m", "hydra/launcher=local_submitit", *SHARDS2, "delegate.num_threads=auto"]
    proc = run_cli([*args, f"hydra.sweep.dir={sweep}"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    docs = _docs(sweep)
    shards = [d for name, d in docs.items() if not name.startswith("merged_")]
    assert len(shards) == 2 and all(d["status"] == "complete" for d in shards)
    budget = shards[0]["provenance"]["thread_budget"]
    assert budget["launcher"] == "LocalLauncher" and budget["num_threads"] == 1  # cpus_per_task of the preset
    assert len({d["provenance"]["host"]["hostname"] for d in shards}) == 1
    assert len(list((sweep / ".submitit").iterdir())) >= 2  # submitit's own job folders
    merged = next(d for name, d in docs.items() if name.startswith("merged_"))
    assert merged["metrics"] == single["metrics"]


def test_ray_launcher_smoke(tmp_path):
    """Runs where ``evalharness[ray]`` is installed ([dev] includes it, so CI runs it)."""
    pytest.importorskip("hydra_plugins.hydra_ray_launcher", reason="pip install 'evalharness[ray]'")
    sweep = tmp_path / "sweep"
    args = ["-m", "hydra/launcher=ray_local", *VAL50, "task.num_images=4", "dataset.shard.count=2"]
    proc = run_cli([*args, "dataset.shard.index=0,1", f"hydra.sweep.dir={sweep}"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    docs = _docs(sweep)
    assert sorted(d["status"] for d in docs.values()) == ["complete"] * 3
    assert next(d for n, d in docs.items() if n.startswith("merged_"))["metrics"]["num_scored"] == 4


@pytest.mark.parametrize("preset", ["local_processes", "local_submitit", "slurm", "ray_local"])
def test_launcher_presets_extend_the_plugin_configs(preset):
    plugin = {"local_processes": "joblib", "ray_local": "ray"}.get(preset, "submitit")
    pytest.importorskip(f"hydra_plugins.hydra_{plugin}_launcher")
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=[f"hydra/launcher={preset}"], return_hydra_config=True)
    launcher = OmegaConf.to_container(cfg.hydra.launcher, resolve=False)
    assert plugin in launcher["_target_"]
    name, _, share = launcher_share(launcher, cores=8)
    assert share == {"local_processes": 1, "local_submitit": 1, "slurm": 4, "ray_local": 1}[preset]


def apply_thread_budget(cfg, launcher) -> dict:
    """The budget record for ``cfg``'s delegate (the plan gets the threads; ``cfg`` is not edited)."""
    threads, record = thread_budget(cfg.delegate.get("num_threads", 1), launcher)
    assert record["num_threads"] == threads
    return record


def _delegate(num_threads) -> OmegaConf:
    return OmegaConf.create({"delegate": {"name": "cpu", "num_threads": num_threads}})


def test_thread_budget_divides_cores_and_flags_oversubscription(monkeypatch):
    monkeypatch.setattr("evalharness.settings.thread_budget.available_cores", lambda: 8)
    cfg = _delegate("auto")
    record = apply_thread_budget(cfg, {"_target_": JOBLIB, "n_jobs": 3})
    assert cfg.delegate.num_threads == "auto" and record["num_threads"] == 2 and not record["oversubscribed"]
    assert apply_thread_budget(_delegate("auto"), None)["num_threads"] == 8  # a single run: every core
    assert apply_thread_budget(_delegate("auto"), {"_target_": JOBLIB, "n_jobs": -1})["num_threads"] == 1
    over = apply_thread_budget(_delegate(4), {"_target_": JOBLIB, "n_jobs": 4})
    assert over["oversubscribed"] and over["source"] == "explicit" and over["num_threads"] == 4
    with pytest.raises(ConfigError, match="cpus_per_task"):
        apply_thread_budget(_delegate("auto"), {"_target_": "x.submitit_launcher.SlurmLauncher"})


def test_a_launcher_without_its_plugin_is_one_line_naming_the_extra(monkeypatch):
    from evalharness.settings import launchers
    from evalharness.settings.overrides import parse

    monkeypatch.setattr(launchers, "_installed", lambda module: False)
    assert launchers.missing_launcher_plugin(parse(["hydra/launcher=slurm"])) == (
        "hydra/launcher=slurm needs the hydra_submitit_launcher plugin: pip install 'evalharness[launchers]'"
    )
    assert launchers.missing_launcher_plugin(parse(["hydra/launcher=basic", "delegate=cpu"])) is None
    monkeypatch.undo()
    assert launchers.missing_launcher_plugin(parse(["hydra/launcher=joblib"])) is None  # installed with [dev]
