"""A preprocessing key given on the command line replaces that key only; every other value keeps its
source (model file, preset), recorded per key in ``settings_source``."""

from __future__ import annotations

from omegaconf import OmegaConf

from evalharness.core.paths import CONF_DIR, bundled
from evalharness.settings.model_settings import infer_model_settings
from evalharness.settings.preprocess_sources import KEYS, PreprocessSources, chosen_whole

MODEL = bundled("mobilenet_v1_0.25_128_quant.tflite")  # NormalizationOptions: mean 127.5, std 127.5


def _file_model(**preprocess: object) -> dict:
    """The ``file`` preset's model group as Hydra composes it, with ``preprocess`` over tflite_tool."""
    preset = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "model" / "preprocess" / "tflite_tool.yaml"))
    assert isinstance(preset, dict)
    return {
        "name": "m",
        "path": MODEL,
        "labels": "auto",
        "preprocess": {**preset, "mean": [0.0] * 3, "std": [1.0] * 3, **preprocess},  # not the file's
        "decoder": None,
        "class_map": "coco91",
        "from_file": True,
    }


def test_one_key_on_the_command_line_keeps_the_files_mean_and_std():
    overrides = [f"model.path={MODEL}", "model.preprocess.integer_input=quantize"]
    model, sources = infer_model_settings(_file_model(integer_input="quantize"), overrides, None)
    assert model["preprocess"]["mean"] == [127.5] * 3 and model["preprocess"]["std"] == [127.5] * 3
    assert model["preprocess"]["integer_input"] == "quantize"
    assert sources["preprocess.integer_input"] == "command line"
    assert sources["preprocess.mean"] == sources["preprocess.std"] == "model file (NormalizationOptions)"
    assert sources["preprocess.crop"] == sources["preprocess.resize"] == "preset"
    assert set(sources) >= {f"preprocess.{k}" for k in KEYS}
    assert sources["preprocess"] == (
        "mean, std: model file (NormalizationOptions); integer_input: command line; the rest: preset"
    )


def test_a_mean_given_keeps_the_files_std_and_warns(caplog):
    overrides = [f"model.path={MODEL}", "model.preprocess.mean=[1.0,2.0,3.0]"]
    model, sources = infer_model_settings(_file_model(mean=[1.0, 2.0, 3.0]), overrides, None)
    assert model["preprocess"]["mean"] == [1.0, 2.0, 3.0] and model["preprocess"]["std"] == [127.5] * 3
    assert sources["preprocess.mean"] == "command line"
    assert sources["preprocess.std"] == "model file (NormalizationOptions)"
    assert "model.preprocess.mean from the command line ([1.0, 2.0, 3.0]) wins" in caplog.text


def test_a_preset_chosen_whole_replaces_every_key():
    overrides = [f"model.path={MODEL}", "model/preprocess=efficientnet"]
    assert chosen_whole(overrides) and not chosen_whole(["model.preprocess.mean=[1,1,1]"])
    model, sources = infer_model_settings(_file_model(), overrides, None)
    assert model["preprocess"]["mean"] == [0.0] * 3  # the chosen preset's, not the file's
    assert sources["preprocess"] == "command line"
    assert {sources[f"preprocess.{k}"] for k in KEYS} == {"command line"}


def test_a_preset_model_records_each_key():
    model, sources = infer_model_settings(
        {**_file_model(), "from_file": False}, ["model.preprocess.crop_fraction=0.9"], None
    )
    assert sources["preprocess.crop_fraction"] == "command line" and sources["preprocess.mean"] == "preset"
    assert sources["preprocess"] == "crop_fraction: command line; the rest: preset"
    sole = PreprocessSources(set(), whole=False)
    recorded: dict = {}
    sole.record(recorded)
    assert recorded["preprocess"] == "preset"
