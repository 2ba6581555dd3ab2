"""Task registry: ``task.name`` in the config picks the task class."""

from evalharness.registry import Registry

TASKS: Registry = Registry("task")


def load_tasks() -> Registry:
    """Import the task modules so they register themselves (kept lazy for fast CLI errors)."""
    from evalharness.tasks import benchmark, coco, imagenet, inference_diff  # noqa: F401

    return TASKS
