"""The first reader behind the contract: a folder of image files and its ground truth (val.txt,
csv, label lines, the devkit, class folders: :mod:`evalharness.data.ground_truth`), exactly as
before containers existed — the samples, their order and their manifest are unchanged."""

from __future__ import annotations

from evalharness.data.dataset_reader import DatasetReader
from evalharness.data.ground_truth import load_ground_truth
from evalharness.data.samples import SampleList


class FolderReader(DatasetReader):
    name = "folder"

    def samples(self) -> SampleList:
        r = self.request
        return load_ground_truth(
            r.ground_truth_format,
            r.root,
            r.ground_truth,
            r.class_names,
            r.synset_words,
            r.devkit_meta,
            r.extensions,
            unscored=r.unscored,
            classes=r.classes,
        )
