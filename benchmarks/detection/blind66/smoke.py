"""`python -m benchmarks.detection.blind66.smoke`: the sixty-sixth split's smoke runs, no rule involved.

`main` is the second split's runner (`blind2.smoke.main`) bound to this split: `--steps N` trains each program N
steps through the real hook, `--full` trains it to the end with an inert hook, each bug after its twin (`--seeds`,
`--programs` narrow the runs).
"""

from __future__ import annotations

from functools import partial

from benchmarks.detection.blind2 import smoke
from benchmarks.detection.blind66 import suite

main = partial(smoke.main, split=suite, doc=__doc__ or "")

if __name__ == "__main__":
    raise SystemExit(main())
