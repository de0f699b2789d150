"""A PyTorch run with dead ReLUs: the hidden biases start at -4, so most units never fire.

A unit whose pre-activation is negative on every sample outputs 0 and gets no gradient, so it stays
dead; the network trains on the few units left. `dead_relu` (action notify) reports the layers,
per unit, and the run goes on to the end:

    trainguard run -- python examples/pytorch_dead_relu.py   # exits 0; dead_relu in the verdict table
"""

from __future__ import annotations

import torch
from pytorch_healthy import mlp, train
from torch import nn

if __name__ == "__main__":
    torch.manual_seed(0)
    model = mlp([20, 64, 64, 10])
    with torch.no_grad():
        for layer in model:
            if isinstance(layer, nn.Linear) and layer.out_features == 64:
                layer.bias.fill_(-4.0)
    train(model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9), steps=800)
