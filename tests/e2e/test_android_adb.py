"""runner=adb end to end against a fake phone: tests/fake_android/adb (a local folder as the phone)
and a fake device benchmark_model running ai-edge-litert with the host CPU path's kernels, so a
phone run must score exactly like the host delegate=cpu run. Failures must be one-line errors."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import VAL50, run_cli, run_inprocess

from evalharness.core.errors import EvalHarnessError
from evalharness.report.commands import entry as cli

FAKE = Path(__file__).resolve().parents[1] / "fake_android"
SMALL = [*VAL50, "model=mobilenet_v1_0.25_128_quant", "task.num_images=4"]


@pytest.fixture
def phone(monkeypatch, tmp_path) -> list[str]:
    """Fake adb first on PATH, an empty phone; returns the runner overrides."""
    root = tmp_path / "phone"
    (root / "data/local/tmp").mkdir(parents=True)
    monkeypatch.setenv(
        "PATH", os.pathsep.join([str(FAKE), str(Path(sys.executable).parent), os.environ["PATH"]])
    )
    monkeypatch.setenv("FAKE_ADB_ROOT", str(root))
    for var in (
        "FAKE_ADB_STATE",
        "FAKE_BM_GENERATION",
        "FAKE_DELEGATE_MODE",
        "FAKE_BM_RC",
        "FAKE_BM_UNKNOWN_FLAGS",
        "FAKE_ANDROID_SDK",
    ):
        monkeypatch.delenv(var, raising=False)
    return [
        "runner=adb",
        f"runner.benchmark_binary={FAKE / 'benchmark_model'}",
        "runner.num_runs=3",
        "runner.min_secs=0",
        "runner.warmup_min_secs=0",
    ]


def predictions(run_dir: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    return {r["id"]: {k: v for k, v in r.items() if k != "latency_ms"} for r in rows}


def test_nnapi_on_the_phone_scores_like_the_host_cpu_run_and_diffs(phone, tmp_path, capsys):
    model = "model=mobilenet_v2_1.0_224_quant"
    host, device = tmp_path / "host", tmp_path / "phone_run"
    host_doc = run_inprocess([*VAL50, model, "delegate=cpu"], host)
    cooling = Path(os.environ["FAKE_ADB_ROOT"], "sys/class/thermal/cooling_device0")
    cooling.mkdir(parents=True)
    for name, text in (("type", "Processor"), ("cur_state", "1"), ("max_state", "3")):
        (cooling / name).write_text(text + "\n")
    doc = run_inprocess([*VAL50, model, "delegate=nnapi", *phone, "runner.batch_size=16"], device)
    tops = [f"top{k}" for k in range(1, 11)]
    assert [doc["metrics"][t] for t in tops] == [host_doc["metrics"][t] for t in tops]
    assert doc["metrics"]["num_scored"] == 50 and predictions(device) == predictions(host)
    prov = doc["provenance"]
    assert prov["device"]["model"] == "Fake Phone 8" and prov["device"]["android_version"] == "14"
    assert prov["device"]["soc_model"] == "SM8550" and len(prov["device"]["benchmark_binary"]["sha256"]) == 64
    assert prov["device"]["nnapi_accelerators"] == ["fake-npu", "nnapi-reference"]
    assert prov["runtime"]["name"] == "benchmark_model"
    cov = prov["delegate"]["coverage"]
    assert (cov["ops_delegated"], cov["ops_total"], cov["partitions"]) == (66, 66, 1)
    lat = doc["latency_ms"]
    assert (
        lat["inference"]["count"] == 3
        and lat["init"] > 0
        and lat["timed_region"].startswith("benchmark_model")
    )
    assert {"p5", "p50", "p95"} <= set(lat["inference"]) and doc["memory_mb"]["peak"] > 0
    # the phone's thermal state around benchmark_model's latency run, read through adb: throttled
    validity = lat["validity"]
    assert validity["thermal"]["source"] == "adb FAKE0001" and validity["thermal"]["exposed"]
    assert validity["thermal"]["throttled"] == ["Processor (cooling_device0)"] and not validity["valid"]
    assert "throttled (Processor (cooling_device0))" in validity["problems"] and not validity["cv_checked"]
    capsys.readouterr()
    code = cli.main(["diff", str(host), str(device), "--format", "json"])
    diff = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [row["name"] for row in diff["metrics"]] == tops
    # the fake phone runs the host's CPU kernels: every score the same, bit for bit, and said so
    assert all(row["delta"] == 0 for row in diff["metrics"]) and "B is identical to A" in diff["verdict"]


def test_old_benchmark_model_generation_partial_delegation_and_a_named_accelerator(
    phone, tmp_path, monkeypatch, caplog
):
    monkeypatch.setenv("FAKE_BM_GENERATION", "old")
    monkeypatch.setenv("FAKE_ANDROID_SDK", "35")
    monkeypatch.setenv("FAKE_DELEGATE_MODE", "partial")
    host = run_inprocess([*SMALL, "delegate=cpu"], tmp_path / "host")
    doc = run_inprocess(
        [*SMALL, "delegate=nnapi", "delegate.nnapi_accelerator_name=fake-npu", *phone], tmp_path / "old"
    )
    assert doc["metrics"]["top1"] == host["metrics"]["top1"]
    assert predictions(tmp_path / "old") == predictions(tmp_path / "host")
    cov = doc["provenance"]["delegate"]["coverage"]
    assert (
        cov["ops_delegated"] == cov["ops_total"] - 2
        and cov["partitions"] == 2
        and not cov["fully_accelerated"]
    )
    assert cov["device"]["adapter"] == "fake-npu"
    assert "NNAPI is deprecated from Android 15" in caplog.text  # a warning, not a refusal
    assert doc["latency_ms"]["inference"]["count"] == 3 and "p50" not in doc["latency_ms"]["inference"]


@pytest.mark.parametrize(
    "env, extra, match",
    [
        (
            {"FAKE_BM_UNKNOWN_FLAGS": "delegate_serialize_dir,delegate_serialize_token"},
            [],
            "Unconsumed cmdline",
        ),
        ({"FAKE_DELEGATE_MODE": "skip"}, [], "did not apply the NNAPI delegate"),
        ({"FAKE_DELEGATE_MODE": "none"}, [], "took no node"),
        ({}, ["delegate.nnapi_accelerator_name=qti-dsp"], "'qti-dsp' is not on this device"),
        ({"FAKE_ADB_STATE": "none"}, [], "no Android device attached"),
        ({"FAKE_ADB_STATE": "unauthorized"}, [], "unauthorized: accept"),
        ({}, ["runner.serial=OTHER"], "'OTHER' not attached"),
        ({"FAKE_BM_RC": "3"}, [], "benchmark_model exited 3"),
        ({}, ["runner.adb=no-such-adb"], "adb client 'no-such-adb' not found"),
    ],
)
def test_failures_are_loud_one_line_errors(phone, tmp_path, monkeypatch, env, extra, match):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(EvalHarnessError, match=match) as info:
        run_inprocess([*SMALL, "delegate=nnapi", *phone, *extra], tmp_path / "run")
    assert len(str(info.value).splitlines()) == 1


def test_cli_error_exit_and_gpu_on_the_phone(phone, tmp_path):
    env = {"FAKE_ADB_STATE": "unauthorized"}
    done = run_cli([*SMALL, "delegate=gpu", *phone, f"hydra.run.dir={tmp_path / 'a'}"], tmp_path, env)
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1].startswith(
        "error: runner=adb: device"
    )
    done = run_cli([*SMALL, "delegate=gpu", *phone, f"hydra.run.dir={tmp_path / 'b'}"], tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "b" / "metrics.json").read_text())
    assert doc["provenance"]["delegate"]["coverage"]["applied"] == "GPU completely"
    calls = doc["provenance"]["delegate"]["native_log"]
    assert any("Explicitly applied GPU delegate" in line for line in calls)


def test_detector_outputs_split_back_in_output_order(phone, tmp_path):
    """SSD's four outputs come back as one concatenated file; COCO scores equal the host cpu run's."""
    coco = [*VAL50[:2], "task=coco", "dataset=coco_val5"]
    host = run_inprocess([*coco, "delegate=cpu"], tmp_path / "host")
    doc = run_inprocess([*coco, "delegate=xnnpack", *phone, "runner.batch_size=2"], tmp_path / "device")
    assert doc["metrics"]["AP"] == host["metrics"]["AP"] and doc["metrics"]["num_scored"] == 5
    assert predictions(tmp_path / "device") == predictions(tmp_path / "host")
