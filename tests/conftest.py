"""Shared fixtures: real assets from ../shared/assets and an in-process way to run the app."""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import cli_fork
import hypothesis
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from shared_runs import Make, Runs, RunStore

from evalharness.core.paths import CONF_DIR, bundled, model_stem, quant_tag

# The suite starts many fresh interpreters (CLI runs, multirun jobs, parallel shards, spawned
# children) and each worker rewrites every test module's asserts: where PYTHONDONTWRITEBYTECODE is
# set (this machine's environment sets it) each compiled all it imported again (~0.2 s a CLI run).
# The test session writes bytecode (into the gitignored __pycache__ folders); its children inherit it.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO.parent / "shared" / "assets"
MODELS = ASSETS / "models"
EXPECTED = json.loads((ASSETS / "expected.json").read_text()) if ASSETS.is_dir() else {}
CLASSIFIERS = [
    "mobilenet_v1_0.25_128_quant",
    "mobilenet_v2_1.0_224_quant",
    "tf2_mobilenet_v2_1.0_224_ptq",
    "mobilenet_edgetpu_224_1.0_uint8",
]
VAL50 = [f"paths.models_dir={MODELS}", f"paths.data_dir={ASSETS}", "dataset=imagenet_val50"]


def lite0_on_val50(images: int) -> list[str]:
    """EfficientNet-Lite0 in any source format on val50's first ``images``: its own preprocessing and
    the bundled ILSVRC labels (an ONNX or .pt2 file carries no label file)."""
    return [
        f"paths.data_dir={ASSETS}",
        "dataset=imagenet_val50",
        f"task.num_images={images}",
        f"model.labels={bundled('imagenet_classes.txt')}",
        "model/preprocess=efficientnet",
    ]

# Hypothesis' per-example deadline (200 ms) is a timed test: on 2 cores shared by parallel workers an
# example's wall time says nothing of the code; the properties hold, the clock is not asserted.
hypothesis.settings.register_profile("evalharness", deadline=None)
hypothesis.settings.load_profile("evalharness")
OmegaConf.register_new_resolver("bundled", bundled, replace=True)
OmegaConf.register_new_resolver("model_stem", model_stem, replace=True)
OmegaConf.register_new_resolver("quant_tag", quant_tag, replace=True)
# Multiruns turn the tensor cache on: keep the tests' cache out of the user's home. Each xdist worker
# takes its own folder under the one the controller made (the workers inherit its environment), so
# that no two test processes fill one cache at once.
# Model-size figures (zstd -19: ~6 s of CPU per float Lite0) are keyed by the file's sha256, written
# atomically and verified on read, so every worker (and every fresh cache a test makes: share_model_sizes)
# reads one folder: a model is sized once per session. Variants and tensors stay per worker and per
# test cache (tests assert built, then hit).
# The process that made the folder removes it when it exits (after its workers): each session filled
# ~215 MB that was never removed, and repeated runs filled the disk.
if "EVALHARNESS_CACHE" not in os.environ:  # the controller's; its workers inherit it
    os.environ["EVALHARNESS_CACHE"] = tempfile.mkdtemp(prefix="evalharness-test-cache-")
    atexit.register(shutil.rmtree, os.environ["EVALHARNESS_CACHE"], ignore_errors=True)
MODEL_SIZES = os.path.join(os.environ["EVALHARNESS_CACHE"], "model_size")


