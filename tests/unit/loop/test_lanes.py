"""Lanes (evalharness/loop/lanes.py, lane_choice.py): several instances of a CPU model side by side,
each preparing and invoking its own samples, scored in sample order. A plumbing test with fake models
(sleeps stand in for invoke); the real model's predictions are compared in tests/e2e/test_loop_shape.py
and the speed is measured in benchmarks/bench_throughput.py, not here."""

from __future__ import annotations

import threading
import time

import pytest
from test_scoring_blocks import _Model, _Task

from evalharness.core.errors import ConfigError, DataError
from evalharness.loop import lanes as lanes_module
from evalharness.loop.engine import LoopSettings, run_loop
from evalharness.loop.lane_choice import CLEAR, MIN_SAMPLES
from evalharness.loop.lanes import lanes_possible


class _Lane(_Model):
    """One thread an instance; ``invoke_s`` an invoke, ``contended_s`` more while another instance
    invokes at the same time (instances that slow each other down)."""

    running = 0
    guard = threading.Lock()

    def __init__(self, invoke_s=0.0, contended_s=0.0, fail_at=None, threads=1):
        super().__init__(lambda: None, fail_at=fail_at)
        self.invoke_s, self.contended_s, self.threads = invoke_s, contended_s, threads

    def lane_threads(self):
        return self.threads

    def invoke(self):
        with _Lane.guard:
            _Lane.running += 1
            crowded = _Lane.running > 1
        try:
            super().invoke()
            time.sleep(self.invoke_s + (self.contended_s if crowded else 0.0))
        finally:
            with _Lane.guard:
                _Lane.running -= 1


@pytest.fixture(autouse=True)
def _four_cores(monkeypatch):
    monkeypatch.setattr(lanes_module, "available_cores", lambda: 4)


def _run(task, shape="lanes", strict=True, lanes_cap="auto", **lane):
    records, models = [], []

    def load():
        models.append(_Lane(**lane))
        return models[-1]

    settings = LoopSettings(progress=False, shape=shape, warmup_runs=1, strict=strict, lanes=lanes_cap)
    _, result = run_loop(task, load, records.append, settings)
    return records, models, result


def test_lanes_score_every_sample_in_order_with_its_own_output_and_latency():
    before = threading.active_count()
    records, models, result = _run(_Task(300), invoke_s=0.0005)
    assert result.status == "complete" and result.shape.shape == "lanes" and result.shape.lanes == 4
    assert [r["id"] for r in records] == [str(i) for i in range(300)]
    assert [r["out"] for r in records] == [i % 256 for i in range(300)]
    assert [r["latency_ms"] for r in records] == list(result.inference_ms)
    assert len(models) == 4 and all(m.invokes > 2 for m in models)  # each lane ran samples (and warm-ups)
    assert "4 instances of the model side by side" in result.timed_region
    assert result.shape.record()["lanes"] == 4 and len(result.prepare_s) == 300
    assert threading.active_count() == before  # every lane thread ended


class _Bad(_Task):
    def prepare(self, sample):
        if sample == 57:
            raise DataError("img57: cannot decode image")
        return super().prepare(sample)


def test_a_strict_stop_scores_the_samples_before_it():
    records, _, result = _run(_Bad(200))
    assert result.status == "partial" and "img57" in result.stop_reason
    assert [r["id"] for r in records] == [str(i) for i in range(57)]


def test_a_bad_sample_is_skipped_when_not_strict():
    records, _, result = _run(_Bad(200), strict=False)
    assert result.status == "complete" and len(records) == 199 and "57" not in {r["id"] for r in records}
    assert result.skipped == [{"sample": "57", "reason": "img57: cannot decode image"}]


def test_an_interrupt_in_a_lane_stops_the_run_and_every_lane():
    before = threading.active_count()
    records, _, result = _run(_Task(400), fail_at=30)  # the first instance's 30th invoke
    assert result.status == "partial" and result.stop_reason == "interrupted"
    ids = [int(r["id"]) for r in records]
    assert ids == list(range(len(ids))) and len(ids) < 400  # a prefix, in order
    assert threading.active_count() == before


def test_auto_runs_lanes_where_they_are_faster():
    records, models, result = _run(_Task(MIN_SAMPLES), shape="auto", invoke_s=0.002)
    assert [r["id"] for r in records] == [str(i) for i in range(MIN_SAMPLES)]
    shape = result.shape  # 4 instances: ~0.25 of one's time, so the first pair decides (CLEAR)
    assert shape.shape == "lanes" and shape.source.startswith("calibrated on 64 samples"), shape.source
    cal = shape.record()["lanes_calibration"]
    assert cal["median_ratio_lanes_over_single"] < CLEAR and len(cal["lanes_ms_per_sample"]) == 1
    assert len(cal["lane_init_ms"]) == 3 and len(models) == 4


