"""Sharding a dataset and merging the shards back: the merged metrics equal an unsharded run's."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import ASSETS, MODELS, VAL50, run_inprocess, task_lines
from shared_runs import edit_document

from evalharness.core.errors import ConfigError
from evalharness.data.shard import Shard, select_samples
from evalharness.report.commands import entry as cli
from evalharness.report.commands.merge import merge_runs, pooled_summary
from evalharness.report.runs import ReportError
from evalharness.stats.latency import summarize

COCO25 = ["task=coco", "dataset=coco_val25", f"paths.models_dir={MODELS}", f"paths.data_dir={ASSETS}"]


def test_shard_schemes_partition_the_list_in_documented_order():
    items = list(range(10))
    inter = [Shard(i, 4).take(items) for i in range(4)]
    assert inter == [[0, 4, 8], [1, 5, 9], [2, 6], [3, 7]]
    blocks = [Shard(i, 4, "contiguous").take(items) for i in range(4)]
    assert blocks == [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]
    selected, full = select_samples(items, 6, Shard(1, 2), "x")  # num_images first, then the shard
    assert full == items[:6] and selected == [1, 3, 5]


@pytest.mark.parametrize(
    "shard, message",
    [
        ({"index": 2, "count": 2}, "use 0..1"),
        ({"index": 0, "count": 0}, "count=0"),
        ({"scheme": "random"}, "use one of interleaved, contiguous, files"),
    ],
)
def test_bad_shard_settings_are_one_line_errors(shard, message):
    with pytest.raises(ConfigError, match=message):
        Shard.from_config({"shard": shard})


def test_more_shards_than_images_is_an_error():
    with pytest.raises(ConfigError, match="selects no image"):
        select_samples([1, 2], 0, Shard(2, 3), "x")


def test_a_task_without_dataset_refuses_shards(tmp_path):
    with pytest.raises(ConfigError, match="task=benchmark reads no dataset"):
        run_inprocess(["task=benchmark", "dataset.shard.count=2"], tmp_path)


def _shards(tmp_path, overrides: list[str], n: int) -> list:
    dirs = [tmp_path / f"shard{i}" for i in range(n)]
    for i, d in enumerate(dirs):
        run_inprocess([*overrides, f"dataset.shard.count={n}", f"dataset.shard.index={i}"], d)
    return dirs


@pytest.mark.parametrize("name, overrides", [("imagenet", VAL50), ("coco", COCO25)])
def test_four_shards_merged_equal_one_run(tmp_path, name, overrides):
    whole = run_inprocess(overrides, tmp_path / "whole")
    dirs = _shards(tmp_path, overrides, 4)
    shard_doc = json.loads((dirs[1] / "metrics.json").read_text())
    ds = shard_doc["provenance"]["dataset"]
    assert ds["shard"] == {
        "index": 1,
        "count": 4,
        "scheme": "interleaved",
        "full_count": whole["provenance"]["dataset"]["count"],
        "full_manifest_sha256": whole["provenance"]["dataset"]["manifest_sha256"],
    }
    assert ds["manifest_sha256"] != ds["shard"]["full_manifest_sha256"]
    merged = merge_runs([str(d) for d in reversed(dirs)], str(tmp_path / "merged"))  # any order
    assert merged["metrics"] == whole["metrics"]  # identical block: counts, floats, per-class AP
    assert (
        merged["provenance"]["dataset"]["manifest_sha256"]
        == whole["provenance"]["dataset"]["manifest_sha256"]
    )
    assert merged["merged"]["shards"] == merged["merged"]["processes"] == 4
    assert merged["merged"]["host_count"] == 1
    # latency: the statistics of every process's per-invoke samples, pooled
    records = [json.loads(line) for d in dirs for line in (d / "predictions.jsonl").read_text().splitlines()]
    records.sort(key=lambda r: r["image_id" if name == "coco" else "id"])  # dataset order, as a single run
    per_invoke = [r["latency_ms"] for r in records]
    assert merged["latency_ms"]["inference"] == summarize(per_invoke)
    assert merged["latency_ms"]["inference"]["count"] == whole["latency_ms"]["inference"]["count"]
    assert len(merged["latency_ms"]["per_process"]) == 4
    assert _ids(tmp_path / "merged") == _ids(tmp_path / "whole")
    # results.txt reads the same (COCO: the 12 summary lines and the TFLite-tool AP line)
    assert task_lines(tmp_path / "merged") == task_lines(tmp_path / "whole")
    # the merged run is a run like any other: rescore reproduces it
    code = cli.main(["rescore", str(tmp_path / "merged")])
    assert code == 0


def _ids(run_dir) -> list:
    return [json.loads(line)["id"] for line in (run_dir / "predictions.jsonl").read_text().splitlines()]


def test_pooled_summary_equals_summary_of_union():
    a, b = [1.0, 2.0, 4.0], [3.0, 10.0]
    pooled = pooled_summary([summarize(a), summarize(b)])
    whole = summarize(a + b)
    assert pooled["count"] == 5 and pooled["min"] == 1.0 and pooled["max"] == 10.0
    assert pooled["mean"] == pytest.approx(whole["mean"]) and pooled["std"] == pytest.approx(whole["std"])


@pytest.fixture(scope="module")
def val50_shards(tmp_path_factory):
    base = tmp_path_factory.mktemp("shards")
    return _shards(base, [*VAL50, "task.num_images=12"], 3)


def test_merge_refuses_missing_and_overlapping_shards(val50_shards, tmp_path):
    a, b, c = map(str, val50_shards)
    with pytest.raises(ReportError, match="missing shard\\(s\\) 2 of 3"):
        merge_runs([a, b], str(tmp_path / "m1"))
    with pytest.raises(ReportError, match="overlapping shards: index 1 given more than once"):
        merge_runs([a, b, b, c], str(tmp_path / "m2"))


def test_merge_refuses_other_model_delegate_or_preprocessing(val50_shards, tmp_path):
    a, b, _ = map(str, val50_shards)
    base = [*VAL50, "task.num_images=12", "dataset.shard.count=3", "dataset.shard.index=2"]
    cases = {
        "delegate.name differs": ["delegate=reference"],
        "model.sha256 differs": ["model=mobilenet_v2_1.0_224_quant"],
        "preprocessing differs": ["model.preprocess.crop_fraction=0.9"],
        "dataset.shard.full_manifest_sha256 differs": ["task.num_images=13"],
    }
    for reason, extra in cases.items():
        other = tmp_path / reason.split()[0]
        run_inprocess([*base, *extra], other)
        with pytest.raises(ReportError, match=reason):
            merge_runs([a, b, str(other)], str(tmp_path / "out"))


def test_merge_refuses_a_partial_shard_and_an_existing_output(val50_shards, tmp_path):
    partial = tmp_path / "partial"
    shutil.copytree(val50_shards[2], partial)
    edit_document(partial, status="partial", stop_reason="interrupted")
    a, b, c = map(str, val50_shards)
    with pytest.raises(ReportError, match="is partial \\(interrupted\\): finish it first"):
        merge_runs([a, b, str(partial)], str(tmp_path / "m"))
    with pytest.raises(ReportError, match="already holds a run"):
        merge_runs([a, b, c], a)


def test_merge_cli_prints_metrics_and_contributors(val50_shards, tmp_path, capsys):
    code = cli.main(["merge", *map(str, val50_shards), "--out", str(tmp_path / "m")])
    assert code == 0
    out = capsys.readouterr().out
    assert "Top-1 Accuracy:" in out and "merged 3 shards (3 processes on 1 host(s)): 12 samples" in out
    code = cli.main(["merge", str(val50_shards[0]), "--out", str(tmp_path / "m2")])
    assert code == 2
