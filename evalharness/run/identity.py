"""The bytes a result depends on (model, delegate library, runtime, labels, ground truth, the class
list, the sample files), recorded when a run starts: a resume refuses changed inputs, and a run whose
inputs changed while it ran is ``invalid``.

The identity is derived state like the caches (:mod:`evalharness.core.derived`): keyed on content.
Every file the task's provenance hashes (``dataset.<name>_sha256``: the ground truth, ``class_names``,
``synset_words``, ...) is part of it, so a task that reads one more file is covered by recording it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalharness.run.provenance import library_record
from evalharness.rundir.state import identity_differences
from evalharness.settings.groups import RunSettings

if TYPE_CHECKING:  # for the types only
    from evalharness.tasks.live import Task


def run_identity(settings: RunSettings, task: Task, prov: dict[str, Any]) -> dict[str, Any]:
    """The bytes a result depends on, recorded when a run starts so that a resume can refuse to mix
    inputs that changed (see :mod:`evalharness.rundir.state`)."""
    from evalharness.core.checksum import optional_sha256
    from evalharness.data.manifest import stat_digest
    from evalharness.runtime.litert import runtime_info

    dataset = prov.get("dataset") or {}
    library = library_record(settings.delegate_plan)
    return {
        "model_sha256": optional_sha256(settings.model.path),  # not a file: the load says so
        "delegate_library_sha256": library and library["sha256"],
        "runtime_version": runtime_info(settings.runtime.name)["version"],
        "labels_sha256": (prov.get("labels") or {}).get("sha256"),
        "ground_truth_sha256": dataset.get("ground_truth_sha256"),
        "dataset_manifest_sha256": dataset.get("manifest_sha256"),
        "dataset_files_stat": stat_digest(task.sample_files()),
        "dataset_split": _split_identity(dataset.get("dataset_split")),
        **dataset_files(dataset),
    }


def _split_identity(record: Any) -> list[Any] | None:
    """The split a run read and its shards (``provenance.dataset.dataset_split``): a resume on
    another split, or on another list of its shards, is another dataset."""
    if not isinstance(record, dict):
        return None
    return [record.get("name"), record.get("shards")]


def dataset_files(dataset: dict[str, Any]) -> dict[str, Any]:
    """The dataset files the task hashed (the class list among them), by their provenance names;
    the manifest is recorded above as ``dataset_manifest_sha256``."""
    return {k: v for k, v in dataset.items() if k.endswith("_sha256") and k != "manifest_sha256"}


def moved_inputs(
    settings: RunSettings, task: Task, prov: dict[str, Any], identity: dict[str, Any]
) -> list[str]:
    """What changed on disk while the run ran (the model file, the sample files): such a result
    mixes two inputs and is ``invalid``."""

    now_ = run_identity(settings, task, prov)
    watched = (
        "model_sha256",
        "dataset_files_stat",
        "labels_sha256",
        *dataset_files(prov.get("dataset") or {}),
    )
    changed = identity_differences({k: identity[k] for k in watched}, {k: now_[k] for k in watched})
    return [f"{', '.join(changed)} changed while the run ran"] if changed else []