def test_auto_measures_every_pair_where_lanes_win_by_less():
    """2 instances slowing each other down: ~0.85 of one's time, inside the noise a first pair could
    show, so all three pairs are measured before lanes run the rest."""
    slowed = {"invoke_s": 0.002, "contended_s": 0.0014}
    records, _, result = _run(_Task(MIN_SAMPLES), shape="auto", lanes_cap="2", **slowed)
    assert [r["id"] for r in records] == [str(i) for i in range(MIN_SAMPLES)]
    cal = result.shape.record()["lanes_calibration"]
    assert len(cal["lanes_ms_per_sample"]) == len(cal["single_ms_per_sample"]) == 3, cal
    assert CLEAR < cal["median_ratio_lanes_over_single"] < 1.0 and result.shape.shape == "lanes"


def test_auto_keeps_one_instance_where_instances_slow_each_other_down():
    records, _, result = _run(_Task(MIN_SAMPLES), shape="auto", invoke_s=0.001, contended_s=0.006)
    assert [r["id"] for r in records] == [str(i) for i in range(MIN_SAMPLES)]
    shape = result.shape
    assert shape.shape in ("sequential", "pipelined") and shape.lanes == 1, shape.source
    cal = shape.record()["lanes_calibration"]
    assert cal["median_ratio_lanes_over_single"] > 1.0 and cal["decision"] == "one interpreter"
    assert shape.record()["lanes"] == 1


def test_short_runs_do_not_measure_lanes():
    _, models, result = _run(_Task(MIN_SAMPLES - 1), shape="auto")
    assert len(models) == 1 and result.shape.lanes == 1 and result.shape.lanes_calibration is None


class _Device(_Model):
    def lane_threads(self):
        return None


@pytest.mark.parametrize(
    ("model", "batch", "cores", "expected"),
    [(_Lane(threads=1), 1, 2, 2), (_Lane(threads=2), 1, 2, 1), (_Lane(threads=2), 1, 5, 2),
     (_Lane(threads=1), 4, 8, 1), (_Device(lambda: None), 1, 8, 1)],
)  # fmt: skip
def test_how_many_instances_fit(model, batch, cores, expected):
    assert lanes_possible(model, batch, cores) == expected


def test_lanes_asked_for_where_they_cannot_run_is_a_user_error():
    settings = LoopSettings(progress=False, shape="lanes")
    with pytest.raises(ConfigError, match=r"loop.shape=lanes: .*delegate.num_threads=4 of this process's 4"):
        run_loop(_Task(3), lambda: _Lane(threads=4), lambda r: None, settings)
    with pytest.raises(ConfigError, match="runs on its own device"):
        run_loop(_Task(3), lambda: _Device(lambda: None), lambda r: None, settings)


class _Latencies(_Task):
    name = "benchmark"
    side_by_side = False  # task=benchmark and inference_diff: their figures are invoke latencies


def test_a_task_that_times_invoke_never_runs_lanes():
    _, models, result = _run(_Latencies(MIN_SAMPLES), shape="auto")
    assert len(models) == 1 and result.shape.lanes == 1 and result.shape.lanes_calibration is None
    with pytest.raises(ConfigError, match="task=benchmark times invoke alone"):
        _run(_Latencies(3))


class _Listing(_Task):
    """A listing that fails part-way (a container's index read as the samples stream)."""

    def __init__(self, n: int, fail_at: int) -> None:
        super().__init__(n)
        self.samples = self._listed(n, fail_at)

    def _listed(self, n, fail_at):
        class Listed:
            def __len__(self):
                return n

            def __iter__(self):
                for i in range(n):
                    if i == fail_at:
                        raise DataError("shard-3.tar: truncated")
                    yield i

        return Listed()


@pytest.mark.parametrize("strict", [True, False])
def test_a_listing_that_fails_stops_the_run_even_when_not_strict(strict):
    records, _, result = _run(_Listing(200, fail_at=90), strict=strict)
    assert result.status == "partial" and "shard-3.tar: truncated" in result.stop_reason
    assert [r["id"] for r in records] == [str(i) for i in range(90)] and result.skipped == []


