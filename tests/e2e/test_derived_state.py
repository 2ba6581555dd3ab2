"""No number comes from stale derived state (core/derived.py), one lean run per store: the tensor
cache (an image replaced in place by one of the same size; a cache file left at 0 bytes), a resume
(the class list edited after the interruption) and the compile cache (a damaged XNNPACK weight
cache the runtime rewrites). The damaged-file cases of every store, generated: tests/unit/core/."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import ASSETS, VAL50, run_cli, run_inprocess
from shared_runs import edit_document

IMAGES = sorted((ASSETS / "imagenet" / "val50").glob("*.JPEG"))[:4]


def _preds(run) -> list[dict]:
    return [
        {k: v for k, v in json.loads(line).items() if k != "latency_ms"}
        for line in (run / "predictions.jsonl").read_text().splitlines()
    ]


def _run(tmp_path, name, data, *extra) -> tuple[dict, list[dict]]:
    run = tmp_path / name
    overrides = [*VAL50, f"dataset.root={data}", "task.num_images=4", f"paths.cache_dir={tmp_path / 'cache'}"]
    doc = run_inprocess([*overrides, "loop.tensor_cache=true", *extra], run)
    return doc, _preds(run)


@pytest.mark.parametrize("damage", ["same_size_image", "empty_crc32", "empty_tensors"])
def test_tensor_cache_never_serves_stale_or_damaged_state(tmp_path, caplog, damage):
    data = tmp_path / "images"
    data.mkdir()
    for image in IMAGES:
        shutil.copy(image, data / image.name)
    cold, _ = _run(tmp_path, "cold", data)
    if damage == "same_size_image":
        # another picture under the same name and of the same size: a key of path + size serves the old
        victim, other = sorted((data / i.name for i in IMAGES), key=lambda p: p.stat().st_size)[-1], IMAGES[0]
        replacement = other.read_bytes()
        victim.write_bytes(replacement + b"\0" * (victim.stat().st_size - len(replacement)))
    else:
        (
            tmp_path / "cache" / cold["throughput"]["cache"]["dir"].rsplit("/", 1)[1] / f"{damage[6:]}.npy"
        ).write_bytes(b"")
    warm, served = _run(tmp_path, "warm", data)
    _, plain = _run(tmp_path, "plain", data, "loop.tensor_cache=false")
    assert served == plain and warm["status"] == "complete"
    stats = warm["throughput"]["cache"]
    said = [r.getMessage() for r in caplog.records if "rebuilt, not used" in r.getMessage()]
    if damage == "same_size_image":
        assert (stats["stale_rebuilt"], stats["hits"], stats["rebuilt"]) == (1, 3, [])
        assert len(said) == 1 and "changed since its tensor was cached" in said[0]
    else:
        assert (
            stats["hits"] == 0 and len(stats["rebuilt"]) == 1 and f"{damage[6:]}.npy" in stats["rebuilt"][0]
        )
        assert said == stats["rebuilt"]


def test_a_class_list_edited_before_resume_is_refused(tmp_path):
    words = tmp_path / "synset_words.txt"
    shutil.copy(ASSETS / "imagenet" / "synset_words.txt", words)
    args = [*VAL50, "task.num_images=2", "dataset.class_names=null", f"dataset.synset_words={words}"]
    run = tmp_path / "run"
    run_inprocess(args, run)
    edit_document(run, status="partial")  # as an interruption leaves it
    lines = words.read_text().splitlines(keepends=True)
    lines[0], lines[1] = lines[1], lines[0]  # two classes swap names
    words.write_text("".join(lines))
    proc = run_cli([*args, f"hydra.run.dir={run}", "loop.resume=true"], cwd=tmp_path)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "synset_words_sha256 changed since the interrupted run" in errors[0]


def test_a_damaged_compile_cache_is_recorded_rebuilt_not_warm(tmp_path):
    cache = tmp_path / "cc"
    args = ["task=benchmark", "task.num_runs=3", "task.min_secs=0", f"delegate.compile_cache_dir={cache}"]

    def state(name: str) -> tuple[str, str]:
        proc = run_cli([*args, f"hydra.run.dir={tmp_path / name}"], cwd=tmp_path)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        doc = json.loads((tmp_path / name / "metrics.json").read_text())
        return doc["provenance"]["delegate"]["cache"][0]["state"], proc.stdout + proc.stderr

    assert state("cold")[0] == "cold" and state("warm")[0] == "warm"
    (weights,) = cache.glob("*/xnnpack_weights.bin")
    weights.write_bytes(b"\xa5" * weights.stat().st_size)  # damaged, same size
    found, said = state("damaged")  # said once, as the run's other warnings (the log, on stdout)
    assert found == "rebuilt" and said.count("rebuilt, not used") == 1
    assert state("after")[0] == "warm"  # what was rebuilt serves the next run
