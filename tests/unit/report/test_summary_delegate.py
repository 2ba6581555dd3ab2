"""The summary's Delegate line: what a delegate took, and a runtime with nothing to delegate to
(ONNX Runtime) said as such instead of "?/N ops delegated" with every op "left on CPU"."""

from __future__ import annotations

from evalharness.report.summary import _delegate
from evalharness.rundir.metrics_file import Document, parse_document


def _doc(coverage: dict) -> Document:
    return parse_document({"provenance": {"delegate": {"name": "cpu", "coverage": coverage}}})


def test_a_delegate_says_what_it_took_and_what_it_left():
    line = _delegate(
        _doc({"ops_total": 66, "ops_delegated": 64, "partitions": 1, "ops_on_cpu_by_type": {"MEAN": 2}})
    )
    assert line == "  Delegate: cpu, 64/66 ops delegated in 1 partition(s) (left on CPU: MEAN 2)"


def test_a_runtime_without_delegation_says_so():
    source = "ONNX Runtime CPUExecutionProvider: every op on the CPU (no delegation)"
    coverage = {
        "ops_total": 3,
        "ops_delegated": None,
        "ops_on_cpu_by_type": {"Conv": 2, "Gemm": 1},
        "source": source,
    }
    line = _delegate(_doc(coverage))
    assert line == f"  Delegate: cpu, 3 ops; {source}" and "left on CPU" not in line and "?" not in line


def test_the_gpus_precision_is_in_the_delegate_line():
    def line(allowed: bool) -> str | None:
        delegate = {
            "name": "gpu",
            "flags": {"gpu_precision_loss_allowed": allowed},
            "coverage": {"ops_total": 3},
        }
        return _delegate(parse_document({"provenance": {"delegate": delegate}}))

    assert line(True) == "  Delegate: gpu, fp16 allowed, ?/3 ops delegated"
    assert line(False) == "  Delegate: gpu, fp32 (fp16 not allowed), ?/3 ops delegated"
