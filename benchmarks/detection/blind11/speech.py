"""Audio scripts of the eleventh blind split: speaker verification with the generalised end-to-end (GE2E) loss,
and source separation by a magnitude mask, both on synthetic features generated from the seed.

`ge2e`: each speaker is a random 12-dimensional profile; an utterance is 20 frames, each the profile times a random
sign and loudness plus a per-utterance channel offset and noise, so the speaker sits in the frames' second moments;
a frame MLP mean-pooled over the utterance and L2-normalised gives the embedding; a batch holds N speakers x M
utterances, each utterance compared by a learnt scaled cosine (w > 0, b) with every speaker's centroid (its own
speaker's centroid left out of itself), trained by cross-entropy over the speakers; scored by nearest-centroid
identification of 20 held-out speakers (3 enrolment and 5 test utterances each). `separation`: a mixture
spectrogram (32 frequency bins x 16 frames) is the sum of a harmonic source (random pitch, a few partials, an
envelope) and a broadband noise source with bursts; a small convolutional network reads log(1 + mixture) and
predicts a sigmoid mask; mask x mixture is fitted to the harmonic source by mean squared error; scored by the
held-out R^2 of the estimated source. Bugs: the centroid of an utterance's own speaker taken with that utterance in
it, the cosine similarities used as logits without GE2E's learnt scale and bias, the batch reshaped utterance-major so the speaker groups mix, the mask multiplied onto the log-magnitude
features instead of the magnitude, the mask normalised by a softmax over the frequency bins, the
mixture passed as the separation target instead of the source.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.torch_real.loop import make_optimizer

DIM = 12
"""Features per frame of a speaker utterance."""


def _optimizer(run: Run, model: nn.Module, default: str, default_lr: float) -> torch.optim.Optimizer:
    name = run.k("opt", default)
    opt = make_optimizer(
        name, model.parameters(), run.k("lr", default_lr), weight_decay=1e-4 if name == "adamw" else 0.0
    )
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    return opt


def _utterances(
    profiles: torch.Tensor, speakers: torch.Tensor, g: torch.Generator, frames: int = 20
) -> torch.Tensor:
    """One utterance float[frames, DIM] of each speaker in `speakers` (float[len(speakers), frames, DIM])."""
    n = len(speakers)
    sign = torch.randint(0, 2, (n, frames, 1), generator=g).float() * 2 - 1
    loud = 0.5 + torch.rand(n, frames, 1, generator=g)
    channel = 0.6 * torch.randn(n, 1, DIM, generator=g)
    return (
        sign * loud * profiles[speakers][:, None] + channel + 0.5 * torch.randn(n, frames, DIM, generator=g)
    )


class SpeakerEncoder(nn.Module):
    """A frame MLP (DIM-`width`-`width`-`emb`) mean-pooled over frames, L2-normalised; plus GE2E's scale and bias."""

    def __init__(self, width: int, emb: int) -> None:
        super().__init__()
        self.frames = nn.Sequential(nn.Linear(DIM, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                                    nn.Linear(width, emb))  # fmt: skip
        self.w = nn.Parameter(torch.tensor(10.0))
        self.b = nn.Parameter(torch.tensor(-5.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.frames(x).mean(-2), dim=-1)


def ge2e(run: Run) -> None:
    """GE2E speaker verification: a frame MLP of width `width` (64) and embedding 16, `speakers` (8) x `per` (5)
    utterances a step, `opt` (Adam; or AdamW, NAdam, SGD) at `lr` (1e-3). Scored by held-out identification."""
    g = torch.Generator().manual_seed(run.seed)
    profiles = torch.randn(80, DIM, generator=g)
    held = torch.arange(60, 80)
    enrol = _utterances(profiles, held.repeat_interleave(3), g).view(20, 3, 20, DIM)
    test = _utterances(profiles, held.repeat_interleave(5), g)
    truth = torch.arange(20).repeat_interleave(5)
    torch.manual_seed(run.seed)
    model = SpeakerEncoder(run.k("width", 64), 16)
    opt = _optimizer(run, model, "adam", 1e-3)
    n, m = run.k("speakers", 8), run.k("per", 5)

    def identification() -> float:
        centroids = F.normalize(model(enrol).mean(1), dim=-1)
        return float(((model(test) @ centroids.T).argmax(1) == truth).float().mean())

    for step in range(run.steps):
        chosen = torch.randperm(60, generator=run.gen)[:n]
        x = _utterances(profiles, chosen.repeat_interleave(m), run.gen)  # speaker-major: n groups of m
        if run.bug == "batch_reshaped_utterance_major":
            e = model(x).view(m, n, -1).transpose(0, 1)
        else:
            e = model(x).view(n, m, -1)
        total = e.sum(1)
        centroids = F.normalize(total / m, dim=-1)  # [n, d]
        cos = torch.einsum("jid,kd->jik", e, centroids)
        if run.bug != "centroid_includes_own_utterance":
            # each utterance against its own speaker's centroid without itself in it
            own = F.normalize((total[:, None] - e) / (m - 1), dim=-1)
            self_cos = (e * own).sum(-1)
            eye = torch.eye(n, dtype=torch.bool)[:, None, :].expand(n, m, n)
            cos = torch.where(eye, self_cos[:, :, None].expand(n, m, n), cos)
        with torch.no_grad():
            model.w.clamp_(min=1e-6)
        logits = cos if run.bug == "cosine_logits_without_scale" else model.w * cos + model.b
        loss = F.cross_entropy(logits.reshape(n * m, n), torch.arange(n).repeat_interleave(m))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_identification", identification):
            break


FREQS, FRAMES = 32, 16
"""Spectrogram size of the separation clips."""


def _clips(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Mixture and harmonic-source magnitudes, float[n, 1, FREQS, FRAMES] each."""
    f = torch.arange(FREQS).float()[None, :, None]
    pitch = 2 + 3 * torch.rand(n, 1, 1, generator=g)
    harmonic = torch.zeros(n, FREQS, 1)
    for k in range(1, 5):
        harmonic = harmonic + torch.exp(-((f - k * pitch) ** 2) / 0.8) / k
    t = torch.arange(FRAMES).float()[None, None]
    onset = FRAMES * torch.rand(n, 1, 1, generator=g)
    envelope = torch.sigmoid(2 * (t - onset + 6)) * torch.sigmoid(2 * (onset + 4 - t))
    voice = 3 * (0.5 + torch.rand(n, 1, 1, generator=g)) * harmonic * envelope
    tilt = torch.exp(-f * torch.rand(n, 1, 1, generator=g) / 10)
    bursts = (torch.rand(n, 1, FRAMES, generator=g) < 0.4).float() * 2 + 0.3
    noise = tilt * bursts * torch.rand(n, FREQS, FRAMES, generator=g)
    return (voice + noise)[:, None], voice[:, None]


def separation(run: Run) -> None:
    """Mask-based separation: a three-layer convolutional network of width `width` (12), `opt` (Adam; or RAdam,
    Adamax, Nesterov SGD) at `lr` (2e-3), batch `batch` (16). Scored by the held-out R^2 of the separated source."""
    g = torch.Generator().manual_seed(run.seed)
    mix, voice = _clips(g, 1100)
    mv, vv, mix, voice = mix[:100], voice[:100], mix[100:], voice[100:]
    torch.manual_seed(run.seed)
    w = run.k("width", 12)
    model = nn.Sequential(nn.Conv2d(1, w, 3, padding=1), nn.ReLU(), nn.Conv2d(w, w, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(w, 1, 3, padding=1))  # fmt: skip
    opt = _optimizer(run, model, "adam", 2e-3)
    batch = run.k("batch", 16)

    def separate(m: torch.Tensor) -> torch.Tensor:
        features = torch.log1p(m)
        logits = model(features)
        if run.bug == "mask_softmax_over_frequency":
            mask = torch.softmax(logits, dim=2)
        else:
            mask = torch.sigmoid(logits)
        return mask * features if run.bug == "mask_applied_to_log_magnitude" else mask * m

    for step in range(run.steps):
        i = run.indices(len(mix), batch)
        target = mix[i] if run.bug == "separation_target_is_mixture" else voice[i]
        loss = F.mse_loss(separate(mix[i]), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", lambda: r2(separate(mv), vv)):
            break
