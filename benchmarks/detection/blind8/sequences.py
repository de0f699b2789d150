"""Sequence and dynamics scripts of the eighth blind split: a pointer network that sorts numbers, deep knowledge
tracing with an LSTM, and a neural ODE integrated by explicit Euler steps.

`pointer`: an LSTM encoder over the numbers, an LSTM-cell decoder fed (teacher forcing) the element it pointed to
last, additive attention over the encoder states as the pointer, positions already pointed to masked with -inf;
cross-entropy against the sorting permutation; scored by the share of positions a greedy decoding of held-out
lists gets right. `ktrace`: an LSTM over one-hot (skill, answer) interactions predicting, at each step, the chance
of answering the next exercise right (the output for the next exercise's skill); BCE; scored by the AUC of those
predictions on held-out students. `node`: a tanh MLP vector field integrated by Euler steps of 0.2 / `substeps`
from each initial state, the states at the observation times compared to the observed trajectory (MSE); scored by
R^2 of held-out trajectories' displacements from their starts. Bugs: the targets built as the ranks (argsort of argsort) instead of the sorting
permutation, the pointer's log-softmax over the batch, the pointed positions masked with 0 instead of -inf, the
interaction index written skill + answer, the prediction read at the current exercise's skill, the Euler step
without its dt, the vector field evaluated at the initial state at every step, the observations compared one step late.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind8 import data
from benchmarks.detection.torch_real.loop import make_optimizer


class PointerNet(nn.Module):
    def __init__(self, hidden: int, *, mask_value: float) -> None:
        super().__init__()
        self.embed = nn.Linear(1, hidden)
        self.encoder = nn.LSTM(hidden, hidden, batch_first=True)
        self.decoder = nn.LSTMCell(hidden, hidden)
        self.start = nn.Parameter(torch.zeros(hidden))
        self.w_enc, self.w_dec = nn.Linear(hidden, hidden, bias=False), nn.Linear(hidden, hidden, bias=False)
        self.v = nn.Linear(hidden, 1, bias=False)
        self.mask_value = mask_value

    def forward(self, x: torch.Tensor, order: torch.Tensor | None = None) -> torch.Tensor:
        """Attention scores float[n, length, length] (step, position); teacher-forced along `order` when given,
        else greedy."""
        n, length = x.shape
        e = self.embed(x[..., None])
        enc, (h, c) = self.encoder(e)
        h, c = h[0], c[0]
        keys = self.w_enc(enc)
        inp = self.start.expand(n, -1)
        pointed = torch.zeros(n, length, dtype=torch.bool)
        rows, out = torch.arange(n), []
        for t in range(length):
            h, c = self.decoder(inp, (h, c))
            s = self.v(torch.tanh(keys + self.w_dec(h)[:, None]))[..., 0]
            s = s.masked_fill(pointed, self.mask_value)
            out.append(s)
            pick = order[:, t] if order is not None else s.argmax(1)
            pointed = pointed.clone()
            pointed[rows, pick] = True
            inp = e[rows, pick]
        return torch.stack(out, 1)


def pointer(run: Run) -> None:
    """A pointer network sorting 8 numbers: hidden `hidden` (64), Adam (lr `lr`, 2e-3), RAdam, NAdam or AdamW
    (`opt`), batch `batch` (64), gradient norm clipped at 2. Scored by the share of positions a greedy decoding of
    held-out lists points to correctly."""
    g = torch.Generator().manual_seed(run.seed)
    xv, x = data.numbers(g, 500), data.numbers(g, 5000)
    target_v = xv.argsort(1)
    if run.bug == "targets_are_ranks_not_permutation":
        target = x.argsort(1).argsort(1)
    else:
        target = x.argsort(1)
    torch.manual_seed(run.seed)
    mask_value = 0.0 if run.bug == "pointed_positions_masked_with_zero" else float("-inf")
    model = PointerNet(run.k("hidden", 64), mask_value=mask_value)
    name = run.k("opt", "adam")
    opt = make_optimizer(
        name, model.parameters(), run.k("lr", 2e-3), weight_decay=0.01 if name == "adamw" else 0.0
    )
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    batch = run.k("batch", 64)

    def score() -> float:
        return float((model(xv).argmax(-1) == target_v).float().mean())

    for step in range(run.steps):
        i = run.indices(len(x), batch)
        scores = model(x[i], target[i])
        dim = 0 if run.bug == "pointer_log_softmax_over_batch" else -1
        logp = scores.log_softmax(dim).clamp_min(-1e4)
        loss = F.nll_loss(logp.reshape(-1, logp.shape[-1]), target[i].reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 2.0)
        opt.step()
        if not close_step(run, step, loss, model, "val_position_acc", score):
            break


class KnowledgeTracer(nn.Module):
    def __init__(self, skills: int, hidden: int) -> None:
        super().__init__()
        self.lstm = nn.LSTM(2 * skills, hidden, batch_first=True)
        self.out = nn.Linear(hidden, skills)

    def forward(self, interactions: torch.Tensor) -> torch.Tensor:
        return self.out(self.lstm(interactions)[0])


def ktrace(run: Run) -> None:
    """Deep knowledge tracing on 10 skills (students of 40 exercises): LSTM hidden `hidden` (64), Adam (lr `lr`,
    3e-3), Adamax, RMSprop or Nesterov SGD (`opt`), batch `batch` (32 students). Scored by the AUC of the
    next-answer predictions on held-out students."""
    skills = 10
    g = torch.Generator().manual_seed(run.seed)
    q, a = data.students(g, 3000, skills=skills)
    qv, av, q, a = q[:600], a[:600], q[600:], a[600:]
    torch.manual_seed(run.seed)
    model = KnowledgeTracer(skills, run.k("hidden", 64))
    name = run.k("opt", "adam")
    opt = make_optimizer(name, model.parameters(), 0.5 if name == "nesterov" else run.k("lr", 3e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    batch = run.k("batch", 32)

    def encode(qs: torch.Tensor, ans: torch.Tensor) -> torch.Tensor:
        if run.bug == "interaction_index_skill_plus_answer":
            index = qs + ans.long()
        else:
            index = qs + skills * ans.long()
        return F.one_hot(index, 2 * skills).float()

    def next_logits(qs: torch.Tensor, ans: torch.Tensor, *, read_current: bool = False) -> torch.Tensor:
        logits = model(encode(qs, ans))[:, :-1]
        skill = qs[:, :-1] if read_current else qs[:, 1:]
        return logits.gather(2, skill[..., None])[..., 0]

    def score() -> float:
        return auc(next_logits(qv, av).flatten(), av[:, 1:].flatten())

    for step in range(run.steps):
        i = run.indices(len(q), batch)
        logits = next_logits(q[i], a[i], read_current=run.bug == "prediction_read_at_current_skill")
        loss = F.binary_cross_entropy_with_logits(logits, a[i, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", score):
            break


class VectorField(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                 nn.Linear(hidden, 2))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def node(run: Run) -> None:
    """A neural ODE fitted to trajectories of a damped oscillator (10 observations 0.2 apart): vector field of
    width `hidden` (64), `substeps` (2) Euler steps per observation, Adam (lr `lr`, 3e-3), RAdam, Rprop (full batch
    of 512) or Adadelta (`opt`), batch `batch` (64). Scored by R^2 of the held-out trajectories' displacements
    from their initial states."""
    g = torch.Generator().manual_seed(run.seed)
    x0, traj = data.trajectories(g, 2500, dt=0.2)
    x0v, tv, x0, traj = x0[:500], traj[:500], x0[500:], traj[500:]
    torch.manual_seed(run.seed)
    field = VectorField(run.k("hidden", 64))
    name = run.k("opt", "adam")
    lr = {"adadelta": 1.0, "rprop": 1e-3}.get(name, run.k("lr", 3e-3))
    opt = (
        torch.optim.Rprop(field.parameters(), lr=lr)
        if name == "rprop"
        else make_optimizer(name, field.parameters(), lr)
    )
    run.hook.register_module(field)
    run.hook.register_optimizer(opt)
    batch = 512 if name == "rprop" else run.k("batch", 64)
    substeps = run.k("substeps", 2)
    dt = 0.2 / substeps

    def integrate(start: torch.Tensor) -> torch.Tensor:
        h, out = start, []
        for _ in range(traj.shape[1]):
            for _ in range(substeps):
                if run.bug == "euler_step_without_dt":
                    h = h + field(h)
                elif run.bug == "field_evaluated_at_initial_state":
                    h = h + dt * field(start)
                else:
                    h = h + dt * field(h)
            out.append(h)
        return torch.stack(out, 1)

    for step in range(run.steps):
        i = run.indices(len(x0), batch)
        pred = integrate(x0[i])
        if run.bug == "observations_compared_one_step_late":
            loss = F.mse_loss(pred[:, :-1], traj[i, 1:])
        else:
            loss = F.mse_loss(pred, traj[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(
            run, step, loss, field, "val_r2", lambda: r2(integrate(x0v) - x0v[:, None], tv - x0v[:, None])
        ):
            break
