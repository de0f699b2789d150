"""Biosignal scripts of the twenty-fourth blind split: a sleep-stage classifier on EEG epochs and a hand-gesture
classifier on forearm EMG features.

`sleep`: 8-second EEG epochs at 32 Hz from 6 training nights (a subject each, with their own amplitude and alpha
frequency) and 6 new nights held out; the five stages (wake, N1, N2, N3, REM) follow a sticky Markov chain through the
night; wake carries alpha near 10 Hz, N1 and REM theta near 6 Hz (REM with sawtooth bursts), N2 spindles near 13 Hz and
N3 large slow waves; about 2% of the epochs are flat (the electrode came off); each epoch z-scored by its own spread
(with a floor), a 1-D CNN (three strided convolutions with batch norm, ReLU, global average pooling, a linear layer);
cross-entropy with label smoothing 0.1; scored by held-out accuracy. `gestures`: 150-sample windows of 8-channel EMG from 8 training subjects
and 8 new ones, each of six gestures a pattern of channel activations scaled by the subject's gain; per channel the
RMS, mean absolute value, waveform length and zero-crossing rate, standardised by the training windows; a residual ReLU MLP;
cross-entropy; scored by held-out accuracy. Bugs: flat epochs z-scored by a zero spread; a `return` inside the loop
over recordings, so only the first night is loaded; TensorFlow's label confidence of 0.9 given as PyTorch's label
smoothing; the EEG read in volts as the reader returns it; the waveform length appended after standardising; the
residual sum dropped in a deep gesture net; momentum raised to 0.99 at the rate tuned for 0.9.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers
from benchmarks.detection.torch_real.loop import make_optimizer

HZ, SECONDS, STAGES = 32, 8, 5
"""Sampling rate, epoch length and stages (wake, N1, N2, N3, REM)."""
SAMPLES = HZ * SECONDS
STAY = 0.8
"""The chance that the next epoch keeps the stage."""


def _night(g: torch.Generator, epochs: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One subject's night: EEG float[epochs, SAMPLES] in volts and the hypnogram long[epochs]."""
    gain = 1 + 0.3 * torch.randn((), generator=g).clamp(-2, 2)
    alpha = 8.5 + 3 * torch.rand((), generator=g)
    pace = torch.exp(0.12 * torch.randn((), generator=g))  # the subject's rhythms run a little fast or slow
    prior = torch.tensor([0.15, 0.1, 0.4, 0.2, 0.15])
    stages = torch.empty(epochs, dtype=torch.long)
    stages[0] = 0
    moves = torch.multinomial(prior, epochs, True, generator=g)
    keep = torch.rand(epochs, generator=g) < STAY
    for i in range(1, epochs):
        stages[i] = stages[i - 1] if keep[i] else moves[i]
    t = torch.arange(SAMPLES) / HZ
    phase = 2 * math.pi * torch.rand(epochs, 4, generator=g)
    wobble = 1 + 0.05 * torch.randn(epochs, 4, generator=g)
    freq = torch.stack([alpha * wobble[:, 0], 6 * pace * wobble[:, 1], 13 * pace * wobble[:, 2],
                        1.2 * pace * wobble[:, 3]], 1)  # fmt: skip
    waves = torch.sin(2 * math.pi * freq.unsqueeze(-1) * t + phase.unsqueeze(-1))  # [epochs, 4, SAMPLES]
    amp = torch.tensor(
        [[20, 5, 3, 8], [5, 20, 3, 10], [4, 6, 0, 14], [3, 5, 3, 60], [4, 18, 3, 8]], dtype=torch.float
    )
    spindle = torch.exp(-(((t - 2 - 4 * torch.rand(epochs, 1, generator=g)) / 0.4) ** 2))  # N2's burst
    scale = amp[stages].clone()
    signal = (scale[:, :3].unsqueeze(-1) * waves[:, :3]).sum(1) + scale[:, 3:] * waves[:, 3]
    signal = signal + (stages == 2).float().unsqueeze(1) * 18 * spindle * waves[:, 2]
    saw = (t * 2.5) % 1 - 0.5  # REM's sawtooth bursts
    signal = signal + (stages == 4).float().unsqueeze(1) * 25 * saw * (
        torch.rand(epochs, 1, generator=g) < 0.7
    )
    signal = gain * (signal + 6 * torch.randn(epochs, SAMPLES, generator=g))
    flat = torch.rand(epochs, generator=g) < 0.02  # the electrode came off
    signal[flat] = 0.0
    return signal * 1e-6, stages


