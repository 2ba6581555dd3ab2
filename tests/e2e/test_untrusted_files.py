"""Files are data, never code: a repro bundle that names another library, a runner or a damaged
file is one error line before anything is loaded; a FIFO given as model.labels beside a model that
carries its own labels is refused, not read forever. Tiny generated models (seconds)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import planted_models as planted
import pytest
from conftest import MODELS, run_cli, run_inprocess
from external_delegate.build import NoCompilerError, build_delegate, find_compiler

from evalharness.core.checksum import sha256_file
from evalharness.explain.__main__ import main

EVIL = r"""
#include <stdio.h>
__attribute__((constructor)) static void mark(void) {
    FILE *f = fopen(MARKER, "w");
    if (f) { fputs("loaded", f); fclose(f); }
}
"""


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """A real bundle: the planted perturbed-conv pair, CPU on both sides."""
    root = tmp_path_factory.mktemp("bundle")
    images = planted.images(root / "images", per_class=1)
    runs = []
    for name, defects in (("a", ()), ("b", (1,))):
        overrides = [
            f"model.path={planted.gated_model(root / f'{name}.tflite', defects=defects)}",
            f"model.labels={planted.labels(root / 'labels.txt')}",
            "dataset=imagefolder",
            f"dataset.root={images}",
            "task.top_k=3",
        ]
        run_inprocess(overrides, root / name)
        runs.append(str(root / name))
    folder = root / "bundle"
    assert main([*runs, "--out", str(root / "explain"), "--bundle", str(folder)]) == 0
    return folder


def _library(folder: Path, name: str, marker: Path) -> Path:
    """A shared library whose constructor writes ``marker``: proof that it was loaded."""
    compiler = find_compiler()
    if compiler is None:
        pytest.skip("no C compiler to build the marker library")
    source, out = folder / f"{name}.c", folder / f"lib{name}.so"
    source.write_text(EVIL)
    cmd = [compiler, "-shared", "-fPIC", f'-DMARKER="{marker}"', "-o", str(out), str(source)]
    subprocess.run(cmd, check=True, capture_output=True)
    return out


def _replay(folder: Path, capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["--replay", str(folder)])
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    assert len([line for line in err.splitlines() if line.startswith("error:")]) <= 1, err
    return code, err


def _edit(folder: Path, change) -> None:
    doc = json.loads((folder / "bundle.json").read_text())
    doc = change(doc)
    (folder / "bundle.json").write_text(json.dumps(doc))


def _external(doc: dict, library: Path, recorded: Path) -> dict:
    """Side B on the external delegate ``library``, the bundle recording ``recorded`` for it."""
    doc["sides"]["B"]["delegate"] = {"name": "external", "external_delegate_path": str(library)}
    doc["sides"]["B"]["libraries"] = [
        {"setting": "external_delegate_path", "path": str(recorded), "sha256": sha256_file(str(recorded))}
    ]
    return doc


def test_a_delegate_library_the_hashes_do_not_vouch_for_is_never_loaded(bundle, tmp_path, capsys):
    folder = tmp_path / "bundle"
    shutil.copytree(bundle, folder)
    marker = tmp_path / "loaded.txt"
    evil = _library(tmp_path, "evil", marker)
    honest = _library(tmp_path, "honest", tmp_path / "honest_loaded.txt")
    _edit(folder, lambda doc: _external(doc, evil, honest))
    code, err = _replay(folder, capsys)
    assert code == 2 and str(evil) in err, err
    assert sha256_file(str(evil)) in err and sha256_file(str(honest)) in err  # both hashes named
    assert not marker.exists()
    # the same library, vouched for by its own hash, is loaded (so the marker does show a load)
    _edit(folder, lambda doc: _external(doc, evil, evil))
    code, err = _replay(folder, capsys)
    assert code == 2 and marker.exists() and "not a TFLite external delegate" in err, err


def test_a_vouched_delegate_library_is_loaded_and_replayed(bundle, tmp_path, capsys):
    """The project's test delegate, recorded with its own hash, passes every check and runs (its
    builtin kernels without XNNPACK may round differently from B's recorded CPU: 0 or 1)."""
    folder = tmp_path / "bundle"
    shutil.copytree(bundle, folder)
    try:
        library = build_delegate(tmp_path / "delegate")
    except NoCompilerError as exc:
        pytest.skip(str(exc))
    _edit(folder, lambda doc: _external(doc, library, library))
    code, err = _replay(folder, capsys)
    assert code in (0, 1) and "error:" not in err, err


