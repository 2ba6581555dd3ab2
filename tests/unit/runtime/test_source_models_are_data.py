"""Source models are data (issue 53, class 3), generated over every place a format can run code,
name another file or hold JSON.

- ``.pt2``: hand-built archives (zip files written here, no torch needed) whose pickles call a
  callable (every way a pickle can name one: GLOBAL, STACK_GLOBAL direct and through the memo, INST,
  OBJ, EXT1/2/4, PERSID), at every place torch unpickles (a ``.pkl``/``.pt``/``.pth`` part, a part
  of any name starting with a pickle header, ``data.pkl`` inside a nested ``torch.save`` zip), are
  refused by ``load_program`` before torch is imported; what ``torch.save`` writes for tensors, a
  state dict and plain data passes. The archive itself: duplicate names, nesting, JSON too deep.
- ONNX: a tensor naming an external file at every place a tensor can sit (initializer, sparse
  initializer values and indices, Constant ``value`` and ``sparse_value``, a TENSORS attribute,
  If/Loop subgraphs two deep, a local function, a training graph; ``data_location`` or only an
  ``external_data`` entry) × what it names (a file in the model's folder, ``../``, an absolute path)
  is refused before ONNX Runtime opens it.
- JSON inside a model (ONNX ``labels``/``classes``/``names``/``imgsz``, a ``.tflite``'s Ultralytics
  metadata): deep nesting, huge numbers, values of the wrong shape: one ConfigError naming the model.

With torch installed (the ``torch`` extra), the cases at the end load a real ``torch.export.save``
archive and check that a malicious one never runs; without torch they skip, saying so.
"""

from __future__ import annotations

import importlib.util
import io
import os
import pickle
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from evalharness.core.errors import ConfigError
from evalharness.runtime.pt2_archive import check_pt2_archive
from evalharness.runtime.torch_backend import load_program

HAS_TORCH = importlib.util.find_spec("torch") is not None


# --- .pt2: pickles written opcode by opcode (what torch.save and an attacker write) --------------


def _unicode(text: str) -> bytes:
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


CALL = b"(" + _unicode("touch /tmp/pwned") + b"tR"  # MARK, the argument, TUPLE, REDUCE
EVIL: dict[str, bytes] = {  # a pickle that runs os.system, by each way a pickle names a callable
    "GLOBAL": b"\x80\x02cos\nsystem\n" + CALL + b".",
    "GLOBAL protocol 0": b"cos\nsystem\n(S'touch /tmp/pwned'\ntR.",
    "GLOBAL builtins.eval": b"\x80\x02cbuiltins\neval\n" + CALL + b".",
    "GLOBAL of an allowed module": b"\x80\x02ctorch._utils\n_import_dotted_name\n" + CALL + b".",
    "STACK_GLOBAL": b"\x80\x04" + _unicode("os") + b"\x94" + _unicode("system") + b"\x94\x93" + CALL + b".",
    "STACK_GLOBAL through the memo": (
        b"\x80\x04"
        + _unicode("os")
        + b"q\x01"
        + _unicode("system")
        + b"q\x02"
        + b"0h\x01h\x02\x93"
        + CALL
        + b"."
    ),
    "STACK_GLOBAL of computed values": b"\x80\x04" + _unicode("os") + b"N\x93" + CALL + b".",
    "INST": b"(S'touch /tmp/pwned'\nios\nsystem\n.",
    "OBJ": b"\x80\x02(ccollections\nOrderedDict\no.",  # even of an allowed class
    "EXT1": b"\x80\x02\x82\x01)R.",
    "EXT2": b"\x80\x02\x83\x01\x00)R.",
    "EXT4": b"\x80\x02\x84\x01\x00\x00\x00)R.",
    "PERSID": b"Pstorage\n.",
    "a call before damaged bytes": b"\x80\x02cos\nsystem\n" + CALL + b"\xff\xff",
}


def _tensor_pickle(protocol_header: bytes = b"\x80\x02") -> bytes:
    """What torch.save writes for ``OrderedDict(w=tensor([4 floats]))``: the rebuilder, its typed
    storage named by a persistent id (BINPERSID), size and stride tuples, the hooks' OrderedDict."""
    od = b"ccollections\nOrderedDict\n)R"
    storage = (
        b"(" + _unicode("storage") + b"ctorch\nFloatStorage\n" + _unicode("0") + _unicode("cpu") + b"K\x04tQ"
    )
    tensor = b"ctorch._utils\n_rebuild_tensor_v2\n(" + storage + b"K\x00K\x04\x85K\x01\x85\x89" + od + b"tR"
    return (
        protocol_header
        + od
        + b"q\x00("
        + _unicode("w")
        + tensor
        + b"u"
        + b"}("
        + _unicode("version")
        + b"K\x01ub."
    )


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buf.getvalue()


