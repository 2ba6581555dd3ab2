"""The GPU accelerator's adapter line (runtime/compiled.py parse_gpu_log): a software renderer is
recorded as one, and a hardware adapter is recorded as hardware, never as software (the e2e GPU
tests run on whatever adapter the host has, lavapipe in CI, so they can check only one side); and
the runtime folder the GPU backend gives the Vulkan loader where the environment has none."""

from __future__ import annotations

import pytest

from evalharness.runtime.compiled import parse_gpu_log

SOFTWARE = [
    "llvmpipe (LLVM 15.0.6), arch=software, vendor=mesa",  # Mesa lavapipe: CI's renderer
    "SwiftShader Device (Subzero) (0x0000C0DE), CPU / Software",  # the adapter type as Dawn names it
]
HARDWARE = [
    "NVIDIA H100 80GB HBM3, arch=hopper, vendor=nvidia",
    "Intel(R) UHD Graphics 620 (KBL GT2), arch=gen-9, vendor=intel",
    "AMD Radeon RX 7900 XTX (RADV NAVI31), Discrete GPU",
    "Mali-G710, Integrated GPU",
]


@pytest.mark.parametrize(
    ("adapter", "software"), [(a, True) for a in SOFTWARE] + [(a, False) for a in HARDWARE]
)
def test_the_adapter_is_recorded_with_whether_it_renders_in_software(adapter, software):
    info = parse_gpu_log([f"I0000 environment.cc:532] Selected adapter: {adapter}"])
    assert info["adapter"] == adapter
    assert info["software_renderer"] is software


def test_no_adapter_line_leaves_both_unknown():
    split = "75 operations will run on the GPU, and the remaining 3 operations will run on the CPU."
    info = parse_gpu_log([split])
    assert info["adapter"] is None and info["software_renderer"] is None


def test_the_vulkan_runtime_folder_is_made_once_and_only_where_none_is_set(monkeypatch, tmp_path):
    """A GPU load gives the loader an XDG_RUNTIME_DIR only where the environment has none: one
    folder a process, removed at exit; where one is set, no folder is made at all."""
    import atexit
    import shutil
    import tempfile

    from evalharness.runtime import compiled

    made, registered = [], []
    monkeypatch.setattr(tempfile, "mkdtemp", lambda **kw: made.append(str(tmp_path / "xdg")) or made[-1])
    monkeypatch.setattr(atexit, "register", lambda *args, **kw: registered.append(args))
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/0")
    compiled._ensure_runtime_dir.cache_clear()
    compiled._ensure_runtime_dir()
    assert made == [] and registered == []
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    compiled._ensure_runtime_dir.cache_clear()
    for _ in range(3):
        compiled._ensure_runtime_dir()
    assert made == [str(tmp_path / "xdg")] and compiled.os.environ["XDG_RUNTIME_DIR"] == made[0]
    assert registered == [(shutil.rmtree, made[0])]
    compiled._ensure_runtime_dir.cache_clear()
