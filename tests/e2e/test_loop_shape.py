"""The loop's shape is chosen from what the machine measures, never changes a result, and says why.

The calibration is tested on simulated machines (sleeps stand in for invoke and preparation, and a
core shared by both is simulated by an invoke that slows down while a preparation runs): a plumbing
test of the decision, not a speed claim. The real-model figures are in benchmarks/bench_throughput.py.
"""

from __future__ import annotations

import json
import os
import threading
import time

import pytest
from conftest import VAL50, run_inprocess
from repeated_dataset import make_dataset, overrides

from evalharness.loop import shape as shape_module
from evalharness.loop.preparation import prepared
from evalharness.loop.shape import (
    AUTO,
    BLOCK,
    CALIBRATION_SAMPLES,
    MIN_PREP_SHARE,
    MIN_SAMPLES,
    PHASED,
    PIPELINED,
    SEQUENTIAL,
    LoopShape,
    given_workers,
    quiet_arm,
    requested,
    shaped,
)


class _Machine:
    """prepare(sample) sleeps ``prep_s``; consume() sleeps ``invoke_s``, or ``contended_s`` when a
    preparation runs at the same time (its thread took a core the interpreter's threads needed)."""

    def __init__(self, prep_s: float, invoke_s: float, contended_s: float | None = None) -> None:
        self.prep_s, self.invoke_s = prep_s, invoke_s
        self.contended_s = contended_s if contended_s is not None else invoke_s
        self.busy = threading.Event()

    def prepare(self, sample: int):
        self.busy.set()
        time.sleep(self.prep_s)
        self.busy.clear()
        return [sample]

    def consume(self) -> None:
        time.sleep(self.invoke_s / 4)  # the preparation started in the gap before this invoke
        time.sleep(self.contended_s - self.invoke_s / 4 if self.busy.is_set() else self.invoke_s * 0.75)


@pytest.fixture
def cores(monkeypatch):
    """The simulated machines' core count (they sleep, so any machine runs them alike): 2 unless a
    test sets another."""
    count = [2]
    monkeypatch.setattr(shape_module, "available_cores", lambda: count[0])
    return count


def _run(machine: _Machine, n: int, choice: LoopShape) -> list[int]:
    seen = []
    items = shaped(lambda s, w, phased: prepared(machine, s, w, 4, phased), range(n), n, choice)
    for sample, tensors in items:
        assert tensors == [sample]
        machine.consume()
        seen.append(sample)
    return seen


def test_pipelined_chosen_where_preparation_hides_behind_invoke(cores):
    choice = requested(AUTO, 1)
    n = MIN_SAMPLES + 5
    # preparing 0.7 x the invoke: pipelined hides it all (3 ms a sample), a phase on 2 threads half
    # of it (4.05 ms); well under the preparation bound (1.15 x), even with a phase's overheads
    # doubled in its sequential estimate (a phase's wait x its threads)
    assert _run(_Machine(prep_s=0.0021, invoke_s=0.003), n, choice) == list(range(n))
    assert choice.shape == PIPELINED and choice.source.startswith("calibrated on"), choice.source
    cal = choice.calibration
    assert cal["samples"] == CALIBRATION_SAMPLES - 2
    assert cal["against"] == PHASED and len(cal["ms_per_sample"][PIPELINED]) == 3
    assert cal["median_ratio_pipelined"] < 0.85  # ~0.74 on this simulated machine
    assert choice.record()["workers"] == 1


def test_one_more_preparing_thread_where_preparation_is_the_bound(cores):
    """Preparing takes 3 x the invoke: one preparing thread sets the pace (6 ms a sample) and a phase
    on two cores beats it (5 ms), but two preparing threads beside the invokes halve it (3 ms), so
    after the ABBA blocks, paired blocks of pipelined with two threads win and run the rest."""
    choice = requested(AUTO, 1)
    n = MIN_SAMPLES + 5
    assert _run(_Machine(prep_s=0.006, invoke_s=0.002), n, choice) == list(range(n))
    assert choice.shape == PIPELINED and choice.workers == 2, choice.source
    assert "preparation bound, pipelined with 2 preparing threads against phased with 2" in choice.source
    cal = choice.calibration
    assert cal["median_ratio_more_workers"] < 0.8  # ~0.6 on this simulated machine
    assert len(cal["workers_ms_per_sample"]["pipelined 2"]) == 3
    assert choice.record()["workers"] == 2


@pytest.mark.parametrize(("count", "quiet", "workers"), [(2, PHASED, 2), (1, SEQUENTIAL, 0)])
def test_the_quiet_arm_chosen_where_the_preparing_thread_slows_invoke_down(cores, count, quiet, workers):
    """Phased, or sequential on one core: nothing prepares beside an invoke, which a preparing
    thread slows 4 x here."""
    cores[0] = count
    assert quiet_arm(count) == quiet
    choice = requested(AUTO, 1)
    n = MIN_SAMPLES
    machine = _Machine(prep_s=0.001, invoke_s=0.002, contended_s=0.008)
    assert _run(machine, n, choice) == list(range(n))
    assert choice.shape == quiet, choice.source
    assert choice.calibration["against"] == quiet and choice.calibration["median_ratio_pipelined"] > 1.0
    assert choice.record()["workers"] == workers


