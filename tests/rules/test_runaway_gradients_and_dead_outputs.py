"""Two faults that leave their mark only in the gradients: gradients that run away from where they started while
the loss does not improve (`exploding_gradient`), and output units clipped by a function the capture cannot see as
a module, which get exactly zero gradient (`dead_relu`)."""

from __future__ import annotations

import math

import numpy as np

from tests.rules.streams import StepData, Stream, run
from trainguard.rules.dead_relu import DeadRelu
from trainguard.rules.exploding_gradient import ExplodingGradient
from trainguard.rules.step_view import COL, COLUMNS, StepView, TensorMeta

# --- exploding_gradient: runaway growth since the start -------------------------------------------------------


def _never_zeroed(d: StepData) -> None:
    """zero_grad() called once before the loop: each step's gradient adds to the last, so the norm grows with the
    step count, while the loss (AdamW's bounded steps on a sum of stale gradients) wanders above its start."""
    for name in [n for n in d.cols if n.startswith("grad/")]:
        d.scale(name, 1.0 + d.step)
    d.scalars["loss"] = 2.3 * (1.0 + 0.002 * d.step)


def test_exploding_gradient_reports_gradients_that_ran_away_while_the_loss_did_not_improve() -> None:
    found = run(ExplodingGradient(), Stream(steps=300, fault=_never_zeroed))
    assert found, "gradients 100x their first norm on a loss above its start were not reported"
    f = found[0]
    assert f.tensor == "gradients" and f.value is not None and f.threshold == 100.0
    # 1 + step times the stream's own norm, which shrinks about 2x with its loss over the first 200 steps
    assert f.value >= 100.0 and 100 <= f.step <= 200
    assert "ran away" in f.message and "no lower than its first" in f.message
    assert "zero_grad" in f.hint


def test_exploding_gradient_runaway_is_reported_without_any_history() -> None:
    # a loss summed over a batch of 256 under a rate tuned for the mean: the second saved step is already 2000x
    def summed(d: StepData) -> None:
        if d.step >= 10:
            for name in [n for n in d.cols if n.startswith("grad/")]:
                d.scale(name, 2000.0)
            d.scalars["loss"] = 7000.0 * 2.3

    views = [v for v in Stream(steps=30, fault=summed) if v.step % 10 == 0]
    found = run(ExplodingGradient(), views)
    assert found and found[0].step == 10


def test_exploding_gradient_leaves_a_runaway_norm_alone_while_the_loss_improves() -> None:
    # gradients that grow 300x on a loss that falls: a likelihood sharpening, or a loss scale; not a runaway
    def growing_on_a_falling_loss(d: StepData) -> None:
        for name in [n for n in d.cols if n.startswith("grad/")]:
            d.scale(name, 1.0 + d.step)

    assert run(ExplodingGradient(), Stream(steps=300, fault=growing_on_a_falling_loss)) == []


def test_exploding_gradient_leaves_growth_below_the_runaway_factor_alone() -> None:
    def tenfold(d: StepData) -> None:  # the healthy runs' worst was 21x with the loss above its start
        for name in [n for n in d.cols if n.startswith("grad/")]:
            d.scale(name, 1.0 + min(d.step, 150) / 5.0)
        d.scalars["loss"] = 2.3 * (1.0 + 0.002 * d.step)

    assert run(ExplodingGradient(), Stream(steps=300, fault=tenfold)) == []
    assert run(ExplodingGradient({"runaway_growth": 20.0}), Stream(steps=300, fault=tenfold))


def test_exploding_gradient_does_not_judge_a_runaway_without_a_loss() -> None:
    views = [
        StepView(step=v.step, names=v.names, meta=v.meta, stats=v.stats)
        for v in Stream(steps=300, fault=_never_zeroed)
    ]
    assert run(ExplodingGradient(), views) == []


# --- dead_relu: output units without gradient -------------------------------------------------------------------

HIDDEN, OUTPUTS, FAN_IN = 16, 6, 8


def _row(n: float, *, l2: float, zero: float = 0.0, nan: float = 0.0) -> np.ndarray:
    out = np.zeros(len(COLUMNS))
    out[COL["count"]], out[COL["zero"]], out[COL["nan"]], out[COL["l2"]] = n, zero, nan, l2
    out[COL["std"]] = l2 / math.sqrt(n)
    return out


