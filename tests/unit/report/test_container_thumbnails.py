"""``report diff --format html`` thumbnails of a container run: its members' bytes, shown only when
the shards hold the images the run read (the recorded content manifest) and each member matches its
digest; shards changed, gone or a member's bytes changed: no image and one note, never an error."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pack_containers import tiny_items, tiny_png, write_webdataset  # noqa: E402
from shared_runs import fake_run_dir

from evalharness.data.container import ContainerReader  # noqa: E402
from evalharness.data.dataset_reader import DatasetReader  # noqa: E402
from evalharness.report.views.html import thumbnails_html  # noqa: E402
from evalharness.report.views.thumbnails import thumbnail_items  # noqa: E402

ITEMS = tiny_items(3, (8, 6))
WANTED = [("img1.png", "A right -> B wrong")]


def _run(tmp_path: Path, items=ITEMS) -> dict:
    """A webdataset run directory as the run writes it: the content manifest and one record a sample."""
    pattern = write_webdataset(items, tmp_path / "wds", shards=1)
    lines = "".join(f"{name}\t{hashlib.sha256(data).hexdigest()}\n" for name, data, _ in sorted(items))
    dataset = {
        "container": "webdataset",
        "root": pattern,
        "manifest_sha256": hashlib.sha256(lines.encode()).hexdigest(),
    }
    doc = {"status": "complete", "task": "imagenet", "provenance": {"dataset": dataset},
           "predictions": {"path": "predictions.jsonl", "count": len(items)}}  # fmt: skip
    run_dir = fake_run_dir(tmp_path / "run", doc, [{"id": n} for n, _, _ in items])
    return {"label": "A", "dir": str(run_dir), "dataset_root": pattern}


def test_members_are_shown_from_the_shards(tmp_path):
    items, notes = thumbnail_items(_run(tmp_path), WANTED, "id")  # type: ignore[arg-type]
    assert notes == [] and [cap for cap, _ in items] == ["img1.png: A right -> B wrong"]
    assert items[0][1].startswith("data:image/jpeg;base64,")
    assert '<img src="data:image/jpeg;base64,' in thumbnails_html("Thumbnails", items, notes)


def test_shards_changed_since_the_run_show_nothing_and_say_so(tmp_path):
    summary = _run(tmp_path)
    write_webdataset([(n, tiny_png(200) if n == "img1.png" else d, c) for n, d, c in ITEMS], tmp_path / "wds")
    items, notes = thumbnail_items(summary, WANTED, "id")  # type: ignore[arg-type]
    assert items == [] and len(notes) == 1 and "do not hold the images run A read" in notes[0]
    page = thumbnails_html("Thumbnails", items, notes)
    assert "<img" not in page and "dataset.manifest_sha256" in page


def test_shards_gone_show_nothing_and_say_so(tmp_path):
    summary = _run(tmp_path)
    for shard in (tmp_path / "wds").iterdir():
        shard.unlink()
    items, notes = thumbnail_items(summary, WANTED, "id")  # type: ignore[arg-type]
    assert (
        items == [] and len(notes) == 1 and "shards could not be read" in notes[0] and "not found" in notes[0]
    )


def test_a_member_whose_bytes_differ_from_its_digest_is_not_shown(tmp_path, monkeypatch):
    summary = _run(tmp_path)
    real = DatasetReader.read_member

    def changed(self, member):  # the shard rewritten between listing and reading this member
        return b"other bytes" if member.name.startswith("img1") else real(self, member)

    monkeypatch.setattr(DatasetReader, "read_member", changed)
    # a rewrite changes the shard's stat, so the read is checked against its sha256
    monkeypatch.setattr(ContainerReader, "unchanged_since_listed", lambda self, shard: False)
    wanted = [*WANTED, ("img2.png", "A wrong -> B right")]
    items, notes = thumbnail_items(summary, wanted, "id")  # type: ignore[arg-type]
    assert [cap.split(":")[0] for cap, _ in items] == ["img2.png"]
    assert notes == [
        "1 image(s) not shown: their bytes differ from the sha256 the run read (first: img1.png)"
    ]
