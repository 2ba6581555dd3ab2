"""``python -m evalharness.inspect MODEL``: see :mod:`evalharness.inspect.facts`."""

import sys

from evalharness.inspect.facts import main

if __name__ == "__main__":
    sys.exit(main())
