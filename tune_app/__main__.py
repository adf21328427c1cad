"""`python -m tune_app`."""

import os
import sys
import threading

from tune_app.cli import main

code = main()
# Everything is written and closed, and a Ray this process started is stopped. Exit now where
# no thread of ours is left: tearing down the interpreter (Ray's, pandas' and matplotlib's
# modules) takes another half second, a run's last step.
if all(t.daemon or t is threading.main_thread() for t in threading.enumerate()):
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
sys.exit(code)
