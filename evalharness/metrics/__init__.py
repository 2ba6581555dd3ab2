"""Detection metrics: official COCO box stats (pycocotools / faster-coco-eval) and TFLite-tool AP."""

from evalharness.metrics.coco import COCO_STAT_NAMES, evaluate_bbox, load_annotations
from evalharness.metrics.coco_tflite import tflite_tool_ap

__all__ = ["COCO_STAT_NAMES", "evaluate_bbox", "load_annotations", "tflite_tool_ap"]
