"""User-facing errors.

An :class:`EvalHarnessError` is a problem with the user's input, config or environment that the
user can fix. ``__main__`` prints it as one line (no traceback) and exits non-zero; anything else
escaping is a bug and keeps its traceback.
"""


class EvalHarnessError(Exception):
    """A one-line, user-fixable error: say what is wrong, where, and how to fix it."""


class ConfigError(EvalHarnessError):
    """The composed config is invalid (unknown name, wrong type, missing value)."""


class DataError(EvalHarnessError):
    """A dataset, ground-truth or label file is missing or malformed."""


class ModelMismatchError(EvalHarnessError):
    """The model's inputs/outputs do not fit the task or the label set."""


class DelegateUnavailableError(EvalHarnessError):
    """The requested delegate cannot run on this host; never replaced by a silent CPU fallback."""


class RunStopped(EvalHarnessError):
    """The run wrote its metrics.json but did not complete (partial, failed or invalid): exit 1."""
