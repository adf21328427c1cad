"""`python -m tune_app`."""

import sys

from tune_app.cli import main

sys.exit(main())
