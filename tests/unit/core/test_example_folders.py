"""A preset's file under paths.models_dir / paths.data_dir while that folder is missing or empty (a
fresh clone) is one line naming the file, the folder and where such files come from
(core/paths.check_example_folders); a folder with contents, or a file elsewhere, is left to its
reader's own message."""

from __future__ import annotations

import os

import pytest

from evalharness.core.errors import ConfigError
from evalharness.core.paths import EXAMPLE_SOURCES, check_example_folders

COCO = {"root": "data/coco/val5", "annotations": "data/coco/instances_val5.json", "format": "coco"}
IMAGENET = {"root": "data/imagenet/val50", "ground_truth": "data/imagenet/val.txt", "format": "val_txt"}
PATHS = {"models_dir": "models", "data_dir": "data"}


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("state", ["missing", "empty"])
def test_a_model_under_an_unset_models_dir_says_where_it_comes_from(state):
    if state == "empty":
        os.mkdir("models")
    with pytest.raises(ConfigError) as err:
        check_example_folders(PATHS, {"path": "models/mobilenet_v2_1.0_224_quant.tflite"}, {})
    message = str(err.value)
    assert message.startswith("model.path=models/mobilenet_v2_1.0_224_quant.tflite not found")
    assert f"paths.models_dir (models) is {state} here" in message and EXAMPLE_SOURCES in message
    assert "EVALHARNESS_MODELS" in message and "\n" not in message


@pytest.mark.parametrize(("dataset", "script"), [(COCO, "prepare_coco"), (IMAGENET, "prepare_imagenet")])
def test_a_dataset_under_an_unset_data_dir_names_its_prepare_script(dataset, script):
    expected = rf"^dataset\.root=data/.* paths\.data_dir \(data\) is missing.*datasets/{script}\.py"
    with pytest.raises(ConfigError, match=expected):
        check_example_folders(PATHS, {"path": "/elsewhere/model.tflite"}, dataset)


def test_a_folder_with_contents_or_a_file_elsewhere_is_left_to_its_reader(tmp_path):
    os.makedirs("models/other")  # the user's own folder: a missing file there is the reader's to name
    check_example_folders(PATHS, {"path": "models/mobilenet_v2_1.0_224_quant.tflite"}, {})
    check_example_folders(PATHS, {"path": "elsewhere.tflite"}, {"root": "my_images", "format": "csv"})
    (tmp_path / "data").write_text("not a folder")  # named by check_path_variables or the reader
    check_example_folders(PATHS, {}, IMAGENET)
    check_example_folders({"models_dir": "data/x"}, {"path": "data/x/m.tflite"}, {})  # under a file
    os.makedirs("present")
    check_example_folders({"models_dir": ".", "data_dir": "."}, {"path": "present"}, {"root": "???"})
