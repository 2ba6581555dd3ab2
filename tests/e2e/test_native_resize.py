"""The exact resize in native code (LiteRT's reference RESIZE_BILINEAR) gives the numpy port's bits.

The numpy port (``resize_bilinear_tflite``) is the oracle: it matches the TFLite tool's kernel and
every accuracy test stands on it. These tests compare whole input tensors, end to end, on the shared
images and on the shapes a hidden dataset may bring, and a real run's predictions with either.
"""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
from conftest import ASSETS, VAL50, run_inprocess
from PIL import Image

from evalharness.data import preprocess as pp
from evalharness.data.detection_input import detection_input
from evalharness.runtime.native_resize import NativeBilinear

NATIVE = NativeBilinear()
IMAGENET = sorted((ASSETS / "imagenet" / "val50").glob("*.JPEG"))
COCO = sorted((ASSETS / "coco" / "val25").rglob("*.jpg"))


@pytest.fixture
def native():
    """The native kernel installed for one test, the numpy port again afterwards."""
    pp.set_exact_resize(NATIVE)
    yield
    pp.set_exact_resize(None)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def both(make):
    """``make()`` with the numpy port, then with the native kernel."""
    pp.set_exact_resize(None)
    expected = make()
    pp.set_exact_resize(NATIVE)
    try:
        return expected, make()
    finally:
        pp.set_exact_resize(None)


# (crop spec, input) pairs of the shared classifiers: uint8 central crop, float32 padded square
CLASSIFIERS = [
    (pp.PreprocessSpec(), pp.InputSpec(224, 224, 3, "uint8")),
    (pp.PreprocessSpec(), pp.InputSpec(128, 128, 3, "uint8")),
    (pp.PreprocessSpec(crop="short_side_padded"), pp.InputSpec(224, 224, 3, "float32")),
    (pp.PreprocessSpec(crop="resize_shorter_then_crop"), pp.InputSpec(224, 224, 3, "int8")),
]


@pytest.mark.parametrize(("spec", "inp"), CLASSIFIERS, ids=["v2_uint8", "v1_128", "effnet_f32", "torch_int8"])
def test_val50_input_tensors_identical(spec, inp):
    assert len(IMAGENET) == 50
    for path in IMAGENET:
        expected, got = both(lambda p=path: pp.preprocess_file(str(p), spec, inp))
        assert same_bits(expected, got), path.name


@pytest.mark.parametrize("letterbox", [False, True], ids=["stretch", "letterbox"])
def test_coco_detection_inputs_identical(letterbox):
    spec, inp = pp.PreprocessSpec(crop="none", letterbox=letterbox), pp.InputSpec(300, 300, 3, "uint8")
    assert len(COCO) >= 25
    for path in COCO:
        (expected, g1), (got, g2) = both(lambda p=path: detection_input(str(p), spec, inp))
        assert same_bits(expected, got) and g1 == g2, path.name


@pytest.mark.parametrize(
    ("in_hw", "out_hw"),
    [((1, 1), (224, 224)), ((1, 7), (5, 3)), ((7, 1), (224, 224)), ((3, 5), (1, 1)), ((17, 301), (224, 224)),
     ((500, 13), (128, 128)), ((10, 10), (300, 300)), ((224, 224), (224, 224)), ((999, 1000), (7, 9))],
)  # fmt: skip
def test_odd_sizes_upscaling_and_one_pixel(in_hw, out_hw):
    rng = np.random.default_rng(sum(in_hw) * 31 + sum(out_hw))
    img = rng.integers(0, 256, (*in_hw, 3), dtype=np.uint8)
    assert same_bits(pp.resize_bilinear_tflite(img, *out_hw), NATIVE(img, *out_hw))


