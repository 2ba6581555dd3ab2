"""One override (``key=value`` of the command line, of a job's ``.hydra/overrides.yaml``, of a
sweep's task overrides) read with Hydra's own override grammar, never split by hand.

In core so that every room reads it the same way (the loop's ``loop.workers`` check, the sweep
table's parameters, the tracker's sweep parameters, the command-line checks of ``settings/overrides.py``):
a ``+``/``++``/``~`` prefix is not part of the key, a quoted value is the value without its quotes,
a value holding ``=`` stays whole, and a sweep (``a,b``, ``choice(...)``) is kept as written.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import OverrideParseException

from evalharness.core.errors import ConfigError

GRAMMAR = "write KEY=VALUE, quoting a value holding , ( ) [ ] { }: key='a(b)' (Hydra's override grammar)"
_NOISE = ("See https://", "Error parsing override", "LexerNoViableAltException")
_PLAIN = (str, int, float, bool)


class Parts(NamedTuple):
    prefix: str  # "", "+", "++" or "~"
    key: str  # the key or group, without prefix (and without a group's @package)
    written: str  # the value as written (quotes and sweeps kept; "" for ~key without a value)
    value: str  # a plain value as Hydra reads it, as text (quotes gone); else (a list, a sweep) as written


def parse_override(text: str) -> Override:
    """``text`` parsed by Hydra's override grammar; not an override: a one-line :class:`ConfigError`
    naming it and the reason (Hydra's own message spans several lines and names neither)."""
    try:
        return OverridesParser.create().parse_overrides([text])[0]
    except OverrideParseException as exc:
        said = [line.strip() for line in str(exc.message).splitlines()]
        reason = next((line for line in said if line.strip("^") and not line.startswith(_NOISE)), "")
        raise ConfigError(f"{text}: not an override Hydra reads ({reason}); {GRAMMAR}") from None


def override_parts(text: str) -> Parts:
    """The parts of one override (see :class:`Parts`); not an override: :func:`parse_override`'s error."""
    o = parse_override(text)
    element = o.get_key_element()  # the key as written, with its prefix and @package
    prefix = element[: len(element) - len(element.lstrip("+~"))]
    if o.value_type is None:  # ~key: a deletion without value
        return Parts(prefix, o.key_or_group, "", "")
    written = text.strip().split("=", 1)[1]  # the key's grammar holds no "=": the first one ends it
    value: Any = None if o.is_sweep_override() else o.value()
    return Parts(prefix, o.key_or_group, written, str(value) if isinstance(value, _PLAIN) else written)


def recorded_parts(text: str) -> Parts:
    """The parts of an override a run directory recorded (``.hydra/overrides.yaml``, provenance):
    Hydra's reading where its grammar reads the text, else the text as recorded (the key before the
    first ``=``, the rest as the value). A report shows what a file holds; it does not refuse it,
    and it never executes it either way (the value is text, escaped where it is shown)."""
    try:
        return override_parts(text)
    except ConfigError:
        key, _, value = text.strip().partition("=")
        bare = key.lstrip("+~")
        return Parts(key[: len(key) - len(bare)], bare, value, value)


def override_key(text: str) -> str:
    """The key (or group) an override sets or deletes, without its prefix."""
    return parse_override(text).key_or_group


def names_any(text: str, keys: Iterable[str]) -> bool:
    """The override sets or deletes one of ``keys``, or a key inside one (``dataset.shard`` covers
    ``dataset.shard.index``), whatever its prefix."""
    key = override_key(text)
    return any(key == k or key.startswith(f"{k}.") for k in keys)
