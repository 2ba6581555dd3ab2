"""``python -m evalharness.inspect MODEL``: see :mod:`evalharness.inspect.facts`."""

import sys

from evalharness.inspect.facts import main

sys.exit(main())
