"""Optical scripts of the sixty-sixth blind split: a dye house's shade-sorting classifier on the spectrophotometer's
reflectance curves, and a sign classifier on the hand tracker's landmarks of sign-language video clips.

`shade`: a dyed lot against its shade standard, as the dye house's spectrophotometer reads both (the reflectance
from 400 to 700 nm every 20 nm, the standard's curve and the lot's difference from it); the colourist's shade-sorting
call (on shade, lighter, darker, redder, greener, yellower, bluer) by a 1-D CNN over the wavelengths; cross-entropy;
scored by the held-out accuracy on the next month's lots. `signs`: a clip of an isolated sign resampled to 12
frames, each frame the hand tracker's wrist, middle knuckle and four fingertips of each hand (the right hand first),
normalised to the frame; each hand's wrist relative to the body's centre over the shoulder width of the pose
tracker, its fingertips relative to the wrist over the hand's size, a hand the tracker lost as zeros; training
clips mirrored half the time (a left-handed signer's signing), the hands' slots swapped with it; the sign by an LSTM
over the frames; cross-entropy; scored by the held-out accuracy on other signers, some left-handed. Bugs: the new
spectrophotometer's lots read with the specular component included against standards read without; the new QC
export's standard and lot columns read in each other's place; the difference curve left in reflectance units under
momentum SGD; each hand scaled by its own size with no guard for the frames where the tracker lost it; the clips
mirrored without swapping the hands' slots; the pose export's shoulder width in pixels over the hands' normalised
coordinates under momentum SGD; the clip's frame count kept as an input.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.detection.blind.harness import Run, accuracy
from benchmarks.detection.blind3.harness import close_step
from benchmarks.detection.blind13 import optimizers

WAVELENGTHS = torch.arange(400.0, 701.0, 20.0)
BANDS = len(WAVELENGTHS)
CALLS = ("on shade", "lighter", "darker", "redder", "greener", "yellower", "bluer")
DYES = torch.tensor([[430.0, 40.0], [520.0, 45.0], [610.0, 50.0]])
"""The yellow, red and blue dyes' absorption peaks and widths in nm."""


def _cmf(mu: float, s1: float, s2: float) -> torch.Tensor:
    d = WAVELENGTHS - mu
    return torch.exp(-0.5 * (d / torch.where(d < 0, torch.tensor(s1), torch.tensor(s2))) ** 2)


CMF = torch.stack([
    1.056 * _cmf(599.8, 37.9, 31.0) + 0.362 * _cmf(442.0, 16.0, 26.7) - 0.065 * _cmf(501.1, 20.4, 26.2),
    0.821 * _cmf(568.8, 46.9, 40.5) + 0.286 * _cmf(530.9, 16.3, 31.1),
    1.217 * _cmf(437.0, 11.8, 36.0) + 0.681 * _cmf(459.0, 26.0, 13.8),
])  # fmt: skip
"""The CIE 1931 observer's colour-matching functions by their multi-lobe Gaussian fit, float[3, BANDS]."""


def _lab(r: torch.Tensor) -> torch.Tensor:
    """CIELAB of reflectance curves float[n, BANDS] under an equal-energy light: float[n, 3]."""
    xyz = r @ CMF.T / CMF[1].sum()
    white = CMF.sum(1) / CMF[1].sum()
    t = xyz / white
    f = torch.where(t > 0.008856, t.clamp(min=1e-9) ** (1 / 3), 7.787 * t + 16 / 116)
    return torch.stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])], 1)


def _reflectance(c: torch.Tensor) -> torch.Tensor:
    """Kubelka-Munk: the reflectance of cotton dyed with the dyes' concentrations float[n, 3]."""
    k = torch.exp(-0.5 * ((WAVELENGTHS - DYES[:, :1]) / DYES[:, 1:]) ** 2)  # [3, BANDS]
    ks = 0.006 + 3.0 * c @ k
    return 1 + ks - torch.sqrt(ks**2 + 2 * ks)


def _lots(g: torch.Generator, n: int, *, deep: float = 0.0, new: float = 0.0) -> dict[str, torch.Tensor]:
    """Lots against their standards: the standard's and the lot's reflectance float[n, BANDS] each, the
    colourist's call long[n], whether the lot was read on the new instrument (with the specular component
    included, exported with the standard first) float[n]. `deep` darkens the month's palette."""
    recipe = (0.02 + (0.6 + deep) * torch.rand(n, 3, generator=g) ** 2) * (
        torch.rand(n, 3, generator=g) < 0.8
    )
    strength = 1 + 0.05 * torch.randn(n, 1, generator=g)
    lot = recipe * strength * (1 + 0.06 * torch.randn(n, 3, generator=g))
    standard, dyed = _reflectance(recipe), _reflectance(lot)
    dyed = (dyed + 0.002 * torch.randn(n, BANDS, generator=g)).clamp(0.001, 1)
    delta = _lab(dyed) - _lab(standard) + 0.25 * torch.randn(n, 3, generator=g)  # the colourist's eye
    big = delta.abs().argmax(1)
    sign = (delta.gather(1, big.unsqueeze(1)).squeeze(1) > 0).long()
    # lighter / darker, redder / greener, yellower / bluer by the largest difference and its sign
    call = 1 + 2 * big + (1 - sign)
    call = torch.where(delta.norm(dim=1) < 1.2, 0, call)
    instrument = (torch.rand(n, generator=g) < new).float()
    return {"standard": standard, "lot": dyed, "call": call, "new": instrument}


