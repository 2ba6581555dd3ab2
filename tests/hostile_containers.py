"""Hostile container files built by hand, and a fork that measures what reading one costs.

pyarrow writes only valid parquet; the files here declare what their bytes do not hold (a page of
2**40 bytes, a DELTA_BYTE_ARRAY page that repeats a 32 KB prefix, a delta block of 65,536 values in
one miniblock, a footer of millions of empty structs). :func:`parquet` writes the compact-protocol
footer and page headers itself, :func:`delta_packed` the DELTA_BINARY_PACKED encoding, and
:func:`bounded` runs a read in a forked child and reports its error, time and peak memory growth.
"""

from __future__ import annotations

import os
import pickle
import resource
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pack_containers import _varint as varint  # an unsigned LEB128 varint, as protobuf's

STOP, TRUE, FALSE, I32, I64, BIN, LIST, MAP, STRUCT = 0, 1, 2, 5, 6, 8, 9, 11, 12
INT32, INT64, BYTE_ARRAY = 1, 2, 6
PLAIN, RLE_DICTIONARY, DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY = 0, 8, 5, 6, 7
DATA_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 2, 3


def zigzag(n: int) -> int:
    return (n << 1) ^ (n >> 63)


def struct(fields: dict[int, tuple[int, Any]]) -> bytes:
    """A compact-protocol struct: field id -> (type, value); a bool is (TRUE, None) or (FALSE, None)."""
    out, last = bytearray(), 0
    for fid in sorted(fields):
        kind, value = fields[fid]
        delta = fid - last
        out += bytes([delta << 4 | kind]) if 0 < delta <= 15 else bytes([kind]) + varint(zigzag(fid))
        out += _value(kind, value)
        last = fid
    return bytes(out + bytes([STOP]))


def _value(kind: int, value: Any) -> bytes:
    if kind in (TRUE, FALSE):
        return b""
    if kind in (I32, I64):
        return varint(zigzag(value))
    if kind == BIN:
        return varint(len(value)) + value
    if kind == STRUCT:
        return struct(value)
    element, items = value
    head = (
        bytes([len(items) << 4 | element])
        if len(items) < 15
        else bytes([0xF0 | element]) + varint(len(items))
    )
    return head + b"".join(_value(element, item) for item in items)


def page(
    body: bytes, values: int, encoding: int = PLAIN, raw: int | None = None, kind: int = DATA_PAGE
) -> bytes:
    """A page header (declaring ``raw`` decoded bytes: the body's length unless told) and its body."""
    sizes = {1: (I32, kind), 2: (I32, len(body) if raw is None else raw), 3: (I32, len(body))}
    if kind == DICTIONARY_PAGE:
        sizes[7] = (STRUCT, {1: (I32, values), 2: (I32, PLAIN)})
    elif kind == DATA_PAGE_V2:
        v2 = {1: (I32, values), 2: (I32, 0), 3: (I32, values), 4: (I32, encoding), 5: (I32, 0), 6: (I32, 0)}
        sizes[8] = (STRUCT, {**v2, 7: (TRUE, None)})
    else:
        sizes[5] = (STRUCT, {1: (I32, values), 2: (I32, encoding), 3: (I32, 3), 4: (I32, 3)})
    return struct(sizes) + body


def snappy_literal(data: bytes, declared: int | None = None) -> bytes:
    """A raw snappy block of ``data`` as literals (declaring ``declared`` decoded bytes if told)."""
    out = bytearray(varint(len(data) if declared is None else declared))
    for i in range(0, len(data), 1 << 16):
        part = data[i : i + (1 << 16)]
        out += bytes([61 << 2]) + (len(part) - 1).to_bytes(2, "little") + part
    return bytes(out)


@dataclass
class Column:
    """A required column of one row group: its path (one level of struct at most), type and pages."""

    path: tuple[str, ...]
    physical: int
    pages: Sequence[bytes]
    values: int
    codec: int = 0
    dictionary: bool = False  # the first page is a dictionary page
    meta: dict[int, tuple[int, Any]] = field(default_factory=dict)