def test_a_replaced_library_on_the_recorded_path_is_refused(bundle, tmp_path, capsys):
    folder = tmp_path / "bundle"
    shutil.copytree(bundle, folder)
    marker = tmp_path / "loaded.txt"
    evil = _library(tmp_path, "evil", marker)
    _edit(folder, lambda doc: _external(doc, evil, evil))
    evil.write_bytes(_library(tmp_path, "other", marker).read_bytes())  # same path, other content
    code, err = _replay(folder, capsys)
    assert code == 2 and str(evil) in err and "sha256" in err and not marker.exists(), err


def _runner_adb(doc):
    doc["sides"]["B"]["runner"] = {"name": "adb", "adb": "/tmp/script.sh", "benchmark_binary": "/tmp/x"}
    return doc


def _model_edited(doc):
    doc["sides"]["A"]["model_sha256"] = "0" * 64
    return doc


def _runtime_edited(doc):
    doc["environment"]["litert_native_libraries"].append({"file": "ai_edge_litert/libevil.so", "sha256": "1"})
    return doc


def _without(key):
    def change(doc):
        del doc[key]
        return doc

    return change


DAMAGE = {
    "runner adb": (_runner_adb, "runner=adb"),
    "model edited": (_model_edited, "a.tflite"),
    "runtime edited": (_runtime_edited, "libevil.so"),
    "bundle.json a list": (lambda doc: [doc], "bundle.json"),
    "no sides": (_without("sides"), "'sides'"),
    "sides wrong type": (lambda doc: {**doc, "sides": ["A", "B"]}, "'sides'"),
    "images wrong type": (lambda doc: {**doc, "images": "red"}, "'images'"),
}


@pytest.mark.parametrize("case", DAMAGE)
def test_a_damaged_or_edited_bundle_json_is_one_error_line(bundle, tmp_path, capsys, case):
    folder = tmp_path / "bundle"
    shutil.copytree(bundle, folder)
    change, named = DAMAGE[case]
    _edit(folder, change)
    code, err = _replay(folder, capsys)
    assert code == 2 and named in err, err


@pytest.mark.parametrize("case", ["truncated", "missing array", "not a zip", "deep json"])
def test_damaged_tensors_or_nesting_is_one_error_line(bundle, tmp_path, capsys, case):
    folder = tmp_path / "bundle"
    shutil.copytree(bundle, folder)
    npz = folder / "tensors.npz"
    if case == "truncated":
        npz.write_bytes(npz.read_bytes()[: npz.stat().st_size // 2])
    elif case == "missing array":
        arrays = dict(np.load(npz))
        del arrays["B_img0_out0"]
        np.savez(npz, **arrays)
    elif case == "not a zip":
        npz.write_bytes(b"\x93NUMPY garbage")
    else:
        (folder / "bundle.json").write_text("[" * 100_000 + "]" * 100_000)
    code, err = _replay(folder, capsys)
    named = "bundle.json" if case == "deep json" else "tensors.npz"
    assert code == 2 and named in err, err
    if case == "missing array":
        assert "B_img0_out0" in err


def test_the_bundle_still_replays(bundle, capsys):
    code, _ = _replay(bundle, capsys)
    assert code == 0


def test_fifo_as_model_labels_beside_a_model_with_labels_is_refused(tmp_path):
    fifo = tmp_path / "labels.fifo"
    os.mkfifo(fifo)
    model = MODELS / "mobilenet_v1_0.25_128_quant.tflite"
    r = run_cli([f"model.path={model}", f"model.labels={fifo}", "task.num_images=1"], cwd=tmp_path)
    lines = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert r.returncode == 2 and len(lines) == 1 and str(fifo) in lines[0], r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
