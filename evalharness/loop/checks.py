"""Named checks on the outputs of every scored sample, in every task: a wrong number never passes.

Per output tensor: samples with NaN or Inf values (and how many values), samples whose output is all
zeros, for an integer output the samples that reach its type's top value (recorded, said beside a
calibrated variant's calibration: a clipped range), and whether the output was the same for every
input although the inputs differed. The checks
that fail a run: any non-finite value, and every output the same whatever the input (a model or a
delegate that ignores its input; one constant output beside others, like a detector's count, is
normal). Checksums (CRC-32) of inputs and outputs are compared, never the
tensors themselves, so the cost per sample is a pass over bytes already in memory. Only this
session's samples are checked (a resumed run's earlier samples were checked when they ran).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, TypedDict

import numpy as np

from evalharness.core.checksum import crc32_array, crc32_bytes


class _OutputStats(TypedDict):
    """What is counted of one output tensor over the samples."""

    nonfinite_samples: int
    nonfinite_values: int
    all_zero_samples: int
    crc: int | None  # the first sample's checksum
    varies: bool  # a later sample's checksum differed
    at_max_samples: int | None  # None: a float output


class _OutputKeys(TypedDict):
    name: str
    nonfinite_samples: int
    nonfinite_values: int
    all_zero_samples: int
    same_for_every_input: bool


class OutputCheck(_OutputKeys, total=False):
    """One output's line of ``output_checks`` (``at_max_samples``: integer outputs only)."""

    at_max_samples: int


class OutputChecksRecord(TypedDict):
    """metrics.json ``output_checks``: what was counted of each output and the checks that failed."""

    samples: int
    distinct_inputs: bool
    outputs: list[OutputCheck]
    failed: list[str]


class OutputChecks:
    def __init__(self) -> None:
        self.samples = 0
        self._inputs: set[int] = set()  # at most two distinct input checksums are kept
        self._outputs: list[_OutputStats] = []

    def add_inputs(self, inputs: list[np.ndarray]) -> None:
        """One sample's inputs (only their checksums, and only until two distinct ones are seen)."""
        if len(self._inputs) < 2:
            self._inputs.add(crc32_bytes(b"".join(crc32_array(a).to_bytes(4, "little") for a in inputs)))

    def add_outputs(self, outputs: list[np.ndarray]) -> None:
        """One sample's outputs (the sample count goes with them)."""
        if not self._outputs:
            self._outputs = [
                {
                    "nonfinite_samples": 0,
                    "nonfinite_values": 0,
                    "all_zero_samples": 0,
                    "crc": None,
                    "varies": False,
                    # integer outputs: samples whose output reaches the type's top value (a clipped
                    # range: what a calibration on too few or unlike images makes)
                    "at_max_samples": 0 if np.asarray(out).dtype.kind in "iu" else None,
                }
                for out in outputs
            ]
        for stats, out in zip(self._outputs, outputs, strict=True):
            out = np.asarray(out)
            if out.dtype.kind == "f":
                bad = int(out.size - np.count_nonzero(np.isfinite(out)))
                stats["nonfinite_values"] += bad
                stats["nonfinite_samples"] += bad > 0
            stats["all_zero_samples"] += not np.count_nonzero(out)  # as not out.any(), ~3x faster
            if stats["at_max_samples"] is not None and out.size:
                stats["at_max_samples"] += bool(out.max() == _top_value(out.dtype))
            crc = crc32_array(out)
            if stats["crc"] is None:
                stats["crc"] = crc
            elif crc != stats["crc"]:
                stats["varies"] = True
        self.samples += 1

    def record(self, names: list[str]) -> OutputChecksRecord:
        """The ``output_checks`` block of metrics.json, with the list of checks that failed."""
        distinct_inputs = len(self._inputs) > 1
        outputs: list[OutputCheck] = []
        for name, stats in zip(names, self._outputs, strict=False):
            check: OutputCheck = {
                "name": name,
                "nonfinite_samples": stats["nonfinite_samples"],
                "nonfinite_values": stats["nonfinite_values"],
                "all_zero_samples": stats["all_zero_samples"],
                "same_for_every_input": distinct_inputs and not stats["varies"],
            }
            if stats["at_max_samples"] is not None:
                check["at_max_samples"] = stats["at_max_samples"]
            outputs.append(check)
        record = {"samples": self.samples, "distinct_inputs": distinct_inputs, "outputs": outputs}
        return {"samples": self.samples, "distinct_inputs": distinct_inputs, "outputs": outputs,
                "failed": failures(record)}  # fmt: skip


@functools.cache
def _top_value(dtype: np.dtype) -> int:
    """An integer dtype's top value (``np.iinfo`` builds an object each call: µs per sample)."""
    return int(np.iinfo(dtype).max)


def failures(record: Mapping[str, Any], nonfinite: bool = True, constant: bool = True) -> list[str]:
    """The failed checks of an ``output_checks`` record: non-finite outputs (when ``nonfinite``) and
    every output the same for every input (when ``constant``; one constant output among others, like
    a detector's count, is normal)."""
    n, outputs, failed = record["samples"], record["outputs"], []
    if nonfinite:
        failed += [
            f"{o['name']}: nonfinite ({o['nonfinite_samples']} of {n} samples)"
            for o in outputs
            if o["nonfinite_samples"]
        ]
    if constant and outputs and all(o["same_for_every_input"] for o in outputs):
        failed.append(f"{', '.join(o['name'] for o in outputs)}: same output for every input ({n} samples)")
    return failed
