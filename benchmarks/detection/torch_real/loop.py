"""The training loop the realistic PyTorch programs share, with the places where their bugs go.

`Ctx` carries one run's seed, knobs, bug and hook, and collects the oracle's view (the training
loss at every step, a validation score every `ORACLE_EVERY` steps, computed by the harness on
clean data and never recorded through the hook). `fit` is an ordinary supervised loop (zero_grad,
forward, backward, clip, step, scheduler, a validation loss every `EVAL_EVERY` steps recorded as an
eval scalar) in which a bug changes one line: zero_grad left out or moved after backward, an epoch
scheduler stepped every batch, the same batch every step, accumulation without dividing the loss.
`make_optimizer` and `make_scheduler` give the common PyTorch optimizers and schedulers by name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

EVAL_EVERY = 50
"""Steps between the script's own validation passes (recorded as eval scalars, as a real script would)."""
ORACLE_EVERY = 10
"""Steps between the oracle's validation scores (not recorded; they give the ground truth)."""
EPOCH_STEPS = 50
"""Steps per "epoch" for schedulers meant to be stepped once per epoch."""
STOP_AFTER_NONFINITE = 20
"""A run whose loss stayed non-finite this many steps ends early (nothing is left to see)."""


@dataclass
class Ctx:
    """One run: its seed, knobs and bug, the hook, and what the oracle saw."""

    seed: int
    steps: int
    knobs: dict[str, Any]
    bug: str | None
    hook: Any
    gen: torch.Generator
    losses: list[float] = field(default_factory=list)
    score_steps: list[int] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    nonfinite_step: int | None = None

    def k(self, key: str, default: Any) -> Any:
        return self.knobs.get(key, default)

    def note_loss(self, step: int, value: float) -> bool:
        """Keep the step's loss; return False when the run should end (non-finite for a while)."""
        self.losses.append(value)
        if not math.isfinite(value) and self.nonfinite_step is None:
            self.nonfinite_step = step
        return self.nonfinite_step is None or step - self.nonfinite_step < STOP_AFTER_NONFINITE

    def oracle(self, step: int, score: Callable[[], float]) -> None:
        if step % ORACLE_EVERY == 0 or step == self.steps - 1:
            with torch.no_grad():
                value = score()
            self.score_steps.append(step)
            self.scores.append(value if math.isfinite(value) else 0.0)


def make_optimizer(name: str, params: Iterable[Any], lr: float, **kw: Any) -> torch.optim.Optimizer:
    """The optimizer called `name` (sgd, momentum, nesterov, adam, adamw, rmsprop, adagrad, nadam, radam,
    adamax, adadelta, sparse_adam) at learning rate `lr`."""
    wd = kw.pop("weight_decay", 0.0)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=wd)
    if name in ("momentum", "nesterov"):
        return torch.optim.SGD(params, lr=lr, momentum=0.9, nesterov=name == "nesterov", weight_decay=wd)
    classes = {
        "adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "rmsprop": torch.optim.RMSprop,
        "adagrad": torch.optim.Adagrad, "nadam": torch.optim.NAdam, "radam": torch.optim.RAdam,
        "adamax": torch.optim.Adamax, "adadelta": torch.optim.Adadelta,
    }  # fmt: skip
    if name == "sparse_adam":
        return torch.optim.SparseAdam(list(params), lr=lr)
    return classes[name](params, lr=lr, weight_decay=wd, **kw)


@dataclass
class Schedule:
    """A scheduler and when it steps: every `period` training steps, or on the val loss (plateau)."""

    sched: Any = None
    period: int = 1
    on_val: bool = False


