"""Generative scripts of the eleventh blind split: a Wasserstein GAN with gradient penalty on a 2-D mixture, and a
variational autoencoder with Gumbel-softmax (discrete) latents on binary pictures.

`wgan_gp`: the data are eight Gaussians (std 0.1) on a circle of radius 2; the generator (4-d noise) and the critic
are two-hidden-layer MLPs; the critic takes `n_critic` (5) steps per generator step on E[D(fake)] - E[D(real)] plus
10 x (|grad D(x_hat)| - 1)^2 at random interpolates x_hat of real and fake points, the generator minimises
-E[D(fake)]; the recorded loss is the critic's (negative, and rising towards 0 as the generator improves); scored by
exp(-2 x the sliced 1-Wasserstein distance, over 32 directions, between 1000 generated and 1000 held-out points).
`gumbel_vae`: 8 x 8 binary pictures of one horizontal and one vertical bar (of eight positions each) with 5% of the
pixels flipped; the encoder gives two categorical latents of eight classes, sampled by Gumbel-softmax at a
temperature annealed from 1 towards a floor of 0.5 with the straight-through hard sample, the decoder gives Bernoulli
logits; the loss is the summed binary cross-entropy plus beta (0.2) x the KL to the uniform prior; scored by the
intersection over union of the bars decoded from the held-out pictures' arg-max codes with the clean bars. Bugs: the
gradient penalty taken at the real points only, the penalty subtracted from the critic's loss, the generator's loss
written with the wrong sign, the critic ending in a sigmoid (a GAN discriminator's habit), the temperature annealed without its floor (towards zero), the hard one-hot sample used
without the straight-through estimator, the KL weight applied to the reconstruction term instead of the KL.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.torch_real.loop import make_optimizer

MODES = 2 * torch.stack(
    [torch.cos(torch.arange(8) * math.pi / 4), torch.sin(torch.arange(8) * math.pi / 4)], 1
)
"""The eight centres of the 2-D mixture, float[8, 2]."""


def _mlp(n_in: int, width: int, n_out: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(n_in, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, n_out)
    )


def _ring(g: torch.Generator, n: int) -> torch.Tensor:
    return MODES[torch.randint(0, 8, (n,), generator=g)] + 0.1 * torch.randn(n, 2, generator=g)


def wgan_gp(run: Run) -> None:
    """WGAN-GP: generator and critic of width `width` (64), `n_critic` (5) critic steps a generator step, batch
    `batch` (128), both under `opt` (Adam with betas 0.5, 0.9; or RAdam, AdamW, RMSprop) at `lr` (5e-4). Scored by
    exp(-2 x the sliced Wasserstein distance) to held-out points."""
    g = torch.Generator().manual_seed(run.seed)
    noise_v, real_v = torch.randn(1000, 4, generator=g), _ring(g, 1000)
    angles = torch.arange(32) * math.pi / 32
    directions = torch.stack([torch.cos(angles), torch.sin(angles)])
    torch.manual_seed(run.seed)
    width, batch, n_critic = run.k("width", 64), run.k("batch", 128), run.k("n_critic", 5)
    gen, critic = _mlp(4, width, 2), _mlp(2, width, 1)
    if run.bug == "critic_output_through_sigmoid":
        critic.append(nn.Sigmoid())
    name, lr = run.k("opt", "adam"), run.k("lr", 5e-4)
    extra = {"betas": (0.5, 0.9)} if name in ("adam", "adamw", "radam") else {}
    opt_g = make_optimizer(name, gen.parameters(), lr, **extra)
    opt_d = make_optimizer(name, critic.parameters(), lr, **extra)
    both = nn.ModuleDict({"G": gen, "D": critic})
    run.hook.register_module(both)
    run.hook.register_optimizer(opt_d)
    run.hook.register_optimizer(opt_g)

    def sliced_fit() -> float:
        """exp(-2 x the sliced 1-Wasserstein distance between generated and held-out real points)."""
        fake, real = gen(noise_v) @ directions, real_v @ directions
        return math.exp(-2 * float((fake.sort(0).values - real.sort(0).values).abs().mean()))

    for step in range(run.steps):
        for _ in range(n_critic):
            real = _ring(run.gen, batch)
            fake = gen(torch.randn(batch, 4, generator=run.gen)).detach()
            if run.bug == "gradient_penalty_on_real_only":
                at = real.clone().requires_grad_()
            else:
                mix = torch.rand(batch, 1, generator=run.gen)
                at = (mix * real + (1 - mix) * fake).requires_grad_()
            (grad,) = torch.autograd.grad(critic(at).sum(), at, create_graph=True)
            penalty = 10 * ((grad.norm(dim=1) - 1) ** 2).mean()
            wasserstein = critic(fake).mean() - critic(real).mean()
            loss_d = (
                wasserstein - penalty if run.bug == "gradient_penalty_subtracted" else wasserstein + penalty
            )
            opt_d.zero_grad()
            loss_d.backward()
            opt_d.step()
        scores = critic(gen(torch.randn(batch, 4, generator=run.gen)))
        loss_g = scores.mean() if run.bug == "generator_loss_sign_flipped" else -scores.mean()
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
        if not close_step(run, step, loss_d, both, "val_sliced_fit", sliced_fit):
            break


def _bars(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Noisy pictures float[n, 64] (5% of pixels flipped) and the clean ones, each one row bar and one column bar."""
    rows = F.one_hot(torch.randint(0, 8, (n,), generator=g), 8).float()
    cols = F.one_hot(torch.randint(0, 8, (n,), generator=g), 8).float()
    clean = torch.maximum(rows[:, :, None].expand(n, 8, 8), cols[:, None, :].expand(n, 8, 8)).reshape(n, 64)
    flip = (torch.rand(n, 64, generator=g) < 0.05).float()
    return (clean + flip) % 2, clean