def _recordings(g: torch.Generator, nights: int, epochs: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """`nights` recordings of `epochs` epochs each, as the EDF reader hands them over."""
    return [_night(g, epochs) for _ in range(nights)]


class SleepCNN(nn.Module):
    """Three strided 1-D convolutions of `width` with batch norm and ReLU, global average pooling, a linear layer."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(1, width, 9, stride=2, padding=4), nn.BatchNorm1d(width), nn.ReLU(),
            nn.Conv1d(width, width, 7, stride=2, padding=3), nn.BatchNorm1d(width), nn.ReLU(),
            nn.Conv1d(width, 2 * width, 5, stride=2, padding=2), nn.BatchNorm1d(2 * width), nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Linear(2 * width, STAGES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x.unsqueeze(1)).mean(-1))


def sleep(run: Run) -> None:
    """A sleep CNN of `width` (16), batches of `batch` (64), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at `lr`
    (2e-3), optionally decayed by a cosine (`cosine`). Scored by held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    train_nights, held_out = _recordings(g, 6, 160), _recordings(g, 8, 100)

    def load(recordings: list[tuple[torch.Tensor, torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor]:
        eeg, stages = [], []
        for signal, hypnogram in recordings:
            microvolts = signal if run.bug == "eeg_read_in_volts" else signal * 1e6
            eeg.append(microvolts)
            stages.append(hypnogram)
            if run.bug == "only_first_recording_loaded":
                return torch.cat(eeg), torch.cat(stages)  # the return indented into the loop
        return torch.cat(eeg), torch.cat(stages)

    x, y = load(train_nights)
    unit = 1.0 if run.bug == "eeg_read_in_volts" else 1e6  # the same reader for the held-out nights
    x_v, y_v = torch.cat([s * unit for s, _ in held_out]), torch.cat([h for _, h in held_out])

    def z_scored(eeg: torch.Tensor) -> torch.Tensor:
        centred = eeg - eeg.mean(1, keepdim=True)
        spread = eeg.std(1, keepdim=True)
        if run.bug != "flat_epochs_z_scored":
            spread = spread.clamp_min(1.0)  # a flat epoch (electrode off) has no spread
        return centred / spread

    x, x_v = z_scored(x), z_scored(x_v)
    torch.manual_seed(run.seed)
    model = SleepCNN(run.k("width", 16))
    opt = optimizers.registered(run, model, 2e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, run.steps) if run.k("cosine", False) else None
    batch = run.k("batch", 64)
    # a little label smoothing for the scorers' disagreement (the bug: TensorFlow's confidence of 0.9 given instead)
    smoothing = 0.9 if run.bug == "smoothing_given_as_confidence" else 0.1

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick], label_smoothing=smoothing)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


CHANNELS, WINDOW, GESTURES = 8, 150, 6
"""EMG channels round the forearm, samples per window (150 ms at 1 kHz), gestures (rest, fist, open, pinch, wrist
flexion, wrist extension)."""


def _patterns(g: torch.Generator) -> torch.Tensor:
    """Each gesture's activation of the channels float[GESTURES, CHANNELS] (rest barely any)."""
    pattern = (torch.rand(GESTURES, CHANNELS, generator=g) * 0.8 + 0.1) ** 2 * 1.5
    pattern[0] = 0.05
    return pattern


def _windows(
    g: torch.Generator, pattern: torch.Tensor, subjects: int, per_subject: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Raw EMG float[n, CHANNELS, WINDOW] in microvolts and gestures long[n] of `subjects` people."""
    signals, labels = [], []
    for _ in range(subjects):
        gain = torch.exp(0.2 * torch.randn(CHANNELS, generator=g))  # skin and electrode contact
        y = torch.randint(0, GESTURES, (per_subject,), generator=g)
        level = pattern[y] * gain * torch.exp(0.2 * torch.randn(per_subject, CHANNELS, generator=g))
        carrier = torch.randn(per_subject, CHANNELS, WINDOW, generator=g)
        smooth = F.avg_pool1d(carrier, 3, 1, 1) * 1.7
        signals.append(
            60 * level.unsqueeze(-1) * smooth + 4 * torch.randn(per_subject, CHANNELS, WINDOW, generator=g)
        )
        labels.append(y)
    return torch.cat(signals), torch.cat(labels)


def _features(emg: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per channel: RMS, mean absolute value, zero-crossing rate (float[n, 3 * CHANNELS]) and the waveform length
    (float[n, CHANNELS], in microvolts per window)."""
    rms = emg.pow(2).mean(-1).sqrt()
    mav = emg.abs().mean(-1)
    zc = ((emg[..., 1:] * emg[..., :-1]) < 0).float().mean(-1)
    wl = (emg[..., 1:] - emg[..., :-1]).abs().sum(-1)
    return torch.cat([torch.log(rms), torch.log(mav), zc], 1), wl


class GestureNet(nn.Module):
    """A ReLU stem of `hidden`, `blocks` residual blocks (a linear layer and ReLU each) and a linear head."""

    def __init__(self, inputs: int, hidden: int, blocks: int, residual: bool = True) -> None:
        super().__init__()
        self.residual = residual
        self.stem = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU())
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU()) for _ in range(blocks)
        )
        self.head = nn.Linear(hidden, GESTURES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x)
        for block in self.blocks:
            # the bug overwrites the running sum with the block's output
            h = h + block(h) if self.residual else block(h)
        return self.head(h)