def make_scheduler(name: str, opt: torch.optim.Optimizer, steps: int, *, lr: float, warmup: int = 50,
                   per_batch_bug: bool = False) -> Schedule:  # fmt: skip
    """The scheduler called `name`. Epoch schedulers (step, multistep, exp) are meant to step every
    `EPOCH_STEPS`; `per_batch_bug` steps them every batch instead (the bug)."""
    epochs = max(steps // EPOCH_STEPS, 1)
    period = 1 if per_batch_bug else EPOCH_STEPS
    sch = torch.optim.lr_scheduler
    if name == "constant":
        return Schedule()
    if name == "step":
        return Schedule(sch.StepLR(opt, step_size=max(epochs // 3, 1), gamma=0.3), period)
    if name == "multistep":
        return Schedule(sch.MultiStepLR(opt, milestones=[epochs // 2, 3 * epochs // 4], gamma=0.2), period)
    if name == "exp":
        return Schedule(sch.ExponentialLR(opt, gamma=0.85), period)
    if name == "cosine":
        return Schedule(sch.CosineAnnealingLR(opt, T_max=steps))
    if name == "warmup_cosine":

        def f(s: int) -> float:
            return min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps))

        return Schedule(sch.LambdaLR(opt, f))
    if name == "warmup_uncapped":  # the bug: the warmup factor is never capped at 1
        return Schedule(sch.LambdaLR(opt, lambda s: (s + 1) / warmup))
    if name == "onecycle":
        return Schedule(sch.OneCycleLR(opt, max_lr=lr, total_steps=steps + 1))
    if name == "cyclic":
        return Schedule(sch.CyclicLR(opt, base_lr=lr / 10, max_lr=lr, step_size_up=100))
    if name == "warm_restarts":
        return Schedule(sch.CosineAnnealingWarmRestarts(opt, T_0=100, T_mult=2))
    if name == "linear_warmup":
        return Schedule(sch.LinearLR(opt, start_factor=0.1, total_iters=warmup))
    if name == "poly":
        return Schedule(sch.PolynomialLR(opt, total_iters=steps, power=2.0))
    if name == "plateau":
        return Schedule(sch.ReduceLROnPlateau(opt, factor=0.5, patience=1), on_val=True)
    raise ValueError(f"unknown scheduler {name!r}")


class LossScaler:
    """A hand-written dynamic loss scaler, as mixed-precision code had one before `torch.amp.GradScaler`: the
    loss is multiplied by the scale before backward; a step whose gradients hold an Inf or NaN is skipped and
    halves the scale, `growth_interval` clean steps in a row double it. Same calls as GradScaler (scale,
    unscale_, step, update). With `sticky_overflow` (the bug) the overflow flag is or-ed with each step's
    check and never cleared, so every step after the first overflow is skipped while training goes on."""

    def __init__(self, init_scale: float, growth_interval: int, *, sticky_overflow: bool = False) -> None:
        self.scale_value = init_scale
        self.growth_interval = growth_interval
        self.sticky_overflow = sticky_overflow
        self.overflow = False
        self.clean = 0
        self.skipped = 0
        self._unscaled = False

    def scale(self, loss: torch.Tensor) -> torch.Tensor:
        return loss * self.scale_value

    def unscale_(self, opt: torch.optim.Optimizer) -> None:
        if self._unscaled:
            return
        self._unscaled = True
        grads = [p.grad for group in opt.param_groups for p in group["params"] if p.grad is not None]
        found = any(not bool(torch.isfinite(g).all()) for g in grads)
        self.overflow = (self.overflow or found) if self.sticky_overflow else found
        if not self.overflow:
            for g in grads:
                g.div_(self.scale_value)

    def step(self, opt: torch.optim.Optimizer) -> None:
        self.unscale_(opt)
        if self.overflow:
            self.skipped += 1
        else:
            opt.step()

    def update(self) -> None:
        self._unscaled = False
        if self.overflow:
            self.scale_value /= 2
            self.clean = 0
            return
        self.clean += 1
        if self.clean % self.growth_interval == 0:
            self.scale_value *= 2


def make_scaler(ctx: Ctx, amp: str | None) -> Any:
    """The loss scaler of float16 autocast: torch's GradScaler (`amp="fp16"`) or a hand-written one
    (`amp="fp16_manual"`), starting at the knob `scale_init`, growing after `scale_growth` clean steps; the
    bug `scaler_never_recovers` makes the hand-written one's overflow flag sticky."""
    if amp == "fp16":
        return torch.amp.GradScaler(
            "cpu", init_scale=ctx.k("scale_init", 2.0**12), growth_interval=ctx.k("scale_growth", 2000)
        )
    if amp == "fp16_manual":
        return LossScaler(ctx.k("scale_init", 2.0**16), ctx.k("scale_growth", 1000),
                          sticky_overflow=ctx.bug == "scaler_never_recovers")  # fmt: skip
    return None


Batch = Callable[[], tuple[Any, Any]]


def sampler(ctx: Ctx, data: tuple[torch.Tensor, torch.Tensor], batch: int) -> Batch:
    """Random mini-batches of `data`; the bug `same_batch` returns the first batch every time (a fresh
    `next(iter(loader))` on an unshuffled loader at every step)."""
    x, y = data
    if ctx.bug == "same_batch":
        first = (x[:batch], y[:batch])
        return lambda: first

    def draw() -> tuple[torch.Tensor, torch.Tensor]:
        i = torch.randint(0, len(x), (batch,), generator=ctx.gen)
        return x[i], y[i]

    return draw


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Top-1 accuracy of `model` on (x, y) in eval mode (logits over the last dimension)."""
    model.eval()
    out = model(x)
    return float((out.argmax(-1) == y).float().mean())


def nt_xent(out: torch.Tensor, temperature: float) -> torch.Tensor:
    """InfoNCE (NT-Xent) over two views stacked in one batch: row i's positive is row i + n, and back."""
    z = F.normalize(out, dim=1)
    n = z.shape[0] // 2
    sim = (z @ z.T / temperature).masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
    target = torch.cat([torch.arange(n, 2 * n), torch.arange(n)])
    return F.cross_entropy(sim, target)


def class_mean_accuracy(
    encoder: nn.Module,
    ref: tuple[torch.Tensor, torch.Tensor],
    val: tuple[torch.Tensor, torch.Tensor],
    classes: int,
) -> float:
    """Nearest-class-mean accuracy of `encoder`'s normalised embeddings (class means from `ref`), in eval mode."""
    encoder.eval()
    z = F.normalize(encoder(ref[0]), dim=1)
    means = torch.stack([z[ref[1] == c].mean(0) for c in range(classes)])
    return float(((F.normalize(encoder(val[0]), dim=1) @ means.T).argmax(1) == val[1]).float().mean())


def fit(ctx: Ctx, model: nn.Module, opt: torch.optim.Optimizer, batch: Batch, loss_fn: Callable[..., torch.Tensor],
        *, val: tuple[Any, Any], score: Callable[[], float], schedule: Schedule | None = None,
        clip: float | None = None, accum: int = 1, amp: str | None = None,
        extra: Callable[[Any, Any], dict[str, torch.Tensor]] | None = None, val_name: str = "val_loss",
        classify: bool = False) -> None:  # fmt: skip
    """Train `model` for `ctx.steps` optimizer steps with the hook registered on it and `opt`. A classifier
    (`classify`: logits over the last dimension) records its batch accuracy and its validation accuracy too."""
    hook = ctx.hook
    hook.register_module(model)
    hook.register_optimizer(opt)
    schedule = schedule or Schedule()
    scaler = make_scaler(ctx, amp)
    params = [p for group in opt.param_groups for p in group["params"]]
    for step in range(ctx.steps):
        model.train()
        if ctx.bug != "no_zero_grad":
            opt.zero_grad()
        total = 0.0
        loss = torch.zeros(())
        for _ in range(accum):
            x, y = batch()
            with torch.autocast(
                "cpu", dtype=torch.bfloat16 if amp == "bf16" else torch.float16, enabled=amp is not None
            ):
                out = model(x)
                loss = loss_fn(out, y)
            part = loss if ctx.bug == "accum_no_divide" else loss / accum
            (scaler.scale(part) if scaler is not None else part).backward()
            total += float(loss.detach()) / accum
            if extra is not None:
                for name, value in extra(out, y).items():
                    hook.record_scalar(name, value.detach())
        if classify:
            hook.record_scalar("accuracy", (out.detach().argmax(-1) == y).float().mean())
        if ctx.bug == "zero_grad_after_backward":
            opt.zero_grad()
        if clip is not None:
            if scaler is not None:
                scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(params, clip)
        hook.record_scalar("loss", total)
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        if schedule.sched is not None and not schedule.on_val and (step + 1) % schedule.period == 0:
            schedule.sched.step()
        if step % EVAL_EVERY == EVAL_EVERY - 1:
            model.eval()
            with torch.no_grad():
                vout = model(val[0])
                vloss = float(loss_fn(vout, val[1]))
            hook.record_scalar(val_name, vloss, mode="eval")
            if classify:
                vacc = float((vout.argmax(-1) == val[1]).float().mean())
                hook.record_scalar("val_accuracy", vacc, mode="eval", collection="metrics")
            if schedule.on_val and math.isfinite(vloss):
                schedule.sched.step(vloss)
        ctx.oracle(step, score)
        if not ctx.note_loss(step, total):
            break
