"""loop.parallel on real runs: shard processes merged into the run an unsharded job writes."""

from __future__ import annotations

import json
import os

from conftest import VAL50, run_cli

MODEL = "mobilenet_v1_0.25_128_quant"


def test_parallel_auto_chooses_a_split_and_merges_to_the_single_run(tmp_path, val50_runs):
    single, _ = val50_runs(MODEL)
    out = tmp_path / "run"
    proc = run_cli([*VAL50, f"model={MODEL}", "loop.parallel=auto", f"hydra.run.dir={out}"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "metrics.json").read_text())
    assert doc["status"] == "complete" and doc["metrics"] == single["metrics"]
    par = doc["provenance"]["parallel"]
    cores = len(os.sched_getaffinity(0))
    assert par["processes"] * par["threads_per_process"] == cores and par["source"].startswith("auto:")
    plan = par["calibration_plan"]  # 50 images: far too short a run to pay for calibrating the split
    assert plan["window_s"] == 0 and "calibration" not in par
    assert [par["processes"], par["threads_per_process"]] == plan["paper_split"]
    assert plan["estimated_run_s"] > 0 and plan["reason"] in par["source"]
    assert doc["merged"]["processes"] == par["processes"] == len(par["shards"])
    assert "loop.parallel: " in proc.stderr and "Top-1 Accuracy" in proc.stdout
    split = f"loop.parallel={par['processes']}x{par['threads_per_process']}"
    (out / "metrics.json").unlink()  # cut off after the shards finished, before the merge
    resumed = run_cli(
        [*VAL50, f"model={MODEL}", split, "loop.resume=true", f"hydra.run.dir={out}"], cwd=tmp_path
    )
    assert resumed.returncode == 0, resumed.stderr
    doc = json.loads((out / "metrics.json").read_text())
    assert doc["metrics"] == single["metrics"] and doc["provenance"]["parallel"]["images_per_s"] is None
    assert doc["provenance"]["parallel"]["shards_run_now"] == []


def test_the_calibration_measures_every_split_of_the_cores():
    """What a long run's ``auto`` runs (windows shortened here: the figures are not judged)."""
    from conftest import MODELS

    from evalharness.run.parallel import calibrate
    from evalharness.runtime import plan_delegate

    found = calibrate(str(MODELS / f"{MODEL}.tflite"), plan_delegate({"name": "cpu"}), "litert", 2, 0.02)
    assert set(found["invokes_per_s"]) == {"1x2", "2x1"} and found["choice"] in ((1, 2), (2, 1))
    assert all(len(v) == 2 and min(v) > 0 for v in found["invokes_per_s"].values())
    assert "2 rounds of 0.02 s" in found["source"]
