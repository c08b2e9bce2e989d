"""``python -m rr_core``."""

import gc
import sys
import threading

from rr_core.cli import main
from rr_core.store import close_stores

# Guarded: the review's reader processes (spawned) import this module again as ``__mp_main__``.
if __name__ == "__main__":
    status = main()
    # The process ends here. As interpreter exit would, it first waits for the threads that are
    # not daemons (none may find its store closed under it); then its stores are closed (a SQLite
    # file's WAL written back), and every object left is frozen out of the collector's sight:
    # exit would walk them all once more (~70,000 after a 30-contract review: ~0.1 s of a 2 s
    # command) looking for cycles to free, memory the operating system takes back at once anyway.
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    close_stores()
    gc.freeze()
    sys.exit(status)