def gestures(run: Run) -> None:
    """A gesture net of `blocks` (1) residual blocks of `hidden` (64), batches of `batch` (128), `opt` (momentum SGD;
    or Adam, Adagrad, NAdam) at `lr` (a base of 0.05 per 128 examples, scaled linearly with the batch). Scored by
    held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    pattern = _patterns(g)
    emg, y = _windows(g, pattern, 8, 300)
    emg_v, y_v = _windows(g, pattern, 8, 100)
    batch = run.k("batch", 128)
    base = run.k("lr", 0.05)
    lr = base * batch / 128  # the linear scaling rule against the reference batch of 128
    f, wl = _features(emg)
    f_v, wl_v = _features(emg_v)
    if run.bug == "waveform_length_appended_after_scaling":
        mean, std = f.mean(0), f.std(0)
        x = torch.cat([(f - mean) / std, wl], 1)
        x_v = torch.cat([(f_v - mean) / std, wl_v], 1)
    else:
        raw, raw_v = torch.cat([f, torch.log(wl)], 1), torch.cat([f_v, torch.log(wl_v)], 1)
        mean, std = raw.mean(0), raw.std(0)
        x, x_v = (raw - mean) / std, (raw_v - mean) / std
    torch.manual_seed(run.seed)
    model = GestureNet(
        4 * CHANNELS, run.k("hidden", 64), run.k("blocks", 1), run.bug != "residual_sum_dropped"
    )
    if run.bug == "momentum_raised_at_same_rate":
        # momentum raised from 0.9 to 0.99 "for smoother steps" at the rate tuned for 0.9: ten times the step
        opt: torch.optim.Optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.99)
    else:
        opt = make_optimizer(run.k("opt", "momentum"), model.parameters(), lr)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
