"""The one contract of a model transform: a source model and typed settings in, a variant out.

A :class:`Request` says what to make: the run's plan (the dataset a search scores candidates on,
the delegate that scores them, the cache folder), the quant settings (the plan's, with an ``auto``
calibration resolved), the model it starts from (typed: a transform before it may have made it)
and the dataset split a search or a calibration from the dataset reads. A :class:`Variant` is what
was made: the model settings a run of it reads (the source's, its ``path`` and, for an
integer-input variant, its preprocessing replaced with :func:`dataclasses.replace`; nothing edits
a dict of settings), its provenance (``provenance.model.quant``) and the key its cache folder is
built for (:func:`evalharness.core.variant_cache.cached_model`; None: nothing was cached, e.g. a
layer search that kept the float model).

Each kind is one entry of :data:`TRANSFORMS` (the project's registry style,
:mod:`evalharness.core.registry`), named as the settings name it: ``quantize`` (every ``quant=``
recipe, calibrated or not, integer inputs included), ``prune`` and ``cluster`` (``quant.weights``,
quantized after when a recipe is set), ``repair`` (``quant.max_drop`` with a recipe) and
``layer_search`` (``quant.weights.scan``, or ``quant.max_drop`` with pruning or clustering).
:func:`kind_of` says which one a setting asks for; :mod:`evalharness.transforms.plan` runs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from evalharness.core.registry import Registry
from evalharness.settings.groups import ModelSchema, QuantSchema, RunSettings
from evalharness.settings.quant_rules import layer_search, repair_requested


@dataclass(frozen=True)
class Request:
    """What a transform makes a variant of, and from what (see the module docstring)."""

    settings: RunSettings
    quant: QuantSchema
    source: ModelSchema
    split: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Variant:
    """The variant made: the model settings that run it, ``provenance.model.quant``, its cache key."""

    model: ModelSchema
    provenance: dict[str, Any]
    cache_key: dict[str, Any] | None = None

    @property
    def path(self) -> str:
        """The variant's model file."""
        return self.model.path


@dataclass(frozen=True)
class CachedFile:
    """One model file a transform built in the cache: what the provenance says of it, its path, its
    cache folder and the key that folder was built for."""

    provenance: dict[str, Any]
    path: str
    folder: str
    key: dict[str, Any]


class Transform(Protocol):
    def __call__(self, request: Request) -> Variant: ...


TRANSFORMS: Registry[Transform] = Registry(
    "transform",
    lazy={
        "quantize": "evalharness.transforms.quantized:make_variant",
        "prune": "evalharness.transforms.quantized:make_variant",  # the edit, then its recipe if any
        "cluster": "evalharness.transforms.quantized:make_variant",
        "repair": "evalharness.transforms.repair:repair_variant",
        "layer_search": "evalharness.transforms.weight_search:searched_variant",
    },
    plugins=False,
)


def kind_of(quant: QuantSchema, split: Mapping[str, Any] | None) -> str | None:
    """The transform ``quant`` asks for (a name of :data:`TRANSFORMS`); None: the float model runs."""
    if split is not None and repair_requested(quant) and quant.recipe:
        return "repair"
    if layer_search(quant):
        return "layer_search"
    if quant.weights.method != "none":
        return str(quant.weights.method)
    return "quantize" if quant.recipe else None
