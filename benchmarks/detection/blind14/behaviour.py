"""Behaviour-modelling scripts of the fourteenth blind split: behaviour cloning of an expert controller, and a
next-basket recommender.

`cloning`: a point mass in the plane (velocity decays by 0.8 a step and takes 0.5 x the action, position moves 0.2 x
the velocity) steered to a goal by a PD expert (1.5 x the offset to the goal - 0.6 x the velocity, the point mass
clipping actions to [-1, 1]); 100 demonstrations of 40 steps with the executed actions (the expert's plus noise 0.1,
clipped) recorded; a Gaussian policy (an MLP mean through tanh and a learned state-independent log standard deviation)
on the observation (position, velocity, goal) fitted by the Gaussian negative log-likelihood of the recorded actions;
scored by rolling the policy's mean out for 40 steps from 100 held-out starts and goals (the mean of 1 - final
distance / starting distance, each clipped at 0). `next_basket`: 60 items in 6 categories; each shopper has 3 staples
bought with probability 0.7 each visit and two favourite categories from which 3 more items are drawn; 7 baskets a
shopper as multi-hot rows; each basket embedded as the mean of its items' embeddings, a GRU over the first 6 baskets,
a linear layer to the 60 items plus a learned weight (from 0) times each item's purchase frequency in the history, BCE
against the 7th basket; scored by the held-out recall@5. Bugs: the log standard deviation used as the standard
deviation, the observation built without the goal, the observations paired with the next step's actions, the actions
min-max scaled to [0, 1]; the target basket left inside the history window, the target baskets' item ids off by one,
histories and targets drawn by two separate shuffles, the history fed newest first.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

HORIZON = 40
"""Steps of a demonstration and of an evaluation rollout."""


def _move(state: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    """The next states float[n, 6] (position, velocity, goal) after `action` float[n, 2] (clipped to [-1, 1])."""
    pos, vel, goal = state.split(2, dim=1)
    vel = 0.8 * vel + 0.5 * action.clamp(-1, 1)
    return torch.cat([pos + 0.2 * vel, vel, goal], dim=1)


def _starts(g: torch.Generator, n: int) -> torch.Tensor:
    """Starting states float[n, 6]: position and goal uniform in [-1, 1]^2, at rest."""
    return torch.cat(
        [2 * torch.rand(n, 2, generator=g) - 1, torch.zeros(n, 2), 2 * torch.rand(n, 2, generator=g) - 1], 1
    )


def expert(state: torch.Tensor) -> torch.Tensor:
    """The PD expert's commands float[n, 2] (the point mass clips them to [-1, 1])."""
    pos, vel, goal = state.split(2, dim=1)
    return 1.5 * (goal - pos) - 0.6 * vel


