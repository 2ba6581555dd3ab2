"""Compile caches: which ones a backend uses, where they live, and whether they were warm.

An accelerator's start-up depends on what an earlier run left on disk (Mesa's shader cache for the
Vulkan driver under the GPU accelerator; XNNPACK's packed-weight cache for the CPU): the same
command can differ 300x in ``first_inference``. Each backend creates a :class:`CacheProbe` per cache
BEFORE it loads the model; the probe sizes the cache then, and again when the run is recorded:

- ``disabled``: the driver was told not to cache (``MESA_SHADER_CACHE_DISABLE``);
- ``off``: the backend used no such cache (the Interpreter API exposes no XNNPACK weight cache);
- ``cold``: nothing was in the cache when the load started;
- ``warm``: entries were there and the cache did not grow during the run (all found);
- ``partial``: entries were there but the run added some (a shared cache that held other models');
- ``rebuilt``: a cache file was there but the runtime wrote it again (XNNPACK rewrites a damaged or
  stale ``xnnpack_weights.bin``): what the start-up found was not used, so it is not ``warm``. Told by
  the file's (size, mtime_ns, inode, ctime_ns) before and after (:func:`core.derived.file_state`): a
  warm load leaves all four alone (verified with XNNPACK), a rewrite moves ctime_ns even at the same
  size. Said once on stderr, like every rebuilt entry of derived state (:mod:`core.derived`).

``delegate.compile_cache_dir`` makes the caches per model (``<cache_dir>/<model sha256[:16]>-<delegate>/``),
so cold and warm are exact for that model. Pure Python: no runtime import.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import TypedDict

from evalharness.core.checksum import sha256_file
from evalharness.core.derived import file_state, say_rebuilt

_TRUE = ("1", "true", "yes", "y")  # Mesa's env_var_as_boolean


def _size(path: str) -> tuple[int, int]:
    """(entries, bytes) of a file or a directory tree; (0, 0) when absent."""
    if os.path.isfile(path):
        return 1, os.path.getsize(path)
    entries = total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.path.getsize(os.path.join(root, name))
                entries += 1
    return entries, total


class CacheRecord(TypedDict):
    """One ``provenance.delegate.cache`` entry: a compile cache, its cold/warm state and its sizes."""

    kind: str
    accelerator: str
    state: str  # disabled | off | cold | rebuilt | warm | partial
    path: str | None
    source: str
    entries_before: int
    bytes_before: int
    bytes_after: int


class CacheProbe:
    """One cache of one accelerator, sized when created (before the load) and when recorded."""

    def __init__(
        self, kind: str, accelerator: str, path: str | None, source: str, disabled: bool = False
    ) -> None:
        self.kind, self.accelerator, self.path, self.source, self.disabled = (
            kind, accelerator, path, source, disabled,
        )  # fmt: skip
        self.before, self._said = self._measure(), False
        self.before_state = self._file_state()

    def _file_state(self) -> tuple[int, int, int, int] | None:
        """A single-file cache's state (None for a directory cache, no cache, or no file yet)."""
        if self.path is None or self.disabled or not os.path.isfile(self.path):
            return None
        return file_state(self.path)

    def _measure(self) -> tuple[int, int]:
        if self.path is None or self.disabled:
            return 0, 0
        if self.kind == "mesa_shader_cache":  # Mesa writes mesa_shader_cache{,_db,_sf} under the base
            names = [n for n in _listdir(self.path) if n.startswith("mesa_shader_cache")]
            sizes = [_size(os.path.join(self.path, n)) for n in names]
            return sum(s[0] for s in sizes), sum(s[1] for s in sizes)
        return _size(self.path)

    def state(self, after: tuple[int, int]) -> str:
        if self.disabled:
            return "disabled"
        if self.path is None:
            return "off"
        if self.before[1] == 0:
            return "cold"
        if self.before_state is not None and self._file_state() != self.before_state:
            return "rebuilt"
        return "warm" if after[1] <= self.before[1] else "partial"

    def record(self) -> CacheRecord:
        """The ``provenance.delegate.cache`` entry (sizes now: the run has finished)."""
        after = self._measure()
        state = self.state(after)
        if state == "rebuilt" and not self._said:
            self._said = True
            say_rebuilt(
                f"compile cache {self.path}", "the runtime wrote it again during the load (damaged or stale)"
            )
        return {
            "kind": self.kind,
            "accelerator": self.accelerator,
            "state": state,
            "path": self.path,
            "source": self.source,
            "entries_before": self.before[0],
            "bytes_before": self.before[1],
            "bytes_after": after[1],
        }


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def model_key(model_path: str, delegate: str) -> str:
    """The per-model folder name under ``delegate.compile_cache_dir``: model sha256[:16] and the delegate."""
    return f"{sha256_file(model_path)[:16]}-{delegate}"


def model_cache_dir(cache_dir: str, model_path: str, delegate: str) -> str:
    path = os.path.join(os.path.abspath(cache_dir), model_key(model_path, delegate))
    os.makedirs(path, exist_ok=True)
    return path


def shader_cache_base(environ: Mapping[str, str] = os.environ) -> tuple[str, str]:
    """(folder Mesa keeps its shader caches in, which setting chose it), as Mesa resolves it."""
    if environ.get("MESA_SHADER_CACHE_DIR"):
        return environ["MESA_SHADER_CACHE_DIR"], "MESA_SHADER_CACHE_DIR"
    if environ.get("XDG_CACHE_HOME"):
        return environ["XDG_CACHE_HOME"], "XDG_CACHE_HOME"
    return os.path.join(os.path.expanduser("~"), ".cache"), "HOME/.cache"


def shader_cache_disabled(environ: Mapping[str, str] = os.environ) -> bool:
    """The Vulkan driver was told not to cache shaders (``MESA_SHADER_CACHE_DISABLE``)."""
    return environ.get("MESA_SHADER_CACHE_DISABLE", "").lower() in _TRUE


@contextlib.contextmanager
def shader_cache(cache_dir: str | None, model_path: str, delegate: str) -> Iterator[CacheProbe]:
    """The Vulkan driver's shader cache for a GPU load: with ``cache_dir``, a per-model folder set in
    ``MESA_SHADER_CACHE_DIR`` for the duration of the load (Mesa reads it when the accelerator
    creates its device, verified with lavapipe), restored afterwards; without, the user's own."""
    disabled = shader_cache_disabled()
    if not cache_dir:
        base, source = shader_cache_base()
        yield CacheProbe("mesa_shader_cache", "gpu", base, source, disabled)
        return
    base = os.path.join(model_cache_dir(cache_dir, model_path, delegate), "gpu")
    saved = os.environ.get("MESA_SHADER_CACHE_DIR")
    os.environ["MESA_SHADER_CACHE_DIR"] = base
    try:
        yield CacheProbe("mesa_shader_cache", "gpu", base, "delegate.compile_cache_dir", disabled)
    finally:
        if saved is None:
            os.environ.pop("MESA_SHADER_CACHE_DIR", None)
        else:
            os.environ["MESA_SHADER_CACHE_DIR"] = saved


def xnnpack_weight_cache(cache_dir: str | None, model_path: str, delegate: str) -> CacheProbe:
    """XNNPACK's packed-weight cache (a file, though LiteRT's docstring says directory: verified)."""
    if not cache_dir:
        return CacheProbe("xnnpack_weight_cache", "cpu", None, "not used")
    path = os.path.join(model_cache_dir(cache_dir, model_path, delegate), "xnnpack_weights.bin")
    return CacheProbe("xnnpack_weight_cache", "cpu", path, "delegate.compile_cache_dir")
