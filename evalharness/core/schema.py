"""One way to check settings: a plug-in declares a dataclass beside its code, :func:`check` applies it.

Every plug-in (task, delegate, output decoder, runner) and every core config group is checked the
same way, so the same mistake gives the same one ``ConfigError`` line wherever it is made: an
unknown key, a wrong type or a missing mandatory value (``???``) names ``<where>.<key>``. What comes
back is frozen: :func:`build` gives an instance of the (frozen) schema dataclass, read by attribute
(``settings.model.path``), so a misspelt read is a type error rather than a silent ``None``;
:func:`check` gives a :class:`FrozenDict` (tuples for lists) for plug-ins that still read by key. A
validated setting is never edited in place; a derived value (thread budget, quantized variant) is a
new value in the plan (``dataclasses.replace``). :func:`thaw` turns either back into plain JSON values.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import re
import typing
from collections.abc import Callable, Mapping
from typing import Any, NoReturn, TypeVar, cast

from omegaconf import DictConfig, OmegaConf, ValueNode
from omegaconf.errors import OmegaConfBaseException

from evalharness.core.errors import ConfigError

T = TypeVar("T")


class FrozenDict(dict[Any, Any]):
    """A dict that refuses to change after construction (JSON-serialisable like any dict)."""

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("a validated setting is immutable; derive a new value instead")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _refuse

    def __reduce__(self) -> tuple[type[FrozenDict], tuple[dict[Any, Any]]]:
        return (FrozenDict, (dict(self),))

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=lambda kv: str(kv[0]))))


def freeze(value: Any) -> Any:
    """Deep-frozen copy: dicts -> FrozenDict, lists -> tuples."""
    if isinstance(value, Mapping):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Plain, mutable JSON-like copy of a frozen value (a settings dataclass, dicts and lists); a
    dataclass gives its fields in declaration order, as the YAML it was checked from did."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: thaw(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(v) for v in value]
    return value


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def field_names(schema: type) -> list[str]:
    return [f.name for f in dataclasses.fields(schema)]


def check_keys(schema: type, node: Mapping[str, Any], where: str, what: str = "key") -> None:
    """Unknown keys of ``node`` -> one ConfigError listing the valid ones (and the closest match)."""
    valid = field_names(schema)
    unknown = sorted(set(node) - set(valid))
    if unknown:
        close = difflib.get_close_matches(str(unknown[0]), valid, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(
            f"{where}: unknown {what}(s) {', '.join(map(str, unknown))}; valid: {', '.join(valid)}.{hint}"
        )


def check(schema: type, node: Mapping[str, Any] | None, where: str, key: str | None = None) -> FrozenDict:
    """``node`` merged onto the dataclass ``schema``, type-checked and checked against each field's
    declared bounds (:func:`bounds`); frozen plain values.

    ``where`` names the place for the error line (``config group 'task'``, ``decoder yolo``);
    ``key`` the config key ``node`` sits at (``quant``, ``model.decoder``; for ``config group 'X'``
    it is ``X``), so a wrong-typed value names its whole key and what to give instead.
    """
    node = dict(node or {})
    key = _key_of(where) if key is None else key
    check_keys(schema, node, where)  # an unknown key: the valid ones and the closest (a config file too)
    try:
        base = _writable(OmegaConf.structured(schema))
        merged = OmegaConf.merge(base, node)
        # a structured config (a dataclass schema) converts to a dict
        container = cast(dict[str, Any], OmegaConf.to_container(merged, resolve=True, throw_on_missing=True))
    except OmegaConfBaseException as exc:
        raise type_error(schema, exc, where, key) from None
    check_bounds(schema, container, where)
    frozen: FrozenDict = freeze(container)
    return frozen


def _key_of(where: str) -> str:
    found = re.match(r"config group '([\w.]+)'", where)
    return found.group(1) if found else ""


def type_error(schema: type, exc: OmegaConfBaseException, where: str, key: str) -> ConfigError:
    """OmegaConf's refusal of a value as one line naming the whole key (``quant.weights.only``),
    the value and the type to give, e.g. ``quant.weights.only=5: give a list of integers, e.g.
    quant.weights.only=[5]``; anything else OmegaConf refuses (a missing ``???``) as it said it."""
    full = str(getattr(exc, "full_key", "") or "")
    path = re.sub(r"\[\d+\]$", "", full)
    kind = _declared(schema, path.split(".")) if path else None
    if kind is None or "Missing mandatory value" in str(exc):
        return ConfigError(f"{where}: {one_line(exc)}")
    if path != full:  # one element of a list
        kind = (typing.get_args(kind) or (Any,))[0]
    dotted = f"{key}.{full}" if key else full
    value = getattr(exc, "value", None)
    value = value._value() if isinstance(value, ValueNode) else value
    shown = value if isinstance(value, str | int | float | bool) else thaw(value)
    listed = typing.get_origin(kind) in (tuple, list) and isinstance(value, str | int | float | bool)
    example = f", e.g. {dotted}=[{shown}]" if listed else ""
    return ConfigError(f"{where}: {dotted}={shown!r}: give {_described(kind)}{example}")


def _declared(schema: type, parts: list[str]) -> Any:
    """The declared type of the dotted field ``parts`` of ``schema`` (None: not a field of it)."""
    hints = typing.get_type_hints(schema) if dataclasses.is_dataclass(schema) else {}
    if parts[0] not in hints:
        return None
    kind = _optional_of(hints[parts[0]])
    return kind if len(parts) == 1 else _declared(kind, parts[1:])


_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def _described(kind: Any) -> str:
    if kind in _NAMES:
        return _NAMES[kind]
    args = typing.get_args(kind)
    if typing.get_origin(kind) in (tuple, list):
        plural = {bool: "booleans", int: "integers", float: "numbers", str: "strings"}
        of = plural.get(args[0] if args else Any)
        return f"a list of {of}" if of else "a list"
    if typing.get_origin(kind) in (dict, Mapping) or dataclasses.is_dataclass(kind):
        return "a mapping of keys to values"
    return f"a {getattr(kind, '__name__', kind)}"


def build(schema: type[T], node: Mapping[str, Any] | None, where: str, key: str | None = None) -> T:
    """``node`` checked against ``schema`` (:func:`check`), as a frozen instance of it: nested
    dataclass fields are instances too, lists are tuples, free-form (``Any``) fields FrozenDicts."""
    return _instance(schema, check(schema, node, where, key))


def _instance(schema: type[T], values: Mapping[str, Any]) -> T:
    hints = typing.get_type_hints(schema)
    made = {}
    for f in dataclasses.fields(schema):  # type: ignore[arg-type]
        value = values.get(f.name)
        kind = _optional_of(hints.get(f.name))
        if isinstance(kind, type) and dataclasses.is_dataclass(kind) and isinstance(value, Mapping):
            value = _instance(kind, value)
        made[f.name] = value
    return schema(**made)


def _optional_of(kind: Any) -> Any:
    """``X`` of a field typed ``X | None`` (a group that may be null, e.g. ``quant.calibration``), else
    ``kind`` unchanged."""
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    return args[0] if len(args) == 1 and len(typing.get_args(kind)) == 2 else kind


def bounds(
    low: float | None = None,
    high: float | None = None,
    choices: tuple[Any, ...] | Callable[[], tuple[Any, ...]] = (),
    **kind: Any,
) -> Mapping[str, Any]:
    """Field metadata a schema declares: ``field(default=4, metadata=bounds(1))``: the value must be
    >= ``low``, <= ``high``, one of ``choices`` (or of what ``choices()`` gives when checked: the
    names of a registry that plug-ins add to). ``kind``: what the value is (``path="file"`` or
    ``"dir"``, ``text=True``) so checks and the generated fault tests know how to attack it."""
    meta: dict[str, Any] = {k: v for k, v in (("low", low), ("high", high)) if v is not None}
    if choices:
        meta["choices"] = choices if callable(choices) else tuple(choices)
    return {**meta, **kind}


def _choice(value: Any) -> Any:
    """YAML reads ``true`` as a boolean that a ``str`` field then holds as 'True': compare lower-case."""
    return value.lower() if isinstance(value, str) else value


def check_bounds(schema: type, values: Mapping[str, Any], where: str) -> None:
    """Each field's declared bounds (see :func:`bounds`), nested dataclasses included."""
    hints = typing.get_type_hints(schema)
    for f in dataclasses.fields(schema):
        value, kind = values.get(f.name), _optional_of(hints.get(f.name))
        if isinstance(kind, type) and dataclasses.is_dataclass(kind) and isinstance(value, Mapping):
            check_bounds(kind, value, f"{where} ({f.name})")
            continue
        meta = f.metadata
        if value is None or not meta:
            continue
        problem = None
        choices = meta.get("choices", ())
        choices = choices() if callable(choices) else choices
        if choices and _choice(value) not in choices:
            problem = f"use one of {', '.join(map(str, choices))}"
        elif "low" in meta and isinstance(value, int | float) and value < meta["low"]:
            problem = f"must be >= {meta['low']}"
        elif "high" in meta and isinstance(value, int | float) and value > meta["high"]:
            problem = f"must be <= {meta['high']}"
        if problem:
            raise ConfigError(f"{where}: {f.name}={value!r}: {problem}")


