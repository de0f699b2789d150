"""`import trainguard.torch as tg`: the PyTorch hook, the one public name of the training side for PyTorch.

Kept apart from `trainguard/__init__.py` so that importing TrainGuard never imports torch; the
implementation lives in `trainguard.capture.torch.hook` and the device statistics in
`trainguard.capture.torch.device_stats`.
"""

from trainguard.capture.torch.hook import ACTIVATION_KINDS, Hook

__all__ = ["ACTIVATION_KINDS", "Hook"]
