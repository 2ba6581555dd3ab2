"""Property-based fuzzing (hypothesis) of preprocessing, decoding, ranking and the metrics.

Random shapes, dtypes, label sets and box sets never fail with anything but the documented errors
(EvalHarnessError subclasses; ValueError for misuse of stable_topk), top-K accuracy stays
in [0, 1] and never decreases with K, and AP/AR stay in [0, 1] or are exactly -1 (pycocotools'
"nothing to score"). Bounded: a few dozen examples per property, the file in well under 30 s.
"""

from __future__ import annotations

import copy
import importlib.util
import io
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from PIL import Image

from evalharness.core.errors import DataError
from evalharness.core.ranking import stable_topk
from evalharness.core.tensors import TensorInfo
from evalharness.data.ground_truth import LabeledSample
from evalharness.data.preprocess import (
    CROPS,
    RESIZES,
    InputSpec,
    PreprocessSpec,
    central_crop,
    crop_and_resize,
    decode_rgb,
    resize_bilinear_tflite,
    to_input_tensor,
)
from evalharness.stats.coco_eval import evaluate_bbox
from evalharness.stats.coco_tool_ap import tflite_tool_ap
from evalharness.tasks.imagenet.live import TopKEvaluator, ground_truth

# FUZZ_EXAMPLES=1000 fuzzes deeper (the default keeps the file fast).
FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
HAVE_FASTER = importlib.util.find_spec("faster_coco_eval") is not None


def images(min_side: int = 1, max_side: int = 24, channels: int = 3):
    shape = st.tuples(st.integers(min_side, max_side), st.integers(min_side, max_side), st.just(channels))
    return hnp.arrays(np.uint8, shape)


# --- preprocessing ------------------------------------------------------------------------------


@FUZZ
@given(
    img=hnp.arrays(
        np.uint8,
        st.tuples(st.integers(1, 12), st.integers(1, 12), st.integers(1, 4)),
        elements=st.integers(0, 255),
    ),
    out=st.tuples(st.integers(1, 16), st.integers(1, 16)),
)
def test_resize_bilinear_tflite_stays_inside_the_input_range(img, out):
    res = resize_bilinear_tflite(img, *out)
    assert res.shape == (*out, img.shape[2]) and res.dtype == np.float32
    assert res.min() >= img.min() - 1e-3 and res.max() <= img.max() + 1e-3  # convex combinations
    if out == img.shape[:2]:
        assert np.array_equal(res, img.astype(np.float32))


@FUZZ
@given(img=images(max_side=40), fraction=st.floats(0.5, 1.0))
def test_central_crop_is_the_centred_window(img, fraction):
    h, w = img.shape[:2]
    out = central_crop(img, fraction)
    ch, cw = out.shape[:2]
    assert 1 <= ch <= h and 1 <= cw <= w
    assert abs(ch - fraction * h) <= 0.5 and abs(cw - fraction * w) <= 0.5
    # a view of the input whose margins differ by at most one pixel on each axis
    top, rest = divmod(out.ctypes.data - img.ctypes.data, img.strides[0])
    left = rest // img.strides[1]
    assert np.shares_memory(out, img) and np.array_equal(out, img[top : top + ch, left : left + cw])
    assert abs((h - ch - top) - top) <= 1 and abs((w - cw - left) - left) <= 1


@FUZZ
@given(
    img=images(max_side=40),
    crop=st.sampled_from(CROPS),
    resize=st.sampled_from(RESIZES),
    fraction=st.floats(0.5, 1.0),
    size=st.tuples(st.integers(32, 40), st.integers(32, 40)),
    dtype=st.sampled_from(["uint8", "int8", "float32", "float16"]),
    integer_input=st.sampled_from(["tool", "quantize"]),
    bgr=st.booleans(),
    quant=st.tuples(st.floats(1e-3, 1.0), st.integers(-128, 255)),
)
def test_crop_resize_and_convert_give_the_model_tensor(
    img, crop, resize, fraction, size, dtype, integer_input, bgr, quant
):
    """Any image >= 1x1 fits any input >= 32x32, every crop/resize/dtype: right shape, dtype, range."""
    spec = PreprocessSpec(
        crop=crop,
        crop_fraction=fraction,
        resize=resize,
        channel_order="bgr" if bgr else "rgb",
        integer_input=integer_input,
    )
    scale, zero_point = quant
    if dtype == "int8":
        zero_point = max(-128, min(127, zero_point))
    elif dtype == "uint8":
        zero_point = max(0, zero_point)
    inp = InputSpec(size[0], size[1], 3, dtype, scale, zero_point)
    pixels = crop_and_resize(img, spec, inp)
    assert pixels.shape == (*size, 3) and pixels.dtype == np.float32
    assert pixels.min() >= -1e-3 and pixels.max() <= 255 + 1e-3
    tensor = to_input_tensor(pixels, spec, inp)
    assert tensor.shape == (1, *size, 3) and tensor.dtype == np.dtype(dtype)
    if dtype.startswith("float"):
        assert np.isfinite(tensor).all() and np.abs(tensor.astype(np.float32)).max() <= 1.0 + 1e-3
    elif integer_input == "tool":  # the tool's truncation, no quantisation parameters
        ordered = pixels[..., ::-1] if bgr else pixels
        expected = np.trunc(ordered) if dtype == "uint8" else np.trunc(ordered - np.float32(128))
        assert np.array_equal(tensor[0].astype(np.float32), expected)


