"""The first screen of ``evalharness``: its own short help, and one line naming the closest key for
a ``group.key=value`` override that the chosen task, delegate or runner does not read.

Hydra would say "Could not override 'task.num_image'. To append to your config use +task.num_image=5"
(and with the ``+``, "Key 'num_image' not in 'ImageNetSettings'"). Here every ``group.key`` override
is compared, before Hydra composes, with the schema of that group for the options the command line
selects (defaults from ``conf/config.yaml``): the task's ``schema`` (and the fields it adds to
``dataset`` and ``model``), the delegate's flags (:func:`evalharness.runtime.delegates.check_delegate`
words a flag that another delegate reads), the runner's settings, the core groups'. Plug-in tasks
(``EVALHARNESS_PLUGINS`` + ``hydra.searchpath``) are checked in the same way. :func:`precheck` runs
every check made before composing on the overrides as Hydra's grammar reads them
(:mod:`evalharness.settings.overrides`); ``evalharness compare`` runs it on its overrides too.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, cast

from hydra.core.override_parser.types import Override
from omegaconf import OmegaConf

from evalharness.core.boundary import describe
from evalharness.core.errors import ConfigError, EvalHarnessError
from evalharness.core.paths import CONF_DIR
from evalharness.core.schema import extended, field_names
from evalharness.settings.overrides import check_group_options, conf_dirs, options, parse, rewrite, split

_CHOSEN = ("task", "delegate", "runner", "tracking")  # groups whose option decides which keys are valid


def _defaults() -> Mapping[str, str]:
    """group -> default option, from conf/config.yaml's defaults list."""
    config = cast("dict[str, Any]", OmegaConf.to_container(OmegaConf.load(CONF_DIR / "config.yaml")))
    entries = config.get("defaults", [])
    return {k: str(v) for e in entries if isinstance(e, dict) for k, v in e.items()}


def config_groups(dirs: list[Path]) -> Mapping[str, list[str]]:
    """Every config group (a folder of conf/, nested ones as ``a/b``) -> its options, sorted."""
    groups: dict[str, set[str]] = {}
    for d in dirs:
        for path in d.rglob("*.yaml"):
            if path.parent != d:
                groups.setdefault(path.parent.relative_to(d).as_posix(), set()).add(path.stem)
    return {g: sorted(options) for g, options in sorted(groups.items())}


def help_text(args: list[str], subcommands: dict[str, str]) -> str:
    """``evalharness --help``: the subcommands (name -> one line, from the entry's one table) and the
    config groups with their options."""
    try:
        overrides = parse(split(args)[1])
    except Exception:  # noqa: BLE001 - a bad override does not stop the help: conf/ alone is listed
        overrides = []
    defaults = _defaults()
    groups = config_groups(conf_dirs(overrides))
    width = max(map(len, [*groups, *subcommands])) + 2
    lines = [
        "usage: evalharness [-m] [GROUP=OPTION ...] [GROUP.KEY=VALUE ...]   run (-m: a sweep, OPTION=a,b)",
        f"       evalharness {{{','.join(subcommands)}}} ...",
        "",
        "subcommands:",
        *(f"  {name:<{width}}{line}" for name, line in subcommands.items()),
        f"  {'':<{width}}(evalharness SUBCOMMAND -h: its options)",
        "",
        "config groups (conf/; * = default):",
    ]
    for group, names in groups.items():
        marked = [f"{o}*" if defaults.get(group) == o else o for o in names]
        lines.append(f"  {group:<{width}}{', '.join(marked)}")
    lines += [
        "",
        "GROUP.KEY=VALUE sets one setting (e.g. task.num_images=10, delegate.num_threads=2); a key the",
        "chosen task, delegate or runner does not read is an error naming the closest one.",
        "Hydra's own help: evalharness --hydra-help (its flags), --cfg job (the composed config).",
    ]
    return "\n".join(lines)


def _chosen(overrides: list[Override]) -> Mapping[str, list[str] | None]:
    """task, delegate, runner, tracking -> the options the command line selects (None: what cannot
    be named before composing, a glob or range sweep or a deletion)."""
    defaults = _defaults()
    chosen: dict[str, list[str] | None] = {g: [defaults.get(g, "")] for g in _CHOSEN}
    for o in overrides:
        if o.key_or_group in _CHOSEN:
            chosen[o.key_or_group] = None if o.is_delete() else options(o)
    return chosen


def _name_in(group: str, option: str, dirs: list[Path]) -> str:
    """The ``name`` an option's config file gives its group (usually the option itself)."""
    for d in reversed(dirs):
        path = d / group / f"{option}.yaml"
        if path.is_file():
            cfg: Any = OmegaConf.load(path)
            node = cfg.get(group) if isinstance(cfg.get(group), typing.Mapping) else cfg
            return str(node.get("name", option))
    return option


def _unknown(schema: Any, parts: list[str]) -> tuple[int, Any] | None:
    """Where ``parts`` leaves ``schema`` (index of the unknown part, the dataclass there), or None."""
    for i, part in enumerate(parts):
        if not (isinstance(schema, type) and dataclasses.is_dataclass(schema)):
            return None  # a free-form value (Any, a dict): nothing to check below it
        if part not in field_names(schema):
            return i, schema
        schema = typing.get_type_hints(schema).get(part)
    return None


