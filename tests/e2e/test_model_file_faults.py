"""Generated damage to a real ``.tflite`` file, driven through every entry point that reads a model:
``evalharness inspect``, ``model.path=`` alone, a preset whose file is damaged, a whole run, and
``explain``. Whatever the damage, the answer is exit 0 (the damage left a loadable model: a flipped
weight) or exit 2 with one ``error:`` line naming the file, never a traceback, an "internal error",
a hang or a crash of the process.

Mutations (seeded): truncation at each section boundary the flatbuffer has (root table, operator
codes, subgraphs, metadata, each buffer's data), at 8 bytes; each byte of the header flipped; bytes
flipped at random places; a wrong file identifier; a model with no subgraph.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys

import flatbuffers
import pytest
from ai_edge_litert import schema_py_generated as schema
from conftest import MODELS, compose_config, run_cli, run_inprocess

from evalharness.core.errors import EvalHarnessError, ModelMismatchError
from evalharness.inspect.facts import main as inspect_main
from evalharness.settings.validate import validate

SOURCE = MODELS / "mobilenet_v1_0.25_128_quant.tflite"
PRESET = "model=mobilenet_v1_0.25_128_quant"


def _boundaries(raw: bytes) -> list[int]:
    """Offsets where a section of the flatbuffer starts: where a cut hurts most (every table and
    vector of the Model table, and six of the buffers' data, from the first to the last)."""
    model = schema.Model.GetRootAsModel(raw, 0)
    tab = model._tab
    starts = {tab.Pos, model.Subgraphs(0)._tab.Pos}
    for slot in (6, 8, 10, 12, 14, 16):  # the Model table's fields, in schema order
        offset = tab.Offset(slot)
        if offset:
            starts.add(tab.Vector(offset))
    data = []
    for i in range(model.BuffersLength()):
        buffer = model.Buffers(i)._tab
        if buffer.Offset(4):
            data.append(buffer.Vector(buffer.Offset(4)))
    starts.update(sorted(data)[:: max(1, len(data) // 6)])
    return sorted(s for s in starts if 8 < s < len(raw))


def _no_subgraph(raw: bytes) -> bytes:
    model = schema.ModelT.InitFromPackedBuf(bytearray(raw), 0)
    model.subgraphs = []
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _flip(raw: bytes, at: int) -> bytes:
    damaged = bytearray(raw)
    damaged[at] ^= 0xFF
    return bytes(damaged)


def mutations(raw: bytes, seed: int = 31) -> dict[str, bytes]:
    rng = random.Random(seed)
    found = {f"cut_at_{p}": raw[:p] for p in _boundaries(raw)}
    found["cut_at_8"] = raw[:8]
    found.update({f"flip_header_{i}": _flip(raw, i) for i in range(8)})
    found.update({f"flip_{i}": _flip(raw, i) for i in sorted(rng.sample(range(8, len(raw)), 6))})
    found["identifier_TFL2"] = raw[:4] + b"TFL2" + raw[8:]
    found["no_subgraph"] = _no_subgraph(raw)
    return found


MUTATIONS = mutations(SOURCE.read_bytes()) if SOURCE.is_file() else {}
DAMAGED = [n for n in MUTATIONS if not n.startswith("flip_") or n.startswith("flip_header_")]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("mutants")
    out = {}
    for name, data in MUTATIONS.items():
        out[name] = folder / f"{name}.tflite"
        out[name].write_bytes(data)
    return out


def assert_one_error_line(err: str, path) -> None:
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and str(path) in lines[0], err
    assert "Traceback" not in err and "internal error" not in err, err


def test_the_generator_covers_every_class():
    assert len([n for n in MUTATIONS if n.startswith("cut_at_")]) >= 6
    assert {"identifier_TFL2", "no_subgraph", "flip_header_0", "cut_at_8"} <= set(MUTATIONS)


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_inspect(name, files, capsys):
    code = inspect_main([str(files[name]), "--delegate", "cpu"])
    err = capsys.readouterr().err
    assert code in (0, 2)
    if code == 2 or name in DAMAGED:
        assert code == 2
        assert_one_error_line(err, files[name])


@pytest.mark.parametrize("name", DAMAGED)
def test_model_path_alone_and_a_preset(name, files):
    """Validation refuses the file before a run directory exists, by key and file, both ways in."""
    for overrides in (["model=file", f"model.path={files[name]}"], [PRESET, f"model.path={files[name]}"]):
        with pytest.raises(EvalHarnessError) as exc:
            validate(compose_config(overrides))
        assert str(exc.value).startswith(f"model.path={files[name]}")


@pytest.mark.parametrize("name", ["cut_at_8", "flip_header_0", "no_subgraph"])
def test_a_whole_run(name, files, tmp_path):
    proc = run_cli([f"model.path={files[name]}", f"hydra.run.dir={tmp_path / 'run'}"], cwd=tmp_path)
    assert proc.returncode == 2
    assert_one_error_line(proc.stderr, files[name])
    assert not (tmp_path / "run" / "predictions.jsonl").exists()


def test_explain_of_runs_whose_model_was_damaged_since(tmp_path):
    model = tmp_path / "model.tflite"
    shutil.copy(SOURCE, model)
    for side in ("a", "b"):
        run_inprocess([f"model.path={model}", "task.num_images=2"], tmp_path / side)
    model.write_bytes(MUTATIONS["cut_at_8"])
    proc = subprocess.run(
        [sys.executable, "-m", "evalharness", "explain", str(tmp_path / "a"), str(tmp_path / "b")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert_one_error_line(proc.stderr, model)


def _dynamic_size_copy(folder) -> str:
    """The real model with its input's height and width left open, as a dynamic-size export has it
    (shape [1, 1, 1, 3], signature [1, -1, -1, 3])."""
    model = schema.ModelT.InitFromPackedBuf(bytearray(SOURCE.read_bytes()), 0)
    graph = model.subgraphs[0]
    tensor = graph.tensors[graph.inputs[0]]
    tensor.shape, tensor.shapeSignature = [1, 1, 1, 3], [1, -1, -1, 3]
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    path = folder / "dynamic.tflite"
    path.write_bytes(bytes(builder.Output()))
    return str(path)


def test_an_input_of_dynamic_size_is_refused_not_fed_placeholders(tmp_path):
    path = _dynamic_size_copy(tmp_path)
    for overrides in (["model=file", f"model.path={path}"], [PRESET, f"model.path={path}"]):
        with pytest.raises(ModelMismatchError, match=r"has a dynamic size \[1, -1, -1, 3\]"):
            validate(compose_config(overrides))


@pytest.mark.parametrize("dtype", ["bool", "complex64"])
def test_outputs_that_are_not_real_numbers_are_never_ranked(dtype):
    from evalharness.core.tensors import TensorInfo
    from evalharness.tasks.imagenet.live import classification_output

    with pytest.raises(ModelMismatchError, match=f"output 'scores' is {dtype}, not real numbers"):
        classification_output([TensorInfo("scores", 0, (1, 1001), dtype)], "m.tflite")


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_a_model_that_is_a_fifo_or_a_device_never_blocks(special, tmp_path, capsys):
    path = tmp_path / "model.tflite"
    if special == "fifo":
        os.mkfifo(path)
    else:
        path = special
    assert inspect_main([str(path)]) == 2
    assert_one_error_line(capsys.readouterr().err, path)
    with pytest.raises(EvalHarnessError, match="not a regular file"):
        validate(compose_config(["model=file", f"model.path={path}"]))
