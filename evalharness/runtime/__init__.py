"""Runtime layer: the only package that imports ``ai_edge_litert`` or ``tensorflow``.

``delegates`` turns a delegate config into a :class:`DelegatePlan` (pure Python, no runtime
import, so unavailable delegates fail before anything loads); ``litert`` loads the model with
that plan and exposes tensors, invoke and delegation coverage.
"""

from evalharness.runtime.delegates import DelegatePlan, plan_delegate
from evalharness.runtime.tensors import TensorInfo

__all__ = ["DelegatePlan", "TensorInfo", "load_model", "plan_delegate"]


def load_model(model_path: str, plan: DelegatePlan, runtime: str = "litert", runner: dict | None = None):
    """Load ``model_path`` with the delegate ``plan`` on ``runtime`` (litert | tensorflow), or on an
    Android phone when the plan was made for ``runner=adb``."""
    if plan.backend == "adb":
        from evalharness.runtime.android.runner import AdbModel

        return AdbModel(model_path, plan, runner)
    if plan.backend == "compiled_gpu":
        if runtime != "litert":
            from evalharness.errors import ConfigError

            raise ConfigError(
                f"delegate=gpu runs on the LiteRT GPU accelerator: use runtime=litert, not {runtime}"
            )
        from evalharness.runtime.compiled import CompiledGpuModel

        return CompiledGpuModel(model_path, plan)
    from evalharness.runtime.litert import InterpreterModel

    return InterpreterModel(model_path, plan, runtime)
