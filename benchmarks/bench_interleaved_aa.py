"""A/A test of the interleaved comparison (not a unit test): how often does it call a configuration
different from itself, and does it see a real difference every time?

    python benchmarks/bench_interleaved_aa.py [--repeats 20] [--model mobilenet_v2_1.0_224_quant]

Runs ``--repeats`` interleaved comparisons of a configuration (delegate=cpu, 2 threads) with itself,
each with both candidates loaded afresh, and as many of 1 thread against 2 threads (a real speed-up
on a machine with 2 free cores), with ``evalharness compare``'s default measurement settings, and
prints how many were flagged significant (95 % interval of the speed-up excluding 1), how many
measurements were invalid, and the speed-ups. Expected: A/A flagged at most twice in 20
(alpha = 0.05: one expected), 1 vs 2 threads flagged every time.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
ASSETS = REPO.parent / "shared" / "assets"

from omegaconf import OmegaConf  # noqa: E402

from evalharness.core.paths import bundled, model_stem  # noqa: E402
from evalharness.loop.interleave import InterleaveSettings, measure  # noqa: E402
from evalharness.run.compare import loader, validate_candidates  # noqa: E402

OmegaConf.register_new_resolver("bundled", bundled, replace=True)
OmegaConf.register_new_resolver("model_stem", model_stem, replace=True)


def one(model: str, threads: list[str], key: str = "delegate.num_threads", **settings) -> dict:
    """One interleaved comparison: candidate 0 against candidate 1 (values of ``key``)."""
    models = f"paths.models_dir={ASSETS / 'models'}"
    fixed = {"model": model, "delegate": "cpu", "delegate.num_threads": "2"}
    overrides = [models, *(f"{k}={v}" for k, v in fixed.items() if k != key), f"{key}=x"]
    plans = []
    for n in threads:  # validate_candidates refuses a value given twice (compare does): one at a time
        plans += validate_candidates(overrides, len(overrides) - 1, key, [n])
    found = measure([loader(rp) for rp in plans], InterleaveSettings(**settings))
    return {"comparison": found["comparisons"][1], "valid": [m["valid"] for m in found["measurements"]],
            "cv": [m["cv"] for m in found["measurements"]], "rounds": found["rounds"]}  # fmt: skip


def series(name: str, model: str, values: list[str], repeats: int, key: str = "delegate.num_threads") -> None:
    flagged = significant = invalid = 0  # significant: flagged with both measurements valid
    verdicts = Counter()
    speedups, cvs = [], []
    started = time.perf_counter()
    for _ in range(repeats):
        r = one(model, values, key)
        c = r["comparison"]
        flagged += c["significant"]
        verdicts[c["verdict"]] += 1
        significant += c["significant"] and all(r["valid"])
        invalid += not all(r["valid"])
        speedups.append(c["speedup"])
        cvs += r["cv"]
    took = time.perf_counter() - started
    print(
        f"{name}: {flagged}/{repeats} flagged significant (interval excludes 1; {significant} of them with "
        f"valid measurements), {invalid}/{repeats} with an invalid measurement; "
        f"speed-up min {min(speedups):.3f} median {sorted(speedups)[len(speedups) // 2]:.3f} "
        f"max {max(speedups):.3f}; block CV median {sorted(cvs)[len(cvs) // 2]:.3f}; {took:.0f} s; "
        f"verdicts: {dict(verdicts)}"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--model", default="mobilenet_v2_1.0_224_quant")
    p.add_argument("--also-models", action="store_true", help="a third series: a small model against --model")
    args = p.parse_args()
    print(f"model {args.model}, delegate=cpu, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    series("A/A (2 threads vs 2 threads)", args.model, ["2", "2"], args.repeats)
    series("real (1 thread vs 2 threads)", args.model, ["1", "2"], args.repeats)
    if args.also_models:
        small = "mobilenet_v1_0.25_128_quant"
        series(f"real ({small} vs {args.model})", args.model, [small, args.model], args.repeats, "model")
    print(f"load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
