"""Where a diff's thumbnails come from: the image files under run A's dataset root, or the members of
run A's container (parquet, webdataset, TFRecord shards), whose path is no file.

A run directory is data: a container's members are shown only when the container listed now holds
the images the run read (its content manifest equals the recorded ``dataset.manifest_sha256``) and
each member's bytes match the digest they are listed with (``data/container_images.py``, the
mechanism ``explain`` remakes inputs with). What is not shown is said once, never an error.
"""

from __future__ import annotations

from evalharness.core.documents import RunSummary
from evalharness.core.errors import EvalHarnessError
from evalharness.core.paths import inside_root
from evalharness.data.container_images import ContainerImages
from evalharness.report.views import html
from evalharness.rundir.reader import Run, RunDirError, load_run

Items = list[tuple[str, str]]  # (caption, data URI)


def thumbnail_items(
    run_a: RunSummary, samples: list[tuple[str, str]], sample_key: str | None
) -> tuple[Items, list[str]]:
    """(thumbnails, notes) of ``samples`` ((sample id, caption) pairs) as run A saw them."""
    run = _run(run_a)
    container = run.provenance.dataset.container if run is not None else None
    if run is None or not container:
        return _from_files(run_a.get("dataset_root"), samples)
    return _from_container(run, str(container), samples, sample_key)


def _from_files(root: str | None, samples: list[tuple[str, str]]) -> tuple[Items, list[str]]:
    """Thumbnails of the image files the ids name under the dataset root; an id that names no path
    under it (``../``, absolute: a record from someone else) is not opened, and said once."""
    items: Items = []
    outside = [i for i, _ in samples if inside_root(root, i) is None]
    for sample_id, caption in samples:
        path = inside_root(root, sample_id)
        uri = html.thumbnail_uri(path) if path is not None else None
        if uri:
            items.append((f"{sample_id}: {caption}", uri))
    if not outside or not root:
        return items, []
    said = f"their ids name no file under the dataset root (first: {outside[0]!r})"
    return items, [f"{len(outside)} image(s) not shown: {said}"]


def _run(summary: RunSummary) -> Run | None:
    try:
        return load_run(summary["dir"], summary["label"]) if summary.get("dir") else None
    except RunDirError:  # a document without its run directory: thumbnails from the files, as before
        return None


def _from_container(
    run: Run, container: str, samples: list[tuple[str, str]], sample_key: str | None
) -> tuple[Items, list[str]]:
    dataset = run.provenance.dataset
    root = str(dataset.root)
    try:
        images = ContainerImages(container, root, dataset.index_dir)
        keys = [str(r[sample_key]) for r in run.predictions] if sample_key else []
    except (EvalHarnessError, KeyError, TypeError) as exc:
        return [], [f"no thumbnails: run {run.label}'s {container} shards could not be read ({exc})"]
    if not images.proves(keys, dataset.manifest_sha256):
        return [], [
            f"no thumbnails: the {container} shards at {root} do not hold the images run {run.label} read "
            "(their content manifest differs from its dataset.manifest_sha256: changed since the run, "
            "or the run stopped part-way)"
        ]
    items: Items = []
    differ: list[str] = []
    for sample_id, caption in samples:
        if sample_id not in images.by_key:
            continue
        try:
            data = images.open(sample_id)
        except EvalHarnessError:
            differ.append(sample_id)
            continue
        uri = html.thumbnail_uri_of(data)
        if uri:
            items.append((f"{sample_id}: {caption}", uri))
    if not differ:
        return items, []
    said = f"their bytes differ from the sha256 the run read (first: {differ[0]})"
    return items, [f"{len(differ)} image(s) not shown: {said}"]
