"""SpillFile and SpilledArray (core/spill_file.py): what is written reads back bit for bit, from an
unlinked file (no name left in the temporary folder), and a spilled array pickles as its values."""

from __future__ import annotations

import errno
import pickle
import tempfile

import numpy as np
import pytest

from evalharness.core import spill_file
from evalharness.core.boundary import describe
from evalharness.core.spill_file import SpilledArray, SpillFile, spilled


def test_arrays_read_back_bit_for_bit_from_an_unnamed_file(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    file = SpillFile()
    values = np.array([0.1, -0.0, np.nan, 1e308, 3.0])
    small = spilled(values, file)
    assert small is values  # below SPILL_BYTES: kept in memory, no file made
    monkeypatch.setattr(spill_file, "SPILL_BYTES", 1)
    floats, ints = spilled(values, file), spilled(np.arange(7, dtype=np.int64), file)
    assert isinstance(floats, SpilledArray) and isinstance(ints, SpilledArray) and len(floats) == 5
    assert list(tmp_path.iterdir()) == []
    assert floats.whole().tobytes() == values.tobytes() and ints[2:5].tolist() == [2, 3, 4]
    assert floats[1:3].tobytes() == values[1:3].tobytes() and not floats[1:3].flags.writeable
    assert floats[4:2].shape == (0,) and floats[-2:].tobytes() == values[-2:].tobytes()
    with pytest.raises(IndexError):
        floats[::2]
    again = pickle.loads(pickle.dumps(floats))
    assert isinstance(again, np.ndarray) and again.tobytes() == values.tobytes()
    assert spilled(values, None) is values


def test_a_full_temporary_folder_is_said_with_the_folder_and_tmpdir(monkeypatch, tmp_path):
    """The file has no name, so the error names the folder it lies in and the variable that moves it."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    class Full:
        def seek(self, at: int) -> None:
            pass

        def write(self, data: object) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tempfile, "TemporaryFile", lambda **_: Full())
    with pytest.raises(OSError) as err:
        SpillFile().write(np.arange(4.0))
    line = describe(err.value)
    assert line.startswith("No space left on device in the temporary folder where the run keeps rows")
    assert "(TMPDIR chooses the folder)" in line and repr(str(tmp_path)) in line
    assert "the disk is full" in line
