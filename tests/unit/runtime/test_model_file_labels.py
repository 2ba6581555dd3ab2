"""Ultralytics' exports name temp_meta.txt (a dict of date, description, names) as their output's
label file: it is no label list, so the labels are the 80 names, never "1 label from temp_meta.txt"."""

from __future__ import annotations

import numpy as np

from evalharness.runtime import model_file
from evalharness.runtime.modelgen import append_files, constant_output_model

META = str({"date": "2025-01-01", "task": "detect", "names": {0: "person", 1: "bicycle"}})


def test_temp_meta_named_as_the_label_file_is_not_the_labels(tmp_path, monkeypatch):
    path = constant_output_model(str(tmp_path / "m.tflite"), [np.zeros((1, 6, 5), np.float32)])
    append_files(path, {"temp_meta.txt": META})

    def as_ultralytics_exports(raw, info):  # the TFLite metadata of a real export
        info.label_file = "temp_meta.txt"

    monkeypatch.setattr(model_file, "_metadata_buffer", lambda buf, model, name: b"meta")
    monkeypatch.setattr(model_file, "_read_tflite_metadata", as_ultralytics_exports)
    info = model_file.read_model_file(path)
    assert info.labels is None and info.label_file is None
    assert info.ultralytics["names"] == {0: "person", 1: "bicycle"}
