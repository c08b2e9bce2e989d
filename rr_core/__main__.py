"""``python -m rr_core``."""

import sys

from rr_core.cli import main

sys.exit(main())