def _writable(node: Any) -> Any:
    """Clear the read-only flag a frozen dataclass (and each frozen nested one) sets: they may serve
    as schemas too (e.g. ``PreprocessSpec``, ``LoopSettings``)."""
    if isinstance(node, DictConfig):
        OmegaConf.set_readonly(node, False)
        for key in node:
            _writable(node._get_node(key))
    return node


def instantiate(schema: type, node: Mapping[str, Any] | None, where: str, key: str | None = None) -> Any:
    """The dataclass ``schema`` built from the checked ``node`` (for plug-ins that keep an object)."""
    checked = check(schema, node, where, key)
    return schema(**{k: thaw(v) for k, v in checked.items()})


def extended(core: type, own: type | None) -> type:
    """The dataclass of ``core``'s fields followed by ``own``'s: a config group whose fields a plug-in
    adds to (a task's own ``dataset`` or ``model`` fields). Same defaults, same bounds; frozen and a
    subclass of ``core``, so the group stays typed: every reader sees ``core``'s attributes, the
    task's own code reads its fields by attribute too (``settings.dataset.ground_truth``)."""
    if own is None:
        return core
    return _extended(core, own)


@functools.cache
def _extended(core: type, own: type) -> type:
    fields = []
    for schema in (core, own):
        hints = typing.get_type_hints(schema)
        for f in dataclasses.fields(schema):
            default = {"default": f.default} if f.default is not dataclasses.MISSING else {}
            if f.default_factory is not dataclasses.MISSING:
                default = {"default_factory": f.default_factory}
            fields.append((f.name, hints[f.name], dataclasses.field(metadata=f.metadata, **default)))
    name = f"{core.__name__}With{own.__name__}"

    def reduce(self: Any) -> tuple[Any, ...]:  # made here, not importable by name: pickled as its parts
        return (_made, (core, own, {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}))

    namespace = {"__reduce__": reduce}
    return dataclasses.make_dataclass(name, fields, bases=(core,), frozen=True, namespace=namespace)


def _made(core: type, own: type, values: dict[str, Any]) -> Any:
    """An instance of ``extended(core, own)`` again (unpickling)."""
    return _extended(core, own)(**values)


def build_extended(
    core: type, own: type | None, others: set[str], node: Mapping[str, Any], where: str
) -> Any:
    """``node`` built as ``core`` + ``own`` (:func:`extended`, an instance of ``core``). Keys that only
    other plug-ins declare (``others``: a model preset describes its model for every task) are left
    out unchecked (the resolved config still records them); a key nobody declares is the usual
    one-line error."""
    schema = extended(core, own)
    mine = set(field_names(schema))
    return build(schema, {k: v for k, v in node.items() if k in mine or k not in others}, where)