def test_crop_that_rounds_to_nothing():
    """A central crop of a 1-pixel-tall image rounds to no rows: still the model's size, every value
    from the image (no uninitialised memory, no NaN)."""
    spec = PreprocessSpec(crop_fraction=0.4)
    out = crop_and_resize(np.full((1, 5, 3), 7, np.uint8), spec, InputSpec(8, 8, 3, "uint8"))
    assert out.shape == (8, 8, 3) and np.all(np.isfinite(out)) and np.all(out == 7)


# --- decoding -----------------------------------------------------------------------------------

MODES = ("RGB", "L", "RGBA", "LA", "P", "I;16", "1")


@st.composite
def pillow_images(draw):
    """(mode, Pillow image, expected RGB) of a small random image in one of the PNG modes."""
    h, w = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    mode = draw(st.sampled_from(MODES))
    if mode == "I;16":
        values = draw(hnp.arrays(np.uint16, (h, w)))
        return mode, Image.fromarray(values), np.stack([(values >> 8).astype(np.uint8)] * 3, -1)
    if mode == "1":
        bits = draw(hnp.arrays(np.bool_, (h, w)))
        return mode, Image.fromarray(bits), np.stack([bits.astype(np.uint8) * 255] * 3, -1)
    if mode == "P":
        palette = draw(hnp.arrays(np.uint8, (16, 3)))
        indices = draw(hnp.arrays(np.uint8, (h, w), elements=st.integers(0, 15)))
        img = Image.fromarray(indices, "P")
        img.putpalette(palette.tobytes())
        return mode, img, palette[indices]
    channels = {"RGB": 3, "L": 1, "RGBA": 4, "LA": 2}[mode]
    values = draw(hnp.arrays(np.uint8, (h, w, channels)))
    img = Image.fromarray(values[..., 0] if channels == 1 else values, mode)
    colour = values[..., :3] if channels >= 3 else np.repeat(values[..., :1], 3, axis=2)
    return mode, img, colour


@FUZZ
@given(case=pillow_images())
def test_decode_rgb_of_any_png_mode(tmp_path, case):
    mode, img, expected = case
    path = tmp_path / "x.png"
    img.save(path)
    out = decode_rgb(str(path))
    assert out.dtype == np.uint8 and np.array_equal(out, expected), mode


