"""Every file in conf/ composes, validates and instantiates (or fails with its documented error)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ASSETS, MODELS, compose_config
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from evalharness.core.errors import ConfigError, DelegateUnavailableError
from evalharness.core.paths import CONF_DIR
from evalharness.runtime import load_model
from evalharness.runtime.delegates import DELEGATES, parse_options
from evalharness.settings.validate import validate
from evalharness.tasks.discovery import task_definitions

HOST_UNAVAILABLE = {"nnapi", "hexagon", "coreml", "edgetpu", "external"}  # npu: OpenVINO runs it
# the error each of those is refused with on this host, and how its one line starts
REFUSED_WITH = {
    "nnapi": (DelegateUnavailableError, "NNAPI is Android-only"),
    "hexagon": (DelegateUnavailableError, "the Hexagon delegate needs an Android device"),
    "coreml": (DelegateUnavailableError, "the Core ML delegate runs only on Apple devices"),
    "edgetpu": (DelegateUnavailableError, "delegate=edgetpu needs the Coral runtime library"),
    "external": (ConfigError, "delegate=external needs delegate.external_delegate_path="),
}


def _options(group: str) -> list[str]:
    return sorted(
        p.relative_to(CONF_DIR / group).with_suffix("").as_posix() for p in (CONF_DIR / group).rglob("*.yaml")
    )


def test_every_group_option_has_a_file_and_vice_versa():
    assert _options("delegate") == DELEGATES.names()
    assert set(_options("task")) <= set(task_definitions().names())


@pytest.mark.parametrize("delegate", _options("delegate"))
def test_each_delegate_config_validates_or_names_whats_missing(delegate):
    cfg = compose_config([f"delegate={delegate}"])
    if delegate in HOST_UNAVAILABLE:
        kind, words = REFUSED_WITH[delegate]
        with pytest.raises(kind, match=f"^{re.escape(words)}") as info:
            validate(cfg)
        assert info.type is kind
        assert len(str(info.value).splitlines()) == 1
    else:
        rc = validate(cfg)
        assert rc.delegate_plan.name == delegate
        try:
            assert load_model(rc.model.path, rc.delegate_plan).coverage["ops_total"] == 31
        except DelegateUnavailableError as exc:  # gpu on a host without a Vulkan driver
            assert delegate == "gpu" and "Vulkan" in str(exc)


DETECTORS = {"ssd_mobilenet_v1_coco_quant_postprocess", "yolov8n"}
COCO_DATASETS = {"coco_sample", "coco_val2017", "coco_val25", "coco_val5", "yolo"}


@pytest.mark.parametrize("model", [m for m in _options("model") if "/" not in m])
def test_each_model_preset_composes_and_its_task_instantiates(model):
    task = ["task=coco"] if model in DETECTORS else []
    if model == "file":  # any file: model.path is the one mandatory value (tests/e2e/test_model_file.py)
        with pytest.raises(ConfigError, match="model.path"):
            validate(compose_config([f"model={model}"]))
        return
    cfg = compose_config([*task, f"model={model}", f"paths.models_dir={MODELS}"])
    if not Path(cfg.model.path).is_file():
        with pytest.raises(ConfigError, match=r"model.path=.*: cannot read the model file \(no such file"):
            validate(cfg)  # every other setting checked first; the missing file refused last, by name
        pytest.skip(f"{cfg.model.path} is not among the shared assets (preset for the user's own export)")
    rc = validate(cfg)
    assert rc.model.name == model and rc.model.path.endswith(".tflite")
    instance = rc.live_task()
    loaded = load_model(rc.model.path, rc.delegate_plan)
    instance.bind(loaded.inputs, loaded.outputs)  # the preset's model fits its task


def _all_conf_files() -> list[str]:
    return sorted(p.relative_to(CONF_DIR).with_suffix("").as_posix() for p in CONF_DIR.rglob("*.yaml"))


@pytest.mark.parametrize("option", [f for f in _all_conf_files() if "/" in f and not f.startswith("hydra/")])
def test_every_conf_file_composes_and_validates(option):
    group, name = option.rsplit("/", 1)
    extra = ["task=coco"] if name in COCO_DATASETS | DETECTORS else []
    extra += ["quant=int8"] if group == "quant/calibration" else []  # only calibrated variants have one
    cfg = compose_config(
        [*extra, f"{group}={name}", f"paths.models_dir={MODELS}", f"paths.data_dir={ASSETS}"]
    )
    if group == "delegate" and name in HOST_UNAVAILABLE:
        return  # covered by test_each_delegate_config_validates_or_names_whats_missing
    if option == "runner/adb":  # needs the user's benchmark_model binary
        with pytest.raises(ConfigError, match="runner.benchmark_binary"):
            validate(cfg)
        return
    if option == "model/file":
        with pytest.raises(ConfigError, match="model.path"):  # the file preset's one mandatory value
            validate(cfg)
        return
    if name in ("imagefolder", "yolo"):
        with pytest.raises(ConfigError, match="root"):  # the presets with a mandatory value (???)
            validate(cfg)
        return
    if group == "model" and not Path(cfg.model.path).is_file():  # a preset for the user's own export
        with pytest.raises(ConfigError, match=r"model.path=.*: cannot read the model file \(no such file"):
            validate(cfg)
        return
    rc = validate(cfg)
    if group == "model/preprocess":
        assert rc.model.preprocess.resize in ("tflite_bilinear", "pil_bilinear", "pil_bicubic")
    if group == "dataset" and Path(rc.dataset.root).is_dir():
        rc.live_task()  # lists samples, reads labels


def test_hydra_group_sets_run_dirs():
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", return_hydra_config=True)
    hydra = OmegaConf.to_container(cfg.hydra, resolve=False)
    assert hydra["run"]["dir"].startswith("outputs/${task.name}/${model.name}/${delegate.name}/")
    # a quantized variant's job directory says so (quant_tag: "_int8", nothing for the float model)
    # ... and the other swept values (swept_tag: "_num_threads-2", nothing when the sweep names no other)
    subdir = "${hydra.job.num}_${task.name}_${model.name}${quant_tag:${quant.name}}_${delegate.name}"
    subdir += "${swept_tag:${hydra.overrides.task},${model.name}}"
    assert hydra["sweep"]["subdir"] == subdir
    assert hydra["job"]["chdir"] is False


def test_parse_external_options():
    assert parse_options("a:1; b : two ;") == {"a": "1", "b": "two"}
    with pytest.raises(ConfigError, match="external_delegate_options: 'novalue' is not 'key:value'"):
        parse_options("novalue")


def test_unavailable_error_type():
    with pytest.raises(DelegateUnavailableError):
        validate(compose_config(["delegate=nnapi"]))
