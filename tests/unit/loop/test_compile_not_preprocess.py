"""A GPU compiles its program at the first invoke; preparing threads running meanwhile wait for it.
That wait is the compile's (in first_inference_ms), never booked to preprocessing (issue 43: a GPU
run read "9515 ms preprocess" per image against the CPU's 19 ms)."""

from __future__ import annotations

import threading
import time

from test_scoring_blocks import _Model, _Task

from evalharness.loop.engine import LoopSettings, run_loop

COMPILE_S = 0.4


class _Compiling(_Model):
    """The first invoke takes COMPILE_S; preparing threads cannot finish until it is over (as when the
    compile holds the GIL or every core)."""

    compiled = threading.Event()

    def invoke(self):
        super().invoke()
        if self.invokes == 1:
            time.sleep(COMPILE_S)
            self.compiled.set()


class _Waiting(_Task):
    def prepare(self, sample):
        if sample:  # every sample but the first is prepared while the first invoke compiles
            _Compiling.compiled.wait(5)
        return super().prepare(sample)


def test_preparation_during_the_first_invoke_is_not_preprocessing():
    _Compiling.compiled.clear()
    settings = LoopSettings(progress=False, shape="pipelined", workers=2, prefetch=4, warmup_runs=0)
    _, result = run_loop(_Waiting(6), lambda: _Compiling(lambda: None), lambda r: None, settings)
    assert result.status == "complete" and result.first_inference_ms >= COMPILE_S * 1e3
    assert result.stage_ms()["preprocess"] < COMPILE_S * 1e3 / 4  # not the compile's 400 ms
