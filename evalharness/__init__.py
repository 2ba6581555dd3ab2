"""evalharness: does a .tflite model keep its accuracy, and how fast is it, on a delegate?"""

__version__ = "0.1.0"  # the one place (pyproject.toml reads it: dynamic version)
