"""Reading YAML someone else wrote (a config folder on ``hydra.searchpath``, a run's
``.hydra/overrides.yaml``) as data within limits, before any loader builds it.

PyYAML's safe loader never runs a ``!!python`` tag, but it builds an alias bomb ("billion laughs":
nine anchors of nine aliases each) as shared references that OmegaConf then copies out to 9**9
nodes — a run that never starts — and it recurses once per nesting level, so a deeply nested file
is a ``RecursionError``. Here the parser's event stream (flat, no recursion) is walked first: the
nesting depth and the number of nodes the aliases expand to are bounded, and only then is the file
loaded, by the safe loader. Every refusal is one :class:`ConfigError` naming the file and the fix.

The one reader with limits for the project's YAML until ``core/untrusted.py`` takes it over.
"""

from __future__ import annotations

import os
import stat

import yaml

from evalharness.core.errors import ConfigError
from evalharness.core.escape import terminal
from evalharness.core.fileguard import file_error_reason

MAX_YAML_BYTES = 1 << 20  # a config or overrides file is a few KiB
MAX_YAML_DEPTH = 64
MAX_YAML_NODES = 100_000  # after expanding aliases


def read_yaml_file(path: str | os.PathLike, what: str) -> object:
    """The value of the YAML file at ``path`` (a ``what``: "config file", "overrides file"): a
    missing file, a folder, a FIFO or a loop of links is refused by name before anything is read."""
    where = f"{what} {terminal(path, '')}"
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise ConfigError(f"{where} is a directory; remove it or rename it")
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"{where} is not a regular file (FIFO, device or socket); remove it")
        with open(path, "rb") as f:
            data = f.read(MAX_YAML_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{where}: {file_error_reason(exc, path)}; fix or remove it") from None
    return load_yaml(data, where)


def load_yaml(data: bytes, where: str) -> object:
    """The value of the YAML document ``data`` (the bytes of file ``where``), or one ConfigError."""
    if len(data) > MAX_YAML_BYTES:
        raise ConfigError(f"{where}: {len(data)} bytes, over the {MAX_YAML_BYTES} a YAML file may have here")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where}: not UTF-8 text (byte {exc.start}); is it a YAML file?") from None
    try:
        _check_shape(text, where)
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        reason = terminal(" ".join(str(exc).split()), "")[:200]
        raise ConfigError(f"{where}: not valid YAML ({reason}); fix or remove it") from None


def _check_shape(text: str, where: str) -> None:
    """Refuse nesting deeper than MAX_YAML_DEPTH or more than MAX_YAML_NODES nodes once aliases are
    expanded, from the parser's events alone (nothing is built)."""
    sizes: dict[str, int] = {}  # anchor -> nodes it stands for
    open_: list[list] = [[None, 0]]  # [anchor, nodes so far] of each collection being read
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            open_.append([event.anchor, 1])
            if len(open_) > MAX_YAML_DEPTH:
                raise ConfigError(
                    f"{where}: nested deeper than {MAX_YAML_DEPTH} levels; is it a config file?"
                )
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            anchor, nodes = open_.pop()
        elif isinstance(event, yaml.AliasEvent):
            anchor, nodes = None, sizes.get(event.anchor, 1)
        elif isinstance(event, yaml.ScalarEvent):
            anchor, nodes = event.anchor, 1
        else:
            continue
        if anchor:
            sizes[anchor] = nodes
        open_[-1][1] += nodes
        if open_[-1][1] > MAX_YAML_NODES:
            raise ConfigError(
                f"{where}: its aliases expand to over {MAX_YAML_NODES} nodes (an alias bomb?); "
                "write the values out or remove the file"
            )
