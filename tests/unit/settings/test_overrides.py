"""The command line's overrides are read with Hydra's own grammar before composing: sweeps, ``++``,
``~``, quoted values and values holding ``()[]{}*`` mean what Hydra will read, and the one-line
messages (renamed key, unknown option, unknown key with the closest name) come from the parsed
overrides. No assets: nothing here composes or runs."""

from __future__ import annotations

import pytest

from evalharness.settings.cli import precheck, unknown_key
from evalharness.settings.overrides import check_group_options, options, parse, split


def test_hydra_flags_are_split_from_the_overrides():
    flags, overrides = split(["-m", "--cfg", "job", "delegate=cpu,gpu", "task.top_k=5"])
    assert flags.multirun and flags.cfg == "job"
    assert overrides == ["delegate=cpu,gpu", "task.top_k=5"]
    problem = precheck(["-m", "delegate=cpu,gpu", "--cfg", "job", "task.top_k=5"])[1]  # Hydra refuses it too
    assert problem == "unrecognized arguments: task.top_k=5; see evalharness --hydra-help"


@pytest.mark.parametrize(
    ("text", "key", "named"),
    [
        ("++x=1", "x", ["1"]),
        ("~task.top_k", "task.top_k", None),
        ("model.name='a(b)'", "model.name", ["a(b)"]),
        ("model.name='[x]{y}*'", "model.name", ["[x]{y}*"]),
        ('model.name="a, b"', "model.name", ["a, b"]),
        ("delegate=cpu,gpu", "delegate", ["cpu", "gpu"]),
        ("delegate=choice(cpu,gpu)", "delegate", ["cpu", "gpu"]),
        ("task.num_images=glob(*)", "task.num_images", None),  # only composing can list a glob
        ("task.num_images=range(1,3)", "task.num_images", None),
        ("model.preprocess.mean=[1,2,3]", "model.preprocess.mean", None),
        ("delegate=null", "delegate", None),
    ],
)
def test_each_override_is_read_as_hydra_reads_it(text, key, named):
    (override,) = parse([text])
    assert override.key_or_group == key
    assert options(override) == named


def test_add_force_add_and_delete_are_known():
    plus, force, delete = parse(["+a.b=1", "++a.c=2", "~a.d"])
    assert plus.is_add() and force.is_force_add() and delete.is_delete()


@pytest.mark.parametrize(
    "args",
    [
        ["++task.num_images=1"],
        ["~task.top_k"],
        ["model.name='a(b)'"],
        ["-m", "delegate=cpu,gpu"],
        ["-m", "task.num_images=glob(*)"],
        ["-m", "delegate=glob(c*)"],
        ["hydra.run.dir='out/(1)'"],
    ],
)
def test_valid_command_lines_pass_the_checks(args):
    assert precheck(args) == (args, None)


@pytest.mark.parametrize("old", ["loop.cache", "task.cache", "delegate.cache_dir"])
@pytest.mark.parametrize("spelling", ["{old}=true", "+{old}=true", "++{old}=true", "~{old}", "{old}=a,b"])
def test_renamed_keys_name_their_new_name_however_written(old, spelling):
    problem = precheck([spelling.format(old=old)])[1]
    assert problem.startswith(f"{old} is now ")


@pytest.mark.parametrize(
    "args", [["task.num_image=5"], ["+task.num_image=5"], ["++task.num_image=5"], ["~task.num_image"]]
)
def test_unknown_key_names_the_closest(args):
    problem = precheck(args)[1]
    assert problem.startswith("task.num_image: unknown key; valid for task=imagenet: ")
    assert problem.endswith("Did you mean 'num_images'?")


def test_unknown_key_is_checked_for_every_candidate_of_a_sweep():
    problem = unknown_key(parse(["task=coco,imagenet", "model.class_mapp=x"]))
    assert "valid for model (task=coco)" in problem and "Did you mean 'class_map'?" in problem
    assert unknown_key(parse(["task=glob(*)", "task.num_image=1"])) is None  # cannot be named: later checks


def test_unknown_option_names_the_closest_also_in_a_sweep():
    assert check_group_options(parse(["delegate=cpux"])).startswith("unknown delegate 'cpux'; valid: ")
    problem = check_group_options(parse(["delegate=cpu,gpux"]))
    assert "unknown delegate 'gpux'" in problem and problem.endswith("Did you mean 'gpu'?")
    assert check_group_options(parse(["delegate=choice(cpu,gpu)", "delegate=null"])) is None


def test_another_config_name_skips_the_key_check_only():
    assert precheck(["--config-name", "mine", "task.num_image=5"])[1] is None
    assert "unknown delegate" in precheck(["--config-name", "mine", "delegate=cpux"])[1]


@pytest.mark.parametrize("bad", ["delegate=cpu,", "model.name=a(b", "foo", "x=${oops"])
def test_grammar_errors_are_one_line_naming_the_override(bad):
    problem = precheck([bad])[1]
    assert problem.startswith(f"{bad}: not an override Hydra reads (") and "\n" not in problem
    assert "quoting a value" in problem


def test_a_bad_hydra_flag_is_one_line():
    problem = precheck(["--info", "x=1"])[1]
    assert problem.startswith("argument --info/-i: invalid choice") and problem.endswith("--hydra-help")


def test_spellings_are_rewritten_from_the_parsed_overrides():
    assert precheck(["model.preprocess=efficientnet"])[0] == ["model/preprocess=efficientnet"]
    assert precheck(["-m", "model.preprocess=efficientnet,torchvision"])[0] == [
        "-m",
        "model/preprocess=efficientnet,torchvision",
    ]
    assert precheck(["model.path='/m/a(1).tflite'"])[0] == ["model.path='/m/a(1).tflite'", "model=file"]
    kept = ["model=efficientnet_lite0", "model.path=/m/x.tflite", "model.preprocess.mean=[1,2,3]"]
    assert precheck(kept)[0] == kept
