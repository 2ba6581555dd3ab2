"""``python -m evalharness.report``: see :mod:`evalharness.report.commands.entry`."""

import sys

from evalharness.report.commands.entry import main

if __name__ == "__main__":
    sys.exit(main())
