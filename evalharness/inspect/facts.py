"""``python -m evalharness.inspect MODEL`` (``evalharness inspect MODEL``): what a .tflite file is,
what evalharness would make of it, and what each delegate on this host really takes. Given a dataset
path instead, what was found there (:mod:`evalharness.inspect.dataset_view`).

Static lint tools guess delegate support from op lists; this prepares the model for real with every
registered delegate (``runtime.delegates.DELEGATES``, so a backend added later is listed without
touching this file) and reports the coverage the runtime measured, or the delegate's own error.
Delegates this host cannot run are listed with what is missing. ``--json``: the same as one object.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import json
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

from omegaconf import OmegaConf

from evalharness.core.boundary import ArgumentParser, guarded
from evalharness.core.checksum import sha256_file
from evalharness.core.documents import JSONMap
from evalharness.core.errors import EvalHarnessError
from evalharness.core.escape import terminal
from evalharness.core.native_output import quiet_native_output, verbose
from evalharness.core.numbers import fmt
from evalharness.core.paths import CONF_DIR, default_cache_dir, model_stem
from evalharness.data.describe import describe_dataset
from evalharness.data.preprocess import image_layout
from evalharness.inspect.dataset_view import is_dataset_path, render_dataset
from evalharness.settings.model_settings import infer_model_settings

if TYPE_CHECKING:  # for the type only: the runtime is imported when a model is inspected
    from evalharness.runtime.model_file import ModelFile

DETECTOR_SETTINGS = ("decoder", "class_map")
HEAD_KINDS = {  # what `inspect` adds to "detector" for a seg / pose head (docs/tasks/coco-masks-keypoints.md)
    "yolo_seg": " (segment head: boxes and masks)",
    "yolo_pose": " (pose head: boxes and keypoints)",
}


class InferredConfiguration(TypedDict):
    """What a run with only ``model.path`` would make of the file (``inferred`` in the report)."""

    kind: str  # detector | classifier | unknown: <what to give>
    layout: str | None  # the image input's layout, None without one image input
    settings: dict[str, Any]  # the model group as the run would fill it
    settings_source: dict[str, Any]  # setting -> where its value came from


class _DelegateStatus(TypedDict):
    status: str  # prepared | unavailable | error


class DelegateReport(_DelegateStatus, total=False):
    """One delegate's answer: ``coverage`` when prepared, else the ``reason`` or ``error``."""

    reason: str
    error: str
    coverage: dict[str, Any]


def _preset(path: Path) -> JSONMap:
    # a preset file is a YAML mapping (a DictConfig converts to a dict)
    return cast("JSONMap", OmegaConf.to_container(OmegaConf.load(path))) if path.is_file() else {}


def inferred_configuration(path: str, info: ModelFile) -> InferredConfiguration:
    """The ``file`` model preset as a run with only ``model.path`` would fill it (nothing written)."""
    model = {
        "name": model_stem(path),
        "path": path,
        "labels": "auto",
        "preprocess": _preset(CONF_DIR / "model" / "preprocess" / "tflite_tool.yaml"),
        "decoder": None,
        "class_map": "coco91",
        "from_file": True,
    }
    model, sources = infer_model_settings(model, [f"model.path={path}"], None)
    image = info.inputs[0].shape if len(info.inputs) == 1 else None
    if model["decoder"]:
        name = model["decoder"].get("name") if isinstance(model["decoder"], dict) else None
        kind = "detector" + HEAD_KINDS.get(str(name), "")
    elif len(info.outputs) == 1 and len(info.outputs[0].shape) in (1, 2):
        kind = "classifier"
    else:
        kind = "unknown: give model.decoder (detectors) or use a task that needs no decoding"
    if not kind.startswith("detector"):  # a decoder and a COCO class map say nothing of a classifier
        model = {k: v for k, v in model.items() if k not in DETECTOR_SETTINGS}
    return {
        "kind": kind,
        "layout": image_layout(image, "auto") if image else None,
        "settings": {k: v for k, v in model.items() if k != "from_file"},
        "settings_source": sources,
    }


def delegate_defaults(name: str) -> JSONMap:
    """The delegate's own preset (conf/delegate/<name>.yaml) on one thread, or just its name."""
    return {**_preset(CONF_DIR / "delegate" / f"{name}.yaml"), "name": name, "num_threads": 1}


