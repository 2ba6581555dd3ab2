"""The preprocessed-tensor cache: same results, detected corruption, never a wrong tensor."""

from __future__ import annotations

import json

import numpy as np
from conftest import VAL50, run_inprocess

from evalharness.data.tensor_cache import TensorCache


def _run(tmp_path, name, cache_dir, *extra) -> tuple[dict, list[dict]]:
    run = tmp_path / name
    doc = run_inprocess(
        [
            *VAL50,
            "model=mobilenet_v2_1.0_224_quant",
            "task.num_images=8",
            "loop.tensor_cache=true",
            f"paths.cache_dir={cache_dir}",
            *extra,
        ],
        run,
    )
    preds = [
        {k: v for k, v in json.loads(line).items() if k != "latency_ms"}
        for line in (run / "predictions.jsonl").read_text().splitlines()
    ]
    return doc, preds


def test_cached_runs_equal_uncached_and_hit(tmp_path):
    cache = tmp_path / "cache"
    _, plain = _run(tmp_path, "plain", cache, "loop.tensor_cache=false")
    cold, first = _run(tmp_path, "cold", cache)
    warm, second = _run(tmp_path, "warm", cache, "delegate=reference")
    assert cold["throughput"]["cache"]["misses"] == 8 and warm["throughput"]["cache"]["hits"] == 8
    assert plain == first
    assert [p["id"] for p in second] == [p["id"] for p in first]


def test_corrupted_sample_is_detected_and_rebuilt(tmp_path, caplog):
    cache = tmp_path / "cache"
    cold, first = _run(tmp_path, "cold", cache)
    tensors = np.load(f"{cold['throughput']['cache']['dir']}/tensors.npy", mmap_mode="r+")
    tensors[3, 0, 10, 10, 0] ^= 0xFF  # a flipped byte on disk ([N, 1, H, W, C])
    tensors.flush()
    caplog.clear()
    again, second = _run(tmp_path, "again", cache)
    assert again["throughput"]["cache"]["corrupt_rebuilt"] == 1 and again["throughput"]["cache"]["hits"] == 7
    assert second == first
    said = [r.getMessage() for r in caplog.records if "rebuilt, not used" in r.getMessage()]
    where = again["throughput"]["cache"]["dir"]
    assert said == [f"tensor cache {where}: sample 3's tensor fails its CRC-32; rebuilt, not used"]


def test_key_mismatch_rebuilds_whole_cache(tmp_path):
    key = {"manifest": "abc", "preprocessing": {"resize": "tflite_bilinear"}}
    source = tmp_path / "image.jpg"
    source.write_bytes(b"jpeg bytes")
    c = TensorCache(str(tmp_path), key, 2, (2, 2), "uint8")
    c.put(0, np.ones((2, 2), np.uint8), c.source_identity(str(source)))
    c.flush()
    (tmp_path / c.dir.split("/")[-1] / "key.json").write_text("{}")  # stale or foreign key file
    again = TensorCache(str(tmp_path), key, 2, (2, 2), "uint8")
    assert again.get(0, str(source)) is None  # rebuilt from scratch, not served
    other = TensorCache(str(tmp_path), {**key, "manifest": "xyz"}, 2, (2, 2), "uint8")
    assert other.dir != again.dir


def test_a_container_run_is_served_by_the_cache_as_a_folder_run_is(tmp_path):
    """The same 8 images as parquet: a cold run fills the cache from the members' bytes, a warm one
    is served by it (each member's digest from the listing: no image read), answers unchanged."""
    import pytest

    pytest.importorskip("pyarrow", reason="packing the parquet needs pyarrow")
    from pack_containers import val50_items, write_parquet

    parquet = write_parquet(val50_items()[:8], tmp_path / "parquet")
    where = [f"dataset.root={parquet}", "dataset.format=auto"]
    cache = tmp_path / "cache"
    _, plain = _run(tmp_path, "plain", cache, "loop.tensor_cache=false", *where)
    cold, first = _run(tmp_path, "cold", cache, *where)
    warm, second = _run(tmp_path, "warm", cache, *where)
    assert cold["throughput"]["cache"]["misses"] == 8 and warm["throughput"]["cache"]["hits"] == 8
    assert plain == first == second
