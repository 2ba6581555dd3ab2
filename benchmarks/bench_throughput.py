"""Throughput benchmark: is evalharness limited by the model, not by Python? (not a unit test)

    python benchmarks/bench_throughput.py [--images 1000] [--threads 2] [--rounds 5] [--repeats 3]
        [--baseline CHECKOUT] [--memory-images 50000] [--coco-images 5000]
        [--only classification|shapes|memory|coco|resize|batch]

All figures are measured in this one run on this machine, MobileNet v2 quant, delegate=cpu:

- ``classification``: pure invoke, the CPU budget, a naive Pillow loop and the default cold and warm
  runs, each figure its own process, in ``--rounds`` interleaved rounds, ratios as medians with
  intervals (``throughput_rounds.py`` says how; ``--baseline`` adds another checkout's cold and
  warm runs to the same rounds);
- ``shapes``: pure invoke: pre-made input tensors, invoke() only; input preparation alone on all cores
  (decode + crop + exact resize), no model; the CPU budget (cores / CPU time of invoke + preparation
  per image) that bounds any cold run;
- naive loops, one image at a time (what a user would write): Pillow's bilinear resize (not the
  TFLite tool's numbers) and evalharness' exact preprocessing;
- evalharness cold (no cache) with ``loop.shape=sequential``, ``pipelined``, ``auto`` (the
  calibrated choice) and ``phased`` (prepare a window on every core, then invoke it), ``--repeats``
  times each in rotating order, and warm (preprocessed-tensor cache) in the same shapes, each
  against pure invoke measured just before and after it;
- the exact resize, LiteRT's reference kernel (``loop.resize=native``, the default) vs the numpy
  port, and decode / crop / resize / convert per image (val50, one thread);
- batched invoke (``loop.batch_size``) 1 vs 8 on MobileNet-EdgeTPU (dynamic batch), pure and cold,
  against the batch-1 pure-invoke ceiling;
- peak RSS of a ``--memory-images`` run vs a 1000-image run (separate processes);
- COCO scoring of a replicated val25 set with the SSD model's low-threshold detections (~128 per
  image, see ssd_low_threshold.py): pycocotools vs faster-coco-eval, stats compared;
- the bootstrap interval of that set's AP/AP50/AP75/per-class AP (B resamples, ``--bootstrap``):
  keeping pycocotools' matching, then re-accumulating it with resampling weights, vs one scoring.

Images are val50 repeated (symlinks under fresh names) to ``--images``; labels from val50's csv.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO.parent / "shared" / "assets"
sys.path.insert(0, str(REPO / "tests"))
from bench_shared import naive_pillow, pure_invoke, run_app, timed_loop  # noqa: E402
from repeated_dataset import make_dataset  # noqa: E402

MODEL = "mobilenet_v2_1.0_224_quant"


SHAPES = ("sequential", "pipelined", "auto", "phased")


def rotating(repeats: int):
    """The loop shapes, ``repeats`` rounds, each round starting one shape later: paired runs whose
    order does not favour one shape as the machine drifts."""
    for r in range(repeats):
        yield from SHAPES[r % len(SHAPES) :] + SHAPES[: r % len(SHAPES)]


def warm_runs(data: Path, threads: int, repeats: int, cache: str, ceiling) -> dict[str, list]:
    """Cached runs in each loop shape, rotating; each paired with the pure-invoke figure measured
    just before and after it (``ceiling()``, their mean): a shared machine drifts within minutes."""
    runs: dict[str, list] = {s: [] for s in SHAPES}
    for shape in rotating(repeats):
        before = ceiling()
        cached = ("loop.tensor_cache=true", f"paths.cache_dir={cache}")
        doc = run_app(data, threads, *cached, f"loop.shape={shape}")
        runs[shape].append((doc, (before + ceiling()) / 2))
    return runs


def ips(doc: dict) -> float:
    return doc["throughput"]["images_per_s"]


def in_invoke(doc: dict) -> float:
    """The share of a run's loop time spent in invoke(), both from that run: what the loop around the
    interpreter costs, whatever the machine's speed that minute (not what a busy core costs invoke)."""
    return ips(doc) * doc["latency_ms"]["inference"]["mean"] / 1000


