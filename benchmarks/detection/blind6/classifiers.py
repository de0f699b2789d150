"""Classifier scripts of the sixth blind split: knowledge distillation with a temperature, a tabular ResNet with
weight averaging (SWA, an EMA) or Adagrad, a full-batch L-BFGS fit, and gradient accumulation over an epoch whose
micro-batches do not divide evenly.

`distill`: a small student learns a fixed teacher's softened outputs (T^2-scaled KL at temperature T) and its
labels; scored by accuracy on held-out labels. `tab_resnet`: a residual MLP with BatchNorm and dropout on a numeric
table (a robust scaler fitted on the training rows), evaluated through its SWA model (BatchNorm statistics
recomputed after each average), through an EMA of its weights, or directly; scored by held-out accuracy.
`lbfgs`: logistic regression (or a small tanh MLP) on quadratic features, L-BFGS with a strong-Wolfe line search,
one closure call per evaluation; scored by held-out accuracy. `accumulation`: an MLP on bent clusters, an epoch of
10 micro-batches of 32 stepped every `accum` micro-batches (the last step of an epoch takes what is left), each
micro-batch's loss divided by the number in its step; scored by held-out accuracy. Bugs: the KL's arguments swapped,
the T^2 factor left out, the student's logits not divided by T, SWA's BatchNorm statistics never recomputed, an EMA
decay of 1.0, Adagrad with a huge initial accumulator, a closure that never zeroes the gradients, the accumulated
loss divided by the number of samples.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F
from torch.optim import swa_utils

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind6 import data


def distill(run: Run) -> None:
    """Distillation into a 24-64-8 student: alpha T^2 KL(teacher_T || student_T) + (1 - alpha) CE (T `temp`, 4;
    alpha `alpha`, 0.7); Adam (lr 1e-3), SGD with OneCycle cycling the momentum (`opt` onecycle, max lr 0.1) or
    RMSprop (lr 1e-3); batch 64. Scored by accuracy on 1000 held-out teacher labels."""
    g = torch.Generator().manual_seed(run.seed)
    x, t_logits, y = data.teacher_task(g, 6000)
    xv, yv, x, t_logits, y = x[:1000], y[:1000], x[1000:], t_logits[1000:], y[1000:]
    torch.manual_seed(run.seed)
    student = nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 8))
    kind = run.k("opt", "adam")
    sched = None
    if kind == "onecycle":
        opt: torch.optim.Optimizer = torch.optim.SGD(student.parameters(), lr=0.01, momentum=0.9)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=run.steps)
    elif kind == "rmsprop":
        opt = torch.optim.RMSprop(student.parameters(), lr=1e-3)
    else:
        opt = torch.optim.Adam(student.parameters(), lr=1e-3)
    temp, alpha = run.k("temp", 4.0), run.k("alpha", 0.7)
    run.hook.register_module(student)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = run.indices(len(y), 64)
        s = student(x[i])
        s_t = s if run.bug == "student_logits_not_tempered" else s / temp
        log_teacher = F.log_softmax(t_logits[i] / temp, 1)
        if run.bug == "kl_arguments_swapped":
            kl = F.kl_div(log_teacher, F.softmax(s_t, 1), reduction="batchmean")
        else:
            kl = F.kl_div(F.log_softmax(s_t, 1), log_teacher, reduction="batchmean", log_target=True)
        scale = 1.0 if run.bug == "temperature_not_squared" else temp**2
        loss = alpha * scale * kl + (1 - alpha) * F.cross_entropy(s, y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, student, "val_accuracy", lambda: accuracy(student(xv), yv)):
            break


class Block(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.f = nn.Sequential(
            nn.BatchNorm1d(d), nn.ReLU(), nn.Linear(d, d), nn.Dropout(0.1), nn.Linear(d, d)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.f(x)


def tab_resnet(run: Run) -> None:
    """A tabular ResNet (12 -> 64, three residual blocks, BatchNorm, dropout 0.1) on a robust-scaled table, batch
    128. `opt`: swa (SGD momentum 0.9 lr 0.05 under cosine annealing, then from step 200 SWA every 10 steps at
    swa_lr 0.02, BatchNorm recomputed with `update_bn` over the epoch's batches; evaluated through the SWA model),
    ema (centred RMSprop lr 1e-3, evaluated through an EMA of the weights, decay 0.98) or adagrad (lr 0.05).
    Scored by accuracy on 800 held-out rows."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.table(g, 5800)
    xv, yv, x, y = x[:800], y[:800], x[800:], y[800:]
    med = x.median(0).values
    iqr = x.quantile(0.75, 0) - x.quantile(0.25, 0)
    x, xv = (x - med) / iqr, (xv - med) / iqr
    torch.manual_seed(run.seed)
    model = nn.Sequential(nn.Linear(12, 64), Block(64), Block(64), Block(64), nn.BatchNorm1d(64), nn.ReLU(),
                          nn.Linear(64, 4))  # fmt: skip
    kind = run.k("opt", "swa")
    swa_start = 200
    sched: torch.optim.lr_scheduler.LRScheduler | None = None
    if kind == "adagrad":
        acc0 = 1e4 if run.bug == "adagrad_initial_accumulator_huge" else 0.0
        opt: torch.optim.Optimizer = torch.optim.Adagrad(
            model.parameters(), lr=0.05, initial_accumulator_value=acc0
        )
    elif kind == "ema":
        opt = torch.optim.RMSprop(model.parameters(), lr=1e-3, centered=True)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=swa_start)
    swa_model = swa_utils.AveragedModel(model) if kind == "swa" else None
    swa_sched = swa_utils.SWALR(opt, swa_lr=0.02, anneal_epochs=2) if kind == "swa" else None
    decay = 1.0 if run.bug == "ema_decay_one" else 0.98
    ema = None
    if kind == "ema":  # the weights and the BatchNorm statistics averaged alike
        ema = swa_utils.AveragedModel(
            model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(decay), use_buffers=True
        )
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    epoch: list[torch.Tensor] = []
    swa_started = False

    def score() -> float:
        evaluated: nn.Module = model
        if swa_model is not None and swa_started:
            evaluated = swa_model
        elif ema is not None:
            evaluated = ema
        was = evaluated.training
        evaluated.eval()
        try:
            return accuracy(evaluated(xv), yv)
        finally:
            evaluated.train(was)

    for step in range(run.steps):
        i = run.indices(len(y), 128)
        epoch.append(i)
        loss = F.cross_entropy(model(x[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if ema is not None:
            ema.update_parameters(model)
        if swa_model is not None and swa_sched is not None and sched is not None:
            if step < swa_start:
                sched.step()
            elif step % 10 == 9:
                swa_model.update_parameters(model)
                swa_sched.step()
                swa_started = True
                if run.bug == "swa_bn_never_updated":
                    run.took_effect(step)
                else:
                    swa_utils.update_bn([x[j] for j in epoch[-10:]], swa_model)
        if not close_step(run, step, loss, model, "val_accuracy", score):
            break


def lbfgs(run: Run) -> None:
    """Full-batch L-BFGS (lr 1, one iteration a step, history 10, strong Wolfe) on 1200 rows of quadratic features: logistic
    regression, or a 27-32-1 tanh MLP (`model` mlp), with an L2 penalty 1e-3; the closure zeroes the gradients,
    computes the loss and calls backward. 200 steps. Scored by accuracy on 600 held-out rows."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.logistic(g, 1800)
    xv, yv, x, y = x[:600], y[:600], x[600:], y[600:]
    torch.manual_seed(run.seed)
    if run.k("model", "linear") == "mlp":
        model: nn.Module = nn.Sequential(nn.Linear(27, 32), nn.Tanh(), nn.Linear(32, 1))
    else:
        model = nn.Linear(27, 1)
    opt = torch.optim.LBFGS(
        model.parameters(), lr=1, max_iter=1, history_size=10, line_search_fn="strong_wolfe"
    )
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)

    def closure() -> torch.Tensor:
        if run.bug != "closure_never_zeroes_grad":
            opt.zero_grad()
        out = F.binary_cross_entropy_with_logits(model(x)[:, 0], y)
        out = out + 1e-3 * sum((p**2).sum() for p in model.parameters())
        out.backward()
        return out

    def score() -> float:
        return float(((model(xv)[:, 0] > 0).float() == yv).float().mean())

    for step in range(run.steps):
        loss = opt.step(closure)
        if not close_step(run, step, loss, model, "val_accuracy", score):
            break


def accumulation(run: Run) -> None:
    """An MLP (16-128-128-5) on bent clusters; an epoch is 10 micro-batches of 32, an optimizer step every `accum`
    (4) micro-batches and one at the epoch's end for what is left; SGD momentum 0.9 at lr `lr` (0.05), optionally
    Nesterov (`nesterov`), or under OneCycle cycling the momentum (`onecycle`, max lr 0.1). Scored by accuracy on
    1000 held-out points."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.bent_clusters(g, 9000)
    xv, yv, x, y = x[:1000], y[:1000], x[1000:], y[1000:]
    torch.manual_seed(run.seed)
    model = nn.Sequential(nn.Linear(16, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 5))
    opt = torch.optim.SGD(
        model.parameters(), lr=run.k("lr", 0.05), momentum=0.9, nesterov=run.k("nesterov", False)
    )
    sched = None
    if run.k("onecycle", False):
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=run.steps)
    accum, micro, per_epoch = run.k("accum", 4), 32, 10
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    done = 0  # micro-batches of the current epoch already used
    for step in range(run.steps):
        count = min(accum, per_epoch - done)
        opt.zero_grad()
        total = 0.0
        for _ in range(count):
            i = run.indices(len(y), micro)
            loss = F.cross_entropy(model(x[i]), y[i])
            total += loss.item() / count
            divisor = micro * accum if run.bug == "accumulation_divided_by_samples" else count
            (loss / divisor).backward()
        opt.step()
        if sched is not None:
            sched.step()
        done = (done + count) % per_epoch
        if not close_step(
            run, step, torch.tensor(total), model, "val_accuracy", lambda: accuracy(model(xv), yv)
        ):
            break
