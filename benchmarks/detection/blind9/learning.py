"""Learning-setup scripts of the ninth blind split: prototypical networks for few-shot classification, FGSM
adversarial training, and FixMatch-style semi-supervised learning with confident pseudo-labels.

`protonet`: an MLP embeds 5-way 5-shot episodes drawn from 60 training classes; each class's prototype is the
mean embedding of its support examples, logits are negative squared distances of the queries to the prototypes;
scored by the accuracy on 20 fixed episodes of 40 unseen classes. `fgsm`: an MLP classifier on [0, 1]-valued
64-pixel images trained on half clean and half FGSM-perturbed examples (eps 0.1, the perturbation's gradient taken
with the weights' gradients cleared before the update); scored by the accuracy on held-out examples under the same
attack. `fixmatch`: a small MLP with 20 labelled examples and 6000 unlabelled ones; each unlabelled example's
pseudo-label is the prediction on a weakly perturbed view, kept where its confidence passes 0.95, and trains the
prediction on a strongly perturbed view; scored by held-out accuracy. Bugs: the distances not negated, the
prototypes taken from the query set, the perturbation's sign reversed, the budget written in 0-255 pixel units,
the attack's gradient left in the weights' gradients, the confidence threshold left out, the weak and strong views
swapped.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.torch_real.loop import make_optimizer


def _class_means(classes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each class's latent mean float[classes, 8] and the fixed map float[8, 32] to the input space."""
    rg = torch.Generator().manual_seed(911)
    return torch.randn(classes, 8, generator=rg), torch.randn(8, 32, generator=rg) / math.sqrt(8)


def _episode(g: torch.Generator, means: torch.Tensor, mix: torch.Tensor, classes: torch.Tensor, shots: int,
             queries: int) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """Support float[way, shots, 32] and query float[way, queries, 32] examples of the given classes."""
    way = len(classes)
    latent = means[classes][:, None] + 0.9 * torch.randn(way, shots + queries, 8, generator=g)
    x = torch.tanh(latent @ mix) + 0.1 * torch.randn(way, shots + queries, 32, generator=g)
    return x[:, :shots], x[:, shots:]


