"""compare --chain checks every step before any runs: a step whose value has the wrong type (at any
position of the chain, for keys of several groups) is one ConfigError naming the step and the key,
and no step has run, nothing is written under ``--out``. Generated: each key × each position."""

from __future__ import annotations

import pytest

from evalharness.core.errors import ConfigError
from evalharness.run import candidates, compare

# key -> (valid values of a three-step chain, a wrong-typed value, overrides every step takes)
KEYS = {
    "loop.warmup_runs": (["0", "1", "2"], "x", []),
    "quant.weights.only": (["[1]", "[2]", "[3]"], "5", ["quant=prune"]),
    "delegate.num_threads": (["1", "2", "3"], "[1]", []),
}
CASES = [(key, position) for key in KEYS for position in range(3)]


@pytest.mark.parametrize(("key", "position"), CASES, ids=[f"{k}@step{p}" for k, p in CASES])
def test_a_wrong_step_anywhere_stops_the_chain_before_any_step_runs(tmp_path, monkeypatch, key, position):
    values, wrong, fixed = KEYS[key]
    values = [*values]
    values[position] = wrong
    ran = []
    monkeypatch.setattr(candidates, "run_all", lambda *args, **kwargs: ran.append(args) or [0])
    monkeypatch.setattr(compare, "run_all", lambda *args, **kwargs: ran.append(args) or [0])
    out = tmp_path / "chain"
    with pytest.raises(ConfigError) as err:
        compare.chain([*fixed, f"{key}={','.join(values)}"], str(out))
    message = str(err.value)
    assert f"chain step {position}" in message and key in message and "\n" not in message, message
    assert "internal error" not in message
    assert not ran and not out.exists()
