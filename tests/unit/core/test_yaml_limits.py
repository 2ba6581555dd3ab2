"""The YAML read from someone else's file (core/untrusted.read_yaml, settings/config_files.py): data within
limits, never a tag run, never a bomb expanded, one ConfigError naming the file."""

from __future__ import annotations

import os

import pytest

from evalharness.core.errors import ConfigError
from evalharness.core.untrusted import MAX_ALIAS_NODES, MAX_DEPTH, parse_yaml, read_yaml
from evalharness.settings.config_files import config_file_problem

BOMB = b'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + b"".join(
    f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]\n".encode() for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (BOMB, f"expand to over {MAX_ALIAS_NODES} values"),
        (b"x: " + b"[" * 100_000 + b"]" * 100_000, f"nests deeper than {MAX_DEPTH} levels"),
        (b'x: !!python/object/apply:os.system ["touch marker"]\n', "not valid YAML (could not determine"),
        ("\x00\x01 binary", "not valid YAML"),
        (b"x: [1, 2\n", "not valid YAML"),
        (b"x: \x1b[2J\n", "not valid YAML"),
    ],
    ids=["alias_bomb", "deep_nesting", "python_tag", "binary", "unclosed", "control_character"],
)
def test_hostile_yaml_is_one_error_naming_the_file(data, said, tmp_path):
    with pytest.raises(ConfigError) as info:
        text = data if isinstance(data, str) else data.decode()
        parse_yaml(text, "config file f.yaml", (dict, type(None)), ConfigError)
    message = str(info.value)
    assert message.startswith("config file f.yaml ") and said in message and "\n" not in message
    assert "\x1b" not in message and not (tmp_path / "marker").exists()


def test_plain_yaml_and_moderate_aliases_load():
    loaded = parse_yaml("a: &a [1, 2]\nb: *a\nc: {d: x}\n", "f")
    assert loaded == {"a": [1, 2], "b": [1, 2], "c": {"d": "x"}}
    assert parse_yaml("", "f", (dict, type(None))) is None


@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink_loop", "missing"])
def test_a_yaml_path_that_is_not_a_file_is_refused_by_name(kind, tmp_path):
    path = tmp_path / "c.yaml"
    {"fifo": os.mkfifo, "directory": os.mkdir, "symlink_loop": lambda p: os.symlink(p.name, p)}.get(
        kind, lambda p: None
    )(path)
    with pytest.raises(ConfigError, match=rf"^config file {path}"):
        read_yaml(path, "config file", (dict, type(None)), ConfigError)


def test_every_user_config_folder_is_checked(tmp_path):
    (tmp_path / "a" / "dataset").mkdir(parents=True)
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "dataset" / "bad.yaml").write_bytes(BOMB)
    (tmp_path / "b" / "ok.yaml").write_text("x: 1\n")
    problem = config_file_problem([tmp_path / "b", tmp_path / "a", tmp_path / "missing"])
    assert problem and problem.startswith(f"config file {tmp_path / 'a' / 'dataset' / 'bad.yaml'} ")
    assert config_file_problem([tmp_path / "b"]) is None
