"""The exact TFLite-tool resize in native code: LiteRT's own reference ``RESIZE_BILINEAR`` kernel.

The evaluation tool resizes with ``reference_ops::ResizeBilinear<float>`` (align_corners=false,
half_pixel_centers=false); :func:`evalharness.data.preprocess.resize_bilinear_tflite` ports it to
numpy and stays the oracle. Here the same kernel runs in LiteRT itself, on a one-op graph built with
:mod:`evalharness.runtime.modelgen` (``uint8 -> CAST -> float32 -> RESIZE_BILINEAR``) and an
Interpreter with ``OpResolverType.BUILTIN_REF``. Only the reference resolver may be used: the
optimized builtin kernel rounds differently (it differs from the tool on every val50 crop), and
XNNPACK would take the op over. The CAST is exact (every uint8 is a float32), so the float output
equals the port's bit for bit (tests/e2e/test_native_resize.py: val50, COCO, odd sizes, 1-pixel crops,
upscaling).

Interpreters are lent, one call at a time, from a free list per output size: as many exist as
threads ever resized at once, and a new thread borrows a warm one. (One per thread, as before, made
each new preparing thread pay ~2.7 ms for its first resize — the interpreter, its first allocation
and run — and the loop's calibration starts new threads for every block of 16 samples.) A new input
size costs a ``resize_tensor_input`` + ``allocate_tensors`` (images come in many sizes).
"""

from __future__ import annotations

import threading

import numpy as np

from evalharness.runtime.modelgen import resize_bilinear_model


class _Resizer:
    """An interpreter for one (channels, out_h, out_w), used by one thread at a time."""

    def __init__(self, model: bytes) -> None:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        self.interpreter = Interpreter(
            model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF, num_threads=1
        )
        self.input = self.interpreter.get_input_details()[0]["index"]
        self.output = self.interpreter.get_output_details()[0]["index"]
        self.shape: tuple[int, ...] | None = None

    def __call__(self, img: np.ndarray) -> np.ndarray:
        shape = (1, *img.shape)
        if shape != self.shape:
            self.interpreter.resize_tensor_input(self.input, shape, strict=True)
            self.interpreter.allocate_tensors()
            self.shape = shape
        # written straight into the input buffer: a crop is a strided view, so set_tensor would copy
        # it twice (contiguous first); the temporary view is gone before invoke checks for one
        self.interpreter.tensor(self.input)()[0] = img
        self.interpreter.invoke()
        resized: np.ndarray = self.interpreter.get_tensor(self.output)[0]  # the interpreter is untyped
        return resized


class NativeBilinear:
    """``resize(img, out_h, out_w)`` for uint8 H x W x C images, same result as the numpy port."""

    def __init__(self) -> None:
        self._free: dict[tuple[int, int, int], list[_Resizer]] = {}  # not in use now
        self._models: dict[tuple[int, int, int], bytes] = {}  # kept alive: the interpreters read them
        self._lock = threading.Lock()

    def _borrow(self, key: tuple[int, int, int]) -> _Resizer:
        with self._lock:
            free = self._free.setdefault(key, [])
            if free:
                return free.pop()
            if key not in self._models:
                self._models[key] = resize_bilinear_model(*key)
            model = self._models[key]
        return _Resizer(model)  # made outside the lock: other threads' resizes go on meanwhile

    def __call__(self, img: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
        if img.dtype != np.uint8 or img.ndim != 3:
            raise ValueError(f"native resize takes uint8 H x W x C images, not {img.dtype} {img.shape}")
        key = (int(img.shape[2]), int(out_h), int(out_w))
        resizer = self._borrow(key)
        try:
            return resizer(img)  # get_tensor's copy: nothing of the interpreter's goes back to the caller
        finally:
            with self._lock:
                self._free[key].append(resizer)


_SHARED: NativeBilinear | None = None


def shared() -> NativeBilinear:
    """The process's native resize (its models are built once per output size)."""
    global _SHARED
    if _SHARED is None:
        _SHARED = NativeBilinear()
    return _SHARED
