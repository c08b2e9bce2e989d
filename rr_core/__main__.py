"""``python -m rr_core``."""

import sys

from rr_core.cli import main

# Guarded: the review's reader processes (spawned) import this module again as ``__mp_main__``.
if __name__ == "__main__":
    sys.exit(main())
