"""One way to refuse: a line on stderr and exit status 2, as truepeak itself does."""
import sys

PROG = "validate"


def usage_error(message):
    print(f"{PROG}: {message}", file=sys.stderr)
    sys.exit(2)
