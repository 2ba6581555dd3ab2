"""Causal bisection: which part of the graph, and which op, makes B's answer differ from A's.

``restored(k)``: ops 0..k run on A's path (A's recorded activations), ops k+1..end on B's (a suffix
sub-model fed the tensors crossing the cut); how many changed images get A's answer back (the decoded
answer, :mod:`evalharness.explain.answers`: the top-1 class, or the detections). A binary
search finds the smallest such k that restores all of them (about log2(ops) compilations; it assumes
that more of A never restores fewer, and reports the count it measured at the k it found). Then,
for every op j up to that k, B's whole path with op j's output taken from A (a suffix from j+1 fed
B's tensors except op j's): the op that restores most changed images alone is the culprit.

More than one culprit (:meth:`Bisection.rounds`): an op is *fixed* by running A's kernel for it on
B's path (A's single-op sub-model fed B's tensors, requantized both ways where the types differ),
which restores only the answers that op's own difference changes: taking an op's output from A
would also carry every difference made before it, so in a chain the last faulty op would take the
credit for all of them. Each round fixes the op that brings back most of the answers still changed
(with the culprits before it fixed: B's path cut into segments at the fixed ops), until every
changed answer is back or no single op brings one more back (those stay unexplained).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from evalharness.core.bars import progress
from evalharness.explain.answers import Answers
from evalharness.explain.sides import Side


def saturated_ties(side: Side, acts: list[dict[int, np.ndarray]], images: list[int]) -> list[int]:
    """Images whose integer output has its top value at the type's maximum more than once: clipped
    logits tie and the lowest class index wins, whatever the ops computed."""
    found = []
    for i in images:
        out = acts[i][side.graph.outputs[0]].ravel()
        if out.dtype.kind in "iu" and out.max() == np.iinfo(out.dtype).max and (out == out.max()).sum() > 1:
            found.append(i)
    return found


class Bisection:
    """Suffix runs on B's path, fed tensors chosen per image, counted against A's answers."""

    def __init__(
        self,
        b: Side,
        answers: Answers,
        a_acts: list[dict[int, np.ndarray]],
        b_acts: list[dict[int, np.ndarray]],
        changed: list[int],
        a_answers: list[Any],
        swap: Callable[[int, list[dict[int, np.ndarray]]], list[dict[int, np.ndarray]]] | None = None,
    ) -> None:
        self.b, self.answers, self.a_acts, self.b_acts = b, answers, a_acts, b_acts
        self.swap = swap  # (op, B's tensors per image) -> that op's outputs by A's kernel, as B's tensors
        self.changed, self.a_answers = changed, a_answers
        self.n = len(b.graph.ops)
        self.trials: dict[int, int] = {}

    def _suffix_answers(self, start: int, feeds: list[dict[int, np.ndarray]]) -> list[Any]:
        if start >= self.n:
            return [self.answers.of(f) for f in feeds]
        graph = self.b.graph
        model = self.b.load(f"from{start}", lambda p: graph.write(p, start, self.n, list(graph.outputs)))
        crossing = [info.index for info in model.inputs]
        outs = self.b.run_model(model, [{t: f[t] for t in crossing} for f in feeds])
        return [self.answers.of(o) for o in outs]

    def _count(self, answers: list[Any]) -> list[int]:
        same = self.answers.same
        return [i for i, got in zip(self.changed, answers, strict=True) if same(self.a_answers[i], got)]

    def restored_upto(self, k: int) -> list[int]:
        """Changed images whose answer comes back when ops 0..k run on A's path."""
        got = self._suffix_answers(k + 1, [self.a_acts[i] for i in self.changed])
        restored = self._count(got)
        self.trials[k] = len(restored)
        return restored

    def split_point(self) -> tuple[int | None, list[int]]:
        """Smallest k restoring every changed image (binary search), and those it restores. None when
        even every op on A's path does not: B's output tensor itself (an int8 output's coarser
        steps, ties in its top-1) changes the answer."""
        lo, hi = -1, self.n - 1
        everything = self.restored_upto(hi)
        if len(everything) < len(self.changed):
            return None, everything
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if len(self.restored_upto(mid)) == len(self.changed):
                hi = mid
            else:
                lo = mid
        return hi, self.restored_upto(hi)

    def single_op(self, j: int) -> list[int]:
        """Changed images restored when only op j's outputs come from A (the rest from B)."""
        outputs = self.b.graph.ops[j].outputs
        feeds = [{**self.b_acts[i], **{t: self.a_acts[i][t] for t in outputs}} for i in self.changed]
        return self._count(self._suffix_answers(j + 1, feeds))

    def culprits(self, upto: int) -> list[tuple[int, list[int]]]:
        """(op, images it restores alone) for every op 0..upto that restores at least one."""
        found = []
        with progress(upto + 1, "explain: each op alone", "op") as bar:
            for j in range(upto + 1):
                restored = self.single_op(j)
                if restored:
                    found.append((j, restored))
                bar.update(1)
        return found

    def restored_with(self, fixed: list[int]) -> list[int]:
        """Changed images restored when the ops ``fixed`` run A's kernel (``swap``; without one:
        take A's outputs) and every other op runs on B's path: B's trace up to the first of them,
        then one segment (a sub-model exposing every output it makes) between each and the next."""
        graph, fixed = self.b.graph, sorted(fixed)
        values = [dict(self.b_acts[i]) for i in self.changed]
        for at, f in enumerate(fixed):
            if self.swap is not None:
                for v, o in zip(values, self.swap(f, values), strict=True):
                    v.update(o)
            else:
                for v, i in zip(values, self.changed, strict=True):
                    v.update({t: self.a_acts[i][t] for t in graph.ops[f].outputs})
            stop = fixed[at + 1] if at + 1 < len(fixed) else self.n
            if f + 1 >= stop:
                continue
            made = [t for op in graph.ops[f + 1 : stop] for t in op.outputs if t >= 0]
            model = self.b.load(
                f"seg{f + 1}_{stop}", lambda p, a=f + 1, b=stop, o=made: graph.write(p, a, b, o)
            )
            crossing = [info.index for info in model.inputs]
            outs = self.b.run_model(model, [{t: v[t] for t in crossing} for v in values])
            for v, o in zip(values, outs, strict=True):
                v.update(o)
        return self._count([self.answers.of(v) for v in values])

    def rounds(self, upto: int, weight: Callable[[int], float], limit: int = 5) -> list[dict[str, Any]]:
        """Culprits fixed one after another: each round, the op 0..upto that (with the culprits so far
        fixed) brings back most of the changed answers still wrong (ties: ``weight(op)``, the larger
        first); at most ``limit`` rounds."""
        fixed: list[int] = []
        back: set[int] = set()
        found = []
        while len(back) < len(self.changed) and len(fixed) < limit:
            best = None
            for j in range(upto + 1):
                if j in fixed:
                    continue
                got = set(self.restored_with([*fixed, j]))
                key = (len(got - back), weight(j))
                if got - back and (best is None or key > best[0]):
                    best = (key, j, got)
            if best is None:
                break
            _, j, got = best
            found.append({"op": j, "restores": sorted(got - back), "restored_total": len(got)})
            fixed.append(j)
            back = got
        return found
