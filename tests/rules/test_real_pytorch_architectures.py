"""The default rules on healthy PyTorch runs of common architectures, captured by the real hook (at every step;
the CNN and the GPT-style model also at the default save_interval 10).

A small CNN (convolutions, BatchNorm, max-pooling, dropout; SGD with momentum) and a GPT-style
language model (token and positional embeddings, pre-norm causal self-attention, GELU, LayerNorm;
nanoGPT's initialisation with the residual projections scaled by 1/sqrt(2 n_layer); AdamW with
warmup and a cosine schedule down to almost 0; also in float16 with a loss scaler that skips its
overflowing steps) must leave every default rule quiet; a ResNet-style net whose residual branches
start at 0 (torchvision's `zero_init_residual`) must get no finding about its init or frozen
parameters (its eval-mode validation loss is unstable at its learning rate, and the validation
rules may say so: on one machine `overfit` did, at an eval point with val 4.96 and train 1.02). They once
did not: `poor_weight_initialization` called GPT-2's 0.02 init too small for a 64-wide model,
`unchanged_tensor` called the final LayerNorm frozen when the cosine schedule's last steps
made its updates smaller than float32's resolution of weights near 1, and (saved every 10th step)
`vanishing_gradient` called the CNN's convolution biases before BatchNorm vanishing (SageMaker's check, which
counts them, is run at a threshold measured on the run, since their size is rounding noise that differs between
CPUs). The same CNN at a learning
rate 5x higher kills most units of its dense ReLU layer and learns worse while its loss still falls: a known limit,
`dead_relu` reports no layer 50-90% dead before the loss stops improving.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import trainguard
import trainguard.torch as tg
from trainguard.api.enums import Severity
from trainguard.api.rules_config import RuleSpec
from trainguard.rules import registry
from trainguard.rules.base import Finding
from trainguard.rules.step_view import StepView
from trainguard.sidecar.view_builder import ViewBuilder, save_interval_of

pytestmark = pytest.mark.slow

Batch = Callable[[torch.Generator], tuple[torch.Tensor, torch.Tensor]]


def train(out: Path, model: nn.Module, opt: torch.optim.Optimizer, batch: Batch, loss_of: Callable[..., torch.Tensor],
          *, steps: int, val: tuple[torch.Tensor, torch.Tensor], lr_at: Callable[[int], float] | None = None,
          save_interval: int = 1) -> float:  # fmt: skip
    """Train with a validation loss every 50 steps (saved at every step by default); return the last training loss."""
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at) if lr_at else None
    with tg.Hook(f"file://{out}", save_interval=save_interval) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for step in range(steps):
            model.train()
            x, y = batch(gen)
            opt.zero_grad()
            loss = loss_of(model(x), y)
            loss.backward()
            hook.record_scalar("loss", loss)
            opt.step()
            if sched is not None:
                sched.step()
            if step % 50 == 0:
                model.eval()
                with torch.no_grad():
                    hook.record_scalar("loss", loss_of(model(val[0]), val[1]), mode="eval")
        assert not hook.errors
    return loss.item()


def run_views(out: Path) -> list[StepView]:
    """The run's views, as the evaluator builds them."""
    run = trainguard.open_run(f"file://{out}")
    source = run.source(0)
    builder = ViewBuilder(rank=0, save_interval=save_interval_of(run.info))
    return [view for seg in source.poll() for view in builder.views(seg, source.catalogue())]


def default_rule_findings(out: Path, specs: list[RuleSpec] | None = None) -> list[Finding]:
    """Every warning-or-worse finding of the default rule set (or `specs`) on the run, as the evaluator builds its
    views."""
    rules = [registry.build(spec) for spec in specs or registry.default_rules()]
    found: list[Finding] = []
    for view in run_views(out):
        for rule in rules:
            found += [f for f in rule.update(view) if f.severity.rank >= Severity.WARNING.rank]
    return found


