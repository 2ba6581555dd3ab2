"""The installed ai-edge-litert must be a release whose C structs runtime/litert_capi.py mirrors."""

from __future__ import annotations

import importlib.metadata

import pytest

from evalharness.core.errors import EvalHarnessError
from evalharness.runtime import litert


@pytest.mark.parametrize("version", ["2.3.0", "2.3.7", "2.3.1rc2", "2.3.0.dev20260101"])
def test_supported_releases_pass(version):
    assert litert.check_litert_version(version) == version


@pytest.mark.parametrize("version", ["2.2.9", "2.4.0", "3.0.0", "2.10.1"])
def test_other_releases_are_refused_naming_both_versions(version):
    with pytest.raises(EvalHarnessError) as exc:
        litert.check_litert_version(version)
    message = str(exc.value)
    assert "\n" not in message
    assert f"ai-edge-litert {version} is installed" in message
    assert "ai-edge-litert>=2.3.0,<2.4" in message


def test_load_model_refuses_before_anything_loads(monkeypatch, tmp_path):
    """The installed version is read from the package metadata, once per load, before the backend."""
    real = importlib.metadata.version
    monkeypatch.setattr(
        importlib.metadata, "version", lambda name: "2.5.0" if name == "ai-edge-litert" else real(name)
    )
    from evalharness.runtime import load_model, plan_delegate

    with pytest.raises(EvalHarnessError, match="ai-edge-litert 2.5.0 is installed"):
        load_model(str(tmp_path / "absent.tflite"), plan_delegate({"name": "cpu"}))
