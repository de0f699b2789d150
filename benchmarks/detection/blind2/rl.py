"""Value-based and actor-critic scripts of the second blind split, on small grid worlds run as batches of
environments.

`dqn`: goal-conditioned navigation on a 4x4 grid (the goal changes every episode and is part of the
observation); a Q-network, a target network copied every 20 steps, a replay buffer, epsilon-greedy
exploration, Huber loss, Adam; optionally double DQN. `actor_critic`: A2C on a 5x5 grid with a goal and a pit,
32 environments, 5-step returns, a shared body with policy and value heads, RMSprop and clipping. Both are
scored by the greedy policy's success rate over every start. Bugs: the target network never refreshed, the
rewards negated (read as costs).
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run

MOVES = torch.tensor([[-1, 0], [1, 0], [0, -1], [0, 1]])


class GoalGrid:
    """`n` copies of a size x size grid: the agent walks to a goal drawn anew each episode; -0.02 a move, +1 at
    the goal, at most `horizon` moves. Observations: one-hot agent cell and one-hot goal cell."""

    def __init__(self, n: int, g: torch.Generator, size: int = 4, horizon: int = 10) -> None:
        self.n, self.g, self.size, self.horizon = n, g, size, horizon
        self.pos = torch.zeros(n, 2, dtype=torch.long)
        self.goal = torch.zeros(n, 2, dtype=torch.long)
        self.t = torch.zeros(n, dtype=torch.long)
        self.reset(torch.ones(n, dtype=torch.bool))

    def reset(self, which: torch.Tensor) -> None:
        k = int(which.sum())
        cells = self.size * self.size
        start = torch.randint(0, cells, (k,), generator=self.g)
        goal = (start + torch.randint(1, cells, (k,), generator=self.g)) % cells
        self.pos[which] = torch.stack([start // self.size, start % self.size], 1)
        self.goal[which] = torch.stack([goal // self.size, goal % self.size], 1)
        self.t[which] = 0

    def obs(self) -> torch.Tensor:
        cells = self.size * self.size
        return torch.cat([F.one_hot(self.pos[:, 0] * self.size + self.pos[:, 1], cells),
                          F.one_hot(self.goal[:, 0] * self.size + self.goal[:, 1], cells)], 1).float()  # fmt: skip

    def step(self, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.pos = (self.pos + MOVES[action]).clamp(0, self.size - 1)
        self.t += 1
        reached = (self.pos == self.goal).all(1)
        reward = reached.float() - 0.02
        done = reached | (self.t >= self.horizon)
        return reward, done


def _q_success(q: nn.Module, size: int = 4) -> float:
    cells = size * size
    start, goal = torch.meshgrid(torch.arange(cells), torch.arange(cells), indexing="ij")
    keep = start != goal
    start, goal = start[keep], goal[keep]
    env = GoalGrid(len(start), torch.Generator().manual_seed(0), size)
    env.pos = torch.stack([start // size, start % size], 1)
    env.goal = torch.stack([goal // size, goal % size], 1)
    success = torch.zeros(len(start), dtype=torch.bool)
    for _ in range(env.horizon):
        _, done = env.step(q(env.obs()).argmax(1))
        success |= (env.pos == env.goal).all(1)
        if done.all():
            break
    return float(success.float().mean())


def dqn(run: Run) -> None:
    """DQN on the goal grid: 16 environments, one gradient step (batch 64 from a 10k replay) per environment
    step, epsilon from 1 to 0.05 over 60% of the run, gamma 0.9, a target network copied every 20 steps, Huber
    loss, Adam. `double`: double DQN targets."""
    env = GoalGrid(16, torch.Generator().manual_seed(run.seed))
    torch.manual_seed(run.seed)
    q = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 4))
    target = copy.deepcopy(q)
    opt = torch.optim.Adam(q.parameters(), lr=run.k("lr", 1e-3))
    run.hook.register_module(q)
    run.hook.register_optimizer(opt)
    cap = 10000
    buf = {"o": torch.zeros(cap, 32), "a": torch.zeros(cap, dtype=torch.long), "r": torch.zeros(cap),
           "o2": torch.zeros(cap, 32), "d": torch.zeros(cap)}  # fmt: skip
    filled = 0

    def act_and_store(eps: float) -> None:
        nonlocal filled
        o = env.obs()
        with torch.no_grad():
            greedy = q(o).argmax(1)
        explore = torch.rand(env.n, generator=run.gen) < eps
        a = torch.where(explore, torch.randint(0, 4, (env.n,), generator=run.gen), greedy)
        r, done = env.step(a)
        reached = (env.pos == env.goal).all(1)
        o2 = env.obs()
        idx = torch.arange(filled, filled + env.n) % cap
        for key, val in (("o", o), ("a", a), ("r", r), ("o2", o2), ("d", reached.float())):
            buf[key][idx] = val
        filled += env.n
        env.reset(done)

    for _ in range(16):  # warm-up: 256 random transitions before learning starts
        act_and_store(1.0)
    double = run.k("double", False)
    for step in range(run.steps):
        act_and_store(max(0.05, 1.0 - step / (0.6 * run.steps)))
        i = torch.randint(0, min(filled, cap), (64,), generator=run.gen)
        with torch.no_grad():
            if double:
                nxt = target(buf["o2"][i]).gather(1, q(buf["o2"][i]).argmax(1, keepdim=True)).squeeze(1)
            else:
                nxt = target(buf["o2"][i]).max(1).values
            y = buf["r"][i] + 0.9 * (1 - buf["d"][i]) * nxt
        pred = q(buf["o"][i]).gather(1, buf["a"][i][:, None]).squeeze(1)
        loss = F.smooth_l1_loss(pred, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 19 and run.bug != "target_never_updated":
            target.load_state_dict(q.state_dict())
        run.hook.record_scalar("td_loss", loss.detach())
        run.hook.record_scalar("q_mean", pred.detach().mean())
        if not run.end_step(step, loss.detach(), q, lambda: _q_success(q)):
            break


class PitGrid:
    """`n` copies of a 5x5 grid: the goal in the far corner (+1), a pit in the middle of the way (-1), -0.01 a
    move; episodes end at either or after 20 moves and restart from a random free cell."""

    SIZE, GOAL, PIT = 5, (4, 4), (2, 3)

    def __init__(self, n: int, g: torch.Generator) -> None:
        self.n, self.g = n, g
        self.pos = torch.zeros(n, 2, dtype=torch.long)
        self.t = torch.zeros(n, dtype=torch.long)
        self.reset(torch.ones(n, dtype=torch.bool))

    @staticmethod
    def free_cells() -> torch.Tensor:
        cells = torch.stack(torch.meshgrid(torch.arange(5), torch.arange(5), indexing="ij"), -1).view(-1, 2)
        bad = (cells == torch.tensor(PitGrid.GOAL)).all(1) | (cells == torch.tensor(PitGrid.PIT)).all(1)
        return cells[~bad]

    def reset(self, which: torch.Tensor) -> None:
        free = self.free_cells()
        pick = torch.randint(0, len(free), (int(which.sum()),), generator=self.g)
        self.pos[which] = free[pick]
        self.t[which] = 0

    def obs(self) -> torch.Tensor:
        return F.one_hot(self.pos[:, 0] * self.SIZE + self.pos[:, 1], self.SIZE * self.SIZE).float()

    def step(self, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        self.pos = (self.pos + MOVES[action]).clamp(0, self.SIZE - 1)
        self.t += 1
        goal = (self.pos == torch.tensor(self.GOAL)).all(1)
        pit = (self.pos == torch.tensor(self.PIT)).all(1)
        reward = goal.float() - pit.float() - 0.01
        done = goal | pit | (self.t >= 20)
        return reward, done, goal | pit


class ActorCritic(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(25, 64), nn.Tanh())
        self.pi = nn.Linear(64, 4)
        self.v = nn.Linear(64, 1)

    def forward(self, o: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.body(o)
        return self.pi(h), self.v(h).squeeze(1)


def _ac_success(model: ActorCritic) -> float:
    free = PitGrid.free_cells()
    env = PitGrid(len(free), torch.Generator().manual_seed(0))
    env.pos = free.clone()
    success = torch.zeros(len(free), dtype=torch.bool)
    alive = torch.ones(len(free), dtype=torch.bool)
    for _ in range(20):
        _, done, _ = env.step(model(env.obs())[0].argmax(1))
        success |= alive & (env.pos == torch.tensor(PitGrid.GOAL)).all(1)
        alive &= ~done
    return float(success.float().mean())


def actor_critic(run: Run) -> None:
    """A2C on the pit grid: 32 environments, 5-step bootstrapped returns (gamma 0.95), advantage = return - value,
    value loss 0.5, entropy bonus 0.01, RMSprop (lr 3e-3), clipping at 0.5."""
    env = PitGrid(32, torch.Generator().manual_seed(run.seed))
    torch.manual_seed(run.seed)
    model = ActorCritic()
    opt = torch.optim.RMSprop(model.parameters(), lr=run.k("lr", 3e-3), alpha=0.99, eps=1e-5)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        logps, values, rewards, masks, entropies = [], [], [], [], []
        for _ in range(5):
            logits, v = model(env.obs())
            dist = torch.distributions.Categorical(logits=logits)
            a = torch.multinomial(dist.probs.detach(), 1, generator=run.gen).squeeze(1)
            r, done, terminal = env.step(a)
            if run.bug == "reward_sign_flipped":
                r = -r  # read as a cost
            logps.append(dist.log_prob(a)), values.append(v), entropies.append(dist.entropy())
            rewards.append(r), masks.append(1 - terminal.float())
            env.reset(done)
        with torch.no_grad():
            ret = model(env.obs())[1]
        returns = []
        for r, m in zip(reversed(rewards), reversed(masks)):
            ret = r + 0.95 * m * ret
            returns.append(ret)
        returns = returns[::-1]
        adv = torch.stack(returns) - torch.stack(values)
        policy_loss = -(torch.stack(logps) * adv.detach()).mean()
        value_loss = adv.pow(2).mean()
        loss = policy_loss + 0.5 * value_loss - 0.01 * torch.stack(entropies).mean()
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        run.hook.record_scalar("value_loss", value_loss.detach())
        run.hook.record_scalar("mean_reward", torch.stack(rewards).mean())
        if not run.end_step(step, loss.detach(), model, lambda: _ac_success(model)):
            break
