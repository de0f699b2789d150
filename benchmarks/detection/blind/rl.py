"""Policy-gradient scripts of the blind split on a toy corridor: REINFORCE with a baseline, and PPO.

The corridor has 8 cells; the goal is the left or the right end (a flag in the observation says which);
actions move left, stay or move right; each step costs 0.02 and reaching the goal pays 1, within 14
moves. The oracle's score is the greedy policy's success rate over every start and goal. Bug: the
policy-gradient loss with the wrong sign (gradient ascent on the loss).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run

CELLS, HORIZON = 8, 14


def _obs(pos: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    return torch.cat([F.one_hot(pos, CELLS).float(), right.float()[:, None], (~right).float()[:, None]], 1)


def rollout(policy: nn.Module, n: int, g: torch.Generator, *, start: torch.Tensor | None = None,
            right: torch.Tensor | None = None, greedy: bool = False) -> dict[str, torch.Tensor]:  # fmt: skip
    """Play `n` episodes at once; returns per-step observations, actions, log-probs, rewards and alive masks
    ([time, n]) and whether each episode reached its goal."""
    right = torch.rand(n, generator=g) < 0.5 if right is None else right
    goal = torch.where(right, CELLS - 1, 0)
    pos = torch.randint(1, CELLS - 1, (n,), generator=g) if start is None else start
    alive = torch.ones(n, dtype=torch.bool)
    obs, acts, logps, rews, masks = [], [], [], [], []
    for _ in range(HORIZON):
        o = _obs(pos, right)
        dist = torch.distributions.Categorical(logits=policy(o))
        a = (
            dist.probs.argmax(1)
            if greedy
            else torch.multinomial(dist.probs.detach(), 1, generator=g).squeeze(1)
        )
        obs.append(o), acts.append(a), logps.append(dist.log_prob(a)), masks.append(alive.clone())
        pos = torch.where(alive, (pos + a - 1).clamp(0, CELLS - 1), pos)
        reached = alive & (pos == goal)
        rews.append(-0.02 * alive.float() + reached.float())
        alive = alive & ~reached
    return {"obs": torch.stack(obs), "act": torch.stack(acts), "logp": torch.stack(logps), "rew": torch.stack(rews),
            "mask": torch.stack(masks).float(), "success": ~alive}  # fmt: skip


def _returns(rew: torch.Tensor, gamma: float = 0.99) -> torch.Tensor:
    out = torch.zeros_like(rew)
    running = torch.zeros(rew.shape[1])
    for t in reversed(range(len(rew))):
        running = rew[t] + gamma * running
        out[t] = running
    return out


def _greedy_success(policy: nn.Module) -> float:
    starts = torch.arange(1, CELLS - 1).repeat(2)
    right = torch.arange(len(starts)) < CELLS - 2
    with torch.no_grad():
        ep = rollout(
            policy, len(starts), torch.Generator().manual_seed(0), start=starts, right=right, greedy=True
        )
    return float(ep["success"].float().mean())


def _policy() -> nn.Module:
    return nn.Sequential(nn.Linear(CELLS + 2, 32), nn.Tanh(), nn.Linear(32, 3))


def reinforce(run: Run) -> None:
    """REINFORCE with returns-to-go, a running-mean baseline and an entropy bonus; 32 episodes per update, Adam."""
    torch.manual_seed(run.seed)
    policy = _policy()
    opt = torch.optim.Adam(policy.parameters(), lr=run.k("lr", 1e-2))
    run.hook.register_module(policy)
    run.hook.register_optimizer(opt)
    baseline = 0.0
    for step in range(run.steps):
        ep = rollout(policy, 32, run.gen)
        ret, mask = _returns(ep["rew"]), ep["mask"]
        adv = ret - baseline
        baseline = 0.9 * baseline + 0.1 * float((ret * mask).sum() / mask.sum())
        pg = (ep["logp"] * adv * mask).sum() / mask.sum()
        loss = pg if run.bug == "policy_gradient_sign_flipped" else -pg
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        run.hook.record_scalar("episode_return", ep["rew"].sum(0).mean())
        run.hook.record_scalar("success", ep["success"].float().mean())
        if not run.end_step(step, loss.detach(), policy, lambda: _greedy_success(policy)):
            break


def ppo(run: Run) -> None:
    """PPO: 64 episodes per rollout, advantages from a value head, 4 epochs of 4 minibatches with the clipped
    surrogate (0.2), value loss and entropy bonus; Adam. `run.steps` counts optimizer steps."""
    torch.manual_seed(run.seed)
    body = nn.Sequential(nn.Linear(CELLS + 2, 64), nn.Tanh())
    model = nn.ModuleDict({"body": body, "pi": nn.Linear(64, 3), "v": nn.Linear(64, 1)})
    policy = nn.Sequential(body, model["pi"])
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 3e-3))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    step = 0
    while step < run.steps:
        with torch.no_grad():
            ep = rollout(policy, 64, run.gen)
            keep = ep["mask"].flatten() > 0
            obs = ep["obs"].flatten(0, 1)[keep]
            act, old_logp = ep["act"].flatten()[keep], ep["logp"].flatten()[keep]
            ret = _returns(ep["rew"]).flatten()[keep]
            adv = ret - model["v"](body(obs)).squeeze(1)
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        run.hook.record_scalar("episode_return", ep["rew"].sum(0).mean())
        for _ in range(4):
            perm = torch.randperm(len(obs), generator=run.gen)
            for mb in perm.chunk(4):
                h = body(obs[mb])
                dist = torch.distributions.Categorical(logits=model["pi"](h))
                ratio = (dist.log_prob(act[mb]) - old_logp[mb]).exp()
                surr = torch.min(ratio * adv[mb], ratio.clamp(0.8, 1.2) * adv[mb]).mean()
                v_loss = F.mse_loss(model["v"](h).squeeze(1), ret[mb])
                loss = -surr + 0.5 * v_loss - 0.01 * dist.entropy().mean()
                opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), 0.5)
                opt.step()
                run.hook.record_scalar("loss", loss.detach())
                run.hook.record_scalar("clip_frac", ((ratio - 1).abs() > 0.2).float().mean())
                if not run.end_step(step, loss.detach(), policy, lambda: _greedy_success(policy)):
                    return
                step += 1
                if step >= run.steps:
                    return
