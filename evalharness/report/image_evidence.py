"""Whether two runs read the same images, said from their records, never from a claim in a document.

Two runs are paired image by image when their documents give the same ``dataset.manifest_sha256``.
That hash is a claim: a metrics.json is a file anyone can edit, and one whose hash was copied from
another run would make ``report diff`` (and every gate, sweep and table that stands on it) call
different images "the same". So the claim is checked against what the runs' records show, per image,
before it is believed:

- the ids: two complete runs on one list scored the same ids; a run that stopped part-way scored
  some of the other's (a run on a held-out part is :mod:`evalharness.report.shared_images`'s);
- the inputs: where both runs fed their model by the same preprocessing recipe and the same input
  form (every field of ``provenance.preprocessing`` equal, the input tensor's type included), the same
  image is the same tensor (the preprocessing is bit-exact), so an id fed different bytes
  (``input_sha256``) is a different image. Under another recipe the hashes differ by design and
  say nothing here (``report diff``'s ``inputs`` block shows how they differ), and so do hashes made
  by two methods (``core/input_hash.py``: a run recorded before the current method).

A contradiction refuses the pair (exit 2) naming the first id and what differs. A task that reads
no dataset (its records carry no sample of a list) has nothing to check; runs whose records cannot be
read are not paired image by image either (what would pair them reads the records and says why).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalharness.core.input_hash import method_of
from evalharness.rundir.reader import Run, RunDirError, flatten

EXACT = "input_sha256"  # loop/input_identity.py: the exact tensors a record's model was fed


def contradictions(a: Run, b: Run, reads_dataset: bool) -> list[str]:
    """Why the records of ``a`` and ``b``, whose documents claim the same images, say they are not."""
    if not reads_dataset:
        return []
    try:
        ra, rb = _by_id(a), _by_id(b)
    except RunDirError:  # no records to pair either: whatever pairs the runs next reads them and says so
        return []
    found = _ids_differ(a, b, ra, rb)
    if found is None and _same_recipe(a, b):
        found = _inputs_differ(a, b, ra, rb)
    if found is None:
        return []
    return [
        f"dataset differs: both runs give manifest_sha256 {str(a.provenance.dataset.manifest_sha256)[:12]}, "
        f"but their records say otherwise: {found}; was a metrics.json copied or edited?"
    ]


def _by_id(run: Run) -> dict[str, Mapping[str, Any]]:
    return {str(r.get("id")): r for r in run.predictions}


def _ids_differ(a: Run, b: Run, ra: Mapping[str, Any], rb: Mapping[str, Any]) -> str | None:
    """The first id one run scored that the other's list cannot hold: both complete, any id of
    either missing from the other; one stopped part-way, any of its ids missing from the complete
    one; both stopped, nothing said (each scored a part of the list)."""
    complete = [run.status == "complete" for run in (a, b)]
    checks = []
    if complete[1]:  # b scored the whole list: every id a scored is in it
        checks.append((a, b, ra, rb))
    if complete[0]:
        checks.append((b, a, rb, ra))
    for mine, other, ids, theirs in checks:
        outside = next((i for i in ids if i not in theirs), None)
        if outside is not None:
            return f"run {mine.label} scored {outside!r}, which run {other.label} (complete) did not"
    return None


def _same_recipe(a: Run, b: Run) -> bool:
    """Both models fed by one preprocessing recipe into one input form (shape, layout, dtype, scale)."""
    pa, pb = flatten(a.provenance.preprocessing), flatten(b.provenance.preprocessing)
    return bool(pa) and pa == pb


def _inputs_differ(a: Run, b: Run, ra: Mapping[str, Any], rb: Mapping[str, Any]) -> str | None:
    for key, record in ra.items():
        other = rb.get(key)
        if other is None or not record.get(EXACT) or not other.get(EXACT):
            continue
        if method_of(record) != method_of(other):  # hashed two ways: equal bytes hash differently
            continue
        if record[EXACT] != other[EXACT]:
            return (
                f"image {key!r} was fed different input bytes under the same preprocessing "
                f"({EXACT} {str(record[EXACT])[:12]} vs {str(other[EXACT])[:12]}), "
                "so it is not the same image"
            )
    return None
