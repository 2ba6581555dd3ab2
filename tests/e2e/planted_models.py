"""A tiny colour classifier and its image folder, with defects planted where a test wants them.

The model (``runtime.modelgen.conv_classifier_model``): op 0 CONV_2D 1x1 3->8 (ReLU), op 1 CONV_2D
1x1 8->8, op 2 MEAN, op 3 FULLY_CONNECTED 8->3. Channels 0-2 of op 0 are relu(1 + x_c), 3-5
relu(1 - x_c), 6 a mix, 7 is always 0; op 1 passes them on at 0.3; the logits are
0.3 (relu(1 + x_c) - relu(1 - x_c)) = 0.6 x_c averaged over the image, so the answer is the image's
dominant colour (red, green, blue) with a wide margin, and int8 keeps every answer.

**Planted bad scale** (``bad_scale=True``): op 1's weights also carry 100.0 on input channel 7, the
channel that is always 0. Float answers do not change (100 x 0), but int8's channelwise weight scale
becomes 100/127, and the 0.3 weights that carry the signal round to 0: every logit ties and the
int8 answers collapse to class 0. Keeping op 1 (and only op 1) in float restores every answer.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from evalharness.runtime.modelgen import conv_classifier_model

CLASSES = ["red", "green", "blue"]
PLANTED_OP = 1


def weights(bad_scale: bool = False) -> tuple[list, tuple]:
    w1, b1 = np.zeros((8, 1, 1, 3), np.float32), np.zeros(8, np.float32)
    for c in range(3):
        w1[c, 0, 0, c], b1[c] = 1.0, 1.0
        w1[c + 3, 0, 0, c], b1[c + 3] = -1.0, 1.0
    w1[6, 0, 0, :], b1[6] = 0.3, 1.0
    w2 = np.zeros((8, 1, 1, 8), np.float32)
    for c in range(8):
        w2[c, 0, 0, c] = 0.3
    if bad_scale:
        w2[:, 0, 0, 7] = 100.0
    w3 = np.zeros((3, 8), np.float32)
    for k in range(3):
        w3[k, k], w3[k, k + 3] = 1.0, -1.0
    convs = [(w1, b1, True), (w2, np.zeros(8, np.float32), False)]
    return convs, (w3, np.zeros(3, np.float32))


def model(path: Path, bad_scale: bool = False) -> Path:
    convs, fc = weights(bad_scale)
    return Path(conv_classifier_model(str(path), convs, fc))


def images(root: Path, per_class: int = 8, dark: int = 0, seed: int = 0) -> Path:
    """``root/<class>/<n>_<class>.png``: 12x12 images of one dominant colour. ``dark``: the first
    that many images in the dataset's sorted order are nearly black, and the others pastel (every
    channel bright, the dominant one brighter): an int8 input calibrated on the dark ones holds
    [-1, 0] and clips every pastel pixel to 0, which no op kept in float can undo."""
    rng = np.random.default_rng(seed)
    made = {}
    low, high = (150, 200) if dark else (0, 90)
    for k, name in enumerate(CLASSES):
        for n in range(per_class):
            pixels = rng.integers(low, high, (12, 12, 3))
            pixels[..., k] = rng.integers(220 if dark else 170, 256, (12, 12))
            made[f"{name}/{n:02d}_{name}.png"] = pixels
    for i, key in enumerate(sorted(made)):
        pixels = rng.integers(0, 8, (12, 12, 3)) if i < dark else made[key]
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels.astype(np.uint8)).save(root / key)
    return root


def labels(path: Path) -> Path:
    path.write_text("\n".join(CLASSES) + "\n")
    return path


def gated_weights(defects: tuple[int, ...] = ()) -> tuple[list, tuple]:
    """The classifier with two gates: channel 6 = relu(2 x_red - 0.4) (> 0 only on red images) and
    channel 7 = relu(2 x_blue - 0.4) (only on blue ones), passed on by op 1 and unread by the FC.
    ``defects``: op 1 also adds 5 x channel 6 into the green channel (every red image answers
    green), op 3 (the FC) reads 5 x channel 7 into the red logit (every blue image answers red). Two
    culprits, each changing one class's answers and nothing else."""
    (w1, b1, _), (w2, b2, _) = weights()[0]
    w1, b1 = w1.copy(), b1.copy()
    w1[6, 0, 0, :], b1[6] = (2.0, 0.0, 0.0), -0.4
    w1[7, 0, 0, :], b1[7] = (0.0, 0.0, 2.0), -0.4
    w2 = w2.copy()
    w3 = weights()[1][0].copy()
    if 1 in defects:
        w2[1, 0, 0, 6] = 5.0
    if 3 in defects:
        w3[0, 7] = 5.0
    return [(w1, b1, True), (w2, b2, False)], (w3, np.zeros(3, np.float32))


def gated_model(path: Path, defects: tuple[int, ...] = ()) -> Path:
    convs, fc = gated_weights(defects)
    return Path(conv_classifier_model(str(path), convs, fc))


def ilsvrc_model(path: Path) -> Path:
    """The colour model with 1,000 outputs (seeded random weights), so ILSVRC images and their class
    list (val50, a container packed from it) run on it: for what is built from a dataset (a
    calibration, a repair), not for its answers."""
    convs, _ = weights()
    fc = np.random.default_rng(0).normal(size=(1000, 8)).astype(np.float32), np.zeros(1000, np.float32)
    return Path(conv_classifier_model(str(path), convs, fc))