def gumbel_vae(run: Run) -> None:
    """Gumbel-softmax VAE: encoder and decoder MLPs of width `width` (128), two latents of eight classes, batch
    `batch` (64), `opt` (Adam; or AdamW, NAdam, Adadelta) at `lr` (3e-3), temperature exp(-`anneal` t) (0.02) floored
    at 0.5, KL weight `beta` (0.2). Scored by the intersection over union of the decoded held-out bars."""
    g = torch.Generator().manual_seed(run.seed)
    x, _ = _bars(g, 4000)
    xv, cv = _bars(g, 300)
    torch.manual_seed(run.seed)
    width, latents, classes = run.k("width", 128), 2, 8
    enc, dec = _mlp(64, width, latents * classes), _mlp(latents * classes, width, 64)
    model = nn.ModuleDict({"encoder": enc, "decoder": dec})
    name = run.k("opt", "adam")
    opt = make_optimizer(name, model.parameters(), run.k("lr", 3e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    batch, anneal, beta = run.k("batch", 64), run.k("anneal", 2e-2), run.k("beta", 0.2)

    def iou() -> float:
        code = (
            F.one_hot(enc(xv).view(-1, latents, classes).argmax(-1), classes)
            .float()
            .view(-1, latents * classes)
        )
        on = dec(code) > 0
        clean = cv > 0.5
        return float(((on & clean).sum(1).float() / (on | clean).sum(1).float()).mean())

    for step in range(run.steps):
        tau = math.exp(-anneal * step)
        if run.bug != "temperature_annealed_to_zero":
            tau = max(tau, 0.5)
        elif tau < 0.5:
            run.took_effect(step)
        batch_x = x[run.indices(len(x), batch)]
        logits = enc(batch_x).view(-1, latents, classes)
        gumbel = -torch.log(-torch.log(torch.rand(logits.shape, generator=run.gen).clamp(1e-10, 1.0)))
        soft = torch.softmax((logits + gumbel) / tau, dim=-1)
        hard = F.one_hot(soft.argmax(-1), classes).float()
        z = hard if run.bug == "hard_sample_without_straight_through" else hard - soft.detach() + soft
        recon = F.binary_cross_entropy_with_logits(
            dec(z.view(-1, latents * classes)), batch_x, reduction="none"
        )
        q = torch.softmax(logits, dim=-1)
        kl = (q * (torch.log_softmax(logits, dim=-1) + math.log(classes))).sum((1, 2))
        if run.bug == "kl_weight_on_reconstruction":
            loss = (beta * recon.sum(1) + kl).mean()
        else:
            loss = (recon.sum(1) + beta * kl).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_iou", iou):
            break