GLOSS = 0.035
"""The specular reflection a reading with the specular component included adds to every band."""


def _curves(s: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """The standard's curve and the lot's difference from it float[n, 2, BANDS], as read from the QC export."""
    standard, lot = s["standard"], s["lot"]
    new = s["new"].unsqueeze(1) > 0
    if bug == "sci_lots_against_sce_standards":
        # the bug: the new instrument's lots read with the specular component included, against standards read
        # with it excluded on the old one
        lot = torch.where(new, lot + GLOSS, lot)
    if bug == "lot_and_standard_columns_swapped_in_new_export":
        # the bug: the new QC export writes the standard's curve first; the script reads the old column order
        standard, lot = torch.where(new, lot, standard), torch.where(new, standard, lot)
    return torch.stack([standard, lot - standard], 1)


class ShadeCNN(nn.Module):
    """Two conv layers over the wavelengths with ReLU and a max-pool between, a global max and mean, a linear head."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(2, width, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
                                 nn.Conv1d(width, width, 5, padding=2), nn.ReLU())  # fmt: skip
        self.head = nn.Linear(2 * width, len(CALLS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.net(x)
        return self.head(torch.cat([h.amax(-1), h.mean(-1)], 1))


def shade(run: Run) -> None:
    """A shade CNN of `width` (8), batches of `batch` (32), `opt` (Adam; or momentum SGD, AdamW, RMSprop) at `lr`
    (3e-3). Scored by the held-out accuracy of the shade-sorting call on the next month's lots."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _lots(g, 900, new=0.4), _lots(g, 250, deep=0.2)
    x, x_v = _curves(tr, run.bug), _curves(va, None)
    if run.bug != "difference_curve_left_in_reflectance_units":
        mean, std = x.mean((0, 2), keepdim=True), x.std((0, 2), keepdim=True)
        x, x_v = (x - mean) / std, (x_v - mean) / std
    # (the bug: the curves left as they come, "reflectance is already between 0 and 1", the difference a few
    # hundredths)
    y, y_v = tr["call"], va["call"]
    torch.manual_seed(run.seed)
    model = ShadeCNN(run.k("width", 8))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        loss = F.cross_entropy(model(x[pick]), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break


FRAMES, POINTS = 12, 6
"""Frames a clip is resampled to; the tracker's points of a hand used (wrist, middle knuckle, four fingertips)."""
SIGNS = ("thank you", "please", "help", "water", "home", "work", "name", "friend", "finish", "more")
SHAPES = torch.tensor([
    [[-0.5, 0.5], [-0.15, 1.0], [0.0, 1.05], [0.3, 0.85]],  # flat hand
    [[-0.3, 0.35], [-0.1, 0.42], [0.0, 0.42], [0.15, 0.36]],  # fist
    [[-0.25, 0.4], [-0.05, 1.0], [0.0, 0.42], [0.15, 0.36]],  # index pointing
    [[-0.25, 0.4], [-0.2, 1.0], [0.15, 1.0], [0.15, 0.36]],  # V
    [[-0.5, 0.3], [-0.2, 0.7], [0.0, 0.75], [0.25, 0.6]],  # claw
])  # fmt: skip
"""The four fingertips (thumb, index, middle, little) off the wrist of a right hand, in the hand's size."""
KNUCKLE = torch.tensor([0.0, 0.45])
# (dominant shape, other hand's shape or -1 out of view, movement, where: x, y in shoulder widths off the centre)
LEXICON = [(0, -1, 4, 0.1, 1.0), (0, -1, 1, 0.1, 0.2), (1, 0, 5, 0.0, -0.3), (3, -1, 2, 0.1, 1.0),
           (4, -1, 3, 0.3, 1.1), (1, 1, 2, 0.1, 0.0), (3, 3, 2, 0.1, 0.1), (2, 2, 1, 0.1, 0.1),
           (0, 0, 3, 0.1, 0.0), (4, 4, 2, 0.1, 0.1)]  # fmt: skip
SPAN = torch.tensor([22.0, 26, 30, 24, 34, 28, 32, 38, 20, 36])
"""The annotators' usual span of each sign, in frames of the original 30 fps clips."""


def _path(kind: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """The dominant wrist's movement float[n, FRAMES, 2] in shoulder widths, by each clip's movement kind."""
    two = lambda a, b: torch.stack([a, b], -1)
    z = torch.zeros_like(u)
    paths = torch.stack([
        two(z, z),  # a hold
        two(0.15 * torch.cos(2 * math.pi * u), 0.15 * torch.sin(2 * math.pi * u)),  # a circle
        two(z, 0.12 * torch.sin(2 * math.pi * u).abs()),  # a double tap
        two(0.35 * (u - 0.5), z),  # side to side
        two(0.2 * torch.sin(math.pi * u), -0.45 * u),  # an arc down and out
        two(z, 0.35 * u),  # up
    ])  # fmt: skip
    return paths[kind, torch.arange(len(kind))]


def _clips(
    g: torch.Generator, n: int, *, left_handed: float = 0.0, segmenter: bool = False
) -> dict[str, torch.Tensor]:
    """Clips: the tracker's points float[n, FRAMES, 2 hands (right, left), POINTS, 2] normalised to the frame
    (0 where the hand is not found), the pose tracker's body centre float[n, 2] (normalised) and shoulder width
    (normalised and in pixels of a 1280x720 frame) float[n] each, the frames of the original clip float[n], the
    sign long[n]. A share `left_handed` of the signers sign with the left hand; the held-out clips are cut by the
    automatic `segmenter` instead of by annotators."""
    sign = torch.randint(0, len(SIGNS), (n,), generator=g)
    lex = torch.tensor(LEXICON)[sign]
    dom, other, move = lex[:, 0].long(), lex[:, 1].long(), lex[:, 2].long()
    where = lex[:, 3:5]
    centre = torch.stack(
        [0.5 + 0.05 * torch.randn(n, generator=g), 0.55 + 0.04 * torch.randn(n, generator=g)], 1
    )
    shoulders = 0.2 + 0.1 * torch.rand(n, generator=g)  # of the frame's width
    speed = 0.8 + 0.4 * torch.rand(n, 1, generator=g)
    u = ((torch.linspace(0, 1, FRAMES) - 0.1 * torch.rand(n, 1, generator=g)) * speed).clamp(0, 1)
    wrist = where.unsqueeze(1) + _path(move, u) + 0.05 * torch.randn(n, FRAMES, 2, generator=g)
    size = 0.28 + 0.04 * torch.randn(n, 1, 1, generator=g)  # the hand's size in shoulder widths

    def hand(shape: torch.Tensor, at: torch.Tensor) -> torch.Tensor:
        turn = 0.25 * torch.randn(n, 1, generator=g)
        c, s = torch.cos(turn), torch.sin(turn)
        pts = torch.cat([torch.zeros(n, 1, 2), KNUCKLE.expand(n, 1, 2), SHAPES[shape.clamp(min=0)]], 1)
        pts = pts + 0.1 * torch.randn(n, POINTS, 2, generator=g)
        rot = torch.stack([c * pts[..., 0] - s * pts[..., 1], s * pts[..., 0] + c * pts[..., 1]], -1)
        return at.unsqueeze(2) + size.unsqueeze(1) * rot.unsqueeze(1)  # [n, FRAMES, POINTS, 2]

    # a right-handed signer: the dominant hand is the right one, a two-handed sign's other hand its mirror image
    # across the body; a left-handed signer signs the mirror image of it all
    flip = torch.tensor([-1.0, 1.0])
    dominant, other_hand = hand(dom, wrist), hand(other, wrist) * flip
    lefty = torch.rand(n, generator=g) < left_handed
    at = lefty.view(-1, 1, 1, 1)
    right = torch.where(at, other_hand * flip, dominant)
    left = torch.where(at, dominant * flip, other_hand)
    pts = torch.stack([right, left], 2)  # [n, FRAMES, 2, POINTS, 2], x towards the signer's right
    # into the frame, the camera facing the signer: the signer's right on the image's left, y down a 16:9 frame
    scale = shoulders.view(-1, 1, 1, 1, 1) * torch.tensor([-1.0, -16 / 9])
    frame = centre.view(-1, 1, 1, 1, 2) + scale * pts
    frame = frame + 0.003 * torch.randn(frame.shape, generator=g)
    # hands out of view (the other hand resting low) and the tracker's dropped frames read 0
    lost = torch.rand(n, FRAMES, 2, generator=g) < 0.06
    resting = (other < 0).view(-1, 1)
    lost[:, :, 1] |= resting & ~lefty.view(-1, 1)
    lost[:, :, 0] |= resting & lefty.view(-1, 1)
    frame = torch.where(lost.view(n, FRAMES, 2, 1, 1), torch.zeros(()), frame)
    if segmenter:
        span = 18 + 24 * torch.rand(n, generator=g)
    else:
        span = SPAN[sign] + torch.randint(-2, 3, (n,), generator=g).float()
    return {"points": frame, "centre": centre, "shoulders": shoulders, "shoulders_px": 1280 * shoulders,
            "span": span, "sign": sign}  # fmt: skip


def _features(c: dict[str, torch.Tensor], bug: str | None) -> torch.Tensor:
    """Each frame's features float[n, FRAMES, 2, 5, 2] per hand: the wrist off the body's centre in shoulder
    widths, the four fingertips off the wrist in the hand's size (wrist to middle knuckle); 0 for a lost hand."""
    pts = c["points"]
    found = (pts.abs().sum((-1, -2)) > 0).unsqueeze(-1).unsqueeze(-1)  # [n, FRAMES, 2, 1, 1]
    shoulders = c["shoulders"]
    if bug == "shoulder_width_in_pixels_over_normalised_hands":
        # the bug: the pose export's shoulder width, in pixels, over the hand tracker's normalised coordinates
        shoulders = c["shoulders_px"]
    wrist = (pts[:, :, :, :1] - c["centre"].view(-1, 1, 1, 1, 2)) / shoulders.view(-1, 1, 1, 1, 1)
    size = (pts[:, :, :, 1:2] - pts[:, :, :, :1]).norm(dim=-1, keepdim=True)
    if bug == "each_hand_scaled_by_its_own_size_unguarded":
        # the bug: no guard for the frames where the tracker lost a hand, its size 0 and its points 0
        tips = (pts[:, :, :, 2:] - pts[:, :, :, :1]) / size
        return torch.cat([wrist * found, tips], 3)
    tips = (pts[:, :, :, 2:] - pts[:, :, :, :1]) / size.clamp(min=1e-6)
    return torch.where(found, torch.cat([wrist, tips], 3), torch.zeros(()))


def _mirror(f: torch.Tensor, bug: str | None) -> torch.Tensor:
    """Clips mirrored left to right: every x negated and the hands' slots swapped (with the bug, not swapped)."""
    f = f * torch.tensor([-1.0, 1.0])
    if bug == "mirrored_clips_keep_hand_slots":
        return f  # the bug: the right hand's slot keeps what is now a left hand's signing
    return f.flip(2)


class SignLSTM(nn.Module):
    """An LSTM of `hidden` units over the frames and a linear head on its last state."""

    def __init__(self, columns: int, hidden: int) -> None:
        super().__init__()
        self.lstm = nn.LSTM(columns, hidden, batch_first=True)
        self.head = nn.Linear(hidden, len(SIGNS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def signs(run: Run) -> None:
    """A sign LSTM of `hidden` (16), batches of `batch` (32), `opt` (Adam; or momentum SGD, NAdam, Adamax) at `lr`
    (3e-3). Scored by the held-out accuracy of the sign on other signers' clips, two in five left-handed."""
    g = torch.Generator().manual_seed(run.seed)
    tr, va = _clips(g, 900), _clips(g, 250, left_handed=0.4, segmenter=True)
    f = _features(tr, run.bug)
    f_v = _features(va, run.bug if run.bug == "shoulder_width_in_pixels_over_normalised_hands" else None)
    y, y_v = tr["sign"], va["sign"]
    span, span_v = (tr["span"] - 30) / 6, (va["span"] - 30) / 6
    keep_span = run.bug == "frame_count_kept_as_input"

    def inputs(feat: torch.Tensor, frames: torch.Tensor) -> torch.Tensor:
        x = feat.flatten(2)
        if keep_span:
            # the bug: the original clip's frame count kept as a column, the annotators' span of each sign
            x = torch.cat([x, frames.view(-1, 1, 1).expand(-1, FRAMES, 1)], -1)
        return x

    x_v = inputs(f_v, span_v)
    torch.manual_seed(run.seed)
    model = SignLSTM(x_v.shape[-1], run.k("hidden", 16))
    opt = optimizers.registered(run, model, 3e-3)
    batch = run.k("batch", 32)

    def accuracy_held_out() -> float:
        return accuracy(model(x_v), y_v)

    for step in range(run.steps):
        pick = run.indices(len(y), batch)
        feat = f[pick]
        flip = torch.rand(len(pick), generator=run.gen) < 0.5
        feat = torch.where(flip.view(-1, 1, 1, 1, 1), _mirror(feat, run.bug), feat)
        loss = F.cross_entropy(model(inputs(feat, span[pick])), y[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not close_step(run, step, loss, model, "val_accuracy", accuracy_held_out):
            break
