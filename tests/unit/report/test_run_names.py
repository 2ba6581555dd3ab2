"""Names that tell runs apart: a diff's sides are named by what differs (variant, threads, the GPU's
precision, dataset), never "None @ cpu"; a multirun's job folders carry the swept values
(core/paths.py: swept_tag). No assets: run documents written here."""

from __future__ import annotations

from pathlib import Path

from evalharness.core.paths import SWEPT_ENV, swept_tag
from evalharness.report.run_names import side_names
from evalharness.rundir.reader import Run


def _run(tmp_path: Path, label: str, model: dict, delegate: dict, dataset: str = "val50") -> Run:
    doc = {"task": "imagenet", "status": "complete",
           "provenance": {"model": model, "delegate": delegate, "dataset": {"name": dataset}}}  # fmt: skip
    return Run(label, str(tmp_path / label), doc)  # type: ignore[arg-type]


CPU = {"name": "cpu", "flags": {"num_threads": 2}}
FLOAT = {
    "name": "efficientnet_lite2_fp32",
    "path": "/m/efficientnet_lite2_fp32.tflite",
    "quant": {"name": "none"},
}


def test_float_and_int8_of_one_model_are_named_by_their_variant(tmp_path):
    int8 = {**FLOAT, "quant": {"name": "int8"}}
    names = side_names([_run(tmp_path, "a", FLOAT, CPU), _run(tmp_path, "b", int8, CPU)])
    assert names == ["efficientnet_lite2_fp32 (float) @ cpu", "efficientnet_lite2_fp32 (int8) @ cpu"]


def test_threads_precision_and_dataset_are_named_only_where_they_differ(tmp_path):
    four = {"name": "cpu", "flags": {"num_threads": 4}}
    names = side_names([_run(tmp_path, "a", FLOAT, CPU), _run(tmp_path, "b", FLOAT, four, "val200")])
    assert names == [
        "efficientnet_lite2_fp32 @ cpu, 2 threads, on val50",
        "efficientnet_lite2_fp32 @ cpu, 4 threads, on val200",
    ]
    fp16 = {"name": "gpu", "flags": {"gpu_precision_loss_allowed": True}}
    fp32 = {"name": "gpu", "flags": {"gpu_precision_loss_allowed": False}}
    names = side_names([_run(tmp_path, "a", FLOAT, fp16), _run(tmp_path, "b", FLOAT, fp32)])
    assert names == ["efficientnet_lite2_fp32 @ gpu, fp16 allowed", "efficientnet_lite2_fp32 @ gpu, fp32"]


def test_a_missing_model_name_is_the_files_stem_and_alike_runs_get_their_folder(tmp_path):
    nameless = {"path": "/m/mine.tflite"}
    assert side_names([_run(tmp_path, "a", nameless, CPU)]) == ["mine @ cpu"]
    assert side_names([_run(tmp_path, "a", {}, CPU)]) == ["a @ cpu"]  # no name, no path: the folder
    again = [_run(tmp_path, "run1", FLOAT, CPU), _run(tmp_path, "run2", FLOAT, CPU)]  # a repeated measurement
    for run, started in zip(again, ("2026-12-06T08:00:41+00:00", "2026-12-06T08:03:02+00:00"), strict=True):
        run.doc["started_at"] = started  # type: ignore[index]
    assert side_names(again) == [
        "efficientnet_lite2_fp32 @ cpu [started 2026-12-06T08:00:41+00:00]",
        "efficientnet_lite2_fp32 @ cpu [started 2026-12-06T08:03:02+00:00]",
    ]  # when each ran: its own record, the same in an MLflow copy of it
    same = side_names([_run(tmp_path, "run1", FLOAT, CPU), _run(tmp_path, "run2", FLOAT, CPU)])
    assert same == ["efficientnet_lite2_fp32 @ cpu [run1]", "efficientnet_lite2_fp32 @ cpu [run2]"]
    other_file = {**FLOAT, "path": "/m/lite2_pruned.tflite"}  # one configured name, two files
    names = side_names([_run(tmp_path, "a", FLOAT, CPU), _run(tmp_path, "b", other_file, CPU)])
    assert names == ["efficientnet_lite2_fp32 @ cpu", "lite2_pruned @ cpu"]


def test_a_multirun_folder_carries_the_swept_values(monkeypatch):
    overrides = ["delegate=cpu", "delegate.num_threads=2", "++model.path=/m/a b.tflite", "task.num_images=10"]
    monkeypatch.setenv(SWEPT_ENV, "delegate,delegate.num_threads,model.path")
    assert swept_tag(overrides) == "_num_threads-2_path-a-b"  # delegate is in the folder name already
    named = ["++model.path=/m/model_a.tflite", "delegate.num_threads=2"]  # the folder names the model
    assert swept_tag(named, "model_a") == "_num_threads-2"
    monkeypatch.delenv(SWEPT_ENV)
    assert swept_tag(overrides) == ""  # nothing swept (a single run): the name as before


def test_the_diff_heading_and_the_pr_comment_name_the_sides_by_what_differs(tmp_path):
    from evalharness.report.commands.diff import run_summary
    from evalharness.report.views import diff_view, pr_comment

    int8 = {**FLOAT, "quant": {"name": "int8"}}
    a, b = _run(tmp_path, "a", FLOAT, CPU), _run(tmp_path, "b", int8, CPU)
    names = side_names([a, b])
    doc = {"a": {**run_summary(a), "name": names[0]}, "b": {**run_summary(b), "name": names[1]}}
    sides = "A = efficientnet_lite2_fp32 (float) @ cpu vs B = efficientnet_lite2_fp32 (int8) @ cpu"
    assert diff_view.title(doc) == f"evalharness diff: {sides}"  # type: ignore[arg-type]
    assert pr_comment._run_name(doc["b"]) == "`efficientnet_lite2_fp32 (int8) @ cpu`"  # type: ignore[arg-type]
