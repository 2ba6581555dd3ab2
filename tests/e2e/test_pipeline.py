"""Pipelined input preparation never changes a result: same tensors, same order, same skips."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import VAL50, run_inprocess

from evalharness.core.errors import DataError
from evalharness.loop.preparation import prepared


class _Task:
    """Prepare = a deterministic tensor per sample, slow and out of order, some failing."""

    def prepare(self, sample: int):
        import time

        time.sleep(0.002 * ((7 * sample) % 5))  # later samples often finish first
        if sample % 11 == 5:
            raise DataError(f"bad sample {sample}")
        return [np.full((2, 2), sample)]


@pytest.mark.parametrize(("workers", "prefetch"), [(0, 1), (1, 1), (2, 4), (4, 16)])
def test_prepared_keeps_order_and_errors(workers, prefetch):
    out = list(prepared(_Task(), range(40), workers, prefetch))
    assert [s for s, _ in out] == list(range(40))
    for s, tensors in out:
        if s % 11 == 5:
            assert isinstance(tensors, DataError) and str(tensors) == f"bad sample {s}"
        else:
            assert tensors[0][0, 0] == s


def test_pipelined_run_gives_identical_predictions(tmp_path):
    def preds(workers: int) -> list[dict]:
        run = tmp_path / f"w{workers}"
        run_inprocess(
            [*VAL50, "model=mobilenet_v2_1.0_224_quant", f"loop.workers={workers}", "task.num_images=20"], run
        )
        return [
            {k: v for k, v in json.loads(line).items() if k != "latency_ms"}
            for line in (run / "predictions.jsonl").read_text().splitlines()
        ]

    assert preds(0) == preds(2)