def loop_shapes(data: Path, threads: int, repeats: int, budget) -> tuple[dict[str, list[dict]], dict]:
    """Cold runs (no cache) in each loop shape, ``repeats`` times in rotating order (paired); and
    for each run the CPU budget measured just before and after it (``budget()``, their mean): the
    machine's speed drifts between minutes, so a run is judged against its own minute's budget."""
    runs: dict[str, list[dict]] = {s: [] for s in SHAPES}
    budgets: dict[str, list[float]] = {s: [] for s in SHAPES}
    for shape in rotating(repeats):
        before = budget()
        runs[shape].append(run_app(data, threads, f"loop.shape={shape}", "loop.tensor_cache=false"))
        budgets[shape].append((before + budget()) / 2)
    return runs, budgets


def shapes(n: int, threads: int, repeats: int) -> None:
    from evalharness.data.preprocess import (
        PreprocessSpec,
        image_input_spec,
        preprocess_file,
        set_exact_resize,
    )
    from evalharness.runtime import load_model, plan_delegate
    from evalharness.runtime.native_resize import shared

    set_exact_resize(shared())  # the tool's default (loop.resize=native) for prep alone and naive exact

    model = load_model(
        str(ASSETS / "models" / f"{MODEL}.tflite"), plan_delegate({"name": "cpu", "num_threads": threads})
    )
    i = model.inputs[0]
    inp = image_input_spec(i.shape, i.dtype, (i.scale, i.zero_point), MODEL)
    spec = PreprocessSpec()
    with tempfile.TemporaryDirectory() as tmp:
        data = make_dataset(Path(tmp), n)
        paths = sorted(str(p) for p in (data / "images").iterdir())
        tensors = [preprocess_file(p, spec, inp) for p in paths[:50]]

        invoke_ips, invoke_cpu_ms = pure_invoke(model, tensors, n)

        start, cpu = time.perf_counter(), time.process_time()
        with ThreadPoolExecutor(os.cpu_count()) as pool:
            list(pool.map(lambda p: preprocess_file(p, spec, inp), paths))
        prep_ips = n / (time.perf_counter() - start)
        prep_cpu_ms = (time.process_time() - cpu) * 1000 / n

        naive_pil = timed_loop(model, paths, lambda p: naive_pillow(p, inp.height, inp.width))
        naive_exact = timed_loop(model, paths, lambda p: preprocess_file(p, spec, inp))
        cores = os.cpu_count() or 1

        def budget(k: int = 300) -> float:  # img/s: cores / CPU ms of (invoke + preparation)
            return cores * 1000 / (pure_invoke(model, tensors, k)[1] + prep_cpu_ms)

        shaped, budgets = loop_shapes(data, threads, repeats, budget)
        with tempfile.TemporaryDirectory() as cache:
            run_app(data, threads, "loop.tensor_cache=true", f"paths.cache_dir={cache}")
            warm = warm_runs(data, threads, repeats, cache, lambda: pure_invoke(model, tensors, n)[0])

    cpu_bound = (os.cpu_count() or 1) * 1000 / (invoke_cpu_ms + prep_cpu_ms)
    print(f"images={n} threads={threads} cpus={os.cpu_count()} repeats={repeats}")
    print(f"pure invoke (pre-made tensors)        {invoke_ips:8.1f} img/s")
    print(f"input preparation alone, all cores    {prep_ips:8.1f} img/s")
    print(
        f"CPU budget: invoke {invoke_cpu_ms:.2f} ms + preparation {prep_cpu_ms:.2f} ms of CPU per image on "
        f"{os.cpu_count()} cores -> at most {cpu_bound:.1f} img/s for any cold run"
    )
    print(f"naive loop, Pillow bilinear           {naive_pil:8.1f} img/s  (not the tool's numbers)")
    print(f"naive loop, exact preprocessing       {naive_exact:8.1f} img/s")
    best = {}
    for shape, docs in shaped.items():
        figures = [ips(d) for d in docs]
        best[shape] = max(figures)
        chosen = [d["provenance"]["thread_budget"]["loop"]["shape"] for d in docs]
        mean_invoke = [d["latency_ms"]["inference"]["mean"] for d in docs]
        print(
            f"cold, loop.shape={shape:<10}         {' / '.join(f'{f:.1f}' for f in figures)} img/s  "
            f"(ran {', '.join(chosen)}; mean invoke {' / '.join(f'{m:.2f}' for m in mean_invoke)} ms)"
        )
    better = max(best["sequential"], best["pipelined"])
    paired = [
        ips(a) / max(ips(s), ips(p))
        for a, s, p in zip(shaped["auto"], shaped["sequential"], shaped["pipelined"], strict=True)
    ]
    print(
        f"auto vs the better shape: best {best['auto'] / better:.3f} x, per repeat "
        f"{', '.join(f'{r:.3f}' for r in paired)}"
    )
    phased = [
        ips(f) / max(ips(s), ips(p))
        for f, s, p in zip(shaped["phased"], shaped["sequential"], shaped["pipelined"], strict=True)
    ]
    print(
        f"cold phased = {best['phased'] / cpu_bound:.3f} x CPU budget; vs the better of sequential and "
        f"pipelined: best {best['phased'] / better:.3f} x, per repeat {', '.join(f'{r:.3f}' for r in phased)}"
    )
    auto = best["auto"]
    print(
        f"cold auto = {auto / cpu_bound:.3f} x CPU budget, {auto / invoke_ips:.3f} x pure invoke, "
        f"{auto / naive_pil:.3f} x naive Pillow loop, {auto / naive_exact:.3f} x naive exact loop"
    )
    for shape in SHAPES:
        local = [ips(d) / b for d, b in zip(shaped[shape], budgets[shape], strict=True)]
        print(
            f"cold {shape} / CPU budget measured around each run: best {max(local):.3f} x, per repeat "
            f"{', '.join(f'{r:.3f}' for r in local)} "
            f"(budgets {' / '.join(f'{b:.1f}' for b in budgets[shape])} img/s)"
        )
    for shape in SHAPES:
        docs = [d for d, _ in warm[shape]]
        print(
            f"warm cache, loop.shape={shape:<10}   {' / '.join(f'{ips(d):.1f}' for d in docs)} img/s = "
            f"{' / '.join(f'{ips(d) / c:.3f}' for d, c in warm[shape])} x pure invoke measured around "
            f"each (ran {', '.join(d['provenance']['thread_budget']['loop']['shape'] for d in docs)}); "
            f"share of the loop's time in invoke() {' / '.join(f'{in_invoke(d):.3f}' for d in docs)}"
        )
    reference = shaped["sequential"][0]["metrics"]
    warm_docs = [d for runs in warm.values() for d, _ in runs]
    same = all(d["metrics"] == reference for docs in [*shaped.values(), warm_docs] for d in docs)
    print(f"metrics identical across shapes, repeats and the warm run: {same}")
    print("first auto run:", shaped["auto"][0]["provenance"]["thread_budget"]["loop"]["source"])