@pytest.mark.parametrize(
    ("lanes", "budget", "expected"),
    [("auto", {"cores": 8, "cores_per_worker": 8, "num_threads": 2}, "4"),
     ("auto", {"cores": 8, "cores_per_worker": 2, "num_threads": 1}, "2"),  # a multirun's share
     ("auto", {"cores": 8, "cores_per_worker": None, "num_threads": -1}, "1"),  # the runtime's threads
     ("3", {"cores": 8, "cores_per_worker": 8, "num_threads": 1}, "3")],
)  # fmt: skip
def test_loop_lanes_auto_is_this_process_share_of_the_cores(lanes, budget, expected):
    from evalharness.settings.validate import loop_settings

    assert loop_settings(LoopSettings(lanes=lanes), [], budget).lanes == expected


@pytest.mark.parametrize(
    ("lanes", "shape", "said"),
    [("0", "auto", "use auto or the most instances"), ("two", "auto", "use auto or the most instances"),
     ("1", "lanes", "loop.shape=lanes: loop.lanes=1")],
)  # fmt: skip
def test_loop_lanes_refused(lanes, shape, said):
    from evalharness.settings.validate import loop_settings

    budget = {"cores": 4, "cores_per_worker": 4, "num_threads": 1}
    with pytest.raises(ConfigError, match=said):
        loop_settings(LoopSettings(lanes=lanes, shape=shape), [], budget)


def test_loop_lanes_caps_the_instances():
    _, models, result = _run(_Task(50), shape="lanes", lanes_cap="2")
    assert len(models) == 2 and result.shape.lanes == 2


def test_auto_goes_on_with_one_instance_where_another_does_not_load():
    records, models = [], []

    def load():
        if models:
            raise MemoryError("no room for another arena")
        models.append(_Lane(invoke_s=0.0005))
        return models[-1]

    settings = LoopSettings(progress=False, shape="auto", warmup_runs=0)
    _, result = run_loop(_Task(MIN_SAMPLES), load, records.append, settings)
    assert result.status == "complete" and len(records) == MIN_SAMPLES and result.shape.lanes == 1
    assert "another did not load (MemoryError: no room" in result.shape.lanes_calibration["decision"]
    models.clear()  # asked for: the reason stops the run
    _, result = run_loop(_Task(50), load, records.append, LoopSettings(progress=False, shape="lanes"))
    assert result.status == "partial" and isinstance(result.error, MemoryError)


class _Resumable(_Task):
    def __init__(self, n):
        super().__init__(n)
        self.restored = []
        self.evaluator.restore = self.restored.append


def test_a_resumed_run_in_lanes_runs_only_what_is_left():
    done = [{"id": str(i), "out": i, "latency_ms": 1.5} for i in range(40)]
    task = _Resumable(100)
    records, models = [], []

    def load():
        models.append(_Lane())
        return models[-1]

    settings = LoopSettings(progress=False, shape="lanes", warmup_runs=0)
    _, result = run_loop(task, load, records.append, settings, done=done)
    assert result.status == "complete" and result.resumed == 40 and task.restored == done
    assert [r["id"] for r in records] == [str(i) for i in range(40, 100)]
    assert len(result.inference_ms) == 100 and list(result.inference_ms[:40]) == [1.5] * 40


@pytest.mark.parametrize(
    ("plan", "runner", "times", "batch", "said"),
    [({"backend": "compiled_gpu", "name": "gpu"}, "host", False, 1, "delegate=gpu runs on its own device"),
     ({"external_path": "/x/libedgetpu.so", "name": "edgetpu"}, "host", False, 1, "delegate=edgetpu"),
     ({}, "adb", False, 1, "runner=adb invokes on its device"),
     ({}, "host", True, 1, "invoke latencies"),
     ({}, "host", False, 4, "loop.batch_size=1 for lanes")],
)  # fmt: skip
def test_lanes_refused_before_anything_runs(plan, runner, times, batch, said):
    """Refused at validation, before the run directory is claimed or a model loads (exit 2)."""
    from evalharness.runtime import DelegatePlan
    from evalharness.settings.validate import check_lanes

    made = DelegatePlan(**{"name": "cpu", "op_resolver": "auto", "num_threads": 1, **plan})
    with pytest.raises(ConfigError, match=said):
        check_lanes(LoopSettings(shape="lanes", batch_size=batch), made, runner, times)
    check_lanes(LoopSettings(shape="auto", batch_size=batch), made, runner, times)  # auto: never refused


@pytest.mark.parametrize(
    ("task", "latencies"),
    [("benchmark", True), ("inference_diff", True), ("imagenet", False), ("coco", False)],
)
def test_whether_a_task_s_figures_are_invoke_latencies_is_its_definition_s_word(task, latencies):
    """One answer, read by validation's early refusal of loop.shape=lanes and by the loop."""
    from evalharness.tasks.defaults import conf_task
    from evalharness.tasks.definition import times_invokes
    from evalharness.tasks.discovery import definition_for

    assert times_invokes(definition_for(task, dict(conf_task(task)))) is latencies
