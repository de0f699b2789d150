"""A PyTorch run that diverges: the learning-rate warm-up climbs too high, the loss explodes to inf/NaN.

A regression MLP trained with SGD whose learning rate warms up from 0.01 to 0.5 over 200 steps;
past about 0.2 the updates overshoot, the loss grows geometrically and turns inf, then NaN. The
script would go on for 20,000 steps (about a minute), burning compute on NaN. Under TrainGuard,
`exploding_tensor` (action stop) ends it about a second after the first non-finite value:

    trainguard run -- python examples/pytorch_diverging.py   # exit status 3, stopped by exploding_tensor
"""

from __future__ import annotations

import torch
from pytorch_healthy import classification_data, mlp, train
from torch import nn


def regression_data() -> tuple[torch.Tensor, ...]:
    """The same inputs, with targets from a fixed linear teacher."""
    x, _, xv, _ = classification_data()
    teacher = torch.randn(20, 1, generator=torch.Generator().manual_seed(1))
    return x, x @ teacher, xv, xv @ teacher


if __name__ == "__main__":
    torch.manual_seed(0)
    model = mlp([20, 64, 64, 1])
    train(
        model,
        torch.optim.SGD(model.parameters(), lr=0.01),
        steps=20_000,
        data=regression_data(),
        loss_fn=nn.MSELoss(),
        lr_at=lambda step: 0.01 + 0.49 * min(step / 200, 1.0),
        step_seconds=0.002,
        print_every=20,
    )