def _torch_save(pickled: bytes) -> bytes:
    """A torch.save file: a zip of ``archive/data.pkl`` and the storages' raw bytes."""
    return _zip({"archive/data.pkl": pickled, "archive/data/0": np.arange(4, dtype=np.float32).tobytes(),
                 "archive/version": b"3\n"})  # fmt: skip


MODEL_JSON = b'{"graph_module": {"graph": {"nodes": []}}, "schema_version": {"major": 8}}'


def _archive(part: str, pickled: bytes) -> bytes:
    """A .pt2 of the current layout (models/*.json, raw weights) with ``pickled`` at ``part``."""
    members = {
        "archive/archive_format": b"pt2",
        "archive/models/model.json": MODEL_JSON,
        "archive/data/weights/weight_0": np.arange(4, dtype=np.float32).tobytes(),
        "archive/data/weights/model_weights_config.json": b'{"config": {}}',
    }
    if part == "a nested torch.save zip":
        members["archive/data/sample_inputs/model.pt"] = _torch_save(pickled)
    elif part == "a part its weights config marks use_pickle":  # torch.load(weights_only=False) of it
        members["archive/data/weights/weight_1"] = pickled
        config = b'{"config": {"fc.weight": {"path_name": "weight_1", "is_param": true, "use_pickle": true}}}'
        members["archive/data/weights/model_weights_config.json"] = config
    else:
        members[part] = pickled
    return _zip(members)


PARTS = (
    "archive/data/weights/model.pkl",
    "serialized_state_dict.pt",  # the layout before torch 2.6
    "archive/data/constants/constants.pth",
    "archive/data/weights/weight_1",  # no suffix: told by its pickle header
    "a part its weights config marks use_pickle",  # no suffix; a protocol 0 pickle has no header
    "a nested torch.save zip",
)


def _write(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "m.pt2"
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("part", PARTS)
@pytest.mark.parametrize("kind", list(EVIL))
def test_a_pickle_that_calls_code_is_refused_before_torch_sees_it(tmp_path, kind, part):
    evil = EVIL[kind]
    if part == "archive/data/weights/weight_1" and not evil.startswith(b"\x80"):
        evil = (
            b"\x80\x02" + evil
        )  # told by its header: a protocol 0 pickle under a raw name is no pickle torch reads
    path = _write(tmp_path, _archive(part, evil))
    with pytest.raises(ConfigError) as exc:
        load_program(path)  # refused whether or not torch is installed: the check comes first
    message = str(exc.value)
    assert message.startswith(f"model.path={path}: its part ") and "code, not data" in message, message
    assert "\n" not in message and "torch.export.save" in message


@pytest.mark.parametrize("part", PARTS)
@pytest.mark.parametrize("header", [b"\x80\x02", b"\x80\x04"])
def test_what_torch_save_writes_for_tensors_passes(part, header):
    check_pt2_archive(_archive(part, _tensor_pickle(header)), "model.path=m.pt2", 1 << 30)


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_plain_data_passes_at_every_protocol(protocol):
    value = {
        "a": [1, 2.5, "x", b"y", (1, None, True)],
        "s": {1, 2},
        "f": frozenset([3]),
        "b": bytearray(b"z"),
    }
    check_pt2_archive(_archive(PARTS[0], pickle.dumps(value, protocol=protocol)), "m", 1 << 30)


ARCHIVES: dict[str, tuple[Callable[[], bytes], str]] = {
    "not a zip": (lambda: b"\x00\x01 not a zip", "not a .pt2 archive"),
    "two parts of one name": (lambda: _duplicate(), "two parts named"),
    "a zip in a zip in a zip": (
        lambda: _zip(
            {"archive/data/sample_inputs/model.pt": _zip({"inner.pt": _torch_save(_tensor_pickle())})}
        ),
        "nests zip files deeper",
    ),
    "JSON nested 10,000 deep": (
        lambda: _zip({"archive/models/model.json": b"[" * 10_000 + b"]" * 10_000}),
        "nests deeper than 64 levels",
    ),
    "a JSON number of 5,000 digits": (
        lambda: _zip({"archive/models/model.json": b'{"n": ' + b"9" * 5000 + b"}"}),
        "a number of over 100 characters",
    ),
}


def _duplicate() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive, pytest.warns(UserWarning, match="Duplicate name"):
        archive.writestr("archive/data/weights/weight_0", b"\x00" * 16)
        archive.writestr("archive/data/weights/weight_0", _tensor_pickle())
    return buf.getvalue()


@pytest.mark.parametrize("kind", list(ARCHIVES))
def test_an_archive_that_is_no_exported_program_is_one_error(tmp_path, kind):
    make, said = ARCHIVES[kind]
    path = _write(tmp_path, make())
    with pytest.raises(ConfigError, match=said) as exc:
        load_program(path)
    assert str(exc.value).startswith(f"model.path={path}") and "\n" not in str(exc.value)


def test_parts_declaring_more_than_a_model_may_have_are_refused():
    with pytest.raises(ConfigError, match="declare more bytes than a model may have"):
        check_pt2_archive(_archive(PARTS[0], _tensor_pickle()), "m", 64)


# --- ONNX: every place a tensor can name a file ---------------------------------------------------

onnx = pytest.importorskip("onnx", reason="the onnx extra is not installed (pip install 'evalharness[onnx]')")
from onnx import TensorProto, helper  # noqa: E402

from evalharness.runtime.onnx_backend import read_onnx, read_onnx_file  # noqa: E402


def _external(name: str, location: str, data_location: bool = True) -> TensorProto:
    t = TensorProto(name=name, data_type=TensorProto.UINT8, dims=[16])
    if data_location:
        t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "16")):
        t.external_data.add(key=key, value=value)
    return t


