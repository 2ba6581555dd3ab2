"""Generated from the threat model (docs/threat-model.md): every untrusted input channel × every
class of hostile content, each run as a user would run it, each held to the one contract.

The contract, whatever the input: the command ends (a FIFO never blocks it), exits 0, 1 or 2, prints
at most one ``error:`` line and never a traceback or "internal error", shows no raw control
character from a file on the terminal, and leaves the files of existing runs byte-identical. A
channel is a place the tool reads a file a user, a run directory or a bundle supplies; the content
classes are those that broke earlier releases (empty, binary, invalid UTF-8, NUL, deep nesting, huge
numbers, wrong JSON shape, terminal escapes, FIFO, directory, symlink loop). New channels go in
``CHANNELS``, new classes in ``TEXT`` / ``JSON``: the cases are their product, not a hand-made list.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import cli_fork
import pytest

ESCAPES = "\x1b[2J\x1b]0;pwned\x07\x1b[8mhidden\x1b[0m<script>alert(1)</script>"

# content classes: name -> bytes (None: made by ``_place`` as a special file)
TEXT = {
    "empty": b"",
    "binary": bytes(range(256)) * 8,
    "invalid_utf8": b"\xff\xfe\xfa\xc3\x28 chelsea.png,Egyptian cat\n",
    "nul_bytes": b"chelsea.png\x00,Egyptian cat\n" * 3,
    "terminal_escapes": (
        "filename,label\n" + "".join(f"{n},{ESCAPES}\n" for n in ("a.png", "b.png"))
    ).encode(),
    "fifo": None,
    "directory": None,
    "symlink_loop": None,
}
JSON = {
    "empty": b"",
    "binary": bytes(range(256)) * 8,
    "deep_nesting": b"[" * 100_000 + b"]" * 100_000,
    "huge_integer": b'{"images": [{"id": ' + b"9" * 5000 + b"}]}",
    "wrong_shape_list": b"[]",
    "wrong_shape_string": b'"metrics"',
    "terminal_escapes": json.dumps({"images": [{"id": 1, "file_name": ESCAPES}], "categories": []}).encode(),
    "fifo": None,
    "directory": None,
    "symlink_loop": None,
}

RUN = [sys.executable, "-m", "evalharness", "loop.progress=false"]
REPORT = [sys.executable, "-m", "evalharness", "report"]

# channel -> (content classes, command given the hostile path and the fixture's base runs)
CHANNELS = {
    "model.labels": (TEXT, lambda f, base, out: [*RUN, f"model.labels={f}", f"hydra.run.dir={out}"]),
    "dataset.ground_truth": (
        TEXT,
        lambda f, base, out: [*RUN, f"dataset.ground_truth={f}", f"hydra.run.dir={out}"],
    ),
    "dataset.class_names": (
        TEXT,
        lambda f, base, out: [*RUN, f"dataset.class_names={f}", f"hydra.run.dir={out}"],
    ),
    "dataset.annotations": (
        JSON,
        lambda f, base, out: [*RUN, "task=coco", f"dataset.annotations={f}", f"hydra.run.dir={out}"],
    ),
    "quant.recipe": (
        JSON,
        lambda f, base, out: [*RUN, "quant=int8", f"quant.recipe={f}", f"hydra.run.dir={out}"],
    ),
    "run metrics.json (report diff)": (JSON, lambda f, base, out: [*REPORT, "diff", str(base), str(out)]),
    "run predictions.jsonl (report rescore)": (JSON, lambda f, base, out: [*REPORT, "rescore", str(out)]),
}
REPLACED = {
    "run metrics.json (report diff)": "metrics.json",
    "run predictions.jsonl (report rescore)": "predictions.jsonl",
}


# channels the bundled sample's run does not read (a csv by class name needs no class list): there
# exit 0 is right, the rest of the contract still holds
UNREAD = {"dataset.class_names"}


def _place(path: Path, content: bytes | None, kind: str) -> None:
    """The hostile file at ``path``: its bytes, or a FIFO / directory / symlink loop."""
    if path.exists() or path.is_symlink():
        path.unlink() if not path.is_dir() or path.is_symlink() else shutil.rmtree(path)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "symlink_loop":
        os.symlink(path.name, path)
    else:
        path.write_bytes(content or b"")


def _digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


CASES = [(channel, kind) for channel, (classes, _) in CHANNELS.items() for kind in classes]


@pytest.mark.parametrize(("channel", "kind"), CASES, ids=[f"{c}-{k}" for c, k in CASES])
def test_untrusted_input_keeps_the_contract(channel, kind, sample_run, tmp_path):
    classes, command = CHANNELS[channel]
    before = _digest(sample_run)
    out = tmp_path / "run"
    if channel in REPLACED:  # a copy of a complete run with one of its files hostile
        shutil.copytree(sample_run, out, symlinks=True)
        hostile = out / REPLACED[channel]
    else:
        hostile = tmp_path / f"hostile_{kind}"
    _place(hostile, classes[kind], kind)
    proc = cli_fork.run(
        command(hostile, sample_run, out),
        capture_output=True,
        cwd=tmp_path,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert_contract(
        proc,
        nonsense=kind in ("fifo", "directory", "symlink_loop", "binary", "empty", "deep_nesting")
        and channel not in UNREAD,
    )
    assert _digest(sample_run) == before, "a command changed an existing run's files"


def assert_contract(proc: subprocess.CompletedProcess, nonsense: bool) -> tuple[str, str]:
    """The one contract every case holds (``nonsense``: the input must not be accepted); returns the
    decoded (stdout, stderr) for a channel's own further checks."""
    stdout, stderr = (s.decode("utf-8", "replace") for s in (proc.stdout, proc.stderr))
    said = f"exit {proc.returncode}\nstderr: {stderr[-1500:]}"
    assert proc.returncode in (0, 1, 2), said
    assert sum(line.startswith("error:") for line in stderr.splitlines()) <= 1, said
    assert "Traceback" not in stdout + stderr and "internal error" not in stdout + stderr, said
    assert "\x1b" not in stdout + stderr, f"raw ESC on the terminal\n{said}"
    if nonsense:
        assert proc.returncode != 0, f"nonsense input accepted\n{said}"
    return stdout, stderr
