"""A dataset preset's name names the preset's own files. When the command line points the preset at
other files (``dataset.root=`` / ``dataset.annotations=`` / ``dataset.ground_truth=``) and gives no
``dataset.name``, the run is named after the user's folder or file, so own COCO images are not
labelled ``dataset=coco_sample`` in the summary, the diff and the pull-request comment."""

from __future__ import annotations

import os

from evalharness.core.documents import JSONMap

# The keys that say which data is read, in the order their file names the dataset best.
DATA_KEYS = ("root", "annotations", "ground_truth")


def dataset_named(dataset: JSONMap, overrides: list[str]) -> JSONMap:
    """``dataset`` with its name taken from the first data key the command line set (the folder's
    or file's name), unless the command line names it."""
    from evalharness.settings.overrides import parse

    given = {o.key_or_group.removeprefix("dataset.") for o in parse(overrides)}
    if "name" in given:
        return dataset
    key = next((k for k in DATA_KEYS if k in given and dataset.get(k)), None)
    if key is None:
        return dataset
    path = os.path.normpath(str(dataset[key]))
    name = os.path.basename(path) if key == "root" else os.path.splitext(os.path.basename(path))[0]
    return {**dataset, "name": name or dataset.get("name")}
