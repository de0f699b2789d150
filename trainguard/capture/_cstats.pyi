# The C kernel of the hook's CPU path (_cstats.c); called only through trainguard.capture.torch.c_kernel.
from typing import Any

N_COLUMNS: int
HIST_BINS: int

def reduce(
    x: int,
    n: int,
    out: Any,
    row: int,
    prev: int,
    first: int,
    fresh: bool,
    hist: Any,
    hist_offset: int,
    moved: Any,
    /,
) -> bool: ...
def units(x: int, samples: int, units: int, rest: int, mode: int, out: Any, /) -> None: ...
def reduce_many(spec: list[int], out: Any, row: int, /) -> int: ...
