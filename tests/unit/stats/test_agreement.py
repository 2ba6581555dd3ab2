"""The sweep's agreement matrix (columns read once per run, a pair as vector operations) against the
pairwise definition: ``classification_diff`` of each ordered pair, McNemar p from stats/paired.py."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from evalharness.rundir.reader import Run
from evalharness.stats.agreement import answer_columns, top1_agreement
from evalharness.stats.paired import classification_diff, mcnemar_exact
from evalharness.tasks.imagenet.comparison import ClassificationComparison


def _records(rng: random.Random, ids: list[str]) -> list[dict]:
    """Records on a random part of ``ids`` (one id twice: the last kept), some with no ranked list."""
    out = []
    for sid in [i for i in ids if rng.random() < 0.9] + [ids[0]]:
        topk = [] if rng.random() < 0.05 else rng.sample(range(6), 3)
        truth = rng.randrange(6)
        out.append({"id": sid, "topk": topk, "topk_labels": [f"c{c % 4}" for c in topk],
                    "rank": topk.index(truth) if truth in topk else None, "label_index": truth})  # fmt: skip
    return out


def _run(label: str, records: list[dict], labels_sha: str) -> Run:
    run = Run(label, "", {"provenance": {"labels": {"sha256": labels_sha}}})  # type: ignore[arg-type]
    run.__dict__["predictions"] = records  # as read (a cached property)
    return run


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_matrix_equals_the_pairwise_definition(seed):
    rng = random.Random(seed)
    ids = [f"img{i:03d}" for i in range(80)]
    runs = [_run(f"r{n}", _records(rng, ids), "same" if n < 3 else "other") for n in range(4)]
    matrix = ClassificationComparison(SimpleNamespace(settings={})).agreements(runs)
    assert sorted(matrix) == [(i, j) for i in range(4) for j in range(4) if i != j]
    for (i, j), found in matrix.items():
        a, b = runs[i], runs[j]
        same = a.provenance.labels.sha256 == b.provenance.labels.sha256
        expected = classification_diff(a.predictions, b.predictions, same)
        assert found == {
            "name": "top-1 agreement",
            "value": expected["top1_agreement"],
            "p": expected["mcnemar_p"],
            "samples": expected["paired_images"],
            "interval": expected["delta_top1_interval"],
        }
        assert found["p"] == mcnemar_exact(expected["regressions"], expected["improvements"])


def test_runs_with_no_shared_image_pair_nothing():
    codes: dict = {}
    a = answer_columns([{"id": "x", "topk": [1], "rank": 0}], codes)
    b = answer_columns([{"id": "y", "topk": [1], "rank": 0}], codes)
    assert top1_agreement(a, b, True) == {
        "paired_images": 0, "top1_agreement": None, "mcnemar_p": 1.0, "delta_top1_interval": None,
    }  # fmt: skip
