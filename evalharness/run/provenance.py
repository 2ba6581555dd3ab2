"""Where a number came from: host, model and evalharness itself, for metrics.json."""

from __future__ import annotations

import os
import platform
import socket
import sys

from evalharness import __version__
from evalharness.core.checksum import sha256_file

# CPU features that change which kernels run (and so latency, sometimes results).
_CPU_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512vnni",
    "avx_vnni",
    "amx_int8",
    "asimd",
    "asimddp",
    "i8mm",
    "sve",
    "fphp",
)


def _cpuinfo() -> tuple[str, list[str]]:
    model, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "Model", "Hardware") and model in ("", platform.machine()):
                    model = value.strip()
                elif key in ("flags", "Features"):
                    flags.update(value.split())
    except OSError:
        pass
    return model, sorted(f for f in _CPU_FLAGS if f in flags)


def host_info() -> dict:
    cpu, features = _cpuinfo()
    return {
        "hostname": socket.gethostname(),
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "cpu": cpu,
        "cpu_features": features,
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
    }


def model_info(path: str, inputs, outputs) -> dict:
    return {
        "path": os.path.abspath(path),
        "sha256": sha256_file(path),
        "bytes": os.path.getsize(path),
        "inputs": [t.as_dict() for t in inputs],
        "outputs": [t.as_dict() for t in outputs],
    }


def tool_info() -> dict:
    return {"name": "evalharness", "version": __version__}
