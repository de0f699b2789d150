"""Recognition scripts of the twenty-fifth blind split: a grapheme-to-phoneme model and a leaf-disease image classifier.

`phonemes`: words of one to three syllables of an English-like spelling (consonant clusters and the digraphs th, sh,
ch and ph, a silent final e making the vowel before it long, c and g softened before e, i and y, doubled consonants),
their pronunciation letter by letter (one phoneme per letter, the silent ones the phoneme `_`, id 0); letters numbered
from 1 with 0 the padding; each letter's phoneme predicted from a window of three letters each side, an embedding, an
MLP of two ReLU layers over the window, cross-entropy over the letters (padding targets -100, ignored); scored by the
held-out per-letter accuracy on unseen words. `leaves`: 16x16 photographs of a leaf (a green ellipse at a random angle
on a soil-and-bench background) stored as 8-bit HWC arrays, healthy or with rust (small orange pustules), blight (dark
brown lesions), powdery mildew (white speckle) or mosaic virus (yellow mottling); permuted to CHW, scaled to [0, 1] and
standardised per channel, random horizontal flips, a three-block CNN (convolution, batch norm, ReLU) with a global average
pool, cross-entropy; scored by the held-out accuracy. Bugs: the phonemes aligned one letter late; the letters numbered
from 0, the padding's id; the padding targets set to 0 and ignored, which is the silent phoneme's id; every batch norm's
gamma zeroed, as the residual-network recipe does for a block's last one; the HWC arrays viewed as CHW; a 64-word
subset from a quick check of the loop left in; a static loss scale never taken off the gradients before the step.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

LETTERS = "abcdefghijklmnopqrstuvwxyz"
VOWELS = "aeiou"
SHORT = {"a": "AE", "e": "EH", "i": "IH", "o": "AA", "u": "AH"}
LONG = {"a": "EY", "e": "IY", "i": "AY", "o": "OW", "u": "UW"}
DIGRAPHS = {"th": "TH", "sh": "SH", "ch": "CH", "ph": "F"}
PHONEMES = ["_"] + sorted(
    {c.upper() for c in LETTERS if c not in VOWELS}
    | set(SHORT.values())
    | set(LONG.values())
    | {"S", "J", "KS", "IY", "TH", "SH", "CH"}
)
"""The phoneme inventory, the silent letter's `_` first (id 0)."""
LONGEST, SIDE = 12, 3
"""Longest word and letters of context each side."""


def _pronounce(word: str) -> list[str]:
    """One phoneme a letter by the spelling rules."""
    out: list[str] = []
    for i, c in enumerate(word):
        nxt = word[i + 1] if i + 1 < len(word) else ""
        prev = word[i - 1] if i > 0 else ""
        if prev and prev + c in DIGRAPHS or (prev == c and c not in VOWELS):
            out.append("_")  # the second letter of a digraph or of a doubled consonant
        elif c + nxt in DIGRAPHS:
            out.append(DIGRAPHS[c + nxt])
        elif c == "e" and i == len(word) - 1 and len(word) > 2:
            out.append("_")
        elif c in VOWELS:
            magic = i == len(word) - 3 and word[-1] == "e" and word[i + 1] not in VOWELS
            out.append(LONG[c] if magic else SHORT[c])
        elif c == "c":
            out.append("S" if nxt in ("e", "i", "y") else "K")
        elif c == "g":
            out.append("J" if nxt in ("e", "i", "y") else "G")
        elif c == "x":
            out.append("KS")
        elif c == "y":
            out.append("IY" if i == len(word) - 1 else "Y")
        else:
            out.append(c.upper())
    return out


def _words(g: torch.Generator, n: int) -> list[str]:
    """`n` distinct pronounceable words of at most LONGEST letters."""
    onsets = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "y", "z", "th", "sh",
              "ch", "ph", "bl", "cr", "st", "gr", "tr", "qu"]  # fmt: skip
    codas = ["", "", "b", "d", "g", "k", "l", "m", "n", "p", "r", "s", "t", "x", "ll", "ss", "ck", "ng", "th"]
    words: set[str] = set()
    order: list[str] = []
    while len(order) < n:
        syllables = int(torch.randint(1, 4, (1,), generator=g))
        word = ""
        for _ in range(syllables):
            word += onsets[int(torch.randint(0, len(onsets), (1,), generator=g))]
            word += VOWELS[int(torch.randint(0, 5, (1,), generator=g))]
            word += codas[int(torch.randint(0, len(codas), (1,), generator=g))]
        if float(torch.rand(1, generator=g)) < 0.3 and word[-1] not in VOWELS:
            word += "e"
        if len(word) <= LONGEST and word not in words:
            words.add(word)
            order.append(word)
    return order


