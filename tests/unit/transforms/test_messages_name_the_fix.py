"""Messages name what the user can change: every error raised where a variant is made and its
images chosen (transforms/, the dataset split and shards of data/shard.py, the quantizer's
calibration in runtime/quantize.py) names the config key that caused it and what to do about it.

Generated from the sources: every ``raise ConfigError / DataError / EvalHarnessError(...)`` in those
modules is one case; its message text (the literal parts of its f-string) must hold a key
(``quant.calibration.max_fraction``, ``task.num_images``, ``model.path``, ``quant=...``) and a fix
(``use``, ``give``, ``set``, ``raise``, ``lower``, ``valid:`` ...). Then the two splits that said
``error: dataset split {...}`` with neither: a one-image dataset and ``max_fraction=1.0``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from evalharness.core.errors import ConfigError
from evalharness.settings.groups import CalibrationSchema
from evalharness.transforms.calibration_choice import choose

PACKAGE = Path(__file__).resolve().parents[3] / "evalharness"
MODULES = [*sorted((PACKAGE / "transforms").glob("*.py")), PACKAGE / "data" / "shard.py",
           PACKAGE / "runtime" / "quantize.py"]  # fmt: skip
ERRORS = {"ConfigError", "DataError", "EvalHarnessError"}
KEY = re.compile(r"\b(quant|task|dataset|model|paths|loop|delegate)(\.[a-z_]+|=|/)|pip install")
FIX = re.compile(r"\b(use|give|set|raise|lower|leave|calibrate on|put|pip install|fix the)\b|valid:")
# raise sites with no setting behind them: why
NO_SETTING = {
    "ai-edge-quantizer failed on": "the quantizer's own failure, its message passed on",
}


def _message(call: ast.Call, functions: dict[str, ast.FunctionDef]) -> str:
    """The literal text of the error's first argument (an f-string's constant parts, joined; for a
    message made by a function of the module, the text that function returns)."""
    if not call.args:
        return ""
    arg = call.args[0]
    if isinstance(arg, ast.Call) and getattr(arg.func, "id", "") in functions:
        arg = ast.Module(body=functions[arg.func.id].body[1:], type_ignores=[])  # its docstring left out
    parts = [n.value for n in ast.walk(arg) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return "".join(parts)


def _sites() -> list[tuple[str, str]]:
    found = []
    for path in MODULES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                name = getattr(node.exc.func, "id", getattr(node.exc.func, "attr", ""))
                if name in ERRORS:
                    where = f"{path.relative_to(PACKAGE)}:{node.lineno}"
                    found.append((where, _message(node.exc, functions)))
    return found


SITES = _sites()


def test_the_scan_finds_the_raise_sites():
    assert len(SITES) >= 25


@pytest.mark.parametrize(("site", "message"), SITES, ids=[s for s, _ in SITES])
def test_every_error_names_the_key_and_the_fix(site, message):
    if any(message.startswith(prefix) or prefix in message for prefix in NO_SETTING):
        return
    assert KEY.search(message), f"{site}: names no config key: {message!r}"
    assert FIX.search(message), f"{site}: says no fix: {message!r}"


AUTO = CalibrationSchema(name="auto", source="auto", roots=("/b",), num_images=100, min_dataset_images=1)


@pytest.mark.parametrize(
    ("listed", "changes", "named"),
    [
        (1, {}, "quant.calibration.min_dataset_images"),
        (2, {"max_fraction": 1.0}, "quant.calibration.max_fraction"),
        (40, {"max_fraction": 1.0}, "quant.calibration.max_fraction"),
        (100, {"max_fraction": 1.0, "num_images": 0}, "quant.calibration.max_fraction"),
    ],
)
def test_a_calibration_slice_that_leaves_nothing_to_score_names_the_key(listed, changes, named):
    cal = CalibrationSchema(**{**AUTO.__dict__, **changes})
    with pytest.raises(ConfigError) as err:
        choose(cal, listed)
    message = str(err.value)
    assert named in message and "dataset split {" not in message and "\n" not in message, message
    assert FIX.search(message), message


def test_a_slice_that_leaves_images_to_score_is_chosen_as_before():
    choice = choose(CalibrationSchema(**{**AUTO.__dict__, "max_fraction": 0.5}), 4)
    assert choice.split == {"fraction": 0.5, "scheme": "interleaved"}
