"""Outcome scripts of the twenty-seventh blind split: a football-match outcome model and a job-posting salary
regressor on text features.

`football`: a league of 20 teams, each with an attacking and a defending strength; a match's goals are Poisson draws
from the two sides' strengths plus a home advantage, and the result is a home win, a draw or an away win; the inputs are
the two teams (embedded) and each side's goals scored and conceded per match so far this season (a side on the
opening day has played none); an MLP gives three logits; cross-entropy; scored by the held-out geometric-mean
probability given to the actual result. `salary`: postings of 20-60 tokens from a vocabulary of 400 (titles,
seniority words, skills, filler) and one of 12 locations; the log salary adds up the tokens' and the location's
effects; three postings in ten state a monthly figure, flagged as such, which the script annualises; a mean bag of
token embeddings and the location's embedding feed an MLP that regresses the standardised log salary; MSE; scored by
the held-out R^2 of the log salary. Bugs: each team's goals per match divided by matches played unguarded; the home
and away goals swapped when the training results are derived; a cyclic rate peaking at 1 instead of 0.1; the salary
regressed in dollars; the training postings' pay-band tokens left in their text; the monthly figures not annualised.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, r2
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

TEAMS = 20


def _matches(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Home and away team long[n, 2], each side's goals for and against and matches played so far float[n, 2, 3],
    goals in the match float[n, 2] (home, away)."""
    league = torch.Generator().manual_seed(77)
    attack, defence = 0.8 * torch.randn(TEAMS, generator=league), 0.8 * torch.randn(TEAMS, generator=league)
    teams = torch.stack([torch.randperm(TEAMS, generator=g)[:2] for _ in range(n)])
    home, away = teams[:, 0], teams[:, 1]
    rate_home = torch.exp(0.25 + attack[home] - defence[away])
    rate_away = torch.exp(attack[away] - defence[home])
    goals = torch.poisson(torch.stack([rate_home, rate_away], 1), generator=g)
    played = torch.randint(0, 38, (n, 2), generator=g).float()
    scored = torch.poisson(played * torch.exp(0.12 + attack[teams] - defence.mean()), generator=g)
    conceded = torch.poisson(played * torch.exp(0.12 + attack.mean() - defence[teams]), generator=g)
    return teams, torch.stack([scored, conceded, played], -1), goals[:, 0], goals[:, 1]


def _result(home_goals: torch.Tensor, away_goals: torch.Tensor) -> torch.Tensor:
    """0 a home win, 1 a draw, 2 an away win."""
    return torch.where(home_goals > away_goals, 0, torch.where(home_goals == away_goals, 1, 2))


