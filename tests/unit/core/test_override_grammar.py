"""One override read with Hydra's grammar (core.override_grammar), by every room that reads one:
prefixes apart from the key, quoted values unquoted, ``=`` inside a quoted value kept, sweeps as
written, a malformed override one line naming it."""

from __future__ import annotations

import pytest

from evalharness.core.errors import ConfigError
from evalharness.core.override_grammar import names_any, override_key, override_parts
from evalharness.loop.shape import PIPELINED, SEQUENTIAL, given_workers
from evalharness.report.commands.sweep import parse_baseline, parse_override
from evalharness.report.runs import ReportError


@pytest.mark.parametrize(
    ("text", "prefix", "key", "written", "value"),
    [
        ("delegate=cpu", "", "delegate", "cpu", "cpu"),
        ("+loop.workers=2", "+", "loop.workers", "2", "2"),
        ("++model.path='/a b/m.tflite'", "++", "model.path", "'/a b/m.tflite'", "/a b/m.tflite"),
        ('model.name="x=y"', "", "model.name", '"x=y"', "x=y"),
        ("~tracking", "~", "tracking", "", ""),
        ("~loop.workers=2", "~", "loop.workers", "2", "2"),
        ("delegate=cpu,gpu", "", "delegate", "cpu,gpu", "cpu,gpu"),
        ("loop.workers=choice(1,2)", "", "loop.workers", "choice(1,2)", "choice(1,2)"),
        ("hydra.searchpath=[file://x]", "", "hydra.searchpath", "[file://x]", "[file://x]"),
        ("model@pkg=a", "", "model", "a", "a"),
    ],
)
def test_parts(text: str, prefix: str, key: str, written: str, value: str) -> None:
    parts = override_parts(text)
    assert (parts.prefix, parts.key, parts.written, parts.value) == (prefix, key, written, value)
    assert override_key(text) == key


def test_not_an_override_is_one_line_naming_it() -> None:
    with pytest.raises(ConfigError) as err:
        override_parts("model.name=a(b")
    message = str(err.value)
    assert message.startswith("model.name=a(b: not an override Hydra reads") and "\n" not in message


def test_the_loop_sees_loop_workers_behind_any_prefix() -> None:
    for given in ("loop.workers=0", "+loop.workers=0", "++loop.workers=0"):
        assert given_workers("auto", 0, [given]) == SEQUENTIAL
    assert given_workers("auto", 2, ["++loop.workers=2", "loop.shape=auto"]) == "auto"
    assert given_workers("auto", 2, ["loop.workers=2"]) == PIPELINED


def test_the_sweep_table_and_its_baseline_read_overrides_the_same_way() -> None:
    assert parse_override("++model.path='/a b/m.tflite'") == ("model.path", "/a b/m.tflite")
    assert parse_baseline(["delegate=cpu", "model.name='a=b'"]) == {"delegate": "cpu", "model.name": "a=b"}
    for bad in ("delegate", "=cpu", "+delegate=cpu"):
        with pytest.raises(ReportError, match="expected KEY=VALUE"):
            parse_baseline([bad])


def test_a_child_process_drops_what_it_sets_itself_whatever_the_prefix() -> None:
    from evalharness.run.parallel import shard_overrides
    from evalharness.run.start_up import child_overrides

    given = ["model=m", "++loop.parallel=2x1", "~dataset.shard", "+dataset.shard.index=0", "loop.resume=true"]
    assert names_any("++dataset.shard.index=1", ["dataset.shard"]) and not names_any("dataset=x", ["data"])
    kept = shard_overrides(given, 2, 1, 1, "/r/shard_1", resume=False)
    assert kept[0] == "model=m" and not [o for o in kept[1:] if o.startswith(("+", "~", "loop.resume"))]
    passes = child_overrides(["~task.start_up", "++loop.resume=true", "model=m"], "/c", "/r")
    assert passes[0] == "model=m" and "++loop.resume=true" not in passes


def test_a_recorded_override_hydra_cannot_read_is_shown_as_recorded():
    """A run directory's overrides are data: one Hydra's grammar refuses is still listed (key before
    the first "=", the rest as text), never a refused report."""
    from evalharness.core.override_grammar import recorded_parts

    parts = recorded_parts("++model.name=m<svg onload=alert(1)>`x")
    assert (parts.prefix, parts.key, parts.value) == ("++", "model.name", "m<svg onload=alert(1)>`x")
    assert recorded_parts("delegate=gpu").value == "gpu"
