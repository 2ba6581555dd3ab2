"""``explain --replay DIR``: a repro bundle run again, and a bundle is data, never code.

A bundle comes from someone else (attached to a bug report), so everything in it is checked before
anything it names is loaded: ``bundle.json`` and ``tensors.npz`` are read by the untrusted-file
reader (limits, shape, every array present), each side's sub-model must have its recorded sha256,
the LiteRT runtime installed here must have the native libraries the bundle recorded, and a delegate
library is loaded only if it is the file the bundle recorded with the same sha256 — a mismatch is
one error naming the file and both hashes, before any dlopen. No command and no runner comes from a
bundle: a side recorded on another runner (``runner=adb``) is refused, the host runner's settings
and a delegate's compile cache folder are ignored and said; the ``replay`` line in ``bundle.json``
is for people to read and is never run.
"""

from __future__ import annotations

import io
import os
import zipfile
from typing import Any

import numpy as np

from evalharness.core.checksum import sha256_file
from evalharness.core.errors import EvalHarnessError
from evalharness.core.fileguard import refuse_special_file
from evalharness.core.untrusted import check_shape, read_bytes, read_json
from evalharness.explain.bundle import BUNDLE, environment

TENSORS = "tensors.npz"
SIDES = ("A", "B")
_TOP = {"sides": dict, "images": list, "ops": dict, "environment": dict}
_SIDE = {
    "model": str,
    "model_sha256": str,
    "delegate": dict,
    "runner": dict,
    "runtime": str,
    "libraries": list,
}
_NATIVE = {"file": str, "sha256": str}
_LIBRARY = {"setting": str, "path": str, "sha256": str}
_OPS = {"model": int, "bundle": int, "first": int}
VERIFIED_RUNTIME = "litert"  # the runtime whose native libraries a bundle records by sha256


class BundleError(EvalHarnessError):
    """A bundle that is damaged or names something its hashes do not vouch for (exit 2)."""


def read_bundle(folder: str) -> dict[str, Any]:
    """``bundle.json`` of ``folder``, of the shape :func:`evalharness.explain.bundle.write_bundle`
    writes; anything else is one BundleError naming the file and the key."""
    path = os.path.join(folder, BUNDLE)
    if not os.path.lexists(path):
        raise BundleError(f"--replay {folder}: no {BUNDLE} there (made by explain --bundle DIR)")
    fix = "make the bundle again with explain --bundle DIR"
    doc = read_json(path, "bundle file", required=_TOP, error=BundleError, fix=fix)
    check_shape(doc["ops"], f"bundle file {path}: ops", dict, _OPS, BundleError, fix)
    if sorted(doc["sides"]) != list(SIDES) or not doc["images"]:
        raise BundleError(f"bundle file {path}: needs sides A and B and at least one image; {fix}")
    for label, side in doc["sides"].items():
        where = f"bundle file {path}: sides.{label}"
        check_shape(side, where, dict, _SIDE, BundleError, fix)
        for entry in side["libraries"]:
            check_shape(entry, f"{where}.libraries", dict, _LIBRARY, BundleError, fix)
        if os.path.basename(side["model"]) != side["model"] or side["model"] in ("", ".", ".."):
            raise BundleError(f"{where}.model is {side['model']!r}, not a file name inside the bundle; {fix}")
    where = f"bundle file {path}: environment"
    check_shape(doc["environment"], where, dict, {"litert_native_libraries": list}, BundleError, fix)
    for entry in doc["environment"]["litert_native_libraries"]:
        check_shape(entry, f"{where}.litert_native_libraries", dict, _NATIVE, BundleError, fix)
    checked: dict[str, Any] = doc
    return checked


def read_tensors(folder: str) -> dict[str, np.ndarray]:
    """Every array of ``tensors.npz`` (no pickles), read whole within the file limit; a cut or
    damaged archive is one BundleError."""
    path = os.path.join(folder, TENSORS)
    data = read_bytes(path, "bundle tensors", BundleError)
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        raise BundleError(f"bundle tensors {path} is damaged ({' '.join(str(exc).split())[:160]})") from None


def tensor(tensors: dict[str, Any], name: str, folder: str, info: Any = None) -> np.ndarray:
    """The array ``name`` of the bundle; with ``info`` (the model input it feeds), of its shape and type."""
    where = f"bundle tensors {os.path.join(folder, TENSORS)}"
    if name not in tensors:
        raise BundleError(f"{where} has no array {name}; make the bundle again")
    value = tensors[name]
    if info is not None and (tuple(value.shape) != tuple(info.shape) or value.dtype.name != info.dtype):
        raise BundleError(
            f"{where}: {name} is {value.dtype.name} {list(value.shape)}, the sub-model's input "
            f"{info.dtype} {list(info.shape)}; make the bundle again"
        )
    array: np.ndarray = value
    return array


def _vouched(folder: str, what: str, path: str, recorded: dict[str, Any] | None) -> None:
    """``path`` is the file ``recorded`` names, with its sha256, or the replay stops here."""
    refuse_special_file(path, what)
    now = sha256_file(path) if os.path.isfile(path) else "none (no such file)"
    if recorded is None:
        raise BundleError(
            f"--replay {folder}: {what} names {path} (sha256 {now}), a file the bundle records no sha256 "
            "for; a replay loads nothing the bundle's hashes do not vouch for"
        )
    same_file = os.path.realpath(path) == os.path.realpath(recorded["path"])
    if not same_file or now != recorded["sha256"]:
        raise BundleError(
            f"--replay {folder}: {what} names {path} (sha256 {now}), not the file the bundle recorded "
            f"({recorded['path']}, sha256 {recorded['sha256']}); a replay loads only what the bundle's "
            "hashes vouch for"
        )


