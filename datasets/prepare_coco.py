"""Check a user's own COCO val2017 download (images + instances annotations) and write a manifest.

    python datasets/prepare_coco.py --images /data/coco/val2017 \
        --annotations /data/coco/annotations/instances_val2017.json

Uses the same code as ``task=coco``: every image the annotations list must be on disk with the
size the annotations give (a mismatch would map boxes wrongly). Writes a manifest (``--out``,
default ``coco_val2017_manifest.json`` in the current directory) and prints the run line.
"""

from __future__ import annotations

import collections
import json
import sys

from PIL import Image

from evalharness.core.atomic_io import atomic_write_text
from evalharness.core.boundary import ArgumentParser, guarded
from evalharness.core.checksum import sha256_file
from evalharness.core.errors import EvalHarnessError
from evalharness.data.coco_annotations import load_annotations
from evalharness.data.manifest import samples_identity
from evalharness.tasks.coco.images import folder_samples


def main(argv: list[str] | None = None) -> int:
    return guarded(lambda: _main(argv))


def _main(argv: list[str] | None) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", required=True, help="directory of val2017 JPEGs")
    ap.add_argument("--annotations", required=True, help="instances_val2017.json (or any subset)")
    ap.add_argument("--out", default="coco_val2017_manifest.json")
    ap.add_argument("--skip-size-check", action="store_true", help="do not open every image (faster)")
    args = ap.parse_args(argv)
    gt = load_annotations(args.annotations)
    samples = folder_samples(gt, args.images, args.annotations, None)
    if not args.skip_size_check:
        for s in samples:
            with Image.open(s.path) as img:
                if img.size != (s.width, s.height):
                    raise EvalHarnessError(
                        f"{s.path}: {img.size[0]}x{img.size[1]} but the annotations say "
                        f"{s.width}x{s.height}"
                    )
    per_image = collections.Counter(a["image_id"] for a in gt["annotations"])
    manifest = {
        **samples_identity(samples, lambda s: (s.key, s.path)),
        "annotations_sha256": sha256_file(args.annotations),
        "annotations": len(gt["annotations"]),
        "crowd_annotations": sum(1 for a in gt["annotations"] if a.get("iscrowd")),
        "images_without_annotations": sum(1 for s in samples if per_image[s.image_id] == 0),
        "categories": len(gt["categories"]),
    }
    atomic_write_text(args.out, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    print(f"{len(samples)} images, {manifest['annotations']} annotations; manifest written to {args.out}")
    print(
        f"run: python -m evalharness task=coco dataset=coco_val2017 dataset.root={args.images} "
        f"dataset.annotations={args.annotations}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
