"""A folder set by EVALHARNESS_MODELS / _DATA / _CACHE that cannot be a folder is refused naming the
variable (core/paths.check_path_variables); one not there yet, or set on the command line, passes."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from evalharness.core.errors import ConfigError
from evalharness.core.paths import PATH_VARIABLES, check_path_variables


@pytest.mark.parametrize("key", list(PATH_VARIABLES))
@pytest.mark.parametrize("kind", ["fifo", "file", "under_a_file", "symlink_loop"])
def test_a_variable_that_cannot_be_a_folder_is_named(key, kind, tmp_path, monkeypatch):
    (tmp_path / "file").write_text("x")
    path = {"file": tmp_path / "file", "under_a_file": tmp_path / "file" / "x"}.get(kind, tmp_path / kind)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink_loop":
        os.symlink(path.name, path)
    monkeypatch.setenv(PATH_VARIABLES[key], str(path))
    with pytest.raises(ConfigError, match=rf"^{PATH_VARIABLES[key]}={path} \(paths\.{key}\) is "):
        check_path_variables(SimpleNamespace(**{key: str(path)}))


def test_a_folder_not_there_yet_or_not_from_the_variable_passes(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("EVALHARNESS_CACHE", str(tmp_path / "new" / "cache"))
    monkeypatch.setenv("EVALHARNESS_DATA", str(tmp_path / "file"))
    check_path_variables(SimpleNamespace(cache_dir=str(tmp_path / "new" / "cache"), data_dir=str(tmp_path)))
