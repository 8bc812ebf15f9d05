#!/usr/bin/env python3
"""Validation of truepeak's estimates against real framework runs: see docs/validation.md.
The same as `python3 -m validate` from the project's root."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from validate.cli import main  # noqa: E402

sys.exit(main())