def _sparse(location: str, part: str) -> onnx.SparseTensorProto:
    values = helper.make_tensor("sv", TensorProto.FLOAT, [1], [1.0])
    indices = helper.make_tensor("si", TensorProto.INT64, [1], [0])
    if part == "values":
        values = _external("sv", location)
    else:
        indices = _external("si", location)
    return helper.make_sparse_tensor(values, indices, [4])


def _graph(nodes, inits=(), sparse=(), name="g"):
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    identity = helper.make_node("Identity", ["x"], ["y"])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    return helper.make_graph(
        [identity, *nodes], name, [x], [out], list(inits), sparse_initializer=list(sparse)
    )


def _constant(location: str, **kw) -> onnx.NodeProto:
    return helper.make_node("Constant", [], ["c"], name="c", value=_external("c", location, **kw))


def _if(branch: onnx.GraphProto) -> onnx.NodeProto:
    return helper.make_node("If", ["cond"], ["o"], then_branch=branch, else_branch=_graph([], name="e"))


def _model(graph, functions=(), training=None) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], functions=list(functions))
    if training is not None:
        model.training_info.add().initialization.CopyFrom(training)
    model.ir_version = 8
    return model


PLACES: dict[str, Callable[[str], onnx.ModelProto]] = {
    "initializer": lambda loc: _model(_graph([], inits=[_external("w", loc)])),
    "sparse initializer values": lambda loc: _model(_graph([], sparse=[_sparse(loc, "values")])),
    "sparse initializer indices": lambda loc: _model(_graph([], sparse=[_sparse(loc, "indices")])),
    "Constant value": lambda loc: _model(_graph([_constant(loc)])),
    "Constant value, external_data only": lambda loc: _model(_graph([_constant(loc, data_location=False)])),
    "Constant sparse_value": lambda loc: _model(
        _graph([helper.make_node("Constant", [], ["c"], sparse_value=_sparse(loc, "values"))])
    ),
    "a TENSORS attribute": lambda loc: _model(
        _graph([helper.make_node("Custom", [], ["c"], domain="x", tensors=[_external("t", loc)])])
    ),
    "If subgraph Constant": lambda loc: _model(_graph([_if(_graph([_constant(loc)], name="t"))])),
    "If subgraph initializer": lambda loc: _model(
        _graph([_if(_graph([], inits=[_external("w", loc)], name="t"))])
    ),
    "Loop body, If inside, two deep": lambda loc: _model(
        _graph(
            [
                helper.make_node(
                    "Loop",
                    ["n", "cond"],
                    ["o"],
                    body=_graph([_if(_graph([_constant(loc)], name="t"))], name="b"),
                )
            ]
        )
    ),
    "local function body": lambda loc: _model(
        _graph([helper.make_node("F", ["x"], ["z"], domain="local")]),
        functions=[
            helper.make_function("local", "F", ["x"], ["z"], [_constant(loc)], [helper.make_opsetid("", 17)])
        ],
    ),  # fmt: skip
    "training initialization graph": lambda loc: _model(
        _graph([]), training=_graph([], inits=[_external("w", loc)], name="init")
    ),
}
NAMED = ("secret.bin", "../secret.bin", "/etc/hostname")


@pytest.mark.parametrize("named", NAMED)
@pytest.mark.parametrize("place", list(PLACES))
def test_a_tensor_naming_a_file_is_refused_wherever_it_sits(tmp_path, place, named):
    (tmp_path / "secret.bin").write_bytes(b"SECRET-DATA-1234")
    folder = tmp_path / "model"
    folder.mkdir()
    path = folder / "m.onnx"
    path.write_bytes(PLACES[place](named).SerializeToString())
    with pytest.raises(ConfigError) as exc:
        read_onnx(str(path))  # what the backend, inspect and the settings inference all read first
    message = str(exc.value)
    assert message.startswith(f"model.path={path}: names external data files (1 tensors, e.g. "), message
    assert f"names {named!r}" in message and "save_as_external_data=False" in message


