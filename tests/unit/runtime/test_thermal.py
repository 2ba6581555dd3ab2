"""Thermal snapshots: this host's /sys/class/thermal files and a phone's adb listing of them."""

from __future__ import annotations

import subprocess

from evalharness.runtime.thermal import from_listing, listing_command, read_thermal
from evalharness.stats.validity import throttled


def _fake_root(tmp_path):
    zone, dev = tmp_path / "thermal_zone0", tmp_path / "cooling_device0"
    zone.mkdir(), dev.mkdir()
    (zone / "type").write_text("x86_pkg_temp\n"), (zone / "temp").write_text("51000\n")
    for name, text in (("type", "Processor"), ("cur_state", "2"), ("max_state", "3")):
        (dev / name).write_text(text + "\n")
    return tmp_path


def test_throttling_is_read_from_cooling_devices(tmp_path):
    snap = read_thermal(_fake_root(tmp_path))
    assert snap["exposed"] and snap["zones_c"] == {"x86_pkg_temp (thermal_zone0)": 51.0}
    assert snap["cooling"] == {"Processor (cooling_device0)": {"state": 2, "max": 3}}
    assert throttled(snap, snap) == ["Processor (cooling_device0)"]
    assert read_thermal(tmp_path / "absent")["exposed"] is False


def test_the_shell_listing_gives_the_same_snapshot(tmp_path):
    """What a phone answers to ``adb shell`` (run here by sh on a fake root, with adb's \\r\\n)."""
    root = str(_fake_root(tmp_path))
    done = subprocess.run(["sh", "-c", listing_command(root)], capture_output=True, text=True, check=True)
    text = done.stdout
    snap = from_listing(text.replace("\n", "\r\n"), "adb")
    local = read_thermal(root)
    assert (snap["zones_c"], snap["cooling"], snap["source"]) == (local["zones_c"], local["cooling"], "adb")
    assert from_listing("", "adb")["exposed"] is False
