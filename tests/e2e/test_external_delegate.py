"""delegate=external with a real delegate library, compiled by the tests from C.

``tests/external_delegate/test_delegate.c`` exports ``tflite_plugin_create_delegate`` /
``tflite_plugin_destroy_delegate`` and implements the classic TfLiteDelegate API: it logs the
options it received, and can claim float ADD / MUL nodes and compute them itself. So these tests
check, end to end through LiteRT, that the options reach the library, that the coverage in
metrics.json is what the delegate really took, that its outputs are the reference outputs, and
that a library which fails is a one-line error.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from conftest import run_cli, run_inprocess
from external_delegate.build import NoCompilerError, build_delegate

from evalharness.core.errors import ConfigError, DelegateUnavailableError, EvalHarnessError
from evalharness.core.paths import bundled
from evalharness.runtime import load_model, plan_delegate
from evalharness.runtime.modelgen import constant_output_model

# Documented TfLiteType values (tflite/core/c/c_api_types.h) of the dtypes the test models use.
TFLITE_TYPES = {"float32": 1, "int32": 2, "uint8": 3, "int8": 9}
OP_CODES = {name: code for name, code in vars(schema.BuiltinOperator).items() if not name.startswith("_")}


# ---------------------------------------------------------------------------------------------
# fixtures: the library, test models, and a probe of the struct layouts in a child process


@pytest.fixture(scope="session")
def delegate_lib(tmp_path_factory) -> Path:
    try:
        return build_delegate(tmp_path_factory.mktemp("external_delegate"))
    except NoCompilerError as exc:
        pytest.skip(f"cannot build the test delegate: {exc}")


@pytest.fixture(scope="session")
def classifier(tmp_path_factory) -> str:
    """A float model the imagenet task accepts: input (1, 64, 64, 3), one [1, 1001] score vector
    with distinct values (so top-k has no ties); graph REDUCE_MAX -> MUL -> ADD."""
    scores = np.random.default_rng(7).permutation(1001).astype(np.float32).reshape(1, 1001) / 8
    path = tmp_path_factory.mktemp("models") / "float_classifier.tflite"
    return constant_output_model(str(path), [scores], input_shape=(1, 64, 64, 3), input_dtype="float32")


TWO_OUTPUTS = [np.arange(6, dtype=np.float32).reshape(1, 6) - 2.5, np.full((2, 3), 7.0, np.float32)]


@pytest.fixture(scope="session")
def two_output_model(tmp_path_factory) -> str:
    """REDUCE_MAX -> MUL -> 2 x ADD (both ADDs read the MUL result): 4 nodes, 2 of them ADD."""
    path = tmp_path_factory.mktemp("models") / "two_outputs.tflite"
    return constant_output_model(str(path), TWO_OUTPUTS, input_shape=(1, 8, 8, 3), input_dtype="float32")


_PROBE = r"""
import json, sys
import numpy as np
from ai_edge_litert import interpreter as lite

lib, model, graph_file = sys.argv[1:4]
resolver = lite.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES

def interpreter(options):
    d = lite.load_delegate(lib, options)
    it = lite.Interpreter(
        model_path=model, experimental_delegates=[d], experimental_op_resolver_type=resolver
    )
    it.allocate_tensors()
    return it, d

