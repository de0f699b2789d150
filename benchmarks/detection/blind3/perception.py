"""Perception scripts of the third blind split: a squeeze-and-excitation CNN, a SimSiam self-supervised encoder,
a transformer sequence classifier trained with gradient accumulation under bf16 autocast.

`se_cnn`: two conv stages, each with a squeeze-and-excitation gate, on texture images; SGD with Nesterov momentum
and cosine annealing with warm restarts, or ASGD; scored by accuracy. `simsiam`: two augmented views (crop shift,
flip, noise, contrast) through a conv encoder, a projector and a predictor, negative cosine with a stop-gradient
on the target branch; scored by the 1-NN accuracy of the encoder's features on held-out
images against a labelled bank. `transformer_accum`: a two-layer encoder over tokens with learned positions, 4 micro-batches of 8
accumulated per step, bf16 autocast, AdamW with a warmup; scored by accuracy. Bugs: loss.backward() twice with
retain_graph, the learning rate read from a config string, the stop-gradient on the predictor branch, zero_grad
never called between accumulated steps.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind2.data import textures
from benchmarks.detection.blind3 import data
from benchmarks.detection.blind3.harness import close_step

CONFIG = {"lr": "5e-2", "momentum": "0.9"}
"""The CNN's hyper-parameters as a YAML 1.1 loader returns them from `lr: 5e-2` (a string, not a float)."""


class SEBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, reduction: int = 4) -> None:
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU())
        self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c_out, c_out // reduction),
                                nn.ReLU(), nn.Linear(c_out // reduction, c_out), nn.Sigmoid())  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv(x)
        return F.max_pool2d(h * self.se(h)[:, :, None, None], 2)


def se_cnn(run: Run) -> None:
    """A squeeze-and-excitation CNN on 16x16 textures (4 classes): SGD with Nesterov momentum (lr from the config,
    0.05) and CosineAnnealingWarmRestarts (T_0 100), or ASGD (lr 0.05), batch 32. Scored by held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = textures(g, 1500, noise=2.2)
    xv, yv, x, y = x[:500], y[:500], x[500:], y[500:]
    torch.manual_seed(run.seed)
    model = nn.Sequential(SEBlock(1, 12), SEBlock(12, 24), nn.Flatten(), nn.Linear(24 * 16, 4))
    if run.bug == "lr_string_falls_back_to_default":
        # the bug: "not a float" read as "not set", and the fallback is the default for another optimizer
        lr = CONFIG["lr"] if isinstance(CONFIG["lr"], float) else 1.0
    else:
        lr = float(CONFIG["lr"])
    if run.k("opt", "nesterov") == "asgd":
        opt: torch.optim.Optimizer = torch.optim.ASGD(model.parameters(), lr=lr, t0=100)
        sched = None
    else:
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=float(CONFIG["momentum"]), nesterov=True)
        sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=100)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = run.indices(len(y), 32)
        loss = F.cross_entropy(model(x[i]), y[i])
        opt.zero_grad()
        if run.bug == "backward_twice_retain_graph":
            # the bug: a backward for a logged "grad norm" and the real one, both accumulating into .grad
            loss.backward(retain_graph=True)
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_acc", lambda: accuracy(model(xv), yv)):
            break


def augment(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """A random view: a shift by up to 3 pixels (wrapped), a horizontal flip, a contrast change, noise."""
    dx, dy = (int(v) for v in torch.randint(-3, 4, (2,), generator=g))
    v = torch.roll(x, (dy, dx), (2, 3))
    flip = torch.rand(len(x), 1, 1, 1, generator=g) < 0.5
    v = torch.where(flip, v.flip(3), v)
    return v * (0.7 + 0.6 * torch.rand(len(x), 1, 1, 1, generator=g)) + 0.3 * torch.randn(
        v.shape, generator=g
    )


def simsiam(run: Run) -> None:
    """SimSiam on unlabelled textures: conv encoder, 2-layer projector with BatchNorm, bottleneck predictor, the
    symmetric negative cosine with a stop-gradient on the projections, SGD (lr 0.05, momentum 0.9, decay 1e-4),
    batch 64. Scored by 1-NN accuracy of held-out images against a labelled bank, by encoder features."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = textures(g, 3000, noise=2.0)
    bank_x, bank_y, test_x, test_y, x = x[:400], y[:400], x[400:800], y[400:800], x[800:]
    torch.manual_seed(run.seed)
    encoder = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                            nn.Flatten())  # fmt: skip
    projector = nn.Sequential(
        nn.Linear(32, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 64), nn.BatchNorm1d(64)
    )
    predictor = nn.Sequential(nn.Linear(64, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 64))
    model = nn.ModuleDict({"encoder": encoder, "projector": projector, "predictor": predictor})
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def one_nn() -> float:
        fb, ft = F.normalize(encoder(bank_x), dim=1), F.normalize(encoder(test_x), dim=1)
        return float((bank_y[(ft @ fb.T).argmax(1)] == test_y).float().mean())

    def negcos(p: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        if run.bug == "stop_gradient_on_predictor_branch":
            return -F.cosine_similarity(p.detach(), z, dim=1).mean()  # the bug: detach on the wrong branch
        return -F.cosine_similarity(p, z.detach(), dim=1).mean()

    for step in range(run.steps):
        b = x[run.indices(len(x), 64)]
        z1, z2 = projector(encoder(augment(b, run.gen))), projector(encoder(augment(b, run.gen)))
        p1, p2 = predictor(z1), predictor(z2)
        loss = 0.5 * (negcos(p1, z2) + negcos(p2, z1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_knn_acc", one_nn):
            break


class SeqClassifier(nn.Module):
    def __init__(self, vocab: int = 40, length: int = 16, d: int = 24, classes: int = 4) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, length, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, 4, 48, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(d, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.tok(x) + self.pos).mean(1))


def transformer_accum(run: Run) -> None:
    """A transformer classifier of token sequences (a class's motif somewhere in 16 tokens): 4 micro-batches of 8
    accumulated per optimizer step (the loss divided by 4), bf16 autocast on CPU, AdamW (lr 2e-3) or SGD with
    momentum (lr 0.1), linear warmup over 20 steps. Scored by held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.motif_sequences(g, 5000, length=16)
    xv, yv, x, y = x[:600], y[:600], x[600:], y[600:]
    torch.manual_seed(run.seed)
    model = SeqClassifier()
    sgd = run.k("opt", "adamw") == "sgd"
    opt = (torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if sgd
           else torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01))  # fmt: skip
    sched = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.05, total_iters=20)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    accum = 4
    opt.zero_grad()
    for step in range(run.steps):
        total = torch.zeros(())
        for _ in range(accum):
            i = run.indices(len(y), 8)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = F.cross_entropy(model(x[i]), y[i]) / accum
            loss.backward()
            total += loss.detach().float()
        opt.step()
        sched.step()
        if run.bug != "accumulation_never_zeroed":  # the bug: zero_grad only once, before the loop
            opt.zero_grad()
        if not close_step(run, step, total, model, "val_acc", lambda: accuracy(model(xv), yv)):
            break
