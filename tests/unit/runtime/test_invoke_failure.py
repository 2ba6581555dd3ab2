"""A delegate's native invoke failure is one error naming its cause and what governs it
(evalharness/runtime/invoke_failure.py), read from the exception and the native lines printed
before it (evalharness/core/native_output.py: recent_lines)."""

from __future__ import annotations

import os

from evalharness.core.native_output import quiet_native_output, recent_lines
from evalharness.runtime.invoke_failure import NativeInvokeError, invoke_failure

NODE = RuntimeError("Node number 497 (LITERT_WEBGPU) failed to invoke.")
DEADLINE = "E0000 00:00:00.120 wait.cc:12] DEADLINE_EXCEEDED: Deadline exceeded after 2m waiting"


def test_a_deadline_names_the_node_the_native_text_and_that_no_setting_changes_it():
    error = invoke_failure(NODE, "gpu", "2.3.0", ["I0000 routine", DEADLINE])
    assert isinstance(error, NativeInvokeError)
    text = str(error)
    assert text.startswith("delegate=gpu: LiteRT's invoke deadline ran out at node 497 (LITERT_WEBGPU)")
    assert "(DEADLINE_EXCEEDED: Deadline exceeded after 2m waiting)" in text  # glog's prefix dropped
    assert "fixed in ai-edge-litert 2.3.0 (no setting changes it)" in text and "\n" not in text


def test_out_of_memory_and_a_lost_device_name_what_governs_them():
    memory = str(invoke_failure(RuntimeError("RESOURCE_EXHAUSTED: out of memory"), "gpu", native=[]))
    assert "the device ran out of memory" in memory and "loop.batch_size=1" in memory
    lost = str(invoke_failure(RuntimeError("failed"), "npu", native=["VK_ERROR_DEVICE_LOST"]))
    assert lost.startswith("delegate=npu: the device was lost (VK_ERROR_DEVICE_LOST)")


def test_an_unknown_native_failure_still_says_where_and_points_to_the_native_log():
    text = str(invoke_failure(NODE, "gpu", native=[]))
    assert "invoke failed in native code at node 497 (LITERT_WEBGPU)" in text and "native.log" in text


def test_recent_lines_read_the_capture_while_it_is_open():
    assert recent_lines() == []  # outside a capture: nothing to read
    sink: list[str] = []
    with quiet_native_output(sink):
        os.write(2, f"{DEADLINE}\n".encode())
        seen = recent_lines()
        error = invoke_failure(NODE, "gpu", "2.3.0")  # reads the capture itself
    assert seen == [DEADLINE] and sink == [DEADLINE]
    assert "DEADLINE_EXCEEDED" in str(error)
