"""Workloads of the realistic PyTorch suite whose loss is noisy, or not meant to fall steadily.

Written as such training scripts are usually written, to check that a loss rule reasons about the
batch noise and the objective's shape rather than a falling curve: robust (Huber) regression on
targets with heavy-tailed noise, a classifier with dropout 0.5 trained on batches of 8, a VAE whose
KL weight is annealed from 0 to 1 (its total loss rises by design), SimCLR with a projection head
and strong augmentations, and PPO with separate actor and critic (the recorded `loss` is the
clipped policy surrogate, which hovers around 0). The bugs (`suite.py`) change one line: a learning
rate far too small, hidden layers dead from a bias initialisation.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.torch_real import data
from benchmarks.detection.torch_real.loop import (
    Ctx,
    accuracy,
    class_mean_accuracy,
    fit,
    make_optimizer,
    make_scheduler,
    nt_xent,
    sampler,
)


def robust_regression(ctx: Ctx) -> None:
    """A SiLU MLP regressor trained with the Huber loss on targets whose noise is Student-t with 2 degrees of
    freedom (infinite variance: a few samples per batch are far off); scored on the noise-free targets."""
    g = torch.Generator().manual_seed(ctx.seed)
    n, dim = 8000, 12
    x = torch.randn(n, dim, generator=g)
    a, b = torch.randn(dim, generator=g), torch.randn(dim, generator=g) / math.sqrt(dim)
    clean = torch.tanh(x @ a / math.sqrt(dim)) * 2.0 + x @ b + 0.5 * x[:, 2] * x[:, 3]
    clean = (clean - clean.mean()) / clean.std()
    u = torch.rand(n, generator=g).clamp_min(1e-12)
    noise = torch.randn(n, generator=g) / torch.sqrt(-torch.log(u))  # Student-t, 2 degrees of freedom
    y = clean + 0.4 * noise
    xv, yv = x[:512], clean[:512]
    x, y = x[512:], y[512:]
    torch.manual_seed(ctx.seed)
    model = nn.Sequential(nn.Linear(dim, 128), nn.SiLU(), nn.Linear(128, 128), nn.SiLU(), nn.Linear(128, 1))
    opt = make_optimizer("adamw", model.parameters(), ctx.k("lr", 1e-3), weight_decay=1e-4)

    def loss_fn(out: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return F.huber_loss(out.squeeze(1), t, delta=1.0)

    def score() -> float:
        model.eval()
        return max(0.0, 1.0 - float(F.mse_loss(model(xv).squeeze(1), yv)))

    fit(ctx, model, opt, sampler(ctx, (x, y), 32), loss_fn, val=(xv, yv), score=score)


def dropout_small_batch(ctx: Ctx) -> None:
    """A 20-class classifier, three hidden layers with dropout 0.5, batches of 8 under Nesterov SGD. Bug
    `dead_bias_init`: the hidden biases start at -4 (a constant init copied from elsewhere), so every ReLU is
    off for every input and only the head's bias can learn."""
    g = torch.Generator().manual_seed(ctx.seed)
    (x, y), (xv, yv) = data.mixture(g, n=8512, dim=24, k=20, noise=2.2)
    torch.manual_seed(ctx.seed)
    layers: list[nn.Module] = []
    width_in = 24
    for width in (256, 256, 128):
        linear = nn.Linear(width_in, width)
        if ctx.bug == "dead_bias_init":
            nn.init.constant_(linear.bias, -4.0)
        layers += [linear, nn.ReLU(), nn.Dropout(0.5)]
        width_in = width
    model = nn.Sequential(*layers, nn.Linear(width_in, 20))
    opt = make_optimizer("nesterov", model.parameters(), ctx.k("lr", 0.01), weight_decay=5e-4)
    fit(ctx, model, opt, sampler(ctx, (x, y), 8), F.cross_entropy, val=(xv, yv),
        score=lambda: accuracy(model, xv, yv), classify=True)  # fmt: skip