@pytest.mark.parametrize("mode", ["L", "LA", "RGBA", "P", "CMYK", "I;16", "RGB"])
@pytest.mark.parametrize("size", [(1, 1), (1, 9), (9, 1), (61, 47)])
def test_image_modes_and_tiny_images(mode, size, tmp_path):
    """Every mode the decoder converts to RGB, at 1-pixel and 1-wide sizes: the same tensor."""
    rng = np.random.default_rng(sum(size) + len(mode))
    rgb = Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))
    image = rgb.convert(mode) if mode != "I;16" else rgb.convert("L").convert("I;16")
    path = tmp_path / f"img.{'tiff' if mode == 'CMYK' else 'png'}"
    image.save(path)
    inp = pp.InputSpec(224, 224, 3, "uint8")
    for spec in (pp.PreprocessSpec(crop_fraction=0.1), pp.PreprocessSpec(crop="short_side_padded")):
        expected, got = both(lambda s=spec: pp.preprocess_file(str(path), s, inp))
        assert same_bits(expected, got), (mode, size, spec.crop)


def test_one_pixel_crop_and_strided_views():
    img = np.random.default_rng(7).integers(0, 256, (2, 3, 3), dtype=np.uint8)
    crop = pp.central_crop(img, 0.1)
    assert crop.shape[:2] == (1, 1)
    assert same_bits(pp.resize_bilinear_tflite(crop, 224, 224), NATIVE(crop, 224, 224))
    big = np.random.default_rng(8).integers(0, 256, (90, 70, 3), dtype=np.uint8)
    view = big[5:80:2, 3:60:3]  # not contiguous
    assert same_bits(pp.resize_bilinear_tflite(view, 33, 17), NATIVE(view, 33, 17))


def test_threads_at_once_each_borrow_an_interpreter():
    """The loop prepares on worker threads: concurrent resizes of different sizes stay exact."""
    rng = np.random.default_rng(3)
    images = [rng.integers(0, 256, (40 + i, 60 - i, 3), dtype=np.uint8) for i in range(12)]
    expected = [pp.resize_bilinear_tflite(img, 64, 48) for img in images]
    failures: list[int] = []

    def work(offset: int) -> None:
        for k in range(len(images) * 3):
            i = (k + offset) % len(images)
            if not same_bits(expected[i], NATIVE(images[i], 64, 48)):
                failures.append(i)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_a_new_thread_borrows_a_warm_interpreter():
    """Interpreters are lent, not kept per thread: threads one after another (the calibration's
    blocks each start new preparing threads) use one interpreter, made once."""
    resize, img = NativeBilinear(), np.zeros((30, 20, 3), np.uint8)
    for _ in range(3):
        t = threading.Thread(target=resize, args=(img, 16, 16))
        t.start()
        t.join()
    (free,) = resize._free.values()
    assert len(free) == 1


def test_not_uint8_goes_to_the_port(native):
    """Only uint8 pixels take the native path (its CAST is exact for them); others the port."""
    img = np.random.default_rng(5).random((20, 30, 3), dtype=np.float32) * 255
    assert same_bits(pp._resize(img, 9, 11, "tflite_bilinear"), pp.resize_bilinear_tflite(img, 9, 11))
    with pytest.raises(ValueError, match="uint8"):
        NATIVE(img, 9, 11)


def _predictions(run_dir) -> list[dict]:
    rows = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if k != "latency_ms"} for row in rows]


def test_run_predictions_identical_native_and_numpy(tmp_path):
    """A real run on val50 (MobileNet v2 quant) predicts the same with either resize, and says which."""
    common = [*VAL50, "model=mobilenet_v2_1.0_224_quant", "loop.progress=false", "loop.tensor_cache=false"]
    docs = {r: run_inprocess([*common, f"loop.resize={r}"], tmp_path / r) for r in ("native", "numpy")}
    assert [docs[r]["throughput"]["resize"] for r in ("native", "numpy")] == ["native", "numpy"]
    assert docs["native"]["metrics"] == docs["numpy"]["metrics"]
    assert _predictions(tmp_path / "native") == _predictions(tmp_path / "numpy")
    assert len(_predictions(tmp_path / "native")) == 50
