"""TrainGuard: catches training runs that went wrong and stops or reports them.

Public names live here and in `trainguard.torch` (the PyTorch hook). Everything else is
reached through its subpackage: `capture`, `store`, `rules`, `sidecar`, `operator`, `api`.
"""

from trainguard._version import __version__
from trainguard.capture.recorder import Recorder
from trainguard.errors import TrainGuardError
from trainguard.store.reader import Run, Series
from trainguard.store.runs import open_run

__all__ = ["Recorder", "Run", "Series", "TrainGuardError", "__version__", "open_run"]
