"""A repair's held-out verdict (report/views/repair_view.py): a summary line, a failed check on a
miss the held-out part can resolve, a report only (said why) on one it cannot. Pure."""

from __future__ import annotations

from evalharness.report.summary import summary_block
from evalharness.report.views.repair_view import failed_checks, verdict
from evalharness.rundir.metrics_file import parse_document
from evalharness.stats.power import resolution


def _repair(images: int, variant: float, target: float = 0.01, status: str = "met") -> dict:
    held = {"images": images, "float": 0.76, "variant": variant, "delta": variant - 0.76,
            "interval": [-0.1, 0.02], "holds": 0.76 - variant <= target}  # fmt: skip
    return {
        "status": status,
        "metric": "top1",
        "target": f"top1 drop <= {target:g} (absolute)",
        "allowed_drop": target,
        "held_out": held,
        "resolution": resolution(images, target),
    }


def test_a_miss_the_held_out_part_resolves_is_a_failed_check():
    r = _repair(1000, 0.72)
    assert failed_checks({"repair": r}) == [
        "quant repair: held-out top1 drop 0.0400 misses top1 drop <= 0.01 (absolute) (1000 images)"
    ]
    assert verdict(r).endswith("top1 drop <= 0.01 (absolute) missed (a failed check)")


def test_a_miss_on_too_few_images_is_reported_not_checked_with_the_images_needed():
    r = _repair(25, 0.72)
    assert failed_checks({"repair": r}) == []
    line = verdict(r)
    assert "missed; not a check: 25 paired images cannot resolve a drop of 0.01" in line
    assert "~783 images" in line


def test_a_hold_is_no_check_and_cannot_stays_one():
    assert failed_checks({"repair": _repair(1000, 0.76)}) == []
    assert verdict(_repair(1000, 0.76)).endswith("held")
    assert "cannot be held" in failed_checks({"repair": _repair(25, 0.5, status="cannot")})[0]
    old = _repair(1000, 0.72)
    del old["resolution"]  # recorded before resolution was measured: a miss is still a check
    assert failed_checks({"repair": old})


def test_the_run_summary_carries_the_verdict_and_the_failed_check():
    r = _repair(1000, 0.72)
    doc = {
        "task": "imagenet",
        "status": "complete",
        "metrics": {"failed_checks": failed_checks({"repair": r})},
        "provenance": {"model": {"name": "m", "quant": {"name": "int8", "repair": r}}},
    }
    lines = summary_block(parse_document(doc))
    assert any(line.startswith("  Repair:   held-out top1 0.7200 vs float 0.7600") for line in lines)
    status = next(line for line in lines if line.startswith("  Status:"))
    assert status.startswith("  Status:   complete; failed check(s): quant repair: held-out top1 drop")
