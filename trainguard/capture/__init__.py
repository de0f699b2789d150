"""Capture: the training side. Computes statistics where the tensors live and hands them to the store.

Owns the PyTorch hook with its device statistics (`torch/`, exposed as `trainguard.torch`), the
framework-free `Recorder`, prediction counting and capture settings; re-exports `StopFlag`, which lives in
`trainguard.stop_flag` because the evaluator writes the same file. Writes only through
`trainguard.store`; never imports rules, the evaluator or the operator. Never raises into the
training loop: failures disable capture, are logged once and are recorded in the run.
"""

from trainguard.capture.config import CaptureConfig
from trainguard.capture.recorder import Recorder
from trainguard.stop_flag import StopFlag

__all__ = ["CaptureConfig", "Recorder", "StopFlag"]
