"""Bad config / data / model: one clear line naming the file, before the loop, never a number."""

from __future__ import annotations

import ctypes.util
import json
import os
from pathlib import Path

import pytest
from conftest import ASSETS, MODELS, VAL50, run_cli, run_inprocess

from evalharness.core.errors import (
    ConfigError,
    DataError,
    DelegateUnavailableError,
    EvalHarnessError,
    ModelMismatchError,
)
from evalharness.core.paths import BUNDLED_DIR


def _metrics_files(root: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in root.rglob("metrics.json")]


def test_nnapi_on_host_is_one_line_error_and_no_results(tmp_path):
    proc = run_cli(["delegate=nnapi"], cwd=tmp_path)
    assert proc.returncode == 2
    err_lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(err_lines) == 1
    assert err_lines[0].startswith("error: NNAPI is Android-only (this host: ")
    assert err_lines[0].endswith("(runner=adb) or pick delegate=cpu|xnnpack|reference")
    assert "Traceback" not in proc.stderr
    docs = _metrics_files(tmp_path / "outputs")
    assert all(d["status"] == "failed" and d["metrics"] is None for d in docs)
    assert not list((tmp_path / "outputs").rglob("predictions.jsonl"))


@pytest.mark.parametrize(
    "overrides", [["delegate=hexagon"], ["delegate=coreml"], ["delegate=npu", "delegate.npu_vendor=qualcomm"]]
)
def test_other_host_unavailable_delegates_fail_before_loading(tmp_path, overrides):
    with pytest.raises(DelegateUnavailableError, match="pick delegate=cpu|xnnpack|reference"):
        run_inprocess(overrides, tmp_path)
    assert not (tmp_path / "predictions.jsonl").exists()


def test_edgetpu_without_runtime_names_the_library(tmp_path):
    with pytest.raises(DelegateUnavailableError, match=r"libedgetpu\.so\.1"):
        run_inprocess(["delegate=edgetpu", "delegate.edgetpu_library=/nonexistent/libedgetpu.so.1"], tmp_path)


def test_missing_image_dir_names_it(tmp_path):
    with pytest.raises(DataError, match="/nonexistent/val"):
        run_inprocess([*VAL50, "dataset.root=/nonexistent/val"], tmp_path)


def test_wrong_ground_truth_format_names_the_file(tmp_path):
    csv = ASSETS / "imagenet/val50/labels.csv"
    with pytest.raises(DataError, match=str(csv)):
        run_inprocess([*VAL50, f"dataset.ground_truth={csv}", "dataset.format=val_txt"], tmp_path)


def test_label_count_not_matching_model_output(tmp_path):
    labels = BUNDLED_DIR / "imagenet_classes.txt"  # 1000 lines; the model has 1001 outputs
    with pytest.raises(ModelMismatchError, match="imagenet_classes.txt"):
        run_inprocess([f"model.labels={labels}"], tmp_path)


def test_detector_fed_to_imagenet_is_rejected_before_the_loop(tmp_path):
    model = MODELS / "ssd_mobilenet_v1_coco_quant_postprocess.tflite"
    with pytest.raises(ModelMismatchError, match="4 outputs"):
        run_inprocess([f"model.path={model}"], tmp_path)
    assert not (tmp_path / "predictions.jsonl").exists()


def test_file_that_is_not_a_model(tmp_path):
    bogus = tmp_path / "model.tflite"
    bogus.write_bytes(b"definitely not a flatbuffer")
    with pytest.raises(ConfigError, match="not a .tflite flatbuffer"):
        run_inprocess([f"model.path={bogus}"], tmp_path / "run")


def test_unknown_delegate_flag_and_stray_flag(tmp_path):
    with pytest.raises(ConfigError, match="unknown flag"):
        run_inprocess(["+delegate.use_gpuu=true"], tmp_path)
    with pytest.raises(ConfigError, match="does not read gpu_precision_loss_allowed"):
        run_inprocess(["+delegate.gpu_precision_loss_allowed=false"], tmp_path)