# --- a small CNN ---------------------------------------------------------------------------------------------------
def images(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """16x16 RGB images: one of 10 fixed random patterns under noise 2.5x its amplitude."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 10, (n,), generator=g)
    patterns = torch.randn(10, 3, 16, 16, generator=torch.Generator().manual_seed(123))
    return patterns[y] * 0.4 + torch.randn(n, 3, 16, 16, generator=g), y


def train_cnn(out: Path, lr: float, save_interval: int = 1) -> float:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 10),
    )  # fmt: skip
    x, y = images(20_000, 1)

    def batch(g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        i = torch.randint(0, len(x), (32,), generator=g)
        return x[i], y[i]

    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)
    return train(
        out,
        model,
        opt,
        batch,
        nn.functional.cross_entropy,
        steps=600,
        val=images(512, 2),
        save_interval=save_interval,
    )


@pytest.mark.parametrize("save_interval", [1, 10])
def test_a_healthy_cnn_leaves_every_default_rule_quiet(tmp_path: Path, save_interval: int) -> None:
    assert (
        train_cnn(tmp_path, lr=0.01, save_interval=save_interval) < 0.1
    )  # it learned (ln 10 = 2.3 at the start)
    assert [f.message for f in default_rule_findings(tmp_path)] == []
    if save_interval == 10:
        sagemaker_counts_the_bias_gradients_batchnorm_cancels(tmp_path)


def sagemaker_counts_the_bias_gradients_batchnorm_cancels(tmp_path: Path) -> None:
    """The CNN's convolutions keep their biases before BatchNorm, which cancels their gradients exactly: what is left
    is rounding noise, whose size depends on the CPU's summation order (1.5e-8 on one machine, above SageMaker's 1e-7
    on another), so SageMaker's check runs at a threshold set between that noise and the kernels' gradients measured
    on this run: it counts the biases, ours (`biases_beside_live_kernels` off) does not."""
    views = run_views(tmp_path)
    biases, kernels = ("grad/0.bias", "grad/4.bias"), ("grad/0.weight", "grad/4.weight")
    noise = max(v.stat(n, "abs_mean") or 0.0 for v in views for n in biases)
    signal = min(v.stat(n, "abs_mean") or math.inf for v in views for n in kernels)
    assert noise < 1e-3 * signal  # 0 in exact arithmetic
    threshold = math.sqrt(noise * signal)
    ungated = {"threshold": threshold, "gate_on_loss": False, "trigger_k": 1, "trigger_n": 1}
    sagemaker = RuleSpec(type="vanishing_gradient", params={**ungated, "biases_beside_live_kernels": True})
    found = default_rule_findings(tmp_path, [sagemaker])
    assert found and found[0].tensor in biases
    ours = RuleSpec(type="vanishing_gradient", params=ungated)  # a bias beside a live kernel does not count
    assert not any(f.tensor in biases for f in default_rule_findings(tmp_path, [ours]))


def test_the_cnn_at_a_learning_rate_5x_higher_loses_most_of_its_dense_units_unreported_while_its_loss_falls(
    tmp_path: Path,
) -> None:
    # A known limit (docs/detection.md, Limits): at 5x the learning rate 81-84% of the 64 units after the first
    # Linear die within 100 steps and stay dead, and the run ends with 3x the healthy run's validation loss, but its
    # training loss keeps falling (a new 1% best at least every 50 steps up to step 400), and `dead_relu` reports a
    # layer 50-90% dead only while the loss stops improving, as a healthy CNN's transiently half-dead layer
    # requires. What the statistics record and what the rules make of them:
    assert train_cnn(tmp_path, lr=0.05) < 1.0  # it learned (ln 10 = 2.3 at the start)
    dense = [
        v.units[("active", "act/10")]
        for v in run_views(tmp_path)
        if ("active", "act/10") in v.units and v.step >= 100
    ]
    assert len(dense) >= 5 and all(np.mean(a < 0.01) > 0.7 for a in dense)
    found = default_rule_findings(tmp_path)
    assert {f.rule for f in found} <= {"dead_relu"}
    assert all(
        f.step >= 400 and "while the loss" in f.message for f in found
    )  # only ever behind the loss gate


class ResidualBlock(nn.Module):
    """Two 3x3 convolutions with BatchNorm around an identity shortcut; the second BatchNorm starts at 0
    (torchvision's `zero_init_residual`), so each block starts as the identity."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        nn.init.zeros_(self.bn2.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))))


VALIDATION_RULES = {"overfit", "overtraining"}


def test_a_resnet_with_zero_initialised_residual_branches_gets_no_init_or_frozen_parameter_finding(
    tmp_path: Path,
) -> None:
    # Zero-initialised BatchNorm weights in every residual branch are no poor init and no frozen layer. The run's
    # eval-mode validation loss is another matter: at this learning rate BatchNorm's running statistics lag the
    # weights, and it swings between 1.0 and 3.2 (near chance level, ln 10) while the training loss is 0.5, which
    # `overfit` or `overtraining` may name, depending on where the eval points fall on a given machine.
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        ResidualBlock(16), ResidualBlock(16), nn.MaxPool2d(2), ResidualBlock(16),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10),
    )  # fmt: skip
    x, y = images(20_000, 1)

    def batch(g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        i = torch.randint(0, len(x), (32,), generator=g)
        return x[i], y[i]

    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4, nesterov=True)
    assert (
        train(tmp_path, model, opt, batch, nn.functional.cross_entropy, steps=500, val=images(512, 2)) < 1.0
    )
    found = default_rule_findings(tmp_path)
    assert [f.message for f in found if f.rule not in VALIDATION_RULES] == []
    # what the validation rules may say is about the validation loss, at eval points where it is far above train
    assert all(f.tensor == "loss" and f.value is not None for f in found)


