"""A ``.pt2`` archive read as data, before torch sees a byte of it.

``torch.export.load`` unpickles parts of the archive (the weights of an older layout, the sample
inputs, constants: each a ``torch.save`` file, itself a zip holding ``data.pkl``), and an unpickler
runs whatever callable a pickle names: a model file from someone else would run code while it is
validated. So the archive is opened here with :mod:`zipfile` and every part torch could unpickle is
*read*, never loaded, with :mod:`pickletools` (a parser that executes nothing):

- a part is a pickle when its name says so (``.pkl``, ``.pickle``, ``.pt``, ``.pth``: the names
  ``torch.save`` artifacts have in every layout of the archive), when a payload config marks it
  ``use_pickle`` (torch then ``torch.load``s it with ``weights_only=False``, whatever its name), or
  when its bytes start with a pickle protocol header; a part that is itself a zip (a ``torch.save``
  file) is opened the same way, one level down at most;
- a pickle may hold plain data (numbers, strings, bytes, tuples, lists, dicts, sets), the
  persistent ids by which ``torch.save`` points at its storages, and calls of an allow-list of
  callables only: :data:`ALLOWED_GLOBALS`, what ``torch.save`` writes for tensors, parameters and a
  state dict (the tensor rebuilders, the typed storages, ``OrderedDict``). Any other callable
  (``os.system``, ``builtins.eval``, a class of the model's code), an ``INST``/``OBJ`` call by name,
  the extension registry or a text persistent id is refused, naming the part and what it names;
- a ``STACK_GLOBAL`` is allowed only when the two strings it takes were pushed right before it
  (followed through the memo), so that what it names is known without running anything;
- every ``.json`` part goes through the untrusted-JSON limits (depth, number length) first;
- names are unique (a second part of one name is what another zip reader may pick instead),
  members are neither encrypted nor declared larger, in all, than a model may be.

The allow-list is the one decision: a plain exported program (weights stored raw, as
``torch.export.save`` writes them since torch 2.6, or pickled tensors as before) passes; an archive
with pickled Python objects of any other kind is refused with the fix (export it again from code
you trust). Nothing here imports torch: the check runs, and is tested, without it.
"""

from __future__ import annotations

import io
import json
import pickletools
import posixpath
import re
import struct
import zipfile
from typing import Any

from evalharness.core.errors import ConfigError
from evalharness.core.untrusted import check_json_limits

PICKLE_SUFFIXES = (".pkl", ".pickle", ".pt", ".pth")
MAX_MEMBERS = 100_000  # an exported program has a few parts a weight: 100,000 is far past any real one
MAX_NESTED = 1  # a torch.save zip inside the archive; a zip inside that is no torch layout
MAX_PICKLE_BYTES = 256 << 20  # a pickle holds the structure; the tensors' bytes are parts of their own
ALLOWED_GLOBALS = frozenset({
    ("collections", "OrderedDict"),
    ("_codecs", "encode"),  # protocol 2's bytes: encode(text, "latin1")
    ("builtins", "set"), ("__builtin__", "set"), ("builtins", "frozenset"), ("__builtin__", "frozenset"),
    ("builtins", "bytearray"), ("__builtin__", "bytearray"),
    ("torch._utils", "_rebuild_tensor_v2"),
    ("torch._utils", "_rebuild_parameter"),
    ("torch._utils", "_rebuild_parameter_with_state"),
    ("torch", "Size"),
    ("torch", "device"),
})  # fmt: skip
_STORAGE = re.compile(r"[A-Za-z0-9]*Storage")  # torch.FloatStorage, torch.BFloat16Storage, ...
_DTYPES = frozenset({
    "float16", "float32", "float64", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool",
    "complex64", "complex128", "qint8", "quint8", "qint32",
})  # fmt: skip
_REFUSED_OPS = {
    "INST": "a call of a class named in the pickle (INST)",
    "OBJ": "a call of a class object (OBJ)",
    "EXT1": "a callable from the extension registry (EXT1)",
    "EXT2": "a callable from the extension registry (EXT2)",
    "EXT4": "a callable from the extension registry (EXT4)",
    "PERSID": "a text persistent id (PERSID), which torch.save never writes",
}
_STRINGS = frozenset({
    "STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8",
})  # fmt: skip
_GETS = frozenset({"GET", "BINGET", "LONG_BINGET"})
_PUTS = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_ZIP = b"PK\x03\x04"


def allowed_global(module: str, name: str) -> bool:
    """Whether a pickle may name ``module.name``: a tensor rebuilder, a typed storage, a dtype."""
    if (module, name) in ALLOWED_GLOBALS:
        return True
    return module == "torch" and (_STORAGE.fullmatch(name) is not None or name in _DTYPES)


def check_pt2_archive(buf: bytes, where: str, limit: int) -> None:
    """Refuse an archive torch would run code from, or that is not one: one :class:`ConfigError`
    naming ``where`` (``model.path=x.pt2``), the part and the fix. ``limit``: bytes the members may
    declare in all (the model-file bound)."""
    _check_zip(buf, where, [limit], depth=0)


