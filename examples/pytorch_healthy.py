"""A healthy PyTorch run, and the training loop the other PyTorch examples share.

The TrainGuard lines are marked `# TrainGuard`. Under `trainguard run` the hook writes statistics
to the run and `hook.should_stop()` turns True when a rule stops the job; run plainly (no
TRAINGUARD_OUT) the hook does nothing.

    trainguard run -- python examples/pytorch_healthy.py     # exits 0, no warnings
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

import torch
from numpy_mlp import make_data
from torch import nn

import trainguard.torch as tg


def mlp(sizes: list[int], *, activation: type[nn.Module] = nn.ReLU) -> nn.Sequential:
    """Dense layers with an activation between them."""
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(activation())
    return nn.Sequential(*layers)


def classification_data() -> tuple[torch.Tensor, ...]:
    """Train and validation sets: 20 features, the labels of a fixed random teacher (10 classes).

    The training set is larger than the examples ever sample (800 steps of 64), so a healthy run
    cannot overfit it.
    """
    x, y = make_data(n=65536, features=20, classes=10, seed=0)
    xv, yv = make_data(n=1024, features=20, classes=10, seed=1)
    return torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(xv), torch.from_numpy(yv)


def train(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    *,
    steps: int,
    data: tuple[torch.Tensor, ...] | None = None,
    loss_fn: nn.Module | None = None,
    lr_at: Callable[[int], float] | None = None,
    step_seconds: float = 0.0,
    print_every: int = 100,
) -> int:
    """Train with mini-batches of 64; record the loss, a validation loss every 50 steps; return the steps run."""
    torch.set_num_threads(
        1
    )  # tiny models run fastest on one thread, and it keeps shared CI machines responsive
    x, y, xv, yv = data or classification_data()
    loss_fn = loss_fn or nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(0)
    with tg.Hook.from_env() as hook:  # TrainGuard: configured by TRAINGUARD_* (set by `trainguard run`)
        hook.register_module(model)  # TrainGuard: weights, biases, gradients, activations
        hook.register_optimizer(optimizer)  # TrainGuard: steps, update sizes, learning rate
        for step in range(steps):
            if lr_at is not None:
                for group in optimizer.param_groups:
                    group["lr"] = lr_at(step)
            idx = torch.randint(0, len(x), (64,), generator=gen)
            optimizer.zero_grad()
            loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            hook.record_scalar("loss", loss)  # TrainGuard
            optimizer.step()
            if step % 50 == 0:
                with torch.no_grad():
                    hook.record_scalar("val_loss", loss_fn(model(xv), yv), mode="eval")  # TrainGuard
            if step % print_every == 0:
                print(f"step {step}: loss {loss.item():.4g}", flush=True)
            if hook.should_stop():  # TrainGuard: a rule asked to stop (trainguard run also sends SIGTERM)
                print(f"step {step}: stopping, TrainGuard asked to", flush=True)
                return step + 1
            if step_seconds:
                time.sleep(step_seconds)
    return steps


if __name__ == "__main__":
    torch.manual_seed(0)
    model = mlp([20, 64, 64, 10])
    train(model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), steps=800)
