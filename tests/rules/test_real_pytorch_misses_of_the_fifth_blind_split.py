"""Two mistakes of the fifth blind split's programs, trained through the real hook and judged by the default rules,
each beside its fixed twin, which must get no such finding:

- a hand-written loss scale whose gradients are never divided back: the first update multiplies the weights'
  norm (measured from the initial-weights record, one update before step 0's weights), then the loss turns NaN
  and the scaler skips every step after it, so the step count stops and every NaN loss lies between saved steps;
- hashed ids taken modulo 1: every lookup of the embedding tables reads row 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

import trainguard.torch as tg
from tests.rules.test_real_pytorch_architectures import default_rule_findings
from trainguard.rules.base import Finding

pytestmark = pytest.mark.slow


def points(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """16 features, 4 classes set by a fixed random projection."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g)
    return x, (x @ torch.randn(16, 4, generator=torch.Generator().manual_seed(7))).argmax(1)


def loss_scaled(out: Path, *, unscale: bool, steps: int = 40) -> list[Finding]:
    """An MLP classifier under a hand-written loss scale of 1024 (a step skipped on non-finite gradients), SGD at lr
    0.05 with momentum 0.9, the loss recorded at every step, statistics saved every 10th."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x, y = points(2000, 1)
    gen = torch.Generator().manual_seed(0)
    scale = 1024.0
    with tg.Hook(f"file://{out}", save_interval=10) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(steps):
            i = torch.randint(0, len(x), (32,), generator=gen)
            loss = nn.functional.cross_entropy(model(x[i]), y[i])
            opt.zero_grad()
            (loss * scale).backward()
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            if unscale:
                for g in grads:
                    g.div_(scale)
            hook.record_scalar("loss", loss)
            if all(torch.isfinite(g).all() for g in grads):
                opt.step()
            else:
                scale /= 2
        assert not hook.errors
    return default_rule_findings(out)


def test_gradients_never_unscaled_blow_the_weights_up_at_the_first_step_and_the_nan_loss_is_found_at_once(
    tmp_path: Path,
) -> None:
    found = loss_scaled(tmp_path / "bug", unscale=False)
    blow_up = [f for f in found if f.rule == "weight_update_ratio"]
    assert blow_up and blow_up[0].step == 0 and "in 1 step at step 0" in blow_up[0].message
    nan = [f for f in found if f.rule == "exploding_tensor"]
    assert nan and "loss (train scalar) is nan" in nan[0].message
    assert nan[0].step % 10 != 0  # a step between saved steps: no saved step ever came after it
    twin = loss_scaled(tmp_path / "twin", unscale=True)
    assert not [f for f in twin if f.rule in ("weight_update_ratio", "exploding_tensor")]


class WideDeep(nn.Module):
    """A wide linear part and a deep MLP over 8-d embeddings of 5 hashed categorical fields."""

    def __init__(self, buckets: int = 200) -> None:
        super().__init__()
        self.wide = nn.Embedding(buckets, 1)
        self.emb = nn.Embedding(buckets, 8)
        self.deep = nn.Sequential(nn.Linear(40, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.wide(ids).sum((1, 2)) + self.deep(self.emb(ids).flatten(1))[:, 0]


def hashed_ctr(out: Path, *, modulo: int, steps: int = 80) -> list[Finding]:
    """Clicks that depend on 5 categorical fields of 50 values each, hashed into 200 buckets (`modulo`: the
    divisor the hash is taken by), BCE with logits, Adam at lr 1e-2, batch 128, saved every 10th step."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    cat = torch.randint(0, 50, (4000, 5), generator=g)
    click = ((cat % 7).sum(1) > 15).float()
    ids = (cat * 7919 + torch.arange(5) * 1_000_003) % modulo
    model = WideDeep()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(0)
    with tg.Hook(f"file://{out}", save_interval=10) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(steps):
            i = torch.randint(0, len(ids), (128,), generator=gen)
            loss = nn.functional.binary_cross_entropy_with_logits(model(ids[i]), click[i])
            opt.zero_grad()
            loss.backward()
            hook.record_scalar("loss", loss)
            opt.step()
        assert not hook.errors
    return default_rule_findings(out)


def test_hashed_ids_taken_modulo_one_read_one_row_of_the_tables(tmp_path: Path) -> None:
    found = [f for f in hashed_ctr(tmp_path / "bug", modulo=1) if f.rule == "collapsed_lookup"]
    assert [f.step for f in found] == [40]
    assert found[0].tensor == "wide.weight" and "(and emb.weight)" in found[0].message
    assert not [f for f in hashed_ctr(tmp_path / "twin", modulo=200) if f.rule == "collapsed_lookup"]
