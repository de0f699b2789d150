"""`python -m benchmarks.detection.blind10.smoke`: the tenth blind split run without any rule, by the second
split's smoke runner (`blind2.smoke`; `--steps N` through the real hook, `--full` with an inert hook and each bug
next to its twin, `--seeds`, `--programs`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from benchmarks.detection.blind2 import smoke
from benchmarks.detection.blind10 import suite


def main(argv: Sequence[str] | None = None) -> int:
    """Run the smoke checks given by `argv` on this split."""
    return smoke.main(argv, split=suite, doc=__doc__ or "")


if __name__ == "__main__":
    sys.exit(main())
