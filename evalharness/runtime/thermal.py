"""The thermal state of the machine that runs the model, read where the platform exposes it.

Linux (and Android) expose ``/sys/class/thermal``: zones with a temperature, cooling devices with a
current and maximum state. The host reads the files; a phone answers one ``adb shell`` listing
(:func:`listing_command`, parsed by :func:`from_listing`). Both give the snapshot of
:func:`evalharness.stats.validity.snapshot`, which says ``exposed: False`` when there is nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalharness.stats.validity import snapshot

ROOT = "/sys/class/thermal"
_FILES = ("type", "temp", "cur_state", "max_state")


def read_thermal(root: str | Path = ROOT) -> dict[str, Any]:
    """This host's snapshot."""
    base, entries = Path(root), dict[str, str]()
    for folder in sorted([*base.glob("thermal_zone*"), *base.glob("cooling_device*")]):
        for name in _FILES:
            try:
                entries[f"{folder.name}/{name}"] = (folder / name).read_text().strip()
            except OSError:
                continue
    return snapshot(entries, str(root))


def listing_command(root: str = ROOT) -> str:
    """A POSIX shell command printing ``path<TAB>content`` for each readable file, paths relative
    to ``root``; nothing where the folder does not exist."""
    globs = " ".join(f"{d}*/{f}" for d in ("thermal_zone", "cooling_device") for f in _FILES)
    show = 'printf "%s\\t%s\\n" "$f" "$(cat "$f" 2>/dev/null)"'
    return f'cd {root} 2>/dev/null && for f in {globs}; do [ -r "$f" ] && {show}; done; true'


def from_listing(text: str, source: str) -> dict[str, Any]:
    """The snapshot from :func:`listing_command`'s output (``\\r\\n`` from older adb included)."""
    entries: dict[str, str] = {}
    for line in text.replace("\r", "").splitlines():
        path, sep, value = line.partition("\t")
        if sep and path.startswith(("thermal_zone", "cooling_device")):
            entries[path] = value.strip()
    return snapshot(entries, source)
