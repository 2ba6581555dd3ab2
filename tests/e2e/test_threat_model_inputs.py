"""The threat model's other channels (docs/threat-model.md), generated as test_threat_model.py does:
a dataset's images, the model file, the environment's path variables and YAML config files, each
channel × its content classes, each case run as a user would run it and held to the one contract
(``assert_contract``: ends, exits 0/1/2, at most one ``error:`` line, no traceback, no raw ESC,
existing runs byte-identical) plus what its channel promises.

Images: with ``loop.strict=true`` a bad image stops the run (exit 1, partial metrics.json, the line
naming the file), with ``loop.strict=false`` it is skipped and counted; a non-file named like an
image is refused by name in both modes; a valid odd image (CMYK, 16-bit, palette with transparency,
1×1, animated) is decoded. Model files: exit 2, one line naming the file. Environment: a variable
pointing at something that is not the folder it should be fails by name, never a traceback. YAML:
never executed (a ``!!python/object`` tag leaves no marker file), bounded (an alias bomb or deep
nesting is refused, not expanded).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import cli_fork
import numpy as np
import pytest
from PIL import Image
from test_threat_model import ESCAPES, RUN, _digest, _place, assert_contract

from evalharness.core.paths import BUNDLED_DIR

SAMPLE = BUNDLED_DIR / "images"
MODEL = BUNDLED_DIR / "mobilenet_v1_0.25_128_quant.tflite"
REPORT = [sys.executable, "-m", "evalharness", "report"]
SPECIAL = ("fifo", "directory", "symlink_loop")


# --- image content classes ---------------------------------------------------------------------


def _encode(img: Image.Image, fmt: str, **save) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, **save)
    return buf.getvalue()


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _bomb() -> bytes:
    """A PNG declaring 30000×30000 RGB (900 Mpixel) in a few bytes: refused from its header."""
    ihdr = struct.pack(">IIBBBBB", 30000, 30000, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\0" * 30001, 9)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", ihdr)
        + _png_chunk(b"IDAT", idat)
        + _png_chunk(b"IEND", b"")
    )


def _half(path: Path) -> bytes:
    data = path.read_bytes()
    return data[: len(data) // 2]


def _noise(h=40, w=56, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def _palette_with_transparency() -> bytes:
    img = Image.fromarray(_noise()).convert("P", palette=Image.Palette.ADAPTIVE, colors=16)
    return _encode(img, "PNG", transparency=0)


def _animated_gif() -> bytes:
    frames = [Image.fromarray(_noise(seed=s)).convert("P") for s in range(3)]
    return _encode(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=50, loop=0)


# name -> bytes of the file put in place of parrot.jpg (None: a special file, see ``_place``)
BAD_IMAGES = {
    "truncated_jpeg": lambda: _half(SAMPLE / "parrot.jpg"),
    "truncated_png": lambda: _half(SAMPLE / "chelsea.png"),
    "empty": lambda: b"",
    "random_bytes": lambda: np.random.default_rng(1).bytes(4096),
    "decompression_bomb": _bomb,
    "fifo": None,
    "directory": None,
    "symlink_loop": None,
}
ODD_IMAGES = {
    "one_pixel": lambda: _encode(Image.new("RGB", (1, 1), (200, 30, 90)), "PNG"),
    "cmyk_jpeg": lambda: _encode(Image.fromarray(_noise()).convert("CMYK"), "JPEG"),
    "png_16bit": lambda: _encode(Image.fromarray(_noise()[..., 0].astype(np.uint16) * 257), "PNG"),
    "palette_transparency": _palette_with_transparency,
    "animated_gif": _animated_gif,
    "hostile_file_name": lambda: (SAMPLE / "parrot.jpg").read_bytes(),
}
# a file name with terminal escapes and markup ('/' is the one character a name cannot hold)
HOSTILE_NAME = ESCAPES.replace("/", "_") + ".jpg"


def _image_dataset(tmp_path: Path, kind: str) -> tuple[Path, str]:
    """A copy of the bundled sample with parrot.jpg replaced by the hostile image: (root, its name)."""
    root = tmp_path / "images"
    shutil.copytree(SAMPLE, root)
    name = HOSTILE_NAME if kind == "hostile_file_name" else "parrot.jpg"
    (root / "parrot.jpg").unlink()
    make = {**BAD_IMAGES, **ODD_IMAGES}[kind]
    _place(root / name, make() if make else None, kind)
    rows = (BUNDLED_DIR / "labels.csv").read_text().replace("parrot.jpg", name.replace('"', '""'))
    (tmp_path / "labels.csv").write_text(rows)
    return root, name


IMAGE_CASES = [(kind, strict) for kind in {**BAD_IMAGES, **ODD_IMAGES} for strict in (True, False)]


@pytest.mark.parametrize(("kind", "strict"), IMAGE_CASES, ids=[f"{k}-strict={s}" for k, s in IMAGE_CASES])
def test_an_image_keeps_the_contract(kind, strict, tmp_path):
    root, name = _image_dataset(tmp_path, kind)
    out = tmp_path / "run"
    proc = _run(
        [*RUN, f"dataset.root={root}", f"dataset.ground_truth={tmp_path / 'labels.csv'}",
         f"loop.strict={str(strict).lower()}", f"hydra.run.dir={out}"],
        tmp_path,
    )  # fmt: skip
    stdout, stderr = assert_contract(proc, nonsense=kind in BAD_IMAGES and (strict or kind in SPECIAL))
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    if kind in ODD_IMAGES:  # decoded by the reference rules, all five images scored
        assert proc.returncode == 0, stderr[-1500:]
        assert json.loads((out / "metrics.json").read_text())["metrics"]["num_scored"] == 5
    elif kind in SPECIAL:  # a folder defect: refused by name whatever loop.strict says
        assert len(errors) == 1 and name in errors[0], stderr[-1500:]
    elif strict:  # stops the run: exit 1, partial metrics, the one line naming the file
        assert proc.returncode == 1 and len(errors) == 1 and name in errors[0], stderr[-1500:]
        assert json.loads((out / "metrics.json").read_text())["status"] == "partial"
    else:  # skipped and counted
        assert proc.returncode == 0, stderr[-1500:]
        metrics = json.loads((out / "metrics.json").read_text())["metrics"]
        assert (metrics["num_skipped"], metrics["num_scored"]) == (1, 4)


# --- model files -------------------------------------------------------------------------------


def _with_identifier(ident: bytes) -> bytes:
    buf = bytearray(MODEL.read_bytes())
    buf[4:8] = ident
    return bytes(buf)


def _huge_buffer_sizes() -> bytes:
    """The bundled model with every buffer's data vector declaring 2**31-1 bytes."""
    from ai_edge_litert import schema_py_generated as schema

    buf = bytearray(MODEL.read_bytes())
    model = schema.Model.GetRootAsModel(bytes(buf), 0)
    for i in range(model.BuffersLength()):
        tab = model.Buffers(i)._tab
        if field := tab.Offset(4):
            start = tab.Vector(field)
            buf[start - 4 : start] = struct.pack("<I", 0x7FFFFFFF)
    return bytes(buf)


