"""Drawing scripts of the seventeenth blind split: a neural cellular automaton grown from one seed cell to a target
pattern, and a sketch classifier reading pen strokes.

`automaton`: a 12x12 RGBA target of three overlapping coloured discs drawn from the seed, grown on a 16x16 grid of 12
channels from one live cell; each step perceives the cell and its Sobel gradients per channel, a 1x1 MLP (its last layer
starting at zero) proposes an update applied to a random half of the cells, and cells with no live neighbour (alpha over
0.1) are cleared; 12-16 steps a rollout, mean squared error of the RGBA channels against the target, gradients clipped
at norm 1; scored by the R^2 of the pattern grown in 14 steps. `sketches`: drawings of six kinds (a circle, a square, a
triangle, a zigzag, a spiral, a cross of two strokes) of 8-32 points at a random size and rotation with a jittered hand,
stored as pen offsets and a pen-lift flag, offsets divided by their training spread, padded to 32 points; each batch
sorted by length and packed; a GRU whose state at each drawing's last point goes through an MLP to the six kinds;
cross-entropy; scored by the held-out accuracy. Bugs: the alive mask read from the red channel; the cells to update
drawn once a rollout; the loss taken over every channel; the perception computed from a detached state; the GRU's state
carried from one batch to the next; the state read at the padded end; the warm-up of a Nesterov-SGD run left out.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SIDE = 16
"""Side of the automaton's grid."""
CHANNELS = 12
"""The automaton's state channels (RGBA first)."""


def _target(g: torch.Generator) -> torch.Tensor:
    """An RGBA target float[4, SIDE, SIDE]: three overlapping coloured discs in the middle 12x12."""
    ys, xs = torch.meshgrid(torch.arange(SIDE).float(), torch.arange(SIDE).float(), indexing="ij")
    target = torch.zeros(4, SIDE, SIDE)
    centre = (SIDE - 1) / 2
    for _ in range(3):
        cy, cx = (centre + (torch.rand(2, generator=g) * 2 - 1) * 2.5).tolist()
        radius = 2.5 + 1.5 * float(torch.rand(1, generator=g))
        colour = 0.2 + 0.8 * torch.rand(3, generator=g)
        disc = ((ys - cy) ** 2 + (xs - cx) ** 2) <= radius**2
        target[:3, disc] = colour.unsqueeze(1)
        target[3, disc] = 1.0
    return target


SOBEL = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]) / 8


class Automaton(nn.Module):
    """Perception (the state and its Sobel gradients per channel), a 1x1 MLP of `hidden` whose last layer starts at
    zero, an update of the cells `fire` picks, the alive mask (read from `alive_channel`)."""

    def __init__(self, hidden: int, alive_channel: int = 3) -> None:
        super().__init__()
        self.update = nn.Sequential(
            nn.Conv2d(3 * CHANNELS, hidden, 1), nn.ReLU(), nn.Conv2d(hidden, CHANNELS, 1)
        )
        nn.init.zeros_(self.update[2].weight)
        nn.init.zeros_(self.update[2].bias)
        kernels = torch.stack([SOBEL, SOBEL.T]).unsqueeze(1).repeat(CHANNELS, 1, 1, 1)
        self.register_buffer("kernels", kernels)
        self.alive_channel = alive_channel

    def alive(self, state: torch.Tensor) -> torch.Tensor:
        return F.max_pool2d(state[:, self.alive_channel : self.alive_channel + 1], 3, 1, 1) > 0.1

    def forward(
        self, state: torch.Tensor, fire: torch.Tensor, perceive_detached: bool = False
    ) -> torch.Tensor:
        before = self.alive(state)
        # the Sobel filters are fixed, not learnt
        seen = state.detach() if perceive_detached else state
        grads = F.conv2d(seen, self.kernels, padding=1, groups=CHANNELS)  # (gx, gy) per channel
        state = state + self.update(torch.cat([state, grads], 1)) * fire
        return state * (before & self.alive(state)).float()


