"""Check a user's own ILSVRC-2012 validation download and write a manifest for evalharness.

    python datasets/prepare_imagenet.py --root /data/imagenet/val --ground-truth /data/imagenet/val.txt
    python datasets/prepare_imagenet.py --root /data/imagenet/val --format devkit \
        --ground-truth ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt \
        --devkit-meta ILSVRC2012_devkit_t12/data/meta.mat

It reads the ground truth exactly as a run would (same code), checks every image has a label and
that the label texts exist in the model label file, and writes a manifest (count, manifest hash,
per-class counts; ``--out``, default ``imagenet_val_manifest.json`` in the current directory). It
prints the override line to use with ``dataset=ilsvrc2012_val``. Nothing is downloaded.
"""

from __future__ import annotations

import collections
import json
import os
import sys

from evalharness.core.atomic_io import atomic_write_text
from evalharness.core.boundary import ArgumentParser, guarded
from evalharness.core.checksum import optional_sha256
from evalharness.core.paths import bundled
from evalharness.data.ground_truth import load_ground_truth
from evalharness.data.labels import LabelMatcher, read_label_file
from evalharness.data.manifest import samples_identity


def main(argv: list[str] | None = None) -> int:
    return guarded(lambda: _main(argv))


def _main(argv: list[str] | None) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True, help="directory of ILSVRC2012_val_*.JPEG")
    ap.add_argument("--ground-truth", help="val.txt, devkit ground truth, label lines or CSV")
    ap.add_argument("--format", default="auto")
    ap.add_argument("--class-names", default=bundled("imagenet_classes.txt"))
    ap.add_argument("--synset-words")
    ap.add_argument("--devkit-meta")
    ap.add_argument("--labels", default=bundled("imagenet_labels_1001.txt"), help="model label file to check")
    ap.add_argument("--content-hash", action="store_true", help="hash file contents, not sizes (slow)")
    ap.add_argument("--out", default="imagenet_val_manifest.json", help="where to write the manifest")
    args = ap.parse_args(argv)
    samples = load_ground_truth(
        args.format, args.root, args.ground_truth, args.class_names, args.synset_words, args.devkit_meta
    )
    matcher = LabelMatcher(read_label_file(args.labels), args.labels)
    for s in samples:
        matcher.index(s.label, s.occurrence)
    manifest = {
        **samples_identity(samples, lambda s: (s.key, s.path), content=args.content_hash),
        "ground_truth": os.path.abspath(args.ground_truth) if args.ground_truth else None,
        "ground_truth_sha256": optional_sha256(args.ground_truth),
        "classes": len({(s.label, s.occurrence) for s in samples}),
        "per_class": dict(sorted(collections.Counter(s.label for s in samples).items())),
    }
    out = args.out
    atomic_write_text(out, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    print(f"{len(samples)} images, {manifest['classes']} classes; manifest written to {out}")
    print(
        f"run: python -m evalharness dataset=ilsvrc2012_val dataset.root={os.path.abspath(args.root)} "
        f"dataset.ground_truth={os.path.abspath(args.ground_truth or '')} dataset.format={args.format}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