def _message(
    key: str, parts: list[str], schema: type, where: str, tolerated: Collection[str] = frozenset()
) -> str | None:
    found = _unknown(schema, parts)
    if not found or (found[0] == 0 and parts[0] in tolerated):
        return None
    i, node = found
    valid = [f for f in field_names(node) if f != "name"]
    close = difflib.get_close_matches(parts[i], valid, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return f"{key}: unknown key; valid for {where}: {', '.join(valid) or 'none (name only)'}.{hint}"


def _delegate_problem(key: str, parts: list[str], name: str) -> str | None:
    from evalharness.runtime.delegates import DELEGATES, check_delegate

    kind = DELEGATES.get(name)
    if len(parts) == 1 and parts[0] not in kind.flags:
        try:  # a flag another delegate reads: check_delegate's own words ("does not read ...")
            check_delegate({"name": name, parts[0]: object()})
        except ConfigError as exc:
            if "does not read" in str(exc):
                return str(exc)
    return _message(key, parts, kind.schema, f"delegate={name}")


def _problem(key: str, chosen: Mapping[str, list[str] | None], dirs: list[Path]) -> str | None:
    from evalharness.runtime.runners import RUNNERS
    from evalharness.settings.groups import SCHEMAS
    from evalharness.tasks.discovery import task_definitions

    group, *parts = key.split(".")
    options: list[str] | list[None] | None = chosen.get(group, [None])
    for option in options or []:  # None: the options could not be named (a glob sweep)
        name = _name_in(group, option, dirs) if option else ""  # "": no option chosen, none valid
        if group == "delegate":
            problem = _delegate_problem(key, parts, name)
        elif group == "runner":
            problem = _message(key, parts, RUNNERS.get(name).settings, f"runner={name}")
        elif group == "task":
            problem = _message(key, parts, task_definitions().get(name).schema, f"task={name}")
        elif group == "tracking":
            problem = _tracking_problem(key, parts, name)
        elif group in ("model", "dataset"):
            return _task_group_problem(key, group, parts, chosen, dirs)
        elif group in SCHEMAS:
            problem = _message(key, parts, SCHEMAS[group], group)
        else:
            return None  # hydra.*, an unknown top-level key: validation names those
        if problem:
            return problem
    return None


def _tracking_problem(key: str, parts: list[str], name: str | None) -> str | None:
    from evalharness.report.tracking.mapping import TRACKERS

    if name is None or name not in TRACKERS:
        return None  # an unknown option: the group-option check names it
    if name == "none" and parts and parts[0] != "name":
        return f"{key}: tracking=none logs nothing and reads no settings; add tracking=mlflow"
    return _message(key, parts, TRACKERS.get(name), f"tracking={name}")


def _task_group_problem(
    key: str, group: str, parts: list[str], chosen: Mapping[str, list[str] | None], dirs: list[Path]
) -> str | None:
    """``model``/``dataset``: the core fields plus the chosen task's; other tasks' fields pass (as in
    settings/validate.check_group: a preset describes its model or dataset for every task)."""
    from evalharness.settings.groups import SCHEMAS
    from evalharness.settings.validate import task_fields
    from evalharness.tasks.discovery import task_definitions

    definitions, others = task_definitions(), task_fields(group)
    for option in chosen["task"] or []:
        name = _name_in("task", option, dirs)
        own = getattr(definitions.get(name), f"{group}_schema", None)
        if problem := _message(key, parts, extended(SCHEMAS[group], own), f"{group} (task={name})", others):
            return problem
    return None


def unknown_key(overrides: list[Override]) -> str | None:
    """The one-line error for the first ``group.key`` override (set, added or deleted) no schema of
    the chosen options declares (with the valid keys and the closest one), or None. Options it cannot
    name (a glob or range sweep, an unknown option) are left to the usual checks."""
    keys = [o.key_or_group for o in overrides if "." in o.key_or_group and "/" not in o.key_or_group]
    if not keys:
        return None
    chosen, dirs = _chosen(overrides), conf_dirs(overrides)
    for key in keys:
        try:
            if problem := _problem(key, chosen, dirs):
                return problem
        except EvalHarnessError:
            return None  # an unknown task/delegate/runner or plug-in: its own check says so
    return None


def precheck(args: list[str]) -> tuple[list[str], str | None]:
    """The command line as Hydra will get it (rewritten), and the one-line problem found before
    composing: Hydra's grammar, a renamed key, an unknown group option or key, a missing launcher."""
    from evalharness.settings.config_files import config_file_problem
    from evalharness.settings.launchers import missing_launcher_plugin
    from evalharness.settings.renamed_keys import renamed_override

    try:
        flags, given = split(args)
        args = rewrite(args, parse(given))
        overrides = parse(split(args)[1])
    except Exception as exc:  # noqa: BLE001 - Hydra's grammar errors are user errors: one line
        return args, describe(exc)
    users = [*conf_dirs(overrides)[1:], *([Path(flags.config_dir)] if flags.config_dir else [])]
    problem = config_file_problem(users)  # Hydra reads a user's config files with no limits
    if problem:
        return args, problem
    checks = [renamed_override, missing_launcher_plugin]
    if not (flags.config_path or flags.config_dir):  # else options beyond conf/'s: Hydra names them
        checks.insert(1, check_group_options)
    if not (flags.config_name or flags.config_path or flags.config_dir):  # else defaults not conf/'s
        checks.insert(2, unknown_key)
    return args, next(filter(None, (check(overrides) for check in checks)), None)
