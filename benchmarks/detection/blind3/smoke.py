"""Smoke test of the third blind split without the rules: `python -m benchmarks.detection.blind3.smoke
[--steps N] [--full] [--seeds a,b] [--programs a,b]`.

The second split's smoke runner (`blind2.smoke.main`) on this split's programs: `--steps N` (default 12) runs
every program N steps through the real hook into a temporary store and reads the run back; `--full` runs them at
full length with an inert hook and prints, per program and seed, the first and last loss, the first and final
oracle score, the first non-finite step and the step the bug took effect, each bug beside its twin; with several
seeds it ends with the oracle's harm label of each bug (`suite.label`). Nothing here builds or runs a rule.
"""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.detection.blind2 import smoke
from benchmarks.detection.blind3 import suite


def main(argv: Sequence[str] | None = None) -> int:
    return smoke.main(argv, split=suite, doc=__doc__ or "")


if __name__ == "__main__":
    raise SystemExit(main())
