"""``quant=int8`` with the default ``quant/calibration=auto``, on a tiny generated model (seconds):
a dataset with enough images calibrates on an evenly spread slice of it that is then not scored; a
small one falls back to the bundled photos and the summary says their size and risk. Either way the
summary and metrics.json say what calibrated the variant."""

from __future__ import annotations

import json
from pathlib import Path

import planted_models as planted
import pytest
from conftest import run_inprocess

from evalharness.report.commands.entry import main as report_main
from evalharness.report.commands.index import group_key
from evalharness.report.views.quant_table import add_quant_columns
from evalharness.rundir.reader import load_run

pytest.importorskip("ai_edge_quantizer")


def _run(tmp_path: Path, extra: list[str], run: str = "run") -> tuple[dict, str]:
    images = tmp_path / "images"
    if not images.exists():
        planted.images(images)  # 24 images
    model = planted.model(tmp_path / "planted.tflite", bad_scale=False)
    overrides = [
        f"model.path={model}",
        f"model.labels={planted.labels(tmp_path / 'labels.txt')}",
        "dataset=imagefolder",
        f"dataset.root={images}",
        "task.top_k=3",
        "quant=int8",
        f"paths.cache_dir={tmp_path / 'cache'}",
        *extra,
    ]
    doc = run_inprocess(overrides, tmp_path / run)
    return doc, (tmp_path / run / "results.txt").read_text()


def test_enough_images_calibrate_on_an_unscored_slice_of_the_dataset(tmp_path, capsys):
    doc, results = _run(tmp_path, ["quant.calibration.min_dataset_images=20"])
    cal = doc["provenance"]["model"]["quant"]["calibration"]
    assert cal["source"] == "dataset" and cal["count"] == 6  # a quarter of 24
    assert cal["choice"]["chosen"] == "dataset" and cal["choice"]["dataset_images"] == 24
    assert doc["metrics"]["num_images"] == 18  # the slice is not scored
    calibrated = set(f["key"].split("/")[-1] for f in cal["files"])
    scored = {p.name for p in (tmp_path / "images").rglob("*.png")} - calibrated
    assert len(scored) == 18 and not calibrated & scored
    assert doc["provenance"]["dataset"]["split"]["part"] == "held_out"
    line = next(x for x in results.splitlines() if x.strip().startswith("Calibrated:"))
    assert "6 images of the dataset, not scored" in line and cal["manifest_sha256"][:12] in line
    # a float run on every image pairs with it on the 18 images both scored, said once at the top;
    # both headlines recomputed there (the float run's own metrics.json untouched), gates read them
    _run(tmp_path, ["quant=none"], "float")
    stored = (tmp_path / "float" / "metrics.json").read_bytes()
    capsys.readouterr()
    pair = [str(tmp_path / "float"), str(tmp_path / "run")]
    gate = ["--fail-if", "top1<-0.5"]  # float vs int8: the same image recipe (integer_input is the model's)
    assert report_main(["diff", *pair, *gate]) == 0
    out, err = capsys.readouterr()
    assert "preprocessing differs" not in out + err
    note = "compared on the 18 images both runs scored (6 images calibrated run B's variant and are left out)"
    assert out.count(note) == 1 and "error:" not in err and "Traceback" not in err
    assert report_main(["diff", *pair, "--format", "json"]) == 0
    diff = json.loads(capsys.readouterr().out)
    assert diff["paired_on"] == {"count": 18, "left_out": 6, "why": note.split("(")[1].rstrip(")")}
    assert diff["a"]["num_scored"] == diff["b"]["num_scored"] == 18
    assert (tmp_path / "float" / "metrics.json").read_bytes() == stored
    # the quantization table's Δ too, with the same note
    jobs = [{"run": name, "doc": load_run(str(tmp_path / name), name)} for name in ("float", "run")]
    rows = [{"run": j["run"], "quant": q, "status": "complete", "top1": j["doc"].metrics["top1"]}
            for j, q in zip(jobs, ("none", "int8"), strict=True)]  # fmt: skip
    add_quant_columns(jobs, rows, ["quant"])
    assert rows[1]["d_top1_vs_float"] == diff["metrics"][0]["delta"]
    assert rows[1]["vs_float_paired_on"]["count"] == 18
    assert group_key(jobs[0]["doc"]) == group_key(jobs[1]["doc"])  # report index: one group, a diff
    # the slice's content keys the cached variant: one calibration image's bytes changed -> rebuilt
    quant = doc["provenance"]["model"]["quant"]
    key = json.loads(json.loads((Path(quant["cache"]["dir"]) / "variant.json").read_text())["key"])
    assert key["calibration_manifest_sha256"] == cal["manifest_sha256"]
    first = next((tmp_path / "images").rglob(cal["files"][0]["key"].split("/")[-1]))
    first.write_bytes((tmp_path / "images" / "blue" / "07_blue.png").read_bytes())  # same name, other bytes
    again, _ = _run(tmp_path, ["quant.calibration.min_dataset_images=20"], "run2")
    moved = again["provenance"]["model"]["quant"]
    assert moved["cache"]["status"] == "built"
    assert moved["calibration"]["manifest_sha256"] != cal["manifest_sha256"]


