"""McNemar's exact test at ILSVRC scale, as times in one process (not a unit test).

    python benchmarks/bench_mcnemar.py [--images 50000]

Times ``stats.paired.mcnemar_exact`` for discordant counts from a few hundred up to half of
``--images`` (the worst case: every image's answer differs between the runs), beside scipy's exact
binomial test on the same counts where scipy is installed, and the earlier big-integer tail (the
sum of every binomial coefficient up to the smaller count) up to 4,100 discordant pairs, where it
already took about a second. Printed: each count's milliseconds and the p-values side by side.
"""

from __future__ import annotations

import argparse
import math
import time
from fractions import Fraction

from evalharness.stats.paired import mcnemar_exact


def big_integer_tail(a_only: int, b_only: int) -> float:
    """The earlier implementation: exact rational arithmetic over every term of the tail."""
    n = a_only + b_only
    tail = sum(math.comb(n, i) for i in range(min(a_only, b_only) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def timed_ms(fn, *args) -> tuple[float, float]:
    start = time.perf_counter()
    value = fn(*args)
    return (time.perf_counter() - start) * 1e3, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=50_000)
    args = parser.parse_args()
    try:
        from scipy.stats import binomtest
    except ImportError:
        binomtest = None
    half = args.images // 2
    print(f"{'discordant':>10} {'ms':>8} {'p':>12} {'scipy ms':>9} {'scipy p':>12} {'old ms':>9}")
    for discordant in (400, 4_100, 12_500, half):
        a_only = discordant // 2 - discordant // 100  # a 1 % imbalance: p neither 0 nor 1
        b_only = discordant - a_only
        ms, p = timed_ms(mcnemar_exact, a_only, b_only)
        scipy_ms, scipy_p = (timed_ms(lambda a, n: binomtest(a, n, 0.5).pvalue, a_only, discordant)
                             if binomtest else (float("nan"), float("nan")))
        old_ms = timed_ms(big_integer_tail, a_only, b_only)[0] if discordant <= 4_100 else float("nan")
        print(f"{discordant:>10} {ms:>8.2f} {p:>12.6g} {scipy_ms:>9.2f} {scipy_p:>12.6g} {old_ms:>9.1f}")


if __name__ == "__main__":
    main()
