"""Model Explorer node data, checked with the ai-edge-model-explorer package's own classes: every
node id of every file resolves against the graph its TFLite adapter makes of the model, and the
values sit on the planted ops (explain: culprit rounds, answers restored; repair: kept in float)."""

from __future__ import annotations

import json
from pathlib import Path

import planted_models as planted
import pytest
from test_explain_culprits import _run

from evalharness.explain.__main__ import main

ndb = pytest.importorskip("model_explorer.node_data_builder")
adapter = pytest.importorskip("model_explorer.builtin_tflite_flatbuffer_adapter")


def op_nodes(model: Path) -> dict[str, set[str]]:
    """Graph id -> the ids of its op nodes, as Model Explorer's TFLite adapter builds them."""
    graphs = adapter.BuiltinTfliteFlatbufferAdapter().convert(str(model), {})["graphCollections"][0].graphs
    out = {}
    for g in graphs:
        g = g if isinstance(g, dict) else vars(g)
        nodes = [n if isinstance(n, dict) else vars(n) for n in g["nodes"]]
        skip = ("pseudo_const", "GraphInputs", "GraphOutputs")
        out[g["id"]] = {n["id"] for n in nodes if n["label"] not in skip}
    return out


def load(path: Path):
    """The file as the package's ModelNodeData (its own dataclasses, every field checked by name)."""
    raw = json.loads(path.read_text())
    return ndb.ModelNodeData(
        graphsData={
            graph: ndb.GraphNodeData(
                name=data.get("name"),
                results={k: ndb.NodeDataResult(**v) for k, v in data["results"].items()},
                gradient=[ndb.GradientItem(**g) for g in data.get("gradient", [])],
            )
            for graph, data in raw.items()
        }
    )


def test_explain_node_data_resolves_on_the_graph(tmp_path):
    images = planted.images(tmp_path / "images", per_class=2)
    model_a = planted.gated_model(tmp_path / "a.tflite")
    a = _run(tmp_path, "a", model_a, images)
    b = _run(tmp_path, "b", planted.gated_model(tmp_path / "b.tflite", defects=(1, 3)), images)
    assert main([str(a), str(b), "--out", str(tmp_path / "explain")]) == 0
    nodes = op_nodes(model_a)
    folder = tmp_path / "explain" / "model_explorer"
    files = sorted(p.name for p in folder.iterdir())
    assert files == sorted(
        ["accumulated_snr.json", "culprit_rank.json", "flips.json", "local_snr.json", "own_share.json"]
    )
    for name in files:
        data = load(folder / name)
        for graph, gd in data.graphsData.items():
            assert set(gd.results) == nodes[graph], name  # every op, and only ops of that graph
        json.loads(data.to_json_string())  # the package writes it back
    rank = {k: r.value for k, r in load(folder / "culprit_rank.json").graphsData["main"].results.items()}
    assert sorted(k for k, v in rank.items() if v) == ["1", "3"] and sorted(rank.values()) == [0, 0, 1, 2]


def test_repair_node_data_marks_the_op_kept_in_float(tmp_path):
    from conftest import run_inprocess

    images = planted.images(tmp_path / "images")
    model = planted.model(tmp_path / "planted.tflite", bad_scale=True)
    overrides = [
        f"model.path={model}", f"model.labels={planted.labels(tmp_path / 'labels.txt')}",
        "dataset=imagefolder", f"dataset.root={images}", "task.top_k=3", "quant=int8", "quant.max_drop=0",
        f"paths.cache_dir={tmp_path / 'cache'}",
    ]  # fmt: skip
    run_inprocess(overrides, tmp_path / "run")
    data = load(tmp_path / "run" / "repair" / "model_explorer_float_ops.json")
    results = data.graphsData["main"].results
    assert set(results) <= op_nodes(model)["main"]
    assert {k: r.value for k, r in results.items()} == {"0": 0, "1": 1, "2": 0, "3": 0}
