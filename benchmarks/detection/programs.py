"""Seeded numpy training programs: healthy controls, hard negatives, and one injected fault each.

Each `Program` is a small MLP trained with hand-written backprop on a synthetic data set
(rules-science §7): a 10-class 32-D Gaussian mixture ("mini-MNIST"), two-class blobs, or a
99:1 imbalanced set. `train()` runs it, records statistics through a `trainguard.Recorder`
(so the benchmark reads real runs in the real format), and returns the ground truth an
oracle with full-fidelity access sees: when the fault became manifest, which layer, and the
outcome (final validation accuracy, divergence).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

import trainguard


@dataclass(frozen=True)
class Program:
    """One training configuration. Fields after `name` are the knobs faults turn."""

    name: str
    fault: str | None = None
    """Fault id F1..F18 of rules-science §7, or None for a healthy program."""
    category: str | None = None
    """AUTOTRAINER layout: VG, EG, DR, OL, SC, NaN, or OF (overfit), None when healthy."""
    intended_rules: tuple[str, ...] = ()
    """Our rules that should diagnose this fault (any of them counts as the right class)."""
    affected_layer: str | None = None
    should_stop: bool = True
    """False for faults that do not hurt the outcome (transient spikes): warn at most."""
    hard_negative: bool = False
    dataset: str = "mixture"
    hidden: tuple[int, ...] = (64, 64)
    activation: str = "relu"
    init: str = "he"
    init_scale: float = 1.0
    bias_init: float = 0.0
    bias_init_layer: int | None = None
    optimizer: str = "momentum"
    lr: float = 0.05
    momentum: float = 0.9
    schedule: str = "constant"
    lr_change_at: int | None = None
    lr_change_factor: float = 1.0
    steps: int = 600
    batch: int = 64
    train_size: int = 20000
    label_noise: float = 0.0
    leak_validation: bool = False
    input_scale: float = 1.0
    wrong_output: bool = False
    corrupt_batch_at: int | None = None
    freeze_layer: int | None = None
    freeze_from: int = 0
    permute_labels: bool = False
    imbalance: float | None = None
    loss_scale: float = 1.0
    grad_noise: float = 0.0
    save_interval: int = 5
    """Steps between saved steps; the `_every_step` copies of the healthy programs save every step."""


@dataclass
class Truth:
    """Ground truth of one run, from the trainer's full-fidelity view."""

    program: str
    seed: int
    fault: str | None
    category: str | None
    should_stop: bool
    affected_layer: str | None
    inject_step: int
    manifest_step: int | None
    steps: int
    final_val_acc: float
    diverged: bool
    losses: list[float] = field(default_factory=list)
    score_steps: list[int] = field(default_factory=list)
    """Steps of the oracle's validation scores (the realistic PyTorch suite only)."""
    scores: list[float] = field(default_factory=list)
    """The oracle's validation scores at `score_steps`, in [0, 1], higher is better."""


