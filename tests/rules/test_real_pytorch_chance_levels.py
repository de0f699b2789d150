"""Three mistakes of the fourth blind split, trained through the real hook and judged by the default rules: a dual
encoder whose images and captions are drawn by two separately shuffled loaders (the contrastive loss falls from
its start to ln(batch), which the rule reads off the recorded inputs' batch dimension, and stays); a language
model whose targets are its inputs (the training loss falls to nearly 0 by copying while the recorded eval
accuracy stays at chance); and an EMA teacher whose update rebinds the loop variable (its recorded accuracy reads the
same at every eval point while the student's loss falls). Each beside its fixed twin, which must get no such
finding."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import trainguard.torch as tg
from tests.rules.test_real_pytorch_architectures import default_rule_findings
from trainguard.rules.base import Finding

pytestmark = pytest.mark.slow


class DualEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.image = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))
        self.text = nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Linear(32, 16))

    def forward(self, img: torch.Tensor, txt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return F.normalize(self.image(img), dim=-1), F.normalize(self.text(txt), dim=-1)


def train_clip(out: Path, *, apart: bool) -> list[Finding]:
    """Paired views (a caption is a fixed projection of its image, under noise); a symmetric InfoNCE loss at a
    fixed temperature 0.07 over batches of 32, Adam (lr 3e-3), 200 steps saved every 10."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    img = torch.randn(2000, 16, generator=g)
    txt = img @ torch.randn(16, 12, generator=g) + 0.3 * torch.randn(2000, 12, generator=g)
    model = DualEncoder()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    with tg.Hook(f"file://{out}", save_interval=10) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(200):
            i = torch.randint(0, len(img), (32,), generator=g)
            j = (
                torch.randint(0, len(txt), (32,), generator=g) if apart else i
            )  # the bug: two shuffled loaders
            a, b = model(img[i], txt[j])
            sim = a @ b.T / 0.07
            labels = torch.arange(32)
            loss = (F.cross_entropy(sim, labels) + F.cross_entropy(sim.T, labels)) / 2
            opt.zero_grad()
            loss.backward()
            hook.record_scalar("loss", loss)
            opt.step()
        assert not hook.errors
    return default_rule_findings(out)


def test_images_and_captions_shuffled_apart_leave_the_contrastive_loss_at_ln_batch(tmp_path: Path) -> None:
    words = "chance level for an in-batch contrastive loss over 32 pairs"
    found = [f for f in train_clip(tmp_path / "apart", apart=True) if words in f.message]
    assert [f.rule for f in found] == ["loss_not_decreasing"], found
    assert f"ln 32 = {math.log(32):.3g}" in found[0].message
    assert not [f for f in train_clip(tmp_path / "paired", apart=False) if f.rule == "loss_not_decreasing"]


def train_lm(out: Path, *, shifted: bool) -> list[Finding]:
    """A bigram language model (an embedding and a linear read-out over 16 tokens) on a stream whose next token is
    a fixed derangement of the current one 90% of the time; Adam (lr 1e-2), batches of 8 chunks of 33 tokens, 150
    steps saved every 10, next-token accuracy on a held-out stream recorded every 25 steps."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(2)
    nxt = (torch.arange(16) + 1 + torch.randperm(15, generator=g)[0]) % 16  # a shift: never the token itself

    def stream(n: int) -> torch.Tensor:
        tokens = [0]
        noise = torch.rand(n, generator=g)
        other = torch.randint(0, 16, (n,), generator=g)
        for k in range(n - 1):
            tokens.append(int(nxt[tokens[-1]]) if noise[k] < 0.9 else int(other[k]))
        return torch.tensor(tokens)

    train, val = stream(8000), stream(1001)
    model = nn.Sequential(nn.Embedding(16, 32), nn.Linear(32, 16))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    with tg.Hook(f"file://{out}", save_interval=10) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for step in range(150):
            starts = torch.randint(0, len(train) - 34, (8,), generator=g)
            chunk = torch.stack([train[s : s + 33] for s in starts.tolist()])
            x, y = chunk[:, :-1], (chunk[:, 1:] if shifted else chunk[:, :-1])  # the bug: the input as target
            loss = F.cross_entropy(model(x).reshape(-1, 16), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            hook.record_scalar("loss", loss)
            opt.step()
            if step % 25 == 24:
                with torch.no_grad():
                    acc = (model(val[:-1]).argmax(-1) == val[1:]).float().mean()
                hook.record_scalar("val_accuracy", float(acc), mode="eval")
        assert not hook.errors
    return default_rule_findings(out)


def test_a_language_model_whose_targets_are_its_inputs_predicts_held_out_tokens_at_chance(
    tmp_path: Path,
) -> None:
    words = "has never been more than 10% of the way from chance level 1/16"
    found = [f for f in train_lm(tmp_path / "copying", shifted=False) if words in f.message]
    assert [f.rule for f in found] == ["overfit"], found
    assert found[0].message.startswith("val_accuracy")
    assert not [f for f in train_lm(tmp_path / "shifted", shifted=True) if f.rule == "overfit"]


def train_mean_teacher(out: Path, *, rebinds: bool) -> list[Finding]:
    """A 4-class MLP student (cross-entropy, Adam lr 3e-3, batches of 32, 250 steps saved every 10) and an EMA
    teacher (decay 0.95) whose accuracy on 400 held-out points is recorded every 25 steps."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(3)
    centres = 2.0 * torch.randn(4, 8, generator=g)
    y = torch.randint(0, 4, (2400,), generator=g)
    x = centres[y] + torch.randn(2400, 8, generator=g)
    student = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))
    teacher = copy.deepcopy(student)
    for t in teacher.parameters():
        t.requires_grad_(False)
    opt = torch.optim.Adam(student.parameters(), lr=3e-3)
    with tg.Hook(f"file://{out}", save_interval=10) as hook:
        hook.register_module(student)
        hook.register_optimizer(opt)
        for step in range(250):
            i = torch.randint(400, 2400, (32,), generator=g)
            loss = F.cross_entropy(student(x[i]), y[i])
            opt.zero_grad()
            loss.backward()
            hook.record_scalar("loss", loss)
            opt.step()
            with torch.no_grad():
                for t, s in zip(teacher.parameters(), student.parameters()):
                    if rebinds:
                        t = 0.95 * t + 0.05 * s  # the bug: a new tensor bound to the loop variable
                    else:
                        t.mul_(0.95).add_(s, alpha=0.05)
            if step % 25 == 24:
                with torch.no_grad():
                    acc = (teacher(x[:400]).argmax(-1) == y[:400]).float().mean()
                hook.record_scalar("val_teacher_accuracy", float(acc), mode="eval")
        assert not hook.errors
    return default_rule_findings(out)


def test_an_ema_teacher_that_never_moves_scores_the_same_at_every_eval_point(tmp_path: Path) -> None:
    words = "at all 8 of its records"
    found = [f for f in train_mean_teacher(tmp_path / "rebinds", rebinds=True) if words in f.message]
    assert [f.rule for f in found] == ["metric_against_loss"], found
    assert "chance level 1/4 = 0.25" in found[0].message
    assert not [f for f in train_mean_teacher(tmp_path / "in_place", rebinds=False) if words in f.message]
