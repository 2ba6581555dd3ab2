"""Image preprocessing that reproduces the reference tools bit for bit.

Accuracy on 50 images swings by several points when the resize differs in the last bit (values are
truncated to uint8), so the default path is an exact numpy port of TFLite's evaluation-tool
preprocessing (``image_preprocessing_stage.cc``): central crop, then
``reference_ops::ResizeBilinear<float>`` with align_corners=false and half_pixel_centers=false,
evaluated in float32 in the kernel's order. Pillow's own bilinear resize antialiases when
downscaling and gives other numbers; it, and OpenCV's bilinear, are offered only as explicit options.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from functools import cache
from types import ModuleType
from typing import Any

import numpy as np
from PIL import Image

from evalharness.core.errors import ConfigError, ModelMismatchError
from evalharness.core.opencv import require_opencv
from evalharness.data.decode import decode_rgb, decode_rgb_bytes


@dataclass(frozen=True)
class PreprocessSpec:
    """How a model family wants its pixels. Values come from ``conf/model/*.yaml``."""

    # central_fraction | short_side_padded | resize_shorter_then_crop | none
    crop: str = "central_fraction"
    # central_fraction: fraction of each side kept; resize_shorter_then_crop: S / shorter side
    # after resizing (0.875 = "resize 256, crop 224")
    crop_fraction: float = 0.875
    crop_padding: int = 32  # short_side_padded: crop = round(S / (S + padding) * short side)
    resize: str = "tflite_bilinear"  # tflite_bilinear | pil_bilinear | pil_bicubic | opencv_bilinear
    channel_order: str = "rgb"  # rgb | bgr
    mean: tuple[float, ...] = (127.5, 127.5, 127.5)  # float inputs: (x - mean) / std
    std: tuple[float, ...] = (127.5, 127.5, 127.5)
    # Integer inputs: "tool" feeds pixels as-is (uint8) or x - 128 (int8), exactly as TFLite's
    # evaluation tool, ignoring the tensor's quantisation parameters; "quantize" normalises with
    # mean/std and quantises with the input tensor's own scale/zero-point; "auto" (the presets'
    # value) is "tool" where the file's own arithmetic gives the pixels as they are, within one
    # step, else "quantize" (:func:`fitted_integer_input`).
    integer_input: str = "tool"
    # Detection: letterbox keeps the aspect ratio and pads (YOLO style) instead of stretching (SSD).
    letterbox: bool = False
    pad_value: float = 114.0
    # Input tensor layout: auto ([1, H, W, 3] -> nhwc, [1, 3, H, W] -> nchw, as converted PyTorch
    # models keep it), or forced. The pixels are the same; only the tensor's axis order differs.
    layout: str = "auto"


CROPS = ("central_fraction", "short_side_padded", "resize_shorter_then_crop", "none")
RESIZES = ("tflite_bilinear", "pil_bilinear", "pil_bicubic", "opencv_bilinear")
INTEGER_MODES = ("auto", "tool", "quantize")
LAYOUTS = ("auto", "nhwc", "nchw")


def validate_spec(spec: PreprocessSpec) -> None:
    for name, value, valid in (
        ("crop", spec.crop, CROPS),
        ("resize", spec.resize, RESIZES),
        ("integer_input", spec.integer_input, INTEGER_MODES),
        ("channel_order", spec.channel_order, ("rgb", "bgr")),
        ("layout", spec.layout, LAYOUTS),
    ):
        if value not in valid:
            raise ConfigError(f"model.preprocess.{name}={value!r} is not one of {', '.join(valid)}")
    if spec.resize == "opencv_bilinear":  # said before the first image, not at it
        require_opencv("model.preprocess.resize=opencv_bilinear")
    if not 0.0 < spec.crop_fraction <= 1.0:
        raise ConfigError(f"model.preprocess.crop_fraction={spec.crop_fraction} must be in (0, 1]")
    if len(spec.mean) != 3 or len(spec.std) != 3 or min(spec.std) <= 0:
        raise ConfigError("model.preprocess.mean/std need 3 values each and std > 0")


def spec_from_config(values: Mapping[str, Any] | None) -> PreprocessSpec:
    """A validated spec from ``model.preprocess`` (YAML lists become tuples)."""
    fields: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in dict(values or {}).items()
    }
    spec = PreprocessSpec(**fields)
    validate_spec(spec)
    return spec


def _round_half_away(x: float) -> int:
    """C's round(): halves away from zero (Python's round() is banker's rounding)."""
    return int(np.floor(x + 0.5)) if x >= 0 else -int(np.floor(-x + 0.5))


def central_crop(img: np.ndarray, fraction: float) -> np.ndarray:
    """TFLite tool crop: round(fraction * side), offset round((side - crop) / 2)."""
    h, w = img.shape[:2]
    ch, cw = max(1, _round_half_away(fraction * h)), max(1, _round_half_away(fraction * w))
    top, left = _round_half_away((h - ch) / 2.0), _round_half_away((w - cw) / 2.0)
    return img[top : top + ch, left : left + cw]


def short_side_padded_crop(img: np.ndarray, size: int, padding: int) -> np.ndarray:
    """EfficientNet eval crop: centre square of side round(S / (S + pad) * min(H, W))."""
    h, w = img.shape[:2]
    c = max(1, _round_half_away(size / (size + padding) * min(h, w)))
    top, left = ((h - c) + 1) // 2, ((w - c) + 1) // 2
    return img[top : top + c, left : left + c]


def _bilinear_axis(in_size: int, out_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    scale = np.float32(in_size) / np.float32(out_size)
    src = np.arange(out_size, dtype=np.float32) * scale
    lo = np.maximum(np.floor(src), np.float32(0)).astype(np.int64)
    hi = np.minimum(np.ceil(src).astype(np.int64), in_size - 1)
    frac = (src - lo.astype(np.float32)).astype(np.float32)
    return lo, hi, frac


def resize_bilinear_tflite(img: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    """``tflite::reference_ops::ResizeBilinear<float>`` (align_corners=false, half_pixel_centers=false).

    value = p[y0,x0]*(1-dy)*(1-dx) + p[y1,x0]*dy*(1-dx) + p[y0,x1]*(1-dy)*dx + p[y1,x1]*dy*dx,
    every step in float32 and summed left to right, so the result matches the kernel bit for bit.
    Speed without changing a bit: pixels are gathered whole (one C-byte item each) in the source
    dtype, and weights are laid out per row / per (column, channel) so each multiply runs over long
    contiguous rows instead of broadcasting over a 3-long channel axis.
    """
    src = np.asarray(img)
    channels = src.shape[2]
    y0, y1, dy = _bilinear_axis(src.shape[0], out_h)
    x0, x1, dx = _bilinear_axis(src.shape[1], out_w)
    one = np.float32(1)
    wy0, wy1 = (one - dy)[:, None], dy[:, None]
    wx0, wx1 = np.repeat(one - dx, channels), np.repeat(dx, channels)
    pixel = np.dtype((np.void, channels * src.dtype.itemsize))
    rows0 = np.ascontiguousarray(src[y0]).view(pixel)[..., 0]  # [out_h, W] of whole pixels
    rows1 = np.ascontiguousarray(src[y1]).view(pixel)[..., 0]

    def term(rows: np.ndarray, cols: np.ndarray, wy: np.ndarray, wx: np.ndarray) -> np.ndarray:
        t = np.take(rows, cols, axis=1).view(src.dtype).reshape(out_h, out_w * channels)
        t = t.astype(np.float32)  # uint8 -> float32 is exact, so convert after gathering
        t *= wy  # (p * wy) * wx, in place: the kernel's order, fewer temporaries
        t *= wx
        return t

    out = term(rows0, x0, wy0, wx0)
    out += term(rows1, x0, wy1, wx0)
    out += term(rows0, x1, wy0, wx1)
    out += term(rows1, x1, wy1, wx1)
    return out.reshape(out_h, out_w, channels)


Resize = Callable[[np.ndarray, int, int], np.ndarray]  # (HxWxC image, height, width) -> resized
_exact_resize: Resize = resize_bilinear_tflite  # what "tflite_bilinear" runs; see set_exact_resize


def set_exact_resize(resize: Resize | None = None) -> None:
    """Which implementation runs the tool's resize (None: the numpy port above). The run installs
    LiteRT's own reference kernel (``loop.resize=native``, :mod:`evalharness.runtime.native_resize`);
    data/ does not import the runtime, so it is handed in. Both give the same bits (tested), so the
    choice is not part of the preprocessing's identity (caches and comparisons ignore it)."""
    global _exact_resize
    _exact_resize = resize or resize_bilinear_tflite


@cache
def _opencv() -> ModuleType:
    """``cv2`` for the OpenCV resize, looked for once in a process, not at every image: its absence
    is said where the spec is checked (:func:`validate_spec`, before the first image)."""
    return require_opencv("model.preprocess.resize=opencv_bilinear")


def _resize(img: np.ndarray, height: int, width: int, method: str) -> np.ndarray:
    if method == "tflite_bilinear":  # the installed exact kernel takes uint8 images
        return (_exact_resize if img.dtype == np.uint8 else resize_bilinear_tflite)(img, height, width)
    if method == "opencv_bilinear":  # cv2.resize's INTER_LINEAR, as Ultralytics' letterbox: no averaging
        cv2 = _opencv()
        return np.asarray(cv2.resize(img, (width, height), interpolation=cv2.INTER_LINEAR), dtype=np.float32)
    resample = Image.Resampling.BICUBIC if method == "pil_bicubic" else Image.Resampling.BILINEAR
    return np.asarray(Image.fromarray(img).resize((width, height), resample), dtype=np.float32)


@dataclass(frozen=True)
class InputSpec:
    """What the model's image input expects (filled in from the runtime's tensor details)."""

    height: int
    width: int
    channels: int
    dtype: str  # numpy dtype name: uint8 | int8 | float32 | float16
    scale: float = 0.0
    zero_point: int = 0
    layout: str = "nhwc"  # nhwc | nchw: the axis order of the model's input tensor


SUPPORTED_INPUT_DTYPES = ("uint8", "int8", "int16", "float32", "float16")


def image_input_spec(
    shape: Iterable[int],
    dtype: str,
    quantization: tuple[float, int],
    model_path: str,
    spec: PreprocessSpec | None = None,
) -> InputSpec:
    """Check that a model input is one RGB image, NHWC or NCHW (and, given ``spec``, that the
    preprocessing can fill it); one clear error before the loop otherwise."""
    shape = [int(s) for s in shape]
    layout = image_layout(shape, spec.layout if spec is not None else "auto")
    if layout is None:
        forced = spec.layout if spec is not None else "auto"
        wanted = {
            "auto": "NHWC RGB image [1, H, W, 3]",  # nor NCHW [1, 3, H, W]: both are tried
            "nhwc": "NHWC RGB image [1, H, W, 3] (model.preprocess.layout=nhwc)",
            "nchw": "NCHW RGB image [1, 3, H, W] (model.preprocess.layout=nchw)",
        }[forced]
        raise ModelMismatchError(
            f"{model_path}: input shape {shape} is not one {wanted}; "
            "this task needs an image classifier/detector"
        )
    if layout == "nchw":
        shape = [shape[0], shape[2], shape[3], shape[1]]
    if dtype not in SUPPORTED_INPUT_DTYPES:
        raise ModelMismatchError(
            f"{model_path}: input dtype {dtype} not supported for images "
            f"(supported: {', '.join(SUPPORTED_INPUT_DTYPES)})"
        )
    scale, zero_point = quantization
    inp = InputSpec(shape[1], shape[2], shape[3], dtype, float(scale), int(zero_point), layout)
    if spec is not None and dtype == "int16" and not _quantizes(spec, inp):
        raise ModelMismatchError(f"{model_path}: {_INT16_NEEDS_QUANTIZE}")
    return inp


_INT16_NEEDS_QUANTIZE = (
    "int16 model input (an int16x8 variant): set model.preprocess.integer_input=quantize; only the "
    "input's own scale/zero-point maps pixels to int16"
)


def image_layout(shape: list[int], wanted: str = "auto") -> str | None:
    """``nhwc`` / ``nchw`` for a one-image RGB input shape (``wanted`` forces one), else None.
    ``auto`` prefers NHWC (TFLite's own layout) when both would fit ([1, 3, H, 3])."""
    if len(shape) != 4 or shape[0] != 1:
        return None
    fits = [name for name, axis in (("nhwc", 3), ("nchw", 1)) if shape[axis] == 3]
    if wanted != "auto":
        return wanted if wanted in fits else None
    return fits[0] if fits else None


def _quantizes(spec: PreprocessSpec, inp: InputSpec) -> bool:
    return fitted_integer_input(spec, inp) == "quantize" and inp.scale > 0


def tool_offset(dtype: str) -> int | None:
    """What TFLite's eval tool subtracts from a pixel (uint8 0, int8 128); None: no such form."""
    return {"uint8": 0, "int8": 128}.get(dtype)


def pixels_as_they_are(spec: PreprocessSpec, inp: InputSpec) -> bool:
    """Whether the tool's pixels as they are (``x`` for uint8, ``x - 128`` for int8) are what the
    file says the input holds, within one quantization step at every pixel value: its quantization
    alone maps them to the pixel (scale 1, zero point 0: the graph normalises), or mean/std then its
    scale and zero point give them (MobileNet's uint8 input, scale 1/128, zero point 128, mean/std
    127.5). Both maps are affine, so pixel values 0 and 255 decide."""
    offset = tool_offset(inp.dtype)
    if offset is None or inp.scale <= 0:
        return offset is not None  # no quantization recorded: nothing else to feed
    step = 1 + 1e-4  # one step, with the float32 rounding of a stored 1/127
    return all(
        abs(x - offset - inp.zero_point - x / inp.scale) <= step
        or abs((x - mean) / std / inp.scale + inp.zero_point - (x - offset)) <= step
        for x in (0.0, 255.0)
        for mean, std in zip(spec.mean, spec.std, strict=True)
    )


def fitted_integer_input(spec: PreprocessSpec, inp: InputSpec) -> str:
    """``tool`` or ``quantize``: ``spec.integer_input`` with ``auto`` decided for this input. A float
    input reads neither (``tool``, as runs recorded before ``auto``); an int16 input has no tool form."""
    if spec.integer_input != "auto":
        return spec.integer_input
    if inp.dtype.startswith("float"):
        return "tool"
    return "tool" if pixels_as_they_are(spec, inp) else "quantize"


def fitted_spec(spec: PreprocessSpec, inp: InputSpec) -> PreprocessSpec:
    """The spec with ``integer_input`` as this input is fed (``auto`` decided), so a run's provenance
    and tensor-cache key name what was done; a task's ``bind`` calls it once its input is known."""
    fitted = fitted_integer_input(spec, inp)
    return spec if fitted == spec.integer_input else replace(spec, integer_input=fitted)


def to_input_tensor(pixels: np.ndarray, spec: PreprocessSpec, inp: InputSpec) -> np.ndarray:
    """float32 HxWx3 pixels in [0, 255] -> the [1, H, W, 3] (or [1, 3, H, W]) tensor the model takes."""
    tensor = _to_nhwc_tensor(pixels, spec, inp)
    return np.ascontiguousarray(tensor.transpose(0, 3, 1, 2)) if inp.layout == "nchw" else tensor


def _to_nhwc_tensor(pixels: np.ndarray, spec: PreprocessSpec, inp: InputSpec) -> np.ndarray:
    if spec.channel_order == "bgr":
        pixels = pixels[..., ::-1]
    tensor: np.ndarray  # the one image, HxWxC (numpy's stubs type the ufuncs' results as Any)
    if inp.dtype in ("float32", "float16"):
        mean = np.asarray(spec.mean, dtype=np.float32)
        inv_std = (np.float32(1) / np.asarray(spec.std, dtype=np.float32)).astype(np.float32)
        scaled = pixels - mean
        scaled *= inv_std  # in place: the same float32 products, one image-sized array fewer
        tensor = scaled.astype(inp.dtype, copy=False)  # float32 already: no copy
    elif _quantizes(spec, inp):
        mean = np.asarray(spec.mean, dtype=np.float32)
        std = np.asarray(spec.std, dtype=np.float32)
        info = np.iinfo(inp.dtype)
        q = np.round((pixels - mean) / std / np.float32(inp.scale)) + inp.zero_point
        tensor = np.clip(q, info.min, info.max).astype(inp.dtype)
    elif inp.dtype == "int16":
        raise ModelMismatchError(_INT16_NEEDS_QUANTIZE)
    elif inp.dtype == "uint8":  # static_cast<uint8_t>: numpy's float cast truncates toward zero as
        tensor = pixels.astype(np.uint8)  # C's does, so no np.trunc pass first (the same bits)
    else:
        tensor = (pixels - np.float32(128)).astype(np.int8)  # int8: trunc(x - 128), by the cast
    return tensor[None]


def resize_shorter_then_crop(img: np.ndarray, spec: PreprocessSpec, inp: InputSpec) -> np.ndarray:
    """torchvision-style: shorter side to round(S / fraction), then the centre S x S window."""
    h, w = img.shape[:2]
    scale = _round_half_away(min(inp.height, inp.width) / spec.crop_fraction) / min(h, w)
    nh = max(inp.height, _round_half_away(h * scale))
    nw = max(inp.width, _round_half_away(w * scale))
    resized = _resize(img, nh, nw, spec.resize)
    top, left = (nh - inp.height) // 2, (nw - inp.width) // 2
    return resized[top : top + inp.height, left : left + inp.width]


def preprocessing_provenance(spec: PreprocessSpec, inp: InputSpec | None) -> dict[str, Any]:
    """What metrics.json records about preprocessing: the spec and the input it was fitted to."""
    return {**asdict(spec), "input": asdict(inp) if inp else None}


def crop_and_resize(img: np.ndarray, spec: PreprocessSpec, inp: InputSpec) -> np.ndarray:
    """uint8 HxWx3 image -> float32 model-sized pixels, before dtype conversion."""
    if spec.crop == "resize_shorter_then_crop":
        return resize_shorter_then_crop(img, spec, inp)
    if spec.crop == "central_fraction":
        img = central_crop(img, spec.crop_fraction)
    elif spec.crop == "short_side_padded":
        img = short_side_padded_crop(img, inp.height, spec.crop_padding)
    return _resize(img, inp.height, inp.width, spec.resize)


def preprocess_file(path: str, spec: PreprocessSpec, inp: InputSpec) -> np.ndarray:
    """Decode, crop, resize and convert one image file into an input tensor."""
    return to_input_tensor(crop_and_resize(decode_rgb(path), spec, inp), spec, inp)


def preprocess_bytes(data: bytes, name: str, spec: PreprocessSpec, inp: InputSpec) -> np.ndarray:
    """:func:`preprocess_file` of an image's encoded bytes (a container's member named ``name``)."""
    return to_input_tensor(crop_and_resize(decode_rgb_bytes(data, name), spec, inp), spec, inp)
