"""Gradients of parameters frozen when the model was registered: a layer unfrozen later gets its gradient read
from then on (unfrozen but never given to the optimizer, it is the evidence that its weights should move), and a
layer frozen again keeps no stale gradient in the run."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import trainguard
import trainguard.torch as tg


@pytest.mark.parametrize("native_stats", [True, False], ids=["kernel", "torch"])
def test_a_layer_unfrozen_after_registration_has_its_gradient_read(tmp_path, native_stats: bool) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    model[0].requires_grad_(False)
    opt = torch.optim.SGD(model[2].parameters(), lr=0.1)  # built over the head only, as at the start
    uri = f"file://{tmp_path}"
    with tg.Hook(uri, save_interval=1, native_stats=native_stats) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for step in range(9):
            if step == 3:
                model[0].requires_grad_(True)  # unfrozen, not added to the optimizer
            if step == 6:
                model[0].requires_grad_(False)  # frozen again: its .grad stays, stale
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(torch.randn(16, 8)), torch.randint(0, 3, (16,)))
            loss.backward()
            opt.step()
            hook.record_scalar("loss", loss)
    run = trainguard.open_run(uri)
    assert model[0].weight.grad is not None  # left over from steps 3-5
    assert run.series("grad/0.weight", "l2").steps.tolist() == [3, 4, 5]
    assert (run.series("grad/0.weight", "l2").values > 0).all()
    assert run.series("grad/2.weight", "l2").steps.tolist() == list(range(9))
