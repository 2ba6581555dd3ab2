"""The one contract of a model transform (transforms/variant.py): which kind a setting asks for, one
registry entry per kind, a variant made from the typed model settings (``dataclasses.replace``), and
cache keys whose text is what older caches were built for."""

from __future__ import annotations

import dataclasses
import json
import os
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from evalharness.core.errors import ConfigError
from evalharness.core.schema import build, thaw
from evalharness.data.preprocess import PreprocessSpec
from evalharness.runtime.modelgen import conv_classifier_model
from evalharness.settings.groups import ModelSchema, QuantSchema, WeightsSchema
from evalharness.transforms.plan import with_quantized_variant
from evalharness.transforms.quantized import integer_input, quantize_model
from evalharness.transforms.variant import TRANSFORMS, Variant, kind_of

SPLIT = {"fraction": 0.5, "scheme": "interleaved"}


def _quant(**node: Any) -> QuantSchema:
    return build(QuantSchema, {"name": "q", **node}, "config group 'quant'")


@pytest.mark.parametrize(
    ("node", "split", "kind"),
    [
        ({}, None, None),
        ({"recipe": "static_wi8_ai8"}, None, "quantize"),
        ({"recipe": "static_wi8_ai8", "integer_input": "quantize"}, None, "quantize"),
        ({"weights": {"method": "prune"}}, None, "prune"),
        ({"weights": {"method": "cluster"}, "recipe": "static_wi8_ai8"}, None, "cluster"),
        ({"recipe": "static_wi8_ai8", "max_drop": 0.01}, SPLIT, "repair"),
        ({"weights": {"method": "prune", "scan": True}}, SPLIT, "layer_search"),
        ({"weights": {"method": "cluster"}, "max_drop": 0.01}, SPLIT, "layer_search"),
    ],
)
def test_each_setting_asks_for_one_kind(node, split, kind):
    assert kind_of(_quant(**node), split) == kind


def test_one_registry_entry_per_kind_each_a_transform():
    assert TRANSFORMS.names() == ["cluster", "layer_search", "prune", "quantize", "repair"]
    assert all(callable(TRANSFORMS.get(name)) for name in TRANSFORMS.names())
    with pytest.raises(ConfigError, match="unknown transform 'prun'.*Did you mean 'prune'"):
        TRANSFORMS.get("prun")


def test_quant_none_leaves_the_plan_as_it_is():
    plan: Any = SimpleNamespace(quant=QuantSchema())
    same, record = with_quantized_variant(plan)
    assert same is plan and record == {"name": "none", "recipe": None}


def test_integer_input_is_a_replaced_spec_and_checked():
    spec = PreprocessSpec()
    assert integer_input(spec, _quant()) is spec  # no integer_input: the float model's preprocessing
    made = integer_input(spec, _quant(integer_input="quantize"))
    assert made == dataclasses.replace(spec, integer_input="quantize") and spec.integer_input == "tool"
    with pytest.raises(ConfigError, match="integer_input='raw'"):
        integer_input(spec, _quant(integer_input="raw"))


@pytest.mark.parametrize(
    "value",
    [PreprocessSpec(), PreprocessSpec(mean=(127.0,) * 3, crop="none"), WeightsSchema(only=(3, 1), scan=True)],
)
def test_cache_key_text_is_what_older_caches_were_built_for(value):
    """The keys once held ``thaw`` of the settings (tuples as lists); their JSON text must not change,
    or every cached variant would be built again."""
    as_json = json.dumps(dataclasses.asdict(value), sort_keys=True)
    assert as_json == json.dumps(thaw(value), sort_keys=True)


def _model(path: str) -> str:
    rng = np.random.default_rng(5)
    convs = [(rng.normal(size=(16, 1, 1, 3)).astype(np.float32), np.zeros(16, np.float32), True)]
    return conv_classifier_model(path, convs, (rng.normal(size=(10, 16)).astype(np.float32), np.zeros(10)))


def test_a_weight_edit_is_a_variant_file_its_provenance_and_its_cache_key(tmp_path):
    source = ModelSchema(name="m", path=_model(str(tmp_path / "m.tflite")))
    quant = _quant(weights={"method": "prune", "sparsity": 0.5, "min_elements": 0, "keep_first": False})
    made = quantize_model(quant, source, str(tmp_path), False, str(tmp_path / "cache"))
    assert isinstance(made, Variant) and made.path != source.path and os.path.isfile(made.path)
    assert made.model == dataclasses.replace(source, path=made.path)  # nothing else of the model changed
    assert made.cache_key is not None and made.cache_key["edit_version"] == 1
    assert made.cache_key["weights"] == dataclasses.asdict(quant.weights)
    weights = made.provenance["weights"]
    assert made.provenance["recipe"] is None and weights["cache"]["status"] == "built"
    assert weights["variant_sha256"] and made.path.startswith(weights["cache"]["dir"])
    again = quantize_model(quant, source, str(tmp_path), False, str(tmp_path / "cache"))
    assert again.path == made.path and again.provenance["weights"]["cache"]["status"] == "hit"