def tagger_views(
    steps: int = 200,
    *,
    dead: int = 4,
    from_step: int = 10,
    kernel_rows: bool = True,
    every: int = 10,
    bias_l2: float = 0.02,
) -> list[StepView]:
    """Saved views of a two-layer tagger (Linear 8->16, ReLU, Linear 16->6) whose logits are clamped at zero from
    `from_step` on: `dead` output units get no gradient, their bias entries and (with `kernel_rows`) their kernel
    rows exactly zero."""
    meta = (
        TensorMeta("net.0.weight", "weights", module="net.0", module_type="Linear", trainable=True, order=0,
                   shape=(HIDDEN, FAN_IN)),
        TensorMeta("net.0.bias", "biases", module="net.0", module_type="Linear", trainable=True, order=0,
                   shape=(HIDDEN,)),
        TensorMeta("net.2.weight", "weights", module="net.2", module_type="Linear", trainable=True, order=2,
                   shape=(OUTPUTS, HIDDEN)),
        TensorMeta("net.2.bias", "biases", module="net.2", module_type="Linear", trainable=True, order=2,
                   shape=(OUTPUTS,)),
        TensorMeta("grad/net.0.weight", "gradients", module="net.0", order=0, shape=(HIDDEN, FAN_IN)),
        TensorMeta("grad/net.0.bias", "gradients", module="net.0", order=0, shape=(HIDDEN,)),
        TensorMeta("grad/net.2.weight", "gradients", module="net.2", order=2, shape=(OUTPUTS, HIDDEN)),
        TensorMeta("grad/net.2.bias", "gradients", module="net.2", order=2, shape=(OUTPUTS,)),
    )  # fmt: skip
    views = []
    for t in range(0, steps, every):
        k = dead if t >= from_step else 0
        stats = np.stack([
            _row(HIDDEN * FAN_IN, l2=4.0), _row(HIDDEN, l2=0.1), _row(OUTPUTS * HIDDEN, l2=2.0), _row(OUTPUTS, l2=0.1),
            _row(HIDDEN * FAN_IN, l2=0.3, zero=3), _row(HIDDEN, l2=0.05),
            _row(OUTPUTS * HIDDEN, l2=0.2, zero=(k * HIDDEN if kernel_rows else 0) + 2), _row(OUTPUTS, l2=bias_l2, zero=k),
        ])  # fmt: skip
        views.append(StepView(step=t, names=tuple(m.name for m in meta), meta=meta, stats=stats,
                              scalars={"loss": 0.7 * math.exp(-t / 300)}))  # fmt: skip
    return views


def test_dead_relu_reports_output_units_that_get_no_gradient_at_three_saved_steps_in_a_row() -> None:
    found = run(DeadRelu(), tagger_views())
    assert found and found[0].step == 30  # dead at 10, 20 and 30
    f = found[0]
    assert f.tensor == "grad/net.2.bias" and f.value == 4.0 and f.threshold is None
    assert "4 of 6 output units got exactly zero gradient" in f.message and "clamp" in f.hint


def test_dead_relu_leaves_a_bias_entry_whose_gradient_summed_to_zero_alone() -> None:
    # an L1 loss over an even batch: the signs of one unit can balance, zeroing its bias gradient, never its kernel row
    assert run(DeadRelu(), tagger_views(dead=1, kernel_rows=False)) == []


def test_dead_relu_leaves_an_output_layer_without_any_gradient_to_other_rules() -> None:
    # every output unit without gradient: nothing reaches the layer at all (a detached loss), not dead units
    assert run(DeadRelu(), tagger_views(dead=OUTPUTS)) == []


def test_dead_relu_counts_dead_output_views_in_a_row() -> None:
    views = tagger_views()
    alive = tagger_views(dead=0)
    broken = [
        *views[:3],
        alive[3],
        *views[4:6],
        alive[6],
        *views[7:],
    ]  # two dead views, alive, two dead, alive, ...
    found = run(DeadRelu(), broken)
    assert found and found[0].step == 90  # 70, 80, 90 are the first three in a row
    assert run(DeadRelu({"output_dead_views": None}), views) == []


def test_dead_relu_takes_outputs_without_gradient_from_the_first_step_as_unread_heads() -> None:
    # one head per task: the other task's outputs get no gradient from the first step on, before any clip could act
    assert run(DeadRelu(), tagger_views(dead=2, from_step=0)) == []
    # a clip that kills more units later is still reported, beyond the unread ones
    views = tagger_views(dead=2, from_step=0)[:5] + tagger_views(dead=4, from_step=0)[5:]
    found = run(DeadRelu(), views)
    assert found and found[0].step == 70  # 50, 60 and 70
    assert (
        "4 of 6 output units" in found[0].message
        and "2 of them since the first saved step" in found[0].message
    )


def test_dead_relu_leaves_an_output_bias_that_a_shift_invariant_loss_gives_only_rounding_residues() -> None:
    # squared distances between embeddings do not change when one output is shifted: the bias gradient sums to zero
    assert run(DeadRelu(), tagger_views(bias_l2=1e-9)) == []
    assert run(DeadRelu({"shift_invariant_ratio": 0.0}), tagger_views(bias_l2=1e-9))
