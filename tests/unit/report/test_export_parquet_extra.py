"""Without pyarrow, ``report export --format parquet`` names the extra that installs it."""

from __future__ import annotations

import sys

import pytest

from evalharness.core.errors import EvalHarnessError
from evalharness.report.commands.export import to_parquet


def test_missing_pyarrow_names_the_parquet_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    with pytest.raises(EvalHarnessError) as exc:
        to_parquet(None)  # type: ignore[arg-type]  # refused before the run is read
    assert "pip install 'evalharness[parquet]'" in str(exc.value)
    assert "\n" not in str(exc.value)
