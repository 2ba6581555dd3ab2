"""The runner group and ``quant.calibration`` are typed like every core group: built into frozen
instances of their schemas (read by attribute), a null group stays None, bounds and keys checked."""

from __future__ import annotations

import dataclasses

import pytest

from evalharness.core.errors import ConfigError
from evalharness.core.schema import build
from evalharness.runtime import check_runner
from evalharness.runtime.runners import HostSettings, RunnerSettings
from evalharness.settings.groups import CalibrationSchema, QuantSchema, RunSettings

AUTO = {"name": "auto", "source": "auto", "roots": ["/b"], "num_images": 100, "min_dataset_images": 100,
        "max_fraction": 0.25}  # fmt: skip
WHERE = "config group 'quant'"


def test_quant_calibration_is_an_instance_of_its_schema():
    quant = build(QuantSchema, {"name": "int8", "recipe": "int8", "calibration": AUTO}, WHERE)
    assert isinstance(quant.calibration, CalibrationSchema)
    assert quant.calibration.source == "auto" and quant.calibration.roots == ("/b",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        quant.calibration.num_images = 3  # type: ignore[misc]


def test_a_null_calibration_stays_none():
    assert build(QuantSchema, {"name": "none", "calibration": None}, WHERE).calibration is None


@pytest.mark.parametrize(
    ("calibration", "named"),
    [({"source": "folder"}, "source='folder'"), ({"num_images": -1}, "num_images=-1"),
     ({"max_fraction": 2}, "max_fraction=2")],
)  # fmt: skip
def test_calibration_values_out_of_bounds_are_one_line_naming_the_key(calibration, named):
    with pytest.raises(ConfigError) as err:
        build(QuantSchema, {"name": "int8", "calibration": calibration}, WHERE)
    assert named in str(err.value) and "\n" not in str(err.value)


def test_the_runner_group_is_an_instance_of_its_runners_settings():
    runner = check_runner({"name": "host"}, latency_only_task=False)
    assert isinstance(runner, HostSettings) and isinstance(runner, RunnerSettings) and runner.name == "host"
    default = next(f for f in dataclasses.fields(RunSettings) if f.name == "runner")
    assert default.default_factory() == HostSettings()  # type: ignore[misc]
    with pytest.raises(ConfigError, match="batch_size"):
        check_runner({"name": "host", "batch_size": 4}, latency_only_task=False)
