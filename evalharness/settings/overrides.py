"""The command line's overrides, read once with Hydra's own grammar, and the checks made on them
before Hydra composes (each one line naming the key and the fix, where Hydra's would be several).

Hydra's argument parser separates its flags (``-m``, ``--cfg``, ``--config-name``) from the
overrides, and its override parser turns each override into an ``Override`` (key, ``+``/``++``/``~``,
a value or a sweep). Every check and rewrite reads those objects, never the text, so a sweep
(``a,b``, ``choice(...)``, ``glob(*)``, ``range(...)``), a quoted value and a value holding
``()[]{}*`` mean here what they will mean to Hydra; what cannot be named without composing (a glob,
a range) is left to the checks after composing (:func:`evalharness.settings.validate.validate`).
"""

from __future__ import annotations

import argparse
import difflib
from pathlib import Path
from typing import NoReturn, cast

from hydra._internal.utils import get_args_parser
from hydra.core.override_parser.types import Override, ValueType

from evalharness.core.errors import ConfigError
from evalharness.core.override_grammar import override_parts, parse_override
from evalharness.core.paths import CONF_DIR

_LISTED = (ValueType.SIMPLE_CHOICE_SWEEP, ValueType.CHOICE_SWEEP)  # sweeps whose values are written out
_PLAIN = (str, int, float, bool)


def _refuse(message: str) -> NoReturn:
    raise ConfigError(f"{message}; see evalharness --hydra-help")


def split(args: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Hydra's flags (its own parser's namespace) and the override strings, as Hydra will split them."""
    parser = get_args_parser()
    vars(parser)["error"] = _refuse  # one line, not argparse's usage block (shadows the method)
    flags = parser.parse_args(args)  # as strict as Hydra's own reading, one line where it has many
    return flags, list(flags.overrides)


def parse(overrides: list[str]) -> list[Override]:
    """Each override string parsed by Hydra's override grammar; one that is not is a
    :class:`ConfigError` naming it (Hydra's own message does not): core.override_grammar."""
    return [parse_override(text) for text in overrides]


def options(override: Override) -> list[str] | None:
    """The values an override names, as text: one for a plain value, each of a comma list or
    ``choice(...)``; None for a deletion without value, ``null``, a list or dict, and the sweeps that
    only composing can list (``glob``, ``range``, ``interval``)."""
    if override.is_sweep_override():
        if override.value_type in _LISTED:
            return [str(v) for v in override.sweep_string_iterator()]
        return None
    value = override.value()
    return [str(value)] if isinstance(value, _PLAIN) else None


def conf_dirs(overrides: list[Override]) -> list[Path]:
    """conf/ and the ``file://`` folders of a ``hydra.searchpath=[...]`` override (plug-in configs)."""
    extra = []
    for o in overrides:
        value = None if o.is_sweep_override() else o.value()
        if o.key_or_group == "hydra.searchpath" and isinstance(value, list):
            extra += [Path(str(p).removeprefix("file://")) for p in value if str(p).startswith("file://")]
    return [CONF_DIR, *extra]


def rewrite(args: list[str], overrides: list[Override]) -> list[str]:
    """The spellings a user tries, made into Hydra's: ``model.preprocess=<preset>`` is the
    ``model/preprocess`` group; ``model.path=X`` without ``model=`` selects the ``file`` preset (the
    run is named after X and its settings come from the file, see ``evalharness.settings.model_settings``)."""
    presets = {p.stem for d in conf_dirs(overrides) for p in (d / "model" / "preprocess").glob("*.yaml")}
    renamed = {}
    for o in overrides:
        named = options(o) if o.key_or_group == "model.preprocess" and not o.is_delete() else None
        if named and not o.is_add() and not o.is_force_add() and set(named) <= presets:
            line = cast(str, o.input_line)  # set: parse() made each override from its line
            renamed[line] = "model/preprocess=" + override_parts(line).written
    out = [renamed.get(a, a) for a in args]
    keys = {o.key_or_group for o in overrides}
    if "model.path" in keys and "model" not in keys:
        out.append("model=file")  # at the end: options such as -m must stay before the overrides
    return out


def check_group_options(overrides: list[Override]) -> str | None:
    """A one-line error for ``group=option`` naming no config file (Hydra's own is several lines)."""
    dirs = conf_dirs(overrides)
    for o in overrides:
        group = o.key_or_group
        if group.startswith("hydra") or o.is_delete() or not any((d / group).is_dir() for d in dirs):
            continue
        valid = sorted({p.stem for d in dirs for p in (d / group).glob("*.yaml")})
        for option in options(o) or []:
            if option not in valid:
                close = difflib.get_close_matches(option, valid, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                return f"unknown {group} {option!r}; valid: {', '.join(valid)}.{hint}"
    return None
