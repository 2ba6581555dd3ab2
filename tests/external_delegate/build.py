"""Compile ``test_delegate.c`` into a TFLite external-delegate shared library for the tests.

The library links against nothing but libc (it talks to the runtime only through the function
pointers TFLite hands it), so the system C compiler is all it needs::

    python tests/external_delegate/build.py /tmp/out   # -> /tmp/out/libevalharness_test_delegate.so
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().with_name("test_delegate.c")
LIBRARY_NAME = "libevalharness_test_delegate.so"


class NoCompilerError(RuntimeError):
    """No C compiler on PATH (``$CC``, ``cc``, ``gcc`` or ``clang``)."""


def find_compiler() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and (path := shutil.which(name)):
            return path
    return None


def build_delegate(out_dir: str | os.PathLike) -> Path:
    """Build the library into ``out_dir`` and return its path; NoCompilerError without a compiler."""
    compiler = find_compiler()
    if compiler is None:
        raise NoCompilerError("no C compiler found ($CC, cc, gcc, clang) to build the test delegate")
    out = Path(out_dir) / LIBRARY_NAME
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [compiler, "-std=c11", "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-o", str(out), str(SOURCE)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"building the test delegate failed: {' '.join(cmd)}\n{proc.stderr}")
    return out


if __name__ == "__main__":
    print(build_delegate(sys.argv[1] if len(sys.argv) > 1 else "."))
