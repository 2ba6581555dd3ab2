"""The one registry style and the one discovery path for every plug-in kind: tasks, backends,
delegates, runners, decoders, ground-truth formats, dataset readers, COCO evaluators, trackers.

A name maps to an object registered by decorator, or lazily to ``"module:object"`` so that naming a
plug-in costs no import until it is used (a report lists tasks without loading a runtime). A kind
whose built-ins are folders (tasks: ``tasks/<task>/definition.py``) names its package, and the
folders are listed here, so a new built-in is a new folder and nothing else names it.

Outside plug-ins of every kind arrive by one path, :func:`discover_plugins`: the modules named in
``EVALHARNESS_PLUGINS`` (comma-separated; for a checkout that is not installed) and those of the
``evalharness.plugins`` entry-point group of installed packages are imported once, before any
registry answers, and each registers whatever it provides with the kind's ``register`` decorator.
Every object is checked against the kind's base class when it is first resolved, and a name that
is not there is one :class:`ConfigError` listing the valid names and the closest one, as
lm-eval-harness does. A plug-in whose module fails to import is an error naming the plug-in and its
module, never an "internal error".
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import os
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import Generic, TypeVar, cast

from evalharness.core.errors import ConfigError

T = TypeVar("T")

PLUGINS_ENV = "EVALHARNESS_PLUGINS"
ENTRY_POINTS = "evalharness.plugins"
_discovered = False


def import_plugin(module: str, what: str) -> ModuleType:
    """Import a plug-in's module; whatever its import raises (a missing dependency, a bug at its top
    level) is one error naming ``what`` and the module, not an internal error of evalharness."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(f"{what}: module {module!r} cannot be imported: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - any failure of a plug-in's own code is the plug-in's
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
        message = f"{what}: module {module!r} failed on import ({reason}); fix or remove it"
        raise ConfigError(message) from None


def load_object(reference: str, what: str) -> object:
    """``"package.module:attr"`` imported; ``what`` names the plug-in in the error if it fails."""
    module, _, attr = reference.partition(":")
    found = import_plugin(module, what)
    try:
        return getattr(found, attr) if attr else found
    except AttributeError:
        raise ConfigError(f"{what}: module {module!r} has no {attr!r}") from None


def plugin_modules() -> list[str]:
    """Module names of the plug-ins outside evalharness, in the order they are imported."""
    named = [m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(",") if m.strip()]
    installed = [ep.value for ep in importlib.metadata.entry_points(group=ENTRY_POINTS)]
    return list(dict.fromkeys([*named, *installed]))


def discover_plugins() -> None:
    """Import every outside plug-in module once (the one discovery path); each registers itself."""
    global _discovered
    if _discovered:
        return
    _discovered = True  # set first: a plug-in that asks a registry while importing does not recurse
    for module in plugin_modules():
        import_plugin(module, f"plug-in (from {PLUGINS_ENV} or the {ENTRY_POINTS} entry points)")


class Registry(Generic[T]):
    """``kind`` names the plug-in kind in messages (``unknown delegate 'gpux'``); ``base``: the class
    every entry must be (an instance of, or a subclass of); ``lazy``: the built-in names, each ->
    ``"module:object"`` (or the module that registers it), see :meth:`register_lazy`; ``package``
    and ``module``: built-ins as folders, each subpackage of ``package`` registering itself from its
    ``module`` (tasks: ``evalharness.tasks`` + ``definition``), imported when a name is first asked.
    ``plugins=False``: a kind closed to outside plug-ins (its names are a fixed vocabulary)."""

    def __init__(
        self,
        kind: str,
        base: type | None = None,
        lazy: Mapping[str, str] | None = None,
        package: str | None = None,
        module: str = "definition",
        plugins: bool = True,
    ) -> None:
        self.kind = kind
        self.base = base
        self.plugins = plugins
        self._items: dict[str, T] = {}
        self._lazy: dict[str, str] = {}
        self._folders = (package, module) if package else None
        for name, reference in (lazy or {}).items():
            self.register_lazy(name, reference)

    def register(self, name: str) -> Callable[[T], T]:
        def add(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            self._lazy.pop(name, None)
            self._items[name] = self._checked(name, obj)
            return obj

        return add

    def register_lazy(self, name: str, reference: str) -> None:
        """``name`` served by ``"module:object"``, imported the first time ``name`` is asked for (a
        module that registers ``name`` itself when imported may give ``"module"`` alone)."""
        if name in self._items or name in self._lazy:
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self._lazy[name] = reference

    def get(self, name: str) -> T:
        self._discover()
        if name not in self._items and name in self._lazy:
            self._resolve(name)
        try:
            return self._items[name]
        except (KeyError, TypeError):
            valid = ", ".join(self.names())
            close = difflib.get_close_matches(str(name), self.names(), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"unknown {self.kind} {name!r}; valid: {valid}.{hint}") from None

    def names(self) -> list[str]:
        self._discover()
        return sorted({*self._items, *self._lazy})

    def __contains__(self, name: object) -> bool:
        return name in self.names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def _resolve(self, name: str) -> None:
        reference = self._lazy[name]
        obj = load_object(reference, f"{self.kind} {name!r}")
        if name not in self._items:  # "module:object" (a module that registered itself is done)
            if ":" not in reference:
                raise ConfigError(f"{self.kind} {name!r}: module {reference!r} did not register it")
            self._lazy.pop(name, None)
            self._items[name] = self._checked(name, cast(T, obj))

    def _checked(self, name: str, obj: T) -> T:
        base = self.base
        if base is not None and not (
            isinstance(obj, base) or (isinstance(obj, type) and issubclass(obj, base))
        ):
            raise ConfigError(f"{self.kind} {name!r} is {obj!r}, not a {base.__name__}")
        return obj

    def _discover(self) -> None:
        """Built-in folders listed and outside plug-ins imported, once, before the first answer."""
        if self._folders:
            package, module = self._folders
            self._folders = None
            found = importlib.import_module(package)
            for info in pkgutil.iter_modules(found.__path__):
                if info.ispkg:
                    import_plugin(f"{package}.{info.name}.{module}", f"{self.kind} {info.name!r}")
        if self.plugins:
            discover_plugins()