def protonet(run: Run) -> None:
    """A prototypical network: embedding width `width` (64), Adam (`opt`; or SGD with momentum, RAdam, Adamax) at
    `lr` (1e-3), `way` (5) classes, 5 shots, 10 queries. Scored by the accuracy on unseen classes' episodes."""
    g = torch.Generator().manual_seed(run.seed)
    means, mix = _class_means(100)
    way, width = run.k("way", 5), run.k("width", 64)
    evals = []
    eg = torch.Generator().manual_seed(1000 + run.seed)
    for _ in range(20):
        classes = 60 + torch.randperm(40, generator=eg)[:5]
        evals.append(_episode(eg, means, mix, classes, 5, 10))
    torch.manual_seed(run.seed)
    model = nn.Sequential(
        nn.Linear(32, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 16)
    )
    name = run.k("opt", "adam")
    opt = make_optimizer(name, model.parameters(), run.k("lr", 0.02 if name == "momentum" else 1e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def logits(support: torch.Tensor, query: torch.Tensor, *, training: bool) -> torch.Tensor:
        n = support.shape[0]
        q = model(query.reshape(-1, 32))
        if training and run.bug == "prototypes_from_query_set":
            protos = q.reshape(n, -1, 16).mean(1)
        else:
            protos = model(support.reshape(-1, 32)).reshape(n, -1, 16).mean(1)
        dist = torch.cdist(q, protos) ** 2
        return dist if run.bug == "distances_not_negated" else -dist

    def score() -> float:
        hits = [
            accuracy(logits(s, q, training=False), torch.arange(5).repeat_interleave(10)) for s, q in evals
        ]
        return sum(hits) / len(hits)

    for step in range(run.steps):
        classes = torch.randperm(60, generator=g)[:way]
        support, query = _episode(g, means, mix, classes, 5, 10)
        loss = F.cross_entropy(logits(support, query, training=True), torch.arange(way).repeat_interleave(10))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_acc", score):
            break


def _pictures(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Images float[n, 64] in [0, 1] and labels long[n]: four pixels carry a strong but noisy class signal, the
    other sixty a faint one each."""
    y = torch.randint(0, 2, (n,), generator=g)
    sign = (2 * y - 1).float()[:, None]
    strong = 0.5 + 0.25 * sign + 0.2 * torch.randn(n, 4, generator=g)
    faint = 0.5 + 0.04 * sign + 0.1 * torch.randn(n, 60, generator=g)
    return torch.cat([strong, faint], 1).clamp(0, 1), y


def _fgsm(model: nn.Module, x: torch.Tensor, y: torch.Tensor, eps: float, sign: float = 1.0) -> torch.Tensor:
    x = x.clone().requires_grad_(True)
    F.cross_entropy(model(x), y).backward()
    assert x.grad is not None
    return (x + sign * eps * x.grad.sign()).clamp(0, 1).detach()


def fgsm(run: Run) -> None:
    """FGSM adversarial training of a 64-128-128-2 MLP: Adam (`opt`; or AdamW, Nesterov SGD, NAdam) at `lr` (1e-3),
    batch `batch` (64). Scored by the accuracy on held-out examples under an FGSM attack of budget 0.1."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _pictures(g, 6000)
    xv, yv, x, y = x[:1000], y[:1000], x[1000:], y[1000:]
    torch.manual_seed(run.seed)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 2))
    name = run.k("opt", "adam")
    opt = make_optimizer(name, model.parameters(), run.k("lr", 0.02 if name == "nesterov" else 1e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    batch = run.k("batch", 64)
    eps = 8.0 if run.bug == "epsilon_in_pixel_units" else 0.1
    sign = -1.0 if run.bug == "perturbation_sign_reversed" else 1.0

    def robust() -> float:
        with torch.enable_grad():
            adv = _fgsm(model, xv, yv, 0.1)
        model.zero_grad()
        return accuracy(model(adv), yv)

    for step in range(run.steps):
        i = run.indices(len(y), batch)
        opt.zero_grad()
        adv = _fgsm(model, x[i], y[i], eps, sign)
        if run.bug != "attack_gradient_left_in_weights":
            opt.zero_grad()
        loss = (F.cross_entropy(model(x[i]), y[i]) + F.cross_entropy(model(adv), y[i])) / 2
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_robust_acc", robust):
            break


def _two_spirals(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Points float[n, 2] on two interleaved spirals (slightly noisy) and their spiral labels long[n]."""
    y = torch.randint(0, 2, (n,), generator=g)
    r = torch.rand(n, generator=g) * 0.9 + 0.1
    angle = 3 * math.pi * r + math.pi * y
    x = torch.stack([r * torch.cos(angle), r * torch.sin(angle)], 1)
    return x + 0.03 * torch.randn(n, 2, generator=g), y


def fixmatch(run: Run) -> None:
    """FixMatch-style semi-supervised learning: a 2-`width`-`width`-2 MLP (`width` 64), Adam (`opt`; or AdamW,
    NAdam, RAdam; AdamW with weight decay 1e-2) at `lr` (3e-3), unlabelled weight 1, threshold 0.95. Scored by held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = _two_spirals(g, 8020)
    xl, yl, xv, yv, xu = x[:20], y[:20], x[20:2020], y[20:2020], x[2020:]
    torch.manual_seed(run.seed)
    width = run.k("width", 64)
    model = nn.Sequential(
        nn.Linear(2, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 2)
    )
    name = run.k("opt", "adam")
    opt = make_optimizer(
        name, model.parameters(), run.k("lr", 3e-3), weight_decay=1e-2 if name == "adamw" else 0.0
    )
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        u = xu[run.indices(len(xu), 128)]
        weak = u + 0.01 * torch.randn(u.shape, generator=run.gen)
        strong = u + 0.1 * torch.randn(u.shape, generator=run.gen)
        if run.bug == "weak_and_strong_views_swapped":
            weak, strong = strong, weak
        with torch.no_grad():
            probs = F.softmax(model(weak), 1)
        conf, pseudo = probs.max(1)
        keep = torch.ones_like(conf) if run.bug == "no_confidence_threshold" else (conf > 0.95).float()
        unsup = (F.cross_entropy(model(strong), pseudo, reduction="none") * keep).mean()
        loss = F.cross_entropy(model(xl), yl) + unsup
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_acc", lambda: accuracy(model(xv), yv)):
            break
