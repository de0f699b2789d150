"""Synthetic statistic streams for rule tests: a healthy 4-layer MLP run, and a hook to inject faults.

`Stream` produces the StepViews the evaluator would build for a small MLP trained with SGD:
warmup then cosine learning rate, a noisy loss decaying towards 0.3 with a warmup bump, per-layer
gradient norms that follow the loss, updates = lr x gradient, ReLU layers that are sparse (about 65%
zeros) but whose units are all alive, tanh layers with few saturated units, Tier-1 vectors every 10
steps (activity or saturation of the activations, the share of each weight row that moved) and an
eval loss every 50; with `optimizer`, the parameters belong to that optimizer class's group 0.0 (format 2.5). A `fault(step, data)` callback edits a step's columns before the view is built. Names and metadata are one shared tuple, as in the evaluator.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from trainguard.rules.base import Finding, Rule
from trainguard.rules.step_view import COL, COLUMNS, StepView, TensorMeta

WIDTHS = (32, 64, 64, 64, 10)
BATCH = 64


@dataclass
class StepData:
    """One step before it becomes a view: statistics by tensor name, scalars and Tier-1 vectors."""

    step: int
    cols: dict[str, np.ndarray]
    scalars: dict[str, float]
    eval_scalars: dict[str, float]
    units: dict[tuple[str, str], np.ndarray]
    wall_time: float
    meta: dict[str, TensorMeta] = field(default_factory=dict)

    def set(self, name: str, **values: float) -> None:
        """Set columns of one tensor, e.g. `data.set("grad/fc1.weight", l2=1e5)`."""
        for column, value in values.items():
            self.cols[name][COL[column]] = value

    def scale(self, name: str, factor: float) -> None:
        """Multiply the magnitude columns of one tensor (as if every element were scaled)."""
        for column in ("min", "max", "mean", "std", "abs_mean", "l2"):
            self.cols[name][COL[column]] *= factor


def columns(
    *,
    n: int,
    std: float,
    mean: float = 0.0,
    zero: float = 0.0,
    update: float = math.nan,
    distance: float = math.nan,
) -> np.ndarray:
    """The 12 statistic columns of a tensor with n elements of roughly normal values."""
    out = np.empty(len(COLUMNS))
    out[COL["count"]] = n
    out[COL["nan"]] = 0
    out[COL["inf"]] = 0
    out[COL["zero"]] = round(zero * n)
    out[COL["min"]] = mean - 3 * std
    out[COL["max"]] = mean + 3 * std
    out[COL["mean"]] = mean
    out[COL["std"]] = std
    out[COL["abs_mean"]] = abs(mean) + std * math.sqrt(2 / math.pi)
    out[COL["l2"]] = math.sqrt(n * (std * std + mean * mean))
    out[COL["update_l2"]] = update
    out[COL["distance_l2"]] = distance
    return out


class Stream:
    """A healthy run of `steps` steps; `fault` edits each step's data before its view is built."""

    def __init__(
        self,
        *,
        seed: int = 0,
        steps: int = 600,
        activation: str = "relu",
        fault: Callable[[StepData], None] | None = None,
        tier1_every: int = 10,
        eval_every: int = 50,
        peak_lr: float = 0.05,
        rank: int = 0,
        inputs: bool = False,
        optimizer: str | None = None,
    ) -> None:
        self.rng = np.random.default_rng(seed)
        self.steps = steps
        self.activation = activation
        self.fault = fault
        self.tier1_every = tier1_every
        self.eval_every = eval_every
        self.peak_lr = peak_lr
        self.rank = rank
        meta: list[TensorMeta] = []
        for i in range(len(WIDTHS) - 1):
            fan_in, fan_out = WIDTHS[i], WIDTHS[i + 1]
            group = {"param_group": "0.0", "optimizer": optimizer} if optimizer else {}
            meta.append(
                TensorMeta(
                    f"fc{i}.weight",
                    "weights",
                    module=f"fc{i}",
                    trainable=True,
                    order=2 * i,
                    shape=(fan_out, fan_in),
                    **group,  # type: ignore[arg-type]
                )
            )
            meta.append(
                TensorMeta(
                    f"fc{i}.bias", "biases", module=f"fc{i}", trainable=True, order=2 * i, shape=(fan_out,),
                    **group,  # type: ignore[arg-type]
                )
            )  # fmt: skip
            meta.append(
                TensorMeta(
                    f"grad/fc{i}.weight", "gradients", module=f"fc{i}", order=2 * i, shape=(fan_out, fan_in)
                )
            )
            if i < len(WIDTHS) - 2:
                meta.append(
                    TensorMeta(f"act/{activation}{i}", "activations", module=f"{activation}{i}", activation=activation,
                               order=2 * i + 1, shape=(BATCH, fan_out))
                )  # fmt: skip
        if inputs:  # the batch the model is fed, normalised (`input/x`)
            meta.append(TensorMeta("input/x", "inputs", shape=(BATCH, WIDTHS[0])))
        self.meta = tuple(meta)
        self.names = tuple(m.name for m in meta)
        self.by_name = {m.name: m for m in meta}

    # --- the healthy dynamics -------------------------------------------------------------------
    def lr(self, t: int) -> float:
        warm = 50
        if t < warm:
            return self.peak_lr * (0.1 + 0.9 * t / warm)
        frac = (t - warm) / max(self.steps - warm, 1)
        return self.peak_lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))

    def smooth_loss(self, t: int) -> float:
        bump = 1.1 if 50 <= t < 80 else 1.0
        return (0.3 + 2.0 * math.exp(-t / 150)) * bump

    def data(self, t: int) -> StepData:
        rng = self.rng
        loss = self.smooth_loss(t) * float(rng.lognormal(0, 0.05))
        lr = self.lr(t)
        cols: dict[str, np.ndarray] = {}
        units: dict[tuple[str, str], np.ndarray] = {}
        tier1 = t % self.tier1_every == 0
        for m in self.meta:
            n = int(np.prod(m.shape))
            i = int(m.module[-1]) if m.module else 0  # type: ignore[index]
            grad_l2 = (0.5 + 0.1 * i) * (0.3 + loss / 2.3) * float(rng.lognormal(0, 0.2))
            if m.collection == "weights":
                std = math.sqrt(2.0 / m.shape[1]) * (1 + 0.1 * t / self.steps)
                update = math.nan if t == 0 else lr * grad_l2
                cols[m.name] = columns(
                    n=n, std=std, update=update, distance=0.02 * math.sqrt(t) * std * math.sqrt(n)
                )
                if tier1:  # SGD moves every element whose input was ever non-zero: most of each row
                    units[("moved", m.name)] = np.full(m.shape[0], math.nan if t == 0 else 0.97)
            elif m.collection == "biases":
                std = 0.0 if t == 0 else 0.01 + 0.0001 * t
                cols[m.name] = columns(
                    n=n,
                    std=std,
                    zero=1.0 if t == 0 else 0.0,
                    update=math.nan if t == 0 else lr * grad_l2 * 0.1,
                )
            elif m.collection == "gradients":
                cols[m.name] = g = columns(n=n, std=grad_l2 / math.sqrt(n))
                # each step's mini-batch gives a new gradient, with its own extremes (not the previous one rescaled)
                g[COL["min"]] *= 1 + 0.03 * ((7 * t + i) % 5)
                g[COL["max"]] *= 1 + 0.03 * ((3 * t + i) % 7)
            elif m.collection == "inputs":
                cols[m.name] = columns(n=n, std=1 + 0.02 * float(rng.standard_normal()))
            else:
                out = m.shape[1]
                if self.activation == "relu":
                    cols[m.name] = columns(
                        n=n, std=0.5, mean=0.3, zero=0.65 + 0.05 * float(rng.standard_normal())
                    )
                    if tier1:
                        units[("active", m.name)] = np.clip(rng.beta(2, 4, size=out), 0.05, 1.0)
                else:
                    cols[m.name] = columns(n=n, std=0.4)
                    cols[m.name][COL["min"]], cols[m.name][COL["max"]] = -0.99, 0.99
                    if tier1:
                        units[("saturated", m.name)] = np.clip(rng.beta(1, 8, size=out), 0.0, 0.9)
        evals = {}
        if t > 0 and t % self.eval_every == 0:
            evals["loss"] = self.smooth_loss(t) * 1.08 * float(rng.lognormal(0, 0.02))
        return StepData(step=t, cols=cols, scalars={"loss": loss, "lr": lr}, eval_scalars=evals, units=units,
                        wall_time=1000.0 + 0.1 * t, meta=self.by_name)  # fmt: skip

    def view(self, d: StepData) -> StepView:
        stats = np.stack([d.cols[n] for n in self.names])
        return StepView(step=d.step, rank=self.rank, wall_time=d.wall_time, names=self.names, meta=self.meta, stats=stats,
                        scalars=d.scalars, eval_scalars=d.eval_scalars, units=d.units)  # fmt: skip

    def __iter__(self) -> Iterator[StepView]:
        for t in range(self.steps):
            d = self.data(t)
            if self.fault is not None:
                self.fault(d)
            yield self.view(d)

    def views(self) -> list[StepView]:
        return list(self)


def saved_every(views: Iterable[StepView], interval: int, *, eval_every: int) -> Iterator[StepView]:
    """`views` as a run saved every `interval` steps reads: the saved steps' views, and between them a
    view carrying only the eval loss at every step `eval_every` - 1, 2 * eval_every - 1, ... (an
    eval point that falls between saved steps, as the evaluator builds it)."""
    for v in views:
        if v.step % interval == 0:
            yield v
        if v.step % eval_every == eval_every - 1:
            yield StepView(
                step=v.step, rank=v.rank, wall_time=v.wall_time, eval_scalars={"loss": v.scalars["loss"]}
            )


def run(rule: Rule, views: Iterable[StepView]) -> list[Finding]:
    """Feed every view to `rule` (with scheduling and debouncing); return all findings."""
    out: list[Finding] = []
    for v in views:
        out += rule.update(v)
    return out


def first(findings: list[Finding]) -> Finding:
    """The earliest finding; fails the test with a readable message when there is none."""
    assert findings, "the rule did not fire"
    return findings[0]