MAGIC = [b"", b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff\xe0", b"BM", b"GIF89a", b"II*\x00"]


@pytest.mark.filterwarnings("ignore:Corrupt EXIF data:UserWarning")
@FUZZ
@given(
    case=pillow_images(), cut=st.floats(0.0, 1.0), noise=st.binary(max_size=64), magic=st.sampled_from(MAGIC)
)
def test_decode_rgb_of_damaged_files_is_an_image_or_a_data_error(tmp_path, case, cut, noise, magic):
    """Truncated PNGs and random bytes behind real magic numbers: an RGB array or one DataError line."""
    buf = io.BytesIO()
    case[1].save(buf, "PNG")
    data = buf.getvalue()
    for i, payload in enumerate((data[: int(len(data) * cut)] + noise, magic + noise)):
        path = tmp_path / f"{i}.png"
        path.write_bytes(payload)
        try:
            out = decode_rgb(str(path))
        except DataError as exc:
            assert str(exc).startswith(f"{path}: ") and "\n" not in str(exc)
        else:
            assert out.dtype == np.uint8 and out.ndim == 3 and out.shape[2] == 3


# --- ranking and top-K ----------------------------------------------------------------------------

SCORE_DTYPES = [np.uint8, np.int8, np.int32, np.uint64, np.float16, np.float32, np.float64, np.bool_]


@st.composite
def score_vectors(draw, max_size: int = 30):
    dtype = draw(st.sampled_from(SCORE_DTYPES))
    if np.dtype(dtype).kind == "f":
        # few distinct values, so ties, infinities and NaN are common (and often together)
        pool = st.sampled_from([0.0, -0.0, 1.0, 0.5, -2.0, math.inf, -math.inf, math.nan])
        return np.array(draw(st.lists(pool, max_size=max_size)), dtype=dtype)
    return draw(hnp.arrays(dtype, draw(st.integers(0, max_size))))


def reference_ranking(x: np.ndarray) -> list[int]:
    """Descending, ties to the lower index, NaN after everything: by plain Python sorting."""
    values = x.tolist()

    def key(i):
        v = values[i]
        is_nan = isinstance(v, float) and math.isnan(v)
        return (is_nan, 0 if is_nan else -v, i)

    return sorted(range(len(values)), key=key)


@FUZZ
@given(x=score_vectors(), k=st.integers(0, 35))
@example(x=np.array([math.nan, -math.inf, 0.0, -0.0], np.float32), k=4)  # NaN after -inf; -0.0 ties 0.0
@example(x=np.array([0, 2**64 - 1, 2**63], np.uint64), k=3)  # never negated: no wrap-around
def test_stable_topk_equals_a_plain_sort(x, k):
    before = x.copy()
    top = stable_topk(x, k)
    assert top.dtype == np.int64 and top.tolist() == reference_ranking(x)[:k]
    assert np.array_equal(x, before, equal_nan=x.dtype.kind == "f")


@FUZZ
@given(
    bad=st.sampled_from(
        [
            (np.zeros((2, 3)), 1),
            (np.zeros(3), -1),
            (np.array(["a", "b"]), 1),
            (np.array([1 + 2j]), 1),
            (np.array([None, 1], dtype=object), 1),
        ]
    )
)
def test_stable_topk_misuse_is_a_value_error(bad):
    with pytest.raises(ValueError):
        stable_topk(*bad)


@FUZZ
@given(data=st.data(), n=st.integers(0, 12), k=st.integers(1, 6))
def test_topk_accuracy_is_a_monotone_fraction(data, n, k):
    from evalharness.tasks.imagenet.definition import TopKScorer  # the one top-K counter

    top = data.draw(hnp.arrays(np.int64, (n, k), elements=st.integers(0, 5)))
    truth = data.draw(hnp.arrays(np.int64, n, elements=st.integers(0, 5)))
    scorer = TopKScorer(k)
    for row, label in zip(top.tolist(), truth.tolist(), strict=True):
        scorer.add({"topk": row, "label_index": label})
    metrics = scorer.result()
    for j in range(k):
        assert metrics["correct"][f"top{j + 1}"] == int((top[:, : j + 1] == truth[:, None]).any(axis=1).sum())
    accuracy = [metrics[f"top{j + 1}"] for j in range(k)]
    assert all(0 <= a <= 1 for a in accuracy) and accuracy == sorted(accuracy)


@st.composite
def classifier_runs(draw):
    """(evaluator, [(sample, outputs)]): a fake classifier output tensor and random score vectors."""
    classes = draw(st.integers(2, 12))
    dtype = draw(st.sampled_from(["uint8", "int8", "float32"]))
    if dtype == "float32":
        info = TensorInfo("scores", 0, (1, classes), dtype)
        elements = st.floats(-5, 5, width=32) | st.sampled_from([0.0, 1.0])
    else:
        zero_point = draw(st.integers(0, 255) if dtype == "uint8" else st.integers(-128, 127))
        info = TensorInfo("scores", 0, (1, classes), dtype, draw(st.floats(1e-3, 1.0)), zero_point)
        elements = None
    n = draw(st.integers(0, 8))
    outputs = [draw(hnp.arrays(np.dtype(dtype), (1, classes), elements=elements)) for _ in range(n)]
    answers = [draw(st.integers(0, classes - 1)) for _ in range(n)]
    samples = [LabeledSample("/d", f"{i}.jpg", f"class {t}") for i, t in enumerate(answers)]
    truth = {ground_truth(s): t for s, t in zip(samples, answers, strict=True)}  # by ground truth, not id
    top_k = draw(st.integers(1, classes))
    evaluator = TopKEvaluator(top_k, info, truth, [f"class {c}" for c in range(classes)])
    return evaluator, [(s, [o]) for s, o in zip(samples, outputs, strict=True)]


@FUZZ
@given(run=classifier_runs())
def test_top_k_evaluator_accuracy_is_monotone_and_resumable(run):
    evaluator, samples = run
    records = [evaluator.update(sample, outputs) for sample, outputs in samples]
    metrics = evaluator.compute()
    accuracy = [metrics[f"top{k}"] for k in range(1, evaluator.top_k + 1)]
    assert all(0.0 <= a <= 1.0 for a in accuracy) and accuracy == sorted(accuracy)
    assert metrics["num_scored"] == len(samples)
    for k in range(1, evaluator.top_k + 1):
        want = sum(evaluator.truth[ground_truth(s)] in stable_topk(o[0].reshape(-1), k) for s, o in samples)
        assert metrics["correct"][f"top{k}"] == want
    for record in records:
        assert len(record["topk"]) == evaluator.top_k
        assert record["scores"] == sorted(record["scores"], reverse=True)
    resumed = TopKEvaluator(evaluator.top_k, evaluator.output, evaluator.truth, evaluator.labels)
    for record in records:
        resumed.restore(record)
    assert resumed.compute() == metrics


# --- COCO metrics ---------------------------------------------------------------------------------

boxes = st.tuples(st.floats(0, 60), st.floats(0, 60), st.floats(0, 40), st.floats(0, 40)).map(
    lambda b: [round(v, 2) for v in b]
)


@st.composite
def coco_cases(draw):
    """(ground truth, detections): 1-3 images, 1-3 categories, a few boxes, some crowd."""
    image_ids = draw(st.lists(st.integers(1, 9), min_size=1, max_size=3, unique=True))
    cat_ids = draw(st.lists(st.integers(1, 9), min_size=1, max_size=3, unique=True))
    anns = []
    for n in range(draw(st.integers(0, 6))):
        bbox = draw(boxes)
        anns.append(
            {
                "id": n + 1,
                "image_id": draw(st.sampled_from(image_ids)),
                "category_id": draw(st.sampled_from(cat_ids)),
                "bbox": bbox,
                "area": bbox[2] * bbox[3],
                "iscrowd": int(draw(st.integers(0, 5)) == 0),
            }
        )
    gt = {
        "images": [{"id": i, "width": 100, "height": 100, "file_name": f"{i}.jpg"} for i in image_ids],
        "categories": [{"id": c, "name": f"class {c}"} for c in cat_ids],
        "annotations": anns,
    }
    dets = [
        {
            "image_id": draw(st.sampled_from(image_ids)),
            "category_id": draw(st.sampled_from(cat_ids)),
            "bbox": draw(boxes),
            "score": draw(st.floats(0, 1)),
        }
        for _ in range(draw(st.integers(0, 8)))
    ]
    return gt, dets


def _in_unit_or_none(value) -> bool:
    return value is None or 0.0 <= value <= 1.0


@FUZZ
@given(case=coco_cases())
def test_coco_stats_are_fractions_or_minus_one(case):
    gt, dets = case
    before = copy.deepcopy(case)
    result = evaluate_bbox(gt, dets)
    assert all(v == -1.0 or 0.0 <= v <= 1.0 for v in result["stats"].values()), result["stats"]
    assert all(
        _in_unit_or_none(c["AP"]) and _in_unit_or_none(c["AP50"]) for c in result["per_class"].values()
    )
    if HAVE_FASTER:
        other = evaluate_bbox(gt, dets, backend="faster_coco_eval")
        for name, value in result["stats"].items():
            assert other["stats"][name] == pytest.approx(value, abs=1e-9), name
    tool = tflite_tool_ap(gt, dets)
    assert _in_unit_or_none(tool["AP"]) and all(_in_unit_or_none(v) for v in tool["AP_per_iou"].values())
    assert (gt, dets) == before  # inputs untouched


JSON_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=True),
    st.text(max_size=3),
    st.lists(st.integers(0, 3), max_size=5),
)


@FUZZ
@given(case=coco_cases(), data=st.data())
def test_damaged_ground_truth_is_scored_or_a_data_error(case, data):
    """One key of the ground truth deleted or overwritten with any JSON value: never a KeyError or
    TypeError from pycocotools, only a DataError naming the entry."""
    gt, dets = case
    section = data.draw(st.sampled_from(["images", "categories", "annotations"]))
    assume(gt[section])
    item = data.draw(st.sampled_from(gt[section]))
    key = data.draw(st.sampled_from(sorted(item)))
    if data.draw(st.booleans()):
        del item[key]
    else:
        item[key] = data.draw(JSON_VALUES)
    for score in (evaluate_bbox, tflite_tool_ap):
        try:
            score(gt, dets)
        except DataError as exc:
            assert "\n" not in str(exc)


def test_detection_with_a_non_numeric_score_is_a_data_error():
    gt = {
        "images": [{"id": 1}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 9, 9], "area": 81, "iscrowd": 0}
        ],
    }
    with pytest.raises(DataError):
        evaluate_bbox(gt, [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 9, 9], "score": "high"}])
