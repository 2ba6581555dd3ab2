"""``quant/calibration=auto`` (the default of calibrated variants): which images calibrate, decided
once the dataset's size is known, so the default never quietly calibrates on a few unrelated photos.

- The dataset's list (after ``task.num_images``) holds at least ``min_dataset_images``: a slice of it
  calibrates: ``num_images`` images at most and at most ``max_fraction`` of the list, spread evenly
  (the interleaved :class:`evalharness.data.shard.Split`: fixed positions, no seed to drift). The
  slice is *not scored*: the run reports on the rest, as ``quant/calibration=dataset`` and a repair
  do. Scoring it and leaving it out of the headline was the other option; it was not chosen because
  every figure of the run (intervals, per-class tables, diffs) would then have to know which records
  to skip, and one forgotten reader would show a number measured on the images the model was
  calibrated on. The slice's images are keyed by content (sha256 of each) in the variant's cache key.
- Fewer images, a task that reads no dataset, or a sharded run (each shard would slice its own
  list): the bundled set (the setting's ``roots``), and the summary says its size and what such a
  set has cost on real models (:data:`BUNDLED_RISK`).

What was chosen and why is ``provenance.model.quant.calibration.choice``; the run summary's
``Calibrated:`` line is made from it (:func:`evalharness.report.summary.calibration_line`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalharness.core.errors import ConfigError
from evalharness.data.shard import Split
from evalharness.settings.groups import CalibrationSchema
from evalharness.settings.quant_rules import SearchSplit

AUTO = "auto"
# measured (docs/quantization.md#calibration): EfficientNet-Lite0 int8 calibrated on the 9 bundled
# photos, each tensor's range the min/max over them (runtime/quantize.py calibrate_ranges), on val50
BUNDLED_RISK = (
    "ranges from a few photos unlike your data can clip what your data reaches: EfficientNet-Lite0's "
    "int8 output sat at its top value on 7 of val50's 50 images (top-1 as float's there, 0.80)"
)


def is_auto(cal: CalibrationSchema | None) -> bool:
    return cal is not None and cal.source == AUTO


@dataclass(frozen=True)
class Choice:
    """The calibration setting to use (``source: roots`` or ``dataset``), the dataset split it implies
    (None: the run scores the whole list) and its record (``calibration.choice``)."""

    calibration: CalibrationSchema
    split: SearchSplit | None
    record: dict[str, Any]


def as_bundled(cal: CalibrationSchema) -> CalibrationSchema:
    """The auto setting's fallback: its roots (the bundled photos), every image."""
    return CalibrationSchema(name="bundled", source="roots", roots=cal.roots, num_images=0)


def unscored_slice(cal: CalibrationSchema, listed: int, count: int) -> str:
    """Why a slice of ``count`` of the ``listed`` images cannot calibrate, naming the key to change."""
    if cal.max_fraction >= 1:
        return (
            f"quant.calibration.max_fraction={cal.max_fraction}: the calibration slice would take all "
            f"{listed} images of the dataset and leave none to score; use a value below 1 (e.g. 0.25)"
        )
    return (
        f"quant.calibration.min_dataset_images={cal.min_dataset_images}: a dataset of {listed} image(s) "
        f"would give all {count} to the calibration slice and leave none to score; raise "
        f"quant.calibration.min_dataset_images above {listed} (the bundled photos calibrate instead), "
        "or use more images (task.num_images)"
    )


def choose(cal: CalibrationSchema, listed: int | None, why_not: str | None = None) -> Choice:
    """The choice for an auto setting ``cal``: ``listed`` images in the dataset's list (None: the
    task reads no dataset); ``why_not``: why the dataset cannot be sliced (a sharded run)."""
    least, most, share = cal.min_dataset_images, cal.num_images or 100, cal.max_fraction
    record: dict[str, Any] = {"rule": AUTO, "dataset_images": listed, "min_dataset_images": least}
    if listed is None or why_not or listed < least:
        few = f"the dataset has {listed} images, under {least}"
        reason = why_not or ("the task reads no dataset" if listed is None else few)
        record.update(chosen="bundled", reason=reason, risk=BUNDLED_RISK)
        return Choice(as_bundled(cal), None, record)
    count = max(1, min(most, int(listed * share)))
    if count >= listed:  # the slice is not scored: nothing would be left for the run to report on
        raise ConfigError(unscored_slice(cal, listed, count))
    fraction = count / listed  # as a float it may round up past count: then half an image less
    if sum(Split(fraction).in_search(listed)) != count:
        fraction = (count - 0.5) / listed
    split: SearchSplit = {"fraction": fraction, "scheme": "interleaved"}
    reason = f"the dataset has {listed} images (>= {least}): {count}, evenly spread, calibrate, not scored"
    calibration = CalibrationSchema(name=AUTO, source="dataset")
    return Choice(calibration, split, {**record, "chosen": "dataset", "reason": reason})