def share_model_sizes(cache_dir: str | os.PathLike[str]) -> None:
    """``cache_dir``'s model-size entries are the session's (:data:`MODEL_SIZES`)."""
    os.makedirs(MODEL_SIZES, exist_ok=True)
    os.makedirs(cache_dir, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.symlink(MODEL_SIZES, os.path.join(cache_dir, "model_size"))


if os.environ.get("PYTEST_XDIST_WORKER"):
    worker_cache = os.path.join(os.environ["EVALHARNESS_CACHE"], os.environ["PYTEST_XDIST_WORKER"])
    share_model_sizes(worker_cache)
    os.environ["EVALHARNESS_CACHE"] = worker_cache


def pytest_collection_modifyitems(config, items):
    """End-to-end tests need the real models and images; unit tests run without them."""
    e2e = REPO / "tests" / "e2e"
    if not ASSETS.is_dir() and any(e2e in Path(str(item.path)).parents for item in items):
        pytest.exit(f"shared test assets not found at {ASSETS} (tests/unit runs without them)", returncode=3)


# A module-scoped fixture (a module's runs, a built dataset) holds state its module's tests share.
_MODULE_STATE = re.compile(r"""scope=["'](module|class|package)["']|runs_fixture\(""")


@functools.cache
def _keeps_module_state(path: str) -> bool:
    file = REPO / path
    return not file.is_file() or bool(_MODULE_STATE.search(file.read_text()))


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """``python -m pytest`` runs on one xdist worker per core (``-n auto``) unless ``-n`` (or
    ``--tx``, ``--dist``) is given or xdist is not loaded (``-p no:xdist``); not in a worker."""
    if (
        config.pluginmanager.hasplugin("xdist")
        and not os.environ.get("PYTEST_XDIST_WORKER")
        and config.option.numprocesses is None
        and not config.option.tx
        and config.option.dist == "no"
    ):
        config.option.numprocesses = "auto"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``-n`` (``-n auto`` by default: :func:`pytest_cmdline_main`) with ``--dist load``: a module that keeps
    module-scoped state goes to one worker as a whole, so that its fixtures are made once, not once
    on every worker that picks one of its tests (and its tests see the state in their order); every
    other test is handed out alone. Whole modules go first, largest first, then single tests in
    collection order (end-to-end, then unit), so that short tests fill the end.

    xdist's own ``--dist loadgroup`` does not group on pytest 9.2 (pytest-xdist issue 1386), hence
    this scheduler; another ``--dist`` given on the command line is xdist's own."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleStateScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return path if _keeps_module_state(path) else nodeid

    return ModuleStateScheduling(config, log)


def one_coco_image(directory: Path, image_id: int) -> tuple[Path, list[dict], list[dict]]:
    """val25's annotations cut to one image (crowd boxes dropped): (json path, annotations,
    categories sorted by id), for detectors whose outputs are that image's ground truth."""
    gt = json.loads((ASSETS / "coco/instances_val25.json").read_text())
    gt["images"] = [i for i in gt["images"] if i["id"] == image_id]
    gt["annotations"] = [a for a in gt["annotations"] if a["image_id"] == image_id and not a["iscrowd"]]
    path = directory / "instances.json"
    path.write_text(json.dumps(gt))
    return path, gt["annotations"], sorted(gt["categories"], key=lambda c: c["id"])


def compose_config(overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=["loop.progress=false", *overrides])


def run_inprocess(overrides: list[str], run_dir: Path) -> dict:
    """Compose + run like ``python -m evalharness`` does, without a subprocess."""
    from evalharness.__main__ import run

    return run(compose_config(overrides), str(run_dir))


def run_cli(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m evalharness ARGS`` in its own process (exit codes, stderr, Hydra run dirs), forked
    from a process that has imported it (tests/cli_fork.py)."""
    return cli_fork.run(
        [sys.executable, "-m", "evalharness", *args, "loop.progress=false"],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


def run_inprocess_into(overrides: list[str], run_dir: Path) -> None:
    """:func:`run_inprocess` for a :class:`RunStore`: the run must complete."""
    doc = run_inprocess(overrides, run_dir)
    assert doc["status"] == "complete", doc.get("error")


def run_inprocess_keeping_invalid(overrides: list[str], run_dir: Path) -> None:
    """:func:`run_inprocess` for a :class:`RunStore`, where a run stopped as invalid (NaN outputs:
    what explain is for) is kept as it stopped."""
    from evalharness.core.errors import RunStopped

    try:
        run_inprocess(overrides, run_dir)
    except RunStopped:
        assert json.loads((run_dir / "metrics.json").read_text())["status"] == "invalid"


@pytest.fixture(scope="session")
def run_store(tmp_path_factory) -> RunStore:
    """Folders and runs made once per test session, shared by every xdist worker (tests/shared_runs.py)."""
    return RunStore(tmp_path_factory)


def make_runs(
    run_store: RunStore,
    common: list[str],
    variants: dict[str, list[str]] | None = None,
    *,
    keep_invalid: bool = False,
    make: Make | None = None,
    key: str = "",
) -> Runs:
    """Run directories of ``common`` + each variant's overrides: ``runs[name]`` for the variants
    given here (made now, before any test captures output), ``runs(name, *overrides)`` for one
    declared where a test first needs it (made then). Each run is made once per session and shared
    with every module asking for the same overrides (tests/shared_runs.py). ``make(overrides,
    run_dir)`` makes one (default: in-process, and it must complete; ``keep_invalid``: a run stopped
    as invalid is kept as it stopped); ``key`` names what else a run depends on (a data file that is
    no override)."""
    make = make or (run_inprocess_keeping_invalid if keep_invalid else run_inprocess_into)
    runs = Runs(run_store, ["loop.progress=false", *common], variants, make, key)
    for name in runs:
        runs[name]
    return runs


def runs_fixture(
    common: list[str], variants: dict[str, list[str]] | None = None, *, keep_invalid: bool = False
):
    """A module's ``runs`` fixture: ``name = runs_fixture(common, variants)`` at module level
    defines a module-scoped fixture ``name`` returning :func:`make_runs`'s runs."""

    @pytest.fixture(scope="module")
    def runs(run_store: RunStore) -> Runs:
        return make_runs(run_store, common, variants, keep_invalid=keep_invalid)

    return runs


@pytest.fixture(scope="session")
def val50_runs(run_store) -> dict:
    """(model, delegate) -> metrics.json document + predictions, computed once per session."""

    def get(model: str, delegate: str = "cpu") -> tuple[dict, list[dict]]:
        overrides = ["loop.progress=false", *VAL50, f"model={model}", f"delegate={delegate}"]
        run_dir = run_store.run(overrides, run_inprocess_into)  # the same run as runs_fixture's
        doc = json.loads((run_dir / "metrics.json").read_text())
        preds = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
        return doc, preds

    return get


def task_lines(run_dir: Path) -> list[str]:
    """A run's results.txt without the summary block that heads it (run/summary.py): the task's
    own lines, as TFLite's tools print them."""
    lines = (Path(run_dir) / "results.txt").read_text().splitlines()
    if lines and lines[0].startswith("== summary"):
        lines = lines[lines.index("") + 1 :]
    return lines


@pytest.fixture(scope="session")
def sample_run(run_store) -> Path:
    """One complete run of the bundled sample, made once per session: the run directory that tests
    copy or read (never change: the threat-model suites check its files stay byte-identical)."""

    def make(folder: Path) -> None:
        out = folder / "run"
        command = [sys.executable, "-m", "evalharness", "loop.progress=false", f"hydra.run.dir={out}"]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]

    return run_store.once("sample_run", make) / "run"