def _dataset(
    p: Program, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    dim = 32
    if p.dataset == "blobs":
        k = 2
        centers = rng.normal(0, 1.0, (k, dim))
    else:
        k = 10
        centers = rng.normal(0, 1.0, (k, dim))
    n = p.train_size + 2000
    if p.imbalance is not None:
        k = 2
        y = (rng.random(n) < p.imbalance).astype(np.int64)
        centers = rng.normal(0, 1.0, (2, dim))
    else:
        y = rng.integers(0, k, n)
    x = centers[y] + rng.normal(0, 1.8, (n, dim))
    x = (x - x.mean(0)) / x.std(0)
    xtr, ytr, xva, yva = x[: p.train_size], y[: p.train_size].copy(), x[p.train_size :], y[p.train_size :]
    if p.label_noise:
        flip = rng.random(ytr.size) < p.label_noise
        ytr[flip] = rng.integers(0, k, flip.sum())
    if p.permute_labels:
        ytr = rng.permutation(ytr)
    if p.leak_validation:
        xva, yva = xtr[:2000].copy(), ytr[:2000].copy()
    return xtr * p.input_scale, ytr, xva * p.input_scale, yva, k


def init_std(p: Program, fan_in: int, fan_out: int) -> float:
    """Std of a kernel's initial weights: He, Glorot or a fixed 0.1 ("small"), times `init_scale`."""
    std = math.sqrt(2 / fan_in) if p.init == "he" else math.sqrt(2 / (fan_in + fan_out))
    return (0.1 if p.init == "small" else std) * p.init_scale


def init_bias(p: Program, layer: int, layers: int) -> float:
    """Initial bias of a layer: `bias_init` on the hidden layers it names, 0 on the output layer."""
    chosen = p.bias_init_layer is None or p.bias_init_layer == layer
    return p.bias_init if chosen and layer < layers - 1 else 0.0


def _act(z: np.ndarray, kind: str) -> np.ndarray:
    if kind == "relu":
        return np.maximum(z, 0)
    if kind == "sigmoid":
        return 1 / (1 + np.exp(-np.clip(z, -60, 60)))
    return np.tanh(z)


def _act_grad(a: np.ndarray, z: np.ndarray, kind: str) -> np.ndarray:
    if kind == "relu":
        return (z > 0).astype(z.dtype)
    if kind == "sigmoid":
        return a * (1 - a)
    return 1 - a * a


def _lr(p: Program, step: int) -> float:
    lr = p.lr
    if p.schedule == "warmup_cosine":
        warm = p.steps // 10
        lr = (
            p.lr * (step + 1) / warm
            if step < warm
            else p.lr * 0.5 * (1 + math.cos(math.pi * (step - warm) / (p.steps - warm)))
        )
    if p.lr_change_at is not None and step >= p.lr_change_at:
        lr *= p.lr_change_factor
    return lr


def train(p: Program, seed: int, *, out: str, eval_every: int = 25) -> Truth:
    """Train `p` with `seed`, recording into the run at `out` every `p.save_interval` steps; return the ground truth."""
    with np.errstate(all="ignore"):  # diverging programs overflow on purpose
        return _train(p, seed, out=out, save_interval=p.save_interval, eval_every=eval_every)


def _train(p: Program, seed: int, *, out: str, save_interval: int, eval_every: int) -> Truth:
    rng = np.random.default_rng(seed)
    xtr, ytr, xva, yva, k = _dataset(p, rng)
    sizes = [xtr.shape[1], *p.hidden, k]
    ws, bs = [], []
    for i in range(len(sizes) - 1):
        fan_in, fan_out = sizes[i], sizes[i + 1]
        w = (
            rng.normal(0, init_std(p, fan_in, fan_out), (fan_in, fan_out))
            if p.init != "zeros"
            else np.zeros((fan_in, fan_out))
        )
        b = np.full(fan_out, init_bias(p, i, len(sizes) - 1))
        ws.append(w)
        bs.append(b)
    names = [f"fc{i}" for i in range(len(ws))]
    vel = [(np.zeros_like(w), np.zeros_like(b)) for w, b in zip(ws, bs)]
    adam_m = [(np.zeros_like(w), np.zeros_like(b)) for w, b in zip(ws, bs)]
    adam_v = [(np.zeros_like(w), np.zeros_like(b)) for w, b in zip(ws, bs)]
    truth = Truth(
        program=p.name, seed=seed, fault=p.fault, category=p.category, should_stop=p.should_stop,
        affected_layer=p.affected_layer, inject_step=0, manifest_step=None, steps=p.steps,
        final_val_acc=0.0, diverged=False,
    )  # fmt: skip
    if p.corrupt_batch_at is not None:
        truth.inject_step = p.corrupt_batch_at
    if p.freeze_layer is not None:
        truth.inject_step = p.freeze_from
    dead_onset = None
    best_val: tuple[float, int] | None = None
    """(lowest val loss, its step): Prechelt's E_opt, where overfitting becomes manifest."""
    with trainguard.Recorder(
        out, save_interval=save_interval, flush_every_steps=1000, flush_interval_seconds=60
    ) as rec:
        for step in range(p.steps):
            idx = rng.integers(0, xtr.shape[0], p.batch)
            x, y = xtr[idx], ytr[idx]
            if p.corrupt_batch_at is not None and step == p.corrupt_batch_at:
                x = x * 8
                y = (y + 1) % k
            # forward
            zs, acts = [], [x]
            h = x
            for i, (w, b) in enumerate(zip(ws, bs)):
                z = h @ w + b
                zs.append(z)
                h = _act(z, p.activation) if i < len(ws) - 1 else (np.maximum(z, 0) if p.wrong_output else z)
                acts.append(h)
            logits = acts[-1]
            with np.errstate(over="ignore", invalid="ignore"):
                shifted = logits - logits.max(axis=1, keepdims=True)
                ex = np.exp(shifted)
                probs = ex / ex.sum(axis=1, keepdims=True)
                loss = float(-np.log(np.clip(probs[np.arange(p.batch), y], 1e-12, None)).mean())
            truth.losses.append(loss)
            if not math.isfinite(loss) and truth.manifest_step is None:
                truth.manifest_step = step
                truth.diverged = True
            # backward
            g = probs.copy()
            g[np.arange(p.batch), y] -= 1
            g = g / p.batch * p.loss_scale
            if p.wrong_output:
                g = g * (zs[-1] > 0)
            grads = []
            for i in range(len(ws) - 1, -1, -1):
                gw = acts[i].T @ g
                gb = g.sum(0)
                if p.grad_noise:
                    gw = gw + rng.normal(0, p.grad_noise, gw.shape)
                grads.append((gw, gb))
                if i:
                    g = (g @ ws[i].T) * _act_grad(acts[i], zs[i - 1], p.activation)
            grads.reverse()
            # record the tensors on saved steps (only they do any work inside the recorder)
            order = 0
            if rec.is_saved_step():
                rec.record_tensor("inputs", x, collection="inputs")
                for i, name in enumerate(names):
                    rec.record_tensor(f"{name}.weight", ws[i], collection="weights", module=name, order=i)
                    rec.record_tensor(f"{name}.bias", bs[i], collection="biases", module=name, order=i)
                    rec.record_tensor(
                        f"grad/{name}.weight", grads[i][0], collection="gradients", module=name, order=i
                    )
                    rec.record_tensor(
                        f"grad/{name}.bias", grads[i][1], collection="gradients", module=name, order=i
                    )
                    if i < len(ws) - 1:
                        rec.record_tensor(
                            f"act/{name}", acts[i + 1], collection="activations", module=name,
                            activation=p.activation, order=i,
                        )  # fmt: skip
                    order += 1
            # scalars at every step, as a script records its loss (the Recorder keeps them all since format 2.4)
            rec.record_scalar("loss", loss)
            rec.record_scalar("accuracy", float((probs.argmax(1) == y).mean()), collection="metrics")
            rec.record_scalar("lr", _lr(p, step), collection="optimizer")
            # oracle: dead units (>= 50% of a ReLU layer never active on this batch)
            if p.activation == "relu" and dead_onset is None:
                for i in range(len(ws) - 1):
                    if (acts[i + 1] > 0).any(axis=0).mean() <= 0.5:
                        dead_onset = step
                        break
            # update
            lr = _lr(p, step)
            for i in range(len(ws)):
                if p.freeze_layer == i and step >= p.freeze_from:
                    continue
                for j, (param, gr) in enumerate(((ws[i], grads[i][0]), (bs[i], grads[i][1]))):
                    if p.optimizer == "sgd":
                        param -= lr * gr
                    elif p.optimizer == "momentum":
                        v = vel[i][j]
                        v *= p.momentum
                        v += gr
                        param -= lr * v
                    else:
                        m, vv = adam_m[i][j], adam_v[i][j]
                        m *= 0.9
                        m += 0.1 * gr
                        vv *= 0.999
                        vv += 0.001 * gr * gr
                        param -= (
                            lr
                            * (m / (1 - 0.9 ** (step + 1)))
                            / (np.sqrt(vv / (1 - 0.999 ** (step + 1))) + 1e-8)
                        )
            if step % eval_every == eval_every - 1 or step == p.steps - 1:
                h = xva
                for i, (w, b) in enumerate(zip(ws, bs)):
                    z = h @ w + b
                    h = (
                        _act(z, p.activation)
                        if i < len(ws) - 1
                        else (np.maximum(z, 0) if p.wrong_output else z)
                    )
                with np.errstate(over="ignore", invalid="ignore"):
                    sh = h - h.max(axis=1, keepdims=True)
                    pr = np.exp(sh) / np.exp(sh).sum(axis=1, keepdims=True)
                    vloss = float(-np.log(np.clip(pr[np.arange(yva.size), yva], 1e-12, None)).mean())
                vacc = float((h.argmax(1) == yva).mean())
                rec.record_scalar("val_loss", vloss, mode="eval")
                rec.record_scalar("val_accuracy", vacc, mode="eval", collection="metrics")
                truth.final_val_acc = vacc if math.isfinite(vloss) else 0.0
                if math.isfinite(vloss) and (best_val is None or vloss < best_val[0]):
                    best_val = (vloss, step)
            rec.step()
    if p.category == "OF" and best_val is not None:
        truth.manifest_step = best_val[1]
    if p.fault == "F5" and truth.manifest_step is None:
        truth.manifest_step = dead_onset
    if truth.manifest_step is None and p.fault is not None:
        truth.manifest_step = truth.inject_step
    return truth


def healthy(name: str, **kw: object) -> Program:
    return Program(name=name, **kw)  # type: ignore[arg-type]


def catalogue() -> list[Program]:
    """Every program of the benchmark: 18 faults and at least as many healthy runs (hard negatives marked)."""
    base = Program(name="base")
    sig = replace(base, activation="sigmoid", init="glorot", lr=0.5, optimizer="sgd", hidden=(32,) * 4)
    faults = [
        replace(base, name="F1_lr_x100", fault="F1", category="NaN", intended_rules=("exploding_tensor", "exploding_gradient", "weight_update_ratio"), lr=5.0, optimizer="sgd"),
        replace(base, name="F2_lr_x1e-4", fault="F2", category="SC", intended_rules=("loss_not_decreasing", "weight_update_ratio", "stalled_training"), lr=5e-6),
        replace(sig, name="F3_vanishing_sigmoid", fault="F3", category="VG", intended_rules=("vanishing_gradient",), hidden=(32,) * 10, init="small", affected_layer="fc0"),
        replace(base, name="F4_saturated_tanh", fault="F4", category="SC", intended_rules=("saturated_activation",), activation="tanh", init_scale=10.0, init="glorot", affected_layer="fc0"),
        replace(base, name="F5_dead_relu_bias", fault="F5", category="DR", intended_rules=("dead_relu",), bias_init=-5.0, bias_init_layer=1, affected_layer="fc1"),
        replace(base, name="F6_frozen_layer", fault="F6", category="SC", intended_rules=("unchanged_tensor",), freeze_layer=1, freeze_from=100, affected_layer="fc1", should_stop=False),
        replace(base, name="F7_overfit_noise", fault="F7", category="OF", intended_rules=("overfit", "overtraining"), label_noise=0.4, train_size=300, steps=1200, hidden=(256, 256), lr=0.05),
        replace(base, name="F8_leakage", fault="F8", category="OF", intended_rules=("overfit",), leak_validation=True, label_noise=0.3, train_size=300, steps=900, hidden=(256, 256), should_stop=False),
        replace(base, name="F9_unnormalized", fault="F9", category="EG", intended_rules=("exploding_tensor", "exploding_gradient", "tensor_variance", "threshold"), input_scale=255.0, optimizer="sgd", lr=0.05),
        replace(base, name="F10_relu_output", fault="F10", category="SC", intended_rules=("loss_not_decreasing", "dead_relu", "poor_weight_initialization"), wrong_output=True),
        replace(base, name="F11_oscillation", fault="F11", category="OL", intended_rules=("oscillating_loss", "loss_spike"), momentum=0.99, lr=0.15),
        replace(base, name="F12_corrupt_batch", fault="F12", category="NaN", intended_rules=("loss_spike",), corrupt_batch_at=300, should_stop=False),
        replace(base, name="F13_deep_relu_x3", fault="F13", category="EG", intended_rules=("exploding_gradient", "exploding_tensor"), hidden=(64,) * 8, init_scale=3.0, optimizer="sgd", lr=0.01),
        replace(base, name="F14_zero_init", fault="F14", category="SC", intended_rules=("all_zero", "poor_weight_initialization", "unchanged_tensor"), init="zeros"),
        replace(base, name="F15_permuted_labels", fault="F15", category="SC", intended_rules=("loss_not_decreasing", "overfit"), permute_labels=True),
        replace(base, name="F16_imbalance", fault="F16", category="SC", intended_rules=("class_imbalance",), imbalance=0.01, should_stop=False),
        replace(base, name="F17_loss_scale", fault="F17", category="EG", intended_rules=("weight_update_ratio", "exploding_gradient", "exploding_tensor"), loss_scale=512.0, optimizer="sgd"),
        replace(base, name="F18_optimizer_misses_layer", fault="F18", category="SC", intended_rules=("unchanged_tensor",), freeze_layer=0, freeze_from=0, affected_layer="fc0"),
    ]  # fmt: skip
    controls = [
        replace(base, name="H1_relu_momentum"),
        replace(base, name="H2_relu_adam", optimizer="adam", lr=2e-3),
        replace(base, name="H3_relu_sgd", optimizer="sgd", lr=0.1),
        replace(base, name="H4_blobs", dataset="blobs"),
        replace(sig, name="H5_sigmoid_shallow", hidden=(64, 64), lr=0.5),
        replace(base, name="H6_tanh", activation="tanh", init="glorot", lr=0.05),
        replace(base, name="H7_wide", hidden=(256, 256), lr=0.02),
        replace(base, name="H8_deep_relu", hidden=(64,) * 6, lr=0.02),
        # Hard negatives: the cases the published detectors flag on healthy runs.
        replace(base, name="N1_sparse_relu", hard_negative=True, bias_init=-0.3, hidden=(128, 128)),
        replace(base, name="N2_easy_task", hard_negative=True, dataset="blobs", steps=800),
        replace(base, name="N3_warmup_cosine", hard_negative=True, schedule="warmup_cosine", lr=0.1),
        replace(base, name="N4_small_batch_noisy", hard_negative=True, batch=8, lr=0.02),
        replace(base, name="N5_lr_x2_benign", hard_negative=True, lr=0.1),
        replace(base, name="N6_late_lr_drop", hard_negative=True, lr_change_at=400, lr_change_factor=0.1),
        replace(base, name="N7_long_plateau", hard_negative=True, steps=1200, lr=0.01, optimizer="sgd"),
        replace(base, name="N8_grad_noise", hard_negative=True, grad_noise=0.01),
        replace(base, name="N9_adam_deep", hard_negative=True, optimizer="adam", lr=1e-3, hidden=(64,) * 5),
        replace(sig, name="N10_sigmoid_deeper", hard_negative=True, hidden=(32,) * 4, init="glorot", lr=1.0),
    ]  # fmt: skip
    # The same healthy runs saved at every step: one step's loss and update are mostly batch noise,
    # which partly cancels between views five steps apart, so a threshold that holds there need not.
    every_step = [
        replace(p, name=f"{p.name}_every_step", hard_negative=True, save_interval=1) for p in controls
    ]
    return faults + controls + every_step