it, d = interpreter({"claim": "none", "graph_file": graph_file})
tensors = [
    {"index": int(t["index"]), "name": t["name"], "shape": [int(s) for s in t["shape"]],
     "dtype": np.dtype(t["dtype"]).name}
    for t in it.get_tensor_details()
]
ops = [
    {"index": int(o["index"]), "op_name": o["op_name"], "inputs": [int(i) for i in o["inputs"]],
     "outputs": [int(i) for i in o["outputs"]]}
    for o in it._get_ops_details()
]
del it, d
it, d = interpreter({"claim": "all_supported"})
it.set_tensor(it.get_input_details()[0]["index"], np.ones(it.get_input_details()[0]["shape"], np.float32))
it.invoke()
outputs = [it.get_tensor(o["index"]).tolist() for o in it.get_output_details()]
print(json.dumps({"tensors": tensors, "ops": ops, "outputs": outputs}))
"""


@pytest.fixture(scope="session")
def delegate_abi(delegate_lib, two_output_model, tmp_path_factory) -> dict:
    """The struct layouts declared in test_delegate.c agree with this runtime.

    The library reads the graph through TfLiteContext / TfLiteNode / TfLiteRegistration /
    TfLiteTensor and writes what it saw (graph_file); that must equal the interpreter's own view
    (tensor names, shapes, types, byte sizes at every index: the TfLiteTensor stride; node op codes,
    inputs, outputs). Then it claims nodes and runs them. All in a child process, so a layout that
    no longer matches a future runtime fails here with a message instead of crashing pytest.
    """
    graph_file = tmp_path_factory.mktemp("abi") / "graph.txt"
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, str(delegate_lib), two_output_model, str(graph_file)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0:
        pytest.fail(
            f"the test delegate failed against this LiteRT (exit {proc.returncode}): the TfLite C structs "
            f"declared in tests/external_delegate/test_delegate.c may no longer match.\n{proc.stderr[-3000:]}"
        )
    seen = json.loads(proc.stdout.splitlines()[-1])
    lines = graph_file.read_text().splitlines()
    c_tensors, c_nodes = {}, {}
    for line in lines[1:]:
        kind, index, *fields = line.split(" ")
        values = dict(f.split("=", 1) for f in fields)
        (c_tensors if kind == "tensor" else c_nodes)[int(index)] = values
    assert int(lines[0].split()[1]) == len(c_tensors) > max(t["index"] for t in seen["tensors"])
    for t in seen["tensors"]:
        c = c_tensors[t["index"]]
        assert c["name"] == t["name"], (t, c)
        assert c["dims"] == ",".join(map(str, t["shape"])), (t, c)
        assert int(c["type"]) == TFLITE_TYPES[t["dtype"]], (t, c)
        assert int(c["bytes"]) == int(np.prod(t["shape"])) * np.dtype(t["dtype"]).itemsize, (t, c)
    assert len(c_nodes) == len(seen["ops"]) == 4
    for op in seen["ops"]:
        c = c_nodes[op["index"]]
        assert int(c["code"]) == OP_CODES[op["op_name"]] and c["version"] == "1", (op, c)
        assert c["inputs"] == ",".join(map(str, op["inputs"])), (op, c)
        assert c["outputs"] == ",".join(map(str, op["outputs"])), (op, c)
    # MUL and both ADDs ran in the delegate's kernel (bias 0): the outputs are still exact.
    assert seen["outputs"] == [v.tolist() for v in TWO_OUTPUTS]
    return seen


# ---------------------------------------------------------------------------------------------
# helpers


def _external(lib: Path, options: str, model: str, *extra: str) -> list[str]:
    return [
        f"model.path={model}",
        f"model.labels={bundled('imagenet_labels_1001.txt')}",  # a bare modelgen file carries no labels
        "loop.allow_constant_outputs=true",  # the test model's scores are constants: input-independent
        "delegate=external",
        f"delegate.external_delegate_path={lib}",
        # Hydra needs the quotes: ';' is not allowed in an unquoted override value.
        f"delegate.external_delegate_options='{options}'",
        *extra,
    ]


def _predictions(run_dir: Path) -> list[dict]:
    """Prediction records without their per-image latency (which differs run to run)."""
    records = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k != "latency_ms"} for r in records]


@pytest.fixture(scope="session")
def reference_run(classifier, tmp_path_factory) -> tuple[dict, list[dict]]:
    run_dir = tmp_path_factory.mktemp("reference")
    doc = run_inprocess(
        [f"model.path={classifier}", "delegate=reference", "loop.allow_constant_outputs=true"], run_dir
    )
    return doc, _predictions(run_dir)


def _plan(lib: Path, options: str, **flags) -> object:
    return plan_delegate(
        {
            "name": "external",
            "external_delegate_path": str(lib),
            "external_delegate_options": options,
            **flags,
        }
    )


def _outputs(model) -> list[np.ndarray]:
    info = model.inputs[0]
    x = np.random.default_rng(0).uniform(-1, 1, info.shape).astype(info.dtype)
    model.set_inputs([x])
    model.invoke()
    return model.get_outputs()


# ---------------------------------------------------------------------------------------------
# the app with the library: options, provenance, coverage, outputs


def test_options_reach_the_delegate_and_it_claims_nothing(delegate_lib, classifier, reference_run, tmp_path):
    log = tmp_path / "options.log"
    doc = run_inprocess(
        _external(delegate_lib, f"log_file:{log};claim:none;foo:bar", classifier), tmp_path / "run"
    )
    assert log.read_text().splitlines() == [f"log_file={log}", "claim=none", "foo=bar"]
    cov = doc["provenance"]["delegate"]["coverage"]
    assert (cov["ops_total"], cov["ops_delegated"], cov["partitions"], cov["fraction"]) == (3, 0, 0, 0.0)
    assert cov["ops_on_cpu_by_type"] == {"ADD": 1, "MUL": 1, "REDUCE_MAX": 1}
    assert doc["status"] == "complete" and doc["metrics"]["num_scored"] == 5
    assert _predictions(tmp_path / "run") == reference_run[1]


def test_provenance_records_the_library(delegate_lib, classifier, tmp_path):
    options = f"claim:none;log_file:{tmp_path / 'x.log'};mode:anything"
    doc = run_inprocess(_external(delegate_lib, options, classifier), tmp_path / "run")
    delegate = doc["provenance"]["delegate"]
    assert delegate["name"] == "external"
    assert delegate["op_resolver"] == "builtin_without_default_delegates"
    assert delegate["library"] == {
        "path": str(delegate_lib),
        "sha256": hashlib.sha256(delegate_lib.read_bytes()).hexdigest(),
        "options": {"claim": "none", "log_file": str(tmp_path / "x.log"), "mode": "anything"},
    }
    assert delegate["flags"]["external_delegate_options"] == options


def test_claimed_add_is_the_coverage_and_outputs_match_reference(
    delegate_abi, delegate_lib, classifier, reference_run, tmp_path
):
    doc = run_inprocess(_external(delegate_lib, "claim:add", classifier), tmp_path / "run")
    cov = doc["provenance"]["delegate"]["coverage"]
    assert (cov["ops_total"], cov["ops_delegated"], cov["partitions"]) == (3, 1, 1)
    assert cov["fraction"] == round(1 / 3, 6)
    assert cov["ops_on_cpu_by_type"] == {"MUL": 1, "REDUCE_MAX": 1}
    preds, ref = _predictions(tmp_path / "run"), reference_run[1]
    assert [(p["id"], p["topk"], p["scores"]) for p in preds] == [
        (p["id"], p["topk"], p["scores"]) for p in ref
    ]
    assert doc["metrics"] == reference_run[0]["metrics"]


def test_scores_come_from_the_delegates_kernel(
    delegate_abi, delegate_lib, classifier, reference_run, tmp_path
):
    # bias:0.25 makes the delegate's ADD return c + 0 + 0.25: the scores move, the ranking does not.
    run_inprocess(_external(delegate_lib, "claim:add;bias:0.25", classifier), tmp_path / "run")
    preds, ref = _predictions(tmp_path / "run"), reference_run[1]
    assert [p["topk"] for p in preds] == [p["topk"] for p in ref]
    for p, r in zip(preds, ref, strict=True):
        assert p["scores"] == [float(np.float32(s) + np.float32(0.25)) for s in r["scores"]]


def test_cli_with_quoted_options(delegate_lib, classifier, tmp_path):
    """The real ``python -m evalharness``: the shell passes the option string in single quotes."""
    log = tmp_path / "cli.log"
    proc = run_cli(
        [*_external(delegate_lib, f"claim:all_supported;log_file:{log}", classifier), "hydra.run.dir=run"],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "run" / "metrics.json").read_text())
    cov = doc["provenance"]["delegate"]["coverage"]
    assert (cov["ops_delegated"], cov["partitions"], cov["ops_on_cpu_by_type"]) == (2, 1, {"REDUCE_MAX": 1})
    assert log.read_text().splitlines() == ["claim=all_supported", f"log_file={log}"]


# ---------------------------------------------------------------------------------------------
# the runtime layer: every claim mode, coverage against what was claimed, exact outputs


def test_struct_layouts_match_the_runtime(delegate_abi):
    assert {op["op_name"] for op in delegate_abi["ops"]} == {"REDUCE_MAX", "MUL", "ADD"}


@pytest.mark.parametrize(
    ("claim", "delegated", "on_cpu", "offset"),
    [
        ("none", 0, {"ADD": 2, "MUL": 1, "REDUCE_MAX": 1}, 0.0),
        ("add", 2, {"MUL": 1, "REDUCE_MAX": 1}, 0.5),  # c + 0 + bias
        ("mul", 1, {"ADD": 2, "REDUCE_MAX": 1}, 0.5),  # c + (max * 0 + bias)
        ("all_supported", 3, {"REDUCE_MAX": 1}, 1.0),  # c + (max * 0 + bias) + bias
    ],
)
def test_coverage_is_what_the_delegate_claimed(
    delegate_abi, delegate_lib, two_output_model, claim, delegated, on_cpu, offset
):
    reference = _outputs(load_model(two_output_model, plan_delegate({"name": "reference"})))
    exact = load_model(two_output_model, _plan(delegate_lib, f"claim:{claim}"))
    cov = exact.coverage
    assert (cov["ops_total"], cov["ops_delegated"], cov["partitions"]) == (4, delegated, int(delegated > 0))
    assert cov["ops_on_cpu_by_type"] == on_cpu
    for got, want in zip(_outputs(exact), reference, strict=True):
        np.testing.assert_array_equal(got, want)
    biased = _outputs(load_model(two_output_model, _plan(delegate_lib, f"claim:{claim};bias:0.5")))
    for got, want in zip(biased, reference, strict=True):
        np.testing.assert_array_equal(got, want + np.float32(offset))


def test_require_full_delegation_with_a_partial_delegate(delegate_abi, delegate_lib, two_output_model):
    plan = _plan(delegate_lib, "claim:all_supported", require_full_delegation=True)
    with pytest.raises(DelegateUnavailableError, match=r"3/4 ops delegated .*'REDUCE_MAX': 1"):
        load_model(two_output_model, plan)


# ---------------------------------------------------------------------------------------------
# failures: one line, naming what failed


def _one_line(exc: pytest.ExceptionInfo) -> str:
    message = str(exc.value)
    assert "\n" not in message, message
    return message


def test_missing_library(classifier, tmp_path):
    missing = tmp_path / "libnothere.so"
    with pytest.raises(DelegateUnavailableError) as exc:
        run_inprocess(_external(missing, "claim:none", classifier), tmp_path / "run")
    assert _one_line(exc) == f"external delegate library not found: {missing}"


def test_bad_option_string(delegate_lib, classifier, tmp_path):
    with pytest.raises(ConfigError, match="'oops' is not 'key:value'") as exc:
        run_inprocess(_external(delegate_lib, "a:1;oops", classifier), tmp_path / "run")
    _one_line(exc)


def test_create_failure_is_one_line_naming_the_library(delegate_lib, classifier, tmp_path):
    log = tmp_path / "options.log"
    with pytest.raises(DelegateUnavailableError) as exc:
        run_inprocess(_external(delegate_lib, f"log_file:{log};fail_create:1", classifier), tmp_path / "run")
    assert str(delegate_lib) in _one_line(exc)
    assert log.read_text().splitlines() == [f"log_file={log}", "fail_create=1"]  # the options did arrive


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ("fail_create:1", "refused to create a delegate (fail_create:1)"),
        ("claim:everything", "claim:everything is not one of none|add|mul|all_supported"),
    ],
)
def test_create_failure_reports_the_delegates_reason(delegate_lib, two_output_model, options, reason):
    with pytest.raises(DelegateUnavailableError) as exc:
        load_model(two_output_model, _plan(delegate_lib, options))
    assert reason in _one_line(exc)


def test_prepare_failure_is_one_line(delegate_lib, two_output_model):
    with pytest.raises(EvalHarnessError) as exc:
        load_model(two_output_model, _plan(delegate_lib, "fail_prepare:1"))
    assert "Prepare failed (fail_prepare:1)" in _one_line(exc)


def test_cli_create_failure_exits_2_with_one_error_line(delegate_lib, classifier, tmp_path):
    proc = run_cli([*_external(delegate_lib, "fail_create:1", classifier), "hydra.run.dir=run"], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [errors[-1]] and str(delegate_lib) in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["status"] == "failed"