def _encode(words: list[str], first_letter_id: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """Letter ids long[n, LONGEST] padded with 0 and phoneme ids long[n, LONGEST] padded with -100."""
    ids = torch.zeros(len(words), LONGEST, dtype=torch.long)
    targets = torch.full((len(words), LONGEST), -100, dtype=torch.long)
    for r, w in enumerate(words):
        ids[r, : len(w)] = torch.tensor([LETTERS.index(c) + first_letter_id for c in w])
        targets[r, : len(w)] = torch.tensor([PHONEMES.index(p) for p in _pronounce(w)])
    return ids, targets


class WindowTagger(nn.Module):
    """Each letter's phoneme from an embedding of `dim` of the letters SIDE each side and an MLP of `hidden`."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(len(LETTERS) + 1, dim)
        self.mlp = nn.Sequential(nn.Linear((2 * SIDE + 1) * dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                                 nn.ReLU(), nn.Linear(hidden, len(PHONEMES)))  # fmt: skip

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        padded = F.pad(ids, (SIDE, SIDE))
        windows = padded.unfold(1, 2 * SIDE + 1, 1)  # [n, LONGEST, 2 * SIDE + 1]
        return self.mlp(self.embed(windows).flatten(2))


def phonemes(run: Run) -> None:
    """A window tagger with embeddings of `dim` (24) and `hidden` (128), batches of `batch` (64) words, `opt` (Adam; or
    AdamW, momentum SGD, RMSprop) at `lr` (2e-3). Scored by the held-out per-letter accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    words = _words(g, 2400)
    first = 0 if run.bug == "letters_numbered_from_zero" else 1
    # the training words (the bug: the slice of 64 words, one batch, kept from a quick check of the loop)
    ids, targets = _encode(words[:64] if run.bug == "debug_subset_of_words_left_in" else words[:1600], first)
    ids_v, targets_v = _encode(words[1600:], first)
    if run.bug == "phonemes_aligned_one_letter_late":
        late = torch.cat([torch.zeros(len(targets), 1, dtype=torch.long), targets[:, :-1]], 1)
        targets = torch.where(targets >= 0, late, targets)
    ignore = -100
    if run.bug == "padding_targets_ignored_as_zero":
        targets, ignore = targets.clamp_min(0), 0
    torch.manual_seed(run.seed)
    model = WindowTagger(run.k("dim", 24), run.k("hidden", 128))
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 64)
    real_v = targets_v >= 0

    def accuracy_held_out() -> float:
        return accuracy(model(ids_v)[real_v], targets_v[real_v])

    for step in range(run.steps):
        pick = run.indices(len(ids), batch)
        logits = model(ids[pick])
        loss = F.cross_entropy(logits.flatten(0, 1), targets[pick].flatten(), ignore_index=ignore)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


SIZE, DISEASES = 16, 5
"""Image side and classes (healthy, rust, blight, powdery mildew, mosaic)."""


