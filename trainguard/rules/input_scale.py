"""`input_scale`: model inputs whose scale or spread is far from anything a working input pipeline feeds.

Reads the `inputs` collection (the registered module's floating inputs, `input/<arg>`; integer token
ids are not recorded), rows of at least `min_elements` finite values (non-finite inputs are
`exploding_tensor`'s). From the first view, three signs that the values cannot be what the pipeline
meant to feed: every value within 1/255 of zero with some spread (pixels divided by 255 twice), a
spread below `min_relative_spread` of the mean and below `constant_max_std` (nearly constant inputs:
normalised twice, the second normalisation shrinks the spread to about 1/255 of the offset; raw units
with an offset, which a model normalising its own input reads, keep a spread at or above unit scale), values beyond `max_abs` (raw units, or
pixels scaled up twice). And at every view, raw units that reach the network: an input whose std is above
`raw_min_std` while the first activation in forward order shows the scale came through unnormalised (an unbounded
activation's std above `raw_activation_std`, or a tanh or sigmoid pinned at its ends, its std at least `pinned_fraction`
of its half range). Either sign alone is common in healthy runs (wide categorical codes before a BatchNorm, a model that
normalises its own windows; a first layer of ReLUs a little wide); both together say the nonlinearity sees raw units,
where it saturates, dies or makes the loss ill-conditioned. After `reference_steps` views, the input's start (the median mean and std
of those views) is the reference: a batch whose Gaussian W2 distance to it, sqrt(dmean^2 + dstd^2),
exceeds `max_distance` start spreads moved far (an augmentation switched on mid-run whose uint8
arithmetic wraps around: dark pixels turn bright). An input whose start batches span more than `max_tail_width`
of their own std is not read for drift: its moments are set by a few extreme values; nor is one whose start
batches already lie farther than `max_distance` from their own median: its batches differ by more than the limit
from one to the next (a voice-activity detector's batches of speech and of silence), so a batch that far says
nothing of a pipeline change. A hint, not a stop: the loss of a model fed such inputs can look plausible.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import Field

from trainguard.api.enums import Action, Collection, RuleCategory
from trainguard.rules import base, shared
from trainguard.rules.step_view import COL, StepView

_INPUTS = (Collection.INPUTS.value,)
_ACTIVATIONS = (Collection.ACTIVATIONS.value,)
PIXEL_STEP = 1 / 255
"""One 8-bit pixel step after scaling to [0, 1]: inputs no larger than it were divided by 255 twice."""
_DRIFT_HINT = (
    "check what the input pipeline changed: augmentations switched on mid-run (uint8 arithmetic wraps around: "
    "compute in a wider type and clamp before casting back) and the data source"
)
_SCALE_HINT = (
    "check the normalisation: ToTensor already scales pixels to [0, 1], and Normalize applied in the data set "
    "and again in the training loop leaves a nearly constant input"
)
_RANGE_HINT = "normalise the inputs (standardise features, scale pixels to [0, 1])"
_RAW_HINT = (
    "normalise the inputs before the model (standardise each feature with the training set's mean and std, log1p "
    "for counts, consistent units), or give the model a normalisation layer (BatchNorm, LayerNorm) before its first "
    "activation"
)


class InputScale(base.Rule):
    name = "input_scale"
    category = RuleCategory.PREDICTIONS
    default_action = Action.NOTIFY
    training_views_only = True
    needs = "model inputs"
    summary = (
        "Model inputs scaled twice (pixels within 1/255, nearly constant after a second normalisation), far "
        "beyond a normalised range, or whose distribution moved far from the run's start (uint8 overflow)."
    )
    hint = _DRIFT_HINT

    class Params(base.Params):
        reference_steps: int = Field(
            default=5,
            ge=1,
            description="Views of an input whose median mean and std make its start, the reference of drift.",
        )
        max_distance: float | None = Field(
            default=0.75,
            gt=0,
            description="Gaussian W2 distance from the start, in start spreads, beyond which an input moved far "
            "(None: off). A brightness jitter switched on mid-run moves normalised pixels about 0.1; the same "
            "jitter wrapping around in uint8 1.2 to 1.7 (the calibration programs of the torch-real suite). An input "
            "whose start batches already lie this far from their median is not read for drift (start batches of "
            "normalised pixels within 0.02-0.14 of it; a voice-activity detector's frames 1.3-1.6).",
        )
        max_tail_width: float | None = Field(
            default=20.0,
            gt=0,
            description="The drift reading leaves an input whose batches spanned more than this many of their std at "
            "the start (the median over the start's views of (max - min) / std): a batch's mean and std are then "
            "set by its few extreme values, and move from batch to batch by more than any pipeline change would. "
            "A light-tailed batch spans 3.5 (uniform pixels) to about 8 (a Gaussian's thousand values) stds; a "
            "crop model's reflectance ratios 43-56, their batches' std 0.5-40 from one batch to the next. None: "
            "every input is read.",
        )
        min_relative_spread: float | None = Field(
            default=0.1,
            gt=0,
            description="std below this fraction of |mean| is a nearly constant input (None: off). Normalised "
            "pixels normalised again keep about 1/255 of their spread around an offset: 0.037-0.047 for dark "
            "images (the calibration programs), about 0.01 for ImageNet-like ones; healthy normalised pixels "
            "4 or more.",
        )
        pixel_scale_max: float | None = Field(
            default=PIXEL_STEP,
            gt=0,
            description="max |x| at or below which an input with spread looks divided by 255 twice (None: off).",
        )
        constant_max_std: float | None = Field(
            default=1.0,
            gt=0,
            description="A nearly constant input counts only with a std below this: a second normalisation leaves "
            "a spread far below unit scale (0.003-0.03 in the calibration programs), while raw units with an offset "
            "(a sales series around 550, std 28, fed to a model that standardises each window itself, RevIN) keep "
            "theirs. None: any std.",
        )
        max_abs: float | None = Field(
            default=None,
            gt=0,
            description="|x| beyond which no normalised input goes (None, the default: off), e.g. 1e4 for raw "
            "units or pixels scaled up by 255 twice (65025). Off by default: tabular scripts pack categorical "
            "codes into a float input (tables of 20,000-200,000 rows: healthy values up to 2e5).",
        )
        raw_min_std: float | None = Field(
            default=10.0,
            gt=0,
            description="An input whose std is above this (ten times a standardised input's) is in raw units when the "
            "network's first activation in forward order shows its scale came through (`raw_activation_std`, "
            "`pinned_fraction`): raw units reach the nonlinearity, which saturates, dies or makes the loss "
            "ill-conditioned. Healthy inputs as wide (categorical codes before a BatchNorm, raw windows a model "
            "normalises itself, ratios into a recurrent layer) are normalised before their first activation or have "
            "none recorded. None: off.",
        )
        raw_activation_std: float = Field(
            default=3.0,
            gt=0,
            description="The first activation's std (an unbounded kind: ReLU family, GELU, SiLU) above which an input "
            "beyond `raw_min_std` came through unnormalised. Above the largest of any healthy run's first activation "
            "in the stored suites (2.5 over 3,932 healthy runs that record activations, 99.9% below 1.8); the realistic "
            "splits' raw-unit inputs (std 14-133) drive theirs to 4.8-47.",
        )
        pinned_fraction: float = Field(
            default=0.9,
            gt=0,
            le=1,
            description="A bounded first activation (tanh, sigmoid, hardtanh, softsign) whose std is at least this "
            "fraction of its half range (the std of outputs pinned half at each end) sits at its ends: an input "
            "beyond `raw_min_std` saturates it (the realistic splits' raw inputs 0.98-0.99 of a tanh's; outputs "
            "spread evenly over the range have 0.58).",
        )
        min_elements: int = Field(
            default=512,
            ge=1,
            description="Inputs with fewer values (a scalar argument, one sample of a rollout) are not judged, but for "
            "the raw-units reading of a batch of feature rows (`raw_min_elements`).",
        )
        raw_min_elements: int = Field(
            default=64,
            ge=1,
            description="The raw-units reading, which needs only its spread's order of magnitude and the first "
            "activation's corroboration, also judges inputs with fewer than `min_elements` values down to this many "
            "when the catalogue's shape gives each sample two or more values (a small batch of table rows: 32 rows of "
            "11 features); a per-sample scalar (a diffusion timestep, a rollout's return) is not read.",
        )
        trigger_k: int = base.trigger_k(3)
        trigger_n: int = base.trigger_n(5)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.start: dict[str, list[list[float]]] = {}
        """Input name -> [mean, std, (max - min) / std] of its first views, until `reference_steps` of them."""
        self.reference: dict[str, tuple[float, float, float, float]] = {}
        """Input name -> the median (mean, std, (max - min) / std) of its first `reference_steps` views, and the
        largest distance of one of them from that median, in start spreads."""
        self.first_step: dict[str, tuple[int, int]] = {}
        """Input name -> the first and last step of its reference views."""

    def has_input(self, view: StepView) -> bool:
        return len(self.rows(view, default_collections=_INPUTS)) > 0

    def check(self, view: StepView) -> list[base.Finding]:
        p: InputScale.Params = self.params  # type: ignore[assignment]
        rows = self.rows(view, default_collections=_INPUTS)
        found: list[tuple[str, str, str, float, float | None]] = []
        for r in rows:
            s = view.stats[int(r)]
            if s[COL["nan"]] or s[COL["inf"]]:
                continue
            whole = s[COL["count"]] >= p.min_elements
            if not (whole or _feature_rows(p, view.meta[int(r)].shape, float(s[COL["count"]]))):
                continue
            name = view.names[int(r)]
            mean, std = float(s[COL["mean"]]), float(s[COL["std"]])
            top = max(abs(float(s[COL["min"]])), abs(float(s[COL["max"]])))
            if not (math.isfinite(mean) and math.isfinite(std) and math.isfinite(top)):
                continue
            if not whole:  # a small batch of feature rows: only the raw-units reading, which two signs make
                hit = self._raw(p, view, name, s, std)
            else:
                # every view: the drift reading gathers the start too
                width = float(s[COL["max"]]) - float(s[COL["min"]])
                drift = self._drift(p, name, view.step, mean, std, width)
                hit = self._absolute(p, name, s, mean, std, top) or self._raw(p, view, name, s, std) or drift
            if hit is not None:
                found.append(hit)
        if not found:
            return []
        name, what, hint, value, threshold = found[0]
        more = f" ({len(found)} of {len(rows)} inputs)" if len(rows) > 1 else ""
        msg = f"{name}: {what} {self.where(view)}{more}"
        return [self.finding(view, msg, tensor=name, hint=hint, value=value, threshold=threshold)]

    def _absolute(self, p: InputScale.Params, name: str, s: np.ndarray, mean: float, std: float,
                  top: float) -> tuple[str, str, str, float, float | None] | None:  # fmt: skip
        """A value range no working pipeline feeds, as (name, evidence, hint, value, threshold); else None."""
        lo, hi = base.fmt(float(s[COL["min"]])), base.fmt(float(s[COL["max"]]))
        if p.pixel_scale_max is not None and std > 0 and top <= p.pixel_scale_max * (1 + 1e-3):
            what = (f"every value lies within [{lo}, {hi}], no larger than {base.fmt(p.pixel_scale_max)} "
                    "(one 8-bit pixel step after scaling to [0, 1]): pixels divided by 255 twice?")  # fmt: skip
            return name, what, _SCALE_HINT, top, p.pixel_scale_max
        if (
            p.min_relative_spread is not None
            and mean != 0
            and std < p.min_relative_spread * abs(mean)
            and (p.constant_max_std is None or std < p.constant_max_std)
        ):
            what = (f"nearly constant: std {base.fmt(std)} is {base.fmt(100 * std / abs(mean))}% of the mean "
                    f"{base.fmt(mean)} (below {100 * p.min_relative_spread:.2g}%; values within [{lo}, {hi}]): "
                    "normalised twice?")  # fmt: skip
            return name, what, _SCALE_HINT, std / abs(mean), p.min_relative_spread
        if p.max_abs is not None and top > p.max_abs:
            what = (f"values reach {base.fmt(top)} (within [{lo}, {hi}]), beyond {base.fmt(p.max_abs)}, "
                    "far outside any normalised range")  # fmt: skip
            return name, what, _RANGE_HINT, top, p.max_abs
        return None

    def _raw(self, p: InputScale.Params, view: StepView, name: str, s: np.ndarray,
             std: float) -> tuple[str, str, str, float, float | None] | None:  # fmt: skip
        """Raw units that reach the network: a spread above `raw_min_std` that the first activation in forward order
        shows came through (its std above `raw_activation_std` for an unbounded kind, or at least `pinned_fraction` of
        a bounded kind's half range), as `_absolute` says it; else None."""
        if p.raw_min_std is None or not std > p.raw_min_std:
            return None
        first = _first_activation(view)
        if first is None:
            return None
        act, kind, act_std = first
        half = shared.HALF_RANGE.get(kind)
        if half is not None and act_std >= p.pinned_fraction * half:
            how = (f"pinned at its ends (std {base.fmt(act_std)}, {base.fmt(100 * act_std / half)}% of the "
                   f"{base.fmt(half)} of outputs split between its two bounds)")  # fmt: skip
            value, threshold = act_std / half, p.pinned_fraction
        elif kind in shared.UNBOUNDED and act_std > p.raw_activation_std:
            how = f"std {base.fmt(act_std)}, above {base.fmt(p.raw_activation_std)}"
            value, threshold = act_std, p.raw_activation_std
        else:
            return None
        lo, hi = base.fmt(float(s[COL["min"]])), base.fmt(float(s[COL["max"]]))
        what = (f"std {base.fmt(std)} (values within [{lo}, {hi}]), above {base.fmt(p.raw_min_std)}, and the first "
                f"activation {act} ({kind}) is {how}: inputs in raw units reach the network unnormalised")  # fmt: skip
        return name, what, _RAW_HINT, value, threshold

    def _drift(self, p: InputScale.Params, name: str, step: int, mean: float, std: float,
               width: float) -> tuple[str, str, str, float, float | None] | None:  # fmt: skip
        """Far from the input's start, as `_absolute` says it; None while the start is gathered, or near it, or
        for an input whose batches span more than `max_tail_width` of their std at the start, or whose start batches
        lie farther than `max_distance` from their median."""
        ref = self.reference.get(name)
        if ref is None:
            first = self.start.setdefault(name, [])
            first.append([mean, std, width / std if std > 0 else math.inf])
            steps = self.first_step.setdefault(name, (step, step))
            self.first_step[name] = (steps[0], step)
            if len(first) >= p.reference_steps:
                m0, s0, tail = (float(v) for v in np.median(np.asarray(first), axis=0))
                spread = max(math.hypot(m - m0, s - s0) / s0 for m, s, _ in first) if s0 > 0 else math.inf
                self.reference[name] = (m0, s0, tail, spread)
                del self.start[name]
            return None
        m0, s0, tail, spread = ref
        if (
            p.max_distance is None
            or not s0 > 0
            or (p.max_tail_width is not None and tail > p.max_tail_width)
            or spread > p.max_distance
        ):
            return None
        distance = math.hypot(mean - m0, std - s0) / s0
        if distance <= p.max_distance:
            return None
        a, b = self.first_step[name]
        what = (f"its distribution moved {base.fmt(distance)} start spreads from the start (mean {base.fmt(mean)}, std "
                f"{base.fmt(std)} against mean {base.fmt(m0)}, std {base.fmt(s0)} over steps {a}-{b}; "
                f"limit {base.fmt(p.max_distance)})")  # fmt: skip
        return name, what, _DRIFT_HINT, distance, p.max_distance

    def get_state(self) -> dict[str, Any]:
        return {
            "start": {k: [list(x) for x in v] for k, v in self.start.items()},
            "reference": {k: list(v) for k, v in self.reference.items()},
            "first_step": {k: list(v) for k, v in self.first_step.items()},
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.start = {  # a state from before the width was kept: read as light-tailed
            k: [[*x, 0.0][:3] for x in v] for k, v in state.get("start", {}).items()
        }
        self.reference = {  # a state from before the width or the start's spread was kept: light-tailed, steady
            k: (float(m), float(s), float(w), float(d))
            for k, v in state.get("reference", {}).items()
            for m, s, w, d in [[*v, 0.0, 0.0][:4]]
        }
        self.first_step = {k: (int(v[0]), int(v[1])) for k, v in state.get("first_step", {}).items()}


def _feature_rows(p: InputScale.Params, shape: tuple[int, ...], count: float) -> bool:
    """Whether an input of `count` values below `min_elements` is a batch of feature rows the raw-units reading
    judges: at least `raw_min_elements` values, two or more per sample by the catalogue's shape."""
    return count >= p.raw_min_elements and len(shape) >= 2 and math.prod(shape[1:]) >= 2


def _first_activation(view: StepView) -> tuple[str, str, float] | None:
    """The recorded activation first in forward order at this view, as (name, kind, std); None without one whose order
    and kind the catalogue gives, or without finite values."""
    acts = view.rows(collections=_ACTIVATIONS)  # in forward order, those without one last
    if not len(acts) or view.meta[int(acts[0])].order is None:
        return None
    i = int(acts[0])
    std = float(view.stats[i, COL["std"]])
    kind = view.meta[i].activation
    if kind is None or view.stats[i, COL["count"]] <= 0 or not math.isfinite(std):
        return None
    return view.names[i], kind, std