MODELS = {
    "empty": lambda: b"",
    "truncated": lambda: _half(MODEL),
    "random_bytes": lambda: np.random.default_rng(2).bytes(65536),
    "wrong_identifier": lambda: _with_identifier(b"XXXX"),
    "huge_buffer_sizes": _huge_buffer_sizes,
    "fifo": None,
    "directory": None,
    "symlink_loop": None,
}


@pytest.mark.parametrize("kind", list(MODELS))
def test_a_model_file_keeps_the_contract(kind, tmp_path):
    hostile = tmp_path / "hostile.tflite"
    _place(hostile, MODELS[kind]() if MODELS[kind] else None, kind)
    proc = _run([*RUN, f"model.path={hostile}", f"hydra.run.dir={tmp_path / 'run'}"], tmp_path)
    _, stderr = assert_contract(proc, nonsense=True)
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and len(errors) == 1 and str(hostile) in errors[0], stderr[-1500:]


# --- environment -------------------------------------------------------------------------------

# variable -> the command that reads it
ENV = {
    "EVALHARNESS_MODELS": ["model=mobilenet_v2_1.0_224_quant"],
    "EVALHARNESS_DATA": ["dataset=imagenet_val50", "task.num_images=2"],
    "EVALHARNESS_CACHE": ["loop.tensor_cache=true"],
}
ENV_CLASSES = ("fifo", "regular_file", "under_a_file", "nonexistent", "terminal_escapes")


def _env_value(tmp_path: Path, kind: str) -> Path:
    if kind == "fifo":
        os.mkfifo(tmp_path / "fifo")
        return tmp_path / "fifo"
    (tmp_path / "file").write_text("not a folder\n")
    return {
        "regular_file": tmp_path / "file",
        "under_a_file": tmp_path / "file" / "x",  # unwritable whatever the user (root ignores modes)
        "nonexistent": tmp_path / "missing",
        "terminal_escapes": tmp_path / ESCAPES.replace("/", "_"),
    }[kind]


