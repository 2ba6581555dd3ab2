"""A run's metrics.json is read by attribute: ``run.provenance.model.name``, never a string path
(``run.prov("model.name")``, ``dig(doc, "a.b")``) nor a key of the JSON it was parsed from
(``run.doc.get("latency_ms") or {}``, ``block.raw["x"]``). A string read cannot be checked by mypy and
turns a renamed field into a silent None; so outside ``rundir/`` (which parses the JSON into the
typed document: rundir/metrics_file.py, rundir/provenance_record.py) no such read may appear.

What is flagged, outside rundir/: a call of ``.prov(...)`` or ``dig(...)``; any ``.doc`` attribute
(the JSON object a :class:`evalharness.rundir.reader.Run` was read from); ``.raw.get(...)`` and
``.raw[...]`` (a key of the JSON a typed block keeps for comparing or showing it whole); a
``read_json(...)`` of ``METRICS_FILE`` (metrics.json read past the one reader, ``load_run``). Other
dicts (a diff document, a config group, a prediction record) are not the run document and pass.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "evalharness"
READER = "rundir/"
# module -> why it still reads the run document by key (each to go)
ALLOWED: dict[str, str] = {}


def _string_reads(source: str) -> list[tuple[int, str]]:
    """(line, what) of every read of a run document by string key or path in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
            if (name == "prov" and isinstance(func, ast.Attribute)) or name == "dig":
                found.append((node.lineno, f"{name}(...)"))
            if isinstance(func, ast.Attribute) and func.attr == "get" and _is_raw(func.value):
                found.append((node.lineno, ".raw.get(...)"))
            if name == "read_json" and any(_names_metrics_file(arg) for arg in node.args):
                found.append((node.lineno, "read_json(metrics.json)"))
        elif isinstance(node, ast.Attribute) and node.attr == "doc":
            found.append((node.lineno, ".doc"))
        elif isinstance(node, ast.Subscript) and _is_raw(node.value):
            found.append((node.lineno, ".raw[...]"))
    return found


def _is_raw(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "raw"


def _names_metrics_file(node: ast.expr) -> bool:
    return any(
        (isinstance(n, ast.Name) and n.id == "METRICS_FILE")
        or (isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.endswith("metrics.json"))
        for n in ast.walk(node)
    )


def test_the_check_sees_each_kind_of_string_read():
    source = (
        "run.prov('model.name')\ndig(doc, 'a.b')\nrun.doc.get('status')\n"
        "run.document.latency.raw['init']\nrun.provenance.host.raw.get('os')\n"
        "read_json(os.path.join(d, METRICS_FILE), 'run file')\n"
    )
    kinds = [what for _, what in _string_reads(source)]
    expected = ["prov(...)", "dig(...)", ".doc", ".raw[...]", ".raw.get(...)", "read_json(metrics.json)"]
    assert sorted(kinds) == sorted(expected)
    assert not _string_reads("run.provenance.model.name\ndiff['a']\nconfig.get('task') or {}\n")


def test_no_module_outside_rundir_reads_a_run_document_by_key():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(READER) or rel in ALLOWED:
            continue
        offenders += [f"{rel}:{line}: {what}" for line, what in _string_reads(path.read_text())]
    assert not offenders, "read the typed document's attributes instead:\n" + "\n".join(offenders)


def test_every_allowed_exception_still_needs_its_place():
    for rel in ALLOWED:
        path = PACKAGE / rel
        assert path.exists() and _string_reads(path.read_text()), f"{rel} no longer needs its exception"
