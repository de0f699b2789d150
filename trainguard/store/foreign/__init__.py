"""Foreign formats: runs that other tools wrote, read as TrainGuard runs.

Owns the smdebug (SageMaker Debugger) reader (`smdebug`), the TensorBoard reader (`tensorboard`)
and what both are made of: TFRecord framing (`tfrecord`) and hand-decoded `Event` protobufs
(`tfevent`). Each reader registers one `ForeignFormat` in `FORMATS`, which `runs.open_run`
consults for a root that is not ours; adding a format is one module and one entry here. May
import the run format, the backends and `reader.Run`; nothing here writes to a store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from trainguard.store.backends import Store
from trainguard.store.foreign import smdebug, tensorboard
from trainguard.store.reader import Run


@dataclass(frozen=True)
class ForeignFormat:
    """How to recognise a root written by another tool, and how to open it."""

    name: str
    expects: str
    """What such a root holds, for the error that lists every format when none matched."""
    detect: Callable[[Store, list[str]], bool]
    """Whether the root holds this format, given the store and its top-level listing."""
    open: Callable[[str, Store], Run]


FORMATS: tuple[ForeignFormat, ...] = (
    ForeignFormat("smdebug", "index/ + events/ (smdebug)", smdebug.detect, smdebug.open_smdebug),
    ForeignFormat(
        "tensorboard", "*tfevents* files (TensorBoard)", tensorboard.detect, tensorboard.open_tensorboard
    ),
)
"""Asked in this order; the first whose `detect` says yes opens the root."""