BATCH_MODEL = "mobilenet_edgetpu_224_1.0_uint8"  # dynamic batch; EfficientNet-Lite0 also takes one


def batches(n: int, threads: int, size: int = 8) -> None:
    """Batch 1 vs ``size`` on the model with a dynamic batch: pure invoke per image (the batch-1
    ceiling and the batched one), and cold runs with loop.batch_size 1 and ``size``, paired."""
    import numpy as np

    from evalharness.runtime import load_model, plan_delegate

    path = str(ASSETS / "models" / f"{BATCH_MODEL}.tflite")
    pure = {}
    for b in (1, size):
        model = load_model(path, plan_delegate({"name": "cpu", "num_threads": threads}))
        if b > 1:
            model.set_batch(b)
        x = np.random.default_rng(0).integers(0, 256, (b, *model.inputs[0].shape[1:]), dtype=np.uint8)
        model.set_inputs([x])
        model.invoke()
        start = time.perf_counter()
        for _ in range(max(n // b, 1)):
            model.set_inputs([x])
            model.invoke()
        pure[b] = max(n // b, 1) * b / (time.perf_counter() - start)
    with tempfile.TemporaryDirectory() as tmp:
        data = make_dataset(Path(tmp), n)
        runs = {b: [] for b in (1, size)}
        for order in ((1, size), (size, 1)):
            for b in order:
                extra = ("loop.tensor_cache=false", f"loop.batch_size={b}")
                runs[b].append(run_app(data, threads, *extra, model=BATCH_MODEL))
    print(f"{BATCH_MODEL}, {n} images, threads={threads}:")
    print(f"pure invoke, batch 1 (the ceiling)    {pure[1]:8.1f} img/s")
    ratio = pure[size] / pure[1]
    print(f"pure invoke, batch {size}                {pure[size]:8.1f} img/s = {ratio:.3f} x batch 1")
    for b, docs in runs.items():
        figures = [ips(d) for d in docs]
        print(
            f"cold, loop.batch_size={b:<3}             {' / '.join(f'{f:.1f}' for f in figures)} img/s "
            f"= {max(figures) / pure[1]:.3f} x the batch-1 ceiling"
        )
    same = runs[size][0]["metrics"] == runs[1][0]["metrics"]
    print(f"metrics identical batch 1 and {size}: {same}")


def resize_parts(rounds: int = 4) -> None:
    """Per image (val50, one thread): decode, crop, the exact resize (numpy port vs LiteRT's reference
    kernel, same bits, in alternating order), conversion to the uint8 tensor; ``rounds`` passes over
    the 50 images."""
    import numpy as np

    from evalharness.data.decode import decode_rgb
    from evalharness.data.preprocess import (
        InputSpec,
        PreprocessSpec,
        central_crop,
        resize_bilinear_tflite,
        to_input_tensor,
    )
    from evalharness.runtime.native_resize import NativeBilinear

    paths = sorted(str(p) for p in (ASSETS / "imagenet" / "val50").glob("*.JPEG"))
    spec, inp, native = PreprocessSpec(), InputSpec(224, 224, 3, "uint8"), NativeBilinear()
    steps = {"decode": 0.0, "crop": 0.0, "resize numpy": 0.0, "resize native": 0.0, "convert": 0.0}
    same = True

    def timed(resize, crop):
        start = time.perf_counter()
        out = resize(crop, 224, 224)
        return out, time.perf_counter() - start

    for turn in range(rounds):
        for index, path in enumerate(paths):
            t0 = time.perf_counter()
            img = decode_rgb(path)
            t1 = time.perf_counter()
            crop = central_crop(img, spec.crop_fraction)
            t2 = time.perf_counter()
            # each implementation runs first (straight after the decode) on every other image: the
            # second one finds the caches as the first left them
            first_port = (index + turn) % 2 == 0
            if first_port:
                port, took_port = timed(resize_bilinear_tflite, crop)
                kernel, took_native = timed(native, crop)
            else:
                kernel, took_native = timed(native, crop)
                port, took_port = timed(resize_bilinear_tflite, crop)
            t3 = time.perf_counter()
            to_input_tensor(kernel, spec, inp)
            t4 = time.perf_counter()
            for step, took in zip(steps, (t1 - t0, t2 - t1, took_port, took_native, t4 - t3), strict=True):
                steps[step] += took
            same &= bool(np.array_equal(port.view(np.uint32), kernel.view(np.uint32)))
    n = rounds * len(paths)
    print(f"per image, {n} preparations (val50 x {rounds}, 224x224 uint8, one thread):")
    for step, total in steps.items():
        print(f"  {step:<14} {total * 1000 / n:6.3f} ms")
    print(
        f"native exact resize = {steps['resize numpy'] / steps['resize native']:.2f} x faster than the "
        f"numpy port (each new image size included); bit-identical on all: {same}"
    )


def memory(small: int, big: int, threads: int) -> None:
    """Peak RSS of a ``big``-image run vs a ``small``-image run (separate processes, no cache)."""
    peaks = {}
    for n in (small, big):
        with tempfile.TemporaryDirectory() as tmp:
            data = make_dataset(Path(tmp), n)
            doc = run_app(data, threads, "loop.tensor_cache=false")
            peaks[n] = (doc["memory_mb"]["peak_rss"], ips(doc))
    (s_rss, s_ips), (b_rss, b_ips) = peaks[small], peaks[big]
    print(
        f"peak RSS: {big} images {b_rss:.1f} MB ({b_ips:.0f} img/s) vs {small} images {s_rss:.1f} MB "
        f"({s_ips:.0f} img/s) = {b_rss / s_rss:.3f} x"
    )


def coco(n_images: int, resamples: int) -> None:
    from ssd_low_threshold import replicated_val25

    from evalharness.stats.coco_eval import COCO_STAT_NAMES, evaluate_bbox

    big, results, per_image, decode_error = replicated_val25(ASSETS, n_images)
    timings, stats = {}, {}
    for backend in ("pycocotools", "faster_coco_eval"):
        start = time.perf_counter()
        stats[backend] = evaluate_bbox(big, results, backend=backend)["stats"]
        timings[backend] = time.perf_counter() - start
    worst = max(abs(stats["pycocotools"][k] - stats["faster_coco_eval"][k]) for k in COCO_STAT_NAMES)
    print(
        f"COCO scoring: {len(big['images'])} images, {len(results)} detections (SSD raw outputs, "
        f"score > 0.01, {per_image:.0f}/image; decoding check {decode_error:.1e}), "
        f"AP {stats['pycocotools']['AP']:.4f}"
    )
    print(
        f"pycocotools {timings['pycocotools']:.2f} s, faster_coco_eval {timings['faster_coco_eval']:.2f} s "
        f"= {timings['faster_coco_eval'] / timings['pycocotools']:.3f} x; max |stat diff| {worst:.2e}"
    )
    bootstrap(big, results, resamples, timings["pycocotools"])


def bootstrap(gt: dict, results: list, resamples: int, plain_s: float) -> None:
    from evalharness.stats.coco_eval import evaluate_bbox
    from evalharness.stats.coco_intervals import bootstrap_intervals
    from evalharness.stats.intervals import CONFIDENCE

    start = time.perf_counter()
    scored = evaluate_bbox(gt, results, keep_matching=True)
    keep_s = time.perf_counter() - start
    start = time.perf_counter()
    intervals = bootstrap_intervals(scored["matching"], resamples, 0, CONFIDENCE)
    boot_s = time.perf_counter() - start
    print(
        f"COCO bootstrap: {len(gt['images'])} images, B={resamples}: {boot_s:.2f} s "
        f"({boot_s / plain_s:.3f} x one pycocotools scoring); keeping the matching costs "
        f"{keep_s - plain_s:+.2f} s over plain scoring; AP {scored['stats']['AP']:.4f} "
        f"95 % interval [{intervals['AP'][0]:.4f}, {intervals['AP'][1]:.4f}]"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--coco-images", type=int, default=5000)
    ap.add_argument("--bootstrap", type=int, default=1000, help="COCO bootstrap resamples")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds of the classification part")
    ap.add_argument("--baseline", type=Path, help="another checkout whose cold and warm runs join the rounds")
    ap.add_argument("--repeats", type=int, default=3, help="paired cold runs per loop shape (--only shapes)")
    ap.add_argument("--memory-images", type=int, default=50_000, help="images of the big peak-RSS run")
    ap.add_argument("--batch-images", type=int, default=400, help="images of the batch 1 vs 8 runs")
    ap.add_argument(
        "--only", help="run one part",
        choices=("classification", "shapes", "memory", "coco", "resize", "batch"),
    )
    args = ap.parse_args()
    if args.only in (None, "resize"):
        resize_parts()
    if args.only in (None, "classification"):
        from throughput_rounds import classification

        classification(args.images, args.threads, args.rounds, args.baseline)
    if args.only in (None, "shapes"):
        shapes(args.images, args.threads, args.repeats)
    if args.only in (None, "batch"):
        batches(args.batch_images, args.threads)
    if args.only in (None, "memory"):
        memory(1000, args.memory_images, args.threads)
    if args.only in (None, "coco"):
        coco(args.coco_images, args.bootstrap)


if __name__ == "__main__":
    main()