def _photos(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Leaf photographs uint8[n, SIZE, SIZE, 3] (HWC, as decoded) and their classes long[n]."""
    y = torch.randint(0, DISEASES, (n,), generator=g)
    coords = torch.linspace(-1, 1, SIZE)
    yy, xx = torch.meshgrid(coords, coords, indexing="ij")
    angle = torch.rand(n, 1, 1, generator=g) * 3.1416
    cx, cy = 0.2 * torch.randn(n, 1, 1, generator=g), 0.2 * torch.randn(n, 1, 1, generator=g)
    u = (xx - cx) * angle.cos() + (yy - cy) * angle.sin()
    v = -(xx - cx) * angle.sin() + (yy - cy) * angle.cos()
    a, b = 0.75 + 0.15 * torch.rand(n, 1, 1, generator=g), 0.4 + 0.15 * torch.rand(n, 1, 1, generator=g)
    leaf = (u / a) ** 2 + (v / b) ** 2 < 1
    soil = torch.tensor([110.0, 90.0, 70.0]) + 25 * torch.randn(n, 1, 1, 3, generator=g)
    green = torch.tensor([60.0, 150.0, 45.0]) + 15 * torch.randn(n, 1, 1, 3, generator=g)
    img = torch.where(leaf.unsqueeze(-1), green, soil).expand(n, SIZE, SIZE, 3).clone()
    spots = torch.rand(n, SIZE, SIZE, generator=g)
    blob = F.avg_pool2d(torch.rand(n, 1, SIZE, SIZE, generator=g), 5, 1, 2)[:, 0]
    marks = {
        1: (spots < 0.07, torch.tensor([210.0, 110.0, 30.0])),  # rust pustules
        2: (
            blob > blob.flatten(1).quantile(0.8, 1).view(n, 1, 1),
            torch.tensor([85.0, 55.0, 30.0]),
        ),  # blight
        3: (spots < 0.3, torch.tensor([225.0, 225.0, 215.0])),  # mildew speckle
        4: (
            blob > blob.flatten(1).median(1).values.view(n, 1, 1),
            torch.tensor([185.0, 195.0, 70.0]),
        ),  # mosaic
    }
    for disease, (where, colour) in marks.items():
        hit = (leaf & where & (y == disease).view(n, 1, 1)).unsqueeze(-1)
        img = torch.where(hit, colour, img)
    img = img + 12 * torch.randn(n, SIZE, SIZE, 3, generator=g)
    return img.round().clamp(0, 255).to(torch.uint8), y


class LeafCNN(nn.Module):
    """Three blocks of a 3x3 convolution, batch norm and ReLU (the last two pooled), a global average pool, a linear
    layer."""

    def __init__(self, width: int) -> None:
        super().__init__()

        def block(cin: int, cout: int) -> list[nn.Module]:
            return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]

        self.features = nn.Sequential(*block(3, width), *block(width, 2 * width), nn.MaxPool2d(2),
                                      *block(2 * width, 2 * width), nn.MaxPool2d(2))  # fmt: skip
        self.head = nn.Linear(2 * width, DISEASES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean((2, 3)))


def leaves(run: Run) -> None:
    """A leaf CNN of `width` (8), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW) at `lr` (2e-3),
    optionally with a static `loss_scale` taken off the gradients before the step. Scored by the held-out accuracy."""
    g = torch.Generator().manual_seed(run.seed)
    photos, y = _photos(g, 1000)
    photos_v, y_v = _photos(g, 500)

    def tensors(hwc: torch.Tensor) -> torch.Tensor:
        if run.bug == "hwc_arrays_viewed_as_chw":
            return hwc.view(len(hwc), 3, SIZE, SIZE).float() / 255
        return hwc.permute(0, 3, 1, 2).float() / 255

    x, x_v = tensors(photos), tensors(photos_v)
    mean, std = x.mean((0, 2, 3), keepdim=True), x.std((0, 2, 3), keepdim=True)
    x, x_v = (x - mean) / std, (x_v - mean) / std
    torch.manual_seed(run.seed)
    model = LeafCNN(run.k("width", 8))
    if run.bug == "every_batchnorm_gamma_zeroed":
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                nn.init.zeros_(m.weight)
    opt = optimizers.registered(run, model, 2e-3)
    batch = run.k("batch", 32)
    scale = run.k(
        "loss_scale", None
    )  # static loss scaling, as the mixed-precision recipe this loop follows does

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        xb = x[pick]
        flip = torch.rand(batch, generator=run.gen) < 0.5
        xb = torch.where(flip.view(-1, 1, 1, 1), xb.flip(3), xb)
        loss = F.cross_entropy(model(xb), y[pick])
        opt.zero_grad()
        if scale is None:
            loss.backward()
        else:
            (loss * scale).backward()
            if run.bug != "loss_scale_never_unscaled":
                for p in model.parameters():
                    if p.grad is not None:
                        p.grad.div_(scale)
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
