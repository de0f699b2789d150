"""Sequence scripts of the seventeenth blind split: an image captioner (a small CNN encoder and a GRU decoder trained
with teacher forcing), and an algorithmic transformer that reverses digit strings.

`captioner`: 12x12 RGB pictures of one shape (a filled square, a ring, a plus, a bar) in one of four colours in one of
four quadrants, jittered by a pixel, with noise; the caption is the three words (colour, shape, place) between a start
and an end token; the encoder's pooled features set the GRU's first hidden state, the decoder reads the caption shifted
right and is trained by cross-entropy on the next word; scored by the share of held-out words the greedy caption gets
right. `reverser`: strings of 3-7 digits padded to 7; a pre-norm transformer encoder with learned positions and
hand-written attention that ignores the padded keys outputs at each real position the digit at the mirrored position,
cross-entropy on the real positions; a linear warm-up then a constant rate; scored by the held-out per-digit accuracy.
Bugs: the linear scaling rule applied as the base rate times the batch size; an exponential decay's gamma given the
factor meant for the whole run; the encoder's features never passed to the decoder; Adam's betas swapped; the padded
queries' rows masked as well as the padded keys; the padded strings flipped whole as targets.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

SIDE, BOS, EOS, VOCAB = 12, 0, 1, 14
"""Picture side; the start and end tokens; the vocabulary (2 specials, 4 colours, 4 shapes, 4 places)."""
COLOURS = torch.tensor([[1.0, 0.1, 0.1], [0.1, 0.9, 0.1], [0.2, 0.3, 1.0], [0.9, 0.9, 0.1]])


def _shape(kind: int) -> torch.Tensor:
    """A 5x5 stencil of shape `kind`: a filled square, a ring, a plus, a horizontal bar."""
    s = torch.zeros(5, 5)
    if kind == 0:
        s[1:4, 1:4] = 1
    elif kind == 1:
        s[:, :] = 1
        s[1:4, 1:4] = 0
    elif kind == 2:
        s[2, :] = 1
        s[:, 2] = 1
    else:
        s[2:4, :] = 1
    return s


STENCILS = torch.stack([_shape(k) for k in range(4)])


def _pictures(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Pictures float[n, 3, SIDE, SIDE] and captions long[n, 5] (start, colour, shape, place, end)."""
    colour, kind, place = (torch.randint(0, 4, (n,), generator=g) for _ in range(3))
    jitter = torch.randint(0, 2, (n, 2), generator=g)
    pics = 0.15 * torch.randn(n, 3, SIDE, SIDE, generator=g) + 0.2
    for i in range(n):
        r = 6 * int(place[i] // 2) + int(jitter[i, 0])
        c = 6 * int(place[i] % 2) + int(jitter[i, 1])
        stencil = STENCILS[kind[i]]
        pics[i, :, r : r + 5, c : c + 5] += stencil * COLOURS[colour[i]].view(3, 1, 1)
    caption = torch.stack([torch.full((n,), BOS), 2 + colour, 6 + kind, 10 + place, torch.full((n,), EOS)], 1)
    return pics, caption


class Captioner(nn.Module):
    """A two-block CNN to the GRU's first hidden state, a word embedding, a GRU of `width`, a linear layer to words."""

    def __init__(self, width: int, channels: int) -> None:
        super().__init__()
        c = channels
        self.encoder = nn.Sequential(nn.Conv2d(3, c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                     nn.Conv2d(c, 2 * c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                     nn.Linear(2 * c * 9, width), nn.Tanh())  # fmt: skip
        self.embed = nn.Embedding(VOCAB, width)
        self.gru = nn.GRU(width, width, batch_first=True)
        self.out = nn.Linear(width, VOCAB)

    def forward(self, pics: torch.Tensor, words: torch.Tensor, from_picture: bool = True) -> torch.Tensor:
        if from_picture:
            seq, _ = self.gru(self.embed(words), self.encoder(pics).unsqueeze(0))
        else:
            seq, _ = self.gru(self.embed(words))
        return self.out(seq)

    def greedy(self, pics: torch.Tensor, length: int = 3) -> torch.Tensor:
        """The first `length` words of the greedy caption of each picture."""
        h = self.encoder(pics).unsqueeze(0)
        word = torch.full((len(pics), 1), BOS)
        said = []
        for _ in range(length):
            seq, h = self.gru(self.embed(word), h)
            word = self.out(seq).argmax(-1)
            said.append(word[:, 0])
        return torch.stack(said, 1)


def captioner(run: Run) -> None:
    """A captioner of `width` (64) and `channels` (16), batches of `batch` (64), `opt` (Adam; or AdamW, RMSprop,
    Nesterov SGD) at `lr` (3e-3), optionally clipped by global norm (`clip`). Scored by the share of held-out words
    the greedy caption gets right."""
    g = torch.Generator().manual_seed(run.seed)
    pics, caps = _pictures(g, 3000)
    pics_v, caps_v = _pictures(g, 500)
    torch.manual_seed(run.seed)
    model = Captioner(run.k("width", 64), run.k("channels", 16))
    batch, clip = run.k("batch", 64), run.k("clip", None)
    if run.k("opt", "adam") == "momentum":
        # the linear scaling rule from a base rate for batches of 256
        base = run.k("base_lr", 0.4)
        lr = base * batch if run.bug == "lr_scaled_by_batch_not_by_ratio" else base * batch / 256
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        run.hook.register_module(model)
        run.hook.register_optimizer(opt)
    else:
        opt = optimizers.registered(run, model, 3e-3)
    sched = None
    if run.k("exp_decay", False):
        # decay to 1% of the rate over the run
        gamma = 0.01 if run.bug == "exponential_gamma_given_as_final_factor" else 0.01 ** (1 / run.steps)
        sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma)

    def words_right() -> float:
        return float((model.greedy(pics_v) == caps_v[:, 1:4]).float().mean())

    for step in range(run.steps):
        pick = run.indices(len(pics), batch)
        x, cap = pics[pick], caps[pick]
        logits = model(x, cap[:, :-1], from_picture=run.bug != "encoder_state_never_passed")
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), cap[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if sched is not None:
            sched.step()
        if not close_step(run, step, loss, model, "val_word_accuracy", words_right):
            break


LENGTH, PAD = 7, 10
"""Padded string length and the padding token (digits are 0-9)."""


def _strings(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Digit strings long[n, LENGTH] padded with PAD after their 3-7 digits, and their lengths long[n]."""
    lengths = torch.randint(3, LENGTH + 1, (n,), generator=g)
    digits = torch.randint(0, 10, (n, LENGTH), generator=g)
    pad = torch.arange(LENGTH).unsqueeze(0) >= lengths.unsqueeze(1)
    return digits.masked_fill(pad, PAD), lengths


def _reversed(strings: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Each string's real digits reversed in place, its padding left where it was (PAD there)."""
    pos = torch.arange(LENGTH).unsqueeze(0)
    src = (lengths.unsqueeze(1) - 1 - pos).clamp(min=0)
    out = strings.gather(1, src)
    return out.masked_fill(pos >= lengths.unsqueeze(1), PAD)


class Block(nn.Module):
    """A pre-norm transformer block with hand-written multi-head attention under a boolean mask (True: hidden)."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(hidden.unsqueeze(1), float("-inf"))
        att = scores.softmax(-1) @ v
        x = x + self.proj(att.transpose(1, 2).reshape(b, n, d))
        return x + self.mlp(self.norm2(x))


class Reverser(nn.Module):
    """Digit and position embeddings, `layers` blocks of `dim`, a final norm and a linear layer to the digits."""

    def __init__(self, dim: int, layers: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(11, dim)
        self.pos = nn.Parameter(0.1 * torch.randn(LENGTH, dim))
        self.blocks = nn.ModuleList(Block(dim, 4) for _ in range(layers))
        self.norm, self.out = nn.LayerNorm(dim), nn.Linear(dim, 10)

    def forward(self, strings: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        x = self.embed(strings) + self.pos
        for block in self.blocks:
            x = block(x, hidden)
        return self.out(self.norm(x))


def reverser(run: Run) -> None:
    """A digit-reversing transformer of `dim` (48) and `layers` (2), batches of `batch` (64), `opt` (Adam; or AdamW,
    NAdam, RAdam) at `lr` (3e-3) after a linear warm-up of `warmup` (30) steps. Scored by the held-out per-digit
    accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    strings_v, lengths_v = _strings(g, 1000)
    target_v = _reversed(strings_v, lengths_v)
    torch.manual_seed(run.seed)
    model = Reverser(run.k("dim", 48), run.k("layers", 2))
    if run.bug == "adam_betas_swapped":
        opt = torch.optim.Adam(model.parameters(), lr=run.k("lr", 3e-3), betas=(0.999, 0.9))
        run.hook.register_module(model)
        run.hook.register_optimizer(opt)
    else:
        opt = optimizers.registered(run, model, 3e-3)
    warmup = run.k("warmup", 30)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
    batch = run.k("batch", 64)

    def mask_of(strings: torch.Tensor) -> torch.Tensor:
        pad = strings == PAD
        if run.bug == "padded_query_rows_masked":
            return pad.unsqueeze(1) | pad.unsqueeze(2)
        return pad.unsqueeze(1).expand(-1, LENGTH, -1)

    def digits_right() -> float:
        pred = model(strings_v, mask_of(strings_v)).argmax(-1)
        real = strings_v != PAD
        return float((pred == target_v)[real].float().mean())

    for step in range(run.steps):
        strings, lengths = _strings(run.gen, batch)
        if run.bug == "padded_string_flipped_whole":
            target = strings.flip(1)
        else:
            target = _reversed(strings, lengths)
        logits = model(strings, mask_of(strings))
        loss = F.cross_entropy(
            logits.reshape(-1, 10), target.reshape(-1).masked_fill(target.reshape(-1) == PAD, -100)
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if not close_step(run, step, loss, model, "val_digit_accuracy", digits_right):
            break