ENV_CASES = [(var, kind) for var in ENV for kind in ENV_CLASSES]


@pytest.mark.parametrize(("var", "kind"), ENV_CASES, ids=[f"{v}-{k}" for v, k in ENV_CASES])
def test_an_environment_variable_keeps_the_contract(var, kind, tmp_path):
    value = _env_value(tmp_path, kind)
    env = {**os.environ, var: str(value)}
    proc = _run([*RUN, *ENV[var], f"hydra.run.dir={tmp_path / 'run'}"], tmp_path, env=env)
    creatable = var == "EVALHARNESS_CACHE" and kind in ("nonexistent", "terminal_escapes")
    _, stderr = assert_contract(proc, nonsense=not creatable)  # a new cache folder is made
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == (0 if creatable else 2) and len(errors) == (not creatable), stderr[-1500:]
    if kind in ("fifo", "regular_file", "under_a_file"):  # cannot be a folder: the variable is named
        assert errors[0].startswith(f"error: {var}={value} "), stderr[-1500:]


# --- YAML config files -------------------------------------------------------------------------

MARKER = "executed_marker"
YAML = {
    "empty": b"",
    "binary": bytes(range(256)) * 8,
    "invalid_utf8": b"name: \xff\xfe\xfa\xc3\x28\n",
    "alias_bomb": (
        b'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
        + b"".join(
            f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]\n".encode()
            for p, n in zip("abcdefgh", "bcdefghi", strict=True)
        )
    ),
    "deep_nesting": b"name: " + b"[" * 100_000 + b"]" * 100_000 + b"\n",
    "python_object": f'name: !!python/object/apply:os.system ["touch {MARKER}"]\n'.encode(),
    "terminal_escapes": json.dumps({"name": ESCAPES, "root": ESCAPES}).encode(),
    "fifo": None,
    "directory": None,
    "symlink_loop": None,
}
YAML_NONSENSE = ("binary", "invalid_utf8", "alias_bomb", "deep_nesting", "python_object", *SPECIAL)


def _config_dir(tmp_path: Path, kind: str, name: str = "dataset/hostile.yaml") -> Path:
    """A config folder whose file ``name`` is the hostile file."""
    (tmp_path / "confs" / name).parent.mkdir(parents=True)
    _place(tmp_path / "confs" / name, YAML[kind], kind)
    return tmp_path / "confs"


def _sweep_dir(tmp_path: Path, kind: str, base: Path) -> Path:
    """A multirun folder holding a copy of a complete run whose ``.hydra/overrides.yaml`` is hostile."""
    shutil.copytree(base, tmp_path / "sweep" / "0", symlinks=True)
    _place(tmp_path / "sweep" / "0" / ".hydra" / "overrides.yaml", YAML[kind], kind)
    return tmp_path / "sweep"


def _searchpath(t: Path, k: str) -> str:
    return f"hydra.searchpath=[file://{_config_dir(t, k)}]"


# channel -> command given the test's folder, the content class and the base run
YAML_CHANNELS = {
    "--config-dir": lambda t, k, base: [
        *RUN, "--config-dir", str(_config_dir(t, k, "hostile.yaml")), "--config-name", "hostile",
        f"hydra.run.dir={t / 'run'}"
    ],
    "hydra.searchpath": lambda t, k, base: [
        *RUN, _searchpath(t, k), "dataset=hostile", f"hydra.run.dir={t / 'run'}"
    ],
    "run .hydra/overrides.yaml (report sweep)": lambda t, k, base: [
        *REPORT, "sweep", str(_sweep_dir(t, k, base))
    ],
}  # fmt: skip
YAML_CASES = [(channel, kind) for channel in YAML_CHANNELS for kind in YAML]


@pytest.mark.parametrize(("channel", "kind"), YAML_CASES, ids=[f"{c}-{k}" for c, k in YAML_CASES])
def test_a_yaml_file_keeps_the_contract(channel, kind, sample_run, tmp_path):
    before = _digest(sample_run)
    proc = _run(YAML_CHANNELS[channel](tmp_path, kind, sample_run), tmp_path)
    assert_contract(proc, nonsense=kind in YAML_NONSENSE)
    assert not (tmp_path / MARKER).exists(), "a YAML tag was executed"
    assert _digest(sample_run) == before, "a command changed an existing run's files"


def _run(command: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return cli_fork.run(command, capture_output=True, cwd=cwd, timeout=60, stdin=subprocess.DEVNULL, env=env)