# --- a GPT-style language model ------------------------------------------------------------------------------------
VOCAB, SEQ, WIDTH, LAYERS = 64, 32, 64, 2


class TinyGPT(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(VOCAB, WIDTH)
        self.pos = nn.Parameter(torch.zeros(SEQ, WIDTH))
        layer = nn.TransformerEncoderLayer(
            WIDTH, 4, 4 * WIDTH, dropout=0.1, activation="gelu", batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(SEQ))
        for name, p in self.named_parameters():  # nanoGPT's init
            if p.dim() >= 2:
                residual = name.endswith(("out_proj.weight", "linear2.weight"))
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * LAYERS) if residual else 0.02)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.emb(tokens) + self.pos[: tokens.shape[1]]
        return self.head(self.norm(self.blocks(h, mask=self.mask, is_causal=True)))


def sequences(g: torch.Generator, n: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    """Counting sequences mod VOCAB from a random start, 10% of the tokens replaced at random."""
    seqs = (torch.randint(0, VOCAB, (n, 1), generator=g) + torch.arange(SEQ + 1)) % VOCAB
    noise = torch.rand(n, SEQ + 1, generator=g) < 0.1
    seqs = torch.where(noise, torch.randint(0, VOCAB, (n, SEQ + 1), generator=g), seqs)
    return seqs[:, :-1], seqs[:, 1:]


@pytest.mark.parametrize("save_interval", [1, 10])
def test_a_healthy_gpt_style_model_with_a_cosine_schedule_leaves_every_default_rule_quiet(
    tmp_path: Path, save_interval: int
) -> None:
    torch.manual_seed(0)
    model = TinyGPT()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    steps, warmup = 600, 50

    def lr_at(step: int) -> float:
        return min(1.0, (step + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(step, steps) / steps))

    def loss_of(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))

    last = train(tmp_path, model, opt, sequences, loss_of, steps=steps, lr_at=lr_at,
                 val=sequences(torch.Generator().manual_seed(9), 128), save_interval=save_interval)  # fmt: skip
    assert last < 1.2  # from ln 64 = 4.2 to near the 10% noise floor
    assert [f.message for f in default_rule_findings(tmp_path)] == []


def test_mixed_precision_with_a_loss_scaler_skipping_overflowing_steps_leaves_every_default_rule_quiet(
    tmp_path: Path,
) -> None:
    # float16 autocast with GradScaler started at 2^40: its first steps overflow and are skipped (the
    # optimizer step does not run, so the hook never reads those gradients) until the scale has come down
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = TinyGPT()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**40)
    gen = torch.Generator().manual_seed(0)
    skipped = 0
    with tg.Hook(f"file://{tmp_path}", save_interval=1) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(200):
            x, y = sequences(gen)
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.float16):
                loss = nn.functional.cross_entropy(model(x).reshape(-1, VOCAB).float(), y.reshape(-1))
            scaler.scale(loss).backward()
            hook.record_scalar("loss", loss)
            scale = scaler.get_scale()
            scaler.step(opt)
            scaler.update()
            skipped += scaler.get_scale() < scale
        assert not hook.errors
    assert skipped >= 10 and loss.item() < 2.0
    assert (
        trainguard.open_run(f"file://{tmp_path}").steps()[-1] == 200 - skipped - 1
    )  # steps = optimizer steps
    assert [f.message for f in default_rule_findings(tmp_path)] == []
