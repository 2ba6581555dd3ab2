"""Compile caches for real: cold and warm start-ups recorded, measured in child processes, compared
with care (runtime/compile_cache.py, cache_runs.py, report/cache_states.py). Real LiteRT runs of the bundled
MobileNet v1 0.25; the GPU ones on lavapipe (skipped without a Vulkan driver) on the 4-op planted
classifier, whose shaders lavapipe compiles in ~1 s (MobileNet's ~12 s a cold run: what the cache
states mean does not depend on the graph). No timing asserted: the timings are the README's table."""

from __future__ import annotations

import json

import planted_models as planted
import pytest
from conftest import VAL50, run_cli, run_inprocess, task_lines
from test_gpu import NO_VULKAN
from test_report_classification import report

from evalharness.core.errors import ConfigError, EvalHarnessError, RunStopped
from evalharness.core.numbers import relative_pct
from evalharness.run import start_up as cache_runs

BENCH = ["task=benchmark", "task.num_runs=3", "task.min_secs=0"]


def _states(doc: dict) -> list[str]:
    return [c["state"] for c in doc["provenance"]["delegate"]["cache"]]


def test_cache_both_on_cpu_measures_a_cold_then_a_warm_pass(tmp_path):
    run = tmp_path / "run"
    proc = run_cli([*BENCH, "task.start_up=both", f"hydra.run.dir={run}"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    passes = json.loads((run / "metrics.json").read_text())["metrics"]["compile_cache"]
    assert (passes["mode"], passes["cold"]["state"], passes["warm"]["state"]) == ("both", "cold", "warm")
    cold, warm = (json.loads((run / p[s]["run_dir"] / "metrics.json").read_text()) for s, p in
                  (("cold", passes), ("warm", passes)))  # fmt: skip
    assert _states(cold) == ["cold"] and _states(warm) == ["warm"]
    assert cold["provenance"]["delegate"]["cache"][0]["kind"] == "xnnpack_weight_cache"
    assert passes["cold"]["init"] == cold["latency_ms"]["init"]
    assert passes["warm"]["first_inference"] == warm["latency_ms"]["first_inference"]
    # the warm pass found what the cold one wrote and added nothing
    assert passes["cold"]["cache_bytes"] == passes["warm"]["cache_bytes"] > 0
    r = passes["reduction_pct"]
    for key in ("init", "first_inference"):
        assert r[key] == pytest.approx(-relative_pct(passes["cold"][key], passes["warm"][key]))
    assert f"Cold -> warm reduction: init {r['init']:.1f} %, first inference " in proc.stdout
    assert f"first inference {r['first_inference']:.1f} %" in proc.stdout
    assert "Cold start (cache_cold), in us: Init: " in "\n".join(task_lines(run))


def test_cache_cold_runs_one_pass_into_an_emptied_cache(tmp_path):
    run = tmp_path / "run"
    (run / "compile_cache").mkdir(parents=True)
    (run / "compile_cache" / "left_by_an_earlier_run").write_text("x")
    args = [*BENCH, "task.start_up=cold", f"hydra.run.dir={run}", "loop.overwrite=true"]
    proc = run_cli(args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    passes = json.loads((run / "metrics.json").read_text())["metrics"]["compile_cache"]
    assert passes["cold"]["state"] == "cold" and passes["warm"] is None and passes["reduction_pct"] is None
    assert not (run / "compile_cache" / "left_by_an_earlier_run").exists()
    assert "Warm start" not in proc.stdout and "Cold start" in proc.stdout


@pytest.mark.parametrize(
    ("extra", "env", "needs"),
    [
        (["delegate=reference"], {}, "delegate=reference has none"),
        (["task.start_up=lukewarm"], {}, "task.start_up='lukewarm'; valid: as_found, cold, warm, both"),
        (["delegate=gpu"], {"MESA_SHADER_CACHE_DISABLE": "true"}, "unset MESA_SHADER_CACHE_DISABLE"),
    ],
)
def test_passes_that_cannot_be_cold_then_warm_are_refused_before_anything_runs(tmp_path, extra, env, needs):
    if "delegate=gpu" in extra and NO_VULKAN:
        pytest.skip(NO_VULKAN)
    run = tmp_path / "run"
    proc = run_cli([*BENCH, "task.start_up=both", *extra, f"hydra.run.dir={run}"], cwd=tmp_path, env=env)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and len(errors) == 1 and needs in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr and not (run / "cache_cold").exists()


def test_passes_need_a_command_line_to_repeat(tmp_path):
    with pytest.raises(ConfigError, match="repeats the command line in child processes"):
        run_inprocess([*BENCH, "task.start_up=both"], tmp_path)


def test_a_failing_pass_keeps_its_exit_class_and_error_line(tmp_path):
    """A pass's user error stays exit 2 (not RunStopped), a stopped or crashed pass is exit 1."""
    with pytest.raises(EvalHarnessError, match=r"the cold pass failed \(exit 2\): .*no_such\.tflite") as err:
        cache_runs.run_pass([*BENCH, "model.path=no_such.tflite"], str(tmp_path / "c"), str(tmp_path), "cold")
    assert err.type is EvalHarnessError and not isinstance(err.value, RunStopped)
    stopped = cache_runs.child_failed(
        "task.start_up: the warm pass", 1, "log line\nerror: run stopped early (SIGTERM)\n", "d"
    )
    assert isinstance(stopped, RunStopped)
    assert str(stopped) == "task.start_up: the warm pass failed (exit 1): run stopped early (SIGTERM)"
    crashed = cache_runs.child_failed("task.start_up: the cold pass", -11, "Segmentation fault\n", "d")
    assert isinstance(crashed, RunStopped) and "exit -11): no error line; its output is in d" in str(crashed)


def test_cache_dir_round_trip_gives_identical_predictions(tmp_path):
    """delegate.compile_cache_dir on the CPU: the first run fills XNNPACK's weight cache, the second reads it;
    the outputs do not change (the init it saves is in the README's table)."""
    base = [*VAL50, "task.num_images=8", f"delegate.compile_cache_dir={tmp_path / 'caches'}"]
    docs, preds = [], []
    for name in ("first", "second"):
        docs.append(run_inprocess(base, tmp_path / name))
        lines = (tmp_path / name / "predictions.jsonl").read_text().splitlines()
        preds.append([{k: v for k, v in json.loads(line).items() if k != "latency_ms"} for line in lines])
    assert [_states(d) for d in docs] == [["cold"], ["warm"]]
    assert len(preds[0]) == 8 and preds[0] == preds[1]
    assert docs[0]["metrics"]["correct"] == docs[1]["metrics"]["correct"]


@pytest.mark.skipif(NO_VULKAN is not None, reason=NO_VULKAN or "")
def test_report_diff_warns_and_refuses_gates_across_shader_cache_states(tmp_path, capsys):
    """The issue's acceptance: one GPU run with Mesa's shader cache disabled, one warm."""
    gpu = [*BENCH, "delegate=gpu", f"model.path={planted.model(tmp_path / 'tiny.tflite')}"]
    off = tmp_path / "disabled"
    proc = run_cli([*gpu, f"hydra.run.dir={off}"], cwd=tmp_path, env={"MESA_SHADER_CACHE_DISABLE": "true"})
    assert proc.returncode == 0, proc.stderr
    warm = [*gpu, f"delegate.compile_cache_dir={tmp_path / 'caches'}"]
    for name in ("fill", "warm"):
        proc = run_cli([*warm, f"hydra.run.dir={tmp_path / name}"], cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    docs = {n: json.loads((tmp_path / n / "metrics.json").read_text()) for n in ("disabled", "fill", "warm")}
    assert {n: _states(d) for n, d in docs.items()} == {
        "disabled": ["disabled"],
        "fill": ["cold"],
        "warm": ["warm"],
    }
    assert docs["disabled"]["provenance"]["delegate"]["cache"][0]["kind"] == "mesa_shader_cache"

    code, out, err = report(capsys, "diff", off, tmp_path / "warm")
    assert code == 0 and "differs: mesa_shader_cache=disabled (A) vs mesa_shader_cache=warm (B)" in err
    assert "WARNING: cache state differs" in out
    code, _, err = report(capsys, "diff", off, tmp_path / "warm", "--fail-if", "latency_first_inference>+10%")
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1, err
    assert "latency_first_inference" in errors[0] and "cache state differs" in errors[0]
    assert "--allow-cache-mismatch" in errors[0]
    code, _, _ = report(
        capsys, "diff", off, tmp_path / "warm", "--fail-if", "latency_first_inference>+10%",
        "--allow-cache-mismatch",
    )  # fmt: skip
    assert code == 0  # allowed: the figures decide, and the warm start is not slower


def test_sweep_table_warns_when_its_jobs_ran_with_different_cache_states(tmp_path):
    """Two jobs sharing one delegate.compile_cache_dir: the first fills it (cold), the second finds
    it (warm)."""
    sweep_dir = tmp_path / "multirun"
    proc = run_cli(
        ["-m", *BENCH, "task.seed=0,1", f"delegate.compile_cache_dir={tmp_path / 'caches'}",
         "hydra/callbacks=sweep_report", f"hydra.sweep.dir={sweep_dir}"],
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    table = (sweep_dir / "sweep.md").read_text()
    assert "different compile-cache states (xnnpack_weight_cache=cold; xnnpack_weight_cache=warm)" in table
