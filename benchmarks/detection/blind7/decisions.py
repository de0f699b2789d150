"""Survival, ranking and decision scripts of the seventh blind split: a Cox proportional-hazards network, a
matrix-factorisation recommender trained with the BPR loss, and REINFORCE with a learned baseline on a
contextual bandit.

`cox`: an MLP gives each patient a log-risk; the loss is the negative Cox partial log-likelihood of a mini-batch
(patients sorted by descending observed time so that a running log-sum-exp is each event's risk set; only events
count); scored by the concordance of the predicted risks with the uncensored event times of held-out patients.
`bpr`: user and item embeddings with item biases; each step samples (user, seen item, unseen item) triples and
minimises -log sigmoid(score(seen) - score(unseen)) plus a small L2 term on the rows used; scored by the AUC of
held-out interactions against unseen items. `bandit`: a softmax policy over five arms and a value network as the
baseline; each step draws a batch of contexts, samples arms, observes noisy rewards and ascends (reward -
baseline) x log-probability, the baseline regressed on the rewards; scored by the regret of the greedy policy on
held-out contexts (1: always the best arm, 0: no better than a random arm). Bugs: the batch sorted by ascending
time, the event indicator read as a censoring indicator, the hazard exp(output) put where the partial likelihood
expects the log-risk, seen and unseen items swapped, the unseen items drawn from the range of user ids (fewer than
the items), the advantage not detached from the baseline, the log-probability taken of the greedy arm instead of
the sampled one.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, auc
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind7 import data
from benchmarks.detection.torch_real.loop import make_optimizer


def concordance(risk: torch.Tensor, event_time: torch.Tensor) -> float:
    """Harrell's C over all pairs: the share of pairs where the higher risk has the earlier event."""
    if not torch.isfinite(risk).all():
        return 0.0
    earlier = event_time[:, None] < event_time[None, :]
    higher = (risk[:, None] > risk[None, :]).float() + 0.5 * (risk[:, None] == risk[None, :]).float()
    return float((higher * earlier).sum() / earlier.sum())


def cox(run: Run) -> None:
    """A Cox network (10 -> `hidden` (32) -> 1, SELU) on censored survival data: Adam (lr `lr`, 1e-3), RAdam or
    Nesterov SGD (`opt`, lr 0.02 with step decay), batch `batch` (128). Scored by the concordance on 800 held-out
    patients."""
    g = torch.Generator().manual_seed(run.seed)
    x, time, event, event_time = data.survival(g, 4800)
    xv, tv, x, time, event = x[:800], event_time[:800], x[800:], time[800:], event[800:]
    if run.bug == "event_read_as_censoring":
        event = 1 - event
    torch.manual_seed(run.seed)
    hidden = run.k("hidden", 32)
    model = nn.Sequential(
        nn.Linear(10, hidden), nn.SELU(), nn.Linear(hidden, hidden), nn.SELU(), nn.Linear(hidden, 1)
    )
    name = run.k("opt", "adam")
    opt = make_optimizer(name, model.parameters(), 0.02 if name == "nesterov" else run.k("lr", 1e-3))
    sched = torch.optim.lr_scheduler.StepLR(opt, 100, 0.5) if name == "nesterov" else None
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    batch = run.k("batch", 128)
    for step in range(run.steps):
        i = run.indices(len(x), batch)
        i = i[time[i].argsort(descending=run.bug != "times_sorted_ascending")]
        risk = model(x[i])[:, 0]
        if run.bug == "hazard_used_as_log_risk":
            risk = torch.exp(risk)
        log_risk_set = torch.logcumsumexp(risk, 0)
        ev = event[i]
        loss = -((risk - log_risk_set) * ev).sum() / ev.sum().clamp(min=1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_c_index", lambda: concordance(model(xv)[:, 0], tv)):
            break


class MF(nn.Module):
    def __init__(self, users: int, items: int, dim: int) -> None:
        super().__init__()
        self.user, self.item = nn.Embedding(users, dim), nn.Embedding(items, dim)
        self.bias = nn.Embedding(items, 1)
        for emb in (self.user, self.item):
            nn.init.normal_(emb.weight, std=0.1)
        nn.init.zeros_(self.bias.weight)

    def forward(self, u: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return (self.user(u) * self.item(i)).sum(-1) + self.bias(i)[..., 0]


def bpr(run: Run) -> None:
    """BPR matrix factorisation (300 users, 400 items, `dim` 32) on implicit feedback, 20% of each user's
    interactions held out: Adam (lr `lr`, 0.01), ASGD (lr 30) or Nesterov SGD (lr 5) (`opt`), batch `batch` (512) triples,
    L2 1e-4 on the rows used. Scored by the AUC of held-out interactions against as many unseen items."""
    g = torch.Generator().manual_seed(run.seed)
    seen = data.interactions(g)
    pairs = seen.nonzero()
    pairs = pairs[torch.randperm(len(pairs), generator=g)]
    n_val = len(pairs) // 5
    val, train = pairs[:n_val], pairs[n_val:]
    val_neg = torch.stack([val[:, 0], torch.randint(0, seen.shape[1], (n_val,), generator=g)], 1)
    val_neg = val_neg[~seen[val_neg[:, 0], val_neg[:, 1]]]
    torch.manual_seed(run.seed)
    model = MF(*seen.shape, run.k("dim", 32))
    name = run.k("opt", "adam")
    if name == "asgd":
        opt: torch.optim.Optimizer = torch.optim.ASGD(model.parameters(), lr=run.k("lr", 30.0), t0=100)
    elif name == "nesterov":
        opt = torch.optim.SGD(model.parameters(), lr=run.k("lr", 5.0), momentum=0.9, nesterov=True)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 0.01))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def score() -> float:
        s = torch.cat([model(val[:, 0], val[:, 1]), model(val_neg[:, 0], val_neg[:, 1])])
        return auc(s, torch.cat([torch.ones(len(val)), torch.zeros(len(val_neg))]))

    batch = run.k("batch", 512)
    for step in range(run.steps):
        t = train[run.indices(len(train), batch)]
        u, pos = t[:, 0], t[:, 1]
        n_items = seen.shape[0] if run.bug == "negatives_drawn_from_user_range" else seen.shape[1]
        neg = torch.randint(0, n_items, (batch,), generator=run.gen)
        if run.bug == "seen_and_unseen_swapped":
            pos, neg = neg, pos
        diff = model(u, pos) - model(u, neg)
        reg = model.user(u).pow(2).sum() + model.item(pos).pow(2).sum() + model.item(neg).pow(2).sum()
        loss = -F.logsigmoid(diff).mean() + 1e-4 * reg
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_auc", score):
            break


