"""Smoke test of the fifth blind split, with no rule built or run.

`python -m benchmarks.detection.blind5.smoke [--steps N] [--full] [--seeds a,b] [--programs a,b]` is
`blind2.smoke.main` given this split's `suite`: a few steps of every program through the real hook into a
temporary store (`--steps`), or every program at full length with an inert hook beside its twin (`--full`), the
oracle's harm labels at the end when several seeds ran.
"""

from __future__ import annotations

from functools import partial

from benchmarks.detection.blind2 import smoke
from benchmarks.detection.blind5 import suite

main = partial(smoke.main, split=suite, doc=__doc__ or "")
"""The smoke runs of this split (`argv` as for the command line)."""

if __name__ == "__main__":
    raise SystemExit(main())