def delegate_report(path: str, name: str) -> DelegateReport:
    """Prepare ``path`` with delegate ``name``: measured coverage, or why it could not."""
    from evalharness.runtime import load_model, plan_delegate

    try:
        plan = plan_delegate(delegate_defaults(name))
    except EvalHarnessError as exc:
        return {"status": "unavailable", "reason": str(exc).splitlines()[0]}
    try:
        model = load_model(path, plan)
    except EvalHarnessError as exc:
        return {"status": "error", "error": str(exc).splitlines()[0]}
    except Exception as exc:  # noqa: BLE001 - a runtime's own failure is the answer here, not a crash
        return {"status": "error", "error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"}
    return {"status": "prepared", "coverage": model.coverage.as_dict()}


@contextlib.contextmanager
def native_output_to_stderr() -> Iterator[None]:
    """The runtime's native INFO lines go to fd 1 on some paths: keep stdout for the report (JSON)."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:  # Python-level prints of the runtime's own wrappers too (sys.stdout need not be fd 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        ctypes.CDLL(None).fflush(None)  # C stdio buffers flushed while fd 1 is still stderr
        os.dup2(saved, 1)
        os.close(saved)


if TYPE_CHECKING:  # a runtime type: the runtime is imported when a model is inspected
    from evalharness.runtime.model_file import ModelFileSummary
    from evalharness.runtime.model_size import ModelSize

    class ModelFacts(ModelFileSummary):
        """What ``evalharness inspect`` says of a model: the file, its size figures, the configuration a
        run would infer from it and each delegate's answer (``--json`` prints it)."""

        path: str
        bytes: int
        size: ModelSize
        inferred: InferredConfiguration
        delegates: dict[str, DelegateReport]


def inspect_model(path: str, delegates: list[str] | None = None, loud: bool = False) -> ModelFacts:
    """The model's facts; ``loud``: what the runtimes print while delegates are prepared on stderr."""
    from evalharness.runtime.delegates import DELEGATES
    from evalharness.runtime.model_file import read_model_file
    from evalharness.runtime.model_size import cached_size

    info = read_model_file(path)
    names = delegates if delegates is not None else DELEGATES.names()
    return {
        "path": os.path.abspath(path),
        "bytes": os.path.getsize(path),
        **info.summary(),
        # a run's figures of the same file (zstd -19: seconds on a float model), by its sha256
        "size": cached_size(path, sha256_file(path), default_cache_dir()),
        "inferred": inferred_configuration(path, info),
        "delegates": _prepare_all(path, names, loud),
    }


def _prepare_all(path: str, names: list[str], loud: bool) -> dict[str, DelegateReport]:
    with runtime_output_kept(loud):
        return {name: delegate_report(path, name) for name in names}


@contextlib.contextmanager
def runtime_output_kept(loud: bool = False) -> Iterator[None]:
    """What the runtimes print while every delegate is prepared — native lines, and Python-level
    ones such as OpenVINO's compile progress bars — is kept off the terminal by core.native_output's
    quiet capture (as a run keeps it), and stdout stays the report's; ``-v`` (``loud``) shows it on stderr."""
    if loud or verbose():
        with native_output_to_stderr():
            yield
        return
    native: list[str] = []
    python = io.StringIO()
    with quiet_native_output(native), contextlib.redirect_stdout(python), contextlib.redirect_stderr(python):
        yield


def _tensor_line(t: Mapping[str, Any]) -> str:
    q = t["quantization"]
    quant = f" scale={q['scale']:.6g} zero_point={q['zero_point']}" if q["scale"] else ""
    return f"  {t['name']}: {t['shape']} {t['dtype']}{quant}"


def _delegate_line(name: str, r: DelegateReport) -> str:
    if r["status"] != "prepared":
        return f"  {name}: {r['status']}: {r.get('reason') or r.get('error')}"
    c = r["coverage"]
    took = "?" if c["ops_delegated"] is None else c["ops_delegated"]
    on_cpu = c.get("ops_on_cpu_by_type") or c.get("unsupported_ops") or {}
    parts = "?" if c["partitions"] is None else c["partitions"]
    on_cpu = on_cpu or "none"
    return f"  {name}: {took}/{c['ops_total']} ops delegated, {parts} partition(s); on CPU: {on_cpu}"


