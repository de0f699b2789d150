"""The hook records each optimizer's parameter groups through real PyTorch: members, hyperparameters, changes."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

import trainguard
import trainguard.torch as tg


def test_groups_members_hyperparameters_and_their_changes_are_recorded(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    extra = nn.Linear(2, 1)  # unfrozen later: its group is added mid-run
    uri = (tmp_path / "run").as_uri()
    with tg.Hook(uri, save_interval=5, run_id="groups") as hook:
        hook.register_module(model)
        hook.register_module(extra)
        opt = torch.optim.SGD(
            [{"params": model[0].parameters(), "lr": 0.0}, {"params": model[2].parameters()}],
            lr=0.1,
            momentum=0.9,
            weight_decay=1e-4,
        )
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
        hook.register_optimizer(opt)
        x, y = torch.randn(16, 4), torch.randn(16, 1)
        for step in range(30):
            if step == 12:
                opt.add_param_group({"params": extra.parameters(), "lr": 0.01})
            opt.zero_grad()
            loss = nn.functional.mse_loss(extra(model(x)), y)
            loss.backward()
            opt.step()
            sched.step()
            hook.record_scalar("loss", loss)
        assert hook.errors == []
    run = trainguard.open_run(uri)
    groups = {g.key: g for g in run.optimizer_groups()}
    assert sorted(groups) == ["0.0", "0.1", "0.2"]
    assert [g.optimizer for g in groups.values()] == ["SGD"] * 3
    assert sorted(groups["0.0"].tensors) == ["0.bias", "0.weight"]
    assert sorted(groups["0.1"].tensors) == ["2.bias", "2.weight"]
    assert len(groups["0.2"].tensors) == 2 and not set(groups["0.2"].tensors) & {"0.weight", "2.weight"}
    # the frozen group: lr 0 written once (it never changes: the schedule halves 0)
    lr0 = groups["0.0"].hyperparameters["lr"]
    assert (lr0.steps.tolist(), lr0.values.tolist()) == ([0], [0.0])
    # the trained group: written at step 0, then at the first saved step after each change (steps 10, 20)
    lr1 = groups["0.1"].hyperparameters["lr"]
    assert (lr1.steps.tolist(), lr1.values.tolist()) == ([0, 10, 20], [0.1, 0.05, 0.025])
    assert groups["0.1"].hyperparameters["initial_lr"].values.tolist() == [0.1]
    assert groups["0.1"].hyperparameters["momentum"].values.tolist() == [0.9]
    assert groups["0.1"].hyperparameters["nesterov"].values.tolist() == [0.0]
    assert groups["0.1"].hyperparameters["weight_decay"].values.tolist() == [1e-4]
    assert "eps" not in groups["0.1"].hyperparameters  # SGD has none
    # the group added at step 12 is recorded from the next saved step on, its scheduler lr from step 20
    lr2 = groups["0.2"].hyperparameters["lr"]
    assert (lr2.steps.tolist(), lr2.values.tolist()) == ([15, 20], [0.01, 0.005])


def test_adam_eps_and_betas_are_recorded(tmp_path: Path) -> None:
    model = nn.Linear(3, 1)
    uri = (tmp_path / "run").as_uri()
    with tg.Hook(uri, save_interval=2, run_id="adam") as hook:
        hook.register_module(model)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.8, 0.95), eps=1.0)
        hook.register_optimizer(opt)
        for _ in range(4):
            opt.zero_grad()
            model(torch.randn(8, 3)).pow(2).mean().backward()
            opt.step()
    (group,) = trainguard.open_run(uri).optimizer_groups()
    h = {k: s.values.tolist() for k, s in group.hyperparameters.items()}
    assert group.optimizer == "Adam" and sorted(group.tensors) == ["bias", "weight"]
    assert h["eps"] == [1.0] and h["beta1"] == [0.8] and h["beta2"] == [0.95] and h["lr"] == [1e-3]
