"""The GPU accelerator's adapter line (runtime/compiled.py parse_gpu_log): a software renderer is
recorded as one, and a hardware adapter is recorded as hardware, never as software (the e2e GPU
tests run on whatever adapter the host has, lavapipe in CI, so they can check only one side)."""

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
