"""``python -m lakesieve.cli``: the ``lakesieve`` command."""

import sys

from lakesieve.cli import main

sys.exit(main())