def _demonstrations(g: torch.Generator, episodes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """States float[episodes, HORIZON, 6] and executed actions float[episodes, HORIZON, 2] of noisy expert runs."""
    state, states, actions = _starts(g, episodes), [], []
    for _ in range(HORIZON):
        command = expert(state) + 0.1 * torch.randn(episodes, 2, generator=g)
        states.append(state)
        actions.append(command.clamp(-1, 1))
        state = _move(state, command)
    return torch.stack(states, 1), torch.stack(actions, 1)


class GaussianPolicy(nn.Module):
    """An MLP mean of `width` through tanh and a state-independent log standard deviation."""

    def __init__(self, inputs: int, width: int) -> None:
        super().__init__()
        self.mean = nn.Sequential(nn.Linear(inputs, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(),
                                  nn.Linear(width, 2), nn.Tanh())  # fmt: skip
        self.log_std = nn.Parameter(torch.full((2,), -0.5))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """The policy's mean actions float[n, 2]."""
        return self.mean(obs)


def cloning(run: Run) -> None:
    """A cloned Gaussian policy of `width` (64), batches of `batch` (128), `opt` (Adam; or AdamW, RMSprop, Adamax) at
    `lr` (1e-3). Scored by the held-out rollouts' progress to the goal."""
    g = torch.Generator().manual_seed(run.seed)
    states, actions = _demonstrations(g, 100)
    if run.bug == "observations_paired_with_next_actions":
        states, actions = states[:, :-1], actions[:, 1:]
    states, actions = states.reshape(-1, 6), actions.reshape(-1, 2)
    if run.bug == "actions_minmax_scaled":
        low, high = actions.min(0).values, actions.max(0).values
        actions = (actions - low) / (high - low)
    starts_v = _starts(g, 100)

    def observe(state: torch.Tensor) -> torch.Tensor:
        pos, vel, goal = state.split(2, dim=1)
        return (
            torch.cat([pos, vel], 1)
            if run.bug == "goal_not_in_observation"
            else torch.cat([pos, vel, goal], 1)
        )

    torch.manual_seed(run.seed)
    model = GaussianPolicy(4 if run.bug == "goal_not_in_observation" else 6, run.k("width", 64))
    opt = optimizers.registered(run, model, 1e-3)
    batch = run.k("batch", 128)

    def progress() -> float:
        state = starts_v
        for _ in range(HORIZON):
            state = _move(state, model(observe(state)))
        start = (starts_v[:, 4:] - starts_v[:, :2]).norm(dim=1)
        return float((1 - (state[:, 4:] - state[:, :2]).norm(dim=1) / start).clamp(min=0).mean())

    for step in range(run.steps):
        pick = run.indices(len(states), batch)
        mean = model(observe(states[pick]))
        log_std = model.log_std
        std = log_std if run.bug == "log_std_used_as_std" else log_std.exp()
        loss = (0.5 * ((actions[pick] - mean) / std) ** 2 + torch.log(std)).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_goal_progress", progress):
            break


ITEMS = 60
"""Items in the catalogue, 6 categories of 10."""
VISITS = 7
"""Baskets a shopper: 6 of history and the one to predict."""


def _shoppers(g: torch.Generator, n: int, popularity: torch.Tensor) -> torch.Tensor:
    """Baskets float[n, VISITS, ITEMS] as multi-hot rows."""
    staples = torch.multinomial(popularity.expand(n, -1), 3, generator=g)
    favourite = torch.multinomial(torch.ones(n, 6), 2, generator=g)
    in_favourite = torch.zeros(n, 6).scatter_(1, favourite, 1.0).repeat_interleave(10, dim=1)
    baskets = torch.zeros(n, VISITS, ITEMS)
    for visit in range(VISITS):
        bought = torch.rand(n, 3, generator=g) < 0.7
        baskets[:, visit].scatter_(1, staples, bought.float())
        extra = torch.multinomial(in_favourite * popularity, 3, generator=g)
        baskets[:, visit].scatter_(1, extra, 1.0)
    return baskets


class BasketGRU(nn.Module):
    """Item embeddings of `dim`, a basket as its items' mean embedding, a GRU over baskets and a linear item scorer,
    plus a learned weight on how often each item was bought in the history (the repeat purchases)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.items = nn.Parameter(0.1 * torch.randn(ITEMS, dim))
        self.gru = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, ITEMS)
        self.repeat = nn.Parameter(torch.zeros(()))

    def forward(self, history: torch.Tensor) -> torch.Tensor:
        baskets = history @ self.items / history.sum(2, keepdim=True).clamp(min=1)
        _, last = self.gru(baskets)
        return self.out(last[0]) + self.repeat * history.mean(1)


def next_basket(run: Run) -> None:
    """A next-basket GRU of `dim` (32), batches of `batch` (64) shoppers, `opt` (Adam; or AdamW, Adagrad, NAdam) at
    `lr` (3e-3). Scored by the held-out recall@5 of the next basket."""
    g = torch.Generator().manual_seed(run.seed)
    popularity = torch.rand(ITEMS, generator=g) ** 2 + 0.05
    baskets = _shoppers(g, 3000, popularity)
    baskets_v = _shoppers(g, 500, popularity)
    window = slice(1, VISITS) if run.bug == "target_basket_in_history" else slice(0, VISITS - 1)
    history, target = baskets[:, window], baskets[:, -1]
    if run.bug == "target_item_ids_off_by_one":
        target = target.roll(1, dims=1)
    if run.bug == "history_fed_newest_first":
        history = history.flip(1)
    torch.manual_seed(run.seed)
    model = BasketGRU(run.k("dim", 32))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 64)

    def recall_at_5() -> float:
        history_v = baskets_v[:, : VISITS - 1]
        if run.bug == "history_fed_newest_first":
            history_v = history_v.flip(1)
        top = model(history_v).topk(5, dim=1).indices
        hits = baskets_v[:, -1].gather(1, top).sum(1)
        return float((hits / baskets_v[:, -1].sum(1).clamp(max=5)).mean())

    for step in range(run.steps):
        pick = run.indices(len(history), batch)
        wanted = (
            run.indices(len(history), batch) if run.bug == "histories_and_targets_shuffled_apart" else pick
        )
        loss = F.binary_cross_entropy_with_logits(model(history[pick]), target[wanted])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_recall_at_5", recall_at_5):
            break