class PolicyValue(nn.Module):
    def __init__(self, arms: int = 5) -> None:
        super().__init__()
        self.policy = nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, arms))
        self.value = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.policy(x), self.value(x)[:, 0]


def bandit(run: Run) -> None:
    """REINFORCE with a value baseline on a five-armed contextual bandit (rewards: the arm's mean plus noise of sd
    `noise`, 0.5): Adam (lr `lr`, 3e-3), RMSprop or NAdam (`opt`), `batch` (64) contexts a step, entropy bonus
    0.01. Scored on 2000 held-out contexts: (mean reward of the greedy arm - of a random arm) / (of the best arm
    - of a random arm), clipped to [0, 1]."""
    g = torch.Generator().manual_seed(run.seed)
    xv, mv = data.bandit_contexts(g, 2000)
    torch.manual_seed(run.seed)
    model = PolicyValue()
    opt = make_optimizer(run.k("opt", "adam"), model.parameters(), run.k("lr", 3e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def score() -> float:
        greedy = mv.gather(1, model(xv)[0].argmax(1, keepdim=True))[:, 0].mean()
        rand, best = mv.mean(), mv.max(1).values.mean()
        return float(((greedy - rand) / (best - rand)).clamp(0, 1))

    batch, noise = run.k("batch", 64), run.k("noise", 0.5)
    for step in range(run.steps):
        x, means = data.bandit_contexts(run.gen, batch)
        logits, value = model(x)
        dist = torch.distributions.Categorical(logits=logits)
        arm = dist.sample()
        reward = means.gather(1, arm[:, None])[:, 0] + noise * torch.randn(batch, generator=run.gen)
        if run.bug == "advantage_not_detached":
            advantage = reward - value
        else:
            advantage = reward - value.detach()
        taken = logits.argmax(1) if run.bug == "log_prob_of_greedy_arm" else arm
        policy_loss = -(dist.log_prob(taken) * advantage).mean() - 0.01 * dist.entropy().mean()
        loss = policy_loss + 0.5 * F.mse_loss(value, reward)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_regret_score", score):
            break
