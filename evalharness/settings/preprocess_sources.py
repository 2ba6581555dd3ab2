"""Where each ``model.preprocess`` value came from, key by key: the command line, the model file, or
the preset.

A key given on the command line (``model.preprocess.integer_input=quantize``) replaces that key
only: the file's mean/std and the preset's crop stay, each with its own source. A preset chosen
whole on the command line (``model.preprocess=efficientnet``, ``model/preprocess=...``) replaces
every key. ``provenance.model.settings_source`` records ``preprocess.<key>`` for each key, and
``preprocess`` as one line over them all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from evalharness.data.preprocess import PreprocessSpec

KEYS = tuple(f.name for f in dataclasses.fields(PreprocessSpec))
COMMAND_LINE, MODEL_FILE, PRESET = "command line", "model file", "preset"


def chosen_whole(overrides: list[str]) -> bool:
    """Whether the command line chose the whole preprocessing (a preset or a mapping), not keys of it."""
    from evalharness.settings.overrides import parse

    return any(o.key_or_group in ("model.preprocess", "model/preprocess") for o in parse(overrides))


class PreprocessSources:
    """The source of each preprocessing key while the model's settings are filled in from its file."""

    def __init__(self, given: set[str], whole: bool) -> None:
        self.whole = whole
        self.of = {k: COMMAND_LINE if whole or f"preprocess.{k}" in given else PRESET for k in KEYS}

    def given(self, key: str) -> bool:
        return self.of[key] == COMMAND_LINE

    def take(self, preprocess: dict[str, Any], values: Mapping[str, Any], what: str) -> list[str]:
        """The file's ``values`` into ``preprocess`` for every key the command line left (``what``:
        where in the file); returns the keys the command line kept instead."""
        kept = [k for k in values if self.given(k)]
        for key, value in values.items():
            if not self.given(key):
                preprocess[key] = value
                self.of[key] = f"{MODEL_FILE} ({what})"
        return kept

    def record(self, sources: dict[str, Any]) -> None:
        """``preprocess.<key>`` for each key, and ``preprocess``: the one source, or each source with
        its keys, the largest group last as ``the rest``."""
        sources.update({f"preprocess.{k}": v for k, v in self.of.items()})
        groups: dict[str, list[str]] = {}
        for key, source in self.of.items():
            groups.setdefault(source, []).append(key)
        if len(groups) == 1:
            sources["preprocess"] = next(iter(groups))
            return
        rest = max(groups, key=lambda s: len(groups[s]))
        named = [f"{', '.join(keys)}: {source}" for source, keys in groups.items() if source != rest]
        sources["preprocess"] = "; ".join([*named, f"the rest: {rest}"])
