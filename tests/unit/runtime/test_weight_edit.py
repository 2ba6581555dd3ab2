"""Pruning and clustering arithmetic on small generated models (runtime/weight_edit.py), the size
figures that recognise them (runtime/model_size.py) and the quantization that must keep them."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import numpy as np
import pytest

from evalharness.runtime.model_size import cached_size, model_size
from evalharness.runtime.modelgen import conv_classifier_model
from evalharness.runtime.weight_edit import (
    cluster_values,
    edit_model,
    prune_2_4,
    prune_global,
    prune_values,
    select,
)
from evalharness.runtime.weights import real_values, weight_tensors

RNG = np.random.default_rng(7)


def _settings(**over):
    base = dict(
        method="prune", sparsity=0.5, scope="per_tensor", structure="unstructured", clusters=16, only=None,
        init="linear", per_channel=False, min_elements=0, keep_first=False, keep_last=False, seed=0,
    )  # fmt: skip
    return SimpleNamespace(**{**base, **over})


def _model(path, convs=((24, 16), (32, 24)), classes=40, weights=None):
    """conv 1x1 layers (out, in) then a classifier; ``weights``: name -> array to plant."""
    weights = weights or {}
    layers = []
    for i, (out, inp) in enumerate(convs):
        w = weights.get(f"conv{i}", RNG.normal(size=(out, 1, 1, inp)).astype(np.float32))
        layers.append((w, np.zeros(out, np.float32), True))
    fc = weights.get("fc", RNG.normal(size=(classes, convs[-1][0])).astype(np.float32))
    return conv_classifier_model(str(path), layers, (fc, np.zeros(classes, np.float32)))


def test_prune_is_exact_per_tensor_and_global():
    x = RNG.normal(size=(64, 3, 3, 8)).astype(np.float32)
    pruned = prune_values(x, 0.3)
    assert np.count_nonzero(pruned == 0) == round(0.3 * x.size)
    kept = pruned != 0
    assert np.abs(x[~kept]).max() <= np.abs(x[kept]).min()  # the smallest magnitudes went
    assert np.array_equal(pruned[kept], x[kept])
    a, b = RNG.normal(size=(100,)).astype(np.float32), 10 * RNG.normal(size=(300,)).astype(np.float32)
    ga, gb = prune_global([a, b], 0.5)
    assert np.count_nonzero(ga == 0) + np.count_nonzero(gb == 0) == 200
    assert np.count_nonzero(ga == 0) / a.size > np.count_nonzero(gb == 0) / b.size  # one threshold


def test_two_of_four_pattern():
    x = RNG.normal(size=(8, 1, 1, 16)).astype(np.float32)
    groups = prune_2_4(x).reshape(-1, 4)
    assert (np.count_nonzero(groups == 0, axis=1) == 2).all()
    original = x.reshape(-1, 4)
    for g, o in zip(groups, original, strict=True):
        assert set(np.abs(o)[g == 0]) == set(np.sort(np.abs(o))[:2])


@pytest.mark.parametrize("init", ["linear", "kmeans++"])
def test_cluster_leaves_at_most_n_values(init):
    x = RNG.normal(size=(32, 3, 3, 16))
    out = cluster_values(x, 16, init)
    assert np.unique(out).size <= 16 and out.shape == x.shape and out.dtype == np.float32
    assert np.abs(out - x).mean() < 0.2 * np.abs(x).mean()  # centroids, not noise
    per = cluster_values(x, 4, init, per_channel=True, axis=0)
    assert all(np.unique(per[c]).size <= 4 for c in range(32))


def test_select_keeps_first_conv_classifier_and_small(tmp_path):
    _, weights = weight_tensors(_model(tmp_path / "m.tflite"))
    chosen, skipped = select(weights, _settings(keep_first=True, keep_last=True, min_elements=0))
    assert [w.name for w in chosen] == ["conv1_weights"]
    assert {s["name"] for s in skipped} == {"conv0_weights", "fc_weights"}
    chosen, skipped = select(weights, _settings(min_elements=500))
    assert [w.name for w in chosen] == ["conv1_weights", "fc_weights"] and "small" in skipped[0]["why"]


@pytest.mark.parametrize(
    "settings",
    [
        _settings(),
        _settings(scope="global"),
        _settings(structure="2:4"),
        _settings(method="cluster", clusters=8),
    ],
)
def test_edit_model_in_place(tmp_path, settings):
    path = _model(tmp_path / "m.tflite")
    data, record = edit_model(path, settings)
    assert len(data) == os.path.getsize(path)
    out = tmp_path / "edited.tflite"
    out.write_bytes(data)
    figures = {t["name"]: t for t in model_size(str(out))["tensors"]}
    for t in record["tensors"]:
        if settings.method == "cluster":
            assert figures[t["name"]]["unique"] <= 8
        elif settings.scope == "per_tensor":
            assert figures[t["name"]]["zeros"] == round(0.5 * t["elements"])
    if settings.scope == "global":
        assert sum(figures[t["name"]]["zeros"] for t in record["tensors"]) == round(
            0.5 * sum(t["elements"] for t in record["tensors"])
        )


def test_a_model_pruned_and_clustered_outside_is_recognised(tmp_path):
    """A model whose weights were pruned/clustered elsewhere (here: written so): inspect's figures."""
    pruned = RNG.normal(size=(24, 1, 1, 16)).astype(np.float32)
    pruned.ravel()[: pruned.size * 3 // 4] = 0.0  # 75 % zeros
    clustered = RNG.choice(np.linspace(-1, 1, 5).astype(np.float32), size=(32, 1, 1, 24))
    path = _model(tmp_path / "outside.tflite", weights={"conv0": pruned, "conv1": clustered})
    from evalharness.inspect.facts import main

    size = model_size(path)
    by_name = {t["name"]: t for t in size["tensors"]}
    assert by_name["conv0_weights"]["sparsity"] == 0.75
    assert by_name["conv1_weights"]["unique"] == 5
    assert size["gzip_bytes"] < size["bytes"]
    assert main([path, "--delegate", "cpu", "--json"]) == 0


def test_size_cache_hits_and_rebuilds_damage(tmp_path):
    path = _model(tmp_path / "m.tflite")
    first = cached_size(path, "ab" * 32, str(tmp_path / "cache"))
    assert first["cache"] == "built"
    assert cached_size(path, "ab" * 32, str(tmp_path / "cache"))["cache"] == "hit"
    (entry,) = (tmp_path / "cache" / "model_size").glob(f"{'ab' * 32}-*.json")  # one per file and method
    doc = json.loads(entry.read_text())
    doc["size"]["gzip_bytes"] = 1  # a figure edited: not the one written
    entry.write_text(json.dumps(doc))
    again = cached_size(path, "ab" * 32, str(tmp_path / "cache"))
    assert again["cache"].startswith("rebuilt") and again["gzip_bytes"] == first["gzip_bytes"]


def test_int8_after_prune_and_cluster_keeps_zeros_and_shared_values(tmp_path):
    pytest.importorskip("ai_edge_quantizer")
    from evalharness.runtime.quantize import quantize, recipe_ops
    from evalharness.transforms.weight_variants import check_kept, tensorwise

    path = _model(tmp_path / "m.tflite")
    calibration = [RNG.normal(size=(1, 8, 8, 16)).astype(np.float32) for _ in range(4)]
    for settings, recipe in [
        (_settings(), recipe_ops("static_wi8_ai8")),
        (_settings(method="cluster", clusters=8), tensorwise(recipe_ops("static_wi8_ai8"))),
    ]:
        data, record = edit_model(path, settings)
        edited = tmp_path / f"{settings.method}.tflite"
        edited.write_bytes(data)
        quantized, _ = quantize(str(edited), recipe, calibration)
        out = tmp_path / f"{settings.method}_int8.tflite"
        out.write_bytes(quantized)
        kept = check_kept(str(out), record)
        assert kept["held"] and kept["checked"] == len(record["tensors"]), kept
        buf, weights = weight_tensors(str(out))
        assert all(w.dtype == "int8" for w in weights)
        if settings.method == "cluster":
            assert max(np.unique(real_values(buf, w)).size for w in weights) <= 8


def _quant(name: str, recipe=None, **weights):
    from evalharness.core.schema import build
    from evalharness.settings.groups import QuantSchema

    node = {"name": name, "recipe": recipe, "weights": weights}
    extra = {k: weights.pop(k) for k in ("max_drop",) if k in weights}
    return build(QuantSchema, {**node, **extra}, "config group 'quant'")


@pytest.mark.parametrize(
    ("quant", "words"),
    [
        (_quant("none", scan=True), "quant.weights.scan needs pruning or clustering"),
        (_quant("prune+int8", "static_wi8_ai8", method="prune", scan=True), "runs on the float model only"),
        (_quant("prune", method="prune", max_drop=0.01, scan=False), "reads no dataset"),
    ],
)
def test_layer_search_rules(quant, words):
    """Refusals of the layer search are one ConfigError line (exit 2) before anything runs."""
    from evalharness.core.errors import ConfigError
    from evalharness.settings.groups import DatasetSchema, ModelSchema
    from evalharness.settings.quant_rules import check_quant
    from evalharness.tasks.imagenet.comparison import ClassificationComparison

    abilities = SimpleNamespace(reads_dataset=False, repair_metric="top1")
    compare = ClassificationComparison
    definition = SimpleNamespace(name="toy", abilities=abilities, comparison=compare, settings={})
    with pytest.raises(ConfigError, match=words):
        check_quant(quant, definition, DatasetSchema(), ModelSchema())


def test_layer_search_splits_the_dataset():
    from evalharness.settings.quant_rules import layer_search, split_of

    assert split_of(_quant("prune", method="prune")) is None
    scan = _quant("prune", method="prune", scan=True)
    assert layer_search(scan) and split_of(scan) == {"fraction": 0.5, "scheme": "interleaved"}


def test_only_edits_the_named_ops(tmp_path):
    _, weights = weight_tensors(_model(tmp_path / "m.tflite"))
    chosen, skipped = select(weights, _settings(only=(weights[1].op_index,)))
    assert [w.name for w in chosen] == ["conv1_weights"]
    assert {s["why"] for s in skipped} == {"not in quant.weights.only"}


def test_a_layer_search_that_cannot_hold_the_drop_is_a_failed_check():
    from evalharness.report.views.repair_view import failed_checks

    status = "cannot: no layer alone holds the drop; the float model runs"
    search = {"status": status, "target": "top1 drop <= 0"}
    assert failed_checks({"name": "prune", "weights": {"search": search}}) == [
        "quant.weights search: top1 drop <= 0 cannot be held with even one layer edited"
    ]
    assert failed_checks({"name": "prune", "weights": None}) == []
