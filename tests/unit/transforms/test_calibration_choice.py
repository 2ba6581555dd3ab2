"""quant/calibration=auto: the choice between a slice of the dataset and the bundled set (pure)."""

from __future__ import annotations

from evalharness.data.shard import Split
from evalharness.report.summary import calibration_line
from evalharness.rundir.provenance_record import QuantRecord
from evalharness.settings.groups import CalibrationSchema
from evalharness.transforms.calibration_choice import choose, is_auto

AUTO = CalibrationSchema(name="auto", source="auto", roots=("/b/images",), num_images=100)


def test_enough_images_give_an_evenly_spread_slice_capped_by_count_and_share():
    for listed, expected in ((100, 25), (400, 100), (50000, 100), (137, 34)):
        choice = choose(AUTO, listed)
        assert choice.calibration.source == "dataset" and choice.record["chosen"] == "dataset"
        split = Split(choice.split["fraction"], choice.split["scheme"], "search")
        assert len(split.take(list(range(listed)))) == expected


def test_too_few_images_no_dataset_or_shards_fall_back_to_the_roots_with_the_reason():
    for listed, why_not, reason in (
        (99, None, "99 images, under 100"),
        (None, None, "reads no dataset"),
        (500, "dataset.shard.count > 1", "shard"),
    ):
        choice = choose(AUTO, listed, why_not)
        assert choice.split is None and choice.calibration.source == "roots"
        assert choice.calibration.roots == ("/b/images",) and reason in choice.record["reason"]
        assert choice.record["risk"]


def test_is_auto():
    assert is_auto(AUTO) and not is_auto(CalibrationSchema(source="roots")) and not is_auto(None)


def test_the_summary_line_names_source_count_ids_and_the_fallbacks_risk():
    slice_cal = {"source": "dataset", "count": 25, "manifest_sha256": "a" * 64}
    slice_cal["choice"] = choose(AUTO, 100).record
    line = calibration_line(QuantRecord.parse({"calibration": slice_cal}))
    assert "25 images of the dataset, not scored" in line and "a" * 12 in line and "risk" not in line
    bundled = {"source": "roots", "name": "bundled", "count": 9, "manifest_sha256": "b" * 64,
               "choice": choose(AUTO, 50).record}  # fmt: skip
    line = calibration_line(QuantRecord.parse({"calibration": bundled}))
    assert "9 images from quant.calibration.roots" in line and "50 images, under 100" in line
    assert "risk:" in line and "quant.calibration.roots=[DIR]" in line
    assert calibration_line(QuantRecord.parse({"name": "none", "recipe": None})) is None


def test_a_clipped_integer_output_is_measured_and_said_beside_the_calibration():
    import numpy as np

    from evalharness.loop.checks import OutputChecks

    checks = OutputChecks()
    for top in (127, 127, 3):  # two of three samples reach int8's top value
        checks.add_outputs([np.array([top, -5], np.int8), np.array([0.5], np.float32)])
    record = checks.record(["logits", "score"])
    assert record["outputs"][0]["at_max_samples"] == 2 and "at_max_samples" not in record["outputs"][1]
    cal = {"source": "roots", "name": "bundled", "count": 9, "manifest_sha256": "c" * 64}
    line = calibration_line(QuantRecord.parse({"calibration": cal}), record)
    assert "measured: integer output at its top value (logits on 2 of 3 images)" in line
    assert "if calibration clipped its range, the top answers tie there" in line
    quiet = OutputChecks()
    quiet.add_outputs([np.array([3], np.int8)])
    quant = QuantRecord.parse({"calibration": cal})
    assert "measured" not in calibration_line(quant, quiet.record(["logits"]))
