"""``python -m evalharness.report``: see :mod:`evalharness.report.cli`."""

from evalharness.report.cli import main

if __name__ == "__main__":
    main()
