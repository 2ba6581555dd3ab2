"""What a record's input identity costs per image, before and after, against a sample's CPU (not a unit test).

    python benchmarks/bench_input_identity.py [--rounds 7] [--threads 1]

Measured in this one process, on val50's 50 images, in interleaved rounds (each round measures every
figure once, starting one figure later than the round before, so drift favours none); medians over
the rounds, CPU time (``time.process_time``: what the loop pays, whatever else the machine runs):

- a sample's CPU: MobileNet v2 quant's preprocessing (decode, crop, exact resize) + set + invoke
  per image, ``--threads`` invoke threads (1: the smallest sample, so the strictest share);
- the input identity (``loop/input_identity.py``) of the model's own uint8 224x224x3 input, of the
  same pixels as a float32 NHWC input, and as a float32 NCHW one (an ONNX model's), by the method
  records used before (:data:`LEGACY`: sha256 of the bytes and of a float32 copy of the real
  values) and the current one (:data:`METHOD`: a CRC-32 per 8 KiB block under one sha256);
- for the choice of hash: each candidate over one float32 224x224x3 tensor's 602 KB (best of 7).
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time
import timeit
from collections.abc import Callable
from pathlib import Path

import numpy as np

from evalharness.core.checksum import crc32_bytes
from evalharness.core.input_hash import LEGACY, METHOD
from evalharness.core.tensors import TensorInfo, tensors_sha256
from evalharness.data.preprocess import PreprocessSpec, image_input_spec, preprocess_file, set_exact_resize
from evalharness.loop.input_identity import InputIdentity
from evalharness.runtime import load_model, plan_delegate
from evalharness.runtime.native_resize import shared

ASSETS = Path(__file__).resolve().parents[1].parent / "shared" / "assets"
MODEL = "mobilenet_v2_1.0_224_quant"


def legacy_identity(infos: list[TensorInfo], layout: str | None) -> Callable[[list[np.ndarray]], dict]:
    """The identity as records computed it before the method was named (the code of that commit:
    sha256 of the bytes, then of a float32 NHWC copy of the real values unless they are the bytes)."""

    def real(t: np.ndarray, info: TensorInfo) -> np.ndarray:
        values = np.asarray(info.dequantize(t), dtype=np.float32)
        return values.transpose(0, 2, 3, 1) if layout == "nchw" and values.ndim == 4 else values

    def of(tensors: list[np.ndarray]) -> dict:
        exact = tensors_sha256(tensors)
        reals = [real(t, i) for t, i in zip(tensors, infos, strict=True)]
        same = all(r is t for r, t in zip(reals, tensors, strict=True))
        return {"exact": exact, "real": exact if same else tensors_sha256(reals)}

    return of


def cpu_ms_per_item(fn: Callable[[object], object], items: list, repeat: int = 1) -> float:
    started = time.process_time()
    for _ in range(repeat):
        for item in items:
            fn(item)
    return (time.process_time() - started) * 1000 / (len(items) * repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    set_exact_resize(shared())
    cpu = plan_delegate({"name": "cpu", "num_threads": args.threads})
    model = load_model(str(ASSETS / "models" / f"{MODEL}.tflite"), cpu)
    info = model.inputs[0]
    inp = image_input_spec(info.shape, info.dtype, (info.scale, info.zero_point), MODEL)
    spec = PreprocessSpec()
    paths = sorted(str(p) for p in (ASSETS / "imagenet" / "val50").glob("*.JPEG"))
    uint8 = [preprocess_file(p, spec, inp) for p in paths]
    float32 = [info.dequantize(t).astype(np.float32) for t in uint8]
    nchw = [np.ascontiguousarray(t.transpose(0, 3, 1, 2)) for t in float32]
    f_nhwc, f_nchw = TensorInfo("x", 0, info.shape, "float32"), TensorInfo("x", 0, nchw[0].shape, "float32")

    def sample(path: object) -> None:
        model.set_inputs([preprocess_file(str(path), spec, inp)])
        model.invoke()

    cases = {  # name -> (tensors, legacy identity, current identity)
        "uint8 NHWC": (uint8, legacy_identity([info], "nhwc"), InputIdentity([info], "nhwc").of),
        "float32 NHWC": (float32, legacy_identity([f_nhwc], "nhwc"), InputIdentity([f_nhwc], "nhwc").of),
        "float32 NCHW": (nchw, legacy_identity([f_nchw], "nchw"), InputIdentity([f_nchw], "nchw").of),
    }
    figures: dict[str, Callable[[], float]] = {"sample": lambda: cpu_ms_per_item(sample, paths)}
    for name, (tensors, before, after) in cases.items():
        figures[f"{name} before"] = lambda t=tensors, f=before: cpu_ms_per_item(lambda x: f([x]), t, 4)
        figures[f"{name} after"] = lambda t=tensors, f=after: cpu_ms_per_item(lambda x: f([x]), t, 4)
    names = list(figures)
    samples: dict[str, list[float]] = {n: [] for n in names}
    sample(paths[0])  # warm-up
    for r in range(args.rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            samples[name].append(figures[name]())
    med = {n: statistics.median(v) for n, v in samples.items()}
    spread = {n: (min(v), max(v)) for n, v in samples.items()}
    print(f"{len(paths)} images x {args.rounds} interleaved rounds, CPU ms per image (median [min, max])")
    print(f"sample CPU: {MODEL} preprocess + invoke, {args.threads} thread(s): {med['sample']:.2f} ms")
    before, after = f"before ({LEGACY})", f"after ({METHOD})"
    print(f"{'input':14s} {before:>26s} {after:>30s}   share before -> after")
    for name in cases:
        b, a = med[f"{name} before"], med[f"{name} after"]
        (bl, bh), (al, ah) = spread[f"{name} before"], spread[f"{name} after"]
        print(
            f"{name:14s} {b:8.3f} [{bl:.3f}, {bh:.3f}] ms {a:12.3f} [{al:.3f}, {ah:.3f}] ms"
            f"   {100 * b / med['sample']:5.2f} % -> {100 * a / med['sample']:5.2f} %  ({b / a:.1f}x)"
        )

    hashes(float32[0])


def hashes(tensor: np.ndarray) -> None:
    """ms per tensor of each stdlib hash and of ISA-L's CRC-32 (the ``isal`` dependency)."""
    data = tensor.tobytes()
    candidates: dict[str, Callable[[], object]] = {
        name: lambda n=name: hashlib.new(n, data).digest() for name in ("sha256", "sha1", "md5", "blake2b")
    }
    candidates["blake2b-128"] = lambda: hashlib.blake2b(data, digest_size=16).digest()
    candidates["crc32 (isal)"] = lambda: crc32_bytes(data)
    timed = {n: min(timeit.repeat(f, number=20, repeat=7)) / 20 * 1000 for n, f in candidates.items()}
    print(f"one {len(data) / 1e3:.0f} KB tensor: " + ", ".join(f"{n} {ms:.3f} ms" for n, ms in timed.items()))


if __name__ == "__main__":
    main()