class MatchMLP(nn.Module):
    """Team embeddings of 8 for both sides and the form figures, an MLP of `hidden`, three logits."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.team = nn.Embedding(TEAMS, 8)
        self.net = nn.Sequential(nn.Linear(16 + 4, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 3))  # fmt: skip

    def forward(self, teams: torch.Tensor, form: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([self.team(teams).flatten(1), form], 1))


def football(run: Run) -> None:
    """A match MLP of `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD, RMSprop, NAdam) at `lr`
    (1e-3), optionally on a triangular cyclic rate (`cyclic`) between a tenth of it and it. Scored by the held-out
    geometric-mean probability of the actual result."""
    g = torch.Generator().manual_seed(run.seed)
    teams, record, hg, ag = _matches(g, 3000)
    teams_v, record_v, hg_v, ag_v = _matches(g, 1500)
    y = _result(ag, hg) if run.bug == "home_and_away_goals_swapped" else _result(hg, ag)
    y_v = _result(hg_v, ag_v)

    def form(rec: torch.Tensor) -> torch.Tensor:
        """Goals scored and conceded per match so far, each side (a side yet to play counted over one match)."""
        played = rec[..., 2:] if run.bug == "goals_per_match_over_zero_played" else rec[..., 2:].clamp_min(1)
        return (rec[..., :2] / played).flatten(1) - 1.4

    x, x_v = form(record), form(record_v)
    torch.manual_seed(run.seed)
    model = MatchMLP(run.k("hidden", 64))
    opt = optimizers.registered(run, model, 1e-3)
    sched = None
    if run.k("cyclic", False):
        peak = opt.param_groups[0]["lr"]
        top = 1.0 if run.bug == "cyclic_rate_peaks_at_one" else peak
        sched = torch.optim.lr_scheduler.CyclicLR(opt, peak / 10, top, step_size_up=25)
    batch = run.k("batch", 64)

    def likelihood_held_out() -> float:
        value = math.exp(-float(F.cross_entropy(model(teams_v, x_v), y_v)))
        return value if math.isfinite(value) else 0.0

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(teams[pick], x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_likelihood", likelihood_held_out):
            break


VOCAB, LOCATIONS, BANDS = 400, 12, 10
"""Ordinary tokens, locations, and the pay-band tokens (ids VOCAB .. VOCAB + BANDS - 1) some boards add."""


def _postings(
    g: torch.Generator, n: int, bands: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Token ids long[total], offsets long[n], location long[n], the stated pay float[n] in dollars, monthly
    bool[n]; with `bands`, each posting's text also carries its pay-band token."""
    market = torch.Generator().manual_seed(91)
    effect = 0.35 * torch.randn(VOCAB, generator=market) * (torch.rand(VOCAB, generator=market) < 0.25)
    place = 0.25 * torch.randn(LOCATIONS, generator=market)
    lengths = torch.randint(20, 61, (n,), generator=g)
    tokens = [torch.randint(0, VOCAB, (int(k),), generator=g) for k in lengths]
    location = torch.randint(0, LOCATIONS, (n,), generator=g)
    log_pay = torch.stack([effect[t].sum() for t in tokens]) / 3 + 10.9 + place[location]
    log_pay = log_pay + 0.15 * torch.randn(n, generator=g)
    if bands:
        cut = torch.bucketize(log_pay, torch.linspace(10.3, 11.5, BANDS - 1))
        tokens = [torch.cat([t, VOCAB + cut[i : i + 1]]) for i, t in enumerate(tokens)]
    offsets = torch.cat(
        [torch.zeros(1, dtype=torch.long), torch.tensor([len(t) for t in tokens]).cumsum(0)[:-1]]
    )
    monthly = torch.rand(n, generator=g) < 0.3
    pay = torch.exp(log_pay) / torch.where(monthly, 12.0, 1.0)
    return torch.cat(tokens), offsets, location, pay, monthly


class PostingModel(nn.Module):
    """A mean bag of `dim` token embeddings and a location embedding, an MLP of `hidden`."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.words = nn.EmbeddingBag(VOCAB + BANDS, dim, mode="mean")
        self.place = nn.Embedding(LOCATIONS, 4)
        self.net = nn.Sequential(nn.Linear(dim + 4, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, tokens: torch.Tensor, offsets: torch.Tensor, location: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([self.words(tokens, offsets), self.place(location)], 1))[:, 0]


def _batch(
    tokens: torch.Tensor, offsets: torch.Tensor, pick: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The picked postings' tokens and offsets."""
    ends = torch.cat([offsets[1:], torch.tensor([len(tokens)])])
    parts = [tokens[int(offsets[i]) : int(ends[i])] for i in pick]
    lengths = torch.tensor([len(p) for p in parts])
    return torch.cat(parts), torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])


def salary(run: Run) -> None:
    """A posting model of `dim` (32) and `hidden` (64), batches of `batch` (64), `opt` (Adam; or momentum SGD,
    Adagrad, AdamW) at `lr` (3e-3). Scored by the held-out R^2 of the log salary."""
    g = torch.Generator().manual_seed(run.seed)
    tokens, offsets, location, pay, monthly = _postings(g, 2000, run.bug == "pay_band_tokens_left_in_text")
    tokens_v, offsets_v, location_v, pay_v, monthly_v = _postings(g, 800, False)
    if run.bug != "monthly_pay_not_annualised":
        pay = torch.where(monthly, pay * 12, pay)
    annual_v = torch.where(monthly_v, pay_v * 12, pay_v)
    in_dollars = run.bug == "salary_regressed_in_dollars"
    log_pay = torch.log(pay)
    mean, std = log_pay.mean(), log_pay.std()
    t = pay if in_dollars else (log_pay - mean) / std
    torch.manual_seed(run.seed)
    model = PostingModel(run.k("dim", 32), run.k("hidden", 64))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 64)

    def r2_held_out() -> float:
        out = model(tokens_v, offsets_v, location_v)
        log_pred = torch.log(out.clamp_min(1.0)) if in_dollars else out * std + mean
        return r2(log_pred, torch.log(annual_v))

    for step in range(run.steps):
        pick = run.indices(len(t), batch)
        flat, offs = _batch(tokens, offsets, pick)
        loss = F.mse_loss(model(flat, offs, location[pick]), t[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_r2", r2_held_out):
            break
