"""Identical inputs, proved: each prediction record carries hashes of the exact input it was fed.

"Desktop and phone disagree" is most often a preprocessing, layout or label drift rather than the
model, and nobody checks the inputs. So the loop hashes, per sample, what it hands the model:

- ``input_sha256``: the exact tensors fed (dtype, shape and bytes of each input, in the model's own
  layout and dtype): equal only where two runs fed the very same bits;
- ``input_float_sha256``: the real values those tensors stand for, as float32 in NHWC (an NCHW image
  input transposed back; an integer input dequantised with its own scale and zero point), so an ONNX
  model fed NCHW and a ``.tflite`` fed NHWC, or an int8 and a uint8 input of the same real values,
  compare equal when their pixels are the same;
- ``input_hash``: how both were computed (``core/input_hash.py``: a CRC-32 per 8 KiB block under one
  sha256; records without it hashed the bytes with sha256), so records of two methods are never
  compared hash to hash.

``report diff`` compares them image by image (``report/input_check.py``). The layout comes from the
task (an image input's ``nhwc``/``nchw``); an input of another shape is hashed as it is. Each is
computed once: a float32 NHWC input is its own real values (one digest serves both), and an integer
input's real values are dequantised a window at a time, never as a whole float32 copy.

Where: in the loop's scoring blocks (``loop/blocks.py``), the block's inputs one after the other, so
the hashing code runs warm: 58–86 µs of CPU per MobileNet v1 0.25/128 quant sample there, against
82–165 µs when each sample was hashed on the preparing thread right after its decode and resize
(docs/benchmarks.md, *A whole run at ILSVRC size*).

A warm run hashes nothing: the tensor cache keeps each cached tensor's two digests beside it,
verified with the tensor (``data/tensor_cache.py``), and hands them back for the very array it
served, under the key :attr:`InputIdentity.tag` (method, the model's input quantisation, layout);
MobileNet v2 quant, warm: 203 → 6 µs of CPU per sample (docs/benchmarks.md, *Performance V*).
"""

from __future__ import annotations

import hashlib
import json
import weakref
from typing import Any, Protocol, runtime_checkable

import numpy as np

from evalharness.core.input_hash import FIELD, METHOD, real_digest, real_is_exact, tensors_digest
from evalharness.core.tensors import TensorInfo


@runtime_checkable
class IdentityMemo(Protocol):
    """Where a sample's identity hashes may be kept between runs: the tensor cache
    (``data/tensor_cache.py``, ``CachedTask``), for the very tensor it served."""

    def remembered(self, sample: Any, tensors: list[np.ndarray], tag: bytes) -> bytes | None: ...

    def remember(self, sample: Any, tensors: list[np.ndarray], row: bytes) -> None: ...


class InputIdentity:
    """The hashes of a sample's inputs, for a model's ``inputs`` and the task's image layout.

    ``memo``: a tensor cache keeping each cached tensor's two digests beside it; a tensor served from
    it with digests kept under this hashing's :attr:`tag` is not hashed again (the values are the
    ones hashing it gives: they were computed by this code from the same verified bytes)."""

    def __init__(
        self, inputs: list[TensorInfo], layout: str | None, memo: IdentityMemo | None = None
    ) -> None:
        self.inputs, self.layout, self.memo = inputs, layout, memo
        # what the real-values digest depends on besides the bytes: method, quantisation, layout
        key = [METHOD, layout, [(i.dtype, list(i.shape), i.scale, i.zero_point, i.quantized) for i in inputs]]
        self.tag = hashlib.sha256(json.dumps(key).encode()).digest()[:8]
        # id(first array) -> (every array, weakly; their fields): hashed ahead by a preparing thread.
        # The weak references prove the arrays are the ones hashed (an id outlives its array).
        self._ahead: dict[int, tuple[list[weakref.ref[np.ndarray]], dict[str, str]]] = {}

    def ahead(self, sample: Any, tensors: list[np.ndarray]) -> None:
        """Hash ``tensors`` now, on the thread that prepared them, for :meth:`kept` to hand back when
        the loop scores these very arrays. A phase's threads hash while no invoke runs
        (``loop.shape=phased``), so the hashing leaves the loop's thread, where it held the
        interpreter's cores idle (0.24 ms a MobileNet v2 quant sample)."""
        if not tensors:
            return
        fields = self.of(tensors, sample)
        self._ahead[id(tensors[0])] = ([weakref.ref(t) for t in tensors], fields)

    def kept(self, tensors: list[np.ndarray], sample: Any) -> dict[str, str] | None:
        """The hashes made :meth:`ahead` of the loop or kept by the memo for ``tensors`` (the very
        arrays hashed, or served for ``sample``), or None: they must be computed (:meth:`of`)."""
        found = self._ahead.pop(id(tensors[0]), None) if tensors and self._ahead else None
        same = found is not None and len(found[0]) == len(tensors)
        if found is not None and same and all(r() is t for r, t in zip(found[0], tensors, strict=True)):
            return found[1]
        if self.memo is None or sample is None or len(tensors) != len(self.inputs):
            return None
        row = self.memo.remembered(sample, tensors, self.tag)
        return None if row is None else _fields(row[8:40].hex(), row[40:72].hex())

    def of(self, tensors: list[np.ndarray], sample: Any = None) -> dict[str, str]:
        if len(tensors) != len(self.inputs):  # a stand-in model describing no inputs: the exact hash only
            return {"input_sha256": tensors_digest(tensors), FIELD: METHOD}
        if (kept := self.kept(tensors, sample)) is not None:
            return kept
        exact = tensors_digest(tensors)
        pairs = zip(tensors, self.inputs, strict=True)
        same = all(real_is_exact(np.asarray(t), i, self.layout) for t, i in pairs)
        real = exact if same else real_digest(tensors, self.inputs, self.layout)
        if self.memo is not None and sample is not None:
            self.memo.remember(sample, tensors, self.tag + bytes.fromhex(exact) + bytes.fromhex(real))
        return _fields(exact, real)


def _fields(exact: str, real: str) -> dict[str, str]:
    return {"input_sha256": exact, "input_float_sha256": real, FIELD: METHOD}


def hashes_of(
    tensors: list[np.ndarray], identity: InputIdentity | None, sample: Any = None
) -> dict[str, str]:
    """The record fields of ``tensors``' hashes ({} without ``identity``); ``sample``: which sample
    they are, for the identity's memo."""
    return identity.of(tensors, sample) if identity is not None else {}