def test_a_small_dataset_falls_back_to_the_bundled_set_and_says_its_risk(tmp_path):
    doc, results = _run(tmp_path, [])
    cal = doc["provenance"]["model"]["quant"]["calibration"]
    assert cal["source"] == "roots" and cal["count"] == 9
    assert cal["choice"]["chosen"] == "bundled" and "24 images, under 100" in cal["choice"]["reason"]
    assert doc["metrics"]["num_images"] == 24
    line = next(x for x in results.splitlines() if x.strip().startswith("Calibrated:"))
    assert "9 images" in line and "risk:" in line and "quant.calibration.roots=[DIR]" in line


def test_a_container_calibrates_on_the_same_slice_as_the_same_images_in_a_folder(tmp_path):
    """val50's first 24 images as a folder and as Hugging Face parquet: the slice is cut by the same
    rule from the same ids, read by id through each reader, so both runs build the same int8 variant
    (same calibration manifest, same bytes, each in its own cache) and score the same 18 images."""
    pytest.importorskip("pyarrow", reason="packing the parquet needs pyarrow")
    from conftest import VAL50
    from pack_containers import CLASS_NAMES, val50_items, write_parquet

    model = planted.ilsvrc_model(tmp_path / "tiny.tflite")
    parquet = write_parquet(val50_items(), tmp_path / "parquet")
    common = [*VAL50, f"model.path={model}", f"model.labels={CLASS_NAMES}", "task.num_images=24"]
    common += ["quant=int8", "quant.calibration.min_dataset_images=20", "loop.progress=false"]
    runs = {}
    for name, where in (("folder", []), ("parquet", [f"dataset.root={parquet}", "dataset.format=auto"])):
        cache = f"paths.cache_dir={tmp_path / name / 'cache'}"
        doc = run_inprocess([*common, *where, cache], tmp_path / name)
        assert doc["status"] == "complete", doc.get("error")
        lines = (tmp_path / name / "results.txt").read_text().splitlines()
        ids = [json.loads(x)["id"] for x in (tmp_path / name / "predictions.jsonl").read_text().splitlines()]
        runs[name] = doc, next(x for x in lines if x.strip().startswith("Calibrated:")), ids
    (folder, folder_line, folder_ids), (packed, packed_line, packed_ids) = runs["folder"], runs["parquet"]
    assert packed["provenance"]["dataset"]["container"] == "parquet"
    quant, theirs = packed["provenance"]["model"]["quant"], folder["provenance"]["model"]["quant"]
    cal = quant["calibration"]
    assert cal["source"] == "dataset" and cal["count"] == 6 and cal["choice"]["chosen"] == "dataset"
    assert "6 images of the dataset, not scored" in packed_line and packed_line == folder_line
    assert cal["files"] == theirs["calibration"]["files"]
    assert cal["manifest_sha256"] == theirs["calibration"]["manifest_sha256"]
    assert quant["cache"]["status"] == theirs["cache"]["status"] == "built"  # each in its own cache
    assert quant["variant_sha256"] == theirs["variant_sha256"]
    assert packed["metrics"]["num_images"] == folder["metrics"]["num_images"] == 18  # the slice not scored
    assert packed_ids == folder_ids and not {f["key"].split("/")[-1] for f in cal["files"]} & set(packed_ids)


def test_calibration_roots_holding_a_member_of_the_container_are_refused(tmp_path):
    """The disjointness check asks the dataset's reader: a calibration root holding one parquet
    member's bytes under another name is refused before anything is built, as in a folder."""
    pytest.importorskip("pyarrow", reason="packing the parquet needs pyarrow")
    from conftest import VAL50
    from pack_containers import CLASS_NAMES, val50_items, write_parquet

    from evalharness.core.errors import DataError

    items = val50_items()[:4]
    parquet = write_parquet(items, tmp_path / "parquet")
    roots = tmp_path / "calibration"
    roots.mkdir()
    (roots / "fish.jpg").write_bytes(items[1][1])
    model = planted.ilsvrc_model(tmp_path / "tiny.tflite")
    overrides = [*VAL50, f"dataset.root={parquet}", "dataset.format=auto", f"model.path={model}"]
    overrides += [f"model.labels={CLASS_NAMES}", "quant=int8", f"quant.calibration.roots=[{roots}]"]
    overrides += ["quant.calibration.source=roots", f"paths.cache_dir={tmp_path / 'cache'}"]
    with pytest.raises(DataError, match=r"fish\.jpg is also in the evaluation set.*must be disjoint"):
        run_inprocess(overrides, tmp_path / "run")
