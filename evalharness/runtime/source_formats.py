"""Source models: the file a ``.tflite`` was converted from, run as a model like any other.

The deployment chain starts before LiteRT: a trained model exported as ONNX (``x.onnx``, run by ONNX
Runtime) or as a PyTorch exported program (``x.pt2`` from ``torch.export.save``, run by torch). A
file of such a format is a *source model*: ``model.path`` picks its backend by the file's name (the
backend then checks the bytes), so a run of it goes through the same preprocessing, tasks, records,
reports and caches as a ``.tflite`` run and ``report diff`` pairs the two image by image.

What only a ``.tflite`` has is refused in one line, before the run directory is claimed: a delegate
other than the CPU's own (a source runs on the CPU through its own runtime), a quantized variant,
an op profile, a compile cache, a phone. This module imports no vendor package: the checks run
without the backend installed, and a missing backend is one error naming the extra.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from dataclasses import dataclass
from typing import Any

from evalharness.core.errors import ConfigError, EvalHarnessError
from evalharness.runtime.delegates import DelegatePlan, kind_of


@dataclass(frozen=True)
class SourceFormat:
    """A model format that is not LiteRT's: the BACKENDS name that runs it and the extra it needs."""

    name: str  # "ONNX"
    noun: str  # "an ONNX model", as messages say it
    suffixes: tuple[str, ...]
    backend: str  # runtime/contract.py BACKENDS name
    runtime: str  # what runs it, as said to the user ("ONNX Runtime")
    package: str  # the import name of that runtime
    extra: str  # pip install 'evalharness[<extra>]'
    reader: str  # "module:function": path -> runtime.model_file.ModelFile, the file checked on the way

    def read(self, path: str) -> Any:
        """What the file says about itself (labels, inputs) as a ``runtime.model_file.ModelFile``,
        checked and parsed, runtime required (Any: that module's guard imports this one)."""
        self.require(path)
        module, _, function = self.reader.partition(":")
        return getattr(importlib.import_module(module), function)(path)

    def require(self, path: str) -> None:
        """The runtime installed, else one error naming the extra (before anything is loaded)."""
        if importlib.util.find_spec(self.package) is None:
            raise EvalHarnessError(
                f"model.path={path} is {self.noun}, run by {self.runtime}, which is not installed: "
                f"pip install 'evalharness[{self.extra}]'"
            )


FORMATS = (  # fmt: skip
    SourceFormat(
        "ONNX",
        "an ONNX model",
        (".onnx",),
        "onnxruntime",
        "ONNX Runtime",
        "onnxruntime",
        "onnx",
        "evalharness.runtime.onnx_backend:read_onnx_file",
    ),
    SourceFormat(
        "PyTorch",
        "a PyTorch exported program",
        (".pt2",),
        "torch_export",
        "PyTorch",
        "torch",
        "torch",
        "evalharness.runtime.torch_backend:read_pt2_file",
    ),
)
TFLITE_ONLY = "a .tflite feature"


def source_format(path: str) -> SourceFormat | None:
    """The source format of ``path`` by its name, or None for a ``.tflite`` (LiteRT)."""
    suffix = os.path.splitext(str(path))[1].lower()
    return next((f for f in FORMATS if suffix in f.suffixes), None)


def refuse_for_source(
    path: str,
    plan: DelegatePlan,
    *,
    runner: str = "host",
    runtime: str = "litert",
    quant: str = "none",
    op_profile: bool = False,
    reference: DelegatePlan | None = None,
) -> SourceFormat | None:
    """The settings a source model cannot honour, refused by key (exit 2); returns its format."""
    fmt = source_format(path)
    if fmt is None:
        return None
    where = f"model.path={path} is {fmt.noun}"
    if not kind_of(plan).runs_source_models:
        raise ConfigError(
            f"delegate={plan.name}: {where}, and {fmt.name} runs on the CPU through {fmt.runtime}; "
            "use delegate=cpu (or convert it to .tflite to run it on a delegate)"
        )
    if reference is not None:  # inference_diff's reference pass: LiteRT's reference kernels
        raise ConfigError(
            f"task.reference_delegate={reference.name}: {where}; a reference pass runs LiteRT's reference "
            f"kernels, {TFLITE_ONLY}: compare the {fmt.name} run with a .tflite run by report diff instead"
        )
    refused = [
        (plan.compile_cache_dir is not None, "delegate.compile_cache_dir", "leave it empty"),
        (runner != "host", f"runner={runner}", f"{fmt.runtime} runs on this host: use runner=host"),
        (runtime != "litert", f"runtime={runtime}",
            f"{fmt.runtime} runs it whatever runtime= says: leave runtime at litert"),
        (quant != "none", f"quant={quant}",
            "quantized variants are made of a .tflite: convert it first, or quant=none"),
        (op_profile, "loop.op_profile", f"the per-op profile is {TFLITE_ONLY}: loop.op_profile=false"),
    ]  # fmt: skip
    for bad, key, fix in refused:
        if bad:
            raise ConfigError(f"{key}: {where}; {fix}")
    fmt.require(path)
    return fmt


def refuse_tflite_only(path: str, key: str, what: str) -> None:
    """A command that reads the ``.tflite`` flatbuffer itself (inspect's coverage, explain's traces,
    sub-models), given a source model: one line saying so instead of a parse error."""
    fmt = source_format(path)
    if fmt is not None:
        raise ConfigError(f"{key}={path} is {fmt.noun}: {what} is {TFLITE_ONLY} (give the converted .tflite)")
