"""A real detector's low-threshold COCO detections (~100+ per image), for the scoring benchmark.

The SSD MobileNet v1 model's post-process op returns 10 boxes per image. mAP protocols keep up to
100 low-score boxes per image, and that volume is what makes scoring slow, so this reads the
model's raw box encodings, sigmoid scores and anchors (intermediate tensors, kept with
``experimental_preserve_all_tensors``), decodes every anchor (SSD centre-size coding, scales
10/10/5/5), and keeps per-class NMS survivors above ``min_score``, best ``per_image`` first.

``check_decoding`` proves the decoding on the same run: every box the model's own post-process
op returned is one of the decoded anchor boxes (within a quantisation step). Not a unit test:
benchmarks live under benchmarks and are run by hand. It reads LiteRT directly (the package keeps
that import inside evalharness/runtime; this script is not part of the package).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from evalharness.data.preprocess import image_input_spec, preprocess_file, spec_from_config
from evalharness.decoders.nms import nms

SCALES = np.array([10.0, 10.0, 5.0, 5.0])  # y, x, h, w: TF1 SSD box coder (the op's custom options)
PREPROCESS = {"crop": "none", "resize": "tflite_bilinear", "mean": [127.5] * 3, "std": [127.5] * 3}


def _dequantized(interp: Interpreter, name: str, details: dict) -> np.ndarray:
    d = details[name]
    scale, zero = d["quantization"]
    raw = interp.get_tensor(d["index"])
    return (raw.astype(np.float64) - zero) * scale if scale else raw.astype(np.float64)


def decode_anchors(encodings: np.ndarray, anchors: np.ndarray) -> np.ndarray:
    """[N, 4] (ty, tx, th, tw) against (yc, xc, h, w) anchors -> [N, 4] normalised x1, y1, x2, y2."""
    t = encodings / SCALES
    yc = t[:, 0] * anchors[:, 2] + anchors[:, 0]
    xc = t[:, 1] * anchors[:, 3] + anchors[:, 1]
    h = np.exp(t[:, 2]) * anchors[:, 2]
    w = np.exp(t[:, 3]) * anchors[:, 3]
    return np.stack([xc - w / 2, yc - h / 2, xc + w / 2, yc + h / 2], axis=1)


def detect(model_path: str, images: list[dict], image_dir: Path, min_score: float, per_image: int):
    """COCO result dicts for ``images`` (COCO image records) and the decoding check's worst error."""
    interp = Interpreter(
        model_path,
        experimental_preserve_all_tensors=True,
        experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
    )
    interp.allocate_tensors()
    details = {d["name"]: d for d in interp.get_tensor_details()}
    inp = interp.get_input_details()[0]
    spec = spec_from_config(PREPROCESS)
    in_spec = image_input_spec(inp["shape"], inp["dtype"].__name__, inp["quantization"], model_path)
    anchors = _dequantized(interp, "anchors", details)
    results, worst = [], 0.0
    for im in images:
        interp.set_tensor(inp["index"], preprocess_file(str(image_dir / im["file_name"]), spec, in_spec))
        interp.invoke()
        boxes = decode_anchors(_dequantized(interp, "Squeeze", details)[0], anchors)
        scores = _dequantized(interp, "convert_scores", details)[0]  # [anchors, 91], column 0 = background
        worst = max(worst, check_decoding(interp, boxes))
        results += _image_results(im, boxes, scores, min_score, per_image)
    return results, worst


def replicated_val25(assets: Path, n_images: int, min_score: float = 0.01, per_image: int = 128):
    """val25 and its detections repeated under fresh image ids to at least ``n_images`` images:
    (ground truth, COCO results, detections per val25 image, the decoding check's worst error)."""
    gt = json.loads((assets / "coco/instances_val25.json").read_text())
    model = str(assets / "models/ssd_mobilenet_v1_coco_quant_postprocess.tflite")
    dets, decode_error = detect(model, gt["images"], assets / "coco/val25", min_score, per_image)
    big = {**gt, "images": [], "annotations": []}
    results, ann_id = [], 1
    for r in range(-(-n_images // len(gt["images"]))):
        offset = (r + 1) * 10_000_000
        big["images"] += [{**im, "id": im["id"] + offset} for im in gt["images"]]
        for a in gt["annotations"]:
            big["annotations"].append({**a, "id": ann_id, "image_id": a["image_id"] + offset})
            ann_id += 1
        results += [{**d, "image_id": d["image_id"] + offset} for d in dets]
    return big, results, len(dets) / len(gt["images"]), decode_error


def check_decoding(interp: Interpreter, boxes: np.ndarray) -> float:
    """Largest distance from a box of the model's own output to the nearest decoded anchor box."""
    out = interp.get_output_details()
    own = interp.get_tensor(out[0]["index"])[0][:, [1, 0, 3, 2]]  # ymin, xmin, ymax, xmax -> xyxy
    return float(max(np.abs(boxes - b).max(axis=1).min() for b in own))


def _image_results(im: dict, boxes, scores, min_score: float, per_image: int) -> list[dict]:
    anchor, cls = np.nonzero(scores[:, 1:] > min_score)
    cand_boxes, cand_scores, cand_cls = boxes[anchor], scores[anchor, cls + 1], cls + 1
    keep = nms(cand_boxes, cand_scores, 0.6, classes=cand_cls, max_keep=per_image)
    size = np.array([im["width"], im["height"]] * 2, dtype=np.float64)
    rows = []
    for k in keep:
        x1, y1, x2, y2 = (np.clip(cand_boxes[k], 0.0, 1.0) * size).tolist()
        rows.append(
            {
                "image_id": im["id"],
                "category_id": int(cand_cls[k]),  # coco91: score column = category id
                "bbox": [x1, y1, x2 - x1, y2 - y1],
                "score": float(cand_scores[k]),
            }
        )
    return rows


if __name__ == "__main__":
    assets = Path(__file__).resolve().parents[2] / "shared" / "assets"
    gt = json.loads((assets / "coco/instances_val25.json").read_text())
    dets, err = detect(
        str(assets / "models/ssd_mobilenet_v1_coco_quant_postprocess.tflite"),
        gt["images"],
        assets / "coco/val25",
        0.01,
        128,
    )
    print(f"{len(dets)} detections on {len(gt['images'])} images; decoding check max error {err:.2e}")
