"""Image and anomaly scripts of the eighth blind split: an ESPCN-style super-resolution network with a
PixelShuffle head, and a Deep SVDD anomaly detector.

`superres`: three convolutions on a half-resolution texture, the last with 4 channels rearranged by
`F.pixel_shuffle` into the full-resolution image, added to a bilinear upsampling of the input; MSE; the learning
rate follows a hand-written linear warm-up then cosine decay set on the optimizer's groups; scored by R^2 of
held-out full-resolution images. `svdd`: a bias-free MLP mapping machine readings to 8 features, trained to pull
normal readings towards a centre fixed from the untrained network's mean output (Deep SVDD, one-class); scored
by the AUC of the distance to the centre on held-out normal and off-regime readings. Bugs: the schedule's factor
multiplied into the rate instead of setting it, the output clamped to [0, 1] although the images span [-1, 1],
the sub-pixel channels reshaped by `view` instead of `pixel_shuffle`, bias terms left in the SVDD network, the
normal class selected with the anomaly label, the centre put at the origin.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind8 import data
from benchmarks.detection.torch_real.loop import make_optimizer


class ESPCN(nn.Module):
    def __init__(self, width: int, *, reshape_bug: bool = False) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, width, 5, padding=2), nn.Tanh(), nn.Conv2d(width, width, 3, padding=1), nn.Tanh()
        )
        self.head = nn.Conv2d(width, 4, 3, padding=1)
        self.reshape_bug = reshape_bug

    def forward(self, lr: torch.Tensor) -> torch.Tensor:
        sub = self.head(self.body(lr))
        n, _, h, w = sub.shape
        up = sub.view(n, 1, 2 * h, 2 * w) if self.reshape_bug else F.pixel_shuffle(sub, 2)
        return up + F.interpolate(lr, scale_factor=2, mode="bilinear", align_corners=False)


def superres(run: Run) -> None:
    """2x super-resolution of 16 x 16 textures: width `width` (32), Adam (lr `lr`, 2e-3), AdamW, NAdam or Nesterov
    SGD (`opt`), batch `batch` (32), warm-up over `warmup` (20) steps then cosine decay to 0. Scored by R^2 of
    held-out full-resolution images."""
    g = torch.Generator().manual_seed(run.seed)
    hr = data.textures(g, 2400)
    lr_img = data.low_resolution(hr)
    hv, lv, hr, lr_img = hr[:400], lr_img[:400], hr[400:], lr_img[400:]
    torch.manual_seed(run.seed)
    model = ESPCN(run.k("width", 32), reshape_bug=run.bug == "subpixel_channels_reshaped_by_view")
    name, base = run.k("opt", "adam"), run.k("lr", 2e-3)
    opt = make_optimizer(name, model.parameters(), base, weight_decay=1e-4 if name == "adamw" else 0.0)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    batch, warmup = run.k("batch", 32), run.k("warmup", 20)

    def predict(x: torch.Tensor) -> torch.Tensor:
        out = model(x)
        return out.clamp(0, 1) if run.bug == "output_clamped_to_unit_range" else out

    for step in range(run.steps):
        if step < warmup:
            factor = (step + 1) / warmup
        else:
            factor = 0.5 * (1 + math.cos(math.pi * (step - warmup) / (run.steps - warmup)))
        for group in opt.param_groups:
            if run.bug == "schedule_factor_multiplied_into_lr":
                group["lr"] *= factor
            else:
                group["lr"] = base * factor
        i = run.indices(len(hr), batch)
        loss = F.mse_loss(predict(lr_img[i]), hr[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", lambda: r2(predict(lv), hv)):
            break


def svdd(run: Run) -> None:
    """Deep SVDD on machine readings (12 -> 32 -> 16 -> 8, leaky ReLU, no biases): the centre is the untrained
    network's mean feature over the training readings (entries within 0.01 of zero pushed to +-0.01); loss: the
    mean squared distance to it; Adam (lr `lr`, 1e-3, weight decay 1e-5), Adamax, RAdam or Adadelta (`opt`), batch
    `batch` (128). Trained on the normal readings only; scored by the AUC of the distance on held-out readings of
    both kinds."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.machine_readings(g, 6000)
    xv, yv, x, y = x[:1500], y[:1500], x[1500:], y[1500:]
    normal = x[y == 1] if run.bug == "normal_class_selected_with_anomaly_label" else x[y == 0]
    torch.manual_seed(run.seed)
    bias = run.bug == "bias_terms_left_in_network"
    model = nn.Sequential(nn.Linear(12, 32, bias=bias), nn.LeakyReLU(), nn.Linear(32, 16, bias=bias),
                          nn.LeakyReLU(), nn.Linear(16, 8, bias=bias))  # fmt: skip
    with torch.no_grad():
        centre = model(normal).mean(0)
        centre = torch.where(centre.abs() < 0.01, torch.full_like(centre, 0.01).copysign(centre), centre)
    if run.bug == "centre_at_origin":
        centre = torch.zeros(8)
    name = run.k("opt", "adam")
    lr = 1.0 if name == "adadelta" else run.k("lr", 1e-3)
    opt = make_optimizer(name, model.parameters(), lr, weight_decay=1e-5)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    batch = run.k("batch", 128)

    def score() -> float:
        return auc(((model(xv) - centre) ** 2).sum(1), yv.float())

    for step in range(run.steps):
        xb = normal[run.indices(len(normal), batch)]
        loss = ((model(xb) - centre) ** 2).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", score):
            break