def parquet(columns: Sequence[Column], rows: int, metadata: dict[bytes, bytes] | None = None,
            footer: bytes | None = None) -> bytes:  # fmt: skip
    """A parquet file of one row group holding ``columns`` (``footer`` replaces the footer's bytes)."""
    body, chunks = bytearray(b"PAR1"), []
    for col in columns:
        start = len(body)
        data_at = start + (len(col.pages[0]) if col.dictionary else 0)
        body += b"".join(col.pages)
        meta = {
            1: (I32, col.physical), 2: (LIST, (I32, [PLAIN])),
            3: (LIST, (BIN, [p.encode() for p in col.path])),
            4: (I32, col.codec), 5: (I64, col.values), 6: (I64, len(body) - start),
            7: (I64, len(body) - start), 9: (I64, data_at), **({11: (I64, start)} if col.dictionary else {}),
        }  # fmt: skip
        chunks.append({2: (I64, start), 3: (STRUCT, {**meta, **col.meta})})
    schema: list[dict[int, tuple[int, Any]]] = []
    tops = list(dict.fromkeys(c.path[0] for c in columns))
    schema.append({4: (BIN, b"schema"), 5: (I32, len(tops))})
    for top in tops:
        kids = [c for c in columns if c.path[0] == top and len(c.path) == 2]
        if kids:
            schema.append({3: (I32, 0), 4: (BIN, top.encode()), 5: (I32, len(kids))})
        for c in kids or [c for c in columns if c.path == (top,)]:
            schema.append({1: (I32, c.physical), 3: (I32, 0), 4: (BIN, c.path[-1].encode())})
    group = {1: (LIST, (STRUCT, chunks)), 2: (I64, len(body)), 3: (I64, rows)}
    fields = {1: (I32, 1), 2: (LIST, (STRUCT, schema)), 3: (I64, rows), 4: (LIST, (STRUCT, [group]))}
    if metadata:
        fields[5] = (LIST, (STRUCT, [{1: (BIN, k), 2: (BIN, v)} for k, v in metadata.items()]))
    meta = struct(fields) if footer is None else footer
    return bytes(body) + meta + len(meta).to_bytes(4, "little") + b"PAR1"


def pack(values: Sequence[int], width: int) -> bytes:
    """``values`` of ``width`` bits, least-significant bit first, a group of 8 at a time."""
    out = bytearray()
    for i in range(0, len(values), 8):
        group = list(values[i : i + 8]) + [0] * (8 - len(values[i : i + 8]))
        out += sum(v << (k * width) for k, v in enumerate(group)).to_bytes(width, "little")
    return bytes(out)


def delta_packed(values: Sequence[int], block: int = 128, minis: int = 4) -> bytes:
    """DELTA_BINARY_PACKED of ``values`` (non-negative deltas' widths computed per miniblock)."""
    out = varint(block) + varint(minis) + varint(len(values)) + varint(zigzag(values[0] if values else 0))
    deltas = [b - a for a, b in zip(values, values[1:], strict=False)]
    per = block // minis
    for start in range(0, len(deltas), block):
        chunk = deltas[start : start + block]
        least = min(chunk)
        rel = [d - least for d in chunk]
        groups = [rel[i : i + per] for i in range(0, len(rel), per)]
        widths = [max(g).bit_length() for g in groups] + [0] * (minis - len(groups))
        out += varint(zigzag(least)) + bytes(widths)
        out += b"".join(pack(g + [0] * (per - len(g)), w) for g, w in zip(groups, widths, strict=False))
    return out


@dataclass(frozen=True)
class Outcome:
    """What a read did in the child: the error it raised (type name, message; None for none), its
    result's repr, the CPU seconds it took, the growth of its peak resident memory in bytes."""

    error: str | None
    message: str
    seconds: float
    peak_growth: int
    killed: bool = False


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def bounded(read: Callable[[], Any], timeout: float = 20.0) -> Outcome:
    """``read()`` in a forked child: a read that runs past ``timeout`` is killed (``killed``)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(r)
        with open("/proc/self/statm") as f:  # a read that runs away fails in here, not the machine
            mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (mapped + (3 << 30), resource.RLIM_INFINITY))
        # CPU seconds, not wall time: a loaded machine (parallel test workers) stretches the wall
        # clock of a linear read, never its CPU time by much; a quadratic read's CPU time grows
        start, began = _rss(), _cpu_seconds()
        try:
            result, error, message = read(), None, ""
            message = repr(result)[:2000]
        except BaseException as exc:  # noqa: BLE001 - whatever it is, the parent asserts on it
            error, message = type(exc).__name__, str(exc)
        seconds = _cpu_seconds() - began
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - start
        os.write(w, pickle.dumps(Outcome(error, message, seconds, peak)))
        os._exit(0)
    os.close(w)
    deadline, chunks = time.monotonic() + timeout, []
    os.set_blocking(r, False)
    while True:
        try:
            data = os.read(r, 1 << 16)
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                os.close(r)
                return Outcome("Killed", f"still running after {timeout} s", timeout, 0, killed=True)
            time.sleep(0.01)
            continue
        if not data:
            break
        chunks.append(data)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if not chunks:  # killed by the kernel (out of memory) or a signal
        return Outcome("Died", f"wait status {status}", 0.0, 0, killed=True)
    return pickle.loads(b"".join(chunks))
