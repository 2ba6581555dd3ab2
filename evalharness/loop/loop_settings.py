"""The ``loop`` config group: how the run loop prepares, invokes and scores its samples (also its
schema: :func:`evalharness.core.schema.check` applies it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalharness.core.schema import bounds
from evalharness.loop.shape import SHAPES


@dataclass(frozen=True)
class LoopSettings:
    """The ``loop`` config group (also its schema: :func:`evalharness.core.schema.check` applies it)."""

    warmup_runs: int = field(default=1, metadata=bounds(0))
    strict: bool = True  # first bad sample stops the run (True) or is skipped and counted (False)
    progress: bool = True
    resume: bool = False  # continue an interrupted run in the same run directory
    overwrite: bool = False  # replace a run already in the run directory
    # auto: measure on this machine whether preparing inputs on other threads while invoke() runs
    # (pipelined) beats preparing them in turn (sequential), and where more than one instance of a
    # CPU model fits the cores, whether instances side by side (lanes) beat one; see
    # evalharness/loop/shape.py and evalharness/loop/lanes.py
    shape: str = field(default="auto", metadata=bounds(choices=SHAPES))
    # Threads preparing inputs ahead of invoke() in the pipelined shape, at most `prefetch` samples
    # ahead (bounded memory, results in sample order). Given on the command line it chooses the
    # shape (0 = strictly sequential: nothing else runs while invoke() is timed).
    workers: int = field(default=1, metadata=bounds(0, 64))
    # The most instances of a CPU model side by side (loop.shape=lanes or auto's measure of them):
    # auto = this process's share of the cores / delegate.num_threads (settings/validate.py makes it a
    # number); 1 = one instance
    lanes: str = "auto"
    prefetch: int = field(default=4, metadata=bounds(1, 4096))
    # the exact TFLite-tool resize: native = LiteRT's reference kernel (faster), numpy = the port;
    # the same bits either way (tests/e2e/test_native_resize.py)
    resize: str = field(default="native", metadata=bounds(choices=("native", "numpy")))
    # samples per invoke: models with a dynamic batch (or a fixed one the graph lets resize); the last
    # batch is padded with its last sample and the padding's outputs dropped
    batch_size: int = field(default=1, metadata=bounds(1, 4096))
    # preprocessed-tensor cache: true | false | auto (= on in multiruns)
    tensor_cache: str = field(default="auto", metadata=bounds(choices=("auto", "true", "false")))
    # Outputs checks (evalharness/loop/checks.py): a run whose scored outputs hold NaN/Inf, or are
    # the same for every input, is ``invalid`` (exit 1) unless allowed here.
    allow_nonfinite: bool = False
    allow_constant_outputs: bool = False
    # per-op time and placement after the measured loop (any task; runtime/op_profile.py), each op
    # from the runtime's own profiler over `op_profile_repeats` invokes (else each op timed as its own
    # sub-model on the run's delegate; the record says which)
    # off | auto | PxT: the run as P processes x T interpreter threads over shards, merged exactly
    # (evalharness/run/parallel.py; auto measures the splits of the cores)
    parallel: str = "off"
    op_profile: bool = False
    op_profile_repeats: int = field(default=20, metadata=bounds(1, 10000))