LARGEST = 5  # weight tensors the default view lists (all of them under -v and in --json)


def size_lines(size: Mapping[str, Any], every_tensor: bool = False) -> list[str]:
    """The guide's size figures: on disk, compressed, and what compresses (zeros, shared values);
    then the largest weight tensors (``every_tensor``: each one, in op order)."""
    w, of = size["weights"], size["bytes"]
    gz, zs = size["gzip_bytes"], size["zstd_bytes"]
    zstd = f"zstd {zs} ({zs / of:.3f}x)" if zs else f"zstd {size['zstd']}"
    lines = [
        f"size: {of} bytes on disk, gzip {gz} ({gz / of:.3f}x), {zstd}",
        f"weights: {w['tensors']} tensors, {w['elements']} values, sparsity {fmt(w['sparsity'], '.2%')} "
        f"(exact zeros), unique values per tensor max {w['unique_max']}, "
        f"median {fmt(w['unique_median'], '.0f')}",
    ]
    tensors = size["tensors"]
    if not every_tensor and len(tensors) > LARGEST:
        shown = sorted(tensors, key=lambda t: (-t["elements"], t["op_index"]))[:LARGEST]
        lines.append(f"  the {LARGEST} largest ({len(tensors) - LARGEST} more: -v or --json):")
    else:
        shown = tensors
    for t in shown:
        name = terminal(t["name"], keep="")
        name = name if len(name) <= 60 else "..." + name[-57:]
        lines.append(
            f"  op {t['op_index']:>3} {t['op']:<17} {str(t['shape']):<20} {t['elements']:>9} values  "
            f"sparsity {t['sparsity']:7.2%}  unique {t['unique']:>8}  {name}"
        )
    return lines


def render_text(doc: Mapping[str, Any], every_tensor: bool = False) -> list[str]:
    labels = doc["labels"]
    inferred = doc["inferred"]
    lines = [f"{doc['path']} ({doc['bytes']} bytes, {doc['converter'] or 'converter unknown'})", "inputs:"]
    lines += [_tensor_line(t) for t in doc["inputs"]] + ["outputs:"]
    lines += [_tensor_line(t) for t in doc["outputs"]]
    lines += [
        f"metadata buffers: {', '.join(doc['metadata_buffers']) or 'none'}",
        f"metadata: {doc['metadata'] or 'none'}",
        "labels: " + (f"{labels['count']} from {labels['source']}" if labels else "none in the file"),
        f"normalization: {doc['normalization'] or 'none in the file'}",
        f"attached files: {', '.join(doc['attached_files']) or 'none'}",
        f"ultralytics: {doc['ultralytics'] or 'none'}",
        "ops: " + ", ".join(f"{k} {v}" for k, v in doc["op_histogram"].items()),
        *size_lines(doc["size"], every_tensor),
        f"inferred: {inferred['kind']}, input layout {inferred['layout']}",
    ]
    for key, value in inferred["settings"].items():
        lines.append(f"  {key}: {value}  [{inferred['settings_source'].get(key, 'preset')}]")
    lines.append("delegates (prepared for real on this host):")
    lines += [_delegate_line(name, r) for name, r in doc["delegates"].items()]
    return lines


def main(argv: list[str] | None = None) -> int:
    return guarded(lambda: _main(argv))


def _main(argv: list[str] | None) -> int:
    parser = ArgumentParser(prog="evalharness inspect", description=__doc__.splitlines()[0])
    parser.add_argument(
        "model", help="a .tflite file, or a dataset: a folder, a YOLO data.yaml or a COCO instances JSON"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--delegate", action="append", help="only these delegates (repeatable)")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help=f"every weight tensor (the text view lists the {LARGEST} largest; --json has them all) "
        "and what the runtimes print while delegates are prepared, on stderr",
    )
    args = parser.parse_args(argv)
    if is_dataset_path(args.model):  # see what was found at a dataset path (inspect/dataset_view.py)
        view = describe_dataset(args.model)
        print(json.dumps(view.as_dict(), indent=2) if args.json else "\n".join(render_dataset(view)))
        return 0
    every = args.verbose or verbose()  # `evalharness inspect -v ...`: the entry takes -v for itself
    doc = inspect_model(args.model, args.delegate, every)
    print(json.dumps(doc, indent=2, sort_keys=True) if args.json else "\n".join(render_text(doc, every)))
    return 0
