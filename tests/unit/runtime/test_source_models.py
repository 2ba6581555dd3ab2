"""Source models (ONNX, .pt2) behind the one model contract: picked by the file, refused in one line
where only a .tflite makes sense, and an ONNX model run for real (a tiny graph built here)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from evalharness.core.errors import ConfigError, EvalHarnessError
from evalharness.runtime import load_model, plan_delegate
from evalharness.runtime.source_formats import refuse_for_source, source_format

CPU = plan_delegate({"name": "cpu"})


def test_the_file_name_picks_the_format():
    assert source_format("m.onnx").backend == "onnxruntime"
    assert source_format("dir/M.ONNX").name == "ONNX"
    assert source_format("m.pt2").backend == "torch_export"
    assert source_format("m.tflite") is None


@pytest.mark.parametrize(
    "kwargs, key",
    [
        ({"plan": plan_delegate({"name": "xnnpack"})}, "delegate=xnnpack"),
        ({"reference": plan_delegate({"name": "reference"})}, "task.reference_delegate=reference"),
        ({"quant": "int8"}, "quant=int8"),
        ({"op_profile": True}, "loop.op_profile"),
        ({"runner": "adb"}, "runner=adb"),
        ({"runtime": "tensorflow"}, "runtime=tensorflow"),
    ],
)
def test_what_only_a_tflite_has_is_refused_by_key(kwargs, key):
    with pytest.raises(ConfigError) as exc:
        refuse_for_source("m.onnx", **{"plan": CPU, **kwargs})
    message = str(exc.value)
    assert message.startswith(key) and "\n" not in message and "ONNX" in message


def test_a_delegate_is_refused_saying_onnx_runs_on_the_cpu():
    with pytest.raises(ConfigError, match=r"delegate=xnnpack: .* ONNX runs on the CPU through ONNX Runtime"):
        refuse_for_source("m.onnx", plan_delegate({"name": "xnnpack"}))


def test_a_tflite_passes_untouched():
    assert refuse_for_source("m.tflite", plan_delegate({"name": "xnnpack"}), quant="int8") is None


def test_a_missing_runtime_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "onnxruntime" else real(n, *a)
    )
    with pytest.raises(EvalHarnessError, match=r"pip install 'evalharness\[onnx\]'"):
        refuse_for_source("m.onnx", CPU)


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed: no refusal")
def test_a_pt2_without_torch_is_one_line_naming_the_extra(tmp_path):
    path = tmp_path / "m.pt2"
    path.write_bytes(b"PK")
    for check in (lambda: refuse_for_source(str(path), CPU), lambda: load_model(str(path), CPU)):
        with pytest.raises(EvalHarnessError) as exc:
            check()
        assert str(exc.value) == (
            f"model.path={path} is a PyTorch exported program, run by PyTorch, which is not installed: "
            "pip install 'evalharness[torch]'"
        )


onnx = pytest.importorskip("onnx", reason="the onnx extra is not installed (pip install 'evalharness[onnx]')")
pytest.importorskip("onnxruntime", reason="the onnx extra is not installed (pip install 'evalharness[onnx]')")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

WEIGHTS = np.arange(48 * 5, dtype=np.float32).reshape(48, 5) / 100


def tiny_onnx(path, props=None, external=False):
    """NCHW [1,3,4,4] -> transpose to NHWC -> flatten -> MatMul [48, 5] -> [1, 5]."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1]),
        helper.make_node("Reshape", ["t", "shape"], ["f"]),
        helper.make_node("MatMul", ["f", "w"], ["y"]),
    ]
    inits = [
        numpy_helper.from_array(np.array([1, 48], np.int64), "shape"),
        numpy_helper.from_array(WEIGHTS, "w"),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    for key, value in (props or {}).items():
        model.metadata_props.add(key=key, value=value)
    if external:
        onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                  location="w.bin", size_threshold=0)  # fmt: skip
    else:
        onnx.save(model, str(path))
    return str(path)


def test_an_onnx_model_runs_behind_the_contract(tmp_path):
    model = load_model(tiny_onnx(tmp_path / "m.onnx"), CPU)
    assert [(t.name, t.shape, t.dtype) for t in model.inputs] == [("x", (1, 3, 4, 4), "float32")]
    assert [(t.name, t.shape, t.dtype) for t in model.outputs] == [("y", (1, 5), "float32")]
    x = np.random.default_rng(0).random((1, 3, 4, 4), dtype=np.float32)
    model.set_inputs([x])
    model.invoke()
    (y,) = model.get_outputs()
    np.testing.assert_allclose(y, x.transpose(0, 2, 3, 1).reshape(1, 48) @ WEIGHTS, rtol=1e-5)
    assert model.runtime_info()["name"] == "onnxruntime"
    assert model.coverage.as_dict()["ops_on_cpu_by_type"] == {"MatMul": 1, "Reshape": 1, "Transpose": 1}


def test_labels_come_from_metadata_props(tmp_path):
    from evalharness.runtime.onnx_backend import read_onnx_file

    listed = read_onnx_file(tiny_onnx(tmp_path / "a.onnx", {"labels": '["a", "b", "c", "d", "e"]'}))
    assert listed.labels == ["a", "b", "c", "d", "e"] and listed.label_file == "metadata_props['labels']"
    lines = read_onnx_file(tiny_onnx(tmp_path / "b.onnx", {"classes": "a\nb"}))
    assert lines.labels == ["a", "b"]
    ultra = read_onnx_file(
        tiny_onnx(tmp_path / "c.onnx", {"names": "{0: 'cat', 1: 'dog'}", "task": "detect"})
    )
    assert ultra.ultralytics["names"] == {0: "cat", 1: "dog"} and ultra.ultralytics["task"] == "detect"


def test_external_data_is_refused_not_opened(tmp_path):
    path = tiny_onnx(tmp_path / "m.onnx", external=True)
    with pytest.raises(ConfigError, match="names external data files .* save_as_external_data=False"):
        load_model(path, CPU)


def test_a_file_that_is_not_onnx_is_one_error(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(b"\x00not a protobuf at all\xff" * 10)
    with pytest.raises(ConfigError, match=r"model.path=.*m.onnx: not an ONNX model"):
        load_model(str(path), CPU)


def test_an_op_onnx_runtime_lacks_is_one_error(tmp_path):
    node = helper.make_node("NoSuchOp", ["x"], ["y"], domain="made.up")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("made.up", 1)]
    )
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "m.onnx"))
    with pytest.raises(EvalHarnessError) as exc:
        load_model(str(tmp_path / "m.onnx"), CPU)
    assert "cannot run this model" in str(exc.value) and "evalharness[onnx]" in str(exc.value)
    assert "\n" not in str(exc.value)


def test_tflite_readers_say_what_a_source_model_is(tmp_path):
    from evalharness.runtime.model_guard import read_model_bytes

    with pytest.raises(ConfigError, match=r"is an ONNX model: .* is a \.tflite feature"):
        read_model_bytes(tiny_onnx(tmp_path / "m.onnx"))
