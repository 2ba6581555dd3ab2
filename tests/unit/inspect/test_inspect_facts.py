"""inspect on files it has never seen (issue 43): a YOLO export's 80 Ultralytics names are its labels
(not "1 from temp_meta.txt"), a classifier shows no detector settings (no class_map: coco91), and
what the runtimes print while delegates are prepared (OpenVINO's compile progress bars) stays off
the terminal."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

from evalharness.inspect.facts import inferred_configuration, main, runtime_output_kept, size_lines
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


def _size(n: int) -> dict:
    tensors = [
        {"op_index": i, "op": "CONV_2D", "shape": [i + 1, 1, 1, 4], "elements": 4 * (i + 1), "sparsity": 0.0,
         "unique": 3, "name": f"w{i}"}
        for i in range(n)
    ]  # fmt: skip
    weights = {"tensors": n, "elements": 0, "sparsity": 0.0, "unique_max": 3, "unique_median": 3.0}
    return {"bytes": 1000, "gzip_bytes": 900, "zstd_bytes": 800, "weights": weights, "tensors": tensors}


def test_the_default_view_lists_the_largest_weight_tensors_and_verbose_every_one():
    size = _size(8)
    lines = size_lines(size)
    assert lines[2] == "  the 5 largest (3 more: -v or --json):"
    assert [line.split()[-1] for line in lines[3:]] == ["w7", "w6", "w5", "w4", "w3"]  # largest first
    every = size_lines(size, every_tensor=True)
    assert len(every) == 2 + 8 and every[2].split()[-1] == "w0"  # op order, no "more" line
    assert size_lines(_size(5)) == size_lines(_size(5), every_tensor=True)  # few: all of them


def test_inspect_takes_verbose_and_json_keeps_every_tensor(capsys, monkeypatch):
    monkeypatch.delenv("EVALHARNESS_VERBOSE", raising=False)
    model = str(Path(__file__).resolve().parents[3] / "datasets/sample/mobilenet_v1_0.25_128_quant.tflite")
    assert main([model, "--delegate", "cpu"]) == 0
    text = capsys.readouterr().out
    assert "the 5 largest (23 more: -v or --json):" in text and text.count("\n  op ") == 5
    assert main([model, "--delegate", "cpu", "-v"]) == 0
    assert capsys.readouterr().out.count("\n  op ") == 28
    assert main([model, "--delegate", "cpu", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["size"]["tensors"]) == 28
