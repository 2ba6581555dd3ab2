"""``runner=adb``: the model runs in TFLite's ``benchmark_model`` on an attached Android phone.

Everything else stays on the host. Loading pushes the binary and the model, then does the standard
latency run (warm-up + ``num_runs``/``min_secs`` on benchmark_model's random input): it checks the
delegate really applied and gives the run's ``latency_ms``/``memory_mb`` blocks and coverage. The
loop then hands over batches of host-prepared input tensors (:meth:`AdbModel.run_batch`): they are
written as raw files of the exact tensor size, pushed as one directory, ONE ``adb shell`` runs
benchmark_model once per image (``--num_runs=1 --warmup_runs=0``), and the outputs (raw bytes of
every output tensor, concatenated in output order) come back with ``adb pull`` and are split into
the arrays a host run would give the evaluator. Per-image ``latency_ms`` in predictions.jsonl is
that single run's device time (one cold invoke per process), not the headline latency.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import tempfile
from typing import TYPE_CHECKING, Any

import numpy as np

from evalharness.core.checksum import sha256_file
from evalharness.core.errors import EvalHarnessError, ModelMismatchError
from evalharness.core.tensors import TensorInfo
from evalharness.runtime.android import benchmark_model as bm
from evalharness.runtime.android.adb import Adb, tail
from evalharness.runtime.android.runner import AdbSettings
from evalharness.runtime.contract import BACKENDS, Model, RuntimeInfo
from evalharness.runtime.delegates import DelegatePlan
from evalharness.runtime.litert import check_flatbuffer, graph_summary
from evalharness.runtime.thermal import from_listing, listing_command

if TYPE_CHECKING:  # for the type only
    from evalharness.runtime.runners import RunnerSettings

log = logging.getLogger("evalharness")
_BEGIN, _END = "=== begin ", "=== end "
_END_LINE = re.compile(r"^=== end (\d+) rc=(\d+)$", re.M)
PROPS = {
    "model": "ro.product.model",
    "manufacturer": "ro.product.manufacturer",
    "android_version": "ro.build.version.release",
    "sdk": "ro.build.version.sdk",
    "soc_model": "ro.soc.model",
    "soc_manufacturer": "ro.soc.manufacturer",
    "board_platform": "ro.board.platform",
    "hardware": "ro.hardware",
    "abi": "ro.product.cpu.abi",
    "fingerprint": "ro.build.fingerprint",
}


def _shape(info: TensorInfo) -> str:
    return ",".join(str(d) for d in info.shape)


@BACKENDS.register("adb")
class AdbModel(Model):
    """A model on the phone, run in batches (``run_batch``) with benchmark_model's own figures."""

    timed_region = "benchmark_model on the device (its own timers)"
    device: dict[str, Any]  # the phone it runs on: set in __init__, never None here

    @classmethod
    def load(
        cls, model_path: str, plan: DelegatePlan, runtime: str, runner: RunnerSettings | None
    ) -> AdbModel:
        if not isinstance(runner, AdbSettings):
            raise EvalHarnessError("runner=adb: the runner's settings are missing")
        return cls(model_path, plan, runner)

    def __init__(self, model_path: str, plan: DelegatePlan, runner: AdbSettings) -> None:
        check_flatbuffer(model_path)
        self.plan, self.runner = plan, runner
        self.batch_size = int(runner.batch_size)
        self.inputs, self.outputs, ops = graph_summary(model_path)
        bad = [i.name for i in self.inputs if "," in i.name]
        if bad:
            raise EvalHarnessError(
                f"input name(s) {bad} contain ',' which benchmark_model's --input_layer cannot carry"
            )
        self.adb = Adb(runner.adb, runner.serial)
        serial = self.adb.check_device()
        self.dir = runner.device_dir.rstrip("/")
        binary_sha = sha256_file(runner.benchmark_binary)
        props = self.adb.getprop()
        self.device = {
            "serial": serial,
            **{k: props.get(p) for k, p in PROPS.items()},
            "benchmark_binary": {"path": os.path.abspath(runner.benchmark_binary), "sha256": binary_sha},
            "device_dir": self.dir,
        }
        self._runtime: RuntimeInfo = {
            "name": "benchmark_model",
            "package": "android",
            "version": f"sha256:{binary_sha[:16]}",
        }
        self._warn_platform()
        model_sha = sha256_file(model_path)
        self._model_name = f"model-{model_sha[:16]}.tflite"
        self.adb.shell(f"mkdir -p {shlex.quote(self.dir)}/cache")
        self.adb.push(runner.benchmark_binary, f"{self.dir}/benchmark_model")
        self.adb.push(model_path, f"{self.dir}/{self._model_name}")
        self.adb.shell(f"chmod 755 {shlex.quote(self.dir)}/benchmark_model")
        self.flags = [f"--graph={self._model_name}", *bm.device_flags(plan)]
        if runner.delegate_serialize and bm.on_device(plan).serializable:
            self.flags += ["--delegate_serialize_dir=cache", f"--delegate_serialize_token={model_sha[:16]}"]
        before = self.thermal()
        self.native_log = self._latency_run(sum(ops.values()))
        self.latency_thermal = {"before": before, "after": self.thermal()}

    def runtime_info(self) -> RuntimeInfo:
        return self._runtime

    def thermal(self) -> dict[str, Any]:
        """The phone's /sys/class/thermal, listed through one ``adb shell``."""
        try:
            text, _ = self.adb.shell(listing_command(), check=False)
        except EvalHarnessError as e:  # a lost device: said in the snapshot, the run goes on
            return {"source": f"adb {self.device['serial']}", "exposed": False, "error": str(e)}
        return from_listing(text, f"adb {self.device['serial']}")

    def set_inputs(self, tensors: list[np.ndarray]) -> None:
        self._pending = list(tensors)

    def invoke(self) -> None:
        """One sample as a batch of one (one benchmark_model process on the phone)."""
        [(self._last, _)] = self.run_batch([self._pending])

    def get_outputs(self) -> list[np.ndarray]:
        return [a.copy() for a in self._last]

    def _warn_platform(self) -> None:
        """The delegate's own caveat about this device (a deprecated API, a DSP it does not support)."""
        warning = bm.on_device(self.plan).warning(self.device)
        if warning:
            log.warning("%s", warning)

    def _cd(self) -> str:
        return f"cd {shlex.quote(self.dir)} && "

    def _latency_run(self, ops_total: int) -> list[str]:
        r = self.runner
        cmd = [
            "./benchmark_model",
            *self.flags,
            f"--num_runs={r.num_runs}",
            f"--warmup_runs={r.warmup_runs}",
            f"--min_secs={r.min_secs}",
            f"--warmup_min_secs={r.warmup_min_secs}",
            f"--max_secs={r.max_secs}",
        ]
        text, rc = self.adb.shell(self._cd() + " ".join(map(shlex.quote, cmd)) + " 2>&1", check=False)
        info = bm.check_log(text, self.plan)  # unknown flags / delegate not applied before the exit code
        if rc != 0:
            raise EvalHarnessError(f"benchmark_model exited {rc} on {self.device['serial']}: {tail(text)}")
        self.reported_latency = bm.parse_latency(text)
        self.memory = bm.parse_memory(text)
        self.coverage = bm.coverage(info, self.plan, ops_total)
        self.device["nnapi_accelerators"] = info["accelerators"]
        if self.plan.require_full_delegation and self.coverage.ops_delegated != ops_total:
            raise EvalHarnessError(
                f"delegate={self.plan.name}: {self.coverage.ops_delegated}/{ops_total} ops delegated "
                "on the device and require_full_delegation=true"
            )
        return [line for line in text.splitlines() if line.strip()]

    def _script(self, count: int) -> str:
        names = ",".join(i.name for i in self.inputs)
        shapes = ":".join(_shape(i) for i in self.inputs)
        fixed = [
            *self.flags,
            f"--input_layer={names}",
            f"--input_layer_shape={shapes}",
            "--num_runs=1",
            "--warmup_runs=0",
            "--min_secs=0",
            "--warmup_min_secs=0",
        ]
        # benchmark_model reads "::" as a ':' inside a name (TF names like "input:0") in this flag only
        files = ",".join(
            f"{shlex.quote(i.name.replace(':', '::'))}:batch/$n.in{k}" for k, i in enumerate(self.inputs)
        )
        return (
            'cd "$1" || exit 90\n'
            f"for n in {' '.join(f'{j:06d}' for j in range(count))}; do\n"
            f'  echo "{_BEGIN}$n"\n'
            f"  ./benchmark_model {' '.join(map(shlex.quote, fixed))} --input_layer_value_files={files} "
            "--output_filepath=batch/out/$n.bin 2>&1\n"
            f'  echo "{_END}$n rc=$?"\n'
            "done\n"
        )

    def run_batch(self, batch: list[list[np.ndarray]]) -> list[tuple[list[np.ndarray], float | None]]:
        """(outputs, device latency ms) per sample, in order; any per-image failure is an error."""
        with tempfile.TemporaryDirectory(prefix="evalharness-adb-") as tmp:
            local = os.path.join(tmp, "batch")
            os.makedirs(os.path.join(local, "out"))
            for j, tensors in enumerate(batch):
                for k, (info, value) in enumerate(zip(self.inputs, tensors, strict=True)):
                    arr = np.ascontiguousarray(value)
                    if arr.dtype != np.dtype(info.dtype) or arr.shape != tuple(info.shape):
                        raise ModelMismatchError(  # set_tensor refuses these on the host: no silent cast
                            f"input {info.name}: got {arr.dtype} {list(arr.shape)}, the model takes "
                            f"{info.dtype} {list(info.shape)}"
                        )
                    with open(os.path.join(local, f"{j:06d}.in{k}"), "wb") as f:
                        f.write(arr.tobytes())
            with open(os.path.join(local, "run.sh"), "w") as f:
                f.write(self._script(len(batch)))
            self.adb.shell(f"rm -rf {shlex.quote(self.dir)}/batch")
            self.adb.push(local, f"{self.dir}/batch")
            text, _ = self.adb.shell(f"sh {shlex.quote(self.dir)}/batch/run.sh {shlex.quote(self.dir)}")
            self.adb.pull(f"{self.dir}/batch/out", os.path.join(tmp, "pulled"))
            results = [self._one(text, j, os.path.join(tmp, "pulled")) for j in range(len(batch))]
        if not self.runner.keep_device_files:
            self.adb.shell(f"rm -rf {shlex.quote(self.dir)}/batch")
        return results

    def _one(self, text: str, j: int, pulled: str) -> tuple[list[np.ndarray], float | None]:
        name = f"{j:06d}"
        start, end = text.find(f"{_BEGIN}{name}\n"), text.find(f"{_END}{name} rc=")
        if start < 0 or end < 0:
            raise EvalHarnessError(f"benchmark_model output for image #{j} of the batch is missing")
        block = text[start:end]
        ended = _END_LINE.search(text, end)
        if ended is None:
            raise EvalHarnessError(f"benchmark_model output for image #{j} of the batch has no end line")
        rc = int(ended.group(2))
        bm.check_log(block, self.plan)
        if rc != 0:
            raise EvalHarnessError(f"benchmark_model exited {rc} on image #{j} of the batch: {tail(block)}")
        path = os.path.join(pulled, f"{name}.bin")
        if not os.path.isfile(path):
            raise EvalHarnessError(f"benchmark_model wrote no --output_filepath file for image #{j}")
        with open(path, "rb") as f:
            raw = f.read()
        return self._split(raw, j), bm.parse_latency(block)["inference"].get("mean")

    def _split(self, raw: bytes, j: int) -> list[np.ndarray]:
        sizes = [o.nbytes for o in self.outputs]  # a device's outputs have fixed shapes
        if len(raw) != sum(sizes):
            raise EvalHarnessError(
                f"image #{j}: benchmark_model wrote {len(raw)} output bytes, the model's outputs take "
                f"{sum(sizes)} ({[list(o.shape) for o in self.outputs]})"
            )
        arrays, offset = [], 0
        for info, size in zip(self.outputs, sizes, strict=True):
            chunk = raw[offset : offset + size]
            arrays.append(np.frombuffer(chunk, dtype=np.dtype(info.dtype)).reshape(info.shape).copy())
            offset += size
        return arrays
