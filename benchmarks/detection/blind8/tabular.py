"""Tabular scripts of the eighth blind split: a deep-and-cross network on click logs with per-group learning
rates, and an MLP classifier on noisy labels under a hand-written SAM or Lookahead wrapper.

`dcn`: embeddings of four categorical fields and the log1p of five raw counts, standardised with the training
set's statistics, form x0; three cross layers x_{l+1} = x0 * (x_l . w_l) + b_l + x_l beside a two-layer ReLU MLP,
both concatenated into a logit; BCE; the embeddings and the rest in two parameter groups with their own rates,
built from one pass over `named_parameters()`; scored by the AUC of held-out clicks. `sharpness`: a 20-64-64-5
MLP on labels with 20% noise, trained with cross-entropy under sharpness-aware minimisation written inline
(gradient at w + rho g / |g|, then the base step at w) or under Lookahead written inline (slow weights pulled
towards the fast ones every k steps, the fast reset to them); scored by accuracy on clean held-out labels. Bugs:
the two groups built from one exhausted `named_parameters()` generator, the cross term taken with x_l instead of
x0, the raw counts fed without the log transform, SAM's perturbation left in the weights, Lookahead's
interpolation written backwards.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind8 import data
from benchmarks.detection.torch_real.loop import make_optimizer


class DeepCross(nn.Module):
    def __init__(self, dim: int, *, cross_previous: bool = False) -> None:
        super().__init__()
        self.embeddings = nn.ModuleList(nn.Embedding(40, dim) for _ in range(4))
        width = 4 * dim + 5
        self.cross_w = nn.ParameterList(nn.Parameter(torch.randn(width) / width**0.5) for _ in range(3))
        self.cross_b = nn.ParameterList(nn.Parameter(torch.zeros(width)) for _ in range(3))
        self.deep = nn.Sequential(nn.Linear(width, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU())
        self.out = nn.Linear(width + 32, 1)
        self.cross_previous = cross_previous

    def forward(self, cat: torch.Tensor, dense: torch.Tensor) -> torch.Tensor:
        x0 = torch.cat([emb(cat[:, k]) for k, emb in enumerate(self.embeddings)] + [dense], 1)
        x = x0
        for w, b in zip(self.cross_w, self.cross_b, strict=True):
            x = (x if self.cross_previous else x0) * (x @ w)[:, None] + b + x
        return self.out(torch.cat([x, self.deep(x0)], 1))[:, 0]


def dcn(run: Run) -> None:
    """A deep-and-cross click model: embedding size `dim` (8), Adam (`opt`; or Adagrad, AdamW, Adamax) with rate
    `emb_lr` (1e-2) on the embeddings and `lr` (1e-3) on the rest, batch `batch` (256). Scored by the AUC of
    held-out clicks."""
    g = torch.Generator().manual_seed(run.seed)
    cat, counts, y = data.clicks(g, 24000)
    if run.bug == "raw_counts_without_log_transform":
        dense = counts
    else:
        dense = torch.log1p(counts)
        mean, std = dense[4000:].mean(0), dense[4000:].std(0)
        dense = (dense - mean) / std
    cv, dv, yv, cat, dense, y = cat[:4000], dense[:4000], y[:4000], cat[4000:], dense[4000:], y[4000:]
    torch.manual_seed(run.seed)
    model = DeepCross(run.k("dim", 8), cross_previous=run.bug == "cross_term_uses_previous_layer")
    if run.bug == "param_groups_from_one_generator":
        named = model.named_parameters()
        emb = [p for n, p in named if n.startswith("embeddings")]
        rest = [p for n, p in named if not n.startswith("embeddings")]
    else:
        emb = [p for n, p in model.named_parameters() if n.startswith("embeddings")]
        rest = [p for n, p in model.named_parameters() if not n.startswith("embeddings")]
    name = run.k("opt", "adam")
    opt = make_optimizer(name, [{"params": emb, "lr": run.k("emb_lr", 1e-2)}, {"params": rest}], run.k("lr", 1e-3),
                         weight_decay=1e-4 if name == "adamw" else 0.0)  # fmt: skip
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    batch = run.k("batch", 256)
    for step in range(run.steps):
        i = run.indices(len(y), batch)
        loss = F.binary_cross_entropy_with_logits(model(cat[i], dense[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", lambda: auc(model(cv, dv), yv)):
            break


def _sam_step(
    model: nn.Module,
    opt: torch.optim.Optimizer,
    loss_of: Callable[[], torch.Tensor],
    rho: float,
    *,
    restore: bool,
) -> torch.Tensor:
    """One SAM step: the gradient at the ascent point w + rho g / |g|, applied from w (or, `restore` False, from the
    ascent point)."""
    loss = loss_of()
    opt.zero_grad()
    loss.backward()
    params = [p for p in model.parameters() if p.grad is not None]
    norm = torch.norm(torch.stack([p.grad.norm() for p in params]))
    with torch.no_grad():
        shifts = [rho * p.grad / (norm + 1e-12) for p in params]
        for p, e in zip(params, shifts, strict=True):
            p.add_(e)
    opt.zero_grad()
    loss_of().backward()
    if restore:
        with torch.no_grad():
            for p, e in zip(params, shifts, strict=True):
                p.sub_(e)
    opt.step()
    return loss


def sharpness(run: Run) -> None:
    """An MLP on noisy five-class labels: `wrapper` "sam" (rho `rho`, 0.05, around the base optimizer) or
    "lookahead" (k 5, alpha 0.5); base SGD with momentum (`opt` "momentum", lr `lr`, 0.05), Adam, RAdam or NAdam;
    batch `batch` (128). Scored by accuracy on clean held-out labels."""
    g = torch.Generator().manual_seed(run.seed)
    x, y, clean = data.noisy_classes(g, 6000)
    xv, yv, x, y = x[:1000], clean[:1000], x[1000:], y[1000:]
    torch.manual_seed(run.seed)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 5))
    name = run.k("opt", "momentum")
    opt = make_optimizer(name, model.parameters(), run.k("lr", 0.05 if name == "momentum" else 1e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    wrapper, batch = run.k("wrapper", "sam"), run.k("batch", 128)
    slow = [p.detach().clone() for p in model.parameters()]
    for step in range(run.steps):
        i = run.indices(len(y), batch)

        def loss_of(i: torch.Tensor = i) -> torch.Tensor:
            return F.cross_entropy(model(x[i]), y[i])

        if wrapper == "sam":
            loss = _sam_step(
                model, opt, loss_of, run.k("rho", 0.05), restore=run.bug != "sam_perturbation_not_undone"
            )
        else:
            loss = loss_of()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if (step + 1) % 5 == 0:
                with torch.no_grad():
                    for s, p in zip(slow, model.parameters(), strict=True):
                        if run.bug == "lookahead_interpolation_backwards":
                            s.add_(0.5 * (s - p))
                        else:
                            s.add_(0.5 * (p - s))
                        p.copy_(s)
        if not close_step(run, step, loss, model, "val_acc", lambda: accuracy(model(xv), yv)):
            break
