"""Sequence scripts of the fifteenth blind split: a world model of a torque-driven pendulum for model-based RL, and a
next-note model of symbolic melodies.

`world_model`: 150 episodes of 20 steps of a damped pendulum with a small random disturbance of its velocity (angle
wrapped to [-pi, pi), angular velocity) pushed by a random torque in [-2, 2], started anywhere; an MLP on (cos, sin,
velocity, torque) predicts the change of the state (the angle's change wrapped), standardised by the training changes'
statistics, by mean squared error; scored by the held-out R^2 of the predicted next state's change. `melody`: melodies
of 24 notes in a random major key, a walk over scale degrees that tends to keep its direction, stored as note-on and
note-off events (velocity 0) in no particular order, as merged tracks are; the notes are read back by onset; an
embedding, a GRU and a linear layer over 37 pitches, cross-entropy on the next pitch at every position; scored by the
held-out next-pitch accuracy from the fifth note on. Bugs: the angle's change left unwrapped; transitions taken across
episode boundaries; the changes standardised by the states' statistics; the torque left out of the input; the model
trained on the next state while the planner reads its output as the change; the cosine and sine taken of the angle in
degrees; the events sorted by their onset as text; note-ons of velocity 0 kept as notes; the velocity read as the
pitch; the training melodies (only) transposed to C major.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

EPISODES, LENGTH, DT = 150, 20, 0.1
"""Episodes of random torques, steps in each, and the integration step in seconds."""


def _wrap(angle: torch.Tensor) -> torch.Tensor:
    return torch.remainder(angle + math.pi, 2 * math.pi) - math.pi


def _episodes(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """States float[n, LENGTH + 1, 2] (angle, velocity) and torques float[n, LENGTH]."""
    state = torch.stack(
        [(torch.rand(n, generator=g) * 2 - 1) * math.pi, 6 * torch.rand(n, generator=g) - 3], 1
    )
    torque = 4 * torch.rand(n, LENGTH, generator=g) - 2
    states = [state]
    for t in range(LENGTH):
        angle, vel = state[:, 0], state[:, 1]
        vel = (
            vel
            + DT * (-9.8 * torch.sin(angle) + 3 * torque[:, t] - 0.2 * vel)
            + 0.05 * torch.randn(n, generator=g)
        )
        state = torch.stack([_wrap(angle + DT * vel), vel], 1)
        states.append(state)
    return torch.stack(states, 1), torque


def _transitions(states: torch.Tensor, torque: torch.Tensor, bug: str | None) -> tuple[torch.Tensor, ...]:
    """(state, torque, next state) rows from whole episodes."""
    if bug == "transitions_across_episode_boundaries":
        flat = states[:, :LENGTH].reshape(-1, 2)
        return flat[:-1], torque.reshape(-1)[:-1], flat[1:]
    return states[:, :-1].reshape(-1, 2), torque.reshape(-1), states[:, 1:].reshape(-1, 2)


def _inputs(state: torch.Tensor, torque: torch.Tensor, degrees: bool = False) -> torch.Tensor:
    angle = torch.rad2deg(state[:, 0]) if degrees else state[:, 0]
    return torch.stack([torch.cos(angle), torch.sin(angle), state[:, 1] / 3, torque / 2], 1)


def world_model(run: Run) -> None:
    """A dynamics MLP of `width` (64), batches of `batch` (128), `opt` (Adam; or AdamW, RMSprop, RAdam) at `lr` (2e-3),
    optionally halved every 100 steps (`step_decay`). Scored by the held-out R^2 of the state change."""
    g = torch.Generator().manual_seed(run.seed)
    s, a, s_next = _transitions(*_episodes(g, EPISODES), run.bug)
    s_v, a_v, s_next_v = _transitions(*_episodes(g, 40), None)
    if run.bug == "angle_change_not_wrapped":
        change = s_next - s
    else:
        change = torch.stack([_wrap(s_next[:, 0] - s[:, 0]), s_next[:, 1] - s[:, 1]], 1)
    change_v = torch.stack([_wrap(s_next_v[:, 0] - s_v[:, 0]), s_next_v[:, 1] - s_v[:, 1]], 1)
    mean, std = change.mean(0), change.std(0)
    if run.bug == "trained_on_next_state_read_as_change":
        target = (s_next - s_next.mean(0)) / s_next.std(0)
    elif run.bug == "changes_standardised_by_state_stats":
        target = (change - s.mean(0)) / s.std(0)
    else:
        target = (change - mean) / std
    degrees = run.bug == "cos_sin_taken_of_degrees"
    x, x_v = _inputs(s, a, degrees), _inputs(s_v, a_v, degrees)
    if run.bug == "torque_left_out_of_input":
        x = x.clone()
        x[:, 3] = 0
    torch.manual_seed(run.seed)
    width = run.k("width", 64)
    model = nn.Sequential(
        nn.Linear(4, width), nn.SiLU(), nn.Linear(width, width), nn.SiLU(), nn.Linear(width, 2)
    )
    opt = optimizers.registered(run, model, 2e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, 100, 0.5) if run.k("step_decay", False) else None
    batch = run.k("batch", 128)
    zero_torque = run.bug == "torque_left_out_of_input"

    def change_r2() -> float:
        inputs = x_v.clone()
        if zero_torque:
            inputs[:, 3] = 0
        pred = model(inputs) * std + mean
        if not torch.isfinite(pred).all():
            return 0.0
        return max(0.0, 1 - float(((pred - change_v) ** 2).mean(0).div(change_v.var(0)).mean()))

    for step in range(run.steps):
        pick = run.indices(len(x), batch)
        loss = F.mse_loss(model(x[pick]), target[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_change_r2", change_r2):
            break


NOTES, LOW_PITCH, PITCHES = 24, 48, 37
"""Notes in a melody, the lowest MIDI pitch, and the pitch vocabulary (three octaves)."""
MAJOR = (0, 2, 4, 5, 7, 9, 11)


def _events(rng: np.random.Generator) -> tuple[list[tuple[int, int, int]], int]:
    """One melody as MIDI note-on events (tick, pitch, velocity), note-offs as velocity 0, in no particular order, and
    its key (0 for C major)."""
    key, degree, direction = int(rng.integers(0, 12)), int(rng.integers(3, 10)), int(rng.choice((-1, 1)))
    events, tick = [], 0
    for _ in range(NOTES):
        pitch = LOW_PITCH + key + 12 * (degree // 7) + MAJOR[degree % 7]
        length = 120 * int(rng.integers(1, 5))
        events += [(tick, pitch, int(rng.integers(50, 110))), (tick + length, pitch, 0)]
        tick += length
        u = rng.random()
        if u < 0.15:
            direction = -direction
        step = 0 if u > 0.9 else (2 if u > 0.75 else 1)
        degree += direction * step
        if not 0 <= degree <= 13:
            direction = -direction
            degree = min(13, max(0, degree + 2 * direction * step))
    order = rng.permutation(len(events))
    return [events[i] for i in order], key


def _melodies(rng: np.random.Generator, n: int, bug: str | None = None) -> torch.Tensor:
    """Pitch ids int64[n, NOTES] read back from each melody's events."""
    rows = []
    for _ in range(n):
        events, key = _events(rng)
        if bug == "events_sorted_by_onset_as_text":
            events.sort(key=lambda e: str(e[0]))
        else:
            events.sort(key=lambda e: e[0])
        if bug == "note_on_velocity_zero_kept":
            notes = list(events)
        else:
            notes = [e for e in events if e[2] > 0]
        field = 2 if bug == "velocity_read_as_pitch" else 1
        low = LOW_PITCH + key if bug == "training_melodies_transposed_to_c" else LOW_PITCH
        rows.append([min(PITCHES - 1, max(0, e[field] - low)) for e in notes[:NOTES]])
    return torch.tensor(rows)


