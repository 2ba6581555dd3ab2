"""``quant.max_drop``: accuracy-aware repair of an int8 variant, on tiny generated models (seconds).

The planted case (``planted_models``): an int8 variant whose op 1 gets a channelwise weight scale
int8 cannot hold; repair must keep exactly op 1 in float and give the float model's answers back on
the held-out images; its recipe file, given back, builds the same bytes. A calibration that clips
the int8 input is a "cannot" (exit 1) with the frontier. Bad settings are one ``error:`` line, exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import planted_models as planted
import pytest
from conftest import run_cli, run_inprocess

from evalharness.core.errors import ConfigError, RunStopped

pytest.importorskip("ai_edge_quantizer")


def _common(tmp_path: Path, images: Path, bad_scale: bool = True) -> list[str]:
    model = planted.model(tmp_path / "planted.tflite", bad_scale=bad_scale)
    return [
        f"model.path={model}",
        f"model.labels={planted.labels(tmp_path / 'labels.txt')}",
        "dataset=imagefolder",
        f"dataset.root={images}",
        "task.top_k=3",
        "quant=int8",
    ]


def _quant(run_dir: Path) -> dict:
    return json.loads((run_dir / "metrics.json").read_text())["provenance"]["model"]["quant"]


def test_planted_bad_scale_is_the_one_op_kept_in_float_and_the_recipe_rebuilds_it(tmp_path, capsys):
    images = planted.images(tmp_path / "images")
    common = _common(tmp_path, images)
    overrides = [*common, "quant.max_drop=0", f"paths.cache_dir={tmp_path / 'c1'}", "loop.progress=true"]
    doc = run_inprocess(overrides, tmp_path / "r1")
    printed = capsys.readouterr()
    assert "repair: " in printed.err and "evaluation" in printed.err  # its progress, step by step
    assert printed.out.index("cannot resolve a top1 drop of 0") < printed.out.index("Frontier")  # before
    quant = doc["provenance"]["model"]["quant"]
    r = quant["repair"]
    assert r["status"] == "met"
    assert [o["op"] for o in r["chosen"]["float_ops"]] == [planted.PLANTED_OP]
    assert r["chosen"]["same_bytes"]
    steps = {row["step"]: row for row in r["frontier"]}
    assert steps["float model"]["metric"] == 1.0
    assert all(row["metric"] < 0.5 for row in r["frontier"] if row["step"].startswith("calibration"))
    assert r["ranking"][0]["op"] == planted.PLANTED_OP
    # the held-out half, never searched on: the float model's answers, every one
    h = r["held_out"]
    assert (h["images"], h["float"], h["variant"], h["changed"], h["holds"]) == (12, 1.0, 1.0, 0, True)
    assert h["interval"][0] < 0 < h["interval"][1]
    assert doc["metrics"]["top1"] == 1.0 and doc["metrics"]["num_scored"] == 12
    # 12 held-out images cannot resolve a drop of 0: said, recorded, the verdict a summary line
    assert r["resolution"]["images"] == 12 and not r["resolution"]["resolves"]
    results = (tmp_path / "r1" / "results.txt").read_text()
    repair_line = next(line for line in results.splitlines() if line.startswith("  Repair:"))
    assert "held-out top1 1.0000 vs float 1.0000" in repair_line
    assert "held; not a check: 12 paired" in repair_line
    split = doc["provenance"]["dataset"]["split"]
    whole = split.pop("whole")  # the list the split was cut from: a diff against a run on it pairs
    assert split == {"fraction": 0.5, "scheme": "interleaved", "part": "held_out"} and whole["count"] == 24
    assert r["split"]["search"] == 12 and r["evaluations"]["search"] >= 4
    # the calibration set: its size and source recorded
    assert {c["source"]: c["count"] for c in r["calibrations"].values()} == {"roots": 9, "dataset": 12}
    files = {p.name for p in (tmp_path / "r1" / "repair").iterdir()}
    assert files == {"recipe.json", "repair.json", "frontier.txt", "frontier.md", "model_explorer_float_ops.json"}  # noqa: E501
    recipe = tmp_path / "r1" / "repair" / "recipe.json"
    assert json.loads(recipe.read_text()) == quant["recipe_ops"]
    assert "Frontier (search part)" in (tmp_path / "r1" / "repair" / "frontier.txt").read_text()
    # the recipe file given back, in a fresh cache: built again, the same bytes
    reuse = [o.replace(r["recipe_file"], str(recipe)) for o in r["reuse"]]
    again = run_inprocess([*common, *reuse, f"paths.cache_dir={tmp_path / 'c2'}"], tmp_path / "r2")
    rebuilt = again["provenance"]["model"]["quant"]
    assert rebuilt["cache"]["status"] == "built" and rebuilt["variant_sha256"] == quant["variant_sha256"]
    assert rebuilt["recipe_file"]["path"] == str(recipe)


def test_a_drop_no_op_in_float_can_hold_is_cannot_with_the_frontier(tmp_path):
    """Calibrated on two dark images, the int8 input clips every other image: even every op in
    float cannot help (the input stays int8): exit 1, metrics.json written, the frontier kept."""
    images = planted.images(tmp_path / "images", dark=3)
    common = _common(tmp_path, images, bad_scale=False)
    overrides = [*common, "quant/calibration=dataset", "quant.calibration.num_images=2", "quant.max_drop=0"]
    with pytest.raises(RunStopped, match="cannot be held"):
        run_inprocess([*overrides, f"paths.cache_dir={tmp_path / 'c'}"], tmp_path / "r")
    doc = json.loads((tmp_path / "r" / "metrics.json").read_text())
    r = _quant(tmp_path / "r")["repair"]
    assert r["status"] == "cannot" and doc["metrics"]["failed_checks"]
    assert list(r["calibrations"].values())[0]["count"] == 2
    every = [row for row in r["frontier"] if row["float_ops"] and len(row["float_ops"]) == 4]
    assert every and not every[0]["holds"]
    assert "Frontier (search part)" in (tmp_path / "r" / "repair" / "frontier.txt").read_text()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["quant.max_drop=-0.1"], "max_drop=-0.1: must be >= 0"),
        (["quant.max_drop=1.5"], "must be <= 1"),
        (["quant.max_drop=abc"], "max_drop"),
        (["quant.max_drop=0.01", "quant.max_drop_relative=0.01"], "give one"),
        (["quant=none", "quant.max_drop=0.01"], "needs a quantized variant"),
        (["quant.max_drop=0.01", "quant.search.fraction=1"], "quant.search.fraction=1.0"),
        (["quant.max_drop=0.01", "quant.search.scheme=random"], "scheme='random'"),
        (["quant.max_drop=0.01", "dataset.shard.count=2"], "dataset.shard.count=1"),
        (["quant.recipe=/nonexistent/recipe.json"], "quant.recipe=/nonexistent/recipe.json"),
    ],
)
def test_bad_repair_settings_are_config_errors(tmp_path, overrides, message):
    common = _common(tmp_path, planted.images(tmp_path / "images", per_class=1))
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(".", r"\.")):
        run_inprocess([*common, *overrides], tmp_path / "r")
    assert not (tmp_path / "r" / "metrics.json").exists()


def test_a_malformed_recipe_file_is_one_error_line_exit_2(tmp_path):
    common = _common(tmp_path, planted.images(tmp_path / "images", per_class=1))
    bad = tmp_path / "recipe.json"
    bad.write_text(json.dumps([{"regex": ".*", "operation": "*", "algorithm_key": "no_such_algorithm"}]))
    r = run_cli([*common, f"quant.recipe={bad}", f"hydra.run.dir={tmp_path / 'r'}"], tmp_path)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and lines[-1].startswith("error: quant.recipe=") and "refuses" in lines[-1]
    assert sum(line.startswith("error:") for line in lines) == 1


def test_a_repair_on_a_container_searches_and_calibrates_on_its_members(tmp_path):
    """val50's first 24 images as parquet: the search part calibrates (read by id through the
    parquet reader) and is searched, the held-out half is scored (once refused as "a container")."""
    pytest.importorskip("pyarrow", reason="packing the parquet needs pyarrow")
    from conftest import VAL50
    from pack_containers import CLASS_NAMES, val50_items, write_parquet

    parquet = write_parquet(val50_items()[:24], tmp_path / "parquet")
    model = planted.ilsvrc_model(tmp_path / "tiny.tflite")
    overrides = [*VAL50, f"model.path={model}", f"model.labels={CLASS_NAMES}", f"dataset.root={parquet}"]
    overrides += ["dataset.format=auto", "quant=int8", "quant.max_drop=0.5", f"paths.cache_dir={tmp_path}/c"]
    doc = run_inprocess(overrides, tmp_path / "run")
    assert doc["status"] == "complete", doc.get("error")
    repair = doc["provenance"]["model"]["quant"]["repair"]
    searched = repair["calibrations"]["dataset search part"]
    assert searched["source"] == "dataset" and searched["count"] == 12
    assert doc["metrics"]["num_images"] == 12 and doc["provenance"]["dataset"]["container"] == "parquet"
