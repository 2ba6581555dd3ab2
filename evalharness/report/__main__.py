"""``python -m evalharness.report``: see :mod:`evalharness.report.cli`."""

import sys

from evalharness.report.cli import main

if __name__ == "__main__":
    sys.exit(main())