def test_sequential_chosen_where_there_is_little_to_hide(cores):
    """Cached inputs: preparing is a small share of the cycle, so the run goes on sequentially as soon
    as the first quiet block shows it, without measuring pipelining (it could hide no more)."""
    choice = requested(AUTO, 1)
    # a 40 ms invoke: a loaded machine's scheduling (a few ms) stays well under the 5 % share
    assert _run(_Machine(prep_s=0.0, invoke_s=0.04), MIN_SAMPLES, choice) == list(range(MIN_SAMPLES))
    assert choice.shape == SEQUENTIAL and "too little for preparing threads to hide" in choice.source
    cal = choice.calibration
    assert cal["preparation_share"] < MIN_PREP_SHARE
    assert cal["samples"] == BLOCK and cal["ms_per_sample"][PIPELINED] == []  # decided after one block
    assert cal["median_ratio_pipelined"] is None and choice.record()["workers"] == 0


def test_short_runs_and_explicit_settings_skip_calibration():
    choice = requested(AUTO, 2)
    assert _run(_Machine(0.0, 0.0), 10, choice) == list(range(10))
    assert choice.shape == PIPELINED and "too few to calibrate" in choice.source
    assert choice.calibration is None
    assert requested(SEQUENTIAL, 3).record() == {
        "shape": SEQUENTIAL, "workers": 0, "source": "loop.shape=sequential", "calibration": None,
        "lanes": 1, "lanes_calibration": None,
    }  # fmt: skip
    assert requested(AUTO, 0).shape == SEQUENTIAL


@pytest.mark.parametrize(
    ("shape", "workers", "overrides", "expected"),
    [
        (AUTO, 0, ["loop.workers=0"], SEQUENTIAL),
        (AUTO, 2, ["model=x", "loop.workers=2"], PIPELINED),
        (AUTO, 2, ["loop.workers=2", "loop.shape=auto"], AUTO),  # both given: the shape wins
        (AUTO, 1, [], AUTO),
        (SEQUENTIAL, 1, ["loop.workers=1"], SEQUENTIAL),
    ],
)
def test_loop_workers_on_the_command_line_chooses_the_shape(shape, workers, overrides, expected):
    assert given_workers(shape, workers, overrides) == expected


def test_a_run_records_its_shape(tmp_path):
    run = tmp_path / "run"
    run_inprocess([*VAL50, "model=mobilenet_v2_1.0_224_quant", "task.num_images=10"], run)
    doc = json.loads((run / "metrics.json").read_text())
    loop = doc["provenance"]["thread_budget"]["loop"]
    assert loop["shape"] == PIPELINED and "too few to calibrate" in loop["source"]
    assert doc["throughput"]["workers"] == loop["workers"] == 1


def test_calibrated_run_predicts_exactly_as_the_sequential_one(tmp_path):
    """A real model over 200 images: the calibration blocks and the chosen shape change no prediction."""
    data = overrides(make_dataset(tmp_path / "data", 200))
    preds, docs = {}, {}
    for shape in ("sequential", "auto"):
        run = tmp_path / shape
        # loop.lanes=1: on a machine of 4 or more cores two 2-thread instances would be measured first
        run_inprocess([*data, "delegate.num_threads=2", f"loop.shape={shape}", "loop.lanes=1"], run)
        docs[shape] = json.loads((run / "metrics.json").read_text())
        preds[shape] = [
            {k: v for k, v in json.loads(line).items() if k != "latency_ms"}
            for line in (run / "predictions.jsonl").read_text().splitlines()
        ]
    assert len(preds["auto"]) == 200 and preds["auto"] == preds["sequential"]
    assert docs["auto"]["metrics"] == docs["sequential"]["metrics"]
    loop = docs["auto"]["provenance"]["thread_budget"]["loop"]
    assert loop["source"].startswith("calibrated on 96 samples") and loop["shape"] in (PHASED, PIPELINED)
    assert len(loop["calibration"]["ms_per_sample"][loop["calibration"]["against"]]) == 3
    assert docs["sequential"]["provenance"]["thread_budget"]["loop"]["source"] == "loop.shape=sequential"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="lanes need a core an instance")
def test_lanes_predict_exactly_as_one_interpreter(tmp_path):
    """A real model in two one-thread instances side by side (loop.shape=lanes) against one instance
    sequentially: the same records (but their latency) and metrics; the run says how it ran."""
    data = overrides(make_dataset(tmp_path / "data", 120))
    preds, docs = {}, {}
    cache = [f"paths.cache_dir={tmp_path / 'cache'}", "loop.tensor_cache=true"]
    runs = {"sequential": [], "lanes": [], "lanes-filling": cache, "lanes-cached": cache}
    for name, extra in runs.items():  # the tensor cache filled by two lanes at once, then read by them
        shape, run = name.split("-")[0], tmp_path / name
        run_inprocess([*data, "model=mobilenet_v1_0.25_128_quant", f"loop.shape={shape}", *extra], run)
        docs[name] = json.loads((run / "metrics.json").read_text())
        preds[name] = [
            {k: v for k, v in json.loads(line).items() if k != "latency_ms"}
            for line in (run / "predictions.jsonl").read_text().splitlines()
        ]
    assert len(preds["lanes"]) == 120
    for name in ("lanes", "lanes-filling", "lanes-cached"):
        assert preds[name] == preds["sequential"] and docs[name]["metrics"] == docs["sequential"]["metrics"]
    assert docs["lanes-cached"]["throughput"]["cache"]["hits"] == 120
    loop = docs["lanes"]["provenance"]["thread_budget"]["loop"]
    assert loop["shape"] == "lanes" and loop["lanes"] == len(os.sched_getaffinity(0)) and loop["workers"] == 0
    assert "instances of the model side by side" in docs["lanes"]["latency_ms"]["timed_region"]
    assert docs["sequential"]["provenance"]["thread_budget"]["loop"]["lanes"] == 1
