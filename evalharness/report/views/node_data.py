"""Model Explorer's ``ModelNodeData``: one value per node of one graph, with its colour scale.

Model Explorer's TFLite adapter names each op's node by the op's index in execution order, in a
graph whose id is the subgraph's name; node data keyed so lands on exactly those nodes
(``model_explorer --node_data_paths``). explain's per-op quantities and a repair's kept-in-float ops
are written in this one form."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def node_data(
    graph: str, values: Mapping[int, float], gradient: list[dict[str, Any]], name: str
) -> dict[str, Any]:
    """``ModelNodeData`` JSON of one quantity: ``values`` by op index."""
    results = {str(op): {"value": value} for op, value in sorted(values.items())}
    return {graph: {"name": name, "results": results, "gradient": gradient}}
