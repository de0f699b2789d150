"""The optimizer every thirteenth-split script builds: the realistic suite's `make_optimizer` by the program's `opt` and
`lr` knobs (AdamW with a weight decay of 1e-4), registered with the hook together with the model it trains.
"""

from __future__ import annotations

import torch
from torch import nn

from benchmarks.detection.blind.harness import Run
from benchmarks.detection.torch_real.loop import make_optimizer


def registered(
    run: Run, model: nn.Module, default_lr: float, default_opt: str = "adam"
) -> torch.optim.Optimizer:
    """The optimizer of `model`'s parameters named by the `opt` knob (or `default_opt`, Adam) at the `lr` knob
    (or `default_lr`), with the model and the optimizer registered with the run's hook."""
    name, lr = run.k("opt", default_opt), run.k("lr", default_lr)
    opt = make_optimizer(name, model.parameters(), lr, weight_decay=1e-4 if name == "adamw" else 0.0)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    return opt
