"""A native invoke failure as one error line: the cause the runtime printed and what governs it.

A delegate's invoke can fail in native code: LiteRT's invoke deadline (``DEADLINE_EXCEEDED`` after
2 minutes on a slow GPU, then ``Node number 497 (LITERT_WEBGPU) failed to invoke``), the device
running out of memory, or the device lost (a driver reset, a GPU watchdog). The exception Python
sees often says only "failed to invoke"; the cause is in what the native library printed on fd 2,
which :func:`evalharness.core.native_output.recent_lines` reads back while the error is raised. The
run loop records the message as the run's ``stop_reason`` (the run stops part-way: exit 1, its
metrics.json says how far it got).

LiteRT's invoke deadline is not a setting: ai-edge-litert's Python API (2.3.0: ``GpuOptions``,
``Options``) exposes no timeout, so the message says it is fixed rather than naming a key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from evalharness.core.errors import EvalHarnessError
from evalharness.core.native_output import recent_lines

NODE = re.compile(r"Node number (\d+) \(([^)]*)\) failed to invoke")
LOG_PREFIX = re.compile(r"^[EWF]\d{4} [\d:. ]+\S+:\d+\] ")  # glog's "E0000 00:00:00.000 file.cc:12] "


class NativeInvokeError(EvalHarnessError):
    """A delegate's invoke failed in native code (deadline, out of memory, lost device, other);
    ``known``: one of :data:`CAUSES` (else the runtime's own error is the better message: raise it)."""

    def __init__(self, message: str, known: bool = False) -> None:
        super().__init__(message)
        self.known = known


@dataclass(frozen=True)
class Cause:
    """One kind of native invoke failure: how the runtime says it, and what a user can change."""

    name: str
    markers: tuple[str, ...]  # lower-case texts that tell this cause in the exception or native lines
    governs: str  # the setting that governs it, in words a user can act on


CAUSES = (
    Cause(
        "LiteRT's invoke deadline ran out",
        ("deadline_exceeded", "timeout was reached", "waitforcompletion timeout", "timeoutexpired"),
        "the deadline is LiteRT's own, fixed in ai-edge-litert {version} (no setting changes it): "
        "run this model on another delegate or a faster device",
    ),
    Cause(
        "the device ran out of memory",
        # not "failed to allocate": an NPU's "Custom allocation is too small for tensor" (a plug-in's
        # buffer of the wrong size) says it too, and is no shortage of memory
        ("out of memory", "out_of_memory", "resource_exhausted", "outofmemory"),
        "the device's memory governs it: use loop.batch_size=1, fp16 on a GPU "
        "(delegate.gpu_precision_loss_allowed=true) or a smaller model",
    ),
    Cause(
        "the device was lost",
        ("device lost", "device_lost", "devicelost", "device was lost", "vk_error_device_lost"),
        "a driver reset or the GPU's watchdog ends it: check the device with `evalharness inspect "
        "MODEL` and run again, or use another delegate",
    ),
)


def _quote(lines: list[str], markers: tuple[str, ...]) -> str | None:
    """The first line that carries a marker, shortened to what fits a one-line error."""
    for line in lines:
        if any(m in line.lower() for m in markers):
            text = LOG_PREFIX.sub("", " ".join(line.split()))
            return text if len(text) <= 160 else text[:157] + "…"
    return None


def invoke_failure(
    exc: BaseException, delegate: str, version: str = "unknown", native: Iterable[str] | None = None
) -> NativeInvokeError:
    """The error of a native invoke failure ``exc``, its cause read from the exception's text and the
    native lines printed before it (``native``; default: what the run's capture holds so far),
    naming the setting that governs it."""
    native = recent_lines() if native is None else native
    lines = [line for line in (*str(exc).splitlines(), *native) if line.strip()]
    node = next((m for line in lines if (m := NODE.search(line))), None)
    where = f" at node {node.group(1)} ({node.group(2)})" if node else ""
    for cause in CAUSES:
        quoted = _quote(lines, cause.markers)
        if quoted is not None:
            governs = cause.governs.format(version=version, delegate=delegate)
            return NativeInvokeError(
                f"delegate={delegate}: {cause.name}{where} ({quoted}); {governs}", known=True
            )
    text = " ".join(str(exc).split())[:200] or type(exc).__name__
    return NativeInvokeError(
        f"delegate={delegate}: invoke failed in native code{where}: {text}; the run's native.log has "
        "the runtime's own lines"
    )