class BernoulliVAE(nn.Module):
    """An MLP VAE with a Bernoulli decoder (logits) and a diagonal Gaussian posterior."""

    def __init__(self, d: int = 48, latent: int = 6, width: int = 128) -> None:
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d, width), nn.ELU(), nn.Linear(width, width), nn.ELU())
        self.mu = nn.Linear(width, latent)
        self.logvar = nn.Linear(width, latent)
        self.dec = nn.Sequential(nn.Linear(latent, width), nn.ELU(), nn.Linear(width, width), nn.ELU(),
                                 nn.Linear(width, d))  # fmt: skip

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.enc(x)
        mu, logvar = self.mu(h), self.logvar(h).clamp(-8, 8)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp() if self.training else mu
        kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(1).mean()
        return self.dec(z), kl


def vae_kl_annealing(ctx: Ctx) -> None:
    """A Bernoulli VAE on dynamically binarised data (each batch's bits drawn afresh from the pixel intensities,
    as MNIST VAEs are usually trained), the decoder's output bias initialised to the intensities' mean log-odds,
    and the KL weight beta annealed linearly from 0 to 1 over the first 60% of the run (Bowman et al.'s KL
    annealing): the reconstruction falls towards the bits' own entropy while the weighted KL grows, so the
    recorded total loss rises for much of the run. Scored by the bit accuracy of validation reconstructions
    (through the posterior mean) against the intensities rounded."""
    g = torch.Generator().manual_seed(ctx.seed)
    (x, _), (xv, _) = data.manifold(g, n=6512, dim=48, latent=3)
    x, xv = torch.sigmoid(1.5 * x), torch.sigmoid(1.5 * xv)  # intensities in (0, 1)
    torch.manual_seed(ctx.seed)
    model = BernoulliVAE()
    with torch.no_grad():
        mean = x.mean(0).clamp(1e-3, 1 - 1e-3)
        model.dec[-1].bias.copy_(torch.log(mean / (1 - mean)))
    opt = make_optimizer("adam", model.parameters(), ctx.k("lr", 1e-3))
    ramp = max(int(0.6 * ctx.steps), 1)
    count = [0]
    draw = sampler(ctx, (x, x), 64)

    def batch() -> tuple[torch.Tensor, torch.Tensor]:
        xb, _ = draw()
        bits = torch.bernoulli(xb, generator=ctx.gen)
        return bits, bits

    def beta() -> float:
        return min(1.0, count[0] / ramp)

    def recon_loss(logits: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return F.binary_cross_entropy_with_logits(logits, t, reduction="none").sum(1).mean()

    def loss_fn(out: tuple[torch.Tensor, torch.Tensor], t: torch.Tensor) -> torch.Tensor:
        if model.training:
            count[0] += 1
        return recon_loss(out[0], t) + beta() * out[1]

    def parts(out: tuple[torch.Tensor, torch.Tensor], t: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"recon": recon_loss(out[0], t), "kl": out[1], "beta": torch.tensor(beta())}

    def score() -> float:
        model.eval()
        return float(((model(xv)[0] > 0).float() == (xv > 0.5).float()).float().mean())

    vbits = torch.bernoulli(xv, generator=torch.Generator().manual_seed(ctx.seed + 5))
    fit(ctx, model, opt, batch, loss_fn, val=(vbits, vbits), score=score, extra=parts)


def simclr(ctx: Ctx) -> None:
    """SimCLR: an encoder and a projection head, two strongly augmented views per sample (feature dropout 30%,
    per-sample scaling, Gaussian noise), NT-Xent at temperature 0.5 over batches of 32 pairs, SGD with momentum
    under warmup + cosine. Scored by nearest-class-mean accuracy of the encoder's features."""
    g = torch.Generator().manual_seed(ctx.seed)
    (x, y), (xv, yv) = data.mixture(g, n=6512, dim=32, k=8, noise=1.4)
    torch.manual_seed(ctx.seed)
    encoder = nn.Sequential(nn.Linear(32, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Linear(128, 64))
    projector = nn.Sequential(nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32))
    model = nn.Sequential(encoder, projector)
    lr = ctx.k("lr", 0.1)
    opt = make_optimizer("momentum", model.parameters(), lr, weight_decay=1e-4)
    schedule = make_scheduler("warmup_cosine", opt, ctx.steps, lr=lr, warmup=30)
    draw = sampler(ctx, (x, y), 32)

    def augment(xb: torch.Tensor) -> torch.Tensor:
        keep = (torch.rand(xb.shape, generator=ctx.gen) > 0.3).float()
        scale = 0.7 + 0.6 * torch.rand(len(xb), 1, generator=ctx.gen)
        return xb * keep * scale + 0.4 * torch.randn(xb.shape, generator=ctx.gen)

    def batch() -> tuple[torch.Tensor, torch.Tensor]:
        xb, _ = draw()
        return torch.cat([augment(xb), augment(xb)]), torch.zeros(())

    gv = torch.Generator().manual_seed(ctx.seed + 99)
    val_pair = (torch.cat([xv[:128], xv[:128] + 0.4 * torch.randn(128, 32, generator=gv)]), torch.zeros(()))
    fit(ctx, model, opt, batch, lambda out, _: nt_xent(out, 0.5), val=val_pair,
        score=lambda: class_mean_accuracy(encoder, (x[:1000], y[:1000]), (xv, yv), 8), schedule=schedule)  # fmt: skip


def ppo(ctx: Ctx) -> None:
    """PPO with a separate actor and critic on the contextual bandit: rollouts of 256 contexts, 4 epochs of 4
    minibatches each (16 optimizer steps per rollout), normalised advantages, ratio clipped at 0.2 and an
    entropy bonus. The recorded `loss` is the actor's (clipped surrogate minus the entropy bonus): it starts
    each rollout near 0 and is not meant to fall over the run; `value_loss` is the critic's."""
    g = torch.Generator().manual_seed(ctx.seed)
    bandit = data.Bandit(g)
    torch.manual_seed(ctx.seed)
    actor = nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 4))
    critic = nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 1))
    actor_opt = make_optimizer("adam", actor.parameters(), ctx.k("lr", 3e-4), eps=1e-5)
    critic_opt = make_optimizer("adam", critic.parameters(), 1e-3)
    hook = ctx.hook
    hook.register_module(nn.ModuleDict({"actor": actor, "critic": critic}))
    hook.register_optimizer(actor_opt)
    hook.register_optimizer(critic_opt)
    val_ctx = bandit.contexts(torch.Generator().manual_seed(ctx.seed + 7), 512)

    def score() -> float:
        greedy = actor(val_ctx).argmax(1)
        return float(bandit.rewards(val_ctx).gather(1, greedy[:, None]).mean())

    step = 0
    while step < ctx.steps:
        with torch.no_grad():  # the rollout
            c = bandit.contexts(ctx.gen, 256)
            dist = torch.distributions.Categorical(logits=actor(c))
            a = dist.sample()
            old_logp = dist.log_prob(a)
            r = bandit.rewards(c).gather(1, a[:, None]).squeeze(1) + 0.1 * torch.randn(256, generator=ctx.gen)
            adv = r - critic(c).squeeze(1)
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        for _ in range(4):
            order = torch.randperm(256, generator=ctx.gen)
            for mb in order.split(64):
                if step >= ctx.steps:
                    break
                dist = torch.distributions.Categorical(logits=actor(c[mb]))
                ratio = (dist.log_prob(a[mb]) - old_logp[mb]).exp()
                surrogate = torch.min(ratio * adv[mb], ratio.clamp(0.8, 1.2) * adv[mb])
                policy_loss = -surrogate.mean() - 0.01 * dist.entropy().mean()
                value_loss = F.mse_loss(critic(c[mb]).squeeze(1), r[mb])
                actor_opt.zero_grad()
                critic_opt.zero_grad()
                policy_loss.backward()
                value_loss.backward()
                nn.utils.clip_grad_norm_(actor.parameters(), 0.5)
                hook.record_scalar("loss", policy_loss)
                hook.record_scalar("value_loss", value_loss)
                actor_opt.step()
                critic_opt.step()
                ctx.oracle(step, score)
                if not ctx.note_loss(step, float(policy_loss.detach())):
                    return
                step += 1


WORKLOADS: dict[str, Callable[[Ctx], None]] = {
    "robust_regression": robust_regression, "dropout_small_batch": dropout_small_batch,
    "vae_kl_annealing": vae_kl_annealing, "simclr": simclr, "ppo": ppo,
}  # fmt: skip
"""Workload name -> its function (merged into `workloads.WORKLOADS`)."""