def _seed_state(batch: int) -> torch.Tensor:
    state = torch.zeros(batch, CHANNELS, SIDE, SIDE)
    state[:, 3:, SIDE // 2, SIDE // 2] = 1.0
    return state


def _fire(gen: torch.Generator, batch: int) -> torch.Tensor:
    """The cells that update this step: a random half."""
    return (torch.rand(batch, 1, SIDE, SIDE, generator=gen) < 0.5).float()


def automaton(run: Run) -> None:
    """A neural cellular automaton of `hidden` (48), `batch` (4) rollouts a step, `opt` (Adam; or AdamW, Adamax,
    RMSprop) at `lr` (2e-3), gradients clipped by global norm at 1. Scored by the R^2 of the pattern grown in 14
    steps."""
    target = _target(torch.Generator().manual_seed(run.seed))
    torch.manual_seed(run.seed)
    model = Automaton(run.k("hidden", 48), alive_channel=0 if run.bug == "alive_mask_from_red_channel" else 3)
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 4)
    detached = run.bug == "perception_of_detached_state"
    goal = (
        torch.cat([target, torch.zeros(CHANNELS - 4, SIDE, SIDE)])
        if run.bug == "loss_on_every_channel"
        else target
    )

    def r2_grown() -> float:
        state, gen = _seed_state(2), torch.Generator().manual_seed(7)
        for _ in range(14):
            state = model(state, _fire(gen, 2), detached)
        return r2(state[:, :4].clamp(0, 1), target.expand(2, -1, -1, -1))

    for step in range(run.steps):
        state = _seed_state(batch)
        fire = _fire(run.gen, batch)
        for _ in range(int(torch.randint(12, 17, (1,), generator=run.gen))):
            if run.bug != "fire_mask_drawn_once_per_rollout":
                fire = _fire(run.gen, batch)
            state = model(state, fire, detached)
        loss = F.mse_loss(state[:, : len(goal)], goal.expand(batch, -1, -1, -1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if not close_step(run, step, loss, model, "val_pattern_r2", r2_grown):
            break


POINTS, KINDS = 32, 6
"""Padded drawing length and the number of kinds."""


def _outline(kind: int, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Points (x, y) of kind `kind` at fractions `t` of the way along its outline, in a unit box, and the pen-lift
    flag (1 where the pen left the paper before the point)."""
    lift = torch.zeros_like(t)
    if kind == 0:  # circle
        a = 2 * math.pi * t
        return torch.stack([torch.cos(a), torch.sin(a)], 1), lift
    if kind in (1, 2):  # square, triangle: along the polygon's edges
        sides = 4 if kind == 1 else 3
        turns = torch.arange(sides + 1) * 2 * math.pi / sides + math.pi / 4
        corners = torch.stack([torch.cos(turns), torch.sin(turns)], 1)
        pos = t * sides
        k = pos.long().clamp(max=sides - 1)
        frac = (pos - k).unsqueeze(1)
        return corners[k] * (1 - frac) + corners[k + 1] * frac, lift
    if kind == 3:  # zigzag
        x = 2 * t - 1
        tooth = 1 - (4 * t % 1 - 0.5).abs() * 2
        return torch.stack([x, 0.6 * torch.sign(torch.sin(4 * math.pi * t)) * tooth], 1), lift
    if kind == 4:  # spiral
        a, r = 4 * math.pi * t, 0.2 + 0.8 * t
        return torch.stack([r * torch.cos(a), r * torch.sin(a)], 1), lift
    # a cross of two strokes: the second half starts with the pen lifted
    first = t < 0.5
    u = (t % 0.5) * 4 - 1
    lift[(~first).nonzero()[:1]] = 1
    zero = torch.zeros_like(u)
    return torch.stack([torch.where(first, u, zero), torch.where(first, zero, u)], 1), lift


def _drawings(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pen offsets and lifts float[n, POINTS, 3] in pixels (zero past the end), lengths long[n], kinds long[n]."""
    kinds = torch.randint(0, KINDS, (n,), generator=g)
    lengths = torch.randint(8, POINTS + 1, (n,), generator=g)
    seqs = torch.zeros(n, POINTS, 3)
    for i in range(n):
        m = int(lengths[i])
        t = torch.linspace(0, 1, m)
        pts, lift = _outline(int(kinds[i]), t)
        angle = float(torch.rand(1, generator=g) - 0.5) * 2
        rot = torch.tensor([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
        scale = 20 + 40 * float(torch.rand(1, generator=g))
        pts = pts @ rot.T * scale + 0.05 * scale * torch.randn(m, 2, generator=g)
        seqs[i, :m, :2] = torch.diff(pts, dim=0, prepend=pts[:1])
        seqs[i, :m, 2] = lift
    return seqs, lengths, kinds


class SketchGRU(nn.Module):
    """A GRU of `hidden` over the points, its state at each drawing's last point (or the padded end) through an MLP."""

    def __init__(self, hidden: int, at_padded_end: bool = False) -> None:
        super().__init__()
        self.gru = nn.GRU(3, hidden, batch_first=True)
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, KINDS))
        self.at_padded_end = at_padded_end

    def forward(
        self, seqs: torch.Tensor, lengths: torch.Tensor, h0: torch.Tensor | None = None
    ) -> torch.Tensor:
        if self.at_padded_end:
            out, self.state = self.gru(seqs, h0)
            return self.head(out[:, -1])
        packed = nn.utils.rnn.pack_padded_sequence(seqs, lengths, batch_first=True, enforce_sorted=False)
        _, self.state = self.gru(packed, h0)
        return self.head(self.state[0])


def sketches(run: Run) -> None:
    """A sketch classifier of `hidden` (64), batches of `batch` (64), `opt` (Adam; or AdamW, RMSprop, Nesterov SGD) at
    `lr` (3e-3), optionally after a linear warm-up of `warmup` steps. Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    seqs, lengths, kinds = _drawings(g, 3000)
    seqs_v, lengths_v, kinds_v = _drawings(g, 600)
    spread = seqs[..., :2][seqs[..., :2] != 0].std()
    scale = torch.tensor([spread, spread, 1.0])
    seqs, seqs_v = seqs / scale, seqs_v / scale
    torch.manual_seed(run.seed)
    model = SketchGRU(run.k("hidden", 64), at_padded_end=run.bug == "state_read_at_padded_end")
    opt = optimizers.registered(run, model, 3e-3)
    warmup = run.k("warmup", 0)
    sched = None
    if warmup and run.bug != "warmup_left_out":
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
    batch = run.k("batch", 64)

    def held_out_accuracy() -> float:
        return accuracy(model(seqs_v, lengths_v), kinds_v)

    carried: torch.Tensor | None = None
    for step in range(run.steps):
        pick = run.indices(len(seqs), batch)
        x, n, y = seqs[pick], lengths[pick], kinds[pick]
        # longest first, as packing used to require
        order = n.argsort(descending=True)
        x, n, y = x[order], n[order], y[order]
        # the state kept from the last batch, as a stateful language model keeps it
        h0 = carried if run.bug == "state_carried_across_batches" else None
        loss = F.cross_entropy(model(x, n, h0), y)
        carried = model.state.detach()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_accuracy", held_out_accuracy):
            break