def _check_runtime(folder: str, doc: dict[str, Any]) -> None:
    """The LiteRT native libraries here are those the bundle recorded, file by file."""
    recorded = {e["file"]: e["sha256"] for e in doc["environment"]["litert_native_libraries"]}
    here = {e["file"]: e["sha256"] for e in environment()["litert_native_libraries"]}
    for name in sorted(set(recorded) | set(here)):
        if recorded.get(name) != here.get(name):
            version = doc["environment"].get("packages", {}).get("ai-edge-litert")
            raise BundleError(
                f"--replay {folder}: the runtime's library {name} has sha256 {here.get(name)} here, the "
                f"bundle recorded {recorded.get(name)}; a replay loads only the runtime it was made with "
                f"(ai-edge-litert {version})"
            )


def verified_plan(folder: str, label: str, side: dict[str, Any]) -> Any:
    """The delegate plan of ``side`` on this host, once the sub-model, the runner and every library
    the plan would load are vouched for by the bundle's hashes (nothing is loaded here)."""
    from evalharness.runtime import plan_delegate

    _vouched(
        folder,
        f"side {label}'s model",
        os.path.join(folder, side["model"]),
        {"path": os.path.join(folder, side["model"]), "sha256": side["model_sha256"]},
    )
    runner = side["runner"].get("name", "host")
    if runner != "host":
        raise BundleError(
            f"--replay {folder}: side {label} was recorded on runner={runner}; a bundle is data, never a "
            "command or a runner: a replay runs on this host only; run explain --bundle again where that "
            "side ran"
        )
    if side["runtime"] != VERIFIED_RUNTIME:
        raise BundleError(
            f"--replay {folder}: side {label} ran on runtime={side['runtime']}, whose libraries a bundle "
            f"records no sha256 of; a replay loads only a runtime it can verify ({VERIFIED_RUNTIME})"
        )
    ignored = sorted(set(side["runner"]) - {"name"})
    delegate = dict(side["delegate"])
    if delegate.get("compile_cache_dir"):
        ignored.append("delegate.compile_cache_dir")
        delegate["compile_cache_dir"] = ""
    if ignored:
        print(
            f"replay: side {label}: ignored the bundle's {', '.join(ignored)} (a bundle names no command, "
            "runner or cache)"
        )
    records = {e["setting"]: e for e in side["libraries"]}
    for key, value in sorted(delegate.items()):
        if key != "name" and (
            key in records or (isinstance(value, str) and value and os.path.lexists(value))
        ):
            _vouched(folder, f"side {label}'s delegate.{key}", str(value), records.get(key))
    plan = plan_delegate(delegate, "host")
    if plan.external_path:
        found = next(
            (
                e
                for e in side["libraries"]
                if os.path.realpath(e["path"]) == os.path.realpath(plan.external_path)
            ),
            None,
        )
        _vouched(folder, f"side {label}'s delegate library", plan.external_path, found)
    return plan


def replay(folder: str) -> int:
    """Run the bundle's two sub-models again; 0 when every output equals the recorded bit for bit."""
    from evalharness.runtime import load_model
    from evalharness.runtime.runners import HostSettings

    doc = read_bundle(folder)
    _check_runtime(folder, doc)
    plans = {label: verified_plan(folder, label, side) for label, side in doc["sides"].items()}
    tensors = read_tensors(folder)
    mismatched, differ = [], 0
    outputs = {}
    for label, side in doc["sides"].items():
        path = os.path.join(folder, side["model"])
        model = load_model(path, plans[label], side["runtime"], HostSettings())
        for k in range(len(doc["images"])):
            feeds = [tensor(tensors, f"{label}_img{k}_in{p}", folder, t) for p, t in enumerate(model.inputs)]
            model.set_inputs(feeds)
            model.invoke()
            got = model.get_outputs()
            outputs[label, k] = got
            for p, value in enumerate(got):
                want = tensor(tensors, f"{label}_img{k}_out{p}", folder)
                nan = value.dtype.kind == "f"
                if value.shape != want.shape or not np.array_equal(value, want, equal_nan=nan):
                    mismatched.append(f"{label} image {doc['images'][k]} output {p}")
    for k in range(len(doc["images"])):
        a, b = outputs["A", k], outputs["B", k]
        same = len(a) == len(b) and all(
            x.shape == y.shape and np.array_equal(x, y) for x, y in zip(a, b, strict=True)
        )
        differ += not same
    ops = doc["ops"]
    if mismatched:
        first = mismatched[0]
        print(f"replay: NOT reproduced: {len(mismatched)} output(s) differ from the bundle's ({first}, ...)")
        return 1
    print(
        f"replay: reproduced exactly: {len(doc['images'])} image(s), both sides' outputs equal the "
        f"bundle's bit for bit; B's differ from A's on {differ}; sub-model of {ops['bundle']} op(s) (ops "
        f"{ops['first']}-{ops['model'] - 1} of {ops['model']})"
    )
    return 0