def _check_zip(buf: bytes, where: str, budget: list[int], depth: int) -> None:
    """Every member of one zip: its JSON parts first (their payload configs name the parts torch
    unpickles whatever their names), then every part that is, or may be read as, a pickle."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(buf))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError):
        raise ConfigError(
            f"{where}: not a .pt2 archive (not a zip file); save it with torch.export.save"
        ) from None
    with archive:
        members = _members(archive, where, budget)
        named: set[str] = set()
        for info in members:
            if info.filename.lower().endswith(".json"):
                data = _read(archive, info, where)
                check_json_limits(data, f"{where}: its part {info.filename!r}", ConfigError)
                named |= pickled_payloads(data)
        for info in members:
            name = info.filename
            if name.lower().endswith(".json"):
                continue
            told = name.lower().endswith(PICKLE_SUFFIXES) or posixpath.basename(name) in named
            head = _read(archive, info, where, 4)
            if head == _ZIP:
                if depth >= MAX_NESTED:
                    raise ConfigError(
                        f"{where}: its part {name!r} nests zip files deeper than torch.save writes"
                    )
                _check_zip(_read(archive, info, where), f"{where}: its part {name!r}", budget, depth + 1)
            elif told or _protocol_header(head):
                _check_pickle(_read(archive, info, where), f"{where}: its part {name!r}")


def _members(archive: zipfile.ZipFile, where: str, budget: list[int]) -> list[zipfile.ZipInfo]:
    """The archive's members: not too many, each name once, none encrypted, within the budget."""
    members = archive.infolist()
    if len(members) > MAX_MEMBERS:
        raise ConfigError(f"{where}: {len(members)} parts, over the {MAX_MEMBERS} an exported program has")
    seen: set[str] = set()
    for info in members:
        name = info.filename
        if name in seen:
            raise ConfigError(
                f"{where}: two parts named {name!r} (another zip reader may take the other one); "
                "save it again with torch.export.save"
            )
        seen.add(name)
        if info.flag_bits & 0x1:
            raise ConfigError(f"{where}: its part {name!r} is encrypted; an exported program is not")
        budget[0] -= info.file_size
        if budget[0] < 0:
            raise ConfigError(
                f"{where}: its parts declare more bytes than a model may have here; not a .pt2 torch wrote"
            )
    return members


def _read(archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str, size: int = -1) -> bytes:
    """A member's bytes (its first ``size``), at most what it declares (zipfile stops there)."""
    try:
        with archive.open(info) as f:
            return f.read(size)
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, ValueError, OSError, EOFError) as exc:
        reason = " ".join(str(exc).split())[:120]
        raise ConfigError(
            f"{where}: its part {info.filename!r} cannot be read ({reason}); not a .pt2 torch wrote"
        ) from None


def pickled_payloads(data: bytes) -> set[str]:
    """The file names a payload config (``data/weights/*_config.json``, ``data/constants/…``) marks
    ``use_pickle``: torch.load reads those parts whatever they are named. Found anywhere in any JSON
    part (walked without recursion; the limits were checked), by their last path component."""
    try:
        stack: list[Any] = [json.loads(data)]
    except (ValueError, RecursionError):  # not JSON: torch refuses it too, having read nothing from it
        return set()
    found: set[str] = set()
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("use_pickle") and isinstance(node.get("path_name"), str):
                found.add(posixpath.basename(node["path_name"].rstrip("/")))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def _protocol_header(head: bytes) -> bool:
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def _check_pickle(data: bytes, where: str) -> None:
    """Every opcode of the pickle read in order (none run): plain data and allow-listed calls only.
    Checked as far as the stream parses: an unpickler runs what precedes a damaged byte too."""
    if len(data) > MAX_PICKLE_BYTES:
        raise ConfigError(
            f"{where}: a pickle of {len(data)} bytes, over the {MAX_PICKLE_BYTES} one may have here"
        )
    memo: dict[object, object] = {}
    recent: list[object] = []  # what the last two stack pushes were (a string, or None: anything else)
    try:
        for op, arg, _ in pickletools.genops(data):
            name = op.name
            pushed: object = None
            if name in _REFUSED_OPS:
                raise ConfigError(f"{where}: a pickle holding {_REFUSED_OPS[name]}: code, not data; {_FIX}")
            if name == "MEMOIZE":
                memo[len(memo)] = recent[-1] if recent else None
                continue
            if name in _PUTS:
                memo[arg] = recent[-1] if recent else None
                continue
            if name in _STRINGS:
                pushed = arg.decode("latin-1") if isinstance(arg, bytes) else arg
            elif name in _GETS:
                pushed = memo.get(arg)
            elif name == "GLOBAL":
                _check_global(*str(arg).split(" ", 1), where=where)
            elif name == "STACK_GLOBAL":
                module, qualname = recent if len(recent) == 2 else (None, None)
                if not isinstance(module, str) or not isinstance(qualname, str):
                    raise ConfigError(
                        f"{where}: a pickle naming a callable it computes (STACK_GLOBAL of values that are "
                        f"not plain strings): code, not data; {_FIX}"
                    )
                _check_global(module, qualname, where=where)
            recent = [*recent[-1:], pushed]
    except (
        ValueError,
        EOFError,
        struct.error,
    ):  # damaged from here on: an unpickler stops here too, having run nothing refused
        return


def _check_global(module: str, name: str = "", *, where: str) -> None:
    if not allowed_global(module, name):
        shown = f"{module}.{name}"[:120].encode("unicode_escape").decode("ascii")
        raise ConfigError(f"{where}: a pickle that calls {shown}: code, not data; {_FIX}")


_FIX = (
    "evalharness loads a .pt2 only if its pickles hold tensors and plain data; export the program "
    "again with torch.export.save from code you trust"
)
