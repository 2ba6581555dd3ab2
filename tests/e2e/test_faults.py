"""Fault injection generated from the config schemas: every key gets a wrong type, an out-of-range
value or, for a path, every kind of bad path; every run must end inside the error boundary.

The cases come from the schemas themselves (core groups, every task definition, every delegate,
every runner), so a key added later is attacked without touching this file; a text or path key
must be classified here (PATHS / TEXT), else ``test_every_key_is_covered`` fails and says which.
Invariants per case: the run completes, or stops with one classified error line (never the boundary's
"internal error"), and the exit code it maps to is 1 or 2.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import typing
from pathlib import Path

import pytest
from conftest import ASSETS, MODELS, compose_config

from evalharness.core.boundary import describe
from evalharness.core.errors import RunStopped
from evalharness.report.tracking.mapping import TRACKERS
from evalharness.runtime import runners
from evalharness.runtime.delegates import DELEGATES
from evalharness.settings.groups import SCHEMAS
from evalharness.tasks.discovery import task_definitions

# group.key -> "file" | "dir": attacked with every bad-path kind
PATHS = {
    "model.path": "file",
    "model.labels": "file",
    "dataset.root": "dir",
    "dataset.ground_truth": "file",
    "dataset.class_names": "file",
    "dataset.synset_words": "file",
    "dataset.devkit_meta": "file",
    "dataset.annotations": "file",
    "paths.models_dir": "dir",
    "paths.data_dir": "dir",
    "paths.cache_dir": "dir",
    "runner.benchmark_binary": "file",
    "runner.adb": "file",
    "delegate.external_delegate_path": "file",
    "delegate.edgetpu_library": "file",
    "delegate.compile_cache_dir": "dir",
    "dataset.index_dir": "dir",
}
# free text, names chosen from a registry, or nested settings: attacked with a junk value
TEXT = {
    "model.name", "model.class_map", "model.decoder", "dataset.name", "dataset.format", "runtime.name",
    "quant.name", "quant.recipe", "quant.io_dtype", "quant.integer_input", "quant.calibration",
    "runner.name", "runner.serial", "runner.device_dir", "task.name", "task.backend",
    "task.reference_delegate", "task.targets", "delegate.name", "delegate.op_resolver",
    "delegate.gpu_backend", "delegate.nnapi_accelerator_name", "delegate.nnapi_execution_preference",
    "delegate.nnapi_execution_priority", "delegate.hexagon_lib_path", "delegate.external_delegate_options",
    "delegate.edgetpu_device", "delegate.npu_vendor", "delegate.device", "delegate.performance_mode",
    "delegate.openvino_config", "delegate.npu_compile", "model.preprocess.crop", "model.preprocess.resize",
    "model.preprocess.channel_order", "model.preprocess.integer_input", "model.preprocess.layout",
    "dataset.shard.scheme", "loop.tensor_cache", "task.start_up", "model.preprocess.mean",
    "model.preprocess.std", "tracking.name", "tracking.uri", "tracking.experiment", "loop.parallel",
    "loop.lanes",
    "quant.weights.only", "dataset.split", "quant.metric",
}  # fmt: skip
BAD_PATHS = ("missing", "dir_for_file", "file_for_dir", "fifo", "symlink_loop", "empty_file")
BASE = [f"paths.models_dir={MODELS}", f"paths.data_dir={ASSETS}", "loop.progress=false"]


def _fields(schema: type, prefix: str):
    """(dotted key, type, metadata) of every leaf field, nested dataclasses flattened."""
    hints = typing.get_type_hints(schema)
    for f in dataclasses.fields(schema):
        kind = hints.get(f.name, typing.Any)
        if dataclasses.is_dataclass(kind):
            yield from _fields(kind, f"{prefix}{f.name}.")
        else:
            yield f"{prefix}{f.name}", kind, f.metadata


def _groups():
    """(selection overrides, group, schema): every schema a config can be checked against."""
    for group, schema in SCHEMAS.items():
        yield [], group, schema
    definitions = task_definitions()
    for name in definitions.names():
        yield [f"task={name}"], "task", definitions.get(name).schema
        for group in ("dataset", "model"):  # the fields a task adds to the core groups
            own = getattr(definitions.get(name), f"{group}_schema")
            if own is not None:
                yield [f"task={name}"], group, own
    for name in DELEGATES.names():
        yield [f"delegate={name}"], "delegate", DELEGATES.get(name).schema
    registry = runners()
    for name in registry.names():
        yield [f"runner={name}"], "runner", registry.get(name).settings
    yield ["tracking=mlflow"], "tracking", TRACKERS.get("mlflow")


def _keys() -> dict[str, tuple[list[str], type, dict]]:
    keys = {}
    for select, group, schema in _groups():
        for key, kind, meta in _fields(schema, f"{group}."):
            keys.setdefault(key, (select, kind, meta))
    return keys


KEYS = _keys()


def _cases():
    for key, (select, kind, meta) in sorted(KEYS.items()):
        if (
            key.endswith(".name")
            and key.count(".") == 1
            and key.split(".")[0] in ("task", "delegate", "runner", "tracking")
        ):
            select = []
        if kind is bool:
            yield pytest.param(select, key, "maybe", id=f"{key}=maybe")
        elif kind in (int, float):
            yield pytest.param(select, key, "five", id=f"{key}=five")
            for bound, step in (("low", -1), ("high", 1)):
                if bound in meta:
                    yield pytest.param(select, key, meta[bound] + step, id=f"{key}={bound}{step:+d}")
        elif key in PATHS:
            for bad in BAD_PATHS:
                yield pytest.param(select, key, bad, id=f"{key}={bad}")
        else:
            yield pytest.param(select, key, "no_such_value!", id=f"{key}=junk")


def test_every_key_is_covered():
    """A text/path key added to a schema without a classification here is an uncovered key."""
    unclassified = sorted(
        key
        for key, (_, kind, meta) in KEYS.items()
        if kind not in (bool, int, float) and key not in PATHS and key not in TEXT and not meta
    )
    assert unclassified == [], f"classify these keys in PATHS or TEXT: {unclassified}"
    assert len(list(_cases())) > 150


def _bad_path(tmp: Path, kind: str, want: str) -> str:
    target = tmp / "bad"
    if kind == "missing":
        return str(tmp / "no" / "such" / "path")
    if kind == "dir_for_file" or (kind == "file_for_dir" and want == "file"):
        target.mkdir()
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "symlink_loop":
        os.symlink(target, target)
    else:  # empty_file, or a file where a directory is wanted
        target.write_bytes(b"")
    return str(target)


def _selection(key: str, select: list[str]) -> list[str]:
    if key == "dataset.annotations" or select == ["task=coco"]:
        return ["task=coco", *select]
    if key.startswith("runner.") and select == []:
        return ["runner=adb"]
    if key == "delegate.edgetpu_library":
        return ["delegate=edgetpu"]
    if key == "delegate.external_delegate_path":
        return ["delegate=external"]
    return select


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang("the run blocked (a special file opened for reading?)")


@pytest.mark.parametrize(("select", "key", "value"), list(_cases()))
def test_fault_ends_inside_the_error_boundary(tmp_path, select, key, value):
    from evalharness.run.job import run

    if key in PATHS:
        value = _bad_path(tmp_path, value, PATHS[key])
    overrides = [*BASE, *_selection(key, select), f"{key}={value}"]
    if key.startswith("task.") and "task=inference_diff" in overrides or "task=benchmark" in overrides:
        overrides += ["task.num_runs=2", "task.min_secs=0"] if "num_runs" not in key else []
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(60)
    try:
        run(compose_config(overrides), str(tmp_path / "run"))
    except RunStopped as exc:  # metrics.json written, exit 1
        assert (tmp_path / "run" / "metrics.json").is_file(), describe(exc)
    except Hang:
        pytest.fail(f"{key}={value}: the run blocked")
    except Exception as exc:  # exit 2: one classified line
        line = describe(exc)
        assert not line.startswith("internal error") and "\n" not in line, line
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
