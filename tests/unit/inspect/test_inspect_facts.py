"""inspect on files it has never seen (issue 43): a YOLO export's 80 Ultralytics names are its labels
(not "1 from temp_meta.txt"), a classifier shows no detector settings (no class_map: coco91), and
what the runtimes print while delegates are prepared (OpenVINO's compile progress bars) stays off
the terminal."""

from __future__ import annotations

import os
import sys

import numpy as np

from evalharness.inspect.facts import inferred_configuration, runtime_output_kept
from evalharness.runtime.model_file import read_model_file
from evalharness.runtime.modelgen import append_files, constant_output_model

NAMES = {i: f"class{i}" for i in range(80)}


def test_a_yolo_files_labels_are_its_ultralytics_names(tmp_path):
    path = constant_output_model(str(tmp_path / "yolo.tflite"), [np.zeros((1, 84, 5), np.float32)])
    meta = str({"task": "detect", "imgsz": [32, 32], "stride": 32, "names": NAMES})
    info = read_model_file(append_files(path, {"temp_meta.txt": meta}))
    assert info.summary()["labels"] == {"count": 80, "source": "temp_meta.txt (Ultralytics names)"}


def test_a_classifier_shows_no_detector_settings(tmp_path):
    path = constant_output_model(str(tmp_path / "cls.tflite"), [np.zeros((1, 10), np.float32)])
    inferred = inferred_configuration(path, read_model_file(path))
    assert inferred["kind"] == "classifier"
    assert "class_map" not in inferred["settings"] and "decoder" not in inferred["settings"]


def test_runtime_output_is_kept_off_the_terminal(capfd, monkeypatch):
    monkeypatch.delenv("EVALHARNESS_VERBOSE", raising=False)
    with runtime_output_kept():
        print("compiling [#####     ] 50%", file=sys.stderr)  # a Python-level progress bar
        print("to stdout")
        os.write(2, b"INFO: native line\n")
        os.write(1, b"native on fd 1\n")
    print("the report")
    out, err = capfd.readouterr()
    assert (out, err) == ("the report\n", "")
