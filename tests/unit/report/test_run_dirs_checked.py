"""Run directories are checked against their data (issue 53, class 4), generated over every place
an id becomes a path and every command that pairs two runs.

- Ids become paths only inside their root (``core.paths.inside_root``): each hostile id (``../``,
  absolute, climbing out of a sub-folder, a NUL) × each place that opens a file by a record's id
  (the diff's thumbnails, ``report diff --format html`` whole, the input check's rebuild, explain's
  inputs): the image outside the dataset is never opened nor embedded.
- "Same images" only from per-image evidence (``report/image_evidence.py``): run B's metrics.json
  carries run A's ``manifest_sha256`` over records that say otherwise (other ids, an id more or
  less, a run stopped part-way with an id the other lacks, inputs fed other bytes under the same
  preprocessing) × each command that pairs runs (comparability, the diff's gate, a sweep's baseline
  column, compare's accuracy change, the quantization table): refused naming the first id. Records
  that agree (and differences the evidence cannot speak to: another preprocessing, runs both
  stopped, hashes not recorded) still compare.

No assets: run documents and records are written here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from shared_runs import fake_run_dir

from evalharness.core.input_hash import FIELD, METHOD
from evalharness.core.paths import inside_root
from evalharness.explain.sides import ExplainError, input_tensors
from evalharness.report.commands.diff import build_diff
from evalharness.report.commands.sweep_baseline import baseline_pairwise
from evalharness.report.input_check import _rebuilt
from evalharness.report.runs import ReportError, comparability, definition_of
from evalharness.report.views import diff_view
from evalharness.report.views.quant_table import _comparable
from evalharness.report.views.thumbnails import thumbnail_items
from evalharness.run.compare_view import accuracy_change
from evalharness.rundir.reader import Run

INPUT = {"height": 8, "width": 8, "channels": 3, "dtype": "float32"}


def _png(path: Path, colour: tuple[int, int, int]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (16, 16), colour).save(path)
    return path


def _run(
    tmp_path: Path,
    label: str,
    ids: list[str],
    wrong: set[str] = frozenset(),  # type: ignore[assignment]
    status: str = "complete",
    hashes: dict[str, str] | None = None,
    preprocessing: dict | None = None,
    root: str = "/data/root",
    manifest: str = "m" * 64,
    method: str | None = None,
) -> Run:
    """An ImageNet run on ``ids`` (two classes: ``c0/`` and ``c1/``) that gets ``wrong`` wrong."""
    records = []
    for i in ids:
        cls = int(i.startswith("c1"))
        record = {
            "id": i,
            "label": f"c{cls}",
            "label_index": cls,
            "topk": [1 - cls, cls] if i in wrong else [cls],
        }
        if hashes is not None:
            record["input_sha256"] = record["input_float_sha256"] = hashes.get(i, "h-" + i)
            record.update({FIELD: method} if method else {})
        records.append(record)
    fake_run_dir(tmp_path / label, predictions=records)
    doc = {
        "task": "imagenet",
        "status": status,
        "stop_reason": "interrupted" if status != "complete" else None,
        "latency_ms": {"inference": {"mean": 1.0, "p50": 1.0}},
        "provenance": {
            "config": {"task": {"name": "imagenet", "top_k": 2, "num_images": 0}},
            "model": {"name": "m", "bytes": 1000},
            "preprocessing": preprocessing if preprocessing is not None else {"input": INPUT},
            "dataset": {"name": "d", "root": root, "count": 4, "manifest_sha256": manifest,
                        "manifest_kind": "relative path + size", "ground_truth_sha256": "g"},
        },
    }  # fmt: skip
    run = Run(label, str(tmp_path / label), doc)  # type: ignore[arg-type]
    doc["metrics"] = definition_of(run).scorer().add_all(run.predictions).result()
    doc["metrics"]["num_scored"] = doc["metrics"]["num_images"] = len(ids)
    return run


# --- ids become paths only inside their root -------------------------------------------------------

HOSTILE_IDS = {
    "../": "../outside.png",
    "../ twice": "../../outside2.png",
    "a sub-folder, then out": "c0/../../outside.png",
    "./ then out": "./../outside.png",
    "a doubled slash": "..//outside.png",
    "deep climb": "c0/x/../../../outside.png",
    "absolute": "ABSOLUTE",
    "a NUL byte": "../outside.png\x00.png",
}


@pytest.fixture
def dataset(tmp_path):
    """``tmp/ds/root`` holding ``c0/in.png``; red images outside it at ``tmp/ds`` and ``tmp``."""
    root = tmp_path / "ds" / "root"
    _png(root / "c0" / "in.png", (0, 255, 0))
    (root / "c0" / "x").mkdir()  # so that c0/x/../../../ resolves
    _png(tmp_path / "ds" / "outside.png", (255, 0, 0))
    _png(tmp_path / "outside2.png", (255, 0, 0))
    return root


def _hostile(root: Path, kind: str) -> str:
    return str(root.parent / "outside.png") if kind == "ABSOLUTE" else kind


def _thumbnails(tmp_path: Path, root: Path, sample: str) -> str:
    items, notes = thumbnail_items({"dataset_root": str(root)}, [(sample, "x"), ("c0/in.png", "in")], None)
    assert [cap for cap, _ in items] == ["c0/in.png: in"], items  # the image inside is shown, never the other
    assert notes and "name no file under the dataset root" in notes[0]
    return "ok"


def _html(tmp_path: Path, root: Path, sample: str) -> str:
    ids = [sample, "c0/in.png"]
    a = _run(tmp_path, "A", ids, root=str(root))
    b = _run(tmp_path, "B", ids, wrong={sample, "c0/in.png"}, root=str(root))
    page = diff_view.render_html(build_diff(a, b, comparability(a, b)))
    assert page.count("data:image/jpeg;base64,") == 1  # the image inside the root only
    return "ok"


def _rebuild(tmp_path: Path, root: Path, sample: str) -> str:
    run = _run(tmp_path, "A", ["c0/in.png"], root=str(root))
    tensor, why = _rebuilt(run, sample, "any")
    assert tensor is None and why is not None and "is not under run A's dataset root" in why, why
    return "ok"


def _explain(tmp_path: Path, root: Path, sample: str) -> str:
    run = _run(tmp_path, "A", ["c0/in.png"], root=str(root))
    assert len(input_tensors(run, ["c0/in.png"])) == 1  # the image inside is read
    with pytest.raises(ExplainError, match="names no file under its dataset root"):
        input_tensors(run, [sample])
    return "ok"


PLACES: dict[str, Callable[[Path, Path, str], str]] = {
    "the diff's thumbnails": _thumbnails,
    "report diff --format html": _html,
    "the input check's rebuild": _rebuild,
    "explain's inputs": _explain,
}


@pytest.mark.parametrize("kind", list(HOSTILE_IDS))
@pytest.mark.parametrize("place", list(PLACES))
def test_an_id_never_opens_a_file_outside_the_dataset_root(tmp_path, dataset, place, kind):
    assert PLACES[place](tmp_path, dataset, _hostile(dataset, HOSTILE_IDS[kind])) == "ok"


def test_explain_refuses_an_input_that_does_not_rebuild_to_its_recorded_hash(tmp_path):
    """The image changed since the run (its record's hashes are another tensor's): explain says so in
    one line and traces nothing on it (data/rebuilt_input.py)."""
    root = tmp_path / "root"
    _png(root / "c0" / "in.png", (10, 20, 30))
    run = _run(tmp_path, "A", ["c0/in.png"], hashes={}, root=str(root))
    with pytest.raises(ExplainError, match=r"^run A: the input rebuilt for c0/in.png does not match its"):
        input_tensors(run, ["c0/in.png"])


@pytest.mark.parametrize(
    ("relative", "inside"),
    [("a.png", "a.png"), ("c/d.png", "c/d.png"), ("c/./d.png", "c/d.png"), ("c/../d.png", "d.png"), (7, "7")],
)
def test_an_id_inside_its_root_is_that_file(relative, inside):
    assert inside_root("/data/root", relative) == f"/data/root/{inside}"


@pytest.mark.parametrize("relative", ["", ".", "..", "../x", "/etc/passwd", "a\x00b", None, ["a"]])
def test_an_id_that_names_no_file_under_the_root_is_none(relative):
    assert inside_root("/data/root", relative) is None
    assert inside_root(None, "a.png") is None and inside_root("", "a.png") is None


# --- "same images" only from per-image evidence ----------------------------------------------------

IDS = ["c0/a.png", "c0/b.png", "c1/c.png", "c1/d.png"]
OTHER_RECIPE = {"input": INPUT, "resize": "pil_bilinear"}


def _pair(tmp_path: Path, a: dict, b: dict) -> tuple[Run, Run]:
    """Run A and run B (B's document gives A's manifest_sha256, whatever its records hold)."""
    return _run(tmp_path, "A", **{"ids": IDS, **a}), _run(tmp_path, "B", **{"ids": IDS, **b})


CONTRADICTED: dict[str, tuple[dict, dict, str]] = {  # (run A, run B, what the refusal names)
    "other ids altogether": ({}, {"ids": ["c0/x.png", "c0/y.png", "c1/z.png", "c1/w.png"]}, "'c0/a.png'"),
    "one id renamed": ({}, {"ids": [*IDS[:3], "c1/e.png"]}, "'c1/d.png'"),
    "an id more": ({}, {"ids": [*IDS, "c1/e.png"]}, "run B scored 'c1/e.png'"),
    "an id fewer": ({}, {"ids": IDS[:3]}, "run A scored 'c1/d.png'"),
    "every input other bytes, same recipe": (
        {"hashes": {}},
        {"hashes": {i: "x" + i for i in IDS}},
        "'c0/a.png'",
    ),
    "one input other bytes, same recipe": ({"hashes": {}}, {"hashes": {"c1/c.png": "x"}}, "image 'c1/c.png'"),
    "A stopped with an id B lacks": (
        {"status": "partial", "ids": ["c0/q.png"]},
        {},
        "run A scored 'c0/q.png'",
    ),
    "B stopped with an id A lacks": (
        {},
        {"status": "partial", "ids": ["c0/q.png"]},
        "run B scored 'c0/q.png'",
    ),
}


def _comparability(a: Run, b: Run) -> str:
    comp = comparability(a, b)
    assert comp.refused, "compared as the same images"
    return comp.refused[0]


def _gate_pairing(a: Run, b: Run) -> str:  # a sweep's baseline column (report sweep)
    values, _ = baseline_pairwise(a, b)
    assert values == {}, "a sweep paired them"
    return comparability(a, b).refused[0]


def _compare(a: Run, b: Run) -> str:  # evalharness compare's accuracy change
    found = accuracy_change(a, b)
    assert "refused" in found, "compare paired them"
    return str(found["refused"])


def _quant_table(a: Run, b: Run) -> str:
    with pytest.raises(ReportError) as exc:
        _comparable(a, b)
    return str(exc.value)


COMMANDS: dict[str, Callable[[Run, Run], str]] = {
    "comparability (report diff and its gates)": _comparability,
    "report sweep's baseline column": _gate_pairing,
    "compare's accuracy change": _compare,
    "the quantization table": _quant_table,
}


@pytest.mark.parametrize("case", list(CONTRADICTED))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_copied_manifest_hash_is_checked_against_the_records(tmp_path, command, case):
    a_kw, b_kw, named = CONTRADICTED[case]
    a, b = _pair(tmp_path, a_kw, b_kw)
    said = COMMANDS[command](a, b)
    assert (
        "dataset differs: both runs give manifest_sha256" in said
        and "but their records say otherwise" in said
    )
    assert named in said, said


AGREEING: dict[str, tuple[dict, dict]] = {
    "the same records": ({"hashes": {}}, {"hashes": {}}),
    "other input bytes under another recipe": (
        {"hashes": {}}, {"hashes": {"c0/a.png": "x"}, "preprocessing": OTHER_RECIPE}
    ),
    "B stopped part-way on A's images": ({}, {"status": "partial", "ids": IDS[:2]}),
    "both stopped part-way": ({"status": "partial", "ids": IDS[:2]}, {"status": "partial", "ids": IDS[2:]}),
    "input hashes not recorded": ({}, {}),
    "other input hashes by another method": ({"hashes": {}}, {"hashes": {"c0/a.png": "x"}, "method": METHOD}),
    "no preprocessing recorded": (
        {"hashes": {}, "preprocessing": {}}, {"hashes": {"c0/a.png": "x"}, "preprocessing": {}}
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(AGREEING))
def test_records_that_agree_still_compare(tmp_path, case):
    a, b = _pair(tmp_path, *AGREEING[case])
    comp = comparability(a, b)
    assert comp.refused == []
    assert build_diff(a, b, comp)["task"] == "imagenet"


@pytest.mark.parametrize("methods", [(None, METHOD), (METHOD, None)])
def test_input_hashes_of_two_methods_are_not_compared(tmp_path, methods):
    """A run recorded before the current input hash against one after: never "inputs differ"."""
    a, b = _pair(tmp_path, {"hashes": {}, "method": methods[0]}, {"hashes": {}, "method": methods[1]})
    block = build_diff(a, b, comparability(a, b))["inputs"]
    assert block["recorded"] and block["comparable"] is False and "identical" not in block
    assert block["summary"].startswith(
        "inputs: not comparable by hash: the input hashes were made by different methods"
    )


def test_inputs_rebuilt_from_the_root_are_the_ones_the_run_read(tmp_path, dataset):
    run = _run(tmp_path, "A", ["c0/in.png"], root=str(dataset))
    (tensor,) = input_tensors(run, ["c0/in.png"])
    assert tensor.shape[-1] == 3 and np.isfinite(tensor).all()