def test_the_backend_refuses_before_onnx_runtime_reads_the_file(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    from evalharness.runtime import load_model, plan_delegate

    (tmp_path / "secret.bin").write_bytes(b"SECRET-DATA-1234")
    path = tmp_path / "m.onnx"
    path.write_bytes(PLACES["Constant value"]("secret.bin").SerializeToString())
    monkeypatch.chdir(tmp_path)  # where ONNX Runtime looks for a file named by a model given as bytes
    with pytest.raises(ConfigError, match="names external data files"):
        load_model(str(path), plan_delegate({"name": "cpu"}))


# --- JSON and literals inside a model -------------------------------------------------------------

DEEP_LIST, DEEP_DICT = "[" * 5000 + "]" * 5000, '{"a": ' * 5000 + "1" + "}" * 5000
LONG_NUMBER, DEEP_PARENS = "[" + "9" * 5000 + "]", "(" * 5000 + ")" * 5000
LABEL_TEXT = {"nested 5,000 deep (list)": DEEP_LIST, "nested 5,000 deep (dict)": DEEP_DICT,
              "a number of 5,000 digits": LONG_NUMBER}  # fmt: skip
ULTRALYTICS = {
    **{f"names {k}": {"names": v} for k, v in LABEL_TEXT.items()},
    "names nested in parentheses 5,000 deep": {"names": DEEP_PARENS},
    "names keyed by text": {"names": "{'a': 'cat'}"},
    "imgsz of text": {"names": "{0: 'cat'}", "imgsz": "['x', 640]"},
    "imgsz ragged": {"names": "{0: 'cat'}", "imgsz": "[[640], 640]"},
    "imgsz infinite": {"names": "{0: 'cat'}", "imgsz": "[1e999, 640]"},
}


def _props_model(path: Path, props: dict[str, str]) -> str:
    model = _model(_graph([]))
    for key, value in props.items():
        model.metadata_props.add(key=key, value=value)
    path.write_bytes(model.SerializeToString())
    return str(path)


CASES = {
    **{f"{key} {k}": {key: v} for key in ("labels", "classes") for k, v in LABEL_TEXT.items()},
    **ULTRALYTICS,
}


@pytest.mark.parametrize("case", list(CASES))
def test_json_inside_an_onnx_model_is_read_within_the_limits(tmp_path, case):
    path = _props_model(tmp_path / "m.onnx", CASES[case])
    with pytest.raises(ConfigError) as exc:
        read_onnx_file(path)
    assert str(exc.value).startswith(f"model.path={path}: metadata_props") and "\n" not in str(exc.value)


@pytest.mark.parametrize("case", list(ULTRALYTICS))
def test_a_tflite_s_ultralytics_metadata_is_read_within_the_limits(tmp_path, case):
    from evalharness.runtime import model_file
    from evalharness.runtime.modelgen import append_files, constant_output_model

    meta = ULTRALYTICS[case]
    text = f"{{'names': {meta['names']}, 'imgsz': {meta.get('imgsz', '[640, 640]')}}}"
    path = constant_output_model(str(tmp_path / "m.tflite"), [np.zeros((1, 6, 5), np.float32)])
    append_files(path, {"temp_meta.txt": text})
    with pytest.raises(ConfigError) as exc:
        model_file.read_model_file(path)
    assert str(exc.value).startswith(f"model.path={path}: its Ultralytics metadata"), str(exc.value)


# --- with torch installed (the torch extra): a real archive, and a malicious one never run ---------

needs_torch = pytest.mark.skipif(
    not HAS_TORCH,
    reason="torch is not installed: the torch extra's environment runs these (pip install "
    "'evalharness[torch]'); the archive check above runs without it",
)


@needs_torch
def test_a_real_exported_program_passes_the_check_and_loads(tmp_path):
    import torch

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(x)

    path = tmp_path / "m.pt2"
    torch.export.save(torch.export.export(Tiny(), (torch.zeros(1, 4),)), str(path))
    check_pt2_archive(path.read_bytes(), str(path), 1 << 30)
    assert load_program(str(path)) is not None


@needs_torch
@pytest.mark.parametrize("part", PARTS)
def test_a_malicious_archive_never_runs_with_torch_installed(tmp_path, part):
    marker = tmp_path / "ran"
    evil = b"\x80\x02cos\nsystem\n(" + _unicode(f"touch {marker}") + b"tR."
    path = _write(tmp_path, _archive(part, evil))
    with pytest.raises(ConfigError, match="code, not data"):
        load_program(path)
    assert not os.path.exists(marker)
