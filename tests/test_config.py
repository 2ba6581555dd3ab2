"""Every file in conf/ composes, validates and instantiates (or fails with its documented error)."""

from __future__ import annotations

import pytest
from conftest import MODELS, compose_config

from evalharness.config import validate
from evalharness.errors import DelegateUnavailableError
from evalharness.paths import CONF_DIR
from evalharness.runtime import load_model
from evalharness.runtime.delegates import DELEGATES, parse_options
from evalharness.tasks import load_tasks

HOST_UNAVAILABLE = {"gpu", "nnapi", "hexagon", "coreml", "npu", "edgetpu", "external"}


def _options(group: str) -> list[str]:
    return sorted(
        p.relative_to(CONF_DIR / group).with_suffix("").as_posix() for p in (CONF_DIR / group).rglob("*.yaml")
    )


def test_every_group_option_has_a_file_and_vice_versa():
    assert _options("delegate") == DELEGATES.names()
    assert set(_options("task")) <= set(load_tasks().names())


@pytest.mark.parametrize("delegate", _options("delegate"))
def test_each_delegate_config_validates_or_names_whats_missing(delegate):
    cfg = compose_config([f"delegate={delegate}"])
    if delegate in HOST_UNAVAILABLE:
        with pytest.raises(Exception) as info:
            validate(cfg)
        assert info.type.__name__ in ("DelegateUnavailableError", "ConfigError")
        assert len(str(info.value).splitlines()) == 1
    else:
        rc = validate(cfg)
        assert rc.plan.name == delegate
        assert load_model(rc.model["path"], rc.plan).coverage["ops_total"] == 31


@pytest.mark.parametrize("model", [m for m in _options("model") if "/" not in m])
def test_each_model_preset_composes_and_its_task_instantiates(model):
    cfg = compose_config([f"model={model}", f"paths.models_dir={MODELS}"])
    rc = validate(cfg)
    assert rc.model["name"] == model
    assert rc.model["path"].endswith(".tflite")
    task = load_tasks().get(rc.task["name"])(rc.task, rc.model, rc.dataset)
    loaded = load_model(rc.model["path"], rc.plan)
    task.bind(loaded.inputs, loaded.outputs)  # every preset fits the imagenet task


@pytest.mark.parametrize(
    "option",
    [
        "paths/default",
        "runtime/litert",
        "runtime/tensorflow",
        "dataset/sample",
        "dataset/ilsvrc2012_val",
        "dataset/imagenet_val50",
        "dataset/imagefolder",
        "model/preprocess/tflite_tool",
        "model/preprocess/efficientnet",
        "model/preprocess/torchvision",
    ],
)
def test_remaining_files_compose(option):
    group, name = option.rsplit("/", 1)
    cfg = compose_config([f"{group}={name}"])
    assert cfg is not None
    assert _options(group.split("/")[0])  # the group directory really exists


def test_all_conf_files_are_covered():
    files = {p.relative_to(CONF_DIR).with_suffix("").as_posix() for p in CONF_DIR.rglob("*.yaml")}
    covered = {"config", "hydra/default", "task/imagenet"}
    covered |= {f"delegate/{d}" for d in _options("delegate")}
    covered |= {f"model/{m}" for m in _options("model")}
    covered |= {
        "paths/default",
        "runtime/litert",
        "runtime/tensorflow",
        "dataset/sample",
        "dataset/ilsvrc2012_val",
        "dataset/imagenet_val50",
        "dataset/imagefolder",
    }
    assert files <= covered, files - covered


def test_parse_external_options():
    assert parse_options("a:1; b : two ;") == {"a": "1", "b": "two"}
    with pytest.raises(Exception, match="not 'key:value'"):
        parse_options("novalue")


def test_unavailable_error_type():
    with pytest.raises(DelegateUnavailableError):
        validate(compose_config(["delegate=nnapi"]))
