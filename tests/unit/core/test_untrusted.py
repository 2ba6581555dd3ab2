"""The one reader of untrusted files: every channel that reads a file a user, a run directory or a
bundle supplies, against every kind of hostile content. Each is one user error naming the file
(exit 2 at the boundary), never a RecursionError, a ValueError from the int limit, or a hang."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from evalharness.core.boundary import describe
from evalharness.core.errors import EvalHarnessError
from evalharness.core.untrusted import MAX_DEPTH, parse_json, read_json, read_yaml

DEEP = 100_000


def _coco(path: Path) -> None:
    from evalharness.data.coco_annotations import load_annotations

    load_annotations(path)


def _recipe(path: Path) -> None:
    from evalharness.runtime.quantize import load_recipe_file

    load_recipe_file(str(path))


def _metrics(path: Path) -> None:
    from evalharness.rundir.reader import load_run

    load_run(str(path), "A")


def _predictions(path: Path) -> None:
    from evalharness.rundir.reader import read_jsonl

    read_jsonl(str(path), "A")


def _resume(path: Path) -> None:
    from evalharness.rundir.files import read_predictions

    read_predictions(str(path))


def _run_state(path: Path) -> None:
    from evalharness.rundir.state import _recorded

    _recorded(str(path.parent))


def _overrides(path: Path) -> None:
    from evalharness.report.commands.sweep import job_params

    job_params(str(path.parent.parent), None)


def _bundle(path: Path) -> None:
    from evalharness.explain.replay import read_bundle

    read_bundle(str(path.parent))


# channel -> (reader, file name, what its top level must be)
CHANNELS = {
    "coco annotations": (_coco, "instances.json", dict),
    "quant.recipe": (_recipe, "recipe.json", list),
    "metrics.json": (_metrics, "metrics.json", dict),
    "predictions (report)": (_predictions, "predictions.jsonl", "line"),
    "predictions (resume)": (_resume, "predictions.jsonl", "line"),
    "run_state.json": (_run_state, "run_state.json", dict),
    "overrides.yaml": (_overrides, ".hydra/overrides.yaml", list),
    "bundle.json": (_bundle, "bundle.json", dict),
}

CASES = {
    "deep nesting": ("[" * DEEP + "]" * DEEP).encode(),
    "huge integer": b'{"a": ' + b"9" * 5000 + b"}",
    "huge float digits": b'{"a": 0.' + b"1" * 5000 + b"}",
    "invalid utf-8": b'{"a": "\xff\xfe"}',
}


def _wrong_top(top) -> bytes:
    return b'{"a": 1}' if top is list else b"[1, 2]"


def _blocked(signum, frame):
    raise TimeoutError("the reader blocked on a special file")


def _refused(reader, path: Path) -> str:
    previous = signal.signal(signal.SIGALRM, _blocked)
    signal.alarm(20)
    try:
        with pytest.raises(EvalHarnessError) as info:
            reader(path)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    line = describe(info.value)
    assert "\n" not in str(info.value) and "internal error" not in line, line
    return line


@pytest.mark.parametrize("case", [*CASES, "wrong top-level type", "fifo"])
@pytest.mark.parametrize("channel", CHANNELS)
def test_every_channel_refuses_hostile_content_by_name(tmp_path, channel, case):
    reader, name, top = CHANNELS[channel]
    path = tmp_path / "run" / name
    path.parent.mkdir(parents=True)
    if case == "fifo":
        os.mkfifo(path)
    else:
        data = CASES[case] if case in CASES else _wrong_top(top)
        if top == "line":
            data = b'{"id": 1}\n' + data.replace(b"\n", b" ") + b"\n"
        path.write_bytes(data)
    if channel == "predictions (resume)" and case in ("invalid utf-8", "wrong top-level type"):
        # not hostile, only torn: a resume keeps the records before it and runs the rest again
        from evalharness.rundir.files import read_predictions

        assert read_predictions(str(path)) == [{"id": 1}]
        return
    line = _refused(reader, path)
    assert str(path) in line, line
    if case == "deep nesting":
        assert f"deeper than {MAX_DEPTH}" in line
    if case.startswith("huge"):
        assert "number of over" in line


def test_recipe_regex_is_compiled_before_use(tmp_path):
    path = tmp_path / "recipe.json"
    entry = {"regex": "(", "operation": "*", "algorithm_key": "min_max_uniform_quantize", "op_config": {}}
    path.write_text(json.dumps([entry]))
    line = _refused(_recipe, path)
    assert str(path) in line and "'('" in line and "does not compile" in line, line


def test_shape_names_the_missing_key_and_the_wrong_type(tmp_path):
    path = tmp_path / "doc.json"
    path.write_text('{"sides": []}')
    with pytest.raises(EvalHarnessError, match="no 'images'"):
        read_json(path, "doc", required={"images": list})
    with pytest.raises(EvalHarnessError, match="'sides' is list, not an object"):
        read_json(path, "doc", required={"sides": dict})
    path.write_text('{"n": true}')
    with pytest.raises(EvalHarnessError, match="'n' is boolean, not int"):
        read_json(path, "doc", required={"n": int})


def test_limits_leave_ordinary_json_alone():
    text = json.dumps({"a": [[[1.5e-7, -2, 'x]]]}}\\"[[[']]], "b": "9" * 500, "c": 12345678901234567890})
    assert parse_json(text, "t") == json.loads(text)
    nested = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert parse_json(nested, "t", top=list) == json.loads(nested)
    with pytest.raises(EvalHarnessError, match="deeper"):
        parse_json("[" + nested + "]", "t", top=list)


def test_yaml_aliases_cannot_expand_past_the_node_limit(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [
        f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, "
        f"*a{i - 1}, *a{i - 1}, *a{i - 1}]"
        for i in range(1, 9)
    ]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(EvalHarnessError, match="expand to over"):
        read_yaml(path, "overrides file")


DEEP_LITERAL = b"{'names': " + b"[" * DEEP + b"]" * DEEP + b"}"


@pytest.mark.parametrize("payload", [DEEP_LITERAL, b"{'a': " + b"7" * 5000 + b"}"])
def test_metadata_inside_a_model_file_is_held_to_the_same_limits(payload):
    from evalharness.runtime.model_file import _ultralytics

    with pytest.raises(EvalHarnessError, match="model.path=m.tflite: its Ultralytics metadata"):
        _ultralytics(payload, "m.tflite")


@pytest.mark.parametrize("reader", ["bare_index", "_by_index"])
def test_a_csv_class_index_of_thousands_of_digits_is_a_row_error(reader):
    from evalharness.data import ground_truth

    huge = "9" * 5000
    args = (huge, "gt.csv:2") if reader == "bare_index" else ([("a", None)], "c.txt", huge, "gt.csv:2")
    with pytest.raises(EvalHarnessError, match="gt.csv:2: class index"):
        getattr(ground_truth, reader)(*args)
