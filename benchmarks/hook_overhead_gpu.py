"""Training-step overhead of the hook on a GPU: no hook vs TrainGuard's hook, the issue's MLP and a GPT-style model.

One command, one table per model:

    python -m benchmarks.hook_overhead_gpu [--reps 3] [--models mlp,gpt] [--mlp-steps 1000] [--gpt-steps 200]
        [--gpt1b-steps 60] [--device cuda]

The MLP is the CPU benchmark's (32->256->256->10, 76k parameters, batch 64, SGD), on the device.
The GPT-style model has 12 pre-norm blocks of width 768 (12 heads, GELU, causal attention through
PyTorch's scaled-dot-product kernels), an embedding and a head over a 16384-token vocabulary (110M
parameters), trains on 8 sequences of 512 tokens per step with AdamW under bfloat16 autocast, and
records its loss every step. `--models gpt1b` adds the same GPT scaled to ~1B parameters (16 blocks
of width 2048, 32 heads, vocabulary 32768: 0.94B; 4 sequences of 1024 tokens); two copies, their
AdamW states and the hook's saved copies are what one 80 GB GPU holds, so each hook configuration
(save_interval 10 and 1, and 1 with `update_l2`/`distance_l2` estimated from their fixed sample,
`history_max_fraction` 0) trains in lockstep with a no-hook copy of its own and is compared with
that one (no noise floor from a second copy). Every configuration of a model trains in lockstep with two no-hook
copies, `--block` steps at a time in rotating order, each block timed from a device
synchronisation to the next; "x no hook" is the median over `--reps` of each repetition's ratio to
the mean of the no-hook copies of the same repetition, with the range beside it. The hook runs
with its default collections (weights, biases, gradients, losses, activations sampled) at
save_interval 10 and 1, at 1 without the saved copies behind `update_l2`/`distance_l2`, and at 1
without Tier-1 steps (`tier1_interval` beyond the run: what the histograms and per-unit vectors of
every 10th saved step cost).
smdebug's hook is not measured here: the GPU machine runs without a package index, and its
numpy 2 breaks smdebug 1.0.34 (the CPU benchmark measures it in its own venv).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

import trainguard.torch as tg
from benchmarks.hook_overhead import disk_usage, median, print_header, timing_cells
from trainguard.capture.torch._plan import DEFAULT_PACK_MAX_NUMEL

Step = Callable[[], torch.Tensor]
"""One training step of a model; returns its loss."""


class GPT(nn.Module):
    """A GPT-2-style decoder: token and positional embeddings, pre-norm blocks, a final LayerNorm and a head."""

    def __init__(self, *, vocab: int, width: int, layers: int, heads: int, seq: int) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.randn(seq, width) * 0.02)
        block = nn.TransformerEncoderLayer(
            width, heads, 4 * width, dropout=0.0, activation=nn.GELU(), batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.emb(tokens) + self.pos[: tokens.shape[1]]
        return self.head(self.norm(self.blocks(h, mask=self.mask, is_causal=True)))


@dataclass
class Model:
    """A model to measure: how to build one copy of it (module, optimizer, step) and how long to run it."""

    name: str
    build: Callable[[torch.device], tuple[nn.Module, torch.optim.Optimizer, Step]]
    steps: int
    block: int
    large: bool = False
    """Too large for five copies on one GPU: each hook configuration is measured beside a no-hook copy of its own."""

    @property
    def warmup(self) -> int:
        """Untimed steps every configuration trains first (kernels, the allocator, the hook's plans); the hook
        writes them too."""
        return min(20, self.steps)


def mlp(device: torch.device) -> tuple[nn.Module, torch.optim.Optimizer, Step]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()

    def step() -> torch.Tensor:
        x = torch.randn(64, 32, device=device)
        y = torch.randint(0, 10, (64,), device=device)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return model, opt, step


def gpt(
    device: torch.device,
    *,
    width: int = 768,
    layers: int = 12,
    seq: int = 512,
    batch: int = 8,
    vocab: int = 16384,
) -> tuple[nn.Module, torch.optim.Optimizer, Step]:
    torch.manual_seed(0)
    model = GPT(vocab=vocab, width=width, layers=layers, heads=max(width // 64, 1), seq=seq).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16)

    def step() -> torch.Tensor:
        tokens = torch.randint(0, vocab, (batch, seq + 1), device=device)
        opt.zero_grad()
        with autocast:
            logits = model(tokens[:, :-1])
        loss = nn.functional.cross_entropy(logits.float().reshape(-1, vocab), tokens[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        return loss

    return model, opt, step


@dataclass
class Config:
    label: str
    save_interval: int | None
    track_updates: bool = True
    tier1_interval: int = 10
    history_max_fraction: float = 0.10
    seconds: list[float] = field(default_factory=list)
    bytes_per_run: list[int] = field(default_factory=list)


@dataclass
class Trainer:
    config: Config
    step: Step
    hook: tg.Hook | None
    out: Path

    def run(self, steps: int, device: torch.device) -> float:
        sync(device)
        started = time.perf_counter()
        for _ in range(steps):
            loss = self.step()
            if self.hook is not None:
                self.hook.record_scalar("loss", loss)
        sync(device)
        seconds = time.perf_counter() - started
        if self.hook is not None:
            self.hook.wait_idle(5.0)  # untimed: the next block must not pay for this one's uploads
        return seconds


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


GPT1B = {"width": 2048, "layers": 16, "seq": 1024, "batch": 4, "vocab": 32768}
"""The ~1B-parameter GPT's sizes (`gpt`): 0.94B parameters."""


def repetition(model: Model, configs: list[Config], device: torch.device, pack_max_numel: int) -> None:
    trainers = []
    for c in configs:
        module, opt, step = model.build(device)
        out = Path(tempfile.mkdtemp(prefix="tg-gpu-bench-"))
        hook = None
        if c.save_interval is not None:
            hook = tg.Hook(
                f"file://{out}/run",
                save_interval=c.save_interval,
                track_updates=c.track_updates,
                tier1_interval=c.tier1_interval,
                history_max_fraction=c.history_max_fraction,
                pack_max_numel=pack_max_numel,
            )
            hook.register_module(module)
            hook.register_optimizer(opt)
        trainers.append(Trainer(c, step, hook, out))
    for t in trainers:
        t.run(model.warmup, device)
    seconds = [0.0] * len(trainers)
    for i, start in enumerate(range(0, model.steps, model.block)):
        n = min(model.block, model.steps - start)
        for j in [(k + i) % len(trainers) for k in range(len(trainers))]:
            seconds[j] += trainers[j].run(n, device)
    for t, sec in zip(trainers, seconds):
        t.config.seconds.append(sec)
        if t.hook is not None:
            t.hook.close()
            if t.hook.errors:
                raise SystemExit(f"the hook failed during the benchmark: {t.hook.errors}")
            t.config.bytes_per_run.append(disk_usage(t.out)[0])
    del trainers
    if device.type == "cuda":
        torch.cuda.empty_cache()


def measure(model: Model, device: torch.device, reps: int, pack_max_numel: int) -> None:
    module, _, _ = model.build(device)
    params = sum(p.numel() for p in module.parameters())
    del module
    ours = [Config("trainguard", 10), Config("trainguard", 1)]
    refs: dict[str, list[float]] = {}
    """Per hook configuration, the no-hook seconds of each repetition it is compared with."""
    if model.large:  # each hook configuration beside a no-hook copy of its own
        ours.append(Config("trainguard, update_l2/distance_l2 sampled", 1, history_max_fraction=0.0))
        base = [Config(f"no hook, beside '{c.label}' at save_int {c.save_interval}", None) for c in ours]
        for _ in range(reps):
            for b, c in zip(base, ours):
                repetition(model, [b, c], device, pack_max_numel)
        for b, c in zip(base, ours):
            refs[b.label] = refs[c.label] = b.seconds
        floor = "each hook configuration beside a no-hook copy of its own: no noise floor measured"
    else:
        base = [Config("no hook", None), Config("no hook, second model", None)]
        ours.append(Config("trainguard, no update_l2/distance_l2", 1, track_updates=False))
        ours.append(Config("trainguard, no Tier-1 steps", 1, tier1_interval=10**9))
        for _ in range(reps):
            repetition(model, [*base, *ours], device, pack_max_numel)
        per_rep = [statistics.fmean(pair) for pair in zip(*(b.seconds for b in base))]
        refs = {c.label: per_rep for c in [*base, *ours]}
        spread = abs(median(base[0].seconds) - median(base[1].seconds)) / statistics.fmean(
            median(b.seconds) for b in base
        )
        floor = f"the two no-hook copies {100 * spread:.1f}% apart: the noise floor of each ratio"
    base_s = statistics.fmean(median(b.seconds) for b in base)
    print(
        f"\n## {model.name}: {params / 1e6:.2f}M parameters, {model.steps} steps per repetition, blocks of "
        f"{model.block}, {reps} repetitions; no-hook step {1000 * base_s / model.steps:.3f} ms ({floor})"
    )
    header = ("configuration", "save_int", "step ms", "x no hook", "range over reps", "bytes/saved step")
    print_header(header)
    for c in [*base, *ours]:
        paired = [sec / ref for sec, ref in zip(c.seconds, refs[c.label])]
        saved = math.ceil((model.steps + model.warmup) / c.save_interval) if c.save_interval else 0
        cells = (
            *timing_cells(c.label, c.save_interval, c.seconds, model.steps, paired),
            f"{median([b / saved for b in c.bytes_per_run]):,.0f}" if saved else "-",
        )
        print("| " + " | ".join(cells) + " |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--mlp-steps", type=int, default=1000)
    ap.add_argument("--gpt-steps", type=int, default=200)
    ap.add_argument("--gpt1b-steps", type=int, default=60)
    ap.add_argument(
        "--models",
        default="mlp,gpt",
        help="comma-separated, of mlp, gpt (110M), gpt1b (0.94B) (default %(default)s)",
    )
    ap.add_argument(
        "--small",
        action="store_true",
        help="a 2-block GPT of width 64, vocabulary 1024, batches of 2 (to try the script on CPU)",
    )
    ap.add_argument(
        "--pack-max-numel",
        type=int,
        default=DEFAULT_PACK_MAX_NUMEL,
        help="the hook's pack_max_numel: larger tensors are reduced one by one (default %(default)s)",
    )
    args = ap.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(
            "no CUDA device: this benchmark needs a GPU (the CPU one is benchmarks/hook_overhead.py)"
        )
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"# hook overhead on {name}, torch {torch.__version__}")

    def gpt_build(d: torch.device) -> tuple[nn.Module, torch.optim.Optimizer, Step]:
        return gpt(d, width=64, layers=2, seq=64, batch=2, vocab=1024) if args.small else gpt(d)

    def gpt1b_build(d: torch.device) -> tuple[nn.Module, torch.optim.Optimizer, Step]:
        if args.small:
            return gpt(d, width=128, layers=2, seq=64, batch=2, vocab=1024)
        return gpt(d, **GPT1B)

    available = {
        "mlp": Model("MLP 32-256-256-10, batch 64, SGD", mlp, args.mlp_steps, 50),
        "gpt": Model(
            "GPT-style, 110M parameters (12 blocks of width 768), 8 x 512 tokens, AdamW, bf16 autocast"
            if not args.small
            else "GPT-style, 2 blocks of width 64, vocabulary 1024 (--small)",
            gpt_build,
            args.gpt_steps,
            20,
        ),
        "gpt1b": Model(
            "GPT-style, 0.94B parameters (16 blocks of width 2048), 4 x 1024 tokens, AdamW, bf16 autocast"
            if not args.small
            else "GPT-style, 2 blocks of width 128 (--small, in place of the 0.94B one)",
            gpt1b_build,
            args.gpt1b_steps,
            10,
            large=True,
        ),
    }
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in available]
    if unknown:
        raise SystemExit(f"unknown model(s) {unknown}: choose from {', '.join(available)}")
    models = [available[n] for n in names]
    for m in models:
        measure(m, device, args.reps, args.pack_max_numel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
