"""`python -m runtimes ...`: see runtimes/cli.py."""
import time

STARTED = time.perf_counter()  # before the framework's import, which calibration_s includes

import sys  # noqa: E402

from runtimes.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:], started=STARTED))