class MelodyGRU(nn.Module):
    """Pitch embedding of `dim`, a GRU of 2 x `dim`, a linear layer to the pitches."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(PITCHES, dim)
        self.gru = nn.GRU(dim, 2 * dim, batch_first=True)
        self.out = nn.Linear(2 * dim, PITCHES)

    def forward(self, notes: torch.Tensor) -> torch.Tensor:
        return self.out(self.gru(self.embed(notes))[0])


def melody(run: Run) -> None:
    """A next-note GRU of `dim` (32), batches of `batch` (64), `opt` (Adam; or AdamW, Adamax, RMSprop) at `lr` (3e-3),
    gradients clipped at norm `clip` (none). Scored by the held-out next-pitch accuracy from the fifth note on."""
    rng = np.random.default_rng(run.seed)
    notes = _melodies(rng, 1500, run.bug)
    notes_v = _melodies(rng, 300)
    torch.manual_seed(run.seed)
    model = MelodyGRU(run.k("dim", 32))
    opt = optimizers.registered(run, model, 3e-3)
    batch, clip = run.k("batch", 64), run.k("clip", 0.0)

    def next_pitch_accuracy() -> float:
        logits = model(notes_v[:, :-1])[:, 4:]
        return float((logits.argmax(-1) == notes_v[:, 5:]).float().mean())

    for step in range(run.steps):
        seq = notes[run.indices(len(notes), batch)]
        logits = model(seq[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, PITCHES), seq[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        if clip:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if not close_step(run, step, loss, model, "val_next_pitch_accuracy", next_pitch_accuracy):
            break
