"""Where a diff's thumbnails come from: the image files under run A's dataset root, or the members of
run A's container (parquet, webdataset, TFRecord shards), whose path is no file.

A run directory is data: a container's members are shown only when the container listed now holds
the images the run read (its content manifest equals the recorded ``dataset.manifest_sha256``) and
each member's bytes match the digest they are listed with. Both are looked up by sample id through
one contract (``data/run_images.py``, what ``explain`` remakes inputs with). What is not shown is
said once, never an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from evalharness.core.documents import RunSummary
from evalharness.core.errors import EvalHarnessError
from evalharness.data.run_images import ContainerImages, FolderImages, RunImages, recorded_images
from evalharness.report.views import html
from evalharness.rundir.reader import Run, RunDirError, load_run

if TYPE_CHECKING:
    from evalharness.tasks.view import Shapes

Items = list[tuple[str, str]]  # (caption, data URI)


ShapesOf = Callable[[str], "Shapes | None"]  # sample id -> what to draw on it (None: the image alone)


def thumbnail_items(
    run_a: RunSummary, samples: list[tuple[str, str]], sample_key: str | None, shapes: ShapesOf | None = None
) -> tuple[Items, list[str]]:
    """(thumbnails, notes) of ``samples`` ((sample id, caption) pairs) as run A saw them, each with
    ``shapes(sample id)`` drawn on it."""
    shapes = shapes or (lambda _: None)
    run = _run(run_a)
    container = run.provenance.dataset.container if run is not None else None
    if run is None or not container:
        return _from_files(run_a.get("dataset_root"), samples, shapes)
    return _from_container(run, str(container), samples, sample_key, shapes)


def shapes_of(
    summaries: tuple[RunSummary, RunSummary], ids: list[str], draw: Callable[[Any, Any], Shapes | None]
) -> ShapesOf | None:
    """``draw(record_a, record_b)`` of each sample in ``ids`` whose record both runs hold, by sample
    id (a record's ``id``); None where a run directory cannot be read (the images alone, as before)."""
    runs = [run for run in (_run(s) for s in summaries) if run is not None]
    if len(runs) < 2:
        return None
    wanted = set(ids)
    try:
        by_id = [{r["id"]: r for r in run.predictions if r.get("id") in wanted} for run in runs]
    except (EvalHarnessError, KeyError, TypeError, AttributeError):
        return None
    made: dict[str, Shapes | None] = {}  # each sample's drawn once, asked for twice (the legend, the image)

    def shapes(i: str) -> Shapes | None:
        if i not in made:
            made[i] = draw(by_id[0][i], by_id[1][i]) if i in by_id[0] and i in by_id[1] else None
        return made[i]

    return shapes


def _from_files(
    root: str | None, samples: list[tuple[str, str]], shapes: ShapesOf
) -> tuple[Items, list[str]]:
    """Thumbnails of the image files the ids name under the dataset root; an id that names no path
    under it (``../``, absolute: a record from someone else) is not opened, and said once."""
    images = FolderImages(root)
    items, _ = _thumbnails(images, samples, shapes)  # an unreadable file: not shown, as a missing one
    outside = [i for i, _ in samples if images.outside(i)]
    if not outside or not root:
        return items, []
    said = f"their ids name no file under the dataset root (first: {outside[0]!r})"
    return items, [f"{len(outside)} image(s) not shown: {said}"]


def _thumbnails(
    images: RunImages, samples: list[tuple[str, str]], shapes: ShapesOf
) -> tuple[Items, list[str]]:
    """(thumbnails, ids whose bytes could not be read) of the ``samples`` the images hold."""
    items: Items = []
    unread: list[str] = []
    for sample_id, caption in samples:
        if images.absent(sample_id) is not None:
            continue
        try:
            data = images.image(sample_id).read()
        except EvalHarnessError:
            unread.append(sample_id)
            continue
        uri = html.thumbnail_uri_of(data, shapes=shapes(sample_id))
        if uri:
            items.append((f"{sample_id}: {caption}", uri))
    return items, unread


def _run(summary: RunSummary) -> Run | None:
    try:
        return load_run(summary["dir"], summary["label"]) if summary.get("dir") else None
    except RunDirError:  # a document without its run directory: thumbnails from the files, as before
        return None


def _from_container(
    run: Run, container: str, samples: list[tuple[str, str]], sample_key: str | None, shapes: ShapesOf
) -> tuple[Items, list[str]]:
    dataset = run.provenance.dataset
    root = str(dataset.root)
    try:
        images = recorded_images(dataset)  # dataset.container is ``container``: a ContainerImages
        assert isinstance(images, ContainerImages)
        # the ids the manifest was taken over (a COCO record's sample key is its image id)
        keys = [str(r.get("id", r[sample_key])) for r in run.predictions] if sample_key else []
    except (EvalHarnessError, KeyError, TypeError) as exc:
        return [], [f"no thumbnails: run {run.label}'s {container} shards could not be read ({exc})"]
    if not images.proves(keys, dataset.manifest_sha256):
        return [], [
            f"no thumbnails: the {container} shards at {root} do not hold the images run {run.label} read "
            "(their content manifest differs from its dataset.manifest_sha256: changed since the run, "
            "or the run stopped part-way)"
        ]
    items, differ = _thumbnails(images, samples, shapes)
    if not differ:
        return items, []
    said = f"their bytes differ from the sha256 the run read (first: {differ[0]})"
    return items, [f"{len(differ)} image(s) not shown: {said}"]
