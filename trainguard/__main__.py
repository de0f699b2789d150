"""`python -m trainguard` runs the command line."""

import sys

from trainguard.cli import main

sys.exit(main())
