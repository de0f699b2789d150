"""A next-token model trained with its targets not shifted against its inputs (each token's target is itself)
through the real PyTorch hook, beside its twin trained on the next token. The unshifted run's cross-entropy falls
to nearly 0 (it learns to copy), which guarantees a training accuracy near 1, while its held-out next-token
accuracy stays far below; the twin's loss stays near the source's entropy and guarantees nothing.
`accuracy_gap` reports the first, not the second."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

import trainguard.torch as tg
from tests.rules.test_real_pytorch_architectures import default_rule_findings
from trainguard.rules.base import Finding

pytestmark = pytest.mark.slow

VOCAB = 8


def walks(n: int, seed: int, length: int = 16) -> torch.Tensor:
    """Token sequences of a Markov source: the next token is a fixed permutation of this one, or (1 in 5) any."""
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(VOCAB, generator=torch.Generator().manual_seed(7))
    x = torch.empty(n, length, dtype=torch.long)
    x[:, 0] = torch.randint(0, VOCAB, (n,), generator=g)
    for t in range(1, length):
        noise = torch.randint(0, VOCAB, (n,), generator=g)
        x[:, t] = torch.where(torch.rand(n, generator=g) < 0.8, perm[x[:, t - 1]], noise)
    return x


def train(out: Path, *, shift: int) -> list[Finding]:
    """300 steps of Adam on 32 sequences a batch, the loss recorded at every step, held-out accuracy every 20."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(VOCAB, 32), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, VOCAB))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    x, vx = walks(2000, 1), walks(200, 2)
    gen = torch.Generator().manual_seed(0)
    with tg.Hook(f"file://{out}", save_interval=10) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for step in range(300):
            seq = x[torch.randint(0, len(x), (32,), generator=gen)]
            inputs, targets = seq[:, :-1], seq[:, shift:][:, : seq.shape[1] - 1]
            loss = nn.functional.cross_entropy(model(inputs).reshape(-1, VOCAB), targets.reshape(-1))
            opt.zero_grad()
            loss.backward()
            hook.record_scalar("loss", loss)
            opt.step()
            if step % 20 == 19:
                with torch.no_grad():
                    acc = (model(vx[:, :-1]).argmax(-1) == vx[:, 1:]).float().mean()
                hook.record_scalar("val_next_token_acc", acc, mode="eval")
        assert not hook.errors
    return default_rule_findings(out)


def test_targets_not_shifted_are_reported_and_the_twin_is_not(tmp_path: Path) -> None:
    found = [f for f in train(tmp_path / "unshifted", shift=0) if f.rule == "accuracy_gap"]
    assert len(found) == 1 and found[0].tensor == "val_next_token_acc"
    assert found[0].value is not None and found[0].threshold is not None
    assert found[0].threshold - found[0].value > 0.5, found[0].message
    assert [f for f in train(tmp_path / "twin", shift=1) if f.rule == "accuracy_gap"] == []