def test_unknown_delegate_name_lists_valid_names(tmp_path):
    expected = r"unknown delegate 'xnnpak'.*valid: .*xnnpack.*Did you mean 'xnnpack'"
    with pytest.raises(ConfigError, match=expected):
        run_inprocess(["delegate.name=xnnpak"], tmp_path)


def test_num_images_larger_than_dataset(tmp_path):
    with pytest.raises(ConfigError, match="num_images=6 but .* has 5"):
        run_inprocess(["task.num_images=6"], tmp_path)


def test_missing_mandatory_value(tmp_path):
    with pytest.raises(ConfigError, match="dataset"):
        run_inprocess(["dataset=imagefolder"], tmp_path)


def test_xnnpack_force_fp16_is_refused_not_ignored(tmp_path):
    with pytest.raises(DelegateUnavailableError, match="xnnpack_force_fp16"):
        run_inprocess(["delegate=xnnpack", "delegate.xnnpack_force_fp16=true"], tmp_path)


def test_cli_user_errors_have_no_traceback(tmp_path):
    proc = run_cli(["dataset.root=/nonexistent/images"], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert [line for line in proc.stderr.splitlines() if line.startswith("error:")][0].count("\n") == 0


def test_errors_are_eval_harness_errors():
    assert issubclass(DelegateUnavailableError, EvalHarnessError)


def test_external_delegate_missing_library(tmp_path):
    with pytest.raises(
        DelegateUnavailableError, match="external delegate library not found: /nonexistent/libx.so"
    ):
        run_inprocess(["delegate=external", "delegate.external_delegate_path=/nonexistent/libx.so"], tmp_path)


def test_external_delegate_not_a_library(tmp_path):
    fake = tmp_path / "libfake.so"
    fake.write_text("not an ELF file")
    with pytest.raises(DelegateUnavailableError, match=f"cannot load delegate library {fake}"):
        run_inprocess(["delegate=external", f"delegate.external_delegate_path={fake}"], tmp_path / "run")


def test_external_delegate_bad_option_string(tmp_path):
    fake = tmp_path / "libfake.so"
    fake.write_text("x")
    with pytest.raises(ConfigError, match="'oops' is not 'key:value'"):
        run_inprocess(
            [
                "delegate=external",
                f"delegate.external_delegate_path={fake}",
                "delegate.external_delegate_options='a:1;oops'",
            ],
            tmp_path,
        )


def test_shared_library_that_is_not_a_delegate(tmp_path):
    libm = ctypes.util.find_library("m")
    assert libm
    with pytest.raises(DelegateUnavailableError, match="does not export tflite_plugin_create_delegate"):
        run_inprocess(["delegate=external", f"delegate.external_delegate_path={_full_path(libm)}"], tmp_path)


def _full_path(soname: str) -> str:
    for d in (
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/lib64",
    ):
        if os.path.exists(os.path.join(d, soname)):
            return os.path.join(d, soname)
    pytest.skip(f"cannot locate {soname} on disk")


def test_a_refused_run_leaves_nothing_that_blocks_the_corrected_command(tmp_path):
    """A model that does not fit the task (exit 2, after the claim) records why; the corrected
    command into the same directory runs as typed, saying it replaced that record."""
    run_dir = tmp_path / "run"
    bad = run_cli(["model=ssd_mobilenet_v1_coco_quant_postprocess", f"hydra.run.dir={run_dir}"], tmp_path)
    assert bad.returncode == 2 and json.loads((run_dir / "metrics.json").read_text())["status"] == "failed"
    good = run_cli(["task.num_images=2", f"hydra.run.dir={run_dir}"], tmp_path)
    assert good.returncode == 0, good.stderr[-2000:]
    assert "failed before any result" in good.stdout + good.stderr and "Traceback" not in good.stderr
    assert json.loads((run_dir / "metrics.json").read_text())["status"] == "complete"
    again = run_cli(["task.num_images=2", f"hydra.run.dir={run_dir}"], tmp_path)  # a run with results
    assert again.returncode == 2 and again.stderr.strip().splitlines()[-1].startswith("error:")
    assert "already holds a complete run" in again.stderr
