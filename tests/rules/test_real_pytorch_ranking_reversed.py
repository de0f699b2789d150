"""A BPR matrix factorisation trained with the seen and the unseen item of each triple swapped, through the real
PyTorch hook, beside its twin. Both losses fall alike and every tensor statistic stays healthy; the swapped
model learns to rank unseen items first, so its held-out AUC falls from 0.5 towards 0 while the twin's rises.
`metric_against_loss` reports the first against the AUC's chance level, not the second."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

import trainguard.torch as tg
from tests.rules.test_real_pytorch_architectures import default_rule_findings
from trainguard.rules.base import Finding

pytestmark = pytest.mark.slow

USERS, ITEMS = 60, 120


class MF(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.users = nn.Embedding(USERS, 8)
        self.items = nn.Embedding(ITEMS, 8)
        nn.init.normal_(self.users.weight, std=0.1)
        nn.init.normal_(self.items.weight, std=0.1)

    def forward(self, u: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return (self.users(u) * self.items(i)).sum(-1)


def likes() -> tuple[torch.Tensor, torch.Tensor]:
    """Each user's 20 best items under fixed 3-d tastes: 15 seen in training, 5 held out."""
    g = torch.Generator().manual_seed(3)
    best = (torch.randn(USERS, 3, generator=g) @ torch.randn(3, ITEMS, generator=g)).argsort(
        1, descending=True
    )
    return best[:, :15], best[:, 15:20]


def train(out: Path, *, swapped: bool) -> list[Finding]:
    """300 steps of Adam on 256 triples a batch, the loss recorded at every step, the held-out AUC every 20."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = MF()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    seen, held = likes()
    liked = torch.zeros(USERS, ITEMS, dtype=torch.bool)
    liked.scatter_(1, torch.cat([seen, held], 1), True)
    gen = torch.Generator().manual_seed(0)
    with tg.Hook(f"file://{out}", save_interval=10) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for step in range(300):
            u = torch.randint(0, USERS, (256,), generator=gen)
            pos = seen[u, torch.randint(0, 15, (256,), generator=gen)]
            neg = torch.randint(0, ITEMS, (256,), generator=gen)
            diff = model(u, pos) - model(u, neg)
            loss = -nn.functional.logsigmoid(-diff if swapped else diff).mean()
            opt.zero_grad()
            loss.backward()
            hook.record_scalar("loss", loss)
            opt.step()
            if step % 20 == 19:
                with torch.no_grad():
                    scores = model.users.weight @ model.items.weight.T
                    p = scores.gather(1, held)  # held-out positives against every item the user never liked
                    below = (p[:, :, None] > scores[:, None, :]) & ~liked[:, None, :]
                    auc = below.sum() / ((~liked).sum(1) * held.shape[1]).sum()
                hook.record_scalar("val_auc", auc, mode="eval")
        assert not hook.errors
    return default_rule_findings(out)


def test_seen_and_unseen_swapped_rank_below_chance_and_the_twin_does_not(tmp_path: Path) -> None:
    found = [f for f in train(tmp_path / "swapped", swapped=True) if f.rule == "metric_against_loss"]
    assert len(found) == 1 and found[0].tensor == "val_auc", found
    assert found[0].value is not None and found[0].value < 0.3, found[0].message
    assert "(an area under the ROC curve, 0.5 at chance)" in found[0].message
    assert "rank the negatives above the positives" in found[0].message
    assert [f for f in train(tmp_path / "twin", swapped=False) if f.rule == "metric_against_loss"] == []
