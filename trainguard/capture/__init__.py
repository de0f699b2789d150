"""Capture: the training side. Computes statistics where the tensors live and hands them to the store.

Owns the PyTorch hook (`torch_hook`, exposed as `trainguard.torch`), the framework-free
`Recorder`, the on-device statistics, capture settings and the stop flag. Writes only through
`trainguard.store`; never imports rules, the evaluator or the operator. Never raises into the
training loop: failures disable capture, are logged once and are recorded in the run.
"""

from trainguard.capture.config import CaptureConfig
from trainguard.capture.recorder import Recorder
from trainguard.capture.stop import StopFlag

__all__ = ["CaptureConfig", "Recorder", "StopFlag"]
