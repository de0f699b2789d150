"""Signal and image scripts of the fourth blind split: a SIREN fitting an image from pixel coordinates, a 1-D
U-Net denoiser, a weight-tied denoising autoencoder, a mean-teacher semi-supervised CNN.

`siren`: sine layers (omega_0 30, the SIREN initialisation) fitted to half of an image's pixels; scored by R^2 on
the other half. `unet1d`: a two-level 1-D U-Net (concatenated skips) mapping noisy signed signals to clean ones;
scored by R^2 of the denoised signals. `tied_autoencoder`: one weight matrix for the encoder and (transposed) the
decoder, masking noise on the input, BCE against the clean glyph; scored by how much of the corruption's error it
removes. `mean_teacher`: a small channels-last CNN trained on few labels plus a consistency loss against an EMA
teacher on unlabelled images; scored by the teacher's accuracy. Bugs: omega_0 applied twice, the default initialisation under sine activations, a ReLU on the
denoiser's output, the corrupted input as the target, an EMA loop that rebinds its variable, the EMA decay
inverted.
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind4 import data


class SineLayer(nn.Module):
    def __init__(
        self,
        n_in: int,
        n_out: int,
        *,
        first: bool,
        omega: float = 30.0,
        twice: bool = False,
        init: bool = True,
    ) -> None:
        super().__init__()
        self.linear = nn.Linear(n_in, n_out)
        self.omega = omega
        self.twice = twice
        if init:  # the bug leaves nn.Linear's default initialisation ("the framework's init is fine")
            bound = 1 / n_in if first else math.sqrt(6 / n_in) / omega
            nn.init.uniform_(self.linear.weight, -bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # the bug: omega_0 multiplied here and again by a copied "scaled" forward
        w = self.omega * self.omega if self.twice else self.omega
        return torch.sin(w * self.linear(x))


def siren(run: Run) -> None:
    """A SIREN (2-64-64-64-1, sine activations, omega_0 30) fitted to a random half of a 32x32 image's pixels, full
    batch, Adam (lr `lr`, 1e-4). Scored by R^2 on the other half of the pixels."""
    g = torch.Generator().manual_seed(run.seed)
    coords, v = data.image(g)
    perm = torch.randperm(len(v), generator=g)
    tr, te = perm[: len(v) // 2], perm[len(v) // 2 :]
    torch.manual_seed(run.seed)
    twice, init = run.bug == "omega_applied_twice", run.bug != "default_init"
    model = nn.Sequential(SineLayer(2, 64, first=True, twice=twice, init=init),
                          SineLayer(64, 64, first=False, init=init), SineLayer(64, 64, first=False, init=init),
                          nn.Linear(64, 1))  # fmt: skip
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 1e-4))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        loss = F.mse_loss(model(coords[tr]), v[tr])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", lambda: r2(model(coords[te]), v[te])):
            break


class UNet1d(nn.Module):
    def __init__(self, c: int = 16, *, relu_out: bool = False) -> None:
        super().__init__()

        def block(i: int, o: int) -> nn.Sequential:
            return nn.Sequential(
                nn.Conv1d(i, o, 5, padding=2), nn.ReLU(), nn.Conv1d(o, o, 5, padding=2), nn.ReLU()
            )

        self.enc1, self.enc2, self.mid = block(1, c), block(c, 2 * c), block(2 * c, 2 * c)
        self.dec2, self.dec1 = block(4 * c, c), block(2 * c, c)
        self.up2 = nn.ConvTranspose1d(2 * c, 2 * c, 2, stride=2)
        self.up1 = nn.ConvTranspose1d(c, c, 2, stride=2)
        self.out = nn.Conv1d(c, 1, 1)
        self.relu_out = relu_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e1 = self.enc1(x)
        e2 = self.enc2(F.avg_pool1d(e1, 2))
        m = self.mid(F.avg_pool1d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(m), e2], 1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
        y = self.out(d1)
        return F.relu(y) if self.relu_out else y  # the bug: "a ReLU after every conv", the last one included


def unet1d(run: Run) -> None:
    """A 1-D U-Net (two poolings, concatenated skips) denoising signed signals, MSE against the clean signal; Adam
    (lr 2e-3), Adam with clip_grad_value_ 0.1, or Nesterov SGD (lr 0.02); batch 32. Scored by R^2 of the denoised
    held-out signals."""
    g = torch.Generator().manual_seed(run.seed)
    noisy, clean = data.noisy_signals(g, 1700)
    nv, cv, noisy, clean = noisy[:200], clean[:200], noisy[200:], clean[200:]
    torch.manual_seed(run.seed)
    model = UNet1d(relu_out=run.bug == "relu_on_output")
    if run.k("opt", "adam") == "nesterov":
        opt: torch.optim.Optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, nesterov=True)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    clip_value = run.k("clip_value", None)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = run.indices(len(noisy), 32)
        loss = F.mse_loss(model(noisy[i]), clean[i])
        opt.zero_grad()
        loss.backward()
        if clip_value is not None:
            nn.utils.clip_grad_value_(model.parameters(), clip_value)
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", lambda: r2(model(nv), cv)):
            break


class TiedAutoencoder(nn.Module):
    def __init__(self, n: int = 64, hidden: int = 32) -> None:
        super().__init__()
        self.enc = nn.Linear(n, hidden)
        self.dec_bias = nn.Parameter(torch.zeros(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.sigmoid(self.enc(x))
        return F.linear(h, self.enc.weight.t(), self.dec_bias)  # logits of the pixels


def tied_autoencoder(run: Run) -> None:
    """A weight-tied denoising autoencoder of 8x8 glyphs (64-32-64, sigmoid code, decoder = encoder weight
    transposed), 30% masking noise on the input, BCE with logits against the clean glyph; Adam (lr 5e-3), batch
    64, optionally under bf16 autocast. Scored by 1 - (reconstruction error / corruption error) on held-out
    glyphs (0: no better than the corrupted input)."""
    g = torch.Generator().manual_seed(run.seed)
    clean = data.glyphs(g, 2400)
    cv, clean = clean[:400], clean[400:]
    corrupt_v = cv * (torch.rand(cv.shape, generator=g) > 0.3)
    torch.manual_seed(run.seed)
    model = TiedAutoencoder()
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    bf16 = run.k("bf16", False)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def denoising() -> float:
        err = float(((torch.sigmoid(model(corrupt_v)) - cv) ** 2).mean())
        return max(0.0, 1 - err / float(((corrupt_v - cv) ** 2).mean()))

    for step in range(run.steps):
        x = clean[run.indices(len(clean), 64)]
        noisy = x * (torch.rand(x.shape, generator=run.gen) > 0.3)
        # the bug: the reconstruction compared with the model's (corrupted) input
        target = noisy if run.bug == "target_is_corrupted_input" else x
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(noisy)
        loss = F.binary_cross_entropy_with_logits(logits.float(), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_denoising", denoising):
            break


class SmallCNN(nn.Module):
    def __init__(self, *, weight_norm: bool = False) -> None:
        super().__init__()
        c1, c2 = nn.Conv2d(1, 16, 3, padding=1), nn.Conv2d(16, 32, 3, padding=1)
        if weight_norm:
            c1, c2 = nn.utils.parametrizations.weight_norm(c1), nn.utils.parametrizations.weight_norm(c2)
        self.features = nn.Sequential(c1, nn.ReLU(), nn.MaxPool2d(2), c2, nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).flatten(1))


def mean_teacher(run: Run) -> None:
    """Mean teacher on bar images: a channels-last CNN (optionally with weight-normalised convolutions) learns from
    60 labelled images (cross-entropy) and 2000 unlabelled ones (MSE between its softmax and an EMA teacher's on
    another noisy view, weight ramped up over 100 steps); teacher decay 0.99, Adam (lr 2e-3), batches of 16
    labelled and 64 unlabelled. Scored by the teacher's accuracy on 400 held-out images."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.bar_images(g, 2460)
    xv, yv, xl, yl, xu = x[:400], y[:400], x[400:460], y[400:460], x[460:]
    torch.manual_seed(run.seed)
    student = SmallCNN(weight_norm=run.k("weight_norm", False)).to(memory_format=torch.channels_last)
    teacher = copy.deepcopy(student)
    for p in teacher.parameters():
        p.requires_grad_(False)
    opt = torch.optim.Adam(student.parameters(), lr=2e-3)
    decay = 0.99
    run.hook.register_module(student)
    run.hook.register_optimizer(opt)

    def view(images: torch.Tensor) -> torch.Tensor:
        shift = int(torch.randint(-1, 2, (1,), generator=run.gen))
        noise = 0.1 * torch.randn(images.shape, generator=run.gen)
        return (torch.roll(images, shift, 3) + noise).contiguous(memory_format=torch.channels_last)

    for step in range(run.steps):
        li, ui = run.indices(len(yl), 16), run.indices(len(xu), 64)
        ce = F.cross_entropy(student(view(xl[li])), yl[li])
        with torch.no_grad():
            target = torch.softmax(teacher(view(xu[ui])), 1)
        consistency = F.mse_loss(torch.softmax(student(view(xu[ui])), 1), target)
        ramp = math.exp(-5 * (1 - min(step, 100) / 100) ** 2)
        loss = ce + 10 * ramp * consistency
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            for t, s in zip(teacher.parameters(), student.parameters()):
                if run.bug == "ema_loop_rebinds_variable":
                    t = decay * t + (1 - decay) * s  # the bug: a new tensor, the teacher is untouched
                elif run.bug == "ema_decay_inverted":
                    t.mul_(1 - decay).add_(s, alpha=decay)  # the bug: the weights of the two terms swapped
                else:
                    t.mul_(decay).add_(s, alpha=1 - decay)
        if not close_step(
            run, step, loss, teacher, "val_teacher_accuracy", lambda: accuracy(teacher(xv), yv)
        ):
            break
