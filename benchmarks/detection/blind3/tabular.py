"""Tabular scripts of the third blind split: an FT-Transformer, a multi-label classifier with rare labels, an ordinal
regression (cumulative logits) under a hand-written LAMB, a mixture-of-experts regressor.

`ft_transformer`: each numeric column a learned token, each categorical column an embedding, a CLS token through
two encoder layers; AdamW with ReduceLROnPlateau on the validation loss; scored by validation accuracy.
`multilabel`: an MLP with BCE and a per-label pos_weight (negatives over positives); scored by macro-F1 at 0.5.
`ordinal`: one score minus ordered thresholds (cumulative logits), a binary cross-entropy per threshold, LAMB
written by hand or Adagrad, with sample weights against the extreme ratings' rarity; scored by 1 - MAE / 2.
`moe`: a top-1 mixture of four experts with a load-balancing auxiliary loss (Switch style) on a regression with
four regimes; scored by R^2. Bugs: ReduceLROnPlateau fed the validation accuracy in mode "min", the classifier head
replaced after the optimizer was built, pos_weight listed in the wrong label order, the logits clamped at zero, an
L2 penalty subtracted, the gate probability not applied to the chosen expert's output, a warmup lambda that returns
the rate instead of a factor.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy, r2
from benchmarks.detection.blind3 import data
from benchmarks.detection.blind3.harness import close_step


class FTTransformer(nn.Module):
    def __init__(self, numeric: int, cards: tuple[int, ...], classes: int, d: int = 32) -> None:
        super().__init__()
        self.num_w = nn.Parameter(torch.randn(numeric, d) * 0.5)
        self.num_b = nn.Parameter(torch.zeros(numeric, d))
        self.cats = nn.ModuleList(nn.Embedding(c, d) for c in cards)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.1)
        layer = nn.TransformerEncoderLayer(d, 4, 2 * d, dropout=0.1, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Sequential(nn.LayerNorm(d), nn.ReLU(), nn.Linear(d, classes))

    def forward(self, num: torch.Tensor, cat: torch.Tensor) -> torch.Tensor:
        tokens = [num[:, :, None] * self.num_w + self.num_b] + [
            e(cat[:, i])[:, None] for i, e in enumerate(self.cats)
        ]
        x = torch.cat([self.cls.expand(len(num), 1, -1), *tokens], 1)
        return self.head(self.encoder(x)[:, 0])


def ft_transformer(run: Run) -> None:
    """An FT-Transformer on mixed numeric/categorical rows (3 classes): standardised numerics, AdamW (lr 1e-3,
    decay 1e-4), batch 128, ReduceLROnPlateau(factor 0.5, patience 2) on the loss of each validation pass (every
    25 steps). Scored by validation accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    num, cat, y = data.tabular(g, 5000)
    num = (num - num.mean(0)) / num.std(0)
    nv, cv, yv, num, cat, y = num[:800], cat[:800], y[:800], num[800:], cat[800:], y[800:]
    torch.manual_seed(run.seed)
    if run.bug == "head_replaced_after_optimizer":
        # built from a 2-class template, optimizer made, then the head swapped for the 3 classes: never trained
        model = FTTransformer(num.shape[1], (7, 12, 4), 2)
        opt = torch.optim.AdamW(model.parameters(), lr=run.k("lr", 1e-3), weight_decay=1e-4)
        model.head[2] = nn.Linear(32, 3)
    else:
        model = FTTransformer(num.shape[1], (7, 12, 4), 3)
        opt = torch.optim.AdamW(model.parameters(), lr=run.k("lr", 1e-3), weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=2)
    base_lr = opt.param_groups[0]["lr"]
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = run.indices(len(y), run.k("batch", 128))
        loss = F.cross_entropy(model(num[i], cat[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        run.hook.record_scalar("loss", loss.detach())
        if run.validating(step):
            model.eval()
            with torch.no_grad():
                logits = model(nv, cv)
                val_loss, val_acc = float(F.cross_entropy(logits, yv)), accuracy(logits, yv)
            model.train()
            run.hook.record_scalar("val_loss", val_loss, mode="eval")
            run.hook.record_scalar("val_acc", val_acc, mode="eval")
            # the bug: the accuracy handed to a scheduler in its default mode "min": each rise counts as no progress
            sched.step(val_acc if run.bug == "plateau_fed_accuracy" else val_loss)
            if run.bug and opt.param_groups[0]["lr"] < base_lr:
                run.took_effect(step)
        if not run.end_step(step, loss.detach(), model, lambda: accuracy(model(nv, cv), yv)):
            break


def macro_f1(logits: torch.Tensor, y: torch.Tensor) -> float:
    """Macro-averaged F1 over the labels at threshold 0.5 (probability), 0 for a label never predicted nor present."""
    pred = (logits > 0).float()
    tp, fp, fn = (pred * y).sum(0), (pred * (1 - y)).sum(0), ((1 - pred) * y).sum(0)
    return float((2 * tp / (2 * tp + fp + fn).clamp(min=1)).mean())


class Tagger(nn.Module):
    def __init__(self, dim: int = 24, labels: int = 6, *, clamp_logits: bool = False) -> None:
        super().__init__()
        self.clamp_logits = clamp_logits
        self.net = nn.Sequential(
            nn.Linear(dim, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, labels)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.net(x)
        return out.clamp(min=0) if self.clamp_logits else out  # the bug: "logits are non-negative scores"


def multilabel(run: Run) -> None:
    """A multi-label tagger (6 labels, the rarest in 1% of rows): BCE with logits and pos_weight = negatives /
    positives per label (capped at 30), Adam (lr 2e-3), batch 64. Scored by macro-F1 at 0.5 on held-out rows."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.multilabel(g, 6000)
    xv, yv, x, y = x[:1500], y[:1500], x[1500:], y[1500:]
    pos = y.sum(0)
    weights = ((len(y) - pos) / pos.clamp(min=1)).clamp(max=30)
    if run.bug == "pos_weight_wrong_label_order":
        # the weights tabulated rarest label first (as a sorted count table lists them); the columns go commonest first
        weights = weights[pos.argsort()]
    torch.manual_seed(run.seed)
    model = Tagger(clamp_logits=run.bug == "logits_clamped_at_zero")
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    pos_weight = weights if run.k("pos_weight", True) else None
    for step in range(run.steps):
        i = run.indices(len(y), 64)
        loss = F.binary_cross_entropy_with_logits(model(x[i]), y[i], pos_weight=pos_weight)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_macro_f1", lambda: macro_f1(model(xv), yv)):
            break


class LAMB(torch.optim.Optimizer):
    """LAMB as written from the paper: Adam's update scaled per tensor by ||w|| / ||update|| (1 when either is 0)."""

    def __init__(self, params: object, lr: float = 1e-2, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-6, weight_decay: float = 0.01) -> None:  # fmt: skip
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay})  # type: ignore[arg-type]

    @torch.no_grad()
    def step(self, closure: None = None) -> None:  # type: ignore[override]
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["t"], st["m"], st["v"] = 0, torch.zeros_like(p), torch.zeros_like(p)
                st["t"] += 1
                st["m"].mul_(b1).add_(p.grad, alpha=1 - b1)
                st["v"].mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                m_hat, v_hat = st["m"] / (1 - b1 ** st["t"]), st["v"] / (1 - b2 ** st["t"])
                update = m_hat / (v_hat.sqrt() + group["eps"]) + group["weight_decay"] * p
                w_norm, u_norm = float(p.norm()), float(update.norm())
                trust = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
                p.add_(update, alpha=-group["lr"] * trust)


class Ordinal(nn.Module):
    def __init__(self, dim: int = 10, levels: int = 5) -> None:
        super().__init__()
        self.score = nn.Sequential(
            nn.Linear(dim, 48), nn.SiLU(), nn.Linear(48, 48), nn.SiLU(), nn.Linear(48, 1)
        )
        self.first = nn.Parameter(torch.tensor(-1.5))
        self.gaps = nn.Parameter(torch.zeros(levels - 2))

    def thresholds(self) -> torch.Tensor:
        return self.first + torch.cat([torch.zeros(1), torch.cumsum(F.softplus(self.gaps) + 0.1, 0)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.score(x) - self.thresholds()  # cumulative logits of P(y > k), float[B, levels - 1]


def ordinal(run: Run) -> None:
    """Ordinal ratings (5 levels) by cumulative logits: BCE per threshold weighted per row by the inverse frequency
    of its rating (normalised to mean 1), LAMB written by hand (lr 1e-2) or Adagrad (lr 0.05), batch 64, an L2
    penalty of 1e-3 on the weights. Scored by 1 - MAE / 2 (clipped) on held-out rows."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = data.ratings(g, 5000)
    xv, yv, x, y = x[:1000], y[:1000], x[1000:], y[1000:]
    freq = torch.bincount(y, minlength=5).float() / len(y)
    row_w = (1 / freq)[y]
    row_w = row_w / row_w.mean()
    targets = (y[:, None] > torch.arange(4)[None, :]).float()
    torch.manual_seed(run.seed)
    model = Ordinal()
    if run.k("opt", "lamb") == "adagrad":
        opt: torch.optim.Optimizer = torch.optim.Adagrad(model.parameters(), lr=0.05)
    else:
        opt = LAMB(model.parameters(), lr=1e-2)
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    sign = -1.0 if run.bug == "l2_penalty_subtracted" else 1.0  # the bug: the penalty subtracted

    def mae_score() -> float:
        pred = (model(xv) > 0).sum(1)
        return max(0.0, 1 - float((pred - yv).abs().float().mean()) / 2)

    for step in range(run.steps):
        i = run.indices(len(y), 64)
        per_row = F.binary_cross_entropy_with_logits(model(x[i]), targets[i], reduction="none").sum(1)
        l2 = sum(p.pow(2).sum() for n, p in model.named_parameters() if n.endswith("weight"))
        loss = (per_row * row_w[i]).mean() + sign * 1e-3 * l2
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_mae_score", mae_score):
            break


class SwitchMoE(nn.Module):
    """A top-1 mixture-of-experts layer; `forward` returns the output and the load-balancing loss."""

    def __init__(self, d: int, experts: int = 4, *, scale_by_gate: bool = True) -> None:
        super().__init__()
        self.router = nn.Linear(d, experts)
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
                                     for _ in range(experts))  # fmt: skip
        self.scale_by_gate = scale_by_gate

    def forward(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        probs = torch.softmax(self.router(h), -1)
        gate, choice = probs.max(-1)
        out = torch.zeros_like(h)
        for e, expert in enumerate(self.experts):
            rows = choice == e
            if rows.any():
                y = expert(h[rows])
                # the bug: the chosen expert's output not multiplied by its gate, so the router gets no task gradient
                out[rows] = y * gate[rows, None] if self.scale_by_gate else y
        share = F.one_hot(choice, len(self.experts)).float().mean(0)
        aux = len(self.experts) * (share * probs.mean(0)).sum()
        return h + out, aux


class MoERegressor(nn.Module):
    def __init__(self, dim: int = 8, d: int = 32, *, scale_by_gate: bool = True) -> None:
        super().__init__()
        self.inp = nn.Linear(dim, d)
        self.moe = SwitchMoE(d, scale_by_gate=scale_by_gate)
        self.out = nn.Linear(d, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h, aux = self.moe(F.gelu(self.inp(x)))
        return self.out(h).squeeze(1), aux


def regimes(g: torch.Generator, n: int, dim: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows float[n, dim] and targets from four regimes (the signs of the first two columns), each its own
    nonlinear function."""
    rg = torch.Generator().manual_seed(109)
    w = torch.randn(4, dim, generator=rg)
    x = torch.randn(n, dim, generator=g)
    regime = (x[:, 0] > 0).long() * 2 + (x[:, 1] > 0).long()
    z = (x * w[regime]).sum(1)
    y = torch.where(regime % 2 == 0, torch.sin(z), 0.3 * z**2 - 1) + 0.1 * torch.randn(n, generator=g)
    return x, y


def moe(run: Run) -> None:
    """A regression through a Switch-style top-1 mixture of 4 experts, MSE plus 0.01 x the load-balancing loss,
    Adam (lr 2e-3) with a 30-step linear warmup, batch 128. Scored by R^2 on held-out rows."""
    g = torch.Generator().manual_seed(run.seed)
    x, y = regimes(g, 5000)
    xv, yv, x, y = x[:800], y[:800], x[800:], y[800:]
    torch.manual_seed(run.seed)
    model = MoERegressor(scale_by_gate=run.bug != "gate_probability_not_applied")
    opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 2e-3))
    if run.bug == "warmup_lambda_returns_the_rate":
        # the bug: the lambda written to return the rate itself; LambdaLR multiplies the base rate by it
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 30) * 2e-3)
    else:
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 30))
    run.hook.register_module(model)
    run.hook.register_optimizer(opt)
    for step in range(run.steps):
        i = run.indices(len(y), 128)
        pred, aux = model(x[i])
        loss = F.mse_loss(pred, y[i]) + run.k("aux_weight", 0.01) * aux
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if not close_step(run, step, loss, model, "val_r2", lambda: r2(model(xv)[0], yv)):
            break
