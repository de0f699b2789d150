"""Smoke runs of the sixth blind split, no rule involved: `python -m benchmarks.detection.blind6.smoke` with the
options of the second split's runner (`blind2.smoke`): `--steps N` through the real hook into a temporary store,
`--full` at full length with an inert hook, each bug beside its twin, `--seeds a,b`, `--programs a,b`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from benchmarks.detection.blind2 import smoke
from benchmarks.detection.blind6 import suite


def main(argv: Sequence[str] | None = None) -> int:
    """Run the smoke checks given by `argv` on this split."""
    return smoke.main(argv, split=suite, doc=__doc__ or "")


if __name__ == "__main__":
    sys.exit(main())
