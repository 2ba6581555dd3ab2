"""Every step checked before any runs: a repair whose held-out part would be empty (one image split
in two) is refused before the search evaluates a single model, not after it."""

from __future__ import annotations

import pytest
from conftest import run_inprocess

from evalharness.core.errors import ConfigError

pytest.importorskip("ai_edge_quantizer")


def test_an_empty_held_out_part_is_refused_before_the_search(tmp_path, monkeypatch):
    from evalharness.transforms import repair

    searched = []
    monkeypatch.setattr(repair, "Search", lambda *args, **kwargs: searched.append(args))
    with pytest.raises(ConfigError, match=r"held_out part .* is empty; use more images \(task.num_images\)"):
        run_inprocess(["quant=int8", "quant.max_drop=0.01", "task.num_images=1"], tmp_path)
    assert searched == []
